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
        let create = || File::options().write(true).create_new(true).open(&path);
        let file = match create() {
            // Left by a process killed before it could remove it, whose id this one now has.
            // (Two live processes share an id only in PID namespaces sharing this folder, both
            // writing this output: one of them fails either way.)
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&path)?;
                create()?
            }
            made => made?,
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_file_left_by_a_killed_process_of_the_same_id_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("report.txt");
        let stale = dir
            .path()
            .join(format!(".report.txt.{}.partial", std::process::id()));
        std::fs::write(&stale, "half of an old report").unwrap();
        write_whole(&output, |mut file| io::Write::write_all(&mut file, b"whole")).unwrap();
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "whole");
        assert!(!stale.exists());
    }

    #[test]
    fn a_failed_write_leaves_the_output_as_it_was_and_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("report.txt");
        std::fs::write(&output, "what was there").unwrap();
        let failed = write_whole(&output, |mut file| {
            io::Write::write_all(&mut file, b"part")?;
            Err(io::Error::other("the disk is full"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "the disk is full");
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "what was there");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
