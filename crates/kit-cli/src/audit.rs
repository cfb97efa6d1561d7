//! `kit-cli audit`: searches every byte of every entry for known secrets.

use std::path::Path;

use kit_core::redact::LeakScanner;
use kit_trace::ArchiveReader;

/// An entry holding a secret.
pub(crate) struct Finding {
    pub(crate) entry: String,
    pub(crate) offset: usize,
}

/// What an audit found.
pub(crate) struct Audit {
    pub(crate) entries: usize,
    pub(crate) secrets: usize,
    pub(crate) findings: Vec<Finding>,
}

/// Reads the archive's fingerprints (and the secrets in `secrets_file`, one a line), then
/// searches every entry, decompressed, for them.
pub(crate) fn audit(archive: &Path, secrets_file: Option<&Path>) -> Result<Audit, String> {
    let mut reader = ArchiveReader::open(archive).map_err(|e| e.to_string())?;
    let mut scanner = LeakScanner::new();
    for set in reader.secret_fingerprints().map_err(|e| e.to_string())? {
        scanner
            .add_set(&set)
            .map_err(|e| format!("{}: a fingerprint set is damaged: {e}", archive.display()))?;
    }
    if let Some(file) = secrets_file {
        let text = std::fs::read(file)
            .map_err(|e| format!("{}: cannot read the secrets file: {e}", file.display()))?;
        for line in text.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            scanner.add_secret(line);
        }
    }
    let mut findings = Vec::new();
    let entries = reader.entry_count();
    for index in 0..entries {
        let (entry, bytes) = reader.entry(index).map_err(|e| e.to_string())?;
        if let Some(leak) = scanner.find(&bytes) {
            findings.push(Finding {
                entry,
                offset: leak.offset,
            });
        }
    }
    Ok(Audit {
        entries,
        secrets: scanner.len(),
        findings,
    })
}

/// `kit-cli audit`: prints a line per finding (or that none was found); exit 1 on findings.
pub(crate) fn run(archive: &Path, secrets_file: Option<&Path>) -> Result<(), crate::Exit> {
    let archive = crate::inputs::archive(archive).map_err(crate::Exit::input)?;
    let result = audit(archive, secrets_file).map_err(crate::Exit::input)?;
    let mut text = String::new();
    for finding in &result.findings {
        text.push_str(&format!(
            "secret found in entry {} at byte {}\n",
            finding.entry, finding.offset
        ));
    }
    if result.findings.is_empty() {
        text.push_str(&format!(
            "no known secret in {} entries ({} secrets searched for)\n",
            result.entries, result.secrets
        ));
        return crate::write_output(None, text.as_bytes());
    }
    crate::write_output(None, text.as_bytes())?;
    Err(crate::Exit {
        code: 1,
        message: format!(
            "{} of {} entries hold a known secret",
            result.findings.len(),
            result.entries
        ),
    })
}
