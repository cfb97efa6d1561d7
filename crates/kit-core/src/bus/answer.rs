//! Where a flush's answer goes: to a thread blocked for it, or to a task that awaits it.
//!
//! A task's answer is a slot and a [`Waker`], so that any executor can await a flush without
//! a thread of its own blocked for it; `kit-core` knows no runtime. A slot whose reply is
//! dropped unanswered (the dispatcher gone) answers [`BusError::Closed`], and a slot nobody
//! answers in the bus's flush timeout answers [`BusError::FlushTimedOut`] (see [`Deadlines`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::BusError;
use crate::collector::CollectorError;

/// The dispatcher's end of a flush: answered with the collectors' errors since the previous
/// flush.
pub(super) enum Reply {
    /// A thread waiting in `wait_for`.
    Thread(Sender<Vec<CollectorError>>),
    /// A task awaiting a [`PendingFlush`].
    Task(TaskReply),
}

impl Reply {
    pub(super) fn send(self, errors: Vec<CollectorError>) {
        match self {
            // A waiter may have timed out and gone; nothing else to do then.
            Reply::Thread(tx) => {
                let _ = tx.send(errors);
            }
            Reply::Task(mut reply) => {
                if let Some(shared) = reply.0.take() {
                    shared.answer(Ok(errors));
                }
            }
        }
    }
}

/// What a task's flush came to, and who to wake when it comes.
#[derive(Default)]
struct Slot {
    answer: Option<Result<Vec<CollectorError>, BusError>>,
    waker: Option<Waker>,
}

/// A slot shared by a [`TaskReply`] and its [`PendingFlush`].
#[derive(Default)]
struct Shared(Mutex<Slot>);

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        // Nothing in this module panics while holding the lock; a poisoned slot still holds a
        // whole answer or none.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the answer unless one is set, and wakes the task outside the lock. The waker stays
    /// in the slot, for [`expire`](Self::expire) to wake the task again should the answer
    /// still be there, untaken, at the deadline.
    fn answer(&self, answer: Result<Vec<CollectorError>, BusError>) {
        let waker = {
            let mut slot = self.lock();
            if slot.answer.is_some() {
                return;
            }
            slot.answer = Some(answer);
            slot.waker.clone()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// At the deadline, for a flush whose task has not taken an answer: answers `timeout`
    /// unless answered, and wakes the task either way, so that no wait outlives its deadline,
    /// not even one whose answer came and whose wake-up went astray.
    fn expire(&self, timeout: Duration) {
        let waker = {
            let mut slot = self.lock();
            slot.answer.get_or_insert(Err(BusError::FlushTimedOut(timeout)));
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The dispatcher's end of a task's flush, `None` once answered. Dropped unanswered (the
/// dispatcher stopped, or the message never reached it), it answers that the bus is closed,
/// so the task never waits for an answer that cannot come.
pub(super) struct TaskReply(Option<Arc<Shared>>);

impl Drop for TaskReply {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            shared.answer(Err(BusError::Closed { lost: 0 }));
        }
    }
}

/// A flush a task awaits: resolves once every collector has handled what the flush covers, as
/// the blocking flush returns. Made by [`Bus::flush_ended_async`](super::Bus::flush_ended_async)
/// and [`KitExecutionContext::finish_async`](crate::KitExecutionContext::finish_async).
///
/// It needs no particular runtime: the dispatcher wakes the task through its [`Waker`]. It
/// times out as the blocking flush does, after the bus's
/// [`flush_timeout`](super::BusBuilder::flush_timeout), with [`BusError::FlushTimedOut`].
/// Dropping it does not cancel the flush, only the wait.
///
/// ```
/// use kit_core::{Bus, RecordingCollector};
///
/// let bus = Bus::builder().collector(RecordingCollector::new()).start();
/// futures_executor::block_on(bus.flush_ended_async()).unwrap();
/// ```
#[must_use = "a flush's answer says whether the events are durable; await it"]
pub struct PendingFlush {
    state: Flush,
    /// Events the test lost before its end, reported instead of the flush's own answer (as
    /// [`KitExecutionContext::finish`](crate::KitExecutionContext::finish) does).
    lost: u64,
}

/// Where a [`PendingFlush`] is.
enum Flush {
    /// Waiting for the dispatcher's answer in the slot.
    Waiting(Arc<Shared>),
    /// Come to its outcome, kept so that polling again answers the same.
    Answered(Result<(), BusError>),
}

impl std::fmt::Debug for PendingFlush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingFlush")
            .field("answered", &matches!(self.state, Flush::Answered(_)))
            .finish_non_exhaustive()
    }
}

impl PendingFlush {
    /// A flush with nothing to wait for, already come to `outcome`.
    pub(crate) fn done(outcome: Result<(), BusError>) -> Self {
        PendingFlush {
            state: Flush::Answered(outcome),
            lost: 0,
        }
    }

    /// Reports `lost` events as [`BusError::Closed`] once the flush is answered, whatever its
    /// answer (see [`test_end`]).
    pub(crate) fn losing(mut self, lost: u64) -> Self {
        self.lost = lost;
        self
    }
}

/// A test's end as [`KitExecutionContext::finish`](crate::KitExecutionContext::finish) and
/// its awaited form report it: the events the test lost, if any, over the flush's own answer
/// (a bus shut down mid-test refuses the flush too; the count says more).
pub(crate) fn test_end(flushed: Result<(), BusError>, lost: u64) -> Result<(), BusError> {
    if lost > 0 {
        return Err(BusError::Closed { lost });
    }
    flushed
}

/// The same outcome again, for a flush polled after it came to it.
fn again(outcome: &Result<(), BusError>) -> Result<(), BusError> {
    outcome.as_ref().map_err(BusError::duplicate).copied()
}

impl Future for PendingFlush {
    type Output = Result<(), BusError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = match &self.state {
            Flush::Answered(outcome) => return Poll::Ready(again(outcome)),
            Flush::Waiting(shared) => {
                let mut slot = shared.lock();
                match slot.answer.take() {
                    Some(answer) => answer,
                    None => {
                        match &mut slot.waker {
                            Some(waker) if waker.will_wake(cx.waker()) => {}
                            waker => *waker = Some(cx.waker().clone()),
                        }
                        return Poll::Pending;
                    }
                }
            }
        };
        let flushed = match answer {
            Ok(errors) if errors.is_empty() => Ok(()),
            Ok(errors) => Err(BusError::Collectors(errors)),
            Err(e) => Err(e),
        };
        let outcome = test_end(flushed, self.lost);
        let ready = again(&outcome);
        self.state = Flush::Answered(outcome);
        Poll::Ready(ready)
    }
}

/// The flushes tasks await on one bus, oldest first, for a thread of its own to time out: the
/// dispatcher cannot, since a stuck collector is what holds it. Started with the bus's first
/// such flush, so a bus only ever flushed by blocking threads has no such thread.
pub(super) struct Deadlines {
    timeout: Duration,
    /// Each flush's deadline. Pushed in order of `Instant::now()` under the lock with one
    /// timeout, so the queue is in deadline order, and answered flushes at its front go first.
    waiting: Mutex<VecDeque<(Instant, Weak<Shared>)>>,
    watcher: OnceLock<()>,
}

impl Deadlines {
    pub(super) fn new(timeout: Duration) -> Self {
        Deadlines {
            timeout,
            waiting: Mutex::new(VecDeque::new()),
            watcher: OnceLock::new(),
        }
    }

    /// How late a timeout may be, and so how often the watcher looks: an eighth of the
    /// timeout, between 1 ms and 1 s. The watcher never needs waking for a new flush, whose
    /// deadline is a whole timeout away, so a flush costs it no wake-up.
    fn slack(&self) -> Duration {
        (self.timeout / 8).clamp(Duration::from_millis(1), Duration::from_secs(1))
    }

    /// A new flush for a task: the dispatcher's end, to send, and the task's.
    pub(super) fn pending(self: &Arc<Self>) -> (TaskReply, PendingFlush) {
        let shared = Arc::new(Shared::default());
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            while waiting.front().is_some_and(|(_, weak)| weak.strong_count() == 0) {
                waiting.pop_front();
            }
            waiting.push_back((Instant::now() + self.timeout, Arc::downgrade(&shared)));
        }
        self.watcher.get_or_init(|| {
            let deadlines = Arc::downgrade(self);
            // Without the thread a stuck collector keeps the task waiting; the flush itself
            // still comes when the collector returns, so there is nothing better to do.
            let _ = thread::Builder::new()
                .name("kit-bus-deadlines".into())
                .spawn(move || watch(&deadlines));
        });
        (
            TaskReply(Some(Arc::clone(&shared))),
            PendingFlush {
                state: Flush::Waiting(shared),
                lost: 0,
            },
        )
    }

    /// Answers every flush past its deadline with a timeout, drops those answered or given up,
    /// and says how long to wait before looking again.
    fn expire(&self, now: Instant) -> Duration {
        let mut expired = Vec::new();
        let next = {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            while let Some((deadline, weak)) = waiting.front() {
                match weak.upgrade() {
                    None => {}
                    Some(_) if *deadline > now => break,
                    Some(shared) => expired.push(shared),
                }
                waiting.pop_front();
            }
            waiting.front().map_or(Duration::MAX, |(deadline, _)| {
                deadline.saturating_duration_since(now)
            })
        };
        // Woken outside the lock: a waker may run the task's executor right here.
        for shared in expired {
            shared.expire(self.timeout);
        }
        next.min(self.slack())
    }
}

/// The watcher's loop: ends with the bus, once its last handle is gone.
fn watch(deadlines: &Weak<Deadlines>) {
    while let Some(deadlines) = deadlines.upgrade() {
        let wait = deadlines.expire(Instant::now());
        drop(deadlines);
        thread::sleep(wait);
    }
}
