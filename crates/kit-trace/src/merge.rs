//! Merging archives: shards of one run written apart (CI jobs, machines), or several runs.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use kit_core::{EventKind, RunId, TestId};

use crate::TraceError;
use crate::format::{self, EntryPath, FORMAT_VERSION, MERGE_ENTRY, MIME_TYPE, MIME_TYPE_ENTRY};
use crate::read::ArchiveReader;
use crate::zipfile::{self, Deflater, Directory, PreparedEntry, Room};

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

fn merge_into(file: &File, out: &Path, shards: &[PathBuf]) -> Result<MergeSummary, TraceError> {
    let write_error = |source| TraceError::Io {
        path: out.to_owned(),
        action: "write the merged archive",
        source,
    };
    let mut directory = Directory::default();
    let mut deflater = Deflater::new(6);
    zipfile::append(
        file,
        0,
        &mut directory,
        &[PreparedEntry::stored(
            MIME_TYPE_ENTRY,
            MIME_TYPE.as_bytes().to_vec(),
        )],
        Room::None,
    )
    .map_err(write_error)?;

    // Entry name → digest of what was written under it.
    let mut written: HashMap<String, [u8; 32]> = HashMap::new();
    // (run, test name) → (test id, shard) seen so far.
    let mut names: BTreeMap<(RunId, String), Vec<(TestId, String)>> = BTreeMap::new();
    let mut duplicates = Vec::new();
    let mut sources = Vec::new();
    for (shard_index, shard) in shards.iter().enumerate() {
        let shard_name = shard.file_name().map_or_else(
            || shard.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        sources.push(shard_name.clone());
        let mut reader = ArchiveReader::open(shard)?;
        // Tests whose events differ from those of the same id already written: new ids.
        let mut renamed: HashMap<(RunId, TestId), TestId> = HashMap::new();
        let mut batch = Vec::new();
        for index in 0..reader.entry_count() {
            let (name, bytes) = reader.entry(index)?;
            let digest: [u8; 32] = Sha256::digest(&bytes).into();
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
                    {
                        let seen = names.entry((run.clone(), test_name.clone())).or_default();
                        if let Some((_, other)) = seen.iter().find(|(id, s)| *id != test && *s != shard_name)
                        {
                            duplicates.push(format!(
                                    "test `{test_name}` of run {run} is in {other} and {shard_name} (two runs of it): both kept"
                                ));
                        }
                        seen.push((test, shard_name.clone()));
                    }
                    let key = (run.clone(), test);
                    if let Some(new) = renamed.get(&key) {
                        let bytes = rewrite_test_id(&bytes, test, *new);
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
                                (format::segment_path(&run, new, segment), bytes)
                            }
                            None => (name, bytes),
                        }
                    }
                }
            };
            written.insert(name.clone(), Sha256::digest(&bytes).into());
            batch.push(PreparedEntry::deflated_with(&mut deflater, name, &bytes).map_err(write_error)?);
        }
        // One append per shard: the directory is rewritten once per shard, not per entry.
        zipfile::append(file, 0, &mut directory, &batch, Room::None).map_err(write_error)?;
    }
    let info = MergeInfo {
        format_version: FORMAT_VERSION.to_string(),
        sources,
        duplicates: duplicates.clone(),
    };
    let json = serde_json::to_vec_pretty(&info).map_err(|e| TraceError::Encode(e.to_string()))?;
    zipfile::append(
        file,
        0,
        &mut directory,
        &[PreparedEntry::stored(MERGE_ENTRY, json)],
        Room::None,
    )
    .map_err(write_error)?;

    let mut runs: Vec<&str> = Vec::new();
    let mut tests = 0;
    let mut blobs = 0;
    for entry in &directory.entries {
        match EntryPath::parse(&entry.name) {
            EntryPath::Manifest(_) => {}
            EntryPath::Segment(_, _, 0) => tests += 1,
            EntryPath::Blob(_) => blobs += 1,
            _ => {}
        }
        if let Some(run) = entry.name.strip_prefix("runs/").and_then(|r| r.split('/').next())
            && !runs.contains(&run)
        {
            runs.push(run);
        }
    }
    Ok(MergeSummary {
        runs: runs.len(),
        tests,
        blobs,
        duplicates,
    })
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
