//! What a test costs from its start to its end, as the kit's runner runs one, against the same
//! test written with raw reqwest.
//!
//! `vs_reqwest` measures requests; this bench measures tests. Each test runs as `cargo test`
//! runs it: on a thread of its own, with a current-thread runtime of its own that is dropped
//! when its body returns. A kit test then goes through the runner's steps (`kit::__private::
//! run_test`, copied here step for step so that a variant can leave one out): the start
//! recorded and its commit requested, the body on its runtime, the dispatcher told that the
//! end is coming, the runtime dropped, the end recorded and waited for until it is durable.
//! The raw test builds a client (cookies on, redirects off, one TLS configuration shared by
//! all, as the kit configures a test's client), makes its requests, checks each status and
//! parses each body into a `Value`.
//!
//! Sides, by turns in slices of `KIT_BENCH_SLICE_TESTS` tests (default 20), so that a slow
//! spell of the machine falls on every side alike, and in every order of the three in turn,
//! so that each follows each other side as often:
//!
//! - raw: the raw test;
//! - kit: the runner's steps, with the archive, REST and traffic coverage and attachments on,
//!   as the example suite's host has them (no OpenAPI document, unlike `vs_reqwest`), each
//!   request asserting its status and a shape;
//! - kit, no early wake: the same without telling the dispatcher that the end is coming, as
//!   the runner did until issue 9's sixty-fifth stop.
//!
//! Prints, over all rounds, each side's wall time a test, the kit's over raw's (as a rate,
//! raw/kit, and as microseconds a test more), how long a test's body took and its runtime to
//! drop, for the kit sides its end to become durable, the rest of the wall time (the test's
//! thread, its runtime's making, a kit test's start; one test at a time only), and the CPU time
//! the bus's dispatcher used a test while each side ran (on the raw side: the kit's dispatcher
//! finishing the slice before).
//!
//! `cargo bench -p kit-rest --bench per_test`. Sizes: `KIT_BENCH_ROUNDS` (default 5),
//! `KIT_BENCH_TESTS` (tests a side a round, default 400), `KIT_BENCH_PER_TEST` (requests a
//! test, default 1), `KIT_BENCH_SLICE_TESTS`. `KIT_BENCH_PARALLEL` runs that many tests at
//! once (default 1), as `cargo test` runs one a core: the slice's tests shared among as many
//! threads, each running its share one after another. The per-test times are then wall time
//! over tests, so a rate, not one test's latency. `KIT_BENCH_LEVEL` sets the archive's deflate
//! level (default 1, the writer's; 0 stores the entries, to see what deflating costs a test).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use kit_core::*;
use kit_coverage::{RestCoverageCollector, RestTrafficCoverageCollector};
use kit_rest::*;
use kit_trace::{ArchiveWriter, RunManifest, WriterOptions};
use serde_json::Value;

#[path = "../tests/common/mod.rs"]
mod common;
mod support;
use support::knobs::deflate_level;
use support::{ThreadCpu, item, item_shape, positive_knob, runtime, tls_config};

/// Runs `test` on a thread of its own, as libtest runs each test, and waits for it.
fn on_its_own_thread<T: Send + 'static>(test: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .name("bench::test".into())
        .spawn(test)
        .unwrap()
        .join()
        .unwrap()
}

/// One raw test of `requests` requests; its body and its runtime's drop timed as a kit test's
/// are, so that the two compare step by step (it has no end to wait for).
fn raw_test(tls: &rustls::ClientConfig, url: &str, first: u64, requests: u64) -> End {
    let (tls, url) = (tls.clone(), url.to_owned());
    on_its_own_thread(move || {
        let runtime = runtime();
        let running = Instant::now();
        runtime.block_on(async {
            let client = reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .tls_backend_preconfigured(tls)
                .build()
                .unwrap();
            for id in first..first + requests {
                let response = client.get(format!("{url}/items/{id}")).send().await.unwrap();
                assert_eq!(response.status(), reqwest::StatusCode::OK);
                let bytes = response.bytes().await.unwrap();
                black_box(serde_json::from_slice::<Value>(&bytes).unwrap());
            }
        });
        let body = running.elapsed();
        let dropping = Instant::now();
        drop(runtime);
        End {
            body,
            drop: dropping.elapsed(),
            finish: Duration::ZERO,
        }
    })
}

/// What a test's steps took: its body on its runtime, the runtime's drop, and (a kit test's)
/// the wait for its end to be durable.
#[derive(Default, Clone, Copy)]
struct End {
    body: Duration,
    drop: Duration,
    finish: Duration,
}

/// One kit test of `requests` requests, through the runner's steps; `wake_early` tells the
/// dispatcher that the end is coming when the body returns, as the runner does.
fn kit_test(run: &KitRun, shape: &Arc<Value>, first: u64, requests: u64, wake_early: bool) -> End {
    let ctx =
        run.begin_test(TestStarted::new(format!("bench::t{first}")).with_application(Some("bench".into())));
    let shape = Arc::clone(shape);
    on_its_own_thread(move || {
        ctx.request_flush().unwrap();
        let runtime = runtime();
        let running = Instant::now();
        runtime.block_on(async {
            for id in first..first + requests {
                ctx.rest()
                    .path_param("id", id)
                    .get("/items/{id}")
                    .await
                    .should()
                    .have_http_status(http::StatusCode::OK)
                    .match_shape(&*shape);
            }
        });
        let body = running.elapsed();
        if wake_early {
            ctx.expect_finish().unwrap();
        }
        let dropping = Instant::now();
        drop(runtime);
        let finishing = Instant::now();
        ctx.finish(TestOutcome::Passed).unwrap();
        End {
            body,
            drop: finishing - dropping,
            finish: finishing.elapsed(),
        }
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Raw,
    Kit,
    KitNoEarlyWake,
}

const SIDES: [Side; 3] = [Side::Raw, Side::Kit, Side::KitNoEarlyWake];

/// Every order of the three sides.
const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Raw => "raw reqwest",
            Side::Kit => "kit",
            Side::KitNoEarlyWake => "kit, no early wake",
        }
    }
}

/// A side's sums over all rounds.
#[derive(Default)]
struct Totals {
    wall: Duration,
    tests: u32,
    body: Duration,
    drop: Duration,
    finish: Duration,
    /// The dispatcher's CPU time while the side's slices ran.
    dispatcher: Duration,
}

impl Totals {
    fn per_test(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e6 / f64::from(self.tests.max(1))
    }
}

fn main() {
    let rounds = positive_knob("KIT_BENCH_ROUNDS", 5);
    let tests = positive_knob("KIT_BENCH_TESTS", 400);
    let per_test = positive_knob("KIT_BENCH_PER_TEST", 1) as u64;
    let slice = positive_knob("KIT_BENCH_SLICE_TESTS", 20);
    let parallel = positive_knob("KIT_BENCH_PARALLEL", 1).min(slice);

    let url = common::serve(Router::new().route(
        "/items/{id}",
        get(|axum::extract::Path(id): axum::extract::Path<u64>| async move { axum::Json(item(id)) }),
    ));
    let tls = tls_config();
    let dir = tempfile::tempdir().unwrap();
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("bench", |app| {
        app.add_rest(|rest| {
            rest.capture_attachments(|_| {});
            rest.add_client()
                .base_url(&url)
                .add_collector::<RestCoverageCollector>()
                .add_collector::<RestTrafficCoverageCollector>();
        });
    });
    let built = builder.build().unwrap();
    let run_id = RunId::generate();
    let level = deflate_level();
    let writer = ArchiveWriter::with_options(
        dir.path(),
        RunManifest::new(run_id.clone(), "bench"),
        WriterOptions::default().with_compression_level(level),
    )
    .unwrap();
    let bus = Bus::builder()
        .collector(writer)
        .collectors(built.collectors)
        .start();
    let run = KitRun::with_secrets(built.host, bus, run_id, Arc::new(SecretRegistry::new()));
    let shape = Arc::new(item_shape());

    // Warm up every side: the first connections, the shape's preparation, the allocator.
    let mut id = 0;
    for _ in 0..20 {
        let _ = raw_test(&tls, &url, id, per_test);
        kit_test(&run, &shape, id, per_test, true);
        kit_test(&run, &shape, id, per_test, false);
        id += per_test;
    }

    let mut totals: Vec<Totals> = SIDES.iter().map(|_| Totals::default()).collect();
    let mut group = 0;
    // Each round's wall time a test of the two kit sides, for the gain round by round.
    let mut gains = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let walls: Vec<Duration> = totals.iter().map(|t| t.wall).collect();
        let mut done = 0;
        while done < tests {
            let n = slice.min(tests - done);
            // The sides take turns in every order in turn, so that each follows each other
            // side as often: a slice's first tests pay for what the slice before left (a
            // kit slice after a raw one finds the dispatcher asleep).
            for s in ORDERS[group % ORDERS.len()] {
                let side = SIDES[s];
                let cpu = ThreadCpu::now();
                let started = Instant::now();
                // The slice's tests, `parallel` at a time: each of `parallel` threads runs its
                // share one after another, as libtest's threads take tests in turn.
                let ends: Vec<End> = std::thread::scope(|scope| {
                    let workers: Vec<_> = (0..parallel)
                        .map(|w| {
                            let (tls, url, run, shape) = (&tls, &url, &run, &shape);
                            let first = id + (w * n / parallel) as u64 * per_test;
                            let count = (w + 1) * n / parallel - w * n / parallel;
                            scope.spawn(move || {
                                let mut end = End::default();
                                for k in 0..count as u64 {
                                    let at = first + k * per_test;
                                    let e = match side {
                                        Side::Raw => raw_test(tls, url, at, per_test),
                                        Side::Kit | Side::KitNoEarlyWake => {
                                            kit_test(run, shape, at, per_test, side == Side::Kit)
                                        }
                                    };
                                    end.body += e.body;
                                    end.drop += e.drop;
                                    end.finish += e.finish;
                                }
                                end
                            })
                        })
                        .collect();
                    workers.into_iter().map(|w| w.join().unwrap()).collect()
                });
                id += n as u64 * per_test;
                let end = ends.iter().fold(End::default(), |a, e| End {
                    body: a.body + e.body,
                    drop: a.drop + e.drop,
                    finish: a.finish + e.finish,
                });
                let t = &mut totals[s];
                t.wall += started.elapsed();
                t.dispatcher += ThreadCpu::now().since(cpu).dispatcher();
                t.tests += n as u32;
                t.body += end.body;
                t.drop += end.drop;
                t.finish += end.finish;
            }
            done += n;
            group += 1;
        }
        let round = |s: usize| (totals[s].wall - walls[s]).as_secs_f64() * 1e6 / tests as f64;
        gains.push(round(2) - round(1));
    }
    let stats = run.bus().shutdown().unwrap();

    println!(
        "{rounds} rounds of {tests} tests a side, {per_test} request(s) a test, {parallel} at a time, sides by turns in slices of {slice} tests; \
         each test on a thread and a current-thread runtime of its own; deflate level {level}; {} events, {} dispatched; {} ends announced (one for each of the kit side's tests)",
        stats.published, stats.dispatched, stats.announced
    );
    println!(
        "{:<20} {:>10} {:>9} {:>12} {:>8} {:>8} {:>10} {:>8} {:>14}",
        "side",
        "µs a test",
        "raw/side",
        "µs over raw",
        "body µs",
        "drop µs",
        "finish µs",
        "rest µs",
        "dispatcher µs"
    );
    let raw = totals[0].per_test(totals[0].wall);
    for (side, t) in SIDES.iter().zip(&totals) {
        let wall = t.per_test(t.wall);
        let [body, drop] = [t.body, t.drop].map(|d| t.per_test(d));
        let finish = t.per_test(t.finish);
        // What lies outside the three: the test's thread started and joined, its runtime built,
        // and a kit test's start recorded. With tests in parallel the wall time a test is a
        // rate and the steps are latencies, so the difference means nothing.
        let rest = if parallel == 1 {
            format!("{:.1}", wall - body - drop - finish)
        } else {
            "-".to_owned()
        };
        let finish = if *side == Side::Raw {
            "-".to_owned()
        } else {
            format!("{finish:.1}")
        };
        println!(
            "{:<20} {:>10.1} {:>9.3} {:>12.1} {:>8.1} {:>8.1} {:>10} {:>8} {:>14.1}",
            side.name(),
            wall,
            raw / wall,
            wall - raw,
            body,
            drop,
            finish,
            rest,
            t.per_test(t.dispatcher)
        );
    }
    gains.sort_by(f64::total_cmp);
    let (early, late) = (
        totals[1].per_test(totals[1].wall),
        totals[2].per_test(totals[2].wall),
    );
    println!(
        "telling the dispatcher that the end is coming: {:.1} µs a test less ({:.3} of the test without it); \
         round by round {:.1}, {:.1}, {:.1} (lowest, median, highest)",
        late - early,
        (late - early) / late,
        gains[0],
        gains[gains.len() / 2],
        gains[gains.len() - 1]
    );
}
