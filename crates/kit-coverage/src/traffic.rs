use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use kit_core::json::fold_indices_into;
use kit_core::report::{Metric, Report, ReportSection};
use kit_core::{Collector, Event, semconv};

use crate::fields::FieldTree;
use crate::{ByRoute, Exchange, ExchangeKind};

/// Traffic of one endpoint answering one status: fields its bodies held, fields tests asserted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TrafficCoverage {
    /// The HTTP method, upper case.
    pub method: String,
    /// The route template.
    pub route: String,
    /// The response status.
    pub status: u16,
    /// How many responses were seen.
    pub responses: u64,
    /// Fields seen in response bodies (`$.lines[].sku`).
    pub observed: BTreeSet<String>,
    /// Fields a shape assertion matched.
    pub asserted: BTreeSet<String>,
}

impl TrafficCoverage {
    /// Fields seen but never asserted: what a test could have checked and did not.
    pub fn unasserted(&self) -> impl Iterator<Item = &str> {
        self.observed
            .iter()
            .filter(|f| !self.asserted.contains(*f))
            .map(String::as_str)
    }

    /// Fields both seen and asserted.
    pub fn covered(&self) -> usize {
        self.observed.intersection(&self.asserted).count()
    }
}

/// Traffic coverage: per endpoint and status, the response fields observed and the ones a
/// shape assertion matched, from `http.response` bodies and `http.contract.shape` matched
/// paths. Its report lists the fields observed but never asserted.
///
/// Fields are read from the body the trace keeps (sanitized, and cut at the configured
/// limit), so a body longer than the limit contributes the fields before the cut. A redacted
/// value still counts as its field; the members of a redacted object do not.
///
/// ```
/// use kit_core::*;
/// use kit_coverage::RestTrafficCoverageCollector;
///
/// let observation = |name: &'static str, attributes: Attributes| Event {
///     run_id: RunId::new("r").unwrap(), test_id: TestId::generate(), id: EventId::generate(),
///     parent_id: None, sequence: 0, timestamp: Timestamp::now(),
///     kind: EventKind::Observation(Observation::new(name, attributes
///         .with(semconv::HTTP_REQUEST_METHOD, "GET")
///         .with(semconv::HTTP_ROUTE, "/orders/{id}")
///         .with(semconv::HTTP_RESPONSE_STATUS_CODE, 200))),
/// };
/// let mut traffic = RestTrafficCoverageCollector::default();
/// traffic.on_event(&observation(semconv::OBS_HTTP_RESPONSE, Attributes::new()
///     .with(semconv::KIT_RESPONSE_BODY, r#"{"id":7,"lines":[{"sku":"A"}]}"#)));
/// traffic.on_event(&observation(semconv::OBS_HTTP_CONTRACT_SHAPE, Attributes::new()
///     .with(semconv::CONTRACT_MATCHED_PATHS, ["$", "$.lines[0].sku", "$.lines[0]"].map(String::from).to_vec())));
/// let orders = traffic.endpoints().next().unwrap();
/// assert_eq!(orders.unasserted().collect::<Vec<_>>(), ["$.id", "$.lines"]);
/// // The root and array elements are not fields.
/// assert_eq!(orders.asserted.iter().collect::<Vec<_>>(), ["$.lines[].sku"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestTrafficCoverageCollector {
    endpoints: ByRoute<BTreeMap<u16, Entry>>,
}

/// An endpoint's coverage, and its field sets again, indexed for the lookups every body and
/// every shape make: in the ordered sets each lookup compared paths with long common prefixes
/// (`$.owner.login`, `$.owner.id`, …). Equal when the coverage is: the indexes follow from it.
#[derive(Debug, Clone)]
struct Entry {
    coverage: TrafficCoverage,
    observed: FieldTree,
    asserted: rustc_hash::FxHashSet<String>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.coverage == other.coverage
    }
}

impl Eq for Entry {}

impl RestTrafficCoverageCollector {
    /// The category of its report section.
    pub const CATEGORY: &'static str = "Traffic";

    /// A collector that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Endpoint × status entries, ordered by route, method, status.
    pub fn endpoints(&self) -> impl Iterator<Item = &TrafficCoverage> {
        self.endpoints
            .ordered()
            .flat_map(|(_, _, statuses)| statuses.values().map(|entry| &entry.coverage))
    }

    fn entry(&mut self, exchange: &Exchange<'_>) -> Option<&mut Entry> {
        let statuses = self.endpoints.slot(exchange.route, exchange.method)?;
        Some(statuses.entry(exchange.status).or_insert_with(|| Entry {
            coverage: TrafficCoverage {
                method: exchange.method.to_owned(),
                route: exchange.route.to_owned(),
                status: exchange.status,
                responses: 0,
                observed: BTreeSet::new(),
                asserted: BTreeSet::new(),
            },
            observed: FieldTree::default(),
            asserted: rustc_hash::FxHashSet::default(),
        }))
    }
}

impl Collector for RestTrafficCoverageCollector {
    fn on_event(&mut self, event: &Event) {
        let Some(exchange) = Exchange::of(event) else {
            return;
        };
        match exchange.kind {
            ExchangeKind::Response => {
                let body = exchange.attributes.get_str(semconv::KIT_RESPONSE_BODY);
                let Some(entry) = self.entry(&exchange) else {
                    return;
                };
                entry.coverage.responses += 1;
                if let Some(body) = body {
                    let observed = &mut entry.coverage.observed;
                    entry.observed.add_body(body, |field| {
                        observed.insert(field.to_owned());
                    });
                }
            }
            ExchangeKind::Shape => {
                if let Some(entry) = self.entry(&exchange) {
                    each_asserted_field(&exchange, |field| {
                        // A field asserted before costs no allocation.
                        if !entry.asserted.contains(field) {
                            entry.asserted.insert(field.to_owned());
                            entry.coverage.asserted.insert(field.to_owned());
                        }
                    });
                }
            }
        }
    }

    fn write_report(&self, report: &mut Report) {
        let observed: usize = self.endpoints().map(|e| e.observed.len()).sum();
        let covered: usize = self.endpoints().map(TrafficCoverage::covered).sum();
        let mut section = ReportSection::new(
            "traffic.fields",
            Self::CATEGORY,
            "Response fields observed but never asserted",
        )
        .with_metric(Metric::new("traffic fields", covered as u64, observed as u64))
        .with_columns([
            "Method",
            "Route",
            "Status",
            "Responses",
            "Asserted",
            "Never asserted",
        ]);
        for e in self.endpoints() {
            section = section.with_row([
                e.method.clone(),
                e.route.clone(),
                e.status.to_string(),
                e.responses.to_string(),
                format!("{}/{}", e.covered(), e.observed.len()),
                e.unasserted().collect::<Vec<_>>().join(", "),
            ]);
        }
        report.sections.push(section);
    }
}

/// Calls `visit` with each field a shape observation matched: its paths with indices folded,
/// members only. Each field is lent from one buffer, so a field the caller holds already costs
/// no allocation (two collectors see every shape).
pub(crate) fn each_asserted_field(exchange: &Exchange<'_>, mut visit: impl FnMut(&str)) {
    let Some(paths) = exchange
        .attributes
        .get(semconv::CONTRACT_MATCHED_PATHS)
        .and_then(|v| v.as_str_list())
    else {
        return;
    };
    let mut field = String::new();
    for path in paths {
        field.clear();
        fold_indices_into(path, &mut field);
        if field != "$" && !field.ends_with("[]") {
            visit(&field);
        }
    }
}
