//! `kit-cli` as a user runs it: real archives in, exit codes and text out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kit_core::*;
use kit_trace::{ArchiveWriter, RunManifest, WriterOptions};

mod common;

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

/// `kit-cli merge -o out shards…`.
fn merge(out: &Path, shards: &[&Path]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["merge".as_ref(), "-o".as_ref(), out.as_os_str()];
    args.extend(shards.iter().map(|p| p.as_os_str()));
    kit_cli(&args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run whose events go to a new archive in `dir`, and that archive's path.
fn recording(dir: &Path, run_id: &str) -> (KitRun, PathBuf) {
    let run_id = RunId::new(run_id).unwrap();
    let writer = ArchiveWriter::create(dir, RunManifest::new(run_id.clone(), "cargo-test")).unwrap();
    let path = writer.path().to_owned();
    let run = KitRun::new(
        KitBuilder::new(Configuration::new()).build().unwrap().host,
        Bus::builder().collector(writer).start(),
        run_id,
    );
    (run, path)
}

/// Writes an archive of `tests` (name, requests to `GET /items/{id}`, outcome) for `run_id`.
fn archive(dir: &Path, run_id: &str, tests: &[(&str, u16, TestOutcome)]) -> PathBuf {
    let (run, path) = recording(dir, run_id);
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

/// Starts a request operation `GET /items/{id}` to `url`.
fn get_item(ctx: &KitExecutionContext, url: impl Into<String>) -> Operation {
    ctx.start_operation(
        None,
        OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET /items/{id}").with_attributes(
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, "GET")
                .with(semconv::HTTP_ROUTE, "/items/{id}")
                .with(semconv::URL_FULL, url.into()),
        ),
    )
}

/// `kit-cli export <archive> <flag> <out>`.
fn export_to(archive: &Path, flag: &str, out: &Path) -> Output {
    kit_cli(&[
        "export".as_ref(),
        archive.as_os_str(),
        flag.as_ref(),
        out.as_os_str(),
    ])
}

/// The document `kit-cli export` writes with `flag` (into `dir`), read back.
fn exported(archive: &Path, flag: &str, dir: &Path) -> serde_json::Value {
    let out = dir.join(format!("out{flag}"));
    let output = export_to(archive, flag, &out);
    assert!(output.status.success(), "{flag}: {}", stderr(&output));
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
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

/// An environment variable that is not Unicode, anywhere in the environment, is passed over:
/// the configuration is still read from the environment around it, and no command panics at
/// it (`std::env::vars` would).
#[cfg(unix)]
#[test]
fn an_environment_variable_that_is_not_unicode_is_passed_over() {
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("elsewhere");
    std::fs::create_dir(&results).unwrap();
    archive(&results, "odd-env", &[("t1", 200, TestOutcome::Passed)]);
    let not_unicode = std::ffi::OsStr::from_bytes(b"caf\xe9");
    for command in ["report", "coverage", "audit"] {
        let output = Command::new(env!("CARGO_BIN_EXE_kit-cli"))
            .arg(command)
            .current_dir(dir.path())
            .env_remove("KIT_RESULTS_DIR")
            .env("Kit__Trace__Directory", &results)
            .env("KIT_TEST_LATIN1", not_unicode)
            .env(not_unicode, "a name that is not Unicode")
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command}: {}{}",
            stdout(&output),
            stderr(&output)
        );
        if command == "report" {
            // The folder came from the environment, read around the odd variables.
            assert!(stdout(&output).contains("t1"), "{}", stdout(&output));
        }
    }
}

/// Named no archive, `report` and `coverage` read the folder the tests write to, found as the
/// runner finds it: `KIT_RESULTS_DIR`, else `Kit:Trace:Directory`, else `TestResults`, relative
/// to the configuration's folder.
#[test]
fn named_no_archive_the_folder_the_tests_write_to_is_read() {
    let run = |dir: &Path, args: &[&str], results: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kit-cli"));
        command
            .args(args)
            .current_dir(dir)
            .env_remove("KIT_RESULTS_DIR")
            .env_remove("Kit__Trace__Directory");
        if let Some(results) = results {
            command.env("KIT_RESULTS_DIR", results);
        }
        command.output().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = run(dir.path(), &["report"], None);
    assert_input_error(
        &missing,
        "TestResults: no archive named, and no such folder, where the tests write theirs (KIT_RESULTS_DIR, Kit:Trace:Directory or TestResults); name archives or folders",
    );

    std::fs::create_dir(dir.path().join("TestResults")).unwrap();
    archive(
        &dir.path().join("TestResults"),
        "default",
        &[("t1", 200, TestOutcome::Passed)],
    );
    for command in ["report", "coverage"] {
        let output = run(dir.path(), &[command], None);
        assert!(output.status.success(), "{command}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("Run default (cargo-test, kit 0.1.0): 1 test, 1 passed"),
            "{command}: {}",
            stdout(&output)
        );
    }

    // The configuration names another folder, relative to the configuration's own.
    let crate_dir = dir.path().join("crate");
    std::fs::create_dir_all(crate_dir.join("out/traces")).unwrap();
    archive(
        &crate_dir.join("out/traces"),
        "configured",
        &[("t2", 200, TestOutcome::Passed)],
    );
    std::fs::write(
        crate_dir.join("kit.toml"),
        "[Kit.Trace]\nDirectory = \"out/traces\"\n",
    )
    .unwrap();
    let output = run(dir.path(), &["report", "--config", "crate/kit.toml"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Run configured "), "{}", stdout(&output));
    assert!(!stdout(&output).contains("Run default "), "{}", stdout(&output));
    let output = run(&crate_dir, &["report"], None);
    assert!(stdout(&output).contains("Run configured "), "{}", stdout(&output));

    // KIT_RESULTS_DIR wins, as it does for the runner; a named archive wins over all.
    let output = run(&crate_dir, &["report"], Some(&dir.path().join("TestResults")));
    assert!(stdout(&output).contains("Run default "), "{}", stdout(&output));
    let named = crate_dir.join("out/traces");
    let output = run(dir.path(), &["report", named.to_str().unwrap()], None);
    assert!(stdout(&output).contains("Run configured "), "{}", stdout(&output));

    // Of several runs kept, the newest is read, and a line says so; the folder named reads all.
    let later = archive(
        &dir.path().join("TestResults"),
        "later",
        &[("t3", 200, TestOutcome::Passed)],
    );
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let first = dir.path().join("TestResults").join("kit-default.kittrace");
    assert!(first.exists(), "the helper names archives kit-<run id>.kittrace");
    std::fs::File::options()
        .write(true)
        .open(&first)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    for command in ["report", "coverage"] {
        let output = run(dir.path(), &[command], None);
        assert!(output.status.success(), "{command}: {}", stderr(&output));
        let text = stdout(&output);
        assert!(
            text.contains("Run later ") && !text.contains("Run default "),
            "{command}: {text}"
        );
        assert_eq!(
            stderr(&output),
            format!(
                "kit-cli: {}: the newest of the 2 archives in {}; name the folder to read them all\n",
                later.file_name().unwrap().to_str().unwrap(),
                dir.path().join("TestResults").display()
            ),
            "{command}"
        );
    }
    let output = run(dir.path(), &["report", "TestResults"], None);
    assert!(stdout(&output).contains("Run later ") && stdout(&output).contains("Run default "));
    assert_eq!(stderr(&output), "");

    // `export` named no archive exports the newest run too.
    let har = dir.path().join("last.har");
    let output = run(dir.path(), &["export", "--har", har.to_str().unwrap()], None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the newest of the 2 archives in ")
            && stderr(&output).ends_with("; name an archive to export another\n"),
        "{}",
        stderr(&output)
    );
    let document: serde_json::Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
    let pages: Vec<&str> = document["log"]["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(pages, ["t3"], "{document}");
}

/// `kit-cli curl <id>` alone searches the folder the tests write to, and `curl <folder> <id>`
/// the folder named, each archive newest first, for the request a failure message named.
#[test]
fn curl_named_only_a_request_searches_the_tests_folder() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("TestResults");
    std::fs::create_dir(&results).unwrap();
    let older = archive(&results, "older", &[("t1", 200, TestOutcome::Passed)]);
    let newer = archive(&results, "newer", &[("t2", 201, TestOutcome::Passed)]);
    let curl_in = |dir: &Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kit-cli"))
            .arg("curl")
            .args(args)
            .current_dir(dir)
            .env_remove("KIT_RESULTS_DIR")
            .env_remove("Kit__Trace__Directory")
            .output()
            .unwrap()
    };
    for (path, id) in [&older, &newer].map(|p| (p, request_ids(p).remove(0))) {
        let named = curl(path, &id);
        assert!(named.status.success(), "{}", stderr(&named));
        let alone = curl_in(dir.path(), &[&id]);
        assert!(alone.status.success(), "{id}: {}", stderr(&alone));
        assert_eq!(stdout(&alone), stdout(&named));
        let folder = curl_in(dir.path(), &["TestResults", &id]);
        assert_eq!(stdout(&folder), stdout(&named), "{}", stderr(&folder));
    }
    let absent = curl_in(dir.path(), &["00000000000000ff"]);
    assert_input_error(
        &absent,
        &format!(
            "{}: no request 00000000000000ff in its 2 archives",
            results.display()
        ),
    );
    let nowhere = curl_in(&results, &["00000000000000ff"]);
    assert_input_error(&nowhere, "no archive named, and no such folder");

    // An archive that cannot be read, the newest, hides no request the others hold: it is
    // passed over with a note, and named in the count when the request is nowhere.
    let broken = results.join("broken.kittrace");
    std::fs::write(&broken, b"not a zip at all").unwrap();
    let id = request_ids(&older).remove(0);
    let past = curl_in(dir.path(), &[&id]);
    assert!(past.status.success(), "{}", stderr(&past));
    assert_eq!(stdout(&past), stdout(&curl(&older, &id)));
    let note = stderr(&past);
    assert!(
        note.starts_with(&format!(
            "kit-cli: {} is not a kittrace archive: ",
            broken.display()
        )) && note.ends_with("; left out of the search\n")
            && note.lines().count() == 1,
        "{note}"
    );
    let absent = curl_in(dir.path(), &["00000000000000ff"]);
    assert_eq!(absent.status.code(), Some(2));
    assert!(
        stderr(&absent).ends_with(&format!(
            "kit-cli: {}: no request 00000000000000ff in its 3 archives (1 of them could not be read)\n",
            results.display()
        )),
        "{}",
        stderr(&absent)
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
    // The first run starts the output; the next follows its blank line after one more.
    assert!(text.starts_with("Run "), "{text}");
    assert_eq!(text.matches("╯\n\n\nRun ").count(), 1, "{text}");
    assert!(
        text.contains("Run other (cargo-test, kit 0.1.0): 1 test, 1 passed"),
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

    // Merged, the archive is whole, and still says its shard was cut short.
    let merged = dir.path().join("merged.kittrace");
    let output = merge(&merged, &[&path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let cut = "shard kit-cut.kittrace of run cut was cut short (its writer was killed?)";
    assert!(
        stdout(&output).contains(&format!("warning: {cut}")),
        "{}",
        stdout(&output)
    );
    let text = stdout(&report(&[&merged]));
    assert!(text.contains(&format!("note: {cut}")), "{text}");
    assert!(!text.contains("note: merged.kittrace"), "{text}");
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
    let output = report(&[&empty]);
    assert_input_error(&output, "the file is empty");
    // The line names the archive once.
    assert_eq!(
        stderr(&output),
        format!(
            "kit-cli: {} is not a kittrace archive: the file is empty\n",
            empty.display()
        )
    );

    assert_input_error(
        &report(&[Path::new("/dev/zero")]),
        "/dev/zero is not a kittrace archive: it is a device, not a file",
    );

    let (evil, escape, escaped) = common::zip_slip_archive(dir.path());
    let output = report(&[&evil]);
    assert_input_error(&output, &format!("unsafe entry name {escape:?}"));
    assert!(!escaped.exists());
}

/// Whether `text` holds a control character other than a line break, or a bidirectional
/// control: what a terminal would obey or reorder rather than show.
fn holds_hidden(text: &str) -> bool {
    text.chars().any(|c| {
        (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

/// Text an archive holds reaches the terminal as text: an escape sequence, a line break or a
/// bidirectional override in a test's name, a failure message, a route, an attachment or a zip
/// entry's name is shown escaped, never obeyed, in the report, in `curl`'s command, in the
/// audit's findings and in an error's line.
#[test]
fn text_from_an_archive_reaches_the_terminal_escaped_never_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = recording(dir.path(), "hostile");
    // A name that retitles the window, then forges an outcome line of its own.
    let name = "suite::evil\x1b]0;owned\x07\nPassed suite::forged \u{202e}gnp.exe";
    let route = "/items\n\x1b[2Jrm -rf ~ #";
    let ctx = run.begin_test(TestStarted::new(name));
    let op = ctx.start_operation(
        None,
        OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET /items").with_attributes(
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, "GET")
                .with(semconv::HTTP_ROUTE, route)
                .with(semconv::URL_FULL, "http://127.0.0.1:9/items"),
        ),
    );
    let request_id = op.id().to_string();
    op.observe(Observation::new(
        semconv::OBS_HTTP_RESPONSE,
        Attributes::new()
            .with(semconv::HTTP_REQUEST_METHOD, "GET")
            .with(semconv::HTTP_ROUTE, route)
            .with(semconv::HTTP_RESPONSE_STATUS_CODE, 500),
    ));
    op.end(OperationStatus::Ok, Attributes::new());
    ctx.attach(
        None,
        Attachment::new("body\x1b[8m", "text/plain\x1b[0m", b"x".to_vec()).with_description("\u{9b}2J"),
    );
    ctx.finish(TestOutcome::Failed {
        message: "expected 200, got 500\x1b[1A\x1b[2K: {\"error\":\"\x1b[5mboom\"}".into(),
    })
    .unwrap();
    run.bus().shutdown().unwrap();

    let output = report(&[&path]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!holds_hidden(&text), "{text:?}");
    assert!(
        text.contains(r"Failed suite::evil\u{1b}]0;owned\u{7}\nPassed suite::forged \u{202e}gnp.exe: expected 200, got 500\u{1b}[1A\u{1b}[2K"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("Passed")),
        "a forged outcome line: {text}"
    );
    assert!(text.contains(r"/items\n\u{1b}[2Jrm -rf ~ #"), "{text}");
    assert!(
        text.contains(r"body\u{1b}[8m") && text.contains(r"\u{9b}2J"),
        "{text}"
    );

    // The command is pasted into a shell: its comment line cannot end early.
    let output = curl(&path, &request_id);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!holds_hidden(&text), "{text:?}");
    assert!(
        text.starts_with(r"# GET /items\n\u{1b}[2Jrm -rf ~ # (request "),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("rm")), "{text}");

    // An entry named by a zip someone else wrote, in the audit's finding and in an error.
    let crafted = dir.path().join("crafted.kittrace");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&crafted).unwrap());
    let entry = "notes/\x1b]0;owned\x07\u{202e}.json";
    for (name, data) in [
        ("mimetype", "application/vnd.kit.trace+zip".to_owned()),
        (entry, format!(r#"{{"session":"{JWT}"}}"#)),
    ] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, data.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    let output = audit(&crafted, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!holds_hidden(&text), "{text:?}");
    assert!(
        text.starts_with(r"credential found in entry notes/\u{1b}]0;owned\u{7}\u{202e}.json at byte 12"),
        "{text}"
    );
    assert_eq!(damage_entry(&crafted, 1), entry);
    let output = audit(&crafted, None);
    assert_input_error(&output, r"entry notes/\u{1b}]0;owned\u{7}\u{202e}.json of ");
    assert!(!holds_hidden(&stderr(&output)), "{:?}", stderr(&output));
}

#[test]
fn an_openapi_document_that_cannot_be_read_is_the_error_whatever_the_archives_hold() {
    let dir = tempfile::tempdir().unwrap();
    let good = archive(dir.path(), "doc", &[("only", 200, TestOutcome::Passed)]);
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"openapi":"3.0.3","paths":[]}"#).unwrap();
    let cut = dir.path().join("cut.kittrace");
    std::fs::write(&cut, "not a zip at all").unwrap();
    // The document is read before the archives: its error comes first.
    for command in ["report", "coverage"] {
        for archive in [&good, &cut] {
            let output = kit_cli(&[
                command.as_ref(),
                archive.as_os_str(),
                "--openapi".as_ref(),
                broken.as_os_str(),
            ]);
            assert_input_error(&output, "broken.json");
            assert!(
                stderr(&output).contains("`paths` is not a mapping"),
                "{}",
                stderr(&output)
            );
        }
    }
    let missing = dir.path().join("missing.yaml");
    let output = kit_cli(&[
        "coverage".as_ref(),
        good.as_os_str(),
        "--openapi".as_ref(),
        missing.as_os_str(),
    ]);
    assert_input_error(&output, "missing.yaml");
}

/// An archive whose run met `secret` (remembered by a sanitizer) and recorded `body` in an
/// attachment of test `t`, kept as a blob.
fn archive_with_secret(dir: &Path, secret: &str, body: &str) -> PathBuf {
    archive_with_secret_in(dir, secret, body, WriterOptions::default().with_inline_limit(0))
}

fn archive_with_secret_in(dir: &Path, secret: &str, body: &str, options: WriterOptions) -> PathBuf {
    archive_of_test(dir, secret, options, |ctx| {
        ctx.attach(
            None,
            Attachment::new("rest-01-response", "application/json", body.as_bytes().to_vec())
                .with_description("200 OK"),
        );
    })
}

/// An archive of `options` whose run met `secret` (remembered by a sanitizer) and ran one
/// passing test `t` that did what `test` does.
fn archive_of_test(
    dir: &Path,
    secret: &str,
    options: WriterOptions,
    test: impl FnOnce(&KitExecutionContext),
) -> PathBuf {
    let run_id = RunId::new("audited").unwrap();
    let secrets = std::sync::Arc::new(SecretRegistry::new());
    assert!(secrets.remember(secret));
    let writer = ArchiveWriter::with_options(dir, RunManifest::new(run_id.clone(), "cargo-test"), options)
        .unwrap()
        .with_secrets(std::sync::Arc::clone(&secrets));
    let path = writer.path().to_owned();
    let run = KitRun::with_secrets(
        KitBuilder::new(Configuration::new()).build().unwrap().host,
        Bus::builder().collector(writer).start(),
        run_id,
        secrets,
    );
    let ctx = run.begin_test(TestStarted::new("t"));
    test(&ctx);
    ctx.finish(TestOutcome::Passed).unwrap();
    path
}

fn audit(archive: &Path, secrets_file: Option<&Path>) -> Output {
    audit_with(archive, secrets_file, &[])
}

/// `kit-cli audit` with `flags` after the archive.
fn audit_with(archive: &Path, secrets_file: Option<&Path>, flags: &[&str]) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["audit".as_ref(), archive.as_os_str()];
    if let Some(f) = secrets_file {
        args.push("--secrets-file".as_ref());
        args.push(f.as_os_str());
    }
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    kit_cli(&args)
}

#[test]
fn audit_passes_a_clean_archive_and_names_the_entry_of_a_leak() {
    let clean_dir = tempfile::tempdir().unwrap();
    let clean = archive_with_secret(clean_dir.path(), "tok-9f8e7d6c5b4a", r#"{"token":"[REDACTED]"}"#);
    let output = audit(&clean, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "no known secret and no credential by its form in 5 entries (1 secret searched for)\n"
    );

    let leaky_dir = tempfile::tempdir().unwrap();
    let leaky = archive_with_secret(
        leaky_dir.path(),
        "tok-9f8e7d6c5b4a",
        r#"{"echo":"tok-9f8e7d6c5b4a"}"#,
    );
    let output = audit(&leaky, None);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.starts_with("secret found in entry blobs/sha256/"), "{text}");
    assert!(!text.contains("tok-9f8e7d6c5b4a") && !stderr(&output).contains("tok-9f8e7d6c5b4a"));
    assert_eq!(stderr(&output), "kit-cli: 1 of 5 entries holds a secret\n");

    // A small attachment stays in its event: the leak is found in the test's segment.
    let inline_dir = tempfile::tempdir().unwrap();
    let inline = archive_with_secret_in(
        inline_dir.path(),
        "tok-9f8e7d6c5b4a",
        r#"{"echo":"tok-9f8e7d6c5b4a"}"#,
        WriterOptions::default(),
    );
    let output = audit(&inline, None);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with("secret found in entry runs/audited/tests/"),
        "{text}"
    );
    assert!(!text.contains("tok-9f8e7d6c5b4a") && !stderr(&output).contains("tok-9f8e7d6c5b4a"));

    // A secrets file adds secrets in clear; an unreadable one is unusable input.
    let file = clean_dir.path().join("secrets.txt");
    std::fs::write(&file, "not-in-there\r\napplication/vnd.kit.trace+zip\n").unwrap();
    let output = audit(&clean, Some(&file));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("secret found in entry mimetype at byte 0"),
        "{}",
        stdout(&output)
    );
    assert_input_error(
        &audit(&clean, Some(&clean_dir.path().join("nope.txt"))),
        "cannot read the secrets file",
    );
    // A stream has no size to check first: it is read up to the limit, and refused past it.
    assert_input_error(
        &audit(&clean, Some(Path::new("/dev/zero"))),
        "/dev/zero: the secrets file holds more than 64 MiB",
    );
    assert_input_error(
        &audit(&clean_dir.path().join("missing.kittrace"), None),
        "missing.kittrace: no such file or folder",
    );
}

#[test]
fn the_report_lists_attachments() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive_with_secret(dir.path(), "tok-9f8e7d6c5b4a", "{}");
    let text = stdout(&report(&[&path]));
    assert!(
        text.contains("│ t    │ rest-01-response │ application/json │ 2     │ 200 OK      │"),
        "{text}"
    );
}

/// `t00`, `t01`, … : `n` test names that sort as they are numbered.
fn test_names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i:02}")).collect()
}

/// A passing test of each name, answered 200.
fn passing(names: &[String]) -> Vec<(&str, u16, TestOutcome)> {
    names
        .iter()
        .map(|n| (n.as_str(), 200, TestOutcome::Passed))
        .collect()
}

/// Several threads read an archive's tests (batches of consecutive tests, each thread every n-th
/// batch); the report and both exports still give them in the archive's order, and a damaged
/// test stops each with the entry named, wherever it is: in the first batch, in another
/// thread's, in the last and short one. An export stopped so leaves no file.
#[test]
fn tests_read_side_by_side_are_reported_in_order_and_a_damaged_one_is_named() {
    let names = test_names(37);
    let tests = passing(&names);
    let dir = tempfile::tempdir().unwrap();
    let path = archive(dir.path(), "order", &tests);
    let output = report(&[&path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: String = names.iter().map(|n| format!("Passed {n}\n")).collect();
    assert!(stdout(&output).contains(&listed), "{}", stdout(&output));
    let har = exported(&path, "--har", dir.path());
    let pages: Vec<&str> = har["log"]["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(pages, names);
    let otlp = exported(&path, "--otlp", dir.path());
    let roots: Vec<&str> = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("parentSpanId").is_none())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(roots, names);

    for nth in [4, 12, 36] {
        let dir = tempfile::tempdir().unwrap();
        let path = archive(dir.path(), "order", &tests);
        let requests = request_ids(&path);
        // Tests after it are read by then, or being read.
        let damaged = damage_test(&path, nth);
        let output = report(&[&path]);
        assert_input_error(&output, &format!("tests/{damaged}/"));
        for flag in ["--har", "--otlp"] {
            let out = dir.path().join("out.json");
            assert_input_error(&export_to(&path, flag, &out), &format!("tests/{damaged}/"));
            assert!(!out.exists(), "{flag}");
        }
        // `curl` stops at its request's test: one before the damage is found, the last test's
        // is behind it.
        let found = curl(&path, &requests[nth - 1]);
        let said = format!("(request {}), as recorded", requests[nth - 1]);
        assert!(stdout(&found).contains(&said), "{}", stderr(&found));
        assert_input_error(&curl(&path, &requests[36]), &format!("tests/{damaged}/"));
    }
}

/// Events published by hand, outside any test's context, archive as a test with no
/// `test_started`: the report lists it by `kit_trace::NO_START` beside the run's other tests,
/// and the OTLP export gives its root span an id of its own, never the id of its first event's
/// span.
#[test]
fn a_test_published_without_its_start_is_reported_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = recording(dir.path(), "startless");
    let ctx = run.begin_test(TestStarted::new("whole"));
    ctx.finish(TestOutcome::Passed).unwrap();
    let test = TestId::generate();
    let lines = [
        r#"{"id":"00000000000000a1","sequence":0,"timestamp":1795890860000000000,"kind":{"operation_started":{"name":"http.request","display_name":"REST · GET /items/{id}","attributes":{"http.request.method":"GET","http.route":"/items/{id}"}}}}"#,
        r#"{"id":"00000000000000a2","parent_id":"00000000000000a1","sequence":1,"timestamp":1795890860000001000,"kind":{"operation_ended":{"operation":"00000000000000a1","status":{"status":"ok"},"duration_ns":1000}}}"#,
    ];
    for line in lines {
        let event = Event::from_json_in_scope(line, run.run_id(), test).unwrap();
        run.bus().publish(event).unwrap();
    }
    run.bus().shutdown().unwrap();

    let output = report(&[&path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Passed whole"), "{text}");
    assert!(
        text.contains(&format!("Interrupted {}", kit_trace::NO_START)),
        "{text}"
    );

    let otlp = exported(&path, "--otlp", dir.path());
    let spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let mut ids: Vec<&str> = spans.iter().map(|s| s["spanId"].as_str().unwrap()).collect();
    let root = spans
        .iter()
        .find(|s| s["name"] == kit_trace::NO_START)
        .unwrap_or_else(|| panic!("no root span for the startless test: {otlp}"));
    assert_ne!(root["spanId"], "00000000000000a1");
    ids.sort_unstable();
    let spans_seen = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), spans_seen, "span ids repeat: {otlp}");
}

/// `kit-cli curl <archive> <request>`.
fn curl(archive: &Path, request: &str) -> Output {
    kit_cli(&["curl".as_ref(), archive.as_os_str(), request.as_ref()])
}

/// The id of each test's first request, in the archive's order.
fn request_ids(path: &Path) -> Vec<String> {
    kit_trace::ArchiveReader::open(path)
        .unwrap()
        .tests()
        .map(|test| {
            let test = test.unwrap();
            let request = test.events.iter().find(
                |e| matches!(&e.kind, EventKind::OperationStarted(o) if o.name == semconv::OP_HTTP_REQUEST),
            );
            request.unwrap().id.to_string()
        })
        .collect()
}

/// A JWT signed with HS256: `{"alg":"HS256","typ":"JWT"}`, claims, a signature.
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

/// `kit-cli audit` of an archive whose run met `secret` and whose test attached `body` as it
/// is, no sanitizer between.
/// Named no archive, `audit` audits each archive of the folder the tests write to, and a
/// folder named each of its archives, every line after its archive's name.
#[test]
fn audit_of_a_folder_names_each_archive_and_fails_on_any_leak() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("TestResults");
    std::fs::create_dir(&results).unwrap();
    let clean = archive_with_secret(&results, "tok-9f8e7d6c5b4a", r#"{"token":"[REDACTED]"}"#);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kit-cli"))
            .arg("audit")
            .args(args)
            .current_dir(dir.path())
            .env_remove("KIT_RESULTS_DIR")
            .env_remove("Kit__Trace__Directory")
            .output()
            .unwrap()
    };
    // One archive: its lines as when it is named.
    let alone = run(&[]);
    assert_eq!(alone.status.code(), Some(0), "{}", stderr(&alone));
    assert_eq!(stdout(&alone), stdout(&audit(&clean, None)));

    // Made apart (the helper's run id is fixed) and copied in under a name of its own.
    let apart = tempfile::tempdir().unwrap();
    let made = archive_with_secret(apart.path(), "tok-1a2b3c4d5e6f", r#"{"echo":"tok-1a2b3c4d5e6f"}"#);
    let leaky = results.join("leaky.kittrace");
    std::fs::copy(&made, &leaky).unwrap();
    for args in [&[][..], &["TestResults"][..]] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
        let text = stdout(&output);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let line_of = |archive: &Path| {
            let name = archive.file_name().unwrap().to_str().unwrap();
            lines
                .iter()
                .find(|line| line.contains(&format!("{name}: ")))
                .unwrap_or_else(|| panic!("{name} in {text}"))
                .to_string()
        };
        assert!(
            line_of(&clean).ends_with(
                ": no known secret and no credential by its form in 5 entries (1 secret searched for)"
            ),
            "{text}"
        );
        assert!(
            line_of(&leaky).contains(": secret found in entry blobs/sha256/"),
            "{text}"
        );
        assert!(!text.contains("tok-1a2b3c4d5e6f"), "{text}");
        assert_eq!(
            stderr(&output),
            "kit-cli: 1 of 10 entries holds a secret, in 1 of 2 archives\n"
        );
    }
}

/// Of several archives, one that cannot be read does not leave the others unsearched: each
/// readable archive is audited and reported, the unreadable one is named at the end, and the
/// exit is 2, a leak found or not.
#[test]
fn audit_goes_on_past_an_archive_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    // Sorted first, so the audit meets it before the others.
    let broken = dir.path().join("a-broken.kittrace");
    std::fs::write(&broken, b"not a zip at all").unwrap();
    let apart = tempfile::tempdir().unwrap();
    let made = archive_with_secret(apart.path(), "tok-1a2b3c4d5e6f", r#"{"echo":"tok-1a2b3c4d5e6f"}"#);
    let leaky = dir.path().join("b-leaky.kittrace");
    std::fs::copy(&made, &leaky).unwrap();

    let output = audit(dir.path(), None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with(&format!(
            "{}: secret found in entry blobs/sha256/",
            leaky.display()
        )),
        "{text}"
    );
    let errors = stderr(&output);
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(lines.len(), 3, "{errors}");
    assert_eq!(
        lines[0],
        "kit-cli: 1 of 5 entries holds a secret, in 1 of 2 archives"
    );
    assert!(
        lines[1].starts_with(&format!(
            "kit-cli: {} is not a kittrace archive: ",
            broken.display()
        )),
        "{errors}"
    );
    assert_eq!(lines[2], "kit-cli: 1 of 2 archives could not be audited");

    // With no leak in what could be read, still 2: an archive went unsearched.
    std::fs::remove_file(&leaky).unwrap();
    let clean = archive_with_secret(dir.path(), "tok-9f8e7d6c5b4a", r#"{"token":"[REDACTED]"}"#);
    let output = audit(dir.path(), None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with(&format!("{}: no known secret", clean.display())),
        "{}",
        stdout(&output)
    );
    let errors = stderr(&output);
    assert_eq!(errors.lines().count(), 2, "{errors}");
    assert!(
        errors.ends_with("kit-cli: 1 of 2 archives could not be audited\n"),
        "{errors}"
    );

    // Named alone, an unreadable archive is the one input, refused as before.
    let output = audit(&broken, None);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).is_empty());
    assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
}

/// A secrets file that is a stream (`--secrets-file <(vault …)`, here standard input, a pipe)
/// is read once and searched for in every archive, not only the first.
#[cfg(unix)]
#[test]
fn a_streamed_secrets_file_is_searched_for_in_every_archive() {
    use std::io::Write as _;
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        let apart = tempfile::tempdir().unwrap();
        let made = archive_with_secret(
            apart.path(),
            "tok-9f8e7d6c5b4a",
            r#"{"echo":"vault-only-7c1e9a"}"#,
        );
        std::fs::copy(&made, dir.path().join(format!("{name}.kittrace"))).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_kit-cli"))
        .args(["audit", "--secrets-file", "/dev/stdin"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"vault-only-7c1e9a\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "kit-cli: 2 of 10 entries hold a secret, in 2 of 2 archives\n",
        "{}",
        stdout(&output)
    );
}

fn audit_of_attached(secret: &str, body: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    audit(&archive_with_secret(dir.path(), secret, body), None)
}

/// A credential the run never met reaches the archive through a test's own attachment, which
/// no sanitizer saw: the audit finds it by its form, says what it is and not what it says.
#[test]
fn audit_finds_a_credential_by_its_form_that_the_run_never_met() {
    let secret = "tok-9f8e7d6c5b4a";
    let dir = tempfile::tempdir().unwrap();
    let jwt = archive_with_secret(dir.path(), secret, &format!(r#"{{"session":"{JWT}"}}"#));
    let output = audit(&jwt, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("credential found in entry blobs/sha256/"),
        "{text}"
    );
    assert!(
        text.ends_with(" at byte 12: a JSON Web Token, by its form\n"),
        "{text}"
    );
    assert!(!text.contains("eyJ") && !stderr(&output).contains("eyJ"));
    assert_eq!(stderr(&output), "kit-cli: 1 of 5 entries holds a secret\n");
    // Asked not to look for forms, the audit looks for known secrets only.
    let output = audit_with(&jwt, None, &["--no-forms"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "no known secret in 5 entries (1 secret searched for)\n"
    );

    // A private key is found between its lines; once redacted, a block is no key, and a
    // certificate never was one.
    let key = "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----";
    let text = stdout(&audit_of_attached(secret, &format!(r#"{{"key":"{key}"}}"#)));
    assert!(
        text.ends_with(" at byte 37: a PEM private key, by its form\n"),
        "{text}"
    );
    let redacted = r#"{"key":"-----BEGIN PRIVATE KEY-----\n[REDACTED]\n-----END PRIVATE KEY-----","cert":"-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----"}"#;
    let output = audit_of_attached(secret, redacted);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));

    // Of a known secret and a credential in one entry, the earlier is named.
    let text = stdout(&audit_of_attached(
        secret,
        &format!(r#"{{"echo":"{secret}","jwt":"{JWT}"}}"#),
    ));
    assert!(text.starts_with("secret found in entry blobs/sha256/"), "{text}");
    assert!(text.ends_with(" at byte 9\n"), "{text}");
    let text = stdout(&audit_of_attached(
        secret,
        &format!(r#"{{"jwt":"{JWT}","echo":"{secret}"}}"#),
    ));
    assert!(
        text.ends_with(" at byte 8: a JSON Web Token, by its form\n"),
        "{text}"
    );
}

/// An archive whose run met `secret`, and whose test `t` attached `bytes` (not text: kept in
/// its segment as base64) and observed an exchange of `attributes`.
fn archive_with_bytes(dir: &Path, secret: &str, bytes: &[u8], attributes: Attributes) -> PathBuf {
    archive_of_test(dir, secret, WriterOptions::default(), |ctx| {
        ctx.attach(
            None,
            Attachment::new("rest-01-response", "application/octet-stream", bytes.to_vec()),
        );
        ctx.observe(None, Observation::new("http.response", attributes));
    })
}

/// `kit-cli audit`'s exit code and stdout on [`archive_with_bytes`], the response's body
/// `body_base64` as the kit records a body that is not text.
fn audit_of_bytes(secret: &str, bytes: &[u8], body_base64: &str) -> (Option<i32>, String) {
    audit_of_exchange(
        secret,
        bytes,
        Attributes::new()
            .with(semconv::KIT_RESPONSE_BODY, body_base64.to_owned())
            .with(semconv::KIT_RESPONSE_BODY_ENCODING, "base64"),
    )
}

/// `kit-cli audit`'s exit code and stdout on [`archive_with_bytes`].
fn audit_of_exchange(secret: &str, bytes: &[u8], attributes: Attributes) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = audit(&archive_with_bytes(dir.path(), secret, bytes, attributes), None);
    (output.status.code(), stdout(&output))
}

/// Bytes that are not text are kept in base64, in an attachment's `inline` and in a body whose
/// encoding says so. The audit searches them as the bytes they stand for: a secret in them is
/// found, and a credential's form that their letters take by chance is not one.
#[test]
fn audit_searches_base64_as_the_bytes_it_stands_for() {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let secret = "tok-9f8e7d6c5b4a";
    let clean = b"\xff\xfe binary \x00".as_slice();
    let (code, text) = audit_of_bytes(secret, clean, &b64(clean));
    assert_eq!(code, Some(0), "{text}");

    // A JWT in a binary attachment.
    let mut with_jwt = clean.to_vec();
    with_jwt.extend_from_slice(JWT.as_bytes());
    let (code, text) = audit_of_bytes(secret, &with_jwt, &b64(clean));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("credential found in entry runs/audited/tests/"),
        "{text}"
    );
    assert!(
        text.ends_with(", at byte 11 of what it stands for: a JSON Web Token, by its form\n"),
        "{text}"
    );
    assert!(text.contains(" in the base64 at byte "), "{text}");
    // The known secret in a binary response body.
    let mut with_secret = clean.to_vec();
    with_secret.extend_from_slice(secret.as_bytes());
    let (code, text) = audit_of_bytes(secret, clean, &b64(&with_secret));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("secret found in entry runs/audited/tests/"),
        "{text}"
    );
    assert!(text.ends_with(", at byte 11 of what it stands for\n"), "{text}");
    assert!(!text.contains(secret));
    // And in a request's, its encoding written before it.
    let (code, text) = audit_of_exchange(
        secret,
        clean,
        Attributes::new()
            .with(semconv::KIT_REQUEST_BODY_ENCODING, "base64")
            .with(semconv::KIT_REQUEST_BODY, b64(&with_secret)),
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.ends_with(", at byte 11 of what it stands for\n"), "{text}");

    // Base64 whose letters read `+AIza` and 35 more, a Google API key's form: the bytes it
    // stands for hold no key, in an attachment or a body.
    let letters = format!("////+AIza{}", "Sy0123456789abcdefghijklmnopqrstuvw");
    assert_eq!(letters.len() % 4, 0);
    let by_chance = base64::engine::general_purpose::STANDARD
        .decode(&letters)
        .unwrap();
    assert_eq!(b64(&by_chance), letters);
    let (code, text) = audit_of_bytes(secret, &by_chance, &letters);
    assert_eq!(code, Some(0), "{text}");
    // The same letters in a body with no encoding are text, and their form is searched.
    let dir = tempfile::tempdir().unwrap();
    let text = stdout(&audit(
        &archive_with_secret_in(dir.path(), secret, &letters, WriterOptions::default()),
        None,
    ));
    assert!(text.ends_with(": a Google API key, by its form\n"), "{text}");
}

/// Text in UTF-16 kept as base64 (a test's own attachment of a SOAP answer, say), after its
/// byte-order mark or (since the fifty-ninth stop) JSON or XML told by the zeros of its first
/// two characters, is searched as the text it stands for: each ASCII letter of a secret stands
/// beside a zero byte there, which a search of the bytes does not see (issue 9's fifty-eighth
/// stop).
#[test]
fn audit_reads_utf_16_as_text() {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    // After its byte-order mark.
    let utf16 = |text: &str, big_endian: bool| -> Vec<u8> {
        let to_bytes: fn(u16) -> [u8; 2] = if big_endian {
            u16::to_be_bytes
        } else {
            u16::to_le_bytes
        };
        // The mark is U+FEFF in the text's byte order.
        to_bytes(0xfeff)
            .into_iter()
            .chain(text.encode_utf16().flat_map(to_bytes))
            .collect()
    };
    let secret = "tok-9f8e7d6c5b4a";
    let clean = utf16("<note>Grüße</note>", false);
    let (code, text) = audit_of_bytes(secret, &clean, &b64(&clean));
    assert_eq!(code, Some(0), "{text}");
    // A JWT in an attachment in UTF-16LE: after the mark and `é: ` (eight bytes), byte 8.
    let (code, text) = audit_of_bytes(secret, &utf16(&format!("é: {JWT}"), false), &b64(&clean));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.ends_with(", at byte 8 of what it stands for: a JSON Web Token, by its form\n"),
        "{text}"
    );
    // The known secret in a body in UTF-16BE: after the mark and `x`, byte 4.
    let (code, text) = audit_of_bytes(secret, &clean, &b64(&utf16(&format!("x{secret}"), true)));
    assert_eq!(code, Some(1), "{text}");
    assert!(text.ends_with(", at byte 4 of what it stands for\n"), "{text}");
    assert!(!text.contains(secret));
    // JSON in UTF-16LE without a mark, told by its zeros: `{"token":"` is ten units, byte 20.
    let json = utf16(&format!(r#"{{"token":"{secret}"}}"#), false)[2..].to_vec();
    let (code, text) = audit_of_bytes(secret, &clean, &b64(&json));
    assert_eq!(code, Some(1), "{text}");
    assert!(text.ends_with(", at byte 20 of what it stands for\n"), "{text}");
    // Without the mark, and not opening as a document does, the bytes are searched as they
    // are: such text is not guessed at.
    let unmarked = utf16(&format!("x{secret}"), false)[2..].to_vec();
    let (code, text) = audit_of_bytes(secret, &clean, &b64(&[&[0x00, 0xff][..], &unmarked].concat()));
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = audit_of_bytes(secret, &clean, &b64(&unmarked));
    assert_eq!(code, Some(0), "{text}");
}

/// Entries are scanned on several threads: leaks are still listed in the archive's order, and
/// of two damaged entries the audit names the first, as a scan in order would.
#[test]
fn audit_lists_leaks_in_entry_order_and_names_the_first_damaged_entry() {
    let names = test_names(37);
    let tests = passing(&names);
    let dir = tempfile::tempdir().unwrap();
    let path = archive(dir.path(), "audited", &tests);
    let ids: Vec<String> = kit_trace::ArchiveReader::open(&path)
        .unwrap()
        .tests()
        .map(|t| t.unwrap().test_id.to_string())
        .collect();
    // Each test's name is in its segment and nowhere else.
    let leaked = [3, 4, 17, 30, 36];
    let secrets = dir.path().join("secrets.txt");
    let lines: String = leaked.iter().rev().map(|&i| format!("{}\n", names[i])).collect();
    std::fs::write(&secrets, lines).unwrap();
    let output = audit(&path, Some(&secrets));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let listed = stdout(&output);
    let found: Vec<&str> = listed
        .lines()
        .map(|line| line.split('/').nth(3).unwrap())
        .collect();
    let expected: Vec<&str> = leaked.iter().map(|&i| ids[i].as_str()).collect();
    assert_eq!(found, expected, "{listed}");

    // Two neighbouring entries, which no two threads' shares of the entries put together: the
    // thread that meets the later one has not met the earlier. The earlier is in the last
    // thread's share (as `kit-cli` shares them out), so the later one's error is heard first.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    let fifth = entry_names(&path)
        .iter()
        .position(|name| name.contains(&ids[5]))
        .unwrap();
    let index = (fifth..).find(|i| i % threads == threads - 1).unwrap();
    let first = damage_entry(&path, index);
    let later = damage_entry(&path, index + 1);
    let output = audit(&path, Some(&secrets));
    assert_input_error(&output, &format!("entry {first} of"));
    assert!(!stderr(&output).contains(&later), "{}", stderr(&output));
}

/// The names of the archive's entries, in order.
fn entry_names(path: &Path) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().into_owned())
        .collect()
}

/// Scrambles the data of entry `index` of the archive at `path`; gives its name.
fn damage_entry(path: &Path, index: usize) -> String {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let entry = zip.by_index(index).unwrap();
    let name = entry.name().unwrap().into_owned();
    let start = entry.data_start().unwrap() as usize;
    let len = entry.compressed_size() as usize;
    drop(entry);
    let mut bytes = std::fs::read(path).unwrap();
    for b in &mut bytes[start..start + len] {
        *b ^= 0x5a;
    }
    std::fs::write(path, &bytes).unwrap();
    name
}

/// An archive of two runs exports each run's spans under its own resource, runs in id order.
#[test]
fn otlp_gives_each_run_of_a_merged_archive_its_resource() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = archive(a.path(), "run-a", &[("t1", 200, TestOutcome::Passed)]);
    let second = archive(
        b.path(),
        "run-b",
        &[("t2", 201, TestOutcome::Passed), ("t3", 500, TestOutcome::Passed)],
    );
    let merged = a.path().join("merged.kittrace");
    let output = merge(&merged, &[&first, &second]);
    assert!(output.status.success(), "{}", stderr(&output));
    let otlp = exported(&merged, "--otlp", a.path());
    let resources = otlp["resourceSpans"].as_array().unwrap();
    let runs: Vec<(String, usize)> = resources
        .iter()
        .map(|r| {
            let run = r["resource"]["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "kit.run.id")
                .unwrap()["value"]["stringValue"]
                .as_str()
                .unwrap()
                .to_owned();
            let spans = r["scopeSpans"][0]["spans"].as_array().unwrap().len();
            (run, spans)
        })
        .collect();
    // A root span and a request span per test.
    assert_eq!(runs, [("run-a".to_owned(), 2), ("run-b".to_owned(), 4)], "{otlp}");
}

/// The names of the files in `dir`, sorted: what a command left there.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Scrambles the data of the `nth` test's entries in the archive at `path`; gives its id.
fn damage_test(path: &Path, nth: usize) -> String {
    let id = kit_trace::ArchiveReader::open(path)
        .unwrap()
        .tests()
        .nth(nth)
        .unwrap()
        .unwrap()
        .test_id
        .to_string();
    for (index, name) in entry_names(path).iter().enumerate() {
        if name.contains(&id) {
            damage_entry(path, index);
        }
    }
    id
}

/// Exports are written as each test is read. One that fails part way leaves the output as it
/// was (a file is written beside it and renamed into place once whole) and no file behind; a
/// pipe or a device is written directly; the file made has the usual permissions.
#[cfg(unix)]
#[test]
fn a_failed_export_leaves_its_output_as_it_was_and_a_pipe_is_written_directly() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    let dir = tempfile::tempdir().unwrap();
    let tests = [
        ("t0", 200, TestOutcome::Passed),
        ("t1", 201, TestOutcome::Passed),
        ("t2", 404, TestOutcome::Failed { message: "no".into() }),
    ];
    let path = archive(dir.path(), "exports", &tests);
    let export = |flag: &str, out: &Path| export_to(&path, flag, out);

    // A pipe is written directly: its reader sees the document. (Never a system path such as
    // `/dev/stdout` here: a broken build renaming over it would replace it.)
    let pipe = dir.path().join("pipe");
    let made_fifo = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made_fifo.success());
    for flag in ["--har", "--otlp"] {
        let (sender, read) = std::sync::mpsc::channel();
        std::thread::spawn({
            let pipe = pipe.clone();
            move || sender.send(std::fs::read(pipe).unwrap())
        });
        let output = export(flag, &pipe);
        assert!(output.status.success(), "{flag}: {}", stderr(&output));
        // A reader whose pipe is never opened for writing waits for ever: bounded, it fails.
        let read = read
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the export wrote to the pipe");
        assert!(std::fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
        let document: serde_json::Value = serde_json::from_slice(&read).unwrap();
        let count = match flag {
            "--har" => document["log"]["entries"].as_array().unwrap().len(),
            _ => document["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .len(),
        };
        assert_eq!(count, if flag == "--har" { 3 } else { 6 }, "{document}");
    }

    let made = dir.path().join("made.har");
    assert!(export("--har", &made).status.success());
    // Through a link: the file it names is written, and the link stays.
    let link = dir.path().join("link.har");
    std::os::unix::fs::symlink(&made, &link).unwrap();
    assert!(export("--otlp", &link).status.success());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let through: serde_json::Value = serde_json::from_slice(&std::fs::read(&made).unwrap()).unwrap();
    assert!(through.get("resourceSpans").is_some(), "{through}");
    let plain = dir.path().join("plain");
    std::fs::File::create(&plain).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
    assert_eq!(
        mode(&made),
        mode(&plain),
        "the umask's permissions, as any new file"
    );

    let second = damage_test(&path, 1);
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "what was there").unwrap();
    let fresh = dir.path().join("fresh.json");
    for flag in ["--har", "--otlp"] {
        assert_input_error(&export(flag, &kept), &format!("tests/{second}/"));
        assert_eq!(
            std::fs::read_to_string(&kept).unwrap(),
            "what was there",
            "{flag}"
        );
        assert_input_error(&export(flag, &fresh), &format!("tests/{second}/"));
        assert!(!fresh.exists(), "{flag}");
    }
    let left: Vec<String> = file_names(dir.path())
        .into_iter()
        .filter(|name| !name.ends_with(".kittrace") && !name.ends_with(".lock"))
        .collect();
    assert_eq!(left, ["kept.json", "link.har", "made.har", "pipe", "plain"]);
}

#[test]
fn fail_on_test_failure_passes_a_run_whose_tests_all_passed() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive(
        dir.path(),
        "all-passed",
        &[("a", 200, TestOutcome::Passed), ("b", 200, TestOutcome::Passed)],
    );
    for command in ["report", "coverage"] {
        let output = kit_cli(&[
            command.as_ref(),
            path.as_os_str(),
            "--fail-on-test-failure".as_ref(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{command}: {}", stderr(&output));
        assert_eq!(stderr(&output), "", "{command}");
    }
    let failing = archive(
        dir.path(),
        "one-failed",
        &[(
            "a",
            500,
            TestOutcome::Failed {
                message: "boom".into(),
            },
        )],
    );
    let output = kit_cli(&[
        "coverage".as_ref(),
        failing.as_os_str(),
        "--fail-on-test-failure".as_ref(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "kit-cli: 1 test(s) failed or were interrupted\n");
}

/// An archive of one `GET` response recorded by its URL alone, with no route template, as a
/// client that knows no templates records it.
fn archive_of_url(dir: &Path, url: &str) -> PathBuf {
    let (run, path) = recording(dir, "by-url");
    let ctx = run.begin_test(TestStarted::new("by_url"));
    let op = ctx.start_operation(
        None,
        OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET"),
    );
    op.observe(Observation::new(
        semconv::OBS_HTTP_RESPONSE,
        Attributes::new()
            .with(semconv::HTTP_REQUEST_METHOD, "GET")
            .with(semconv::URL_FULL, url)
            .with(semconv::HTTP_RESPONSE_STATUS_CODE, 200),
    ));
    op.end(OperationStatus::Ok, Attributes::new());
    ctx.finish(TestOutcome::Passed).unwrap();
    run.bus().shutdown().unwrap();
    path
}

#[test]
fn base_paths_from_flags_or_configuration_replace_the_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive_of_url(dir.path(), "http://127.0.0.1:8080/api/items/7");
    let document = dir.path().join("openapi.json");
    std::fs::write(
        &document,
        r#"{ "openapi": "3.0.3", "info": { "title": "t", "version": "1" },
             "servers": [{ "url": "http://127.0.0.1:8080/api" }],
             "paths": { "/items/{id}": { "get": { "responses": { "200": { "description": "ok" } } } } } }"#,
    )
    .unwrap();
    let config = dir.path().join("kit.toml");
    std::fs::write(&config, "[Kit.Coverage]\nBasePaths = [\"/elsewhere\"]\n").unwrap();
    let operations = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "coverage".as_ref(),
            path.as_os_str(),
            "--openapi".as_ref(),
            document.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let output = kit_cli(&args);
        assert_eq!(output.status.code(), Some(0), "{extra:?}: {}", stderr(&output));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let metrics = json["coverage"]["sections"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["metrics"].as_array().into_iter().flatten())
            .find(|m| m["name"] == "operations")
            .cloned()
            .unwrap();
        (
            metrics["covered"].as_u64().unwrap(),
            metrics["total"].as_u64().unwrap(),
        )
    };
    let empty_dir = dir.path().join("no-config");
    std::fs::create_dir(&empty_dir).unwrap();
    let no_config = ["--config", empty_dir.to_str().unwrap()];
    // The document's own `/api`.
    assert_eq!(operations(&no_config), (1, 1));
    // A flag replaces it: nothing is under `/elsewhere`; `/api` given again finds it.
    assert_eq!(
        operations(&[no_config[0], no_config[1], "--base-path", "/elsewhere"]),
        (0, 1)
    );
    assert_eq!(
        operations(&[no_config[0], no_config[1], "--base-path", "/api"]),
        (1, 1)
    );
    // So does the configuration's list, and a flag wins over it.
    let with_config = ["--config", config.to_str().unwrap()];
    assert_eq!(operations(&with_config), (0, 1));
    assert_eq!(
        operations(&[with_config[0], with_config[1], "--base-path", "/api"]),
        (1, 1)
    );
}

#[test]
fn a_request_that_got_no_response_is_reported_with_its_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = recording(dir.path(), "refused");
    let ctx = run.begin_test(TestStarted::new("suite::refused"));
    let op = get_item(&ctx, "http://127.0.0.1:9/items/7");
    op.observe(Observation::new(
        semconv::OBS_HTTP_FAILURE,
        Attributes::new().with(semconv::KIT_FAILURE_MESSAGE, "connection refused\nsecond line"),
    ));
    // An observation of another kind after it leaves the failure in place.
    op.observe(Observation::new(
        semconv::OBS_HTTP_CONTRACT_SHAPE,
        Attributes::new(),
    ));
    op.end(
        OperationStatus::Error {
            message: "connection refused".into(),
        },
        Attributes::new(),
    );
    ctx.finish(TestOutcome::Failed {
        message: "the request failed".into(),
    })
    .unwrap();
    run.bus().shutdown().unwrap();

    let output = kit_cli(&[
        "report".as_ref(),
        path.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let request = &json["runs"][0]["tests"][0]["last_requests"][0];
    assert_eq!(request["failure"], "connection refused\nsecond line", "{json}");
    assert!(request.get("status").is_none(), "{request}");
    // The failure summaries show its first line.
    let output = kit_cli(&[
        "report".as_ref(),
        path.as_os_str(),
        "--format".as_ref(),
        "markdown".as_ref(),
    ]);
    let text = stdout(&output);
    assert!(
        text.contains(
            "\nGET /items/{id} → failed: connection refused (http://127.0.0.1:9/items/7), request "
        ),
        "{text}"
    );
}

#[test]
fn har_and_curl_carry_what_each_request_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = recording(dir.path(), "exchanges");
    let ctx = run.begin_test(TestStarted::new("suite::two_requests"));
    let header = |name: &str| format!("{}{name}", semconv::HTTP_REQUEST_HEADER_PREFIX);
    let body = r#"{"sku":"A-1"}"#;
    let created = ctx.start_operation(
        None,
        OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · POST /orders").with_attributes(
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, "POST")
                .with(semconv::HTTP_ROUTE, "/orders")
                .with(semconv::URL_FULL, "http://127.0.0.1:8080/api/orders")
                .with(header("cookie"), "session=[REDACTED]; theme=dark")
                .with(header("content-type"), "application/json")
                .with(
                    header("accept"),
                    vec!["application/json".to_owned(), "text/plain".to_owned()],
                )
                .with(semconv::KIT_REQUEST_BODY, body)
                .with(semconv::HTTP_REQUEST_BODY_SIZE, body.len()),
        ),
    );
    let created_id = created.id().to_string();
    created.observe(Observation::new(
        semconv::OBS_HTTP_RESPONSE,
        Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, 201),
    ));
    // Observations of other kinds after the response change nothing of it.
    created.observe(Observation::new(
        semconv::OBS_HTTP_CONTRACT_SHAPE,
        Attributes::new(),
    ));
    // An assertion another recorder made: no `assertion.result`, only its status.
    let assertion = ctx.start_operation(
        Some(created.id()),
        OperationStarted::new("assert.status", "status 200 OK"),
    );
    assertion.end(
        OperationStatus::Error {
            message: "expected 200, got 201".into(),
        },
        Attributes::new(),
    );
    created.end(OperationStatus::Ok, Attributes::new());
    let refused = ctx.start_operation(
        None,
        OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET /orders/{id}").with_attributes(
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, "GET")
                .with(semconv::HTTP_ROUTE, "/orders/{id}")
                .with(
                    semconv::URL_FULL,
                    "http://127.0.0.1:9/api/orders/7?token=[REDACTED]",
                ),
        ),
    );
    let refused_id = refused.id().to_string();
    refused.observe(Observation::new(
        semconv::OBS_HTTP_FAILURE,
        Attributes::new().with(semconv::KIT_FAILURE_MESSAGE, "connection refused"),
    ));
    refused.observe(Observation::new(
        semconv::OBS_HTTP_CONTRACT_SHAPE,
        Attributes::new(),
    ));
    // Time passes, so the entry's time (from its end, with no duration recorded) is not zero.
    std::thread::sleep(std::time::Duration::from_millis(2));
    refused.end(
        OperationStatus::Error {
            message: "the operation's own message".into(),
        },
        Attributes::new(),
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    run.bus().shutdown().unwrap();

    let export = |flag: &str| exported(&path, flag, dir.path());
    let har = export("--har");
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{har}");
    let (first, second) = (&entries[0], &entries[1]);
    assert_eq!(first["response"]["status"], 201, "{first}");
    assert_eq!(first["request"]["bodySize"], body.len(), "{first}");
    assert_eq!(
        first["request"]["postData"]["mimeType"], "application/json",
        "{first}"
    );
    assert_eq!(first["request"]["postData"]["text"], body, "{first}");
    assert_eq!(first["request"]["cookies"][1]["name"], "theme", "{first}");
    // A header recorded as a list is one HAR header per value.
    let accepts: Vec<&serde_json::Value> = first["request"]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["name"] == "accept")
        .map(|h| &h["value"])
        .collect();
    assert_eq!(accepts, ["application/json", "text/plain"], "{first}");
    assert_eq!(first["comment"], format!("request {created_id}"));
    let this_year = first["startedDateTime"].as_str().unwrap();
    assert!(this_year >= "2026" && this_year.ends_with('Z'), "{this_year}");
    // No response: status 0, the transport's failure (not the operation's message) in the
    // comment, and the time from its start to its end.
    assert_eq!(second["response"]["status"], 0, "{second}");
    assert_eq!(
        second["comment"],
        format!("request {refused_id}: connection refused")
    );
    let time = second["time"].as_f64().unwrap();
    assert!((2.0..1000.0).contains(&time), "{time} ms");
    let page = har["log"]["pages"][0]["startedDateTime"].as_str().unwrap();
    assert!(page >= "2026" && page <= this_year, "{page}");

    // In OTLP the assertion is an event of the request's span, failed by its status.
    let otlp = export("--otlp");
    let spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let request = spans.iter().find(|s| s["name"] == "POST /orders").unwrap();
    let event = request["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "status 200 OK")
        .unwrap();
    assert_eq!(
        attribute_of(event, "assertion.result"),
        [serde_json::json!({ "boolValue": false })]
    );
    assert_eq!(
        attribute_of(event, "exception.message"),
        [serde_json::json!({ "stringValue": "expected 200, got 201" })]
    );
    // The response's figures are the span's attributes; other observations its events.
    assert_eq!(
        attribute_of(request, "http.response.status_code"),
        [serde_json::json!({ "intValue": "201" })]
    );
    let events = |span: &serde_json::Value| -> Vec<String> {
        span["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(events(request), ["http.contract.shape", "status 200 OK"]);
    let refused_span = spans.iter().find(|s| s["name"] == "GET /orders/{id}").unwrap();
    assert!(attribute_of(refused_span, "http.response.status_code").is_empty());
    assert_eq!(events(refused_span), ["http.failure", "http.contract.shape"]);
    assert_eq!(refused_span["status"]["code"], 2, "{refused_span}");

    let output = kit_cli(&["curl".as_ref(), path.as_os_str(), created_id.as_ref()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let command = stdout(&output);
    assert!(
        command.starts_with(&format!(
            "# POST /orders (request {created_id}), as recorded\n\
             # [REDACTED] values were secrets: put the real ones back before sending\n"
        )),
        "{command}"
    );
    // A secret in the URL alone is flagged too.
    let output = kit_cli(&["curl".as_ref(), path.as_os_str(), refused_id.as_ref()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let command = stdout(&output);
    assert!(
        command.contains("\n# [REDACTED] values were secrets: put the real ones back before sending\n"),
        "{command}"
    );
    // Hex of the wrong length is refused as an id, not looked for.
    let output = kit_cli(&["curl".as_ref(), path.as_os_str(), "0123abcd".as_ref()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("is not a request id"),
        "{}",
        stderr(&output)
    );
}

/// Every value of the attribute `key` of an OTLP span or span event, in order.
fn attribute_of(span: &serde_json::Value, key: &str) -> Vec<serde_json::Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["key"] == key)
        .map(|a| a["value"].clone())
        .collect()
}

/// `kit-cli report <fixture> --format <format>` writing its stdout to `stdout`.
fn report_fixture_to(format: &str, stdout: impl Into<std::process::Stdio>) -> Output {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-fixture.kittrace");
    Command::new(env!("CARGO_BIN_EXE_kit-cli"))
        .args([
            "report".as_ref(),
            fixture.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])
        .stdout(stdout)
        .output()
        .unwrap()
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    // `kit-cli report … | head`: the reader is gone before the report is written. Its end
    // of the pipe is closed before kit-cli starts, so every write meets a closed pipe. JSON is
    // written as it is serialized, the other formats whole.
    for format in ["html", "json"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = report_fixture_to(format, writer);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        assert_eq!(stderr(&output), "", "{format}");
    }
}

/// Any other failure to write to stdout is an error that says so: here a full disk.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error() {
    for format in ["table", "json"] {
        let full = std::fs::File::options().write(true).open("/dev/full").unwrap();
        let output = report_fixture_to(format, full);
        assert_input_error(&output, "cannot write to stdout: No space left on device");
    }
}

/// An export that cannot write stops part way with the reason, whether the readers are still
/// reading ahead or not: the document here is larger than the output's buffer many times over.
#[cfg(target_os = "linux")]
#[test]
fn an_export_to_a_full_disk_stops_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..1600).map(|i| format!("t{i:04}")).collect();
    let tests: Vec<(&str, u16, TestOutcome)> = names
        .iter()
        .map(|n| (n.as_str(), 200, TestOutcome::Passed))
        .collect();
    let path = archive(dir.path(), "full", &tests);
    for flag in ["--har", "--otlp"] {
        let written = exported(&path, flag, dir.path());
        let size = serde_json::to_vec_pretty(&written).unwrap().len();
        assert!(size > 1 << 20, "{flag}: {size} bytes, not many times the buffer");
        let output = export_to(&path, flag, Path::new("/dev/full"));
        assert_input_error(&output, "/dev/full: cannot write: No space left on device");
    }
}

/// `kit-cli args…` on a terminal `cols` wide: util-linux's `script` gives it a pseudo-terminal
/// for stdout and stderr. What the terminal received, escapes and all.
fn on_a_terminal(args: &[&Path], cols: u16, env: &[(&str, &str)]) -> String {
    let quoted: Vec<String> = std::iter::once(Path::new(env!("CARGO_BIN_EXE_kit-cli")))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.display()))
        .collect();
    let mut command = Command::new("script");
    command
        .args([
            "-qec",
            &format!("stty cols {cols} rows 40; exec {}", quoted.join(" ")),
            "/dev/null",
        ])
        .env_remove("NO_COLOR");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command
        .output()
        .expect("util-linux `script` (Debian's bsdutils, an essential package) runs kit-cli on a terminal");
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// Text without ANSI escapes or carriage returns.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: `ESC [` parameters, then a final letter.
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn on_a_terminal_outcomes_are_coloured_tables_fit_and_a_bar_shows_the_archive() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/fixtures/report-fixture.kittrace");
    let openapi = root.join("../../examples/orders/openapi.yaml");
    let args = [Path::new("report"), &fixture, Path::new("--openapi"), &openapi];
    let seen = on_a_terminal(&args, 60, &[]);
    for coloured in [
        "\x1b[32mPassed\x1b[0m",
        "\x1b[31mFailed\x1b[0m",
        "\x1b[33mSkipped\x1b[0m",
        "\x1b[35mInterrupted\x1b[0m",
    ] {
        assert!(seen.contains(coloured), "{coloured:?} in {seen:?}");
    }
    // The progress bar on stderr names the archive and counts its tests.
    assert!(seen.contains("report-fixture.kittrace ["), "{seen:?}");
    assert!(seen.contains("/15 tests"), "{seen:?}");
    // Tables wrap to the terminal's width; piped, the same tables are wider.
    let table_lines = |text: &str| -> Vec<usize> {
        plain(text)
            .lines()
            .filter(|l| l.starts_with(['│', '╭', '├', '╰']))
            .map(|l| l.chars().count())
            .collect()
    };
    let widths = table_lines(&seen);
    assert!(
        !widths.is_empty() && widths.iter().all(|&w| w <= 60),
        "{widths:?}"
    );
    let piped_args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let piped = stdout(&kit_cli(&piped_args));
    assert!(!piped.contains('\x1b'), "no colour into a pipe");
    assert!(table_lines(&piped).iter().any(|&w| w > 60), "{piped}");
    // NO_COLOR turns colours off on a terminal too.
    let no_colour = on_a_terminal(&args, 60, &[("NO_COLOR", "1")]);
    assert!(!no_colour.contains("\x1b[32mPassed"), "{no_colour:?}");

    // An archive's file name is shown in the bar, not obeyed.
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("evil\x1b]0;owned\x07.kittrace");
    std::fs::copy(&fixture, &named).unwrap();
    let seen = on_a_terminal(&[Path::new("report"), &named], 60, &[]);
    assert!(seen.contains(r"evil\u{1b}]0;owned\u{7}.kittrace ["), "{seen:?}");
    assert!(!seen.contains("evil\x1b"), "{seen:?}");
}

/// A test of many requests exports in time linear in its events: each end, response and
/// assertion finds its request by id, where a scan of the requests before made 20 000 of them
/// take 15 s (HAR) and 6.4 s (OTLP) in a release build. What each lands on is checked too.
#[test]
fn a_test_of_many_requests_exports_each_exchange_and_assertion_to_its_request() {
    const REQUESTS: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = recording(dir.path(), "long");
    let ctx = run.begin_test(TestStarted::new("suite::many_requests"));
    for i in 0..REQUESTS {
        let op = get_item(&ctx, format!("http://127.0.0.1:8080/items/{i}"));
        op.observe(Observation::new(
            semconv::OBS_HTTP_RESPONSE,
            Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, 200 + (i % 2) as i64),
        ));
        let assertion = ctx.start_operation(
            Some(op.id()),
            OperationStarted::new("assert.http.status", format!("status of {i}")),
        );
        assertion.end(OperationStatus::Ok, Attributes::new());
        let status = if i % 3 == 0 {
            OperationStatus::Error {
                message: format!("failed {i}"),
            }
        } else {
            OperationStatus::Ok
        };
        op.end(status, Attributes::new());
    }
    ctx.finish(TestOutcome::Passed).unwrap();
    run.bus().shutdown().unwrap();
    let export = |flag: &str| exported(&path, flag, dir.path());

    let har = export("--har");
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), REQUESTS);
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(
            entry["request"]["url"],
            format!("http://127.0.0.1:8080/items/{i}")
        );
        assert_eq!(entry["response"]["status"], 200 + (i % 2), "{entry}");
        // The request's own end, found among the assertions' ends.
        let failed = entry["comment"]
            .as_str()
            .is_some_and(|c| c.ends_with(&format!(": failed {i}")));
        assert_eq!(failed, i % 3 == 0, "{entry}");
    }

    let otlp = export("--otlp");
    let spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    assert_eq!(spans.len(), REQUESTS + 1, "the test's span and one per request");
    for (i, span) in spans[1..].iter().enumerate() {
        assert_eq!(span["parentSpanId"], spans[0]["spanId"]);
        assert_eq!(
            attribute_of(span, semconv::HTTP_RESPONSE_STATUS_CODE),
            [serde_json::json!({ "intValue": (200 + i % 2).to_string() })],
            "{span}"
        );
        let events = span["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{span}");
        assert_eq!(events[0]["name"], format!("status of {i}"));
        let code = if i % 3 == 0 { 2 } else { 1 };
        assert_eq!(span["status"]["code"], code, "{span}");
    }
}

/// `report -o` and `coverage -o` write their file as exports do, whole or not at all: a file
/// there is replaced, a link is written through and stays, a write that fails part way leaves
/// the file as it was, and a folder that does not exist fails with one line and leaves nothing.
#[cfg(unix)]
#[test]
fn report_and_coverage_outputs_replace_a_file_and_write_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = archive(dir.path(), "outputs", &[("t0", 200, TestOutcome::Passed)]);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for command in ["report", "coverage"] {
        let run = |to: &Path| kit_cli(&[command.as_ref(), path.as_os_str(), "-o".as_ref(), to.as_os_str()]);
        let file = out.join(format!("{command}.txt"));
        std::fs::write(&file, "what was there").unwrap();
        let output = run(&file);
        assert!(output.status.success(), "{command}: {}", stderr(&output));
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("GET"), "{command}: {written}");

        let link = out.join(format!("{command}.link"));
        std::os::unix::fs::symlink(&file, &link).unwrap();
        std::fs::write(&file, "what was there").unwrap();
        assert!(run(&link).status.success(), "{command}");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written, "{command}");

        assert_input_error(&run(&out.join("missing").join("x.txt")), "cannot write");

        // A write that fails part way, here at a file size limit of 1 KiB (`ulimit -f`, with
        // the signal it sends ignored so that the write fails instead), leaves the file as it
        // was: `fs::write` would have left the first kibibyte of the new text.
        assert!(written.len() > 1024, "{command}: the limit must cut the output");
        std::fs::write(&file, "what was there").unwrap();
        let limited = Command::new("bash")
            .args(["-c", r#"trap '' XFSZ; ulimit -f 1; exec "$0" "$@""#])
            .arg(env!("CARGO_BIN_EXE_kit-cli"))
            .args([
                command.as_ref(),
                path.as_os_str(),
                "-o".as_ref(),
                file.as_os_str(),
            ])
            .output()
            .unwrap();
        assert_input_error(&limited, "File too large");
        let kept = std::fs::read(&file).unwrap();
        assert!(
            kept == b"what was there",
            "{command}: {}",
            String::from_utf8_lossy(&kept)
        );
    }
    assert_eq!(
        file_names(&out),
        ["coverage.link", "coverage.txt", "report.link", "report.txt"]
    );
}
