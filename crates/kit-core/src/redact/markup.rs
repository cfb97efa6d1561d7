//! XML, HTML and multipart bodies.

use std::borrow::Cow;

use super::url::{UrlHeader, may_change, redact_urls_in_text, sanitize_url_naming};
use super::{REDACTED, Rules, carried_form, holds_any, may_be_form, opens_document, skip_while};

/// The local part of a qualified XML name (`ns:password` is `password`).
fn local(name: &str) -> &str {
    // A plain loop: names are a few bytes, for which `rsplit_once`'s `memrchr` call cost more
    // than the search (7% of an HTML page's time in the sanitizer bench, every attribute's
    // name looked at twice).
    match name.bytes().rposition(|b| b == b':') {
        Some(colon) => &name[colon + 1..],
        None => name,
    }
}

/// How many open elements an end tag looks through for its own: well-formed markup closes
/// the innermost, and a hostile body of many open elements and many end tags that match none
/// would otherwise cost time quadratic in its size.
const END_TAG_REACH: usize = 64;

/// The elements open at a point of a document, innermost last, each by its local name and
/// whether that name is sensitive.
#[derive(Default)]
struct OpenElements<'t> {
    open: Vec<(&'t str, bool)>,
    /// How many of them have sensitive names: all text inside one is redacted.
    sensitive: usize,
}

impl<'t> OpenElements<'t> {
    fn start(&mut self, name: &'t str, sensitive: bool) {
        self.open.push((name, sensitive));
        self.sensitive += usize::from(sensitive);
    }

    /// Closes the innermost element named `name` and every element opened inside it (left
    /// unclosed); an end tag that closes nothing open is ignored. It looks no further than
    /// [`END_TAG_REACH`] elements out.
    fn end(&mut self, name: &str) {
        let from = self.open.len().saturating_sub(END_TAG_REACH);
        let found = self.open[from..].iter().rposition(|(open, _)| *open == name);
        if let Some(at) = found.map(|at| from + at) {
            self.sensitive -= self.open[at..].iter().filter(|(_, s)| *s).count();
            self.open.truncate(at);
        }
    }

    /// Writes text found between tags here: with the URLs written in it sanitized (rules 2 and
    /// 3, as prose's are: a reset link in a mail's paragraph, a feed's `<link>`), or redacted
    /// inside an element with a sensitive name. Text that belongs to a sensitive element
    /// itself, not to an element inside one, is remembered as a secret, as a sensitive JSON
    /// member's scalar is.
    fn text(&self, out: &mut String, content: &str, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) {
        if self.sensitive == 0 {
            out.push_str(&text_with_urls(content, rules, found, depth));
            return;
        }
        if content.trim().is_empty() {
            out.push_str(content);
            return;
        }
        if self.open.last().is_some_and(|(_, sensitive)| *sensitive) {
            found(content.trim());
        }
        out.push_str(REDACTED);
    }
}

/// Markup's text with the URLs written in it sanitized as prose's are (rules 2 and 3). Markup's
/// `&amp;` is read as the query's `&` where it stands (see `url::redact_pairs`), so nothing is
/// unescaped. Most text holds no `:` (of `://`), no `?` or `#` to begin a query and no `%` (of
/// an encoded URL): one look spares it the passes. Without that look the sanitizer bench's HTML
/// page took 7.7% more instructions than before markup's text was read; with it, 1.2%
/// (callgrind).
///
/// Text that is a JSON document (an element holding a request's or a message's JSON, as SOAP
/// and feeds wrap one) is read as JSON (rule 4).
#[inline]
fn text_with_urls<'c>(
    content: &'c str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'c, str> {
    // Nothing shorter than `?a=b` holds a pair or a URL: most texts between tags are a line's
    // end, or nothing.
    if content.len() < "?a=b".len() {
        Cow::Borrowed(content)
    } else if opens_document(content.as_bytes()) {
        super::json_body(content, rules, found, depth + 1)
    } else if !holds_any(content.as_bytes(), [b':', b'?', b'#', b'%', b'=']) {
        Cow::Borrowed(content)
    } else {
        // The text's own spaces around a form are not its first name's or last value's.
        let start = content.len() - content.trim_ascii_start().len();
        let form = content[start..].trim_ascii_end();
        if !may_be_form(form.as_bytes()) {
            return redact_urls_in_text(content, rules, found, depth);
        }
        // Markup's `&amp;` before a pair's name is read as the form's `&` where it stands.
        match carried_form(form, rules, found, depth) {
            Cow::Borrowed(_) => Cow::Borrowed(content),
            Cow::Owned(redacted) => {
                Cow::Owned([&content[..start], &redacted, &content[start + form.len()..]].concat())
            }
        }
    }
}

/// Redacts the text of elements with sensitive names, with everything inside them (text,
/// CDATA, and the attribute values of elements inside them), the values of sensitive
/// attributes, and the `value` or `content` of an element whose `name` attribute is sensitive:
/// an HTML form field. Attributes that hold URLs (`href`, `src`, a form's `action`, a meta
/// refresh's `content`) are sanitized as URLs. Tolerant: malformed markup is copied as it is,
/// never rejected (an element never closed redacts the text to the document's end).
///
/// In `html`, the text of `script`, `style` and `textarea` elements is read as HTML reads it,
/// up to the element's end tag, with no markup inside: a script's text as JSON, or as
/// JavaScript's names and strings (`script::redact_script`), and a `textarea` with a sensitive
/// `name` as that field's value.
///
/// `depth`: how many URLs or documents the markup is carried inside (`super::url::NESTING`;
/// 0 for a body's own, more for an HTML fragment written as a JSON string's value).
pub(crate) fn redact_xml(
    text: &str,
    html: bool,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut elements = OpenElements::default();
    // One start tag's attributes at a time, the buffer kept from tag to tag.
    let mut pieces = Vec::new();
    let mut i = 0;
    while let Some(offset) = text[i..].find('<') {
        let lt = i + offset;
        elements.text(&mut out, &text[i..lt], rules, found, depth);
        let rest = &text[lt..];
        let skip_to = |marker: &str| rest.find(marker).map_or(text.len(), |e| lt + e + marker.len());
        if rest.starts_with("<!--") {
            let end = skip_to("-->");
            out.push_str(&text[lt..end]);
            i = end;
            continue;
        }
        if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
            let content_end = cdata
                .find("]]>")
                .map_or(text.len(), |e| lt + "<![CDATA[".len() + e);
            out.push_str("<![CDATA[");
            elements.text(
                &mut out,
                &text[lt + "<![CDATA[".len()..content_end],
                rules,
                found,
                depth,
            );
            if content_end < text.len() {
                out.push_str("]]>");
            }
            i = (content_end + "]]>".len()).min(text.len());
            continue;
        }
        if let Some(end_tag) = rest.strip_prefix("</") {
            let name_len = end_tag
                .find(|c: char| c.is_ascii_whitespace() || c == '>')
                .unwrap_or(end_tag.len());
            elements.end(local(&end_tag[..name_len]));
            let end = skip_to(">");
            out.push_str(&text[lt..end]);
            i = end;
            continue;
        }
        if rest.starts_with("<?") || rest.starts_with("<!") {
            let end = skip_to(">");
            out.push_str(&text[lt..end]);
            i = end;
            continue;
        }
        // A start tag: its name, then attributes.
        let j = skip_while(bytes, lt + 1, |b| {
            !b.is_ascii_whitespace() && b != b'>' && b != b'/'
        });
        let name = &text[lt + 1..j];
        out.push_str(&text[lt..j]);
        let (tag_end, closed, self_closing) = start_tag(text, j, &mut pieces);
        // An HTML form field (`<input name="token" value="…">`, `<meta name=… content=…>`)
        // holds the value of the name it gives, whichever order its attributes come in.
        let field_is_sensitive =
            has_attribute(text, &pieces, "name", |value| rules.is_sensitive_field(value));
        // `<meta http-equiv="refresh" content="0; url=…">` redirects as a `Refresh` header does.
        let refreshes = name.eq_ignore_ascii_case("meta")
            && has_attribute(text, &pieces, "http-equiv", |value| {
                value.eq_ignore_ascii_case("refresh")
            });
        for piece in &pieces {
            match piece {
                Piece::Copy(range) => out.push_str(&text[range.clone()]),
                Piece::Attribute { name, value, closed } => {
                    out.push_str(&text[name.start..value.start]);
                    let attribute = local(&text[name.clone()]);
                    let holds_field_value = field_is_sensitive
                        && (attribute.eq_ignore_ascii_case("value")
                            || attribute.eq_ignore_ascii_case("content"));
                    if rules.is_sensitive_json_property(attribute) || holds_field_value {
                        found(&text[value.clone()]);
                        out.push_str(REDACTED);
                    } else if elements.sensitive > 0 && !value.is_empty() {
                        // Inside a sensitive element, as its text is: a child's attributes are
                        // part of what the element holds. Not remembered, as a child's text is
                        // not.
                        out.push_str(REDACTED);
                    } else if let Some(kind) = url_attribute(attribute, refreshes) {
                        out.push_str(&url_value(&text[value.clone()], kind, rules, found, depth));
                    } else {
                        out.push_str(&text[value.clone()]);
                    }
                    if let Some(quote) = closed {
                        out.push(char::from(*quote));
                    }
                }
            }
        }
        i = tag_end;
        if !closed || self_closing {
            continue;
        }
        if let Some(kind) = html.then(|| RawText::of(name)).flatten() {
            let content_end = raw_text_end(text, tag_end, name);
            let content = &text[tag_end..content_end];
            match kind {
                RawText::Field if field_is_sensitive && !content.trim().is_empty() => {
                    found(content.trim());
                    out.push_str(REDACTED);
                }
                _ if elements.sensitive > 0 => elements.text(&mut out, content, rules, found, depth),
                RawText::Script => {
                    out.push_str(&super::script::redact_script(content, rules, found, depth + 1));
                }
                // A field's text, or a style sheet's `url(…)`, may hold a link as any text does.
                RawText::Field | RawText::Style => {
                    out.push_str(&text_with_urls(content, rules, found, depth));
                }
            }
            // The end tag is read as any other, and closes nothing: the element was not opened.
            i = content_end;
            continue;
        }
        elements.start(local(name), rules.is_sensitive_json_property(local(name)));
    }
    elements.text(&mut out, &text[i..], rules, found, depth);
    out
}

/// Whether a start tag read into `pieces` has attribute `wanted` (its local name, any case)
/// with a value, trimmed, that `judge` accepts.
fn has_attribute(text: &str, pieces: &[Piece], wanted: &str, judge: impl Fn(&str) -> bool) -> bool {
    pieces.iter().any(|piece| match piece {
        Piece::Attribute { name, value, .. } => {
            local(&text[name.clone()]).eq_ignore_ascii_case(wanted) && judge(text[value.clone()].trim())
        }
        Piece::Copy(_) => false,
    })
}

/// How an attribute's value holds a URL, if it does: whole (a link's `href`, an image's `src`,
/// a form's `action`), or after a delay (the `content` of a `<meta http-equiv="refresh">`).
/// A password-reset link or a redirect to `…/callback?access_token=…` is recorded as any URL
/// would be (rules 2 and 3).
fn url_attribute(attribute: &str, refreshes: bool) -> Option<UrlHeader> {
    const WHOLE: [&str; 8] = [
        "href",
        "src",
        "action",
        "formaction",
        "cite",
        "poster",
        "data",
        "background",
    ];
    if WHOLE.iter().any(|name| attribute.eq_ignore_ascii_case(name)) {
        Some(UrlHeader::Whole)
    } else if refreshes && attribute.eq_ignore_ascii_case("content") {
        Some(UrlHeader::AfterDelay)
    } else {
        None
    }
}

/// An attribute's URL sanitized, as written when nothing in it is. Markup escapes a query's
/// `&` as `&amp;`, which the URL's reading takes for the separator where it stands
/// (`url::redact_pairs`), so the value is neither unescaped nor escaped again: its other
/// character references (`&quot;`) stay as written.
fn url_value<'v>(
    value: &'v str,
    kind: UrlHeader,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'v, str> {
    if !may_change(value.as_bytes()) {
        return Cow::Borrowed(value);
    }
    let mut sanitize = |url: &str| sanitize_url_naming(url, rules, &[], true, &mut *found, depth);
    let sanitized = match kind {
        // Not trimmed, as a header's value is: the attribute is kept as written.
        UrlHeader::Whole => sanitize(value),
        other => other.sanitize(value, &mut sanitize),
    };
    if sanitized == value {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(sanitized)
    }
}

/// An HTML element whose content is text up to its end tag, not markup.
#[derive(Clone, Copy)]
enum RawText {
    /// `script`: code, or data (`type="application/json"`, as frameworks embed a page's state).
    Script,
    /// `style`: CSS.
    Style,
    /// `textarea`: a form field's value.
    Field,
}

impl RawText {
    fn of(element: &str) -> Option<Self> {
        [
            ("script", Self::Script),
            ("style", Self::Style),
            ("textarea", Self::Field),
        ]
        .into_iter()
        .find_map(|(name, kind)| element.eq_ignore_ascii_case(name).then_some(kind))
    }
}

/// Where the text of raw-text element `name`, starting at `from`, ends: at its end tag (`</`,
/// the name in any case, then whitespace, `/` or `>`), or at the end of `text`.
fn raw_text_end(text: &str, from: usize, name: &str) -> usize {
    let bytes = text.as_bytes();
    let mut at = from;
    // By `<` (a `memchr`), then the `/`: a two-byte `str` pattern takes the slower two-way
    // search, a twentieth of an HTML page's time in the sanitizer bench.
    while let Some(offset) = text[at..].find('<') {
        let lt = at + offset;
        if bytes.get(lt + 1) != Some(&b'/') {
            at = lt + 1;
            continue;
        }
        let name_end = lt + 2 + name.len();
        let closes = bytes
            .get(lt + 2..name_end)
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name.as_bytes()))
            && bytes
                .get(name_end)
                .is_none_or(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>');
        if closes {
            return lt;
        }
        at = lt + 2;
    }
    text.len()
}

/// A part of a start tag after its name.
enum Piece {
    /// Copied as it is: whitespace, a name without a value, a stray character, the tag's end.
    Copy(std::ops::Range<usize>),
    /// `name = "value"`: what lies from `name.start` to `value.start` (the name, `=`, an opening
    /// quote) is copied; the value is judged; `closed` is the closing quote, where there is one.
    Attribute {
        name: std::ops::Range<usize>,
        value: std::ops::Range<usize>,
        closed: Option<u8>,
    },
}

/// Reads a start tag's attributes from `from` (just after its name) into `pieces`, which it
/// clears first. Returns where the tag ends, whether it was closed by `>`, and whether by
/// `/>`. Values may be quoted either way or, as HTML allows, unquoted (up to whitespace or
/// `>`). Tolerant: what does not read as an attribute is copied.
fn start_tag(text: &str, from: usize, pieces: &mut Vec<Piece>) -> (usize, bool, bool) {
    pieces.clear();
    let bytes = text.as_bytes();
    let space = |b: u8| b.is_ascii_whitespace();
    let mut j = from;
    loop {
        let ws = j;
        j = skip_while(bytes, j, space);
        if j > ws {
            pieces.push(Piece::Copy(ws..j));
        }
        match bytes.get(j) {
            None => return (j, false, false),
            Some(b'>') => {
                pieces.push(Piece::Copy(j..j + 1));
                return (j + 1, true, false);
            }
            Some(b'/') if bytes.get(j + 1) == Some(&b'>') => {
                pieces.push(Piece::Copy(j..j + 2));
                return (j + 2, true, true);
            }
            _ => {}
        }
        // An attribute: name, optional whitespace, '=', optional whitespace, a value.
        let name_start = j;
        j = skip_while(bytes, j, |b| !matches!(b, b'=' | b'>' | b'/') && !space(b));
        let k = skip_while(bytes, j, space);
        if bytes.get(k) != Some(&b'=') {
            if j == name_start {
                // A stray character: copy it and move on.
                j += text[j..].chars().next().map_or(1, char::len_utf8);
            }
            pieces.push(Piece::Copy(name_start..j));
            continue;
        }
        let k = skip_while(bytes, k + 1, space);
        let name = name_start..j;
        match bytes.get(k) {
            Some(&quote @ (b'"' | b'\'')) => {
                let value_start = k + 1;
                let value_end = skip_while(bytes, value_start, |b| b != quote);
                let closed = (value_end < text.len()).then_some(quote);
                pieces.push(Piece::Attribute {
                    name,
                    value: value_start..value_end,
                    closed,
                });
                j = (value_end + 1).min(text.len());
            }
            Some(_) => {
                let value_end = skip_while(bytes, k, |b| !space(b) && b != b'>');
                if value_end == k {
                    // `a= >`: no value.
                    pieces.push(Piece::Copy(name_start..k));
                } else {
                    pieces.push(Piece::Attribute {
                        name,
                        value: k..value_end,
                        closed: None,
                    });
                }
                j = value_end;
            }
            None => {
                pieces.push(Piece::Copy(name_start..k));
                j = k;
            }
        }
    }
}

/// The `boundary` parameter of a multipart content type.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    parameter(content_type, "boundary").map(str::to_owned)
}

/// The parameter `name` (in any case) of a header's value (`multipart/form-data;
/// boundary="b"`, `form-data; name=x`, `text/xml; charset=utf-16`), unquoted.
pub(crate) fn parameter<'v>(value: &'v str, name: &str) -> Option<&'v str> {
    value.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().trim_matches('"'))
    })
}

/// The `name` of a part's `Content-Disposition`, and its `Content-Type`.
fn part_headers(headers: &str) -> (Option<String>, Option<String>) {
    let mut name = None;
    let mut content_type = None;
    for line in headers.lines() {
        let Some((header, value)) = line.split_once(':') else {
            continue;
        };
        if header.trim().eq_ignore_ascii_case("content-disposition") {
            name = parameter(value, "name").map(str::to_owned);
        } else if header.trim().eq_ignore_ascii_case("content-type") {
            content_type = Some(value.trim().to_owned());
        }
    }
    (name, content_type)
}

/// Redacts the bodies of parts whose `Content-Disposition` name is sensitive; other parts are
/// handed to `inner` with their content type (a JSON part is redacted as JSON).
pub(crate) fn redact_multipart(
    text: &str,
    boundary: Option<&str>,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    inner: &mut dyn FnMut(Option<&str>, &str) -> String,
) -> String {
    // Parts of text split at ASCII (the delimiter, the blank line) are text: UTF-8 is
    // self-synchronising, so no split falls inside a character.
    let out = redact_multipart_bytes(text.as_bytes(), boundary, rules, found, &mut |ct, part| {
        inner(ct, &String::from_utf8_lossy(part)).into_bytes()
    });
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Redacts a part that is not sensitive by its name, given its content type.
pub(crate) type PartOfBytes<'a> = dyn FnMut(Option<&str>, &[u8]) -> Vec<u8> + 'a;

/// [`redact_multipart`] on bytes: an upload whose file part is not text (an image beside a
/// `password` field) is read part by part too. A sensitive part is replaced whole, and
/// remembered if it is text.
pub(crate) fn redact_multipart_bytes(
    bytes: &[u8],
    boundary: Option<&str>,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    inner: &mut PartOfBytes<'_>,
) -> Vec<u8> {
    // Without a declared boundary, the first line names it.
    let detected;
    let boundary = match boundary {
        Some(b) => b,
        None => {
            let first = bytes.split(|&b| b == b'\n').next().unwrap_or(b"");
            let first = first.strip_suffix(b"\r").unwrap_or(first);
            match std::str::from_utf8(first)
                .ok()
                .and_then(|line| line.strip_prefix("--"))
            {
                Some(b) if !b.trim().is_empty() => {
                    detected = b.trim().to_owned();
                    &detected
                }
                _ => return bytes.to_vec(),
            }
        }
    };
    let delimiter = format!("--{boundary}");
    let mut out = Vec::with_capacity(bytes.len());
    let mut starts = memchr::memmem::find_iter(bytes, delimiter.as_bytes()).peekable();
    // Before the first delimiter: the preamble, kept.
    let preamble = starts.peek().copied().unwrap_or(bytes.len());
    out.extend_from_slice(&bytes[..preamble]);
    while let Some(start) = starts.next() {
        let piece_start = start + delimiter.len();
        let piece = &bytes[piece_start..starts.peek().copied().unwrap_or(bytes.len())];
        out.extend_from_slice(delimiter.as_bytes());
        // Headers end at the first blank line.
        let split = memchr::memmem::find(piece, b"\r\n\r\n")
            .map(|i| (i, 4))
            .or_else(|| memchr::memmem::find(piece, b"\n\n").map(|i| (i, 2)));
        let Some((at, sep)) = split else {
            out.extend_from_slice(piece);
            continue;
        };
        let headers = &piece[..at + sep];
        let body_and_tail = &piece[at + sep..];
        // The part's body ends before the line break that precedes the next delimiter.
        let body_len = body_and_tail
            .strip_suffix(b"\r\n")
            .or_else(|| body_and_tail.strip_suffix(b"\n"))
            .map_or(body_and_tail.len(), <[u8]>::len);
        let (body, tail) = body_and_tail.split_at(body_len);
        out.extend_from_slice(headers);
        let (name, content_type) = part_headers(&String::from_utf8_lossy(headers));
        if name.as_deref().is_some_and(|n| rules.is_sensitive_field(n)) {
            if let Ok(body) = std::str::from_utf8(body) {
                found(body);
            }
            out.extend_from_slice(REDACTED.as_bytes());
        } else {
            out.extend_from_slice(&inner(content_type.as_deref(), body));
        }
        out.extend_from_slice(tail);
    }
    out
}
