//! `kit-cli audit`: searches every byte of every entry for known secrets and for credentials
//! known by their form.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use kit_core::redact::{LeakScanner, first_credential};
use kit_trace::{ArchiveReader, TraceError};

/// What an audit searches for besides the secrets the run met.
pub(crate) struct Search<'a> {
    /// A file of secrets in clear, one a line.
    pub(crate) secrets_file: Option<&'a Path>,
    /// Credentials known by their form (the sanitizer's rule 10), whether the run met them or
    /// not: one that reached the archive without passing the sanitizer (a test's own
    /// attachment, a run with redaction off) is found too.
    pub(crate) forms: bool,
}

/// An entry holding a secret: the first in it.
pub(crate) struct Finding {
    pub(crate) entry: String,
    pub(crate) offset: usize,
    /// `None` for a secret the run met (or the secrets file holds); else what credential its
    /// form says it is.
    pub(crate) form: Option<&'static str>,
}

/// The first secret in `bytes`: the earliest of a known secret and a credential by its form,
/// the known secret where both start at one byte (it says more: the run met it).
fn first_secret(bytes: &[u8], scanner: &LeakScanner, forms: bool) -> Option<(usize, Option<&'static str>)> {
    let known = scanner.find(bytes).map(|leak| (leak.offset, None));
    let form = forms
        .then(|| first_credential(bytes))
        .flatten()
        .map(|c| (c.offset, Some(c.what)));
    match (known, form) {
        (Some(known), Some(form)) if form.0 < known.0 => Some(form),
        (Some(known), _) => Some(known),
        (None, form) => form,
    }
}

/// What an audit found.
pub(crate) struct Audit {
    pub(crate) entries: usize,
    pub(crate) secrets: usize,
    pub(crate) findings: Vec<Finding>,
}

/// Reads the archive's fingerprints (and the secrets in the secrets file, one a line), then
/// searches every entry, decompressed, for them and (unless `search` says not to) for
/// credentials by their form.
pub(crate) fn audit(archive: &Path, search: &Search<'_>) -> Result<Audit, String> {
    let mut reader = ArchiveReader::open(archive).map_err(|e| e.to_string())?;
    let mut scanner = LeakScanner::new();
    for set in reader.secret_fingerprints().map_err(|e| e.to_string())? {
        scanner
            .add_set(&set)
            .map_err(|e| format!("{}: a fingerprint set is damaged: {e}", archive.display()))?;
    }
    if let Some(file) = search.secrets_file {
        let text = std::fs::read(file)
            .map_err(|e| format!("{}: cannot read the secrets file: {e}", file.display()))?;
        for line in text.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            scanner.add_secret(line);
        }
    }
    let entries = reader.entry_count();
    let findings = scan(reader, &scanner, search.forms)?;
    Ok(Audit {
        entries,
        secrets: scanner.len(),
        findings,
    })
}

/// Threads scanning entries: one per core, up to four. Entries are independent, and inflating
/// and scanning them is all an audit does.
fn scanning_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// What one thread found in its share of the entries (with their indices), or the first entry
/// of its share it could not read.
type Share = Result<Vec<(usize, Finding)>, (usize, TraceError)>;

/// Every entry's first leak, in entry order: thread k of n scans entries k, k + n, … with a
/// reader of its own. An entry that cannot be read fails the audit, as the first such entry
/// would have stopped a scan in order, and threads stop once they are past it.
fn scan(reader: ArchiveReader, scanner: &LeakScanner, forms: bool) -> Result<Vec<Finding>, String> {
    let threads = scanning_threads();
    let entries = reader.entry_count();
    let mut readers: Vec<ArchiveReader> = (1..threads).map(|_| reader.clone()).collect();
    readers.push(reader);
    // The first entry found unreadable so far: past it, nothing a thread finds is reported.
    let failed_at = &AtomicUsize::new(usize::MAX);
    let results: Vec<Share> = std::thread::scope(|scope| {
        let workers: Vec<_> = readers
            .into_iter()
            .enumerate()
            .map(|(k, mut reader)| {
                scope.spawn(move || {
                    let mut found = Vec::new();
                    for index in (k..entries).step_by(threads) {
                        if index > failed_at.load(Ordering::Relaxed) {
                            break;
                        }
                        let (entry, bytes) = reader.entry(index).map_err(|e| {
                            failed_at.fetch_min(index, Ordering::Relaxed);
                            (index, e)
                        })?;
                        if let Some((offset, form)) = first_secret(&bytes, scanner, forms) {
                            found.push((index, Finding { entry, offset, form }));
                        }
                    }
                    Ok(found)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut findings = Vec::new();
    let mut failed: Option<(usize, TraceError)> = None;
    for result in results {
        match result {
            Ok(found) => findings.extend(found),
            Err((index, e)) => {
                if failed.as_ref().is_none_or(|(first, _)| index < *first) {
                    failed = Some((index, e));
                }
            }
        }
    }
    if let Some((_, e)) = failed {
        return Err(e.to_string());
    }
    findings.sort_unstable_by_key(|(index, _)| *index);
    Ok(findings.into_iter().map(|(_, finding)| finding).collect())
}

/// `kit-cli audit`: prints a line per finding (or that none was found); exit 1 on findings.
pub(crate) fn run(archive: &Path, search: &Search<'_>) -> Result<(), crate::Exit> {
    let archive = crate::inputs::archive(archive).map_err(crate::Exit::input)?;
    let result = audit(archive, search).map_err(crate::Exit::input)?;
    let mut text = String::new();
    for finding in &result.findings {
        match finding.form {
            None => text.push_str(&format!(
                "secret found in entry {} at byte {}\n",
                finding.entry, finding.offset
            )),
            Some(what) => text.push_str(&format!(
                "credential found in entry {} at byte {}: {what}, by its form\n",
                finding.entry, finding.offset
            )),
        }
    }
    if result.findings.is_empty() {
        let forms = if search.forms {
            " and no credential by its form"
        } else {
            ""
        };
        text.push_str(&format!(
            "no known secret{forms} in {} entries ({} secrets searched for)\n",
            result.entries, result.secrets
        ));
        return crate::write_output(None, text.as_bytes());
    }
    crate::write_output(None, text.as_bytes())?;
    Err(crate::Exit {
        code: 1,
        message: format!(
            "{} of {} entries hold a secret",
            result.findings.len(),
            result.entries
        ),
    })
}
