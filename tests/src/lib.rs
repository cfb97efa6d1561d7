//! Helpers for the end-to-end tests: nested cargo runs and the binaries they build.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kit_trace::{ArchiveReader, TestRecord};

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// A `cargo` command in the workspace root, with nothing of the outer test run leaking into
/// the nested one (its run id, its results folder, nextest's variables).
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("NEXTEST")
            || name.starts_with("KIT_")
            || name.starts_with("Kit__")
            || name == "RUST_TEST_THREADS"
        {
            command.env_remove(&*name);
        }
    }
    command.env("RUST_BACKTRACE", "0");
    command
}

/// Runs a command and returns its output; says what ran when it could not start.
pub fn run(command: &mut Command) -> Output {
    command.stdin(Stdio::null());
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// Text of a command's stdout and stderr, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "exit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn executables(args: &[&str]) -> Vec<(String, PathBuf)> {
    let output = run(cargo().args(args).arg("--message-format=json-render-diagnostics"));
    assert!(output.status.success(), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|message| {
            let executable = message.get("executable")?.as_str()?.to_owned();
            let name = message.get("target")?.get("name")?.as_str()?.to_owned();
            Some((name, PathBuf::from(executable)))
        })
        .collect()
}

/// Builds a binary of a package and returns its path.
pub fn binary(package: &str, bin: &str) -> PathBuf {
    executables(&["build", "-p", package, "--bin", bin])
        .into_iter()
        .find(|(name, _)| name == bin)
        .unwrap_or_else(|| panic!("cargo built no binary {bin} in {package}"))
        .1
}

/// Builds an integration-test binary of a package and returns its path.
pub fn test_binary(package: &str, test: &str) -> PathBuf {
    executables(&["test", "-p", package, "--test", test, "--no-run"])
        .into_iter()
        .find(|(name, _)| name == test)
        .unwrap_or_else(|| panic!("cargo built no test binary {test} in {package}"))
        .1
}

/// The `.kittrace` files in a folder, sorted.
pub fn archives_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == "kittrace"));
    found.sort();
    found
}

/// Every test of an archive.
pub fn tests_of(archive: &Path) -> Vec<TestRecord> {
    ArchiveReader::open(archive)
        .unwrap_or_else(|e| panic!("{e}"))
        .tests()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}
