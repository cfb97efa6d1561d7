//! Markdown for CI job summaries (GitHub's `$GITHUB_STEP_SUMMARY` takes up to 1 MiB): headings,
//! figures and tables, cut with a note when a table would pass the budget.

use std::fmt::Write as _;

use kit_core::report::{Report, ReportSection};
use kit_core::visible;

use super::{duration, metric_text, outcome_line, run_line};
use crate::model::{RunReport, View};

/// The whole document stays under this (GitHub refuses summaries over 1 MiB).
const BUDGET: usize = 1024 * 1024 - 16 * 1024;

pub(crate) fn render(view: &View) -> String {
    let mut out = Budgeted::default();
    out.line(if view.command == "coverage" {
        "# Coverage"
    } else {
        "# Test report"
    });
    out.line("");
    for run in &view.runs {
        run_section(&mut out, run);
    }
    if let Some(coverage) = &view.coverage {
        sections(&mut out, coverage, "##");
    }
    if !view.gates.is_empty() {
        out.line("## Gates");
        out.line("");
        for gate in &view.gates {
            let mark = if gate.passed { "✅ held" } else { "❌ **failed**" };
            out.line(&format!("- {mark}: {}", escape(&gate.message)));
        }
        out.line("");
    }
    out.text
}

#[derive(Default)]
struct Budgeted {
    text: String,
    /// Rows left out because the budget ran out.
    cut: bool,
}

impl Budgeted {
    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    fn room(&self, more: usize) -> bool {
        self.text.len() + more < BUDGET
    }

    /// A table; rows past the budget are left out, and a line says how many.
    fn table(&mut self, columns: &[String], rows: &[Vec<String>]) {
        self.line(&format!(
            "| {} |",
            columns.iter().map(|c| escape(c)).collect::<Vec<_>>().join(" | ")
        ));
        self.line(&format!("|{}", " --- |".repeat(columns.len())));
        for (i, row) in rows.iter().enumerate() {
            let line = format!(
                "| {} |",
                row.iter().map(|c| escape(c)).collect::<Vec<_>>().join(" | ")
            );
            // Keep room for the closing note and the sections after.
            if self.cut || !self.room(line.len() + 4 * 1024) {
                self.cut = true;
                self.line("");
                self.line(&format!(
                    "*{} more rows left out to keep this summary under 1 MiB; the HTML or JSON report has them all.*",
                    rows.len() - i
                ));
                return;
            }
            self.line(&line);
        }
    }
}

fn run_section(out: &mut Budgeted, run: &RunReport) {
    out.line(&format!("## {}", escape(&run_line(run))));
    out.line("");
    for note in &run.notes {
        out.line(&format!("> {}", escape(note)));
    }
    if run.tests.is_empty() {
        return;
    }
    let failures: Vec<_> = run
        .tests
        .iter()
        .filter(|t| t.outcome == "Failed" || t.outcome == "Interrupted")
        .collect();
    if !failures.is_empty() {
        out.line("### Failures");
        out.line("");
        for test in failures {
            out.line(&format!(
                "<details><summary>{}</summary>",
                html_escape(&visible::text(&outcome_line(test)))
            ));
            out.line("");
            out.line("```text");
            let mut body = test
                .message
                .clone()
                .unwrap_or_else(|| "the test never finished".into());
            for request in &test.last_requests {
                let _ = write!(body, "\n{}", request.summary());
            }
            // A fence inside the message must not close ours.
            out.line(&visible::lines(&body.replace("```", "ʼʼʼ")));
            out.line("```");
            out.line("");
            out.line("</details>");
            out.line("");
        }
    }
    out.line("### Tests");
    out.line("");
    let columns = ["Outcome", "Test", "Duration", "Requests"].map(String::from);
    let rows: Vec<Vec<String>> = run
        .tests
        .iter()
        .map(|t| {
            vec![
                t.outcome.to_owned(),
                t.name.clone(),
                duration(t.duration_ns),
                t.requests.to_string(),
            ]
        })
        .collect();
    out.table(&columns, &rows);
    out.line("");
    if let Some(coverage) = &run.coverage {
        sections(out, coverage, "###");
    }
}

fn sections(out: &mut Budgeted, report: &Report, level: &str) {
    for section in &report.sections {
        section_text(out, section, level);
    }
}

fn section_text(out: &mut Budgeted, section: &ReportSection, level: &str) {
    out.line(&format!(
        "{level} {} · {}",
        escape(&section.category),
        escape(&section.title)
    ));
    out.line("");
    for metric in &section.metrics {
        out.line(&format!(
            "- **{}**: {}",
            escape(&metric.name),
            metric_text(metric)
        ));
    }
    for note in &section.notes {
        out.line(&format!("- {}", escape(note)));
    }
    if !section.metrics.is_empty() || !section.notes.is_empty() {
        out.line("");
    }
    if section.rows.is_empty() {
        out.line("(none)");
    } else {
        out.table(&section.columns, &section.rows);
    }
    out.line("");
}

/// Text safe in a table cell or a line: pipes, HTML and newlines neutralised, Markdown
/// punctuation escaped so a test name cannot format the page, other control characters
/// shown as [`visible::text`] shows them (a summary is read in a terminal too).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' | '\\' | '*' | '_' | '`' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if visible::is_hidden(c) => visible::push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
