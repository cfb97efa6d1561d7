//! Bus throughput and producer send latency.
//!
//! Eight threads send events through the real producer path (`KitExecutionContext::observe`:
//! envelope, per-test sequence lock, bounded channel) into
//!
//! - three counting collectors, and
//! - the archive writer plus two counting collectors, each thread running tests of 1 000
//!   events that start and finish (two commits per test) as a real run does.
//!
//! Prints events/s (the median of three runs) and the send latency percentiles of the median
//! run, and checks that every collector received every event.
//!
//! Then what a test costs under `cargo nextest run`, where every test is a process whose writer
//! joins the run's shared archive: a child process per test (15 of them) makes a writer,
//! runs one test and ends it, first against an empty archive, then against one already holding
//! 10 000 tests, then against an empty archive again with a test that works 1 ms on its thread
//! (the writer's set-up that can wait, waits for the test's first event, and overlaps its
//! work). Prints the median time from making the writer to the test being durable.
//!
//! `cargo bench -p kit-trace --bench bus` (set `KIT_BENCH_EVENTS` to change the total,
//! `KIT_BENCH_ROW` to `counting`, `archive` or `join` to run one row or pair, and
//! `KIT_BENCH_LEVEL` to the archive's deflate level, 0–9, to see what deflating costs the
//! archive row, and `KIT_BENCH_NICENESS` to how far below the producers the dispatcher runs,
//! 0–19, default the bus's 5).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kit_core::*;
use kit_trace::{ArchiveWriter, RunManifest, WriterOptions};

#[path = "support/knobs.rs"]
mod knobs;
use knobs::{deflate_level, dispatcher_niceness};

const THREADS: usize = 8;
const EVENTS_PER_TEST: usize = 1_000;
/// Tests already in the archive the `join` row's writers join.
const JOINED_TESTS: usize = 10_000;
/// Child processes (tests) per `join` row.
const JOIN_RUNS: usize = 15;
/// How long the test of the last `join` row works on its thread, as a test does between its
/// start and its end.
const JOIN_WORK: Duration = Duration::from_millis(1);

struct Counting(Arc<AtomicU64>);

impl Collector for Counting {
    fn on_event(&mut self, _: &Event) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct Outcome {
    events_per_sec: f64,
    latencies: Vec<u32>,
}

fn template() -> Observation {
    Observation::new(
        semconv::OBS_HTTP_RESPONSE,
        Attributes::new()
            .with(semconv::HTTP_REQUEST_METHOD, "GET")
            .with(semconv::HTTP_ROUTE, "/api/orders/{id}")
            .with(semconv::HTTP_RESPONSE_STATUS_CODE, 200)
            .with(semconv::URL_FULL, "http://127.0.0.1:8080/api/orders/42")
            .with(semconv::KIT_DURATION_NS, 52_000),
    )
}

fn run(total: usize, archive: bool) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let counters: Vec<Arc<AtomicU64>> = (0..3).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let run_id = RunId::generate();
    let mut builder = Bus::builder().dispatcher_niceness(dispatcher_niceness());
    let counted = if archive {
        let options = WriterOptions::default().with_compression_level(deflate_level());
        let writer =
            ArchiveWriter::with_options(dir.path(), RunManifest::new(run_id.clone(), "bench"), options)
                .expect("writer");
        builder = builder.collector(writer);
        &counters[..2]
    } else {
        &counters[..]
    };
    for c in counted {
        builder = builder.collector(Counting(Arc::clone(c)));
    }
    let bus = builder.start();
    let host = KitBuilder::new(Configuration::new()).build().expect("host").host;
    let kit = KitRun::new(host, bus.clone(), run_id);
    let per_thread = total / THREADS;

    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let kit = kit.clone();
            std::thread::spawn(move || {
                let template = template();
                let mut latencies = Vec::with_capacity(per_thread);
                let mut sent = 0;
                let mut n = 0;
                while sent < per_thread {
                    let ctx = kit.begin_test(TestStarted::new(format!("bench::t{t}_{n}")));
                    ctx.flush().expect("flush");
                    let in_test = EVENTS_PER_TEST.min(per_thread - sent);
                    for _ in 0..in_test.saturating_sub(2) {
                        let observation = template.clone();
                        let t0 = Instant::now();
                        ctx.observe(None, observation);
                        latencies.push(t0.elapsed().as_nanos() as u32);
                    }
                    ctx.finish(TestOutcome::Passed).expect("finish");
                    sent += in_test.max(2);
                    n += 1;
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<u32> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("producer"))
        .collect();
    bus.flush().expect("final flush");
    let elapsed = started.elapsed();
    let stats = bus.shutdown().expect("shutdown");
    for c in counted {
        assert_eq!(
            c.load(Ordering::Relaxed),
            stats.published,
            "a collector missed events"
        );
    }
    assert_eq!(stats.published, stats.dispatched);
    latencies.sort_unstable();
    Outcome {
        events_per_sec: stats.published as f64 / elapsed.as_secs_f64(),
        latencies,
    }
}

fn percentile(sorted: &[u32], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Duration::from_nanos(u64::from(sorted[i]))
}

/// A run whose one collector is a writer of `run_id`'s archive in `dir`, as a test process
/// makes it, and its bus.
fn archived_run(dir: &Path, run_id: &RunId) -> (KitRun, Bus) {
    let writer = ArchiveWriter::create(dir, RunManifest::new(run_id.clone(), "bench")).expect("writer");
    let bus = Bus::builder()
        .dispatcher_niceness(dispatcher_niceness())
        .collector(writer)
        .start();
    let host = KitBuilder::new(Configuration::new()).build().expect("host").host;
    (KitRun::new(host, bus.clone(), run_id.clone()), bus)
}

/// A run's archive in `dir` holding `tests` tests of one observation each, written by one
/// writer from four threads, as a `cargo test` process would.
fn fill(dir: &Path, run_id: &RunId, tests: usize) {
    let (kit, bus) = archived_run(dir, run_id);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let kit = kit.clone();
            std::thread::spawn(move || {
                for n in (t..tests).step_by(4) {
                    let ctx = kit.begin_test(TestStarted::new(format!("bench::filled_{n}")));
                    ctx.observe(None, template());
                    ctx.finish(TestOutcome::Passed).expect("finish");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("filler");
    }
    bus.shutdown().expect("shutdown");
}

/// A child: one test in a process of its own, as under nextest, which works (spins) for
/// `work` between its start and its observation. Its writer joins the archive of `run` in
/// `dir`; prints the microseconds from making the writer to the test's end being durable (its
/// first commit reads the archive's directory).
#[allow(clippy::print_stdout)]
fn join_child(dir: &Path, run: &str, work: Duration) {
    let run_id = RunId::new(run).expect("run id");
    let started = Instant::now();
    let (kit, bus) = archived_run(dir, &run_id);
    let ctx = kit.begin_test(TestStarted::new("bench::joining"));
    let working = Instant::now();
    while working.elapsed() < work {
        std::hint::spin_loop();
    }
    ctx.observe(None, template());
    ctx.finish(TestOutcome::Passed).expect("finish");
    let elapsed = started.elapsed();
    bus.shutdown().expect("shutdown");
    println!("{}", elapsed.as_micros());
}

/// Microseconds each of `JOIN_RUNS` child processes took to join an archive of `tests` tests
/// and end one of its own that works for `work`, sorted.
fn joining(tests: usize, work: Duration) -> Vec<u64> {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = format!("join-{tests}");
    let run_id = RunId::new(&run).expect("run id");
    if tests > 0 {
        fill(dir.path(), &run_id, tests);
    }
    let exe = std::env::current_exe().expect("bench binary");
    let mut micros: Vec<u64> = (0..JOIN_RUNS)
        .map(|_| {
            let out = Command::new(&exe)
                .args([
                    "join",
                    &dir.path().display().to_string(),
                    &run,
                    &work.as_micros().to_string(),
                ])
                .output()
                .expect("child");
            assert!(
                out.status.success(),
                "join: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            stdout
                .lines()
                .last()
                .and_then(|l| l.parse().ok())
                .expect("microseconds")
        })
        .collect();
    micros.sort_unstable();
    micros
}

#[allow(clippy::print_stdout)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, mode, dir, run, work] = args.as_slice()
        && mode == "join"
    {
        let work = Duration::from_micros(work.parse().expect("work in µs"));
        join_child(Path::new(dir), run, work);
        return;
    }
    let total: usize = std::env::var("KIT_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    println!("bus: {THREADS} producer threads, {total} events per run, median of 3 runs");
    println!(
        "{:<44} {:>12} {:>9} {:>9} {:>9}",
        "scenario", "events/s", "send p50", "send p99", "max"
    );
    // `KIT_BENCH_ROW=archive` (or `counting`) runs one row alone, for profiling it.
    let only = std::env::var("KIT_BENCH_ROW").ok();
    for (name, archive) in [
        ("3 counting collectors", false),
        ("archive writer + 2 counting collectors", true),
    ] {
        let row = if archive { "archive" } else { "counting" };
        if only.as_deref().is_some_and(|only| only != row) {
            continue;
        }
        let mut outcomes: Vec<Outcome> = (0..3).map(|_| run(total, archive)).collect();
        outcomes.sort_by(|a, b| a.events_per_sec.total_cmp(&b.events_per_sec));
        let median = &outcomes[1];
        println!(
            "{:<44} {:>12.0} {:>9?} {:>9?} {:>9?}",
            name,
            median.events_per_sec,
            percentile(&median.latencies, 0.50),
            percentile(&median.latencies, 0.99),
            percentile(&median.latencies, 1.0),
        );
    }
    if only.as_deref().is_some_and(|only| only != "join") {
        return;
    }
    println!(
        "a test in a process of its own (nextest), {JOIN_RUNS} processes: from its writer made to its end durable"
    );
    for (tests, work) in [
        (0, Duration::ZERO),
        (JOINED_TESTS, Duration::ZERO),
        (0, JOIN_WORK),
    ] {
        let micros = joining(tests, work);
        let label = if work.is_zero() {
            format!("joining an archive of {tests} tests")
        } else {
            format!("a test working {} ms, an empty archive", work.as_millis())
        };
        println!(
            "{:<44} median {} µs (min {}, max {})",
            label,
            micros[JOIN_RUNS / 2],
            micros[0],
            micros[JOIN_RUNS - 1]
        );
    }
}
