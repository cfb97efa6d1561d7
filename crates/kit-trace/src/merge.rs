//! Merging archives: shards of one run written apart (CI jobs, machines), or several runs.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use kit_core::{EventKind, RunId, TestId};

use crate::TraceError;
use crate::format::{self, EntryPath, FORMAT_VERSION, MERGE_ENTRY, MIME_TYPE, MIME_TYPE_ENTRY};
use crate::read::ArchiveReader;
use crate::zipfile::{self, Deflater, Layout, PreparedEntry, Room};

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MergeSummary {
    /// Runs in the merged archive.
    pub runs: usize,
    /// Tests in it.
    pub tests: usize,
    /// Blobs in it (each once).
    pub blobs: usize,
    /// Tests found in more than one shard, one line each.
    pub duplicates: Vec<String>,
    /// Shards that were cut short (their writer killed), one line for each of their runs:
    /// their whole entries were read and merged, and the merged archive is whole.
    pub salvaged: Vec<String>,
}

/// `merge.json`: where a merged archive's entries came from, and what was flagged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MergeInfo {
    /// The format version of this entry.
    pub format_version: String,
    /// The shards, as named when merging.
    pub sources: Vec<String>,
    /// Tests found in more than one shard, one line each.
    #[serde(default)]
    pub duplicates: Vec<String>,
    /// Shards that were cut short, one line for each of their runs (absent from a
    /// `merge.json` written before it was added).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub salvaged: Vec<String>,
}

/// Merges `shards` into a new archive at `out` (refused if it exists): every run's manifest
/// once, every test, every blob once (they are content-addressed), every secrets entry.
///
/// A test found in two shards is kept and flagged, not dropped: the same test id with the same
/// events is stored once; the same id with other events is kept under a new id; the same name
/// under two ids (a test run in two shards) stays twice. `merge.json` lists the shards and the
/// duplicates, and readers show them.
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<MergeSummary, TraceError> {
    let io = |action: &'static str| {
        let path = out.to_owned();
        move |source| TraceError::Io { path, action, source }
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(io("create"))?;
    let result = merge_into(&file, out, shards);
    if result.is_err() {
        // Nothing half-written stays behind.
        drop(file);
        let _ = std::fs::remove_file(out);
    }
    result
}

/// Bytes of entries a merge holds before deflating and writing them: its memory grows with the
/// shards' tests (their names and digests), not with their events.
const BATCH_BYTES: usize = 2 << 20;

/// Threads deflating a batch: deflating at level 6 was two thirds of a merge's time, on one
/// core.
fn deflate_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// `entries` deflated, in their order: with n deflaters, entry i by deflater i mod n, each on a
/// thread of its own (the first on this one). An entry's deflated bytes depend on nothing but
/// its own, so the merged file is the same however many threads made it.
fn deflate_all(
    deflaters: &mut [Deflater],
    entries: &[(String, Vec<u8>)],
) -> std::io::Result<Vec<PreparedEntry>> {
    let n = deflaters.len().min(entries.len());
    let Some((first, rest)) = deflaters[..n].split_first_mut() else {
        return Ok(Vec::new());
    };
    let share = |k: usize, deflater: &mut Deflater| -> std::io::Result<Vec<PreparedEntry>> {
        entries
            .iter()
            .skip(k)
            .step_by(n)
            .map(|(name, bytes)| PreparedEntry::deflated_with(deflater, name.clone(), bytes))
            .collect()
    };
    let mut shares = std::thread::scope(|scope| {
        let others: Vec<_> = rest
            .iter_mut()
            .enumerate()
            .map(|(k, deflater)| scope.spawn(move || share(k + 1, deflater)))
            .collect();
        let mut shares = vec![share(0, first)?.into_iter()];
        for other in others {
            let deflated = other
                .join()
                .map_err(|_| std::io::Error::other("a thread deflating entries panicked"))??;
            shares.push(deflated.into_iter());
        }
        Ok::<_, std::io::Error>(shares)
    })?;
    // Entry i is the next of share i mod n.
    let mut all = Vec::with_capacity(entries.len());
    for i in 0..entries.len() {
        all.extend(shares.get_mut(i % n).and_then(Iterator::next));
    }
    Ok(all)
}

fn merge_into(file: &File, out: &Path, shards: &[PathBuf]) -> Result<MergeSummary, TraceError> {
    let write_error = |source| TraceError::Io {
        path: out.to_owned(),
        action: "write the merged archive",
        source,
    };
    let mut layout = Layout::default();
    let mut deflaters: Vec<Deflater> = (0..deflate_threads()).map(|_| Deflater::new(6)).collect();
    let mut batch = vec![PreparedEntry::stored(
        MIME_TYPE_ENTRY,
        MIME_TYPE.as_bytes().to_vec(),
    )];
    // Entries read and not yet deflated, and their bytes.
    let mut pending: Vec<(String, Vec<u8>)> = Vec::new();
    let mut pending_bytes = 0;

    // Entry name → digest of what was written under it.
    let mut written: HashMap<String, [u8; 32]> = HashMap::new();
    let mut names = TestNames::default();
    let mut duplicates = Vec::new();
    let mut salvaged = Vec::new();
    let sources = shard_labels(shards);
    let same_file = same_files(shards);
    for (shard_index, shard) in shards.iter().enumerate() {
        if same_file[shard_index] != shard_index {
            // A file given twice: everything in it is merged already.
            continue;
        }
        let shard_name = &sources[shard_index];
        let mut reader = ArchiveReader::open(shard)?;
        // A shard merged before keeps what its merge flagged (its `merge.json` is not copied).
        if let Some(info) = reader.merge_info()? {
            duplicates.extend(info.duplicates);
            salvaged.extend(info.salvaged);
        }
        if let Some(cut) = reader.salvage() {
            // A merged archive is whole: what its readers cannot see any more, it says.
            for run in reader.runs() {
                salvaged.push(format!(
                    "shard {shard_name} of run {} was cut short (its writer was killed?): read {} whole entries, left out {} damaged bytes",
                    run.run_id, cut.entries, cut.dropped_bytes
                ));
            }
        }
        // Tests whose events differ from those of the same id already written: new ids.
        let mut renamed: HashMap<(RunId, TestId), TestId> = HashMap::new();
        for index in 0..reader.entry_count() {
            let (name, bytes) = reader.entry(index)?;
            // Of the bytes as read, and then of what is written under the entry's name.
            let mut digest: [u8; 32] = Sha256::digest(&bytes).into();
            let (name, bytes) = match EntryPath::parse(&name) {
                EntryPath::MimeType | EntryPath::Merge | EntryPath::Other => continue,
                EntryPath::Manifest(_) | EntryPath::Blob(_) => {
                    if written.contains_key(&name) {
                        continue;
                    }
                    (name, bytes)
                }
                EntryPath::Secrets(run) => match written.get(&name) {
                    Some(d) if *d == digest => continue,
                    // Another process's entry of the same name: keep it beside, renamed.
                    Some(_) => {
                        let file = name.rsplit('/').next().unwrap_or("secrets.json");
                        (format!("runs/{run}/secrets/m{shard_index}-{file}"), bytes)
                    }
                    None => (name, bytes),
                },
                EntryPath::Segment(run, test, segment) => {
                    if segment == 0
                        && let Some(test_name) = started_name(&bytes, &run, test)
                        && let Some(other) = names.add(&run, &test_name, test, shard_index)
                    {
                        let other = &sources[other];
                        duplicates.push(format!(
                            "test `{test_name}` of run {run} is in {other} and {shard_name} (two runs of it): both kept"
                        ));
                    }
                    let key = (run.clone(), test);
                    if let Some(new) = renamed.get(&key) {
                        let bytes = rewrite_test_id(&bytes, test, *new);
                        digest = Sha256::digest(&bytes).into();
                        (format::segment_path(&run, *new, segment), bytes)
                    } else {
                        match written.get(&name) {
                            Some(d) if *d == digest => continue,
                            Some(_) => {
                                let new = TestId::generate();
                                renamed.insert(key, new);
                                duplicates.push(format!(
                                    "test {test} of run {run} is in two shards with different events: \
                                     the copy from {shard_name} is kept as {new}"
                                ));
                                let bytes = rewrite_test_id(&bytes, test, new);
                                digest = Sha256::digest(&bytes).into();
                                (format::segment_path(&run, new, segment), bytes)
                            }
                            None => (name, bytes),
                        }
                    }
                }
            };
            written.insert(name.clone(), digest);
            pending_bytes += bytes.len();
            pending.push((name, bytes));
            if pending_bytes >= BATCH_BYTES {
                batch.extend(deflate_all(&mut deflaters, &pending).map_err(write_error)?);
                zipfile::write_entries(file, &mut layout, &batch).map_err(write_error)?;
                batch.clear();
                pending.clear();
                pending_bytes = 0;
            }
        }
    }
    batch.extend(deflate_all(&mut deflaters, &pending).map_err(write_error)?);
    let info = MergeInfo {
        format_version: FORMAT_VERSION.to_string(),
        sources,
        duplicates: duplicates.clone(),
        salvaged: salvaged.clone(),
    };
    let json = serde_json::to_vec_pretty(&info).map_err(|e| TraceError::Encode(e.to_string()))?;
    batch.push(PreparedEntry::stored(MERGE_ENTRY, json));
    // The only central directory the merged file gets, after every entry.
    let file_len = layout.end_of_entries;
    zipfile::append(file, file_len, &mut layout, &batch, Room::None).map_err(write_error)?;

    // A set: a merge of many runs made a list's search quadratic in the entries.
    let mut runs: HashSet<&str> = HashSet::new();
    let mut tests = 0;
    let mut blobs = 0;
    // Every entry but `mimetype` and `merge.json` was written under its name.
    for name in written.keys() {
        match EntryPath::parse(name) {
            EntryPath::Segment(_, _, 0) => tests += 1,
            EntryPath::Blob(_) => blobs += 1,
            _ => {}
        }
        if let Some(run) = name.strip_prefix("runs/").and_then(|r| r.split('/').next()) {
            runs.insert(run);
        }
    }
    Ok(MergeSummary {
        runs: runs.len(),
        tests,
        blobs,
        duplicates,
        salvaged,
    })
}

/// How each shard is named in `merge.json` and in messages: its file name, or the path as
/// given when another shard has the same file name (the shards of one run are all
/// `kit-{run}.kittrace`, each in its own folder).
fn shard_labels(shards: &[PathBuf]) -> Vec<String> {
    let file_name = |shard: &PathBuf| shard.file_name().map(|n| n.to_string_lossy().into_owned());
    shards
        .iter()
        .map(|shard| match file_name(shard) {
            Some(name)
                if shards
                    .iter()
                    .all(|other| file_name(other).as_ref() != Some(&name) || other == shard) =>
            {
                name
            }
            _ => shard.display().to_string(),
        })
        .collect()
}

/// For each shard, the first shard that is the same file (itself, unless given twice): a file
/// given twice is merged once.
fn same_files(shards: &[PathBuf]) -> Vec<usize> {
    let canonical: Vec<PathBuf> = shards
        .iter()
        .map(|s| std::fs::canonicalize(s).unwrap_or_else(|_| s.clone()))
        .collect();
    canonical
        .iter()
        .map(|c| canonical.iter().position(|other| other == c).unwrap_or_default())
        .collect()
}

/// The test ids each shard gave each test name of a run, to flag a test run in two shards.
#[derive(Default)]
struct TestNames {
    /// (run, test name) → the shards that gave it, in the order first seen.
    seen: HashMap<(RunId, String), Vec<NameInShard>>,
}

/// The first test id one shard gave a name, and the last other one. Two are enough: whatever
/// id a test has, a shard that gave the name to another id has one of these two other than it.
/// So a name given to many tests costs as many shards, not as many tests, to look up.
struct NameInShard {
    shard: usize,
    first: TestId,
    second: Option<TestId>,
}

impl NameInShard {
    fn has_other_than(&self, test: TestId) -> bool {
        self.first != test || self.second.is_some_and(|id| id != test)
    }
}

impl TestNames {
    /// Records that `shard` has test `test` named `name`, and returns the first other shard
    /// that gave the name to another test, if any.
    fn add(&mut self, run: &RunId, name: &str, test: TestId, shard: usize) -> Option<usize> {
        let shards = self.seen.entry((run.clone(), name.to_owned())).or_default();
        let other = shards
            .iter()
            .find(|seen| seen.shard != shard && seen.has_other_than(test))
            .map(|seen| seen.shard);
        match shards.iter_mut().find(|seen| seen.shard == shard) {
            Some(seen) if seen.first != test => seen.second = Some(test),
            Some(_) => {}
            None => shards.push(NameInShard {
                shard,
                first: test,
                second: None,
            }),
        }
        other
    }
}

/// The test name in a segment 0 (its `test_started` event).
fn started_name(segment: &[u8], run: &RunId, test: TestId) -> Option<String> {
    let text = std::str::from_utf8(segment).ok()?;
    let line = text.lines().nth(1)?;
    let event = kit_core::Event::from_json_in_scope(line, run, test).ok()?;
    match event.kind {
        EventKind::TestStarted(started) => Some(started.name),
        _ => None,
    }
}

/// The segment with every `test_id` replaced: its header's, and its events' in a 1.x segment
/// (2.x event lines leave the test to the segment's path).
fn rewrite_test_id(segment: &[u8], from: TestId, to: TestId) -> Vec<u8> {
    let text = String::from_utf8_lossy(segment);
    // Ids are hyphenated UUIDs in quotes: replacing the quoted text cannot touch anything else.
    text.replace(&format!("\"{from}\""), &format!("\"{to}\""))
        .into_bytes()
}

impl ArchiveReader {
    /// What `merge.json` says, for a merged archive; `None` for one written by tests.
    pub fn merge_info(&mut self) -> Result<Option<MergeInfo>, TraceError> {
        let Some(index) = (0..self.entry_count()).find(|&i| self.entry_name(i) == MERGE_ENTRY) else {
            return Ok(None);
        };
        let (name, bytes) = self.entry(index)?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| TraceError::BadEntry {
                path: self.path().to_owned(),
                entry: name,
                reason: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many threads deflate a batch, its entries come out in order and as one
    /// deflater makes them: small, empty, incompressible (kept stored) and large ones.
    #[test]
    fn a_batch_deflates_alike_on_any_number_of_threads() {
        let mut noise = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    noise ^= noise << 13;
                    noise ^= noise >> 7;
                    noise ^= noise << 17;
                    noise as u8
                })
                .collect()
        };
        let entries: Vec<(String, Vec<u8>)> = (0..23)
            .map(|i| {
                let bytes = match i % 4 {
                    0 => Vec::new(),
                    1 => random(300),
                    2 => format!("{{\"test\":{i}}}\n").repeat(i * 40).into_bytes(),
                    _ => b"abc".repeat(i * 1000),
                };
                (format!("runs/r/tests/{i}/0.jsonl"), bytes)
            })
            .collect();
        let mut one = Deflater::new(6);
        let expected: Vec<PreparedEntry> = entries
            .iter()
            .map(|(name, bytes)| PreparedEntry::deflated_with(&mut one, name.clone(), bytes).unwrap())
            .collect();
        for threads in 1..=5 {
            let mut deflaters: Vec<Deflater> = (0..threads).map(|_| Deflater::new(6)).collect();
            assert_eq!(
                deflate_all(&mut deflaters, &entries).unwrap(),
                expected,
                "{threads} threads"
            );
            assert_eq!(
                deflate_all(&mut deflaters, &entries[..1]).unwrap(),
                expected[..1],
                "{threads}"
            );
            assert!(deflate_all(&mut deflaters, &[]).unwrap().is_empty());
        }
    }

    #[test]
    fn a_name_is_flagged_when_another_shard_gave_it_to_another_test() {
        let run = RunId::new("r").unwrap();
        let [x, y, z, w] = [1, 2, 3, 4].map(TestId::from_u128);
        let mut names = TestNames::default();
        // One test in two shards (the same id) is not two runs of a name.
        assert_eq!(names.add(&run, "n", x, 0), None);
        assert_eq!(names.add(&run, "n", x, 1), None);
        assert_eq!(names.add(&run, "n", x, 2), None);
        // A shard's own runs of a name are not flagged; another shard's are, naming the first.
        assert_eq!(names.add(&run, "n", y, 0), Some(1));
        assert_eq!(names.add(&run, "n", z, 0), Some(1));
        assert_eq!(names.add(&run, "n", x, 3), Some(0), "shard 0 gave it to y too");
        assert_eq!(names.add(&run, "n", w, 2), Some(0));
        // A shard given twice gives its ids again: what it gave before is kept.
        assert_eq!(names.add(&run, "n", x, 0), Some(2), "shard 2 gave it to w");
        assert_eq!(names.add(&run, "n", x, 4), Some(0), "shard 0 still has another");
        // Another name, or the same name in another run, starts afresh.
        assert_eq!(names.add(&run, "m", y, 1), None);
        assert_eq!(names.add(&RunId::new("s").unwrap(), "n", z, 1), None);
    }
}
