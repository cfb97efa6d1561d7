//! The [`Collector`] trait: what consumes the bus.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::event::{Event, EventId, EventKind, TestId};
use crate::report::Report;

/// Consumes events from the bus.
///
/// The bus calls a collector from its one dispatcher thread, so a collector needs no locking
/// of its own. Every event reaches every collector exactly once, and the events of one test
/// arrive in the order they were sent. A collector must be a deterministic function of the
/// events it sees: the same collector replayed over an archive by `kit-cli` must come to the
/// same result as it did live.
///
/// Only [`on_event`](Collector::on_event) is required; the other hooks default to doing
/// nothing.
///
/// A collector that panics is taken off the bus (the others carry on) and its panic is reported
/// by the next [`Bus::flush`](crate::Bus::flush).
///
/// ```
/// use kit_core::{Collector, Event, EventKind};
///
/// /// Counts finished tests.
/// #[derive(Default)]
/// struct Finished(usize);
///
/// impl Collector for Finished {
///     fn on_event(&mut self, event: &Event) {
///         if matches!(event.kind, EventKind::TestFinished(_)) {
///             self.0 += 1;
///         }
///     }
/// }
/// ```
pub trait Collector: Send + 'static {
    /// Handles one event. Keep it short: every producer waits while the bus is full.
    fn on_event(&mut self, event: &Event);

    /// Makes everything received so far durable or visible. Called by the flush handshake:
    /// when [`Bus::flush`](crate::Bus::flush) returns, every collector has handled every event
    /// sent before it and returned from `flush`.
    fn flush(&mut self) -> Result<(), CollectorError> {
        Ok(())
    }

    /// Makes durable at least what every test that has ended sent; the rest may wait for the
    /// next [`flush`](Collector::flush). Called instead of `flush` when only test ends wait
    /// ([`KitExecutionContext::finish`](crate::KitExecutionContext::finish) uses
    /// [`Bus::flush_ended`](crate::Bus::flush_ended)), so a collector that commits per test can
    /// leave a test that is still running for later, and commit it once, whole, when it ends.
    /// Defaults to [`flush`](Collector::flush).
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        self.flush()
    }

    /// Called once when the bus shuts down, after the last event. Defaults to
    /// [`flush`](Collector::flush).
    fn finish(&mut self) -> Result<(), CollectorError> {
        self.flush()
    }

    /// A name for messages about this collector; defaults to its type's name.
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(std::any::type_name::<Self>())
    }

    /// Writes what the collector found into `report`: its sections, metrics and tables.
    /// `kit-cli` calls it after replaying an archive; tests may call it on a live collector
    /// kept through [`SharedCollector`]. Defaults to writing nothing.
    fn write_report(&self, report: &mut Report) {
        let _ = report;
    }
}

impl<C: Collector + ?Sized> Collector for Box<C> {
    fn on_event(&mut self, event: &Event) {
        (**self).on_event(event);
    }
    fn flush(&mut self) -> Result<(), CollectorError> {
        (**self).flush()
    }
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        (**self).flush_ended()
    }
    fn finish(&mut self) -> Result<(), CollectorError> {
        (**self).finish()
    }
    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
    fn write_report(&self, report: &mut Report) {
        (**self).write_report(report);
    }
}

impl<C: Collector> Collector for Option<C> {
    fn on_event(&mut self, event: &Event) {
        if let Some(c) = self {
            c.on_event(event);
        }
    }
    fn flush(&mut self) -> Result<(), CollectorError> {
        self.as_mut().map_or(Ok(()), Collector::flush)
    }
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        self.as_mut().map_or(Ok(()), Collector::flush_ended)
    }
    fn finish(&mut self) -> Result<(), CollectorError> {
        self.as_mut().map_or(Ok(()), Collector::finish)
    }
    fn name(&self) -> Cow<'_, str> {
        self.as_ref().map_or(Cow::Borrowed("None"), Collector::name)
    }
    fn write_report(&self, report: &mut Report) {
        if let Some(c) = self {
            c.write_report(report);
        }
    }
}

/// A list of collectors is a collector: each hook runs on every member in order, and the
/// first error is returned after all have run.
impl<C: Collector> Collector for Vec<C> {
    fn on_event(&mut self, event: &Event) {
        for c in self.iter_mut() {
            c.on_event(event);
        }
    }
    fn flush(&mut self) -> Result<(), CollectorError> {
        self.iter_mut().map(Collector::flush).fold(Ok(()), Result::and)
    }
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        self.iter_mut()
            .map(Collector::flush_ended)
            .fold(Ok(()), Result::and)
    }
    fn finish(&mut self) -> Result<(), CollectorError> {
        self.iter_mut().map(Collector::finish).fold(Ok(()), Result::and)
    }
    fn write_report(&self, report: &mut Report) {
        for c in self {
            c.write_report(report);
        }
    }
}

/// A collector that can be read while it runs on the bus: clones share one collector.
///
/// ```
/// use kit_core::{Bus, Collector, Event, SharedCollector};
///
/// #[derive(Default)]
/// struct Count(usize);
/// impl Collector for Count {
///     fn on_event(&mut self, _: &Event) {
///         self.0 += 1;
///     }
/// }
///
/// let shared = SharedCollector::new(Count::default());
/// let bus = Bus::builder().collector(shared.clone()).start();
/// bus.flush().unwrap();
/// assert_eq!(shared.with(|c| c.0), 0);
/// ```
pub struct SharedCollector<C> {
    inner: Arc<Mutex<C>>,
}

impl<C> Clone for SharedCollector<C> {
    fn clone(&self) -> Self {
        SharedCollector {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: Collector> SharedCollector<C> {
    /// Wraps `collector`.
    pub fn new(collector: C) -> Self {
        SharedCollector {
            inner: Arc::new(Mutex::new(collector)),
        }
    }

    /// Reads the collector.
    pub fn with<R>(&self, f: impl FnOnce(&C) -> R) -> R {
        f(&self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The collector's report.
    pub fn report(&self) -> Report {
        let mut report = Report::default();
        self.with(|c| c.write_report(&mut report));
        report
    }
}

impl<C: Collector> Collector for SharedCollector<C> {
    fn on_event(&mut self, event: &Event) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_event(event);
    }
    fn flush(&mut self) -> Result<(), CollectorError> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).flush()
    }
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush_ended()
    }
    fn finish(&mut self) -> Result<(), CollectorError> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).finish()
    }
    fn name(&self) -> Cow<'_, str> {
        Cow::Owned(
            self.inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .name()
                .into_owned(),
        )
    }
    fn write_report(&self, report: &mut Report) {
        self.with(|c| c.write_report(report));
    }
}

/// A collector failed: it returned an error from a hook, or panicked.
#[derive(Debug)]
pub struct CollectorError {
    collector: String,
    source: Box<dyn StdError + Send + Sync>,
}

impl CollectorError {
    /// An error of the collector named `collector`.
    pub fn new(collector: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        CollectorError {
            collector: collector.into(),
            source: source.into(),
        }
    }

    /// The collector's name.
    pub fn collector(&self) -> &str {
        &self.collector
    }

    /// The same failure for another waiter of a grouped flush (the source kept as its message).
    pub(crate) fn duplicate(&self) -> Self {
        CollectorError {
            collector: self.collector.clone(),
            source: self.source.to_string().into(),
        }
    }
}

impl fmt::Display for CollectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "collector {} failed: {}", self.collector, self.source)
    }
}

impl StdError for CollectorError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// Records every event it receives, for tests. Clones share one recording, so keep a clone
/// and hand the other to the bus.
///
/// ```
/// use kit_core::{Bus, RecordingCollector};
///
/// let recording = RecordingCollector::new();
/// let bus = Bus::builder().collector(recording.clone()).start();
/// // … publish events …
/// bus.flush().unwrap();
/// assert!(recording.events().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct RecordingCollector {
    events: Arc<Mutex<Vec<Event>>>,
}

impl RecordingCollector {
    /// An empty recording.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Event>> {
        // A panic while holding this lock cannot leave the Vec half-updated.
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of every event recorded so far, in arrival order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }

    /// The events of one test, in arrival order.
    pub fn events_of(&self, test: TestId) -> Vec<Event> {
        self.lock()
            .iter()
            .filter(|e| e.test_id == test)
            .cloned()
            .collect()
    }

    /// How many events were recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Removes and returns every event recorded so far.
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.lock())
    }

    /// The tree of one test's events as indented text, one event a line: operations and
    /// observations by name, nested under their parents; tests by their kind.
    ///
    /// Handy for asserting the shape of a trace:
    /// `assert_eq!(recording.tree(test), "test\n  http.request\n    http.response\n")`.
    pub fn tree(&self, test: TestId) -> String {
        render_tree(&self.events_of(test))
    }
}

impl Collector for RecordingCollector {
    fn on_event(&mut self, event: &Event) {
        self.lock().push(event.clone());
    }
}

/// Renders events as an indented tree: `test` for a test's start, the name of each
/// operation, observation and attachment, nested under its parent. Ends of operations and
/// tests are not shown. Children are listed in sequence order.
pub fn render_tree(events: &[Event]) -> String {
    let mut children: std::collections::HashMap<Option<EventId>, Vec<&Event>> = Default::default();
    let mut known = std::collections::HashSet::new();
    for e in events {
        if !matches!(e.kind, EventKind::TestFinished(_) | EventKind::OperationEnded(_)) {
            known.insert(e.id);
        }
    }
    for e in events {
        if matches!(e.kind, EventKind::TestFinished(_) | EventKind::OperationEnded(_)) {
            continue;
        }
        // An event whose parent is not among these events is shown at the top.
        let parent = e.parent_id.filter(|p| known.contains(p));
        children.entry(parent).or_default().push(e);
    }
    for list in children.values_mut() {
        list.sort_by_key(|e| (e.test_id, e.sequence));
    }
    let mut out = String::new();
    fn walk(
        out: &mut String,
        children: &std::collections::HashMap<Option<EventId>, Vec<&Event>>,
        parent: Option<EventId>,
        depth: usize,
    ) {
        for e in children.get(&parent).into_iter().flatten() {
            let label: &str = match &e.kind {
                EventKind::TestStarted(_) => "test",
                EventKind::OperationStarted(op) => &op.name,
                EventKind::Observation(o) => &o.name,
                EventKind::Attachment(a) => &a.name,
                other => other.name(),
            };
            for _ in 0..depth {
                out.push_str("  ");
            }
            out.push_str(label);
            out.push('\n');
            walk(out, children, Some(e.id), depth + 1);
        }
    }
    walk(&mut out, &children, None, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventId, OperationEnded, OperationStarted, OperationStatus, RunId, Timestamp};
    use crate::report::ReportSection;
    use crate::{Attachment, Attributes, Observation, TestFinished, TestOutcome, TestStarted};
    use std::time::Duration;

    /// Logs every hook it is called for as `name:hook`, and fails the hooks named in `fail`.
    #[derive(Clone)]
    struct Probe {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        fail: &'static [&'static str],
    }

    impl Probe {
        fn new(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Self {
            Probe {
                name,
                log: Arc::clone(log),
                fail: &[],
            }
        }

        fn failing(mut self, hooks: &'static [&'static str]) -> Self {
            self.fail = hooks;
            self
        }

        fn hook(&self, hook: &str) -> Result<(), CollectorError> {
            self.log.lock().unwrap().push(format!("{}:{hook}", self.name));
            if self.fail.contains(&hook) {
                Err(CollectorError::new(self.name, format!("{hook} refused")))
            } else {
                Ok(())
            }
        }
    }

    impl Collector for Probe {
        fn on_event(&mut self, _: &Event) {
            let _ = self.hook("event");
        }
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.hook("flush")
        }
        fn flush_ended(&mut self) -> Result<(), CollectorError> {
            self.hook("flush_ended")
        }
        fn finish(&mut self) -> Result<(), CollectorError> {
            self.hook("finish")
        }
        fn name(&self) -> Cow<'_, str> {
            Cow::Borrowed(self.name)
        }
        fn write_report(&self, report: &mut Report) {
            report
                .sections
                .push(ReportSection::new(self.name, "Probe", self.name));
        }
    }

    fn event(test: TestId, sequence: u64, parent: Option<EventId>, kind: EventKind) -> Event {
        Event {
            run_id: RunId::new("run").unwrap(),
            test_id: test,
            id: EventId::generate(),
            parent_id: parent,
            sequence,
            timestamp: Timestamp::now(),
            kind,
        }
    }

    fn started(test: TestId) -> Event {
        event(test, 0, None, EventKind::TestStarted(TestStarted::new("t")))
    }

    /// Every hook of `collector`, once each, in the order the bus calls them; what each
    /// returned, and the report it writes.
    fn drive(collector: &mut dyn Collector) -> (Vec<bool>, Vec<String>) {
        collector.on_event(&started(TestId::generate()));
        let results = vec![
            collector.flush().is_ok(),
            collector.flush_ended().is_ok(),
            collector.finish().is_ok(),
        ];
        let mut report = Report::default();
        collector.write_report(&mut report);
        (results, report.sections.into_iter().map(|s| s.id).collect())
    }

    fn log() -> Arc<Mutex<Vec<String>>> {
        Arc::new(Mutex::new(Vec::new()))
    }

    fn taken(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        std::mem::take(&mut *log.lock().unwrap())
    }

    const EVERY_HOOK: [&str; 4] = ["a:event", "a:flush", "a:flush_ended", "a:finish"];

    #[test]
    fn a_boxed_collector_forwards_every_hook() {
        let log = log();
        let mut boxed: Box<dyn Collector> = Box::new(Probe::new("a", &log));
        assert_eq!(drive(&mut boxed), (vec![true; 3], vec!["a".to_owned()]));
        assert_eq!(taken(&log), EVERY_HOOK);
        assert_eq!(boxed.name(), "a");

        let mut failing: Box<dyn Collector> =
            Box::new(Probe::new("a", &log).failing(&["flush", "flush_ended", "finish"]));
        assert_eq!(drive(&mut failing).0, vec![false; 3]);
    }

    #[test]
    fn some_collector_forwards_every_hook_and_none_does_nothing() {
        let log = log();
        let mut some = Some(Probe::new("a", &log));
        assert_eq!(drive(&mut some), (vec![true; 3], vec!["a".to_owned()]));
        assert_eq!(taken(&log), EVERY_HOOK);
        assert_eq!(some.name(), "a");

        let mut failing = Some(Probe::new("a", &log).failing(&["flush", "flush_ended", "finish"]));
        assert_eq!(drive(&mut failing).0, vec![false; 3]);

        let mut none: Option<Probe> = None;
        assert_eq!(drive(&mut none), (vec![true; 3], Vec::<String>::new()));
        assert_eq!(none.name(), "None");
    }

    #[test]
    fn a_list_runs_every_member_in_order_and_returns_the_first_error() {
        let log = log();
        let mut list = vec![
            Probe::new("a", &log),
            Probe::new("b", &log).failing(&["flush", "flush_ended", "finish"]),
            Probe::new("c", &log).failing(&["flush", "flush_ended", "finish"]),
        ];
        list.on_event(&started(TestId::generate()));
        assert_eq!(taken(&log), ["a:event", "b:event", "c:event"]);
        type Hook = fn(&mut Vec<Probe>) -> Result<(), CollectorError>;
        let hooks: [(&str, Hook); 3] = [
            ("flush", |l| l.flush()),
            ("flush_ended", |l| l.flush_ended()),
            ("finish", |l| l.finish()),
        ];
        for (hook, call) in hooks {
            let err = call(&mut list).expect_err(hook);
            assert_eq!(err.collector(), "b", "{hook}: the first error wins");
            assert_eq!(err.to_string(), format!("collector b failed: {hook} refused"));
            // Every member ran even after one failed.
            assert_eq!(
                taken(&log),
                [format!("a:{hook}"), format!("b:{hook}"), format!("c:{hook}")]
            );
        }
        let mut report = Report::default();
        list.write_report(&mut report);
        let ids: Vec<_> = report.sections.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);

        let mut fine = vec![Probe::new("a", &log)];
        assert_eq!(drive(&mut fine).0, vec![true; 3]);
    }

    #[test]
    fn a_shared_collector_forwards_every_hook_to_the_one_collector_its_clones_share() {
        let log = log();
        let shared = SharedCollector::new(Probe::new("a", &log));
        let mut on_the_bus = shared.clone();
        assert_eq!(drive(&mut on_the_bus), (vec![true; 3], vec!["a".to_owned()]));
        assert_eq!(taken(&log), EVERY_HOOK);
        assert_eq!(on_the_bus.name(), "a");
        assert_eq!(shared.with(|p| p.name), "a");
        assert_eq!(shared.report().sections[0].id, "a");

        let mut failing =
            SharedCollector::new(Probe::new("a", &log).failing(&["flush", "flush_ended", "finish"]));
        assert_eq!(drive(&mut failing).0, vec![false; 3]);
    }

    #[test]
    fn the_default_hooks_flush_and_name_the_type() {
        struct Counts {
            flushes: usize,
        }
        impl Collector for Counts {
            fn on_event(&mut self, _: &Event) {}
            fn flush(&mut self) -> Result<(), CollectorError> {
                self.flushes += 1;
                Err(CollectorError::new("counts", "full"))
            }
        }
        let mut counts = Counts { flushes: 0 };
        assert!(counts.flush_ended().is_err());
        assert!(counts.finish().is_err());
        assert_eq!(counts.flushes, 2);
        assert!(
            counts
                .name()
                .ends_with("collector::tests::the_default_hooks_flush_and_name_the_type::Counts")
        );
        let mut report = Report::default();
        counts.write_report(&mut report);
        assert_eq!(report, Report::default());
    }

    #[test]
    fn a_collector_error_names_its_collector_and_keeps_its_source() {
        let err = CollectorError::new("archive", std::io::Error::other("disk full"));
        assert_eq!(err.collector(), "archive");
        assert_eq!(err.to_string(), "collector archive failed: disk full");
        assert_eq!(StdError::source(&err).unwrap().to_string(), "disk full");
        let again = err.duplicate();
        assert_eq!(
            (again.collector(), again.to_string()),
            (err.collector(), err.to_string())
        );
    }

    #[test]
    fn a_recording_keeps_every_event_in_order_and_gives_one_test_its_own() {
        let recording = RecordingCollector::new();
        assert!(recording.is_empty());
        let (a, b) = (TestId::generate(), TestId::generate());
        let events = [
            started(a),
            started(b),
            event(
                a,
                1,
                None,
                EventKind::TestFinished(TestFinished {
                    outcome: TestOutcome::Passed,
                    duration: Duration::ZERO,
                }),
            ),
        ];
        let mut on_the_bus = recording.clone();
        for e in &events {
            on_the_bus.on_event(e);
        }
        assert_eq!(recording.len(), 3);
        assert!(!recording.is_empty());
        assert_eq!(recording.events(), events);
        assert_eq!(recording.events_of(a), [events[0].clone(), events[2].clone()]);
        assert_eq!(recording.take(), events);
        assert!(recording.is_empty());
        assert_eq!(recording.len(), 0);
    }

    #[test]
    fn a_tree_nests_children_under_their_parents_in_sequence_order() {
        let test = TestId::generate();
        let root = started(test);
        let request = event(
            test,
            1,
            Some(root.id),
            EventKind::OperationStarted(OperationStarted::new("http.request", "GET /")),
        );
        let response = event(
            test,
            3,
            Some(request.id),
            EventKind::Observation(Observation::new("http.response", Attributes::new())),
        );
        let attachment = event(
            test,
            2,
            Some(request.id),
            EventKind::Attachment(Attachment::new("rest-01-request", "text/plain", b"x".to_vec())),
        );
        let ended = event(
            test,
            4,
            Some(root.id),
            EventKind::OperationEnded(OperationEnded::new(
                request.id,
                OperationStatus::Ok,
                Duration::ZERO,
            )),
        );
        // A parent that is not among the events puts its child at the top.
        let orphan = event(
            test,
            5,
            Some(EventId::generate()),
            EventKind::Unknown { kind: "later".into() },
        );
        // The end of an operation is never a parent, even when named as one.
        let under_end = event(
            test,
            6,
            Some(ended.id),
            EventKind::Observation(Observation::new("after.end", Attributes::new())),
        );
        let finished = event(
            test,
            7,
            Some(root.id),
            EventKind::TestFinished(TestFinished {
                outcome: TestOutcome::Passed,
                duration: Duration::ZERO,
            }),
        );
        let events = [
            finished, under_end, orphan, response, ended, attachment, request, root,
        ];
        assert_eq!(
            render_tree(&events),
            "test\n  http.request\n    rest-01-request\n    http.response\nlater\nafter.end\n"
        );
    }
}
