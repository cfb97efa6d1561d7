//! JSON redaction that keeps the document as it was written.
//!
//! A strict single-pass scanner copies the text to the output and, for each object member
//! whose name is sensitive, replaces its whole value (string, number, object, …) by
//! `"[REDACTED]"`. Parsing into a `serde_json::Value` instead would silently drop duplicate
//! keys (and could hide a secret in the first one), reformat numbers and reorder nothing we
//! need. The scanner keeps its own stack, so nesting depth is bounded by memory, not by the
//! thread's stack.

use std::borrow::Cow;

use super::{REDACTED, Rules};

/// Why the text is not JSON (the caller falls back to [`redact_text_fallback`]).
#[derive(Debug)]
pub(crate) struct NotJson;

enum Frame {
    Object {
        /// Where, in the text, the value of a sensitive member began.
        redact_from: Option<usize>,
        state: ObjectState,
    },
    Array {
        state: ArrayState,
    },
}

#[derive(Clone, Copy, PartialEq)]
enum ObjectState {
    KeyOrEnd,
    Key,
    Colon,
    Value,
    CommaOrEnd,
}

#[derive(Clone, Copy, PartialEq)]
enum ArrayState {
    ValueOrEnd,
    Value,
    CommaOrEnd,
}

/// Walks the text without copying it: only a redaction copies what precedes it (from
/// `copied` on) to `out`, so a document with nothing to redact is returned as it is.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    out: String,
    copied: usize,
    /// Sensitive members' objects and arrays open around the position: their whole values are
    /// replaced when they end, so a sensitive member inside one writes nothing of its own.
    redacting: usize,
    /// How many URLs or documents this document is carried inside (a string value's, an encoded
    /// query value's; see `super::url::NESTING`).
    depth: u8,
    /// Whether the text holds `://` anywhere, so that a string may hold a URL in prose.
    urls_in_prose: bool,
    /// Whether the text writes a query-list name after `?`, `&` or `#`, or bare (after a space
    /// or a string's start), and before `=`, or a URL percent-encoded, anywhere, so that a
    /// string may hold a relative URL's, a bare query's or a log line's sensitive pair, or an
    /// encoded URL.
    pairs_in_prose: bool,
    /// Whether the text names a sensitive header anywhere, so that a string may hold a header
    /// line (`curl -H 'Authorization: …'`): looked for once a string holding `:` asks.
    headers_in_prose: Option<bool>,
    /// Where the next `=` stands, for a form's pairs in a string.
    next_equals: NextByte,
    /// Where the next `:` stands, for a header line in a string.
    next_colon: NextByte,
}

/// Where the first of one byte at or after the last string looked into stands (the text's
/// length if there is none): found a stretch at a time, so that looking into every string for
/// it costs one pass over the text in all, and a string without it a compare.
struct NextByte {
    byte: u8,
    at: usize,
}

impl NextByte {
    fn new(byte: u8) -> Self {
        NextByte { byte, at: 0 }
    }

    /// Whether `bytes[from..to]`, a string's content, holds the byte. Called with strings in
    /// the order they stand.
    #[inline]
    fn within(&mut self, bytes: &[u8], from: usize, to: usize) -> bool {
        if self.at < from {
            self.at = memchr::memchr(self.byte, &bytes[from..]).map_or(bytes.len(), |at| from + at);
        }
        self.at < to
    }
}

impl<'a> Scanner<'a> {
    /// The document's top-level value has ended: only whitespace may follow it.
    fn end(mut self) -> Result<Cow<'a, str>, NotJson> {
        self.skip_ws();
        if self.pos == self.bytes.len() {
            Ok(self.finish())
        } else {
            Err(NotJson)
        }
    }

    /// The text with its redactions.
    fn finish(mut self) -> Cow<'a, str> {
        if self.copied == 0 {
            return Cow::Borrowed(self.text);
        }
        self.out.push_str(&self.text[self.copied..]);
        Cow::Owned(self.out)
    }

    fn skip_ws(&mut self) {
        while let Some(b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// Scans a string starting at the opening quote; returns its content's
    /// range (still escaped) in the input.
    fn string(&mut self) -> Result<(usize, usize), NotJson> {
        let start = self.pos;
        self.pos += 1;
        loop {
            // Straight to the next quote, backslash or control character.
            self.pos = crate::json::swar::next_special(self.bytes, self.pos);
            match self.bytes.get(self.pos) {
                None => return Err(NotJson),
                Some(b'"') => break,
                Some(b'\\') => match self.bytes.get(self.pos + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 2,
                    Some(b'u') => {
                        let hex = self.bytes.get(self.pos + 2..self.pos + 6).ok_or(NotJson)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(NotJson);
                        }
                        self.pos += 6;
                    }
                    _ => return Err(NotJson),
                },
                // Nothing else stops `next_special`: a control character, which JSON escapes.
                Some(_) => return Err(NotJson),
            }
        }
        self.pos += 1;
        Ok((start + 1, self.pos - 1))
    }

    /// The string value whose content is `from..to` sanitized as a URL (rules 2 and 3), and
    /// written anew where that changed it: a pagination link carrying an `access_token`, a
    /// database URL with a password in its user-info.
    // Kept out of the scan's loop: few strings are URLs, and fewer hold anything to redact.
    #[cold]
    #[inline(never)]
    fn sanitize_url(&mut self, from: usize, to: usize, rules: &Rules, found: &mut dyn FnMut(&str)) {
        let url = unescape(&self.text[from..to]);
        // A URL ends at a space: a string that goes on after one (`"https://… failed:
        // token=…"`) is prose that begins with a URL, and its words are read as prose's.
        if url.bytes().any(|b| b.is_ascii_whitespace()) {
            if let Cow::Owned(sanitized) = super::url::redact_urls_in_text(&url, rules, found, self.depth) {
                self.rewrite_string(from, to, &sanitized);
            }
            return;
        }
        let sanitized = super::url::sanitize_url_naming(&url, rules, &[], true, found, self.depth);
        if sanitized != *url {
            self.rewrite_string(from, to, &sanitized);
        }
    }

    /// Writes `content` in place of the string content at `from..to`: the string's quotes stay
    /// where they are, and its content is escaped again.
    fn rewrite_string(&mut self, from: usize, to: usize, content: &str) {
        self.out.push_str(&self.text[self.copied..from]);
        let quoted = serde_json::to_string(content).unwrap_or_default();
        self.out
            .push_str(quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default());
        self.copied = to;
    }

    /// The string value whose content is `from..to`, a JSON document written as a string,
    /// redacted as the document it is (rules 4 and 6), and written anew where that changed it.
    #[cold]
    #[inline(never)]
    fn sanitize_document(&mut self, from: usize, to: usize, rules: &Rules, found: &mut dyn FnMut(&str)) {
        let document = unescape(&self.text[from..to]);
        if let Cow::Owned(redacted) = super::json_body(&document, rules, found, self.depth + 1) {
            self.rewrite_string(from, to, &redacted);
        }
    }

    /// The string value whose content is `from..to`, an HTML fragment or an XML document
    /// written as a string (a CMS's rendered body, a mail's template, a SOAP message passed
    /// on), redacted as markup (rule 5) and then as prose (rule 2), and written anew where
    /// that changed it.
    #[cold]
    #[inline(never)]
    fn sanitize_markup(&mut self, from: usize, to: usize, rules: &Rules, found: &mut dyn FnMut(&str)) {
        let markup = unescape(&self.text[from..to]);
        // A fragment is read as HTML (its scripts and fields), a document with XML's
        // declaration as XML.
        let html = !markup.trim_start().starts_with("<?xml");
        let redacted = super::markup::redact_xml(&markup, html, rules, found, self.depth + 1);
        let redacted = match super::url::redact_urls_in_text(&redacted, rules, found, self.depth + 1) {
            Cow::Owned(prose) => prose,
            Cow::Borrowed(_) => redacted,
        };
        if redacted != *markup {
            self.rewrite_string(from, to, &redacted);
        }
    }

    /// The string value whose content is `from..to`, a form's pairs written as a string (a
    /// request log's or a gateway event's form body), redacted as a form (rule 5) and then as
    /// prose (rule 2), and written anew where that changed it.
    #[cold]
    #[inline(never)]
    fn sanitize_form(&mut self, from: usize, to: usize, rules: &Rules, found: &mut dyn FnMut(&str)) {
        let form = unescape(&self.text[from..to]);
        if let Cow::Owned(redacted) = super::carried_form(&form, rules, found, self.depth + 1) {
            self.rewrite_string(from, to, &redacted);
        }
    }

    /// The string value whose content is `from..to`, with each URL written in it sanitized
    /// (`"see https://…?token=…"`, `"see /reset?token=…"`), and written anew where that
    /// changed it.
    #[cold]
    #[inline(never)]
    fn sanitize_prose(&mut self, from: usize, to: usize, rules: &Rules, found: &mut dyn FnMut(&str)) {
        let content = unescape(&self.text[from..to]);
        if let Cow::Owned(sanitized) = super::url::redact_urls_in_text(&content, rules, found, self.depth) {
            self.rewrite_string(from, to, &sanitized);
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), NotJson> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(NotJson)
        }
    }

    fn number(&mut self) -> Result<(), NotJson> {
        self.pos = crate::json::number::number(self.bytes, self.pos)
            .ok_or(NotJson)?
            .end;
        Ok(())
    }
}

/// Whether a string's raw content may be a URL holding something to redact: absolute
/// (`scheme://…`) or rooted (`/…`), with a query, a fragment or user-info. A string's first
/// byte or first word answers for nearly every string that is not one.
#[inline]
fn may_be_url(content: &[u8]) -> bool {
    let holds_more = || super::url::may_change(content);
    match content.first() {
        Some(b'/') => holds_more(),
        // A scheme is a word of letters, digits and `+` (`https`, `postgres`, `svn+ssh`): the
        // first byte that is none ends the look in most strings that are not URLs.
        Some(b) if b.is_ascii_alphabetic() => {
            let mut end = 1;
            while end < content.len().min(16)
                && (content[end].is_ascii_alphanumeric() || content[end] == b'+')
            {
                end += 1;
            }
            let rest = &content[end..];
            (rest.starts_with(b"://") || rest.starts_with(b":\\/\\/")) && holds_more()
        }
        _ => false,
    }
}

/// A string's raw content from its first byte that is not JSON's whitespace, written plainly
/// or escaped (`\n`, `\r`, `\t`, or as `\u000a` and the like): a template's text often opens
/// with a line's end, which a JSON string writes escaped.
#[inline]
fn after_leading_whitespace(content: &[u8]) -> &[u8] {
    let mut at = 0;
    loop {
        at += match &content[at..] {
            [b' ', ..] => 1,
            [b'\\', b'n' | b'r' | b't', ..] => 2,
            [b'\\', b'u', b'0', b'0', high, low, ..]
                if matches!(
                    [*high, low.to_ascii_lowercase()],
                    [b'0', b'9' | b'a' | b'd'] | [b'2', b'0']
                ) =>
            {
                6
            }
            _ => return &content[at..],
        };
    }
}

/// Whether a string's raw content may open with whitespace (see [`after_leading_whitespace`]).
#[inline]
fn may_open_with_whitespace(content: &[u8]) -> bool {
    // Raw content holds no control character: only a space is written plainly.
    matches!(content.first(), Some(b' ' | b'\\'))
}

/// Whether a string's raw content may be a JSON document with members: an object or an array
/// (after whitespace) holding an escaped quote. Its first bytes answer for nearly every string
/// that is not one.
#[inline]
fn may_be_document(content: &[u8]) -> bool {
    let opens = match content.first() {
        Some(b'{' | b'[') => true,
        _ if may_open_with_whitespace(content) => {
            matches!(after_leading_whitespace(content).first(), Some(b'{' | b'['))
        }
        _ => false,
    };
    opens && content.contains(&b'\\')
}

/// Whether a string's raw content may be markup: it begins with `<` (after whitespace) and
/// holds a `>`, either written plainly or escaped as `\u003c` and `\u003e` (Go's encoder
/// escapes both by default). Its first byte answers for nearly every string that is not.
#[inline]
fn may_be_markup(content: &[u8]) -> bool {
    let opening = match content.first() {
        Some(b'<') => content,
        _ if may_open_with_whitespace(content) => after_leading_whitespace(content),
        _ => return false,
    };
    if opening.first() == Some(&b'<') {
        content.contains(&b'>')
    } else {
        escaped_angle(opening, b'c') && holds_escaped_angle(content, b'e')
    }
}

/// Whether `bytes` open with `\u003` and then `last` (a lower-case hex digit) in either case.
fn escaped_angle(bytes: &[u8], last: u8) -> bool {
    bytes.len() >= 6 && bytes[..5] == *b"\\u003" && bytes[5].to_ascii_lowercase() == last
}

/// Whether `bytes` hold `\u003` and then `last` in either case anywhere.
#[cold]
fn holds_escaped_angle(bytes: &[u8], last: u8) -> bool {
    bytes.windows(6).any(|w| escaped_angle(w, last))
}

/// Whether `text` may hold a sensitive query pair in prose (see `may_hold_query_parameter`).
/// Kept out of the scanner's function: inlined there, it slowed the scan of every string.
#[inline(never)]
fn pairs_in_prose(text: &str, rules: &Rules) -> bool {
    super::may_hold_query_parameter(text, rules)
}

/// Whether a string's raw content holds a URL, written plainly (`://`) or with its slashes
/// escaped (`:\/\/`), after some other text.
fn holds_url(content: &[u8]) -> bool {
    content.windows(3).any(|w| w == b"://") || content.windows(5).any(|w| w == b":\\/\\/")
}

/// Unescapes a JSON string's content (valid, per the scanner). Lone surrogates become U+FFFD.
/// Borrows when there is nothing to unescape, as for almost every member name.
pub(crate) fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if pending_high.take().is_some() {
                out.push('\u{FFFD}');
            }
            out.push(c);
            continue;
        }
        let escaped = chars.next().unwrap_or('\\');
        if escaped != 'u' && pending_high.take().is_some() {
            out.push('\u{FFFD}');
        }
        match escaped {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
                match (pending_high.take(), unit) {
                    (None, 0xD800..=0xDBFF) => pending_high = Some(unit),
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    (Some(_), _) => {
                        out.push('\u{FFFD}');
                        out.push(char::from_u32(unit).unwrap_or('\u{FFFD}'));
                    }
                    (None, _) => out.push(char::from_u32(unit).unwrap_or('\u{FFFD}')),
                }
            }
            other => out.push(other),
        }
    }
    if pending_high.is_some() {
        out.push('\u{FFFD}');
    }
    Cow::Owned(out)
}

/// Redacts the values of sensitive members of a JSON document, keeping everything else as it
/// was written. Calls `found` with the text of each redacted scalar value. Fails when `text`
/// is not a single JSON value. `depth`: see `super::url::NESTING`; `pairs`: whether the text
/// may hold a sensitive pair in prose, where the caller's prefilter looked already (the look
/// runs to the text's first such pair, or its end).
pub(crate) fn redact_json<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
    pairs: Option<bool>,
) -> Result<Cow<'t, str>, NotJson> {
    let mut s = Scanner {
        depth,
        text,
        bytes: text.as_bytes(),
        pos: 0,
        out: String::new(),
        copied: 0,
        redacting: 0,
        // One pass over the text spares a look into every string of a body with no URL.
        urls_in_prose: text.contains("://") || text.contains(":\\/\\/"),
        // Known already where the prefilter looked.
        pairs_in_prose: pairs.unwrap_or_else(|| pairs_in_prose(text, rules)),
        next_equals: NextByte::new(b'='),
        next_colon: NextByte::new(b':'),
        headers_in_prose: None,
    };
    let mut stack: Vec<Frame> = Vec::new();
    // Set when the next value is a sensitive member's.
    let mut sensitive_next = false;
    s.skip_ws();
    loop {
        // Expecting a value here?
        let expecting_value = match stack.last() {
            None => true,
            Some(Frame::Object { state, .. }) => *state == ObjectState::Value,
            Some(Frame::Array { state }) => matches!(state, ArrayState::Value | ArrayState::ValueOrEnd),
        };
        if expecting_value {
            let value_start = s.pos;
            let redact = std::mem::take(&mut sensitive_next);
            if redact && let Some(Frame::Object { redact_from, .. }) = stack.last_mut() {
                *redact_from = Some(value_start);
                if matches!(s.bytes.get(s.pos), Some(b'{' | b'[')) {
                    s.redacting += 1;
                }
            }
            match s.bytes.get(s.pos) {
                Some(b'{') => {
                    s.pos += 1;
                    stack.push(Frame::Object {
                        redact_from: None,
                        state: ObjectState::KeyOrEnd,
                    });
                    s.skip_ws();
                    continue;
                }
                Some(b'[') => {
                    s.pos += 1;
                    stack.push(Frame::Array {
                        state: ArrayState::ValueOrEnd,
                    });
                    s.skip_ws();
                    continue;
                }
                Some(b']')
                    if matches!(
                        stack.last(),
                        Some(Frame::Array {
                            state: ArrayState::ValueOrEnd
                        })
                    ) =>
                {
                    s.pos += 1;
                    stack.pop();
                    complete_value(&mut s, &mut stack);
                }
                Some(b'"') => {
                    let (from, to) = s.string()?;
                    if redact {
                        found(&unescape(&text[from..to]));
                    } else if s.redacting == 0 && may_be_url(&s.bytes[from..to]) {
                        s.sanitize_url(from, to, rules, found);
                    } else if s.redacting == 0
                        && s.depth < super::url::NESTING
                        && may_be_document(&s.bytes[from..to])
                    {
                        s.sanitize_document(from, to, rules, found);
                    } else if s.redacting == 0
                        && s.depth < super::url::NESTING
                        && may_be_markup(&s.bytes[from..to])
                    {
                        s.sanitize_markup(from, to, rules, found);
                    } else if s.redacting == 0
                        && s.depth < super::url::NESTING
                        && s.next_equals.within(s.bytes, from, to)
                        && super::may_be_form(&s.bytes[from..to])
                    {
                        s.sanitize_form(from, to, rules, found);
                    } else if s.redacting == 0
                        && ((s.urls_in_prose && holds_url(&s.bytes[from..to]))
                            || (s.pairs_in_prose
                                && s.bytes[from..to].iter().any(|&b| matches!(b, b'=' | b'%')))
                            || (s.next_colon.within(s.bytes, from, to)
                                && *s
                                    .headers_in_prose
                                    .get_or_insert_with(|| rules.may_name_a_header(text))))
                    {
                        s.sanitize_prose(from, to, rules, found);
                    }
                    complete_value(&mut s, &mut stack);
                }
                Some(b't') => {
                    s.literal("true")?;
                    complete_value(&mut s, &mut stack);
                }
                Some(b'f') => {
                    s.literal("false")?;
                    complete_value(&mut s, &mut stack);
                }
                Some(b'n') => {
                    s.literal("null")?;
                    complete_value(&mut s, &mut stack);
                }
                Some(b'-' | b'0'..=b'9') => {
                    let from = s.pos;
                    s.number()?;
                    if redact {
                        found(&text[from..s.pos]);
                    }
                    complete_value(&mut s, &mut stack);
                }
                _ => return Err(NotJson),
            }
            if stack.is_empty() {
                return s.end();
            }
            s.skip_ws();
            continue;
        }
        // Inside a container, not at a value.
        let Some(frame) = stack.last_mut() else {
            return Err(NotJson);
        };
        match frame {
            Frame::Object { state, .. } => match (*state, s.bytes.get(s.pos)) {
                (ObjectState::KeyOrEnd, Some(b'}')) | (ObjectState::CommaOrEnd, Some(b'}')) => {
                    s.pos += 1;
                    stack.pop();
                    complete_value(&mut s, &mut stack);
                    if stack.is_empty() {
                        return s.end();
                    }
                }
                (ObjectState::KeyOrEnd | ObjectState::Key, Some(b'"')) => {
                    let (from, to) = s.string()?;
                    sensitive_next = rules.is_sensitive_json_property(&unescape(&text[from..to]));
                    *state = ObjectState::Colon;
                }
                (ObjectState::Colon, Some(b':')) => {
                    s.pos += 1;
                    *state = ObjectState::Value;
                }
                (ObjectState::CommaOrEnd, Some(b',')) => {
                    s.pos += 1;
                    *state = ObjectState::Key;
                }
                _ => return Err(NotJson),
            },
            Frame::Array { state } => match (*state, s.bytes.get(s.pos)) {
                (ArrayState::CommaOrEnd, Some(b']')) => {
                    s.pos += 1;
                    stack.pop();
                    complete_value(&mut s, &mut stack);
                    if stack.is_empty() {
                        return s.end();
                    }
                }
                (ArrayState::CommaOrEnd, Some(b',')) => {
                    s.pos += 1;
                    *state = ArrayState::Value;
                }
                _ => return Err(NotJson),
            },
        }
        s.skip_ws();
    }
}

/// A value finished in the frame on top of the stack: advance its state and, if the value was
/// a sensitive member's, replace what was written for it.
fn complete_value(s: &mut Scanner<'_>, stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Object { redact_from, state }) => {
            if let Some(from) = redact_from.take() {
                if matches!(s.bytes[from], b'{' | b'[') {
                    s.redacting -= 1;
                }
                if s.redacting > 0 {
                    // Inside a sensitive member's object or array, replaced whole when it
                    // ends. Replacing this value now would write out the text of that one
                    // before it.
                    *state = ObjectState::CommaOrEnd;
                    return;
                }
                if s.out.capacity() == 0 {
                    s.out.reserve(s.text.len());
                }
                s.out.push_str(&s.text[s.copied..from]);
                s.out.push('"');
                s.out.push_str(REDACTED);
                s.out.push('"');
                s.copied = s.pos;
            }
            *state = ObjectState::CommaOrEnd;
        }
        Some(Frame::Array { state }) => *state = ArrayState::CommaOrEnd,
        None => {}
    }
}

/// For text that starts like JSON but is not: redacts the value after each sensitive quoted
/// name (`"password" : "…"`). A string value is redacted, and remembered; an object or array is
/// replaced whole by `"[REDACTED]"`, as a sensitive member's is in a document, up to its
/// matching bracket or, unmatched (a body cut short), to the end of the text. Numbers,
/// booleans and nulls pass, as do values of names that are not sensitive. An unterminated
/// string is redacted to the end of the text.
///
/// One pass, whatever the nesting: strings inside a redacted container are still read, so a
/// sensitive string value nested in it is remembered, but nothing inside is written.
pub(crate) fn redact_text_fallback(text: &str, rules: &Rules, found: &mut dyn FnMut(&str)) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    // Where the container being redacted ends (exclusive); nothing before it is written.
    let mut hidden_until = 0;
    let mut i = 0;
    while let Some(offset) = memchr_quote(&bytes[i..]) {
        let open = i + offset;
        let Some(close) = string_end(bytes, open) else {
            break;
        };
        let name = &text[open + 1..close];
        i = close + 1;
        // Whitespace, a colon, whitespace, then the value.
        let mut j = i;
        while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if bytes.get(j) != Some(&b':') {
            continue;
        }
        j += 1;
        while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        let value = bytes.get(j).copied();
        if !matches!(value, Some(b'"' | b'{' | b'['))
            || !rules.is_sensitive_json_property(&unescape_lossy(name))
        {
            continue;
        }
        let hidden = j < hidden_until;
        if value != Some(b'"') {
            if !hidden {
                // Read on inside the container, for the sensitive strings it holds.
                hidden_until = container_end(bytes, j);
                out.push_str(&text[copied..j]);
                out.push('"');
                out.push_str(REDACTED);
                out.push('"');
                copied = hidden_until;
            }
            i = j + 1;
            continue;
        }
        let value_end = string_end(bytes, j).unwrap_or(bytes.len());
        found(&unescape_lossy(&text[j + 1..value_end]));
        i = (value_end + 1).min(bytes.len());
        if hidden {
            continue;
        }
        out.push_str(&text[copied..=j]);
        out.push_str(REDACTED);
        if value_end < bytes.len() {
            out.push('"');
        }
        copied = i;
    }
    out.push_str(&text[copied..]);
    out
}

/// Where the object or array opened at `open` ends (just past its matching bracket), counting
/// brackets outside strings whatever their kind, as text that is not JSON may mismatch them:
/// the end of the text if it never closes.
fn container_end(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => match string_end(bytes, i) {
                Some(close) => i = close,
                None => return bytes.len(),
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

fn memchr_quote(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'"')
}

/// The index of the quote closing the string opened at `open`, skipping escapes.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Unescapes text the scanner did not validate: invalid escapes are kept as they are.
pub(super) fn unescape_lossy(raw: &str) -> String {
    if raw.contains("\\u") {
        // Only unescape what is well-formed; the rest is compared as written.
        let valid = raw.split("\\u").skip(1).all(|part| {
            part.as_bytes()
                .get(..4)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        });
        if !valid {
            return raw.to_owned();
        }
    }
    unescape(raw).into_owned()
}
