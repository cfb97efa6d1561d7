//! The terminal format: outcome lines, then tables.

use std::fmt::Write as _;

use kit_core::TestOutcome;
use tabled::settings::object::Columns;
use tabled::settings::{Style, Width};
use tabled::{Table, Tabled};

use crate::model::{Report, RunReport};

#[derive(Tabled)]
struct TestLine {
    #[tabled(rename = "Outcome")]
    outcome: &'static str,
    #[tabled(rename = "Test")]
    name: String,
    #[tabled(rename = "Duration")]
    duration: String,
    #[tabled(rename = "Requests")]
    requests: u64,
    #[tabled(rename = "Attachments")]
    attachments: usize,
}

#[derive(Tabled)]
struct AttachmentLine {
    #[tabled(rename = "Test")]
    test: String,
    #[tabled(rename = "Attachment")]
    name: String,
    #[tabled(rename = "Type")]
    media_type: String,
    #[tabled(rename = "Bytes")]
    size: u64,
    #[tabled(rename = "Description")]
    description: String,
}

#[derive(Tabled)]
struct EndpointLine {
    #[tabled(rename = "Method")]
    method: String,
    #[tabled(rename = "Route")]
    route: String,
    #[tabled(rename = "Calls")]
    calls: u64,
    #[tabled(rename = "Statuses")]
    statuses: String,
}

/// `Passed <name>`, `Failed <name>: <first line>`, `Skipped <name>: <reason>`, `Interrupted <name>`.
pub(crate) fn outcome_line(name: &str, outcome: &TestOutcome) -> String {
    match outcome {
        TestOutcome::Failed { message } => {
            format!("Failed {name}: {}", message.lines().next().unwrap_or_default())
        }
        TestOutcome::Skipped { reason } => format!("Skipped {name}: {reason}"),
        other => format!("{} {name}", other.label()),
    }
}

fn duration(d: Option<std::time::Duration>) -> String {
    match d {
        None => "-".into(),
        Some(d) if d.as_secs() >= 1 => format!("{:.2} s", d.as_secs_f64()),
        Some(d) => format!("{:.1} ms", d.as_secs_f64() * 1000.0),
    }
}

fn run(out: &mut String, run: &RunReport) {
    let _ = writeln!(
        out,
        "Run {} ({}{}): {} tests, {} passed, {} failed, {} skipped, {} interrupted",
        run.run_id,
        run.runner.as_deref().unwrap_or("unknown runner"),
        run.kit_version
            .as_deref()
            .map(|v| format!(", kit {v}"))
            .unwrap_or_default(),
        run.tests.len(),
        run.count("Passed"),
        run.count("Failed"),
        run.count("Skipped"),
        run.count("Interrupted"),
    );
    for note in &run.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out.push('\n');
    for test in &run.tests {
        out.push_str(&outcome_line(&test.name, &test.outcome));
        out.push('\n');
    }
    out.push('\n');
    let tests = run.tests.iter().map(|t| TestLine {
        outcome: t.outcome.label(),
        name: t.name.clone(),
        duration: duration(t.duration),
        requests: t.requests,
        attachments: t.attachments.len(),
    });
    let _ = writeln!(out, "Tests\n{}\n", Table::new(tests).with(Style::rounded()));
    let attachments: Vec<AttachmentLine> = run
        .tests
        .iter()
        .flat_map(|t| {
            t.attachments.iter().map(|a| AttachmentLine {
                test: t.name.clone(),
                name: a.name.clone(),
                media_type: a.media_type.clone(),
                size: a.size,
                description: a.description.clone().unwrap_or_default(),
            })
        })
        .collect();
    if !attachments.is_empty() {
        let _ = writeln!(
            out,
            "Attachments\n{}\n",
            Table::new(attachments).with(Style::rounded())
        );
    }
    if run.endpoints.is_empty() {
        out.push_str("Requests per endpoint: none\n");
    } else {
        let endpoints = run.endpoints.iter().map(|e| EndpointLine {
            method: e.method.clone(),
            route: e.route.clone(),
            calls: e.calls,
            statuses: e
                .statuses
                .iter()
                .map(|(s, n)| format!("{s} ×{n}"))
                .collect::<Vec<_>>()
                .join(", "),
        });
        let _ = writeln!(
            out,
            "Requests per endpoint\n{}",
            Table::new(endpoints).with(Style::rounded())
        );
    }
}

/// Sections of a report model (coverage): title, figures, notes, then the table.
pub(crate) fn sections(report: &kit_core::report::Report) -> String {
    let mut out = String::new();
    for section in &report.sections {
        let _ = writeln!(out, "{} · {}", section.category, section.title);
        for metric in &section.metrics {
            let _ = match metric.percent() {
                Some(p) => writeln!(
                    out,
                    "  {}: {} of {} ({p:.1}%)",
                    metric.name, metric.covered, metric.total
                ),
                None => writeln!(out, "  {}: nothing to cover", metric.name),
            };
        }
        for note in &section.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        if section.rows.is_empty() {
            out.push_str("  (none)\n\n");
            continue;
        }
        let mut builder = tabled::builder::Builder::default();
        builder.push_record(section.columns.iter().cloned());
        for row in &section.rows {
            builder.push_record(row.iter().cloned());
        }
        let table = builder
            .build()
            .with(Style::rounded())
            .modify(Columns::last(), Width::wrap(72).keep_words(true))
            .to_string();
        let _ = writeln!(out, "{table}\n");
    }
    out
}

/// The whole report as terminal text.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    for (i, r) in report.runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        run(&mut out, r);
    }
    out
}
