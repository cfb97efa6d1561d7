//! The text of an HTML page's scripts.

use super::{REDACTED, Rules, skip_while};

/// Redacts a script's text, `depth` URLs or documents deep (`super::url::NESTING`): as JSON
/// first (rule 4, or, not JSON, rule 6's fallback), then the values JavaScript gives names
/// without JSON's double quotes. Pages set their configuration so
/// (`const firebaseConfig = { apiKey: "…" }`, `window.token = '…'`): a name, an identifier or a
/// quoted string, then `:` or `=`, then a string in any of JavaScript's three quotes. Such a
/// value under a sensitive name is redacted and remembered.
///
/// Strings are read as strings, so a name inside one (`"apiKey: 'x'"`) is text. Tolerant: a
/// comment or a regular expression holding a quote may make later strings read out of step,
/// which redacts the values of sensitive names among them or misses them, never more than that.
pub(crate) fn redact_script(text: &str, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) -> String {
    let json = super::json_body(text, rules, found, depth);
    // Without a sensitive name somewhere there is nothing for the second pass to find.
    if !rules.json.may_occur_in(&json) {
        return json.into_owned();
    }
    let text = &*json;
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        // A token that may be a name: an identifier, or a string.
        let (name, after) = if is_identifier_start(b) {
            let end = skip_while(bytes, i, is_identifier_part);
            (&text[i..end], end)
        } else if is_quote(b) {
            let close = string_end(bytes, i);
            if close == bytes.len() {
                break;
            }
            (&text[i + 1..close], close + 1)
        } else if b.is_ascii_digit() {
            // A number's letters (`1e5`, `0x1f`) are no name.
            i = skip_while(bytes, i, is_identifier_part);
            continue;
        } else {
            i += 1;
            continue;
        };
        i = after;
        let Some((value_open, value_close)) = value_after(bytes, after) else {
            continue;
        };
        let value = &text[value_open + 1..value_close];
        if value == REDACTED || !rules.is_sensitive_field(name) {
            continue;
        }
        found(&super::json::unescape_lossy(value));
        out.push_str(&text[copied..=value_open]);
        out.push_str(REDACTED);
        copied = value_close;
    }
    out.push_str(&text[copied..]);
    out
}

/// A string given as a name's value after `at` (just past the name): whitespace, `:` or `=`
/// (not `==` or `=>`), whitespace, then a string. Returns its opening quote and where it
/// closes (the end of the text for a string never closed).
fn value_after(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let space = |b: u8| b.is_ascii_whitespace();
    let j = skip_while(bytes, at, space);
    match bytes.get(j)? {
        b':' => {}
        b'=' if !matches!(bytes.get(j + 1), Some(b'=' | b'>')) => {}
        _ => return None,
    }
    let open = skip_while(bytes, j + 1, space);
    bytes
        .get(open)
        .is_some_and(|&b| is_quote(b))
        .then(|| (open, string_end(bytes, open)))
}

fn is_quote(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

/// Where the string opened at `open` closes, skipping escapes: at its quote, at the end of
/// its line for a `'` or `"` string (JavaScript's own end for one left open), or at the end of
/// the text.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' if quote != b'`' => return i,
            b if b == quote => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn is_identifier_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

/// Part of an identifier, or of a name joined by dots (`config.apiKey`), which
/// [`Rules::is_sensitive_field`] splits.
fn is_identifier_part(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}
