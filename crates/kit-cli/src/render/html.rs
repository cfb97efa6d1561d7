//! One self-contained HTML file: inline CSS and SVG charts (test outcomes, coverage donuts,
//! statuses per endpoint). No JavaScript and nothing fetched: it opens from `file://`, and a
//! Content-Security-Policy forbids anything else. Every text from the archive is escaped.

use std::fmt::Write as _;

use kit_core::report::{Metric, Report, ReportSection};
use kit_core::visible;
use kit_coverage::EndpointCoverage;

use super::{duration, metric_text, run_line};
use crate::model::{RunReport, Summary, TestRow, View};

const CSS: &str = r#"
:root { --ok: #1a7f37; --bad: #cf222e; --skip: #9a6700; --int: #8250df; --muted: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1.5rem; max-width: 1200px; color: #1f2328; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
.muted { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.Passed { color: var(--ok); font-weight: 600; }
.Failed { color: var(--bad); font-weight: 600; }
.Skipped { color: var(--skip); font-weight: 600; }
.Interrupted { color: var(--int); font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
details { border: 1px solid var(--line); border-radius: 6px; padding: .4rem .6rem; margin: .4rem 0; }
summary { cursor: pointer; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: .6rem; border-radius: 6px; margin: .4rem 0 0; }
.gate-held { color: var(--ok); } .gate-failed { color: var(--bad); font-weight: 600; }
.legend span { display: inline-block; margin-right: .8rem; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; vertical-align: -1px; }
"#;

pub(crate) fn render(view: &View) -> String {
    let title = if view.command == "coverage" {
        "Coverage"
    } else {
        "Test report"
    };
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <title>{title} · kit</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p class=\"muted\">kit-cli {}</p>\n",
        env!("CARGO_PKG_VERSION")
    );
    for run in &view.runs {
        run_section(&mut out, run, view.coverage.is_none());
    }
    if let Some(coverage) = &view.coverage {
        out.push_str("<h2>Coverage of every run</h2>\n");
        charts(&mut out, None, coverage, &view.endpoints);
        if !view.gates.is_empty() {
            out.push_str("<h3>Gates</h3>\n<ul>\n");
            for gate in &view.gates {
                let (class, word) = if gate.passed {
                    ("gate-held", "held")
                } else {
                    ("gate-failed", "FAILED")
                };
                let _ = writeln!(
                    out,
                    "<li><span class=\"{class}\">{word}</span>: {}</li>",
                    esc(&gate.message)
                );
            }
            out.push_str("</ul>\n");
        }
        sections(&mut out, coverage);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn run_section(out: &mut String, run: &RunReport, with_tests: bool) {
    let _ = writeln!(out, "<section>\n<h2>{}</h2>", esc(&run_line(run)));
    for note in &run.notes {
        let _ = writeln!(out, "<p class=\"muted\">note: {}</p>", esc(note));
    }
    if !with_tests {
        out.push_str("</section>\n");
        return;
    }
    let empty = Report::default();
    charts(
        out,
        Some(&run.summary),
        run.coverage.as_ref().unwrap_or(&empty),
        &run.endpoints,
    );
    let failures: Vec<&TestRow> = run
        .tests
        .iter()
        .filter(|t| t.outcome == "Failed" || t.outcome == "Interrupted")
        .collect();
    if !failures.is_empty() {
        out.push_str("<h3>Failures</h3>\n");
        for test in failures {
            let _ = write!(
                out,
                "<details open><summary><span class=\"{}\">{}</span> {}</summary><pre>",
                test.outcome,
                test.outcome,
                esc(&test.name)
            );
            out.push_str(&esc(test.message.as_deref().unwrap_or("the test never finished")));
            if !test.last_requests.is_empty() {
                out.push_str("\n\nLast requests:");
                for request in &test.last_requests {
                    let _ = write!(out, "\n  {}", esc(&request.summary()));
                }
            }
            out.push_str("</pre></details>\n");
        }
    }
    out.push_str("<h3>Tests</h3>\n<table>\n<tr><th>Outcome</th><th>Test</th><th>Duration</th><th>Requests</th><th>Attachments</th></tr>\n");
    for t in &run.tests {
        let _ = writeln!(
            out,
            "<tr><td class=\"{0}\">{0}</td><td>{1}{2}</td><td class=\"num\">{3}</td><td class=\"num\">{4}</td><td class=\"num\">{5}</td></tr>",
            t.outcome,
            esc(&t.name),
            match (t.outcome, &t.message) {
                ("Skipped", Some(reason)) => format!("<br><span class=\"muted\">{}</span>", esc(reason)),
                _ => String::new(),
            },
            esc(&duration(t.duration_ns)),
            t.requests,
            t.attachments.len()
        );
    }
    out.push_str("</table>\n");
    let attachments: Vec<_> = run
        .tests
        .iter()
        .flat_map(|t| t.attachments.iter().map(move |a| (t, a)))
        .collect();
    if !attachments.is_empty() {
        out.push_str("<h3>Attachments</h3>\n<table>\n<tr><th>Test</th><th>Attachment</th><th>Type</th><th>Bytes</th><th>Description</th></tr>\n");
        for (t, a) in attachments {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&t.name),
                esc(&a.name),
                esc(&a.media_type),
                a.size,
                esc(a.description.as_deref().unwrap_or_default())
            );
        }
        out.push_str("</table>\n");
    }
    if let Some(coverage) = &run.coverage {
        sections(out, coverage);
    }
    out.push_str("</section>\n");
}

fn charts(out: &mut String, summary: Option<&Summary>, coverage: &Report, endpoints: &[EndpointCoverage]) {
    out.push_str("<div class=\"charts\">\n");
    if let Some(summary) = summary {
        outcomes_chart(out, summary);
    }
    for metric in coverage.sections.iter().flat_map(|s| &s.metrics) {
        donut(out, metric);
    }
    if !endpoints.is_empty() {
        statuses_chart(out, endpoints);
    }
    out.push_str("</div>\n");
}

/// A bar of test outcomes, with a legend of counts.
fn outcomes_chart(out: &mut String, s: &Summary) {
    let parts = [
        ("Passed", s.passed, "#1a7f37"),
        ("Failed", s.failed, "#cf222e"),
        ("Skipped", s.skipped, "#9a6700"),
        ("Interrupted", s.interrupted, "#8250df"),
    ];
    let total = s.tests.max(1) as f64;
    let width = 260.0;
    let _ = write!(
        out,
        "<figure><figcaption>Test outcomes</figcaption>\
         <svg role=\"img\" aria-label=\"{}: {} passed, {} failed, {} skipped, {} interrupted\" width=\"{width}\" height=\"24\" viewBox=\"0 0 {width} 24\">",
        super::counted(s.tests, "test", "tests"),
        s.passed,
        s.failed,
        s.skipped,
        s.interrupted
    );
    let mut x = 0.0;
    for (name, count, colour) in parts {
        if count == 0 {
            continue;
        }
        let w = width * count as f64 / total;
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"0\" width=\"{w:.1}\" height=\"24\" fill=\"{colour}\"><title>{count} {name}</title></rect>"
        );
        x += w;
    }
    if s.tests == 0 {
        let _ = write!(
            out,
            "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"24\" fill=\"#d0d7de\"/>"
        );
    }
    out.push_str("</svg><div class=\"legend\">");
    for (name, count, colour) in parts {
        let _ = write!(
            out,
            "<span><i class=\"swatch\" style=\"background:{colour}\"></i>{count} {}</span>",
            name.to_lowercase()
        );
    }
    out.push_str("</div></figure>\n");
}

/// A donut of covered out of total.
fn donut(out: &mut String, metric: &Metric) {
    let r = 40.0_f64;
    let circumference = 2.0 * std::f64::consts::PI * r;
    let share = metric.percent().unwrap_or(0.0) / 100.0;
    let arc = circumference * share;
    let label = match metric.percent() {
        Some(p) => format!("{p:.0}%"),
        None => "–".into(),
    };
    let _ = writeln!(
        out,
        "<figure><figcaption>{}</figcaption>\
         <svg role=\"img\" aria-label=\"{}: {}\" width=\"120\" height=\"120\" viewBox=\"0 0 120 120\">\
         <circle cx=\"60\" cy=\"60\" r=\"{r}\" fill=\"none\" stroke=\"#d0d7de\" stroke-width=\"16\"/>\
         <circle cx=\"60\" cy=\"60\" r=\"{r}\" fill=\"none\" stroke=\"#1a7f37\" stroke-width=\"16\" \
         stroke-dasharray=\"{arc:.2} {circumference:.2}\" transform=\"rotate(-90 60 60)\"/>\
         <text x=\"60\" y=\"66\" text-anchor=\"middle\" font-size=\"18\" font-weight=\"600\">{label}</text></svg>\
         <div class=\"muted\">{}</div></figure>",
        esc(&metric.name),
        esc(&metric.name),
        esc(&metric_text(metric)),
        esc(&metric_text(metric)),
    );
}

/// Horizontal bars per endpoint, split by status class.
fn statuses_chart(out: &mut String, endpoints: &[EndpointCoverage]) {
    const CLASSES: [(u16, &str, &str); 5] = [
        (1, "1xx", "#6e7781"),
        (2, "2xx", "#1a7f37"),
        (3, "3xx", "#0969da"),
        (4, "4xx", "#9a6700"),
        (5, "5xx", "#cf222e"),
    ];
    let shown = &endpoints[..endpoints.len().min(40)];
    let max = shown.iter().map(|e| e.calls).max().unwrap_or(1).max(1) as f64;
    let row = 18.0;
    let label_width = 300.0;
    let bar_width = 260.0;
    let height = row * shown.len() as f64 + 4.0;
    let total_width = label_width + bar_width + 50.0;
    let _ = write!(
        out,
        "<figure><figcaption>Statuses per endpoint</figcaption>\
         <svg role=\"img\" aria-label=\"statuses per endpoint\" width=\"{total_width}\" height=\"{height}\" viewBox=\"0 0 {total_width} {height}\" font-size=\"12\">"
    );
    for (i, endpoint) in shown.iter().enumerate() {
        let y = row * i as f64;
        let label = format!("{} {}", endpoint.method, endpoint.route);
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label_width - 6.0,
            y + 13.0,
            esc(&ellipsis(&label, 44))
        );
        let mut x = label_width;
        for (class, name, colour) in CLASSES {
            let count: u64 = endpoint
                .statuses
                .iter()
                .filter(|(status, _)| **status / 100 == class)
                .map(|(_, n)| n)
                .sum();
            if count == 0 {
                continue;
            }
            let w = bar_width * count as f64 / max;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"14\" fill=\"{colour}\"><title>{count} × {name}</title></rect>",
                y + 2.0
            );
            x += w;
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 4.0,
            y + 13.0,
            endpoint.calls
        );
    }
    out.push_str("</svg><div class=\"legend\">");
    for (_, name, colour) in CLASSES {
        let _ = write!(
            out,
            "<span><i class=\"swatch\" style=\"background:{colour}\"></i>{name}</span>"
        );
    }
    if endpoints.len() > shown.len() {
        let _ = write!(
            out,
            "<span class=\"muted\">first {} of {} endpoints</span>",
            shown.len(),
            endpoints.len()
        );
    }
    out.push_str("</div></figure>\n");
}

fn sections(out: &mut String, report: &Report) {
    for section in &report.sections {
        section_html(out, section);
    }
}

fn section_html(out: &mut String, section: &ReportSection) {
    let _ = writeln!(
        out,
        "<h3>{} · {}</h3>",
        esc(&section.category),
        esc(&section.title)
    );
    for metric in &section.metrics {
        let _ = writeln!(
            out,
            "<p><strong>{}</strong>: {}</p>",
            esc(&metric.name),
            esc(&metric_text(metric))
        );
    }
    for note in &section.notes {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", esc(note));
    }
    if section.rows.is_empty() {
        out.push_str("<p class=\"muted\">(none)</p>\n");
        return;
    }
    out.push_str("<table>\n<tr>");
    for column in &section.columns {
        let _ = write!(out, "<th>{}</th>", esc(column));
    }
    out.push_str("</tr>\n");
    for row in &section.rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn ellipsis(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// Text for HTML content and attribute values. Control characters but line breaks and tabs
/// (which a `<pre>` block shows as they are) are written as [`visible::text`] writes them: a
/// browser shows them as nothing, and a bidirectional override would show a name reversed.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\r' | '\t' => out.push(c),
            c if visible::is_hidden(c) => visible::push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}
