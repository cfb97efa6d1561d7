//! `kit-cli` over archives of arbitrary events: the text is read as event lines (tests apart at
//! blank lines, lines that are no event skipped), written into a real archive by the archive
//! writer, and every report format, the coverage against an OpenAPI document, both exports, the
//! audit, and a merge of the archive with a copy of itself (reported again) run over it. An
//! archive the writer made is usable input: each command exits 0 or 1, never 2, and nothing
//! panics, however little the events make sense together (operations never started, parents
//! that are not there, attributes of any type). The table and Markdown reports hold no control
//! character but line breaks, and the JUnit report only what XML allows.

use std::path::Path;

use kit_core::Collector;
use kit_core::event::{Event, RunId, TestId};
use kit_trace::{ArchiveWriter, RunManifest};

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = super::scratch_dir("report");
    let run = RunId::new("fuzz").unwrap();
    let mut writer = ArchiveWriter::create(&dir, RunManifest::new(run.clone(), "fuzz")).unwrap();
    let mut written = 0;
    for (n, test) in text.split("\n\n").take(16).enumerate() {
        let test_id = TestId::from_u128(0x01a2_2360_fa06_7f16_86bd_762d_e6ba_0000 + n as u128);
        for line in test.lines() {
            if let Ok(event) = Event::from_json_in_scope(line, &run, test_id) {
                writer.on_event(&event);
                written += 1;
            }
        }
    }
    writer.finish().unwrap();
    let archive = writer.path().to_owned();
    drop(writer);
    // The writer commits a test once it holds an event.
    assert_eq!(archive.exists(), written > 0, "{written} events written");
    if written > 0 {
        run_commands(&archive, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every command that reads an archive, over `archive`, writing into `dir`: each exits 0 or 1,
/// and writes what it was asked to.
fn run_commands(archive: &Path, dir: &Path) {
    let openapi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/orders/openapi.yaml");
    let (archive, openapi) = (archive.to_str().unwrap(), openapi.to_str().unwrap());
    let out = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let mut commands: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for format in ["table", "json", "markdown", "html", "junit"] {
        let file = out(&format!("report.{format}"));
        let args = ["report", archive, "--format", format, "-o", &file];
        commands.push((owned(&args), vec![file]));
    }
    let file = out("coverage.json");
    let args = [
        "coverage",
        archive,
        "--openapi",
        openapi,
        "--format",
        "json",
        "-o",
        &file,
    ];
    commands.push((owned(&args), vec![file]));
    let (har, otlp) = (out("x.har"), out("x.otlp.json"));
    let args = ["export", archive, "--har", &har, "--otlp", &otlp];
    commands.push((owned(&args), vec![har, otlp]));
    commands.push((owned(&["audit", archive]), Vec::new()));
    // The archive merged with a copy of itself (the same path twice would be one shard): every
    // entry found twice with the same bytes, kept once.
    let copy = out("copy.kittrace");
    std::fs::copy(archive, &copy).unwrap();
    let merged = out("merged.kittrace");
    let args = ["merge", "-o", &merged, archive, &copy];
    commands.push((owned(&args), vec![merged.clone()]));
    let file = out("merged.json");
    let args = ["report", &merged, "--format", "json", "-o", &file];
    commands.push((owned(&args), vec![file]));
    for (args, files) in commands {
        let code = kit_cli::run(std::iter::once("kit-cli".to_owned()).chain(args.iter().cloned()));
        let command = args.join(" ");
        assert!(code <= 1, "kit-cli {command} exited {code}");
        for file in files {
            let written = std::fs::metadata(&file).map_or(0, |m| m.len());
            assert!(
                written > 0,
                "kit-cli {command} exited {code} and wrote nothing to {file}"
            );
        }
    }
    shown_not_obeyed(
        &out("report.table"),
        &out("report.markdown"),
        &out("report.junit"),
    );
}

/// Whatever the events hold, the formats read in a terminal hold no control character but
/// line breaks (written to a file, the table is not coloured), and JUnit only characters
/// XML 1.0 allows.
fn shown_not_obeyed(table: &str, markdown: &str, junit: &str) {
    for file in [table, markdown] {
        let text = std::fs::read_to_string(file).unwrap();
        if let Some(c) = text
            .chars()
            .find(|c| *c != '\n' && kit_core::visible::is_hidden(*c))
        {
            panic!("{file} holds {c:?}: {text:?}");
        }
    }
    let xml = std::fs::read_to_string(junit).unwrap();
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    if let Some(c) = xml.chars().find(|c| !allowed(*c)) {
        panic!("{junit} holds {c:?}, which XML does not allow: {xml:?}");
    }
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}
