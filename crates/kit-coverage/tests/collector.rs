//! The OpenAPI collector fed events as the bus or `kit-cli`'s replay feeds them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kit_core::report::Report;
use kit_core::*;
use kit_coverage::{OpenApiCoverageCollector, OpenApiDocument};

const ORDERS: &str = r#"{"openapi":"3.0.3","paths":{
    "/orders/{id}":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{
        "type":"object","properties":{"id":{"type":"integer"},"total":{"type":"number"}}}}}}}}},
    "/legacy":{"get":{"deprecated":true,"responses":{"200":{}}}}}}"#;

fn collector() -> OpenApiCoverageCollector {
    OpenApiCoverageCollector::new(Arc::new(
        OpenApiDocument::from_str(ORDERS, "orders.json").unwrap(),
    ))
}

/// An observation of a `GET /orders/{id}` answered 200, with no parent: as a shape reads when
/// its request's response is not in the stream (a salvaged archive).
fn orders_observation(name: &'static str, attributes: Attributes) -> Event {
    Event {
        run_id: RunId::new("r").unwrap(),
        test_id: TestId::generate(),
        id: EventId::generate(),
        parent_id: None,
        sequence: 0,
        timestamp: Timestamp::now(),
        kind: EventKind::Observation(Observation::new(
            name,
            attributes
                .with(semconv::HTTP_REQUEST_METHOD, "GET")
                .with(semconv::HTTP_ROUTE, "/orders/{id}")
                .with(semconv::HTTP_RESPONSE_STATUS_CODE, 200),
        )),
    }
}

#[test]
fn deprecated_operations_leave_every_figure_only_when_asked() {
    assert_eq!(collector().coverage().operations.total, 2);
    let current = collector().exclude_deprecated();
    let coverage = current.coverage();
    assert_eq!(coverage.operations.total, 1);
    assert_eq!(coverage.statuses.total, 1);
    let excluded: Vec<(&str, bool)> = coverage
        .per_operation
        .iter()
        .map(|o| (o.path.as_str(), o.excluded))
        .collect();
    assert_eq!(excluded, [("/orders/{id}", false), ("/legacy", true)]);
    let mut report = Report::default();
    current.write_report(&mut report);
    let notes: Vec<&String> = report.sections.iter().flat_map(|s| &s.notes).collect();
    assert!(
        notes
            .iter()
            .any(|n| *n == "1 operation(s) excluded from every figure"),
        "{notes:?}"
    );
}

#[test]
fn a_shape_whose_response_was_not_seen_counts_its_declared_fields_only() {
    let mut collector = collector();
    let paths = ["$", "$.id", "$.undeclared"].map(String::from).to_vec();
    collector.on_event(&orders_observation(
        semconv::OBS_HTTP_CONTRACT_SHAPE,
        Attributes::new().with(semconv::CONTRACT_MATCHED_PATHS, paths),
    ));
    let coverage = collector.coverage();
    assert_eq!((coverage.fields.covered, coverage.fields.total), (1, 2));
    let response = &coverage.per_operation[0].responses[0];
    assert_eq!(response.asserted, ["$.id"]);
    assert_eq!(response.unasserted, ["$.total"]);
}
