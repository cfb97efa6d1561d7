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

/// A credential's form: the prefix it begins with, and what must follow it.
struct Form {
    prefix: &'static str,
    check: Check,
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
    Form { prefix: "eyJ", check: Check::Jwt },
    Form { prefix: "-----BEGIN ", check: Check::PrivateKey },
    // GitHub: personal, OAuth, user-to-server, server-to-server and refresh tokens, then the
    // fine-grained personal token.
    Form { prefix: "ghp_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "gho_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "ghu_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "ghs_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "ghr_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "github_pat_", check: Check::Run { body: is_base64url, min: 60 } },
    // GitLab's personal, project and group access tokens.
    Form { prefix: "glpat-", check: Check::Run { body: is_base64url, min: 20 } },
    // Stripe's secret and restricted keys, live and test, and a webhook's signing secret.
    Form { prefix: "sk_live_", check: Check::Run { body: is_alphanumeric, min: 20 } },
    Form { prefix: "sk_test_", check: Check::Run { body: is_alphanumeric, min: 20 } },
    Form { prefix: "rk_live_", check: Check::Run { body: is_alphanumeric, min: 20 } },
    Form { prefix: "rk_test_", check: Check::Run { body: is_alphanumeric, min: 20 } },
    Form { prefix: "whsec_", check: Check::Run { body: is_base64, min: 24 } },
    // Slack's bot, user, app-level, refresh and configuration tokens.
    Form { prefix: "xoxb-", check: Check::Run { body: is_base64url, min: 20 } },
    Form { prefix: "xoxp-", check: Check::Run { body: is_base64url, min: 20 } },
    Form { prefix: "xoxa-", check: Check::Run { body: is_base64url, min: 20 } },
    Form { prefix: "xoxr-", check: Check::Run { body: is_base64url, min: 20 } },
    Form { prefix: "xoxe-", check: Check::Run { body: is_base64url, min: 20 } },
    Form { prefix: "xapp-", check: Check::Run { body: is_base64url, min: 20 } },
    // A Google API key.
    Form { prefix: "AIza", check: Check::Run { body: is_base64url, min: 35 } },
    // npm's and PyPI's publishing tokens.
    Form { prefix: "npm_", check: Check::Run { body: is_alphanumeric, min: 36 } },
    Form { prefix: "pypi-AgE", check: Check::Run { body: is_base64url, min: 50 } },
    // SendGrid's: two base64url parts after `SG.`, joined by a dot.
    Form { prefix: "SG.", check: Check::Run { body: is_dotted_base64url, min: 60 } },
    // OpenAI's (`sk-…`, `sk-proj-…`) and Anthropic's (`sk-ant-…`) API keys: long enough not
    // to be a slug.
    Form { prefix: "sk-", check: Check::Run { body: is_base64url, min: 32 } },
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

/// Calls `found` with each credential written in `text`, as written there. A credential in a
/// JSON string keeps its escapes (`\n` in a PEM block, `\/` where an encoder escapes `/`),
/// which is the form [`replace_known_in_json`](super::SecretRegistry::replace_known_in_json)
/// looks for in the same text.
pub(crate) fn credentials_in(text: &str, found: &mut dyn FnMut(&str)) {
    // Most header values, URLs' parts and short messages are shorter than any credential.
    if text.len() < SHORTEST {
        return;
    }
    let Some(searcher) = PREFIXES.as_ref() else {
        return;
    };
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let Some((offset, which)) = searcher.find(&bytes[at..]) else {
            return;
        };
        let start = at + offset;
        let form = &FORMS[which];
        at = match credential_at(bytes, start, form) {
            Some(span) => {
                // Spans end on ASCII bytes and start at the prefix: character boundaries.
                if let Some(credential) = text.get(span.clone()) {
                    found(credential);
                }
                span.end.max(start + 1)
            }
            None => start + 1,
        };
    }
}

/// The credential of `form` whose prefix starts at `start`, if one is there.
fn credential_at(bytes: &[u8], start: usize, form: &Form) -> Option<std::ops::Range<usize>> {
    let (body, min): (fn(u8) -> bool, usize) = match form.check {
        Check::PrivateKey => return private_key_at(bytes, start),
        Check::Jwt => (is_dotted_base64url, JWT_MIN),
        Check::Run { body, min } => (body, min),
    };
    // A prefix inside a longer word (`task-…`, an id ending `…eyJ`) starts no credential.
    if start > 0 && is_dotted_base64url(bytes[start - 1]) {
        return None;
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
    // A certificate, a public key and a request are no secrets.
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
    (!key.is_empty()).then_some(offset..offset + key.len())
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
        credentials_in(text, &mut |c| all.push(c.to_owned()));
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
            &format!("x{JWT}"),
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
        assert_eq!(found(r#""-----BEGIN PRIVATE KEY-----\nMIIEvQ\"x""#), ["MIIEvQ"]);
        assert_eq!(found(r#""-----BEGIN PRIVATE KEY-----\nMIIEvQ\\"x""#), ["MIIEvQ"]);
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
                credentials_in(&text, &mut |_| count += 1);
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
}
