//! An event as one line of JSON, written by hand for the archive writer's hot path.
//!
//! The archive writer serializes every event it receives. Through serde, most of that time was
//! serde_json's string escaping, which looks at every byte of every string (ids included) and
//! writes each escape and each run between escapes separately; response bodies, in two copies
//! per request, are full of quotes. Here strings are scanned eight bytes at a time and copied
//! in runs. The output is byte for byte what `serde_json::to_writer` writes (a property test
//! holds the two together); the kinds that are rare on the hot path (a test's start and end,
//! unknown kinds) and every non-string attribute value still go through serde.

use crate::json::swar::{exact_escape_mask, has_special, word_at};

use super::{AttachmentContent, AttributeValue, Attributes, Event, EventId, EventKind, OperationStatus};

impl Event {
    /// Appends the event as JSON: the same bytes as `serde_json::to_writer`, written faster
    /// (the archive writer writes every event this way).
    ///
    /// ```
    /// use kit_core::{Attributes, Observation, event::*};
    ///
    /// let event = Event {
    ///     run_id: RunId::new("run").unwrap(),
    ///     test_id: TestId::generate(),
    ///     id: EventId::generate(),
    ///     parent_id: None,
    ///     sequence: 1,
    ///     timestamp: Timestamp::now(),
    ///     kind: EventKind::Observation(Observation::new("x", Attributes::new().with("body", "{\"a\":1}"))),
    /// };
    /// let mut line = Vec::new();
    /// event.write_json(&mut line);
    /// assert_eq!(line, serde_json::to_vec(&event).unwrap());
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"run_id\":");
        string(out, self.run_id.as_str());
        out.extend_from_slice(b",\"test_id\":\"");
        let mut buf = uuid::Uuid::encode_buffer();
        out.extend_from_slice(
            uuid::Uuid::from_u128(self.test_id.as_u128())
                .hyphenated()
                .encode_lower(&mut buf)
                .as_bytes(),
        );
        out.extend_from_slice(b"\",");
        self.write_json_fields(out);
    }

    /// Appends the event as JSON without its `run_id` and `test_id`, for a container that
    /// already names the run and the test (an archive segment holds one test's events). Read it
    /// back with [`Event::from_json_in_scope`].
    ///
    /// Every line of an archive carried both ids: some 90 bytes of a 300-byte line for the
    /// writer to copy, compress and for every reader to parse again.
    ///
    /// ```
    /// use kit_core::{Attributes, Observation, event::*};
    ///
    /// let event = Event {
    ///     run_id: RunId::new("run").unwrap(),
    ///     test_id: TestId::generate(),
    ///     id: EventId::generate(),
    ///     parent_id: None,
    ///     sequence: 1,
    ///     timestamp: Timestamp::now(),
    ///     kind: EventKind::Observation(Observation::new("x", Attributes::new())),
    /// };
    /// let mut line = Vec::new();
    /// event.write_json_in_scope(&mut line);
    /// let line = std::str::from_utf8(&line).unwrap();
    /// assert!(line.starts_with(r#"{"id":"#));
    /// let read = Event::from_json_in_scope(line, &event.run_id, event.test_id).unwrap();
    /// assert_eq!(read, event);
    /// ```
    pub fn write_json_in_scope(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        self.write_json_fields(out);
    }

    /// Every field after the two ids, and the closing brace.
    fn write_json_fields(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\"id\":");
        event_id(out, self.id);
        out.extend_from_slice(b",\"parent_id\":");
        match self.parent_id {
            Some(id) => event_id(out, id),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"sequence\":");
        number(out, self.sequence);
        out.extend_from_slice(b",\"timestamp\":");
        number(out, self.timestamp.as_unix_nanos());
        out.extend_from_slice(b",\"kind\":");
        kind(out, &self.kind);
        out.push(b'}');
    }
}

fn kind(out: &mut Vec<u8>, kind: &EventKind) {
    match kind {
        EventKind::OperationStarted(op) => {
            out.extend_from_slice(b"{\"operation_started\":{\"name\":");
            string(out, &op.name);
            out.extend_from_slice(b",\"display_name\":");
            string(out, &op.display_name);
            if let Some(entity) = &op.entity {
                out.extend_from_slice(b",\"entity\":");
                string(out, entity);
            }
            attributes(out, &op.attributes);
            out.extend_from_slice(b"}}");
        }
        EventKind::OperationEnded(op) => {
            out.extend_from_slice(b"{\"operation_ended\":{\"operation\":");
            event_id(out, op.operation);
            out.extend_from_slice(b",\"status\":");
            match &op.status {
                OperationStatus::Ok => out.extend_from_slice(b"{\"status\":\"ok\"}"),
                OperationStatus::Error { message } => {
                    out.extend_from_slice(b"{\"status\":\"error\",\"message\":");
                    string(out, message);
                    out.push(b'}');
                }
            }
            out.extend_from_slice(b",\"duration_ns\":");
            number(out, u64::try_from(op.duration.as_nanos()).unwrap_or(u64::MAX));
            attributes(out, &op.attributes);
            out.extend_from_slice(b"}}");
        }
        EventKind::Observation(observation) => {
            out.extend_from_slice(b"{\"observation\":{\"name\":");
            string(out, &observation.name);
            attributes(out, &observation.attributes);
            out.extend_from_slice(b"}}");
        }
        EventKind::Attachment(attachment) => {
            out.extend_from_slice(b"{\"attachment\":{\"name\":");
            string(out, &attachment.name);
            if let Some(description) = &attachment.description {
                out.extend_from_slice(b",\"description\":");
                string(out, description);
            }
            out.extend_from_slice(b",\"media_type\":");
            string(out, &attachment.media_type);
            out.extend_from_slice(b",\"content\":");
            match &attachment.content {
                AttachmentContent::Inline(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => {
                        out.extend_from_slice(b"{\"text\":");
                        string(out, text);
                        out.push(b'}');
                    }
                    Err(_) => serde(out, &attachment.content),
                },
                content => serde(out, content),
            }
            out.extend_from_slice(b"}}");
        }
        // Once or twice per test, or never: serde's own output.
        other => serde(out, other),
    }
}

/// `,"attributes":{…}`, or nothing for none (serde skips an empty list).
fn attributes(out: &mut Vec<u8>, attributes: &Attributes) {
    if attributes.is_empty() {
        return;
    }
    out.extend_from_slice(b",\"attributes\":{");
    for (i, (key, value)) in attributes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, key);
        out.push(b':');
        match value {
            AttributeValue::Str(s) => string(out, s),
            AttributeValue::StrList(list) => {
                out.push(b'[');
                for (j, s) in list.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    string(out, s);
                }
                out.push(b']');
            }
            AttributeValue::Int(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            AttributeValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            // Exactly as serde_json formats a float (a shortest round trip; null for NaN).
            AttributeValue::Float(_) => serde(out, value),
        }
    }
    out.push(b'}');
}

fn serde(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    // Our types serialize into a Vec without fail: no map has non-string keys.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn number(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn event_id(out: &mut Vec<u8>, id: EventId) {
    let mut quoted = [b'"'; 18];
    quoted[1..17].copy_from_slice(&super::hex16_bytes(id.as_u64()));
    out.extend_from_slice(&quoted);
}

/// Strings at least this long are remembered, escaped, for the next one to reuse.
const REMEMBERED_MIN: usize = 256;
/// And at most this long: longer attachments leave the line as blobs, so they do not repeat.
const REMEMBERED_MAX: usize = 64 * 1024;

/// A long string written on this thread, its escaped form, and when it was last written.
#[derive(Default)]
struct Remembered {
    text: Vec<u8>,
    escaped: Vec<u8>,
    used: u64,
}

/// How many long strings a thread remembers. A request writes two that repeat: its response
/// body (in the `http.response` observation, then in its attachment) and the expected shape
/// (in the `assert.json.shape` start, then in its attachment), the same shape for every
/// request that asserts it. Remembering one string re-escaped the shape on every request.
const REMEMBERED_SLOTS: usize = 4;

#[derive(Default)]
struct LongStrings {
    slots: [Remembered; REMEMBERED_SLOTS],
    clock: u64,
}

thread_local! {
    static LONG_STRINGS: std::cell::RefCell<LongStrings> = std::cell::RefCell::default();
}

/// Appends `text` as a JSON string. Escaping bodies and shapes full of quotes was the largest
/// part of writing a line, and each is written twice in a row, a shape on every request that
/// asserts it: a long string written recently reuses its escaped bytes (a comparison and a
/// copy); a new one takes the place of the least recently written.
fn string(out: &mut Vec<u8>, text: &str) {
    if !(REMEMBERED_MIN..=REMEMBERED_MAX).contains(&text.len()) {
        escape(out, text);
        return;
    }
    LONG_STRINGS.with_borrow_mut(|strings| {
        strings.clock += 1;
        let clock = strings.clock;
        if let Some(hit) = strings.slots.iter_mut().find(|s| s.text == text.as_bytes()) {
            hit.used = clock;
            out.extend_from_slice(&hit.escaped);
            return;
        }
        let start = out.len();
        escape(out, text);
        // Every slot exists: `slots` is a non-empty array.
        if let Some(oldest) = strings.slots.iter_mut().min_by_key(|s| s.used) {
            oldest.used = clock;
            oldest.text.clear();
            oldest.text.extend_from_slice(text.as_bytes());
            oldest.escaped.clear();
            oldest.escaped.extend_from_slice(&out[start..]);
        }
    });
}

/// `text` as a JSON string, escaped as serde_json escapes it.
///
/// Eight bytes at a time. A word with nothing to escape is copied whole. In a word with
/// escapes, the mask marks every byte to escape, and the run before each is written as the
/// word shifted to the run's start, eight bytes, cut back to the run: one store, not a call to
/// `memcpy` for a handful of bytes, and no second look at the word. A body has a quote every
/// few bytes, and the dispatcher escapes each response's body twice (its observation, its
/// attachment): escaping was a tenth of the dispatcher's samples at 32 in flight. On the
/// bench's 420-byte body and four short strings, timed side by side in one process (five
/// rounds): 373–437 ns with a rescan after each escape, 341–393 ns so.
pub(crate) fn escape(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !has_special(bytes) {
        // Names, routes, URLs, methods: one copy, not a word and then byte by byte.
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut at = 0;
    while let Some(word) = word_at(bytes, at) {
        let mut mask = exact_escape_mask(word);
        // The word's bytes from `from` on are still to be written.
        let mut from = 0;
        while mask != 0 {
            let special = (mask.trailing_zeros() / 8) as usize;
            run_of(out, word, from, special);
            escaped(out, bytes[at + special]);
            from = special + 1;
            mask &= mask - 1;
        }
        run_of(out, word, from, 8);
        at += 8;
    }
    // Fewer than eight left: a byte at a time.
    for &byte in &bytes[at..] {
        if matches!(byte, 0x00..=0x1f | b'"' | b'\\') {
            escaped(out, byte);
        } else {
            out.push(byte);
        }
    }
    out.push(b'"');
}

/// Writes the bytes `from..to` of `word` (in memory order): the word shifted to `from`, all
/// eight bytes, then cut back to the run.
#[inline]
fn run_of(out: &mut Vec<u8>, word: u64, from: usize, to: usize) {
    if from < to {
        out.extend_from_slice(&(word >> (8 * from)).to_le_bytes());
        out.truncate(out.len() - 8 + (to - from));
    }
}

/// A byte that needs escaping, escaped.
#[inline]
fn escaped(out: &mut Vec<u8>, byte: u8) {
    match byte {
        // Most of what a body escapes: a fixed two-byte copy, without the table.
        b'"' | b'\\' => out.extend_from_slice(&[b'\\', byte]),
        _ => escaped_byte(out, byte),
    }
}

/// A byte below 0x20, a quote or a backslash, escaped as serde_json escapes it.
fn escaped_byte(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::event::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn event(kind: EventKind, parent: Option<u64>) -> Event {
        Event {
            run_id: RunId::new("0193a0b4-run_1.x").unwrap(),
            test_id: TestId::generate(),
            id: EventId::generate(),
            parent_id: parent.and_then(|p| format!("{:016x}", p.max(1)).parse().ok()),
            sequence: 7,
            timestamp: Timestamp::now(),
            kind,
        }
    }

    /// Written as serde writes it; in a scope, the same less the two ids, and read back alike.
    fn same_as_serde(event: &Event) {
        let mut line = Vec::new();
        event.write_json(&mut line);
        let serde = serde_json::to_string(event).unwrap();
        assert_eq!(String::from_utf8(line).unwrap(), serde);

        let mut scoped = Vec::new();
        event.write_json_in_scope(&mut scoped);
        let scoped = String::from_utf8(scoped).unwrap();
        let ids = format!(
            "\"run_id\":{},\"test_id\":\"{}\",",
            serde_json::to_string(event.run_id.as_str()).unwrap(),
            event.test_id
        );
        assert_eq!(scoped, serde.replacen(&ids, "", 1));
        let (run, test) = (&event.run_id, event.test_id);
        let read = Event::from_json_in_scope(&scoped, run, test).unwrap();
        assert_eq!(read, Event::from_json_in_scope(&serde, run, test).unwrap());
        // And as the event itself, to the last bit of every float: a collector replayed over
        // the archive must see what it saw live.
        assert_eq!(&read, event);
        // Read by hand as serde reads it, and by hand whenever serde is not needed.
        let by_hand = crate::event::line_reader::read_in_scope(&scoped, run, test);
        let by_serde = Event::from_json_in_scope_by_serde(&scoped, run, test).unwrap();
        if let Some(read) = &by_hand {
            assert_eq!(read, &by_serde);
        }
        assert_eq!(by_hand.is_some(), read_by_hand(event), "{scoped}");
        // Anywhere else, a scoped line reads as its scope's; a full line keeps its own ids.
        let elsewhere = RunId::new("elsewhere").unwrap();
        let read = Event::from_json_in_scope(&scoped, &elsewhere, TestId::generate()).unwrap();
        assert_eq!(read.run_id, elsewhere);
        let read = Event::from_json_in_scope(&serde, &elsewhere, TestId::generate()).unwrap();
        assert_eq!((&read.run_id, read.test_id), (run, test));
    }

    /// Whether the hand reader reads `event`'s line: the kinds written for every request, whose
    /// attribute values are strings, lists, booleans and integers from 0 up.
    fn read_by_hand(event: &Event) -> bool {
        let plain = |attributes: &Attributes| {
            attributes.iter().all(|(_, value)| match value {
                AttributeValue::Float(_) => false,
                AttributeValue::Int(n) => *n >= 0,
                _ => true,
            })
        };
        match &event.kind {
            EventKind::OperationStarted(op) => plain(&op.attributes),
            EventKind::OperationEnded(op) => plain(&op.attributes),
            EventKind::Observation(observation) => plain(&observation.attributes),
            EventKind::Attachment(attachment) => match &attachment.content {
                AttachmentContent::Inline(bytes) => std::str::from_utf8(bytes).is_ok(),
                AttachmentContent::Blob { .. } => true,
                _ => false,
            },
            _ => false,
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            // JSON-ish text, dense in quotes, backslashes and control characters.
            proptest::collection::vec(
                prop_oneof![
                    Just('"'),
                    Just('\\'),
                    Just('\n'),
                    Just('\u{1}'),
                    Just('\u{1f}'),
                    Just('\u{7f}'),
                    Just('é'),
                    Just('{'),
                    Just('a'),
                    Just(' ')
                ],
                0..40
            )
            .prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    fn value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            text().prop_map(AttributeValue::from),
            any::<i64>().prop_map(AttributeValue::Int),
            any::<f64>().prop_map(AttributeValue::Float),
            any::<bool>().prop_map(AttributeValue::Bool),
            proptest::collection::vec(text(), 0..3).prop_map(AttributeValue::StrList),
        ]
    }

    fn attributes() -> impl Strategy<Value = Attributes> {
        // Names of the vocabulary (read back as its statics) and others.
        let key = prop_oneof![
            "[a-z.]{1,12}",
            Just("http.route".to_owned()),
            Just("url.full".to_owned())
        ];
        proptest::collection::vec((key, value()), 0..4).prop_map(|pairs| {
            pairs
                .into_iter()
                .fold(Attributes::new(), |attrs, (k, v)| attrs.with(k, v))
        })
    }

    #[test]
    fn a_long_string_written_again_reuses_its_escaping_only_when_it_is_the_same() {
        let body = |tail: &str| {
            format!(
                r#"{{"note":"a \"quoted\" word\n","pad":"{}"{tail}}}"#,
                "x".repeat(300)
            )
        };
        let (first, same_length, longer) = (body(" "), body("\t"), body(r#","more":"\u0001""#));
        assert_eq!(first.len(), same_length.len());
        let observation = |text: &str| {
            event(
                EventKind::Observation(Observation::new(
                    "http.response",
                    Attributes::new().with("kit.response.body", text),
                )),
                None,
            )
        };
        let attachment = |text: &str| {
            event(
                EventKind::Attachment(Attachment::new(
                    "rest-01-response",
                    "application/json",
                    text.as_bytes().to_vec(),
                )),
                Some(1),
            )
        };
        // The body twice in a row (the reuse), then others that differ only late, or by length,
        // then a short string between two copies of a long one.
        for text in [&first, &first, &same_length, &first, &longer, &longer] {
            same_as_serde(&observation(text));
            same_as_serde(&attachment(text));
        }
        same_as_serde(&observation("short"));
        same_as_serde(&attachment(&first));
        // A shape asserted on every request, between bodies that change (of one length, more
        // of them than the strings remembered): every line is still serde's, and the shape,
        // written on every request, is never the one forgotten.
        let shape = body(r#","shape":true"#);
        let bodies: Vec<String> = (0..2 * super::REMEMBERED_SLOTS)
            .map(|i| body(&format!(r#","id":{i}"#)))
            .collect();
        let remembered = |text: &str| {
            super::LONG_STRINGS.with_borrow(|strings| strings.slots.iter().any(|s| s.text == text.as_bytes()))
        };
        for body in bodies.iter().chain(bodies.iter().rev()) {
            same_as_serde(&observation(body));
            same_as_serde(&attachment(body));
            same_as_serde(&observation(&shape));
            same_as_serde(&attachment(&shape));
            assert!(remembered(&shape) && remembered(body));
        }
        let huge = "\"".repeat(super::REMEMBERED_MAX + 1);
        same_as_serde(&observation(&huge));
        same_as_serde(&attachment(&huge));
    }

    #[test]
    fn a_float_reads_back_to_its_last_bit() {
        // The first four read a bit off by serde_json without `float_roundtrip` (6e30 as
        // 6.000000000000001e30, found by the fuzz target `event_line`); the rest are edges of
        // the f64 range and everyday prices.
        for x in [
            6e30,
            3e25,
            7e-30,
            1.051_364_276_923_134_1e-293,
            1e23,
            2.225_073_858_507_201_4e-308,
            5e-324,
            1.797_693_134_862_315_7e308,
            -19.99,
        ] {
            let attributes = Attributes::new().with("x", x);
            same_as_serde(&event(
                EventKind::Observation(Observation::new("n", attributes)),
                None,
            ));
        }
    }

    proptest! {
        /// Long strings, specials at every offset of a word, and any string at all.
        #[test]
        fn a_string_is_escaped_as_serde_escapes_it(
            dense in proptest::collection::vec(
                prop_oneof![Just('"'), Just('\\'), Just('\u{0}'), Just('\u{1f}'), Just('\u{7f}'), Just('é'), Just('a')],
                0..200,
            ),
            any_text in any::<String>(),
        ) {
            let dense: String = dense.into_iter().collect();
            for text in [&dense, &any_text] {
                let mut out = b"kept".to_vec();
                super::escape(&mut out, text);
                prop_assert_eq!(&out[..4], b"kept");
                prop_assert_eq!(std::str::from_utf8(&out[4..]).unwrap(), serde_json::to_string(text).unwrap());
            }
        }
    }

    proptest! {
        #[test]
        fn every_kind_is_written_as_serde_writes_it(
            name in text(),
            other in text(),
            optional in proptest::option::of(text()),
            attrs in attributes(),
            bytes in proptest::collection::vec(any::<u8>(), 0..24),
            nanos in any::<u64>(),
            parent in proptest::option::of(any::<u64>()),
        ) {
            let mut started = OperationStarted::new(name.clone(), other.clone()).with_attributes(attrs.clone());
            if let Some(entity) = &optional {
                started = started.with_entity(entity.clone());
            }
            let status = match &optional {
                Some(message) => OperationStatus::Error { message: message.clone() },
                None => OperationStatus::Ok,
            };
            let ended = OperationEnded::new(EventId::generate(), status, Duration::from_nanos(nanos))
                .with_attributes(attrs.clone());
            let mut attachment = Attachment::new(name.clone(), other.clone(), bytes.clone());
            if let Some(description) = &optional {
                attachment = attachment.with_description(description.clone());
            }
            let text_attachment = Attachment::new(name.clone(), "application/json", other.clone().into_bytes());
            let mut blob = attachment.clone();
            blob.content = AttachmentContent::Blob { sha256: "ab".repeat(32), size: nanos };
            let kinds = [
                EventKind::OperationStarted(started),
                EventKind::OperationEnded(ended),
                EventKind::Observation(Observation::new(name.clone(), attrs)),
                EventKind::Attachment(attachment),
                EventKind::Attachment(text_attachment),
                EventKind::Attachment(blob),
                EventKind::TestStarted(TestStarted::new(name.clone()).with_application(optional.clone())),
                EventKind::TestFinished(TestFinished {
                    outcome: TestOutcome::Failed { message: other.clone() },
                    duration: Duration::from_nanos(nanos),
                }),
                EventKind::Unknown { kind: name },
            ];
            for kind in kinds {
                same_as_serde(&event(kind, parent));
            }
        }
    }

    /// Pieces of JSON that break a line, or change it into another line that still reads.
    const PIECES: &[&str] = &[
        "\"", "\\", ",", ":", "{", "}", "[", "]", " ", "0", "9", "-", ".", "e", "\\u", "d800", "dc00",
        "null", "true", "\n", "\u{1}", "é", "\"k\":1,",
    ];

    /// Applies `edits` to `bytes`, each at an offset taken modulo its length: delete `len`
    /// bytes, insert a piece, or replace a byte with one.
    fn break_at_random(bytes: &mut Vec<u8>, edits: Vec<(u16, u8, usize, usize)>) {
        for (at, edit, piece, len) in edits {
            let at = usize::from(at) % (bytes.len() + 1);
            let piece = PIECES[piece].as_bytes();
            match edit {
                0 => {
                    bytes.drain(at..(at + len).min(bytes.len()));
                }
                1 => {
                    bytes.splice(at..at, piece.iter().copied());
                }
                _ => {
                    bytes.splice(at..(at + 1).min(bytes.len()), piece.iter().copied());
                }
            }
        }
    }

    proptest! {
        /// Whatever a line is broken into, the hand reader reads it as serde does or leaves it
        /// to serde: it never reads a line serde refuses, nor reads one otherwise.
        #[test]
        fn a_broken_line_reads_by_hand_only_as_serde_reads_it(
            name in text(),
            attrs in attributes(),
            ended in any::<bool>(),
            edits in proptest::collection::vec((any::<u16>(), 0..3u8, 0..PIECES.len(), 1..4usize), 1..4),
        ) {
            let kind = if ended {
                EventKind::OperationEnded(
                    OperationEnded::new(EventId::generate(), OperationStatus::Error { message: name }, Duration::from_nanos(9))
                        .with_attributes(attrs),
                )
            } else {
                EventKind::OperationStarted(OperationStarted::new("http.request", name).with_attributes(attrs))
            };
            let event = event(kind, Some(5));
            let mut line = Vec::new();
            event.write_json_in_scope(&mut line);
            break_at_random(&mut line, edits);
            // Only text reaches the reader: the archive checks UTF-8 first.
            let Ok(line) = String::from_utf8(line) else { return Ok(()) };
            let (run, test) = (&event.run_id, event.test_id);
            if let Some(read) = crate::event::line_reader::read_in_scope(&line, run, test) {
                prop_assert_eq!(Some(read), Event::from_json_in_scope_by_serde(&line, run, test).ok(), "{}", line);
            }
        }
    }

    proptest! {
        /// A text of lines, some broken at random (a line end put in a string, a line joined to
        /// the next, blank lines), reads as its lines read one by one through serde: the same
        /// events and the same failures, in order.
        #[test]
        fn a_text_of_lines_reads_as_its_lines_one_by_one(
            names in proptest::collection::vec(text(), 1..5),
            attrs in attributes(),
            edits in proptest::collection::vec((any::<u16>(), 0..3u8, 0..PIECES.len(), 1..4usize), 0..4),
        ) {
            let mut written = Vec::new();
            let scope = event(EventKind::Unknown { kind: "x".into() }, None);
            for (i, name) in names.into_iter().enumerate() {
                let kind = match i % 3 {
                    0 => EventKind::Observation(Observation::new("http.response", attrs.clone())),
                    1 => EventKind::OperationStarted(
                        OperationStarted::new("http.request", name).with_attributes(attrs.clone()),
                    ),
                    _ => EventKind::TestStarted(TestStarted::new(name)),
                };
                let mut line = event(kind, Some(5));
                (line.run_id, line.test_id) = (scope.run_id.clone(), scope.test_id);
                line.write_json_in_scope(&mut written);
                written.extend_from_slice(if i % 2 == 0 { b"\n" } else { b"\n\n" });
            }
            break_at_random(&mut written, edits);
            let Ok(text) = String::from_utf8(written) else { return Ok(()) };
            let (run, test) = (&scope.run_id, scope.test_id);
            let read: Vec<Result<Event, String>> = Event::lines_in_scope(&text, run, test)
                .map(|r| r.map_err(|e| e.to_string()))
                .collect();
            let one_by_one: Vec<Result<Event, String>> = text
                .split('\n')
                .filter(|line| !line.is_empty())
                .map(|line| Event::from_json_in_scope_by_serde(line, run, test).map_err(|e| e.to_string()))
                .collect();
            prop_assert_eq!(read, one_by_one, "{}", text);
        }
    }

    #[test]
    fn every_control_character_and_long_runs_are_escaped_as_serde_escapes_them() {
        let all: String = (0u8..0x80).map(char::from).collect();
        let long = format!("{}\"{}\\{}", "x".repeat(37), "y".repeat(8), all.repeat(3));
        for text in [
            all.as_str(),
            long.as_str(),
            "",
            "12345678",
            "1234567\"",
            "\"1234567",
        ] {
            let observation = Observation::new("o", Attributes::new().with("t", text));
            same_as_serde(&event(EventKind::Observation(observation), None));
        }
        let content = AttachmentContent::Inline(Arc::from(all.into_bytes()));
        let mut attachment = Attachment::new("a", "text/plain", Vec::new());
        attachment.content = content;
        same_as_serde(&event(EventKind::Attachment(attachment), Some(3)));
    }
}
