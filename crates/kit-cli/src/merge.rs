//! `kit-cli merge`.

use std::path::{Path, PathBuf};

use crate::render::counted;
use crate::{Exit, write_output};

pub(crate) fn merge(shards: &[PathBuf], output: &Path) -> Result<(), Exit> {
    let archives = crate::inputs::archives(shards).map_err(Exit::input)?;
    let summary = kit_trace::merge(&archives, output).map_err(Exit::input)?;
    let mut text = format!(
        "merged {} into {}: {}, {}, {}\n",
        counted(archives.len(), "archive", "archives"),
        output.display(),
        counted(summary.runs, "run", "runs"),
        counted(summary.tests, "test", "tests"),
        counted(summary.blobs, "blob", "blobs"),
    );
    for warning in summary.salvaged.iter().chain(&summary.duplicates) {
        text.push_str(&format!("warning: {}\n", kit_core::visible::text(warning)));
    }
    write_output(None, text.as_bytes())
}
