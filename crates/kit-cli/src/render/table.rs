//! The terminal format: outcome lines, then tables. Coloured and fitted to the width only
//! when writing to a terminal. Every piece of text the archive gave is shown through
//! [`visible::text`], on a terminal or not: a file written here is read on one too.

use std::fmt::Write as _;

use kit_core::report::{Report, ReportSection};
use kit_core::visible;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::peaker::Priority;
use tabled::settings::{Style, Width};

use super::{duration, metric_text, outcome_line, run_line};
use crate::model::{RunReport, View};

/// Longest a list cell (fields never asserted) grows before wrapping, off a terminal.
const LIST_WIDTH: usize = 72;

struct Look {
    colour: bool,
    width: Option<usize>,
}

impl Look {
    fn paint(&self, text: &str, outcome: &str) -> String {
        if !self.colour {
            return text.to_owned();
        }
        let code = match outcome {
            "Passed" => "32",
            "Failed" => "31",
            "Skipped" => "33",
            _ => "35",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    fn table(&self, columns: &[String], rows: impl IntoIterator<Item = Vec<String>>) -> String {
        let mut builder = Builder::default();
        builder.push_record(columns.iter().map(|c| visible::text(c)));
        for row in rows {
            builder.push_record(row.iter().map(|c| visible::text(c)));
        }
        let mut table = builder.build();
        table.with(Style::rounded());
        match self.width {
            Some(width) => {
                table.with(Width::wrap(width).keep_words(true).priority(Priority::max(true)));
            }
            None => {
                table.modify(Columns::last(), Width::wrap(LIST_WIDTH).keep_words(true));
            }
        }
        table.to_string()
    }
}

pub(crate) fn render(view: &View, terminal: bool) -> String {
    let style = Look {
        colour: terminal,
        width: terminal
            .then(|| {
                console::Term::stdout()
                    .size_checked()
                    .map(|(_, cols)| usize::from(cols))
            })
            .flatten()
            .filter(|w| *w >= 40),
    };
    let mut out = String::new();
    for (i, run) in view.runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        run_section(&mut out, run, &style);
    }
    if let Some(coverage) = &view.coverage {
        out.push('\n');
        sections(&mut out, coverage, &style);
    }
    if !view.gates.is_empty() {
        out.push_str("Gates\n");
        for gate in &view.gates {
            let word = if gate.passed { "held" } else { "FAILED" };
            let painted = style.paint(word, if gate.passed { "Passed" } else { "Failed" });
            let _ = writeln!(out, "  {painted}: {}", visible::text(&gate.message));
        }
    }
    out
}

fn run_section(out: &mut String, run: &RunReport, style: &Look) {
    let _ = writeln!(out, "{}", visible::text(&run_line(run)));
    for note in &run.notes {
        let _ = writeln!(out, "note: {}", visible::text(note));
    }
    if run.tests.is_empty() {
        return;
    }
    out.push('\n');
    for test in &run.tests {
        let line = outcome_line(test);
        let (word, rest) = line.split_at(test.outcome.len());
        let _ = writeln!(out, "{}{}", style.paint(word, test.outcome), visible::text(rest));
    }
    out.push('\n');
    let columns = ["Outcome", "Test", "Duration", "Requests", "Attachments"].map(String::from);
    let rows = run.tests.iter().map(|t| {
        vec![
            t.outcome.to_owned(),
            t.name.clone(),
            duration(t.duration_ns),
            t.requests.to_string(),
            t.attachments.len().to_string(),
        ]
    });
    let _ = writeln!(out, "Tests\n{}\n", style.table(&columns, rows));
    let attachments: Vec<Vec<String>> = run
        .tests
        .iter()
        .flat_map(|t| {
            t.attachments.iter().map(|a| {
                vec![
                    t.name.clone(),
                    a.name.clone(),
                    a.media_type.clone(),
                    a.size.to_string(),
                    a.description.clone().unwrap_or_default(),
                ]
            })
        })
        .collect();
    if !attachments.is_empty() {
        let columns = ["Test", "Attachment", "Type", "Bytes", "Description"].map(String::from);
        let _ = writeln!(out, "Attachments\n{}\n", style.table(&columns, attachments));
    }
    if let Some(coverage) = &run.coverage {
        sections(out, coverage, style);
    }
}

fn sections(out: &mut String, report: &Report, style: &Look) {
    for section in &report.sections {
        section_text(out, section, style);
    }
}

fn section_text(out: &mut String, section: &ReportSection, style: &Look) {
    let _ = writeln!(
        out,
        "{} · {}",
        visible::text(&section.category),
        visible::text(&section.title)
    );
    for metric in &section.metrics {
        let _ = writeln!(out, "  {}: {}", visible::text(&metric.name), metric_text(metric));
    }
    for note in &section.notes {
        let _ = writeln!(out, "  note: {}", visible::text(note));
    }
    if section.rows.is_empty() {
        out.push_str("  (none)\n\n");
        return;
    }
    let _ = writeln!(
        out,
        "{}\n",
        style.table(&section.columns, section.rows.iter().cloned())
    );
}
