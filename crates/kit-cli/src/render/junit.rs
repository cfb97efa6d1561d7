//! JUnit XML through quick-junit: a testsuite per run with a testcase per test (failures carry
//! their message and a summary of the test's last requests, interrupted tests are errors), and
//! for `coverage` a testsuite of the gates, one testcase each.

use std::fmt::Write as _;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::metric_text;
use crate::model::{TestRow, View};

pub(crate) fn render(view: &View) -> Vec<u8> {
    let mut report = Report::new("kit");
    // `coverage` holds no test rows: its runs are summaries, and the gates are its testcases.
    for run in view.runs.iter().filter(|r| !r.tests.is_empty()) {
        let mut suite = TestSuite::new(format!("kit run {}", run.run_id));
        if let Some(runner) = &run.runner {
            suite.add_property(Property::new("runner", runner.as_str()));
        }
        for test in &run.tests {
            suite.add_test_case(test_case(test));
        }
        if let Some(coverage) = &run.coverage {
            for metric in coverage.sections.iter().flat_map(|s| &s.metrics) {
                suite.add_property(Property::new(
                    format!("coverage.{}", metric.name),
                    metric_text(metric),
                ));
            }
        }
        report.add_test_suite(suite);
    }
    if let Some(coverage) = &view.coverage {
        let mut suite = TestSuite::new("kit coverage gates");
        for metric in coverage.sections.iter().flat_map(|s| &s.metrics) {
            suite.add_property(Property::new(
                format!("coverage.{}", metric.name),
                metric_text(metric),
            ));
        }
        for gate in &view.gates {
            let status = if gate.passed {
                TestCaseStatus::success()
            } else {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_message(gate.message.as_str())
                    .set_type("coverage gate");
                status
            };
            let mut case = TestCase::new(format!("{} coverage ≥ {}%", gate.metric, gate.threshold), status);
            case.set_classname("kit.coverage");
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    let mut out = Vec::new();
    // Writing to a Vec fails only on a serializer bug; the message says so in the output.
    if let Err(e) = report.serialize(&mut out) {
        out = format!("<!-- cannot write JUnit: {e} -->\n").into_bytes();
    }
    replace_noncharacters(&mut out);
    out
}

/// U+FFFE and U+FFFF, which XML 1.0 allows nowhere (not even as references), written as
/// U+FFFD. quick-junit leaves out the control characters XML refuses but passes these: one in
/// a failure message quoting a response makes the document one a strict parser (expat)
/// refuses whole, every test's result with it. In UTF-8 their bytes (EF BF BE, EF BF BF)
/// begin with a lead byte, so they are never the middle of another character.
fn replace_noncharacters(xml: &mut [u8]) {
    let mut at = 0;
    while let Some(found) = xml[at..]
        .windows(3)
        .position(|w| matches!(w, [0xEF, 0xBF, 0xBE | 0xBF]))
    {
        xml[at + found + 2] = 0xBD;
        at += found + 3;
    }
}

fn test_case(test: &TestRow) -> TestCase {
    let status = match test.outcome {
        "Passed" => TestCaseStatus::success(),
        "Skipped" => {
            let mut status = TestCaseStatus::skipped();
            if let Some(reason) = &test.message {
                status.set_message(reason.as_str());
            }
            status
        }
        "Failed" => {
            let message = test.message.clone().unwrap_or_default();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_message(message.lines().next().unwrap_or_default())
                .set_type("test failure")
                .set_description(with_requests(&message, test));
            status
        }
        _ => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_message("interrupted: the test started and never finished (its process was killed?)")
                .set_type("interrupted")
                .set_description(with_requests("the test never finished", test));
            status
        }
    };
    // `module::test` → classname `module`, name `test`, as cargo's own JUnit output does.
    let (classname, name) = test.name.rsplit_once("::").unwrap_or(("", test.name.as_str()));
    let mut case = TestCase::new(name, status);
    if !classname.is_empty() {
        case.set_classname(classname);
    }
    if let Some(nanos) = test.duration_ns {
        case.set_time(Duration::from_nanos(nanos));
    }
    case
}

/// The message, then the test's last requests (already redacted when recorded).
fn with_requests(message: &str, test: &TestRow) -> String {
    let mut text = message.to_owned();
    if !test.last_requests.is_empty() {
        text.push_str("\n\nLast requests:");
        for request in &test.last_requests {
            let _ = write!(text, "\n  {}", request.summary());
        }
    }
    text
}
