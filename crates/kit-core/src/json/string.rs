//! A JSON string read where it lies, for the readers that walk JSON by hand.

use std::borrow::Cow;

use super::swar::{copy_run, next_special};

/// The JSON string whose text begins at `start` in `json` (just after its opening quote),
/// decoded, with the offset just after its closing quote; `None` if it is not a string
/// serde_json reads alike: unterminated, holding a control character or an unknown escape,
/// or an escaped surrogate not in a pair. Borrowed from `json` when it holds no escape.
///
/// Runs between escapes are found eight bytes at a time ([`next_special`]) and end only at
/// ASCII bytes, so every cut falls on a character boundary.
///
/// ```
/// use kit_core::json::read_string;
///
/// let json = r#"{"login":"oct\u00f6cat","id":1}"#;
/// assert_eq!(read_string(json, 2), Some(("login".into(), 8)));
/// let (text, end) = read_string(json, 10).unwrap();
/// assert_eq!((&*text, &json[end..]), ("octöcat", r#","id":1}"#));
/// assert_eq!(read_string(r#""\ud83d""#, 1), None);
/// ```
pub fn read_string(json: &str, start: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = json.as_bytes();
    let end = next_special(bytes, start);
    match *bytes.get(end)? {
        b'"' => Some((Cow::Borrowed(&json[start..end]), end + 1)),
        b'\\' => unescape(json, start, end).map(|(text, end)| (Cow::Owned(text), end)),
        // A control character: not JSON.
        _ => None,
    }
}

/// The rest of a string from `start` whose first escape is at `at`.
///
/// Built as bytes, runs copied eight at a time: in a response body held as an attribute, every
/// quote is escaped, and copying the few bytes between escapes through `push_str` (a call to
/// `memcpy` each) was most of reading such a body.
fn unescape(json: &str, start: usize, mut at: usize) -> Option<(String, usize)> {
    let bytes = json.as_bytes();
    let mut out = Vec::with_capacity(at - start + 16);
    out.extend_from_slice(&bytes[start..at]);
    loop {
        match *bytes.get(at)? {
            // Cut only at ASCII bytes and added to only whole characters: always UTF-8.
            b'"' => return Some((String::from_utf8(out).ok()?, at + 1)),
            b'\\' => {
                let (c, len) = match *bytes.get(at + 1)? {
                    b'u' => unicode(bytes, at + 2)?,
                    byte => (short_escape(byte)?, 2),
                };
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                at += len;
            }
            _ => return None,
        }
        at = copy_run(bytes, at, &mut out);
    }
}

/// The character of `\uXXXX` whose hex digits begin at `at`, with the length of its escape
/// (12 for a surrogate pair). A surrogate alone is serde_json's to refuse.
fn unicode(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let first = hex4(bytes, at)?;
    if (0xD800..=0xDBFF).contains(&first) {
        if bytes.get(at + 4..at + 6)? != b"\\u" {
            return None;
        }
        let second = hex4(bytes, at + 6)?;
        if !(0xDC00..=0xDFFF).contains(&second) {
            return None;
        }
        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return Some((char::from_u32(code)?, 12));
    }
    // A trailing surrogate alone is no char: `from_u32` refuses it.
    Some((char::from_u32(first)?, 6))
}

/// The character a two-byte escape `\\x` stands for, given `x`: `None` for `u` (six bytes or
/// more) and for anything JSON does not allow.
#[inline]
pub(crate) fn short_escape(byte: u8) -> Option<char> {
    Some(match byte {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// The four hexadecimal digits at `at`, either case, as the code they spell.
pub(crate) fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)?
        .iter()
        .try_fold(0u32, |value, &b| Some(value << 4 | char::from(b).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Text dense in what strings escape, with runs long and short around the eight-byte words.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            proptest::collection::vec(
                prop_oneof![
                    Just("\"".to_owned()),
                    Just("\\".to_owned()),
                    Just("\n".to_owned()),
                    Just("\u{1}".to_owned()),
                    Just("é".to_owned()),
                    Just("😀".to_owned()),
                    "[a-z]{0,17}",
                ],
                0..12
            )
            .prop_map(|pieces| pieces.concat()),
        ]
    }

    proptest! {
        /// Any text serde_json writes reads back whole, with the offset after its quote.
        #[test]
        fn what_serde_json_writes_reads_back(text in text(), tail in "[,}\\]]{0,2}") {
            let json = format!("{}{tail}", serde_json::to_string(&text).unwrap());
            let (read, end) = read_string(&json, 1).unwrap();
            prop_assert_eq!(&*read, text.as_str());
            prop_assert_eq!(&json[end..], tail.as_str());
        }

        /// Whatever follows a quote, the string read is the one serde_json reads, ending where
        /// it ends; and where none is read, serde_json reads no string ending at any quote.
        #[test]
        fn a_string_is_read_as_serde_json_reads_it(
            pieces in proptest::collection::vec(
                prop_oneof![
                    Just("\""), Just("\\"), Just("\\\""), Just("\\\\"), Just("\\/"), Just("\\n"),
                    Just("\\u"), Just("\\x"), Just("00e9"), Just("d83d"), Just("de00"), Just("\u{1}"),
                    Just("é"), Just("a"), Just("abcdefghij"),
                ],
                0..10,
            )
        ) {
            let json = format!("\"{}", pieces.concat());
            match read_string(&json, 1) {
                Some((read, end)) => {
                    let serde: String = serde_json::from_str(&json[..end]).unwrap();
                    prop_assert_eq!(&*read, serde.as_str());
                }
                None => {
                    for (end, _) in json.match_indices('"').skip(1) {
                        prop_assert!(serde_json::from_str::<String>(&json[..=end]).is_err(), "{}", &json[..=end]);
                    }
                }
            }
        }
    }
}
