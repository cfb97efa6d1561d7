//! `kit-cli merge`.

use std::path::{Path, PathBuf};

use crate::{Exit, write_output};

pub(crate) fn merge(shards: &[PathBuf], output: &Path) -> Result<(), Exit> {
    let archives = crate::inputs::archives(shards).map_err(Exit::input)?;
    let summary = kit_trace::merge(&archives, output).map_err(Exit::input)?;
    let mut text = format!(
        "merged {} archives into {}: {} runs, {} tests, {} blobs\n",
        archives.len(),
        output.display(),
        summary.runs,
        summary.tests,
        summary.blobs
    );
    for warning in summary.salvaged.iter().chain(&summary.duplicates) {
        text.push_str(&format!("warning: {}\n", kit_core::visible::text(warning)));
    }
    write_output(None, text.as_bytes())
}
