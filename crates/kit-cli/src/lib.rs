//! `kit-cli`: reports, coverage gates and exports over the kit's `.kittrace` archives.
//!
//! The binary is a thin `main` over [`run`]; the library exists so benchmarks can run a
//! command in-process and measure it.
//!
//! Exit codes: 0 success; 1 a gate fell short or, with `--fail-on-test-failure`, a test
//! failed; 2 unusable input, with one line saying which input and why.

mod audit;
mod cli;
mod coverage;
mod curl;
mod exchanges;
mod export;
mod inputs;
mod merge;
mod model;
mod output;
mod pretty;
mod progress;
mod read_ahead;
mod render;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use clap::Parser;

use crate::cli::{Cli, Command};

/// Runs `kit-cli` with `args` (the first being the program's name); returns the exit code.
/// Output goes to stdout (or the `-o` file), messages to stderr.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; usage errors to stderr with 2.
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(exit) => {
            let mut stderr = std::io::stderr().lock();
            // A message may name what an archive holds (an entry, a test): shown, not obeyed.
            for line in exit.message.lines() {
                let _ = writeln!(stderr, "kit-cli: {}", kit_core::visible::text(line));
            }
            exit.code
        }
    }
}

/// Writes a note that is no failure to stderr, as failures are written: after `kit-cli: `,
/// its control characters escaped.
pub(crate) fn note(line: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "kit-cli: {}",
        kit_core::visible::text(line)
    );
}

/// A failure with its exit code; each line of the message is printed after `kit-cli: `, its
/// control characters escaped.
pub(crate) struct Exit {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Exit {
    /// Unusable input: exit 2.
    pub(crate) fn input(message: impl std::fmt::Display) -> Self {
        // One line, whatever the message held.
        let message = message.to_string();
        let first = message.lines().next().unwrap_or_default().to_owned();
        Exit {
            code: 2,
            message: first,
        }
    }
}

fn dispatch(command: Command) -> Result<(), Exit> {
    match command {
        Command::Report {
            inputs,
            coverage,
            output,
            fail_on_test_failure,
        } => coverage::report(
            &inputs,
            coverage,
            output.format,
            output.output.as_deref(),
            fail_on_test_failure,
        ),
        Command::Coverage {
            inputs,
            coverage,
            gates,
            output,
            fail_on_test_failure,
        } => coverage::coverage(
            &inputs,
            coverage,
            gates,
            output.format,
            output.output.as_deref(),
            fail_on_test_failure,
        ),
        Command::Merge { output, shards } => merge::merge(&shards, &output),
        Command::Export {
            archive,
            har,
            otlp,
            config,
        } => export::export(
            archive.as_deref(),
            har.as_deref(),
            otlp.as_deref(),
            config.as_deref(),
        ),
        Command::Curl {
            archive,
            request,
            config,
        } => curl::curl(archive.as_deref(), &request, config.as_deref()),
        Command::Audit {
            inputs,
            secrets_file,
            no_forms,
            config,
        } => audit::run(
            &inputs,
            config.as_deref(),
            &audit::Search {
                secrets_file: secrets_file.as_deref(),
                forms: !no_forms,
            },
        ),
    }
}

/// Writes `text` to `output`, whole or not at all ([`output::write_whole`]), or to stdout.
pub(crate) fn write_output(output: Option<&Path>, text: &[u8]) -> Result<(), Exit> {
    stream_output(output, |out| out.write_all(text))
}

/// Streams what `write` writes to `output`, whole or not at all ([`output::write_whole`]), or
/// to stdout. The writer is not buffered: `write` buffers what it writes in small pieces.
pub(crate) fn stream_output(
    output: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Exit> {
    match output {
        Some(path) => output::write_whole(path, |mut file| write(&mut file))
            .map_err(|e| Exit::input(format!("{}: cannot write: {e}", path.display()))),
        None => {
            let mut stdout = std::io::stdout().lock();
            match write(&mut stdout).and_then(|()| stdout.flush()) {
                // A closed pipe (`kit-cli report … | head`) is a reader that has seen enough.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Exit::input(format!("cannot write to stdout: {e}"))),
                Ok(()) => Ok(()),
            }
        }
    }
}

/// Whether the output is a terminal (colours, width).
pub(crate) fn to_terminal(output: Option<&Path>) -> bool {
    use std::io::IsTerminal;
    output.is_none() && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}
