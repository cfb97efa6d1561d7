use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use kit_core::report::{Report, ReportSection};
use kit_core::{Collector, Event};

use crate::{ByRoute, Exchange, ExchangeKind};

/// Calls of one endpoint: a method and a route template.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EndpointCoverage {
    /// The HTTP method, upper case.
    pub method: String,
    /// The route template (`/orders/{id}`).
    pub route: String,
    /// How many responses were seen.
    pub calls: u64,
    /// How many responses of each status were seen.
    pub statuses: BTreeMap<u16, u64>,
}

/// REST coverage: one item per endpoint called, from `http.response` observations.
///
/// It lists only what it saw: an endpoint never called is absent (the OpenAPI collector is
/// the one that knows what exists).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestCoverageCollector {
    endpoints: ByRoute<EndpointCoverage>,
}

impl RestCoverageCollector {
    /// The category the items belong to in reports.
    pub const CATEGORY: &'static str = "REST";

    /// A collector that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Endpoints seen, ordered by route then method.
    pub fn endpoints(&self) -> impl Iterator<Item = &EndpointCoverage> {
        self.endpoints.ordered().map(|(_, _, endpoint)| endpoint)
    }

    /// Total responses seen.
    pub fn calls(&self) -> u64 {
        self.endpoints().map(|e| e.calls).sum()
    }
}

impl Collector for RestCoverageCollector {
    fn on_event(&mut self, event: &Event) {
        let Some(Exchange {
            kind: ExchangeKind::Response,
            method,
            route,
            status,
            ..
        }) = Exchange::of(event)
        else {
            return;
        };
        if route.is_empty() {
            return;
        }
        let Some(entry) = self.endpoints.slot(route, method) else {
            return;
        };
        if entry.calls == 0 {
            entry.method = method.to_owned();
            entry.route = route.to_owned();
        }
        entry.calls += 1;
        *entry.statuses.entry(status).or_default() += 1;
    }

    fn write_report(&self, report: &mut Report) {
        // No metric: this collector knows only what was called, so there is no total to
        // cover (the OpenAPI collector has one).
        let mut section = ReportSection::new("rest.endpoints", Self::CATEGORY, "Requests per endpoint")
            .with_note(format!(
                "{} endpoints called, {} responses",
                self.endpoints().count(),
                self.calls()
            ))
            .with_columns(["Method", "Route", "Calls", "Statuses"]);
        for e in self.endpoints() {
            let statuses: Vec<String> = e
                .statuses
                .iter()
                .map(|(status, n)| format!("{status} ×{n}"))
                .collect();
            section = section.with_row([
                e.method.clone(),
                e.route.clone(),
                e.calls.to_string(),
                statuses.join(", "),
            ]);
        }
        report.sections.push(section);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kit_core::*;

    fn observation(name: &'static str, method: &str, route: &str, status: i64) -> Event {
        crate::observed(
            name,
            Attributes::new()
                .with(semconv::HTTP_REQUEST_METHOD, method)
                .with(semconv::HTTP_ROUTE, route)
                .with(semconv::HTTP_RESPONSE_STATUS_CODE, status),
        )
    }

    #[test]
    fn counts_calls_and_statuses_per_method_and_route_and_ignores_the_rest() {
        let mut c = RestCoverageCollector::new();
        for (m, r, s) in [
            ("GET", "/o/{id}", 200),
            ("GET", "/o/{id}", 404),
            ("POST", "/o", 201),
            ("GET", "/o/{id}", 200),
        ] {
            c.on_event(&observation(semconv::OBS_HTTP_RESPONSE, m, r, s));
        }
        c.on_event(&observation(semconv::OBS_HTTP_FAILURE, "GET", "/x", 0));
        let items: Vec<_> = c
            .endpoints()
            .map(|e| (e.method.as_str(), e.route.as_str(), e.calls))
            .collect();
        assert_eq!(items, [("POST", "/o", 1), ("GET", "/o/{id}", 3)]);
        let get = c.endpoints().nth(1).unwrap();
        assert_eq!(get.statuses, BTreeMap::from([(200, 2), (404, 1)]));
        assert_eq!(c.calls(), 4);
    }
}
