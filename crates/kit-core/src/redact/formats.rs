//! Credentials known by their form, whatever name carries them (rule 10).
//!
//! The rules before this one find a secret by the name it is given: a header, a query
//! parameter, a JSON member, a form field. A credential under a name no list can hold passes
//! them: a GraphQL sign-in's `{"data":{"login":"eyJ…"}}`, a configuration's
//! `"private_key": "-----BEGIN PRIVATE KEY-----…"`, a CI variable's `"value": "ghp_…"`, a
//! webhook's `"signing": "whsec_…"`. Many credentials say what they are by their form: a
//! JSON Web Token's header is base64url JSON that names its algorithm, a PEM block says
//! `PRIVATE KEY`, and GitHub, GitLab, Stripe, Slack, Google, npm, PyPI, SendGrid, OpenAI and
//! Anthropic give their tokens a prefix for secret scanners to find them by (GitHub's
//! `ghp_`, Stripe's `sk_live_`). This finds those forms in recorded text, so that the
//! sanitizer remembers each as a known secret (rule 8): replaced where it was found, and
//! everywhere it turns up afterwards.
//!
//! Only forms that a value of another kind does not take are listed: an AWS access key id
//! (`AKIA…`) names a key and is not one, and a bare 40-character hex string may be a commit.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind, packed};
use base64::Engine as _;
use memchr::memmem;

use super::MIN_SECRET_LEN;

/// A credential's form: the prefix it begins with, what must follow it, and what it is.
struct Form {
    prefix: &'static str,
    check: Check,
    /// What a credential of this form is, for a report that must not show it.
    what: &'static str,
}

/// What a form asks of what follows its prefix.
#[derive(Clone, Copy)]
enum Check {
    /// At least `min` bytes that `body` accepts.
    Run { body: fn(u8) -> bool, min: usize },
    /// A JSON Web Token: three or more dot-separated base64url parts, the first a JSON header
    /// naming its algorithm (`{"alg":…}`).
    Jwt,
    /// A PEM block whose label names a private key, to its end line.
    PrivateKey,
}

/// A JWT's bytes after its `eyJ`, at least: the shortest header, `{"alg":"none"}`, is 16 more,
/// and a payload and dots follow it.
const JWT_MIN: usize = 17;

fn is_alphanumeric(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Base64url's bytes, which also make up most prefixed tokens' bodies.
fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'='
}

/// Base64url parts and the dots between them: a JWT's, a SendGrid key's.
fn is_dotted_base64url(b: u8) -> bool {
    is_base64url(b) || b == b'.'
}

#[rustfmt::skip]
const FORMS: &[Form] = &[
    // A JWT's header is `{"` and more, base64url encoded: `eyJ`.
    Form { prefix: "eyJ", check: Check::Jwt, what: "a JSON Web Token" },
    Form { prefix: "-----BEGIN ", check: Check::PrivateKey, what: "a PEM private key" },
    // GitHub: personal, OAuth, user-to-server, server-to-server and refresh tokens, then the
    // fine-grained personal token.
    Form { prefix: "ghp_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "a GitHub token" },
    Form { prefix: "gho_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "a GitHub token" },
    Form { prefix: "ghu_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "a GitHub token" },
    Form { prefix: "ghs_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "a GitHub token" },
    Form { prefix: "ghr_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "a GitHub token" },
    Form { prefix: "github_pat_", check: Check::Run { body: is_base64url, min: 60 }, what: "a GitHub token" },
    // GitLab's personal, project and group access tokens.
    Form { prefix: "glpat-", check: Check::Run { body: is_base64url, min: 20 }, what: "a GitLab token" },
    // Stripe's secret and restricted keys, live and test, and a webhook's signing secret.
    Form { prefix: "sk_live_", check: Check::Run { body: is_alphanumeric, min: 20 }, what: "a Stripe key" },
    Form { prefix: "sk_test_", check: Check::Run { body: is_alphanumeric, min: 20 }, what: "a Stripe key" },
    Form { prefix: "rk_live_", check: Check::Run { body: is_alphanumeric, min: 20 }, what: "a Stripe key" },
    Form { prefix: "rk_test_", check: Check::Run { body: is_alphanumeric, min: 20 }, what: "a Stripe key" },
    Form { prefix: "whsec_", check: Check::Run { body: is_base64, min: 24 }, what: "a webhook signing secret" },
    // Slack's bot, user, app-level, refresh and configuration tokens.
    Form { prefix: "xoxb-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    Form { prefix: "xoxp-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    Form { prefix: "xoxa-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    Form { prefix: "xoxr-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    Form { prefix: "xoxe-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    Form { prefix: "xapp-", check: Check::Run { body: is_base64url, min: 20 }, what: "a Slack token" },
    // A Google API key.
    Form { prefix: "AIza", check: Check::Run { body: is_base64url, min: 35 }, what: "a Google API key" },
    // npm's and PyPI's publishing tokens.
    Form { prefix: "npm_", check: Check::Run { body: is_alphanumeric, min: 36 }, what: "an npm token" },
    Form { prefix: "pypi-AgE", check: Check::Run { body: is_base64url, min: 50 }, what: "a PyPI token" },
    // SendGrid's: two base64url parts after `SG.`, joined by a dot.
    Form { prefix: "SG.", check: Check::Run { body: is_dotted_base64url, min: 60 }, what: "a SendGrid key" },
    // OpenAI's (`sk-…`, `sk-proj-…`) and Anthropic's (`sk-ant-…`) API keys: long enough not
    // to be a slug.
    Form { prefix: "sk-", check: Check::Run { body: is_base64url, min: 32 }, what: "an OpenAI or Anthropic key" },
];

/// Finds the forms' prefixes, leftmost first. Teddy is called directly rather than as an
/// `AhoCorasick`'s prefilter, which it would be: on 20 000 header-sized texts (the sanitizer
/// looks at every header value and URL) the automaton took 1.6–2.3 times as long (on 1 MiB,
/// the same), issue 9's fifty-third stop.
enum Prefixes {
    /// Teddy, SIMD, as the sanitizer's name searches are.
    Packed(packed::Searcher),
    /// Where no SIMD searcher can be built: never no search at all.
    Automaton(AhoCorasick),
}

impl Prefixes {
    fn new() -> Option<Self> {
        let prefixes = FORMS.iter().map(|f| f.prefix);
        packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(prefixes.clone())
            .build()
            .map(Prefixes::Packed)
            .or_else(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(prefixes)
                    .ok()
                    .map(Prefixes::Automaton)
            })
    }

    /// Where the first prefix in `haystack` starts, and its form's index.
    fn find(&self, haystack: &[u8]) -> Option<(usize, usize)> {
        match self {
            Prefixes::Packed(searcher) => searcher
                .find(haystack)
                .map(|m| (m.start(), m.pattern().as_usize())),
            Prefixes::Automaton(automaton) => automaton
                .find(haystack)
                .map(|m| (m.start(), m.pattern().as_usize())),
        }
    }
}

static PREFIXES: LazyLock<Option<Prefixes>> = LazyLock::new(Prefixes::new);

/// The fewest bytes any form takes: a JWT's `eyJ` and [`JWT_MIN`] more.
const SHORTEST: usize = 20;

/// The longest PEM label looked at (`ENCRYPTED PRIVATE KEY`, `OPENSSH PRIVATE KEY`).
const LONGEST_LABEL: usize = 40;

/// How far a PEM block's end is looked for: a 16 384-bit RSA key is some 12 KiB.
const LONGEST_PEM: usize = 64 * 1024;

/// Calls `found` with each credential written in `bytes` (a text's, or a binary body's), as
/// written there. A credential in a JSON string keeps its escapes (`\n` in a PEM block, `\/`
/// where an encoder escapes `/`), which is the form
/// [`replace_known_in_json`](super::SecretRegistry::replace_known_in_json) looks for in the
/// same text.
pub(crate) fn credentials_in(bytes: &[u8], found: &mut dyn FnMut(&str)) {
    let mut at = 0;
    while let Some((span, _)) = next_credential(bytes, at) {
        // A credential's bytes are ASCII (a PEM key's line ends too), so in text its span
        // lies on character boundaries, and in bytes that are not text it is text itself.
        if let Ok(credential) = std::str::from_utf8(&bytes[span.clone()]) {
            found(credential);
        }
        at = span.end.max(at + 1);
    }
}

/// A credential found in bytes by its form: where it is and what it is, never what it says.
///
/// ```
/// use kit_core::redact::first_credential;
///
/// let line = br#"{"attachment":"token: ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"}"#;
/// let found = first_credential(line).unwrap();
/// assert_eq!((found.offset, found.len, found.what), (22, 40, "a GitHub token"));
/// assert!(first_credential(b"sk_live_short, eyJ-not-a-token").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialForm {
    /// Byte offset of the credential in the bytes searched (for a PEM private key, of its
    /// first line after `-----BEGIN … PRIVATE KEY-----`).
    pub offset: usize,
    /// Its length in bytes.
    pub len: usize,
    /// What it is, by its form: `"a JSON Web Token"`, `"a GitHub token"`, `"a PEM private
    /// key"`, ….
    pub what: &'static str,
}

/// The first credential in `bytes` known by its form, whatever name carries it: the forms
/// the sanitizer's rule 10 redacts (`docs/redaction.md`). `kit-cli audit` searches every
/// entry of an archive with it, so a credential that reached the archive without passing the
/// sanitizer is found though the run never met it. Bytes that are not UTF-8 are searched as
/// they are.
pub fn first_credential(bytes: &[u8]) -> Option<CredentialForm> {
    next_credential(bytes, 0).map(|(span, form)| CredentialForm {
        offset: span.start,
        len: span.len(),
        what: form.what,
    })
}

/// The first credential in `bytes` whose prefix starts at `from` or after, and its form.
fn next_credential(bytes: &[u8], mut from: usize) -> Option<(std::ops::Range<usize>, &'static Form)> {
    // Most header values, URLs' parts and short messages are shorter than any credential.
    if bytes.len() < SHORTEST {
        return None;
    }
    let searcher = PREFIXES.as_ref()?;
    while from < bytes.len() {
        let (offset, which) = searcher.find(&bytes[from..])?;
        let start = from + offset;
        let form = &FORMS[which];
        match credential_at(bytes, start, form) {
            Some(span) => return Some((span, form)),
            None => from = start + 1,
        }
    }
    None
}

/// The credential of `form` whose prefix starts at `start`, if one is there.
fn credential_at(bytes: &[u8], start: usize, form: &Form) -> Option<std::ops::Range<usize>> {
    let (body, min): (fn(u8) -> bool, usize) = match form.check {
        Check::PrivateKey => return private_key_at(bytes, start),
        Check::Jwt => (is_dotted_base64url, JWT_MIN),
        Check::Run { body, min } => (body, min),
    };
    // A prefix inside a longer word (`task-…`, an id ending `…eyJ`) starts no credential,
    // unless what stands before it is the length of a string that is one.
    if start > 0 && is_dotted_base64url(bytes[start - 1]) {
        return length_prefixed(bytes, start)
            .find_map(|len| credential_filling(&bytes[start..], len, form, body, min))
            .map(|len| start..start + len);
    }
    let body_start = start + form.prefix.len();
    let end = body_start + bytes[body_start..].iter().take_while(|&&b| body(b)).count();
    if end - body_start < min {
        return None;
    }
    match form.check {
        Check::Jwt => jwt(&bytes[start..end]).map(|len| start..start + len),
        _ => Some(start..end),
    }
}

/// The lengths the bytes before `start` may give the string that starts there, read as a
/// binary format writes a string's length in front of it: a byte (a protocol buffer's or
/// Thrift's varint under 128, MessagePack's `str8`, CBOR's `0x78`), two bytes of varint, and
/// either as Avro's zigzag varint, which is twice the length.
///
/// A token that fills such a string follows its length with nothing between, and that
/// length is a letter or a digit as often as not: a legacy OpenAI key is 51 bytes long (`3`),
/// an Anthropic key 108 (`l`). Read as a word, the token would be inside one and go unseen.
fn length_prefixed(bytes: &[u8], start: usize) -> impl Iterator<Item = usize> {
    let last = usize::from(bytes[start - 1]);
    // A varint's earlier bytes have their high bit set; its last byte does not.
    let two_bytes = (start >= 2 && bytes[start - 2] >= 0x80 && last < 0x80)
        .then(|| usize::from(bytes[start - 2] & 0x7f) | (last << 7));
    [Some(last), two_bytes]
        .into_iter()
        .flatten()
        .flat_map(|varint| [Some(varint), (varint % 2 == 0).then_some(varint / 2)])
        .flatten()
}

/// The length of the credential of `form` that fills the first `len` bytes of `string` (at
/// its prefix), if they hold one: bytes of its body to the string's end, at least `min` of
/// them; a JSON Web Token may leave out dots it ends with.
fn credential_filling(
    string: &[u8],
    len: usize,
    form: &Form,
    body: fn(u8) -> bool,
    min: usize,
) -> Option<usize> {
    let string = string.get(..len)?;
    let token_body = string.get(form.prefix.len()..)?;
    if token_body.len() < min || !token_body.iter().all(|&b| body(b)) {
        return None;
    }
    match form.check {
        Check::Jwt => jwt(string),
        _ => Some(len),
    }
}

/// How long the JSON Web Token at the start of `run` is, if it is one: a header that decodes
/// to a JSON object naming `alg`, a payload, and a signature, which is empty when the header
/// says `"alg":"none"`. Dots the token ends with are left out: an unsecured token's, or a
/// sentence's.
fn jwt(run: &[u8]) -> Option<usize> {
    let mut parts = run.split(|&b| b == b'.');
    let header = parts.next()?;
    // A header names an algorithm, a type and a key id or two: it is short.
    if header.len() > 2048 || parts.next().is_none_or(<[u8]>::is_empty) || parts.next().is_none() {
        return None;
    }
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()?;
    if decoded.first() != Some(&b'{') || memmem::find(&decoded, b"\"alg\"").is_none() {
        return None;
    }
    Some(run.len() - run.iter().rev().take_while(|&&b| b == b'.').count())
}

/// The key of the PEM block whose `-----BEGIN ` starts at `start`, if its label names a
/// private key: the lines between its begin and end lines, which stay as they are, so a
/// reader sees what was there. A block without its end line (cut short) is taken to the end
/// of its base64.
fn private_key_at(bytes: &[u8], start: usize) -> Option<std::ops::Range<usize>> {
    let label_start = start + "-----BEGIN ".len();
    let window = &bytes[label_start..bytes.len().min(label_start + LONGEST_LABEL + 5)];
    let label_len = memmem::find(window, b"-----")?;
    let label = &window[..label_len];
    // A label is words of capitals (`RSA PRIVATE KEY`, `OPENSSH PRIVATE KEY`); a certificate,
    // a public key and a request are no secrets.
    if !label
        .iter()
        .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
    {
        return None;
    }
    memmem::find(label, b"PRIVATE KEY")?;
    let key_start = label_start + label_len + "-----".len();
    let searched = &bytes[key_start..bytes.len().min(key_start + LONGEST_PEM)];
    // The key's lines: base64, line ends (as written, or escaped in a JSON string), and an
    // encrypted key's `Proc-Type: 4,ENCRYPTED` and `DEK-Info: …` headers, up to the end line.
    // One pass, ending at the end line: a text of blocks with nothing in them costs no more
    // than its length.
    let in_key = |b: u8| is_base64(b) || b.is_ascii_whitespace() || matches!(b, b'\\' | b':' | b',' | b'-');
    let key_len = searched
        .iter()
        .enumerate()
        .position(|(i, &b)| !in_key(b) || (b == b'-' && searched[i..].starts_with(b"-----END ")))
        .unwrap_or(searched.len());
    let key = trim_line_ends(&searched[..key_len]);
    let offset = key.as_ptr() as usize - bytes.as_ptr() as usize;
    // No private key is as short as a secret too short to remember (the smallest, an EC
    // key's, is some 120 bytes of base64): a block around less is no key, and one the
    // sanitizer would find but not replace, which the audit would then report.
    (key.len() >= MIN_SECRET_LEN).then_some(offset..offset + key.len())
}

/// `key` without the whitespace and escaped line ends (`\n`, `\r`) around it, nor the
/// backslashes it ends with: in a JSON string a key that stops at a quote may stop inside its
/// escape (`\"`), and replacing the backslash alone would end the string there.
fn trim_line_ends(mut key: &[u8]) -> &[u8] {
    loop {
        key = key.trim_ascii();
        key = match key {
            [b'\\', b'n' | b'r', rest @ ..] => rest,
            [rest @ .., b'\\', b'n' | b'r'] => rest,
            [rest @ .., b'\\'] => rest,
            _ => return key,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        let mut all = Vec::new();
        credentials_in(text.as_bytes(), &mut |c| all.push(c.to_owned()));
        all
    }

    /// A JWT as a server signs one: `{"alg":"HS256","typ":"JWT"}`, claims, a signature.
    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

    #[test]
    fn a_jwt_is_found_by_its_header_and_not_by_eyj_alone() {
        assert_eq!(found(&format!(r#"{{"data":{{"login":"{JWT}"}}}}"#)), [JWT]);
        assert_eq!(
            found(&format!("signed in: {JWT}.")),
            [JWT],
            "a sentence's dot is not the token's"
        );
        // An unsecured token (`alg: none`) has an empty signature.
        let unsecured = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ.";
        assert_eq!(found(unsecured), ["eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ"]);
        // base64 of JSON without dots, a header without `alg`, two parts, or `eyJ` in a word.
        let no_alg = "eyJ0eXAiOiJKV1QiLCJraWQiOiIxIn0.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        for text in [
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            no_alg,
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            // `A` (65) could be a length, but the JWT's first 65 bytes are two parts.
            &format!("A{JWT}"),
            "eyJ!!!!.eyJ.x",
        ] {
            assert_eq!(found(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn a_private_key_is_found_between_its_lines_as_written_or_escaped() {
        let key = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq2nV+/x9==";
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{key}\n-----END PRIVATE KEY-----\n");
        assert_eq!(found(&pem), [key]);
        // In a JSON string, with escaped line ends and slashes.
        let escaped = r#"{"private_key":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\/IBAAKCAQEA7q2nV\nAbC=\n-----END RSA PRIVATE KEY-----\n"}"#;
        assert_eq!(found(escaped), [r"MIIEow\/IBAAKCAQEA7q2nV\nAbC="]);
        // An encrypted key's headers are part of it; a key cut short runs to its base64's end.
        let encrypted = "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\nq2nV\n-----END EC PRIVATE KEY-----";
        assert_eq!(
            found(encrypted),
            ["Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\nq2nV"]
        );
        assert_eq!(
            found("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\"}"),
            ["b3BlbnNzaC1rZXktdjEAAAAA"]
        );
        // A certificate and a public key are not secrets.
        for text in [
            "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "-----BEGIN PRIVATE KEY-----",
            "-----BEGIN ",
        ] {
            assert_eq!(found(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn no_form_is_shorter_than_the_shortest() {
        for form in FORMS {
            let shortest = match form.check {
                Check::PrivateKey => "-----BEGIN PRIVATE KEY-----x".len(),
                Check::Jwt => form.prefix.len() + JWT_MIN,
                Check::Run { min, .. } => form.prefix.len() + min,
            };
            assert!(shortest >= SHORTEST, "{}", form.prefix);
        }
    }

    #[test]
    fn a_key_in_a_json_string_is_taken_without_an_escape_it_stops_in() {
        // The key stops at the quote; its escape's backslash stays, so the string still ends
        // where it did.
        assert_eq!(
            found(r#""-----BEGIN PRIVATE KEY-----\nMIIEvQIBAD\"x""#),
            ["MIIEvQIBAD"]
        );
        assert_eq!(
            found(r#""-----BEGIN PRIVATE KEY-----\nMIIEvQIBAD\\"x""#),
            ["MIIEvQIBAD"]
        );
    }

    #[test]
    fn hostile_runs_of_prefixes_are_read_in_linear_time() {
        let n = 4 * 1024 * 1024;
        for unit in [
            "-----BEGIN PRIVATE KEY----------END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\"",
            "-----BEGIN CERTIFICATE-----",
            " eyJhbGciOiJIUzI1NiJ9",
            "eyJ.",
            " ghp_",
            "+whsec_AAAA",
            " sk-",
            "SG.",
        ] {
            let text = unit.repeat(n / unit.len());
            let count = crate::redact::tests::linear(move || {
                let mut count = 0;
                credentials_in(text.as_bytes(), &mut |_| count += 1);
                count
            });
            assert!(count <= n / 16, "{unit}: {count}");
        }
    }

    #[test]
    fn prefixed_tokens_are_found_at_their_length_and_not_inside_words() {
        let github = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        let stripe = "sk_live_51HxYzAbCdEfGhIjKlMnOpQr";
        let slack = "xoxb-1234567890-0987654321-AbCdEfGhIjKl";
        let openai = format!("sk-proj-{}", "Ab3_x-".repeat(8));
        let text = format!("token {github}, key \"{stripe}\" and {slack}; {openai}");
        assert_eq!(found(&text), [github.as_str(), stripe, slack, openai.as_str()]);
        // Too short, or a prefix inside a longer word.
        for text in [
            "ghp_short",
            "sk_live_short",
            "task-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "desk_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            assert_eq!(found(text), Vec::<String>::new(), "{text}");
        }
    }

    /// A string a binary format writes with its length in front: a protocol buffer's field 1.
    fn field(tag: u8, length: &[u8], string: &str) -> Vec<u8> {
        let mut bytes = vec![0x08, 0x96, 0x01, tag];
        bytes.extend_from_slice(length);
        bytes.extend_from_slice(string.as_bytes());
        // The next field's tag, a letter (field 9, a string), so the token's run goes on.
        bytes.extend_from_slice(b"J\x02ok");
        bytes
    }

    fn found_in(bytes: &[u8]) -> Vec<String> {
        let mut all = Vec::new();
        credentials_in(bytes, &mut |c| all.push(c.to_owned()));
        all
    }

    #[test]
    fn a_token_after_its_length_is_found_though_the_length_is_a_letter() {
        // A legacy OpenAI key is 51 bytes (`3`), an Anthropic key 108 (`l`); this Slack token
        // is 57 (`9`) and this JWT 122 (`z`).
        let openai = format!("sk-{}", "T3BlbkFJ".repeat(6));
        let anthropic = format!("sk-ant-api03-{}", "Ab3_x-".repeat(15)) + "AAAAA";
        let slack = format!("xoxb-{}", "1234567890-".repeat(4)) + "AbCdEfGh";
        let jwt = &JWT[..122];
        assert_eq!((openai.len(), anthropic.len(), slack.len()), (51, 108, 57));
        for token in [openai.as_str(), &anthropic, &slack, jwt] {
            let len = u8::try_from(token.len()).unwrap();
            // A protocol buffer's byte of varint, then MessagePack's `str8`.
            for bytes in [field(0x0a, &[len], token), field(0xd9, &[len], token)] {
                assert_eq!(found_in(&bytes), [token], "{:?}", String::from_utf8_lossy(&bytes));
            }
        }
        // Avro's zigzag varint: twice the length, `f` and `r`.
        for token in [&openai, &slack] {
            let bytes = field(0x12, &[u8::try_from(token.len() * 2).unwrap()], token);
            assert_eq!(found_in(&bytes), [token.as_str()]);
        }
        // A JWT of 6 145 bytes: two bytes of varint, the second 6 145 >> 7 = 48, a `0`.
        let claims = format!("{{\"sub\":\"{}\"}}", "a".repeat(4564));
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims);
        let long = format!("eyJhbGciOiJIUzI1NiJ9.{payload}.c2lnbmF0dXJlc2lnbmF0dXJl");
        let len = long.len();
        assert_eq!((len, len >> 7), (6145, usize::from(b'0')));
        let bytes = field(0x0a, &[(len & 0x7f) as u8 | 0x80, (len >> 7) as u8], &long);
        assert_eq!(found_in(&bytes), [long.as_str()]);
        // The price: a word glued to a credential can read as a length, and then as much of
        // the credential as that length holds is found (`x` is 120).
        assert_eq!(found(&format!("x{JWT}")), [&JWT[..120]]);
        // Where the byte before is no length of a token that fills the string, it is a word's:
        // a string past the bytes' end, one with bytes no token holds, a JWT with no parts.
        for bytes in [
            field(0x0a, b"z", &openai),
            field(0x0a, b"6", &openai),
            field(0x0a, b"3", &format!("{}!{}", &openai[..50], &openai[50..])),
            b"3sk-T3BlbkFJT3BlbkFJT3BlbkFJT3BlbkFJT3BlbkFJ!T3BlbkFJ".to_vec(),
            field(0x0a, b"z", &format!("eyJ{}", "a".repeat(119))),
        ] {
            assert_eq!(
                found_in(&bytes),
                Vec::<String>::new(),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }

    #[test]
    fn the_first_credential_in_bytes_says_where_and_what_it_is() {
        let github = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        // Bytes that are no UTF-8 around and between: an attachment's binary body.
        let mut bytes = b"\xff\xfe sk_live_short ".to_vec();
        bytes.extend_from_slice(github.as_bytes());
        bytes.extend_from_slice(b" \xc3 ");
        bytes.extend_from_slice(JWT.as_bytes());
        let first = first_credential(&bytes).unwrap();
        assert_eq!(
            (first.offset, first.len, first.what),
            (17, github.len(), "a GitHub token")
        );
        let rest = &bytes[first.offset + first.len..];
        let second = first_credential(rest).unwrap();
        assert_eq!(&rest[second.offset..second.offset + second.len], JWT.as_bytes());
        assert_eq!(second.what, "a JSON Web Token");

        let pem = b"-----BEGIN EC PRIVATE KEY-----\nq2nV+x9/\n-----END EC PRIVATE KEY-----";
        let key = first_credential(pem).unwrap();
        assert_eq!((key.offset, key.len, key.what), (31, 8, "a PEM private key"));
        // Shorter than a secret the sanitizer remembers: no key.
        assert_eq!(
            first_credential(b"-----BEGIN PRIVATE KEY-----\nq2nV+x9\n-----END PRIVATE KEY-----"),
            None
        );
        assert_eq!(
            first_credential(b"-----BEGIN PRIVATE KEY-----\n[REDACTED]\n-----END PRIVATE KEY-----"),
            None
        );
        assert_eq!(first_credential(b"short"), None);
    }

    #[test]
    fn every_form_says_what_it_is() {
        for form in FORMS {
            assert!(
                form.what.starts_with("a ") || form.what.starts_with("an "),
                "{}",
                form.prefix
            );
        }
    }

    proptest::proptest! {
        /// What the sanitizer writes holds no credential by its form, as text or as a body of
        /// any kind: so the audit, which searches with the same forms, passes every archive
        /// of a run whose events all passed the sanitizer.
        #[test]
        fn what_the_sanitizer_writes_holds_no_credential_by_its_form(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxIn0", "sig", "ghp_", "a1B2c3D4e5",
                    "-----BEGIN PRIVATE KEY-----", "\\n", "\n", "MIIEvQ", "-----END PRIVATE KEY-----",
                    "sk-", "xoxb-", "whsec_", "+/=", " ", "\"", "_", "x", "{\"k\":", "}", "[", "]", ",",
                    "=", "&", "<a>", "</a>",
                    // Letters and digits a length-prefixed token's length can be (51, 80, 122).
                    "3", "P", "z",
                ]),
                0..40,
            ),
            content_type in proptest::sample::select(vec![
                None, Some("application/json"), Some("text/plain"), Some("text/html"),
                Some("application/xml"), Some("application/x-www-form-urlencoded"),
            ]),
            not_utf8_at in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let text: String = pieces.concat();
            let sanitizer = crate::redact::tests::sanitizer();
            // The text in UTF-16LE after its mark: read as the text it stands for.
            let mut wide = vec![0xff, 0xfe];
            wide.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            let recorded = sanitizer.recorded_body(content_type, &wide);
            let kept = base64::engine::general_purpose::STANDARD.decode(recorded.text.as_bytes()).unwrap();
            let units = kept[2..].chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]]));
            let read: String = char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect();
            proptest::prop_assert_eq!(first_credential(read.as_bytes()), None, "{}", read);
            let written = sanitizer.text(&text);
            proptest::prop_assert_eq!(first_credential(written.as_bytes()), None, "{}", written);
            let written = sanitizer.body(content_type, text.as_bytes());
            proptest::prop_assert_eq!(first_credential(written.as_bytes()), None, "{}", written);
            // The same bytes with one that is no UTF-8 among them: a binary body, kept as bytes.
            let mut bytes = text.into_bytes();
            bytes.insert(not_utf8_at.index(bytes.len() + 1), 0xff);
            let recorded = sanitizer.recorded_body(content_type, &bytes);
            proptest::prop_assert!(recorded.base64);
            let kept = base64::engine::general_purpose::STANDARD.decode(recorded.text.as_bytes()).unwrap();
            proptest::prop_assert_eq!(first_credential(&kept), None, "{}", String::from_utf8_lossy(&kept));
        }
    }
}
