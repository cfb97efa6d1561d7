//! Turning command-line paths into archive files.

use std::path::{Path, PathBuf};

use kit_core::Configuration;
use kit_trace::format::EXTENSION;

/// An input that cannot be used, with the one line that says why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub(crate) struct InputError {
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// The configuration a command reads (`--config`: a `kit.toml`/`kit.json` file, or the folder
/// holding them; the current folder when none is named), the environment over it, and the
/// folder it was read from, which relative paths in it (`Kit:Trace:Directory`) start from.
pub(crate) fn configuration(config: Option<&Path>) -> Result<(Configuration, PathBuf), String> {
    let path = match config {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?,
    };
    let mut configuration = if path.is_dir() {
        Configuration::load_files(&path).map_err(|e| e.to_string())?
    } else if path.exists() {
        // Whatever is there that is not a folder is read as a file: a named pipe or a device
        // is refused by name, a file past the limit by its size.
        Configuration::load_file(&path).map_err(|e| e.to_string())?
    } else {
        return Err(format!(
            "{}: no such configuration file or folder",
            path.display()
        ));
    };
    configuration.apply_process_environment();
    let dir = if path.is_file() {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path
    };
    Ok((configuration, dir))
}

/// The archives named by `paths`: files as given, folders by their `*.kittrace` files (not
/// recursively), each once, in the order given (a folder's in name order).
pub(crate) fn archives(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Unique::default();
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
            for path in found {
                out.push(path);
            }
        } else {
            out.push(path.clone());
        }
    }
    let out = out.paths;
    if out.is_empty() {
        return Err(InputError {
            path: "(no input)".into(),
            reason: "name at least one archive or folder".into(),
        });
    }
    Ok(out)
}

/// Archives by their last change, the newest first (a request a failure just named is in the
/// run just made); by name, last first, where that is the same or unknown.
pub(crate) fn newest_first(archives: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut keyed: Vec<_> = archives
        .into_iter()
        .map(|p| (std::fs::metadata(&p).and_then(|m| m.modified()).ok(), p))
        .collect();
    keyed.sort_by(|a, b| b.cmp(a));
    keyed.into_iter().map(|(_, p)| p).collect()
}

/// The folder the tests write to ([`Configuration::trace_directory`] from the configuration's
/// folder, as `--config` gives both), for commands named no archive; an error saying where it
/// looked when it is not there.
pub(crate) fn tests_folder((configuration, dir): &(Configuration, PathBuf)) -> Result<PathBuf, InputError> {
    let folder = configuration.trace_directory(dir);
    if !folder.is_dir() {
        return Err(InputError {
            path: folder.display().to_string(),
            reason: format!(
                "no archive named, and no such folder, where the tests write theirs (KIT_RESULTS_DIR, Kit:Trace:Directory or {}); name archives or folders",
                kit_core::DEFAULT_TRACE_DIRECTORY
            ),
        });
    }
    Ok(folder)
}

/// The newest archive in the [folder the tests write to](tests_folder), for a command named
/// no archive (the last run); a line on stderr says so when the folder keeps others, and
/// `instead` how to read another.
pub(crate) fn newest_archive(
    configured: &(Configuration, PathBuf),
    instead: &str,
) -> Result<PathBuf, InputError> {
    let folder = tests_folder(configured)?;
    // A folder with no archive is refused here, saying so: `all` has at least one.
    let all = newest_first(archives(std::slice::from_ref(&folder))?);
    if all.len() > 1 {
        crate::note(&format!(
            "{}: the newest of the {} archives in {}; {instead}",
            short(&all[0]),
            all.len(),
            folder.display()
        ));
    }
    all.into_iter().next().ok_or_else(|| InputError {
        path: folder.display().to_string(),
        reason: format!("the folder holds no .{EXTENSION} archive"),
    })
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

/// Paths in the order first given, each file once however it was named (a folder's archive
/// also named on its own, a link to one): paths are compared as the file system resolves them.
#[derive(Default)]
struct Unique {
    paths: Vec<PathBuf>,
    /// Each kept path, resolved once: comparing each new path with every kept one resolved
    /// them again each time, `n²/2` resolutions for a folder of `n` archives.
    resolved: std::collections::HashSet<PathBuf>,
}

impl Unique {
    fn push(&mut self, path: PathBuf) {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if self.resolved.insert(key) {
            self.paths.push(path);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file named again, through its folder, another spelling of its path or a link, is
    /// read once, where it was first named; distinct files are all kept, in order.
    #[test]
    fn each_archive_is_kept_once_however_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        for name in ["b.kittrace", "a.kittrace", "notes.txt"] {
            std::fs::write(runs.join(name), b"").unwrap();
        }
        let other = dir.path().join("other.kittrace");
        std::fs::write(&other, b"").unwrap();
        let link = dir.path().join("link.kittrace");
        #[cfg(unix)]
        std::os::unix::fs::symlink(runs.join("b.kittrace"), &link).unwrap();
        #[cfg(not(unix))]
        std::fs::write(&link, b"").unwrap();

        let found = archives(&[
            runs.join("b.kittrace"),
            other.clone(),
            runs.clone(),
            runs.join(".").join("a.kittrace"),
            link.clone(),
            other.clone(),
        ])
        .unwrap();
        let mut expected = vec![runs.join("b.kittrace"), other, runs.join("a.kittrace")];
        if cfg!(not(unix)) {
            expected.push(link);
        }
        assert_eq!(found, expected);
    }
}
