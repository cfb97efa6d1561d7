//! The archive writer: a [`Collector`] that makes each test durable as it ends.

use std::collections::HashSet;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use kit_core::redact::{FingerprintSet, SecretRegistry};
use kit_core::{Attachment, AttachmentContent, Collector, CollectorError, Event, EventKind, RunId, TestId};

use crate::TraceError;
use crate::format::{
    self, MIME_TYPE, MIME_TYPE_ENTRY, RunManifest, SegmentHeader, blob_path, manifest_path, secrets_path,
    segment_path,
};
use crate::zipfile::{self, ChunkedDeflate, Deflater, Layout, PreparedEntry};

/// How an [`ArchiveWriter`] writes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriterOptions {
    /// Deflate level, 0–9 (default 1: at level 3 the bus benchmark's archive row halves, 0.88
    /// M against 1.72 M events/s, for archives a fifth smaller: the report benchmark's is
    /// 26.1 MiB at level 3 and 32.7 MiB at level 1, 8.2× and 6.6×).
    pub compression_level: u32,
    /// A running test whose buffered events pass this many bytes commits them as an
    /// intermediate segment, so memory stays bounded on long tests (default 8 MiB).
    pub segment_limit: usize,
    /// How long to wait for another process's lock before failing the commit (default 60 s).
    pub lock_timeout: Duration,
    /// Attachments up to this many bytes stay in their event, in the segment; larger ones
    /// become content-addressed blobs (default 16 KiB). Every entry costs a record in the
    /// central directory, which each commit rewrites, so a blob per small response made
    /// commits grow with the archive; a small attachment also compresses better beside the
    /// event that carries the same body.
    pub inline_limit: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression_level: 1,
            segment_limit: 8 * 1024 * 1024,
            lock_timeout: Duration::from_secs(60),
            inline_limit: 16 * 1024,
        }
    }
}

impl WriterOptions {
    /// Sets the deflate level (0–9).
    pub fn with_compression_level(mut self, level: u32) -> Self {
        self.compression_level = level.min(9);
        self
    }

    /// Sets the size at which a running test commits an intermediate segment.
    pub fn with_segment_limit(mut self, bytes: usize) -> Self {
        self.segment_limit = bytes.max(1);
        self
    }

    /// Sets the size up to which attachments stay in their event (0: every attachment is a
    /// blob).
    pub fn with_inline_limit(mut self, bytes: usize) -> Self {
        self.inline_limit = bytes;
        self
    }

    /// Sets how long to wait for another process's lock.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }
}

/// What a writer has done, for diagnostics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterStats {
    /// Appends made to the archive.
    pub commits: u64,
    /// Events written.
    pub events: u64,
    /// Entries written (segments, blobs, manifests).
    pub entries: u64,
    /// Times the archive was found cut short (a writer killed mid-commit) and repaired.
    pub repairs: u64,
}

#[derive(Default)]
struct TestBuffer {
    segment: u32,
    /// The segment's event lines, deflated in chunks as they arrive.
    lines: ChunkedDeflate,
    events: u64,
    is_final: bool,
    blobs: Vec<(String, Arc<[u8]>)>,
}

impl TestBuffer {
    /// Makes the buffer as new for another test, keeping its allocations.
    fn empty(&mut self) {
        self.segment = 0;
        self.lines.reset();
        self.events = 0;
        self.is_final = false;
        self.blobs.clear();
    }
}

/// How many emptied test buffers a writer keeps for reuse: as many as tests commonly run at
/// once in one process.
const MAX_SPARE_BUFFERS: usize = 64;

/// A buffer holding more than this (a long test's) is freed rather than kept.
const MAX_SPARE_CAPACITY: usize = 512 * 1024;

/// What a writer notes of an archive's entries as it loads its layout.
#[derive(Default)]
struct Found {
    first_is_mimetype: Option<bool>,
    /// Digests of the blobs it holds.
    blobs: HashSet<String>,
    /// Whether it holds this run's manifest.
    manifest: bool,
}

/// What this process last wrote, to skip re-reading the directory when no other process
/// wrote since.
struct Cached {
    layout: Layout,
    len: u64,
    tail: Vec<u8>,
}

/// Writes `TestResults/kit-{runId}.kittrace`: a [`Collector`] that buffers each test's events
/// and, at each flush, appends the segments of tests that started or ended since the previous
/// one. The archive is a valid zip after every flush.
///
/// Several processes of one run (`cargo nextest run` runs each test in its own process) append
/// to one archive, taking turns through an exclusive lock on `kit-{runId}.kittrace.lock` beside
/// it. A writer that finds the archive cut short by a writer killed mid-commit keeps every
/// whole entry and carries on.
///
/// ```
/// use kit_core::*;
/// use kit_trace::{ArchiveReader, ArchiveWriter, RunManifest};
///
/// let dir = tempfile::tempdir().unwrap();
/// let run_id = RunId::new("doc-run").unwrap();
/// let writer = ArchiveWriter::create(dir.path(), RunManifest::new(run_id.clone(), "cargo-test")).unwrap();
/// let path = writer.path().to_owned();
/// let bus = Bus::builder().collector(writer).start();
/// let run = KitRun::new(KitBuilder::new(Configuration::new()).build().unwrap().host, bus, run_id);
///
/// let ctx = run.begin_test(TestStarted::new("archived"));
/// ctx.finish(TestOutcome::Passed).unwrap(); // flushes: the test is in the archive now
///
/// let mut reader = ArchiveReader::open(&path).unwrap();
/// let tests: Vec<_> = reader.tests().collect::<Result<_, _>>().unwrap();
/// assert_eq!(tests[0].name, "archived");
/// assert_eq!(tests[0].outcome, TestOutcome::Passed);
/// ```
pub struct ArchiveWriter {
    path: PathBuf,
    lock_path: PathBuf,
    /// The lock file and the archive, kept open between commits.
    lock_file: Option<File>,
    archive_file: Option<File>,
    manifest: RunManifest,
    options: WriterOptions,
    /// Fx hashing: the map is read for every event, and SipHash of the id cost a fiftieth
    /// of the dispatcher's instructions. Test ids are UUIDv7s the kit makes (random low
    /// bits), not input an adversary picks.
    tests: FxHashMap<TestId, TestBuffer>,
    /// Buffers of finished tests, emptied, for the next tests to start with: a fresh buffer
    /// grew its line and deflate buffers by reallocation, a tenth of the dispatcher's time
    /// with 32 tests running.
    spare: Vec<TestBuffer>,
    /// Tests with something to commit at the next flush, in the order they were marked.
    pending: Vec<TestId>,
    /// Blobs known to be in the archive (by this writer or, as of the last reload, others).
    blobs: HashSet<String>,
    /// Whether the run's manifest is in the archive, as of the last append or reload.
    manifest_written: bool,
    cache: Option<Cached>,
    deflater: Deflater,
    stats: WriterStats,
    /// A commit that failed inside `on_event`, reported by the next flush.
    deferred: Option<TraceError>,
    pid: u32,
    /// Secrets whose fingerprints go into the archive, and how many were stored already.
    secrets: Option<(Arc<SecretRegistry>, usize)>,
    /// Names this writer's fingerprint entries; unique per writer.
    writer_id: String,
    secret_sets: u32,
}

impl std::fmt::Debug for ArchiveWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveWriter")
            .field("path", &self.path)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The archive's file name for a run: `kit-{runId}.kittrace`.
pub fn archive_file_name(run_id: &RunId) -> String {
    format!("kit-{run_id}.{}", format::EXTENSION)
}

impl ArchiveWriter {
    /// A writer of `dir/kit-{runId}.kittrace` with default options. Creates `dir`; the archive
    /// itself is created by the first commit.
    pub fn create(dir: &Path, manifest: RunManifest) -> Result<Self, TraceError> {
        Self::with_options(dir, manifest, WriterOptions::default())
    }

    /// A writer with `options`.
    pub fn with_options(
        dir: &Path,
        manifest: RunManifest,
        options: WriterOptions,
    ) -> Result<Self, TraceError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, "create the results folder", e))?;
        let path = dir.join(archive_file_name(&manifest.run_id));
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        Ok(ArchiveWriter {
            path,
            lock_path: lock_path.into(),
            lock_file: None,
            archive_file: None,
            manifest,
            tests: FxHashMap::default(),
            spare: Vec::new(),
            pending: Vec::new(),
            blobs: HashSet::new(),
            manifest_written: false,
            cache: None,
            deflater: Deflater::new(options.compression_level),
            stats: WriterStats::default(),
            deferred: None,
            pid: std::process::id(),
            secrets: None,
            writer_id: TestId::generate().to_string(),
            secret_sets: 0,
            options,
        })
    }

    /// Stores, with each commit, the fingerprints of secrets `registry` has met since the
    /// previous one, so `kit-cli audit` can search the archive for them.
    pub fn with_secrets(mut self, registry: Arc<SecretRegistry>) -> Self {
        self.secrets = Some((registry, 0));
        self
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the writer has done so far.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    fn mark(&mut self, test: TestId) {
        if !self.pending.contains(&test) {
            self.pending.push(test);
        }
    }

    /// Appends every pending segment to the archive, under the lock.
    pub fn commit(&mut self) -> Result<(), TraceError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut segments = Vec::with_capacity(self.pending.len() + 1);
        // Compress outside the lock: other processes wait only for the file write.
        let mut blobs = Vec::new();
        let mut queued: HashSet<String> = HashSet::new();
        for test in &self.pending {
            let Some(buffer) = self.tests.get_mut(test) else {
                continue;
            };
            let header = SegmentHeader {
                test_id: *test,
                segment: buffer.segment,
                events: buffer.events,
                is_final: buffer.is_final,
                pid: self.pid,
            };
            let mut header = serde_json::to_vec(&header).map_err(|e| TraceError::Encode(e.to_string()))?;
            header.push(b'\n');
            let name = segment_path(&self.manifest.run_id, *test, buffer.segment);
            segments.push(
                buffer
                    .lines
                    .entry(&mut self.deflater, name, &header)
                    .map_err(|e| io_error(&self.path, "compress a segment", e))?,
            );
            for (sha, bytes) in &buffer.blobs {
                // The same body twice (a retried request, a fixed expected shape) is stored once.
                if !self.blobs.contains(sha) && !queued.contains(sha) {
                    queued.insert(sha.clone());
                    blobs.push((
                        sha.clone(),
                        deflate(&mut self.deflater, &self.path, blob_path(sha), bytes)?,
                    ));
                }
            }
        }

        let (fingerprints, fingerprints_end) = match &self.secrets {
            Some((registry, stored)) => registry.fingerprints_from(*stored),
            None => (Vec::new(), 0),
        };
        let stores_fingerprints = !fingerprints.is_empty();
        if stores_fingerprints {
            let salt = self.secrets.as_ref().map(|(r, _)| r.salt()).unwrap_or_default();
            let set = FingerprintSet {
                salt: salt.iter().map(|b| format!("{b:02x}")).collect(),
                fingerprints,
            };
            let json = serde_json::to_vec(&set).map_err(|e| TraceError::Encode(e.to_string()))?;
            let name = secrets_path(&self.manifest.run_id, &self.writer_id, self.secret_sets);
            segments.insert(0, deflate(&mut self.deflater, &self.path, name, &json)?);
        }

        self.lock()?;
        let result = self.append_locked(segments, blobs);
        let unlocked = self.unlock();
        result?;
        unlocked?;
        if stores_fingerprints && let Some((_, stored)) = &mut self.secrets {
            *stored = fingerprints_end;
            self.secret_sets += 1;
        }

        for test in std::mem::take(&mut self.pending) {
            let Some(buffer) = self.tests.get_mut(&test) else {
                continue;
            };
            if buffer.is_final {
                if let Some(mut done) = self.tests.remove(&test)
                    && self.spare.len() < MAX_SPARE_BUFFERS
                    && done.lines.capacity() <= MAX_SPARE_CAPACITY
                {
                    done.empty();
                    self.spare.push(done);
                }
            } else {
                buffer.segment += 1;
                buffer.lines.reset();
                buffer.events = 0;
                buffer.blobs.clear();
            }
        }
        Ok(())
    }

    /// Takes the exclusive lock, opening the lock file first if this writer holds none, or
    /// holds one that was deleted (another process would lock a new file of that name).
    fn lock(&mut self) -> Result<(), TraceError> {
        let io_err = |action, source| io_error(&self.lock_path, action, source);
        let started = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            let file = match self.lock_file.take() {
                Some(file) => file,
                None => open_read_write(&self.lock_path).map_err(|e| io_err("open the lock file", e))?,
            };
            match file.try_lock() {
                // Deleted before or while we waited: drop it, and lock the file at its path.
                Ok(()) if is_unlinked(&file) => continue,
                Ok(()) => {
                    self.lock_file = Some(file);
                    return Ok(());
                }
                Err(TryLockError::WouldBlock) if started.elapsed() < self.options.lock_timeout => {
                    self.lock_file = Some(file);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(TraceError::LockTimedOut {
                        path: self.lock_path.clone(),
                        waited: started.elapsed(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io_err("lock", e)),
            }
        }
    }

    fn unlock(&mut self) -> Result<(), TraceError> {
        let Some(file) = &self.lock_file else {
            return Ok(());
        };
        let unlocked = file.unlock();
        unlocked.map_err(|source| {
            // A lock we may still hold would stall every other process: close the file to
            // drop it for sure.
            self.lock_file = None;
            io_error(&self.lock_path, "unlock", source)
        })
    }

    fn append_locked(
        &mut self,
        segments: Vec<PreparedEntry>,
        blobs: Vec<(String, PreparedEntry)>,
    ) -> Result<(), TraceError> {
        let io_err = |action, source| io_error(&self.path, action, source);
        // The archive stays open from one commit to the next (opening and closing it and
        // the lock file was a quarter of a test end's commit), unless it was deleted or
        // replaced since: then the file at its path is the archive.
        let kept = match self.archive_file.take() {
            Some(file) => {
                let metadata = file
                    .metadata()
                    .map_err(|e| io_err("read the archive's size", e))?;
                (!metadata_is_unlinked(&metadata)).then_some((file, metadata.len()))
            }
            None => None,
        };
        let (file, len) = match kept {
            Some(kept) => kept,
            None => {
                self.cache = None;
                let file = open_archive(&self.path).map_err(|e| io_err("open the archive", e))?;
                let len = file
                    .metadata()
                    .map_err(|e| io_err("read the archive's size", e))?
                    .len();
                (file, len)
            }
        };
        let result = self.append_to(&file, len, segments, blobs);
        self.archive_file = Some(file);
        result
    }

    fn append_to(
        &mut self,
        file: &File,
        len: u64,
        segments: Vec<PreparedEntry>,
        blobs: Vec<(String, PreparedEntry)>,
    ) -> Result<(), TraceError> {
        let io_err = |action, source| io_error(&self.path, action, source);

        let reuse = match &self.cache {
            Some(cached) if cached.len == len => {
                zipfile::tail(file, len).map_err(|e| io_err("read the archive", e))? == cached.tail
            }
            _ => false,
        };
        // Whether the file's first entry is `mimetype`; `None` when it has no entries.
        let (mut layout, first_is_mimetype) = if let Some(cached) = self.cache.take().filter(|_| reuse) {
            // This writer's own append, which began with `mimetype` or found it.
            let first = (cached.layout.count() > 0).then_some(true);
            (cached.layout, first)
        } else {
            let manifest_name = manifest_path(&self.manifest.run_id);
            let (layout, found, salvaged) = zipfile::load(file, len, |found: &mut Found, name| {
                // Names as stored, unchecked: only a blob's is read as text.
                found
                    .first_is_mimetype
                    .get_or_insert(name == MIME_TYPE_ENTRY.as_bytes());
                if name.starts_with(b"blobs/") {
                    if let Some(sha) = std::str::from_utf8(name).ok().and_then(format::blob_sha) {
                        found.blobs.insert(sha.to_owned());
                    }
                } else if name == manifest_name.as_bytes() {
                    found.manifest = true;
                }
            })
            .map_err(|e| io_err("read the archive", e))?;
            if let Some(salvaged) = salvaged {
                // Nothing whole and more than a cut first entry: someone else's file.
                if salvaged.directory.entries.is_empty() && len > 256 {
                    return Err(TraceError::NotAnArchive {
                        path: self.path.clone(),
                        reason: "it exists and is not a kittrace archive; refusing to overwrite it".into(),
                    });
                }
                self.stats.repairs += 1;
            }
            // What the file holds now, whoever wrote it (a salvage may have dropped an entry
            // this writer made).
            self.blobs = found.blobs;
            self.manifest_written = found.manifest;
            (layout, found.first_is_mimetype)
        };

        let mut entries = Vec::with_capacity(segments.len() + blobs.len() + 2);
        match first_is_mimetype {
            None => entries.push(PreparedEntry::stored(
                MIME_TYPE_ENTRY,
                MIME_TYPE.as_bytes().to_vec(),
            )),
            Some(true) => {}
            Some(false) => {
                return Err(TraceError::NotAnArchive {
                    path: self.path.clone(),
                    reason: "its first entry is not `mimetype`; refusing to append to it".into(),
                });
            }
        }
        if !self.manifest_written {
            let json =
                serde_json::to_vec_pretty(&self.manifest).map_err(|e| TraceError::Encode(e.to_string()))?;
            entries.push(PreparedEntry::stored(manifest_path(&self.manifest.run_id), json));
        }
        let mut added_blobs = Vec::new();
        for (sha, entry) in blobs {
            // Another process may have stored it since the blobs were compressed.
            if !self.blobs.contains(&sha) {
                entries.push(entry);
                added_blobs.push(sha);
            }
        }
        entries.extend(segments);
        let count = entries.len() as u64;
        let appended = zipfile::append(file, len, &mut layout, &entries, zipfile::Room::Spare)
            .map_err(|e| io_err("append to the archive", e))?;
        self.manifest_written = true;
        self.blobs.extend(added_blobs);
        self.stats.commits += 1;
        self.stats.entries += count;
        self.cache = Some(Cached {
            layout,
            len: appended.len,
            tail: appended.tail,
        });
        Ok(())
    }

    fn write_event(&mut self, event: &Event) {
        let limit = self.options.segment_limit as u64;
        let spare = &mut self.spare;
        let buffer = self
            .tests
            .entry(event.test_id)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        let archived;
        let event = match &event.kind {
            EventKind::Attachment(Attachment {
                content: AttachmentContent::Inline(bytes),
                ..
            }) if bytes.len() > self.options.inline_limit => {
                let sha = sha256_hex(bytes);
                buffer.blobs.push((sha.clone(), Arc::clone(bytes)));
                let mut copy = event.clone();
                if let EventKind::Attachment(a) = &mut copy.kind {
                    a.content = AttachmentContent::Blob {
                        sha256: sha,
                        size: bytes.len() as u64,
                    };
                }
                archived = copy;
                &archived
            }
            _ => event,
        };
        let written = buffer.lines.write_with(&mut self.deflater, |line| {
            event.write_json_in_scope(line);
            line.push(b'\n');
        });
        if let Err(e) = written {
            self.deferred
                .get_or_insert(io_error(&self.path, "compress a segment", e));
            return;
        }
        buffer.events += 1;
        self.stats.events += 1;
        // A test's start and end are committed at the next flush; so is a segment that has
        // grown to the limit, which is also committed at once.
        let boundary = match event.kind {
            EventKind::TestStarted(_) => true,
            EventKind::TestFinished(_) => {
                buffer.is_final = true;
                true
            }
            _ => false,
        };
        let oversized = buffer.lines.len() >= limit;
        if boundary || oversized {
            self.mark(event.test_id);
        }
        if oversized && let Err(e) = self.commit() {
            self.deferred.get_or_insert(e);
        }
    }
}

fn deflate(
    deflater: &mut Deflater,
    path: &Path,
    name: String,
    data: &[u8],
) -> Result<PreparedEntry, TraceError> {
    PreparedEntry::deflated_with(deflater, name, data).map_err(|e| io_error(path, "compress an entry", e))
}

/// What failed, doing what, to which file.
fn io_error(path: &Path, action: &'static str, source: std::io::Error) -> TraceError {
    TraceError::Io {
        path: path.to_owned(),
        action,
        source,
    }
}

/// Whether `file` no longer has a name: deleted, or replaced by another file.
fn is_unlinked(file: &File) -> bool {
    file.metadata().is_ok_and(|m| metadata_is_unlinked(&m))
}

#[cfg(unix)]
fn metadata_is_unlinked(metadata: &std::fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(metadata) == 0
}

/// No cheap test elsewhere: a writer keeps the files it opened.
#[cfg(not(unix))]
fn metadata_is_unlinked(_: &std::fs::Metadata) -> bool {
    false
}

/// Opens `path` for reading and writing, creating it if needed and never truncating it.
fn open_read_write(path: &Path) -> std::io::Result<File> {
    read_write_options().open(path)
}

fn read_write_options() -> std::fs::OpenOptions {
    let mut options = File::options();
    options.read(true).write(true).create(true).truncate(false);
    options
}

/// The archive, opened so that reading it leaves its access time alone where the system
/// allows (Linux, to the file's owner). Each commit reads the archive's tail just after the
/// last commit wrote it, and under `relatime` (the usual mount option) such a read updates
/// the access time: the inode dirtied and journalled once more a commit, about 1 µs of the
/// 8 µs its reads and writes took in a loop on this machine. Anyone else opens it as usual.
fn open_archive(path: &Path) -> std::io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        if let Ok(no_atime) = i32::try_from(rustix::fs::OFlags::NOATIME.bits()) {
            match read_write_options().custom_flags(no_atime).open(path) {
                // Not the file's owner: the flag is refused, the file is not.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
                opened => return opened,
            }
        }
    }
    open_read_write(path)
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    out
}

impl Collector for ArchiveWriter {
    fn on_event(&mut self, event: &Event) {
        self.write_event(event);
        // On the dispatcher's thread, while the test that sent this runs: not on the test
        // process's way to its first test, where the writer is made, nor at the test's end.
        self.deflater.warm();
    }

    fn flush(&mut self) -> Result<(), CollectorError> {
        let deferred = self.deferred.take();
        let result = self.commit();
        match deferred.map_or(result, Err) {
            Ok(()) => Ok(()),
            Err(e) => Err(CollectorError::new(
                format!("trace archive {}", self.path.display()),
                e,
            )),
        }
    }

    /// Commits the tests that have ended. Tests still running wait for the next full flush
    /// (their requested start flush comes due) or for their own end: a test that ends soon
    /// after it starts is committed once, whole, however many other tests end meanwhile.
    fn flush_ended(&mut self) -> Result<(), CollectorError> {
        let (ended, running): (Vec<TestId>, Vec<TestId>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|test| self.tests.get(test).is_some_and(|b| b.is_final));
        self.pending = ended;
        let flushed = self.flush();
        // What did not commit (after a failure) stays pending, before the running tests.
        self.pending.extend(running);
        flushed
    }

    /// Commits everything still buffered, including tests that have not finished (they read
    /// back as interrupted).
    fn finish(&mut self) -> Result<(), CollectorError> {
        let unfinished: Vec<TestId> = self
            .tests
            .iter()
            .filter(|(_, b)| b.lines.len() > 0)
            .map(|(id, _)| *id)
            .collect();
        for test in unfinished {
            self.mark(test);
        }
        self.flush()
    }

    fn name(&self) -> std::borrow::Cow<'_, str> {
        "kit-trace archive writer".into()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use kit_core::{
        Attributes, Bus, Configuration, KitBuilder, KitRun, Observation, OperationStarted, OperationStatus,
        TestOutcome, TestStarted,
    };

    use super::*;

    /// Lends the bus a writer the test can look into between flushes.
    struct Shared(Arc<Mutex<ArchiveWriter>>);

    impl Collector for Shared {
        fn on_event(&mut self, event: &Event) {
            self.0.lock().unwrap().on_event(event);
        }
        fn flush(&mut self) -> Result<(), CollectorError> {
            self.0.lock().unwrap().flush()
        }
        fn flush_ended(&mut self) -> Result<(), CollectorError> {
            self.0.lock().unwrap().flush_ended()
        }
        fn finish(&mut self) -> Result<(), CollectorError> {
            self.0.lock().unwrap().finish()
        }
    }

    /// A run whose bus writes through a writer the test can look into.
    fn shared_run(dir: &Path, run_id: &str) -> (KitRun, Arc<Mutex<ArchiveWriter>>) {
        let run_id = RunId::new(run_id).unwrap();
        let manifest = RunManifest::new(run_id.clone(), "cargo-test");
        let writer = Arc::new(Mutex::new(ArchiveWriter::create(dir, manifest).unwrap()));
        let bus = Bus::builder().collector(Shared(Arc::clone(&writer))).start();
        let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
        (KitRun::new(host, bus, run_id), writer)
    }

    /// A test as the runner runs one: its start flushed, then `operations` requests of three
    /// events each, then its end.
    fn run_test(run: &KitRun, name: &str, operations: usize) {
        let ctx = run.begin_test(TestStarted::new(name));
        ctx.flush().unwrap();
        for _ in 0..operations {
            let op = ctx.start_operation(None, OperationStarted::new("http.request", "GET /"));
            op.observe(Observation::new("http.response", Attributes::new()));
            op.end(OperationStatus::Ok, Attributes::new());
        }
        ctx.finish(TestOutcome::Passed).unwrap();
    }

    /// A writer sets its compressor up on the dispatcher's thread once events come, before
    /// any commit needs it, not when it is made on a test process's way to its first test.
    #[test]
    fn the_writers_compressor_is_set_up_at_its_first_event_not_when_it_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let run_id = RunId::new("warm").unwrap();
        let manifest = RunManifest::new(run_id.clone(), "cargo-test");
        let writer = Arc::new(Mutex::new(ArchiveWriter::create(dir.path(), manifest).unwrap()));
        assert!(!writer.lock().unwrap().deflater.is_set_up());
        // No flush comes while the test looks: nothing is committed, nothing deflated.
        let bus = Bus::builder()
            .requested_flush_delay(Duration::from_secs(600))
            .collector(Shared(Arc::clone(&writer)))
            .start();
        let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
        let run = KitRun::new(host, bus, run_id);
        let ctx = run.begin_test(TestStarted::new("warms"));
        let started = std::time::Instant::now();
        while writer.lock().unwrap().stats().events == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the start never arrived"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let writer_now = writer.lock().unwrap();
        assert_eq!(writer_now.stats().commits, 0);
        assert!(writer_now.deflater.is_set_up());
        drop(writer_now);
        ctx.finish(TestOutcome::Passed).unwrap();
    }

    /// Each commit reads the archive's tail right after the last commit wrote it; under
    /// `relatime` that read wrote the access time too. On a file system mounted `noatime`
    /// this holds either way; on this repository's machines (`relatime`) it fails without
    /// `O_NOATIME`.
    #[cfg(target_os = "linux")]
    #[test]
    fn commits_leave_the_archives_access_time_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (run, writer) = shared_run(dir.path(), "atime");
        run_test(&run, "first", 1);
        let path = writer.lock().unwrap().path().to_owned();
        let accessed = || std::fs::metadata(&path).unwrap().accessed().unwrap();
        let before = accessed();
        // Past the kernel's coarse clock tick, so that an update would show.
        std::thread::sleep(Duration::from_millis(50));
        run_test(&run, "second", 1);
        assert!(writer.lock().unwrap().stats().commits >= 3);
        assert_eq!(accessed(), before);
    }

    #[test]
    fn the_writers_stats_count_its_commits_events_entries_and_repairs() {
        let dir = tempfile::tempdir().unwrap();
        let (run, writer) = shared_run(dir.path(), "stats");
        // Two commits: the start, then the rest.
        run_test(&run, "one", 2);
        // One commit, with a blob.
        let ctx = run.begin_test(TestStarted::new("two"));
        let body = "large ".repeat(4000).into_bytes();
        ctx.attach(None, Attachment::new("body", "text/plain", body));
        ctx.finish(TestOutcome::Passed).unwrap();
        let stats = writer.lock().unwrap().stats();
        assert_eq!(
            (stats.commits, stats.events, stats.repairs),
            (3, 2 + 2 * 3 + 3, 0)
        );
        // mimetype, manifest, three segments, one blob.
        assert_eq!(stats.entries, 6);
        let path = writer.lock().unwrap().path().to_owned();
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        assert_eq!(zipfile::read_directory(&file, len).unwrap().entries.len(), 6);

        // A killed writer's half-written append, which the next writer repairs once.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 30);
        std::fs::write(&path, &bytes).unwrap();
        let (run, writer) = shared_run(dir.path(), "stats");
        run_test(&run, "three", 1);
        run_test(&run, "four", 1);
        let stats = writer.lock().unwrap().stats();
        assert_eq!((stats.commits, stats.repairs), (4, 1));
    }

    #[test]
    fn emptied_buffers_are_kept_for_later_tests_up_to_a_count_and_a_size() {
        let dir = tempfile::tempdir().unwrap();
        let (run, writer) = shared_run(dir.path(), "spare");
        let debug = format!("{:?}", writer.lock().unwrap());
        assert!(
            debug.starts_with("ArchiveWriter {") && debug.contains("kit-spare.kittrace"),
            "{debug}"
        );
        let spare = || writer.lock().unwrap().spare.len();

        run.begin_test(TestStarted::new("short"))
            .finish(TestOutcome::Passed)
            .unwrap();
        assert_eq!(spare(), 1, "a short test's buffer is kept");

        // Events deflate cannot shrink much, about 300 bytes each in the buffer.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut noisy_test = |name: &str, events: usize| {
            let ctx = run.begin_test(TestStarted::new(name));
            for _ in 0..events {
                let noise: String = (0..128)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        format!("{:02x}", state as u8)
                    })
                    .collect();
                ctx.observe(
                    None,
                    Observation::new("noise", Attributes::new().with("n", noise)),
                );
            }
            ctx.finish(TestOutcome::Passed).unwrap();
        };
        noisy_test("medium", 200);
        assert_eq!(spare(), 1, "a buffer of some 60 KiB is kept");
        noisy_test("long", 2_000);
        assert_eq!(
            spare(),
            0,
            "the long test took the spare buffer and grew it too large to keep"
        );

        let running: Vec<_> = (0..MAX_SPARE_BUFFERS + 6)
            .map(|i| run.begin_test(TestStarted::new(format!("t{i}"))))
            .collect();
        for ctx in running {
            ctx.finish(TestOutcome::Passed).unwrap();
        }
        assert_eq!(spare(), MAX_SPARE_BUFFERS);
    }
}
