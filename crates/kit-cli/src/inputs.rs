//! Turning command-line paths into archive files.

use std::path::{Path, PathBuf};

use kit_trace::format::EXTENSION;

/// An input that cannot be used, with the one line that says why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub(crate) struct InputError {
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// The archives named by `paths`: files as given, folders by their `*.kittrace` files (not
/// recursively), each once, in the order given (a folder's in name order).
pub(crate) fn archives(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let error = |reason: String| InputError {
            path: path.display().to_string(),
            reason,
        };
        let metadata = std::fs::metadata(path).map_err(|e| error(describe_io(&e)))?;
        if metadata.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| error(describe_io(&e)))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| p.extension().is_some_and(|e| e == EXTENSION) && p.is_file())
                .collect();
            if found.is_empty() {
                return Err(error(format!("the folder holds no .{EXTENSION} archive")));
            }
            found.sort();
            push_unique(&mut out, found);
        } else {
            push_unique(&mut out, vec![path.clone()]);
        }
    }
    if out.is_empty() {
        return Err(InputError {
            path: "(no input)".into(),
            reason: "name at least one archive or folder".into(),
        });
    }
    Ok(out)
}

/// One archive file (for commands that read a single archive), checked as [`archives`]
/// checks its inputs.
pub(crate) fn archive(path: &Path) -> Result<&Path, InputError> {
    let error = |reason: String| InputError {
        path: path.display().to_string(),
        reason,
    };
    let metadata = std::fs::metadata(path).map_err(|e| error(describe_io(&e)))?;
    if metadata.is_dir() {
        return Err(error("is a folder; name one archive".into()));
    }
    Ok(path)
}

fn push_unique(out: &mut Vec<PathBuf>, paths: Vec<PathBuf>) {
    for path in paths {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !out
            .iter()
            .any(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()) == key)
        {
            out.push(path);
        }
    }
}

fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// A short name for messages: the file name, else the path.
pub(crate) fn short(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
