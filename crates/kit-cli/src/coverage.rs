//! `kit-cli report` and `kit-cli coverage`: flags over configuration, the replay, the gates,
//! the chosen format.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kit_core::Configuration;
use kit_coverage::{CoverageGates, OpenApiDocument};

use crate::cli::{CoverageArgs, Format, GateArgs};
use crate::model::{self, CoverageSetup, Scope, View};
use crate::progress::Progress;
use crate::{Exit, inputs, render, stream_output};

/// `kit-cli report`.
pub(crate) fn report(
    inputs: &[PathBuf],
    args: CoverageArgs,
    format: Format,
    output: Option<&Path>,
    fail_on_test_failure: bool,
) -> Result<(), Exit> {
    let configured = inputs::configuration(args.config.as_deref()).map_err(Exit::input)?;
    let archives = archives(inputs, &configured)?;
    let (setup, _) = resolve(args, GateArgs::default(), configured)?;
    let progress = Progress::for_stderr();
    let view =
        model::build("report", &archives, &setup, Scope::PerRun, &progress).map_err(|e| Exit::input(e.0))?;
    drop(progress);
    finish(&view, format, output, fail_on_test_failure)
}

/// `kit-cli coverage`.
pub(crate) fn coverage(
    inputs: &[PathBuf],
    args: CoverageArgs,
    gate_args: GateArgs,
    format: Format,
    output: Option<&Path>,
    fail_on_test_failure: bool,
) -> Result<(), Exit> {
    let configured = inputs::configuration(args.config.as_deref()).map_err(Exit::input)?;
    let archives = archives(inputs, &configured)?;
    let (setup, gates) = resolve(args, gate_args, configured)?;
    let progress = Progress::for_stderr();
    let mut view =
        model::build("coverage", &archives, &setup, Scope::Whole, &progress).map_err(|e| Exit::input(e.0))?;
    drop(progress);
    if let Some(report) = &view.coverage {
        let failures = gates.check(report);
        view.gates = model::gate_rows(&gates, report, &failures);
    }
    finish(&view, format, output, fail_on_test_failure)
}

/// The archives in `inputs` or, when none is named, the newest archive in the folder the
/// tests write to: run in a test crate's folder after `cargo test`, `kit-cli report` reports
/// that run, not every run the folder kept (a line on stderr says how many others there are).
fn archives(inputs: &[PathBuf], configured: &(Configuration, PathBuf)) -> Result<Vec<PathBuf>, Exit> {
    if !inputs.is_empty() {
        return inputs::archives(inputs).map_err(Exit::input);
    }
    let newest = inputs::newest_archive(configured, "name the folder to read them all");
    Ok(vec![newest.map_err(Exit::input)?])
}

/// Renders, writes, and turns failed gates (and failed tests, when asked) into exit 1.
fn finish(
    view: &View,
    format: Format,
    output: Option<&Path>,
    fail_on_test_failure: bool,
) -> Result<(), Exit> {
    let terminal = crate::to_terminal(output);
    stream_output(output, |out| render::write(view, format, terminal, out))?;
    let mut lines: Vec<String> = view
        .failed_gates()
        .map(|g| format!("gate failed: {}", g.message))
        .collect();
    let failed = view.failed_tests();
    if fail_on_test_failure && failed > 0 {
        lines.push(format!("{failed} test(s) failed or were interrupted"));
    }
    if lines.is_empty() {
        Ok(())
    } else {
        Err(Exit {
            code: 1,
            message: lines.join("\n"),
        })
    }
}

/// Flags over configuration (`kit.toml`/`kit.json` in `--config`, the current folder by
/// default, then `Kit__…` environment variables): the collectors' setup and the gates.
fn resolve(
    args: CoverageArgs,
    gate_args: GateArgs,
    (configuration, dir): (Configuration, PathBuf),
) -> Result<(CoverageSetup, CoverageGates), Exit> {
    let mut gates = CoverageGates::from_configuration(&configuration).map_err(Exit::input)?;
    gates.operations = gate_args.fail_under_operations.or(gates.operations);
    gates.statuses = gate_args.fail_under_statuses.or(gates.statuses);
    gates.fields = gate_args.fail_under_fields.or(gates.fields);
    gates.exclude_deprecated |= args.exclude_deprecated;
    gates.exclude.extend(args.exclude);
    let openapi_path = args
        .openapi
        .or_else(|| configuration.get("Kit:Coverage:OpenApi").map(|p| dir.join(p)));
    let base_paths = if args.base_paths.is_empty() {
        configuration
            .section("Kit:Coverage")
            .get_list("BasePaths")
            .unwrap_or_default()
    } else {
        args.base_paths
    };
    let openapi = match openapi_path {
        None => None,
        Some(path) => {
            let mut document = OpenApiDocument::from_path(&path).map_err(Exit::input)?;
            if !base_paths.is_empty() {
                document = document.with_base_paths(base_paths);
            }
            Some(Arc::new(document))
        }
    };
    let setup = CoverageSetup {
        openapi,
        exclude_deprecated: gates.exclude_deprecated,
        exclude: gates.exclude.clone(),
    };
    Ok((setup, gates))
}
