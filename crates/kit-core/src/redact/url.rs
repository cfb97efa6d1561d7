//! URLs: user-info always removed, sensitive query values redacted.

use std::borrow::Cow;

use super::{REDACTED, Rules, Splice, skip_while};

/// Percent-decodes `text` (`+` as a space when `plus_is_space`), lossy for invalid UTF-8.
pub(crate) fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // Two hex digits must follow.
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Redacts the values of sensitive `name=value` pairs of a query or form body, keeping names
/// and every other pair as written. `sensitive` judges a decoded name. A value that is a URL
/// or a JSON document written percent-encoded (`next=https%3A%2F%2Fapp.example%2Fcb%3Ftoken%3D…`,
/// as a sign-in page or an OAuth `redirect_uri` carries one; `payload=%7B…%7D`) is read as what
/// it is (see [`carried_value`]), the pairs being `depth` URLs or documents deep ([`NESTING`];
/// 0 for a body's or a request's own).
pub(crate) fn redact_pairs(
    text: &str,
    separator: char,
    sensitive: &dyn Fn(&str) -> bool,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, pair) in text.split(separator).enumerate() {
        if i > 0 {
            out.push(separator);
        }
        match pair.split_once('=') {
            Some((name, value)) if sensitive(&percent_decode(unescaped_amp(name), true)) => {
                found(&percent_decode(value, true));
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            Some((name, value)) => {
                out.push_str(name);
                out.push('=');
                out.push_str(&carried_value(value, rules, found, depth));
            }
            None => out.push_str(pair),
        }
    }
    out
}

/// A pair's name as read after markup's escaped `&` (`?a=1&amp;token=…`, as an HTML page or an
/// HTML fragment in JSON writes a query): the `amp;` is the separator's, not the name's.
fn unescaped_amp(name: &str) -> &str {
    name.strip_prefix("amp;").unwrap_or(name)
}

/// A query or form value written percent-encoded that is a URL or a JSON document, sanitized
/// as what it is and encoded again; as written when nothing in it changed (or when it is
/// neither).
///
/// A URL is read as a URL (its own query, user-info and carried URLs, [`NESTING`] deep in
/// all): read as the outer URL's value, its pairs are one opaque value, and
/// `?next=https%3A%2F%2Fapp.example%2Fcb%3Ftoken%3D…` would keep its token. A document (an
/// object or an array) is read as a JSON body is (rules 4 and 6), as Slack posts an
/// interaction's `payload` and a sign-in carries its `state`. A value encoded twice is decoded
/// twice, and encoded twice again.
fn carried_value<'v>(value: &'v str, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) -> Cow<'v, str> {
    // An encoded URL or document holds `%`: most values hold none, and are not decoded. A
    // value holding `://` is a URL carried unencoded, which [`with_nested_urls`] reads as
    // written.
    if depth >= NESTING || !value.contains('%') || value.contains("://") {
        return Cow::Borrowed(value);
    }
    let decoded = percent_decode(value, true);
    let sanitized = if super::opens_document(decoded.as_bytes()) {
        super::json_body(&decoded, rules, found, depth + 1).into_owned()
    } else if super::may_be_form(decoded.as_bytes()) {
        super::carried_form(&decoded, rules, found, depth + 1).into_owned()
    } else if decoded.contains("://") {
        // A `+` decodes to a space, which ends a URL in prose: the pairs after it are read
        // as prose's are.
        match urls_in_text(&decoded, rules, found, depth + 1) {
            Cow::Borrowed(urls) => redact_query_pairs_in_text(urls, rules, found).into_owned(),
            Cow::Owned(urls) => redact_query_pairs_in_text(&urls, rules, found).into_owned(),
        }
    } else {
        carried_value(&decoded, rules, found, depth + 1).into_owned()
    };
    if sanitized == decoded {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(encode_value(&sanitized))
    }
}

/// `text` percent-encoded as a query value: all but RFC 3986's unreserved bytes, and the
/// brackets of `[REDACTED]`, which stays readable as it is everywhere else.
fn encode_value(text: &str) -> String {
    percent_encode(text, |b| is_unreserved(b) || matches!(b, b'[' | b']'))
}

/// Whether `b` is one of RFC 3986's unreserved bytes (letters, digits, `-`, `.`, `_`, `~`),
/// which percent-encoding leaves as they are.
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `text` with every byte `keep` refuses written as `%XX`, in upper-case hex.
pub(crate) fn percent_encode(text: &str, keep: impl Fn(u8) -> bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    for b in text.bytes() {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

/// Whether `url` has a part [`sanitize_url`] may change: a query, a fragment or user-info.
/// A URL without one is recorded as written, and need not be read.
pub(crate) fn may_change(url: &[u8]) -> bool {
    url.iter().any(|&b| matches!(b, b'?' | b'#' | b'@'))
}

/// A URL (absolute or relative) without user-info, and with sensitive query values redacted
/// when `redact` is on.
pub(crate) fn sanitize_url(url: &str, rules: &Rules, redact: bool, found: &mut dyn FnMut(&str)) -> String {
    sanitize_url_naming(url, rules, &[], redact, found, 0)
}

/// [`sanitize_url`], the query parameters `also` names (compared without case, as the lists
/// are) sensitive as well, for a URL `depth` URLs or documents deep ([`NESTING`]; 0 for a
/// request's or a header's own, more for a JSON string's or a markup attribute's).
pub(crate) fn sanitize_url_naming(
    url: &str,
    rules: &Rules,
    also: &[&str],
    redact: bool,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> String {
    let sanitized = sanitize_one_url(url, rules, also, redact, found, depth);
    if redact {
        with_nested_urls(sanitized, rules, found, depth)
    } else {
        sanitized
    }
}

/// `url`, sanitized, with the URLs its query or fragment carries unencoded (`?next=https://…`,
/// as a sign-in page writes where to go back to) sanitized as URLs of their own, [`NESTING`]
/// deep. Read as the outer URL's, such a URL's first pair is part of the outer pair's value:
/// `?next=https://app.example/cb?token=…` would keep its token.
fn with_nested_urls(url: String, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) -> String {
    if depth >= NESTING {
        return url;
    }
    // Past this URL's own `://`, if it begins with a scheme (a rooted URL's first `://` is
    // the carried URL's).
    let inner_from = match url.find("://") {
        Some(separator) if separator > 0 && scheme_start(url.as_bytes(), separator) == 0 => separator + 3,
        _ => 0,
    };
    match url
        .get(inner_from..)
        .map(|rest| urls_in_text(rest, rules, found, depth + 1))
    {
        Some(Cow::Owned(inner)) => [&url[..inner_from], inner.as_str()].concat(),
        _ => url,
    }
}

/// [`sanitize_url_naming`] for this URL alone, not those it carries unencoded, inside `depth`
/// URLs or documents.
fn sanitize_one_url(
    url: &str,
    rules: &Rules,
    also: &[&str],
    redact: bool,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let mut out = String::with_capacity(url.len());
    // User-info sits between "://" and the first '/' after it, up to its last '@'.
    match base.find("://") {
        Some(scheme_end) => {
            let authority_start = scheme_end + 3;
            let authority_end = base[authority_start..]
                .find('/')
                .map_or(base.len(), |i| authority_start + i);
            let authority = &base[authority_start..authority_end];
            out.push_str(&base[..authority_start]);
            match authority.rfind('@') {
                Some(at) => {
                    let userinfo = &authority[..at];
                    // The password, if any, is a secret wherever else it appears.
                    if let Some((_, password)) = userinfo.split_once(':') {
                        found(&percent_decode(password, false));
                    }
                    out.push_str(&authority[at + 1..]);
                }
                None => out.push_str(authority),
            }
            out.push_str(&base[authority_end..]);
        }
        None => out.push_str(base),
    }
    let sensitive = |name: &str| {
        rules.is_sensitive_query_parameter(name) || also.iter().any(|a| a.eq_ignore_ascii_case(name))
    };
    if let Some(query) = query {
        out.push('?');
        if redact {
            out.push_str(&redact_pairs(query, '&', &sensitive, rules, found, depth));
        } else {
            out.push_str(query);
        }
    }
    if let Some(fragment) = fragment {
        out.push('#');
        if redact && fragment.contains('=') {
            // OAuth's implicit flow hands a token back in the fragment
            // (`#access_token=…&token_type=bearer`), and a hash router keeps its query there
            // (`#/callback?token=…`): both are read as a query.
            let (route, query) = match fragment.split_once('?') {
                Some((route, query)) => (Some(route), query),
                None => (None, fragment),
            };
            if let Some(route) = route {
                out.push_str(route);
                out.push('?');
            }
            out.push_str(&redact_pairs(query, '&', &sensitive, rules, found, depth));
        } else {
            out.push_str(fragment);
        }
    }
    out
}

/// `text` with each absolute URL written in it (`scheme://…`, in prose, a log line or an error
/// message) sanitized as a URL: `see https://api.example/x?token=…` keeps its words and loses
/// the token. A URL runs from its scheme to the first space, quote, angle bracket, backtick,
/// backslash or control character; a `.`, `,`, `;`, `:`, `!` or `?` it ends with is the
/// sentence's, not its own, and so is a closing bracket it does not open. Borrows when there
/// is nothing to change, as for text that holds no `://`.
///
/// Then, as a relative URL, a bare query or a log line carries them (`see /reset?token=…`,
/// `callback#access_token=…`, `user=ada password=…`), each value of a query-list name written
/// after `?`, `&` or `#`, or bare, and before `=` is redacted wherever it stands (see
/// [`redact_query_pairs_in_text`]); each URL written percent-encoded is read as a carried URL
/// is; and each sensitive header written as a header line (`Authorization: Bearer …`) has its
/// value redacted (see `header_lines_in_text`).
///
/// `depth`: how many URLs or documents the text is carried inside ([`NESTING`]; 0 for a body's
/// or a message's own).
pub(crate) fn redact_urls_in_text<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'t, str> {
    let pairs = match urls_in_text(text, rules, found, depth) {
        Cow::Borrowed(text) => redact_query_pairs_in_text(text, rules, found),
        Cow::Owned(urls) => Cow::Owned(redact_query_pairs_in_text(&urls, rules, found).into_owned()),
    };
    let encoded = match pairs {
        Cow::Borrowed(text) => encoded_urls_in_text(text, rules, found, depth),
        Cow::Owned(pairs) => Cow::Owned(encoded_urls_in_text(&pairs, rules, found, depth).into_owned()),
    };
    match encoded {
        Cow::Borrowed(text) => super::header_lines_in_text(text, rules, found),
        Cow::Owned(encoded) => Cow::Owned(super::header_lines_in_text(&encoded, rules, found).into_owned()),
    }
}

/// Where the next `://` written percent-encoded (`%3A%2F%2F`, in either case) in `text` from
/// `from` stands. By `%`: few texts hold one.
pub(crate) fn next_encoded_separator(text: &str, from: usize) -> Option<usize> {
    const ENCODED: &[u8] = b"%3a%2f%2f";
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(offset) = text.get(at..)?.find('%') {
        let percent = at + offset;
        if bytes
            .get(percent..percent + ENCODED.len())
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(ENCODED))
        {
            return Some(percent);
        }
        at = percent + 1;
    }
    None
}

/// `text` with each URL written in it percent-encoded, outside any URL a reader would see
/// (`see /login?next=https%3A%2F%2Fapp.example%2Fcb%3Ftoken%3D…`, or a JSON string that is such
/// a URL alone), sanitized as a carried URL is ([`carried_value`]). Such a URL runs from its
/// scheme to where a query's value ends in prose, without a sentence's closing punctuation.
/// One a URL's own reading sanitized already is found again and left as it is.
fn encoded_urls_in_text<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'t, str> {
    const SEPARATOR: usize = "%3A%2F%2F".len();
    let bytes = text.as_bytes();
    let mut spliced = Splice::new(text);
    let mut searched = 0;
    while let Some(separator) = next_encoded_separator(text, searched) {
        // Past the previous URL's end, which an ending byte follows: a scheme cannot reach
        // back into it.
        let start = scheme_start(bytes, separator).max(spliced.copied());
        let end = without_trailing_punctuation(
            bytes,
            separator,
            skip_while(bytes, separator + SEPARATOR, |b| !ends_pair(b)),
        );
        searched = end.max(separator + SEPARATOR);
        if start == separator {
            continue;
        }
        if let Cow::Owned(sanitized) = carried_value(&text[start..end], rules, found, depth) {
            spliced.replace(start..end, &sanitized);
        }
    }
    spliced.finish()
}

/// `text` with the value of each sensitive pair written in it redacted (see
/// [`sensitive_pairs`]): the value runs from the `=` up to the next `&`, `#` or `?`, or where
/// prose ends a URL ([`ends_in_prose`]), without the punctuation that ends a sentence; a value
/// in quotes, to its closing quote. A value already `[REDACTED]` stays.
pub(crate) fn redact_query_pairs_in_text<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
) -> Cow<'t, str> {
    let bytes = text.as_bytes();
    let mut spliced = Splice::new(text);
    let mut pairs: Vec<usize> = sensitive_pairs(text, rules).collect();
    pairs.sort_unstable();
    pairs.dedup();
    for equals in pairs {
        // A value in quotes (logfmt's `password="two words"`) runs to its closing quote.
        if let Some(&quote @ (b'"' | b'\'')) = bytes.get(equals + 1) {
            let value_from = equals + 2;
            let value_to =
                memchr::memchr(quote, &bytes[value_from..]).map_or(bytes.len(), |p| value_from + p);
            let value = &text[value_from..value_to];
            if !value.is_empty() && value != REDACTED && value_from >= spliced.copied() {
                found(value);
                spliced.replace(value_from..value_to, REDACTED);
            }
            continue;
        }
        let value_from = equals + 1;
        if value_from < spliced.copied() {
            continue;
        }
        let value_to = skip_while(bytes, value_from, |b| !ends_pair(b));
        // Redacted already, by the URL's own reading (its brackets are not punctuation).
        if text[value_from..value_to].starts_with(REDACTED) {
            continue;
        }
        let value_to = without_trailing_punctuation(bytes, value_from, value_to);
        let value = &text[value_from..value_to];
        if value.is_empty() {
            continue;
        }
        found(&percent_decode(value, true));
        spliced.replace(value_from..value_to, REDACTED);
    }
    spliced.finish()
}

/// `&` as a JSON string may escape it (Go's encoder does, by default).
const ESCAPED_AMPERSAND: &[u8] = b"\\u0026";

/// Where the `=` of each sensitive pair written in `text` stands: a query's (see
/// [`query_pairs`]) or a bare one (see [`bare_pairs`]), in no particular order, a pair possibly
/// twice. Both the JSON body's prefilter and the redaction of pairs in prose read pairs this
/// way, so a body the prefilter lets pass holds none the redaction would find.
pub(crate) fn sensitive_pairs<'t>(text: &'t str, rules: &'t Rules) -> impl Iterator<Item = usize> + 't {
    query_pairs(text, rules).chain(bare_pairs(text, rules))
}

/// Whether `name` is a name of the query list, compared decoded too, as a URL's reader
/// compares it.
fn is_sensitive_pair_name(name: &str, rules: &Rules) -> bool {
    rules.is_sensitive_query_parameter(name)
        || (name.contains(['%', '+']) && rules.is_sensitive_query_parameter(&percent_decode(name, true)))
}

/// Where the `=` of each bare sensitive pair written in `text` stands: a name of the query list
/// with nothing before it but the text's start, whitespace, a quote, `,`, `;` or `(` (a log
/// line's `user=ada password=…`, logfmt's, or a form's pairs carried whole), then `=`. In a
/// JSON body as written, a line's end escaped (`\n`) counts as whitespace, and an `&` escaped
/// as `\u0026` (as Go's encoder writes it) as `&`. By `=`, which few texts hold, and a look
/// back over the name.
fn bare_pairs<'t>(text: &'t str, rules: &'t Rules) -> impl Iterator<Item = usize> + 't {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(offset) = memchr::memchr(b'=', &bytes[at..]) {
            let equals = at + offset;
            at = equals + 1;
            let reach = equals.saturating_sub(LONGEST_NAME + 1);
            let mut name_from = bytes[reach..equals]
                .iter()
                .rposition(|&b| !is_name_byte(b))
                .map_or(reach, |p| reach + p + 1);
            if name_from == equals || (name_from == reach && reach > 0) {
                continue;
            }
            let bare = match name_from.checked_sub(1).map(|i| bytes[i]) {
                None => true,
                Some(b) if b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b',' | b';' | b'(') => true,
                // In a JSON body as written, a line's end or a tab escaped: its letter is not
                // the name's. So for an `&` escaped as Go's encoder writes it, `\u0026`: the
                // prefilter reads the body as written.
                Some(b'\\') if matches!(bytes[name_from], b'n' | b'r' | b't') => {
                    name_from += 1;
                    name_from < equals
                }
                Some(b'\\') if bytes[name_from..].starts_with(&ESCAPED_AMPERSAND[1..]) => {
                    name_from += ESCAPED_AMPERSAND.len() - 1;
                    name_from < equals
                }
                Some(_) => false,
            };
            if bare && is_sensitive_pair_name(&text[name_from..equals], rules) {
                return Some(equals);
            }
        }
        None
    })
}

/// The longest name of a bare pair or of a form's first field: a longer word before `=` is no
/// field's (a hash, or base64 padded with `=`), and the look back over it stops there.
pub(crate) const LONGEST_NAME: usize = 64;

/// Whether `b` may be in a bare pair's or a form field's name: letters, digits, `_`, `-`, `.`,
/// brackets, and a name's percent-encoding (`%`, and `+` for a space).
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']' | b'%' | b'+')
}

/// Where the `=` of each sensitive query pair written in `text` stands: `?`, `&` or `#`, then a
/// name of the query list, then `=`.
fn query_pairs<'t>(text: &'t str, rules: &'t Rules) -> impl Iterator<Item = usize> + 't {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(offset) = memchr::memchr3(b'?', b'&', b'#', &bytes[at..]) {
            let name_from = at + offset + 1;
            let name_to = skip_while(bytes, name_from, |b| b != b'=' && !ends_pair(b));
            at = name_to;
            if bytes.get(name_to) != Some(&b'=') || name_to == name_from {
                continue;
            }
            if is_sensitive_pair_name(unescaped_amp(&text[name_from..name_to]), rules) {
                return Some(name_to);
            }
        }
        None
    })
}

/// Whether `b` ends a URL written in prose: a space, a control character, a quote, an angle
/// bracket, a backtick or a backslash.
fn ends_in_prose(b: u8) -> bool {
    b.is_ascii_whitespace() || b.is_ascii_control() || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\')
}

/// Whether `b` ends a query pair's name or value written in prose.
fn ends_pair(b: u8) -> bool {
    ends_in_prose(b) || matches!(b, b'&' | b'#' | b'?')
}

/// `end`, moved back to `from` at most over the punctuation that ends a sentence (`.`, `,`,
/// `;`, `:`, `!`, `?`) and the closing brackets that `bytes[from..end]` does not open.
/// (Openers are looked for once: a run of a million `)` costs one pass, not one a character.)
fn without_trailing_punctuation(bytes: &[u8], from: usize, mut end: usize) -> usize {
    let run = &bytes[from..end];
    let opens = [b'(', b'[', b'{'].map(|open| run.contains(&open));
    while end > from {
        match bytes[end - 1] {
            b'.' | b',' | b';' | b':' | b'!' | b'?' => end -= 1,
            b')' if !opens[0] => end -= 1,
            b']' if !opens[1] => end -= 1,
            b'}' if !opens[2] => end -= 1,
            _ => break,
        }
    }
    end
}

/// How deep a URL or a JSON document carried in another is read as what it is: a URL in a URL's
/// query, unencoded (`?next=https://…?token=…`, [`with_nested_urls`]) or encoded
/// ([`carried_value`]); a document in an encoded value or in a JSON string
/// (`super::json_body`); and the URLs written in such a document's prose. One count for
/// all of them, so that no nesting of one in another goes deeper: each level reads its text
/// once more, and hostile nesting costs a few passes, not one a level.
pub(crate) const NESTING: u8 = 3;

/// The absolute URLs of [`redact_urls_in_text`], inside `depth` URLs or documents.
fn urls_in_text<'t>(text: &'t str, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) -> Cow<'t, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut spliced = Splice::new(text);
    let mut searched = 0;
    while let Some(found_at) = text[searched..].find("://") {
        let separator = searched + found_at;
        let start = scheme_start(bytes, separator);
        if start == separator {
            // No scheme: not a URL, but one may begin right after it (`://https://…`).
            searched = separator + 3;
            continue;
        }
        let end = url_end(bytes, separator + 3);
        // A URL inside this one is read below, as part of it.
        searched = end.max(separator + 3);
        if !may_change(&bytes[start..end]) {
            continue;
        }
        let url = &text[start..end];
        let sanitized = with_nested_urls(
            sanitize_one_url(url, rules, &[], true, found, depth),
            rules,
            found,
            depth,
        );
        if sanitized != url {
            spliced.replace(start..end, &sanitized);
        }
    }
    spliced.finish()
}

/// Where the scheme before the `://` at `separator` begins: the letters, digits, `+`, `-` and
/// `.` before it, from the first letter among them (RFC 3986's `scheme`). `separator` itself
/// when there is none.
fn scheme_start(bytes: &[u8], separator: usize) -> usize {
    let mut start = separator;
    while start > 0
        && matches!(bytes[start - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'+' | b'-' | b'.')
    {
        start -= 1;
    }
    // A scheme begins with a letter: `1.https://` is `https://` after `1.`.
    while start < separator && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    start
}

/// Where the URL whose authority begins at `from` ends in prose. (Its scheme holds no bracket,
/// so the brackets it opens are all after `from`.)
fn url_end(bytes: &[u8], from: usize) -> usize {
    without_trailing_punctuation(bytes, from, skip_while(bytes, from, |b| !ends_in_prose(b)))
}

/// How a header's value holds URLs, if it does: whole (`Location`), between angle brackets
/// (`Link: <…>; rel="next"`), or after a delay (`Refresh: 5; url=…`). Such values are sanitized
/// as URLs: a redirect to `…/callback?token=…` or to `https://user:password@…` is recorded as any
/// URL would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlHeader {
    Whole,
    Bracketed,
    AfterDelay,
}

impl UrlHeader {
    pub(crate) fn of(name: &str) -> Option<UrlHeader> {
        // Compared by length first: this runs for every header of every request and response.
        match name.len() {
            8 if name.eq_ignore_ascii_case("location") => Some(UrlHeader::Whole),
            7 if name.eq_ignore_ascii_case("referer") => Some(UrlHeader::Whole),
            16 if name.eq_ignore_ascii_case("content-location") => Some(UrlHeader::Whole),
            4 if name.eq_ignore_ascii_case("link") => Some(UrlHeader::Bracketed),
            7 if name.eq_ignore_ascii_case("refresh") => Some(UrlHeader::AfterDelay),
            _ => None,
        }
    }

    /// `value` with each URL in it passed through `sanitize`.
    pub(crate) fn sanitize(self, value: &str, sanitize: &mut dyn FnMut(&str) -> String) -> String {
        match self {
            UrlHeader::Whole => sanitize(value.trim()),
            UrlHeader::Bracketed => {
                let mut out = String::with_capacity(value.len());
                let mut rest = value;
                while let Some(open) = rest.find('<') {
                    // A `<` never closed: what follows it is a URL all the same.
                    let close = rest[open..].find('>').map_or(rest.len(), |c| open + c);
                    out.push_str(&rest[..=open]);
                    out.push_str(&sanitize(&rest[open + 1..close]));
                    rest = &rest[close..];
                }
                out.push_str(rest);
                out
            }
            UrlHeader::AfterDelay => match refresh_url(value) {
                Some(url) => [
                    &value[..url.start],
                    &sanitize(&value[url.clone()]),
                    &value[url.end..],
                ]
                .concat(),
                None => value.to_owned(),
            },
        }
    }
}

/// Where the URL of a `Refresh` value lies, read as HTML's declarative refresh reads it: a
/// delay (digits and dots), `;` or `,`, then an optional `url=` (any case, spaces around `=`),
/// then the URL, up to its closing quote if it opens with one, else to the end. `None` when
/// the value is a delay alone (the page reloads itself) or reads otherwise.
fn refresh_url(value: &str) -> Option<std::ops::Range<usize>> {
    let bytes = value.as_bytes();
    let space = |b: u8| b.is_ascii_whitespace();
    let mut at = skip_while(bytes, 0, space);
    at = skip_while(bytes, at, |b| b.is_ascii_digit() || b == b'.');
    at = skip_while(bytes, at, space);
    if !matches!(bytes.get(at), Some(b';' | b',')) {
        return None;
    }
    at = skip_while(bytes, at + 1, space);
    if bytes
        .get(at..at + 3)
        .is_some_and(|u| u.eq_ignore_ascii_case(b"url"))
    {
        let equals = skip_while(bytes, at + 3, space);
        if bytes.get(equals) == Some(&b'=') {
            at = skip_while(bytes, equals + 1, space);
        }
    }
    match bytes.get(at) {
        Some(&quote @ (b'"' | b'\'')) => Some(at + 1..skip_while(bytes, at + 1, |b| b != quote)),
        Some(_) => Some(at..bytes.len()),
        None => None,
    }
}
