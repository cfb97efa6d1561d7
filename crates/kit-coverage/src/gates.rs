//! Coverage gates: minimum percentages a report must reach, for CI.

use std::fmt;
use std::str::FromStr;

use kit_core::report::{Metric, Report};
use kit_core::{ConfigError, Configuration};

/// A percentage from 0 to 100: `80`, `80%`, `62.5`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Percent(f64);

impl Percent {
    /// The value, 0 to 100.
    pub fn value(self) -> f64 {
        self.0
    }
}

impl FromStr for Percent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = text.trim().trim_end_matches('%').trim();
        match number.parse::<f64>() {
            Ok(value) if (0.0..=100.0).contains(&value) => Ok(Percent(value)),
            _ => Err(format!("`{text}` is not a percentage from 0 to 100")),
        }
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// Minimum coverage, per metric of the OpenAPI report: `operations`, `statuses`, `fields`.
///
/// Read from configuration (`kit.toml`, or `Kit__Coverage__Gates__Operations=80` in the
/// environment):
///
/// ```toml
/// [Kit.Coverage]
/// ExcludeDeprecated = true
/// Exclude = ["GET /health", "getMetrics"]
/// [Kit.Coverage.Gates]
/// Operations = 80
/// Statuses = 60
/// Fields = 25
/// ```
///
/// ```
/// use kit_core::report::{Metric, Report, ReportSection};
/// use kit_coverage::CoverageGates;
///
/// let mut report = Report::default();
/// report.sections.push(ReportSection::new("openapi.operations", "OpenAPI", "Operations")
///     .with_metric(Metric::new("operations", 8, 19)));
/// let gates = CoverageGates { operations: Some("80".parse().unwrap()), ..Default::default() };
/// let failures = gates.check(&report);
/// assert_eq!(failures[0].to_string(), "operations coverage 42.1% (8 of 19) is below the gate of 80%");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoverageGates {
    /// Operations called, of those declared.
    pub operations: Option<Percent>,
    /// Declared responses (operation × status) seen.
    pub statuses: Option<Percent>,
    /// Declared response fields asserted.
    pub fields: Option<Percent>,
    /// Leave deprecated operations out of every figure.
    pub exclude_deprecated: bool,
    /// Operations left out of every figure (`GET /health`, or an operationId).
    pub exclude: Vec<String>,
}

impl CoverageGates {
    /// Gates from `Kit:Coverage:Gates:{Operations,Statuses,Fields}`,
    /// `Kit:Coverage:ExcludeDeprecated` and `Kit:Coverage:Exclude` (a list).
    pub fn from_configuration(configuration: &Configuration) -> Result<Self, ConfigError> {
        let coverage = configuration.section("Kit:Coverage");
        let gates = coverage.section("Gates");
        let percent = |name: &str| gates.get_parsed::<Percent>(name, "a percentage from 0 to 100");
        Ok(CoverageGates {
            operations: percent("Operations")?,
            statuses: percent("Statuses")?,
            fields: percent("Fields")?,
            exclude_deprecated: coverage.get_bool("ExcludeDeprecated")?.unwrap_or(false),
            exclude: coverage.get_list("Exclude").unwrap_or_default(),
        })
    }

    /// Whether no threshold is set.
    pub fn is_empty(&self) -> bool {
        self.operations.is_none() && self.statuses.is_none() && self.fields.is_none()
    }

    /// The gates `report` falls short of, one per metric. A metric with nothing to cover
    /// (0 of 0) passes; a gated metric missing from the report fails.
    pub fn check(&self, report: &Report) -> Vec<GateFailure> {
        [
            ("operations", self.operations),
            ("statuses", self.statuses),
            ("fields", self.fields),
        ]
        .into_iter()
        .filter_map(|(name, threshold)| {
            let threshold = threshold?;
            let found = report.metric(name).cloned();
            let passes = found.as_ref().is_some_and(|m| {
                // Compared in integers: 2 of 3 against 66.67% must not hang on rounding.
                m.total == 0 || (m.covered as f64) * 100.0 >= threshold.0 * m.total as f64 - 1e-9
            });
            (!passes).then(|| GateFailure {
                metric: name.to_owned(),
                threshold,
                found,
            })
        })
        .collect()
    }
}

/// One gate a report fell short of.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GateFailure {
    /// The metric (`operations`).
    pub metric: String,
    /// The gate.
    pub threshold: Percent,
    /// The metric as found; `None` when the report has none by that name.
    pub found: Option<Metric>,
}

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.found {
            Some(metric) => write!(
                f,
                "{} coverage {:.1}% ({} of {}) is below the gate of {}",
                self.metric,
                metric.percent().unwrap_or(100.0),
                metric.covered,
                metric.total,
                self.threshold
            ),
            None => write!(
                f,
                "{} coverage is gated at {} but the report has no `{}` figure (was an OpenAPI document given?)",
                self.metric, self.threshold, self.metric
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kit_core::report::ReportSection;

    fn report(covered: u64, total: u64) -> Report {
        let mut report = Report::default();
        report.sections.push(
            ReportSection::new("openapi.operations", "OpenAPI", "x").with_metric(Metric::new(
                "operations",
                covered,
                total,
            )),
        );
        report
    }

    fn gate(operations: &str) -> CoverageGates {
        CoverageGates {
            operations: Some(operations.parse().unwrap()),
            ..Default::default()
        }
    }

    #[test]
    fn thresholds_pass_at_and_above_and_fail_below() {
        assert!(gate("50").check(&report(1, 2)).is_empty());
        assert!(gate("66.67").check(&report(2, 3)).len() == 1);
        assert!(gate("66.66").check(&report(2, 3)).is_empty());
        assert!(gate("100%").check(&report(3, 3)).is_empty());
        assert!(gate("0").check(&report(0, 3)).is_empty());
        assert!(
            gate("100").check(&report(0, 0)).is_empty(),
            "nothing to cover passes"
        );
        assert_eq!(gate("1").check(&report(0, 3)).len(), 1);
    }

    #[test]
    fn gates_are_empty_only_with_no_threshold_set() {
        assert!(CoverageGates::default().is_empty());
        let excluding = CoverageGates {
            exclude_deprecated: true,
            exclude: vec!["GET /health".into()],
            ..Default::default()
        };
        assert!(excluding.is_empty(), "exclusions are not thresholds");
        let one: Percent = "10".parse().unwrap();
        for gates in [
            CoverageGates {
                operations: Some(one),
                ..Default::default()
            },
            CoverageGates {
                statuses: Some(one),
                ..Default::default()
            },
            CoverageGates {
                fields: Some(one),
                ..Default::default()
            },
        ] {
            assert!(!gates.is_empty(), "{gates:?}");
        }
    }

    #[test]
    fn a_missing_metric_fails_and_says_so() {
        let failures = CoverageGates {
            fields: Some("10".parse().unwrap()),
            ..Default::default()
        }
        .check(&report(1, 1));
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].to_string().contains("no `fields` figure"),
            "{}",
            failures[0]
        );
    }

    #[test]
    fn percentages_are_checked() {
        for bad in ["-1", "101", "lots", "", "NaN"] {
            assert!(bad.parse::<Percent>().is_err(), "{bad}");
        }
        assert_eq!("62.5 %".parse::<Percent>().unwrap().value(), 62.5);
    }

    #[test]
    fn configuration_is_read_and_checked() {
        let mut config = Configuration::from_toml_str(
            "[Kit.Coverage]\nExcludeDeprecated = true\nExclude = [\"GET /health\", \"getMetrics\"]\n[Kit.Coverage.Gates]\nOperations = 80\n",
            "kit.toml",
        )
        .unwrap();
        config.apply_environment([("Kit__Coverage__Gates__Fields", "25%")]);
        let gates = CoverageGates::from_configuration(&config).unwrap();
        assert_eq!(gates.operations.map(Percent::value), Some(80.0));
        assert_eq!(gates.fields.map(Percent::value), Some(25.0));
        assert_eq!(gates.statuses, None);
        assert!(gates.exclude_deprecated);
        assert_eq!(gates.exclude, ["GET /health", "getMetrics"]);
        config.apply_environment([("Kit__Coverage__Gates__Statuses", "150")]);
        let error = CoverageGates::from_configuration(&config)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("Kit:Coverage:Gates:Statuses") && error.contains("150"),
            "{error}"
        );
    }
}
