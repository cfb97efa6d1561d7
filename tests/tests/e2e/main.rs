//! The kit end to end: real suites run by real test runners, archives read by `kit-cli`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coverage;
mod fuzz_inputs;
// The kit's own tests' loopback server, the one helper both test suites need.
#[path = "../../../crates/kit-rest/tests/common/mod.rs"]
mod loopback;
mod runs;
mod secrets;
