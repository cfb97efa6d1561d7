//! The event model: one envelope, [`Event`], around one enum, [`EventKind`].
//!
//! A run is a tree close to OpenTelemetry's spans and span events, so that exporting it is a
//! mapping rather than a translation:
//!
//! | kit | OpenTelemetry |
//! | --- | --- |
//! | [`TestId`] (UUIDv7, 16 bytes) | trace id |
//! | [`EventId`] (non-zero, 8 bytes) | span id |
//! | [`TestStarted`] … [`TestFinished`] | the root span of a test |
//! | [`OperationStarted`] … [`OperationEnded`] | a child span (`http.request`, `assert.*`) |
//! | [`Observation`] | a span event (`http.response`, `http.failure`, …) |
//! | [`Attachment`] | a span event pointing at a blob |
//!
//! Attribute keys follow the OpenTelemetry HTTP semantic conventions where one exists; see
//! [`crate::semconv`].
//!
//! # Wire format
//!
//! Events serialize to one JSON object each. The archive stores them as JSON lines, each in an
//! entry that names its run and test, so its lines leave those two out
//! ([`Event::write_json_in_scope`], [`Event::from_json_in_scope`]):
//!
//! ```json
//! {"run_id":"r1","test_id":"0193…","id":"5f0c…","parent_id":null,"sequence":0,
//!  "timestamp":1732243200000000000,"kind":{"observation":{"name":"http.response","attributes":{…}}}}
//! ```
//!
//! `kind` holds exactly one key naming the variant. Readers skip event kinds they do not know
//! (they come back as [`EventKind::Unknown`]) and ignore unknown fields, so a newer minor
//! version of the format stays readable.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU64;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::json::Lent;

// === ids ===

/// Identifies one run of a test suite: every test of the run, in every process, shares it.
///
/// The `kit` facade takes it from `KIT_RUN_ID`, else `NEXTEST_RUN_ID`, else the parent `cargo`
/// process, else [`RunId::generate`]. It names the archive file (`kit-{runId}.kittrace`) and a folder
/// inside it, so it is restricted to ASCII letters, digits, `-`, `_` and `.`, at most 128
/// characters, and never `.` or `..`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(Arc<str>);

/// A run id that cannot name a file: see [`RunId`] for the rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid run id {value:?}: {reason}")]
pub struct InvalidRunId {
    /// The rejected value.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl RunId {
    /// The longest run id accepted.
    pub const MAX_LEN: usize = 128;

    /// Validates `value` as a run id.
    ///
    /// ```
    /// use kit_core::RunId;
    /// assert!(RunId::new("nightly-2026.11.22").is_ok());
    /// assert!(RunId::new("../escape").is_err());
    /// ```
    pub fn new(value: impl Into<String>) -> Result<Self, InvalidRunId> {
        let value = value.into();
        let reason = if value.is_empty() {
            Some("it is empty")
        } else if value.len() > Self::MAX_LEN {
            Some("it is longer than 128 characters")
        } else if value == "." || value == ".." {
            Some("it is a relative path component")
        } else if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            Some("only ASCII letters, digits, '-', '_' and '.' are allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(InvalidRunId { value, reason }),
            None => Ok(RunId(value.into())),
        }
    }

    /// A new, time-ordered run id (a UUIDv7 in its hyphenated form).
    pub fn generate() -> Self {
        RunId(
            uuid::Uuid::from_u128(v7::generate())
                .hyphenated()
                .to_string()
                .into(),
        )
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An equal id that shares no reference count with this one: a test's own. Every event
    /// carries its run's id; with one count for the whole run, every event's clone and drop
    /// was an atomic operation on one cache line that every producing thread wrote.
    pub(crate) fn unshared(&self) -> RunId {
        RunId(Arc::from(&*self.0))
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunId({:?})", &*self.0)
    }
}

impl FromStr for RunId {
    type Err = InvalidRunId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunId::new(s)
    }
}

impl Serialize for RunId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_str(deserializer, "a run id", |text| RunId::new(text))
    }
}

/// Reads a string and parses it where it lies. serde's `Cow<str>` always copies it into a
/// `String`, and reading an archive parsed three ids from a copy on every line (a seventh of
/// the readers' instructions in `kit-cli report`).
fn parse_str<'de, D, T, E>(
    deserializer: D,
    expecting: &'static str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    E: fmt::Display,
{
    struct ParseStr<F>(F, &'static str);
    impl<T, E: fmt::Display, F: FnOnce(&str) -> Result<T, E>> Visitor<'_> for ParseStr<F> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.1)
        }
        fn visit_str<Er: de::Error>(self, v: &str) -> Result<T, Er> {
            (self.0)(v).map_err(Er::custom)
        }
    }
    deserializer.deserialize_str(ParseStr(parse, expecting))
}

/// Identifies one execution of one test: a UUIDv7, so ids sort by start time.
///
/// It is the test's OpenTelemetry trace id when a run is exported.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TestId(u128);

impl TestId {
    /// A new id, later than every id this process generated before it.
    pub fn generate() -> Self {
        TestId(v7::generate())
    }

    /// Wraps a raw 128-bit value.
    pub const fn from_u128(value: u128) -> Self {
        TestId(value)
    }

    /// The raw 128-bit value.
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The 16 bytes, big-endian, as OpenTelemetry wants a trace id.
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }
}

impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&uuid::Uuid::from_u128(self.0).hyphenated(), f)
    }
}

impl fmt::Debug for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestId({self})")
    }
}

/// A test id that is not a UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid test id {0:?}: expected a UUID")]
pub struct InvalidTestId(pub String);

impl FromStr for TestId {
    type Err = InvalidTestId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::parse_str(s)
            .map(|u| TestId(u.as_u128()))
            .map_err(|_| InvalidTestId(s.to_owned()))
    }
}

impl Serialize for TestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buf = uuid::Uuid::encode_buffer();
        serializer.serialize_str(uuid::Uuid::from_u128(self.0).hyphenated().encode_lower(&mut buf))
    }
}

impl<'de> Deserialize<'de> for TestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_str(deserializer, "a test id", str::parse::<TestId>)
    }
}

/// Identifies one event: random, non-zero, unique across a run with overwhelming probability.
///
/// Operations are referred to by their `OperationStarted` event's id (children name it as
/// their parent); a request id shown to users is the id of its `http.request` operation. It is
/// the OpenTelemetry span id when a run is exported. Displayed as 16 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(NonZeroU64);

impl EventId {
    /// A new random id.
    pub fn generate() -> Self {
        // A per-thread wyrand generator: ids must be unique, not secret, and this is on the
        // hot path of every event, so no OS call and no shared state.
        thread_local! {
            static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(std::thread::current().id()));
        }
        STATE.with(|state| {
            loop {
                let mut s = state.get();
                let value = wyrand(&mut s);
                state.set(s);
                if let Some(id) = NonZeroU64::new(value) {
                    return EventId(id);
                }
            }
        })
    }

    /// Wraps a raw value; `None` for zero, which is never a valid id.
    pub const fn from_u64(value: u64) -> Option<Self> {
        match NonZeroU64::new(value) {
            Some(v) => Some(EventId(v)),
            None => None,
        }
    }

    /// The raw value.
    pub const fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// The 8 bytes, big-endian, as OpenTelemetry wants a span id.
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0.get().to_be_bytes()
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventId({self})")
    }
}

/// An event id that is not 1 to 16 hex digits, or is zero.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event id {0:?}: expected 16 hexadecimal digits, not all zero")]
pub struct InvalidEventId(pub String);

impl FromStr for EventId {
    type Err = InvalidEventId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventId::from_hex(s.as_bytes()).ok_or_else(|| InvalidEventId(s.to_owned()))
    }
}

impl EventId {
    /// The id written as `hex`: 1 to 16 hex digits, not all zero.
    ///
    /// By hand and without branches on the digits: readers parse two ids a line, and
    /// `from_str_radix` was a tenth of reading an event's envelope (it also takes a leading
    /// `+`, which no id is written with); a digit at a time, matched by range, still cost 170
    /// instructions an id.
    pub(crate) fn from_hex(hex: &[u8]) -> Option<EventId> {
        if hex.is_empty() || hex.len() > 16 {
            return None;
        }
        let mut value = 0u64;
        // Every valid digit's value fits the low nibble; any other byte's is 0xff.
        let mut invalid = 0u8;
        for &b in hex {
            let digit = HEX_VALUES[usize::from(b)];
            invalid |= digit;
            value = value << 4 | u64::from(digit & 0xf);
        }
        if invalid & 0xf0 != 0 {
            return None;
        }
        EventId::from_u64(value)
    }
}

/// Each byte's value as a hex digit (either case), or 0xff.
const HEX_VALUES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 16];
        let hex = hex16(self.0.get(), &mut buf);
        serializer.serialize_str(hex)
    }
}

fn hex16(value: u64, buf: &mut [u8; 16]) -> &str {
    *buf = hex16_bytes(value);
    // Every byte written above is an ASCII hex digit.
    std::str::from_utf8(buf).unwrap_or_default()
}

/// `value` as 16 lowercase hex digits, eight at a time: each half's nibbles are spread one to
/// a byte and turned into digits by arithmetic on the whole word (a digit at a time, with the
/// text checked as UTF-8 after, was 270 instructions of every archived event).
pub(crate) fn hex16_bytes(value: u64) -> [u8; 16] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    fn eight(half: u32) -> [u8; 8] {
        let n = u64::from(half);
        let n = ((n & 0xffff_0000) << 16) | (n & 0xffff);
        let n = ((n & 0x0000_ff00_0000_ff00) << 8) | (n & 0x0000_00ff_0000_00ff);
        let n = ((n & 0x00f0_00f0_00f0_00f0) << 4) | (n & 0x000f_000f_000f_000f);
        // 1 in each byte whose nibble is 10 or more: adding 6 carries it into bit 4.
        let letters = ((n + ONES * 6) >> 4) & ONES;
        (n + ONES * u64::from(b'0') + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&eight((value >> 32) as u32));
    out[8..].copy_from_slice(&eight(value as u32));
    out
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_str(deserializer, "an event id", str::parse::<EventId>)
    }
}

// === time ===

/// Wall-clock time of an event: nanoseconds since the Unix epoch (OpenTelemetry's unit).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Timestamp(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Wraps nanoseconds since the Unix epoch.
    pub const fn from_unix_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn as_unix_nanos(self) -> u64 {
        self.0
    }

    /// The UTC calendar date (year, month 1–12, day 1–31) and the seconds into that day.
    ///
    /// ```
    /// use kit_core::Timestamp;
    ///
    /// let t = Timestamp::from_unix_nanos(951_782_400_000_000_000 + 3_661_000_000_000);
    /// assert_eq!(t.utc_date_and_seconds(), ((2000, 2, 29), 3_661));
    /// ```
    pub fn utc_date_and_seconds(self) -> ((i64, u32, u32), u32) {
        let seconds = self.0 / 1_000_000_000;
        let days = (seconds / 86_400) as i64;
        (civil_from_days(days), (seconds % 86_400) as u32)
    }

    /// RFC 3339 in UTC with milliseconds: `2026-11-22T10:00:00.123Z`.
    ///
    /// ```
    /// use kit_core::Timestamp;
    ///
    /// assert_eq!(Timestamp::from_unix_nanos(0).to_rfc3339_millis(), "1970-01-01T00:00:00.000Z");
    /// ```
    pub fn to_rfc3339_millis(self) -> String {
        let ((year, month, day), rest) = self.utc_date_and_seconds();
        let millis = (self.0 % 1_000_000_000) / 1_000_000;
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rest / 3600,
            (rest % 3600) / 60,
            rest % 60
        )
    }
}

/// Howard Hinnant's days-to-civil: the proleptic Gregorian date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

mod duration_ns {
    use super::*;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}

/// One step of wyrand: 64 well-mixed bits, the state only counted on. The ids' generators
/// ([`EventId::generate`], `v7`) use it: their ids must be unique, not secret.
fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
    ((t >> 64) as u64) ^ (t as u64)
}

mod json_line;
mod line_reader;
pub(crate) use json_line::escape as write_json_string;
mod v7;

// === the envelope ===

/// One event: the envelope every producer fills and every collector reads.
///
/// Producers do not build envelopes by hand: a test's
/// [`KitExecutionContext`](crate::KitExecutionContext) assigns ids, sequence numbers and
/// timestamps, so that events of one test are numbered in the order they were sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The run the event belongs to.
    pub run_id: RunId,
    /// The test the event belongs to.
    pub test_id: TestId,
    /// This event's id.
    pub id: EventId,
    /// The operation (or test) this event belongs under; `None` for a test's root events.
    #[serde(default)]
    pub parent_id: Option<EventId>,
    /// Position of the event in its test's stream, from 0, without gaps.
    pub sequence: u64,
    /// When the event was made.
    pub timestamp: Timestamp,
    /// What happened.
    pub kind: EventKind,
}

impl Event {
    /// Reads one event written by [`Event::write_json_in_scope`], whose run and test are those
    /// of its container: `run_id` and `test_id` when the line leaves them out. A line that
    /// names them (as [`Event::write_json`] writes, and archives of format 1 stored) keeps its
    /// own.
    ///
    /// ```
    /// use kit_core::event::{Event, EventKind, RunId, TestId};
    ///
    /// let run = RunId::new("run").unwrap();
    /// let test = TestId::generate();
    /// let line = r#"{"id":"00000000000000ff","sequence":0,"timestamp":1,"kind":{"test_started":{"name":"t"}}}"#;
    /// let event = Event::from_json_in_scope(line, &run, test).unwrap();
    /// assert_eq!((&event.run_id, event.test_id), (&run, test));
    /// assert!(matches!(event.kind, EventKind::TestStarted(_)));
    /// ```
    ///
    /// # Errors
    ///
    /// The line is not JSON, or not an event.
    pub fn from_json_in_scope(
        line: &str,
        run_id: &RunId,
        test_id: TestId,
    ) -> Result<Event, serde_json::Error> {
        // The kit's own lines, read by hand; anything else (and every error) through serde.
        match line_reader::read_in_scope(line, run_id, test_id) {
            Some(event) => Ok(event),
            None => Event::from_json_in_scope_by_serde(line, run_id, test_id),
        }
    }

    /// The events of `text`, one a line, each read as [`Event::from_json_in_scope`] reads a
    /// line; empty lines are skipped. A segment of the archive is such a text.
    ///
    /// Reading the whole text, rather than line by line, spares a pass over it: the kit's own
    /// lines are read where they lie, and only a line in another form is looked for its end.
    ///
    /// ```
    /// use kit_core::event::{Event, RunId, TestId};
    ///
    /// let run = RunId::new("run").unwrap();
    /// let test = TestId::generate();
    /// let text = concat!(
    ///     r#"{"id":"00000000000000ff","sequence":0,"timestamp":1,"kind":{"test_started":{"name":"t"}}}"#,
    ///     "\n\n",
    ///     "not an event\n",
    /// );
    /// let read: Vec<_> = Event::lines_in_scope(text, &run, test).collect();
    /// assert_eq!(read.len(), 2);
    /// assert_eq!(read[0].as_ref().unwrap().sequence, 0);
    /// assert!(read[1].is_err());
    /// ```
    pub fn lines_in_scope<'a>(text: &'a str, run_id: &'a RunId, test_id: TestId) -> EventLines<'a> {
        EventLines {
            text,
            at: 0,
            run_id,
            test_id,
        }
    }

    /// [`Event::from_json_in_scope`] through serde alone: every form the format allows.
    fn from_json_in_scope_by_serde(
        line: &str,
        run_id: &RunId,
        test_id: TestId,
    ) -> Result<Event, serde_json::Error> {
        let line: ScopedLine = serde_json::from_str(line)?;
        Ok(Event {
            run_id: line.run_id.unwrap_or_else(|| run_id.clone()),
            test_id: line.test_id.unwrap_or(test_id),
            id: line.id,
            parent_id: line.parent_id,
            sequence: line.sequence,
            timestamp: line.timestamp,
            kind: line.kind,
        })
    }
}

/// The events of a text of lines; see [`Event::lines_in_scope`].
#[derive(Debug, Clone)]
pub struct EventLines<'a> {
    text: &'a str,
    /// Where the next line begins (or an empty line before it).
    at: usize,
    run_id: &'a RunId,
    test_id: TestId,
}

impl Iterator for EventLines<'_> {
    type Item = Result<Event, serde_json::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.text.as_bytes();
        while bytes.get(self.at) == Some(&b'\n') {
            self.at += 1;
        }
        if self.at >= bytes.len() {
            return None;
        }
        let start = self.at;
        // Read by hand, it is the whole line only where a line end (or the text's end) follows.
        if let Some((event, end)) = line_reader::read_at(self.text, start, self.run_id, self.test_id)
            && matches!(bytes.get(end), None | Some(b'\n'))
        {
            self.at = end;
            return Some(Ok(event));
        }
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |n| start + n);
        self.at = end;
        Some(Event::from_json_in_scope_by_serde(
            &self.text[start..end],
            self.run_id,
            self.test_id,
        ))
    }
}

impl std::iter::FusedIterator for EventLines<'_> {}

/// An [`Event`] as a line in a scope writes it: the run and test ids may be left to the scope.
#[derive(Deserialize)]
struct ScopedLine {
    #[serde(default)]
    run_id: Option<RunId>,
    #[serde(default)]
    test_id: Option<TestId>,
    id: EventId,
    #[serde(default)]
    parent_id: Option<EventId>,
    sequence: u64,
    timestamp: Timestamp,
    kind: EventKind,
}

/// What an [`Event`] reports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// A test began. Always the first event of a test, with sequence 0.
    TestStarted(TestStarted),
    /// A test ended. Always the last event of a test.
    TestFinished(TestFinished),
    /// An operation (a span) began: a request, an assertion.
    OperationStarted(OperationStarted),
    /// An operation ended.
    OperationEnded(OperationEnded),
    /// Something was observed at a point in time (a span event).
    Observation(Observation),
    /// A document was attached to the test.
    Attachment(Attachment),
    /// An event kind this version does not know (written by a newer minor version).
    Unknown {
        /// The kind's name as it was written.
        kind: String,
    },
}

impl EventKind {
    /// The kind's name as it appears on the wire (`"test_started"`, `"observation"`, …).
    pub fn name(&self) -> &str {
        match self {
            EventKind::TestStarted(_) => "test_started",
            EventKind::TestFinished(_) => "test_finished",
            EventKind::OperationStarted(_) => "operation_started",
            EventKind::OperationEnded(_) => "operation_ended",
            EventKind::Observation(_) => "observation",
            EventKind::Attachment(_) => "attachment",
            EventKind::Unknown { kind } => kind,
        }
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            EventKind::TestStarted(v) => map.serialize_entry("test_started", v)?,
            EventKind::TestFinished(v) => map.serialize_entry("test_finished", v)?,
            EventKind::OperationStarted(v) => map.serialize_entry("operation_started", v)?,
            EventKind::OperationEnded(v) => map.serialize_entry("operation_ended", v)?,
            EventKind::Observation(v) => map.serialize_entry("observation", v)?,
            EventKind::Attachment(v) => map.serialize_entry("attachment", v)?,
            EventKind::Unknown { kind } => map.serialize_entry(kind, &serde_json::Map::new())?,
        }
        map.end()
    }
}

/// A string read straight into a shared buffer: through a `String`, each attachment's text was
/// allocated and copied twice.
struct SharedText(Arc<[u8]>);

impl<'de> Deserialize<'de> for SharedText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        parse_str(deserializer, "a string", |text| {
            Ok::<_, std::convert::Infallible>(SharedText(Arc::from(text.as_bytes())))
        })
    }
}

/// Reads `{"kind": value}`, the shape of an event's kind and of an attachment's content: `read`
/// reads the value of a key it knows, or returns `None` for a key it does not, whose value is
/// then skipped and the key given back as `Err`. Keys after the first are ignored, like unknown
/// fields: a newer writer may add them.
fn one_key_object<'de, A: MapAccess<'de>, T>(
    mut map: A,
    what: &str,
    read: impl FnOnce(&str, &mut A) -> Result<Option<T>, A::Error>,
) -> Result<Result<T, String>, A::Error> {
    // Every event read names its kind here: lent, the name costs no allocation.
    let Some(Lent(key)) = map.next_key::<Lent<'de>>()? else {
        return Err(de::Error::custom(format!("{what} object is empty")));
    };
    let value = match read(&key, &mut map)? {
        Some(value) => Ok(value),
        None => {
            map.next_value::<IgnoredAny>()?;
            Err(key.into_owned())
        }
    };
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(value)
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl<'de> Visitor<'de> for KindVisitor {
            type Value = EventKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with one key naming the event kind")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EventKind, A::Error> {
                one_key_object(map, "event kind", |key, map| {
                    Ok(Some(match key {
                        "test_started" => EventKind::TestStarted(map.next_value()?),
                        "test_finished" => EventKind::TestFinished(map.next_value()?),
                        "operation_started" => EventKind::OperationStarted(map.next_value()?),
                        "operation_ended" => EventKind::OperationEnded(map.next_value()?),
                        "observation" => EventKind::Observation(map.next_value()?),
                        "attachment" => EventKind::Attachment(map.next_value()?),
                        _ => return Ok(None),
                    }))
                })
                .map(|kind| kind.unwrap_or_else(|other| EventKind::Unknown { kind: other }))
            }
        }
        deserializer.deserialize_map(KindVisitor)
    }
}

// === payloads ===

/// Payload of [`EventKind::TestStarted`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TestStarted {
    /// The test's name as the test runner shows it (`module::test_fn`).
    pub name: String,
    /// The application the test is bound to, if any (`#[application("orders")]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// The client binding of `#[application("orders", "Rest:payments")]`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Where the test is defined (`tests/orders.rs:12`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The authentication kind of `#[auth(Kind)]` on the test or its module, if any (its
    /// name only; credentials come from configuration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

impl TestStarted {
    /// A start event for the test `name`.
    pub fn new(name: impl Into<String>) -> Self {
        TestStarted {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Sets the bound application.
    pub fn with_application(mut self, application: Option<String>) -> Self {
        self.application = application;
        self
    }

    /// Sets the bound client.
    pub fn with_client(mut self, client: Option<String>) -> Self {
        self.client = client;
        self
    }

    /// Sets the source location.
    pub fn with_location(mut self, location: Option<String>) -> Self {
        self.location = location;
        self
    }

    /// Sets the authentication kind of `#[auth(Kind)]`.
    pub fn with_auth(mut self, auth: Option<String>) -> Self {
        self.auth = auth;
        self
    }
}

/// Payload of [`EventKind::TestFinished`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestFinished {
    /// How the test ended.
    pub outcome: TestOutcome,
    /// Wall time from start to finish.
    #[serde(rename = "duration_ns", with = "duration_ns")]
    pub duration: Duration,
}

/// How a test ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TestOutcome {
    /// The test ran to the end without a failure.
    Passed,
    /// The test failed: an assertion, a panic, or an `Err` returned.
    Failed {
        /// The failure's message, already redacted.
        message: String,
    },
    /// The test did not run.
    Skipped {
        /// Why it did not run.
        reason: String,
    },
    /// The test started and never finished: its process was killed or aborted. Never written
    /// by a running test; a reader concludes it from a start with no finish.
    Interrupted,
}

impl TestOutcome {
    /// The word used in reports and terminal lines: `Passed`, `Failed`, `Skipped`, `Interrupted`.
    pub fn label(&self) -> &'static str {
        match self {
            TestOutcome::Passed => "Passed",
            TestOutcome::Failed { .. } => "Failed",
            TestOutcome::Skipped { .. } => "Skipped",
            TestOutcome::Interrupted => "Interrupted",
        }
    }

    /// True for [`TestOutcome::Failed`] and [`TestOutcome::Interrupted`]: a run holding one is not green.
    pub fn is_failure(&self) -> bool {
        matches!(self, TestOutcome::Failed { .. } | TestOutcome::Interrupted)
    }
}

/// Payload of [`EventKind::OperationStarted`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OperationStarted {
    /// The operation's type: `http.request`, `assert.http.status`, … (see [`crate::semconv`]).
    #[serde(deserialize_with = "interned_name")]
    pub name: Cow<'static, str>,
    /// What a person reads: `REST · GET /orders/{id}`.
    pub display_name: String,
    /// The entity performing it: `client:reqwest::Client:Rest:orders`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<Text>,
    /// Attributes known when it began.
    #[serde(default, skip_serializing_if = "Attributes::is_empty")]
    pub attributes: Attributes,
}

impl OperationStarted {
    /// An operation of type `name`, shown as `display_name`.
    pub fn new(name: impl Into<Cow<'static, str>>, display_name: impl Into<String>) -> Self {
        OperationStarted {
            name: name.into(),
            display_name: display_name.into(),
            entity: None,
            attributes: Attributes::new(),
        }
    }

    /// Sets the entity.
    pub fn with_entity(mut self, entity: impl Into<Text>) -> Self {
        self.entity = Some(entity.into());
        self
    }

    /// Sets the attributes.
    pub fn with_attributes(mut self, attributes: Attributes) -> Self {
        self.attributes = attributes;
        self
    }
}

/// Payload of [`EventKind::OperationEnded`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OperationEnded {
    /// The id of the [`OperationStarted`] event this ends.
    pub operation: EventId,
    /// Whether it succeeded.
    pub status: OperationStatus,
    /// Wall time from start to end.
    #[serde(rename = "duration_ns", with = "duration_ns")]
    pub duration: Duration,
    /// Attributes learnt while it ran (a response status, say).
    #[serde(default, skip_serializing_if = "Attributes::is_empty")]
    pub attributes: Attributes,
}

impl OperationEnded {
    /// The end of `operation`.
    pub fn new(operation: EventId, status: OperationStatus, duration: Duration) -> Self {
        OperationEnded {
            operation,
            status,
            duration,
            attributes: Attributes::new(),
        }
    }

    /// Sets the attributes.
    pub fn with_attributes(mut self, attributes: Attributes) -> Self {
        self.attributes = attributes;
        self
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OperationStatus {
    /// It did what it set out to do (an assertion held, a request got a response).
    Ok,
    /// It failed.
    Error {
        /// Why, already redacted.
        message: String,
    },
}

/// Payload of [`EventKind::Observation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Observation {
    /// What was observed: `http.response`, `http.failure`, … (see [`crate::semconv`]).
    #[serde(deserialize_with = "interned_name")]
    pub name: Cow<'static, str>,
    /// Its contents.
    #[serde(default, skip_serializing_if = "Attributes::is_empty")]
    pub attributes: Attributes,
}

impl Observation {
    /// An observation named `name`.
    pub fn new(name: impl Into<Cow<'static, str>>, attributes: Attributes) -> Self {
        Observation {
            name: name.into(),
            attributes,
        }
    }
}

/// Payload of [`EventKind::Attachment`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Attachment {
    /// Its name within the test: `rest-01-request`, …
    pub name: String,
    /// A line about it (a response's status, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    pub media_type: String,
    /// Its content: in memory while on the bus, a blob reference once archived.
    pub content: AttachmentContent,
}

impl Attachment {
    /// An attachment holding `bytes`.
    pub fn new(name: impl Into<String>, media_type: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Self {
        Attachment {
            name: name.into(),
            description: None,
            media_type: media_type.into(),
            content: AttachmentContent::Inline(bytes.into()),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Where an attachment's bytes are.
///
/// On the wire, inline bytes that are UTF-8 are written as `{"text": "…"}` (a response body
/// then reads as itself, and deflate finds it again beside the `http.response` event that
/// carries the same text); other bytes as `{"inline": "<base64>"}`. Both read back as
/// [`Inline`](Self::Inline).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttachmentContent {
    /// The bytes themselves.
    Inline(Arc<[u8]>),
    /// A content-addressed blob in the archive.
    Blob {
        /// Lowercase hex SHA-256 of the (already redacted) bytes.
        sha256: String,
        /// Length in bytes.
        size: u64,
    },
    /// A kind of content a newer minor version of the format wrote: the event reads, its bytes
    /// do not.
    Unknown {
        /// The kind's key, as written.
        kind: String,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum ContentRef<'a> {
    Inline(#[serde(serialize_with = "base64_bytes::serialize")] &'a [u8]),
    Text(&'a str),
    Blob { sha256: &'a str, size: u64 },
}

#[derive(Deserialize)]
struct BlobWire {
    sha256: String,
    size: u64,
}

impl Serialize for AttachmentContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AttachmentContent::Inline(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => ContentRef::Text(text),
                Err(_) => ContentRef::Inline(bytes),
            },
            AttachmentContent::Blob { sha256, size } => ContentRef::Blob { sha256, size: *size },
            AttachmentContent::Unknown { kind } => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(kind, &())?;
                return map.end();
            }
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for AttachmentContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = AttachmentContent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with one key naming the kind of content")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<AttachmentContent, A::Error> {
                one_key_object(map, "attachment content", |key, map| {
                    Ok(Some(match key {
                        "text" => AttachmentContent::Inline(map.next_value::<SharedText>()?.0),
                        "inline" => {
                            use base64::Engine as _;
                            let Lent(text) = map.next_value::<Lent<'de>>()?;
                            let bytes = base64::engine::general_purpose::STANDARD
                                .decode(text.as_bytes())
                                .map_err(de::Error::custom)?;
                            AttachmentContent::Inline(Arc::from(bytes))
                        }
                        "blob" => {
                            let BlobWire { sha256, size } = map.next_value()?;
                            AttachmentContent::Blob { sha256, size }
                        }
                        _ => return Ok(None),
                    }))
                })
                .map(|content| content.unwrap_or_else(|other| AttachmentContent::Unknown { kind: other }))
            }
        }
        d.deserialize_map(ContentVisitor)
    }
}

impl AttachmentContent {
    /// How many bytes the attachment holds (0 for content of an unknown kind).
    pub fn size(&self) -> u64 {
        match self {
            AttachmentContent::Inline(bytes) => bytes.len() as u64,
            AttachmentContent::Blob { size, .. } => *size,
            AttachmentContent::Unknown { .. } => 0,
        }
    }
}

mod base64_bytes {
    use super::*;
    use base64::Engine as _;

    pub(super) fn serialize<S: Serializer>(bytes: &&[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }
}

// === attributes ===

/// The text of a string attribute: a literal, a string of its own, or text shared with
/// whoever else holds it.
///
/// A request's events repeat what the request already holds (its method, route, URL, client
/// and response body) in several events each; sharing the text rather than copying it saves a
/// request a dozen allocations and their frees on the test's thread. It reads as a `str`
/// whichever it is, and compares, hashes and serializes as one.
///
/// ```
/// use std::sync::Arc;
/// use kit_core::Text;
///
/// let url: Arc<str> = Arc::from("http://127.0.0.1:8080/orders/7");
/// let shared = Text::from(Arc::clone(&url));
/// assert_eq!(shared, "http://127.0.0.1:8080/orders/7");
/// assert_eq!(Text::from_static("GET").len(), 3);
/// assert_eq!(Text::from(String::from("a")), Text::from_static("a"));
/// ```
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Owned(String),
    Static(&'static str),
    Shared(Arc<str>),
}

impl Text {
    /// A literal: no allocation, now or when cloned.
    pub const fn from_static(text: &'static str) -> Self {
        Text(TextRepr::Static(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            TextRepr::Owned(s) => s,
            TextRepr::Static(s) => s,
            TextRepr::Shared(s) => s,
        }
    }

    /// The text as a `String`: taken when this one owns it, else copied.
    pub fn into_string(self) -> String {
        match self.0 {
            TextRepr::Owned(s) => s,
            TextRepr::Static(s) => s.to_owned(),
            TextRepr::Shared(s) => s.as_ref().to_owned(),
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::from_static("")
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text(TextRepr::Owned(text))
    }
}

impl From<&'static str> for Text {
    fn from(text: &'static str) -> Self {
        Text::from_static(text)
    }
}

impl From<Arc<str>> for Text {
    fn from(text: Arc<str>) -> Self {
        Text(TextRepr::Shared(text))
    }
}

impl From<&Arc<str>> for Text {
    fn from(text: &Arc<str>) -> Self {
        Text(TextRepr::Shared(Arc::clone(text)))
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        text.into_string()
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

/// The value of an attribute: the value types OpenTelemetry allows.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// A string.
    Str(Text),
    /// A signed integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings (a multi-valued header, say).
    StrList(Vec<String>),
}

impl AttributeValue {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttributeValue::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttributeValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttributeValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The list, if this is one.
    pub fn as_str_list(&self) -> Option<&[String]> {
        match self {
            AttributeValue::StrList(l) => Some(l),
            _ => None,
        }
    }
}

impl fmt::Display for AttributeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeValue::Str(s) => f.write_str(s),
            AttributeValue::Int(i) => write!(f, "{i}"),
            AttributeValue::Float(x) => write!(f, "{x}"),
            AttributeValue::Bool(b) => write!(f, "{b}"),
            AttributeValue::StrList(l) => f.write_str(&l.join(", ")),
        }
    }
}

macro_rules! attribute_from {
    ($($t:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {$(
        impl From<$t> for AttributeValue {
            fn from(value: $t) -> Self {
                AttributeValue::$variant(value $(as $cast)?)
            }
        }
    )*};
}

attribute_from! {
    i64 => Int, i32 => Int as i64, u16 => Int as i64, u32 => Int as i64,
    f64 => Float, bool => Bool, Vec<String> => StrList,
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::Str(Text::from(value))
    }
}

/// Copies the text: a literal that should not be copied goes in as [`Text::from_static`].
impl From<&str> for AttributeValue {
    fn from(value: &str) -> Self {
        AttributeValue::Str(Text::from(value.to_owned()))
    }
}

impl From<Text> for AttributeValue {
    fn from(value: Text) -> Self {
        AttributeValue::Str(value)
    }
}

impl From<Arc<str>> for AttributeValue {
    fn from(value: Arc<str>) -> Self {
        AttributeValue::Str(Text::from(value))
    }
}

impl From<&Arc<str>> for AttributeValue {
    fn from(value: &Arc<str>) -> Self {
        AttributeValue::Str(Text::from(value))
    }
}

impl From<u64> for AttributeValue {
    fn from(value: u64) -> Self {
        i64::try_from(value).map_or(AttributeValue::Float(value as f64), AttributeValue::Int)
    }
}

impl From<usize> for AttributeValue {
    fn from(value: usize) -> Self {
        AttributeValue::from(value as u64)
    }
}

impl Serialize for AttributeValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AttributeValue::Str(s) => serializer.serialize_str(s),
            AttributeValue::Int(i) => serializer.serialize_i64(*i),
            AttributeValue::Float(x) => serializer.serialize_f64(*x),
            AttributeValue::Bool(b) => serializer.serialize_bool(*b),
            AttributeValue::StrList(list) => {
                let mut seq = serializer.serialize_seq(Some(list.len()))?;
                for item in list {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for AttributeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Hand-written rather than `#[serde(untagged)]`: untagged enums buffer every value
        // before trying variants, and the CLI reads millions of these.
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = AttributeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number, boolean or list of strings")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AttributeValue, E> {
                Ok(AttributeValue::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AttributeValue, E> {
                Ok(AttributeValue::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AttributeValue, E> {
                Ok(AttributeValue::from(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<AttributeValue, E> {
                Ok(AttributeValue::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AttributeValue, E> {
                Ok(AttributeValue::from(v))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<AttributeValue, E> {
                Ok(AttributeValue::from(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AttributeValue, A::Error> {
                let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(TYPICAL_LEN).min(64));
                while let Some(item) = seq.next_element::<String>()? {
                    list.push(item);
                }
                Ok(AttributeValue::StrList(list))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// An ordered list of attributes; serialized as a JSON object.
///
/// Keys are usually `&'static str` constants from [`crate::semconv`], so building a list does
/// not allocate for keys.
///
/// ```
/// use kit_core::{Attributes, semconv};
/// let attrs = Attributes::new()
///     .with(semconv::HTTP_REQUEST_METHOD, "GET")
///     .with(semconv::HTTP_RESPONSE_STATUS_CODE, 200);
/// assert_eq!(attrs.get_str(semconv::HTTP_REQUEST_METHOD), Some("GET"));
/// assert_eq!(attrs.get_i64(semconv::HTTP_RESPONSE_STATUS_CODE), Some(200));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attributes(Vec<(Cow<'static, str>, AttributeValue)>);

impl Attributes {
    /// An empty list.
    pub const fn new() -> Self {
        Attributes(Vec::new())
    }

    /// An empty list with room for `n` attributes.
    pub fn with_capacity(n: usize) -> Self {
        Attributes(Vec::with_capacity(n))
    }

    /// Appends an attribute and returns the list.
    pub fn with(mut self, key: impl Into<Cow<'static, str>>, value: impl Into<AttributeValue>) -> Self {
        self.push(key, value);
        self
    }

    /// Appends an attribute.
    pub fn push(&mut self, key: impl Into<Cow<'static, str>>, value: impl Into<AttributeValue>) {
        self.0.push((key.into(), value.into()));
    }

    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<&AttributeValue> {
        // Keys read back are the vocabulary's own statics (see `semconv::intern`), as are the
        // keys callers ask for: the same pointer answers before any byte is compared.
        self.0
            .iter()
            .find(|(k, _)| (k.as_ptr() == key.as_ptr() && k.len() == key.len()) || k == key)
            .map(|(_, v)| v)
    }

    /// The first value under `key`, if it is a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(AttributeValue::as_str)
    }

    /// The first value under `key`, if it is an integer.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(AttributeValue::as_i64)
    }

    /// All attributes in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttributeValue)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    /// How many attributes there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Attributes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(&**k, v)?;
        }
        map.end()
    }
}

/// How many attributes (or list items) room is made for when the input does not say.
const TYPICAL_LEN: usize = 8;

impl<'de> Deserialize<'de> for Attributes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = Attributes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of attributes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Attributes, A::Error> {
                // JSON gives no length: room for a typical event's attributes up front, where
                // growing from none reallocated two or three times per event read.
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(TYPICAL_LEN).min(64));
                while let Some(Name(key)) = map.next_key::<Name>()? {
                    let value = map.next_value::<AttributeValue>()?;
                    out.push((key, value));
                }
                Ok(Attributes(out))
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

/// A name read back: the vocabulary's own `&'static str` when it is one, so reading millions
/// of events does not allocate their attribute keys and operation names; else an owned copy.
struct Name(Cow<'static, str>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name, E> {
                Ok(Name(match crate::semconv::intern(v) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(v.to_owned()),
                }))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name, E> {
                Ok(Name(match crate::semconv::intern(&v) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(v),
                }))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

/// `deserialize_with` for operation and observation names.
fn interned_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'static, str>, D::Error> {
    Name::deserialize(deserializer).map(|n| n.0)
}

impl<K: Into<Cow<'static, str>>, V: Into<AttributeValue>> FromIterator<(K, V)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Attributes(iter.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;

    fn sample(kind: EventKind) -> Event {
        Event {
            run_id: RunId::new("run-1").unwrap(),
            test_id: TestId::generate(),
            id: EventId::generate(),
            parent_id: Some(EventId::generate()),
            sequence: 3,
            timestamp: Timestamp::now(),
            kind,
        }
    }

    #[test]
    fn every_kind_round_trips_through_json() {
        let kinds = vec![
            EventKind::TestStarted(
                TestStarted::new("orders::creates").with_application(Some("orders".into())),
            ),
            EventKind::TestFinished(TestFinished {
                outcome: TestOutcome::Failed {
                    message: "boom".into(),
                },
                duration: Duration::from_micros(1500),
            }),
            EventKind::OperationStarted(
                OperationStarted::new("http.request", "REST · GET /orders")
                    .with_entity("client:reqwest::Client:Rest:orders")
                    .with_attributes(Attributes::new().with("http.request.method", "GET")),
            ),
            EventKind::OperationEnded(OperationEnded::new(
                EventId::generate(),
                OperationStatus::Error {
                    message: "refused".into(),
                },
                Duration::from_millis(2),
            )),
            EventKind::Observation(Observation::new(
                "http.response",
                Attributes::new()
                    .with("http.response.status_code", 201)
                    .with("ratio", 0.5)
                    .with("flag", true)
                    .with(
                        "http.response.header.set-cookie",
                        vec!["a".to_owned(), "b".to_owned()],
                    ),
            )),
            EventKind::Attachment(
                Attachment::new("rest-01-request", "application/json", b"{\"a\":1}".to_vec())
                    .with_description("201 Created"),
            ),
        ];
        for kind in kinds {
            let event = sample(kind);
            let json = serde_json::to_string(&event).unwrap();
            let back: Event = serde_json::from_str(&json).unwrap();
            assert_eq!(back, event, "{json}");
        }
    }

    #[test]
    fn text_reads_compares_hashes_and_serializes_as_its_str_whoever_holds_it() {
        let shared: Arc<str> = Arc::from("GET");
        let forms = [
            Text::from_static("GET"),
            Text::from(String::from("GET")),
            Text::from(Arc::clone(&shared)),
        ];
        let hasher = RandomState::new();
        for text in &forms {
            assert_eq!(text, "GET");
            assert_eq!(text.as_str(), "GET");
            assert_eq!(format!("{text} {text:?}"), "GET \"GET\"");
            assert_eq!(serde_json::to_string(text).unwrap(), "\"GET\"");
            assert_eq!(hasher.hash_one(text), hasher.hash_one("GET"));
            assert_eq!(text.clone().into_string(), "GET");
            for other in &forms {
                assert_eq!(text, other);
                assert_eq!(text.cmp(other), std::cmp::Ordering::Equal);
            }
        }
        assert!(Text::from_static("DELETE") < Text::from(String::from("GET")));
        let back: Text = serde_json::from_str("\"a\\\"b\"").unwrap();
        assert_eq!(back, "a\"b");

        // Shared text is the very same bytes, in the attribute and in its clones.
        let value = AttributeValue::from(&shared);
        assert_eq!(value.as_str().unwrap().as_ptr(), shared.as_ptr());
        assert_eq!(value.clone().as_str().unwrap().as_ptr(), shared.as_ptr());
        // And an event holding it is the one holding a copy, on the wire and read back.
        let copied = Attributes::new().with("http.request.method", "GET");
        let with_shared = Attributes::new().with("http.request.method", Arc::clone(&shared));
        assert_eq!(with_shared, copied);
        let event = sample(EventKind::Observation(Observation::new(
            "http.response",
            with_shared,
        )));
        let copy = sample(EventKind::Observation(Observation::new("http.response", copied)));
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line.split_once("\"kind\"").unwrap().1,
            serde_json::to_string(&copy)
                .unwrap()
                .split_once("\"kind\"")
                .unwrap()
                .1
        );
        assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), event);
    }

    #[test]
    fn unknown_kinds_and_fields_are_skipped() {
        let json = r#"{"run_id":"r","test_id":"0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c","id":"00000000000000ff",
            "sequence":1,"timestamp":5,"future_field":[1,2],"kind":{"hologram":{"x":{"y":1}}}}"#;
        let event: Event = serde_json::from_str(json).unwrap();
        assert_eq!(
            event.kind,
            EventKind::Unknown {
                kind: "hologram".into()
            }
        );
        assert_eq!(event.parent_id, None);
        assert_eq!(event.id.as_u64(), 255);
    }

    #[test]
    fn kinds_and_texts_read_the_same_lent_from_the_input_or_copied() {
        // As they stand in JSON: plain, with escapes, with a unicode escape.
        let texts = [r#"plain"#, r#"with \"quotes\" and \\n"#, r#"caf\u00e9"#];
        for text in texts {
            for kind in [r#"attachment"#, r#"holo\u0067ram"#] {
                let json = format!(
                    r#"{{"run_id":"r","test_id":"0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c","id":"00000000000000ff",
                    "sequence":1,"timestamp":5,"kind":{{"{kind}":{{"name":"n","media_type":"text/plain","content":{{"text":"{text}"}}}}}}}}"#
                );
                let lent: Event = serde_json::from_str(&json).unwrap();
                let copied: Event = serde_json::from_reader(json.as_bytes()).unwrap();
                let owned: Event = serde_json::from_value(serde_json::from_str(&json).unwrap()).unwrap();
                assert_eq!(lent, copied, "{json}");
                assert_eq!(lent, owned, "{json}");
                let expected: String = serde_json::from_str(&format!("\"{text}\"")).unwrap();
                match &lent.kind {
                    EventKind::Attachment(a) => {
                        assert_eq!(
                            a.content,
                            AttachmentContent::Inline(Arc::from(expected.as_bytes()))
                        )
                    }
                    EventKind::Unknown { kind } => assert_eq!(kind, "hologram"),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn attachment_content_is_text_base64_or_a_blob_and_unknown_kinds_are_skipped() {
        let text = AttachmentContent::Inline(Arc::from(b"{\"a\":\"\xc3\xa9\"}".to_vec()));
        let binary = AttachmentContent::Inline(Arc::from(vec![0xff, 0, 0xfe]));
        let blob = AttachmentContent::Blob {
            sha256: "ab".repeat(32),
            size: 7,
        };
        let wire = |c: &AttachmentContent| serde_json::to_string(c).unwrap();
        assert_eq!(wire(&text), r#"{"text":"{\"a\":\"é\"}"}"#);
        assert_eq!(wire(&binary), r#"{"inline":"/wD+"}"#);
        for content in [&text, &binary, &blob] {
            let back: AttachmentContent = serde_json::from_str(&wire(content)).unwrap();
            assert_eq!(&back, content);
        }
        // A newer minor version's kind of content: the attachment still reads.
        let future: AttachmentContent =
            serde_json::from_str(r#"{"chunked":{"parts":[1,2]},"extra":true}"#).unwrap();
        assert_eq!(
            future,
            AttachmentContent::Unknown {
                kind: "chunked".into()
            }
        );
        assert_eq!(future.size(), 0);
        assert_eq!(wire(&future), r#"{"chunked":null}"#);
        for bad in [
            r#"{}"#,
            r#"{"inline":"not base64!"}"#,
            r#"{"blob":{"sha256":"x"}}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<AttachmentContent>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn run_ids_that_could_escape_a_folder_are_rejected() {
        for bad in ["", ".", "..", "a/b", "a\\b", "x y", "é", &"a".repeat(129)] {
            assert!(RunId::new(bad).is_err(), "{bad:?} accepted");
        }
        assert!(RunId::new("0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c").is_ok());
        assert!(RunId::generate().as_str().len() == 36);
    }

    #[test]
    fn a_tests_own_copy_of_a_run_id_is_equal_and_shares_no_count() {
        let run = RunId::generate();
        let copy = run.unshared();
        assert_eq!(copy, run);
        assert_eq!(copy.as_str(), run.as_str());
        assert!(!Arc::ptr_eq(&copy.0, &run.0));
        let clone = copy.clone();
        assert_eq!((Arc::strong_count(&run.0), Arc::strong_count(&copy.0)), (1, 2));
        drop(clone);
    }

    #[test]
    fn ids_display_and_parse_back() {
        let id = EventId::generate();
        assert_eq!(id.to_string().len(), 16);
        assert_eq!(id.to_string().parse::<EventId>().unwrap(), id);
        assert!("0".parse::<EventId>().is_err());
        assert!("xyz".parse::<EventId>().is_err());
        // Seventeen digits are refused even when the value would fit once the first is lost.
        for bad in [
            "",
            "+1",
            "-1",
            " 1",
            "1g",
            "0x1f",
            "10000000000000000",
            "10000000000000001",
        ] {
            assert!(bad.parse::<EventId>().is_err(), "{bad:?} accepted");
        }
        for (text, value) in [
            ("1", 1),
            ("00ff", 255),
            ("FFFFFFFFFFFFFFFF", u64::MAX),
            ("a0B1", 0xa0b1),
        ] {
            assert_eq!(text.parse::<EventId>().unwrap().as_u64(), value, "{text}");
        }
        let t = TestId::generate();
        assert_eq!(t.to_string().parse::<TestId>().unwrap(), t);
    }

    #[test]
    fn ids_read_from_json_as_text_in_place_or_copied_and_bad_ones_are_named() {
        let (run, test, event) = (RunId::generate(), TestId::generate(), EventId::generate());
        let json = serde_json::json!([run.as_str(), test.to_string(), event.to_string()]);
        let text = json.to_string();
        // In place (from_str), through a scratch buffer (from_reader), and owned (from_value).
        let read: [(RunId, TestId, EventId); 3] = [
            serde_json::from_str(&text).unwrap(),
            serde_json::from_reader(text.as_bytes()).unwrap(),
            serde_json::from_value(json).unwrap(),
        ];
        for got in read {
            assert_eq!(got, (run.clone(), test, event));
        }
        fn err<T: serde::de::DeserializeOwned + fmt::Debug>(json: &str) -> String {
            serde_json::from_str::<T>(json).unwrap_err().to_string()
        }
        assert!(err::<RunId>(r#""../x""#).contains(r#"invalid run id "../x""#));
        assert!(err::<TestId>(r#""nope""#).contains(r#"invalid test id "nope""#));
        assert!(err::<EventId>(r#""xyz""#).contains("xyz"));
        assert!(err::<EventId>("7").contains("expected an event id"));
    }

    #[test]
    fn a_run_id_read_after_another_is_its_own() {
        // Each run id read is its own, valid or refused, whatever was read before it.
        for (text, expected) in [
            ("run-a", Some("run-a")),
            ("run-b", Some("run-b")),
            ("../a", None),
            ("run-a", Some("run-a")),
        ] {
            let read = serde_json::from_str::<RunId>(&format!("{text:?}")).ok();
            assert_eq!(read.as_ref().map(RunId::as_str), expected);
        }
    }

    proptest::proptest! {
        /// Dense in nibbles 9 and 10, where the digits turn into letters.
        #[test]
        fn ids_are_written_as_format_writes_them(
            value in proptest::prop_oneof![
                proptest::num::u64::ANY,
                proptest::collection::vec(proptest::sample::select(vec![0u64, 9, 10, 15]), 16)
                    .prop_map(|nibbles| nibbles.iter().fold(0, |n, d| n << 4 | d)),
            ]
        ) {
            let expected = format!("{value:016x}");
            proptest::prop_assert_eq!(&hex16_bytes(value)[..], expected.as_bytes());
        }

        #[test]
        fn event_ids_parse_as_hex_in_any_case_and_width(value in 1u64..) {
            for text in [format!("{value:x}"), format!("{value:016x}"), format!("{value:X}")] {
                proptest::prop_assert_eq!(text.parse::<EventId>().unwrap().as_u64(), value);
            }
        }

        /// Any text, dense in the bytes next to the digits' ranges, parses as `from_str_radix`
        /// reads it, less the sign it takes, past sixteen digits, and zero.
        #[test]
        fn event_ids_parse_as_from_str_radix_reads_them(
            chars in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::char::range('0', '9'),
                    proptest::char::range('a', 'f'),
                    proptest::char::range('A', 'F'),
                    proptest::sample::select(vec!['/', ':', '@', 'G', '`', 'g', '+', '-', ' ', 'é', '\u{0}', '\u{b0}']),
                ],
                0..19,
            )
        ) {
            let text: String = chars.into_iter().collect();
            let expected = (!text.is_empty() && text.len() <= 16 && !text.starts_with('+'))
                .then(|| u64::from_str_radix(&text, 16).ok())
                .flatten()
                .filter(|value| *value != 0);
            proptest::prop_assert_eq!(text.parse::<EventId>().ok().map(EventId::as_u64), expected, "{:?}", text);
        }
    }

    #[test]
    fn test_ids_are_time_ordered() {
        let ids: Vec<TestId> = (0..1000).map(|_| TestId::generate()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn event_ids_do_not_repeat_and_every_bit_is_set_in_about_half() {
        let ids: std::collections::HashSet<u64> =
            (0..100_000).map(|_| EventId::generate().as_u64()).collect();
        assert_eq!(ids.len(), 100_000);
        // A weaker mix (a sum for the product, an `&` or `|` for the xor) leaves some bits
        // nearly always clear or set, and ids collide sooner. The bounds are 30 standard
        // deviations wide: a good generator never leaves them.
        let mut ones = [0u32; 64];
        for id in &ids {
            for (bit, count) in ones.iter_mut().enumerate() {
                *count += u32::from((id >> bit) & 1 == 1);
            }
        }
        for (bit, count) in ones.iter().enumerate() {
            assert!(
                (45_000..55_000).contains(count),
                "bit {bit} set in {count} of 100 000 ids"
            );
        }
    }

    #[test]
    fn every_day_from_1970_to_2553_follows_the_one_before() {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let length = |y: i64, m: u32| match m {
            2 if leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let mut expected = (1970i64, 1u32, 1u32);
        // The last second of each day, up to the last day u64 nanoseconds reach.
        for day in 0..213_000u64 {
            let t = Timestamp::from_unix_nanos(day * 86_400_000_000_000 + 86_399_000_000_000);
            assert_eq!(t.utc_date_and_seconds(), (expected, 86_399), "day {day}");
            let (y, m, d) = expected;
            expected = if d < length(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
        assert_eq!(
            Timestamp::from_unix_nanos(1_234_567_890_123_456_789).to_rfc3339_millis(),
            "2009-02-13T23:31:30.123Z"
        );
    }

    #[test]
    fn ids_show_as_themselves_and_give_their_bytes_big_endian() {
        let run = RunId::new("run-7").unwrap();
        assert_eq!(run.to_string(), "run-7");
        assert_eq!(format!("{run:?}"), r#"RunId("run-7")"#);
        let test: TestId = "0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c".parse().unwrap();
        assert_eq!(
            format!("{test:?}"),
            "TestId(0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c)"
        );
        assert_eq!(
            test.to_bytes(),
            [
                0x01, 0x93, 0xa0, 0xb4, 0x6f, 0x3c, 0x7c, 0xc2, 0x9a, 0x4e, 0x0f, 0x3f, 0x9d, 0x8a, 0x1b,
                0x2c
            ]
        );
        let event = EventId::from_u64(0x0102_0304_0506_0708).unwrap();
        assert_eq!(format!("{event:?}"), "EventId(0102030405060708)");
        assert_eq!(event.to_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn a_test_start_keeps_every_binding_it_is_given() {
        let started = TestStarted::new("orders::creates")
            .with_application(Some("orders".into()))
            .with_client(Some("Rest:payments".into()))
            .with_location(Some("tests/orders.rs:12".into()))
            .with_auth(Some("Admin".into()));
        assert_eq!(
            (
                started.name.as_str(),
                started.application.as_deref(),
                started.client.as_deref(),
                started.location.as_deref(),
                started.auth.as_deref(),
            ),
            (
                "orders::creates",
                Some("orders"),
                Some("Rest:payments"),
                Some("tests/orders.rs:12"),
                Some("Admin"),
            )
        );
        let event = sample(EventKind::TestStarted(started));
        let back: Event = serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn each_outcome_has_its_label_and_only_failures_fail() {
        let failed = TestOutcome::Failed { message: "x".into() };
        let skipped = TestOutcome::Skipped { reason: "y".into() };
        let outcomes = [
            (TestOutcome::Passed, "Passed", false),
            (failed, "Failed", true),
            (skipped, "Skipped", false),
            (TestOutcome::Interrupted, "Interrupted", true),
        ];
        for (outcome, label, failure) in outcomes {
            assert_eq!(
                (outcome.label(), outcome.is_failure()),
                (label, failure),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn an_attribute_value_answers_only_as_its_own_kind_and_shows_as_itself() {
        let list = vec!["a".to_owned(), "b".to_owned()];
        let values = [
            AttributeValue::from("GET"),
            AttributeValue::from(-7i64),
            AttributeValue::from(0.5),
            AttributeValue::from(true),
            AttributeValue::from(list.clone()),
        ];
        let answers: Vec<_> = values
            .iter()
            .map(|v| {
                (
                    v.as_str(),
                    v.as_i64(),
                    v.as_bool(),
                    v.as_str_list(),
                    v.to_string(),
                )
            })
            .collect();
        assert_eq!(
            answers,
            [
                (Some("GET"), None, None, None, "GET".to_owned()),
                (None, Some(-7), None, None, "-7".to_owned()),
                (None, None, None, None, "0.5".to_owned()),
                (None, None, Some(true), None, "true".to_owned()),
                (None, None, None, Some(&list[..]), "a, b".to_owned()),
            ]
        );
        assert_eq!(AttributeValue::from(false).as_bool(), Some(false));
    }

    #[test]
    fn attributes_are_kept_in_order_and_the_first_of_a_key_answers() {
        let mut attrs = Attributes::with_capacity(4);
        assert!(attrs.is_empty());
        assert_eq!(attrs.len(), 0);
        attrs.push("http.request.method", "GET");
        let attrs = attrs
            .with(String::from("status"), 200)
            .with("status", 500)
            .with("flag", true);
        assert!(!attrs.is_empty());
        assert_eq!(attrs.len(), 4);
        // A key built at run time is found by its text, not its address.
        assert_eq!(attrs.get_str(&String::from("http.request.method")), Some("GET"));
        assert_eq!(attrs.get_i64("status"), Some(200));
        assert_eq!(attrs.get("flag"), Some(&AttributeValue::Bool(true)));
        assert_eq!(attrs.get("missing"), None);
        // Nor by its length: "absent" is as long as "status".
        assert_eq!(attrs.get("absent"), None);
        // The wrong kind is no answer.
        assert_eq!(attrs.get_str("status"), None);
        assert_eq!(attrs.get_i64("http.request.method"), None);
        let keys: Vec<&str> = attrs.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["http.request.method", "status", "status", "flag"]);
        let collected: Attributes = [("a", 1), ("b", 2)].into_iter().collect();
        assert_eq!(collected, Attributes::new().with("a", 1).with("b", 2));
    }

    #[test]
    fn a_key_that_starts_at_the_same_address_is_not_the_same_key() {
        // A static key and a shorter slice of it share their first byte's address: only a
        // length that agrees too may answer without comparing the text.
        static LONG: &str = "http.request.method";
        let short = &LONG[..12];
        assert_eq!(short, "http.request");
        let attrs = Attributes::new().with(short, "short").with(LONG, "long");
        assert_eq!(attrs.get_str(LONG), Some("long"));
        assert_eq!(attrs.get_str(short), Some("short"));
        assert_eq!(attrs.get_str(&LONG[..4]), None);
    }

    #[test]
    fn an_attachment_knows_its_size_whatever_holds_it() {
        assert_eq!(AttachmentContent::Inline(Arc::from(&b"abc"[..])).size(), 3);
        let blob = AttachmentContent::Blob {
            sha256: "0".repeat(64),
            size: 12_345,
        };
        assert_eq!(blob.size(), 12_345);
        assert_eq!(AttachmentContent::Unknown { kind: "later".into() }.size(), 0);
    }

    #[test]
    fn a_value_of_the_wrong_type_says_what_was_expected() {
        let line = |kind: &str| {
            format!(
                r#"{{"run_id":"r","test_id":"0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c","id":"00000000000000ff","sequence":1,"timestamp":5,"kind":{kind}}}"#
            )
        };
        let expectations = [
            ("5", "expected an object with one key naming the event kind"),
            (
                r#"{"attachment":{"name":"a","media_type":"t","content":[]}}"#,
                "expected an object with one key naming the kind of content",
            ),
            (
                r#"{"observation":{"name":"n","attributes":[1]}}"#,
                "expected an object of attributes",
            ),
            (r#"{"observation":{"name":7}}"#, "expected a name"),
            (
                r#"{"observation":{"name":"n","attributes":{"k":{"x":1}}}}"#,
                "expected a string, number, boolean or list of strings",
            ),
        ];
        for (kind, expected) in expectations {
            let err = serde_json::from_str::<Event>(&line(kind))
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{kind}: {err}");
        }
    }
}
