//! `kit-cli coverage`: the coverage collectors replayed over archives, then the gates.

use std::path::{Path, PathBuf};

use kit_core::report::Report;
use kit_core::{Collector, Configuration};
use kit_coverage::{
    CoverageGates, GateFailure, OpenApiCoverageCollector, Percent, RestCoverageCollector,
    RestTrafficCoverageCollector,
};
use kit_trace::{ArchiveReader, TraceError};

use crate::inputs::short;

/// What `kit-cli coverage` was asked for, flags and configuration merged.
#[derive(Debug, Default)]
pub(crate) struct CoverageRequest {
    pub(crate) openapi: Option<PathBuf>,
    pub(crate) base_paths: Vec<String>,
    pub(crate) gates: CoverageGates,
}

/// Flags as given on the command line; `None`/empty means "as configured".
#[derive(Debug, Default)]
pub(crate) struct CoverageFlags {
    pub(crate) openapi: Option<PathBuf>,
    pub(crate) config: Option<PathBuf>,
    pub(crate) base_paths: Vec<String>,
    pub(crate) operations: Option<Percent>,
    pub(crate) statuses: Option<Percent>,
    pub(crate) fields: Option<Percent>,
    pub(crate) exclude_deprecated: bool,
    pub(crate) exclude: Vec<String>,
}

impl CoverageFlags {
    /// Flags over configuration: `kit.toml`/`kit.json` in `--config` (a folder or one of those
    /// files; the current folder by default) and `Kit__…` environment variables.
    pub(crate) fn resolve(self) -> Result<CoverageRequest, String> {
        let (configuration, dir) = configuration(self.config.as_deref())?;
        let mut gates = CoverageGates::from_configuration(&configuration).map_err(|e| e.to_string())?;
        gates.operations = self.operations.or(gates.operations);
        gates.statuses = self.statuses.or(gates.statuses);
        gates.fields = self.fields.or(gates.fields);
        gates.exclude_deprecated |= self.exclude_deprecated;
        gates.exclude.extend(self.exclude);
        let openapi = self
            .openapi
            .or_else(|| configuration.get("Kit:Coverage:OpenApi").map(|p| dir.join(p)));
        let base_paths = if self.base_paths.is_empty() {
            configuration
                .section("Kit:Coverage")
                .get_list("BasePaths")
                .unwrap_or_default()
        } else {
            self.base_paths
        };
        Ok(CoverageRequest {
            openapi,
            base_paths,
            gates,
        })
    }
}

fn configuration(config: Option<&Path>) -> Result<(Configuration, PathBuf), String> {
    let given = config.map(Path::to_path_buf);
    let path = match &given {
        Some(p) => p.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?,
    };
    let mut configuration = if path.is_file() {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let origin = path.display().to_string();
        if path.extension().is_some_and(|e| e == "json") {
            Configuration::from_json_str(&text, &origin)
        } else {
            Configuration::from_toml_str(&text, &origin)
        }
        .map_err(|e| e.to_string())?
    } else if path.is_dir() {
        Configuration::load_files(&path).map_err(|e| e.to_string())?
    } else {
        return Err(format!(
            "{}: no such configuration file or folder",
            path.display()
        ));
    };
    configuration.apply_environment(std::env::vars());
    let dir = if path.is_file() {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path
    };
    Ok((configuration, dir))
}

/// The coverage report of `archives`, and the gates it falls short of.
pub(crate) fn coverage(
    archives: &[PathBuf],
    request: &CoverageRequest,
) -> Result<(Report, Vec<GateFailure>), String> {
    let mut rest = RestCoverageCollector::new();
    let mut traffic = RestTrafficCoverageCollector::new();
    let mut openapi = match &request.openapi {
        None => None,
        Some(path) => {
            let mut collector = OpenApiCoverageCollector::from_spec(path).map_err(|e| e.to_string())?;
            if !request.base_paths.is_empty() {
                collector = collector.with_base_paths(request.base_paths.iter().cloned());
            }
            if request.gates.exclude_deprecated {
                collector = collector.exclude_deprecated();
            }
            Some(
                collector
                    .exclude(&request.gates.exclude)
                    .map_err(|e| e.to_string())?,
            )
        }
    };
    let mut notes = Vec::new();
    {
        let mut collectors: Vec<&mut dyn Collector> = vec![&mut rest, &mut traffic];
        if let Some(openapi) = openapi.as_mut() {
            collectors.push(openapi);
        }
        for path in archives {
            if let Some(note) =
                replay(path, &mut collectors).map_err(|e| format!("{}: {e}", path.display()))?
            {
                notes.push(note);
            }
        }
    }
    let mut report = Report::default();
    rest.write_report(&mut report);
    traffic.write_report(&mut report);
    if let Some(openapi) = &openapi {
        openapi.write_report(&mut report);
    }
    if let Some(first) = report.sections.first_mut() {
        first.notes.extend(notes);
    }
    let failures = request.gates.check(&report);
    Ok((report, failures))
}

/// Feeds every event of every test of the archive to `collectors`; returns a note when the
/// archive was cut short and salvaged.
pub(crate) fn replay(
    path: &Path,
    collectors: &mut [&mut dyn Collector],
) -> Result<Option<String>, TraceError> {
    let mut reader = ArchiveReader::open(path)?;
    let note = reader.salvage().map(|s| {
        format!(
            "{} was cut short: read {} whole entries, left out {} damaged bytes",
            short(path),
            s.entries,
            s.dropped_bytes
        )
    });
    for record in reader.tests() {
        let record = record?;
        for event in &record.events {
            for collector in collectors.iter_mut() {
                collector.on_event(event);
            }
        }
    }
    Ok(note)
}
