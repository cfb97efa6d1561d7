//! An event line read by hand: the archive reader's hot path.
//!
//! `kit-cli report` reads every line of an archive. Through serde, reading the lines was two
//! thirds of each reader thread's instructions: serde_json's map machinery around every key,
//! its string scanner started afresh for every short string, its number reader behind
//! `deserialize_any` for every attribute value.
//!
//! The lines the kit writes ([`Event::write_json_in_scope`]) have one form: keys in one order,
//! no whitespace, integers, strings escaped only where they must be. This reader reads that
//! form and nothing else. Anything it does not expect (other keys or another order, whitespace,
//! a float, a kind written once per test, a broken line) makes it give up, and the caller hands
//! the line to serde, which reads every form the format allows and words every error. So a
//! line reads the same either way: property tests hold the two together on written lines and
//! on lines broken at random.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::json::read_string;
use crate::json::swar::word_at;

use super::{
    Attachment, AttachmentContent, AttributeValue, Attributes, Event, EventId, EventKind, Observation,
    OperationEnded, OperationStarted, OperationStatus, RunId, TYPICAL_LEN, TestId, Text, Timestamp,
};

/// Reads a line without `run_id` and `test_id` as [`Event::write_json_in_scope`] writes it, or
/// `None` where the line is in any other form, for serde to read.
pub(super) fn read_in_scope(line: &str, run_id: &RunId, test_id: TestId) -> Option<Event> {
    // Anything after the event, even the whitespace serde allows: serde's to judge.
    read_at(line, 0, run_id, test_id).and_then(|(event, end)| (end == line.len()).then_some(event))
}

/// Reads an event written by [`Event::write_json_in_scope`] that begins at `start` in `text`,
/// with the offset just after its closing brace; `None` where what begins there is in any other
/// form. It never reads across a line's end: a line end inside a string is a control character,
/// which [`read_string`] refuses, and nothing else it reads can hold one. So text read from a
/// line's start up to a line end (or the text's end) is that line, whole.
pub(super) fn read_at(text: &str, start: usize, run_id: &RunId, test_id: TestId) -> Option<(Event, usize)> {
    let mut reader = Reader { text, at: start };
    reader.expect(b"{\"id\":")?;
    let id = reader.event_id()?;
    reader.expect(b",\"parent_id\":")?;
    let parent_id = if reader.eat(b"null") {
        None
    } else {
        Some(reader.event_id()?)
    };
    reader.expect(b",\"sequence\":")?;
    let sequence = reader.u64()?;
    reader.expect(b",\"timestamp\":")?;
    let timestamp = Timestamp::from_unix_nanos(reader.u64()?);
    reader.expect(b",\"kind\":{\"")?;
    let kind = reader.kind()?;
    reader.expect(b"}")?;
    let event = Event {
        run_id: run_id.clone(),
        test_id,
        id,
        parent_id,
        sequence,
        timestamp,
        kind,
    };
    Some((event, reader.at))
}

/// Whether every byte of `word` is an ASCII digit: its high nibble is 3, and adding 6 leaves it
/// 3 (no byte carries into the next: each is at most 0x3f).
fn all_digits(word: u64) -> bool {
    const HIGH_NIBBLES: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    word & HIGH_NIBBLES == THREES && word.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES == THREES
}

/// The value of eight ASCII digits, the first in the word's lowest byte: pairs, then quads,
/// then the whole, each step one multiply.
fn eight_digits(word: u64) -> u64 {
    let word = word & 0x0f0f_0f0f_0f0f_0f0f;
    let pairs = (word & 0x000f_000f_000f_000f) * 10 + ((word >> 8) & 0x000f_000f_000f_000f);
    let quads = (pairs & 0x0000_00ff_0000_00ff) * 100 + ((pairs >> 16) & 0x0000_00ff_0000_00ff);
    (quads & 0xffff_ffff) * 10_000 + (quads >> 32)
}

/// A position in a line, which is cut only at ASCII bytes, so every cut falls on a character
/// boundary.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Steps over `literal` if the line goes on with it.
    fn eat(&mut self, literal: &[u8]) -> bool {
        let found = self.bytes()[self.at..].starts_with(literal);
        if found {
            self.at += literal.len();
        }
        found
    }

    fn expect(&mut self, literal: &[u8]) -> Option<()> {
        self.eat(literal).then_some(())
    }

    /// The payload of a kind, after `{"` and through the kind object's closing brace. The two
    /// kinds a test writes once each (its start and its end) are left to serde.
    fn kind(&mut self) -> Option<EventKind> {
        if self.eat(b"observation\":{\"name\":") {
            let name = self.name()?;
            let attributes = self.attributes()?;
            self.expect(b"}}")?;
            Some(EventKind::Observation(Observation { name, attributes }))
        } else if self.eat(b"operation_started\":{\"name\":") {
            let name = self.name()?;
            self.expect(b",\"display_name\":")?;
            let display_name = self.string()?.into_owned();
            let entity = if self.eat(b",\"entity\":") {
                Some(Text::from(self.string()?.into_owned()))
            } else {
                None
            };
            let attributes = self.attributes()?;
            self.expect(b"}}")?;
            Some(EventKind::OperationStarted(OperationStarted {
                name,
                display_name,
                entity,
                attributes,
            }))
        } else if self.eat(b"operation_ended\":{\"operation\":") {
            let operation = self.event_id()?;
            self.expect(b",\"status\":{\"status\":\"")?;
            let status = if self.eat(b"ok\"}") {
                OperationStatus::Ok
            } else {
                self.expect(b"error\",\"message\":")?;
                let message = self.string()?.into_owned();
                self.expect(b"}")?;
                OperationStatus::Error { message }
            };
            self.expect(b",\"duration_ns\":")?;
            let duration = Duration::from_nanos(self.u64()?);
            let attributes = self.attributes()?;
            self.expect(b"}}")?;
            Some(EventKind::OperationEnded(OperationEnded {
                operation,
                status,
                duration,
                attributes,
            }))
        } else if self.eat(b"attachment\":{\"name\":") {
            let name = self.string()?.into_owned();
            let description = if self.eat(b",\"description\":") {
                Some(self.string()?.into_owned())
            } else {
                None
            };
            self.expect(b",\"media_type\":")?;
            let media_type = self.string()?.into_owned();
            self.expect(b",\"content\":{\"")?;
            let content = if self.eat(b"text\":") {
                AttachmentContent::Inline(Arc::from(self.string()?.as_bytes()))
            } else {
                self.expect(b"blob\":{\"sha256\":")?;
                let sha256 = self.string()?.into_owned();
                self.expect(b",\"size\":")?;
                let size = self.u64()?;
                self.expect(b"}")?;
                AttachmentContent::Blob { sha256, size }
            };
            self.expect(b"}}}")?;
            Some(EventKind::Attachment(Attachment {
                name,
                description,
                media_type,
                content,
            }))
        } else {
            None
        }
    }

    /// `,"attributes":{…}`, or none at all (the writer leaves an empty list out).
    fn attributes(&mut self) -> Option<Attributes> {
        if !self.eat(b",\"attributes\":{") {
            return Some(Attributes::new());
        }
        let mut list = Vec::with_capacity(TYPICAL_LEN);
        if self.eat(b"}") {
            return Some(Attributes(list));
        }
        loop {
            let key = self.name()?;
            self.expect(b":")?;
            list.push((key, self.value()?));
            if self.eat(b"}") {
                return Some(Attributes(list));
            }
            self.expect(b",")?;
        }
    }

    /// A string, an integer that fits an `i64`, a boolean, or a list of strings. Floats and
    /// negative numbers (which serde_json reads by rules of its own: `-0` is a float) are
    /// serde's.
    fn value(&mut self) -> Option<AttributeValue> {
        match *self.bytes().get(self.at)? {
            b'"' => Some(AttributeValue::from(self.string()?.into_owned())),
            b'[' => {
                self.at += 1;
                let mut list = Vec::new();
                if self.eat(b"]") {
                    return Some(AttributeValue::StrList(list));
                }
                loop {
                    list.push(self.string()?.into_owned());
                    if self.eat(b"]") {
                        return Some(AttributeValue::StrList(list));
                    }
                    self.expect(b",")?;
                }
            }
            b't' => self.eat(b"true").then_some(AttributeValue::Bool(true)),
            b'f' => self.eat(b"false").then_some(AttributeValue::Bool(false)),
            b'0'..=b'9' => i64::try_from(self.u64()?).ok().map(AttributeValue::Int),
            _ => None,
        }
    }

    /// A non-negative integer without leading zeros that fits a `u64`, not followed by a
    /// fraction or an exponent. Eight digits at a time while eight follow: every event has a
    /// nineteen-digit timestamp, and a digit at a time it cost 400 instructions.
    fn u64(&mut self) -> Option<u64> {
        let rest = &self.bytes()[self.at..];
        let mut value = 0u64;
        let mut digits = 0;
        while let Some(word) = word_at(rest, digits) {
            if !all_digits(word) {
                break;
            }
            value = value.checked_mul(100_000_000)?.checked_add(eight_digits(word))?;
            digits += 8;
        }
        while let Some(digit) = rest.get(digits).filter(|b| b.is_ascii_digit()) {
            value = value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
            digits += 1;
        }
        if digits == 0 || (digits > 1 && rest[0] == b'0') {
            return None;
        }
        if matches!(rest.get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at += digits;
        Some(value)
    }

    /// An id as the writer writes it (sixteen hex digits between quotes) read where it lies;
    /// any other string is parsed as ids are.
    fn event_id(&mut self) -> Option<EventId> {
        let bytes = self.bytes();
        if bytes.get(self.at) == Some(&b'"')
            && bytes.get(self.at + 17) == Some(&b'"')
            && let Some(id) = EventId::from_hex(&bytes[self.at + 1..self.at + 17])
        {
            self.at += 18;
            return Some(id);
        }
        self.string()?.parse().ok()
    }

    /// A name from the vocabulary, borrowed from it when it is one (as serde's reader does).
    fn name(&mut self) -> Option<Cow<'static, str>> {
        let text = self.string()?;
        Some(match crate::semconv::intern(&text) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(text.into_owned()),
        })
    }

    /// A JSON string: borrowed from the line when it holds no escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.bytes().get(self.at) != Some(&b'"') {
            return None;
        }
        let (text, end) = read_string(self.text, self.at + 1)?;
        self.at = end;
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scope() -> (RunId, TestId) {
        (RunId::new("run").unwrap(), TestId::from_u128(7))
    }

    /// What serde alone makes of a line.
    fn serde(line: &str) -> Result<Event, serde_json::Error> {
        let (run, test) = scope();
        Event::from_json_in_scope_by_serde(line, &run, test)
    }

    fn by_hand(line: &str) -> Option<Event> {
        let (run, test) = scope();
        read_in_scope(line, &run, test)
    }

    fn observation(attributes: &str) -> String {
        format!(
            r#"{{"id":"00000000000000ff","parent_id":null,"sequence":1,"timestamp":2,"kind":{{"observation":{{"name":"http.response","attributes":{{{attributes}}}}}}}}}"#
        )
    }

    /// Every escape JSON has, read as serde reads it.
    #[test]
    fn escapes_read_as_serde_reads_them() {
        for text in [
            r#""plain""#,
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u00e9\u00E9 \u0000 \u001f \uffff""#,
            r#""\ud83d\ude00 and \uD83D\uDE00""#,
            r#""\"""#,
            r#""x\\""#,
            r#""é then \n""#,
        ] {
            let line = observation(&format!(r#""k":{text},"l":[{text},{text}]"#));
            let read = by_hand(&line).unwrap_or_else(|| panic!("{line} read by hand"));
            assert_eq!(read, serde(&line).unwrap(), "{line}");
        }
    }

    /// Lines serde refuses, or reads by rules of its own, are left to it.
    #[test]
    fn what_it_does_not_read_is_left_to_serde() {
        for (attributes, serde_reads_it) in [
            (r#""k":"\ud83d""#, false),
            (r#""k":"\ud83d\u0041""#, false),
            (r#""k":"\ude00""#, false),
            (r#""k":"\x""#, false),
            (r#""k":"\u00g0""#, false),
            ("\"k\":\"tab\there\"", false),
            (r#""k":01"#, false),
            (r#""k":1.5"#, true),
            (r#""k":1e3"#, true),
            (r#""k":-1"#, true),
            (r#""k":-0"#, true),
            (r#""k":9223372036854775808"#, true),
            (r#""k":18446744073709551616"#, true),
            (r#""k":null"#, false),
            (r#""k":tru"#, false),
            (r#""k":{}"#, false),
            (r#""k":[1]"#, false),
            (r#""k" :1"#, true),
            (r#""k":1,"#, false),
            (r#""k":"unterminated"#, false),
        ] {
            let line = observation(attributes);
            assert_eq!(by_hand(&line), None, "{line}");
            assert_eq!(serde(&line).is_ok(), serde_reads_it, "{line}");
        }
        let line = observation(r#""k":1"#);
        let read = by_hand(&line).unwrap();
        assert_eq!(read, serde(&line).unwrap());
        for other in [
            format!("{line} "),
            format!("{line}\r"),
            format!(" {line}"),
            format!("{line}}}"),
            line.replace("\"sequence\":1", "\"sequence\":18446744073709551616"),
            line.replace("\"sequence\":1", "\"sequence\":01"),
            line.replace("\"parent_id\":null", "\"parent_id\":\"0000000000000000\""),
            line.replace(
                r#""id":"00000000000000ff""#,
                r#""id":"00000000000000ff","run_id":"r""#,
            ),
        ] {
            assert_eq!(by_hand(&other), None, "{other}");
        }
    }

    /// The reader's numbers a digit at a time, as it read them before it read eight at a time.
    fn u64_a_digit_at_a_time(rest: &[u8]) -> Option<(u64, usize)> {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || (digits > 1 && rest[0] == b'0') {
            return None;
        }
        let mut value = 0u64;
        for &digit in &rest[..digits] {
            value = value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
        }
        if matches!(rest.get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some((value, digits))
    }

    proptest! {
        /// Eight digits at a time reads what a digit at a time reads: runs of every length
        /// around the eight-byte steps and past `u64::MAX`, broken by the bytes on either side
        /// of the digits' range, and what may follow a number.
        #[test]
        fn integers_read_eight_digits_at_a_time_as_one_at_a_time(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => proptest::num::u8::ANY.prop_map(|b| b'0' + b % 10),
                    1 => proptest::sample::select(b"/:.eE,}\x00\x7f\xb0 ".to_vec()),
                ],
                0..30,
            ),
        ) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut reader = Reader { text: &text, at: 0 };
            let read = reader.u64().map(|value| (value, reader.at));
            proptest::prop_assert_eq!(read, u64_a_digit_at_a_time(text.as_bytes()), "{:?}", text);
        }
    }

    #[test]
    fn eight_digits_make_their_value() {
        for text in [
            "00000000", "12345678", "99999999", "10000000", "00000001", "90817263",
        ] {
            let word = word_at(text.as_bytes(), 0).unwrap();
            assert!(all_digits(word));
            assert_eq!(eight_digits(word), text.parse::<u64>().unwrap(), "{text}");
        }
        for text in ["1234567/", ":2345678", "1234 678", "1234567\u{0}", "123a5678"] {
            assert!(!all_digits(word_at(text.as_bytes(), 0).unwrap()), "{text}");
        }
    }

    /// The numbers at the edges of what it reads.
    #[test]
    fn integers_up_to_the_largest_i64_read_by_hand() {
        for n in ["0", "7", "9223372036854775807"] {
            let line = observation(&format!(r#""k":{n}"#));
            assert_eq!(by_hand(&line).unwrap(), serde(&line).unwrap());
        }
        let line = observation(r#""k":0"#).replace("\"timestamp\":2", "\"timestamp\":18446744073709551615");
        assert_eq!(by_hand(&line).unwrap().timestamp.as_unix_nanos(), u64::MAX);
    }
}
