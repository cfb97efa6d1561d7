//! The kit end to end: real suites run by real test runners, archives read by `kit-cli`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coverage;
mod runs;
mod secrets;
