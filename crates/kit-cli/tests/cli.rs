//! `kit-cli` as a user runs it: real archives in, exit codes and text out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kit_core::*;
use kit_trace::{ArchiveWriter, RunManifest};

fn kit_cli(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kit-cli"))
        .args(args)
        .output()
        .unwrap()
}

fn report(paths: &[&Path]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["report".as_ref()];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    kit_cli(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes an archive of `tests` (name, requests to `GET /items/{id}`, outcome) for `run_id`.
fn archive(dir: &Path, run_id: &str, tests: &[(&str, u16, TestOutcome)]) -> PathBuf {
    let run_id = RunId::new(run_id).unwrap();
    let writer = ArchiveWriter::create(dir, RunManifest::new(run_id.clone(), "cargo-test")).unwrap();
    let path = writer.path().to_owned();
    let run = KitRun::new(
        KitBuilder::new(Configuration::new()).build().unwrap().host,
        Bus::builder().collector(writer).start(),
        run_id,
    );
    for (name, status, outcome) in tests {
        let ctx = run.begin_test(TestStarted::new(*name));
        ctx.flush().unwrap();
        let op = ctx.start_operation(
            None,
            OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET /items/{id}"),
        );
        op.observe(Observation::new(
            semconv::OBS_HTTP_RESPONSE,
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, "GET")
                .with(semconv::HTTP_ROUTE, "/items/{id}")
                .with(semconv::HTTP_RESPONSE_STATUS_CODE, *status),
        ));
        op.end(OperationStatus::Ok, Attributes::new());
        ctx.finish(outcome.clone()).unwrap();
    }
    run.bus().shutdown().unwrap();
    path
}

fn assert_input_error(output: &Output, expected: &str) {
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}{}",
        stdout(output),
        stderr(output)
    );
    let err = stderr(output);
    assert_eq!(err.lines().count(), 1, "one line, not {err:?}");
    assert!(
        err.starts_with("kit-cli: ") && err.contains(expected),
        "{err:?} should contain {expected:?}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_report_lists_outcomes_and_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive(
        dir.path(),
        "r1",
        &[
            ("suite::ok", 200, TestOutcome::Passed),
            (
                "suite::bad",
                500,
                TestOutcome::Failed {
                    message: "expected 200\nsecond line".into(),
                },
            ),
            (
                "suite::skip",
                200,
                TestOutcome::Skipped {
                    reason: "no gRPC".into(),
                },
            ),
        ],
    );
    let output = report(&[&path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with(
            "Run r1 (cargo-test, kit 0.1.0): 3 tests, 1 passed, 1 failed, 1 skipped, 0 interrupted\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nPassed suite::ok\nFailed suite::bad: expected 200\nSkipped suite::skip: no gRPC\n"),
        "{text}"
    );
    assert!(
        text.contains("│ GET    │ /items/{id} │ 3     │ 200 ×2, 500 ×1 │"),
        "{text}"
    );
}

#[test]
fn shards_of_one_run_merge_and_different_runs_stand_side_by_side() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let shard1 = archive(a.path(), "same", &[("t1", 200, TestOutcome::Passed)]);
    let shard2 = archive(b.path(), "same", &[("t2", 201, TestOutcome::Passed)]);
    let other = archive(b.path(), "other", &[("t3", 200, TestOutcome::Passed)]);
    let text = stdout(&report(&[&shard1, &shard2, &other]));
    assert!(
        text.contains("Run other (cargo-test, kit 0.1.0): 1 tests"),
        "{text}"
    );
    assert!(
        text.contains("Run same (cargo-test, kit 0.1.0): 2 tests, 2 passed"),
        "{text}"
    );
    assert!(
        text.contains("│ GET    │ /items/{id} │ 2     │ 200 ×1, 201 ×1 │"),
        "{text}"
    );
    // A folder reads every archive in it.
    let folder = stdout(&report(&[b.path()]));
    assert!(
        folder.contains("Run other") && folder.contains("Run same"),
        "{folder}"
    );
}

#[test]
fn a_truncated_archive_is_salvaged_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive(
        dir.path(),
        "cut",
        &[
            ("first", 200, TestOutcome::Passed),
            ("second", 200, TestOutcome::Passed),
        ],
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let output = report(&[&path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("note: kit-cut.kittrace was cut short"), "{text}");
    assert!(text.contains("Passed first\nPassed second\n"), "{text}");
}

#[test]
fn unusable_inputs_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_input_error(
        &report(&[&dir.path().join("missing.kittrace")]),
        "missing.kittrace: no such file or folder",
    );
    assert_input_error(&report(&[dir.path()]), "the folder holds no .kittrace archive");
    let text = dir.path().join("notes.kittrace");
    std::fs::write(&text, "not a zip at all").unwrap();
    assert_input_error(
        &report(&[&text]),
        "is not a kittrace archive: it is not a zip file",
    );
    let empty = dir.path().join("empty.kittrace");
    std::fs::write(&empty, "").unwrap();
    assert_input_error(&report(&[&empty]), "the file is empty");

    let evil = dir.path().join("evil.kittrace");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&evil).unwrap());
    for (name, data) in [("mimetype", "application/vnd.kit.trace+zip"), ("../../x", "boom")] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(data.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    let output = report(&[&evil]);
    assert_input_error(&output, "unsafe entry name \"../../x\"");
    assert!(!dir.path().parent().unwrap().join("x").exists());
}
