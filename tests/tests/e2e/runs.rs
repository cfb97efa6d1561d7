//! Runs of the example and fixture suites under cargo test and nextest, and a SIGKILL.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use kit_core::{EventKind, TestOutcome, semconv};
use kit_e2e::*;

const EXAMPLE_TESTS: [&str; 8] = [
    "a_zero_quantity_is_rejected",
    "an_unknown_order_is_not_found",
    "creates_an_order",
    "deletes_an_order",
    "fetches_a_placed_order",
    "health_is_ok",
    "lists_placed_orders",
    "runs_when_rest_is_registered",
];

fn outcomes(archive: &std::path::Path) -> BTreeMap<String, TestOutcome> {
    tests_of(archive)
        .into_iter()
        .map(|t| (t.name, t.outcome))
        .collect()
}

fn kit_cli() -> Command {
    Command::new(binary("kit-cli", "kit-cli"))
}

#[test]
fn cargo_test_on_the_example_writes_one_archive_that_unzip_and_kit_cli_read() {
    let results = tempfile::tempdir().unwrap();
    let output = run(cargo()
        .args(["test", "-p", "orders-example", "--test", "orders"])
        .env("KIT_RESULTS_DIR", results.path()));
    assert!(output.status.success(), "{}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for name in EXAMPLE_TESTS {
        assert!(
            stdout.contains(&format!("Passed {name}\n")),
            "plain cargo test must show `Passed {name}`:\n{stdout}"
        );
    }

    let archives = archives_in(results.path());
    assert_eq!(archives.len(), 1, "one archive for the run: {archives:?}");
    let name = archives[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("kit-") && name.ends_with(".kittrace"), "{name}");

    let unzip = run(Command::new("unzip").arg("-t").arg(&archives[0]));
    assert!(
        unzip.status.success(),
        "unzip -t rejects the archive:\n{}",
        describe(&unzip)
    );

    let tests = tests_of(&archives[0]);
    let names: Vec<&str> = tests
        .iter()
        .map(|t| t.name.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, EXAMPLE_TESTS);
    assert!(tests.iter().all(|t| t.outcome == TestOutcome::Passed));
    // Route templates, never concrete URLs, in every request and response event.
    let mut routes = std::collections::BTreeSet::new();
    for event in tests.iter().flat_map(|t| &t.events) {
        let attributes = match &event.kind {
            EventKind::OperationStarted(op) => &op.attributes,
            EventKind::Observation(o) => &o.attributes,
            _ => continue,
        };
        if let Some(route) = attributes.get_str(semconv::HTTP_ROUTE) {
            routes.insert(route.to_owned());
        }
    }
    assert_eq!(
        routes.into_iter().collect::<Vec<_>>(),
        ["/health", "/orders", "/orders/{id}"]
    );

    let report = run(kit_cli().arg("report").arg(results.path()));
    assert!(report.status.success(), "{}", describe(&report));
    let text = String::from_utf8_lossy(&report.stdout);
    for name in EXAMPLE_TESTS {
        assert!(text.contains(&format!("Passed {name}\n")), "{text}");
    }
    assert!(
        text.contains("8 tests, 8 passed, 0 failed, 0 skipped, 0 interrupted"),
        "{text}"
    );
    for (method, route) in [
        ("GET", "/health"),
        ("POST", "/orders"),
        ("GET", "/orders/{id}"),
        ("DELETE", "/orders/{id}"),
    ] {
        let row = text.lines().any(|l| {
            let cells: Vec<&str> = l.split('│').map(str::trim).collect();
            cells.get(1) == Some(&method) && cells.get(2) == Some(&route)
        });
        assert!(row, "no row for {method} {route}:\n{text}");
    }
}

#[test]
fn nextest_on_the_example_writes_one_archive_with_every_test_once() {
    let version = run(cargo().args(["nextest", "--version"]));
    assert!(
        version.status.success(),
        "cargo-nextest is not installed (`.ci/run` installs it): {}",
        describe(&version)
    );
    let results = tempfile::tempdir().unwrap();
    let output = run(cargo()
        .args([
            "nextest",
            "run",
            "-p",
            "orders-example",
            "--test",
            "orders",
            "--no-fail-fast",
        ])
        .env("KIT_RESULTS_DIR", results.path()));
    assert!(output.status.success(), "{}", describe(&output));
    let archives = archives_in(results.path());
    assert_eq!(
        archives.len(),
        1,
        "every test process of the run shares one archive: {archives:?}"
    );
    let tests = tests_of(&archives[0]);
    let mut names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, EXAMPLE_TESTS, "each test exactly once");
    assert!(tests.iter().all(|t| t.outcome == TestOutcome::Passed));
    let reader = kit_trace::ArchiveReader::open(&archives[0]).unwrap();
    assert_eq!(reader.runs().len(), 1);
    assert_eq!(reader.runs()[0].manifest.as_ref().unwrap().runner, "nextest");
}

#[test]
fn a_run_with_failures_records_every_outcome_and_the_report_lists_them() {
    let results = tempfile::tempdir().unwrap();
    let output = run(cargo()
        .args(["test", "-p", "kit-fixture-suite", "--test", "suite"])
        .env("KIT_RESULTS_DIR", results.path()));
    assert!(
        !output.status.success(),
        "the fixture fails on purpose:\n{}",
        describe(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Failed b_fails_on_purpose\n"), "{stdout}");
    assert!(
        stdout.contains("Skipped c_needs_grpc: requires capability Protocol:gRPC"),
        "{stdout}"
    );

    let archives = archives_in(results.path());
    assert_eq!(archives.len(), 1);
    let outcomes = outcomes(&archives[0]);
    assert_eq!(outcomes["a_passes"], TestOutcome::Passed);
    assert!(
        matches!(&outcomes["b_fails_on_purpose"], TestOutcome::Failed { message } if message.contains("deliberate failure: expected 201 Created"))
    );
    assert!(matches!(&outcomes["c_needs_grpc"], TestOutcome::Skipped { reason } if reason.contains("gRPC")));
    assert!(
        matches!(&outcomes["d_returns_an_error"], TestOutcome::Failed { message } if message.contains("deliberate error returned"))
    );
    assert_eq!(outcomes["e_passes_too"], TestOutcome::Passed);
    assert_eq!(outcomes["f_downloads_a_picture"], TestOutcome::Passed);
    assert_eq!(outcomes["z_waits_to_be_killed"], TestOutcome::Passed);

    let report = run(kit_cli().arg("report").arg(&archives[0]));
    assert!(report.status.success(), "{}", describe(&report));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("7 tests, 4 passed, 2 failed, 1 skipped, 0 interrupted"),
        "{text}"
    );
    assert!(text.contains("Passed a_passes\n"), "{text}");
    assert!(
        text.contains("Failed b_fails_on_purpose: assertion `left == right` failed: deliberate failure"),
        "{text}"
    );
    assert!(
        text.contains("Skipped c_needs_grpc: requires capability Protocol:gRPC"),
        "{text}"
    );
    assert!(
        text.contains("Failed d_returns_an_error: the test returned Err: \"deliberate error returned\""),
        "{text}"
    );
}

/// The fixture suite waiting in its last test; killed with SIGKILL (no destructor, no atexit,
/// no flush) and reaped when dropped, so that a failed assertion does not leave it running.
struct Hanging(Child);

impl Drop for Hanging {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the fixture suite on one thread with `KIT_FIXTURE_HANG`, so that its last test
/// sends a request and waits two minutes, and returns once that test is in the archive as
/// running (the six quick tests in before it).
fn start_fixture_until_it_hangs(results: &Path, run_id: &str, envs: &[(&str, &str)]) -> Hanging {
    let binary = test_binary("kit-fixture-suite", "suite");
    let child = Hanging(
        Command::new(&binary)
            .arg("--test-threads=1")
            .env("KIT_FIXTURE_HANG", "1")
            .env("KIT_RUN_ID", run_id)
            .env("KIT_RESULTS_DIR", results)
            .env_remove("NEXTEST_RUN_ID")
            .envs(envs.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let archive = results.join(format!("kit-{run_id}.kittrace"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "the fixture never reached its last test"
        );
        if archive.exists()
            && let Ok(mut reader) = kit_trace::ArchiveReader::open(&archive)
            && reader.test_count() == 7
        {
            let interrupted = reader
                .tests()
                .filter_map(Result::ok)
                .filter(|t| t.outcome == TestOutcome::Interrupted)
                .count();
            if interrupted == 1 {
                return child;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_test_binary_killed_with_sigkill_leaves_an_archive_that_lists_the_running_test_interrupted() {
    let results = tempfile::tempdir().unwrap();
    let child = start_fixture_until_it_hangs(results.path(), "killed-run", &[]);
    let archive = results.path().join("kit-killed-run.kittrace");
    drop(child);

    let report = run(kit_cli().arg("report").arg(&archive));
    assert!(report.status.success(), "{}", describe(&report));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("7 tests, 3 passed, 2 failed, 1 skipped, 1 interrupted"),
        "{text}"
    );
    assert!(text.contains("Interrupted z_waits_to_be_killed\n"), "{text}");
    for line in [
        "Passed a_passes\n",
        "Passed e_passes_too\n",
        "Failed b_fails_on_purpose:",
        "Skipped c_needs_grpc:",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

/// Each thread's id, name and nice value in process `pid`, from `/proc`.
#[cfg(target_os = "linux")]
fn nice_values(pid: u32) -> Vec<(u32, String, i32)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .map(|stat| {
            // `pid (comm) state ppid …`: the name may hold spaces and parentheses, the rest
            // not; nice is the 19th field, the 17th after the name.
            let (head, rest) = stat.rsplit_once(')').unwrap();
            let (tid, name) = head.split_once(" (").unwrap();
            let nice = rest.split_whitespace().nth(16).unwrap().parse().unwrap();
            (tid.parse().unwrap(), name.to_owned(), nice)
        })
        .collect()
}

/// A test process runs the bus's dispatcher five nice steps below its tests, or as many as
/// `Kit:Trace:DispatcherNiceness` says, and refuses a value `nice` would not take.
#[cfg(target_os = "linux")]
#[test]
fn a_test_process_runs_its_dispatcher_below_its_tests_as_configured() {
    for (setting, by) in [(None, 5), (Some("0"), 0), (Some("12"), 12)] {
        let results = tempfile::tempdir().unwrap();
        let envs: Vec<(&str, &str)> = setting
            .map(|n| ("KIT__TRACE__DISPATCHERNICENESS", n))
            .into_iter()
            .collect();
        let child = start_fixture_until_it_hangs(results.path(), "nice-run", &envs);
        let pid = child.0.id();
        let threads = nice_values(pid);
        drop(child);
        let main = threads.iter().find(|(tid, ..)| *tid == pid).unwrap().2;
        let dispatchers: Vec<i32> = threads
            .iter()
            .filter(|(_, name, _)| name == "kit-bus")
            .map(|(.., nice)| *nice)
            .collect();
        assert_eq!(
            dispatchers,
            [(main + by).min(19)],
            "setting {setting:?}, threads {threads:?}"
        );
    }
    assert_fixture_refuses("KIT__TRACE__DISPATCHERNICENESS", "20", "a nice value, 0–19");
}

/// The fixture suite run once with its archive in `results` and `env` set, outside nextest.
fn run_fixture(results: &Path, env: &[(&str, &str)]) -> std::process::Output {
    run(Command::new(test_binary("kit-fixture-suite", "suite"))
        .env("KIT_RESULTS_DIR", results)
        .env_remove("NEXTEST_RUN_ID")
        .envs(env.iter().copied()))
}

/// The fixture suite with `variable` set to `value` fails, saying the value is not `expected`.
fn assert_fixture_refuses(variable: &str, value: &str, expected: &str) {
    let results = tempfile::tempdir().unwrap();
    let output = run_fixture(results.path(), &[(variable, value)]);
    let text = describe(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(&format!("has value \"{value}\", which is not {expected}")),
        "{text}"
    );
}

/// The fixture suite run once with `env` set: its one archive's event lines, uncompressed and
/// as stored (summed over the segments `unzip -v` lists), after checking that every test is in.
fn fixture_segment_sizes(env: &[(&str, &str)]) -> (u64, u64) {
    let results = tempfile::tempdir().unwrap();
    let output = run_fixture(results.path(), env);
    let archives = archives_in(results.path());
    assert_eq!(archives.len(), 1, "{}", describe(&output));
    assert_eq!(outcomes(&archives[0]).len(), 7, "{}", describe(&output));
    let listing = run(Command::new("unzip").arg("-v").arg(&archives[0]));
    assert!(listing.status.success(), "{}", describe(&listing));
    // `Length Method Size Cmpr Date Time CRC-32 Name`, an entry a line.
    let (mut length, mut size) = (0, 0);
    for line in String::from_utf8_lossy(&listing.stdout).lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [whole, _, stored, _, _, _, _, name] = fields[..]
            && name.ends_with(".jsonl")
        {
            length += whole.parse::<u64>().unwrap();
            size += stored.parse::<u64>().unwrap();
        }
    }
    assert!(length > 0, "no segment listed:\n{}", describe(&listing));
    (length, size)
}

/// `Kit:Trace:CompressionLevel` sets the archive's deflate level: 0 stores the event lines as
/// they are, the default (1) deflates them, and both archives read back whole. A level deflate
/// does not have stops the run with the key and the value.
#[test]
fn a_test_process_compresses_its_archive_at_the_configured_level() {
    let (length, stored) = fixture_segment_sizes(&[("KIT__TRACE__COMPRESSIONLEVEL", "0")]);
    assert!(
        stored >= length,
        "level 0 stored {length} bytes of lines in {stored}"
    );
    let (length, deflated) = fixture_segment_sizes(&[]);
    // Each of the fixture's short tests is a deflate stream of its own, which comes out at
    // about 60% of its lines.
    assert!(
        deflated * 4 < length * 3,
        "level 1 stored {length} bytes of lines in {deflated}"
    );
    assert_fixture_refuses("KIT__TRACE__COMPRESSIONLEVEL", "10", "a deflate level, 0–9");
}

#[test]
fn kit_core_and_kit_cli_build_without_tokio_or_reqwest() {
    for package in ["kit-core", "kit-cli"] {
        let output = run(cargo().args(["tree", "-p", package, "-e", "normal", "--prefix", "none"]));
        assert!(output.status.success(), "{}", describe(&output));
        let tree = String::from_utf8_lossy(&output.stdout);
        for forbidden in ["tokio ", "reqwest ", "hyper ", "axum "] {
            assert!(
                !tree.lines().any(|l| l.starts_with(forbidden)),
                "{package} depends on {}:\n{tree}",
                forbidden.trim()
            );
        }
    }
}

#[test]
fn with_a_configured_base_url_the_example_runs_against_an_external_server_and_never_starts_its_own() {
    use std::io::{BufRead, BufReader};
    let server_binary = binary("orders-example", "orders-server");
    let mut server = Command::new(server_binary)
        .arg("127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first_line)
        .unwrap();
    let base = first_line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();

    let results = tempfile::tempdir().unwrap();
    let output = run(cargo()
        .args(["test", "-p", "orders-example", "--test", "orders"])
        .env("KIT_RESULTS_DIR", results.path())
        .env("Kit__Applications__orders__BaseUrl", &base));
    // Ask the external server what it holds before stopping it.
    let held = http_get(&base, "/api/orders");
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(output.status.success(), "{}", describe(&output));

    let archive = &archives_in(results.path())[0];
    let mut urls = 0;
    for event in tests_of(archive).into_iter().flat_map(|t| t.events) {
        if let EventKind::OperationStarted(op) = &event.kind
            && let Some(url) = op.attributes.get_str(semconv::URL_FULL)
        {
            assert!(
                url.starts_with(&format!("{base}/api/")),
                "{url} is not on the external server {base}"
            );
            urls += 1;
        }
    }
    assert!(urls >= 12, "{urls} requests");
    // The orders the suite placed are in the external server: it, not an in-process one, answered.
    assert!(
        held.contains("\"sku\":\"A-1\"") && held.contains("\"sku\":\"E-5\""),
        "{held}"
    );
}

/// A plain HTTP/1.1 GET, without a client library: the response as text.
fn http_get(base: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let authority = base.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
