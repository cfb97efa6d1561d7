//! The report model: plain data every collector writes into and every output format reads.
//!
//! A [`Report`] is a list of [`ReportSection`]s. A section has a category (`REST`,
//! `Traffic`, `OpenAPI`), a title, headline [`Metric`]s (covered out of total, which gates
//! read), and a table (columns and rows of text). Table, JSON, Markdown and HTML outputs render
//! any section the same way, so a user's collector shows up in every format without code of
//! its own there.
//!
//! ```
//! use kit_core::report::{Metric, Report, ReportSection};
//!
//! let mut report = Report::default();
//! report.sections.push(
//!     ReportSection::new("rest.endpoints", "REST", "Requests per endpoint")
//!         .with_metric(Metric::new("endpoints called", 3, 3))
//!         .with_columns(["Method", "Route", "Calls"])
//!         .with_row(["GET", "/orders/{id}", "3"]),
//! );
//! assert_eq!(report.metric("endpoints called").unwrap().percent(), Some(100.0));
//! ```

use serde::{Deserialize, Serialize};

/// A whole report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Its sections, in the order collectors wrote them.
    pub sections: Vec<ReportSection>,
}

impl Report {
    /// The first metric called `name`, in any section.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.sections
            .iter()
            .flat_map(|s| &s.metrics)
            .find(|m| m.name == name)
    }

    /// The section with `id`.
    pub fn section(&self, id: &str) -> Option<&ReportSection> {
        self.sections.iter().find(|s| s.id == id)
    }
}

/// One section: headline metrics and a table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReportSection {
    /// A stable id (`openapi.operations`), for tools and tests.
    pub id: String,
    /// The category (`REST`, `Traffic`, `OpenAPI`).
    pub category: String,
    /// What a person reads as its heading.
    pub title: String,
    /// Headline figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// The table's column names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// The table's rows, as many cells as columns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Vec<String>>,
    /// Lines worth reading beside the table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ReportSection {
    /// An empty section.
    pub fn new(id: impl Into<String>, category: impl Into<String>, title: impl Into<String>) -> Self {
        ReportSection {
            id: id.into(),
            category: category.into(),
            title: title.into(),
            ..Default::default()
        }
    }

    /// Adds a metric.
    pub fn with_metric(mut self, metric: Metric) -> Self {
        self.metrics.push(metric);
        self
    }

    /// Sets the column names.
    pub fn with_columns<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = columns.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a row.
    pub fn with_row<S: Into<String>>(mut self, row: impl IntoIterator<Item = S>) -> Self {
        self.rows.push(row.into_iter().map(Into::into).collect());
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

/// Covered out of total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    /// Its name (`operations`, `statuses`, `fields`).
    pub name: String,
    /// How many are covered.
    pub covered: u64,
    /// Out of how many.
    pub total: u64,
}

impl Metric {
    /// A metric.
    pub fn new(name: impl Into<String>, covered: u64, total: u64) -> Self {
        Metric {
            name: name.into(),
            covered,
            total,
        }
    }

    /// `covered / total` in percent; `None` when there is nothing to cover.
    pub fn percent(&self) -> Option<f64> {
        (self.total > 0).then(|| self.covered as f64 * 100.0 / self.total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_finds_sections_and_metrics_by_name() {
        let report = Report {
            sections: vec![
                ReportSection::new("rest.endpoints", "REST", "Requests per endpoint")
                    .with_metric(Metric::new("endpoints called", 2, 3))
                    .with_columns(["Method", "Route"])
                    .with_row(["GET", "/a"])
                    .with_row(["PUT", "/b"])
                    .with_note("one not called"),
                ReportSection::new("openapi.operations", "OpenAPI", "Operations")
                    .with_metric(Metric::new("operations", 1, 4))
                    .with_metric(Metric::new("endpoints called", 9, 9)),
            ],
        };
        let first = &report.sections[0];
        assert_eq!(
            (first.id.as_str(), first.category.as_str(), first.title.as_str()),
            ("rest.endpoints", "REST", "Requests per endpoint")
        );
        assert_eq!(first.columns, ["Method", "Route"]);
        assert_eq!(first.rows, [["GET", "/a"], ["PUT", "/b"]]);
        assert_eq!(first.notes, ["one not called"]);
        assert_eq!(report.section("openapi.operations").unwrap().title, "Operations");
        assert_eq!(report.section("openapi"), None);
        // The first section's metric wins.
        assert_eq!(
            report.metric("endpoints called"),
            Some(&Metric::new("endpoints called", 2, 3))
        );
        assert_eq!(report.metric("operations").unwrap().covered, 1);
        assert_eq!(report.metric("fields"), None);
    }

    #[test]
    fn a_metric_is_a_percentage_of_what_there_is_to_cover() {
        assert_eq!(Metric::new("m", 3, 4).percent(), Some(75.0));
        assert_eq!(Metric::new("m", 1, 3).percent(), Some(100.0 / 3.0));
        assert_eq!(Metric::new("m", 0, 1).percent(), Some(0.0));
        assert_eq!(Metric::new("m", 0, 0).percent(), None);
    }
}
