//! Redaction: the sanitizer every protocol shares.
//!
//! Everything the kit records — events, attachments, failure messages — passes through a
//! [`Sanitizer`] where it is made, so no collector, archive, report or export ever sees a
//! secret. The rules, with redaction on:
//!
//! 1. sensitive headers (case-insensitive) become `[REDACTED]`; a header's repeated values are
//!    joined with `, `;
//! 2. sensitive query parameter values in URLs become `[REDACTED]`;
//! 3. URI user-info (`user:password@`) is always removed, even with redaction off;
//! 4. sensitive JSON properties are redacted by name at any depth, duplicate keys included;
//!    the rest of the document is kept exactly as written;
//! 5. other bodies are scanned for the same names: form-urlencoded pairs, multipart parts (by
//!    their `Content-Disposition` `name=`), XML elements (their text) and attributes, and
//!    HTML form fields and the JSON in its scripts; a field's name in bracket or dot notation
//!    (`user[password]`, `user.password`) is sensitive by any of its parts;
//! 6. a body that starts like JSON but does not parse is redacted by a text fallback: the
//!    quoted string after a sensitive name is redacted, an object or array after one is
//!    replaced whole (to its matching bracket, or to the end of a body cut short); numbers,
//!    booleans and nulls pass;
//! 7. every body is cut at `max_diagnostic_body_length` characters, with the marker
//!    `... [N characters truncated]`;
//! 8. every value redacted by rules 1–6 (and every credential given to the kit) is remembered
//!    in a [`SecretRegistry`] and then redacted by value wherever it appears: a token echoed
//!    under an innocent name, in a URL, or in a failure message;
//! 9. header and cookie values pass these rules before they reach a failure message or the
//!    trace;
//! 10. a credential whose form says what it is, under any name or none, is remembered and
//!     redacted so too: a JSON Web Token, a PEM private key's lines, and the tokens GitHub,
//!     GitLab, Stripe, Slack, Google, npm, PyPI, SendGrid, OpenAI and Anthropic write with a
//!     prefix of their own (`ghp_…`, `sk_live_…`, `xoxb-…`).
//!
//! ```
//! use std::sync::Arc;
//! use kit_core::redact::{Sanitizer, SecretRegistry};
//! use kit_core::KitHttpAttachmentOptions;
//!
//! let sanitizer = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
//! let body = sanitizer.body(Some("application/json"), br#"{"user":"ada","password":"correct-horse"}"#);
//! assert_eq!(body, r#"{"user":"ada","password":"[REDACTED]"}"#);
//! // The password is now known, and redacted wherever it turns up.
//! assert_eq!(sanitizer.text("echo: correct-horse"), "echo: [REDACTED]");
//! assert_eq!(sanitizer.url("https://u:p@api.example/x?token=abc&page=2"), "https://api.example/x?token=[REDACTED]&page=2");
//! ```

mod formats;
mod json;
mod known;
mod markup;
mod script;
mod secrets;
mod url;

use std::borrow::{Borrow, Cow};
use std::sync::Arc;

use aho_corasick::{AhoCorasick, packed};
use base64::Engine as _;
use rustc_hash::FxHashSet;

pub use formats::{CredentialForm, first_credential};
pub use secrets::{
    Fingerprint, FingerprintSet, Leak, LeakScanner, MIN_SECRET_LEN, SecretRegistry, rolling_hash,
};

use crate::options::{JsonDiagnosticOptions, KitHttpAttachmentOptions};

/// How many more times a text is searched for credentials by their form after its known
/// secrets are replaced ([`Sanitizer`]): a replacement that joins what it leaves into a new
/// credential is a contrived text's, and each pass replaces at least one.
const FORM_PASSES: usize = 4;

/// What redacted values are replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// The sensitive names, compared case-insensitively (ASCII). A query parameter's or a JSON
/// property's name also stands for its twin in the other common case: `access_token` for
/// `accessToken` (and `AccessToken`), `connectionString` for `connection_string`.
///
/// ```
/// use kit_core::redact::Rules;
///
/// let rules = Rules::new(&[], &["access_token".to_owned()], &["connectionString".to_owned()]);
/// assert!(rules.is_sensitive_query_parameter("accessToken"));
/// assert!(rules.is_sensitive_json_property("connection_string"));
/// assert!(!rules.is_sensitive_json_property("connection"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    headers: Names,
    query: Names,
    json: Names,
}

/// Lower-cased names, with the set of their lengths: most names looked up (every member of
/// every JSON body) have a length no sensitive name has, and are answered without comparing;
/// the others are compared with the names of their length only.
#[derive(Debug, Clone)]
struct Names {
    /// Shortest first.
    names: Vec<String>,
    /// Bit `n` set: some name is `n` bytes long (bit 63: some name is 63 bytes or longer).
    lengths: u64,
    /// Where the names of each length begin in `names` (those of 64 bytes or more together at
    /// 64), and where they end, at 65.
    of_length: [u16; 66],
    /// Finds any of the names anywhere in a text, case aside. `None` when there are no names,
    /// when they are not looked for in texts (only the JSON names are: every body is checked),
    /// or when no finder could be built; then any text may hold one.
    finder: Option<Arc<NameFinder>>,
}

/// How many bytes of a text [`NameFinder::Folded`] lower-cases at a time.
const FOLD_CHUNK: usize = 4096;

/// Finds any of a set of lower-cased names in a text, ASCII case aside.
#[derive(Debug)]
enum NameFinder {
    /// The text lower-cased a chunk at a time, then searched with a SIMD searcher (Teddy),
    /// which cannot ignore case itself: about 50 ns on a 421-byte body, against 692 ns for an
    /// automaton folding case as it goes. Each chunk repeats the last `overlap` bytes of the
    /// one before (the longest name's length less one), so a name across two is found.
    Folded {
        searcher: packed::Searcher,
        overlap: usize,
    },
    /// Where no SIMD searcher can be built (no SIMD, too many names, an empty name) or a name
    /// is too long to overlap chunks.
    Automaton(AhoCorasick),
}

impl NameFinder {
    /// A finder of `names`, which are lower case; `None` if none could be built.
    fn new(names: &[String]) -> Option<Self> {
        let longest = names.iter().map(String::len).max().unwrap_or(0);
        let folded = if longest <= FOLD_CHUNK / 2 {
            // Kebab twins fold to their snake twins: each folded name once.
            let mut folded_names: Vec<Vec<u8>> =
                names.iter().map(|n| n.bytes().map(fold).collect()).collect();
            folded_names.sort_unstable();
            folded_names.dedup();
            packed::Config::new()
                .builder()
                .extend(folded_names)
                .build()
                .map(|searcher| NameFinder::Folded {
                    searcher,
                    overlap: longest.saturating_sub(1),
                })
        } else {
            None
        };
        folded.or_else(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(names)
                .ok()
                .map(NameFinder::Automaton)
        })
    }

    fn is_in(&self, text: &[u8]) -> bool {
        match self {
            NameFinder::Folded { searcher, overlap } => {
                // Sized to the text, not cleared first: most bodies are far shorter than a
                // chunk, and zeroing a whole one cost more than folding them.
                let mut folded = Vec::with_capacity(text.len().min(FOLD_CHUNK));
                let mut start = 0;
                loop {
                    let end = (start + FOLD_CHUNK).min(text.len());
                    folded.clear();
                    folded.extend(text[start..end].iter().map(|&b| fold(b)));
                    if searcher.find(&folded).is_some() {
                        return true;
                    }
                    if end == text.len() {
                        return false;
                    }
                    // `overlap` is at most half a chunk, so each chunk starts further on.
                    start = end - overlap;
                }
            }
            NameFinder::Automaton(automaton) => automaton.is_match(text),
        }
    }
}

/// A byte as [`NameFinder::Folded`] searches it: lower case, and `-` as `_`, so that the
/// kebab case of a name (`x-api-key`) is found as its snake case.
#[inline]
fn fold(b: u8) -> u8 {
    if b == b'-' { b'_' } else { b.to_ascii_lowercase() }
}

/// A configured name and the names it stands for, lower-cased: itself, and the same words
/// written in the other common cases (`access_token` is also `accessToken` and `AccessToken`,
/// compared without case as `accesstoken`, and `access-token`; `connectionString` is also
/// `connection_string` and `connection-string`).
/// The spec's lists pair `apiKey` with `api_key` and `clientSecret` with `client_secret`, but
/// not `accessToken` with `access_token`: APIs that write JSON in camel case would otherwise
/// have their tokens recorded.
fn twins(name: &str) -> impl Iterator<Item = String> {
    let lower = name.to_ascii_lowercase();
    let joined: String = lower.chars().filter(|&c| c != '_' && c != '-').collect();
    let mut snake = String::with_capacity(name.len() + 4);
    let mut after_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && after_lower {
            snake.push('_');
        }
        after_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        snake.push(c.to_ascii_lowercase());
    }
    // The words joined by `-`, as headers and some JSON write them (`x-api-key`).
    let kebab = snake.replace('_', "-");
    let joined = (!joined.is_empty() && joined != lower).then_some(joined);
    let kebab = (kebab != lower && kebab != snake).then_some(kebab);
    let snake = (snake != lower).then_some(snake);
    std::iter::once(lower).chain(joined).chain(snake).chain(kebab)
}

/// Whether a word of a name begins at byte `at` (not the first): after `_`, `-`, `.`, `[` or a
/// space, or at a capital after a small letter or a digit (`sessionToken`'s `Token`).
fn word_starts_at(bytes: &[u8], at: usize) -> bool {
    let (before, here) = (bytes[at - 1], bytes[at]);
    (matches!(before, b'_' | b'-' | b'.' | b'[' | b' ') && here.is_ascii_alphanumeric())
        || (here.is_ascii_uppercase() && (before.is_ascii_lowercase() || before.is_ascii_digit()))
}

/// No names.
impl Default for Names {
    fn default() -> Self {
        Self::of(std::iter::empty())
    }
}

/// Made from the names, so equal whenever they are.
impl PartialEq for Names {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names
    }
}

impl Eq for Names {}

impl Names {
    /// The names of `list`, as written (case aside).
    fn new(list: &[String]) -> Self {
        Self::of(list.iter().map(|name| name.to_ascii_lowercase()))
    }

    /// The names of `list` and their [`twins`]: a field's or parameter's name is a word or
    /// two, which APIs write in more than one case.
    fn with_twins(list: &[String]) -> Self {
        Self::of(list.iter().flat_map(|name| twins(name)))
    }

    fn of(lower: impl Iterator<Item = String>) -> Self {
        // Each name once, in the order given: a name and its twins often coincide.
        let mut seen = FxHashSet::default();
        let mut names: Vec<String> = lower.filter(|name| seen.insert(name.clone())).collect();
        names.sort_by_key(|name| name.len().min(64));
        let lengths = names.iter().fold(0, |bits, n| bits | Self::bit(n.len()));
        let mut of_length = [0u16; 66];
        for (length, first) in of_length.iter_mut().enumerate() {
            // Lists of more names than a u16 counts are cut short there: no list is that long.
            let before = names.partition_point(|name| name.len().min(64) < length);
            *first = u16::try_from(before).unwrap_or(u16::MAX);
        }
        Names {
            names,
            lengths,
            of_length,
            finder: None,
        }
    }

    /// [`with_twins`](Self::with_twins), with the finder [`may_occur_in`](Self::may_occur_in)
    /// uses.
    /// [`new`](Self::new), with the finder [`may_occur_in`](Self::may_occur_in) uses: header
    /// names, looked for in prose.
    fn findable(list: &[String]) -> Self {
        let mut names = Self::new(list);
        if !names.names.is_empty() {
            names.finder = NameFinder::new(&names.names).map(Arc::new);
        }
        names
    }

    fn searchable(list: &[String]) -> Self {
        let mut names = Self::with_twins(list);
        if !names.names.is_empty() {
            names.finder = NameFinder::new(&names.names).map(Arc::new);
        }
        names
    }

    /// Whether some name may be written in `text`: false only when none is, in any case.
    fn may_occur_in(&self, text: &str) -> bool {
        match &self.finder {
            Some(finder) => finder.is_in(text.as_bytes()),
            None => !self.names.is_empty(),
        }
    }

    fn bit(len: usize) -> u64 {
        1 << len.min(63)
    }

    #[inline]
    fn contains(&self, name: &str) -> bool {
        let length = name.len().min(64);
        self.lengths & Self::bit(length) != 0
            && self
                .names
                .get(usize::from(self.of_length[length])..usize::from(self.of_length[length + 1]))
                .is_some_and(|same_length| same_length.iter().any(|s| s.eq_ignore_ascii_case(name)))
    }

    /// Whether `name`, or its last words, is one of the names: `newPassword`, `db_password`,
    /// `webhookSecret`, `x-goog-api-key` and `oauth_refresh_token` name a password, a secret,
    /// an API key and a token as `password`, `secret`, `api_key` and `refresh_token` do. The
    /// last words say what a value is; earlier ones where it belongs (`token_type` is no token).
    #[inline]
    fn contains_as_last_words(&self, name: &str) -> bool {
        // A word begins only after a byte below `a` (`_`, `-`, `.`, `[`, a space) or at a
        // capital, also below `a`: most names are small letters alone, one word, and the
        // scanner looks up every member name of a body it reads.
        self.contains(name) || (name.bytes().any(|b| b < b'a') && self.contains_last_words(name))
    }

    /// [`contains_as_last_words`](Self::contains_as_last_words) for the words after the first.
    #[inline(never)]
    fn contains_last_words(&self, name: &str) -> bool {
        // `user[password]`: the bracket closing the last word is not the word's.
        let (words, in_brackets) = match name.strip_suffix(']') {
            Some(inner) => (inner, true),
            None => (name, false),
        };
        let bytes = words.as_bytes();
        // Only the lengths some name has are tried.
        let shorter = (1u64 << bytes.len().min(63)) - 1;
        let mut lengths = self.lengths & shorter & !1;
        while lengths != 0 {
            let length = lengths.trailing_zeros() as usize;
            lengths &= lengths - 1;
            let at = bytes.len() - length;
            if word_starts_at(bytes, at)
                && (!in_brackets || bytes[at - 1] == b'[')
                && self.contains(&words[at..])
            {
                return true;
            }
        }
        false
    }
}

impl Rules {
    /// Rules from the three lists.
    pub fn new(headers: &[String], query: &[String], json: &[String]) -> Self {
        Rules {
            headers: Names::findable(headers),
            query: Names::with_twins(query),
            json: Names::searchable(json),
        }
    }

    /// Whether a header is sensitive.
    pub fn is_sensitive_header(&self, name: &str) -> bool {
        self.headers.contains(name)
    }

    /// Whether `text` may name a sensitive header: false only when it names none, in any case.
    pub(crate) fn may_name_a_header(&self, text: &str) -> bool {
        self.headers.may_occur_in(text)
    }

    /// Whether a query parameter is sensitive: its name, or a part of a name in bracket or dot
    /// notation (`auth[token]`, `auth.token`), is in the query parameters' list, or ends with
    /// words that are (`page_token`, `mapKey`).
    pub fn is_sensitive_query_parameter(&self, name: &str) -> bool {
        any_part_of(name, |part| self.query.contains_as_last_words(part))
    }

    /// Whether a form field or multipart part (a field of an HTML form too) is sensitive: its
    /// name, or a part of a name in bracket or dot notation, is in the JSON properties' list,
    /// or ends with words that are (`new_password`, `signingSecret`).
    /// Rails, PHP and qs nest fields by brackets (`user[password]`, `tokens[0][access_token]`,
    /// `password[]`), Spring and ASP.NET by dots (`user.password`, `tokens[0].access_token`),
    /// and a part sensitive anywhere makes the field so, as a JSON member under or holding a
    /// sensitive name is redacted.
    ///
    /// ```
    /// use kit_core::redact::Rules;
    ///
    /// let rules = Rules::new(&[], &[], &["password".to_owned()]);
    /// assert!(rules.is_sensitive_field("user[password]"));
    /// assert!(rules.is_sensitive_field("user.password"));
    /// assert!(rules.is_sensitive_field("Password"));
    /// assert!(rules.is_sensitive_field("new_password"));
    /// assert!(!rules.is_sensitive_field("user[name]"));
    /// // A JSON key or an XML name is read by its last words, not by any part.
    /// assert!(rules.is_sensitive_json_property("spring.datasource.password"));
    /// assert!(!rules.is_sensitive_json_property("password.policy"));
    /// ```
    pub fn is_sensitive_field(&self, name: &str) -> bool {
        any_part_of(name, |part| self.json.contains_as_last_words(part))
    }

    /// Whether a JSON property (or an XML element or attribute) is sensitive: its name is in the
    /// list, or ends with words that are (`newPassword`, `db_password`, `x-goog-api-key`; a word
    /// begins after `_`, `-`, `.`, `[` or a space, or at a capital after a small letter or a
    /// digit). Form fields and multipart parts:
    /// [`is_sensitive_field`](Self::is_sensitive_field).
    pub fn is_sensitive_json_property(&self, name: &str) -> bool {
        self.json.contains_as_last_words(name)
    }
}

/// Whether `name`, or a part of it in bracket or dot notation (`a[b].c` has `a`, `b` and `c`),
/// is `sensitive`. Only a name with a `[` or a `.` is split, so plain names cost one lookup.
fn any_part_of(name: &str, sensitive: impl Fn(&str) -> bool) -> bool {
    sensitive(name)
        || (name.contains(['[', '.'])
            && name
                .split(['[', ']', '.'])
                .any(|part| !part.is_empty() && sensitive(part)))
}

/// The first position at or after `at` whose byte `keep` refuses, or the end: the scans of the
/// hand-written readers (attributes, a `Refresh` value), which read ASCII delimiters only, so
/// every position they stop at is a character boundary.
pub(crate) fn skip_while(bytes: &[u8], at: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| !keep(b)))
        .map_or(bytes.len(), |p| at + p)
}

/// How a body is to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BodyKind {
    Json,
    /// XML, or (`html`) HTML, whose `script`, `style` and `textarea` elements hold text, not
    /// markup.
    Markup {
        html: bool,
    },
    Form,
    Multipart(Option<String>),
    Text,
}

fn media_type(content_type: &str) -> Cow<'_, str> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    // Nearly every response's type is lower case already: read it where it is.
    if media.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(media.to_ascii_lowercase())
    } else {
        Cow::Borrowed(media)
    }
}

/// A JSON body (or one that looks like JSON) with the values of sensitive names redacted.
/// Only a sensitive name's value is redacted, JSON or not, and a name without escapes is
/// written as it is compared: a text with neither passes unchanged without the scan, which is
/// several times slower than looking for the names.
///
/// `depth`: how many URLs or documents the body is carried inside ([`url::NESTING`]; 0 for a
/// body's own). A JSON document written as another's string value (`"body": "{\"password\":…}"`,
/// as API gateways, queues and webhooks pass a request or a message on), or percent-encoded as
/// a query's or a form's value, is read so, as the document it is.
pub(super) fn json_body<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'t, str> {
    // The pairs' look is the prefilter's last: where it ran, the scanner takes its answer
    // rather than looking again.
    let pairs = if text.contains('\\') || rules.json.may_occur_in(text) || has_user_info(text) {
        None
    } else if may_hold_query_parameter(text, rules) {
        Some(true)
    } else {
        return Cow::Borrowed(text);
    };
    json_body_scanned(text, rules, found, depth, pairs)
}

/// Whether a URL or prose in `text` may carry a parameter that only the query list names
/// (`key`, or a name added to that list alone): `?`, `&` or `#`, or a bare pair's start, then
/// such a name, then `=`, read as the redaction of pairs in prose reads it
/// ([`url::sensitive_pairs`]). The JSON names' finder cannot see it, so a body naming no
/// sensitive JSON property passed with its link (`"https://maps.example/api?key=…"`) unread.
///
/// Or a URL written percent-encoded (`?next=https%3A%2F%2F…`, or alone), whose own query may
/// carry any sensitive parameter: read as a URL or as prose, it is decoded.
///
/// Most bodies hold no `=` or `%`, which one pass finds first.
pub(super) fn may_hold_query_parameter(text: &str, rules: &Rules) -> bool {
    holds_any(text.as_bytes(), [b'=', b'%'])
        && (url::sensitive_pairs(text, rules).next().is_some()
            || url::next_encoded_separator(text, 0).is_some())
}

/// Whether `bytes` holds any of `needles`. A chunk at a time, with no early exit inside a
/// chunk, so that the compiler compares a vector's worth of bytes at once: `contains` once for
/// each byte took twice as long over a 1 MiB body holding neither of two (two passes). What is
/// left after the chunks, which is all of most of markup's texts (a few words between tags), a
/// word at a time: a byte at a time, it cost the sanitizer bench's HTML page 0.8% more
/// instructions (callgrind).
#[inline]
pub(super) fn holds_any<const N: usize>(bytes: &[u8], needles: [u8; N]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut chunks = bytes.chunks_exact(64);
    let in_chunk = |chunk: &[u8]| {
        chunk.iter().fold(0u8, |seen, &byte| {
            needles
                .iter()
                .fold(seen, |seen, &needle| seen | u8::from(byte == needle))
        }) != 0
    };
    if chunks.any(in_chunk) {
        return true;
    }
    let mut words = chunks.remainder().chunks_exact(8);
    // A word holds a needle where the word xor the needle in every byte has a zero byte.
    let in_word = |word: &[u8]| {
        let word = u64::from_ne_bytes(word.try_into().unwrap_or_default());
        needles.iter().any(|&needle| {
            let x = word ^ (ONES * u64::from(needle));
            x.wrapping_sub(ONES) & !x & HIGHS != 0
        })
    };
    words.any(in_word) || words.remainder().iter().any(|byte| needles.contains(byte))
}

/// A text with ranges of it replaced, left to right: copied only from the first replacement
/// on, and borrowed when there is none.
pub(super) struct Splice<'t> {
    text: &'t str,
    out: String,
    /// Where the text is copied up to: a later range begins here or after.
    copied: usize,
    replaced: bool,
}

impl<'t> Splice<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        Splice {
            text,
            out: String::new(),
            copied: 0,
            replaced: false,
        }
    }

    /// Where the text is copied up to: a range to replace begins here or after.
    pub(super) fn copied(&self) -> usize {
        self.copied
    }

    /// Writes `with` in place of `range`, which begins at or after [`copied`](Self::copied).
    pub(super) fn replace(&mut self, range: std::ops::Range<usize>, with: &str) {
        if !self.replaced {
            // About the text's length comes out: grown from nothing, a page of many
            // replacements was copied again at each doubling.
            self.out.reserve(self.text.len() + with.len());
        }
        self.out.push_str(&self.text[self.copied..range.start]);
        self.out.push_str(with);
        self.copied = range.end;
        self.replaced = true;
    }

    /// The text with its replacements.
    pub(super) fn finish(mut self) -> Cow<'t, str> {
        if !self.replaced {
            return Cow::Borrowed(self.text);
        }
        self.out.push_str(&self.text[self.copied..]);
        Cow::Owned(self.out)
    }
}

/// Whether `bytes` may be a form's pairs carried whole, in a JSON string, markup's text or a
/// value written percent-encoded (`grant_type=password&username=ada&password=…`, as an API
/// gateway's event or a request log holds a sign-in's form body): a field's name, then `=`,
/// and no whitespace anywhere, as a form writes a space `+` or `%20`. The first word answers
/// for nearly every text that is not one.
pub(super) fn may_be_form(bytes: &[u8]) -> bool {
    let name_end = bytes
        .iter()
        .take(url::LONGEST_NAME + 1)
        .position(|&b| !url::is_name_byte(b));
    matches!(name_end, Some(end) if end > 0 && bytes[end] == b'=')
        && !bytes.iter().any(u8::is_ascii_whitespace)
}

/// A form's pairs carried whole (see [`may_be_form`]) with each sensitive field's value
/// redacted as a form body's is (rule 5), then read as prose (rule 2); borrowed when nothing
/// changed. `depth`: see [`url::NESTING`].
pub(super) fn carried_form<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
) -> Cow<'t, str> {
    let form = url::redact_pairs(text, '&', &|n| rules.is_sensitive_field(n), rules, found, depth);
    match url::redact_urls_in_text(&form, rules, found, depth) {
        Cow::Owned(prose) => Cow::Owned(prose),
        Cow::Borrowed(_) if form == text => Cow::Borrowed(text),
        Cow::Borrowed(_) => Cow::Owned(form),
    }
}

/// Calls `found` with what a sensitive header's value holds that may be echoed elsewhere: the
/// value, the credential after a scheme word (`Bearer <token>`, `Basic <base64>`), and each
/// cookie's value (`a=1; b=2` in `Cookie`, the first pair of `Set-Cookie`).
pub(super) fn header_value_secrets(name: &str, value: &str, found: &mut dyn FnMut(&str)) {
    found(value);
    let cookie = name.eq_ignore_ascii_case("cookie");
    if cookie || name.eq_ignore_ascii_case("set-cookie") {
        for pair in value.split(';').take(if cookie { usize::MAX } else { 1 }) {
            if let Some((_, v)) = pair.split_once('=') {
                found(v.trim());
            }
        }
    } else if let Some((scheme, credential)) = value.split_once(' ')
        && !scheme.is_empty()
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        found(credential);
    }
}

/// `text` with the value of each sensitive header written in it as a header line
/// (`Authorization: Bearer …` in a request dumped as text, a `curl -H '…'` in a JSON string,
/// a failure message) redacted whole, as the header's own value is (rule 1). The name stands
/// at the text's start or after a byte no header name holds; the value runs from after `:`
/// and spaces to the line's end, or to the quote that opened before the name. Borrows when
/// there is nothing to change, as for a text that names no sensitive header.
pub(super) fn header_lines_in_text<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
) -> Cow<'t, str> {
    // A header line holds a `:`; few texts do, and the names' search is longer than the look.
    if memchr::memchr(b':', text.as_bytes()).is_none() || !rules.may_name_a_header(text) {
        return Cow::Borrowed(text);
    }
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_');
    let bytes = text.as_bytes();
    let mut spliced = Splice::new(text);
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b':', &bytes[at..]) {
        let colon = at + offset;
        at = colon + 1;
        let name_from = bytes[..colon]
            .iter()
            .rposition(|&b| !is_name_byte(b))
            .map_or(0, |p| p + 1);
        if name_from == colon
            || name_from < spliced.copied()
            || !rules.is_sensitive_header(&text[name_from..colon])
        {
            continue;
        }
        let quote = name_from
            .checked_sub(1)
            .map(|i| bytes[i])
            .filter(|b| matches!(b, b'\'' | b'"'));
        let value_from = skip_while(bytes, colon + 1, |b| b == b' ' || b == b'\t');
        let value_to = skip_while(bytes, value_from, |b| {
            b != b'\r' && b != b'\n' && Some(b) != quote
        });
        let value = text[value_from..value_to].trim_end();
        if value.is_empty() || value == REDACTED {
            continue;
        }
        let name = &text[name_from..colon];
        if name.eq_ignore_ascii_case("cookie") || name.eq_ignore_ascii_case("set-cookie") {
            header_value_secrets(name, value, found);
        } else {
            // In prose the value may run on into the sentence's words, which must not become
            // secrets: the value's first word is, or a scheme's credential after it.
            found(value);
            let mut words = value.split_ascii_whitespace();
            if let Some(first) = words.next() {
                match words.next() {
                    Some(credential) if first.bytes().all(|b| b.is_ascii_alphabetic()) => found(credential),
                    _ => found(first),
                }
            }
        }
        spliced.replace(value_from..value_from + value.len(), REDACTED);
        at = value_to;
    }
    spliced.finish()
}

/// Whether `bytes` begin, after ASCII whitespace, as a JSON object or array does. Byte by byte:
/// `str::trim_start` decodes characters, and markup's every text is looked at.
pub(super) fn opens_document(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['))
}

/// Whether a URL in `text` has user-info (`scheme://user:password@host`), which is removed
/// wherever a URL is found (rule 3), though no sensitive name is written near it.
fn has_user_info(text: &str) -> bool {
    // `contains` first: std searches a short needle with SIMD, `match_indices` does not, and
    // most bodies hold no URL.
    text.contains("://")
        && text.match_indices("://").any(|(at, _)| {
            let authority = &text.as_bytes()[at + 3..];
            authority
                .iter()
                .take_while(|&&b| !matches!(b, b'/' | b'?' | b'#' | b'"' | b'\\') && !b.is_ascii_whitespace())
                .any(|&b| b == b'@')
        })
}

/// [`json_body`] by the scan alone.
/// `pairs`: whether the text may hold a sensitive pair in prose (`may_hold_query_parameter`),
/// where that is known already.
fn json_body_scanned<'t>(
    text: &'t str,
    rules: &Rules,
    found: &mut dyn FnMut(&str),
    depth: u8,
    pairs: Option<bool>,
) -> Cow<'t, str> {
    // What the strict pass finds counts only if the text turns out to be JSON: a number it
    // redacted before failing must pass the fallback untouched.
    let mut pending = Vec::new();
    match json::redact_json(text, rules, &mut |v| pending.push(v.to_owned()), depth, pairs) {
        Ok(out) => {
            pending.iter().for_each(|v| found(v));
            out
        }
        Err(_) => {
            let fallback = json::redact_text_fallback(text, rules, found);
            Cow::Owned(text_with_urls(fallback, rules, found, depth))
        }
    }
}

/// `text` with the URLs written in it sanitized (rules 2 and 3): a link in an error message or a
/// log line, `… see https://api.example/x?token=… for details`. `depth`: see [`url::NESTING`].
fn text_with_urls(text: String, rules: &Rules, found: &mut dyn FnMut(&str), depth: u8) -> String {
    match url::redact_urls_in_text(&text, rules, found, depth) {
        Cow::Borrowed(_) => text,
        Cow::Owned(sanitized) => sanitized,
    }
}

/// How many multipart bodies deep a part is still read part by part. Mail and batch APIs nest
/// a level or two; deeper, the text fallback reads the rest, so a hostile depth costs no stack
/// (each level is a frame of `structured` and of the multipart reader).
const MULTIPART_NESTING: u8 = 8;

/// Whether a body with no type of use, its leading whitespace trimmed, reads as multipart: a
/// `--` line, then a part's disposition.
fn opens_multipart(trimmed: &[u8]) -> bool {
    trimmed.starts_with(b"--") && memchr::memmem::find(trimmed, b"Content-Disposition").is_some()
}

fn body_kind(content_type: Option<&str>, text: &str) -> BodyKind {
    let trimmed = text.trim_start();
    let looks_json = trimmed.starts_with('{') || trimmed.starts_with('[');
    if let Some(declared) = content_type.and_then(declared_kind) {
        // A JSON document is read as JSON whatever its label says: servers send JSON as
        // `text/html` (an error handler's page) and tests post it as a form by mistake, and
        // read as markup or as pairs its names would pass. Checked only for a body that begins
        // as JSON does under a label that says otherwise; `[0]=a&password=…` is a form.
        let mislabelled = declared != BodyKind::Json
            && looks_json
            && serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok();
        return if mislabelled { BodyKind::Json } else { declared };
    }
    // No (useful) content type: go by the first character.
    if looks_json {
        BodyKind::Json
    } else if trimmed.starts_with('<') {
        let html = ["<!doctype html", "<html"].iter().any(|start| {
            trimmed
                .get(..start.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(start))
        });
        BodyKind::Markup { html }
    } else if opens_multipart(trimmed.as_bytes()) {
        BodyKind::Multipart(None)
    } else if !trimmed.is_empty()
        && trimmed.contains('=')
        && !trimmed.bytes().any(|b| b.is_ascii_whitespace() || b == b'"')
    {
        BodyKind::Form
    } else {
        BodyKind::Text
    }
}

/// The kind a content type names, if it names one the sanitizer reads.
fn declared_kind(content_type: &str) -> Option<BodyKind> {
    let media = media_type(content_type);
    if media == "application/json" || media == "text/json" || media.ends_with("+json") {
        Some(BodyKind::Json)
    } else if media.ends_with("/xml") || media.ends_with("+xml") {
        Some(BodyKind::Markup { html: false })
    } else if media == "text/html" {
        // HTML is read as markup too: its forms name their fields (see `markup::redact_xml`).
        Some(BodyKind::Markup { html: true })
    } else if media == "application/x-www-form-urlencoded" {
        Some(BodyKind::Form)
    } else if media.starts_with("multipart/") {
        Some(BodyKind::Multipart(markup::boundary(content_type)))
    } else {
        None
    }
}

/// A body as recorded by [`Sanitizer::recorded_body`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedBody {
    /// The text, or the base64 of the bytes: shared, as the event that carries it and the
    /// attachment that keeps it hold the same text.
    pub text: Arc<str>,
    /// Whether `text` is base64 (the body was not UTF-8).
    pub base64: bool,
}

/// A body of text in UTF-16: its byte order, and whether it begins with a byte-order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Utf16 {
    big_endian: bool,
    mark: bool,
}

impl Utf16 {
    /// Whether `body` is text in UTF-16, and in which byte order: by its byte-order mark; by
    /// a `charset` its type names (`utf-16le`, `utf-16be`; `utf-16` without a mark in the
    /// order its first character, ASCII in a JSON or XML document, shows, else big-endian, as
    /// RFC 2781 says); or, with no charset named, by its zeros ([`Utf16::by_its_zeros`]). A
    /// SOAP service may answer so, and its names, each letter beside a zero byte, are found by
    /// no rule read as Latin-1 or UTF-8.
    fn of(content_type: Option<&str>, body: &[u8]) -> Option<Utf16> {
        match body {
            [0xff, 0xfe, ..] => {
                return Some(Utf16 {
                    big_endian: false,
                    mark: true,
                });
            }
            [0xfe, 0xff, ..] => {
                return Some(Utf16 {
                    big_endian: true,
                    mark: true,
                });
            }
            _ => {}
        }
        let Some(charset) = content_type.and_then(|t| markup::parameter(t, "charset")) else {
            return Self::by_its_zeros(content_type, body);
        };
        let big_endian = if charset.eq_ignore_ascii_case("utf-16be") {
            true
        } else if charset.eq_ignore_ascii_case("utf-16le") {
            false
        } else if charset.eq_ignore_ascii_case("utf-16") {
            !matches!(body, [first, 0, ..] if *first != 0)
        } else {
            return None;
        };
        Some(Utf16 {
            big_endian,
            mark: false,
        })
    }

    /// Text in UTF-16 that neither a mark nor a `charset` names, told as RFC 4627 (JSON) and
    /// the XML specification (Appendix F) tell it: by where the zero bytes of its first two
    /// characters, which are ASCII, fall (`{ 00 " 00` little-endian, `00 { 00 "` big-endian).
    /// Only where the type says text (JSON, XML, HTML, a form, `text/…`), or there is no
    /// type and the first character opens a document (`{`, `[`, `<`): bytes of other kinds
    /// are not guessed at. Text in UTF-8 has no zero bytes there, and without this such a body
    /// (ASCII in UTF-16 is UTF-8 too) was read as text whose names no rule found.
    fn by_its_zeros(content_type: Option<&str>, body: &[u8]) -> Option<Utf16> {
        let ascii = |b: u8| b == b'\t' || b == b'\n' || b == b'\r' || (0x20..0x7f).contains(&b);
        let (first, big_endian) = match *body.get(..4)? {
            [a, 0, b, 0] if ascii(a) && ascii(b) => (a, false),
            [0, a, 0, b] if ascii(a) && ascii(b) => (a, true),
            _ => return None,
        };
        let text = match content_type {
            Some(t) => declared_kind(t).is_some() || media_type(t).starts_with("text/"),
            None => matches!(first, b'{' | b'[' | b'<'),
        };
        text.then_some(Utf16 {
            big_endian,
            mark: false,
        })
    }

    /// The text of `body` (past its mark); a lone surrogate, or an odd byte at the end, is
    /// U+FFFD.
    fn decode(self, body: &[u8]) -> String {
        let units = body[if self.mark { 2 } else { 0 }..]
            .chunks(2)
            .map(|pair| match *pair {
                [a, b] if self.big_endian => u16::from_be_bytes([a, b]),
                [a, b] => u16::from_le_bytes([a, b]),
                // An odd byte at the end is no character.
                _ => 0xfffd,
            });
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    }

    /// `text` in this byte order, after the mark `body` began with, if any.
    fn encode(self, body: &[u8], text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() * 2 + 2);
        if self.mark {
            out.extend_from_slice(&body[..2]);
        }
        for unit in text.encode_utf16() {
            out.extend_from_slice(&if self.big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        out
    }
}

/// The parameter `name` (in any case) of a header's value, unquoted: the `charset` of
/// `text/xml; charset="utf-16"`, the `boundary` of a multipart type. The sanitizer reads a
/// body's charset and a multipart body's boundary with it.
///
/// ```
/// use kit_core::redact::header_parameter;
///
/// let content_type = "text/html; Charset=\"ISO-8859-1\"";
/// assert_eq!(header_parameter(content_type, "charset"), Some("ISO-8859-1"));
/// assert_eq!(header_parameter("text/html", "charset"), None);
/// ```
pub fn header_parameter<'v>(value: &'v str, name: &str) -> Option<&'v str> {
    markup::parameter(value, name)
}

/// The text `bytes` stand for if they are UTF-16, as the sanitizer reads such a body: after a
/// byte-order mark (`FF FE`, or `FE FF` for big-endian); under a `content_type` whose
/// `charset` is `utf-16le`, `utf-16be` or `utf-16` (whose byte order, without a mark, the
/// first character shows, else big-endian); or, with no charset named, by the zero bytes of
/// its first two characters, which are ASCII, where the type says text (JSON, XML, HTML, a
/// form, `text/…`) or there is no type and the first character opens a document (`{`, `[`,
/// `<`), as JSON's RFC 4627 and XML tell UTF-16. A lone surrogate, or an odd byte at the end,
/// is U+FFFD, one unit each, so a character's place in the text maps back to its bytes.
///
/// The sanitizer records such a body as base64 of its bytes (with its secrets replaced in the
/// text, then written back in UTF-16): `kit-cli audit` searches base64 as this text too (with
/// no type to go by), and `kit-cli export --har` shows such a body as this text.
///
/// ```
/// use kit_core::redact::utf16_text;
///
/// assert_eq!(utf16_text(None, b"\xff\xfeo\0k\0").as_deref(), Some("ok"));
/// assert_eq!(utf16_text(None, b"\xfe\xff\0o\0k").as_deref(), Some("ok"));
/// let xml = Some("text/xml; charset=utf-16le");
/// assert_eq!(utf16_text(xml, b"o\0k\0").as_deref(), Some("ok"));
/// // Without a mark or a charset: by the zeros, where a type says text or a document opens.
/// assert_eq!(utf16_text(Some("text/plain"), b"o\0k\0").as_deref(), Some("ok"));
/// assert_eq!(utf16_text(None, b"{\0}\0").as_deref(), Some("{}"));
/// assert_eq!(utf16_text(None, b"o\0k\0"), None);
/// assert_eq!(utf16_text(Some("image/png"), b"o\0k\0"), None);
/// ```
pub fn utf16_text(content_type: Option<&str>, bytes: &[u8]) -> Option<String> {
    Utf16::of(content_type, bytes).map(|utf16| utf16.decode(bytes))
}

/// Text read as Latin-1, as bytes again: each character up to U+00FF is its byte. What a rule
/// wrote beyond (none of the markers does) is written as UTF-8.
fn latin1_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match u8::try_from(u32::from(c)) {
            Ok(byte) => out.push(byte),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

impl RecordedBody {
    /// Bytes that are not text, as recorded.
    fn base64(bytes: &[u8]) -> Self {
        RecordedBody {
            text: base64::engine::general_purpose::STANDARD.encode(bytes).into(),
            base64: true,
        }
    }
}

/// Cuts `text` after `max_chars` characters and appends `... [N characters truncated]`.
pub fn truncate(mut text: String, max_chars: usize) -> String {
    cut(&mut text, max_chars);
    text
}

/// [`truncate`] in place; whether it cut.
fn cut(text: &mut String, max_chars: usize) -> bool {
    let Some((at, dropped)) = cut_point(text, max_chars) else {
        return false;
    };
    text.truncate(at);
    push_cut_marker(text, dropped);
    true
}

/// [`cut`] over text that may be borrowed: only what is kept is copied, so a 1 MiB body
/// cut at 64 KiB is not copied whole first.
fn cut_shared(text: &mut Cow<'_, str>, max_chars: usize) -> bool {
    let borrowed = match text {
        Cow::Owned(owned) => return cut(owned, max_chars),
        Cow::Borrowed(borrowed) => *borrowed,
    };
    let Some((at, dropped)) = cut_point(borrowed, max_chars) else {
        return false;
    };
    let mut kept = String::with_capacity(at + CUT_MARKER_ROOM);
    kept.push_str(&borrowed[..at]);
    push_cut_marker(&mut kept, dropped);
    *text = Cow::Owned(kept);
    true
}

/// Room for `... [N characters truncated]` with any `N`.
const CUT_MARKER_ROOM: usize = "... [18446744073709551615 characters truncated]".len();

/// Where `text` is cut to keep `max_chars` characters, and how many characters go; `None`
/// when it is no longer than that.
fn cut_point(text: &str, max_chars: usize) -> Option<(usize, usize)> {
    // No more bytes than allowed characters: nothing to count.
    if text.len() <= max_chars {
        return None;
    }
    let (at, _) = text.char_indices().nth(max_chars)?;
    Some((at, text[at..].chars().count()))
}

/// Appends the marker that says how many characters a cut dropped.
fn push_cut_marker(text: &mut String, dropped: usize) {
    text.push_str("... [");
    text.push_str(itoa::Buffer::new().format(dropped));
    text.push_str(" characters truncated]");
}

/// Redacts what the kit records. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sanitizer {
    rules: Arc<Rules>,
    redact: bool,
    /// Credentials known by their form are redacted (rule 10), with `redact` only.
    forms: bool,
    max_body_chars: usize,
    secrets: Arc<SecretRegistry>,
}

impl Sanitizer {
    /// A sanitizer with the lists, switch and cap of `options`, remembering what it redacts in
    /// `secrets`.
    pub fn new(options: &KitHttpAttachmentOptions, secrets: Arc<SecretRegistry>) -> Self {
        Sanitizer {
            rules: Arc::new(Rules::new(
                &options.sensitive_headers,
                &options.sensitive_query_parameters,
                &options.sensitive_json_properties,
            )),
            redact: options.redact_sensitive_data,
            forms: options.redact_credential_forms,
            max_body_chars: options.max_diagnostic_body_length,
            secrets,
        }
    }

    /// A sanitizer for JSON diagnostics of protocols without headers or URLs (the HTTP lists
    /// are the defaults).
    pub fn for_json(options: &JsonDiagnosticOptions, secrets: Arc<SecretRegistry>) -> Self {
        let mut http = KitHttpAttachmentOptions::default();
        http.redact_sensitive_data = options.redact_sensitive_data;
        http.redact_credential_forms = options.redact_credential_forms;
        http.max_diagnostic_body_length = options.max_diagnostic_body_length;
        http.sensitive_json_properties
            .clone_from(&options.sensitive_json_properties);
        Self::new(&http, secrets)
    }

    /// The same rules, switch and cap, remembering what it redacts in `secrets` instead: a
    /// sanitizer made once from options serves every run and test with their own registry,
    /// sharing its rules (and so [`is_same`](Self::is_same) as any other made so for `secrets`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kit_core::KitHttpAttachmentOptions;
    /// use kit_core::redact::{Sanitizer, SecretRegistry};
    ///
    /// let template = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// let run_secrets = Arc::new(SecretRegistry::new());
    /// let a = template.with_secrets(Arc::clone(&run_secrets));
    /// let b = template.with_secrets(Arc::clone(&run_secrets));
    /// assert!(a.is_same(&b));
    /// assert!(!a.is_same(&template));
    /// assert_eq!(a.header("Authorization", &["Bearer abc"]), "[REDACTED]");
    /// ```
    pub fn with_secrets(&self, secrets: Arc<SecretRegistry>) -> Self {
        Sanitizer {
            rules: Arc::clone(&self.rules),
            redact: self.redact,
            forms: self.forms,
            max_body_chars: self.max_body_chars,
            secrets,
        }
    }

    /// The same sanitizer with another body cap (for a message that must respect the smaller
    /// of two caps).
    pub fn with_max_body_length(mut self, max_chars: usize) -> Self {
        self.max_body_chars = max_chars;
        self
    }

    /// The body cap, in characters.
    pub fn max_body_length(&self) -> usize {
        self.max_body_chars
    }

    /// Whether sensitive data is redacted (user-info is removed regardless).
    pub fn redacts(&self) -> bool {
        self.redact
    }

    /// The rules.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The registry of known secrets.
    pub fn secrets(&self) -> &Arc<SecretRegistry> {
        &self.secrets
    }

    /// Whether `other` is this sanitizer or a clone of it: the same rules, switch, cap and
    /// registry, so that, with no secret learnt in between, both sanitize a text alike. A
    /// caller that keeps a clone beside what it sanitized can reuse the result.
    ///
    /// ```
    /// use kit_core::{KitHttpAttachmentOptions, redact::{Sanitizer, SecretRegistry}};
    /// use std::sync::Arc;
    ///
    /// let a = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// let b = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// assert!(a.is_same(&a.clone()));
    /// assert!(!a.is_same(&b));
    /// ```
    pub fn is_same(&self, other: &Sanitizer) -> bool {
        Arc::ptr_eq(&self.rules, &other.rules)
            && Arc::ptr_eq(&self.secrets, &other.secrets)
            && self.redact == other.redact
            && self.forms == other.forms
            && self.max_body_chars == other.max_body_chars
    }

    fn remember(&self) -> impl FnMut(&str) + '_ {
        move |value: &str| {
            self.secrets.remember(value);
        }
    }

    /// `text` with known secrets replaced (rule 8), as JSON if `json` says so, after the
    /// credentials it holds by their form (rule 10) are remembered: replaced here and wherever
    /// they turn up later.
    ///
    /// A replacement can make a credential's form of what it leaves: `…J9xoxb-…` holds no
    /// Slack token (its prefix is inside a word), but with the word before it replaced it
    /// does. What comes out is searched again, up to [`FORM_PASSES`] times, so that what the
    /// sanitizer writes holds no credential by its form, as `kit-cli audit` looks for them. A
    /// text with nothing replaced costs no second search.
    fn replace_known_and_forms<'t>(&self, text: &'t str, json: bool) -> Cow<'t, str> {
        self.replace_known_and_forms_with(text, |text: &str| {
            let replaced = if json {
                self.secrets.replace_known_in_json(text)
            } else {
                self.secrets.replace_known(text)
            };
            match replaced {
                Cow::Owned(replaced) => Some(replaced),
                Cow::Borrowed(_) => None,
            }
        })
    }

    /// [`replace_known_and_forms`](Self::replace_known_and_forms) on bytes that are not text
    /// (a binary body): a credential's bytes are ASCII, so a protocol buffer's or a
    /// zip's stored token is found as a text's is.
    fn replace_known_and_forms_in_bytes<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        self.replace_known_and_forms_with(bytes, |bytes: &[u8]| {
            match self.secrets.replace_known_bytes(bytes) {
                Cow::Owned(replaced) => Some(replaced),
                Cow::Borrowed(_) => None,
            }
        })
    }

    /// The passes of [`replace_known_and_forms`](Self::replace_known_and_forms), for text or
    /// bytes: `replace` replaces the known secrets, or says there was none.
    fn replace_known_and_forms_with<'t, T>(
        &self,
        text: &'t T,
        replace: impl Fn(&T) -> Option<T::Owned>,
    ) -> Cow<'t, T>
    where
        T: ?Sized + ToOwned + AsRef<[u8]>,
    {
        if self.forms {
            formats::credentials_in(text.as_ref(), &mut self.remember());
        }
        let Some(mut replaced) = replace(text) else {
            return Cow::Borrowed(text);
        };
        // Without rule 10 no pass is made: what a replacement or a cut makes of a form is
        // left, as every other form is.
        let passes = if self.forms { FORM_PASSES } else { 0 };
        for _ in 0..passes {
            let mut met_new = false;
            formats::credentials_in(replaced.borrow().as_ref(), &mut |credential| {
                met_new |= self.secrets.remember(credential);
            });
            // Nothing new, nothing more to replace: the known secrets were, just now.
            if !met_new {
                break;
            }
            match replace(replaced.borrow()) {
                Some(again) => replaced = again,
                None => break,
            }
        }
        Cow::Owned(replaced)
    }

    /// A URL without user-info and, with redaction on, with sensitive query values redacted
    /// and known secrets replaced.
    pub fn url(&self, url: &str) -> String {
        self.url_naming(url, &[])
    }

    /// [`url`](Self::url), the query parameters `also` names redacted as well (compared without
    /// case, as the lists are): a credential a test sends under a name the lists do not hold
    /// (`X-Amz-Signature`, `sig`). Their values become known secrets, as a listed parameter's
    /// do. With redaction off it is [`url`](Self::url).
    ///
    /// ```
    /// use kit_core::{KitHttpAttachmentOptions, redact::{Sanitizer, SecretRegistry}};
    /// use std::sync::Arc;
    ///
    /// let sanitizer = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// let url = "https://bucket.example/k?X-Amz-Signature=5f1c0e9a77&token=t0k3n-123&page=2";
    /// assert_eq!(
    ///     sanitizer.url_naming(url, &["x-amz-signature"]),
    ///     "https://bucket.example/k?X-Amz-Signature=[REDACTED]&token=[REDACTED]&page=2"
    /// );
    /// assert_eq!(sanitizer.text("signed 5f1c0e9a77"), "signed [REDACTED]");
    /// ```
    pub fn url_naming(&self, url: &str, also: &[&str]) -> String {
        let sanitized =
            url::sanitize_url_naming(url, &self.rules, also, self.redact, &mut self.remember(), 0);
        if self.redact {
            self.replace_known_and_forms(&sanitized, false).into_owned()
        } else {
            sanitized
        }
    }

    /// One header's values as recorded: joined with `, `, or `[REDACTED]` for a sensitive
    /// header (whose values, and the credentials in them, become known secrets).
    pub fn header(&self, name: &str, values: &[&str]) -> String {
        if self.redact && self.rules.is_sensitive_header(name) {
            for value in values {
                self.remember_header_value(name, value);
            }
            return REDACTED.to_owned();
        }
        // Nearly every header has one value: it is not joined into a copy first.
        let url_kind = url::UrlHeader::of(name);
        let joined: Cow<'_, str> = match (url_kind, values) {
            // Each value on its own, as a URL may hold ", " itself; known secrets are replaced
            // below, in the URLs and in what lies outside a Link's brackets alike.
            (Some(kind), _) => Cow::Owned(
                values
                    .iter()
                    .map(|value| {
                        kind.sanitize(value, &mut |u| {
                            url::sanitize_url(u, &self.rules, self.redact, &mut self.remember())
                        })
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (None, [one]) => Cow::Borrowed(one),
            (None, _) => Cow::Owned(values.join(", ")),
        };
        if !self.redact {
            return joined.into_owned();
        }
        // Any other header's value is read as prose for URLs (rules 2 and 3): a callback's
        // address, a proxy's forwarded URI, a warning's link, a debug header's bare pair. A URL
        // or a pair with something to redact holds `?`, `#`, `@`, `%` or `=`; most values (a
        // date, a type, a length) hold none.
        let joined = match joined {
            // A form's pairs (`X-Original-Body: grant_type=password&password=…`) as a form.
            joined if url_kind.is_none() && may_be_form(joined.as_bytes()) => {
                match carried_form(&joined, &self.rules, &mut self.remember(), 0) {
                    Cow::Owned(sanitized) => Cow::Owned(sanitized),
                    Cow::Borrowed(_) => joined,
                }
            }
            joined if url_kind.is_none() && holds_any(joined.as_bytes(), [b'?', b'#', b'@', b'%', b'=']) => {
                match url::redact_urls_in_text(&joined, &self.rules, &mut self.remember(), 0) {
                    Cow::Owned(sanitized) => Cow::Owned(sanitized),
                    Cow::Borrowed(_) => joined,
                }
            }
            joined => joined,
        };
        if let Cow::Owned(replaced) = self.replace_known_and_forms(&joined, false) {
            return replaced;
        }
        joined.into_owned()
    }

    fn remember_header_value(&self, name: &str, value: &str) {
        header_value_secrets(name, value, &mut |secret| {
            self.secrets.remember(secret);
        });
    }

    /// A header value its sender marked sensitive (`http::HeaderValue::set_sensitive`), under
    /// any name: with redaction on it is `[REDACTED]`, and it (and the credential after a
    /// scheme word) becomes a known secret, as a listed header's value does. With redaction off
    /// it is `value`, as a listed header's would be.
    ///
    /// The lists name the headers every API uses; a value marked where it was set covers the
    /// ones they cannot know (`X-Auth-Token`, `X-Vault-Token`, a signature a custom scheme adds),
    /// and leaves everything else under those names, such as a `Set-Cookie` a test wants to
    /// read, as recorded.
    ///
    /// ```
    /// use kit_core::{KitHttpAttachmentOptions, redact::{Sanitizer, SecretRegistry}};
    /// use std::sync::Arc;
    ///
    /// let sanitizer = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// assert_eq!(sanitizer.marked_header_value("X-Auth-Token", b"t0k-5e3c7e7"), b"[REDACTED]");
    /// // Known from now on, wherever it is echoed.
    /// assert_eq!(sanitizer.text("token t0k-5e3c7e7 accepted"), "token [REDACTED] accepted");
    /// ```
    pub fn marked_header_value<'v>(&self, name: &str, value: &'v [u8]) -> &'v [u8] {
        if !self.redact {
            return value;
        }
        self.remember_header_value(name, &String::from_utf8_lossy(value));
        REDACTED.as_bytes()
    }

    /// Headers as recorded: one entry per name in order of first appearance, repeated values
    /// joined, sensitive ones redacted. Names are kept as given.
    pub fn headers<'h>(
        &self,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
    ) -> Vec<(String, String)> {
        let mut shown = Vec::new();
        self.headers_with(headers, |name, value| shown.push((name.to_owned(), value)));
        shown
    }

    /// [`headers`](Self::headers), handing each name and recorded value to `each` instead of
    /// collecting them: a caller that makes its own key from the name need not copy it first.
    ///
    /// ```
    /// use kit_core::{KitHttpAttachmentOptions, redact::{Sanitizer, SecretRegistry}};
    /// use std::sync::Arc;
    ///
    /// let sanitizer = Sanitizer::new(&KitHttpAttachmentOptions::default(), Arc::new(SecretRegistry::new()));
    /// let headers = [("accept", &b"*/*"[..]), ("authorization", b"Bearer t0k"), ("Accept", b"text/plain")];
    /// let mut shown = Vec::new();
    /// sanitizer.headers_with(headers, |name, value| shown.push(format!("{name}: {value}")));
    /// assert_eq!(shown, ["accept: */*, text/plain", "authorization: [REDACTED]"]);
    /// ```
    pub fn headers_with<'h>(
        &self,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
        mut each: impl FnMut(&'h str, String),
    ) {
        let mut grouped: Vec<(&'h str, Vec<Cow<'h, str>>)> = Vec::new();
        for (name, value) in headers {
            // Borrowed unless the bytes are not UTF-8.
            let value = String::from_utf8_lossy(value);
            match grouped.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some((_, values)) => values.push(value),
                None => grouped.push((name, vec![value])),
            }
        }
        for (name, values) in grouped {
            let shown = match values.as_slice() {
                [one] => self.header(name, &[one.as_ref()]),
                _ => {
                    let refs: Vec<&str> = values.iter().map(AsRef::as_ref).collect();
                    self.header(name, &refs)
                }
            };
            each(name, shown);
        }
    }

    /// A body as recorded: redacted by its structure, then by known secrets, then cut at the
    /// cap. Text in UTF-16 (by its byte-order mark, its type's `charset` or its zeros: see
    /// [`utf16_text`]) is read as such; other bytes that are not UTF-8 are replaced (U+FFFD).
    pub fn body(&self, content_type: Option<&str>, body: &[u8]) -> String {
        if let Some(utf16) = Utf16::of(content_type, body) {
            return self.text_body(content_type, &utf16.decode(body)).into_owned();
        }
        match std::str::from_utf8(body) {
            Ok(text) => self.text_body(content_type, text).into_owned(),
            // `from_utf8_lossy` walks valid text several times slower than `from_utf8`, so it
            // is kept for the bodies that need it.
            Err(_) => self
                .text_body(content_type, &String::from_utf8_lossy(body))
                .into_owned(),
        }
    }

    /// [`body`](Self::body) for a body that is text already: borrowed when nothing in it
    /// changes, as in most bodies, so that its one copy is the one its caller keeps.
    fn text_body<'t>(&self, content_type: Option<&str>, text: &'t str) -> Cow<'t, str> {
        if !self.redact {
            let mut kept = Cow::Borrowed(text);
            cut_shared(&mut kept, self.max_body_chars);
            return kept;
        }
        if text.is_empty() {
            return Cow::Borrowed(text);
        }
        let kind = body_kind(content_type, text);
        let json = kind == BodyKind::Json;
        let redacted = self.structured_as(kind, text, 0);
        let mut replaced = match self.replace_known_and_forms(&redacted, json) {
            Cow::Borrowed(_) => redacted,
            Cow::Owned(replaced) => Cow::Owned(replaced),
        };
        // A cut can make a credential's form of what it keeps: the marker's dots end a JWT's
        // payload as an unsecured token's empty signature does (`eyJ….eyJ…... [9 characters
        // truncated]`), or lengthen a SendGrid key's run. What it makes is replaced; being 20
        // bytes or more, it is longer than `[REDACTED]` (a PEM key, which may be shorter,
        // cannot be made so: no dot is part of a key).
        if cut_shared(&mut replaced, self.max_body_chars)
            && let Cow::Owned(again) = self.replace_known_and_forms(&replaced, false)
        {
            replaced = Cow::Owned(again);
        }
        replaced
    }

    /// A body as the trace keeps it: [`body`](Self::body) when it is UTF-8 text; otherwise
    /// the bytes themselves, redacted by their structure where their type gives one (a
    /// multipart upload part by part; text in UTF-16 as the text it stands for, kept as bytes
    /// though ASCII in UTF-16 is UTF-8 too; JSON, XML, HTML or a form read as Latin-1), known
    /// secrets and credentials by their form (rule 10) replaced, cut at the cap (in bytes)
    /// and base64 encoded, so a binary body survives to exports (HAR) whole instead of as
    /// U+FFFD.
    pub fn recorded_body(&self, content_type: Option<&str>, body: &[u8]) -> RecordedBody {
        // UTF-16 text of ASCII is UTF-8 too (its zero bytes are NULs), and would be read as
        // text whose names no rule finds: it is kept as the bytes it is.
        let utf16 = Utf16::of(content_type, body);
        if let (None, Ok(text)) = (utf16, std::str::from_utf8(body)) {
            return RecordedBody {
                text: Arc::from(&*self.text_body(content_type, text)),
                base64: false,
            };
        }
        if !self.redact {
            return RecordedBody::base64(&body[..body.len().min(self.max_body_chars)]);
        }
        let structured = match utf16 {
            Some(utf16) => self.utf16_bytes(utf16, content_type, body, 0),
            None => self.structured_bytes(content_type, body, 0),
        };
        // Over UTF-16 too: a body its type calls UTF-16 that is not (UTF-8 under a wrong
        // label) reads as other characters, and its known secrets are found as bytes.
        let replaced = self.replace_known_and_forms_in_bytes(&structured);
        // Unlike text's, this cut adds no marker, whose dots could end a JWT's payload: it
        // only shortens the last run of bytes, and no form is made by shortening one.
        RecordedBody::base64(&replaced[..replaced.len().min(self.max_body_chars)])
    }

    /// `text` redacted as its kind; `depth` counts the multipart bodies it is inside.
    fn structured<'t>(&self, content_type: Option<&str>, text: &'t str, depth: u8) -> Cow<'t, str> {
        self.structured_as(body_kind(content_type, text), text, depth)
    }

    /// [`structured`](Self::structured) with the kind worked out.
    fn structured_as<'t>(&self, kind: BodyKind, text: &'t str, depth: u8) -> Cow<'t, str> {
        let rules = &*self.rules;
        let mut found = self.remember();
        match kind {
            BodyKind::Json => json_body(text, rules, &mut found, 0),
            BodyKind::Markup { html } => Cow::Owned(markup::redact_xml(text, html, rules, &mut found, 0)),
            BodyKind::Form => Cow::Owned(url::redact_pairs(
                text,
                '&',
                &|n| rules.is_sensitive_field(n),
                rules,
                &mut found,
                0,
            )),
            BodyKind::Multipart(boundary) if depth < MULTIPART_NESTING => Cow::Owned(
                markup::redact_multipart(text, boundary.as_deref(), rules, &mut found, &mut |ct, part| {
                    self.part(ct, part, depth)
                }),
            ),
            BodyKind::Multipart(_) | BodyKind::Text => Cow::Owned(text_with_urls(
                json::redact_text_fallback(text, rules, &mut found),
                rules,
                &mut found,
                0,
            )),
        }
    }

    /// A multipart body's part that is not sensitive by its name, in a body `depth` deep: a
    /// part with a type of its own is redacted as that type; a plain field that holds a JSON
    /// document (a file's `metadata`, posted as `-F 'meta={…}'` posts it) as JSON; any other
    /// plain field is kept, but for the URLs written in it.
    fn part(&self, content_type: Option<&str>, part: &str, depth: u8) -> String {
        // UTF-16 of ASCII is UTF-8 too: read as the text it stands for, and written back so.
        if let Some(utf16) = Utf16::of(content_type, part.as_bytes()) {
            let bytes = self.utf16_bytes(utf16, content_type, part.as_bytes(), depth + 1);
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        match content_type {
            Some(ct) => self.structured(Some(ct), part, depth + 1).into_owned(),
            None if opens_document(part.as_bytes()) => {
                self.structured_as(BodyKind::Json, part, depth + 1).into_owned()
            }
            None => url::redact_urls_in_text(part, &self.rules, &mut self.remember(), 0).into_owned(),
        }
    }

    /// A body that is not UTF-8, redacted by its structure where it has one to read in bytes:
    ///
    /// - a multipart upload, whose file parts may be binary beside text fields (a `password`,
    ///   a JSON `metadata`), each of which is redacted as in a body of text;
    /// - a body its type says is JSON, XML, HTML or a form, written in another encoding than
    ///   UTF-8 (an ISO-8859-1 SOAP message, a Windows-1252 page, a form posted as Latin-1):
    ///   read as Latin-1, which maps each byte to one character and back, so its names, which
    ///   are ASCII, are found, and what no rule changes comes out byte for byte.
    ///
    /// Text in UTF-16 is told by its callers ([`Utf16::of`]) and read by
    /// [`utf16_bytes`](Self::utf16_bytes).
    fn structured_bytes<'b>(&self, content_type: Option<&str>, bytes: &'b [u8], depth: u8) -> Cow<'b, [u8]> {
        let kind = match content_type.and_then(declared_kind) {
            Some(kind) => kind,
            // Without a type, as a body of text is read: a `--` line, then a disposition.
            None if opens_multipart(bytes.trim_ascii_start()) => BodyKind::Multipart(None),
            // Bytes of no declared kind are not guessed at: an image is no form.
            None => return Cow::Borrowed(bytes),
        };
        match kind {
            BodyKind::Multipart(boundary) if depth < MULTIPART_NESTING => {
                Cow::Owned(markup::redact_multipart_bytes(
                    bytes,
                    boundary.as_deref(),
                    &self.rules,
                    &mut self.remember(),
                    &mut |ct, part| match (Utf16::of(ct, part), std::str::from_utf8(part)) {
                        (Some(utf16), _) => self.utf16_bytes(utf16, ct, part, depth + 1).into_owned(),
                        (None, Ok(text)) => self.part(ct, text, depth).into_bytes(),
                        (None, Err(_)) => self.structured_bytes(ct, part, depth + 1).into_owned(),
                    },
                ))
            }
            BodyKind::Multipart(_) | BodyKind::Text => Cow::Borrowed(bytes),
            kind => {
                let json = kind == BodyKind::Json;
                let latin1: String = bytes.iter().copied().map(char::from).collect();
                let redacted = self.structured_as(kind, &latin1, depth);
                // Known secrets as characters too: a password of `ä`s met under its name here
                // is the same characters where the body repeats it, not the same bytes as its
                // UTF-8, which the caller replaces.
                let unchanged = matches!(redacted, Cow::Borrowed(_));
                match self.replace_known_and_forms(&redacted, json) {
                    Cow::Borrowed(_) if unchanged => Cow::Borrowed(bytes),
                    replaced => Cow::Owned(latin1_bytes(&replaced)),
                }
            }
        }
    }

    /// A body of text in UTF-16 (see [`Utf16::of`]), redacted as the text it is, then written
    /// in UTF-16 again, in its byte order, after its byte-order mark if it had one: what no
    /// rule changes comes out as it was, but for a lone surrogate or an odd byte at the end,
    /// which come out U+FFFD where anything else changed.
    fn utf16_bytes<'b>(
        &self,
        utf16: Utf16,
        content_type: Option<&str>,
        bytes: &'b [u8],
        depth: u8,
    ) -> Cow<'b, [u8]> {
        let text = utf16.decode(bytes);
        let kind = body_kind(content_type, &text);
        let json = kind == BodyKind::Json;
        let redacted = self.structured_as(kind, &text, depth);
        let replaced = self.replace_known_and_forms(&redacted, json);
        // Compared, not told by `Cow`: the markup and form rules write a new text whether or
        // not they change it, and what they keep must keep its bytes.
        if *replaced == *text {
            Cow::Borrowed(bytes)
        } else {
            Cow::Owned(utf16.encode(bytes, &replaced))
        }
    }

    /// Free text (a failure message) with known secrets replaced and, with redaction on, any
    /// `"sensitive": "value"` patterns redacted and the URLs written in it sanitized (rules 2
    /// and 3). Not truncated.
    pub fn text(&self, text: &str) -> String {
        if !self.redact {
            return text.to_owned();
        }
        let mut found = self.remember();
        let patterned = json::redact_text_fallback(text, &self.rules, &mut found);
        let patterned = text_with_urls(patterned, &self.rules, &mut found, 0);
        self.replace_known_and_forms(&patterned, false).into_owned()
    }
}

#[cfg(test)]
mod tests;
