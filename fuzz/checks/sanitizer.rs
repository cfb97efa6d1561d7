//! The sanitizer on arbitrary bytes: any content type, any cap. It must not panic, its output
//! must respect the cap, and a secret it was told about must never come out.

use std::sync::Arc;

use kit_core::KitHttpAttachmentOptions;
use kit_core::redact::{Sanitizer, SecretRegistry};

const TYPES: [Option<&str>; 8] = [
    None,
    Some("application/json"),
    Some("application/problem+json"),
    Some("text/xml"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=b"),
    Some("multipart/form-data"),
    Some("text/plain"),
];

const PLANTED: &str = "planted-secret-value";

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let mut options = KitHttpAttachmentOptions::default();
    options.max_diagnostic_body_length = usize::from(head >> 3) * 16;
    let secrets = Arc::new(SecretRegistry::new());
    secrets.remember(PLANTED);
    let sanitizer = Sanitizer::new(&options, secrets);
    let kind = TYPES[usize::from(head & 7)];

    let out = sanitizer.body(kind, body);
    let marker = "... [18446744073709551615 characters truncated]".len();
    assert!(out.chars().count() <= options.max_diagnostic_body_length + marker);
    assert!(!out.contains(PLANTED));

    let text = String::from_utf8_lossy(body);
    assert!(!sanitizer.url(&text).contains(PLANTED));
    assert!(!sanitizer.text(&text).contains(PLANTED));
    assert!(!sanitizer.header("x-anything", &[&text]).contains(PLANTED));
}
