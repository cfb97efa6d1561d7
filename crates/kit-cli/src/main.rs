//! `kit-cli`: reports over the kit's `.kittrace` archives.
//!
//! Exit codes: 0 success; 1 a gate fell short or, where asked, a test failed; 2 unusable
//! input, with one line saying which input and why.

mod audit;
mod coverage;
mod inputs;
mod model;
mod table;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "kit-cli",
    version,
    about = "Reports over the kit's .kittrace archives"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Tests with their outcomes and requests per endpoint, for archives or folders of them.
    Report {
        /// Archives, or folders holding `*.kittrace` files. Archives of one run are read as
        /// one run; different runs are reported side by side.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Coverage of archives: requests per endpoint, response fields observed but never
    /// asserted and, with an OpenAPI document, operations, statuses and fields never covered.
    /// Exits 1 when a gate falls short, one line per gate.
    Coverage {
        /// Archives, or folders holding `*.kittrace` files; all are counted together.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The OpenAPI document (Swagger 2.0, OpenAPI 3.0–3.2; JSON or YAML). Default:
        /// `Kit:Coverage:OpenApi` from the configuration.
        #[arg(long)]
        openapi: Option<PathBuf>,
        /// Base path the API is served under, replacing the document's `servers`/`basePath`
        /// (repeatable).
        #[arg(long = "base-path")]
        base_paths: Vec<String>,
        /// Fail (exit 1) when fewer than N% of the operations were called.
        #[arg(long, value_name = "N")]
        fail_under_operations: Option<kit_coverage::Percent>,
        /// Fail when fewer than N% of the declared responses (operation × status) were seen.
        #[arg(long, value_name = "N")]
        fail_under_statuses: Option<kit_coverage::Percent>,
        /// Fail when fewer than N% of the declared response fields were asserted.
        #[arg(long, value_name = "N")]
        fail_under_fields: Option<kit_coverage::Percent>,
        /// Leave deprecated operations out of every figure.
        #[arg(long)]
        exclude_deprecated: bool,
        /// Leave an operation out of every figure: `"GET /pets/{id}"` or an operationId
        /// (repeatable).
        #[arg(long, value_name = "OPERATION")]
        exclude: Vec<String>,
        /// Configuration (`kit.toml`/`kit.json`, or the folder holding them) for
        /// `Kit:Coverage:*`. Default: the current folder.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Searches every byte of every entry (decompressed) for the secrets the run met, and for
    /// those in a secrets file. Exits 1 naming each entry where one is found.
    Audit {
        /// The archive.
        archive: PathBuf,
        /// A file of secrets in clear, one a line, to search for as well.
        #[arg(long)]
        secrets_file: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Outcome lines and tables for a terminal.
    Table,
    /// The report model as JSON (coverage only for now).
    Json,
}

/// A failure with its exit code.
struct Exit {
    code: u8,
    message: String,
}

impl Exit {
    fn input(message: impl std::fmt::Display) -> Self {
        Exit {
            code: 2,
            message: message.to_string(),
        }
    }
}

fn report(inputs: &[PathBuf], format: Format, output: Option<PathBuf>) -> Result<(), Exit> {
    let archives = inputs::archives(inputs).map_err(Exit::input)?;
    let report =
        model::build(&archives).map_err(|(path, e)| Exit::input(format!("{}: {e}", path.display())))?;
    let text = match format {
        Format::Table => table::render(&report),
        Format::Json => return Err(Exit::input("--format json is not available for `report` yet")),
    };
    write_output(output, &text)
}

fn coverage(
    inputs: &[PathBuf],
    flags: coverage::CoverageFlags,
    format: Format,
    output: Option<PathBuf>,
) -> Result<(), Exit> {
    let archives = inputs::archives(inputs).map_err(Exit::input)?;
    let request = flags.resolve().map_err(Exit::input)?;
    let (report, failures) = coverage::coverage(&archives, &request).map_err(Exit::input)?;
    let text = match format {
        Format::Table => table::sections(&report),
        Format::Json => {
            let mut json = serde_json::to_string_pretty(&report)
                .map_err(|e| Exit::input(format!("cannot write the report as JSON: {e}")))?;
            json.push('\n');
            json
        }
    };
    write_output(output, &text)?;
    if failures.is_empty() {
        return Ok(());
    }
    Err(Exit {
        code: 1,
        message: failures
            .iter()
            .map(|f| format!("gate failed: {f}"))
            .collect::<Vec<_>>()
            .join("\nkit-cli: "),
    })
}

fn audit(archive: &std::path::Path, secrets_file: Option<&std::path::Path>) -> Result<(), Exit> {
    let result = audit::audit(archive, secrets_file).map_err(Exit::input)?;
    let mut text = String::new();
    for finding in &result.findings {
        text.push_str(&format!(
            "secret found in entry {} at byte {}\n",
            finding.entry, finding.offset
        ));
    }
    if result.findings.is_empty() {
        text.push_str(&format!(
            "no known secret in {} entries ({} secrets searched for)\n",
            result.entries, result.secrets
        ));
        write_output(None, &text)
    } else {
        write_output(None, &text)?;
        Err(Exit {
            code: 1,
            message: format!(
                "{} of {} entries hold a known secret",
                result.findings.len(),
                result.entries
            ),
        })
    }
}

fn write_output(output: Option<PathBuf>, text: &str) -> Result<(), Exit> {
    match output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| Exit::input(format!("{}: cannot write: {e}", path.display()))),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
                // A closed pipe (`kit-cli report … | head`) is a reader that has seen enough.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Exit {
                    code: 2,
                    message: format!("cannot write to stdout: {e}"),
                }),
                Ok(()) => Ok(()),
            }
        }
    }
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Report {
            inputs,
            format,
            output,
        } => report(&inputs, format, output),
        Command::Coverage {
            inputs,
            openapi,
            base_paths,
            fail_under_operations,
            fail_under_statuses,
            fail_under_fields,
            exclude_deprecated,
            exclude,
            config,
            format,
            output,
        } => {
            let flags = coverage::CoverageFlags {
                openapi,
                config,
                base_paths,
                operations: fail_under_operations,
                statuses: fail_under_statuses,
                fields: fail_under_fields,
                exclude_deprecated,
                exclude,
            };
            coverage(&inputs, flags, format, output)
        }
        Command::Audit {
            archive,
            secrets_file,
        } => audit(&archive, secrets_file.as_deref()),
    };
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(exit) => {
            let _ = writeln!(std::io::stderr(), "kit-cli: {}", exit.message);
            Ok(ExitCode::from(exit.code))
        }
    }
}
