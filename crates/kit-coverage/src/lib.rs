//! The kit's coverage collectors.
//!
//! Collectors are deterministic functions of the event stream: registered on the bus while
//! tests run, or replayed by `kit-cli` over an archive, they come to the same result.
//!
//! - [`RestCoverageCollector`]: one item per endpoint called (method and route template), with
//!   its number of calls and the statuses seen. It lists only what it saw.
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

mod rest;

pub use rest::{EndpointCoverage, RestCoverageCollector};
