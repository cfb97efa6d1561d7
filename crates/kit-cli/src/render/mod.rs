//! The output formats. Each renders the same [`View`](crate::model::View).

mod html;
mod json;
mod junit;
mod markdown;
mod table;

use std::io::{self, Write};

use crate::cli::Format;
use crate::model::View;

/// Writes `view` in `format` to `out`; `terminal` when writing to one (colour, width). JSON is
/// written as it is serialized: the report of a 100 000-request archive is 15 MiB of it, which
/// built whole first cost its memory twice over and most of the time spent writing it.
pub(crate) fn write(view: &View, format: Format, terminal: bool, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Table => out.write_all(table::render(view, terminal).as_bytes()),
        Format::Json => json::write(view, out),
        Format::Markdown => out.write_all(markdown::render(view).as_bytes()),
        Format::Html => out.write_all(html::render(view).as_bytes()),
        Format::Junit => out.write_all(&junit::render(view)),
    }
}

/// `12.3 ms`, `1.20 s`, `-`.
pub(crate) fn duration(nanos: Option<u64>) -> String {
    match nanos {
        None => "-".into(),
        Some(n) if n >= 1_000_000_000 => format!("{:.2} s", n as f64 / 1e9),
        Some(n) => format!("{:.1} ms", n as f64 / 1e6),
    }
}

/// `8 of 19 (42.1%)`, or `nothing to cover`.
pub(crate) fn metric_text(metric: &kit_core::report::Metric) -> String {
    match metric.percent() {
        Some(p) => format!("{} of {} ({p:.1}%)", metric.covered, metric.total),
        None => "nothing to cover".into(),
    }
}

/// `n` and its noun, singular for one: `1 test`, `0 tests`, `2 entries`.
pub(crate) fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `Run r1 (cargo-test, kit 0.1.0): 3 tests, 1 passed, 1 failed, 1 skipped, 0 interrupted`.
pub(crate) fn run_line(run: &crate::model::RunReport) -> String {
    let s = &run.summary;
    format!(
        "Run {} ({}{}): {}, {} passed, {} failed, {} skipped, {} interrupted",
        run.run_id,
        run.runner.as_deref().unwrap_or("unknown runner"),
        run.kit_version
            .as_deref()
            .map(|v| format!(", kit {v}"))
            .unwrap_or_default(),
        counted(s.tests, "test", "tests"),
        s.passed,
        s.failed,
        s.skipped,
        s.interrupted,
    )
}

/// `Passed <name>`, `Failed <name>: <first line>`, `Skipped <name>: <reason>`, `Interrupted <name>`.
pub(crate) fn outcome_line(test: &crate::model::TestRow) -> String {
    match (&test.message, test.outcome) {
        (Some(message), "Failed" | "Skipped") => {
            format!(
                "{} {}: {}",
                test.outcome,
                test.name,
                message.lines().next().unwrap_or_default()
            )
        }
        _ => format!("{} {}", test.outcome, test.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RunReport, Summary, TestRow};
    use kit_core::report::{Report, ReportSection};

    fn render(view: &View, format: Format) -> String {
        let mut out = Vec::new();
        write(view, format, false, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn durations_read_in_milliseconds_then_seconds() {
        assert_eq!(duration(None), "-");
        assert_eq!(duration(Some(12_345_678)), "12.3 ms");
        assert_eq!(duration(Some(999_999_999)), "1000.0 ms");
        assert_eq!(duration(Some(1_000_000_000)), "1.00 s");
        assert_eq!(duration(Some(61_234_000_000)), "61.23 s");
    }

    #[test]
    fn one_of_a_thing_is_counted_in_the_singular() {
        assert_eq!(counted(0, "test", "tests"), "0 tests");
        assert_eq!(counted(1, "test", "tests"), "1 test");
        assert_eq!(counted(2, "entry", "entries"), "2 entries");
        let one = view(vec![test("suite::only", "passed", None)], 0);
        assert_eq!(
            run_line(&one.runs[0]),
            "Run r (unknown runner): 1 test, 0 passed, 0 failed, 0 skipped, 0 interrupted"
        );
        let html = render(&one, Format::Html);
        assert!(html.contains("aria-label=\"1 test: 0 passed"), "{html}");
    }

    fn view(tests: Vec<TestRow>, rows: usize) -> View {
        let summary = Summary {
            tests: tests.len(),
            ..Summary::default()
        };
        let mut section = ReportSection::new("x", "Traffic", "Fields").with_columns(["Field", "Note"]);
        for i in 0..rows {
            section = section.with_row([format!("$.field_{i:07}"), "x".repeat(60)]);
        }
        View {
            kit_report: "1",
            command: "report",
            runs: vec![RunReport {
                run_id: "r".into(),
                runner: None,
                kit_version: None,
                archives: vec![],
                notes: vec![],
                summary,
                tests,
                coverage: Some(Report {
                    sections: vec![section],
                }),
                endpoints: vec![],
            }],
            coverage: None,
            endpoints: vec![],
            gates: vec![],
        }
    }

    fn test(name: &str, outcome: &'static str, message: Option<&str>) -> TestRow {
        TestRow {
            id: "t".into(),
            name: name.into(),
            outcome,
            message: message.map(str::to_owned),
            application: None,
            location: None,
            started_unix_nanos: 0,
            duration_ns: None,
            requests: 0,
            last_requests: vec![],
            attachments: vec![],
        }
    }

    #[test]
    fn hostile_names_and_messages_are_text_in_html_and_markdown() {
        let evil = "<script>alert('x')</script> | **bold** `code`";
        let v = view(
            vec![test(
                evil,
                "Failed",
                Some("</pre><img src=x onerror=alert(1)>\n```\n# heading"),
            )],
            1,
        );
        let html = render(&v, Format::Html);
        assert!(
            !html.contains("<script>alert") && !html.contains("<img src=x"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        let md = render(&v, Format::Markdown);
        // Inside a fenced block text is literal (CommonMark); outside, no tag may appear.
        let outside: String = md.split("```").step_by(2).collect();
        assert!(!outside.contains("<script>") && !outside.contains("<img"), "{md}");
        assert!(md.contains("\\| \\*\\*bold\\*\\*"), "{md}");
        assert_eq!(
            md.matches("```").count(),
            2,
            "a fence in a message cannot close the block: {md}"
        );
        let junit = render(&v, Format::Junit);
        assert!(junit.contains("&lt;script&gt;"), "{junit}");
    }

    /// Escape sequences, line breaks and bidirectional overrides in a name or a message reach
    /// a terminal escaped (table, Markdown), HTML shows them rather than hide or obey them, and
    /// JUnit holds only characters XML allows.
    #[test]
    fn control_characters_reach_no_format_raw() {
        let name = "suite::evil\x1b]0;owned\x07\n\n![x](https://example.invalid/t.png)\u{202e}\u{fffe}";
        let message = "expected 200\x1b[2K\u{ffff}\r\nsecond line \x1b[5m\r\nthird";
        let v = view(vec![test(name, "Failed", Some(message))], 1);
        let raw = |text: &str| text.chars().any(|c| c != '\n' && kit_core::visible::is_hidden(c));
        for format in [Format::Table, Format::Markdown] {
            let text = render(&v, format);
            assert!(!raw(&text), "{format:?}: {text:?}");
            assert!(
                text.contains(concat!(
                    r"Failed suite::evil\u{1b}]0;owned\u{7}\n\n![x](https://example.invalid/t.png)\u{202e}",
                    "\u{fffe}",
                    r": expected 200\u{1b}[2K",
                    "\u{ffff}"
                )),
                "{format:?}: {text}"
            );
            // A name's blank line cannot end an HTML block and start Markdown of its own.
            assert!(!text.lines().any(|l| l.starts_with("![")), "{format:?}: {text}");
        }
        let md = render(&v, Format::Markdown);
        assert!(
            md.contains("expected 200\\u{1b}[2K\u{ffff}\nsecond line \\u{1b}[5m\nthird\n```"),
            "the message whole in its block: {md}"
        );

        let html = render(&v, Format::Html);
        assert!(
            !html
                .chars()
                .any(|c| !matches!(c, '\n' | '\r' | '\t') && kit_core::visible::is_hidden(c)),
            "{html:?}"
        );
        assert!(
            html.contains(r"suite::evil\u{1b}]0;owned\u{7}") && html.contains(r"t.png)\u{202e}"),
            "{html}"
        );
        assert!(
            html.contains("second line \\u{1b}[5m\r\nthird"),
            "a message's lines as they came: {html}"
        );

        let junit = render(&v, Format::Junit);
        let xml_char = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
        assert!(junit.chars().all(xml_char), "{junit:?}");
        let suites = junit_parser::from_reader(std::io::Cursor::new(junit.as_bytes())).unwrap();
        let case = &suites.suites[0].cases[0];
        // quick-junit leaves escape sequences out; junit-parser reads `classname::name`.
        assert_eq!(
            case.name,
            "suite::evil\n\n![x](https://example.invalid/t.png)\u{202e}\u{fffd}"
        );
        let junit_parser::TestStatus::Failure(failure) = &case.status else {
            panic!("{:?}", case.status)
        };
        assert_eq!(failure.message, "expected 200\u{fffd}");
    }

    #[test]
    fn markdown_stays_under_one_mebibyte_and_says_what_it_left_out() {
        let v = view(vec![test("t", "Passed", None)], 40_000);
        let md = render(&v, Format::Markdown);
        assert!(md.len() < 1024 * 1024, "{} bytes", md.len());
        assert!(md.contains("more rows left out to keep this summary under 1 MiB"));
        let html = render(&v, Format::Html);
        assert!(html.contains("$.field_0039999"), "HTML keeps every row");
    }

    /// Refuses every write once `room` bytes are taken, as a full disk does; notes the largest
    /// piece it was given.
    struct Full {
        room: usize,
        largest: usize,
    }

    impl Full {
        fn with_room(room: usize) -> Self {
            Full { room, largest: 0 }
        }
    }

    impl Write for Full {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if bytes.len() > self.room {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
            }
            self.room -= bytes.len();
            self.largest = self.largest.max(bytes.len());
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_streams_the_whole_view_and_a_failed_write_is_an_error() {
        // Larger than the buffer, so that it reaches the writer in several pieces.
        let v = view(vec![test("t", "Passed", None)], 4_000);
        let text = render(&v, Format::Json);
        assert!(text.len() > 300 * 1024, "{} bytes", text.len());
        assert!(text.ends_with("}\n"));
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, serde_json::to_value(&v).unwrap());
        assert_eq!(
            text,
            format!("{}\n", serde_json::to_string_pretty(&v).unwrap()),
            "pretty"
        );

        for room in [0, 1000, text.len() / 2, text.len() - 1] {
            let failed = write(&v, Format::Json, false, &mut Full::with_room(room)).unwrap_err();
            assert_eq!(failed.kind(), io::ErrorKind::StorageFull, "room {room}");
        }
        let mut out = Full::with_room(text.len());
        write(&v, Format::Json, false, &mut out).unwrap();
        // Streamed: never more than the buffer at once, where a document built whole first
        // would arrive in one piece.
        assert!(out.largest <= json::BUFFER, "{} bytes at once", out.largest);
    }
}
