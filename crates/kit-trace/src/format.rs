//! The `.kittrace` format: entry paths, the version, and the records stored beside events.
//!
//! A `.kittrace` file is a standard zip archive, valid after every committed write:
//!
//! ```text
//! mimetype                                      first entry, stored: application/vnd.kit.trace+zip
//! runs/{runId}/manifest.json                    RunManifest: format version, run id, kit version, runner, host
//! runs/{runId}/tests/{testId}/{segment:04}.jsonl  a segment of one test's events (see below)
//! runs/{runId}/secrets/{writer}-{n:04}.json     fingerprints of secrets the run met (never the secrets)
//! blobs/sha256/{hh}/{hex}                       attachment bytes, content-addressed (already redacted)
//! merge.json                                    merged archives only: where the runs came from
//! ```
//!
//! A test's events are stored in one or more **segments**, each a JSON-lines entry: a
//! [`SegmentHeader`] line, then one [`Event`](kit_core::Event) per line in sequence order,
//! without its `run_id` and `test_id`: the entry's path names both
//! ([`Event::write_json_in_scope`](kit_core::Event::write_json_in_scope)).
//! Segment `0000` is committed as soon as the test starts and holds its `test_started` event;
//! the last segment, committed when the test ends, holds everything up to its
//! `test_finished` event. Long tests commit intermediate segments when their buffer grows
//! past a limit. A test whose segments hold no `test_finished` event was interrupted: its
//! process died before it ended.
//!
//! Test ids are UUIDv7, so listing `runs/{runId}/tests/` in name order lists tests in the order
//! they started.
//!
//! # Versions
//!
//! [`FORMAT_VERSION`] is `major.minor`. A reader accepts any minor version of its major one,
//! ignoring unknown fields, entries and event kinds; it refuses a newer major version with a
//! hint to upgrade.
//!
//! ## Changelog
//!
//! - **2.0**: event lines leave out `run_id` and `test_id`, which the segment's path names
//!   (they were some 90 bytes of a 300-byte line, written, compressed and parsed again on every
//!   line). A 1.x reader cannot read them, hence the new major version; this reader reads 1.x
//!   lines, which keep their own.
//! - **1.0**: the first version.

use serde::{Deserialize, Serialize};

use kit_core::{RunId, TestId};

/// The media type, stored uncompressed as the first entry.
pub const MIME_TYPE: &str = "application/vnd.kit.trace+zip";
/// Name of the media-type entry.
pub const MIME_TYPE_ENTRY: &str = "mimetype";
/// The file extension, without the dot.
pub const EXTENSION: &str = "kittrace";
/// Name of the entry listing a merged archive's sources.
pub const MERGE_ENTRY: &str = "merge.json";

/// The format version written by this crate.
pub const FORMAT_VERSION: FormatVersion = FormatVersion { major: 2, minor: 0 };

/// Largest decompressed size of one segment that a reader accepts (a zip bomb stops here).
pub const MAX_SEGMENT_BYTES: u64 = 512 * 1024 * 1024;
/// Largest decompressed size of one blob that a reader accepts.
pub const MAX_BLOB_BYTES: u64 = 256 * 1024 * 1024;
/// Largest decompressed size of a manifest or other small JSON entry.
pub const MAX_SMALL_ENTRY_BYTES: u64 = 1024 * 1024;

/// A format version, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FormatVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
}

impl std::fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for FormatVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (major, minor) = s
            .split_once('.')
            .ok_or_else(|| format!("{s:?} is not major.minor"))?;
        Ok(FormatVersion {
            major: major.parse().map_err(|_| format!("{s:?} is not major.minor"))?,
            minor: minor.parse().map_err(|_| format!("{s:?} is not major.minor"))?,
        })
    }
}

impl Serialize for FormatVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FormatVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `runs/{runId}/manifest.json`: what produced a run. Written by the first process of the run
/// to commit; later processes of the same run leave it as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunManifest {
    /// The format version the run was written with.
    pub format_version: FormatVersion,
    /// The run id.
    pub run_id: RunId,
    /// Version of the kit that wrote it.
    pub kit_version: String,
    /// `cargo-test`, `nextest`, or `unknown`.
    pub runner: String,
    /// Host name of the machine, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// When the manifest was written, in nanoseconds since the Unix epoch.
    pub created_unix_nanos: u64,
}

impl RunManifest {
    /// A manifest for `run_id` written now by this version of the kit.
    pub fn new(run_id: RunId, runner: impl Into<String>) -> Self {
        RunManifest {
            format_version: FORMAT_VERSION,
            run_id,
            kit_version: env!("CARGO_PKG_VERSION").to_owned(),
            runner: runner.into(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty()),
            created_unix_nanos: kit_core::Timestamp::now().as_unix_nanos(),
        }
    }
}

/// The first line of a segment entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SegmentHeader {
    /// The test.
    pub test_id: TestId,
    /// The segment's number within the test, from 0.
    pub segment: u32,
    /// How many event lines follow.
    pub events: u64,
    /// True when the segment ends with the test's `test_finished` event.
    #[serde(rename = "final")]
    pub is_final: bool,
    /// The writing process's id (several processes share an archive under nextest).
    pub pid: u32,
}

/// Path of a run's manifest.
pub fn manifest_path(run: &RunId) -> String {
    format!("runs/{run}/manifest.json")
}

/// Path of one segment of a test.
pub fn segment_path(run: &RunId, test: TestId, segment: u32) -> String {
    format!("runs/{run}/tests/{test}/{segment:04}.jsonl")
}

/// Path of a fingerprint set written by one writer at one commit.
pub fn secrets_path(run: &RunId, writer: &str, n: u32) -> String {
    format!("runs/{run}/secrets/{writer}-{n:04}.json")
}

/// Path of a blob.
pub fn blob_path(sha256_hex: &str) -> String {
    let prefix = sha256_hex.get(..2).unwrap_or("00");
    format!("blobs/sha256/{prefix}/{sha256_hex}")
}

/// What an entry path means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryPath {
    /// `mimetype`
    MimeType,
    /// `runs/{run}/manifest.json`
    Manifest(RunId),
    /// `runs/{run}/tests/{test}/{segment}.jsonl`
    Segment(RunId, TestId, u32),
    /// `blobs/sha256/{hh}/{hex}`
    Blob(String),
    /// `runs/{run}/secrets/{name}.json`
    Secrets(RunId),
    /// `merge.json`
    Merge,
    /// Anything else: ignored by this version.
    Other,
}

impl EntryPath {
    /// Classifies an entry name.
    pub fn parse(name: &str) -> EntryPath {
        if name == MIME_TYPE_ENTRY {
            return EntryPath::MimeType;
        }
        if name == MERGE_ENTRY {
            return EntryPath::Merge;
        }
        if let Some(hex) = blob_sha(name) {
            return EntryPath::Blob(hex.to_owned());
        }
        let parts: Vec<&str> = name.split('/').collect();
        match parts.as_slice() {
            ["runs", run, "manifest.json"] => RunId::new(*run)
                .map(EntryPath::Manifest)
                .unwrap_or(EntryPath::Other),
            ["runs", run, "tests", test, file] => {
                let (Ok(run), Ok(test)) = (RunId::new(*run), test.parse::<TestId>()) else {
                    return EntryPath::Other;
                };
                match file.strip_suffix(".jsonl").and_then(|n| n.parse::<u32>().ok()) {
                    Some(segment) => EntryPath::Segment(run, test, segment),
                    None => EntryPath::Other,
                }
            }
            ["runs", run, "secrets", file] if file.ends_with(".json") => RunId::new(*run)
                .map(EntryPath::Secrets)
                .unwrap_or(EntryPath::Other),
            _ => EntryPath::Other,
        }
    }
}

/// The hex digest a blob entry's name ends with (`blobs/sha256/{hh}/{hex}`), or `None` when
/// the name is not a blob's: what [`EntryPath::parse`] finds for a blob, without classifying
/// every other entry. A writer joining an archive looks for its blobs among every entry, and
/// classifying each one was a quarter of its first commit.
///
/// ```
/// use kit_trace::format::{blob_path, blob_sha};
///
/// let hex = "ab".repeat(32);
/// assert_eq!(blob_sha(&blob_path(&hex)), Some(hex.as_str()));
/// assert_eq!(blob_sha(&format!("blobs/sha256/cd/{hex}")), None); // not under its first two digits
/// assert_eq!(blob_sha("runs/r/manifest.json"), None);
/// ```
pub fn blob_sha(name: &str) -> Option<&str> {
    let (prefix, hex) = name.strip_prefix("blobs/sha256/")?.split_once('/')?;
    (hex.len() == 64 && hex.get(..2) == Some(prefix) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(hex)
}

/// Why an entry name is refused: it could escape a folder if extracted, or is not a plain
/// relative path. Readers refuse the whole archive rather than skip such an entry.
pub fn unsafe_name_reason(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.starts_with('/') || name.starts_with('\\') {
        Some("it is an absolute path")
    } else if name.contains('\\') {
        Some("it contains a backslash")
    } else if name.contains('\0') {
        Some("it contains a NUL byte")
    } else if name.as_bytes().get(1) == Some(&b':') {
        Some("it starts with a drive letter")
    } else if name.split('/').any(|part| part == "..") {
        Some("it contains a '..' component")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let run = RunId::new("r-1").unwrap();
        let test = TestId::generate();
        assert_eq!(
            EntryPath::parse(&segment_path(&run, test, 7)),
            EntryPath::Segment(run.clone(), test, 7)
        );
        assert_eq!(
            EntryPath::parse(&manifest_path(&run)),
            EntryPath::Manifest(run.clone())
        );
        assert_eq!(
            EntryPath::parse(&secrets_path(&run, "w-1", 3)),
            EntryPath::Secrets(run.clone())
        );
        assert_eq!(
            EntryPath::parse("runs/r-1/secrets/w-1-0003.txt"),
            EntryPath::Other
        );
        let hex = "ab".repeat(32);
        // A blob's name is its whole SHA-256 in hex, under a folder of its first two digits.
        for bad in [
            format!("blobs/sha256/cd/{hex}"),
            format!("blobs/sha256/ab/{}", &hex[..62]),
            format!("blobs/sha256/ab/ab{}", "zz".repeat(31)),
        ] {
            assert_eq!(EntryPath::parse(&bad), EntryPath::Other, "{bad}");
        }
        assert_eq!(EntryPath::parse(&blob_path(&hex)), EntryPath::Blob(hex.clone()));
        assert_eq!(blob_sha(&blob_path(&hex)), Some(hex.as_str()));
        // Names near a blob's are not one, for `blob_sha` or for `parse`: a folder other than
        // exactly the digest's first two digits (as `blob_path` puts it), a segment or a
        // character too many, no folder, another algorithm, another root.
        for name in [
            format!("blobs/sha256/cd/{hex}"),
            format!("blobs/sha256//{hex}"),
            format!("blobs/sha256/a/{hex}"),
            format!("blobs/sha256/ab/{hex}/x"),
            format!("blobs/sha256/ab/{hex}x"),
            format!("blobs/sha256/{hex}"),
            format!("blobs/sha1/ab/{hex}"),
            format!("xblobs/sha256/ab/{hex}"),
        ] {
            assert_eq!(blob_sha(&name), None, "{name}");
            assert_eq!(EntryPath::parse(&name), EntryPath::Other, "{name}");
        }
        assert_eq!(
            EntryPath::parse("runs/r/tests/not-a-uuid/0000.jsonl"),
            EntryPath::Other
        );
    }

    #[test]
    fn escaping_names_are_refused() {
        for bad in ["../../x", "a/../../b", "/etc/passwd", "C:/x", "a\\b", ""] {
            assert!(unsafe_name_reason(bad).is_some(), "{bad}");
        }
        assert!(unsafe_name_reason("runs/r/manifest.json").is_none());
        assert!(unsafe_name_reason("a/..b/c").is_none());
    }

    #[test]
    fn versions_parse_and_order() {
        let v: FormatVersion = "2.10".parse().unwrap();
        assert!(v > FORMAT_VERSION);
        assert!("1.10".parse::<FormatVersion>().unwrap() < FORMAT_VERSION);
        assert!("2".parse::<FormatVersion>().is_err());
    }
}
