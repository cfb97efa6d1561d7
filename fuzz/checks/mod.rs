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
