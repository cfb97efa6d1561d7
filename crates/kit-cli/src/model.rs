//! The report model: plain data built from archives, rendered by every output format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kit_core::{AttachmentContent, Collector, EventKind, RunId, TestOutcome, semconv};
use kit_coverage::{EndpointCoverage, RestCoverageCollector};
use kit_trace::{ArchiveReader, TraceError};

use crate::inputs::short;

/// Everything a report shows.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// One per run id, in run-id order; shards of one run are merged into one.
    pub(crate) runs: Vec<RunReport>,
}

/// One run.
#[derive(Debug)]
pub(crate) struct RunReport {
    pub(crate) run_id: RunId,
    pub(crate) runner: Option<String>,
    pub(crate) kit_version: Option<String>,
    pub(crate) archives: Vec<PathBuf>,
    pub(crate) tests: Vec<TestRow>,
    pub(crate) endpoints: Vec<EndpointCoverage>,
    /// Lines about damaged archives that were salvaged.
    pub(crate) notes: Vec<String>,
}

/// One test.
#[derive(Debug, Clone)]
pub(crate) struct TestRow {
    pub(crate) name: String,
    pub(crate) outcome: TestOutcome,
    pub(crate) duration: Option<Duration>,
    pub(crate) requests: u64,
    pub(crate) attachments: Vec<AttachmentRow>,
}

/// One attachment of a test.
#[derive(Debug, Clone)]
pub(crate) struct AttachmentRow {
    pub(crate) name: String,
    pub(crate) media_type: String,
    pub(crate) size: u64,
    pub(crate) description: Option<String>,
}

impl RunReport {
    pub(crate) fn count(&self, label: &str) -> usize {
        self.tests.iter().filter(|t| t.outcome.label() == label).count()
    }
}

struct RunBuilder {
    report: RunReport,
    coverage: RestCoverageCollector,
}

/// Reads every archive, one test at a time, replaying the collectors over its events.
/// Memory grows with the number of tests and endpoints, not with the number of events.
pub(crate) fn build(archives: &[PathBuf]) -> Result<Report, (PathBuf, TraceError)> {
    let mut runs: BTreeMap<RunId, RunBuilder> = BTreeMap::new();
    for path in archives {
        read_archive(path, &mut runs).map_err(|e| (path.clone(), e))?;
    }
    Ok(Report {
        runs: runs
            .into_values()
            .map(|mut b| {
                b.report.endpoints = b.coverage.endpoints().cloned().collect();
                b.report
            })
            .collect(),
    })
}

fn read_archive(path: &Path, runs: &mut BTreeMap<RunId, RunBuilder>) -> Result<(), TraceError> {
    let mut reader = ArchiveReader::open(path)?;
    let salvage = reader.salvage();
    for summary in reader.runs() {
        let builder = runs.entry(summary.run_id.clone()).or_insert_with(|| RunBuilder {
            report: RunReport {
                run_id: summary.run_id.clone(),
                runner: None,
                kit_version: None,
                archives: Vec::new(),
                tests: Vec::new(),
                endpoints: Vec::new(),
                notes: Vec::new(),
            },
            coverage: RestCoverageCollector::new(),
        });
        if let Some(manifest) = &summary.manifest {
            builder
                .report
                .runner
                .get_or_insert_with(|| manifest.runner.clone());
            builder
                .report
                .kit_version
                .get_or_insert_with(|| manifest.kit_version.clone());
        }
        builder.report.archives.push(path.to_owned());
        if let Some(s) = salvage {
            builder.report.notes.push(format!(
                "{} was cut short (its writer was killed?): read {} whole entries, left out {} damaged bytes",
                short(path),
                s.entries,
                s.dropped_bytes
            ));
        }
    }
    for record in reader.tests() {
        let record = record?;
        let Some(builder) = runs.get_mut(&record.run_id) else {
            continue;
        };
        let mut requests = 0;
        let mut attachments = Vec::new();
        for event in &record.events {
            match &event.kind {
                EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => requests += 1,
                EventKind::Attachment(a) => attachments.push(AttachmentRow {
                    name: a.name.clone(),
                    media_type: a.media_type.clone(),
                    size: match &a.content {
                        AttachmentContent::Blob { size, .. } => *size,
                        AttachmentContent::Inline(bytes) => bytes.len() as u64,
                        _ => 0,
                    },
                    description: a.description.clone(),
                }),
                _ => {}
            }
            builder.coverage.on_event(event);
        }
        builder.report.tests.push(TestRow {
            name: record.name,
            outcome: record.outcome,
            duration: record.duration,
            requests,
            attachments,
        });
    }
    Ok(())
}
