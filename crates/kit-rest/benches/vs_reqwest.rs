//! The kit against raw reqwest, side by side, in one process and one sitting.
//!
//! A loopback axum server on a thread of its own serves a 600-byte JSON item and a 1 MiB JSON
//! page. Each pair runs the same requests both ways, alternating round by round:
//!
//! - raw: `reqwest::Client` on a current-thread runtime; each request checks the status and
//!   parses the body with `serde_json::from_slice`;
//! - kit: everything on — the archive writer, `RestCoverageCollector`,
//!   `RestTrafficCoverageCollector`, `OpenApiCoverageCollector` (a document describing the
//!   server), attachments captured — tests of ten requests started and finished as the kit's
//!   runner does, each request asserting its status and a shape.
//!
//! Right after the kit, each round runs raw reqwest again, the same requests on the same
//! client: not a side of its own but a measure of the machine. Its rate over the first raw
//! run's, round by round, is how far two runs of the same code drift apart a few hundred
//! milliseconds apart (this kind of virtual machine slows down in spells); the kit over the
//! mean of the two raw runs around it is kit/raw with a steady drift within the round taken
//! out. `KIT_BENCH_AGAIN=0` leaves it out. The median round's kit/raw and again/raw then get a
//! 95% interval each (a bootstrap over the rounds): how precisely one run pins a median down.
//!
//! Each round then measures the sequential and 32-in-flight scenarios a second way, the sides
//! interleaved: raw, kit, raw again and raw with a client per test take turns in slices of a
//! few tests, and each side's slices are summed, so a slow spell of the machine falls on every
//! side alike rather than on whichever ran through it (`Interleaved`;
//! `KIT_BENCH_INTERLEAVED=0` leaves it out). Its kit tests are left out of the finish wait the
//! bench prints, which stays the whole rounds' figure, as in sittings before. At 32 in flight
//! the interleaved slices include one more kit side, not a baseline: the 32 tasks in one test
//! that lasts the round (one client, whose connections are kept, and one end), which shows
//! what recording costs at 32 in flight apart from a client, a connection and an end per test.
//! Whole rounds run it too, for its CPU by thread (`kit/one`).
//!
//! Besides, not as a baseline: raw reqwest with a client per test of ten requests, configured as
//! the kit configures a test's client, for the sequential and 32-in-flight scenarios. Each kit
//! test owns its client (so its own connection and cookie jar), and each `#[kit::test]` runs
//! on its own runtime, where a client shared with other tests could not keep its
//! connections; this row shows how much of the gap that isolation is.
//!
//! Off unless asked for, other transports, not baselines either: `KIT_BENCH_TRANSPORT=1`, raw
//! reqwest with one client for all tests whose connections live on a transport thread, each
//! request handed to it and back, which is how connections could outlive a test's runtime (it
//! shows what that hand-over costs against the connection per test it saves);
//! `KIT_BENCH_HYPER=1`, hyper's HTTP/1 client without reqwest (it shows what reqwest's own
//! layers cost a request, which a kit on a transport of its own would not pay).
//!
//! Scenarios: sequential; 32 in flight (32 tasks on the one runtime; kit tests end by awaiting
//! `finish_async`, so that no thread of the shared runtime blocks for a commit;
//! `KIT_BENCH_FINISH=blocking-pool` ends them with `finish` on tokio's blocking pool instead,
//! as until issue 9's seventy-third stop); the 1 MiB page,
//! sequential. Prints requests/s (median of the rounds), kit/raw, and the whole process's CPU
//! time per request (client, server and dispatcher) for each; then kit/raw and kit/that round
//! by round (lowest, median, highest: each round's sides ran back to back, and the target's
//! "never below 0.90" is about the lowest); then the CPU time by thread, so a run shows where
//! the kit's extra CPU goes.
//!
//! `cargo bench -p kit-rest --bench vs_reqwest`. To change the sizes: `KIT_BENCH_ROUNDS`,
//! `KIT_BENCH_REQUESTS`, `KIT_BENCH_PAGES`, `KIT_BENCH_PER_TEST` (a value that is not a number
//! stops the bench with its name). To see what the kit's
//! pipeline costs: `KIT_BENCH_VARIANT=bare` (no archive, collectors or attachments),
//! `no-attachments` or `no-archive` (everything else on), `no-expected-shapes` or
//! `no-responses` (one kind of attachment off); `KIT_BENCH_LEVEL` sets the archive's
//! deflate level (default 1, the writer's), `KIT_BENCH_NICENESS` how far below the
//! tests the dispatcher runs (default 5, the bus's; 0 level with them). To give the item handler work, as an
//! API under test has: `KIT_BENCH_HANDLER_WAIT_MS` (waits, as on a database, ended on time by a
//! thread of the bench's own; `KIT_BENCH_HANDLER_TIMER=tokio` ends it with tokio's timer
//! instead, as until issue 9's sixty-fourth stop, which takes about a millisecond longer; the
//! first line of the output gives the mean wait measured) and `KIT_BENCH_HANDLER_BUSY_US`
//! (computes, holding the server's thread). To run
//! one scenario (for a profiler): `KIT_BENCH_ONLY=sequential` (or `32`, `1 MiB`); one side
//! only, with no table then: `KIT_BENCH_SIDE=raw`, `kit`, `per-test` (raw reqwest with a
//! client per test), `one-test` (the kit's 32 tasks in one test), `transport` or `hyper`;
//! `KIT_BENCH_SIDE=again` runs raw reqwest twice a round with nothing between, and prints
//! only how far the two runs drift apart. To keep the kit's archive for a look inside:
//! `KIT_BENCH_KEEP=path`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_docs)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use kit_core::json::json_value;
use kit_core::*;
use kit_coverage::{OpenApiCoverageCollector, RestCoverageCollector, RestTrafficCoverageCollector};
use kit_rest::*;
use kit_trace::{ArchiveWriter, RunManifest, WriterOptions};
use serde_json::{Value, json};

#[path = "../tests/common/mod.rs"]
mod common;
mod support;
use support::knobs::{deflate_level, dispatcher_niceness};
use support::{ThreadCpu, item, item_shape, positive_knob, runtime, tls_config, whole_knob};

const IN_FLIGHT: usize = 32;

fn page() -> String {
    let mut items = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < 1024 * 1024 {
        let item = item(i);
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    json!({ "page": 1, "total": items.len(), "items": items }).to_string()
}

const OPENAPI: &str = r##"
openapi: 3.0.3
info: { title: bench, version: "1" }
paths:
  /items/{id}:
    get:
      responses:
        "200":
          description: an item
          content:
            application/json:
              schema: { $ref: "#/components/schemas/Item" }
  /page:
    get:
      responses:
        "200":
          description: a page
          content:
            application/json:
              schema:
                properties:
                  page: { type: integer }
                  total: { type: integer }
                  items: { type: array, items: { $ref: "#/components/schemas/Item" } }
components:
  schemas:
    Item:
      properties:
        id: { type: integer }
        sku: { type: string }
        name: { type: string }
        quantity: { type: integer }
        price: { type: number }
        status: { type: string }
        customer: { properties: { id: {}, name: {}, email: {}, tier: {} } }
        lines: { type: array, items: { properties: { sku: {}, qty: {}, price: {} } } }
"##;

/// What the item handler does before it answers (`KIT_BENCH_HANDLER_WAIT_MS`,
/// `KIT_BENCH_HANDLER_BUSY_US`): nothing by default, as the issue's baseline has it. An API
/// under test usually waits on a database or computes; these show what the kit's cost is
/// against such a request, not only against an instant answer.
struct HandlerWork {
    /// Waits this long without holding the server's thread, as for a database's answer.
    wait: Duration,
    /// Then keeps the server's thread busy this long, as a handler that computes.
    busy: Duration,
    /// What ends the waits; there when `wait` is not zero.
    timer: Option<Timer>,
    /// Every wait's length as it was measured, and how many there were.
    waited_ns: AtomicU64,
    waits: AtomicU64,
}

/// What ends the item handler's waits.
enum Timer {
    /// A thread of the bench's own, on time (the default).
    Alarms(Alarms),
    /// `tokio::time::sleep`, as the bench waited until issue 9's sixty-fourth stop
    /// (`KIT_BENCH_HANDLER_TIMER=tokio`): a wait of 1 ms takes about 2.
    Tokio,
}

impl HandlerWork {
    fn from_env() -> Self {
        let wait = Duration::from_millis(whole_knob("KIT_BENCH_HANDLER_WAIT_MS", 0) as u64);
        let tokio_timer = match std::env::var("KIT_BENCH_HANDLER_TIMER").as_deref() {
            Err(_) | Ok("alarms") => false,
            Ok("tokio") => true,
            Ok(other) => panic!("KIT_BENCH_HANDLER_TIMER={other:?}: expected `alarms` or `tokio`"),
        };
        // The alarms' thread only when there are waits to end.
        let timer = (!wait.is_zero()).then(|| {
            if tokio_timer {
                Timer::Tokio
            } else {
                Timer::Alarms(Alarms::start())
            }
        });
        Self {
            wait,
            busy: Duration::from_micros(whole_knob("KIT_BENCH_HANDLER_BUSY_US", 0) as u64),
            timer,
            waited_ns: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        }
    }

    fn answers_at_once(&self) -> bool {
        self.wait.is_zero() && self.busy.is_zero()
    }

    async fn run(&self) {
        if let Some(timer) = &self.timer {
            let began = Instant::now();
            match timer {
                Timer::Alarms(alarms) => alarms.after(self.wait).await,
                Timer::Tokio => tokio::time::sleep(self.wait).await,
            }
            self.waited_ns
                .fetch_add(began.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
        let until = Instant::now() + self.busy;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    fn describe(&self) -> String {
        let waits = self.waits.load(Ordering::Relaxed).max(1);
        let mean_ms = self.waited_ns.load(Ordering::Relaxed) as f64 / waits as f64 / 1e6;
        let wait = format!(
            "waits {} ms ({mean_ms:.3} ms on average, measured; {})",
            self.wait.as_millis(),
            match self.timer {
                Some(Timer::Tokio) => "tokio's timer",
                _ => "the bench's alarms",
            }
        );
        match (self.wait.is_zero(), self.busy.as_micros()) {
            (true, 0) => "answers at once".into(),
            (false, 0) => wait,
            (true, busy) => format!("computes {busy} µs"),
            (false, busy) => format!("{wait}, then computes {busy} µs"),
        }
    }
}

/// Ends the item handler's waits on time, from a thread of its own, as a database's answer
/// arriving on a socket would. tokio's timer cannot: it counts whole milliseconds and its
/// driver sleeps in `epoll_wait`'s milliseconds, so `tokio::time::sleep` of 1 ms took 2.1–2.4 ms
/// on average in this bench (issue 9's sixty-fourth stop), and the extra millisecond made
/// every request of both sides that much slower.
struct Alarms {
    set: mpsc::Sender<Alarm>,
}

/// One wait: when it ends, and what the waiting task looks at.
struct Alarm {
    at: Instant,
    rings: Arc<Mutex<Ringing>>,
}

#[derive(Default)]
struct Ringing {
    rung: bool,
    waker: Option<std::task::Waker>,
}

// Alarms are ordered by when they ring, in the thread's heap.
impl PartialEq for Alarm {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Alarm {}

impl PartialOrd for Alarm {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Alarm {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

impl Alarms {
    fn start() -> Self {
        let (set, alarms) = mpsc::channel::<Alarm>();
        std::thread::Builder::new()
            .name("bench-alarms".into())
            .spawn(move || {
                let mut pending = BinaryHeap::<Reverse<Alarm>>::new();
                loop {
                    let now = Instant::now();
                    while pending.peek().is_some_and(|Reverse(alarm)| alarm.at <= now) {
                        let Some(Reverse(alarm)) = pending.pop() else {
                            break;
                        };
                        let mut ringing = alarm.rings.lock().unwrap();
                        ringing.rung = true;
                        if let Some(waker) = ringing.waker.take() {
                            waker.wake();
                        }
                    }
                    let next = match pending.peek() {
                        Some(Reverse(alarm)) => alarms.recv_timeout(alarm.at.saturating_duration_since(now)),
                        None => alarms.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    };
                    match next {
                        Ok(alarm) => pending.push(Reverse(alarm)),
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .unwrap();
        Self { set }
    }

    /// Waits `wait` without holding the calling thread.
    async fn after(&self, wait: Duration) {
        let rings = Arc::new(Mutex::new(Ringing::default()));
        let alarm = Alarm {
            at: Instant::now() + wait,
            rings: Arc::clone(&rings),
        };
        self.set.send(alarm).unwrap();
        std::future::poll_fn(|cx| {
            let mut ringing = rings.lock().unwrap();
            if ringing.rung {
                std::task::Poll::Ready(())
            } else {
                ringing.waker = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        })
        .await;
    }
}

/// Serves the bench API on 127.0.0.1:0; returns its base URL.
fn serve(work: Arc<HandlerWork>) -> String {
    let page = Arc::new(page());
    common::serve(
        Router::new()
            .route(
                "/items/{id}",
                get(move |axum::extract::Path(id): axum::extract::Path<u64>| {
                    // A handler that answers at once takes nothing from `work`, as before the
                    // waits had a timer to share.
                    let work = (!work.answers_at_once()).then(|| Arc::clone(&work));
                    async move {
                        if let Some(work) = work {
                            work.run().await;
                        }
                        axum::Json(item(id))
                    }
                }),
            )
            .route(
                "/page",
                get(move || {
                    let page = Arc::clone(&page);
                    async move { ([("content-type", "application/json")], page.as_bytes().to_vec()) }
                }),
            ),
    )
}

// === raw ===

/// One raw request: the status checked and the body parsed, as each kit request is asserted.
async fn raw_get(client: &reqwest::Client, url: String) {
    let response = client.get(url).send().await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let bytes = response.bytes().await.unwrap();
    parse_body(&bytes);
}

/// What every raw side does with a body, as a test reading it would: parse it into a `Value`.
fn parse_body(bytes: &[u8]) {
    let value: Value = serde_json::from_slice(bytes).unwrap();
    black_box(value);
}

async fn raw_requests(client: &reqwest::Client, url: &str, n: usize) {
    for i in 0..n {
        raw_get(client, format!("{url}/items/{i}")).await;
    }
}

/// Raw reqwest as a suite of isolated tests would use it: a client (so a connection and a
/// cookie jar) per test of ten requests, configured as the kit configures a test's client
/// (cookies on, redirects off, one TLS configuration shared by all). Not the acceptance
/// baseline: it shows how much of the gap is the isolation every kit test gets.
async fn raw_tests(tls: &rustls::ClientConfig, url: &str, n: usize) {
    let per_test = requests_per_test();
    for t in 0..n.div_ceil(per_test) {
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured(tls.clone())
            .build()
            .unwrap();
        for i in t * per_test..(t * per_test + per_test).min(n) {
            raw_get(&client, format!("{url}/items/{i}")).await;
        }
    }
}

/// Raw reqwest with its connections kept on a runtime of their own, on a thread of their own:
/// one client for all tests, each request spawned onto that runtime and its body awaited from
/// the calling one. It is how connections could outlive a `#[kit::test]`'s runtime (hyper runs
/// a connection as a task on the runtime that opened it), so this side measures what handing
/// each request to that thread and back costs against the connection per test it saves. Not a
/// baseline; off unless `KIT_BENCH_TRANSPORT=1` (or `KIT_BENCH_SIDE=transport`). Cookies off:
/// a kit built this way would keep each test's jar itself.
struct TransportThread {
    handle: tokio::runtime::Handle,
    client: reqwest::Client,
}

/// The transport thread's name (its CPU time is counted as "other").
const TRANSPORT_THREAD: &str = "transport";

impl TransportThread {
    fn start(tls: &rustls::ClientConfig) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(TRANSPORT_THREAD.into())
            .spawn(move || {
                let rt = runtime();
                tx.send(rt.handle().clone()).unwrap();
                rt.block_on(std::future::pending::<()>());
            })
            .unwrap();
        Self {
            handle: rx.recv().unwrap(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .tls_backend_preconfigured(tls.clone())
                .build()
                .unwrap(),
        }
    }

    /// `n` requests, as [`raw_requests`] makes them, each one sent and read on the transport
    /// thread and parsed on the caller's.
    async fn requests(&self, url: &str, n: usize) {
        for i in 0..n {
            let (client, url) = (self.client.clone(), format!("{url}/items/{i}"));
            let bytes = self
                .handle
                .spawn(async move {
                    let response = client.get(url).send().await.unwrap();
                    assert_eq!(response.status(), reqwest::StatusCode::OK);
                    response.bytes().await.unwrap()
                })
                .await
                .unwrap();
            parse_body(&bytes);
        }
    }
}

/// A transport measured beside the baselines, on request (`KIT_BENCH_TRANSPORT`,
/// `KIT_BENCH_HYPER`): what a kit built on it would start from.
enum Transport {
    Thread(TransportThread),
    Hyper,
}

impl Transport {
    /// Its name in the tables.
    fn name(&self) -> &'static str {
        match self {
            Transport::Thread(_) => "thread",
            Transport::Hyper => "hyper",
        }
    }

    /// What the tables say it is.
    fn about(&self) -> &'static str {
        match self {
            Transport::Thread(_) => {
                "raw reqwest with its connections on a transport thread (one client for all tests, each request handed to it and back; its CPU under \"other\")"
            }
            Transport::Hyper => "hyper's HTTP/1 client alone, without reqwest (a connection per task, kept)",
        }
    }

    async fn requests(&self, url: &str, n: usize) {
        match self {
            Transport::Thread(thread) => thread.requests(url, n).await,
            Transport::Hyper => hyper_requests(url, n).await,
        }
    }
}

/// An opt-in transport and its rounds, by scenario (sequential, 32 in flight).
struct OtherSide {
    transport: Transport,
    times: [Vec<Sample>; 2],
}

impl OtherSide {
    fn new(transport: Transport) -> Self {
        Self {
            transport,
            times: [Vec::new(), Vec::new()],
        }
    }
}

/// hyper's HTTP/1 client alone, without reqwest: the connection opened once per call (a
/// task, as raw reqwest's pool keeps one per task) and kept, each request checked and parsed
/// as [`raw_get`] does. Not a baseline; off unless `KIT_BENCH_HYPER=1` (or
/// `KIT_BENCH_SIDE=hyper`). It shows what reqwest's own layers cost a request, which a kit on
/// a transport of its own would not pay, and which a raw reqwest baseline includes.
async fn hyper_requests(url: &str, n: usize) {
    use http_body_util::BodyExt;
    type Empty = http_body_util::Empty<bytes::Bytes>;
    let authority = url.trim_start_matches("http://").to_owned();
    let stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    // As reqwest sets it.
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Empty>(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    for i in 0..n {
        let request = http::Request::get(format!("/items/{i}"))
            .header(http::header::HOST, authority.as_str())
            .body(http_body_util::Empty::new())
            .unwrap();
        sender.ready().await.unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        parse_body(&bytes);
    }
    drop(sender);
    let _ = conn.await;
}

async fn raw_page(client: &reqwest::Client, url: &str, n: usize) {
    for _ in 0..n {
        raw_get(client, format!("{url}/page")).await;
    }
}

// === kit ===

struct Kit {
    run: KitRun,
    archive: PathBuf,
    /// `KIT_BENCH_VARIANT`, as the output names it.
    variant: &'static str,
    /// `KIT_BENCH_LEVEL`: the archive's deflate level.
    level: u32,
    /// `KIT_BENCH_NICENESS`: how far below the bench's thread the dispatcher runs.
    niceness: u8,
    /// `KIT_BENCH_FINISH`: how tests in flight together end.
    finish: ConcurrentFinish,
    _dir: tempfile::TempDir,
}

/// How a kit test in flight with others on the bench's shared runtime ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ConcurrentFinish {
    /// Awaits `finish_async`: no thread blocks while its commit is made.
    Awaited,
    /// `finish` on tokio's blocking pool, as until issue 9's seventy-third stop: blocking
    /// the shared runtime's thread instead would stall the other 31 tests behind one commit.
    BlockingPool,
}

impl ConcurrentFinish {
    fn from_env() -> Self {
        match std::env::var("KIT_BENCH_FINISH").unwrap_or_default().as_str() {
            "" | "await" => ConcurrentFinish::Awaited,
            "blocking-pool" => ConcurrentFinish::BlockingPool,
            other => panic!("KIT_BENCH_FINISH={other:?}: expected `await` or `blocking-pool`"),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ConcurrentFinish::Awaited => "awaiting finish_async",
            ConcurrentFinish::BlockingPool => "finish on the blocking pool",
        }
    }
}

impl Kit {
    /// Begins the test `name` of the bench's application as the runner does: its start's
    /// commit requested.
    fn begin(&self, name: impl Into<String>) -> KitExecutionContext {
        let ctx = self
            .run
            .begin_test(TestStarted::new(name).with_application(Some("bench".into())));
        ctx.request_flush().unwrap();
        ctx
    }
}

fn kit(url: &str) -> Kit {
    let dir = tempfile::tempdir().unwrap();
    let spec: PathBuf = dir.path().join("openapi.yaml");
    std::fs::write(&spec, OPENAPI).unwrap();
    // One list names the variants for the match and for the message that rejects others.
    const VARIANTS: [&str; 5] = [
        "bare",
        "no-attachments",
        "no-archive",
        "no-expected-shapes",
        "no-responses",
    ];
    let variant = match std::env::var("KIT_BENCH_VARIANT").unwrap_or_default().as_str() {
        "" => "everything on",
        given => VARIANTS
            .into_iter()
            .find(|known| *known == given)
            .unwrap_or_else(|| {
                panic!(
                    "KIT_BENCH_VARIANT={given:?}: expected one of {VARIANTS:?} (or unset, for everything on)"
                )
            }),
    };
    let bare = variant == "bare";
    let attachments = !bare && variant != "no-attachments";
    let archived = !bare && variant != "no-archive";
    // The two kinds of attachment a request of the bench makes, for splitting their cost.
    let expected_shapes = variant != "no-expected-shapes";
    let responses = variant != "no-responses";
    let mut builder = KitBuilder::new(Configuration::new());
    if !bare {
        builder.add_collector(OpenApiCoverageCollector::from_spec(&spec).unwrap());
    }
    builder.add_application("bench", |app| {
        app.add_rest(|rest| {
            if attachments {
                rest.capture_attachments(move |options| {
                    options.capture_expected_shapes = expected_shapes;
                    options.capture_responses = responses;
                });
            }
            let client = rest.add_client().base_url(url);
            if !bare {
                client
                    .add_collector::<RestCoverageCollector>()
                    .add_collector::<RestTrafficCoverageCollector>();
            }
        });
    });
    let built = builder.build().unwrap();
    let run_id = RunId::generate();
    let level = deflate_level();
    let options = WriterOptions::default().with_compression_level(level);
    let writer =
        ArchiveWriter::with_options(dir.path(), RunManifest::new(run_id.clone(), "bench"), options).unwrap();
    let archive = writer.path().to_owned();
    let niceness = dispatcher_niceness();
    let bus = Bus::builder().dispatcher_niceness(niceness);
    let bus = if archived { bus.collector(writer) } else { bus };
    let bus = bus.collectors(built.collectors).start();
    let run = KitRun::with_secrets(built.host, bus, run_id, Arc::new(SecretRegistry::new()));
    Kit {
        run,
        archive,
        variant,
        level,
        niceness,
        finish: ConcurrentFinish::from_env(),
        _dir: dir,
    }
}

/// Tests of ten requests, each started and finished as the runner does (the start's commit
/// requested, the end flushed).
async fn kit_requests(kit: &Kit, n: usize, first: usize, concurrent: bool) {
    let per_test = requests_per_test();
    let shape = item_shape();
    let mut i = first;
    for t in 0..n.div_ceil(per_test) {
        let ctx = kit.begin(format!("bench::t{first}_{t}"));
        for _ in 0..per_test.min(n - t * per_test) {
            let response = ctx.rest().path_param("id", i).get("/items/{id}").await;
            response
                .should()
                .have_http_status(http::StatusCode::OK)
                .match_shape(&shape);
            i += 1;
        }
        if concurrent && kit.finish == ConcurrentFinish::Awaited {
            ctx.finish_async(TestOutcome::Passed).await.unwrap();
        } else if concurrent {
            tokio::task::spawn_blocking(move || ctx.finish(TestOutcome::Passed))
                .await
                .unwrap()
                .unwrap();
        } else {
            let waited = Instant::now();
            ctx.finish(TestOutcome::Passed).unwrap();
            FINISH_WAIT_NS.fetch_add(waited.elapsed().as_nanos() as u64, Ordering::Relaxed);
            FINISHED_TESTS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `tasks` tasks at once in one test, each making `n` requests through the test's one client
/// and asserting each one's status and the shape. Not the acceptance side, whose 32 tasks are
/// 32 tests of ten: it shows what the kit costs at 32 in flight without a client, a connection
/// and an end per test of ten (invariant 5), its connections kept for the whole round as raw
/// reqwest's are.
async fn kit_in_one_test(ctx: &KitExecutionContext, tasks: usize, n: usize) {
    let task = |first: usize| async move {
        let shape = item_shape();
        for i in first..first + n {
            let response = ctx.rest().path_param("id", i).get("/items/{id}").await;
            response
                .should()
                .have_http_status(http::StatusCode::OK)
                .match_shape(&shape);
        }
    };
    futures_util::future::join_all((0..tasks).map(|t| task(t * n))).await;
}

/// A baseline's wall time over the other side's, round by round, for each round both ran in.
fn wall_ratios(baseline: &[Sample], other: &[Sample]) -> Vec<f64> {
    baseline
        .iter()
        .zip(other)
        .map(|(b, o)| b.wall.as_secs_f64() / o.wall.as_secs_f64())
        .collect()
}

/// The lowest, median and highest of a scenario's ratios round by round: a baseline's wall time
/// over the kit's, for each round both ran in. Blank when either side did not run.
struct RoundRatios(Option<[f64; 3]>);

impl RoundRatios {
    fn of(baseline: &[Sample], kit: &[Sample]) -> Self {
        Self::spread(wall_ratios(baseline, kit))
    }

    /// The kit's rate over the mean of raw reqwest's in the runs just before and just after
    /// it, round by round: a machine that speeds up or slows down steadily within a round
    /// then favours neither side.
    fn bracketed(before: &[Sample], kit: &[Sample], after: &[Sample]) -> Self {
        Self::spread(
            before
                .iter()
                .zip(kit)
                .zip(after)
                .map(|((b, k), a)| (b.wall.as_secs_f64() + a.wall.as_secs_f64()) / 2.0 / k.wall.as_secs_f64())
                .collect(),
        )
    }

    fn spread(mut ratios: Vec<f64>) -> Self {
        if ratios.is_empty() {
            return RoundRatios(None);
        }
        ratios.sort_by(f64::total_cmp);
        RoundRatios(Some([
            ratios[0],
            ratios[ratios.len() / 2],
            ratios[ratios.len() - 1],
        ]))
    }
}

impl std::fmt::Display for RoundRatios {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some([low, median, high]) => write!(f, "{low:>8.3} {median:>8.3} {high:>8.3}"),
            None => write!(f, "{:>8} {:>8} {:>8}", "-", "-", "-"),
        }
    }
}

/// The median of a scenario's round-by-round ratios (a baseline's wall time over the other
/// side's) and a 95% interval for it: the 2.5th and 97.5th percentiles of the medians of 2 000
/// resamples of the rounds, drawn with replacement (a percentile bootstrap). It says how
/// precisely one run pins the median down on this machine. With few rounds such an interval is
/// too narrow (three rounds give their own lowest and highest), so there is none below five;
/// again/raw's, which should hold 1.0, shows when a run's is.
fn median_interval(baseline: &[Sample], other: &[Sample]) -> Option<[f64; 3]> {
    const RESAMPLES: usize = 2_000;
    let ratios = wall_ratios(baseline, other);
    if ratios.len() < 5 {
        return None;
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    // splitmix64, seeded the same every run: the interval is a function of the rounds alone.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut sample = Vec::with_capacity(ratios.len());
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            sample.clear();
            sample.extend((0..ratios.len()).map(|_| ratios[(next() % ratios.len() as u64) as usize]));
            median(&mut sample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    Some([
        median(&mut ratios.clone()),
        medians[RESAMPLES * 25 / 1000],
        medians[RESAMPLES * 975 / 1000 - 1],
    ])
}

/// `median low high`, or dashes.
fn interval_cell(interval: Option<[f64; 3]>) -> String {
    match interval {
        Some([median, low, high]) => format!("{median:>8.3} {low:>8.3} {high:>8.3}"),
        None => format!("{:>8} {:>8} {:>8}", "-", "-", "-"),
    }
}

/// Prints a table of ratios by scenario: its title, then a header of six columns, then its rows.
fn ratio_table(title: &str, columns: [&str; 6], rows: Vec<String>) {
    println!("{title}");
    let [a, b, c, d, e, f] = columns;
    println!("{:<14} {a:>8} {b:>8} {c:>8} {d:>8} {e:>8} {f:>8}", "scenario");
    for row in rows {
        println!("{row}");
    }
}

/// Which side a slice of the interleaved measurement runs.
#[derive(Clone, Copy)]
enum Slice {
    Raw,
    Kit,
    Again,
    PerTest,
    /// At 32 in flight only: the kit with all 32 tasks in one test (see `kit_in_one_test`).
    OneTest,
}

/// The kit and raw reqwest measured by turns a few tests at a time, not a whole run at a time.
///
/// This machine slows down and speeds up in spells shorter than a run of 2 000 requests (raw
/// reqwest against itself, run after run, spreads from 0.6 to 1.5), and a side that runs
/// whole in a slow spell takes all of it. Here the sides take turns a slice at a time:
/// sequentially five tests' worth of requests (50; `KIT_BENCH_SLICE_TESTS` sets the five), at
/// 32 in flight 32 tests at once (320), in the order raw, kit, raw again, raw with a client per
/// test, then the other way round, so that both raw sides stand as often just before a kit
/// slice as just after one. A round sums each side's slices, so a spell falls on every side
/// alike. Raw again over raw says what is left of the machine's spread; raw with a client per
/// test over raw, what that isolation costs; the raw slices just after a kit slice over
/// those just before one say what a kit slice leaves behind for whatever runs next (its
/// dispatcher still at work, the kernel writing the archive back, caches it filled), which
/// counts against raw reqwest here: about half of it lifts kit/raw.
struct Interleaved {
    concurrent: bool,
    /// Requests a task makes in a slice: `KIT_BENCH_SLICE_TESTS` tests' worth sequentially (5),
    /// one test's at 32 in flight, where five would make slices of 1 600 requests, as coarse
    /// as the whole runs above.
    per_slice: usize,
    /// Each side's slices summed, a sample a round (wall time only).
    raw: Vec<Sample>,
    kit: Vec<Sample>,
    again: Vec<Sample>,
    per_test: Vec<Sample>,
    /// At 32 in flight, the kit with its 32 tasks in one test a round (empty sequentially).
    one_test: Vec<Sample>,
    /// The raw sides' slices that ran just after a kit slice, and just before one, summed.
    after_kit: Duration,
    before_kit: Duration,
    /// Requests each side made, over all rounds.
    requests: usize,
}

impl Interleaved {
    fn new(concurrent: bool) -> Self {
        let tests = if concurrent {
            1
        } else {
            positive_knob("KIT_BENCH_SLICE_TESTS", 5)
        };
        Interleaved {
            concurrent,
            per_slice: requests_per_test() * tests,
            raw: Vec::new(),
            kit: Vec::new(),
            again: Vec::new(),
            per_test: Vec::new(),
            one_test: Vec::new(),
            after_kit: Duration::ZERO,
            before_kit: Duration::ZERO,
            requests: 0,
        }
    }

    fn scenario(&self) -> &'static str {
        if self.concurrent {
            "32 in flight"
        } else {
            "sequential"
        }
    }

    /// One round: as many requests a side as a whole run of the scenario, in slices by turns.
    fn round(
        &mut self,
        rt: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        url: &str,
        kit: &Kit,
        tls: &rustls::ClientConfig,
        n: usize,
    ) {
        let tasks = if self.concurrent { IN_FLIGHT } else { 1 };
        let per_slice = self.per_slice;
        // At 32 in flight a round of 2 000 requests would be six cycles, too few for a spell
        // to fall evenly; twenty cost about a second.
        let cycles = (n / (per_slice * tasks)).max(if self.concurrent { 20 } else { 2 });
        self.requests += cycles * per_slice * tasks;
        let mut sums = [Duration::ZERO; 5];
        // One test for the whole round, its start and end timed with its slices.
        let one_test = self.concurrent.then(|| {
            let started = Instant::now();
            let ctx = kit.begin("bench::in_one_test");
            sums[Slice::OneTest as usize] += started.elapsed();
            ctx
        });
        for cycle in 0..cycles {
            let order = if cycle % 2 == 0 {
                [
                    Slice::Raw,
                    Slice::Kit,
                    Slice::Again,
                    Slice::PerTest,
                    Slice::OneTest,
                ]
            } else {
                [
                    Slice::OneTest,
                    Slice::PerTest,
                    Slice::Again,
                    Slice::Kit,
                    Slice::Raw,
                ]
            };
            let kit_at = order.iter().position(|side| matches!(side, Slice::Kit));
            for (position, side) in order.into_iter().enumerate() {
                if matches!(side, Slice::OneTest) && one_test.is_none() {
                    continue;
                }
                let started = Instant::now();
                rt.block_on(async {
                    match side {
                        Slice::Raw | Slice::Again => {
                            let tasks = (0..tasks).map(|_| raw_requests(client, url, per_slice));
                            futures_util::future::join_all(tasks).await;
                        }
                        Slice::PerTest => {
                            let tasks = (0..tasks).map(|_| raw_tests(tls, url, per_slice));
                            futures_util::future::join_all(tasks).await;
                        }
                        Slice::Kit => {
                            let tasks = (0..tasks)
                                .map(|t| kit_requests(kit, per_slice, t * per_slice, self.concurrent));
                            futures_util::future::join_all(tasks).await;
                        }
                        Slice::OneTest => {
                            if let Some(ctx) = &one_test {
                                kit_in_one_test(ctx, tasks, per_slice).await;
                            }
                        }
                    }
                });
                let wall = started.elapsed();
                sums[side as usize] += wall;
                // Raw reqwest just before the kit's slice and just after it, in both orders.
                if Some(position + 1) == kit_at {
                    self.before_kit += wall;
                } else if kit_at.map(|k| k + 1) == Some(position) {
                    self.after_kit += wall;
                }
            }
        }
        if let Some(ctx) = one_test {
            let started = Instant::now();
            ctx.finish(TestOutcome::Passed).unwrap();
            sums[Slice::OneTest as usize] += started.elapsed();
        }
        let sample = |wall| Sample {
            wall,
            cpu: Duration::ZERO,
            threads: ThreadCpu::default(),
        };
        self.raw.push(sample(sums[Slice::Raw as usize]));
        self.kit.push(sample(sums[Slice::Kit as usize]));
        self.again.push(sample(sums[Slice::Again as usize]));
        self.per_test.push(sample(sums[Slice::PerTest as usize]));
        if self.concurrent {
            self.one_test.push(sample(sums[Slice::OneTest as usize]));
        }
    }

    fn print(measures: &[Interleaved]) {
        let ran = || measures.iter().filter(|m| !m.raw.is_empty());
        ratio_table(
            &format!(
                "interleaved: the sides by turns in slices ({} requests sequentially; at 32 in flight 32 tests at once), raw, kit, raw again, raw with a client per test, then the other way round, each side's slices summed by round (KIT_BENCH_INTERLEAVED=0 leaves it out); kit/raw and again/raw round by round",
                measures.iter().find(|m| !m.concurrent).map_or(0, |m| m.per_slice)
            ),
            ["kit lo", "kit md", "kit hi", "again lo", "again md", "again hi"],
            ran()
                .map(|m| {
                    format!(
                        "{:<14} {} {}",
                        m.scenario(),
                        RoundRatios::of(&m.raw, &m.kit),
                        RoundRatios::of(&m.raw, &m.again)
                    )
                })
                .collect(),
        );
        ratio_table(
            "interleaved: the median round's kit/raw and again/raw, each with a 95% interval",
            ["kit md", "kit lo", "kit hi", "again md", "again lo", "again hi"],
            ran()
                .map(|m| {
                    format!(
                        "{:<14} {} {}",
                        m.scenario(),
                        interval_cell(median_interval(&m.raw, &m.kit)),
                        interval_cell(median_interval(&m.raw, &m.again))
                    )
                })
                .collect(),
        );
        println!(
            "interleaved, all rounds together: kit/raw, again/raw, raw with a client per test over raw (that/raw) and the kit over it (kit/that), the raw sides' slices just after a kit slice over those just before one (above 1: a kit slice leaves work behind), and each side's rate"
        );
        println!(
            "{:<14} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12}",
            "scenario",
            "kit/raw",
            "again",
            "that/raw",
            "kit/that",
            "after",
            "raw req/s",
            "that req/s",
            "kit req/s"
        );
        for m in ran() {
            println!(
                "{:<14} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>12.0} {:>12.0} {:>12.0}",
                m.scenario(),
                total_wall(&m.raw) / total_wall(&m.kit),
                total_wall(&m.raw) / total_wall(&m.again),
                total_wall(&m.raw) / total_wall(&m.per_test),
                total_wall(&m.per_test) / total_wall(&m.kit),
                m.after_kit.as_secs_f64() / m.before_kit.as_secs_f64(),
                m.requests as f64 / total_wall(&m.raw),
                m.requests as f64 / total_wall(&m.per_test),
                m.requests as f64 / total_wall(&m.kit)
            );
        }
        let in_one_test: Vec<_> = ran().filter(|m| !m.one_test.is_empty()).collect();
        if !in_one_test.is_empty() {
            ratio_table(
                "interleaved, not the acceptance side: the kit with its 32 tasks in one test a round (one client, its connections kept, one end), over raw reqwest round by round; the median round with a 95% interval",
                ["one lo", "one md", "one hi", "one md", "one lo", "one hi"],
                in_one_test
                    .iter()
                    .map(|m| {
                        format!(
                            "{:<14} {} {}",
                            m.scenario(),
                            RoundRatios::of(&m.raw, &m.one_test),
                            interval_cell(median_interval(&m.raw, &m.one_test))
                        )
                    })
                    .collect(),
            );
            for m in in_one_test {
                println!(
                    "{:<14} all rounds: one/raw {:.3}, one/kit {:.3}; {:.0} req/s",
                    m.scenario(),
                    total_wall(&m.raw) / total_wall(&m.one_test),
                    total_wall(&m.kit) / total_wall(&m.one_test),
                    m.requests as f64 / total_wall(&m.one_test)
                );
            }
        }
    }
}

/// The seconds of wall time in `samples`, summed.
fn total_wall(samples: &[Sample]) -> f64 {
    samples.iter().map(|s| s.wall.as_secs_f64()).sum()
}

/// Nanoseconds sequential kit tests spent in `finish`: waiting for their end to be committed.
static FINISH_WAIT_NS: AtomicU64 = AtomicU64::new(0);
static FINISHED_TESTS: AtomicU64 = AtomicU64::new(0);

async fn kit_page(kit: &Kit, n: usize) {
    let shape = json!({ "page": 1, "total": json_value::greater_than(0),
        "items": json_value::each(json!({ "id": json_value::any_number(), "sku": json_value::any_string() })) });
    let ctx = kit.begin("bench::page");
    for _ in 0..n {
        let response = ctx.rest().get("/page").await;
        response
            .should()
            .have_http_status(http::StatusCode::OK)
            .match_shape(&shape);
    }
    ctx.finish(TestOutcome::Passed).unwrap();
}

/// One round of one side: its wall time, the CPU time the whole process spent meanwhile, and
/// that time by thread.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    threads: ThreadCpu,
}

/// Wall time of `f`, and the CPU time the whole process (client, server, dispatcher) spent
/// meanwhile, in all and by thread.
fn timed(rt: &tokio::runtime::Runtime, f: impl std::future::Future<Output = ()>) -> Sample {
    let (cpu, threads) = (process_cpu(), ThreadCpu::now());
    let started = Instant::now();
    rt.block_on(f);
    Sample {
        wall: started.elapsed(),
        cpu: process_cpu().saturating_sub(cpu),
        threads: ThreadCpu::now().since(threads),
    }
}

/// User and system time of this process from `/proc/self/stat` (Linux; zero elsewhere), in
/// clock ticks of 10 ms: coarse, so only totals over all rounds are shown.
fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name, which is in parentheses and may contain spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

fn requests_per_test() -> usize {
    positive_knob("KIT_BENCH_PER_TEST", 10)
}

fn main() {
    let rounds = positive_knob("KIT_BENCH_ROUNDS", 7);
    let n = positive_knob("KIT_BENCH_REQUESTS", 2_000);
    // 0 runs one page, as commands in the history with `KIT_BENCH_PAGES=0` did.
    let pages = whole_knob("KIT_BENCH_PAGES", (n / 100).max(5)).max(1);
    let work = Arc::new(HandlerWork::from_env());
    let url = serve(Arc::clone(&work));
    let rt = runtime();
    let client = reqwest::Client::new();
    let kit = kit(&url);
    // Warm both: connections, allocator, the kit's client and collectors.
    rt.block_on(raw_requests(&client, &url, 200));
    rt.block_on(kit_requests(&kit, 200, 0, false));

    let scenarios = ["sequential", "32 in flight", "1 MiB page"];
    let mut raw_times: Vec<Vec<Sample>> = vec![Vec::new(); 3];
    let mut kit_times: Vec<Vec<Sample>> = vec![Vec::new(); 3];
    let mut per_test_times: Vec<Vec<Sample>> = vec![Vec::new(); 2];
    // At 32 in flight: the kit with its 32 tasks in one test (a whole round, begun and ended).
    let mut one_test_times: Vec<Sample> = Vec::new();
    // Raw reqwest run again right after the kit, round by round (sequential, 32 in flight).
    let mut again_times: Vec<Vec<Sample>> = vec![Vec::new(); 2];
    // Built only for the raw side: it loads the platform's root certificates.
    let tls = std::sync::LazyLock::new(tls_config);
    let only = std::env::var("KIT_BENCH_ONLY").ok();
    let runs = |i: usize| only.as_deref().is_none_or(|o| scenarios[i].starts_with(o));
    // One side only (no ratios then): what a profiler should count.
    let side = std::env::var("KIT_BENCH_SIDE").unwrap_or_default();
    // `again`: raw reqwest and raw reqwest again, nothing between them, to tell the machine's
    // own spread from anything the kit leaves behind for the run after it.
    let raw_on = side.is_empty() || side == "raw" || side == "again";
    let kit_on = side.is_empty() || side == "kit";
    let per_test_on = side.is_empty() || side == "per-test";
    let one_test_on = side.is_empty() || side == "one-test";
    // On unless switched off: it costs a fifth more time and measures the machine, not the kit.
    let again_on =
        side == "again" || (side.is_empty() && std::env::var("KIT_BENCH_AGAIN").map_or(true, |v| v != "0"));
    let asked = |name: &str, var: &str| side == name || (side.is_empty() && std::env::var_os(var).is_some());
    // Samples of the opt-in sides, by scenario (sequential, 32 in flight).
    let mut others = Vec::new();
    if asked("transport", "KIT_BENCH_TRANSPORT") {
        others.push(OtherSide::new(Transport::Thread(TransportThread::start(&tls))));
    }
    if asked("hyper", "KIT_BENCH_HYPER") {
        others.push(OtherSide::new(Transport::Hyper));
    }
    // Off with `KIT_BENCH_INTERLEAVED=0`, and with one side only: a profile of one side wants
    // no other side's slices between its own.
    let interleaved_on = side.is_empty() && std::env::var("KIT_BENCH_INTERLEAVED").map_or(true, |v| v != "0");
    let mut interleaved = [Interleaved::new(false), Interleaved::new(true)];
    for _ in 0..rounds {
        if runs(0) {
            if raw_on {
                raw_times[0].push(timed(&rt, raw_requests(&client, &url, n)));
            }
            if kit_on {
                kit_times[0].push(timed(&rt, kit_requests(&kit, n, 0, false)));
            }
            if again_on {
                again_times[0].push(timed(&rt, raw_requests(&client, &url, n)));
            }
            if per_test_on {
                per_test_times[0].push(timed(&rt, raw_tests(&tls, &url, n)));
            }
            for OtherSide { transport, times } in &mut others {
                times[0].push(timed(&rt, transport.requests(&url, n)));
            }
        }
        if runs(1) {
            let per_task = n / IN_FLIGHT;
            if raw_on {
                raw_times[1].push(timed(&rt, async {
                    let tasks = (0..IN_FLIGHT).map(|_| raw_requests(&client, &url, per_task));
                    futures_util::future::join_all(tasks).await;
                }));
            }
            if kit_on {
                kit_times[1].push(timed(&rt, async {
                    let tasks = (0..IN_FLIGHT).map(|t| kit_requests(&kit, per_task, t * per_task, true));
                    futures_util::future::join_all(tasks).await;
                }));
            }
            if again_on {
                again_times[1].push(timed(&rt, async {
                    let tasks = (0..IN_FLIGHT).map(|_| raw_requests(&client, &url, per_task));
                    futures_util::future::join_all(tasks).await;
                }));
            }
            if per_test_on {
                per_test_times[1].push(timed(&rt, async {
                    let tasks = (0..IN_FLIGHT).map(|_| raw_tests(&tls, &url, per_task));
                    futures_util::future::join_all(tasks).await;
                }));
            }
            if one_test_on {
                one_test_times.push(timed(&rt, async {
                    let ctx = kit.begin("bench::in_one_test");
                    kit_in_one_test(&ctx, IN_FLIGHT, per_task).await;
                    // Blocking, but nothing else runs on this runtime by now.
                    ctx.finish(TestOutcome::Passed).unwrap();
                }));
            }
            for OtherSide { transport, times } in &mut others {
                times[1].push(timed(&rt, async {
                    let tasks = (0..IN_FLIGHT).map(|_| transport.requests(&url, per_task));
                    futures_util::future::join_all(tasks).await;
                }));
            }
        }
        if runs(2) {
            if raw_on {
                raw_times[2].push(timed(&rt, raw_page(&client, &url, pages)));
            }
            if kit_on {
                kit_times[2].push(timed(&rt, kit_page(&kit, pages)));
            }
        }
        if interleaved_on {
            // The finish wait printed stays the whole rounds' figure.
            let waits = (
                FINISH_WAIT_NS.load(Ordering::Relaxed),
                FINISHED_TESTS.load(Ordering::Relaxed),
            );
            for (i, measure) in interleaved.iter_mut().enumerate() {
                if runs(i) {
                    measure.round(&rt, &client, &url, &kit, &tls, n);
                }
            }
            FINISH_WAIT_NS.store(waits.0, Ordering::Relaxed);
            FINISHED_TESTS.store(waits.1, Ordering::Relaxed);
        }
    }
    let stats = kit.run.bus().stats();
    println!(
        "{rounds} rounds; {n} requests per round ({} per test), {pages} pages of 1 MiB; kit variant: {}, deflate level {}, dispatcher nice +{}, tests in flight together end {}; item handler {}; {} events published, {} dispatched",
        requests_per_test(),
        kit.variant,
        kit.level,
        kit.niceness,
        kit.finish.describe(),
        work.describe(),
        stats.published,
        stats.dispatched
    );
    let finished = FINISHED_TESTS.load(Ordering::Relaxed).max(1);
    println!(
        "sequential kit tests waited {:.0} µs each in finish (the end-of-test commit)",
        FINISH_WAIT_NS.load(Ordering::Relaxed) as f64 / 1e3 / finished as f64
    );
    if let Ok(keep) = std::env::var("KIT_BENCH_KEEP") {
        std::fs::copy(&kit.archive, keep).unwrap();
    }
    if let Ok(reader) = kit_trace::ArchiveReader::open(&kit.archive) {
        let size = std::fs::metadata(&kit.archive).map(|m| m.len()).unwrap_or(0);
        println!(
            "archive: {} entries, {:.1} MiB",
            reader.entry_count(),
            size as f64 / (1024.0 * 1024.0)
        );
    }
    println!(
        "{:<14} {:>12} {:>12} {:>8} {:>14} {:>14}",
        "scenario", "raw req/s", "kit req/s", "kit/raw", "raw CPU µs/req", "kit CPU µs/req"
    );
    let mut per_test_rows = Vec::new();
    let mut other_rows = Vec::new();
    let mut round_rows = Vec::new();
    let mut again_rows = Vec::new();
    let mut interval_rows = Vec::new();
    let mut thread_rows = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        // Before anything sorts the rounds.
        let (kit_interval, again_interval) = match (raw_times.get(i), kit_times.get(i), again_times.get(i)) {
            (Some(raw), Some(kit), Some(again)) => (median_interval(raw, kit), median_interval(raw, again)),
            _ => (None, None),
        };
        if kit_interval.is_some() || again_interval.is_some() {
            interval_rows.push(format!(
                "{scenario:<14} {} {}",
                interval_cell(kit_interval),
                interval_cell(again_interval)
            ));
        }
        // Before anything sorts the rounds, and with or without the kit's (`KIT_BENCH_SIDE=again`).
        if let Some(again) = again_times
            .get(i)
            .filter(|t| !t.is_empty() && !raw_times[i].is_empty())
        {
            again_rows.push(format!(
                "{scenario:<14} {} {}",
                RoundRatios::of(&raw_times[i], again),
                RoundRatios::bracketed(&raw_times[i], &kit_times[i], again)
            ));
        }
        if raw_times[i].is_empty() || kit_times[i].is_empty() {
            continue;
        }
        let count = if i == 2 {
            pages
        } else {
            (n / IN_FLIGHT) * IN_FLIGHT
        };
        let count = if i == 0 { n } else { count };
        // Requests/s of the median round; CPU per request over all rounds.
        let rate = |times: &mut Vec<Sample>| {
            let cpu: Duration = times.iter().map(|t| t.cpu).sum();
            times.sort_by_key(|t| t.wall);
            (
                count as f64 / times[times.len() / 2].wall.as_secs_f64(),
                cpu.as_secs_f64() * 1e6 / (count * times.len()) as f64,
            )
        };
        let no_samples = Vec::new();
        let per_test_samples = per_test_times.get(i).unwrap_or(&no_samples);
        let other_samples = others
            .iter()
            .map(|o| (o.transport.name(), o.times.get(i).unwrap_or(&no_samples)));
        let one_test_samples = if i == 1 { &one_test_times } else { &no_samples };
        for (side, times) in [
            ("raw", &raw_times[i]),
            ("raw/test", per_test_samples),
            ("kit", &kit_times[i]),
            ("kit/one", one_test_samples),
        ]
        .into_iter()
        .chain(other_samples)
        {
            if times.is_empty() {
                continue;
            }
            let per_request = |role: usize| {
                let sum: Duration = times.iter().map(|t| t.threads.0[role]).sum();
                sum.as_secs_f64() * 1e6 / (count * times.len()) as f64
            };
            thread_rows.push(format!(
                "{scenario:<14} {side:<8} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                per_request(0),
                per_request(1),
                per_request(2),
                per_request(3)
            ));
        }
        // Round by round, before `rate` sorts the rounds: each round ran raw, then kit (then
        // raw again and raw with a client per test) back to back, so its ratio is a pair
        // measured in the same minute, and the lowest is what the target's "never below" is
        // about.
        round_rows.push(format!(
            "{scenario:<14} {} {}",
            RoundRatios::of(&raw_times[i], &kit_times[i]),
            RoundRatios::of(per_test_samples, &kit_times[i])
        ));
        // The opt-in sides' rounds over raw reqwest's and over raw reqwest's with a client per
        // test, paired before `rate` sorts any of them.
        let other_rounds: Vec<_> = others
            .iter()
            .map(|o| {
                let times = o.times.get(i).unwrap_or(&no_samples);
                (
                    RoundRatios::of(&raw_times[i], times),
                    RoundRatios::of(per_test_samples, times),
                )
            })
            .collect();
        let (raw, raw_cpu) = rate(&mut raw_times[i]);
        for (other, (of_raw, of_per_test)) in others.iter_mut().zip(&other_rounds) {
            if let Some(times) = other.times.get_mut(i).filter(|t| !t.is_empty()) {
                let (rate, cpu) = rate(times);
                other_rows.push(format!(
                    "{scenario:<14} {:<8} {rate:>10.0} {:>8.3} {cpu:>10.1} {of_raw} {of_per_test}",
                    other.transport.name(),
                    rate / raw
                ));
            }
        }
        let (kit, kit_cpu) = rate(&mut kit_times[i]);
        if let Some(times) = per_test_times.get_mut(i).filter(|t| !t.is_empty()) {
            let (per_test, per_test_cpu) = rate(times);
            per_test_rows.push(format!(
                "{scenario:<14} {per_test:>12.0} {kit:>12.0} {:>8.3} {per_test_cpu:>14.1} {kit_cpu:>14.1}",
                kit / per_test
            ));
        }
        println!(
            "{scenario:<14} {raw:>12.0} {kit:>12.0} {:>8.3} {raw_cpu:>14.1} {kit_cpu:>14.1}",
            kit / raw
        );
    }
    ratio_table(
        "kit/raw and kit/that round by round (each round runs raw, kit, raw again and raw with a client per test back to back)",
        ["lowest", "median", "highest", "that lo", "that med", "that hi"],
        round_rows,
    );
    if !again_rows.is_empty() {
        // What the machine alone does to a ratio: the same code measured twice a few hundred
        // milliseconds apart. A kit round below 0.90 means little where these go below it too.
        let after = if kit_on {
            "the kit"
        } else {
            "the first, nothing between them"
        };
        ratio_table(
            &format!(
                "raw reqwest against itself: each round also ran raw reqwest again right after {after} (KIT_BENCH_AGAIN=0 leaves it out); again/raw round by round, and the kit over the mean of the two raw runs around it"
            ),
            [
                "again lo", "again md", "again hi", "brkt lo", "brkt med", "brkt hi",
            ],
            again_rows,
        );
    }
    if !interval_rows.is_empty() {
        ratio_table(
            "the median round's kit/raw and again/raw, each with a 95% interval (a bootstrap over the rounds): how precisely this run pins a median down",
            ["kit md", "kit lo", "kit hi", "again md", "again lo", "again hi"],
            interval_rows,
        );
    }
    println!("CPU µs per request by thread, over all rounds (/proc/self/task/*/schedstat)");
    println!(
        "{:<14} {:<8} {:>10} {:>10} {:>10} {:>10}",
        "scenario",
        "side",
        ThreadCpu::ROLES[0],
        ThreadCpu::ROLES[1],
        ThreadCpu::ROLES[2],
        ThreadCpu::ROLES[3]
    );
    for row in thread_rows {
        println!("{row}");
    }
    if !per_test_rows.is_empty() {
        println!(
            "not the baseline: raw reqwest with a client per test of {} (a connection and a cookie jar each, as every kit test has)",
            requests_per_test()
        );
        println!(
            "{:<14} {:>12} {:>12} {:>8} {:>14} {:>14}",
            "scenario", "raw/test r/s", "kit req/s", "kit/that", "raw CPU µs/req", "kit CPU µs/req"
        );
        for row in per_test_rows {
            println!("{row}");
        }
    }
    if !other_rows.is_empty() {
        println!("not baselines, asked for: other transports");
        for other in &others {
            println!("  {}: {}", other.transport.name(), other.transport.about());
        }
        println!(
            "their rate over raw reqwest's (median rounds), CPU per request, and round by round over raw reqwest's and over raw reqwest's with a client per test"
        );
        println!(
            "{:<14} {:<8} {:>10} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "scenario",
            "side",
            "req/s",
            "/raw",
            "CPU µs/req",
            "raw lo",
            "raw med",
            "raw hi",
            "that lo",
            "that med",
            "that hi"
        );
        for row in other_rows {
            println!("{row}");
        }
    }
    if interleaved_on && interleaved.iter().any(|m| !m.raw.is_empty()) {
        Interleaved::print(&interleaved);
    }
}
