use std::path::PathBuf;
use std::time::Duration;

use crate::format::FormatVersion;

/// An archive could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// A file operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done (`open the archive`, …).
        action: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Another process held the archive's lock for too long.
    #[error("timed out after {waited:?} waiting for the lock {}; is another test process stuck?", path.display())]
    LockTimedOut {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// The file is not a kittrace archive.
    #[error("{} is not a kittrace archive: {reason}", path.display())]
    NotAnArchive {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An entry's name could escape a folder if extracted.
    #[error("{} holds an unsafe entry name {name:?} ({reason}); refusing to read it", path.display())]
    UnsafeEntryName {
        /// The archive.
        path: PathBuf,
        /// The entry name.
        name: String,
        /// Why it is unsafe.
        reason: &'static str,
    },
    /// An entry is larger than a reader accepts (a zip bomb, or a damaged size).
    #[error("entry {entry} of {} is larger than the {limit} bytes a reader accepts", path.display())]
    EntryTooLarge {
        /// The archive.
        path: PathBuf,
        /// The entry.
        entry: String,
        /// The limit.
        limit: u64,
    },
    /// An entry is damaged or does not hold what its name says.
    #[error("entry {entry} of {} is damaged: {reason}", path.display())]
    BadEntry {
        /// The archive.
        path: PathBuf,
        /// The entry (with `:line` for a bad JSON line).
        entry: String,
        /// What is wrong.
        reason: String,
    },
    /// The archive was written by a newer, incompatible version of the format.
    #[error(
        "{} uses kittrace format {found}, newer than the {supported} this kit reads; upgrade kit-cli to read it",
        path.display()
    )]
    NewerFormat {
        /// The archive.
        path: PathBuf,
        /// The version found.
        found: FormatVersion,
        /// The newest version this build reads.
        supported: FormatVersion,
    },
    /// A record could not be encoded.
    #[error("cannot encode a trace record: {0}")]
    Encode(String),
}
