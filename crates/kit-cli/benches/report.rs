//! `kit-cli report` on a 100 000-request archive with OpenAPI coverage on GitHub's document.
//!
//! The archive is generated once per format version (through the real bus and archive writer)
//! into `target/bench-archives/`: 10 000 tests of 10 requests each, spread over GitHub's
//! operations with concrete URLs, each request a start, a response with headers and a JSON
//! body, an end; every third request also carries a status assertion and a shape assertion.
//! Then, each in a fresh child process so its peak RSS is its own:
//!
//! - `report --openapi github.json --format json` (what the target is about), and
//! - reading every entry of the archive decompressed, doing nothing with it (the floor);
//! - `export --har` and `export --otlp`, written to a file and removed (no target: exports are
//!   as large as the archive's events, and their memory should not be);
//! - `merge` of the archive alone into a new one, removed after (no target: its memory should
//!   not grow with the events either);
//! - `audit --secrets-file` with three secrets of two lengths, none of them in the archive, so
//!   every window of every entry is looked at (no target).
//!
//! Prints the median wall time of five runs and the peak RSS (`VmHWM`) of each.
//! Targets: report ≤ 1.0 s, ≤ 150 MiB.
//!
//! `cargo bench -p kit-cli --bench report`

// A bench binary reports on stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kit_core::*;
use kit_coverage::OpenApiDocument;
use kit_trace::{ArchiveReader, ArchiveWriter, RunManifest};

/// The allocator `kit-cli`'s `main` sets: the report runs in this binary's child, and measures
/// what the shipped binary does only with the same one.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TESTS: usize = 10_000;
const REQUESTS_PER_TEST: usize = 10;
const RUNS: usize = 5;
const MODES: [&str; 6] = ["decompress", "report", "har", "otlp", "merge", "audit"];

fn github() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/specs/github-api.github.com-octokit-2022-07.json")
}

fn archive_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-archives")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Children: `<mode> <archive>`, one of `MODES`; print "seconds peak_kib" last.
    if let [_, mode, archive, ..] = args.as_slice()
        && MODES.contains(&mode.as_str())
    {
        child(mode, Path::new(archive));
        return;
    }
    let archive = archive_dir().join(kit_trace::archive_file_name(&bench_run_id()));
    if !archive.exists() {
        let started = Instant::now();
        generate(&archive);
        eprintln!(
            "generated {} in {:.1} s",
            archive.display(),
            started.elapsed().as_secs_f64()
        );
    }
    let size = std::fs::metadata(&archive).map(|m| m.len()).unwrap_or(0);
    println!(
        "archive: {} tests, {} requests, {:.1} MiB",
        TESTS,
        TESTS * REQUESTS_PER_TEST,
        size as f64 / 1048576.0
    );
    for mode in MODES {
        let mut times = Vec::new();
        let mut peaks = Vec::new();
        for _ in 0..RUNS {
            let exe = std::env::current_exe().expect("bench binary");
            let out = Command::new(exe)
                .args([mode, &archive.display().to_string()])
                .output()
                .expect("child");
            assert!(
                out.status.success(),
                "{mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // The child's own figures come last, after whatever the command printed.
            let stdout = String::from_utf8_lossy(&out.stdout);
            let mut parts = stdout.lines().last().unwrap_or_default().split_whitespace();
            let secs: f64 = parts.next().and_then(|s| s.parse().ok()).expect("seconds");
            let peak: u64 = parts.next().and_then(|s| s.parse().ok()).expect("peak");
            times.push(secs);
            peaks.push(peak);
        }
        times.sort_by(f64::total_cmp);
        peaks.sort_unstable();
        println!(
            "{mode:>10}: median {:.3} s (min {:.3}, max {:.3}), peak RSS median {:.1} MiB (max {:.1})",
            times[RUNS / 2],
            times[0],
            times[RUNS - 1],
            peaks[RUNS / 2] as f64 / 1024.0,
            peaks[RUNS - 1] as f64 / 1024.0
        );
    }
}

fn child(mode: &str, archive: &Path) {
    let started = Instant::now();
    match mode {
        "report" => {
            let out = std::env::temp_dir().join(format!("kit-bench-report-{}.json", std::process::id()));
            let code = kit_cli::run([
                "kit-cli".to_owned(),
                "report".into(),
                archive.display().to_string(),
                "--openapi".into(),
                github().display().to_string(),
                "--format".into(),
                "json".into(),
                "-o".into(),
                out.display().to_string(),
            ]);
            let _ = std::fs::remove_file(&out);
            assert_eq!(code, 0, "kit-cli report failed");
        }
        "har" | "otlp" => {
            let out = std::env::temp_dir().join(format!("kit-bench-{mode}-{}.json", std::process::id()));
            let code = kit_cli::run([
                "kit-cli".to_owned(),
                "export".into(),
                archive.display().to_string(),
                format!("--{mode}"),
                out.display().to_string(),
            ]);
            let _ = std::fs::remove_file(&out);
            assert_eq!(code, 0, "kit-cli export --{mode} failed");
        }
        "merge" => {
            let out = std::env::temp_dir().join(format!("kit-bench-merge-{}.kittrace", std::process::id()));
            let code = kit_cli::run([
                "kit-cli".to_owned(),
                "merge".into(),
                "-o".into(),
                out.display().to_string(),
                archive.display().to_string(),
            ]);
            let _ = std::fs::remove_file(&out);
            assert_eq!(code, 0, "kit-cli merge failed");
        }
        "audit" => {
            let secrets = std::env::temp_dir().join(format!("kit-bench-secrets-{}.txt", std::process::id()));
            std::fs::write(
                &secrets,
                "tok-abcdef123456\nsecret-value-xyz\nghp_abcdefghijklmnop\n",
            )
            .expect("secrets file");
            let code = kit_cli::run([
                "kit-cli".to_owned(),
                "audit".into(),
                archive.display().to_string(),
                "--secrets-file".into(),
                secrets.display().to_string(),
            ]);
            let _ = std::fs::remove_file(&secrets);
            assert_eq!(code, 0, "kit-cli audit found a secret or failed");
        }
        _ => {
            let mut reader = ArchiveReader::open(archive).expect("archive");
            let mut bytes = 0usize;
            for i in 0..reader.entry_count() {
                bytes += reader.entry(i).expect("entry").1.len();
            }
            std::hint::black_box(bytes);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!("{elapsed} {}", peak_rss_kib());
}

/// `VmHWM` of this process, in KiB (Linux).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Concrete requests for GitHub's operations: each `{name}` filled with a value.
fn operations() -> Vec<(String, String, String)> {
    let doc = OpenApiDocument::from_path(github()).expect("GitHub document");
    doc.operations()
        .iter()
        .map(|o| {
            let mut path = String::new();
            let mut rest = o.path.as_str();
            while let Some(open) = rest.find('{') {
                path.push_str(&rest[..open]);
                path.push_str("x42");
                rest = rest[open..]
                    .find('}')
                    .map_or("", |close| &rest[open + close + 1..]);
            }
            path.push_str(rest);
            (o.method.clone(), o.path.clone(), path)
        })
        .collect()
}

/// The generated run, named by the format version, so that a new format is measured on an
/// archive written in it (the archive's file name follows from the run id).
fn bench_run_id() -> RunId {
    RunId::new(format!("bench-100k-v{}", kit_trace::FORMAT_VERSION)).expect("run id")
}

fn generate(archive: &Path) {
    let dir = archive.parent().expect("folder");
    std::fs::create_dir_all(dir).expect("folder");
    let run_id = bench_run_id();
    let writer = ArchiveWriter::create(dir, RunManifest::new(run_id.clone(), "bench")).expect("writer");
    let host = KitBuilder::new(Configuration::new()).build().expect("host").host;
    let run = KitRun::new(host, Bus::builder().collector(writer).start(), run_id);
    let ops = operations();
    let mut n = 0usize;
    for t in 0..TESTS {
        let ctx = run.begin_test(
            TestStarted::new(format!("bench::test_{t:05}")).with_application(Some("github".into())),
        );
        for _ in 0..REQUESTS_PER_TEST {
            let (method, route, path) = &ops[n % ops.len()];
            let url = format!("https://api.github.com{path}?page=2");
            let op = ctx.start_operation(
                None,
                OperationStarted::new(semconv::OP_HTTP_REQUEST, format!("REST · {method} {route}"))
                    .with_attributes(
                        Attributes::new()
                            .with(semconv::HTTP_REQUEST_METHOD, method.as_str())
                            .with(semconv::HTTP_ROUTE, route.as_str())
                            .with(semconv::URL_FULL, url.as_str())
                            .with(semconv::SERVER_ADDRESS, "api.github.com")
                            .with(semconv::SERVER_PORT, 443)
                            .with(
                                "http.request.header.accept",
                                vec!["application/vnd.github+json".to_owned()],
                            )
                            .with("http.request.header.authorization", vec!["[REDACTED]".to_owned()]),
                    ),
            );
            let status = if n.is_multiple_of(17) { 404 } else { 200 };
            op.observe(Observation::new(
                semconv::OBS_HTTP_RESPONSE,
                Attributes::new()
                    .with(semconv::HTTP_REQUEST_METHOD, method.as_str())
                    .with(semconv::HTTP_ROUTE, route.as_str())
                    .with(semconv::HTTP_RESPONSE_STATUS_CODE, status)
                    .with(semconv::URL_FULL, url.as_str())
                    .with(semconv::HTTP_RESPONSE_BODY_SIZE, 180)
                    .with(semconv::KIT_DURATION_NS, 850_000 + (n % 1000) as i64)
                    .with("http.response.header.content-type", vec!["application/json".to_owned()])
                    .with(
                        semconv::KIT_RESPONSE_BODY,
                        format!(r#"{{"id":{n},"node_id":"MDQ6VXNlcjE=","login":"octocat","url":"https://api.github.com/users/octocat","type":"User","site_admin":false,"items":[{{"name":"a"}},{{"name":"b"}}]}}"#),
                    ),
            ));
            let request = op.id();
            if n.is_multiple_of(3) {
                let assert = ctx.start_operation(
                    Some(request),
                    OperationStarted::new(semconv::OP_ASSERT_JSON_SHAPE, "shape"),
                );
                ctx.observe(
                    Some(request),
                    Observation::new(
                        semconv::OBS_HTTP_CONTRACT_SHAPE,
                        Attributes::new()
                            .with(semconv::HTTP_REQUEST_METHOD, method.as_str())
                            .with(semconv::HTTP_ROUTE, route.as_str())
                            .with(semconv::HTTP_RESPONSE_STATUS_CODE, status)
                            .with(
                                semconv::CONTRACT_MATCHED_PATHS,
                                vec![
                                    "$.id".to_owned(),
                                    "$.login".to_owned(),
                                    "$.items[0].name".to_owned(),
                                ],
                            ),
                    ),
                );
                assert.end(OperationStatus::Ok, Attributes::new());
            }
            op.end(
                OperationStatus::Ok,
                Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, status),
            );
            n += 1;
        }
        ctx.finish(TestOutcome::Passed).expect("finish");
    }
    run.bus().shutdown().expect("shutdown");
}
