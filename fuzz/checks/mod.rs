//! What each fuzz target checks, as a plain function of the input that panics when the input
//! breaks it. The targets in `fuzz_targets/` run these under libFuzzer; the workspace's
//! end-to-end tests replay every committed seed and regression through them
//! (`tests/tests/e2e/fuzz_inputs.rs`), so `bash .ci/run` compiles them against the kit's
//! current API and keeps each input found failing once from failing again.

pub(crate) mod archive;
pub(crate) mod event_line;
pub(crate) mod json_doc;
pub(crate) mod openapi;
mod plain_path;
pub(crate) mod report;
pub(crate) mod routes;
pub(crate) mod sanitizer;
pub(crate) mod yaml;

/// An empty folder of this process's own for `target`'s files, made afresh for each input.
/// The caller removes it when done: the end-to-end tests replay the seeds on every CI run, and
/// must leave nothing behind.
fn scratch_dir(target: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kit-fuzz-{target}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
