//! Every output format on a fixture archive made by a real run (`scripts/make-report-fixture`:
//! the example suite, the fixture suite's failures and skip, a test killed while it ran):
//! snapshots of each, JUnit read back by a JUnit reader, HAR checked against HAR 1.2's
//! required fields, OTLP/JSON read by the OpenTelemetry protobuf types, merge, curl.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-fixture.kittrace")
}

/// Relative, so the document's name in the output does not depend on where the checkout is.
const OPENAPI: &str = "../../examples/orders/openapi.yaml";

fn kit_cli<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kit-cli"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn snapshot(name: &str, content: &str) {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, content);
    });
}

const FORMATS: [&str; 5] = ["table", "json", "markdown", "html", "junit"];

#[test]
fn report_in_every_format() {
    let archive = fixture();
    for format in FORMATS {
        let output = kit_cli(&[
            "report".as_ref(),
            archive.as_os_str(),
            "--openapi".as_ref(),
            OPENAPI.as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{format}: {}",
            text(&output.stderr)
        );
        snapshot(&format!("report_{format}"), &text(&output.stdout));
    }
}

#[test]
fn coverage_with_gates_in_every_format() {
    let archive = fixture();
    for format in FORMATS {
        let output = kit_cli(&[
            "coverage".as_ref(),
            archive.as_os_str(),
            "--openapi".as_ref(),
            OPENAPI.as_ref(),
            "--fail-under-operations".as_ref(),
            "100".as_ref(),
            "--fail-under-fields".as_ref(),
            "90".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
        ]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{format}: the fields gate falls short"
        );
        assert_eq!(
            text(&output.stderr),
            "kit-cli: gate failed: fields coverage 57.9% (11 of 19) is below the gate of 90%\n"
        );
        snapshot(&format!("coverage_{format}"), &text(&output.stdout));
    }
}

#[test]
fn fail_on_test_failure_exits_1_after_writing_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.md");
    let output = kit_cli(&[
        "report".as_ref(),
        fixture().as_os_str(),
        "--format".as_ref(),
        "markdown".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
        "--fail-on-test-failure".as_ref(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "kit-cli: 3 test(s) failed or were interrupted\n"
    );
    assert!(std::fs::read_to_string(&out).unwrap().contains("# Test report"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing written but the output"
    );
}

/// Debian's `chromium` (installed by `.ci/run`), or `KIT_CHROMIUM`.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("KIT_CHROMIUM") {
        return PathBuf::from(path);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!("no Chromium on PATH: install Debian's `chromium` (bash .ci/run does) or set KIT_CHROMIUM");
}

#[test]
fn the_html_report_opens_in_headless_chromium_and_shows_every_test_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let output = kit_cli(&[
        "report".as_ref(),
        fixture().as_os_str(),
        "--openapi".as_ref(),
        OPENAPI.as_ref(),
        "--format".as_ref(),
        "html".as_ref(),
        "-o".as_ref(),
        html.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let url = format!("file://{}", html.display());
    let browse = |args: &[&str]| {
        Command::new(chromium())
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .args(args)
            .arg(&url)
            .output()
            .unwrap()
    };
    let screenshot = dir.path().join("report.png");
    let shot = browse(&[
        "--window-size=1280,2400",
        &format!("--screenshot={}", screenshot.display()),
    ]);
    assert!(shot.status.success(), "{}", text(&shot.stderr));
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "a real screenshot"
    );

    // The page as the browser built it, reduced to its text.
    let dom = browse(&["--dump-dom"]);
    assert!(dom.status.success(), "{}", text(&dom.stderr));
    let dom = text(&dom.stdout);
    let mut page = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                page.push(' ');
            }
            c if !in_tag => page.push(c),
            _ => {}
        }
    }
    let view: Value = serde_json::from_slice(
        &kit_cli(&[
            "report".as_ref(),
            fixture().as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ])
        .stdout,
    )
    .unwrap();
    for test in view["runs"][0]["tests"].as_array().unwrap() {
        let name = test["name"].as_str().unwrap();
        assert!(page.contains(name), "the page lacks test {name}");
    }
    for figure in [
        "5 of 5 (100.0%)",
        "7 of 8 (87.5%)",
        "11 of 19 (57.9%)",
        "15 tests, 11 passed, 2 failed, 1 skipped, 1 interrupted",
    ] {
        assert!(page.contains(figure), "the page lacks {figure}");
    }
    assert!(!dom.contains("<script"), "no JavaScript");
}

#[test]
fn junit_reads_back_with_the_archive_counts() {
    let output = kit_cli(&[
        "report".as_ref(),
        fixture().as_os_str(),
        "--format".as_ref(),
        "junit".as_ref(),
    ]);
    assert!(output.status.success());
    let suites = junit_parser::from_reader(std::io::Cursor::new(output.stdout)).unwrap();
    assert_eq!(suites.suites.len(), 1);
    let suite = &suites.suites[0];
    assert_eq!(suite.tests, 15, "every test of the archive");
    assert_eq!(suite.failures, 2, "b_fails_on_purpose, d_returns_an_error");
    assert_eq!(suite.errors, 1, "z_waits_to_be_killed, interrupted");
    assert_eq!(suite.skipped, 1, "c_needs_grpc");
    let failed = suite
        .cases
        .iter()
        .find(|c| c.name == "b_fails_on_purpose")
        .unwrap();
    let junit_parser::TestStatus::Failure(failure) = &failed.status else {
        panic!("{:?}", failed.status);
    };
    assert!(
        failure.message.contains("deliberate failure"),
        "{}",
        failure.message
    );
    assert!(
        failure
            .text
            .contains("Last requests:\n  GET /items/{id} → 200 (http://127.0.0.1:"),
        "the failure carries a summary of its requests: {}",
        failure.text
    );
    let interrupted = suite
        .cases
        .iter()
        .find(|c| c.name == "z_waits_to_be_killed")
        .unwrap();
    assert!(matches!(interrupted.status, junit_parser::TestStatus::Error(_)));
}

/// HAR 1.2's required fields (http://www.softwareishard.com/blog/har-12-spec/), checked on
/// every object, with their types.
fn check_har(har: &Value) {
    /// A field and the check of its JSON type.
    type Field<'a> = (&'a str, fn(&Value) -> bool);
    fn has(v: &Value, path: &str, keys: &[Field<'_>]) {
        for (key, ok) in keys {
            let value = v.get(key).unwrap_or_else(|| panic!("{path} lacks {key}: {v}"));
            assert!(ok(value), "{path}.{key} has the wrong type: {value}");
        }
    }
    let s = Value::is_string as fn(&Value) -> bool;
    let n = Value::is_number as fn(&Value) -> bool;
    let a = Value::is_array as fn(&Value) -> bool;
    let o = Value::is_object as fn(&Value) -> bool;
    let log = &har["log"];
    has(
        log,
        "log",
        &[("version", s), ("creator", o), ("entries", a), ("pages", a)],
    );
    assert_eq!(log["version"], "1.2");
    has(&log["creator"], "log.creator", &[("name", s), ("version", s)]);
    for page in log["pages"].as_array().unwrap() {
        has(
            page,
            "page",
            &[
                ("startedDateTime", s),
                ("id", s),
                ("title", s),
                ("pageTimings", o),
            ],
        );
        // Neither is measured: HAR's -1.
        assert_eq!(
            page["pageTimings"],
            serde_json::json!({ "onContentLoad": -1, "onLoad": -1 }),
            "{page}"
        );
    }
    for entry in log["entries"].as_array().unwrap() {
        has(
            entry,
            "entry",
            &[
                ("startedDateTime", s),
                ("time", n),
                ("request", o),
                ("response", o),
                ("cache", o),
                ("timings", o),
            ],
        );
        has(
            &entry["request"],
            "request",
            &[
                ("method", s),
                ("url", s),
                ("httpVersion", s),
                ("cookies", a),
                ("headers", a),
                ("queryString", a),
                ("headersSize", n),
                ("bodySize", n),
            ],
        );
        has(
            &entry["response"],
            "response",
            &[
                ("status", n),
                ("statusText", s),
                ("httpVersion", s),
                ("cookies", a),
                ("headers", a),
                ("content", o),
                ("redirectURL", s),
                ("headersSize", n),
                ("bodySize", n),
            ],
        );
        has(
            &entry["response"]["content"],
            "content",
            &[("size", n), ("mimeType", s)],
        );
        has(
            &entry["timings"],
            "timings",
            &[("send", n), ("wait", n), ("receive", n)],
        );
        for phase in ["send", "wait", "receive"] {
            assert!(
                entry["timings"][phase].as_f64().unwrap() >= 0.0,
                "{phase} must not be negative"
            );
        }
        let started = entry["startedDateTime"].as_str().unwrap();
        assert!(
            started.len() == 24 && started.ends_with('Z') && started.as_bytes()[10] == b'T',
            "{started}"
        );
        let page = entry["pageref"].as_str().unwrap();
        assert!(log["pages"].as_array().unwrap().iter().any(|p| p["id"] == page));
    }
}

/// The fixture exported with `flag` (`--har`, `--otlp`): the file's bytes.
fn export(flag: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("export");
    let output = kit_cli(&[
        "export".as_ref(),
        fixture().as_os_str(),
        flag.as_ref(),
        path.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    std::fs::read(&path).unwrap()
}

#[test]
fn har_has_every_required_field_a_page_per_test_and_binary_bodies_in_base64() {
    let har: Value = serde_json::from_slice(&export("--har")).unwrap();
    check_har(&har);
    let log = &har["log"];
    assert_eq!(log["pages"].as_array().unwrap().len(), 15);
    assert_eq!(log["entries"].as_array().unwrap().len(), 16, "every request");
    let picture = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["request"]["url"].as_str().unwrap().ends_with("/picture"))
        .unwrap();
    assert_eq!(picture["response"]["content"]["encoding"], "base64");
    assert_eq!(picture["response"]["content"]["mimeType"], "image/png");
    assert_eq!(
        picture["response"]["content"]["text"], "iVBORw0KGgr/AA==",
        "the bytes, whole"
    );
    let created = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["request"]["method"] == "POST" && e["response"]["status"] == 201)
        .unwrap();
    assert_eq!(created["response"]["statusText"], "Created");
    assert_eq!(
        created["request"]["postData"]["text"],
        r#"{"sku":"A-1","quantity":2}"#
    );
}

#[test]
fn otlp_reads_back_into_the_opentelemetry_types_with_ids_and_times_in_form() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

    let bytes = export("--otlp");
    let request: ExportTraceServiceRequest = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(request.resource_spans.len(), 1, "one resource per run");
    let spans = &request.resource_spans[0].scope_spans[0].spans;
    let roots: Vec<_> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 15, "a root span per test");
    for span in spans {
        assert_eq!(span.trace_id.len(), 16, "trace ids are 16 bytes");
        assert_eq!(span.span_id.len(), 8, "span ids are 8 bytes");
        assert!(span.start_time_unix_nano > 1_700_000_000_000_000_000);
        assert!(
            span.end_time_unix_nano >= span.start_time_unix_nano,
            "{}",
            span.name
        );
    }
    let clients: Vec<_> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Client as i32)
        .collect();
    assert_eq!(clients.len(), 16, "a CLIENT span per request");
    let get_order = clients.iter().find(|s| s.name == "GET /orders/{id}").unwrap();
    let keys: Vec<&str> = get_order.attributes.iter().map(|a| a.key.as_str()).collect();
    for key in [
        "http.request.method",
        "url.full",
        "http.route",
        "http.response.status_code",
        "server.address",
        "server.port",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    let with_assertions = clients
        .iter()
        .filter(|s| s.events.iter().any(|e| e.name.starts_with("status")))
        .count();
    assert!(
        with_assertions > 0,
        "assertions are events of their request's span"
    );
    // The raw JSON writes ids as hex and 64-bit times as strings, as OTLP/JSON requires.
    let raw: Value = serde_json::from_slice(&bytes).unwrap();
    let span = &raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert!(span["traceId"].as_str().unwrap().len() == 32 && span["startTimeUnixNano"].is_string());
}

#[test]
fn curl_reproduces_a_request_by_its_id() {
    let report = kit_cli(&[
        "report".as_ref(),
        fixture().as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    let view: Value = serde_json::from_slice(&report.stdout).unwrap();
    let created = view["runs"][0]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "creates_an_order")
        .unwrap();
    let request = created["last_requests"][0]["id"].as_str().unwrap();
    let output = kit_cli(&["curl", fixture().to_str().unwrap(), request]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let command = text(&output.stdout);
    let port = created["last_requests"][0]["url"].as_str().unwrap();
    assert!(command.contains(&format!("curl -X 'POST' '{port}'")), "{command}");
    assert!(
        command.contains("--data-raw '{\"sku\":\"A-1\",\"quantity\":2}'"),
        "{command}"
    );
    assert!(
        command.contains("-H 'content-type: application/json"),
        "{command}"
    );

    let missing = kit_cli(&["curl", fixture().to_str().unwrap(), "00000000000000ff"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no request 00000000000000ff in the archive"));
    let bad = kit_cli(&["curl", fixture().to_str().unwrap(), "xyz"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("is not a request id"));
    // An id cut short when copied is not taken for another.
    let cut = kit_cli(&["curl", fixture().to_str().unwrap(), &request[1..]]);
    assert!(
        text(&cut.stderr).contains("is not a request id"),
        "{}",
        text(&cut.stderr)
    );

    // Ids read in either case.
    let upper = kit_cli(&["curl", fixture().to_str().unwrap(), &request.to_ascii_uppercase()]);
    assert_eq!(text(&upper.stdout), command);
    // A test's start is an event, not a request.
    let mut reader = kit_trace::ArchiveReader::open(fixture()).unwrap();
    let start = reader.tests().next().unwrap().unwrap().events[0].id.to_string();
    let not_a_request = kit_cli(&["curl", fixture().to_str().unwrap(), &start]);
    assert_eq!(not_a_request.status.code(), Some(2));
    let said = format!("no request {start} in the archive");
    assert!(text(&not_a_request.stderr).contains(&said));
}

/// Writes an archive holding the fixture's entries that `keep` accepts, as a shard would.
fn shard(from: &Path, to: &Path, keep: impl Fn(&str, usize) -> bool) {
    let mut reader = kit_trace::ArchiveReader::open(from).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    let mut tests_seen = Vec::new();
    for i in 0..reader.entry_count() {
        let (name, bytes) = reader.entry(i).unwrap();
        let test_index = name.strip_prefix("runs/report-fixture/tests/").map(|rest| {
            let test = rest.split('/').next().unwrap().to_owned();
            if !tests_seen.contains(&test) {
                tests_seen.push(test.clone());
            }
            tests_seen.iter().position(|t| *t == test).unwrap()
        });
        if name != "mimetype" && !keep(&name, test_index.unwrap_or(usize::MAX)) {
            continue;
        }
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn two_shards_of_one_run_merge_into_the_report_of_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.kittrace"), dir.path().join("b.kittrace"));
    // Alternate tests between the shards; each has the manifest and every blob.
    shard(&fixture(), &a, |name, test| {
        !name.contains("/tests/") || test % 2 == 0
    });
    shard(&fixture(), &b, |name, test| {
        !name.contains("/tests/") || test % 2 == 1
    });
    let merged = dir.path().join("merged.kittrace");
    let output = kit_cli(&[
        "merge".as_ref(),
        "-o".as_ref(),
        merged.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).starts_with("merged 2 archives into"),
        "{}",
        text(&output.stdout)
    );
    // One of a thing is said in the singular.
    let alone = dir.path().join("alone.kittrace");
    let output = kit_cli(&["merge".as_ref(), "-o".as_ref(), alone.as_os_str(), a.as_os_str()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    assert!(
        said.starts_with("merged 1 archive into") && said.contains(": 1 run, "),
        "{said}"
    );

    let json = |archive: &Path| {
        let output = kit_cli(&[
            "report".as_ref(),
            archive.as_os_str(),
            "--openapi".as_ref(),
            OPENAPI.as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
        ]);
        let mut view: Value = serde_json::from_slice(&output.stdout).unwrap();
        view["runs"][0]["archives"] = Value::Null;
        view
    };
    assert_eq!(
        json(&merged),
        json(&fixture()),
        "the merged report is the whole run's"
    );

    // The same shard twice: its tests are stored once. A shard merged into itself changes nothing.
    let again = dir.path().join("again.kittrace");
    let output = kit_cli(&[
        "merge".as_ref(),
        "-o".as_ref(),
        again.as_os_str(),
        a.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(json(&again), json(&fixture()));

    // An existing output is refused, and left as it was.
    let before = std::fs::read(&merged).unwrap();
    let refused = kit_cli(&["merge".as_ref(), "-o".as_ref(), merged.as_os_str(), a.as_os_str()]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(std::fs::read(&merged).unwrap(), before);
}

#[test]
fn a_test_in_two_shards_with_different_events_is_kept_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.kittrace");
    let b = dir.path().join("b.kittrace");
    shard(&fixture(), &a, |_, _| true);
    // b: the same archive with one test's outcome changed (a retry that failed, say).
    let mut reader = kit_trace::ArchiveReader::open(fixture()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&b).unwrap());
    let mut changed = 0;
    for i in 0..reader.entry_count() {
        let (name, mut bytes) = reader.entry(i).unwrap();
        let body = String::from_utf8_lossy(&bytes).into_owned();
        if body.contains("\"name\":\"a_passes\"") && changed == 0 {
            bytes = body
                .replace("\"name\":\"a_passes\"", "\"name\":\"a_passes_again\"")
                .into_bytes();
            changed += 1;
        }
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    assert_eq!(changed, 1);
    let merged = dir.path().join("merged.kittrace");
    let output = kit_cli(&[
        "merge".as_ref(),
        "-o".as_ref(),
        merged.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("warning: test ") && stdout.contains("with different events"),
        "{stdout}"
    );
    let report = text(&kit_cli(&["report".as_ref(), merged.as_os_str()]).stdout);
    assert!(report.contains("16 tests"), "kept, not dropped: {report}");
    assert!(
        report.contains("note: test ") && report.contains("is kept as"),
        "{report}"
    );
}

#[test]
fn bad_inputs_exit_2_with_one_line_and_write_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.kittrace");
    let not_zip = dir.path().join("notes.kittrace");
    std::fs::write(&not_zip, "hello").unwrap();
    // A zip bomb that lies: 16 MiB of zeros declared as 100 bytes.
    let bomb = dir.path().join("bomb.kittrace");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&bomb).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        zip.start_file(
            "mimetype",
            options.compression_method(zip::CompressionMethod::Stored),
        )
        .unwrap();
        zip.write_all(b"application/vnd.kit.trace+zip").unwrap();
        let test = "0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c";
        zip.start_file(format!("runs/bomb/tests/{test}/0000.jsonl"), options)
            .unwrap();
        zip.write_all(&vec![0u8; 16 * 1024 * 1024]).unwrap();
        zip.finish().unwrap();
        let mut bytes = std::fs::read(&bomb).unwrap();
        let real = (16u32 * 1024 * 1024).to_le_bytes();
        for at in 0..bytes.len() - 4 {
            if bytes[at..at + 4] == real {
                bytes[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
            }
        }
        std::fs::write(&bomb, bytes).unwrap();
    }
    let future = dir.path().join("future.kittrace");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&future).unwrap());
        zip.start_file("mimetype", zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b"application/vnd.kit.trace+zip").unwrap();
        zip.start_file("runs/f/manifest.json", zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(
            br#"{"format_version":"3.0","run_id":"f","kit_version":"9","runner":"x","created_unix_nanos":0}"#,
        )
        .unwrap();
        zip.finish().unwrap();
    }
    let (evil, escape, escaped) = common::zip_slip_archive(dir.path());
    let out = dir.path().join("out");
    let unsafe_name = format!("unsafe entry name {escape:?}");
    for (input, expected) in [
        (&missing, "no such file or folder"),
        (&not_zip, "it is not a zip file"),
        (&bomb, "is damaged"),
        (&future, "newer than the 2.0 this kit reads; upgrade kit-cli"),
        (&evil, unsafe_name.as_str()),
    ] {
        for args in [
            vec!["report".as_ref(), input.as_os_str()],
            vec!["coverage".as_ref(), input.as_os_str()],
            vec![
                "export".as_ref(),
                input.as_os_str(),
                "--har".as_ref(),
                out.as_os_str(),
            ],
            vec![
                "merge".as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
                input.as_os_str(),
            ],
            vec!["curl".as_ref(), input.as_os_str(), "0000000000000001".as_ref()],
        ] {
            let output = kit_cli(&args);
            let stderr = text(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, not {stderr:?}");
            assert!(
                stderr.contains(expected),
                "{args:?}: {stderr:?} should say {expected:?}"
            );
            assert!(!out.exists(), "{args:?} wrote its output anyway");
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "bomb.kittrace",
            "evil.kittrace",
            "future.kittrace",
            "notes.kittrace"
        ]
    );
    assert!(!escaped.exists());
}

/// The covered and total counts of `metric` in a `coverage --format json` output.
fn metric(json: &Value, metric: &str) -> (u64, u64) {
    let sections = json["coverage"]["sections"].as_array().unwrap();
    let found = sections
        .iter()
        .flat_map(|s| s["metrics"].as_array().into_iter().flatten())
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("no {metric} metric in {json}"));
    (
        found["covered"].as_u64().unwrap(),
        found["total"].as_u64().unwrap(),
    )
}

/// `coverage --format json` with `args` after the fixture: its exit code, stderr and output.
fn coverage_json(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, Option<Value>) {
    let fixture = fixture();
    let mut all: Vec<&std::ffi::OsStr> = vec!["coverage".as_ref(), fixture.as_os_str()];
    all.extend_from_slice(args);
    all.extend(["--format", "json"].map(std::ffi::OsStr::new));
    let output = kit_cli(&all);
    let json = serde_json::from_slice(&output.stdout).ok();
    (output.status.code(), text(&output.stderr), json)
}

#[test]
fn coverage_takes_its_document_and_gates_from_configuration_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let document = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(OPENAPI)).unwrap();
    // The document beside the configuration, named relative to it.
    std::fs::write(dir.path().join("openapi.yaml"), &document).unwrap();
    let toml = dir.path().join("kit.toml");
    std::fs::write(
        &toml,
        "[Kit.Coverage]\nOpenApi = \"openapi.yaml\"\n[Kit.Coverage.Gates]\nOperations = 100\nFields = 90\n",
    )
    .unwrap();
    let json = dir.path().join("kit.json");
    std::fs::write(
        &json,
        r#"{ "Kit": { "Coverage": { "OpenApi": "openapi.yaml", "Gates": { "Fields": 90 } } } }"#,
    )
    .unwrap();
    let short = "kit-cli: gate failed: fields coverage 57.9% (11 of 19) is below the gate of 90%\n";
    for config in [&toml, &json] {
        let (code, stderr, output) = coverage_json(&["--config".as_ref(), config.as_os_str()]);
        assert_eq!((code, stderr.as_str()), (Some(1), short), "{}", config.display());
        assert_eq!(
            metric(&output.unwrap(), "operations"),
            (5, 5),
            "{}",
            config.display()
        );
        // A flag's gate replaces the configuration's.
        let (code, stderr, _) = coverage_json(&[
            "--config".as_ref(),
            config.as_os_str(),
            "--fail-under-fields".as_ref(),
            "50".as_ref(),
        ]);
        assert_eq!(code, Some(0), "{}: {stderr}", config.display());
    }

    // `--exclude-deprecated` takes a deprecated operation out, though the configuration is silent.
    let deprecated = document.replacen(
        "    delete:\n      operationId: deleteOrder\n",
        "    delete:\n      operationId: deleteOrder\n      deprecated: true\n",
        1,
    );
    assert_ne!(deprecated, document, "the example's DELETE moved");
    std::fs::write(dir.path().join("openapi.yaml"), deprecated).unwrap();
    let operations = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["--config".as_ref(), toml.as_os_str()];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let (_, stderr, output) = coverage_json(&args);
        metric(
            &output.unwrap_or_else(|| panic!("{extra:?}: {stderr}")),
            "operations",
        )
    };
    assert_eq!(operations(&[]), (5, 5));
    assert_eq!(operations(&["--exclude-deprecated"]), (4, 4));
}

/// What `--config` names is read with the library's bounds: a named pipe is refused at once
/// (opened, it would wait for a writer forever), a file past 16 MiB by its size, bytes that are
/// not UTF-8 with their offset; each error names the file.
#[cfg(unix)]
#[test]
fn coverage_refuses_a_configuration_that_is_no_file_or_too_large() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("kit.toml");
    assert!(Command::new("mkfifo").arg(&pipe).status().unwrap().success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kit-cli"))
        .arg("coverage")
        .arg(fixture())
        .arg("--config")
        .arg(&pipe)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("kit-cli waited on the pipe");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stderr),
        format!(
            "kit-cli: configuration file {} is a named pipe, not a file\n",
            pipe.display()
        )
    );

    let large = dir.path().join("large.toml");
    std::fs::File::create(&large)
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    let (code, stderr, _) = coverage_json(&["--config".as_ref(), large.as_os_str()]);
    assert_eq!(
        (code, stderr),
        (
            Some(2),
            format!(
                "kit-cli: configuration file {} is 16777217 bytes; configuration files over 16777216 bytes are refused\n",
                large.display()
            )
        )
    );

    let latin1 = dir.path().join("latin1.json");
    std::fs::write(&latin1, b"{\"Kit\": {\"Name\": \"caf\xe9\"}}").unwrap();
    let (code, stderr, _) = coverage_json(&["--config".as_ref(), latin1.as_os_str()]);
    assert_eq!(
        (code, stderr),
        (
            Some(2),
            format!(
                "kit-cli: configuration file {} is not valid JSON: invalid UTF-8 at byte 21\n",
                latin1.display()
            )
        )
    );
}

/// The values of a span's (or a span event's) attribute `key`, one per time it is listed.
fn span_attributes<'a>(item: &'a Value, key: &str) -> Vec<&'a Value> {
    item["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["key"] == key)
        .map(|a| &a["value"])
        .collect()
}

/// A span's attribute `key` as text, if it has it.
fn span_attribute<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    span_attributes(item, key)
        .first()
        .and_then(|v| v["stringValue"].as_str())
}

#[test]
fn otlp_spans_carry_outcomes_and_assertion_results_but_no_bodies() {
    let otlp: Value = serde_json::from_slice(&export("--otlp")).unwrap();
    let spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let test = |name: &str| {
        spans
            .iter()
            .find(|s| span_attribute(s, "kit.test.name") == Some(name))
            .unwrap_or_else(|| panic!("no span of test {name}"))
    };
    assert_eq!(
        test("a_passes")["status"],
        serde_json::json!({ "code": 1, "message": "" })
    );
    assert_eq!(
        test("c_needs_grpc")["status"]["code"],
        1,
        "a skip is not an error"
    );
    let failed = &test("b_fails_on_purpose")["status"];
    assert_eq!(failed["code"], 2);
    assert!(
        failed["message"].as_str().unwrap().contains("deliberate failure"),
        "{failed}"
    );
    assert!(
        spans.iter().any(
            |s| s["status"]["message"] == "interrupted: the test never finished" && s["status"]["code"] == 2
        ),
        "the interrupted test"
    );

    let (mut passed, mut failed) = (0, 0);
    for span in spans {
        for key in ["kit.http.request.body", "kit.http.response.body"] {
            assert!(span_attribute(span, key).is_none(), "{key} in {}", span["name"]);
        }
        for event in span["events"].as_array().into_iter().flatten() {
            // Assertions on a request are events of its CLIENT span.
            if event["name"].as_str().unwrap().starts_with("status") {
                assert_eq!(span["kind"], 3, "{} on {}", event["name"], span["name"]);
            }
            // Observations are events too, with no result.
            let results = span_attributes(event, "assertion.result");
            if results.is_empty() && event["name"].as_str().unwrap().starts_with("http.") {
                continue;
            }
            // Each key once, as OTLP requires.
            assert_eq!(results.len(), 1, "{event}");
            match results[0]["boolValue"].as_bool() {
                Some(true) => {
                    passed += 1;
                    assert!(span_attribute(event, "exception.message").is_none(), "{event}");
                }
                Some(false) => {
                    failed += 1;
                    assert!(span_attribute(event, "exception.message").is_some(), "{event}");
                }
                None => panic!("not a bool: {event}"),
            }
        }
        // A request that got its response: the CLIENT span has its status code and is OK.
        if span["kind"] == 3 && !span_attributes(span, "http.response.status_code").is_empty() {
            assert_eq!(span["status"]["code"], 1, "{}", span["name"]);
        }
    }
    // The fixture's failures are not the kit's assertions (the CLI's tests cover those).
    assert!(passed > 0 && failed == 0, "{passed} passed, {failed} failed");
}
