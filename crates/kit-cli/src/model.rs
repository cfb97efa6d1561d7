//! What every output format shows: built by replaying archives one test at a time.
//!
//! The model is plain data and serializes as the JSON format (see `docs/cli.md`), so the
//! JSON output is this model and the other formats read the same values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use kit_core::report::Report;
use kit_core::{Collector, Event, EventId, EventKind, RunId, TestOutcome, semconv};
use kit_coverage::{
    EndpointCoverage, GateFailure, OpenApiCoverageCollector, OpenApiDocument, RestCoverageCollector,
    RestTrafficCoverageCollector,
};
use kit_trace::{ArchiveReader, TestRecord, TraceError};

use crate::inputs::short;
use crate::progress::Progress;

/// The version of the JSON format's schema.
pub(crate) const SCHEMA_VERSION: &str = "1";

/// How many of a test's requests it keeps for failure summaries (its last ones).
const REQUESTS_KEPT: usize = 3;

/// Everything one command shows.
#[derive(Debug, Serialize)]
pub(crate) struct View {
    /// The schema version of this JSON.
    pub(crate) kit_report: &'static str,
    /// `report` or `coverage`.
    pub(crate) command: &'static str,
    /// One per run id, in run-id order; shards of one run merged into one.
    pub(crate) runs: Vec<RunReport>,
    /// `coverage`: the coverage of every run together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) coverage: Option<Report>,
    /// `coverage`: calls and statuses per endpoint, every run together.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) endpoints: Vec<EndpointCoverage>,
    /// `coverage`: each gate set, held or not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) gates: Vec<GateRow>,
}

impl View {
    /// The gates that fell short.
    pub(crate) fn failed_gates(&self) -> impl Iterator<Item = &GateRow> {
        self.gates.iter().filter(|g| !g.passed)
    }

    /// Tests that failed or were interrupted, in every run.
    pub(crate) fn failed_tests(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.summary.failed + r.summary.interrupted)
            .sum()
    }
}

/// One run.
#[derive(Debug, Serialize)]
pub(crate) struct RunReport {
    pub(crate) run_id: String,
    pub(crate) runner: Option<String>,
    pub(crate) kit_version: Option<String>,
    /// The archives it was read from (file names).
    pub(crate) archives: Vec<String>,
    /// Things worth knowing about how it was read (salvaged archives).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    pub(crate) summary: Summary,
    /// `report`: every test, in the order they started.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tests: Vec<TestRow>,
    /// `report`: the coverage collectors replayed over this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) coverage: Option<Report>,
    /// `report`: calls and statuses per endpoint (for charts; the REST section has them as text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) endpoints: Vec<EndpointCoverage>,
}

/// Counts of outcomes.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub(crate) struct Summary {
    pub(crate) tests: usize,
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) skipped: usize,
    pub(crate) interrupted: usize,
    pub(crate) requests: u64,
}

impl Summary {
    fn add(&mut self, test: &TestRow) {
        self.tests += 1;
        self.requests += test.requests;
        match test.outcome {
            "Passed" => self.passed += 1,
            "Failed" => self.failed += 1,
            "Skipped" => self.skipped += 1,
            _ => self.interrupted += 1,
        }
    }
}

/// One test.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TestRow {
    pub(crate) id: String,
    pub(crate) name: String,
    /// `Passed`, `Failed`, `Skipped` or `Interrupted`.
    pub(crate) outcome: &'static str,
    /// A failure's message (redacted when it was recorded), or why a test was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) application: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) location: Option<String>,
    pub(crate) started_unix_nanos: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ns: Option<u64>,
    /// How many requests it sent.
    pub(crate) requests: u64,
    /// Its last requests (at most 3), for failure summaries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) last_requests: Vec<RequestRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) attachments: Vec<AttachmentRow>,
}

/// One request, as its events recorded it (sanitized).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RequestRow {
    /// The `http.request` operation's id (16 hex digits in JSON): `kit-cli curl` takes it.
    pub(crate) id: EventId,
    pub(crate) method: String,
    pub(crate) route: String,
    pub(crate) url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failure: Option<String>,
}

impl RequestRow {
    /// `GET /orders/{id} → 404 (http://…/orders/7), request 1a2b…`.
    pub(crate) fn summary(&self) -> String {
        let result = match (&self.status, &self.failure) {
            (Some(status), _) => status.to_string(),
            (None, Some(failure)) => format!("failed: {}", failure.lines().next().unwrap_or_default()),
            (None, None) => "no response".into(),
        };
        format!(
            "{} {} → {result} ({}), request {}",
            self.method, self.route, self.url, self.id
        )
    }
}

/// One attachment.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AttachmentRow {
    pub(crate) name: String,
    pub(crate) media_type: String,
    pub(crate) size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
}

/// A gate and whether the report held it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GateRow {
    pub(crate) metric: String,
    pub(crate) threshold: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) covered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) total: Option<u64>,
    pub(crate) passed: bool,
    /// One line: the figure against the gate.
    pub(crate) message: String,
}

/// What the coverage collectors are, for one build.
#[derive(Clone, Default)]
pub(crate) struct CoverageSetup {
    /// The OpenAPI document, when one was given.
    pub(crate) openapi: Option<Arc<OpenApiDocument>>,
    pub(crate) exclude_deprecated: bool,
    pub(crate) exclude: Vec<String>,
}

impl CoverageSetup {
    fn collectors(&self) -> Result<Collectors, String> {
        let openapi = match &self.openapi {
            None => None,
            Some(doc) => {
                let mut collector = OpenApiCoverageCollector::new(Arc::clone(doc));
                if self.exclude_deprecated {
                    collector = collector.exclude_deprecated();
                }
                Some(collector.exclude(&self.exclude).map_err(|e| e.to_string())?)
            }
        };
        Ok(Collectors {
            rest: RestCoverageCollector::new(),
            traffic: RestTrafficCoverageCollector::new(),
            openapi,
        })
    }
}

/// The collectors replayed over a run (or over every run).
struct Collectors {
    rest: RestCoverageCollector,
    traffic: RestTrafficCoverageCollector,
    openapi: Option<OpenApiCoverageCollector>,
}

impl Collectors {
    fn on_event(&mut self, event: &Event) {
        self.rest.on_event(event);
        self.traffic.on_event(event);
        if let Some(openapi) = &mut self.openapi {
            openapi.on_event(event);
        }
    }

    fn endpoints(&self) -> Vec<EndpointCoverage> {
        self.rest.endpoints().cloned().collect()
    }

    fn report(&self) -> Report {
        let mut report = Report::default();
        self.rest.write_report(&mut report);
        self.traffic.write_report(&mut report);
        if let Some(openapi) = &self.openapi {
            openapi.write_report(&mut report);
        }
        report
    }
}

/// Where coverage is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `report`: per run, beside its tests.
    PerRun,
    /// `coverage`: every run together.
    Whole,
}

/// An archive that could not be read: which, and why.
pub(crate) struct BuildError(pub(crate) String);

impl From<String> for BuildError {
    fn from(message: String) -> Self {
        BuildError(message)
    }
}

struct RunBuilder {
    report: RunReport,
    collectors: Option<Collectors>,
}

/// Reads every archive, one test at a time, replaying the collectors over its events.
/// Memory grows with the number of tests and endpoints, not with the number of events.
pub(crate) fn build(
    command: &'static str,
    archives: &[PathBuf],
    setup: &CoverageSetup,
    scope: Scope,
    progress: &Progress,
) -> Result<View, BuildError> {
    let mut runs: BTreeMap<RunId, RunBuilder> = BTreeMap::new();
    let mut whole = match scope {
        Scope::Whole => Some(setup.collectors()?),
        Scope::PerRun => None,
    };
    for path in archives {
        // Every error of reading an archive names it already.
        read_archive(path, &mut runs, setup, scope, whole.as_mut(), progress)
            .map_err(|e| BuildError(e.to_string()))?;
    }
    let runs: Vec<RunReport> = runs
        .into_values()
        .map(|mut b| {
            if let Some(collectors) = &b.collectors {
                b.report.coverage = Some(collectors.report());
                b.report.endpoints = collectors.endpoints();
            }
            b.report
        })
        .collect();
    let endpoints = whole.as_ref().map(Collectors::endpoints).unwrap_or_default();
    let mut coverage = whole.map(|c| c.report());
    if let Some(report) = coverage.as_mut() {
        // Notes about salvaged archives belong beside the figures they affect.
        let notes: Vec<String> = runs.iter().flat_map(|r| r.notes.iter().cloned()).collect();
        if let Some(first) = report.sections.first_mut() {
            first.notes.extend(notes);
        }
    }
    Ok(View {
        kit_report: SCHEMA_VERSION,
        command,
        runs,
        coverage,
        endpoints,
        gates: Vec::new(),
    })
}

fn read_archive(
    path: &Path,
    runs: &mut BTreeMap<RunId, RunBuilder>,
    setup: &CoverageSetup,
    scope: Scope,
    mut whole: Option<&mut Collectors>,
    progress: &Progress,
) -> Result<(), TraceError> {
    let mut reader = ArchiveReader::open(path)?;
    let salvage = reader.salvage();
    let merged = reader.merge_info()?;
    progress.archive(&short(path), reader.test_count());
    for summary in reader.runs() {
        if !runs.contains_key(&summary.run_id) {
            let collectors = match scope {
                Scope::PerRun => Some(setup.collectors().map_err(|reason| TraceError::BadEntry {
                    path: path.to_owned(),
                    entry: String::new(),
                    reason,
                })?),
                Scope::Whole => None,
            };
            runs.insert(
                summary.run_id.clone(),
                RunBuilder {
                    report: RunReport {
                        run_id: summary.run_id.to_string(),
                        runner: None,
                        kit_version: None,
                        archives: Vec::new(),
                        notes: Vec::new(),
                        summary: Summary::default(),
                        tests: Vec::new(),
                        coverage: None,
                        endpoints: Vec::new(),
                    },
                    collectors,
                },
            );
        }
        let Some(builder) = runs.get_mut(&summary.run_id) else {
            continue;
        };
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
        builder.report.archives.push(short(path));
        if let Some(info) = &merged {
            let of_run = format!("of run {} ", summary.run_id);
            builder.report.notes.extend(
                info.salvaged
                    .iter()
                    .chain(&info.duplicates)
                    .filter(|d| d.contains(&of_run))
                    .cloned(),
            );
        }
        if let Some(s) = salvage {
            builder.report.notes.push(format!(
                "{} was cut short (its writer was killed?): read {} whole entries, left out {} damaged bytes",
                short(path),
                s.entries,
                s.dropped_bytes
            ));
        }
    }
    // Read ahead on other threads; replayed here into the collectors, in the archive's order.
    crate::read_ahead::each_test(reader, |record| {
        progress.test();
        let Some(builder) = runs.get_mut(&record.run_id) else {
            return Ok(());
        };
        for event in &record.events {
            if let Some(collectors) = builder.collectors.as_mut() {
                collectors.on_event(event);
            }
            if let Some(collectors) = whole.as_deref_mut() {
                collectors.on_event(event);
            }
        }
        let row = test_row(record);
        builder.report.summary.add(&row);
        // `coverage` shows each run's summary, not its tests: rows kept for 100 000 requests
        // were some 15 MiB of its peak, dropped unread.
        if scope == Scope::PerRun {
            builder.report.tests.push(row);
        }
        Ok(())
    })
}

/// A test's row: its outcome, requests and attachments.
fn test_row(record: &TestRecord) -> TestRow {
    let mut requests = 0;
    let mut recent: Vec<RequestRow> = Vec::new();
    let mut attachments = Vec::new();
    let find = |recent: &mut Vec<RequestRow>, id: Option<EventId>| -> Option<usize> {
        let id = id?;
        recent.iter().rposition(|r| r.id == id)
    };
    for event in &record.events {
        match &event.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => {
                requests += 1;
                let text = |key: &str| op.attributes.get_str(key).unwrap_or_default().to_owned();
                if recent.len() == REQUESTS_KEPT {
                    recent.remove(0);
                }
                recent.push(RequestRow {
                    id: event.id,
                    method: text(semconv::HTTP_REQUEST_METHOD),
                    route: text(semconv::HTTP_ROUTE),
                    url: text(semconv::URL_FULL),
                    status: None,
                    duration_ns: None,
                    failure: None,
                });
            }
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_RESPONSE => {
                if let Some(i) = find(&mut recent, event.parent_id) {
                    recent[i].status = o
                        .attributes
                        .get_i64(semconv::HTTP_RESPONSE_STATUS_CODE)
                        .and_then(|s| u16::try_from(s).ok());
                    recent[i].duration_ns = o
                        .attributes
                        .get_i64(semconv::KIT_DURATION_NS)
                        .and_then(|d| u64::try_from(d).ok());
                }
            }
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_FAILURE => {
                if let Some(i) = find(&mut recent, event.parent_id) {
                    recent[i].failure = o
                        .attributes
                        .get_str(semconv::KIT_FAILURE_MESSAGE)
                        .map(str::to_owned);
                }
            }
            EventKind::Attachment(a) => attachments.push(AttachmentRow {
                name: a.name.clone(),
                media_type: a.media_type.clone(),
                size: a.content.size(),
                description: a.description.clone(),
            }),
            _ => {}
        }
    }
    let message = match &record.outcome {
        TestOutcome::Failed { message } => Some(message.clone()),
        TestOutcome::Skipped { reason } => Some(reason.clone()),
        _ => None,
    };
    TestRow {
        id: record.test_id.to_string(),
        name: record.name.clone(),
        outcome: record.outcome.label(),
        message,
        application: record.started.application.clone(),
        location: record.started.location.clone(),
        started_unix_nanos: record.started_at.as_unix_nanos(),
        duration_ns: record
            .duration
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        requests,
        last_requests: recent,
        attachments,
    }
}

/// The gates of `failures`' check, as rows: every gate set, held or not.
pub(crate) fn gate_rows(
    gates: &kit_coverage::CoverageGates,
    report: &Report,
    failures: &[GateFailure],
) -> Vec<GateRow> {
    [
        ("operations", gates.operations),
        ("statuses", gates.statuses),
        ("fields", gates.fields),
    ]
    .into_iter()
    .filter_map(|(name, threshold)| {
        let threshold = threshold?;
        let metric = report.metric(name);
        let failure = failures.iter().find(|f| f.metric == name);
        let message = match (failure, metric) {
            (Some(f), _) => f.to_string(),
            (None, Some(m)) => format!(
                "{name} coverage {} ({} of {}) meets the gate of {threshold}",
                m.percent().map_or_else(|| "-".to_owned(), |p| format!("{p:.1}%")),
                m.covered,
                m.total
            ),
            (None, None) => format!("{name}: gate of {threshold}"),
        };
        Some(GateRow {
            metric: name.to_owned(),
            threshold: threshold.value(),
            covered: metric.map(|m| m.covered),
            total: metric.map(|m| m.total),
            passed: failure.is_none(),
            message,
        })
    })
    .collect()
}
