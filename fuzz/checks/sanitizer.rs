//! The sanitizer on arbitrary bytes: any content type, any cap. It must not panic, its output
//! must respect the cap, a secret it was told about must never come out, and nor must a
//! credential by its form (what `kit-cli audit` looks for) unless rule 10 is off. A body that
//! serde_json reads as a document, the JSON scanner is held to serde: every sensitive member
//! of what it writes, where that reads as JSON, holds `"[REDACTED]"`.

use std::sync::Arc;

use kit_core::KitHttpAttachmentOptions;
use kit_core::redact::{Sanitizer, SecretRegistry, first_credential};

const TYPES: [Option<&str>; 10] = [
    None,
    Some("text/xml; charset=utf-16"),
    Some("application/json"),
    Some("application/problem+json"),
    Some("text/xml"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=b"),
    Some("multipart/form-data"),
    Some("text/plain"),
    Some("text/html"),
];

const PLANTED: &str = "planted-secret-value";

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let mut options = KitHttpAttachmentOptions::default();
    options.max_diagnostic_body_length = usize::from(head >> 3) * 16;
    let sanitizer = told_of_planted(&options);
    let kind = TYPES[usize::from(head) % TYPES.len()];

    let out = sanitizer.body(kind, body);
    let marker = "... [18446744073709551615 characters truncated]".len();
    assert!(out.chars().count() <= options.max_diagnostic_body_length + marker);
    clean(&out);

    // The body as the trace keeps it: bytes that are no UTF-8 stay bytes, base64 encoded,
    // cut at the cap in bytes, and held to the same search.
    let recorded = sanitizer.recorded_body(kind, body);
    if recorded.base64 {
        use base64::Engine as _;
        let kept = base64::engine::general_purpose::STANDARD
            .decode(recorded.text.as_bytes())
            .expect("base64");
        assert!(kept.len() <= options.max_diagnostic_body_length);
        clean_bytes(&kept);
        // Text in UTF-16 (a byte-order mark, the charset, or the zeros of its first two
        // characters under a type of text: what `redact::utf16_text` documents) is held to the
        // search as the text it stands for: its bytes put a zero beside each ASCII letter.
        if kit_core::redact::utf16_text(kind, body).is_some() {
            clean(&utf16_text(&kept, body));
        }
    } else {
        clean(&recorded.text);
    }

    let text = String::from_utf8_lossy(body);
    clean(&sanitizer.url(&text));
    clean(&sanitizer.text(&text));
    clean(&sanitizer.header("x-anything", &[&text]));
    // Headers whose values are URLs, read as URLs.
    clean(&sanitizer.header("location", &[&text]));
    clean(&sanitizer.header("Link", &[&text, "<"]));
    clean(&sanitizer.header("Refresh", &[&text]));

    // With rule 10 off (`RedactCredentialForms`) a credential's form may stay, but the rest
    // holds: the cap, and the planted secret.
    options.redact_credential_forms = false;
    let without_forms = told_of_planted(&options);
    let out = without_forms.body(kind, body);
    assert!(out.chars().count() <= options.max_diagnostic_body_length + marker);
    assert!(!out.contains(PLANTED), "{out}");
    assert!(!without_forms.text(&text).contains(PLANTED));
    assert!(!without_forms.header("x-anything", &[&text]).contains(PLANTED));

    if matches!(
        kind,
        None | Some("application/json" | "application/problem+json" | "text/plain")
    ) {
        every_sensitive_member_is_redacted(kind, body);
    }
}

/// `kept` read as UTF-16 in the order the body's mark, or else its first character, shows
/// (as the sanitizer reads it: `charset=utf-16`, the only charset here, and the zeros alike),
/// past the mark.
fn utf16_text(kept: &[u8], body: &[u8]) -> String {
    let (big_endian, from) = match body {
        [0xff, 0xfe, ..] => (false, 2),
        [0xfe, 0xff, ..] => (true, 2),
        [first, 0, ..] if *first != 0 => (false, 0),
        _ => (true, 0),
    };
    let units = kept.get(from..).unwrap_or_default().chunks_exact(2).map(|pair| {
        if big_endian {
            u16::from_be_bytes([pair[0], pair[1]])
        } else {
            u16::from_le_bytes([pair[0], pair[1]])
        }
    });
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// A sanitizer of `options` whose run has met the planted secret.
fn told_of_planted(options: &KitHttpAttachmentOptions) -> Sanitizer {
    let secrets = Arc::new(SecretRegistry::new());
    secrets.remember(PLANTED);
    Sanitizer::new(options, secrets)
}

/// Neither the planted secret nor any credential by its form is in what the sanitizer wrote.
fn clean(out: &str) {
    assert!(!out.contains(PLANTED), "{out}");
    assert_eq!(first_credential(out.as_bytes()), None, "{out}");
}

/// [`clean`] for bytes that are not text.
fn clean_bytes(out: &[u8]) {
    let shown = String::from_utf8_lossy(out);
    assert!(
        !out.windows(PLANTED.len()).any(|w| w == PLANTED.as_bytes()),
        "{shown}"
    );
    assert_eq!(first_credential(out), None, "{shown}");
}

/// The JSON scanner is the kit's own, written for speed; serde_json is the reference for what
/// a document's members are, those of a document carried in one of its strings included.
/// Uncapped, so the whole document comes back, and it reads as JSON: a value remembered as a
/// secret and met again elsewhere (rule 8), within a token or across tokens, is replaced token
/// by token.
fn every_sensitive_member_is_redacted(kind: Option<&str>, body: &[u8]) {
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    if !text.trim_start().starts_with(['{', '[']) {
        return;
    }
    let Ok(document) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let mut options = KitHttpAttachmentOptions::default();
    options.max_diagnostic_body_length = usize::MAX;
    let sanitizer = Sanitizer::new(&options, Arc::new(SecretRegistry::new()));
    let out = sanitizer.body(kind, body);
    nothing_under_a_sensitive_name_survives_a_cut(
        &sanitizer,
        kind,
        text,
        &document,
        &options.sensitive_json_properties,
    );
    a_form_carried_whole_lets_out_no_sensitive_value(
        text,
        &document,
        &out,
        &options.sensitive_json_properties,
    );
    let written = serde_json::from_str::<serde_json::Value>(&out)
        .unwrap_or_else(|e| panic!("the document {text:?} came out as {out:?}, which is no JSON: {e}"));
    let names = &options.sensitive_json_properties;
    // A string that is itself a document (an object or an array, after JSON's whitespace)
    // is one the sanitizer reads as JSON, three carried deep.
    let mut stack = vec![(written, 0)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            serde_json::Value::Object(members) => {
                for (name, member) in members {
                    if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                        assert_eq!(member, "[REDACTED]", "member {name:?} of {out}");
                    } else {
                        stack.push((member, depth));
                    }
                }
            }
            serde_json::Value::Array(items) => stack.extend(items.into_iter().map(|item| (item, depth))),
            serde_json::Value::String(carried)
                if depth < 3
                    && carried
                        .trim_start_matches([' ', '\t', '\n', '\r'])
                        .starts_with(['{', '[']) =>
            {
                if let Ok(document) = serde_json::from_str::<serde_json::Value>(&carried) {
                    stack.push((document, depth + 1));
                }
            }
            _ => {}
        }
    }
}

/// A string value of the document that is a form's pairs carried whole (a field's name of
/// letters, digits and `_.[]%-`, then `=`, and no whitespace; written in the body as serde
/// writes it, so that the kit's look at the string as written sees what this one sees) lets out
/// none of its sensitive fields' values (a name of the list, as written, then `=`). Checked for
/// values of four bytes or more that occur once in the body.
fn a_form_carried_whole_lets_out_no_sensitive_value(
    text: &str,
    document: &serde_json::Value,
    out: &str,
    names: &[String],
) {
    let is_form = |value: &str| {
        let name_end = value.bytes().take(65).position(|b| {
            !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'[' | b']' | b'%' | b'-'))
        });
        matches!(name_end, Some(end) if end > 0 && value.as_bytes()[end] == b'=')
            && !value.bytes().any(|b| b.is_ascii_whitespace())
    };
    let mut stack = vec![document];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::Object(members) => {
                // A sensitive member's value is redacted whole, and checked above.
                stack.extend(
                    members
                        .iter()
                        .filter(|(name, _)| !names.iter().any(|n| n.eq_ignore_ascii_case(name)))
                        .map(|(_, member)| member),
                );
            }
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::String(form)
                if is_form(form)
                    && serde_json::to_string(form).is_ok_and(|written| text.contains(&written)) =>
            {
                for (name, secret) in form.split('&').filter_map(|pair| pair.split_once('=')) {
                    let sensitive = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                        && names.iter().any(|n| n.eq_ignore_ascii_case(name));
                    if sensitive && secret.len() >= 4 && text.matches(secret).count() == 1 {
                        assert!(
                            !out.contains(secret),
                            "the value of {name:?} in the form {form:?} came out: {out}"
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// A body cut short (the commonest malformed JSON) goes to the text fallback. Cut at a quarter,
/// a half and three quarters of the document, nothing that stood inside a sensitive member's
/// value may come out: a string value, or anything inside an object or array (rule 6; a
/// number, boolean or null right after the name passes, as the spec has it). Checked for the
/// strings of four bytes or more that occur once in the whole document, as written, so that
/// no other member's value shows the same text.
fn nothing_under_a_sensitive_name_survives_a_cut(
    sanitizer: &Sanitizer,
    kind: Option<&str>,
    text: &str,
    document: &serde_json::Value,
    names: &[String],
) {
    let sensitive = |name: &str| names.iter().any(|n| n.eq_ignore_ascii_case(name));
    let mut hidden = Vec::new();
    let mut stack = vec![(document, false)];
    while let Some((value, inside)) = stack.pop() {
        match value {
            serde_json::Value::Object(members) => {
                for (name, member) in members {
                    if inside {
                        hidden.push(name.as_str());
                    }
                    let redacted = inside || sensitive(name);
                    if redacted && !inside && !member.is_object() && !member.is_array() {
                        if let serde_json::Value::String(value) = member {
                            hidden.push(value.as_str());
                        }
                        continue;
                    }
                    stack.push((member, redacted));
                }
            }
            serde_json::Value::Array(items) => stack.extend(items.iter().map(|item| (item, inside))),
            serde_json::Value::String(value) if inside => hidden.push(value.as_str()),
            _ => {}
        }
    }
    hidden.retain(|h| h.len() >= 4 && text.matches(*h).count() == 1);
    if hidden.is_empty() {
        return;
    }
    for quarter in 1..4 {
        let mut cut = text.len() * quarter / 4;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let short = &text[..cut];
        let out = sanitizer.body(kind, short.as_bytes());
        for h in hidden.iter().filter(|h| short.contains(**h)) {
            assert!(
                !out.contains(*h),
                "{h:?} of a sensitive member came out of {short:?}: {out}"
            );
        }
    }
}
