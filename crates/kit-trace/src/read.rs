//! The archive reader. All use of the `zip` crate lives in this module.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, TryLockError};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kit_core::file::NotAFile;
use kit_core::redact::FingerprintSet;
use kit_core::{Event, EventKind, RunId, TestId, TestOutcome, TestStarted, Timestamp};

use crate::TraceError;
use crate::format::{
    self, EntryPath, FORMAT_VERSION, MAX_BLOB_BYTES, MAX_SEGMENT_BYTES, MAX_SMALL_ENTRY_BYTES, MIME_TYPE,
    RunManifest, SegmentHeader,
};
use crate::zipfile;

/// The name a test is read back with when none of its events is `test_started` (only events
/// published by hand, outside a test's context, make one).
pub const NO_START: &str = "(a test with no test_started event)";

/// One test, read back: its start, outcome and every event, in sequence order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TestRecord {
    /// The run.
    pub run_id: RunId,
    /// The test.
    pub test_id: TestId,
    /// Its name.
    pub name: String,
    /// What its start event said (application, location, …); named [`NO_START`] when it
    /// has none.
    pub started: TestStarted,
    /// When it started.
    pub started_at: Timestamp,
    /// How it ended; [`TestOutcome::Interrupted`] when it never did.
    pub outcome: TestOutcome,
    /// How long it ran, when it finished.
    pub duration: Option<Duration>,
    /// Every event, in sequence order: `test_started` first in every test the kit runs.
    pub events: Vec<Event>,
}

/// Caps on what a reader inflates, and on how long it waits for a writer. Declared sizes can
/// lie (zip bombs), so each size cap is enforced on the bytes actually inflated.
///
/// ```
/// use std::time::Duration;
/// use kit_trace::ReaderLimits;
///
/// let limits = ReaderLimits::default()
///     .with_max_segment_bytes(64 * 1024 * 1024)
///     .with_max_blob_bytes(16 * 1024 * 1024)
///     .with_lock_timeout(Duration::from_secs(5));
/// assert_eq!(limits.max_blob_bytes, 16 * 1024 * 1024);
/// assert_eq!(limits.lock_timeout, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReaderLimits {
    /// Largest segment (one part of one test's events).
    pub max_segment_bytes: u64,
    /// Largest blob (one attachment).
    pub max_blob_bytes: u64,
    /// How long opening waits for a writer's commit in progress (its lock) before failing
    /// with [`TraceError::LockTimedOut`] (default 60 s, as long as a writer waits).
    pub lock_timeout: Duration,
}

impl Default for ReaderLimits {
    fn default() -> Self {
        ReaderLimits {
            max_segment_bytes: MAX_SEGMENT_BYTES,
            max_blob_bytes: MAX_BLOB_BYTES,
            lock_timeout: Duration::from_secs(60),
        }
    }
}

impl ReaderLimits {
    /// The same limits with another segment cap.
    pub fn with_max_segment_bytes(mut self, bytes: u64) -> Self {
        self.max_segment_bytes = bytes;
        self
    }

    /// The same limits with another blob (attachment) cap.
    pub fn with_max_blob_bytes(mut self, bytes: u64) -> Self {
        self.max_blob_bytes = bytes;
        self
    }

    /// The same limits with another wait for a writer's lock.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }
}

/// A run in an archive.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunSummary {
    /// The run id.
    pub run_id: RunId,
    /// Its manifest; `None` if it was lost (salvaged archives).
    pub manifest: Option<RunManifest>,
    /// Its tests, in the order they started.
    pub tests: Vec<TestId>,
}

/// How a damaged archive was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Salvage {
    /// Whole entries recovered.
    pub entries: usize,
    /// Bytes after the last whole entry that were left out.
    pub dropped_bytes: u64,
}

/// The file as the `zip` crate sees it: its first `prefix` bytes, followed by `tail` (nothing
/// for a whole archive; a central directory made in memory for a salvaged one).
///
/// Reads are positioned (`pread`), each source keeping its own position, so clones of a reader
/// read the one open file from several threads at once. A whole archive is read as long as it
/// was when opened: bytes a writer appends later belong to a directory this reader never saw.
///
/// The zip crate reads in pieces of tens of bytes: a directory record and its name, an entry's
/// header and its name. Each was a `pread` of its own: 47 532 of them for one report of the
/// report bench's archive (10 000 tests), now 1 006. So small reads are served from
/// [`READ_AHEAD`] bytes read at once, never past `prefix`.
#[derive(Clone)]
struct Source {
    file: Arc<File>,
    prefix: u64,
    tail: Arc<[u8]>,
    pos: u64,
    /// Bytes of the file from `ahead_at` on, read ahead of the zip crate's small reads.
    ahead: Vec<u8>,
    ahead_at: u64,
}

/// How much a small read reads ahead: a few tests' entries, or some 500 directory records.
const READ_AHEAD: usize = 64 * 1024;

impl Source {
    fn new(file: File, prefix: u64, tail: Vec<u8>) -> Self {
        Source {
            file: Arc::new(file),
            prefix,
            tail: Arc::from(tail),
            pos: 0,
            ahead: Vec::new(),
            ahead_at: 0,
        }
    }

    /// Reads from the file (`self.pos < self.prefix`), through the read-ahead buffer unless
    /// `buf` is as large as it.
    fn read_file(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.prefix - self.pos).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let buffered = self
            .pos
            .checked_sub(self.ahead_at)
            .and_then(|skip| usize::try_from(skip).ok())
            .filter(|&skip| skip < self.ahead.len());
        let skip = match buffered {
            Some(skip) => skip,
            None if want >= READ_AHEAD => return read_at(&self.file, &mut buf[..want], self.pos),
            None => {
                self.ahead.resize(READ_AHEAD.min(left), 0);
                self.ahead_at = self.pos;
                match read_at(&self.file, &mut self.ahead, self.pos) {
                    Ok(n) => self.ahead.truncate(n),
                    Err(e) => {
                        self.ahead.clear();
                        return Err(e);
                    }
                }
                0
            }
        };
        let n = want.min(self.ahead.len() - skip);
        buf[..n].copy_from_slice(&self.ahead[skip..skip + n]);
        Ok(n)
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = if self.pos < self.prefix {
            self.read_file(buf)?
        } else {
            // Past the end (a seek may go there), `get` finds nothing to read.
            let at = usize::try_from(self.pos - self.prefix).unwrap_or(usize::MAX);
            let rest = self.tail.get(at..).unwrap_or_default();
            let n = buf.len().min(rest.len());
            buf[..n].copy_from_slice(&rest[..n]);
            n
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let end = self.prefix + self.tail.len() as u64;
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => end.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before start"))?;
        Ok(self.pos)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // Moves the handle's own position too; no reader relies on it.
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Reads a `.kittrace` archive, one test at a time.
///
/// Opening reads only the directory and the manifests; [`tests`](Self::tests) then reads each
/// test's segments as it is reached, so memory grows with the largest test, not with the run.
/// An archive whose writer was killed is salvaged: every whole entry is kept, and a test that
/// started but never finished reads back as [`TestOutcome::Interrupted`].
///
/// A clone reads the same open file on its own (reads are positioned), so threads can share
/// the work of reading one archive: each takes every n-th test (`tests().skip(k).step_by(n)`
/// reads only those).
///
/// ```no_run
/// use kit_trace::ArchiveReader;
///
/// let mut reader = ArchiveReader::open("TestResults/kit-run.kittrace")?;
/// let mut other = reader.clone();
/// let (evens, odds) = std::thread::scope(|s| {
///     let odds = s.spawn(move || other.tests().skip(1).step_by(2).count());
///     (reader.tests().step_by(2).count(), odds.join().unwrap())
/// });
/// assert_eq!(evens + odds, reader.test_count());
/// # Ok::<(), kit_trace::TraceError>(())
/// ```
#[derive(Clone)]
pub struct ArchiveReader {
    path: PathBuf,
    zip: zip::ZipArchive<Source>,
    salvage: Option<Salvage>,
    limits: ReaderLimits,
    runs: Vec<RunSummary>,
    /// Run id → test id → segment number → entry index.
    segments: HashMap<RunId, HashMap<TestId, BTreeMap<u32, usize>>>,
    blobs: HashMap<String, usize>,
    /// Entries holding fingerprint sets.
    secret_entries: Vec<usize>,
    inflater: Inflater,
}

/// What a reader inflates entries with, kept from one entry to the next. Read through the `zip`
/// crate, every entry made a buffered reader, a decompressor and its window: about a tenth of
/// the allocator's work in a report's reader threads, which parse every test.
struct Inflater {
    /// Whole entries, in one call into a buffer of their declared size.
    whole: libdeflater::Decompressor,
    /// Entries the whole-entry inflater does not finish as declared, streamed again: their
    /// errors are worded from what they really hold.
    decompress: flate2::Decompress,
    /// The entry's bytes as stored.
    compressed: Vec<u8>,
    /// The last segment's bytes, given back once parsed: the next entry is inflated over them
    /// and only the room it adds is zeroed.
    inflated: Vec<u8>,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater {
            whole: libdeflater::Decompressor::new(),
            // Zip entries are raw deflate streams, without zlib's header.
            decompress: flate2::Decompress::new(false),
            compressed: Vec::new(),
            inflated: Vec::new(),
        }
    }
}

impl Clone for Inflater {
    /// A fresh one: a clone reads on its own.
    fn clone(&self) -> Self {
        Inflater::default()
    }
}

/// The most bytes an [`Inflater`] keeps room for between entries, stored or inflated
/// (segments are far smaller; blobs can be larger).
const KEPT_ROOM: usize = 1024 * 1024;

/// The most a deflate stream can grow its bytes by (258 bytes from two bits, with the block
/// headers): an entry declaring more than this of what it stores lies, and is streamed.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// Why an entry could not be inflated.
enum InflateError {
    /// It inflates to more than the cap.
    TooLarge,
    /// Not a deflate stream this reader can finish.
    Bad(String),
}

impl Inflater {
    /// Takes back a segment's bytes once they are parsed, unless they are large.
    fn give_back(&mut self, inflated: Vec<u8>) {
        if inflated.capacity() <= KEPT_ROOM {
            self.inflated = inflated;
        }
    }

    /// Inflates `self.compressed`, which declares `size` bytes, into at most `limit` bytes.
    ///
    /// In one call when the entry holds what it declares. zlib-rs streams, and copies the
    /// last 32 KiB of every entry into its window even when the entry ends in the call: with
    /// that copy, inflating was a third of a report's reader threads. An entry that holds
    /// more or less than it declares, or is broken, is streamed again: a size that lies then
    /// costs no more than a buffer of that size (which deflate's ratio bounds), and the error
    /// is the streaming one.
    fn inflate(&mut self, size: u64, limit: u64) -> Result<Vec<u8>, InflateError> {
        let plausible = size <= (self.compressed.len() as u64).saturating_mul(MAX_DEFLATE_RATIO);
        if size <= limit
            && plausible
            && let Ok(len) = usize::try_from(size)
        {
            let mut out = std::mem::take(&mut self.inflated);
            out.resize(len, 0);
            if self.whole.deflate_decompress(&self.compressed, &mut out) == Ok(len) {
                return Ok(out);
            }
            self.inflated = out;
        }
        self.inflate_streaming(size, limit)
    }

    /// [`Inflater::inflate`] by streaming. The output grows as it fills (never past
    /// `limit + 1`), so a size that lies costs nothing.
    fn inflate_streaming(&mut self, size: u64, limit: u64) -> Result<Vec<u8>, InflateError> {
        self.decompress.reset(false);
        let cap = limit.saturating_add(1);
        let mut out: Vec<u8> = Vec::with_capacity(size.min(cap) as usize + 1);
        loop {
            if out.len() == out.capacity() {
                let room = (cap - out.len() as u64).min(out.len().max(64 * 1024) as u64);
                if room == 0 {
                    return Err(InflateError::TooLarge);
                }
                out.reserve_exact(room as usize);
            }
            let (read, written) = (self.decompress.total_in(), self.decompress.total_out());
            let input = self.compressed.get(read as usize..).unwrap_or_default();
            let status = self
                .decompress
                .decompress_vec(input, &mut out, flate2::FlushDecompress::Finish)
                .map_err(|e| InflateError::Bad(format!("its deflate data is corrupt ({e})")))?;
            if out.len() as u64 > limit {
                return Err(InflateError::TooLarge);
            }
            if status == flate2::Status::StreamEnd {
                return Ok(out);
            }
            let stuck = self.decompress.total_in() == read && self.decompress.total_out() == written;
            if stuck && out.len() < out.capacity() {
                return Err(InflateError::Bad("its deflate data ends early".into()));
            }
        }
    }
}

impl std::fmt::Debug for ArchiveReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveReader")
            .field("path", &self.path)
            .field("salvage", &self.salvage)
            .field("runs", &self.runs.len())
            .finish_non_exhaustive()
    }
}

impl ArchiveReader {
    /// Opens an archive, salvaging it if its end was cut off. A path naming a folder, a pipe
    /// or a device is refused ([`TraceError::NotAnArchive`]) without being opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        Self::open_with(path, ReaderLimits::default())
    }

    /// Opens an archive with other caps on what it inflates.
    pub fn open_with(path: impl AsRef<Path>, limits: ReaderLimits) -> Result<Self, TraceError> {
        let path = path.as_ref().to_owned();
        let io_err = |action, source| TraceError::Io {
            path: path.clone(),
            action,
            source,
        };
        // What is there but no file is refused before it is opened: opening a named pipe waits
        // for a writer, and no reason would be found after. A path that cannot be read at all
        // is left to `open`, whose error says why.
        if let Ok(metadata) = std::fs::metadata(&path)
            && let Some(reason) = not_a_file(&metadata.file_type())
        {
            return Err(not_an_archive(&path, &reason));
        }
        // Writers append under this lock; holding it shared while the directory is read means
        // we never see a half-written one. Entries before it never change afterwards.
        let _lock = shared_lock(&path, limits.lock_timeout)?;
        let file = File::open(&path).map_err(|e| io_err("open", e))?;
        let len = file.metadata().map_err(|e| io_err("read the size of", e))?.len();
        if len == 0 {
            return Err(not_an_archive(&path, "the file is empty"));
        }
        let mut magic = [0u8; 4];
        let head = (&file).take(4).read(&mut magic).map_err(|e| io_err("read", e))?;
        if head < 4 || magic != *b"PK\x03\x04" {
            return Err(not_an_archive(&path, "it is not a zip file"));
        }
        let (source, salvage, directory) = match zipfile::read_directory(&file, len) {
            Ok(directory) => (Source::new(file, len, Vec::new()), None, directory),
            Err(_) => {
                let salvaged = zipfile::salvage(&file, len).map_err(|e| io_err("read", e))?;
                if salvaged.directory.entries.is_empty() {
                    return Err(not_an_archive(&path, "no whole entry could be recovered from it"));
                }
                let salvage = Salvage {
                    entries: salvaged.directory.entries.len(),
                    dropped_bytes: salvaged.dropped_bytes,
                };
                let source = Source::new(
                    file,
                    salvaged.directory.end_of_entries,
                    zipfile::directory_bytes(&salvaged.directory),
                );
                (source, Some(salvage), salvaged.directory)
            }
        };
        let zip = zip::ZipArchive::new(source).map_err(|e| not_an_archive(&path, &e.to_string()))?;
        // The zip crate keys entries by name and keeps one of each: the other would be read by
        // nothing, not even `kit-cli audit`'s search for leaked secrets. No writer of ours
        // names an entry twice.
        if zip.has_duplicate_names() {
            let mut seen = std::collections::HashSet::new();
            let twice = directory
                .entries
                .iter()
                .find(|entry| !seen.insert(entry.name.as_str()))
                .map_or("?", |entry| entry.name.as_str());
            return Err(not_an_archive(
                &path,
                &format!(
                    "its directory lists `{twice}` more than once, and a reader would see only one of them"
                ),
            ));
        }
        let mut reader = ArchiveReader {
            path,
            zip,
            salvage,
            limits,
            runs: Vec::new(),
            segments: HashMap::new(),
            blobs: HashMap::new(),
            secret_entries: Vec::new(),
            inflater: Inflater::default(),
        };
        reader.index()?;
        Ok(reader)
    }

    fn index(&mut self) -> Result<(), TraceError> {
        let mut names = Vec::with_capacity(self.zip.len());
        for i in 0..self.zip.len() {
            let name = match self.zip.name_for_index(i) {
                Some(Ok(name)) => name.into_owned(),
                _ => {
                    return Err(not_an_archive(
                        &self.path,
                        &format!("entry {i} has an unreadable name"),
                    ));
                }
            };
            if let Some(reason) = format::unsafe_name_reason(&name) {
                return Err(TraceError::UnsafeEntryName {
                    path: self.path.clone(),
                    name,
                    reason,
                });
            }
            names.push(name);
        }
        if names.first().map(String::as_str) != Some(format::MIME_TYPE_ENTRY) {
            return Err(not_an_archive(&self.path, "its first entry is not `mimetype`"));
        }
        let mime = self.read_entry(0, 256)?;
        if mime != MIME_TYPE.as_bytes() {
            return Err(not_an_archive(
                &self.path,
                "its `mimetype` entry names another format",
            ));
        }
        let mut manifests = Vec::new();
        // A set, not a `Vec` searched for each entry: an archive of many runs made that
        // quadratic in its entries.
        let mut order: BTreeSet<RunId> = BTreeSet::new();
        for (i, name) in names.iter().enumerate() {
            match EntryPath::parse(name) {
                EntryPath::Manifest(run) => {
                    order.insert(run.clone());
                    manifests.push((run, i));
                }
                EntryPath::Segment(run, test, segment) => {
                    order.insert(run.clone());
                    self.segments
                        .entry(run)
                        .or_default()
                        .entry(test)
                        .or_default()
                        .insert(segment, i);
                }
                EntryPath::Blob(sha) => {
                    self.blobs.insert(sha, i);
                }
                EntryPath::Secrets(_) => self.secret_entries.push(i),
                EntryPath::MimeType | EntryPath::Merge | EntryPath::Other => {}
            }
        }
        let mut manifest_of = HashMap::new();
        for (run, index) in manifests {
            let bytes = self.read_entry(index, MAX_SMALL_ENTRY_BYTES)?;
            let manifest: RunManifest = serde_json::from_slice(&bytes).map_err(|e| TraceError::BadEntry {
                path: self.path.clone(),
                entry: names[index].clone(),
                reason: e.to_string(),
            })?;
            if manifest.format_version.major > FORMAT_VERSION.major {
                return Err(TraceError::NewerFormat {
                    path: self.path.clone(),
                    found: manifest.format_version,
                    supported: FORMAT_VERSION,
                });
            }
            manifest_of.insert(run, manifest);
        }
        self.runs = order
            .into_iter()
            .map(|run_id| {
                let mut tests: Vec<TestId> = self
                    .segments
                    .get(&run_id)
                    .map(|t| t.keys().copied().collect())
                    .unwrap_or_default();
                tests.sort();
                RunSummary {
                    manifest: manifest_of.remove(&run_id),
                    run_id,
                    tests,
                }
            })
            .collect();
        Ok(())
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Some` when the archive was damaged and read by salvage.
    pub fn salvage(&self) -> Option<Salvage> {
        self.salvage
    }

    /// The runs in the archive, by run id.
    pub fn runs(&self) -> &[RunSummary] {
        &self.runs
    }

    /// How many tests the archive holds, over all runs.
    pub fn test_count(&self) -> usize {
        self.runs.iter().map(|r| r.tests.len()).sum()
    }

    fn read_entry(&mut self, index: usize, limit: u64) -> Result<Vec<u8>, TraceError> {
        let bad = |reader: &Self, reason: String| TraceError::BadEntry {
            path: reader.path.clone(),
            entry: reader.entry_name(index),
            reason,
        };
        let too_large = |reader: &Self| TraceError::EntryTooLarge {
            path: reader.path.clone(),
            entry: reader.entry_name(index),
            limit,
        };
        // The stored bytes as they are; inflated here with this reader's own decompressor.
        // Stored data is as long as what it holds, and deflate adds a few bytes per 64 KiB
        // block at worst: more is not an entry of ours, and is not read.
        let stored_limit = limit.saturating_add(limit / 1024 * 5).saturating_add(1024);
        if self.inflater.compressed.capacity() > KEPT_ROOM {
            // The last entry was a large blob: its room is not kept for every entry after it.
            self.inflater.compressed = Vec::new();
        }
        self.inflater.compressed.clear();
        let read = self
            .zip
            .by_index_raw(index)
            .map_err(|e| e.to_string())
            .and_then(|mut entry| {
                // One that declares more than the cap is refused unread (below).
                if entry.size() <= limit {
                    (&mut entry)
                        .take(stored_limit.saturating_add(1))
                        .read_to_end(&mut self.inflater.compressed)
                        .map_err(|e| e.to_string())?;
                }
                Ok((entry.compression(), entry.size(), entry.crc32()))
            });
        let (method, size, crc) = match read {
            Ok(read) => read,
            Err(reason) => return Err(bad(self, reason)),
        };
        // The declared size can lie (zip bombs); the cap is enforced on the bytes inflated.
        if size > limit || self.inflater.compressed.len() as u64 > stored_limit {
            return Err(too_large(self));
        }
        let out = match method {
            // Handed over, not copied: a stored entry's bytes are what it holds, and the next
            // entry grows a buffer of its own.
            zip::CompressionMethod::Stored => std::mem::take(&mut self.inflater.compressed),
            zip::CompressionMethod::Deflated => match self.inflater.inflate(size, limit) {
                Ok(out) => out,
                Err(InflateError::TooLarge) => return Err(too_large(self)),
                Err(InflateError::Bad(reason)) => return Err(bad(self, reason)),
            },
            other => {
                return Err(bad(
                    self,
                    format!("it is compressed with {other}, which kittrace never uses"),
                ));
            }
        };
        if out.len() as u64 > limit {
            return Err(too_large(self));
        }
        if out.len() as u64 != size {
            return Err(bad(
                self,
                format!("it holds {} bytes but declares {size}", out.len()),
            ));
        }
        if crc32fast::hash(&out) != crc {
            return Err(bad(self, "its CRC-32 does not match its bytes".into()));
        }
        Ok(out)
    }

    /// Reads one test.
    pub fn read_test(&mut self, run: &RunId, test: TestId) -> Result<TestRecord, TraceError> {
        let segments: Vec<(u32, usize)> = self
            .segments
            .get(run)
            .and_then(|tests| tests.get(&test))
            .map(|s| s.iter().map(|(n, i)| (*n, *i)).collect())
            .unwrap_or_default();
        let mut events = Vec::new();
        for (segment, index) in segments {
            let bytes = self.read_entry(index, self.limits.max_segment_bytes)?;
            let entry = format::segment_path(run, test, segment);
            parse_segment(&self.path, &entry, (run, test), &bytes, &mut events)?;
            self.inflater.give_back(bytes);
        }
        events.sort_by_key(|e| e.sequence);
        let bad = |reason: &str| TraceError::BadEntry {
            path: self.path.clone(),
            entry: format::segment_path(run, test, 0),
            reason: reason.to_owned(),
        };
        let Some(first) = events.first() else {
            return Err(bad("the test has no events"));
        };
        // The kit's tests always start with `test_started`, but the writer archives whatever
        // the bus carries, and anyone may publish an event: a test without a start (or with
        // it out of place) still reads, rather than one stray event making every report of
        // the run refuse the archive.
        let (started, started_at) = events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::TestStarted(started) => Some((started.clone(), e.timestamp)),
                _ => None,
            })
            .unwrap_or_else(|| (TestStarted::new(NO_START), first.timestamp));
        let (outcome, duration) = match events.iter().rev().find_map(|e| match &e.kind {
            EventKind::TestFinished(f) => Some(f),
            _ => None,
        }) {
            Some(finished) => (finished.outcome.clone(), Some(finished.duration)),
            None => (TestOutcome::Interrupted, None),
        };
        Ok(TestRecord {
            run_id: run.clone(),
            test_id: test,
            name: started.name.clone(),
            started,
            started_at,
            outcome,
            duration,
            events,
        })
    }

    /// Every test of every run, read one at a time, runs in id order and tests in start order.
    pub fn tests(&mut self) -> Tests<'_> {
        let queue = self
            .runs
            .iter()
            .flat_map(|r| r.tests.iter().map(move |t| (r.run_id.clone(), *t)))
            .collect::<Vec<_>>()
            .into_iter();
        Tests { reader: self, queue }
    }

    /// The bytes of an attachment, wherever the archive keeps them: in the event itself (small
    /// attachments) or in a blob.
    pub fn attachment_bytes(&mut self, attachment: &kit_core::Attachment) -> Result<Vec<u8>, TraceError> {
        match &attachment.content {
            kit_core::AttachmentContent::Inline(bytes) => Ok(bytes.to_vec()),
            kit_core::AttachmentContent::Blob { sha256, .. } => self.blob(sha256),
            _ => Err(TraceError::BadEntry {
                path: self.path.clone(),
                entry: attachment.name.clone(),
                reason: "the attachment's content is of a kind this reader does not know".into(),
            }),
        }
    }

    /// The bytes of a blob, by its SHA-256 (lowercase hex).
    pub fn blob(&mut self, sha256: &str) -> Result<Vec<u8>, TraceError> {
        let Some(index) = self.blobs.get(sha256).copied() else {
            return Err(TraceError::BadEntry {
                path: self.path.clone(),
                entry: format::blob_path(sha256),
                reason: "no such blob".into(),
            });
        };
        self.read_entry(index, self.limits.max_blob_bytes)
    }
}

impl ArchiveReader {
    /// The fingerprints of every secret the archive's runs met (see
    /// [`kit_core::redact::LeakScanner`]).
    pub fn secret_fingerprints(&mut self) -> Result<Vec<FingerprintSet>, TraceError> {
        let mut sets = Vec::new();
        for index in self.secret_entries.clone() {
            let bytes = self.read_entry(index, MAX_SMALL_ENTRY_BYTES * 64)?;
            let set: FingerprintSet = serde_json::from_slice(&bytes).map_err(|e| TraceError::BadEntry {
                path: self.path.clone(),
                entry: self.entry_name(index),
                reason: e.to_string(),
            })?;
            sets.push(set);
        }
        Ok(sets)
    }

    /// How many entries the archive holds.
    pub fn entry_count(&self) -> usize {
        self.zip.len()
    }

    pub(crate) fn entry_name(&self, index: usize) -> String {
        match self.zip.name_for_index(index) {
            Some(Ok(name)) => name.into_owned(),
            _ => format!("#{index}"),
        }
    }

    /// The name and decompressed bytes of entry `index` (capped like every read), for tools
    /// that must look at every byte, such as `kit-cli audit`.
    pub fn entry(&mut self, index: usize) -> Result<(String, Vec<u8>), TraceError> {
        let name = self.entry_name(index);
        let limit = self.limits.max_segment_bytes.max(self.limits.max_blob_bytes);
        Ok((name, self.read_entry(index, limit)?))
    }
}

/// Iterator over the tests of an archive; see [`ArchiveReader::tests`].
pub struct Tests<'a> {
    reader: &'a mut ArchiveReader,
    queue: std::vec::IntoIter<(RunId, TestId)>,
}

impl Iterator for Tests<'_> {
    type Item = Result<TestRecord, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        let (run, test) = self.queue.next()?;
        Some(self.reader.read_test(&run, test))
    }
    /// Skips `n` tests without reading them, then reads one.
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        let (run, test) = self.queue.nth(n)?;
        Some(self.reader.read_test(&run, test))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.queue.size_hint()
    }
}

/// Parses one segment of `scope`'s test: the run and test its lines leave out (format 2).
fn parse_segment(
    path: &Path,
    entry: &str,
    scope: (&RunId, TestId),
    bytes: &[u8],
    events: &mut Vec<Event>,
) -> Result<(), TraceError> {
    let bad = |line: usize, reason: String| TraceError::BadEntry {
        path: path.to_owned(),
        entry: format!("{entry}:{line}"),
        reason,
    };
    // Validated once here, so the parser does not check every string again (from_slice would).
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        bad(line, "not UTF-8".into())
    })?;
    // Lines are numbered as the non-empty ones they are: the header is the first.
    let text = text.trim_start_matches('\n');
    let (header, rest) = text.split_once('\n').unwrap_or((text, ""));
    if header.is_empty() {
        return Err(bad(1, "the segment is empty".into()));
    }
    let header: SegmentHeader =
        serde_json::from_str(header).map_err(|e| bad(1, format!("bad segment header: {e}")))?;
    let mut count = 0u64;
    for (i, event) in Event::lines_in_scope(rest, scope.0, scope.1).enumerate() {
        events.push(event.map_err(|e| bad(i + 2, e.to_string()))?);
        count += 1;
    }
    if count != header.events {
        return Err(bad(
            1,
            format!("the header declares {} events but {count} follow", header.events),
        ));
    }
    Ok(())
}

fn not_an_archive(path: &Path, reason: &str) -> TraceError {
    TraceError::NotAnArchive {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Why what a path names cannot be read as an archive, when it is not a file (links followed).
fn not_a_file(kind: &std::fs::FileType) -> Option<String> {
    Some(match kit_core::file::not_a_file(kind)? {
        // An archive is read from its end (the central directory), which a pipe has not.
        NotAFile::NamedPipe => {
            "it is a pipe; an archive is read from its end, so save the stream to a file and name that"
                .to_owned()
        }
        other => format!("it is {other}, not a file"),
    })
}

fn shared_lock(path: &Path, timeout: Duration) -> Result<Option<File>, TraceError> {
    let mut lock_path = path.to_owned().into_os_string();
    lock_path.push(".lock");
    let Ok(file) = File::open(&lock_path) else {
        // No lock file: no writer of this archive ran here (or it was copied). Nothing to wait for.
        return Ok(None);
    };
    let started = Instant::now();
    loop {
        match file.try_lock_shared() {
            Ok(()) => return Ok(Some(file)),
            Err(TryLockError::WouldBlock) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(TraceError::LockTimedOut {
                    path: lock_path.into(),
                    waited: started.elapsed(),
                });
            }
            // A lock file we cannot lock (read-only medium): read without it.
            Err(TryLockError::Error(_)) => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A reader that read a large entry does not keep its room for the entries after it.
    #[test]
    fn a_large_entry_s_room_is_not_kept_for_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large.kittrace");
        let run = RunId::new("large").unwrap();
        let manifest = serde_json::to_vec(&RunManifest::new(run.clone(), "x")).unwrap();
        // Bytes deflate cannot shrink, so the stored form is as large as they are.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: Vec<u8> = (0..3 * KEPT_ROOM)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, data) in [
            (format::MIME_TYPE_ENTRY.to_owned(), MIME_TYPE.as_bytes()),
            (format::manifest_path(&run), manifest.as_slice()),
            (format::blob_path(&"ab".repeat(32)), noise.as_slice()),
        ] {
            let options =
                zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
            zip.start_file(name, options).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();

        let mut reader = ArchiveReader::open(&path).unwrap();
        let (_, blob) = reader.entry(2).unwrap();
        assert_eq!(blob, noise);
        assert!(reader.inflater.compressed.capacity() > KEPT_ROOM);
        let (_, manifest_read) = reader.entry(1).unwrap();
        assert_eq!(manifest_read, manifest);
        assert!(reader.inflater.compressed.capacity() <= KEPT_ROOM);
    }

    /// What an inflater makes of `compressed` declaring `size`, as a comparable result.
    fn inflated(
        inflater: &mut Inflater,
        compressed: &[u8],
        size: u64,
        limit: u64,
        whole: bool,
    ) -> Result<Vec<u8>, String> {
        inflater.compressed = compressed.to_vec();
        let result = if whole {
            inflater.inflate(size, limit)
        } else {
            inflater.inflate_streaming(size, limit)
        };
        result.map_err(|e| match e {
            InflateError::TooLarge => "too large".to_owned(),
            InflateError::Bad(reason) => reason,
        })
    }

    /// Streamed, an entry as large as the cap reads, one byte more does not; and a stream
    /// that ends early is named so, whatever room is left.
    #[test]
    fn a_streamed_entry_reads_up_to_the_cap_and_no_further() {
        let text = vec![b'a'; 200_000];
        let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&text).unwrap();
        let compressed = encoder.finish().unwrap();
        let mut inflater = Inflater::default();
        for size in [0, 1, 200_000, 300_000] {
            assert_eq!(
                inflated(&mut inflater, &compressed, size, 200_000, false),
                Ok(text.clone()),
                "{size}"
            );
            assert_eq!(
                inflated(&mut inflater, &compressed, size, 199_999, false),
                Err("too large".to_owned()),
                "{size}"
            );
        }
        let cut = &compressed[..compressed.len() / 2];
        for size in [0, 200_000] {
            assert_eq!(
                inflated(&mut inflater, cut, size, 200_000, false),
                Err("its deflate data ends early".to_owned()),
                "{size}"
            );
        }
    }

    /// Small reads within a block come from the one read that filled it, not from the file
    /// again (a `pread` each was 47 532 syscalls for one report of the bench's archive): bytes
    /// changed in the file after the block was read are not seen until the next block. A
    /// read as large as a block goes to the file.
    #[cfg(unix)]
    #[test]
    fn small_reads_are_served_from_one_block_read_ahead() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![1u8; 2 * READ_AHEAD]).unwrap();
        let changer = file.try_clone().unwrap();
        let mut source = Source::new(file, 2 * READ_AHEAD as u64, Vec::new());
        let mut piece = [0u8; 46];
        source.read_exact(&mut piece).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&changer, &vec![2u8; 2 * READ_AHEAD], 0).unwrap();
        for _ in 0..100 {
            source.read_exact(&mut piece).unwrap();
            assert_eq!(piece, [1u8; 46], "read from the file again, not from the block");
        }
        source.seek(SeekFrom::Start(READ_AHEAD as u64)).unwrap();
        source.read_exact(&mut piece).unwrap();
        assert_eq!(piece, [2u8; 46], "the next block is read when it is reached");
        let mut large = vec![0u8; READ_AHEAD];
        source.seek(SeekFrom::Start(0)).unwrap();
        source.read_exact(&mut large).unwrap();
        assert!(large.iter().all(|&b| b == 2), "a large read goes to the file");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Read in pieces of any size from anywhere, the source gives the file's first `prefix`
        /// bytes, then its tail, as they are: across read-ahead blocks, past a read-ahead block
        /// a large read skipped, and from a clone that reads on its own.
        #[test]
        fn a_source_reads_its_bytes_however_it_is_read(
            file_len in 0usize..3 * READ_AHEAD,
            prefix_cut in 0usize..2000,
            tail_len in 0usize..300,
            reads in proptest::collection::vec((proptest::option::of(0u64..4 * READ_AHEAD as u64), 0usize..(READ_AHEAD + READ_AHEAD / 2)), 1..40),
        ) {
            let bytes: Vec<u8> = (0..file_len).map(|i| (i % 251) as u8).collect();
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(&bytes).unwrap();
            let prefix = file_len.saturating_sub(prefix_cut);
            let tail: Vec<u8> = (0..tail_len).map(|i| (i % 7) as u8 + 200).collect();
            let expected: Vec<u8> = bytes[..prefix].iter().chain(&tail).copied().collect();
            let mut source = Source::new(file, prefix as u64, tail);
            for (seek, len) in reads {
                if let Some(to) = seek {
                    source.seek(SeekFrom::Start(to)).unwrap();
                }
                let at = source.pos;
                let mut clone = source.clone();
                let mut buf = vec![0u8; len];
                let n = source.read(&mut buf).unwrap();
                let from = usize::try_from(at).unwrap().min(expected.len());
                let end = (from + n).min(expected.len());
                proptest::prop_assert_eq!(&buf[..n], &expected[from..end]);
                // Short reads only at a block's or the bytes' end; none that reads nothing early.
                proptest::prop_assert!(n > 0 || len == 0 || from == expected.len());
                let mut whole = Vec::new();
                clone.read_to_end(&mut whole).unwrap();
                proptest::prop_assert_eq!(&whole[..], &expected[from..]);
            }
        }
    }

    proptest::proptest! {
        /// Whole or streamed, an entry inflates alike: the bytes it holds, or the same error,
        /// whether it declares its size, a size too small or too large, or is cut or changed;
        /// and an inflater that read one entry reads the next alike (the kept buffer).
        #[test]
        fn an_entry_inflates_whole_as_it_streams(
            text in proptest::collection::vec(proptest::prop_oneof![proptest::num::u8::ANY, proptest::strategy::Just(b'a')], 0..3000),
            level in 0u32..10,
            size_change in -3i64..4,
            cut in proptest::option::of(0usize..200),
            flip in proptest::option::of((0usize..200, 1u8..=255)),
            limit in proptest::prop_oneof![proptest::strategy::Just(u64::MAX), 0u64..4000],
        ) {
            let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
            encoder.write_all(&text).unwrap();
            let mut compressed = encoder.finish().unwrap();
            if let Some(cut) = cut {
                compressed.truncate(cut.min(compressed.len()));
            }
            if let Some((at, bits)) = flip
                && let Some(byte) = compressed.get_mut(at)
            {
                *byte ^= bits;
            }
            let size = (text.len() as i64 + size_change).max(0) as u64;
            let mut whole = Inflater::default();
            let mut streaming = Inflater::default();
            // An entry that holds what it declares, under the cap, never reaches the stream.
            let honest = cut.is_none() && flip.is_none() && size_change == 0 && size <= limit;
            for _ in 0..2 {
                let read = inflated(&mut whole, &compressed, size, limit, true);
                if honest {
                    proptest::prop_assert_eq!(whole.decompress.total_in(), 0);
                }
                proptest::prop_assert_eq!(&read, &inflated(&mut streaming, &compressed, size, limit, false));
                if let Ok(bytes) = read {
                    whole.give_back(bytes);
                }
            }
        }
    }
}
