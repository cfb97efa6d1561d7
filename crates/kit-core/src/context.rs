//! A run ([`KitRun`]) and the tests in it ([`KitExecutionContext`]).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::bus::{Bus, BusError, PendingFlush, test_end};
use crate::config::Configuration;
use crate::event::*;
use crate::host::{Extensions, Host};
use crate::redact::SecretRegistry;

/// One run of tests in this process: the host, the bus and the run id. Clones share one run.
#[derive(Clone)]
pub struct KitRun {
    inner: Arc<RunInner>,
}

struct RunInner {
    host: Host,
    bus: Bus,
    run_id: RunId,
    secrets: Arc<SecretRegistry>,
}

impl fmt::Debug for KitRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KitRun")
            .field("run_id", &self.inner.run_id)
            .finish_non_exhaustive()
    }
}

impl KitRun {
    /// A run of `host`'s tests, sending events into `bus`, remembering secrets in the
    /// process's [`SecretRegistry::global`].
    pub fn new(host: Host, bus: Bus, run_id: RunId) -> Self {
        Self::with_secrets(host, bus, run_id, Arc::clone(SecretRegistry::global()))
    }

    /// A run that remembers secrets in `secrets` (the archive writer stores their
    /// fingerprints; sanitizers redact them by value).
    pub fn with_secrets(host: Host, bus: Bus, run_id: RunId, secrets: Arc<SecretRegistry>) -> Self {
        KitRun {
            inner: Arc::new(RunInner {
                host,
                bus,
                run_id,
                secrets,
            }),
        }
    }

    /// The secrets this run has met.
    pub fn secrets(&self) -> &Arc<SecretRegistry> {
        &self.inner.secrets
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// The bus.
    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    /// The run id.
    pub fn run_id(&self) -> &RunId {
        &self.inner.run_id
    }

    /// Starts a test: sends its [`TestStarted`] event and returns its context. The caller ends
    /// it with [`KitExecutionContext::finish`].
    ///
    /// ```
    /// use kit_core::*;
    ///
    /// let recording = RecordingCollector::new();
    /// let bus = Bus::builder().collector(recording.clone()).start();
    /// let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
    /// let run = KitRun::new(host, bus, RunId::new("doc").unwrap());
    ///
    /// let ctx = run.begin_test(TestStarted::new("adds_two"));
    /// ctx.observe(None, Observation::new("note", Attributes::new().with("n", 2)));
    /// ctx.finish(TestOutcome::Passed).unwrap();
    ///
    /// assert_eq!(recording.tree(ctx.test_id()), "test\n  note\n");
    /// ```
    pub fn begin_test(&self, info: TestStarted) -> KitExecutionContext {
        let test_id = TestId::generate();
        let root = EventId::generate();
        let ctx = KitExecutionContext {
            inner: Arc::new(TestScope {
                run: self.clone(),
                run_id: self.inner.run_id.unshared(),
                test_id,
                root,
                started: Instant::now(),
                state: Mutex::new(EmitState::default()),
                extensions: Mutex::new(Extensions::new()),
                info,
            }),
        };
        let info = ctx.inner.info.clone();
        ctx.send(root, None, EventKind::TestStarted(info));
        ctx
    }
}

#[derive(Default)]
struct EmitState {
    next_sequence: u64,
    /// Events the bus refused (it was shut down).
    lost: u64,
    /// Events sent after the test finished, which were not delivered.
    late: u64,
    finished: bool,
}

struct TestScope {
    run: KitRun,
    /// The run's id, with a reference count of this test's own (see [`RunId::unshared`]).
    run_id: RunId,
    test_id: TestId,
    root: EventId,
    info: TestStarted,
    started: Instant,
    state: Mutex<EmitState>,
    extensions: Mutex<Extensions>,
}

/// The running test, as test code and the kit's clients see it. Clones share one test.
///
/// It numbers the test's events: whatever task or thread sends them, events of one test reach
/// the collectors in the order of their sequence numbers.
#[derive(Clone)]
pub struct KitExecutionContext {
    inner: Arc<TestScope>,
}

impl fmt::Debug for KitExecutionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KitExecutionContext")
            .field("test", &self.inner.info.name)
            .field("test_id", &self.inner.test_id)
            .field("run_id", self.run_id())
            .field("application", &self.inner.info.application)
            .finish_non_exhaustive()
    }
}

impl KitExecutionContext {
    /// The test's name, as the test runner shows it.
    pub fn test_name(&self) -> &str {
        &self.inner.info.name
    }

    /// The run id.
    pub fn run_id(&self) -> &RunId {
        &self.inner.run_id
    }

    /// This test's id.
    pub fn test_id(&self) -> TestId {
        self.inner.test_id
    }

    /// The id of the test's [`TestStarted`] event: the parent of its top-level events.
    pub fn root_id(&self) -> EventId {
        self.inner.root
    }

    /// The application the test is bound to (`#[application("orders")]`).
    pub fn application(&self) -> Option<&str> {
        self.inner.info.application.as_deref()
    }

    /// The client binding (`#[application("orders", "Rest:payments")]` gives `Rest:payments`).
    pub fn client_binding(&self) -> Option<&str> {
        self.inner.info.client.as_deref()
    }

    /// The authentication kind of `#[auth(Kind)]` on the test or its module.
    pub fn auth_kind(&self) -> Option<&str> {
        self.inner.info.auth.as_deref()
    }

    /// The host.
    pub fn host(&self) -> &Host {
        self.inner.run.host()
    }

    /// The host's configuration.
    pub fn configuration(&self) -> &Configuration {
        self.inner.run.host().configuration()
    }

    /// The run this test belongs to.
    pub fn run(&self) -> &KitRun {
        &self.inner.run
    }

    /// Time since the test started.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Per-test state of protocol crates (clients, cookie jars, attachment counters), which
    /// no other test sees.
    pub fn with_extensions<R>(&self, f: impl FnOnce(&mut Extensions) -> R) -> R {
        let mut guard = self
            .inner
            .extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    fn state(&self) -> MutexGuard<'_, EmitState> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, id: EventId, parent: Option<EventId>, kind: EventKind) {
        // The lock is held across the send so that sequence order is delivery order even when
        // several tasks of one test emit at once. It is this test's lock only.
        let mut state = self.state();
        if state.finished {
            state.late += 1;
            return;
        }
        self.send_locked(&mut state, id, parent, kind);
    }

    /// Numbers and publishes an event, `state` locked.
    fn send_locked(&self, state: &mut EmitState, id: EventId, parent: Option<EventId>, kind: EventKind) {
        let event = Event {
            run_id: self.run_id().clone(),
            test_id: self.inner.test_id,
            id,
            parent_id: parent,
            sequence: state.next_sequence,
            timestamp: Timestamp::now(),
            kind,
        };
        state.next_sequence += 1;
        if self.inner.run.bus().publish(event).is_err() {
            state.lost += 1;
        }
    }

    /// Sends an event under `parent` (the test itself when `None`) and returns its id.
    pub fn emit(&self, parent: Option<EventId>, kind: EventKind) -> EventId {
        let id = EventId::generate();
        self.send(id, Some(parent.unwrap_or(self.inner.root)), kind);
        id
    }

    /// Records an observation under `parent` (the test itself when `None`).
    pub fn observe(&self, parent: Option<EventId>, observation: Observation) -> EventId {
        self.emit(parent, EventKind::Observation(observation))
    }

    /// Attaches a document under `parent` (the test itself when `None`).
    pub fn attach(&self, parent: Option<EventId>, attachment: Attachment) -> EventId {
        self.emit(parent, EventKind::Attachment(attachment))
    }

    /// Starts an operation under `parent` (the test itself when `None`). It ends when
    /// [`Operation::end`] is called or, failing that, when it is dropped.
    pub fn start_operation(&self, parent: Option<EventId>, operation: OperationStarted) -> Operation {
        let id = self.emit(parent, EventKind::OperationStarted(operation));
        Operation {
            ctx: self.clone(),
            id,
            started: Instant::now(),
            ended: false,
        }
    }

    /// Waits until every event of this test sent so far has been handled by every collector.
    pub fn flush(&self) -> Result<(), BusError> {
        self.inner.run.bus().flush()
    }

    /// Asks the collectors to flush, once they have handled every event of this test sent so
    /// far, within the bus's requested-flush delay and without waiting; see
    /// [`Bus::request_flush`]. The kit's runner calls it when a test starts, so the start
    /// reaches the archive while the test runs (or with its end, if that comes first) instead
    /// of before.
    pub fn request_flush(&self) -> Result<(), BusError> {
        self.inner.run.bus().request_flush()
    }

    /// Tells the bus that this test is about to finish, so that the dispatcher is awake when
    /// [`finish`](Self::finish) flushes; see [`Bus::expect_flush`]. The kit's runner calls it
    /// when the test's body returns, before it drops the test's runtime. Sends no event.
    pub fn expect_finish(&self) -> Result<(), BusError> {
        self.inner.run.bus().expect_flush()
    }

    /// Ends the test: sends [`TestFinished`] with `outcome` and flushes, so that the test's
    /// events are durable when this returns. Later events of the test are not delivered.
    /// Calling it twice sends nothing the second time. A test that runs as a task, among many
    /// on one runtime, can await [`finish_async`](Self::finish_async) instead.
    pub fn finish(&self, outcome: TestOutcome) -> Result<(), BusError> {
        let Some(lost) = self.send_end(outcome) else {
            return Ok(());
        };
        // Its own end, not the starts of the tests around it: those commit at their due time
        // or with their ends (see `Bus::flush_ended`).
        test_end(self.inner.run.bus().flush_ended(), lost)
    }

    /// [`finish`](Self::finish) for a task: sends the end at once, and the returned future
    /// resolves once the test's events are durable, without blocking a thread meanwhile (see
    /// [`Bus::flush_ended_async`]). For tests run as tasks of one runtime, many at once, whose
    /// ends would otherwise each block one of its threads or take a trip to a blocking pool.
    /// Dropping the future leaves the end sent and the flush asked for; only the wait is
    /// given up.
    ///
    /// ```
    /// use kit_core::*;
    ///
    /// let recording = RecordingCollector::new();
    /// let bus = Bus::builder().collector(recording.clone()).start();
    /// let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
    /// let run = KitRun::new(host, bus, RunId::new("doc").unwrap());
    ///
    /// let ctx = run.begin_test(TestStarted::new("awaits_its_end"));
    /// futures_executor::block_on(ctx.finish_async(TestOutcome::Passed)).unwrap();
    /// // Durable, as after `finish`: the collector has the test's start and end.
    /// assert_eq!(recording.tree(ctx.test_id()), "test\n");
    /// ```
    pub fn finish_async(&self, outcome: TestOutcome) -> PendingFlush {
        match self.send_end(outcome) {
            Some(lost) => self.inner.run.bus().flush_ended_async().losing(lost),
            None => PendingFlush::done(Ok(())),
        }
    }

    /// Sends [`TestFinished`] once, and says how many events the test lost before it; `None`
    /// when the test had already ended.
    fn send_end(&self, outcome: TestOutcome) -> Option<u64> {
        let duration = self.elapsed();
        // One critical section from the check to `finished`: of two tasks finishing the test
        // at once, one records the end and the other returns.
        let mut state = self.state();
        if state.finished {
            return None;
        }
        self.send_locked(
            &mut state,
            EventId::generate(),
            Some(self.inner.root),
            EventKind::TestFinished(TestFinished { outcome, duration }),
        );
        state.finished = true;
        Some(state.lost)
    }

    /// Events sent after [`finish`](Self::finish), which were not delivered.
    pub fn late_events(&self) -> u64 {
        self.state().late
    }
}

/// A running operation (a span). Ends with [`end`](Operation::end); if dropped first (a
/// cancelled future, a panic), it ends with an error saying so.
#[must_use = "an operation ends when dropped; keep it until the work it describes is done"]
pub struct Operation {
    ctx: KitExecutionContext,
    id: EventId,
    started: Instant,
    ended: bool,
}

impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Operation {
    /// The id of the operation's start event: the parent of its children.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The test the operation belongs to.
    pub fn context(&self) -> &KitExecutionContext {
        &self.ctx
    }

    /// Time since the operation started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Records an observation under this operation.
    pub fn observe(&self, observation: Observation) -> EventId {
        self.ctx.observe(Some(self.id), observation)
    }

    /// Ends the operation.
    pub fn end(mut self, status: OperationStatus, attributes: Attributes) {
        self.finish(status, attributes);
    }

    fn finish(&mut self, status: OperationStatus, attributes: Attributes) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let ended = OperationEnded::new(self.id, status, self.started.elapsed()).with_attributes(attributes);
        self.ctx.emit(Some(self.id), EventKind::OperationEnded(ended));
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        // Most operations were ended: do not build a message that `finish` would throw away.
        if self.ended {
            return;
        }
        let message = if std::thread::panicking() {
            "the test panicked before the operation ended"
        } else {
            "the operation was dropped before it ended (its future was cancelled?)"
        };
        self.finish(
            OperationStatus::Error {
                message: message.to_owned(),
            },
            Attributes::new(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::RecordingCollector;
    use crate::host::KitBuilder;

    fn run() -> (KitRun, RecordingCollector) {
        let recording = RecordingCollector::new();
        let bus = Bus::builder().collector(recording.clone()).start();
        let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
        (KitRun::new(host, bus, RunId::new("t").unwrap()), recording)
    }

    #[test]
    fn a_test_is_a_tree_numbered_without_gaps() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t").with_application(Some("orders".into())));
        let op = ctx.start_operation(None, OperationStarted::new("http.request", "REST · GET /"));
        op.observe(Observation::new("http.response", Attributes::new()));
        let child = ctx.start_operation(
            Some(op.id()),
            OperationStarted::new("assert.http.status", "status"),
        );
        child.end(OperationStatus::Ok, Attributes::new());
        op.end(OperationStatus::Ok, Attributes::new());
        ctx.finish(TestOutcome::Passed).unwrap();

        let events = recording.events_of(ctx.test_id());
        assert_eq!(
            events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
            (0..events.len() as u64).collect::<Vec<_>>()
        );
        assert!(matches!(events[0].kind, EventKind::TestStarted(_)));
        assert_eq!(events[0].parent_id, None);
        assert!(matches!(events.last().unwrap().kind, EventKind::TestFinished(_)));
        assert_eq!(
            recording.tree(ctx.test_id()),
            "test\n  http.request\n    http.response\n    assert.http.status\n"
        );
    }

    /// The runner announces a test's end before it drops the test's runtime, whose drop may
    /// end operations the test left running: their ends still come before the test's, and
    /// none is lost.
    #[test]
    fn an_operation_ended_after_the_end_is_announced_comes_before_the_end() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        let op = ctx.start_operation(None, OperationStarted::new("http.request", "x"));
        ctx.expect_finish().unwrap();
        drop(op);
        ctx.finish(TestOutcome::Passed).unwrap();
        let kinds: Vec<&str> = recording
            .events_of(ctx.test_id())
            .iter()
            .map(|e| match e.kind {
                EventKind::TestStarted(_) => "started",
                EventKind::OperationStarted(_) => "operation",
                EventKind::OperationEnded(_) => "operation ended",
                EventKind::TestFinished(_) => "finished",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["started", "operation", "operation ended", "finished"]);
        assert_eq!(ctx.late_events(), 0);
    }

    #[test]
    fn a_dropped_operation_ends_with_an_error() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        let op = ctx.start_operation(None, OperationStarted::new("http.request", "x"));
        let id = op.id();
        drop(op);
        ctx.finish(TestOutcome::Passed).unwrap();
        let ended = recording
            .events()
            .into_iter()
            .find_map(|e| match e.kind {
                EventKind::OperationEnded(end) => Some(end),
                _ => None,
            })
            .unwrap();
        assert_eq!(ended.operation, id);
        assert!(
            matches!(&ended.status, OperationStatus::Error { message } if message.contains("dropped before it ended")),
            "{:?}",
            ended.status
        );
        // One that was ended is not ended again when dropped.
        let ended_count = |events: &[Event]| {
            events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::OperationEnded(_)))
                .count()
        };
        let ctx = run.begin_test(TestStarted::new("u"));
        let op = ctx.start_operation(None, OperationStarted::new("http.request", "y"));
        op.end(OperationStatus::Ok, Attributes::new());
        ctx.finish(TestOutcome::Passed).unwrap();
        assert_eq!(ended_count(&recording.events_of(ctx.test_id())), 1);
    }

    #[test]
    fn events_after_finish_are_counted_not_delivered() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        ctx.finish(TestOutcome::Passed).unwrap();
        ctx.observe(None, Observation::new("late", Attributes::new()));
        ctx.attach(None, Attachment::new("late", "text/plain", b"x".to_vec()));
        ctx.finish(TestOutcome::Failed {
            message: "again".into(),
        })
        .unwrap();
        ctx.flush().unwrap();
        assert_eq!(recording.len(), 2);
        assert_eq!(ctx.late_events(), 2);
    }

    /// Events a test sends after the bus shut down are lost, and its end says how many.
    #[test]
    fn a_test_on_a_shut_bus_reports_how_many_events_it_lost() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        run.bus().shutdown().unwrap();
        ctx.observe(None, Observation::new("lost", Attributes::new()));
        ctx.observe(None, Observation::new("lost too", Attributes::new()));
        match ctx.finish(TestOutcome::Passed) {
            // Two observations and the end.
            Err(BusError::Closed { lost }) => assert_eq!(lost, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(recording.len(), 1, "only the start was delivered");
    }

    /// An awaited end is the blocking one's: sent once, durable when it resolves, and on a
    /// shut bus it reports how many events the test lost.
    #[test]
    fn an_awaited_finish_ends_the_test_once_and_reports_what_it_lost() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        ctx.observe(None, Observation::new("note", Attributes::new()));
        let ending = ctx.finish_async(TestOutcome::Passed);
        // Sent before the future is polled: given up, it still ends the test.
        drop(ending);
        futures_executor::block_on(ctx.finish_async(TestOutcome::Failed {
            message: "again".into(),
        }))
        .unwrap();
        ctx.flush().unwrap();
        let events = recording.events_of(ctx.test_id());
        assert_eq!(events.len(), 3);
        assert!(matches!(
            &events[2].kind,
            EventKind::TestFinished(TestFinished {
                outcome: TestOutcome::Passed,
                ..
            })
        ));

        let ctx = run.begin_test(TestStarted::new("u"));
        futures_executor::block_on(ctx.finish_async(TestOutcome::Passed)).unwrap();
        assert_eq!(recording.events_of(ctx.test_id()).len(), 2, "durable on return");

        let ctx = run.begin_test(TestStarted::new("v"));
        run.bus().shutdown().unwrap();
        ctx.observe(None, Observation::new("lost", Attributes::new()));
        match futures_executor::block_on(ctx.finish_async(TestOutcome::Passed)) {
            // The observation and the end.
            Err(BusError::Closed { lost }) => assert_eq!(lost, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_operation_ended_explicitly_ends_once_with_its_own_status() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        let op = ctx.start_operation(None, OperationStarted::new("http.request", "x"));
        op.end(
            OperationStatus::Ok,
            Attributes::new().with("http.response.status_code", 200),
        );
        ctx.finish(TestOutcome::Passed).unwrap();
        let ends: Vec<OperationEnded> = recording
            .events()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::OperationEnded(end) => Some(end),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len(), 1, "{ends:?}");
        assert_eq!(ends[0].status, OperationStatus::Ok);
    }

    /// Two tasks of one test that finish it at once record one end between them.
    #[test]
    fn a_test_finished_from_two_threads_at_once_ends_once() {
        let (run, recording) = run();
        for _ in 0..300 {
            let ctx = run.begin_test(TestStarted::new("t"));
            let together = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                for outcome in [
                    TestOutcome::Passed,
                    TestOutcome::Failed {
                        message: "the other task".into(),
                    },
                ] {
                    let (ctx, together) = (ctx.clone(), &together);
                    s.spawn(move || {
                        together.wait();
                        ctx.finish(outcome).unwrap();
                    });
                }
            });
            let ends = recording
                .events_of(ctx.test_id())
                .iter()
                .filter(|e| matches!(e.kind, EventKind::TestFinished(_)))
                .count();
            assert_eq!(ends, 1);
        }
    }

    #[test]
    fn concurrent_emitters_of_one_test_deliver_in_sequence_order() {
        let (run, recording) = run();
        let ctx = run.begin_test(TestStarted::new("t"));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let ctx = ctx.clone();
                s.spawn(move || {
                    for _ in 0..2000 {
                        ctx.observe(None, Observation::new("x", Attributes::new()));
                    }
                });
            }
        });
        ctx.finish(TestOutcome::Passed).unwrap();
        let seqs: Vec<u64> = recording
            .events_of(ctx.test_id())
            .iter()
            .map(|e| e.sequence)
            .collect();
        assert_eq!(seqs, (0..8002).collect::<Vec<_>>());
    }
}
