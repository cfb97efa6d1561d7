//! The kit's coverage collectors, the OpenAPI engine they share, and coverage gates.
//!
//! Collectors are deterministic functions of the event stream: registered on the bus while
//! tests run, or replayed by `kit-cli` over an archive, they come to the same report.
//!
//! - [`RestCoverageCollector`]: one item per endpoint called (method and route template), with
//!   its number of calls and the statuses seen. It lists only what it saw.
//! - [`RestTrafficCoverageCollector`]: per endpoint and status, the response fields observed
//!   and those a shape assertion matched: what was seen but never asserted.
//! - [`OpenApiCoverageCollector`]: operations never called, declared statuses never seen,
//!   response fields never asserted, calls the document does not describe.
//!
//! Each writes its sections into a [`Report`](kit_core::report::Report); [`CoverageGates`]
//! read its metrics.
//!
//! ```
//! use kit_core::*;
//! use kit_coverage::RestCoverageCollector;
//!
//! let mut coverage = RestCoverageCollector::default();
//! # let event = |status: i64| Event {
//! #     run_id: RunId::new("r").unwrap(), test_id: TestId::generate(), id: EventId::generate(),
//! #     parent_id: None, sequence: 0, timestamp: Timestamp::now(),
//! #     kind: EventKind::Observation(Observation::new(semconv::OBS_HTTP_RESPONSE, Attributes::new()
//! #         .with(semconv::HTTP_REQUEST_METHOD, "GET")
//! #         .with(semconv::HTTP_ROUTE, "/orders/{id}")
//! #         .with(semconv::HTTP_RESPONSE_STATUS_CODE, status))),
//! # };
//! coverage.on_event(&event(200));
//! coverage.on_event(&event(404));
//! let endpoint = coverage.endpoints().next().unwrap();
//! assert_eq!((endpoint.method.as_str(), endpoint.route.as_str(), endpoint.calls), ("GET", "/orders/{id}", 2));
//! ```
#![deny(missing_docs)]

mod fields;
mod gates;
mod openapi;
mod rest;
mod router;
mod traffic;

pub use fields::body_fields;
pub use gates::{CoverageGates, GateFailure, Percent};
pub use openapi::{
    DeclaredResponse, MAX_MEMBER_DEPTH, MAX_REF_HOPS, OpenApiCoverage, OpenApiCoverageCollector,
    OpenApiDocument, OpenApiError, OpenApiVersion, Operation, OperationCoverage, Problem, ResponseCoverage,
    StatusKey, Undescribed,
};
pub use rest::{EndpointCoverage, RestCoverageCollector};
pub use router::RouteTable;
pub use traffic::{RestTrafficCoverageCollector, TrafficCoverage};

use kit_core::{Attributes, Event, EventKind, semconv};

/// What the collectors read from an observation about an HTTP exchange.
pub(crate) struct Exchange<'e> {
    pub(crate) kind: ExchangeKind,
    pub(crate) method: &'e str,
    /// The route template; empty when the event has none.
    pub(crate) route: &'e str,
    pub(crate) status: u16,
    /// The request's URL (responses only).
    pub(crate) url: Option<url::Url>,
    pub(crate) attributes: &'e Attributes,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExchangeKind {
    /// `http.response`.
    Response,
    /// `http.contract.shape`.
    Shape,
}

impl<'e> Exchange<'e> {
    pub(crate) fn of(event: &'e Event) -> Option<Self> {
        let EventKind::Observation(observation) = &event.kind else {
            return None;
        };
        let kind = match observation.name.as_ref() {
            semconv::OBS_HTTP_RESPONSE => ExchangeKind::Response,
            semconv::OBS_HTTP_CONTRACT_SHAPE => ExchangeKind::Shape,
            _ => return None,
        };
        let attributes = &observation.attributes;
        Some(Exchange {
            kind,
            method: attributes.get_str(semconv::HTTP_REQUEST_METHOD)?,
            route: attributes.get_str(semconv::HTTP_ROUTE).unwrap_or(""),
            status: attributes
                .get_i64(semconv::HTTP_RESPONSE_STATUS_CODE)
                .and_then(|s| u16::try_from(s).ok())?,
            url: attributes
                .get_str(semconv::URL_FULL)
                .and_then(|u| url::Url::parse(u).ok()),
            attributes,
        })
    }
}
