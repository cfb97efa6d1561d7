//! A small zip appender and salvage scanner of our own.
//!
//! Why not `zip::ZipWriter::new_append`: it fails on a crash-truncated file, and it leaves the
//! old central directory behind as dead bytes on every append (200 appends: 1.52 MB against
//! 29.8 KB done this way). Here the file stays a valid zip after every append, with no dead
//! directory left behind.
//!
//! The central directory does not move at every append. After rewriting it, [`append`] leaves
//! room before it (a sixteenth of the entries' bytes, as a hole the file system does not
//! store); later entries go into that room, and only their records and a new end record are
//! written, over the old end record. Only when the room runs out is the whole directory
//! written again, further on. Rewriting it at every append cost a run quadratic time: 3 000
//! tests rewrote a 450 KiB directory 3 000 times. The room is dead space to a zip reader (the
//! directory says where every entry is) and to [`salvage`] (no entry follows it).
//!
//! Every entry carries its sizes and CRC-32 in its local header (no data descriptors). That is
//! what lets [`salvage`] walk an archive whose end was cut off, local header by local header,
//! and keep exactly the entries whose bytes are all there and check out.
//!
//! Reading entries for their content is left to the `zip` crate (see `crate::read`).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::DeflateDecoder;
use flate2::{Compress, Compression, FlushCompress, Status};

const LOCAL_HEADER_SIG: u32 = 0x0403_4b50;
const CENTRAL_HEADER_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD_LEN: u64 = 22;
const ZIP64_EOCD_LEN: u64 = 56;
const ZIP64_LOCATOR_LEN: u64 = 20;
const LOCAL_HEADER_LEN: u64 = 30;
const CENTRAL_HEADER_LEN: usize = 46;

/// General-purpose flag bit 11: names are UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
/// General-purpose flag bit 3: sizes follow the data. We never write it.
const FLAG_DATA_DESCRIPTOR: u16 = 1 << 3;

/// Stored (no compression).
pub(crate) const METHOD_STORED: u16 = 0;
/// Deflate.
pub(crate) const METHOD_DEFLATED: u16 = 8;

/// Largest entry this module writes; larger ones would need ZIP64 local headers.
pub(crate) const MAX_ENTRY_BYTES: u64 = u32::MAX as u64 - 1;
/// Largest central directory read back (a corrupt end record cannot make us allocate more).
const MAX_DIRECTORY_BYTES: u64 = 1 << 30;

/// One entry as the central directory describes it. Walking a directory lends each entry
/// with its name's bytes borrowed (`DirEntry<&[u8]>`): a writer joining an archive only
/// compares names with its own, and checking 10 000 of them for UTF-8 was a third of its
/// walk; a [`Directory`] keeps them owned, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirEntry<Name = String> {
    pub(crate) name: Name,
    pub(crate) method: u16,
    pub(crate) crc32: u32,
    pub(crate) compressed_size: u64,
    pub(crate) uncompressed_size: u64,
    pub(crate) local_header_offset: u64,
    pub(crate) dos_time: u16,
    pub(crate) dos_date: u16,
}

impl DirEntry<&[u8]> {
    /// The entry with its name owned, which must be UTF-8.
    fn to_owned_entry(&self) -> Result<DirEntry, DirectoryError> {
        let name = std::str::from_utf8(self.name)
            .map_err(|_| DirectoryError::Invalid("an entry name is not UTF-8"))?;
        Ok(DirEntry {
            name: name.to_owned(),
            method: self.method,
            crc32: self.crc32,
            compressed_size: self.compressed_size,
            uncompressed_size: self.uncompressed_size,
            local_header_offset: self.local_header_offset,
            dos_time: self.dos_time,
            dos_date: self.dos_date,
        })
    }
}

/// The entries of an archive, for reading it, and where the last one ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Directory {
    pub(crate) entries: Vec<DirEntry>,
    pub(crate) end_of_entries: u64,
}

/// What appending to a file needs to know of it: how many entries it has, where they end, and
/// where their central records are. A writer keeps this between appends, not the entries: it
/// reads a file's directory record by record through a small buffer and keeps nothing per
/// entry, and it reads the records themselves only when the directory moves. A test process
/// under nextest reads the run's whole directory before its first commit, under the lock
/// the other processes wait on; kept per entry (a name and a record each), 10 000 entries
/// cost 2.5 ms to load, most of it page faults on fresh memory (2.7 µs a page here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Entries in the file.
    count: u64,
    /// Where the next entry goes.
    pub(crate) end_of_entries: u64,
    /// Bytes of the central records of the `count` entries.
    records_len: u64,
    /// Where the file holds those records, whole, followed by the end records that end the
    /// file (this layout was read from the file or last written to it): an append whose
    /// entries fit before them writes only its own records after them.
    in_file_at: Option<u64>,
    /// The records, while the file does not hold them (`in_file_at` is `None`: entries
    /// written ahead of one last directory, or a salvaged file), or while an append that
    /// moves the directory writes them again; else empty.
    held: Vec<u8>,
}

/// A [`Layout`]'s figures before an append, to put back if it fails.
struct Saved {
    count: u64,
    end_of_entries: u64,
    records_len: u64,
    in_file_at: Option<u64>,
    held_len: usize,
}

impl Layout {
    /// The entries in the file.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The layout of a salvaged file: its records are not in it, so they are held.
    pub(crate) fn of(directory: &Directory) -> Self {
        let mut held = Vec::new();
        for entry in &directory.entries {
            encode_record(&mut held, entry);
        }
        Layout {
            count: directory.entries.len() as u64,
            end_of_entries: directory.end_of_entries,
            records_len: held.len() as u64,
            in_file_at: None,
            held,
        }
    }

    /// The layout of a file this module wrote, through its end record (see
    /// [`read_directory`]), giving each entry's name to `each_name` in order, as it is
    /// stored: not checked for UTF-8.
    pub(crate) fn read(
        file: &File,
        len: u64,
        mut each_name: impl FnMut(&[u8]),
    ) -> Result<Self, DirectoryError> {
        let end = read_end_record(file, len)?;
        let walked = walk_directory(file, &end, |entry| {
            each_name(entry.name);
            Ok(())
        })?;
        Ok(Layout {
            count: end.count,
            end_of_entries: walked.end_of_entries,
            records_len: walked.records_len,
            in_file_at: Some(end.directory_at),
            held: Vec::new(),
        })
    }

    /// Reads the records into memory when the file holds them, before anything is written
    /// where they are.
    fn hold_records(&mut self, file: &File) -> io::Result<()> {
        if let Some(at) = self.in_file_at
            && self.held.is_empty()
        {
            let len = usize::try_from(self.records_len)
                .map_err(|_| io::Error::other("the central directory does not fit in memory"))?;
            let mut held = vec![0u8; len];
            read_exact_at(file, at, &mut held)?;
            self.held = held;
        }
        Ok(())
    }

    fn save(&self) -> Saved {
        Saved {
            count: self.count,
            end_of_entries: self.end_of_entries,
            records_len: self.records_len,
            in_file_at: self.in_file_at,
            held_len: self.held.len(),
        }
    }

    /// Forgets what an append added before it failed.
    fn restore(&mut self, saved: Saved) {
        self.count = saved.count;
        self.end_of_entries = saved.end_of_entries;
        self.records_len = saved.records_len;
        self.in_file_at = saved.in_file_at;
        self.held.truncate(saved.held_len);
    }
}

/// A deflater reused across entries: setting one up allocates and clears its window and hash
/// tables (hundreds of kilobytes), which cost more than compressing a small entry. It is set
/// up when first used or [`warm`](Self::warm)ed, not when made: fresh memory costs this
/// machine 2.7 µs a page, 78 pages for zlib-rs at level 1, and a writer is made on a test
/// process's way to its first test, while the dispatcher that compresses is idle until then.
pub(crate) struct Deflater {
    compress: Option<Compress>,
    level: u32,
    /// The chunked stream whose last chunk this deflater compressed, and whose state it still
    /// holds (0: none): that stream's next chunk goes on without a reset or dictionary.
    continues: u64,
}

/// Numbers the streams of [`ChunkedDeflate`]s, from 1.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

impl Deflater {
    /// A raw-deflate compressor at `level` (0–9), set up when first used.
    pub(crate) fn new(level: u32) -> Self {
        Deflater {
            compress: None,
            level: level.min(9),
            continues: 0,
        }
    }

    /// Sets the compressor up now, if it is not yet.
    pub(crate) fn warm(&mut self) {
        self.compress();
    }

    /// Whether the compressor is set up.
    #[cfg(test)]
    pub(crate) fn is_set_up(&self) -> bool {
        self.compress.is_some()
    }

    fn compress(&mut self) -> &mut Compress {
        let level = self.level;
        self.compress
            .get_or_insert_with(|| Compress::new(Compression::new(level), false))
    }

    /// Whether `stream` would have this deflater without taking it from another stream.
    fn free_for(&self, stream: u64) -> bool {
        self.continues == 0 || self.continues == stream
    }

    /// Deflates `data`, the next chunk of `stream`, onto `out`, ending with a sync flush:
    /// byte-aligned and not final, so more chunks can follow. Unless this deflater compressed
    /// the stream's previous chunk last (and so still holds its state), it starts afresh
    /// with `window`, the stream's last bytes before `data` (at most 32 KiB), as its
    /// dictionary: `data` may refer back into them, as into bytes a reader inflated already.
    fn deflate_chunk(
        &mut self,
        stream: u64,
        window: &[u8],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let continues = self.continues == stream;
        // Set again only once the chunk is whole: a failure leaves a state nobody continues.
        self.continues = 0;
        let compress = self.compress();
        if !continues {
            compress.reset();
            if !window.is_empty() {
                compress
                    .set_dictionary(window)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            }
        }
        let start = compress.total_in() as usize;
        loop {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity().max(data.len() / 2).max(4096));
            }
            let consumed = compress.total_in() as usize - start;
            compress
                .compress_vec(&data[consumed.min(data.len())..], out, FlushCompress::Sync)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // Done when the input is in and the compressor stopped short of filling the
            // output (zlib's rule for a flush being complete).
            if compress.total_in() as usize - start >= data.len() && out.len() < out.capacity() {
                self.continues = stream;
                return Ok(());
            }
        }
    }

    fn deflate(&mut self, data: &[u8]) -> io::Result<Vec<u8>> {
        self.continues = 0;
        let compress = self.compress();
        compress.reset();
        let mut out = Vec::with_capacity(data.len() / 4 + 64);
        loop {
            let consumed = compress.total_in() as usize;
            let status = compress
                .compress_vec(&data[consumed.min(data.len())..], &mut out, FlushCompress::Finish)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            match status {
                Status::StreamEnd => return Ok(out),
                // Out of room: grow and go on.
                Status::Ok | Status::BufError => out.reserve(out.capacity().max(64)),
            }
        }
    }
}

/// An entry's data deflated in chunks as it arrives, so that making the entry compresses only
/// the last chunk instead of the whole segment while a test waits for its commit.
///
/// Each chunk is deflated by the writer's one [`Deflater`] (a compressor per running test would
/// be hundreds of kilobytes each, and 32 tests at once thrash the cache), given the entry's
/// last [`WINDOW`] bytes before it as a dictionary, and ends with a sync flush, on a byte
/// boundary and not final: chunks laid end to end make one valid deflate stream, whose reader
/// has those bytes in its window. With the dictionary, small chunks compress as well as one
/// stream would (without it, 8 KiB chunks doubled the archives), and a test's end compresses
/// at most a chunk while the test waits. The entry's first bytes (a segment's header, known only at commit) go in
/// front as stored blocks, and an empty final block ends it. Nothing is consumed by making the
/// entry: if the append fails, more can be written and the entry made again, whole.
#[derive(Default)]
pub(crate) struct ChunkedDeflate {
    compressed: Vec<u8>,
    crc: crc32fast::Hasher,
    len: u64,
    /// Bytes already deflated (`deflated` of them, whose last [`WINDOW`] are the next chunk's
    /// dictionary), then the bytes not deflated yet.
    pending: Vec<u8>,
    deflated: usize,
    /// This entry's stream (see [`Deflater::continues`]); 0 until its first chunk.
    stream: u64,
}

/// Bytes gathered before a chunk is deflated while the deflater is free or already this
/// stream's: going on costs nothing, and a test's end then compresses at most this much.
const CHUNK: usize = 8 * 1024;

/// Bytes gathered before a chunk is deflated when the deflater holds another stream: taking it
/// over costs a reset (zlib-rs clears 128 KiB of hash heads and its block state) and a
/// dictionary. More than a typical test's events (ten requests wrote about 64 KiB), so that
/// tests running side by side mostly take the deflater once, at their end, with no dictionary:
/// at 32 tests in flight that cut the dispatcher's instructions by 7% against 64 KiB chunks.
/// The price is up to this much held per running test.
const SHARED_CHUNK: usize = 256 * 1024;

/// Bytes of the entry before a chunk that it may refer back to.
const WINDOW: usize = 16 * 1024;

/// Deflated bytes held before all but the window are dropped: each drop moves the window.
const KEPT_DEFLATED: usize = 64 * 1024;

impl ChunkedDeflate {
    /// Starts a new entry, keeping the allocations.
    pub(crate) fn reset(&mut self) {
        self.compressed.clear();
        self.crc = crc32fast::Hasher::new();
        self.len = 0;
        self.pending.clear();
        self.deflated = 0;
        self.stream = 0;
    }

    /// Bytes the buffers hold allocated.
    pub(crate) fn capacity(&self) -> usize {
        self.compressed.capacity() + self.pending.capacity()
    }

    /// Uncompressed bytes written since the last reset.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Adds `data` to the entry.
    #[cfg(test)]
    pub(crate) fn write(&mut self, deflater: &mut Deflater, data: &[u8]) -> io::Result<()> {
        self.write_with(deflater, |buffer| buffer.extend_from_slice(data))
    }

    /// Adds what `append` appends to the buffer it is given (no copy on the way).
    pub(crate) fn write_with(
        &mut self,
        deflater: &mut Deflater,
        append: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<()> {
        let from = self.pending.len();
        append(&mut self.pending);
        self.len += (self.pending.len() - from) as u64;
        let fresh = self.pending.len() - self.deflated;
        if fresh >= SHARED_CHUNK || (fresh >= CHUNK && deflater.free_for(self.stream)) {
            self.deflate_pending(deflater)?;
        }
        Ok(())
    }

    fn deflate_pending(&mut self, deflater: &mut Deflater) -> io::Result<()> {
        if self.pending.len() > self.deflated {
            if self.stream == 0 {
                self.stream = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
            }
            let (done, data) = self.pending.split_at(self.deflated);
            let window = &done[done.len().saturating_sub(WINDOW)..];
            deflater.deflate_chunk(self.stream, window, data, &mut self.compressed)?;
            // Summed here, a chunk at a time, not as each event's line is added: per line,
            // crc32fast's set-up came to 217 instructions an archived event, per chunk 153.
            // After the chunk is in, so a chunk that failed is summed when it is deflated again.
            self.crc.update(data);
            self.deflated = self.pending.len();
            // Only the window needs keeping, but moving it to the front after every chunk
            // moved twice the bytes the chunk deflated: 6% of the dispatcher's instructions.
            if self.deflated >= KEPT_DEFLATED {
                self.pending.drain(..self.deflated - WINDOW);
                self.deflated = WINDOW;
            }
        }
        Ok(())
    }

    /// The entry `name`: `prefix`, then everything written since the last reset.
    pub(crate) fn entry(
        &mut self,
        deflater: &mut Deflater,
        name: impl Into<String>,
        prefix: &[u8],
    ) -> io::Result<PreparedEntry> {
        self.deflate_pending(deflater)?;
        // The stream is done: the next one to come takes the deflater without waiting.
        if deflater.continues == self.stream {
            deflater.continues = 0;
        }
        let mut data =
            Vec::with_capacity(prefix.len() + prefix.len() / 65_535 * 5 + 5 + self.compressed.len() + 2);
        for chunk in prefix.chunks(65_535) {
            // A stored block, not the last: BFINAL 0, BTYPE 00, padded to the byte; LEN, NLEN.
            let len = chunk.len() as u16;
            data.push(0);
            data.extend_from_slice(&len.to_le_bytes());
            data.extend_from_slice(&(!len).to_le_bytes());
            data.extend_from_slice(chunk);
        }
        data.extend_from_slice(&self.compressed);
        // Every chunk ended on a byte boundary: end the stream with an empty final block of
        // fixed codes (BFINAL 1, BTYPE 01, end-of-block).
        data.extend_from_slice(&[0x03, 0x00]);
        let mut crc = crc32fast::Hasher::new();
        crc.update(prefix);
        crc.combine(&self.crc);
        Ok(PreparedEntry {
            name: name.into(),
            method: METHOD_DEFLATED,
            crc32: crc.finalize(),
            uncompressed_size: prefix.len() as u64 + self.len,
            data,
        })
    }
}

/// An entry compressed in memory, ready to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PreparedEntry {
    pub(crate) name: String,
    method: u16,
    crc32: u32,
    data: Vec<u8>,
    uncompressed_size: u64,
}

impl PreparedEntry {
    /// An entry stored as it is.
    pub(crate) fn stored(name: impl Into<String>, data: Vec<u8>) -> Self {
        PreparedEntry {
            name: name.into(),
            method: METHOD_STORED,
            crc32: crc32fast::hash(&data),
            uncompressed_size: data.len() as u64,
            data,
        }
    }

    /// An entry compressed with deflate at `level` (0–9); stored instead when deflate does
    /// not make it smaller.
    #[cfg(test)]
    pub(crate) fn deflated(name: impl Into<String>, data: &[u8], level: u32) -> io::Result<Self> {
        Self::deflated_with(&mut Deflater::new(level), name, data)
    }

    /// [`deflated`](Self::deflated) with a reused deflater.
    pub(crate) fn deflated_with(
        deflater: &mut Deflater,
        name: impl Into<String>,
        data: &[u8],
    ) -> io::Result<Self> {
        let compressed = deflater.deflate(data)?;
        if compressed.len() >= data.len() {
            return Ok(Self::stored(name, data.to_vec()));
        }
        Ok(PreparedEntry {
            name: name.into(),
            method: METHOD_DEFLATED,
            crc32: crc32fast::hash(data),
            uncompressed_size: data.len() as u64,
            data: compressed,
        })
    }

    /// Bytes this entry adds to the file, local header included.
    pub(crate) fn encoded_len(&self) -> u64 {
        LOCAL_HEADER_LEN + self.name.len() as u64 + self.data.len() as u64
    }
}

/// A file's end record or directory does not describe a whole archive.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DirectoryError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Invalid(&'static str),
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// One `pread` where there is one (a commit's check of the archive's tail is on a test's end
/// path), a seek and a read elsewhere.
#[cfg(unix)]
fn read_exact_at(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(mut file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// The last bytes of a file holding a directory end record, for cheap "did it change" checks.
pub(crate) fn tail(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let n = len.min(EOCD_LEN);
    let mut buf = vec![0u8; n as usize];
    read_exact_at(file, len - n, &mut buf)?;
    Ok(buf)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}

/// The buffer a directory is read through: records are read one by one from it, so a large
/// directory never sits whole in fresh memory.
const DIRECTORY_BUFFER: usize = 64 * 1024;

/// What an end record says: how many records, how many bytes of them, and where.
struct EndRecord {
    count: u64,
    directory_len: u64,
    directory_at: u64,
}

/// Reads the end record (and the ZIP64 end records it defers to), which must be the file's
/// last bytes (we never write a comment), with the directory ending where they begin.
fn read_end_record(file: &File, len: u64) -> Result<EndRecord, DirectoryError> {
    use DirectoryError::Invalid;
    if len < EOCD_LEN {
        return Err(Invalid("the file is shorter than a zip end record"));
    }
    let mut eocd = [0u8; EOCD_LEN as usize];
    read_exact_at(file, len - EOCD_LEN, &mut eocd)?;
    if u32_at(&eocd, 0) != EOCD_SIG {
        return Err(Invalid("the file does not end with a zip end record"));
    }
    if u16_at(&eocd, 4) != 0 || u16_at(&eocd, 6) != 0 {
        return Err(Invalid("multi-disk archives are not supported"));
    }
    let mut count = u64::from(u16_at(&eocd, 10));
    let mut cd_size = u64::from(u32_at(&eocd, 12));
    let mut cd_offset = u64::from(u32_at(&eocd, 16));
    let mut directory_end = len - EOCD_LEN;
    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        if len < EOCD_LEN + ZIP64_LOCATOR_LEN + ZIP64_EOCD_LEN {
            return Err(Invalid("the ZIP64 end records are missing"));
        }
        let mut locator = [0u8; ZIP64_LOCATOR_LEN as usize];
        read_exact_at(file, len - EOCD_LEN - ZIP64_LOCATOR_LEN, &mut locator)?;
        if u32_at(&locator, 0) != ZIP64_LOCATOR_SIG {
            return Err(Invalid("the ZIP64 locator is missing"));
        }
        let record_at = u64_at(&locator, 8);
        if record_at != len - EOCD_LEN - ZIP64_LOCATOR_LEN - ZIP64_EOCD_LEN {
            return Err(Invalid("the ZIP64 end record is not where the locator says"));
        }
        let mut record = [0u8; ZIP64_EOCD_LEN as usize];
        read_exact_at(file, record_at, &mut record)?;
        if u32_at(&record, 0) != ZIP64_EOCD_SIG {
            return Err(Invalid("the ZIP64 end record is damaged"));
        }
        count = u64_at(&record, 32);
        cd_size = u64_at(&record, 40);
        cd_offset = u64_at(&record, 48);
        directory_end = record_at;
    }
    if cd_offset.checked_add(cd_size) != Some(directory_end) {
        return Err(Invalid(
            "the central directory does not end where the end record begins",
        ));
    }
    if cd_size > MAX_DIRECTORY_BYTES || count > cd_size / CENTRAL_HEADER_LEN as u64 {
        return Err(Invalid("the end record declares an impossible directory"));
    }
    Ok(EndRecord {
        count,
        directory_len: cd_size,
        directory_at: cd_offset,
    })
}

/// What walking a directory found besides its entries and what its end record says.
struct Walked {
    /// Bytes of the records (bytes after them, none in a file we wrote, are left out: new
    /// records go in their place).
    records_len: u64,
    end_of_entries: u64,
}

/// Walks the directory `end` describes, checking each record and lending each entry to
/// `each`, in order; stops at the first error `each` returns.
///
/// Records are read in place from a window of the file: a joining writer walks 10 000 of
/// them before its first commit, and copying each out of a buffered reader into a record of
/// its own was a third of the walk.
fn walk_directory(
    file: &File,
    end: &EndRecord,
    mut each: impl FnMut(DirEntry<&[u8]>) -> Result<(), DirectoryError>,
) -> Result<Walked, DirectoryError> {
    use DirectoryError::Invalid;
    let cd_offset = end.directory_at;
    let mut window = Window::new(file, cd_offset, cd_offset + end.directory_len);
    // The entry that begins last: its offset, its compressed size, and whether sizes follow
    // its data.
    let mut last: Option<(u64, u64, bool)> = None;
    let mut records_len = 0u64;
    for _ in 0..end.count {
        let header = window
            .peek(CENTRAL_HEADER_LEN)?
            .ok_or(Invalid("a central directory record is damaged"))?;
        if u32_at(header, 0) != CENTRAL_HEADER_SIG {
            return Err(Invalid("a central directory record is damaged"));
        }
        let name_len = usize::from(u16_at(header, 28));
        let extra_len = usize::from(u16_at(header, 30));
        let comment_len = usize::from(u16_at(header, 32));
        let record_len = CENTRAL_HEADER_LEN + name_len + extra_len + comment_len;
        let record = window
            .peek(record_len)?
            .ok_or(Invalid("a central directory record runs past the directory"))?;
        let name = &record[CENTRAL_HEADER_LEN..CENTRAL_HEADER_LEN + name_len];
        let mut entry = DirEntry {
            name,
            method: u16_at(record, 10),
            dos_time: u16_at(record, 12),
            dos_date: u16_at(record, 14),
            crc32: u32_at(record, 16),
            compressed_size: u64::from(u32_at(record, 20)),
            uncompressed_size: u64::from(u32_at(record, 24)),
            local_header_offset: u64::from(u32_at(record, 42)),
        };
        let extra = &record[CENTRAL_HEADER_LEN + name_len..CENTRAL_HEADER_LEN + name_len + extra_len];
        apply_zip64_extra(&mut entry, extra)?;
        if entry.local_header_offset >= cd_offset {
            return Err(Invalid("an entry lies inside the central directory"));
        }
        if last
            .as_ref()
            .is_none_or(|(offset, _, _)| entry.local_header_offset > *offset)
        {
            let sizes_follow = u16_at(record, 8) & FLAG_DATA_DESCRIPTOR != 0;
            last = Some((entry.local_header_offset, entry.compressed_size, sizes_follow));
        }
        records_len += record_len as u64;
        each(entry)?;
        window.consume(record_len);
    }
    let end_of_entries = match last {
        // Where the last entry ends is known only without a data descriptor after it; else
        // the next entry goes where the directory begins, as if there were no room before it.
        Some((offset, compressed_size, false)) => {
            let mut header = [0u8; LOCAL_HEADER_LEN as usize];
            read_exact_at(file, offset, &mut header)?;
            if u32_at(&header, 0) != LOCAL_HEADER_SIG {
                return Err(Invalid("an entry's local header is damaged"));
            }
            let header_len =
                LOCAL_HEADER_LEN + u64::from(u16_at(&header, 26)) + u64::from(u16_at(&header, 28));
            match offset
                .checked_add(header_len)
                .and_then(|data| data.checked_add(compressed_size))
            {
                Some(end) if end <= cd_offset => end,
                _ => return Err(Invalid("an entry runs into the central directory")),
            }
        }
        _ => cd_offset,
    };
    Ok(Walked {
        records_len,
        end_of_entries,
    })
}

/// A window on the bytes of a file from one offset up to an end, read through a buffer (by
/// position, leaving the file's cursor alone): each record is looked at where it lies in the
/// buffer, which is refilled when a record runs past what it holds, and grown when one is
/// longer than all of it.
struct Window<'f> {
    file: &'f File,
    /// The file offset of the byte after those read into `buffer`.
    at: u64,
    end: u64,
    buffer: Vec<u8>,
    /// The unread bytes in `buffer`: `start..filled`.
    start: usize,
    filled: usize,
}

impl<'f> Window<'f> {
    fn new(file: &'f File, at: u64, end: u64) -> Self {
        let size = usize::try_from(end.saturating_sub(at))
            .map_or(DIRECTORY_BUFFER, |len| len.clamp(1, DIRECTORY_BUFFER));
        Window {
            file,
            at,
            end,
            buffer: vec![0; size],
            start: 0,
            filled: 0,
        }
    }

    /// The next `n` bytes, not consumed; `None` when fewer than `n` are left before the end.
    fn peek(&mut self, n: usize) -> io::Result<Option<&[u8]>> {
        if self.filled - self.start < n && !self.fill(n)? {
            return Ok(None);
        }
        Ok(Some(&self.buffer[self.start..self.start + n]))
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
    }

    /// Reads until the buffer holds `n` unread bytes, moving the unread ones to its front
    /// first; `false` when the end comes first.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        let unread = self.filled - self.start;
        let left = self.end - self.at;
        if (unread as u64).saturating_add(left) < n as u64 {
            return Ok(false);
        }
        self.buffer.copy_within(self.start..self.filled, 0);
        self.start = 0;
        self.filled = unread;
        if self.buffer.len() < n {
            self.buffer.resize(n, 0);
        }
        while self.filled < n {
            let room = (self.buffer.len() - self.filled)
                .min(usize::try_from(self.end - self.at).unwrap_or(usize::MAX));
            let read = read_at(
                self.file,
                &mut self.buffer[self.filled..self.filled + room],
                self.at,
            )?;
            if read == 0 {
                // The file ends before the directory its end record describes.
                return Ok(false);
            }
            self.filled += read;
            self.at += read as u64;
        }
        Ok(true)
    }
}

/// Reads the directory of a file this module wrote, through its end record. The end record
/// must be the file's last 22 bytes (we never write a comment) and the directory must end
/// where the end record (or the ZIP64 end record) begins.
pub(crate) fn read_directory(file: &File, len: u64) -> Result<Directory, DirectoryError> {
    let end = read_end_record(file, len)?;
    // `read_end_record` bounds the count by the directory's bytes.
    let mut entries = Vec::with_capacity(usize::try_from(end.count).unwrap_or(0));
    let walked = walk_directory(file, &end, |entry| {
        entries.push(entry.to_owned_entry()?);
        Ok(())
    })?;
    Ok(Directory {
        entries,
        end_of_entries: walked.end_of_entries,
    })
}

fn apply_zip64_extra<Name>(entry: &mut DirEntry<Name>, mut extra: &[u8]) -> Result<(), DirectoryError> {
    while extra.len() >= 4 {
        let id = u16_at(extra, 0);
        let size = usize::from(u16_at(extra, 2));
        let Some(body) = extra.get(4..4 + size) else {
            return Err(DirectoryError::Invalid("an extra field runs past its record"));
        };
        if id == 0x0001 {
            let mut fields = body.chunks_exact(8).map(|c| u64_at(c, 0));
            // The ZIP64 field lists, in this order, only the values whose 32-bit slot is full.
            if entry.uncompressed_size == 0xFFFF_FFFF {
                entry.uncompressed_size = fields
                    .next()
                    .ok_or(DirectoryError::Invalid("a ZIP64 field is short"))?;
            }
            if entry.compressed_size == 0xFFFF_FFFF {
                entry.compressed_size = fields
                    .next()
                    .ok_or(DirectoryError::Invalid("a ZIP64 field is short"))?;
            }
            if entry.local_header_offset == 0xFFFF_FFFF {
                entry.local_header_offset = fields
                    .next()
                    .ok_or(DirectoryError::Invalid("a ZIP64 field is short"))?;
            }
        }
        extra = &extra[4 + size..];
    }
    Ok(())
}

/// What [`salvage`] recovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Salvaged {
    /// Every complete entry from the start of the file up to the first one that is not.
    pub(crate) directory: Directory,
    /// Bytes after the last complete entry (a cut entry, a damaged or stale directory).
    pub(crate) dropped_bytes: u64,
}

/// Walks local headers from the start of the file and keeps every entry that is whole: its
/// bytes are all in the file, it decompresses to exactly its declared size, and its CRC-32
/// matches. Stops at the first entry that is not (or at the central directory).
pub(crate) fn salvage(file: &File, len: u64) -> io::Result<Salvaged> {
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    reader.seek(SeekFrom::Start(0))?;
    let mut offset = 0u64;
    let mut entries = Vec::new();
    let mut header = [0u8; LOCAL_HEADER_LEN as usize];
    while offset + LOCAL_HEADER_LEN <= len {
        reader.seek(SeekFrom::Start(offset))?;
        reader.read_exact(&mut header)?;
        if u32_at(&header, 0) != LOCAL_HEADER_SIG {
            break;
        }
        let flags = u16_at(&header, 6);
        let method = u16_at(&header, 8);
        let crc32 = u32_at(&header, 14);
        let compressed_size = u64::from(u32_at(&header, 18));
        let uncompressed_size = u64::from(u32_at(&header, 22));
        let name_len = u64::from(u16_at(&header, 26));
        let extra_len = u64::from(u16_at(&header, 28));
        if flags & FLAG_DATA_DESCRIPTOR != 0
            || compressed_size == 0xFFFF_FFFF
            || !matches!(method, METHOD_STORED | METHOD_DEFLATED)
        {
            break;
        }
        let data_at = offset + LOCAL_HEADER_LEN + name_len + extra_len;
        let Some(data_end) = data_at.checked_add(compressed_size).filter(|end| *end <= len) else {
            break;
        };
        let mut name = vec![0u8; name_len as usize];
        reader.read_exact(&mut name)?;
        let Ok(name) = String::from_utf8(name) else { break };
        // No entry is nameless or has a NUL in its name: such a header is one whose write was
        // cut short over the zeros of the room before a directory.
        if name.is_empty() || name.contains('\0') {
            break;
        }
        reader.seek(SeekFrom::Start(data_at))?;
        if !entry_checks_out(&mut reader, method, compressed_size, uncompressed_size, crc32)? {
            break;
        }
        entries.push(DirEntry {
            name,
            method,
            crc32,
            compressed_size,
            uncompressed_size,
            local_header_offset: offset,
            dos_time: u16_at(&header, 10),
            dos_date: u16_at(&header, 12),
        });
        offset = data_end;
    }
    Ok(Salvaged {
        directory: Directory {
            entries,
            end_of_entries: offset,
        },
        dropped_bytes: len - offset,
    })
}

fn entry_checks_out(
    reader: &mut impl Read,
    method: u16,
    compressed_size: u64,
    uncompressed_size: u64,
    crc32: u32,
) -> io::Result<bool> {
    let raw = reader.take(compressed_size);
    let mut hasher = crc32fast::Hasher::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    // Reading one byte past the declared size catches an entry that inflates to more.
    let mut body: Box<dyn Read + '_> = match method {
        METHOD_STORED => Box::new(raw),
        _ => Box::new(DeflateDecoder::new(raw).take(uncompressed_size + 1)),
    };
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // Corrupt deflate data: the entry is not whole.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput || e.kind() == io::ErrorKind::InvalidData => {
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
        if total > uncompressed_size {
            return Ok(false);
        }
    }
    Ok(total == uncompressed_size && hasher.finalize() == crc32)
}

/// The layout of an existing file for appending to it: through its end record when that
/// describes the whole file, else by [`salvage`] (the third value is then `Some`). Each
/// entry's name is given to `note` as stored, in order, with what it noted so far: a
/// directory found damaged part-way is salvaged, and noting starts again from `T::default()`.
pub(crate) fn load<T: Default>(
    file: &File,
    len: u64,
    mut note: impl FnMut(&mut T, &[u8]),
) -> io::Result<(Layout, T, Option<Salvaged>)> {
    let mut noted = T::default();
    if len == 0 {
        return Ok((Layout::default(), noted, None));
    }
    match Layout::read(file, len, |name| note(&mut noted, name)) {
        Ok(layout) => Ok((layout, noted, None)),
        Err(DirectoryError::Io(e)) if e.kind() != io::ErrorKind::UnexpectedEof => Err(e),
        Err(_) => {
            let salvaged = salvage(file, len)?;
            let mut noted = T::default();
            for entry in &salvaged.directory.entries {
                note(&mut noted, entry.name.as_bytes());
            }
            Ok((Layout::of(&salvaged.directory), noted, Some(salvaged)))
        }
    }
}

/// Current time as an MS-DOS date and time (UTC, two-second resolution).
pub(crate) fn dos_now() -> (u16, u16) {
    dos_date_time(kit_core::Timestamp::now())
}

fn dos_date_time(t: kit_core::Timestamp) -> (u16, u16) {
    let ((year, month, day), rem) = t.utc_date_and_seconds();
    let time = (((rem / 3600) << 11) | (((rem % 3600) / 60) << 5) | ((rem % 60) / 2)) as u16;
    let year = year.clamp(1980, 2107);
    let date = (((year - 1980) as u16) << 9) | ((month as u16) << 5) | day as u16;
    (time, date)
}

/// The file after an [`append`]: its length, and its last bytes as [`tail`] reads them.
pub(crate) struct Appended {
    pub(crate) len: u64,
    pub(crate) tail: Vec<u8>,
}

/// Whether an append leaves room for later entries before the central directory it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// A file appended to again and again (a run's archive): leave room, a sixteenth of the
    /// entries' bytes, so that most appends write only their own records.
    Spare,
    /// A file written once (a merged archive): the directory right after the entries.
    None,
}

/// The room an append leaves after entries ending at `end`.
fn room_after(end: u64, room: Room) -> u64 {
    match room {
        Room::Spare => end / 16,
        Room::None => 0,
    }
}

/// What an append does to the file, in order: writes of byte runs at offsets, then the
/// file's new length (it is cut there if it was longer).
struct Plan<'a> {
    /// Cut the file here before writing (a salvaged file's dead bytes).
    cut_first: Option<u64>,
    writes: Vec<(u64, Vec<&'a [u8]>)>,
    len: u64,
}

/// Appends `entries` where the file's entries end (`layout`), and the central records and end
/// record describing them, in the room before the file's directory when they fit, else with
/// the whole directory written again after them (see the module's documentation); cuts the
/// file at its new end if it was longer (`file_len`). Updates `layout` and returns the new
/// file length and tail.
///
/// Killed part-way, the file is left with every earlier entry intact and whole, either under
/// the old directory or for [`salvage`] to recover; the entries being written are recovered
/// only if complete.
pub(crate) fn append(
    file: &File,
    file_len: u64,
    layout: &mut Layout,
    entries: &[PreparedEntry],
    room: Room,
) -> io::Result<Appended> {
    let saved = layout.save();
    let mut local = Vec::new();
    let mut records = Vec::new();
    let mut end = Vec::new();
    let result = (|| {
        let plan = plan_append(
            file,
            file_len,
            layout,
            entries,
            room,
            Encoded {
                local: &mut local,
                records: &mut records,
                end: &mut end,
            },
        )?;
        if let Some(at) = plan.cut_first {
            file.set_len(at)?;
        }
        for (at, parts) in &plan.writes {
            write_all_at(file, *at, parts)?;
        }
        if plan.len < file_len {
            file.set_len(plan.len)?;
        }
        Ok(plan.len)
    })();
    match result {
        Ok(len) => {
            // The file holds every record now: a moved directory's are not kept.
            layout.held = Vec::new();
            // What `tail` would read back now, without a read.
            let tail = end[end.len() - EOCD_LEN as usize..].to_vec();
            Ok(Appended { len, tail })
        }
        Err(e) => {
            // The file keeps whatever made it; the next append reloads the layout from it.
            layout.restore(saved);
            Err(e)
        }
    }
}

/// Writes `entries` where the file's entries end, and no central directory: for a file
/// written once, front to back (a merged archive), whose last [`append`] writes the directory
/// of every entry. Until then no end record describes the file (one written earlier is
/// overwritten or left behind, and that append cuts it off), so only the entries' records
/// are held in memory until the end, not the entries.
pub(crate) fn write_entries(file: &File, layout: &mut Layout, entries: &[PreparedEntry]) -> io::Result<()> {
    let saved = layout.save();
    let start = layout.end_of_entries;
    let mut local = Vec::new();
    let written = (|| {
        // The entries may go where the file's directory is.
        layout.hold_records(file)?;
        let end = encode_entries(start, entries, &mut local, &mut layout.held)?;
        write_all_at(file, start, &[&local])?;
        Ok(end)
    })();
    match written {
        Ok(end) => {
            layout.count += entries.len() as u64;
            layout.records_len = layout.held.len() as u64;
            layout.end_of_entries = end;
            layout.in_file_at = None;
            Ok(())
        }
        Err(e) => {
            layout.restore(saved);
            Err(e)
        }
    }
}

/// The buffers an append encodes into: the entries' local headers and data, their central
/// records, and the end records.
struct Encoded<'a> {
    local: &'a mut Vec<u8>,
    records: &'a mut Vec<u8>,
    end: &'a mut Vec<u8>,
}

/// Adds `entries` to `layout` and says what writing them takes, encoded into `out`. Reads the
/// file's records into `layout` first when the directory moves. On an error `layout` may be
/// part-way: `append` restores it.
fn plan_append<'a>(
    file: &File,
    file_len: u64,
    layout: &'a mut Layout,
    entries: &[PreparedEntry],
    room: Room,
    out: Encoded<'a>,
) -> io::Result<Plan<'a>> {
    let Encoded { local, records, end } = out;
    let in_file_at = layout.in_file_at;
    let start = layout.end_of_entries;
    let offset = encode_entries(start, entries, local, records)?;
    let local: &'a Vec<u8> = local;
    let mut writes = Vec::with_capacity(3);
    let mut cut_first = None;
    let (cd_offset, stays) = match in_file_at {
        Some(cd_offset) if offset <= cd_offset => {
            // The entries fit in the room before the directory: the old directory and end
            // record describe the file until the new records and end record replace the old
            // end record, so a kill before then leaves the file as it was.
            writes.push((start, vec![&local[..]]));
            (cd_offset, true)
        }
        in_file_at => {
            // The directory is written again after the entries, which may go over it.
            layout.hold_records(file)?;
            if in_file_at.is_some() && file_len >= EOCD_LEN {
                // The directory moves: unmark the old end record first, so that a kill
                // part-way leaves no end record describing bytes that changed; the file is
                // then salvaged, every whole entry kept.
                writes.push((file_len - EOCD_LEN, vec![&[0u8; 4][..]]));
            } else if file_len > start {
                // Dead bytes after a salvaged file's entries: gone before anything is written.
                cut_first = Some(start);
            }
            writes.push((start, vec![&local[..]]));
            (offset + room_after(offset, room), false)
        }
    };
    let old_records_len = layout.records_len;
    layout.count += entries.len() as u64;
    layout.records_len += records.len() as u64;
    layout.end_of_entries = offset;
    layout.in_file_at = Some(cd_offset);
    write_end_records(end, layout.count, layout.records_len, cd_offset);
    let (end, records): (&'a Vec<u8>, &'a Vec<u8>) = (end, records);
    let layout: &'a Layout = layout;
    if stays {
        // Only the new records, after those in the file.
        writes.push((cd_offset + old_records_len, vec![&records[..], &end[..]]));
    } else {
        writes.push((cd_offset, vec![&layout.held[..], &records[..], &end[..]]));
    }
    let len = cd_offset + layout.records_len + end.len() as u64;
    Ok(Plan {
        cut_first,
        writes,
        len,
    })
}

/// Encodes `entries`, the first going at `start`: their local headers and data into `local`,
/// their central records into `records`. Returns where the last one ends. Fails on an entry
/// this format cannot store, part-way: the caller puts back what it changed.
fn encode_entries(
    start: u64,
    entries: &[PreparedEntry],
    local: &mut Vec<u8>,
    records: &mut Vec<u8>,
) -> io::Result<u64> {
    let (dos_time, dos_date) = dos_now();
    let added: u64 = entries.iter().map(PreparedEntry::encoded_len).sum();
    local.reserve(usize::try_from(added).unwrap_or(0));
    let mut offset = start;
    for entry in entries {
        if entry.data.len() as u64 > MAX_ENTRY_BYTES || entry.uncompressed_size > MAX_ENTRY_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "entry {} is larger than 4 GiB, which this archive format does not store",
                    entry.name
                ),
            ));
        }
        let Ok(name_len) = u16::try_from(entry.name.len()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "entry name longer than 65535 bytes",
            ));
        };
        local.extend_from_slice(&LOCAL_HEADER_SIG.to_le_bytes());
        local.extend_from_slice(&20u16.to_le_bytes()); // version needed: 2.0 (deflate)
        local.extend_from_slice(&FLAG_UTF8.to_le_bytes());
        local.extend_from_slice(&entry.method.to_le_bytes());
        local.extend_from_slice(&dos_time.to_le_bytes());
        local.extend_from_slice(&dos_date.to_le_bytes());
        local.extend_from_slice(&entry.crc32.to_le_bytes());
        local.extend_from_slice(&(entry.data.len() as u32).to_le_bytes());
        local.extend_from_slice(&(entry.uncompressed_size as u32).to_le_bytes());
        local.extend_from_slice(&name_len.to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes()); // extra length
        local.extend_from_slice(entry.name.as_bytes());
        local.extend_from_slice(&entry.data);
        encode_record(
            records,
            &DirEntry {
                name: entry.name.as_str(),
                method: entry.method,
                crc32: entry.crc32,
                compressed_size: entry.data.len() as u64,
                uncompressed_size: entry.uncompressed_size,
                local_header_offset: offset,
                dos_time,
                dos_date,
            },
        );
        offset += entry.encoded_len();
    }
    Ok(offset)
}

/// Parts of a write together this long or shorter are copied into one buffer and written with
/// one `pwrite`; longer ones (a moved directory's records, a megabyte at 10 000 entries) are
/// written where they are, with a seek and a `writev`.
const JOIN_PARTS_UP_TO: usize = 64 * 1024;

/// Writes `parts` one after the other from `offset`. A commit's writes are on a test's end
/// path, under the lock other processes wait on, and a system call on this kind of virtual
/// machine costs microseconds: a `pwrite` is one call where a seek and a `writev` are two.
fn write_all_at(file: &File, offset: u64, parts: &[&[u8]]) -> io::Result<()> {
    if let [one] = parts {
        return write_one_at(file, offset, one);
    }
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if total <= JOIN_PARTS_UP_TO {
        let mut joined = Vec::with_capacity(total);
        for part in parts {
            joined.extend_from_slice(part);
        }
        return write_one_at(file, offset, &joined);
    }
    write_vectored_at(file, offset, parts)
}

#[cfg(unix)]
fn write_one_at(file: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_one_at(mut file: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}

/// Writes `parts` one after the other from `offset`, with one `writev` when it takes them all.
fn write_vectored_at(file: &File, offset: u64, parts: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
    let mut slices = &mut slices[..];
    let mut writer = file;
    writer.seek(SeekFrom::Start(offset))?;
    while !slices.is_empty() {
        match writer.write_vectored(slices) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => io::IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn encode_record<Name: AsRef<str>>(out: &mut Vec<u8>, e: &DirEntry<Name>) {
    let needs_zip64 = e.local_header_offset >= 0xFFFF_FFFF;
    out.extend_from_slice(&CENTRAL_HEADER_SIG.to_le_bytes());
    out.extend_from_slice(&(3u16 << 8 | 45).to_le_bytes()); // made by: Unix, 4.5
    out.extend_from_slice(&(if needs_zip64 { 45u16 } else { 20u16 }).to_le_bytes());
    out.extend_from_slice(&FLAG_UTF8.to_le_bytes());
    out.extend_from_slice(&e.method.to_le_bytes());
    out.extend_from_slice(&e.dos_time.to_le_bytes());
    out.extend_from_slice(&e.dos_date.to_le_bytes());
    out.extend_from_slice(&e.crc32.to_le_bytes());
    out.extend_from_slice(&(e.compressed_size as u32).to_le_bytes());
    out.extend_from_slice(&(e.uncompressed_size as u32).to_le_bytes());
    out.extend_from_slice(&(e.name.as_ref().len() as u16).to_le_bytes());
    out.extend_from_slice(&(if needs_zip64 { 12u16 } else { 0 }).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment length
    out.extend_from_slice(&0u16.to_le_bytes()); // disk number
    out.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
    out.extend_from_slice(&(0o100_644u32 << 16).to_le_bytes()); // a regular file, rw-r--r--
    let offset32 = if needs_zip64 {
        0xFFFF_FFFF
    } else {
        e.local_header_offset as u32
    };
    out.extend_from_slice(&offset32.to_le_bytes());
    out.extend_from_slice(e.name.as_ref().as_bytes());
    if needs_zip64 {
        out.extend_from_slice(&0x0001u16.to_le_bytes());
        out.extend_from_slice(&8u16.to_le_bytes());
        out.extend_from_slice(&e.local_header_offset.to_le_bytes());
    }
}

/// The end record (and the ZIP64 end record and locator when a count, size or offset needs
/// them) of a directory of `count` records and `cd_size` bytes at `cd_offset`.
fn write_end_records(out: &mut Vec<u8>, count: u64, cd_size: u64, cd_offset: u64) {
    if count >= 0xFFFF || cd_size >= 0xFFFF_FFFF || cd_offset >= 0xFFFF_FFFF {
        let record_at = cd_offset + cd_size;
        out.extend_from_slice(&ZIP64_EOCD_SIG.to_le_bytes());
        out.extend_from_slice(&(ZIP64_EOCD_LEN - 12).to_le_bytes());
        out.extend_from_slice(&(3u16 << 8 | 45).to_le_bytes());
        out.extend_from_slice(&45u16.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&cd_size.to_le_bytes());
        out.extend_from_slice(&cd_offset.to_le_bytes());
        out.extend_from_slice(&ZIP64_LOCATOR_SIG.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&record_at.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
    }
    out.extend_from_slice(&EOCD_SIG.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    let count16 = u16::try_from(count).unwrap_or(0xFFFF);
    out.extend_from_slice(&count16.to_le_bytes());
    out.extend_from_slice(&count16.to_le_bytes());
    out.extend_from_slice(&(cd_size.min(0xFFFF_FFFF) as u32).to_le_bytes());
    out.extend_from_slice(&(cd_offset.min(0xFFFF_FFFF) as u32).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
}

/// The bytes of a central directory and end record describing `directory`, as if it began at
/// `directory.end_of_entries`. The reader splices these after a salvaged file's good prefix.
pub(crate) fn directory_bytes(directory: &Directory) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in &directory.entries {
        encode_record(&mut out, entry);
    }
    let cd_size = out.len() as u64;
    write_end_records(
        &mut out,
        directory.entries.len() as u64,
        cd_size,
        directory.end_of_entries,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> File {
        File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap()
    }

    fn zip_names(path: &std::path::Path) -> Vec<String> {
        let mut zip = zip::ZipArchive::new(File::open(path).unwrap()).unwrap();
        (0..zip.len())
            .map(|i| {
                let mut f = zip.by_index(i).unwrap();
                let mut bytes = Vec::new();
                f.read_to_end(&mut bytes).unwrap();
                format!("{}={}", f.name().unwrap(), String::from_utf8_lossy(&bytes))
            })
            .collect()
    }

    /// `n` bytes that do not compress, from `seed` (advanced).
    fn noise(seed: &mut u64, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (*seed >> 33) as u8
            })
            .collect()
    }

    #[test]
    fn chunked_deflate_makes_entries_that_zip_reads_back_with_their_prefix() {
        let (_dir, path, file, mut directory) = fresh("s.zip");
        let mut deflater = Deflater::new(1);
        let mut stream = ChunkedDeflate::default();
        // Compressible lines, then bytes that do not compress, in many small writes.
        let mut written = Vec::new();
        let mut seed = 7u64;
        for i in 0..2_000 {
            let line = if i % 3 == 0 {
                noise(&mut seed, 97)
            } else {
                format!("{{\"line\":{i},\"text\":\"the same words again\"}}\n").into_bytes()
            };
            stream.write(&mut deflater, &line).unwrap();
            written.extend_from_slice(&line);
        }
        let first = stream.entry(&mut deflater, "a", b"header\n").unwrap();
        // An append that failed: more comes, and the entry is made again, whole.
        stream.write(&mut deflater, b"after the retry\n").unwrap();
        written.extend_from_slice(b"after the retry\n");
        let long_prefix = vec![b'p'; 70_000];
        let retried = stream.entry(&mut deflater, "b", &long_prefix).unwrap();
        stream.reset();
        let empty = stream.entry(&mut deflater, "c", b"").unwrap();
        stream.write(&mut deflater, b"fresh").unwrap();
        let fresh = stream.entry(&mut deflater, "d", b"").unwrap();
        // About half the bytes are random; the rest compress.
        assert!(
            first.data.len() < written.len() * 2 / 3,
            "{} bytes",
            first.data.len()
        );
        append(
            &file,
            0,
            &mut directory,
            &[first, retried, empty, fresh],
            Room::Spare,
        )
        .unwrap();

        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
        let mut read = |name: &str| {
            let mut bytes = Vec::new();
            zip.by_name(name).unwrap().read_to_end(&mut bytes).unwrap();
            bytes
        };
        assert_eq!(
            read("a"),
            [b"header\n".as_slice(), &written[..written.len() - 16]].concat()
        );
        assert_eq!(read("b"), [long_prefix.as_slice(), &written].concat());
        assert_eq!(read("c"), b"");
        assert_eq!(read("d"), b"fresh");
    }

    /// Streams taking turns on one deflater, with whole entries deflated between them, each
    /// refer back across their chunks (a block repeated every 12 KiB compresses away) and read
    /// back whole, at every level a setting can choose (`Kit:Trace:CompressionLevel`): level 0
    /// stores, and still takes each take-over's dictionary.
    #[test]
    fn streams_sharing_a_deflater_read_back_whole_and_compress_across_chunks() {
        for level in 0..=9 {
            streams_sharing_a_deflater_at(level);
        }
    }

    fn streams_sharing_a_deflater_at(level: u32) {
        let (_dir, path, file, mut directory) = fresh("shared.zip");
        let mut deflater = Deflater::new(level);
        let mut seed = 11u64;
        let mut random = |n: usize| noise(&mut seed, n);
        let blocks: Vec<Vec<u8>> = (0..3).map(|_| random(12 * 1024)).collect();
        let mut streams: Vec<ChunkedDeflate> = (0..3).map(|_| ChunkedDeflate::default()).collect();
        let mut written = vec![Vec::new(); 3];
        let mut blobs = Vec::new();
        // 36 repeats of each stream's block, in 1 KiB writes that take turns; sometimes one
        // stream writes alone for a while (it keeps the deflater), sometimes a blob comes.
        for round in 0..36 * 12 {
            let turns: &[usize] = if round % 50 < 20 { &[0] } else { &[0, 1, 2] };
            for &s in turns {
                let at = written[s].len() % (12 * 1024);
                let piece = &blocks[s][at..at + 1024];
                streams[s].write(&mut deflater, piece).unwrap();
                written[s].extend_from_slice(piece);
            }
            if round % 97 == 0 {
                let name = format!("blob{round}");
                blobs.push(PreparedEntry::deflated_with(&mut deflater, name, &random(3000)).unwrap());
            }
        }
        let entries: Vec<PreparedEntry> = streams
            .iter_mut()
            .enumerate()
            .map(|(i, s)| s.entry(&mut deflater, format!("s{i}"), b"").unwrap())
            .collect();
        for (i, entry) in entries.iter().enumerate() {
            // One block does not compress; its repeats do, from any chunk. Stored, nothing does.
            let (size, whole) = (entry.data.len(), written[i].len());
            assert!(
                if level == 0 {
                    size >= whole
                } else {
                    size < 3 * 12 * 1024
                },
                "level {level}, stream {i}: {size} bytes for {whole}"
            );
        }
        append(&file, 0, &mut directory, &[entries, blobs].concat(), Room::Spare).unwrap();
        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
        for (i, expected) in written.iter().enumerate() {
            let mut bytes = Vec::new();
            zip.by_name(&format!("s{i}"))
                .unwrap()
                .read_to_end(&mut bytes)
                .unwrap();
            assert!(
                bytes == *expected,
                "level {level}: stream {i} reads back otherwise"
            );
        }
    }

    /// A new file `name` in a folder of its own (kept while the first value lives), opened to
    /// read and write, and the layout of its nothing.
    fn fresh(name: &str) -> (tempfile::TempDir, std::path::PathBuf, File, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        let file = open(&path);
        (dir, path, file, Layout::default())
    }

    /// Appends `entries` at the end of what `file` holds; returns the new length.
    fn append_to(file: &File, layout: &mut Layout, entries: &[PreparedEntry]) -> u64 {
        append(file, file.metadata().unwrap().len(), layout, entries, Room::Spare)
            .unwrap()
            .len
    }

    /// The layout of `file`'s first `len` bytes, read back through its end record.
    fn reread(file: &File, len: u64) -> Layout {
        Layout::read(file, len, |_| ()).unwrap()
    }

    /// The names of `file`'s entries, read back through its end record.
    fn names(file: &File) -> Vec<String> {
        let len = file.metadata().unwrap().len();
        let directory = read_directory(file, len).unwrap();
        directory.entries.into_iter().map(|e| e.name).collect()
    }

    #[test]
    fn appends_stay_valid_and_compact() {
        let (_dir, path, file, mut directory) = fresh("a.zip");
        append_to(
            &file,
            &mut directory,
            &[PreparedEntry::stored("mimetype", b"m".to_vec())],
        );
        for i in 0..200 {
            let entry =
                PreparedEntry::deflated(format!("e/{i}"), format!("payload {i} ").repeat(20).as_bytes(), 6)
                    .unwrap();
            let len = append_to(&file, &mut directory, &[entry]);
            assert_eq!(reread(&file, len), directory);
            assert_eq!(directory.count(), i + 2);
        }
        let names = zip_names(&path);
        assert_eq!(names.len(), 201);
        assert_eq!(names[0], "mimetype=m");
        assert!(names[200].starts_with("e/199=payload 199 "));
        // No dead directories left behind: entries plus one directory.
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 40_000, "{size}");
    }

    /// A refused append leaves the directory (and its encoded records) as it was.
    #[test]
    fn a_refused_append_changes_nothing_and_the_next_one_is_whole() {
        let (_dir, path, file, mut directory) = fresh("a.zip");
        append_to(
            &file,
            &mut directory,
            &[PreparedEntry::stored("a", b"a".to_vec())],
        );
        let before = directory.clone();
        let too_long = PreparedEntry::stored("n".repeat(70_000), b"x".to_vec());
        let fine = PreparedEntry::stored("b", b"b".to_vec());
        let len = file.metadata().unwrap().len();
        assert!(append(&file, len, &mut directory, &[fine.clone(), too_long], Room::Spare).is_err());
        assert_eq!(directory, before);
        let len = append_to(&file, &mut directory, &[fine]);
        assert_eq!(reread(&file, len), directory);
        assert_eq!(zip_names(&path), vec!["a=a", "b=b"]);
    }

    /// Entries written without a directory, over one written before them, then one append:
    /// a zip of every entry, with nothing of the old directory left; a refused write changes
    /// nothing.
    #[test]
    fn entries_written_ahead_of_one_last_directory_make_a_whole_zip() {
        let (_dir, path, file, mut directory) = fresh("a.zip");
        // A directory longer than the entries written after it.
        let first: Vec<_> = (0..20)
            .map(|i| PreparedEntry::stored(format!("a{i}"), b"a".to_vec()))
            .collect();
        append_to(&file, &mut directory, &first);
        let mut expected: Vec<String> = (0..20).map(|i| format!("a{i}=a")).collect();
        for i in 0..3 {
            let entry =
                PreparedEntry::deflated(format!("e{i}"), format!("entry {i} ").repeat(9).as_bytes(), 6)
                    .unwrap();
            write_entries(&file, &mut directory, &[entry]).unwrap();
            expected.push(format!("e{i}={}", format!("entry {i} ").repeat(9)));
        }
        let before = directory.clone();
        let too_long = PreparedEntry::stored("n".repeat(70_000), b"x".to_vec());
        let fine = PreparedEntry::stored("b", b"b".to_vec());
        assert!(write_entries(&file, &mut directory, &[fine.clone(), too_long]).is_err());
        assert_eq!(directory, before);
        expected.push("b=b".to_owned());
        // The file still ends with the first append's directory, past the entries written
        // since: the last append cuts it off.
        let len = file.metadata().unwrap().len();
        assert!(len > directory.end_of_entries);
        let len = append(&file, len, &mut directory, &[fine], Room::None)
            .unwrap()
            .len;
        assert_eq!(len, file.metadata().unwrap().len());
        assert_eq!(reread(&file, len), directory);
        assert_eq!(zip_names(&path), expected);
    }

    /// A directory whose third record is damaged, under a whole end record: the walk notes
    /// two names before it finds the damage, and `load` notes the salvaged entries from a
    /// fresh start, each once; the layout it gives takes the next append.
    #[test]
    fn a_directory_damaged_part_way_is_salvaged_and_noted_from_a_fresh_start() {
        let (_dir, path, file, mut layout) = fresh("a.zip");
        let entries: Vec<_> = (0..4)
            .map(|i| PreparedEntry::stored(format!("e{i}"), format!("entry {i}").into_bytes()))
            .collect();
        let len = append_to(&file, &mut layout, &entries);
        let mut bytes = std::fs::read(&path).unwrap();
        let third = layout.in_file_at.unwrap() as usize + 2 * (CENTRAL_HEADER_LEN + 2);
        assert_eq!(u32_at(&bytes, third), CENTRAL_HEADER_SIG);
        bytes[third] = b'X';
        std::fs::write(&path, &bytes).unwrap();

        let mut walked = Vec::new();
        let refused = Layout::read(&file, len, |name| {
            walked.push(String::from_utf8_lossy(name).into_owned())
        })
        .unwrap_err();
        assert_eq!(refused.to_string(), "a central directory record is damaged");
        assert_eq!(walked, ["e0", "e1"]);
        let (mut loaded, noted, salvaged) = load(&file, len, |noted: &mut Vec<String>, name| {
            noted.push(String::from_utf8_lossy(name).into_owned());
        })
        .unwrap();
        assert_eq!(noted, ["e0", "e1", "e2", "e3"]);
        assert_eq!(salvaged.unwrap().directory.entries.len(), 4);
        assert_eq!((loaded.count(), loaded.in_file_at), (4, None));
        append_to(
            &file,
            &mut loaded,
            &[PreparedEntry::stored("e4", b"entry 4".to_vec())],
        );
        assert_eq!(names(&file), ["e0", "e1", "e2", "e3", "e4"]);
    }

    /// A file holding the entries of a three-entry archive, as `edit_entries` leaves their
    /// bytes (given the last one's offset), and a central directory made by hand from their
    /// records, as `edit` leaves them; returns the file and its length.
    fn with_records(
        dir: &std::path::Path,
        edit_entries: impl FnOnce(&mut [u8], usize),
        edit: impl FnOnce(&mut Vec<Vec<u8>>),
    ) -> (File, u64) {
        by_hand(dir, 3, edit_entries, edit)
    }

    /// [`with_records`] for `count` entries, named `e0`, `e1` and so on.
    fn by_hand(
        dir: &std::path::Path,
        count: usize,
        edit_entries: impl FnOnce(&mut [u8], usize),
        edit: impl FnOnce(&mut Vec<Vec<u8>>),
    ) -> (File, u64) {
        let path = dir.join("by-hand.zip");
        let (_keep, _, file, mut layout) = fresh("entries.zip");
        let entries: Vec<_> = (0..count)
            .map(|i| PreparedEntry::stored(format!("e{i}"), format!("entry {i}").into_bytes()))
            .collect();
        let len = append_to(&file, &mut layout, &entries);
        let mut bytes = vec![0u8; layout.end_of_entries as usize];
        read_exact_at(&file, 0, &mut bytes).unwrap();
        let directory = read_directory(&file, len).unwrap();
        edit_entries(
            &mut bytes,
            directory.entries[count - 1].local_header_offset as usize,
        );
        let mut records: Vec<Vec<u8>> = directory
            .entries
            .iter()
            .map(|entry| {
                let mut record = Vec::new();
                encode_record(&mut record, entry);
                record
            })
            .collect();
        edit(&mut records);
        let directory = records.concat();
        let directory_at = bytes.len() as u64;
        bytes.extend_from_slice(&directory);
        write_end_records(&mut bytes, count as u64, directory.len() as u64, directory_at);
        std::fs::write(&path, &bytes).unwrap();
        (open(&path), bytes.len() as u64)
    }

    /// Gives `record` a comment `len` bytes long.
    fn comment(record: &mut Vec<u8>, len: u16) {
        record[32..34].copy_from_slice(&len.to_le_bytes());
        record.extend((0..len).map(|i| b'a' + (i % 26) as u8));
    }

    /// The last entry's sizes said to follow its data (flag bit 3, which no writer of ours
    /// sets): where its data ends cannot be told from its headers, so the next entry goes where
    /// the directory begins, not after the room before it.
    #[test]
    fn after_an_entry_whose_sizes_follow_it_the_next_goes_where_the_directory_begins() {
        let (_dir, path, file, mut layout) = fresh("a.zip");
        let entries: Vec<_> = (0..3)
            .map(|i| PreparedEntry::stored(format!("e{i}"), format!("entry {i}").into_bytes()))
            .collect();
        let len = append_to(&file, &mut layout, &entries);
        let directory_at = layout.in_file_at.unwrap();
        assert!(
            reread(&file, len).end_of_entries < directory_at,
            "room before the directory"
        );
        let mut bytes = std::fs::read(&path).unwrap();
        let third = directory_at as usize + 2 * (CENTRAL_HEADER_LEN + 2);
        assert_eq!(u32_at(&bytes, third), CENTRAL_HEADER_SIG);
        bytes[third + 8] |= FLAG_DATA_DESCRIPTOR as u8;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(reread(&file, len).end_of_entries, directory_at);
    }

    /// End records that cannot describe a file of ours are refused, each with what is wrong,
    /// and the smallest zip there is (an end record alone) is read as empty.
    #[test]
    fn hostile_end_records_are_refused_with_what_is_wrong() {
        /// `before` bytes, then an end record of `count` records, `size` bytes of them at
        /// `at`, with `edit` applied to it.
        fn file_of(
            dir: &std::path::Path,
            before: &[u8],
            (count, size, at): (u16, u32, u32),
            edit: impl FnOnce(&mut [u8]),
        ) -> (File, u64) {
            let mut eocd = Vec::new();
            eocd.extend_from_slice(&EOCD_SIG.to_le_bytes());
            eocd.extend_from_slice(&[0; 4]); // this disk, the directory's disk
            eocd.extend_from_slice(&count.to_le_bytes());
            eocd.extend_from_slice(&count.to_le_bytes());
            eocd.extend_from_slice(&size.to_le_bytes());
            eocd.extend_from_slice(&at.to_le_bytes());
            eocd.extend_from_slice(&[0; 2]); // comment length
            edit(&mut eocd);
            let bytes = [before, &eocd].concat();
            let path = dir.join("hostile.zip");
            std::fs::write(&path, &bytes).unwrap();
            (open(&path), bytes.len() as u64)
        }
        let dir = tempfile::tempdir().unwrap();
        let refusal = |(file, len): (File, u64)| read_directory(&file, len).unwrap_err().to_string();

        std::fs::write(dir.path().join("short.zip"), b"PK\x05\x06short").unwrap();
        let short = open(&dir.path().join("short.zip"));
        assert_eq!(refusal((short, 10)), "the file is shorter than a zip end record");

        let (empty, len) = file_of(dir.path(), b"", (0, 0, 0), |_| ());
        assert_eq!(len, EOCD_LEN);
        assert_eq!(read_directory(&empty, len).unwrap().entries, []);

        for disk_field in [4, 6] {
            let file = file_of(dir.path(), b"", (0, 0, 0), |eocd| eocd[disk_field] = 1);
            assert_eq!(refusal(file), "multi-disk archives are not supported");
        }

        for before in [0, 60, 75] {
            // Shorter than an end record and the ZIP64 records before it (98 bytes).
            let file = file_of(dir.path(), &vec![0u8; before], (0xFFFF, 0, 0), |_| ());
            assert_eq!(refusal(file), "the ZIP64 end records are missing");
        }
        // Room for the ZIP64 records, but not them.
        let room = [0u8; (ZIP64_LOCATOR_LEN + ZIP64_EOCD_LEN) as usize];
        let file = file_of(dir.path(), &room, (0xFFFF, 0, 0), |_| ());
        assert_eq!(refusal(file), "the ZIP64 locator is missing");

        // 46 bytes before the end record: five records cannot fit in them, and a directory
        // said to start at the second of them runs into the end record.
        for (count, at, refused) in [
            (5, 0, "the end record declares an impossible directory"),
            (
                1,
                1,
                "the central directory does not end where the end record begins",
            ),
        ] {
            let directory = [0u8; CENTRAL_HEADER_LEN];
            let file = file_of(
                dir.path(),
                &directory,
                (count, CENTRAL_HEADER_LEN as u32, at),
                |_| (),
            );
            assert_eq!(refusal(file), refused);
        }

        // A directory of up to 1 GiB is read; a larger one is refused before any of it is.
        // The files are sparse: nothing but the end record is written.
        for (size, refused) in [
            (MAX_DIRECTORY_BYTES, "a central directory record is damaged"),
            (
                MAX_DIRECTORY_BYTES + 1,
                "the end record declares an impossible directory",
            ),
        ] {
            let path = dir.path().join("sparse.zip");
            let _ = std::fs::remove_file(&path);
            let file = open(&path);
            file.set_len(size).unwrap();
            let mut eocd = Vec::new();
            write_end_records(&mut eocd, 1, size, 0);
            write_all_at(&file, size, &[&eocd]).unwrap();
            let len = size + eocd.len() as u64;
            assert_eq!(read_directory(&file, len).unwrap_err().to_string(), refused);
        }
    }

    /// Salvage keeps an entry larger than one read of it (64 KiB), and stops at one that
    /// inflates to more than its header declares, even when the bytes it declares match their
    /// CRC-32.
    #[test]
    fn salvage_keeps_long_entries_and_stops_at_one_longer_than_declared() {
        let text: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 23) as u8).collect();
        let declared = 50_000;
        let mut too_long = PreparedEntry::deflated("e2", &text, 6).unwrap();
        assert_eq!(too_long.method, METHOD_DEFLATED);
        too_long.uncompressed_size = declared as u64;
        too_long.crc32 = crc32fast::hash(&text[..declared]);
        let entries = [
            PreparedEntry::stored("e0", b"entry 0".to_vec()),
            PreparedEntry::stored("e1", text.clone()),
            too_long,
            PreparedEntry::stored("e3", b"entry 3".to_vec()),
        ];
        let (_dir, _, file, mut layout) = fresh("a.zip");
        append_to(&file, &mut layout, &entries);
        // Cut the directory off: only the local headers are left to go by.
        let cut = layout.end_of_entries;
        let salvaged = salvage(&file, cut).unwrap();
        let names: Vec<_> = salvaged
            .directory
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["e0", "e1"]);
    }

    /// Records longer than the walk's window, and records lying across its refills, read as
    /// written: a comment as long as a record allows grows the window, even on the last record,
    /// whose bytes end exactly where the directory does.
    #[test]
    fn records_longer_than_the_window_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (file, len) = with_records(
            dir.path(),
            |_, _| (),
            |records| {
                comment(&mut records[0], 3);
                comment(&mut records[1], 40_000);
                comment(&mut records[2], u16::MAX);
            },
        );
        // The last record is longer than the window, and begins some 40 000 bytes into it.
        assert!(CENTRAL_HEADER_LEN + 2 + usize::from(u16::MAX) > DIRECTORY_BUFFER);
        assert_eq!(names(&file), ["e0", "e1", "e2"]);
        let layout = reread(&file, len);
        assert_eq!(
            (layout.count(), layout.records_len),
            (
                3,
                3 * (CENTRAL_HEADER_LEN as u64 + 2) + 40_000 + u64::from(u16::MAX) + 3
            )
        );
    }

    /// A name that is not UTF-8 is refused by readers, which hand names out as text. A writer
    /// joining the archive compares names as stored and appends after it: it does not cut the
    /// file back to the entry before (what a salvage would do).
    #[test]
    fn a_name_not_utf8_is_refused_by_readers_and_passed_over_by_writers() {
        let dir = tempfile::tempdir().unwrap();
        let (file, len) = with_records(
            dir.path(),
            |_, _| (),
            |records| records[1][CENTRAL_HEADER_LEN + 1] = 0xff,
        );
        let refused = read_directory(&file, len).unwrap_err();
        assert_eq!(refused.to_string(), "an entry name is not UTF-8");
        let noting = |file: &File| {
            load(
                file,
                file.metadata().unwrap().len(),
                |noted: &mut Vec<Vec<u8>>, name| {
                    noted.push(name.to_vec());
                },
            )
            .unwrap()
        };
        let (mut layout, noted, salvaged) = noting(&file);
        assert!(salvaged.is_none());
        assert_eq!(noted, [&b"e0"[..], b"e\xff", b"e2"]);
        append(
            &file,
            len,
            &mut layout,
            &[PreparedEntry::stored("e3", b"entry 3".to_vec())],
            Room::Spare,
        )
        .unwrap();
        let (layout, noted, salvaged) = noting(&file);
        assert!(salvaged.is_none());
        assert_eq!(layout.count(), 4);
        assert_eq!(noted, [&b"e0"[..], b"e\xff", b"e2", b"e3"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Records of any length, lying across the walk's window anywhere, read back as
        /// written; and with bytes of the directory or its end records changed, the walk reads
        /// or refuses the file, and a writer loads it or salvages it, without a panic.
        #[test]
        fn a_directory_is_walked_whole_and_damage_is_refused_not_panicked_on(
            comments in proptest::collection::vec(proptest::prop_oneof![0u16..100, 0u16..=u16::MAX], 1..6),
            changes in proptest::collection::vec((proptest::num::f64::ANY, proptest::num::u8::ANY), 0..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (file, len) = by_hand(dir.path(), comments.len(), |_, _| (), |records| {
                for (record, &len) in records.iter_mut().zip(&comments) {
                    comment(record, len);
                }
            });
            let written: Vec<String> = (0..comments.len()).map(|i| format!("e{i}")).collect();
            proptest::prop_assert_eq!(names(&file), written.clone());
            let directory_at = read_end_record(&file, len).unwrap().directory_at;
            let mut bytes = std::fs::read(dir.path().join("by-hand.zip")).unwrap();
            let span = (len - directory_at) as f64;
            let last = bytes.len() - 1;
            for (place, value) in &changes {
                let at = directory_at as usize + (place.abs().fract() * span) as usize;
                bytes[at.min(last)] = *value;
            }
            let path = dir.path().join("changed.zip");
            std::fs::write(&path, &bytes).unwrap();
            let changed = open(&path);
            if let Ok(directory) = read_directory(&changed, len) {
                proptest::prop_assert_eq!(directory.entries.len(), written.len());
            }
            let loaded = load(&changed, len, |count: &mut usize, _| *count += 1);
            if let Ok((layout, count, _)) = loaded {
                proptest::prop_assert_eq!(layout.count(), count as u64);
            }
        }
    }

    /// Positional writes put every part at its place, one after the other, however they are
    /// written: one part, parts joined into one buffer, or parts past the join's limit; the
    /// bytes around them stay.
    #[test]
    fn positional_writes_put_their_parts_in_order_at_the_offset() {
        let (_dir, path, file, _) = fresh("parts.bin");
        file.set_len(8).unwrap();
        let long: Vec<u8> = (0..JOIN_PARTS_UP_TO + 10).map(|i| (i % 251) as u8).collect();
        let cases: [(u64, Vec<&[u8]>); 3] = [
            (2, vec![b"one"]),
            (12, vec![b"two", b"", b"parts"]),
            (40, vec![b"<", &long, b">"]),
        ];
        for (at, parts) in &cases {
            write_all_at(&file, *at, parts).unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 40 + long.len() + 2);
        assert_eq!(&bytes[..12], b"\0\0one\0\0\0\0\0\0\0");
        assert_eq!(&bytes[12..20], b"twoparts");
        assert_eq!(&bytes[20..40], &[0u8; 20]);
        assert_eq!(bytes[40], b'<');
        assert_eq!(&bytes[41..41 + long.len()], &long[..]);
        assert_eq!(bytes[41 + long.len()], b'>');
    }

    /// A record with a comment (which no writer of ours makes) is stepped over whole: the
    /// records after it read as written.
    #[test]
    fn a_record_with_a_comment_is_read_past_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (file, len) = with_records(dir.path(), |_, _| (), |records| comment(&mut records[0], 5));
        assert_eq!(names(&file), ["e0", "e1", "e2"]);
        let layout = reread(&file, len);
        assert_eq!(
            (layout.count(), layout.records_len),
            (3, 3 * (CENTRAL_HEADER_LEN as u64 + 2) + 5)
        );
    }

    /// A record whose name runs past the directory's end, into the end record behind it, is
    /// refused, by readers and writers alike, not read out of the end record.
    #[test]
    fn a_record_running_past_the_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (file, len) = with_records(
            dir.path(),
            |_, _| (),
            |records| {
                let last = &mut records[2];
                last[28..30].copy_from_slice(&12u16.to_le_bytes());
            },
        );
        let refused = read_directory(&file, len).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "a central directory record runs past the directory"
        );
        let refused = Layout::read(&file, len, |_| ()).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "a central directory record runs past the directory"
        );
    }

    /// The last entry ends after its local header's name and extra field, as that header
    /// says, and must end before the directory.
    #[test]
    fn the_last_entry_ends_where_its_local_header_says_and_before_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        // Its two name bytes counted as an extra field instead: it ends where it did.
        let (file, len) = with_records(
            dir.path(),
            |bytes, last| {
                bytes[last + 26..last + 28].copy_from_slice(&0u16.to_le_bytes());
                bytes[last + 28..last + 30].copy_from_slice(&2u16.to_le_bytes());
            },
            |_| (),
        );
        let layout = reread(&file, len);
        assert_eq!(Some(layout.end_of_entries), layout.in_file_at);
        // Said to be larger than the bytes before the directory.
        let (file, len) = with_records(
            dir.path(),
            |_, _| (),
            |records| records[2][20..24].copy_from_slice(&100u32.to_le_bytes()),
        );
        let refused = Layout::read(&file, len, |_| ()).unwrap_err();
        assert_eq!(refused.to_string(), "an entry runs into the central directory");
    }

    /// The local header holds 32-bit sizes: an entry past them is refused, naming it.
    #[test]
    fn an_entry_past_four_gibibytes_is_refused_and_one_at_the_limit_is_not() {
        let (_dir, _path, file, mut directory) = fresh("a.zip");
        // The size an entry says it has (nothing reads this one back).
        let mut entry = PreparedEntry::stored("big", b"x".to_vec());
        entry.uncompressed_size = MAX_ENTRY_BYTES + 1;
        let refused = write_entries(&file, &mut directory, std::slice::from_ref(&entry)).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "entry big is larger than 4 GiB, which this archive format does not store"
        );
        assert_eq!(directory, Layout::default());
        entry.uncompressed_size = MAX_ENTRY_BYTES;
        write_entries(&file, &mut directory, &[entry]).unwrap();
        assert_eq!(directory.count(), 1);
    }

    #[test]
    fn a_file_cut_anywhere_salvages_to_its_whole_entries() {
        let (dir, path, file, mut directory) = fresh("a.zip");
        let mut ends = Vec::new();
        for i in 0..5 {
            let body = format!("entry {i} ").repeat(50 + i * 30);
            let entry = if i % 2 == 0 {
                PreparedEntry::deflated(format!("e{i}"), body.as_bytes(), 6).unwrap()
            } else {
                PreparedEntry::stored(format!("e{i}"), body.into_bytes())
            };
            append_to(&file, &mut directory, &[entry]);
            ends.push(directory.end_of_entries);
        }
        let full = std::fs::read(&path).unwrap();
        for cut in 0..full.len() as u64 {
            let cut_path = dir.path().join("cut.zip");
            std::fs::write(&cut_path, &full[..cut as usize]).unwrap();
            let cut_file = File::open(&cut_path).unwrap();
            let salvaged = salvage(&cut_file, cut).unwrap();
            let whole = ends.iter().filter(|end| **end <= cut).count();
            assert_eq!(salvaged.directory.entries.len(), whole, "cut at {cut}");
            assert_eq!(salvaged.directory.end_of_entries + salvaged.dropped_bytes, cut);
        }
    }

    /// The writes an append of `entries` would make (offset, bytes), without making them, and
    /// the length to cut the file to first.
    fn planned(
        file: &File,
        file_len: u64,
        layout: &mut Layout,
        entries: &[PreparedEntry],
    ) -> (Option<u64>, Vec<(u64, Vec<u8>)>) {
        let (mut local, mut records, mut end) = (Vec::new(), Vec::new(), Vec::new());
        let out = Encoded {
            local: &mut local,
            records: &mut records,
            end: &mut end,
        };
        let plan = plan_append(file, file_len, layout, entries, Room::Spare, out).unwrap();
        let writes = plan
            .writes
            .iter()
            .map(|(at, parts)| (*at, parts.concat()))
            .collect();
        (plan.cut_first, writes)
    }

    /// Killed after any whole write of an append and part-way through the next, whether the
    /// entry fits before the directory or the directory moves: the file reads back with the
    /// old entries or with the new one too (never a damaged one), and takes the next append.
    #[test]
    fn a_writer_killed_anywhere_in_an_append_leaves_a_file_that_loads_and_appends_again() {
        let dir = tempfile::tempdir().unwrap();
        let base_path = dir.path().join("base.zip");
        let base_file = open(&base_path);
        let mut base = Layout::default();
        // 64 KiB of entries leave 4 KiB of room before the directory.
        append_to(
            &base_file,
            &mut base,
            &[PreparedEntry::stored("a", vec![b'a'; 64 * 1024])],
        );
        append_to(
            &base_file,
            &mut base,
            &[PreparedEntry::stored("b", vec![b'b'; 100])],
        );
        let old = std::fs::read(&base_path).unwrap();
        let old_names = names(&base_file);
        let first = read_directory(&base_file, old.len() as u64).unwrap().entries[0].clone();
        // An entry holding, where the old directory is, records that would pass for it (an
        // attached zip file, stored): the old end record must not describe them once written.
        let mut records = Vec::new();
        for name in ["x", "y"] {
            let entry = DirEntry {
                name: name.into(),
                ..first.clone()
            };
            encode_record(&mut records, &entry);
        }
        assert_eq!(records.len() as u64, base.records_len);
        // It ends where the old end record begins, which it leaves as it was.
        let at = (base.in_file_at.unwrap() - base.end_of_entries - LOCAL_HEADER_LEN - 1) as usize;
        let mut look_alike = vec![b'c'; at];
        look_alike.extend_from_slice(&records);
        for (case, new_entry) in [
            ("fits", PreparedEntry::stored("c", vec![b'c'; 1000])),
            ("moves", PreparedEntry::stored("c", vec![b'c'; 10_000])),
            (
                "moves over look-alike records",
                PreparedEntry::stored("c", look_alike),
            ),
        ] {
            let mut after = base.clone();
            let (cut_first, writes) = planned(&base_file, old.len() as u64, &mut after, &[new_entry]);
            assert_eq!(cut_first, None);
            // Fitting: the entry, then the records over the old end record. Moving: the old
            // end record unmarked, the entry, then the whole directory further on.
            assert_eq!(writes.len(), if case == "fits" { 2 } else { 3 }, "{case}");
            let all_names = [old_names.clone(), vec!["c".to_owned()]].concat();
            assert_eq!(after.count(), 3);
            for (w, (at, bytes)) in writes.iter().enumerate() {
                let mut cuts = vec![0, 1, 4, 30, bytes.len() / 2, bytes.len() - 1, bytes.len()];
                cuts.retain(|k| *k <= bytes.len());
                for k in cuts {
                    let mut file_bytes = old.clone();
                    for (at, bytes) in writes[..w].iter().chain([&(*at, bytes[..k].to_vec())]) {
                        let at = *at as usize;
                        if file_bytes.len() < at + bytes.len() {
                            file_bytes.resize(at + bytes.len(), 0);
                        }
                        file_bytes[at..at + bytes.len()].copy_from_slice(bytes);
                    }
                    let path = dir.path().join(format!("killed-{case}-{w}-{k}.zip"));
                    std::fs::write(&path, &file_bytes).unwrap();
                    let file = open(&path);
                    let (mut loaded, loaded_names, _) =
                        load(&file, file_bytes.len() as u64, |names: &mut Vec<String>, name| {
                            names.push(String::from_utf8_lossy(name).into_owned());
                        })
                        .unwrap();
                    assert_eq!(loaded.count(), loaded_names.len() as u64);
                    let done = w == writes.len() - 1 && k == bytes.len();
                    if done {
                        assert_eq!(loaded_names, all_names, "{case}, write {w}, {k} bytes");
                    } else {
                        assert!(
                            loaded_names == old_names || loaded_names == all_names,
                            "{case}, write {w}, {k} bytes: {loaded_names:?}"
                        );
                    }
                    append_to(&file, &mut loaded, &[PreparedEntry::stored("d", b"d".to_vec())]);
                    let read_back = zip_names(&path);
                    assert_eq!(read_back.last().unwrap(), "d=d");
                    assert_eq!(read_back.len(), loaded_names.len() + 1);
                }
            }
        }
    }

    /// Appends go into the room before the directory; the directory moves, written whole,
    /// only when the room runs out (rarely: the room grows with the file), and the room stays
    /// a sixteenth of the file. Every append leaves a zip that reads back as written.
    #[test]
    fn the_directory_moves_rarely_and_its_room_stays_small() {
        let (_dir, path, file, mut directory) = fresh("a.zip");
        let mut moves = 0;
        let mut at = None;
        let appends = 2_000;
        for i in 0..appends {
            let entry =
                PreparedEntry::stored(format!("e/{i}"), format!("payload {i} ").repeat(6).into_bytes());
            let len = append_to(&file, &mut directory, &[entry]);
            if directory.in_file_at != at {
                moves += 1;
                at = directory.in_file_at;
            }
            if i % 97 == 0 {
                assert_eq!(reread(&file, len), directory);
            }
        }
        // Rewritten at every append, it would have moved 2 000 times.
        assert!(moves < appends / 10, "{moves} moves");
        let len = file.metadata().unwrap().len();
        let room = at.unwrap() - directory.end_of_entries;
        assert!(room <= directory.end_of_entries / 16, "{room} bytes of room");
        assert_eq!(reread(&file, len), directory);
        let names = zip_names(&path);
        assert_eq!(names.len(), appends);
        assert!(names[1999].starts_with("e/1999=payload 1999 "));
    }

    /// Past 65 534 entries the end record's count is full: the ZIP64 end records carry it, the
    /// directory reads back through them, and the file takes the next append.
    #[test]
    fn zip64_end_records_are_written_and_read_past_65535_entries() {
        let (_dir, path, file, mut directory) = fresh("many.zip");
        let entries: Vec<PreparedEntry> = (0..70_000)
            .map(|i| PreparedEntry::stored(format!("e/{i}"), i.to_string().into_bytes()))
            .collect();
        let len = append_to(&file, &mut directory, &entries);
        let tail = tail(&file, len).unwrap();
        assert_eq!(u16_at(&tail, 10), 0xFFFF, "the end record defers to ZIP64");
        let mut loaded = reread(&file, len);
        assert_eq!(loaded, directory);
        assert_eq!(read_directory(&file, len).unwrap().entries.len(), 70_000);
        let len = append(
            &file,
            len,
            &mut loaded,
            &[PreparedEntry::stored("last", b"after a reload".to_vec())],
            Room::Spare,
        )
        .unwrap()
        .len;
        assert_eq!(read_directory(&file, len).unwrap().entries.len(), 70_001);
        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(zip.len(), 70_001);
        for (name, content) in [("e/0", "0"), ("e/69999", "69999"), ("last", "after a reload")] {
            let mut text = String::new();
            zip.by_name(name).unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, content);
        }
    }

    #[test]
    fn dos_dates_are_plausible() {
        let day = |days: u64| kit_core::Timestamp::from_unix_nanos(days * 86_400 * 1_000_000_000);
        assert_eq!(day(0).utc_date_and_seconds().0, (1970, 1, 1));
        assert_eq!(day(20_414).utc_date_and_seconds().0, (2025, 11, 22));
        // 2025-11-22 10:20:30 UTC: 10 << 11 | 20 << 5 | 15, 45 << 9 | 11 << 5 | 22.
        let at = kit_core::Timestamp::from_unix_nanos((20_414 * 86_400 + 37_230) * 1_000_000_000);
        assert_eq!(
            dos_date_time(at),
            (10 << 11 | 20 << 5 | 15, 45 << 9 | 11 << 5 | 22)
        );
        let (_, date) = dos_now();
        assert!(date >> 9 >= 45, "year after 2025");
    }

    /// Entries that begin past 4 GiB (an archive grown that large; here the bytes before them
    /// are a hole in a sparse file) carry their offsets in ZIP64 fields, and read back.
    #[test]
    fn entries_past_four_gibibytes_carry_their_offsets_in_zip64_fields() {
        let (_dir, path, file, _) = fresh("far.zip");
        let start = (1u64 << 32) + 1000;
        file.set_len(start).unwrap();
        let mut directory = Layout {
            end_of_entries: start,
            ..Layout::default()
        };
        let body = "far away ".repeat(100);
        let entries = [
            PreparedEntry::stored("far/a", b"alpha".to_vec()),
            PreparedEntry::deflated("far/b", body.as_bytes(), 6).unwrap(),
        ];
        let len = append(&file, start, &mut directory, &entries, Room::None)
            .unwrap()
            .len;
        assert_eq!(reread(&file, len), directory);
        let loaded = read_directory(&file, len).unwrap();
        assert_eq!(loaded.entries[0].local_header_offset, start);
        assert!(loaded.entries[1].local_header_offset > start);
        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
        let mut text = String::new();
        zip.by_name("far/b").unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, body);
        text.clear();
        zip.by_name("far/a").unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "alpha");
    }

    /// Salvage keeps the entries before one whose deflate data is damaged (an invalid block,
    /// or a stream that ends before its last block), and reads nothing past it.
    #[test]
    fn salvage_stops_at_an_entry_whose_deflate_data_is_damaged() {
        let (dir, path, file, mut directory) = fresh("bad.zip");
        for i in 0..3 {
            let body = format!("entry {i} ").repeat(200);
            let entry = PreparedEntry::deflated(format!("e{i}"), body.as_bytes(), 6).unwrap();
            append_to(&file, &mut directory, &[entry]);
        }
        let full = std::fs::read(&path).unwrap();
        let second = &read_directory(&file, full.len() as u64).unwrap().entries[1];
        let data_at = (second.local_header_offset + LOCAL_HEADER_LEN) as usize + second.name.len();
        let damaged_path = dir.path().join("damaged.zip");
        let salvaged_count = |bytes: &[u8]| {
            // Without its directory, so that the entries are found by salvage.
            let cut = directory.end_of_entries as usize;
            std::fs::write(&damaged_path, &bytes[..cut]).unwrap();
            let damaged = File::open(&damaged_path).unwrap();
            salvage(&damaged, cut as u64).unwrap().directory.entries.len()
        };
        assert_eq!(salvaged_count(&full), 3);
        // BFINAL 1, BTYPE 11: a block type that does not exist.
        let mut invalid = full.clone();
        invalid[data_at] = 0xFF;
        assert_eq!(salvaged_count(&invalid), 1);
        // The stream's first block made stored and final, of more bytes than the entry holds.
        let mut short = full.clone();
        short[data_at..data_at + 5].copy_from_slice(&[0x01, 0xFF, 0xFF, 0x00, 0x00]);
        assert_eq!(salvaged_count(&short), 1);
    }
}
