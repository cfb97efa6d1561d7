//! The secrets corpus: over a hundred secrets through every carrier, then every artifact of
//! the run searched byte by byte.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use kit_core::redact::LeakScanner;
use kit_e2e::*;
use kit_trace::ArchiveReader;

fn kit_cli() -> Command {
    Command::new(binary("kit-cli", "kit-cli"))
}

/// The corpus secrets found in `haystack`, as UTF-8 or as UTF-16 in either byte order.
fn leaked<'s>(secrets: &'s [String], haystack: &[u8]) -> Vec<&'s str> {
    let contains = |needle: &[u8]| memchr::memmem::find(haystack, needle).is_some();
    secrets
        .iter()
        .filter(|s| {
            let wide =
                |to_bytes: fn(u16) -> [u8; 2]| s.encode_utf16().flat_map(to_bytes).collect::<Vec<u8>>();
            contains(s.as_bytes()) || contains(&wide(u16::to_le_bytes)) || contains(&wide(u16::to_be_bytes))
        })
        .map(String::as_str)
        .collect()
}

/// Every string in `value`, its escapes read.
fn strings_of(value: &serde_json::Value) -> Vec<&str> {
    match value {
        serde_json::Value::String(text) => vec![text],
        serde_json::Value::Array(items) => items.iter().flat_map(strings_of).collect(),
        serde_json::Value::Object(members) => members
            .iter()
            .flat_map(|(name, value)| std::iter::once(name.as_str()).chain(strings_of(value)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The bytes of every body the events keep, as they stand for them: base64 decoded where the
/// encoding says so (`kit.http.….body.encoding`), and the text of the rest with its JSON
/// escapes read (a body of ASCII in UTF-16 is UTF-8 too, its zero bytes kept as `\u0000`); and
/// of every attachment kept in its event. The second of the pair says whether it was base64.
fn bodies_as_bytes(events: &[kit_core::Event]) -> Vec<(Vec<u8>, bool)> {
    use base64::Engine as _;
    use kit_core::{AttachmentContent, EventKind, semconv};
    let mut found = Vec::new();
    for event in events {
        let attributes = match &event.kind {
            EventKind::Attachment(attachment) => {
                if let AttachmentContent::Inline(bytes) = &attachment.content {
                    found.push((bytes.to_vec(), std::str::from_utf8(bytes).is_err()));
                }
                continue;
            }
            EventKind::OperationStarted(started) => &started.attributes,
            EventKind::Observation(observation) => &observation.attributes,
            _ => continue,
        };
        for (body, encoding) in [
            (semconv::KIT_REQUEST_BODY, semconv::KIT_REQUEST_BODY_ENCODING),
            (semconv::KIT_RESPONSE_BODY, semconv::KIT_RESPONSE_BODY_ENCODING),
        ] {
            let base64 = attributes.get_str(encoding) == Some("base64");
            let Some(text) = attributes.get_str(body) else {
                assert!(!base64, "a body's encoding without the body");
                continue;
            };
            if base64 {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .expect("base64");
                found.push((decoded, true));
            } else {
                found.push((text.as_bytes().to_vec(), false));
            }
        }
    }
    found
}

fn audit(archive: &Path, secrets_file: Option<&Path>) -> std::process::Output {
    let mut command = kit_cli();
    command.arg("audit").arg(archive);
    if let Some(file) = secrets_file {
        command.arg("--secrets-file").arg(file);
    }
    run(&mut command)
}

#[test]
fn no_secret_of_the_corpus_survives_in_any_artifact_and_audit_agrees() {
    let secrets = kit_fixture_secrets::corpus();
    let distinct: std::collections::BTreeSet<&String> = secrets.iter().collect();
    assert!(distinct.len() >= 100, "{} secrets", distinct.len());

    let results = tempfile::tempdir().unwrap();
    let output = run(cargo()
        .args(["test", "-p", "kit-fixture-secrets", "--test", "corpus"])
        .env("KIT_RESULTS_DIR", results.path()));
    assert!(
        !output.status.success(),
        "three corpus tests fail on purpose:\n{}",
        describe(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("30 passed; 3 failed"), "{}", describe(&output));
    assert_eq!(
        leaked(&secrets, &output.stdout),
        Vec::<&str>::new(),
        "in the test run's stdout"
    );
    assert_eq!(
        leaked(&secrets, &output.stderr),
        Vec::<&str>::new(),
        "in the test run's stderr"
    );

    let archives = archives_in(results.path());
    assert_eq!(archives.len(), 1);
    let archive = &archives[0];

    // Every byte of every entry, decompressed: attachments, events, failure messages.
    let mut reader = ArchiveReader::open(archive).unwrap();
    for index in 0..reader.entry_count() {
        let (name, bytes) = reader.entry(index).unwrap();
        assert_eq!(leaked(&secrets, &bytes), Vec::<&str>::new(), "in entry {name}");
    }
    let events: Vec<kit_core::Event> = reader.tests().flat_map(|t| t.unwrap().events).collect();
    let attachments = events
        .iter()
        .filter(|e| matches!(e.kind, kit_core::EventKind::Attachment(_)))
        .count();
    // Every request's body and response was attached (and searched above, as blobs).
    assert!(attachments >= 60, "attachments captured: {attachments}");
    // Bytes kept as base64 (a body that is not text, in its event and its attachment), as the
    // bytes they stand for: the search above sees only their letters. And bodies kept as text,
    // their escapes read: the search above sees a NUL as `\u0000`.
    let bodies = bodies_as_bytes(&events);
    let binary = bodies.iter().filter(|(_, base64)| *base64).count();
    assert!(binary >= 36, "bodies kept as base64: {binary}");
    for (bytes, base64) in &bodies {
        let kept = if *base64 { "in base64" } else { "in a body's text" };
        assert_eq!(leaked(&secrets, bytes), Vec::<&str>::new(), "{kept}");
    }

    // Absent because redacted, not because never sent: the run met every one of them.
    let mut scanner = LeakScanner::new();
    for set in reader.secret_fingerprints().unwrap() {
        scanner.add_set(&set).unwrap();
    }
    let unknown: Vec<&String> = secrets
        .iter()
        .filter(|s| scanner.find(s.as_bytes()).is_none())
        .collect();
    assert!(unknown.is_empty(), "secrets the run never met: {unknown:?}");

    // The failure messages are in the report, redacted.
    let report = run(kit_cli().arg("report").arg(archive));
    assert!(report.status.success(), "{}", describe(&report));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("Failed corpus::a_returned_error_holds_secrets: the test returned Err: \"rejected credentials: [REDACTED], [REDACTED]"), "{text}");
    assert!(text.contains("Failed corpus::a_transport_failure_names_a_url_with_secrets: GET /gone - the request to http://127.0.0.1:"), "{text}");
    assert_eq!(
        leaked(&secrets, &report.stdout),
        Vec::<&str>::new(),
        "in the report"
    );

    // The exports: HAR, which shows a body of text in UTF-16 as its text, and OTLP/JSON. Each
    // searched as written and as its strings with their JSON escapes read.
    for flag in ["--har", "--otlp"] {
        let path = results.path().join(flag.trim_start_matches('-'));
        let export = run(kit_cli().arg("export").arg(archive).arg(flag).arg(&path));
        assert!(export.status.success(), "{}", describe(&export));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            leaked(&secrets, &bytes),
            Vec::<&str>::new(),
            "in the {flag} export"
        );
        let document: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        for text in strings_of(&document) {
            assert_eq!(
                leaked(&secrets, text.as_bytes()),
                Vec::<&str>::new(),
                "in the {flag} export"
            );
        }
        if flag == "--har" {
            let sign_ins = document["log"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["response"]["content"]["text"].as_str())
                .filter(|text| {
                    text.contains("<user>José</user><password>[REDACTED]</password>")
                        || text.contains(r#"{"user":"ada","client_secret":"[REDACTED]"}"#)
                })
                .count();
            assert_eq!(sign_ins, 16, "the UTF-16 sign-ins, redacted, as their text");
        }
    }

    // kit-cli audit agrees: nothing in the archive.
    let clean = audit(archive, None);
    assert_eq!(clean.status.code(), Some(0), "{}", describe(&clean));
    let said = String::from_utf8_lossy(&clean.stdout);
    let searched: usize = said
        .split(" searched for)")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(searched >= secrets.len(), "{said}");

    // Planted: one secret in an extra entry is found, and the entry named.
    let planted = results.path().join("planted.kittrace");
    std::fs::copy(archive, &planted).unwrap();
    let mut zip = zip::ZipWriter::new_append(
        std::fs::File::options()
            .read(true)
            .write(true)
            .open(&planted)
            .unwrap(),
    )
    .unwrap();
    zip.start_file("planted/notes.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    zip.write_all(format!("copied from a log: {}\n", secrets[42]).as_bytes())
        .unwrap();
    zip.finish().unwrap();
    let dirty = audit(&planted, None);
    assert_eq!(dirty.status.code(), Some(1), "{}", describe(&dirty));
    assert_eq!(
        String::from_utf8_lossy(&dirty.stdout),
        "secret found in entry planted/notes.txt at byte 19\n"
    );
    assert_eq!(
        leaked(&secrets, &dirty.stdout),
        Vec::<&str>::new(),
        "audit never prints the secret"
    );

    // A secrets file adds secrets in clear: the redaction marker is in plenty of entries.
    let file = results.path().join("secrets.txt");
    std::fs::write(&file, "[REDACTED]\n").unwrap();
    let marked = audit(archive, Some(&file));
    assert_eq!(marked.status.code(), Some(1), "{}", describe(&marked));
    assert!(String::from_utf8_lossy(&marked.stdout).lines().count() > 5);
}
