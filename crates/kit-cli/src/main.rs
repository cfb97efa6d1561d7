//! `kit-cli`: reports, coverage gates and exports over the kit's `.kittrace` archives.
//!
//! Exit codes: 0 success; 1 a gate fell short or, where asked, a test failed; 2 unusable
//! input, with one line saying which input and why.

use std::process::ExitCode;

fn main() -> anyhow::Result<ExitCode> {
    Ok(ExitCode::from(kit_cli::run(std::env::args_os())))
}
