//! Reading a file a user named, whole, with a bound on what is read.
//!
//! The kit reads whole several files a user names: its configuration, an OpenAPI document, a
//! list of secrets. A name may be a stream rather than a file (a pipe from `<(vault …)`,
//! `/dev/stdin`, `/dev/zero`), which has no size to check first; read to its end, `/dev/zero`
//! fills memory. [`read_bounded`] reads one byte past its limit at most, and tells a file found
//! too large by its size from a stream that went on too long. [`not_a_file`] says what a path
//! names instead of a file ([`NotAFile`]), for callers that must refuse a pipe before opening it (opening a
//! named pipe waits for a writer, and no reason would be found after).
//!
//! ```
//! use kit_core::file::{self, NotAFile, ReadBoundedError};
//!
//! let dir = std::env::temp_dir().join(format!("kit-file-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("secrets.txt");
//! std::fs::write(&path, "token-1\ntoken-2\n").unwrap();
//!
//! assert_eq!(file::read_bounded(&path, 1024).unwrap(), b"token-1\ntoken-2\n");
//! assert!(matches!(
//!     file::read_bounded(&path, 8),
//!     Err(ReadBoundedError::TooLarge { size: Some(16), limit: 8 })
//! ));
//! let kind = std::fs::metadata(&dir).unwrap().file_type();
//! assert_eq!(file::not_a_file(&kind), Some(NotAFile::Folder));
//! assert_eq!(NotAFile::Folder.to_string(), "a folder");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::{File, FileType};
use std::io::Read as _;
use std::path::Path;

/// Why [`read_bounded`] returned no bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadBoundedError {
    /// The path could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// There is more than the limit.
    #[error("{}", too_large(*.size, *.limit))]
    TooLarge {
        /// The file's size, when it is a file; `None` for a stream (a pipe, a device), of which
        /// one byte past the limit was read.
        size: Option<u64>,
        /// The limit, in bytes.
        limit: u64,
    },
}

fn too_large(size: Option<u64>, limit: u64) -> String {
    match size {
        Some(size) => format!("it is {size} bytes, over the {limit} bytes read"),
        None => format!("it holds more than {limit} bytes (read as a stream), over the {limit} bytes read"),
    }
}

/// The bytes at `path`, if there are at most `limit` of them.
///
/// A file larger than `limit` is refused by its size, before any of it is read; a stream is
/// read up to one byte past `limit`, and refused then. A named pipe with no writer blocks in
/// `open`, as it does for any reader: callers that must not wait check [`not_a_file`] first.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadBoundedError> {
    let file = File::open(path)?;
    // Opened first and sized from the open file, so the size checked is the size read.
    let metadata = file.metadata()?;
    let size = metadata.is_file().then_some(metadata.len());
    if let Some(size) = size
        && size > limit
    {
        return Err(ReadBoundedError::TooLarge {
            size: Some(size),
            limit,
        });
    }
    // A file that grows while it is read still stops one byte past the limit.
    let mut bytes = Vec::with_capacity(size.map_or(0, |s| s as usize));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadBoundedError::TooLarge { size, limit });
    }
    Ok(bytes)
}

/// What a path names when it is not a regular file. Displayed as a noun phrase (`a folder`,
/// `a named pipe`, `a socket`, `a device`) for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotAFile {
    /// A folder.
    #[error("a folder")]
    Folder,
    /// A named pipe (FIFO): opening one waits for a writer, and what it gives has no size.
    #[error("a named pipe")]
    NamedPipe,
    /// A Unix socket.
    #[error("a socket")]
    Socket,
    /// A block or character device (`/dev/zero`), or anything else that is not a file.
    #[error("a device")]
    Device,
}

/// What `kind` is when it is not a regular file, or `None` for a file. Pass the type of
/// [`std::fs::metadata`], which follows links.
pub fn not_a_file(kind: &FileType) -> Option<NotAFile> {
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some(NotAFile::Folder);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some(NotAFile::NamedPipe);
        }
        if kind.is_socket() {
            return Some(NotAFile::Socket);
        }
    }
    Some(NotAFile::Device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_at_the_limit_is_read_and_one_past_it_is_refused_by_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [7u8; 10]).unwrap();
        assert_eq!(read_bounded(&path, 10).unwrap(), [7u8; 10]);
        let err = read_bounded(&path, 9).unwrap_err();
        assert!(
            matches!(
                err,
                ReadBoundedError::TooLarge {
                    size: Some(10),
                    limit: 9
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "it is 10 bytes, over the 9 bytes read");
        assert_eq!(
            read_bounded(&dir.path().join("f"), 0).unwrap_err().to_string(),
            "it is 10 bytes, over the 0 bytes read"
        );
    }

    #[test]
    fn an_empty_file_is_read_under_a_zero_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        std::fs::write(&path, b"").unwrap();
        assert!(read_bounded(&path, 0).unwrap().is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_endless_stream_stops_one_byte_past_the_limit() {
        let err = read_bounded(Path::new("/dev/zero"), 4096).unwrap_err();
        assert!(
            matches!(
                err,
                ReadBoundedError::TooLarge {
                    size: None,
                    limit: 4096
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("read as a stream"), "{err}");
        assert!(read_bounded(Path::new("/dev/null"), 0).unwrap().is_empty());
    }

    #[test]
    fn what_cannot_be_opened_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_bounded(&dir.path().join("missing"), 10).unwrap_err();
        match err {
            ReadBoundedError::Io(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_is_not_a_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let kind = |p: &Path| std::fs::metadata(p).unwrap().file_type();
        assert_eq!(not_a_file(&kind(&file)), None);
        assert_eq!(not_a_file(&kind(dir.path())), Some(NotAFile::Folder));
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success());
            assert_eq!(not_a_file(&kind(&fifo)), Some(NotAFile::NamedPipe));
            let socket = dir.path().join("socket");
            let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            assert_eq!(not_a_file(&kind(&socket)), Some(NotAFile::Socket));
            assert_eq!(not_a_file(&kind(Path::new("/dev/null"))), Some(NotAFile::Device));
        }
    }
}
