//! The event bus: bounded, lossless, one dispatcher thread fanning out to every collector.
//!
//! Producers (tests) [`publish`](Bus::publish) events into a crossbeam channel that the bus
//! bounds. When it holds its capacity the producer waits until the dispatcher catches up: a slow
//! collector slows the tests down, it never loses an event. One dispatcher thread hands each
//! event, by reference, to every collector in registration order.
//!
//! The channel is crossbeam's unbounded one, which takes memory in blocks as messages come,
//! with the bound kept by the producers: crossbeam's bounded channel writes every slot when it
//! is made, 512 KiB at the default capacity, and on a virtual machine where a page touched for
//! the first time costs microseconds that was some 300 µs of every bus's start, paid by every
//! test process under nextest.
//!
//! The dispatcher is not woken for every event: a futex wake per event cost a producer more than
//! the rest of its send, and on a two-core machine woke a thread that competed with the test and
//! its server for the CPU. While events are flowing it works in batches, napping 6.4 ms
//! between them, since on a virtual machine each wake-up costs tens of microseconds of CPU.
//! Producers wake it sooner only when the queue passes 256 events (or an eighth of a smaller
//! capacity), when it has gone to sleep for good after a quiet spell, or for a flush,
//! its announcement, a registration or shutdown.
//!
//! A test's end can be announced ([`Bus::expect_flush`]): the dispatcher wakes then and stays
//! awake, yielding its core, until the flush comes, so that the flush does not wait for it to
//! wake. Only the announcement costs a futex wake, once a test.
//!
//! The dispatcher also runs a few nice steps below the thread that started the bus (Linux; see
//! [`BusBuilder::dispatcher_niceness`]), so that a test's client or its server, woken while the
//! dispatcher holds a core, waits less often behind it.
//!
//! [`flush`](Bus::flush) is a handshake: it puts a marker in the channel behind everything the
//! caller sent, and returns once the dispatcher has reached the marker and every collector has
//! returned from [`Collector::flush`]. A test flushes before it returns, which is what makes its
//! events durable in the archive before the next test (or a `kill -9`) comes.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, bounded, unbounded};

use crate::collector::{Collector, CollectorError};
use crate::event::{AttachmentContent, AttributeValue, Attributes, Event, EventKind};
use crate::panic::panic_message;

mod answer;
pub use answer::PendingFlush;
pub(crate) use answer::test_end;
use answer::{Deadlines, Reply};

/// The bus failed to deliver or to complete a flush.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The dispatcher is gone (the bus was shut down); the event or flush was not delivered.
    #[error("the event bus is shut down; {lost} event(s) could not be delivered")]
    Closed {
        /// How many events this call could not deliver.
        lost: u64,
    },
    /// A flush did not complete in time: some collector is stuck.
    #[error("the event bus did not finish flushing within {0:?}; a collector is stuck")]
    FlushTimedOut(Duration),
    /// One or more collectors failed since the previous flush.
    #[error("{}", join_errors(.0))]
    Collectors(Vec<CollectorError>),
}

impl BusError {
    /// The same error again, for a flush's answer read twice.
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            BusError::Closed { lost } => BusError::Closed { lost: *lost },
            BusError::FlushTimedOut(timeout) => BusError::FlushTimedOut(*timeout),
            BusError::Collectors(errors) => {
                BusError::Collectors(errors.iter().map(CollectorError::duplicate).collect())
            }
        }
    }
}

fn join_errors(errors: &[CollectorError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Counters of a bus, for benchmarks and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Events accepted by [`Bus::publish`].
    pub published: u64,
    /// Events the dispatcher handed to the collectors. The dispatcher counts them in steps of
    /// up to 64 while events flow, and brings the count up to date whenever it finds the queue
    /// empty and before it answers a flush: after [`Bus::flush`] it holds every event the
    /// flushing thread published.
    pub dispatched: u64,
    /// Flushes announced by [`Bus::expect_flush`] that the dispatcher has taken up: one a test
    /// run by `#[kit::test]`, whose runner announces each test's end.
    pub announced: u64,
}

/// How long the dispatcher naps when it finds the queue empty while events are flowing: the
/// longest an event waits before collectors see it, unless something wakes the dispatcher
/// sooner. A test's end does: the runner announces it ([`Bus::expect_flush`]) and its flush
/// follows, so the dispatcher works off what the test queued while the test's runtime drops,
/// and no test's end waits for a nap. So do a producer that finds [`WAKE_AT_MOST`] events
/// queued, a requested flush falling due, a registration and a shutdown.
///
/// It was 100 µs while events came densely (more than one in 50 µs), so that a test's end,
/// which waits for everything queued before it, found few events queued; longer, up to this,
/// while they came sparsely. On this kind of virtual machine a timer wake-up costs the
/// dispatcher some 25 µs of CPU, on the core a test's server runs on, and a sequential request
/// paid about one: with no collectors (`kit-rest`'s `vs_reqwest` bench, `bare`) the
/// dispatcher spent 29–42 µs of CPU a request, 2.4–8.2 with this nap, and kit/raw rose from
/// 0.72–0.73 to 0.75–0.82. With everything on, by turns with the 100 µs build (issue 9's
/// sixty-sixth stop): tests of one request through the runner 0.72–0.75 of raw reqwest against
/// 0.70–0.72 (four pairs), the dispatcher's CPU a test 96–111 µs against 131–154; tests of ten
/// 0.72–0.74 against 0.68–0.72 sequentially, though their ends, not announced there, waited
/// longer; level at 32 in flight.
const NAP: Duration = Duration::from_micros(6_400);

/// The most events queued before a producer wakes the napping dispatcher (with the default
/// capacity; an eighth of a smaller one): what a test's end may find queued, at some 2 µs an
/// event with the archive and the collectors on, when its test did not announce it. A wake-up
/// a few hundred events costs little.
const WAKE_AT_MOST: usize = 256;

/// Quiet after which the dispatcher sleeps until a producer wakes it, so an idle process does
/// not tick.
const QUIET_BEFORE_SLEEP: Duration = Duration::from_millis(20);

/// The most messages already queued behind a flush someone waits for that join it (see
/// `dispatch`): enough to gather the flushes of tests ending together, few enough that the
/// first of them waits well under a millisecond more.
const GROUP_LIMIT: usize = 256;

/// How many delivered events a thread's spent queue holds for its producer to reuse (see
/// [`Spent`]); the dispatcher drops what does not fit. Both the reserve and the bound: a
/// producer takes one box back a publish and never trims the queue below this. It did, at 256:
/// the events a thread has in the bus swing by hundreds between the dispatcher's naps and
/// commits, so its queue crossed 256 on the way up (a producer dropped an extra event, about
/// 400 ns) and ran dry on the way down (a producer allocated a new box), over and over; a
/// tenth of the bus bench's sends dropped one, and those were its slowest percent (issue 9's
/// forty-seventh stop). What a queue keeps stays bounded by [`KEPT_EVENT_BYTES`] an event.
const SPENT_CAPACITY: usize = 1024;

/// How long a requested flush may wait for a flush someone waits for (default): a test that
/// ends within this of its start is committed once, start and end together.
const REQUESTED_FLUSH_DELAY: Duration = Duration::from_millis(50);

/// How far below the thread that starts the bus the dispatcher sets its own priority
/// (default). On two cores a test's client and its server hand each request back and forth
/// across the cores, and at their priority the server's thread often waited, woken, behind the
/// dispatcher: sequentially the kit ran at about 0.60 of raw reqwest's rate, and at about 0.64
/// with the dispatcher five steps lower, ahead in eight pairs by turns out of eight; at 32 in
/// flight, with both cores busy, level (issue 9's sixty-second stop, interleaved). Ten, 19 and
/// `SCHED_IDLE` did no better. Five leaves the dispatcher a third of a busy test thread's
/// weight, not a tenth: a test's end waits for it.
pub const DISPATCHER_NICENESS: u8 = 5;

enum Message {
    /// Boxed, so that the queue moves a pointer: an event is 192 bytes, and copying it into
    /// the queue, out of it, into the spent queue and out again was a tenth of the
    /// dispatcher's time in the bus bench (its `memcpy`), and left a producer's slot
    /// half-written long enough for the dispatcher to spin on it. Boxes go round: a producer
    /// reuses one the dispatcher is done with (see [`Bus::publish`]).
    /// With the producing thread's [`origin`], whose spent queue the box goes back to.
    Event(Box<Event>, u8),
    /// A requested flush came due (made by the dispatcher itself, never sent).
    FlushDue,
    /// Flush the collectors; reply with the errors since the previous flush, or keep them for
    /// the next one when nobody waits.
    Flush(Option<Sender<Vec<CollectorError>>>),
    /// Flush what ended tests sent (`Collector::flush_ended`), and reply.
    FlushEnded(Reply),
    Register(Box<dyn Collector>),
    Shutdown(Sender<Vec<CollectorError>>),
    /// A flush is coming soon: stay awake for it (see [`Bus::expect_flush`]).
    Expect,
}

/// Builds a [`Bus`].
#[must_use]
pub struct BusBuilder {
    capacity: usize,
    flush_timeout: Duration,
    requested_flush_delay: Duration,
    /// How long the dispatcher naps on an empty queue before it sleeps (see [`Quiet`]).
    quiet_before_sleep: Duration,
    /// Each nap of the dispatcher's ([`NAP`]).
    nap: Duration,
    dispatcher_niceness: u8,
    collectors: Vec<Box<dyn Collector>>,
}

impl Default for BusBuilder {
    fn default() -> Self {
        BusBuilder {
            capacity: 16 * 1024,
            flush_timeout: Duration::from_secs(120),
            requested_flush_delay: REQUESTED_FLUSH_DELAY,
            quiet_before_sleep: QUIET_BEFORE_SLEEP,
            nap: NAP,
            dispatcher_niceness: DISPATCHER_NICENESS,
            collectors: Vec::new(),
        }
    }
}

impl BusBuilder {
    /// How many messages the queue holds before a producer waits for room (default 16 384).
    /// Producers that publish at the same moment may each add one past it. The queue takes
    /// its memory as messages come, not up front.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// How long [`Bus::flush`] waits before giving up with [`BusError::FlushTimedOut`]
    /// (default two minutes: long enough for a slow disk, short enough that a stuck
    /// collector fails the run instead of hanging it).
    pub fn flush_timeout(mut self, timeout: Duration) -> Self {
        self.flush_timeout = timeout;
        self
    }

    /// How long after [`Bus::request_flush`] the collectors are flushed at the latest (default
    /// 50 ms). A flush that comes sooner, one someone waits for, covers the request: a test
    /// that ends within this of its start is committed once instead of twice, while one that
    /// runs longer (or hangs until it is killed) is in the archive as started 50 ms in.
    pub fn requested_flush_delay(mut self, delay: Duration) -> Self {
        self.requested_flush_delay = delay;
        self
    }

    /// Keeps the dispatcher from sleeping, and so from dropping the spent queues' boxes, for
    /// `quiet` after its queue empties. Tests that count the boxes in a spent queue take an
    /// hour, so that a test thread held off its core past the default 20 ms between its flush
    /// and its count does not find the queue emptied.
    #[cfg(test)]
    fn quiet_before_sleep(mut self, quiet: Duration) -> Self {
        self.quiet_before_sleep = quiet;
        self
    }

    /// Makes each of the dispatcher's naps `nap` long: tests of what wakes it take an hour.
    #[cfg(test)]
    fn nap(mut self, nap: Duration) -> Self {
        self.nap = nap;
        self
    }

    /// How far the dispatcher thread lowers its own priority below that of the thread that
    /// calls [`start`](Self::start), in nice steps (default [`DISPATCHER_NICENESS`]; 0 leaves
    /// it level; the sum stops at 19, the lowest). Linux only, where each thread has its own
    /// nice value; elsewhere, and where the system refuses, the dispatcher runs as it is.
    ///
    /// ```
    /// use kit_core::Bus;
    ///
    /// let bus = Bus::builder().dispatcher_niceness(0).start();
    /// # drop(bus);
    /// ```
    pub fn dispatcher_niceness(mut self, niceness: u8) -> Self {
        self.dispatcher_niceness = niceness;
        self
    }

    /// Adds a collector; collectors see events in the order they were added.
    pub fn collector(mut self, collector: impl Collector) -> Self {
        self.collectors.push(Box::new(collector));
        self
    }

    /// Adds boxed collectors.
    pub fn collectors(mut self, collectors: impl IntoIterator<Item = Box<dyn Collector>>) -> Self {
        self.collectors.extend(collectors);
        self
    }

    /// Starts the dispatcher thread and returns the bus.
    pub fn start(self) -> Bus {
        let (tx, rx) = unbounded();
        let spent = Arc::new(Spent::default());
        let dispatcher_spent = Arc::clone(&spent);
        let stats = Arc::new(Counters::default());
        let dispatcher_stats = Arc::clone(&stats);
        let wake = Arc::new(Wake::default());
        let dispatcher_wake = Arc::clone(&wake);
        let slots = self.collectors.into_iter().map(Slot::new).collect();
        let niceness = self.dispatcher_niceness;
        let starter = own_niceness();
        let spawned = thread::Builder::new().name("kit-bus".into()).spawn(move || {
            lower_own_priority(starter, niceness);
            let dispatcher = Dispatcher {
                rx,
                spent: &dispatcher_spent,
                slots,
                errors: Vec::new(),
                due: None,
                held: None,
                requested_flush_delay: self.requested_flush_delay,
                awake_until: None,
                counted: DispatchedCount::new(&dispatcher_stats, self.capacity),
            };
            let quiet = Quiet::new(self.quiet_before_sleep, self.nap);
            dispatch(dispatcher, &dispatcher_wake, quiet);
        });
        // If the thread cannot be spawned the receiver is dropped with the closure, so every
        // publish reports `Closed` instead of blocking forever.
        if let Ok(handle) = spawned {
            let _ = wake.thread.set(handle.thread().clone());
        }
        Bus {
            inner: Arc::new(Inner {
                capacity: self.capacity,
                nudge_at: (self.capacity / 8).clamp(1, WAKE_AT_MOST),
                tx,
                spent,
                stats,
                flush_timeout: self.flush_timeout,
                deadlines: Arc::new(Deadlines::new(self.flush_timeout)),
                wake: WakeOnDrop(wake),
            }),
        }
    }
}

/// The calling thread's nice value, where threads have their own (Linux); `None` elsewhere or
/// when the system does not say.
fn own_niceness() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Sets the calling thread's nice value `by` steps past `starter`'s (see
/// [`BusBuilder::dispatcher_niceness`]). Relative, so that a suite run under `nice` keeps its
/// dispatcher below its tests all the same. A refusal is ignored: the priority is a
/// preference, and the dispatcher works at any.
fn lower_own_priority(starter: Option<i32>, by: u8) {
    #[cfg(target_os = "linux")]
    if let Some(starter) = starter
        && by > 0
    {
        let tid = rustix::thread::gettid();
        let _ = rustix::process::setpriority_process(Some(tid), (starter + i32::from(by)).min(19));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (starter, by);
}

/// Producers count `published` and the dispatcher `dispatched`, each on a line of its own:
/// on one, every event moved that line between the cores twice. `announced` moves once a
/// test, so it shares the dispatcher's line. A producer reads `dispatched` to tell how many
/// events are queued ahead of its own (its `published` ticket less `dispatched`). Reading the
/// queue's length instead read the channel's head, which the dispatcher writes at every
/// event, so the head's line too crossed between the cores at every event. So the dispatcher
/// adds to `dispatched` in steps ([`DispatchedCount`]), and whenever it finds the
/// queue empty or answers a flush, when the count is exact. Both together gave the bus
/// bench's archive row about a tenth more events a second (the eightieth stop).
#[derive(Default)]
struct Counters {
    published: OwnLine<AtomicU64>,
    dispatched: OwnLine<DispatcherCounts>,
}

/// What the dispatcher counts.
#[derive(Default)]
struct DispatcherCounts {
    events: AtomicU64,
    announced: AtomicU64,
}

/// A value alone on its cache line (two 64-byte lines: x86's adjacent-line prefetch pairs
/// them, as crossbeam's `CachePadded` assumes).
#[derive(Default)]
#[repr(align(128))]
struct OwnLine<T>(T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// How producers wake the dispatcher.
#[derive(Default)]
struct Wake {
    thread: OnceLock<Thread>,
    /// Set while the dispatcher sleeps without a timeout: the next producer must wake it.
    sleeping: AtomicBool,
    /// Set once the dispatcher has dropped its receiver and sent its last answer. A flush sent
    /// just before that drop is never answered (the receiver's drop discards what the channel
    /// holds), so a waiter that sees this flag stops waiting.
    closed: AtomicBool,
}

impl Wake {
    fn unpark(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }
}

struct Inner {
    tx: Sender<Message>,
    /// Events every collector has handled, for producers to reuse and drop (see [`Spent`]).
    spent: Arc<Spent>,
    stats: Arc<Counters>,
    /// Queue length at which a producer waits for room.
    capacity: usize,
    /// Queue length at which a producer wakes a napping dispatcher.
    nudge_at: usize,
    flush_timeout: Duration,
    /// Times out the flushes tasks await.
    deadlines: Arc<Deadlines>,
    /// Declared after `tx`, so it is dropped after it: the last handle's drop disconnects the
    /// channel, then wakes a sleeping dispatcher to see it, finish its collectors and end.
    wake: WakeOnDrop,
}

/// How producers wake the dispatcher; wakes it once more when dropped.
struct WakeOnDrop(Arc<Wake>);

impl std::ops::Deref for WakeOnDrop {
    type Target = Wake;

    fn deref(&self) -> &Wake {
        &self.0
    }
}

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.0.unpark();
    }
}

/// Where the dispatcher puts delivered events, a queue for each [`origin`], and takes them back
/// to drop them itself before it sleeps.
///
/// An event's memory was allocated by the thread that made it; freed on the dispatcher's
/// thread, glibc's allocator took the producer's arena lock for nearly every block, and the two
/// threads queued on that lock (a tenth of the dispatcher's time, a twelfth of the producer's,
/// with 32 tests running). Freed by its producer, when it reuses the box, the blocks go back to
/// that thread's own cache.
///
/// One queue for every producer made each producer drop and reuse the events of others: in the
/// bus bench's archive row, eight threads fought over its ends and every box came from memory
/// another core had written, and a send's median was 510 ns; a queue for each thread halved
/// it. A queue is made at its thread's first event, so a process with one test thread (under
/// nextest) pays for one, and a thread that ends leaves its queue to the next (see
/// [`Origins`]).
struct Spent {
    queues: [OnceLock<SpentQueue>; ORIGINS],
}

impl Default for Spent {
    fn default() -> Self {
        Spent {
            queues: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

struct SpentQueue {
    tx: Sender<Box<Event>>,
    rx: Receiver<Box<Event>>,
}

impl Spent {
    /// The queue of `origin`, made at its first use.
    fn of(&self, origin: u8) -> &SpentQueue {
        self.queues[usize::from(origin)].get_or_init(|| {
            let (tx, rx) = bounded(SPENT_CAPACITY);
            SpentQueue { tx, rx }
        })
    }

    /// Puts a delivered event back in its origin's queue, or drops it when that is full or
    /// the event is heavy (see [`KEPT_EVENT_BYTES`]).
    fn give_back(&self, event: Box<Event>, origin: u8) {
        if is_heavy(&event) {
            return;
        }
        if let Some(queue) = self.queues.get(usize::from(origin)).and_then(OnceLock::get) {
            let _ = queue.tx.try_send(event);
        }
    }

    /// Drops every event waiting in any queue.
    fn drain(&self) {
        for queue in self.queues.iter().filter_map(OnceLock::get) {
            while queue.rx.try_recv().is_ok() {}
        }
    }
}

/// The most spent queues a bus has: one for each producing thread alive at once, up to this
/// many, and threads past it share. Sixteen producers sharing eight queues, two to a queue, made
/// 1.32–1.36 M events/s in the bus bench's archive row against 1.55–1.57 M with a queue each
/// (p99 711–804 ns against 594–655); `cargo test` runs as many test threads as the machine has
/// cores.
const ORIGINS: usize = 64;

/// Hands out [`origin`]s. A thread takes a free one at its first event and gives it back when
/// it ends, so that threads that come and go (libtest runs each test on a new thread) take over
/// the queues of those gone instead of making more, and threads alive together have a queue
/// each, up to [`ORIGINS`]; past that they share, in turn.
struct Origins {
    /// Origins given back by threads that ended.
    free: Mutex<Vec<u8>>,
    /// Origins handed out so far, shared ones included.
    handed: AtomicUsize,
}

/// An origin held by a thread; `own` when no other thread holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Origin {
    index: u8,
    own: bool,
}

impl Origins {
    const fn new() -> Self {
        Origins {
            free: Mutex::new(Vec::new()),
            handed: AtomicUsize::new(0),
        }
    }

    fn take(&self) -> Origin {
        // A panic cannot happen while the lock is held (a pop, a push), so a poisoned lock's
        // list is whole.
        if let Some(index) = self.free.lock().unwrap_or_else(PoisonError::into_inner).pop() {
            return Origin { index, own: true };
        }
        let n = self.handed.fetch_add(1, Ordering::Relaxed);
        Origin {
            index: (n % ORIGINS) as u8,
            own: n < ORIGINS,
        }
    }

    fn give_back(&self, origin: Origin) {
        if origin.own {
            self.free
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(origin.index);
        }
    }
}

static ORIGINS_HANDED: Origins = Origins::new();

/// A thread's origin, given back when the thread ends.
struct HeldOrigin(Origin);

impl Drop for HeldOrigin {
    fn drop(&mut self) {
        ORIGINS_HANDED.give_back(self.0);
    }
}

/// Bytes of content or text above which a delivered event is dropped by the dispatcher rather
/// than kept in a spent queue. A queue keeps up to [`SPENT_CAPACITY`] events, each with what it
/// holds, and each producing thread has one: 1 MiB responses captured on eight threads would
/// otherwise keep 8 GiB. At 4 KiB a queue keeps 4 MiB at most (32 MiB for eight threads
/// producing at once), and never more than its thread had in the bus at once: a queue grows
/// only by the boxes its thread made when it ran dry. A heavy event's blocks are large and
/// few, so freeing them on the dispatcher costs what the queues avoid (the producer's arena
/// lock) once a large event, not once a block of every event.
const KEPT_EVENT_BYTES: usize = 4 * 1024;

/// Whether `event` holds more than [`KEPT_EVENT_BYTES`] of content or attribute text.
fn is_heavy(event: &Event) -> bool {
    let attributes: &Attributes = match &event.kind {
        EventKind::Attachment(attachment) => {
            return matches!(&attachment.content,
                AttachmentContent::Inline(bytes) if bytes.len() > KEPT_EVENT_BYTES);
        }
        EventKind::OperationStarted(operation) => &operation.attributes,
        EventKind::OperationEnded(operation) => &operation.attributes,
        EventKind::Observation(observation) => &observation.attributes,
        _ => return false,
    };
    let mut bytes = 0;
    for (_, value) in attributes.iter() {
        bytes += match value {
            AttributeValue::Str(text) => text.len(),
            AttributeValue::StrList(texts) => texts.iter().map(String::len).sum(),
            _ => 0,
        };
        if bytes > KEPT_EVENT_BYTES {
            return true;
        }
    }
    false
}

/// The calling thread's spent queue (see [`Spent`] and [`Origins`]).
fn origin() -> u8 {
    thread_local! {
        static ORIGIN: HeldOrigin = HeldOrigin(ORIGINS_HANDED.take());
    }
    // After the thread's origin is given back (an event sent from another thread-local's
    // destructor), queue 0 will do.
    ORIGIN.try_with(|held| held.0.index).unwrap_or(0)
}

impl Inner {
    /// Wakes the dispatcher if it sleeps for good or the queue, `queued` long, is filling up.
    fn nudge(&self, queued: usize) {
        // Pairs with the dispatcher's fence between setting `sleeping` and its last look at
        // the queue: either it sees this event, or this load sees it asleep.
        fence(Ordering::SeqCst);
        if self.wake.sleeping.load(Ordering::Relaxed) || queued >= self.nudge_at {
            self.wake.unpark();
        }
    }

    /// Waits while the queue holds `capacity` messages or more, the dispatcher woken to empty
    /// it. Only a collector slower than the producers gets here, so a poll will do: a pause
    /// that doubles from 50 µs to 1 ms between looks. Returns the queue's length.
    fn wait_for_room(&self) -> usize {
        let mut pause = Duration::from_micros(50);
        loop {
            let queued = self.tx.len();
            // A closed bus's queue is empty (its receiver's drop discards what it holds), and
            // the send that follows reports it closed.
            if queued < self.capacity {
                return queued;
            }
            self.wake.unpark();
            thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    /// Sends a control message and wakes the dispatcher for it.
    fn send_now(&self, message: Message) -> Result<(), BusError> {
        let sent = self.send_control(message);
        self.wake.unpark();
        sent
    }

    /// Sends a control message, past the queue's bound: those are few, and a flush waits for
    /// its answer anyway.
    fn send_control(&self, message: Message) -> Result<(), BusError> {
        self.tx.send(message).map_err(|_| BusError::Closed { lost: 0 })
    }
}

/// A handle to the event bus; clones share one bus.
///
/// ```
/// use kit_core::{Bus, RecordingCollector};
///
/// let recording = RecordingCollector::new();
/// let bus = Bus::builder().collector(recording.clone()).start();
/// bus.flush().unwrap();
/// let stats = bus.shutdown().unwrap();
/// assert_eq!(stats.published, 0);
/// ```
#[derive(Clone)]
pub struct Bus {
    inner: Arc<Inner>,
}

impl Bus {
    /// A builder with the default capacity and flush timeout.
    pub fn builder() -> BusBuilder {
        BusBuilder::default()
    }

    /// Sends an event to every collector. Blocks while the bus is full; never drops.
    pub fn publish(&self, event: Event) -> Result<(), BusError> {
        // A box the dispatcher is done with carries this event: its old event is dropped here
        // (on a producer, as `Spent` explains), and nothing is allocated.
        let origin = origin();
        let spent = self.inner.spent.of(origin);
        let event = match spent.rx.try_recv() {
            Ok(mut spent) => {
                *spent = event;
                spent
            }
            Err(_) => Box::new(event),
        };
        // This event's ticket, less the events the dispatcher has counted, is at least how
        // many events are queued ahead of it (see `Counters`): under the capacity, there is
        // room without reading the queue. At it, the queue's own length decides.
        let stats = &self.inner.stats;
        let ticket = stats.published.fetch_add(1, Ordering::Relaxed);
        let ahead = ticket.saturating_sub(stats.dispatched.events.load(Ordering::Relaxed));
        let mut queued = usize::try_from(ahead).unwrap_or(usize::MAX);
        if queued >= self.inner.capacity {
            queued = self.inner.wait_for_room();
        }
        let sent = self.inner.tx.send(Message::Event(event, origin));
        // Only a closed bus refuses the send, and a nudge then wakes nothing that minds.
        self.inner.nudge(queued + 1);
        if sent.is_err() {
            stats.published.fetch_sub(1, Ordering::Relaxed);
            return Err(BusError::Closed { lost: 1 });
        }
        Ok(())
    }

    /// Adds a collector while the bus runs; it sees every event published after this call.
    pub fn register(&self, collector: impl Collector) -> Result<(), BusError> {
        self.inner.send_now(Message::Register(Box::new(collector)))
    }

    /// Waits until every collector has handled every event this thread published before the
    /// call, and has flushed. Reports collector failures seen since the previous flush.
    pub fn flush(&self) -> Result<(), BusError> {
        let (reply, answer) = bounded(1);
        self.inner.send_now(Message::Flush(Some(reply)))?;
        wait_for(&answer, self.inner.flush_timeout, &self.inner.wake.closed)
    }

    /// Waits until every collector has handled every event this thread published before the
    /// call, and has made durable what every test that has ended sent
    /// ([`Collector::flush_ended`]). Tests still running may be left for a later flush: a
    /// test's end waits for its own events, not to commit the starts of the tests around it.
    /// Reports collector failures seen since the previous flush.
    ///
    /// ```
    /// use kit_core::{Bus, RecordingCollector};
    ///
    /// let bus = Bus::builder().collector(RecordingCollector::new()).start();
    /// bus.flush_ended().unwrap();
    /// ```
    pub fn flush_ended(&self) -> Result<(), BusError> {
        let (reply, answer) = bounded(1);
        self.inner.send_now(Message::FlushEnded(Reply::Thread(reply)))?;
        wait_for(&answer, self.inner.flush_timeout, &self.inner.wake.closed)
    }

    /// [`flush_ended`](Self::flush_ended) for a task: the flush is asked for at once, and the
    /// returned future resolves with its answer, on any executor, without blocking a thread
    /// for it. For many tests in flight on one runtime, whose ends would otherwise each block
    /// a worker thread or take a trip to a blocking pool.
    ///
    /// ```
    /// use kit_core::{Bus, RecordingCollector};
    ///
    /// let bus = Bus::builder().collector(RecordingCollector::new()).start();
    /// let flushed = bus.flush_ended_async();
    /// futures_executor::block_on(flushed).unwrap();
    /// ```
    pub fn flush_ended_async(&self) -> PendingFlush {
        let (reply, pending) = self.inner.deadlines.pending();
        // Refused, the message and its reply are dropped here, and the reply answers that the
        // bus is closed.
        let _ = self.inner.send_now(Message::FlushEnded(Reply::Task(reply)));
        pending
    }

    /// Tells the dispatcher that a flush is coming soon: it wakes now, delivers what is
    /// queued, and stays awake, yielding its core, until a flush comes or for at most 300 µs,
    /// instead of napping. The flush then waits neither for queued events nor for a sleeping
    /// thread to wake (tens of microseconds on a virtual machine, where an idle core is slow
    /// to wake). The kit's runner calls it when a test's body returns, before it drops the
    /// test's runtime, so that the dispatcher wakes while the runtime drops. It pays only where
    /// such work lies between it and the flush: made right before the flush, it woke the
    /// dispatcher to run beside the test's last steps, and cost a test of ten requests some
    /// 2% in `kit-rest`'s `vs_reqwest` bench.
    ///
    /// ```
    /// use kit_core::{Bus, RecordingCollector};
    ///
    /// let bus = Bus::builder().collector(RecordingCollector::new()).start();
    /// bus.expect_flush().unwrap();
    /// bus.flush_ended().unwrap();
    /// // The flush's answer comes after the dispatcher took the announcement up.
    /// assert_eq!(bus.stats().announced, 1);
    /// ```
    pub fn expect_flush(&self) -> Result<(), BusError> {
        self.inner.send_now(Message::Expect)
    }

    /// Asks every collector to flush, after it has handled every event this thread published
    /// before the call, within [`BusBuilder::requested_flush_delay`] (50 ms by default) and
    /// without waiting for it. Failures are reported by the next [`flush`](Self::flush). A
    /// test start uses it: the start reaches the archive while the test runs, or with its end
    /// if the test is over sooner.
    pub fn request_flush(&self) -> Result<(), BusError> {
        let sent = self.inner.send_control(Message::Flush(None));
        // Nothing is due at once: a napping dispatcher sees the request within a nap, and only
        // one asleep for good needs waking (a futex call the test thread need not pay).
        self.inner.nudge(self.inner.tx.len());
        sent
    }

    /// Delivers everything still queued, calls [`Collector::finish`] on every collector and
    /// stops the dispatcher. Later publishes fail with [`BusError::Closed`].
    pub fn shutdown(&self) -> Result<BusStats, BusError> {
        let (reply, answer) = bounded(1);
        self.inner
            .tx
            .send(Message::Shutdown(reply))
            .map_err(|_| BusError::Closed { lost: 0 })?;
        self.inner.wake.unpark();
        wait_for(&answer, self.inner.flush_timeout, &self.inner.wake.closed)?;
        Ok(self.stats())
    }

    /// Counters of published and dispatched events.
    pub fn stats(&self) -> BusStats {
        BusStats {
            published: self.inner.stats.published.load(Ordering::Relaxed),
            dispatched: self.inner.stats.dispatched.events.load(Ordering::Relaxed),
            announced: self.inner.stats.dispatched.announced.load(Ordering::Relaxed),
        }
    }
}

/// How long a thread waiting for a flush yields before it sleeps. A test's end waits for its
/// commit, some 30–80 µs sequentially. A thread asleep in that wait ran again 16–30 µs after
/// the dispatcher answered (on this kind of virtual machine an idle core is slow to wake); a
/// thread yielding saw the answer within 2–6 µs, and a sequential test's end waited 61–64 µs
/// instead of 91–104 (timers added for the purpose, issue 9's ninth stop). A yield gives the
/// core to any thread with work, so a busy machine loses little (32 tests in flight: no
/// change beyond the noise). Longer waits, a slow collector's, still sleep.
const WAIT_YIELDING: Duration = Duration::from_micros(100);

/// How long the dispatcher stays awake for a flush [`Bus::expect_flush`] announced. A test's
/// runtime takes 45–65 µs to drop after its body returns (a test of one request, sequentially,
/// on this project's two-core virtual machine), and the flush of its end comes right after:
/// a few times that covers a slow drop, and bounds what an announcement no flush follows
/// costs the dispatcher's core (it yields, so a thread with work there goes first).
const EXPECT_AWAKE: Duration = Duration::from_micros(300);

/// How often a sleeping waiter looks whether the dispatcher has stopped for good.
const WAIT_CLOSED_CHECK: Duration = Duration::from_millis(10);

fn wait_for(
    answer: &Receiver<Vec<CollectorError>>,
    timeout: Duration,
    closed: &AtomicBool,
) -> Result<(), BusError> {
    let start = Instant::now();
    let yielding = WAIT_YIELDING.min(timeout);
    let answered = loop {
        match answer.try_recv() {
            Ok(errors) => break Ok(errors),
            Err(TryRecvError::Disconnected) => break Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) if start.elapsed() < yielding => thread::yield_now(),
            Err(TryRecvError::Empty) => {
                let left = timeout.saturating_sub(start.elapsed());
                match answer.recv_timeout(left.min(WAIT_CLOSED_CHECK)) {
                    Err(RecvTimeoutError::Timeout) if left > WAIT_CLOSED_CHECK => {
                        // Set after the dispatcher's last answer (`Shutdown`'s too): an answer
                        // not here now never comes.
                        if closed.load(Ordering::Acquire) {
                            break answer.try_recv().map_err(|_| RecvTimeoutError::Disconnected);
                        }
                    }
                    other => break other,
                }
            }
        }
    };
    match answered {
        Ok(errors) if errors.is_empty() => Ok(()),
        Ok(errors) => Err(BusError::Collectors(errors)),
        Err(RecvTimeoutError::Timeout) => Err(BusError::FlushTimedOut(timeout)),
        Err(RecvTimeoutError::Disconnected) => Err(BusError::Closed { lost: 0 }),
    }
}

struct Slot {
    collector: Box<dyn Collector>,
    name: String,
    /// Set once the collector panicked: it receives nothing more.
    dead: bool,
}

impl Slot {
    fn new(collector: Box<dyn Collector>) -> Self {
        let name = collector.name().into_owned();
        Slot {
            collector,
            name,
            dead: false,
        }
    }

    /// Runs one hook, turning a panic into an error and taking the collector off the bus.
    fn guarded(
        &mut self,
        errors: &mut Vec<CollectorError>,
        hook: impl FnOnce(&mut dyn Collector) -> Result<(), CollectorError>,
    ) {
        if self.dead {
            return;
        }
        match catch_unwind(AssertUnwindSafe(|| hook(&mut *self.collector))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(payload) => {
                self.dead = true;
                errors.push(CollectorError::new(
                    self.name.clone(),
                    format!(
                        "panicked: {}; it receives no further events",
                        panic_message(&*payload)
                    ),
                ));
            }
        }
    }
}

/// What the dispatcher counts for the producers: the events it has delivered, added to
/// `dispatched` in steps (see [`Counters`]), and the announcements it has taken up.
struct DispatchedCount<'a> {
    stats: &'a Counters,
    /// Events delivered and not yet added.
    uncounted: u64,
    /// How many events may go uncounted while the queue holds more: 64, or a quarter of a
    /// smaller capacity, so that a producer waiting at a small one is not held up.
    every: u64,
}

impl<'a> DispatchedCount<'a> {
    fn new(stats: &'a Counters, capacity: usize) -> Self {
        let every = u64::try_from(capacity / 4).unwrap_or(u64::MAX).clamp(1, 64);
        DispatchedCount {
            stats,
            uncounted: 0,
            every,
        }
    }

    /// One more event delivered; added with the others once there are `every` of them.
    fn one_more(&mut self) {
        self.uncounted += 1;
        if self.uncounted >= self.every {
            self.bring_up_to_date();
        }
    }

    /// One more announcement ([`Bus::expect_flush`]) taken up: one a test, so counted at once.
    fn announced(&self) {
        self.stats.dispatched.announced.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds every event delivered so far: the count is exact until the next one.
    fn bring_up_to_date(&mut self) {
        if self.uncounted > 0 {
            let uncounted = std::mem::take(&mut self.uncounted);
            self.stats
                .dispatched
                .events
                .fetch_add(uncounted, Ordering::Relaxed);
        }
    }
}

/// The next message: at once if one is queued, else after naps while events were recently
/// flowing or a requested flush is pending (`FlushDue` once it is `due`), else after a sleep
/// that only a producer ends. `None` once every sender is gone.
fn next_message(
    rx: &Receiver<Message>,
    spent: &Spent,
    wake: &Wake,
    quiet: &mut Quiet,
    due: Option<Instant>,
    awake_until: Option<Instant>,
    counted: &mut DispatchedCount<'_>,
) -> Option<Message> {
    loop {
        // The clock is read only where it decides something: with a flush due, or with the
        // queue empty. Read before every message, it took an eighth of the dispatcher's time
        // in the bus bench's archive row (`perf`: a virtual machine's clock is slow to read).
        if due.is_some_and(|due| Instant::now() >= due) {
            return Some(Message::FlushDue);
        }
        match rx.try_recv() {
            Ok(message) => {
                quiet.since = None;
                return Some(message);
            }
            Err(TryRecvError::Disconnected) => return None,
            // Nothing queued: the producers may count on every event delivered.
            Err(TryRecvError::Empty) => counted.bring_up_to_date(),
        }
        let now = Instant::now();
        if awake_until.is_some_and(|until| now < until) {
            // A flush was announced: a yield keeps this thread on its core, where a nap
            // would let the core go idle and the flush wait for it to wake.
            thread::yield_now();
            continue;
        }
        if due.is_some() || quiet.since.is_none_or(|since| now - since < quiet.before_sleep) {
            quiet.since.get_or_insert(now);
            #[cfg(test)]
            {
                quiet.naps = quiet.naps.saturating_add(1);
            }
            let nap = due.map_or(quiet.nap, |due| quiet.nap.min(due.saturating_duration_since(now)));
            thread::park_timeout(nap);
        } else {
            // Quiet: no producer is coming to drop what is left.
            spent.drain();
            wake.sleeping.store(true, Ordering::Relaxed);
            // Pairs with `Inner::nudge`: a producer that sent before this fence is seen by
            // the look below; one that sends after it sees `sleeping`.
            fence(Ordering::SeqCst);
            if rx.is_empty() {
                // Returns early if a producer unparked in between (the token is kept).
                thread::park();
            }
            wake.sleeping.store(false, Ordering::Relaxed);
            *quiet = Quiet::new(quiet.before_sleep, quiet.nap);
        }
    }
}

/// How long the dispatcher has found the queue empty, and how long it naps.
struct Quiet {
    /// How long the queue stays empty before the dispatcher sleeps instead of napping.
    before_sleep: Duration,
    /// Each nap ([`NAP`]).
    nap: Duration,
    /// When the queue was found empty with no message taken since.
    since: Option<Instant>,
    /// Naps taken since the dispatcher last slept: only the bus's tests read it.
    #[cfg(test)]
    naps: u32,
}

impl Quiet {
    fn new(before_sleep: Duration, nap: Duration) -> Self {
        Quiet {
            before_sleep,
            nap,
            since: None,
            #[cfg(test)]
            naps: 0,
        }
    }
}

/// Which flush a group of waiters gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everything the collectors hold ([`Collector::flush`]).
    Everything,
    /// What ended tests sent ([`Collector::flush_ended`]).
    Ended,
}

/// The dispatcher thread's state.
struct Dispatcher<'a> {
    rx: Receiver<Message>,
    spent: &'a Spent,
    slots: Vec<Slot>,
    /// Errors held until the next flush or shutdown reports them.
    errors: Vec<CollectorError>,
    /// When the oldest requested flush not yet covered by a flush must happen.
    due: Option<Instant>,
    /// A message taken off the queue while gathering a flush, to handle next.
    held: Option<Message>,
    requested_flush_delay: Duration,
    /// Until when to stay awake for a flush [`Bus::expect_flush`] announced.
    awake_until: Option<Instant>,
    /// The events delivered, for the producers (see [`Counters`]).
    counted: DispatchedCount<'a>,
}

impl Dispatcher<'_> {
    /// Hands one event to every collector, then to the producers to drop (or drops it when
    /// they are behind).
    fn deliver(&mut self, event: Box<Event>, origin: u8) {
        for slot in &mut self.slots {
            slot.guarded(&mut self.errors, |c| {
                c.on_event(&event);
                Ok(())
            });
        }
        self.counted.one_more();
        self.spent.give_back(event, origin);
    }

    fn flush(&mut self, scope: Scope) {
        if scope == Scope::Everything {
            self.due = None;
        }
        for slot in &mut self.slots {
            slot.guarded(&mut self.errors, |c| match scope {
                Scope::Everything => c.flush(),
                Scope::Ended => c.flush_ended(),
            });
        }
    }

    fn finish(&mut self) {
        self.counted.bring_up_to_date();
        for slot in &mut self.slots {
            slot.guarded(&mut self.errors, |c| c.finish());
        }
    }

    /// Group commit: what is already queued behind a flush someone waits for joins it (events
    /// delivered, waiters gathered), and one flush of the collectors answers every waiter.
    /// Tests that end together then cost one archive commit, not one each. The group flushes
    /// everything if any of its waiters asked for that, or a requested flush is due;
    /// otherwise only what ended tests sent, and requested flushes stay due in their turn.
    fn group_commit(&mut self, reply: Reply, mut scope: Scope) {
        let mut waiters = vec![reply];
        let mut requested = false;
        for _ in 0..GROUP_LIMIT {
            match self.rx.try_recv() {
                Ok(Message::Event(event, origin)) => self.deliver(event, origin),
                Ok(Message::Flush(Some(reply))) => {
                    waiters.push(Reply::Thread(reply));
                    scope = Scope::Everything;
                }
                Ok(Message::FlushEnded(reply)) => waiters.push(reply),
                Ok(Message::Flush(None)) => requested = true,
                Ok(other) => {
                    self.held = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        let now = Instant::now();
        if self.due.is_some_and(|due| now >= due) || (requested && self.requested_flush_delay.is_zero()) {
            scope = Scope::Everything;
        }
        if requested && scope == Scope::Ended {
            self.due.get_or_insert(now + self.requested_flush_delay);
        }
        self.flush(scope);
        self.counted.bring_up_to_date();
        let errors = std::mem::take(&mut self.errors);
        // Every waiter hears of the failures; the first gets the errors themselves.
        let mut waiters = waiters.into_iter();
        let first = waiters.next();
        for reply in waiters {
            reply.send(errors.iter().map(CollectorError::duplicate).collect());
        }
        if let Some(first) = first {
            first.send(errors);
        }
    }
}

fn dispatch(mut d: Dispatcher<'_>, wake: &Wake, mut quiet: Quiet) {
    let (spent, requested_flush_delay) = (d.spent, d.requested_flush_delay);
    while let Some(message) = d.held.take().or_else(|| {
        let counted = &mut d.counted;
        next_message(&d.rx, spent, wake, &mut quiet, d.due, d.awake_until, counted)
    }) {
        match message {
            Message::Event(event, origin) => d.deliver(event, origin),
            Message::Flush(None) if !requested_flush_delay.is_zero() => {
                d.due
                    .get_or_insert_with(|| Instant::now() + requested_flush_delay);
            }
            Message::Flush(Some(reply)) => {
                d.awake_until = None;
                d.group_commit(Reply::Thread(reply), Scope::Everything);
            }
            Message::FlushEnded(reply) => {
                d.awake_until = None;
                d.group_commit(reply, Scope::Ended);
            }
            Message::Expect => {
                d.counted.announced();
                d.awake_until = Some(Instant::now() + EXPECT_AWAKE);
            }
            // Without a waiter, the errors wait for the next flush.
            Message::Flush(None) | Message::FlushDue => d.flush(Scope::Everything),
            Message::Register(collector) => d.slots.push(Slot::new(collector)),
            Message::Shutdown(reply) => {
                d.finish();
                let errors = std::mem::take(&mut d.errors);
                // The receiver goes before the answer: once `shutdown` returns, every send
                // fails and is counted as lost, instead of landing in a queue nobody reads.
                // `closed` comes last, so a waiter that sees it finds every answer sent.
                drop(d);
                let _ = reply.send(errors);
                wake.closed.store(true, Ordering::Release);
                return;
            }
        }
    }
    // Every handle is gone: nobody can ask for errors any more, but collectors still get to
    // write what they hold.
    d.finish();
    wake.closed.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::RecordingCollector;
    use crate::event::*;
    use std::sync::Mutex;
    use std::task::Poll;
    use std::time::Instant;

    fn event(test: TestId, sequence: u64) -> Event {
        Event {
            run_id: RunId::new("r").unwrap(),
            test_id: test,
            id: EventId::generate(),
            parent_id: None,
            sequence,
            timestamp: Timestamp::now(),
            kind: EventKind::Observation(Observation::new("x", Attributes::new())),
        }
    }

    /// A thread takes back the boxes of its own events (see `Spent`), and a heavy event is not
    /// kept at all.
    #[test]
    fn delivered_events_go_back_to_their_threads_queue_and_heavy_ones_are_dropped() {
        let (release, builder) = held_and_awake();
        let bus = builder.collector(RecordingCollector::new()).start();
        let test = TestId::generate();
        let own = || bus.inner.spent.of(origin()).rx.len();
        // Held in the first event, the dispatcher gives no box back for a later publish to
        // take: each of the ten gets its own (a dispatcher that kept up took some back in CI).
        for seq in 0..10 {
            bus.publish(event(test, seq)).unwrap();
        }
        release.send(()).unwrap();
        bus.flush().unwrap();
        assert_eq!(own(), 10, "this thread's queue");
        let elsewhere = thread::scope(|s| {
            s.spawn(|| {
                bus.publish(event(test, 10)).unwrap();
                bus.flush().unwrap();
                (origin(), own())
            })
            .join()
            .unwrap()
        });
        if elsewhere.0 != origin() {
            assert_eq!(elsewhere.1, 1, "the other thread's queue");
            assert_eq!(own(), 10);
        }
        let before = own();
        let publish = |seq, kind| {
            let mut sent = event(test, seq);
            sent.kind = kind;
            bus.publish(sent).unwrap();
            bus.flush().unwrap();
            own()
        };
        let attachment = |len| EventKind::Attachment(Attachment::new("a", "text/plain", vec![b'x'; len]));
        assert_eq!(
            publish(11, attachment(KEPT_EVENT_BYTES + 1)),
            before - 1,
            "its box was taken, and not given back"
        );
        assert_eq!(
            publish(12, attachment(KEPT_EVENT_BYTES)),
            before - 1,
            "taken and given back"
        );
        let long_text = Attributes::new()
            .with("a", "y".repeat(KEPT_EVENT_BYTES / 2))
            .with("b", "y".repeat(KEPT_EVENT_BYTES / 2 + 1));
        assert_eq!(
            publish(13, EventKind::Observation(Observation::new("x", long_text))),
            before - 2,
            "heavy by its attributes' text"
        );
    }

    /// One million events from eight threads through three collectors: every collector gets
    /// every event, in order per sending thread.
    #[test]
    fn a_million_events_from_eight_threads_reach_three_collectors_in_order() {
        const THREADS: u64 = 8;
        const PER_THREAD: u64 = 125_000;
        let recordings: Vec<RecordingCollector> = (0..3).map(|_| RecordingCollector::new()).collect();
        let bus = Bus::builder()
            .capacity(1024)
            .collectors(
                recordings
                    .iter()
                    .map(|r| Box::new(r.clone()) as Box<dyn Collector>),
            )
            .start();
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let bus = bus.clone();
                thread::spawn(move || {
                    let test = TestId::generate();
                    for seq in 0..PER_THREAD {
                        bus.publish(event(test, seq)).unwrap();
                    }
                    test
                })
            })
            .collect();
        let tests: Vec<TestId> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        bus.flush().unwrap();
        for recording in &recordings {
            let events = recording.take();
            assert_eq!(events.len() as u64, THREADS * PER_THREAD);
            for test in &tests {
                let seqs: Vec<u64> = events
                    .iter()
                    .filter(|e| e.test_id == *test)
                    .map(|e| e.sequence)
                    .collect();
                assert_eq!(seqs.len() as u64, PER_THREAD);
                assert!(seqs.iter().copied().eq(0..PER_THREAD), "out of order for {test}");
            }
        }
        let stats = bus.shutdown().unwrap();
        assert_eq!(stats.published, THREADS * PER_THREAD);
        assert_eq!(stats.dispatched, THREADS * PER_THREAD);
    }

    struct Slow(Arc<AtomicU64>);
    impl Collector for Slow {
        fn on_event(&mut self, _: &Event) {
            thread::sleep(Duration::from_millis(2));
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_slow_collector_slows_producers_and_loses_nothing() {
        let seen = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .capacity(2)
            .collector(Slow(Arc::clone(&seen)))
            .start();
        let test = TestId::generate();
        let started = Instant::now();
        for seq in 0..20 {
            bus.publish(event(test, seq)).unwrap();
        }
        // With room for two, the producer must have waited for most of the 20 × 2 ms.
        assert!(started.elapsed() >= Duration::from_millis(30));
        bus.flush().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 20);
    }

    /// A bus for tests that count a thread's spent boxes: its dispatcher is held in its first
    /// event until the sender releases it, so no box comes back while a test publishes, and it
    /// stays awake for an hour, so it does not drop the boxes before the test counts them.
    fn held_and_awake() -> (Sender<()>, BusBuilder) {
        let (release, release_rx) = bounded(1);
        let builder = Bus::builder()
            .quiet_before_sleep(Duration::from_secs(3600))
            .collector(HoldsFirst {
                release: Some(release_rx),
                seen: Arc::new(AtomicU64::new(0)),
            });
        (release, builder)
    }

    /// Holds the dispatcher in its first event until released; counts every event.
    struct HoldsFirst {
        release: Option<Receiver<()>>,
        seen: Arc<AtomicU64>,
    }
    impl Collector for HoldsFirst {
        fn on_event(&mut self, _: &Event) {
            if let Some(release) = self.release.take() {
                let _ = release.recv();
            }
            self.seen.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The queue holds no more than its capacity: a producer publishing past it waits while
    /// the dispatcher is held, and goes on, losing nothing, once it is released.
    #[test]
    fn a_producer_waits_at_the_capacity_until_the_dispatcher_makes_room() {
        let (release, release_rx) = bounded(1);
        let seen = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .capacity(4)
            .collector(HoldsFirst {
                release: Some(release_rx),
                seen: Arc::clone(&seen),
            })
            .start();
        let test = TestId::generate();
        let producer = {
            let bus = bus.clone();
            thread::spawn(move || {
                for seq in 0..10 {
                    bus.publish(event(test, seq)).unwrap();
                }
            })
        };
        // The dispatcher holds the first event; four more fill the queue.
        eventually("the queue full", || bus.inner.tx.len() == 4);
        thread::sleep(Duration::from_millis(30));
        assert_eq!(bus.inner.tx.len(), 4, "a producer went past the capacity");
        assert!(!producer.is_finished(), "the producer did not wait");
        release.send(()).unwrap();
        producer.join().unwrap();
        bus.flush().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 10);
    }

    /// Threads alive together have an origin each, up to `ORIGINS`; one given back by a thread
    /// that ended goes to the next thread; past `ORIGINS`, threads share, and a shared origin
    /// given back stays with its other holders.
    #[test]
    fn origins_are_one_a_live_thread_reused_when_it_ends_and_shared_past_the_limit() {
        let origins = Origins::new();
        let first: Vec<Origin> = (0..ORIGINS).map(|_| origins.take()).collect();
        assert!(first.iter().all(|o| o.own));
        let indices: std::collections::BTreeSet<u8> = first.iter().map(|o| o.index).collect();
        assert_eq!(indices.len(), ORIGINS, "each its own");
        let shared = origins.take();
        assert_eq!(shared, Origin { index: 0, own: false });
        origins.give_back(shared);
        assert_eq!(
            origins.take(),
            Origin { index: 1, own: false },
            "a shared one is not freed"
        );
        origins.give_back(first[5]);
        assert_eq!(
            origins.take(),
            Origin { index: 5, own: true },
            "an ended thread's goes on"
        );
        assert!(!origins.take().own);
    }

    /// A thread's origin goes back when the thread ends: a thread made after another one ended
    /// takes the origin that one gave back (the free list is last in, first out). Had threads
    /// kept theirs, each would take the next fresh origin, and past `ORIGINS` the next one in
    /// turn: never the one before's. Other tests of this binary take and give back origins
    /// meanwhile, so the check asks for one such pair among 200 threads, not for a count of
    /// origins, which would depend on how many tests run at once on the machine.
    #[test]
    fn threads_that_end_give_their_origin_back() {
        let seen: Vec<u8> = (0..200).map(|_| thread::spawn(origin).join().unwrap()).collect();
        let reused = seen.windows(2).filter(|pair| pair[0] == pair[1]).count();
        assert!(
            reused > 0,
            "no thread took the origin of the thread before it: {seen:?}"
        );
    }

    /// A producer keeps every box of a burst for reuse, up to its queue's capacity: taking one
    /// back a publish, it never drops others. (Trimming its queue to a reserve made producers
    /// drop and allocate boxes by turns while the events in the bus swung.)
    #[test]
    fn a_burst_keeps_its_boxes_for_the_producer_up_to_the_capacity() {
        let (release, builder) = held_and_awake();
        let bus = builder.start();
        let test = TestId::generate();
        let own = || bus.inner.spent.of(origin()).rx.len();
        let burst = |first: u64, n: u64| {
            for seq in first..first + n {
                bus.publish(event(test, seq)).unwrap();
            }
        };
        // The dispatcher holds the first event, so every event of the burst gets a new box.
        burst(0, 600);
        release.send(()).unwrap();
        bus.flush().unwrap();
        assert_eq!(own(), 600, "every box of the burst came back");
        burst(600, 1);
        bus.flush().unwrap();
        assert_eq!(own(), 600, "a publish took one box back and dropped none");
        // A burst past the capacity: the queue keeps what fits, the dispatcher drops the rest.
        let (release, release_rx) = bounded(1);
        bus.register(HoldsFirst {
            release: Some(release_rx),
            seen: Arc::new(AtomicU64::new(0)),
        })
        .unwrap();
        burst(601, SPENT_CAPACITY as u64 + 600);
        release.send(()).unwrap();
        bus.flush().unwrap();
        assert_eq!(own(), SPENT_CAPACITY);
    }

    /// Spends about a microsecond on every event, so that producers keep the queue full.
    struct Busy;
    impl Collector for Busy {
        fn on_event(&mut self, _: &Event) {
            let started = Instant::now();
            while started.elapsed() < Duration::from_micros(1) {
                std::hint::spin_loop();
            }
        }
    }

    /// Producers publishing at once go past the capacity by at most one message each (what
    /// `BusBuilder::capacity` promises), however long they keep the queue full.
    #[test]
    fn producers_go_past_the_capacity_by_at_most_one_message_each() {
        const CAPACITY: usize = 16;
        const THREADS: usize = 8;
        let bus = Bus::builder().capacity(CAPACITY).collector(Busy).start();
        let producers: Vec<_> = (0..THREADS)
            .map(|_| {
                let bus = bus.clone();
                thread::spawn(move || {
                    let test = TestId::generate();
                    for seq in 0..2_000 {
                        bus.publish(event(test, seq)).unwrap();
                    }
                })
            })
            .collect();
        let mut longest = 0;
        while !producers.iter().all(|p| p.is_finished()) {
            longest = longest.max(bus.inner.tx.len());
        }
        for producer in producers {
            producer.join().unwrap();
        }
        assert!(longest >= CAPACITY / 2, "the queue never filled: {longest}");
        assert!(longest < CAPACITY + THREADS, "{longest} messages queued");
        bus.flush().unwrap();
        assert_eq!(bus.stats().dispatched, (THREADS * 2_000) as u64);
    }

    /// The dispatcher counts what it delivers in steps while events flow, so a count read
    /// mid-stream may lag; once it finds the queue empty the count is exact, with no flush,
    /// and after a flush it holds every event the flushing thread published.
    #[test]
    fn the_dispatched_count_is_exact_once_the_queue_is_empty_and_after_a_flush() {
        let bus = Bus::builder().collector(RecordingCollector::new()).start();
        let test = TestId::generate();
        // 1 000 is no multiple of the step (64), so a count left in steps would fall short.
        for seq in 0..1_000 {
            bus.publish(event(test, seq)).unwrap();
        }
        eventually("every event counted without a flush", || {
            bus.stats().dispatched == 1_000
        });
        for seq in 1_000..1_003 {
            bus.publish(event(test, seq)).unwrap();
        }
        bus.flush().unwrap();
        let stats = bus.stats();
        assert_eq!((stats.published, stats.dispatched), (1_003, 1_003));
    }

    /// A publish the closed bus refuses is not counted as published.
    #[test]
    fn a_refused_publish_is_not_counted() {
        let bus = Bus::builder().start();
        let other = bus.clone();
        other.shutdown().unwrap();
        let refused = bus.publish(event(TestId::generate(), 0));
        assert!(
            matches!(refused, Err(BusError::Closed { lost: 1 })),
            "{refused:?}"
        );
        assert_eq!(bus.stats().published, 0);
    }

    struct FlushCounter(Arc<AtomicU64>, Arc<AtomicU64>);
    impl Collector for FlushCounter {
        fn on_event(&mut self, _: &Event) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.1.store(self.0.load(Ordering::SeqCst), Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn flush_returns_after_every_earlier_event_was_handled_and_flushed() {
        let seen = Arc::new(AtomicU64::new(0));
        let at_flush = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .collector(Slow(Arc::new(AtomicU64::new(0))))
            .collector(FlushCounter(Arc::clone(&seen), Arc::clone(&at_flush)))
            .start();
        let test = TestId::generate();
        for seq in 0..10 {
            bus.publish(event(test, seq)).unwrap();
        }
        bus.flush().unwrap();
        assert_eq!(at_flush.load(Ordering::SeqCst), 10);
    }

    struct Panics;
    impl Collector for Panics {
        fn on_event(&mut self, _: &Event) {
            panic!("collector bug");
        }
        fn name(&self) -> std::borrow::Cow<'_, str> {
            "panics".into()
        }
    }

    #[test]
    fn a_panicking_collector_is_reported_once_and_the_others_carry_on() {
        let recording = RecordingCollector::new();
        let bus = Bus::builder()
            .collector(Panics)
            .collector(recording.clone())
            .start();
        let test = TestId::generate();
        bus.publish(event(test, 0)).unwrap();
        bus.publish(event(test, 1)).unwrap();
        let err = bus.flush().unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("panics") && text.contains("collector bug"),
            "{text}"
        );
        assert_eq!(recording.len(), 2);
        bus.publish(event(test, 2)).unwrap();
        bus.flush().unwrap();
        assert_eq!(recording.len(), 3);
    }

    struct Stuck;
    impl Collector for Stuck {
        fn on_event(&mut self, _: &Event) {}
        fn flush(&mut self) -> Result<(), CollectorError> {
            thread::sleep(Duration::from_millis(500));
            Ok(())
        }
    }

    #[test]
    fn a_stuck_collector_makes_flush_time_out_instead_of_hanging() {
        let bus = Bus::builder()
            .flush_timeout(Duration::from_millis(50))
            .collector(Stuck)
            .start();
        assert!(matches!(bus.flush(), Err(BusError::FlushTimedOut(_))));
    }

    #[test]
    fn after_shutdown_publish_reports_closed() {
        let recording = RecordingCollector::new();
        let bus = Bus::builder().collector(recording.clone()).start();
        bus.publish(event(TestId::generate(), 0)).unwrap();
        bus.shutdown().unwrap();
        assert_eq!(recording.len(), 1);
        // The dispatcher drops its receiver when it returns; give it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match bus.publish(event(TestId::generate(), 0)) {
                Err(BusError::Closed { lost: 1 }) => break,
                Ok(()) if Instant::now() < deadline => thread::sleep(Duration::from_millis(1)),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn eventually(what: &str, check: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !check() {
            assert!(Instant::now() < deadline, "{what} did not happen within 5 s");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// A producer wakes the napping dispatcher once a few hundred events are queued, not an
    /// eighth of the default capacity (2 048): that is what a test's end that was not
    /// announced may find queued. A small capacity keeps its eighth.
    #[test]
    fn producers_wake_the_dispatcher_at_a_few_hundred_events_queued() {
        let bus = Bus::builder().collector(RecordingCollector::new()).start();
        assert_eq!(bus.inner.nudge_at, WAKE_AT_MOST);
        let small = Bus::builder().capacity(64).start();
        assert_eq!(small.inner.nudge_at, 8);
        let one = Bus::builder().capacity(1).start();
        assert_eq!(one.inner.nudge_at, 1);
    }

    /// A producer that finds `WAKE_AT_MOST` events queued wakes the napping dispatcher, which
    /// would otherwise nap (here for an hour) until a flush.
    #[test]
    fn a_full_batch_wakes_the_napping_dispatcher() {
        let recording = RecordingCollector::new();
        let hour = Duration::from_secs(3600);
        let bus = Bus::builder()
            .quiet_before_sleep(hour)
            .nap(hour)
            .collector(recording.clone())
            .start();
        // Answered, so the dispatcher is up and goes on to nap on its empty queue.
        bus.flush().unwrap();
        let test = TestId::generate();
        for sequence in 0..WAKE_AT_MOST as u64 {
            bus.publish(event(test, sequence)).unwrap();
        }
        eventually("the batch delivered without a flush", || {
            recording.len() == WAKE_AT_MOST
        });
    }

    /// After a quiet spell the dispatcher sleeps without a timeout; an event sent then must
    /// still wake it, with no flush to help.
    #[test]
    fn an_event_after_a_quiet_spell_wakes_the_sleeping_dispatcher() {
        let recording = RecordingCollector::new();
        let bus = Bus::builder().collector(recording.clone()).start();
        let test = TestId::generate();
        for round in 0..3 {
            thread::sleep(QUIET_BEFORE_SLEEP + NAP * 3);
            eventually("an idle bus sleeping instead of ticking", || {
                bus.inner.wake.sleeping.load(Ordering::SeqCst)
            });
            bus.publish(event(test, round)).unwrap();
            eventually("delivery without a flush", || {
                recording.len() == round as usize + 1
            });
        }
    }

    /// Records the dispatcher thread's nice value at each flush.
    #[cfg(target_os = "linux")]
    struct Niceness(Arc<Mutex<Vec<Option<i32>>>>);
    #[cfg(target_os = "linux")]
    impl Collector for Niceness {
        fn on_event(&mut self, _: &Event) {}
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.0.lock().unwrap().push(own_niceness());
            Ok(())
        }
    }

    /// The nice value the dispatcher of a bus started on this thread runs at.
    #[cfg(target_os = "linux")]
    fn dispatcher_niceness_of(builder: BusBuilder) -> Option<i32> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bus = builder.collector(Niceness(Arc::clone(&seen))).start();
        bus.flush().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one flush, one record: {seen:?}");
        seen[0]
    }

    /// The dispatcher lowers its priority below the thread that starts the bus, by the
    /// builder's steps, relatively (a suite run under `nice` keeps its dispatcher below its
    /// tests) and no lower than 19.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_dispatcher_runs_below_the_thread_that_started_it() {
        thread::spawn(|| {
            let starter = own_niceness().expect("Linux tells a thread its nice value");
            let below = |by: i32| Some((starter + by).min(19));
            assert_eq!(dispatcher_niceness_of(Bus::builder()), below(5));
            assert_eq!(DISPATCHER_NICENESS, 5);
            assert_eq!(
                dispatcher_niceness_of(Bus::builder().dispatcher_niceness(0)),
                below(0)
            );
            assert_eq!(
                dispatcher_niceness_of(Bus::builder().dispatcher_niceness(3)),
                below(3)
            );
            assert_eq!(
                dispatcher_niceness_of(Bus::builder().dispatcher_niceness(200)),
                Some(19)
            );
            // A starter already lowered: the dispatcher goes that much further.
            let tid = rustix::thread::gettid();
            rustix::process::setpriority_process(Some(tid), (starter + 2).min(19)).unwrap();
            assert_eq!(own_niceness(), Some((starter + 2).min(19)));
            assert_eq!(
                dispatcher_niceness_of(Bus::builder().dispatcher_niceness(4)),
                Some((starter + 6).min(19))
            );
        })
        .join()
        .unwrap();
    }

    struct Finishes(Arc<AtomicBool>);
    impl Collector for Finishes {
        fn on_event(&mut self, _: &Event) {}
        fn finish(&mut self) -> Result<(), CollectorError> {
            self.0.store(true, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Dropping the last handle while the dispatcher sleeps still lets collectors finish.
    #[test]
    fn dropping_every_handle_finishes_the_collectors_of_a_sleeping_dispatcher() {
        let finished = Arc::new(AtomicBool::new(false));
        let bus = Bus::builder().collector(Finishes(Arc::clone(&finished))).start();
        bus.publish(event(TestId::generate(), 0)).unwrap();
        thread::sleep(QUIET_BEFORE_SLEEP + NAP * 3);
        drop(bus);
        eventually("finish", || finished.load(Ordering::SeqCst));
    }

    #[test]
    fn a_requested_flush_flushes_without_waiting_and_reports_failures_at_the_next_flush() {
        let seen = Arc::new(AtomicU64::new(0));
        let at_flush = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .collector(FlushCounter(Arc::clone(&seen), Arc::clone(&at_flush)))
            .collector(Panics)
            .start();
        let test = TestId::generate();
        bus.publish(event(test, 0)).unwrap();
        bus.request_flush().unwrap();
        eventually("the requested flush", || at_flush.load(Ordering::SeqCst) == 1);
        let err = bus.flush().unwrap_err();
        assert!(err.to_string().contains("collector bug"), "{err}");
    }

    struct CountsFlushes(Arc<AtomicU64>);
    impl Collector for CountsFlushes {
        fn on_event(&mut self, _: &Event) {}
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// A test that ends before its start's requested flush comes due is flushed once.
    #[test]
    fn a_flush_someone_waits_for_covers_an_earlier_requested_flush() {
        let flushes = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .requested_flush_delay(Duration::from_secs(30))
            .collector(CountsFlushes(Arc::clone(&flushes)))
            .start();
        let test = TestId::generate();
        bus.publish(event(test, 0)).unwrap();
        bus.request_flush().unwrap();
        bus.publish(event(test, 1)).unwrap();
        bus.flush().unwrap();
        assert_eq!(flushes.load(Ordering::SeqCst), 1);
        // Nothing was left due: a later wait sees no second flush of the request.
        thread::sleep(NAP * 2);
        assert_eq!(flushes.load(Ordering::SeqCst), 1);
    }

    /// Counts full flushes and flushes of ended tests apart.
    struct CountsBoth {
        full: Arc<AtomicU64>,
        ended: Arc<AtomicU64>,
    }
    impl Collector for CountsBoth {
        fn on_event(&mut self, _: &Event) {}
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.full.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn flush_ended(&mut self) -> Result<(), CollectorError> {
            self.ended.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// A test's end flushes what ended tests sent, and leaves another test's requested start
    /// flush due in its turn; a full flush, or a due request, flushes everything.
    #[test]
    fn a_flush_of_ended_tests_leaves_a_requested_flush_due() {
        let delay = Duration::from_millis(200);
        let (full, ended) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let bus = Bus::builder()
            .requested_flush_delay(delay)
            .collector(CountsBoth {
                full: Arc::clone(&full),
                ended: Arc::clone(&ended),
            })
            .start();
        let requested = Instant::now();
        bus.request_flush().unwrap();
        bus.flush_ended().unwrap();
        bus.flush_ended().unwrap();
        assert_eq!(ended.load(Ordering::SeqCst), 2);
        assert_eq!(full.load(Ordering::SeqCst), 0, "the request is not due yet");
        eventually("the requested flush", || full.load(Ordering::SeqCst) == 1);
        assert!(
            requested.elapsed() >= delay,
            "flushed after {:?}",
            requested.elapsed()
        );

        // A full flush someone waits for still covers a request: nothing is left due after it.
        bus.request_flush().unwrap();
        bus.flush().unwrap();
        assert_eq!(full.load(Ordering::SeqCst), 2);
        thread::sleep(delay + NAP * 2);
        assert_eq!(full.load(Ordering::SeqCst), 2);
        assert_eq!(ended.load(Ordering::SeqCst), 2);
    }

    /// Holds the dispatcher in its first event until the test lets it go.
    struct Gate {
        entered: crossbeam_channel::Sender<()>,
        release: Receiver<()>,
        counts: CountsBoth,
    }
    impl Collector for Gate {
        fn on_event(&mut self, _: &Event) {
            let _ = self.entered.send(());
            let _ = self.release.recv();
        }
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.counts.flush()
        }
        fn flush_ended(&mut self) -> Result<(), CollectorError> {
            self.counts.flush_ended()
        }
    }

    /// A bus from `builder` with a [`Gate`] on it, its dispatcher held in a first event until
    /// `release` lets it go, and the gate's counts of full and ended-tests flushes.
    fn held_in_an_event(
        builder: BusBuilder,
    ) -> (Bus, crossbeam_channel::Sender<()>, Arc<AtomicU64>, Arc<AtomicU64>) {
        let (full, ended) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (entered, entered_rx) = bounded(1);
        let (release, release_rx) = bounded(1);
        let bus = builder
            .collector(Gate {
                entered,
                release: release_rx,
                counts: CountsBoth {
                    full: Arc::clone(&full),
                    ended: Arc::clone(&ended),
                },
            })
            .start();
        bus.publish(event(TestId::generate(), 0)).unwrap();
        entered_rx.recv().unwrap();
        (bus, release, full, ended)
    }

    /// Holds the dispatcher inside `finish` until released.
    struct SlowFinish {
        entered: crossbeam_channel::Sender<()>,
        release: Receiver<()>,
    }
    impl Collector for SlowFinish {
        fn on_event(&mut self, _: &Event) {}
        fn finish(&mut self) -> Result<(), CollectorError> {
            let _ = self.entered.send(());
            let _ = self.release.recv();
            Ok(())
        }
    }

    /// A bus shutting down, its dispatcher held in a collector's `finish` (past reading
    /// `Shutdown`, so what is sent now queues unread) until `release` lets it go, and the
    /// shutdown's thread.
    fn shutting_down() -> (
        Bus,
        crossbeam_channel::Sender<()>,
        thread::JoinHandle<Result<BusStats, BusError>>,
    ) {
        let (entered, entered_rx) = bounded(1);
        let (release, release_rx) = bounded(1);
        let bus = Bus::builder()
            .flush_timeout(Duration::from_secs(30))
            .collector(SlowFinish {
                entered,
                release: release_rx,
            })
            .start();
        let closing = bus.clone();
        let shutdown = thread::spawn(move || closing.shutdown());
        entered_rx.recv().unwrap();
        (bus, release, shutdown)
    }

    /// A test's end that flushes while the bus is shutting down (its message queued behind
    /// `Shutdown`, never read) is answered `Closed` once the dispatcher stops, not left to wait
    /// out its timeout; and the shutdown itself still succeeds.
    #[test]
    fn a_flush_queued_behind_a_shutdown_is_answered_closed() {
        let (bus, release, shutdown) = shutting_down();
        // The dispatcher is in `finish`, past reading `Shutdown`: this flush queues unread.
        let flushing = bus.clone();
        let started = Instant::now();
        let flush = thread::spawn(move || flushing.flush_ended());
        thread::sleep(Duration::from_millis(50));
        release.send(()).unwrap();
        assert!(matches!(flush.join().unwrap(), Err(BusError::Closed { lost: 0 })));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        shutdown.join().unwrap().unwrap();
        assert!(matches!(bus.flush(), Err(BusError::Closed { .. })));
    }

    /// A requested start flush that queued behind a test's end while the dispatcher was busy
    /// is taken up by that end's commit, which flushes only ended tests and leaves the
    /// request due: everything is flushed once its delay is over, and not before.
    #[test]
    fn a_request_queued_behind_a_test_end_stays_due() {
        let delay = Duration::from_millis(150);
        let (bus, release, full, ended) = held_in_an_event(Bus::builder().requested_flush_delay(delay));
        let ending = {
            let bus = bus.clone();
            thread::spawn(move || bus.flush_ended())
        };
        eventually("the test's end queued", || bus.inner.tx.len() == 1);
        let requested = Instant::now();
        bus.request_flush().unwrap();
        assert_eq!(bus.inner.tx.len(), 2, "the request queued behind the end");
        release.send(()).unwrap();
        ending.join().unwrap().unwrap();
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        let full_so_far = full.load(Ordering::SeqCst);
        // Read before the clock: on a loaded machine the delay may be over already.
        if requested.elapsed() < delay {
            assert_eq!(full_so_far, 0, "the request is not due yet");
        }
        eventually("the requested flush", || full.load(Ordering::SeqCst) == 1);
        assert!(
            requested.elapsed() >= delay,
            "flushed after {:?}",
            requested.elapsed()
        );
    }

    /// Alone, a requested flush happens once its delay is over, and not before; even when the
    /// dispatcher had gone to sleep for good.
    #[test]
    fn a_requested_flush_comes_due_after_its_delay_even_from_deep_sleep() {
        let delay = Duration::from_millis(30);
        let flushes = Arc::new(AtomicU64::new(0));
        let bus = Bus::builder()
            .requested_flush_delay(delay)
            .collector(CountsFlushes(Arc::clone(&flushes)))
            .start();
        for sleep_first in [false, true] {
            if sleep_first {
                thread::sleep(QUIET_BEFORE_SLEEP + NAP * 3);
            }
            let before = flushes.load(Ordering::SeqCst);
            let requested = Instant::now();
            bus.request_flush().unwrap();
            eventually("the requested flush", || {
                flushes.load(Ordering::SeqCst) == before + 1
            });
            assert!(
                requested.elapsed() >= delay,
                "flushed after {:?}",
                requested.elapsed()
            );
        }
    }

    /// While a flush is announced, an empty queue makes the dispatcher yield, not nap: it
    /// takes no nap (none is booked) until the message comes. Once the announcement has run
    /// out, an empty queue makes it nap again.
    #[test]
    fn an_announced_flush_keeps_the_dispatcher_from_napping_until_a_message_comes() {
        let (tx, rx) = unbounded();
        let (spent, wake) = (Spent::default(), Wake::default());
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            tx.send(Message::Expect).unwrap();
            tx
        });
        // Never quiet for long enough to sleep for good: a message sent late, with no
        // producer's nudge here, is still taken at the next nap's end.
        let mut quiet = Quiet::new(Duration::from_secs(3600), NAP);
        let stats = Counters::default();
        let mut counted = DispatchedCount::new(&stats, 16 * 1024);
        let mut next = |quiet: &mut Quiet, awake_until| {
            next_message(&rx, &spent, &wake, quiet, None, Some(awake_until), &mut counted)
        };
        let until = Instant::now() + Duration::from_secs(60);
        let message = next(&mut quiet, until);
        assert!(matches!(message, Some(Message::Expect)));
        assert_eq!(quiet.naps, 0, "the dispatcher napped while a flush was announced");

        let tx = sender.join().unwrap();
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            tx.send(Message::Expect).unwrap();
            tx
        });
        let ran_out = Instant::now() - Duration::from_millis(1);
        let message = next(&mut quiet, ran_out);
        assert!(matches!(message, Some(Message::Expect)));
        assert!(quiet.naps > 0, "the dispatcher stayed up past the announcement");
        drop(sender.join().unwrap());
    }

    /// An announced flush comes and is answered with every event before it; an announcement
    /// no flush follows lets the dispatcher go to sleep after its quiet spell as before.
    #[test]
    fn an_announced_flush_is_answered_and_an_unanswered_announcement_runs_out() {
        let recording = RecordingCollector::new();
        let bus = Bus::builder()
            .quiet_before_sleep(Duration::from_millis(10))
            .collector(recording.clone())
            .start();
        let test = TestId::generate();
        bus.publish(event(test, 0)).unwrap();
        bus.expect_flush().unwrap();
        bus.publish(event(test, 1)).unwrap();
        bus.flush_ended().unwrap();
        assert_eq!(
            recording.events().iter().map(|e| e.sequence).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(bus.stats().announced, 1);

        bus.expect_flush().unwrap();
        eventually(
            "the dispatcher asleep after an announcement no flush followed",
            || bus.inner.wake.sleeping.load(Ordering::SeqCst),
        );
        bus.publish(event(test, 2)).unwrap();
        eventually("delivery after the sleep", || recording.len() == 3);
    }

    /// A shut bus refuses an announcement as it refuses a flush.
    #[test]
    fn a_shut_bus_refuses_an_announced_flush() {
        let bus = Bus::builder().collector(RecordingCollector::new()).start();
        bus.shutdown().unwrap();
        assert!(matches!(bus.expect_flush(), Err(BusError::Closed { lost: 0 })));
    }

    /// Holds the dispatcher on its first event, so what is sent meanwhile queues up.
    struct SlowFirst(Arc<AtomicU64>, Arc<AtomicU64>, Arc<Mutex<Vec<u64>>>);
    impl Collector for SlowFirst {
        fn on_event(&mut self, _: &Event) {
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                thread::sleep(Duration::from_millis(300));
            }
        }
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.2.lock().unwrap().push(self.0.load(Ordering::SeqCst));
            Ok(())
        }
    }

    /// Sends `blocking` flushes from threads of their own and `awaited` flushes a task would
    /// await, each behind an event of its own, while the dispatcher is held on an earlier
    /// event, then one awaited flush given up at once. All are answered by one flush of the
    /// collectors, each only once its own events were handled, and each waiter hears of a
    /// collector's failure.
    fn flushes_queued_together(blocking: usize, awaited: usize) {
        let (seen, flushes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let at_flush = Arc::new(Mutex::new(Vec::new()));
        let bus = Bus::builder()
            .collector(SlowFirst(
                Arc::clone(&seen),
                Arc::clone(&flushes),
                Arc::clone(&at_flush),
            ))
            .collector(Panics)
            .start();
        bus.publish(event(TestId::generate(), 0)).unwrap();
        let threads: Vec<_> = (0..blocking)
            .map(|_| {
                let bus = bus.clone();
                thread::spawn(move || {
                    bus.publish(event(TestId::generate(), 0)).unwrap();
                    bus.flush()
                })
            })
            .collect();
        let tasks: Vec<_> = (0..awaited)
            .map(|_| {
                bus.publish(event(TestId::generate(), 0)).unwrap();
                bus.flush_ended_async()
            })
            .collect();
        drop(bus.flush_ended_async());
        let answers = threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .chain(tasks.into_iter().map(futures_executor::block_on));
        for answer in answers {
            let err = answer.unwrap_err();
            assert!(err.to_string().contains("collector bug"), "{err}");
        }
        let events = 1 + blocking + awaited;
        assert_eq!(seen.load(Ordering::SeqCst), events as u64);
        assert_eq!(
            *at_flush.lock().unwrap(),
            vec![events as u64],
            "one flush, after all {events} events"
        );
        assert_eq!(flushes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn flushes_queued_together_share_one_collector_flush() {
        flushes_queued_together(8, 0);
    }

    /// Counts its wake-ups, so a test can poll a future by hand and see when it is woken.
    #[derive(Default)]
    struct CountsWakes(AtomicU64);
    impl std::task::Wake for CountsWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll_once(
        flush: &mut PendingFlush,
        wakes: &Arc<CountsWakes>,
    ) -> std::task::Poll<Result<(), BusError>> {
        let waker = std::task::Waker::from(Arc::clone(wakes));
        std::future::Future::poll(
            std::pin::Pin::new(flush),
            &mut std::task::Context::from_waker(&waker),
        )
    }

    /// An awaited flush is pending while the dispatcher still holds an earlier event, is woken
    /// once when its flush is done, and then answers, again if polled again.
    #[test]
    fn an_awaited_flush_resolves_once_every_earlier_event_was_handled() {
        let (bus, release, full, ended) = held_in_an_event(Bus::builder());
        let mut flush = bus.flush_ended_async();
        let wakes = Arc::new(CountsWakes::default());
        assert!(poll_once(&mut flush, &wakes).is_pending());
        // Polled again meanwhile, it keeps one waker and is still pending.
        assert!(poll_once(&mut flush, &wakes).is_pending());
        assert_eq!(ended.load(Ordering::SeqCst), 0);
        release.send(()).unwrap();
        eventually("the flush's wake-up", || wakes.0.load(Ordering::SeqCst) == 1);
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        assert_eq!(full.load(Ordering::SeqCst), 0, "only what ended tests sent");
        assert!(matches!(poll_once(&mut flush, &wakes), Poll::Ready(Ok(()))));
        assert!(matches!(poll_once(&mut flush, &wakes), Poll::Ready(Ok(()))));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    }

    /// Awaited flushes from many threads at once each resolve, and only once their own events
    /// are handled. A wake-up lost between the dispatcher's answer and the task's waker would
    /// leave a wait to its deadline (where the deadlines' thread wakes it), which fails the
    /// test.
    #[test]
    fn awaited_flushes_from_many_threads_each_resolve_after_their_own_events() {
        let timeout = Duration::from_secs(4);
        let recording = RecordingCollector::new();
        let bus = Bus::builder()
            .flush_timeout(timeout)
            .collector(recording.clone())
            .start();
        thread::scope(|s| {
            for _ in 0..8 {
                let (bus, recording) = (bus.clone(), recording.clone());
                s.spawn(move || {
                    let test = TestId::generate();
                    for sequence in 0..100 {
                        bus.publish(event(test, sequence)).unwrap();
                        let started = Instant::now();
                        futures_executor::block_on(bus.flush_ended_async()).unwrap();
                        let waited = started.elapsed();
                        assert!(waited < timeout / 2, "a flush waited {waited:?}");
                        assert_eq!(recording.events_of(test).len() as u64, sequence + 1);
                    }
                });
            }
        });
        assert_eq!(recording.len(), 800);
    }

    /// A stuck collector times an awaited flush out as it does a blocking one, though nothing
    /// but the dispatcher would ever wake the task.
    #[test]
    fn an_awaited_flush_times_out_on_a_stuck_collector() {
        let timeout = Duration::from_millis(50);
        let bus = Bus::builder().flush_timeout(timeout).collector(Stuck).start();
        let started = Instant::now();
        let answer = futures_executor::block_on(bus.flush_ended_async());
        assert!(
            matches!(answer, Err(BusError::FlushTimedOut(t)) if t == timeout),
            "{answer:?}"
        );
        // Stuck sleeps 500 ms; the deadline's slack is an eighth of the timeout.
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
    }

    /// A shut bus answers an awaited flush `Closed` at once; so does one whose message was
    /// queued behind the shutdown and never read, once the dispatcher stops.
    #[test]
    fn an_awaited_flush_of_a_shut_bus_is_answered_closed() {
        let (bus, release, shutdown) = shutting_down();
        let mut queued = bus.flush_ended_async();
        let wakes = Arc::new(CountsWakes::default());
        assert!(poll_once(&mut queued, &wakes).is_pending());
        let started = Instant::now();
        release.send(()).unwrap();
        shutdown.join().unwrap().unwrap();
        assert!(matches!(
            futures_executor::block_on(queued),
            Err(BusError::Closed { lost: 0 })
        ));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(
            futures_executor::block_on(bus.flush_ended_async()),
            Err(BusError::Closed { lost: 0 })
        ));
    }

    /// Awaited flushes join blocking ones in one flush of the collectors, and an awaited
    /// flush given up before its answer still flushes.
    #[test]
    fn awaited_and_blocking_flushes_queued_together_share_one_collector_flush() {
        flushes_queued_together(3, 3);
    }

    #[test]
    fn collectors_registered_late_see_later_events() {
        let early = RecordingCollector::new();
        let late = RecordingCollector::new();
        let bus = Bus::builder().collector(early.clone()).start();
        let test = TestId::generate();
        bus.publish(event(test, 0)).unwrap();
        bus.register(late.clone()).unwrap();
        bus.publish(event(test, 1)).unwrap();
        bus.flush().unwrap();
        assert_eq!(early.len(), 2);
        assert_eq!(late.len(), 1);
    }

    /// A delivered event waits, in a bounded queue, for a producer to drop it; a quiet bus
    /// drops what is left itself. Neither keeps more than the queue holds.
    #[test]
    fn delivered_events_are_dropped_by_producers_and_by_a_quiet_bus() {
        let body: Arc<[u8]> = Arc::from(&b"shared body"[..]);
        let held = |body: &Arc<[u8]>| Arc::strong_count(body) - 1;
        let bus = Bus::builder().start();
        let test = TestId::generate();
        for sequence in 0..5_000 {
            let mut e = event(test, sequence);
            e.kind = EventKind::Attachment(Attachment::new("a", "text/plain", Arc::clone(&body)));
            bus.publish(e).unwrap();
        }
        bus.flush().unwrap();
        assert_eq!(bus.stats().dispatched, 5_000);
        assert!(
            held(&body) <= SPENT_CAPACITY,
            "the bus holds {} delivered events",
            held(&body)
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while held(&body) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(held(&body), 0, "a quiet bus keeps delivered events");
    }
}
