//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kit_coverage::Percent;

#[derive(Parser)]
#[command(
    name = "kit-cli",
    version,
    about = "Reports, coverage gates and exports over the kit's .kittrace archives",
    long_about = "Reports, coverage gates and exports over the kit's .kittrace archives.\n\n\
                  Exit codes: 0 success; 1 a gate fell short or, with --fail-on-test-failure, a test failed; \
                  2 unusable input (one line says which and why)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Tests with their outcomes, requests per endpoint, coverage and attachments.
    Report {
        /// Archives, or folders holding `*.kittrace` files. Shards of one run are read as
        /// one run; different runs are reported side by side. Default: the newest archive in
        /// the folder the tests write to (`KIT_RESULTS_DIR`, else `Kit:Trace:Directory` from the
        /// configuration, else `TestResults`, beside the configuration): the last run.
        inputs: Vec<PathBuf>,
        #[command(flatten)]
        coverage: CoverageArgs,
        #[command(flatten)]
        output: OutputArgs,
        /// Exit 1 when a test failed or was interrupted.
        #[arg(long)]
        fail_on_test_failure: bool,
    },
    /// Coverage of every run together: requests per endpoint, response fields observed but
    /// never asserted and, with an OpenAPI document, operations, statuses and fields never
    /// covered. Exits 1 when a gate falls short, one line per gate.
    Coverage {
        /// Archives, or folders holding `*.kittrace` files; all are counted together.
        /// Default: the newest archive in the folder the tests write to, as for `report`.
        inputs: Vec<PathBuf>,
        #[command(flatten)]
        coverage: CoverageArgs,
        #[command(flatten)]
        gates: GateArgs,
        #[command(flatten)]
        output: OutputArgs,
        /// Exit 1 when a test failed or was interrupted, too.
        #[arg(long)]
        fail_on_test_failure: bool,
    },
    /// Merges shards (archives of one run written apart, or of several runs) into one
    /// archive: every run, test and blob once. A test found in two shards is kept and flagged.
    Merge {
        /// The archive to write (refused if it exists).
        #[arg(short = 'o', long = "output", required = true)]
        output: PathBuf,
        /// The archives to merge.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
    },
    /// Exports an archive's requests as HAR 1.2 (one page per test) or its tests as
    /// OpenTelemetry traces (OTLP/JSON).
    Export {
        /// The archive. Default: the newest archive in the folder the tests write to, as for
        /// `report`.
        archive: Option<PathBuf>,
        /// Write a HAR 1.2 file here.
        #[arg(long, required_unless_present = "otlp")]
        har: Option<PathBuf>,
        /// Write OTLP/JSON (an ExportTraceServiceRequest) here.
        #[arg(long)]
        otlp: Option<PathBuf>,
        /// Configuration (`kit.toml`/`kit.json`, or the folder holding them) for
        /// `Kit:Trace:Directory`, when no archive is named. Default: the current folder.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Prints a curl command that sends a traced request again (as recorded: redacted
    /// values stay redacted).
    #[command(allow_missing_positional = true)]
    Curl {
        /// The archive, or a folder whose archives are searched newest first. Default: the
        /// folder the tests write to, as for `report` (so `kit-cli curl <id>` in the test
        /// crate's folder finds a request a failure message names).
        archive: Option<PathBuf>,
        /// The request's id (16 hex digits, as failure messages and reports show it).
        request: String,
        /// Configuration (`kit.toml`/`kit.json`, or the folder holding them) for
        /// `Kit:Trace:Directory`, when no archive is named. Default: the current folder.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Searches every byte of every entry (decompressed) for the secrets the run met, for
    /// those in a secrets file, and for credentials known by their form (JSON Web Tokens, PEM
    /// private keys, GitHub, Stripe, Slack… tokens); bytes kept in base64 as the bytes they
    /// stand for. Exits 1 naming each entry where one is found.
    Audit {
        /// Archives, or folders holding `*.kittrace` files, each audited on its own. Default:
        /// every archive in the folder the tests write to (found as for `report`).
        inputs: Vec<PathBuf>,
        /// Configuration (`kit.toml`/`kit.json`, or the folder holding them) for
        /// `Kit:Trace:Directory`, when no archive is named. Default: the current folder.
        #[arg(long)]
        config: Option<PathBuf>,
        /// A file of secrets in clear, one a line, to search for as well.
        #[arg(long)]
        secrets_file: Option<PathBuf>,
        /// Search for known secrets only, not for credentials by their form: for a run
        /// recorded with redaction off, or whose tests attach token-shaped fixtures themselves.
        #[arg(long)]
        no_forms: bool,
    },
}

/// What the coverage collectors need.
#[derive(Args, Default)]
pub(crate) struct CoverageArgs {
    /// The OpenAPI document (Swagger 2.0, OpenAPI 3.0–3.2; JSON or YAML). Default:
    /// `Kit:Coverage:OpenApi` from the configuration.
    #[arg(long)]
    pub(crate) openapi: Option<PathBuf>,
    /// Base path the API is served under, replacing the document's `servers`/`basePath`
    /// (repeatable).
    #[arg(long = "base-path", value_name = "PATH")]
    pub(crate) base_paths: Vec<String>,
    /// Leave deprecated operations out of every figure.
    #[arg(long)]
    pub(crate) exclude_deprecated: bool,
    /// Leave an operation out of every figure: `"GET /pets/{id}"` or an operationId
    /// (repeatable).
    #[arg(long, value_name = "OPERATION")]
    pub(crate) exclude: Vec<String>,
    /// Configuration (`kit.toml`/`kit.json`, or the folder holding them) for
    /// `Kit:Coverage:*`, and `Kit:Trace:Directory` when no archive is named. Default: the
    /// current folder.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
}

/// Coverage gates.
#[derive(Args, Default)]
pub(crate) struct GateArgs {
    /// Fail (exit 1) when fewer than N% of the operations were called.
    #[arg(long, value_name = "N")]
    pub(crate) fail_under_operations: Option<Percent>,
    /// Fail when fewer than N% of the declared responses (operation × status) were seen.
    #[arg(long, value_name = "N")]
    pub(crate) fail_under_statuses: Option<Percent>,
    /// Fail when fewer than N% of the declared response fields were asserted.
    #[arg(long, value_name = "N")]
    pub(crate) fail_under_fields: Option<Percent>,
}

/// Where and how to write.
#[derive(Args)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(crate) format: Format,
    /// Write to this file instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub(crate) enum Format {
    /// Tables for a terminal (coloured only on a terminal).
    Table,
    /// The report model as JSON (schema in docs/cli.md).
    Json,
    /// Markdown for CI job summaries (under 1 MiB).
    Markdown,
    /// One self-contained HTML file (inline CSS and SVG; no JavaScript).
    Html,
    /// JUnit XML: a testcase per test (and per coverage gate).
    Junit,
}
