//! A JSON string read where it lies, for the readers that walk JSON by hand.

use std::borrow::Cow;

use super::swar::next_special;

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
fn unescape(json: &str, start: usize, mut at: usize) -> Option<(String, usize)> {
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(at - start + 16);
    out.push_str(&json[start..at]);
    loop {
        match *bytes.get(at)? {
            b'"' => return Some((out, at + 1)),
            b'\\' => {
                let (c, len) = match *bytes.get(at + 1)? {
                    b'"' => ('"', 2),
                    b'\\' => ('\\', 2),
                    b'/' => ('/', 2),
                    b'b' => ('\u{8}', 2),
                    b'f' => ('\u{c}', 2),
                    b'n' => ('\n', 2),
                    b'r' => ('\r', 2),
                    b't' => ('\t', 2),
                    b'u' => unicode(bytes, at + 2)?,
                    _ => return None,
                };
                out.push(c);
                at += len;
            }
            _ => return None,
        }
        let next = next_special(bytes, at);
        out.push_str(&json[at..next]);
        at = next;
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

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)?
        .iter()
        .try_fold(0u32, |value, &b| Some(value << 4 | char::from(b).to_digit(16)?))
}
