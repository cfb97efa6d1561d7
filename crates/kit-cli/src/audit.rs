//! `kit-cli audit`: searches every byte of every entry for known secrets and for credentials
//! known by their form.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::render::counted;
use base64::Engine as _;
use kit_core::file::ReadBoundedError;
use kit_core::redact::{LeakScanner, first_credential, utf16_text};
use kit_trace::{ArchiveReader, TraceError};
use memchr::memmem;
use std::ops::Range;

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
    pub(crate) found: Found,
}

/// A secret found in an entry.
#[derive(Clone, Copy)]
pub(crate) struct Found {
    /// Where the secret is in the entry; for one in base64, where the base64 starts.
    pub(crate) offset: usize,
    /// For a secret in base64: where it is in the bytes the base64 stands for.
    pub(crate) in_base64: Option<usize>,
    /// `None` for a secret the run met (or the secrets file holds); else what credential its
    /// form says it is.
    pub(crate) form: Option<&'static str>,
}

/// The first secret in `bytes`: the earliest of a known secret and a credential by its form,
/// the known secret where both start at one byte (it says more: the run met it).
///
/// In event lines (`events`), bytes the trace keeps as base64 (a binary body, an attachment
/// that is not text) are searched as the bytes they stand for, not as their base64: a secret
/// in them cannot be seen in the base64's letters, and those letters can take a credential's
/// form by chance (`+AIza` and 35 more is a Google API key's). Other entries (a blob, the
/// manifest) are searched as they are.
fn first_secret(bytes: &[u8], events: bool, scanner: &LeakScanner, forms: bool) -> Option<Found> {
    let encoded = if events { base64_strings(bytes) } else { Vec::new() };
    let known = scanner.find(bytes).map(|leak| Found {
        offset: leak.offset,
        in_base64: None,
        form: None,
    });
    let form = forms.then(|| first_form_outside(bytes, &encoded)).flatten();
    let decoded = encoded.iter().find_map(|span| {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&bytes[span.clone()])
            .ok()?;
        let at = |(offset, form)| Found {
            offset: span.start,
            in_base64: Some(offset),
            form,
        };
        let in_bytes = first_in(&decoded, scanner, forms).map(at);
        // Text in UTF-16 (a test's own attachment of a .NET service's answer) puts a zero
        // beside each ASCII letter, so it is searched as the text it stands for: after its
        // mark, or, with no type to go by, a document that opens as JSON or XML does.
        let in_text = utf16_text(None, &decoded).and_then(|text| {
            first_in(text.as_bytes(), scanner, forms)
                .map(|(offset, form)| at((utf16_offset(&decoded, &text, offset), form)))
        });
        earlier(in_bytes, in_text)
    });
    earlier(earlier(known, form), decoded)
}

/// Where the first secret in `haystack` starts, and the form that says it is one (`None` for a
/// known secret, which is passed first where both start at one byte).
fn first_in(haystack: &[u8], scanner: &LeakScanner, forms: bool) -> Option<(usize, Option<&'static str>)> {
    let known = scanner.find(haystack).map(|leak| (leak.offset, None));
    let form = forms
        .then(|| first_credential(haystack))
        .flatten()
        .map(|c| (c.offset, Some(c.what)));
    match (known, form) {
        (Some(known), Some(form)) if form.0 < known.0 => Some(form),
        (known, form) => known.or(form),
    }
}

/// Where the character at byte `offset` of `text` (read by [`utf16_text`] from `bytes`) starts
/// in `bytes`: past the mark, if any, two bytes a unit.
fn utf16_offset(bytes: &[u8], text: &str, offset: usize) -> usize {
    let mark = if matches!(bytes, [0xff, 0xfe, ..] | [0xfe, 0xff, ..]) {
        2
    } else {
        0
    };
    let units: usize = text
        .char_indices()
        .take_while(|&(at, _)| at < offset)
        .map(|(_, c)| c.len_utf16())
        .sum();
    mark + 2 * units
}

/// The earlier of two secrets found; at one place, the first (a known secret is passed first:
/// it says more, the run met it).
fn earlier(a: Option<Found>, b: Option<Found>) -> Option<Found> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (b.offset, b.in_base64) < (a.offset, a.in_base64) {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// The first credential by its form in `bytes` that does not lie in one of the base64
/// strings `encoded` (in order).
fn first_form_outside(bytes: &[u8], encoded: &[Range<usize>]) -> Option<Found> {
    let mut from = 0;
    loop {
        let found = first_credential(&bytes[from..])?;
        let start = from + found.offset;
        match encoded.iter().find(|span| span.contains(&start)) {
            // Searched again from the string's closing quote, which no credential's bytes
            // hold: what follows is read as it would have been.
            Some(span) => from = span.end,
            None => {
                return Some(Found {
                    offset: start,
                    in_base64: None,
                    form: Some(found.what),
                });
            }
        }
    }
}

/// The base64 strings of an entry's event lines, in order: an attachment's bytes that are not
/// text (`{"inline":"…"}`), and a request's or response's body that is not (`kit.http.….body`
/// on a line whose `….body.encoding` is `base64`). Each is the string between its quotes;
/// one that does not decode is left to be searched as text.
///
/// Both are looked for by what is rare (`"inline":"`, the encoding): every response has a
/// body, few are not text, and an audit reads every line of a run.
fn base64_strings(bytes: &[u8]) -> Vec<Range<usize>> {
    let string_at = |start: usize| memchr::memchr(b'"', &bytes[start..]).map(|len| start..start + len);
    let inline = br#""inline":""#;
    let mut spans: Vec<Range<usize>> = memmem::find_iter(bytes, inline)
        .filter_map(|at| string_at(at + inline.len()))
        .collect();
    let encoding = br#".body.encoding":"base64""#;
    for at in memmem::find_iter(bytes, encoding) {
        // The attribute's name up to `.body`: `"kit.http.request` or `"kit.http.response`.
        let Some(name_start) = memchr::memrchr(b'"', &bytes[..at]) else {
            continue;
        };
        let key = [&bytes[name_start..at], br#".body":""#].concat();
        let line_start = memchr::memrchr(b'\n', &bytes[..name_start]).map_or(0, |i| i + 1);
        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
        if let Some(body) = memmem::find(&bytes[line_start..line_end], &key) {
            spans.extend(string_at(line_start + body + key.len()));
        }
    }
    spans.sort_unstable_by_key(|span| span.start);
    spans
}

/// What an audit found.
pub(crate) struct Audit {
    pub(crate) entries: usize,
    pub(crate) secrets: usize,
    pub(crate) findings: Vec<Finding>,
}

/// Reads the archive's fingerprints (and takes the secrets of a secrets file's bytes, one a
/// line), then searches every entry, decompressed, for them and (when `forms`) for
/// credentials by their form.
pub(crate) fn audit(archive: &Path, secrets_file: Option<&[u8]>, forms: bool) -> Result<Audit, String> {
    let mut reader = ArchiveReader::open(archive).map_err(|e| e.to_string())?;
    let mut scanner = LeakScanner::new();
    for set in reader.secret_fingerprints().map_err(|e| e.to_string())? {
        scanner
            .add_set(&set)
            .map_err(|e| format!("{}: a fingerprint set is damaged: {e}", archive.display()))?;
    }
    if let Some(text) = secrets_file {
        for line in text.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            scanner.add_secret(line);
        }
    }
    let entries = reader.entry_count();
    let findings = scan(reader, &scanner, forms)?;
    Ok(Audit {
        entries,
        secrets: scanner.len(),
        findings,
    })
}

/// Most a secrets file may hold. Secrets are short, and the file may be a stream
/// (`--secrets-file <(vault …)`), which has no size to check first: `/dev/zero` was read until
/// memory ran out.
const MAX_SECRETS_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The secrets file's bytes, up to [`MAX_SECRETS_FILE_BYTES`].
fn read_secrets_file(file: &Path) -> Result<Vec<u8>, String> {
    kit_core::file::read_bounded(file, MAX_SECRETS_FILE_BYTES).map_err(|e| match e {
        ReadBoundedError::TooLarge { .. } => format!(
            "{}: the secrets file holds more than {} MiB; secrets are one a line, and a file that large is not a list of them",
            file.display(),
            MAX_SECRETS_FILE_BYTES / (1024 * 1024)
        ),
        e => format!("{}: cannot read the secrets file: {e}", file.display()),
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
                        if let Some(first) = first_secret(&bytes, entry.ends_with(".jsonl"), scanner, forms) {
                            found.push((index, Finding { entry, found: first }));
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

/// `kit-cli audit`: prints a line per finding (or that none was found) for each archive in
/// `inputs` (files or folders; none named, the folder the tests write to, found through the
/// configuration in `config`), each line after the archive's name when there are several;
/// exit 1 on findings. Of several archives, one that cannot be read is named at the end, after
/// the others are audited, and the exit is 2.
pub(crate) fn run(inputs: &[PathBuf], config: Option<&Path>, search: &Search<'_>) -> Result<(), crate::Exit> {
    let archives = if inputs.is_empty() {
        let configured = crate::inputs::configuration(config).map_err(crate::Exit::input)?;
        let folder = crate::inputs::tests_folder(&configured).map_err(crate::Exit::input)?;
        crate::inputs::archives(&[folder])
    } else {
        crate::inputs::archives(inputs)
    }
    .map_err(crate::Exit::input)?;
    // Read once for every archive: it may be a stream (`<(vault …)`), empty when read again.
    let secrets_file = search
        .secrets_file
        .map(read_secrets_file)
        .transpose()
        .map_err(crate::Exit::input)?;
    let several = archives.len() > 1;
    let (mut entries, mut leaking, mut findings) = (0, 0, 0);
    // Of several archives, one that cannot be read is no reason to leave the rest unsearched:
    // the audit goes on, and says at its end which it could not audit.
    let mut unread = Vec::new();
    for archive in &archives {
        let result = match audit(archive, secrets_file.as_deref(), search.forms) {
            Ok(result) => result,
            Err(e) if several => {
                unread.push(crate::Exit::input(e).message);
                continue;
            }
            Err(e) => return Err(crate::Exit::input(e)),
        };
        let prefix = if several {
            format!("{}: ", kit_core::visible::text(&archive.display().to_string()))
        } else {
            String::new()
        };
        // Written archive by archive: a long audit shows what it found as it goes.
        crate::write_output(None, report(&result, search, &prefix).as_bytes())?;
        entries += result.entries;
        findings += result.findings.len();
        leaking += usize::from(!result.findings.is_empty());
    }
    let mut lines = Vec::new();
    if findings > 0 {
        let holds = if findings == 1 { "holds" } else { "hold" };
        let mut line = format!(
            "{findings} of {} {holds} a secret",
            counted(entries, "entry", "entries")
        );
        if several {
            line.push_str(&format!(", in {leaking} of {} archives", archives.len()));
        }
        lines.push(line);
    }
    // An archive left unsearched is unusable input (2), which outweighs a leak found (1): both
    // fail a build, and the leak's line is printed either way.
    let code = if unread.is_empty() { 1 } else { 2 };
    if !unread.is_empty() {
        let count = unread.len();
        lines.extend(unread);
        lines.push(format!(
            "{count} of {} archives could not be audited",
            archives.len()
        ));
    }
    if lines.is_empty() {
        return Ok(());
    }
    Err(crate::Exit {
        code,
        message: lines.join("\n"),
    })
}

/// An archive's lines: a line per finding, or one saying none was found; each after `prefix`.
fn report(result: &Audit, search: &Search<'_>, prefix: &str) -> String {
    let mut text = String::new();
    for Finding { entry, found } in &result.findings {
        // The name is the zip's, whoever wrote it.
        let entry = kit_core::visible::text(entry);
        let place = match found.in_base64 {
            None => format!("at byte {}", found.offset),
            Some(within) => format!(
                "in the base64 at byte {}, at byte {within} of what it stands for",
                found.offset
            ),
        };
        match found.form {
            None => text.push_str(&format!("{prefix}secret found in entry {entry} {place}\n")),
            Some(what) => text.push_str(&format!(
                "{prefix}credential found in entry {entry} {place}: {what}, by its form\n"
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
            "{prefix}no known secret{forms} in {} ({} searched for)\n",
            counted(result.entries, "entry", "entries"),
            counted(result.secrets, "secret", "secrets"),
        ));
    }
    text
}
