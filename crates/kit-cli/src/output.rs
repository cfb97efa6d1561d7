//! Writing an output file whole or not at all.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Writes `path` through `write`. A regular file (or a new one) is written beside it first and
/// renamed into place once `write` succeeds, so a failure part way leaves what was there before
/// and no file behind. A device, a pipe (`/dev/stdout`) or a symbolic link (which a rename
/// would replace) is written directly.
pub(crate) fn write_whole<E: From<io::Error>>(
    path: &Path,
    write: impl FnOnce(&File) -> Result<(), E>,
) -> Result<(), E> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return write(&File::create(path)?);
    }
    let partial = Partial::beside(path)?;
    write(&partial.file)?;
    partial.rename_to(path)?;
    Ok(())
}

/// A file written beside an output and renamed over it once whole; removed if it never is.
/// Made as `File::create` makes a file (the umask's permissions), not 0600.
struct Partial {
    path: PathBuf,
    file: File,
    kept: bool,
}

impl Partial {
    fn beside(output: &Path) -> io::Result<Partial> {
        // In the output's directory, so that the rename stays on one file system.
        let name = output.file_name().unwrap_or(output.as_os_str()).to_string_lossy();
        let path = output.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::options().write(true).create_new(true).open(&path)?;
        Ok(Partial {
            path,
            file,
            kept: false,
        })
    }

    fn rename_to(mut self, output: &Path) -> io::Result<()> {
        std::fs::rename(&self.path, output)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
