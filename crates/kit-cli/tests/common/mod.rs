//! Fixtures the `kit-cli` test binaries share.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A hostile archive written as `dir/evil.kittrace`: its mimetype, then an entry whose name
/// climbs out of `dir` (zip-slip). Gives the archive, the entry's name, and where a reader
/// that followed the name would have written it: a name no other file has, so that a file
/// left in the temporary folder by anything else cannot fail the check.
pub(crate) fn zip_slip_archive(dir: &Path) -> (PathBuf, String, PathBuf) {
    let unique = format!("{}-escaped", dir.file_name().unwrap().to_string_lossy());
    let escape = format!("../../{unique}");
    let evil = dir.join("evil.kittrace");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&evil).unwrap());
    for (name, data) in [
        ("mimetype", "application/vnd.kit.trace+zip"),
        (escape.as_str(), "boom"),
    ] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(data.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    (evil, escape, dir.parent().unwrap().join(unique))
}
