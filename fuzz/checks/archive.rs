//! The archive reader on arbitrary bytes: whatever the file holds (cut short, a zip bomb,
//! names that escape, directories that lie), opening and reading all of it returns errors,
//! never panics, and never inflates past its caps.

use std::path::Path;

use kit_core::EventKind;
use kit_trace::{ArchiveReader, ReaderLimits};

const CAP: u64 = 1 << 20;

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let dir = super::scratch_dir("archive");
    let path = dir.join("kit-fuzz.kittrace");
    std::fs::write(&path, data).unwrap();
    read_all(&path);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Opens the archive at `path` and reads everything in it, keeping the caps.
fn read_all(path: &Path) {
    // Small caps, so that a bomb costs the fuzzer little and a cap not kept shows.
    let limits = ReaderLimits::default()
        .with_max_segment_bytes(CAP)
        .with_max_blob_bytes(CAP);
    let Ok(mut reader) = ArchiveReader::open_with(path, limits) else {
        return;
    };
    let _ = reader.salvage();
    let _ = reader.runs().len() + reader.test_count();
    let _ = reader.secret_fingerprints();
    let mut attachments = Vec::new();
    for test in reader.tests() {
        let Ok(test) = test else { continue };
        for event in test.events {
            if let EventKind::Attachment(a) = event.kind {
                attachments.push(a);
            }
        }
    }
    for attachment in &attachments {
        if let Ok(bytes) = reader.attachment_bytes(attachment) {
            assert!(bytes.len() as u64 <= CAP);
        }
    }
    for index in 0..reader.entry_count() {
        if let Ok((_, bytes)) = reader.entry(index) {
            assert!(bytes.len() as u64 <= CAP);
        }
    }
}
