//! The first request, end to end on real loopback servers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::{get, post};
use kit_core::*;
use kit_rest::*;

mod common;
use common::serve;

fn orders() -> Router {
    Router::new()
        .route(
            "/api/orders",
            post(|| async {
                (
                    axum::http::StatusCode::CREATED,
                    [("location", "/api/orders/1")],
                    r#"{"id":1}"#,
                )
            }),
        )
        .route("/api/orders/{id}", get(|| async { "one" }))
        .route("/big", get(|| async { "x".repeat(4096) }))
}

fn run_with(configure: impl FnOnce(&mut KitBuilder)) -> (KitRun, RecordingCollector) {
    let mut builder = KitBuilder::new(Configuration::new());
    configure(&mut builder);
    let built = builder.build().unwrap();
    let recording = RecordingCollector::new();
    let bus = Bus::builder()
        .collector(recording.clone())
        .collectors(built.collectors)
        .start();
    (
        KitRun::new(built.host, bus, RunId::new("rest-tests").unwrap()),
        recording,
    )
}

fn ctx_for(run: &KitRun, app: &str) -> KitExecutionContext {
    run.begin_test(TestStarted::new("t").with_application(Some(app.into())))
}

#[tokio::test]
async fn a_request_records_its_operation_with_its_response_under_it() {
    let base = serve(orders());
    let mut config = Configuration::new();
    config.set("Kit:Applications:orders:BaseUrl", &base);
    config.set("Kit:Applications:orders:Endpoints:api", "/api");
    let (run, recording) = run_with(|kit| {
        *kit.configuration_mut() = config;
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().endpoint("api");
            });
        });
    });
    let ctx = ctx_for(&run, "orders");
    let response = ctx
        .rest()
        .header("x-trace", "1")
        .body(&serde_json::json!({ "sku": "A-1" }))
        .post("/orders")
        .await;
    assert_eq!(response.status_code(), http::StatusCode::CREATED);
    assert_eq!(response.content(), r#"{"id":1}"#);
    assert_eq!(response.headers().get("location").unwrap(), "/api/orders/1");
    assert!(response.content_headers().contains_key("content-type"));
    assert!(!response.headers().contains_key("content-type"));
    ctx.finish(TestOutcome::Passed).unwrap();

    assert_eq!(
        recording.tree(ctx.test_id()),
        "test\n  http.request\n    http.response\n"
    );
    let events = recording.events_of(ctx.test_id());
    let EventKind::OperationStarted(op) = &events[1].kind else {
        panic!("{:?}", events[1])
    };
    assert_eq!(op.display_name, "REST · POST /orders");
    assert_eq!(
        op.entity.as_deref(),
        Some("client:reqwest::Client:Rest:orders:Default")
    );
    assert_eq!(op.attributes.get_str(semconv::HTTP_REQUEST_METHOD), Some("POST"));
    assert_eq!(op.attributes.get_str(semconv::HTTP_ROUTE), Some("/orders"));
    assert_eq!(
        op.attributes.get_str(semconv::URL_FULL),
        Some(format!("{base}/api/orders").as_str())
    );
    assert_eq!(op.attributes.get_i64(semconv::KIT_REQUEST_HEADER_COUNT), Some(2));
    assert_eq!(response.request_id(), events[1].id);
    let EventKind::Observation(obs) = &events[2].kind else {
        panic!()
    };
    assert_eq!(
        obs.attributes.get_i64(semconv::HTTP_RESPONSE_STATUS_CODE),
        Some(201)
    );
    assert_eq!(obs.attributes.get_str(semconv::HTTP_ROUTE), Some("/orders"));
    let EventKind::OperationEnded(end) = &events[3].kind else {
        panic!()
    };
    assert_eq!((end.operation, &end.status), (events[1].id, &OperationStatus::Ok));
    assert_eq!(
        end.attributes.get_i64(semconv::HTTP_RESPONSE_STATUS_CODE),
        Some(201)
    );
}

#[tokio::test]
async fn a_path_template_is_recorded_and_the_filled_path_is_sent() {
    let base = serve(orders());
    let (run, recording) = run_with(|kit| {
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&format!("{base}/api"));
            });
        });
    });
    let ctx = ctx_for(&run, "orders");
    let response = ctx.rest().path_param("id", 7).get("/orders/{id}").await;
    assert_eq!(response.content(), "one");
    assert!(response.url().ends_with("/api/orders/7"), "{}", response.url());
    let err = ctx
        .rest()
        .get("/orders/{id}")
        .try_send()
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "GET /orders/{id} - the route token {id} has no value; give it one with .path_param(\"id\", …)"
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        recording.tree(ctx.test_id()),
        "test\n  http.request\n    http.response\n  http.failure\n"
    );
}

#[tokio::test]
async fn the_in_process_server_starts_once_for_every_test_and_roots_at_the_endpoint() {
    let starts = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&starts);
    let mut config = Configuration::new();
    config.set("Kit:Applications:orders:Endpoints:api", "/api");
    let (run, _) = run_with(move |kit| {
        *kit.configuration_mut() = config;
        kit.add_application("orders", move |app| {
            app.add_in_process_server(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                orders()
            });
            app.add_rest(|rest| {
                rest.add_client().endpoint("api");
            });
        });
    });
    for _ in 0..3 {
        let ctx = ctx_for(&run, "orders");
        let response = ctx.rest().path_param("id", 1).get("/orders/{id}").await;
        assert_eq!(response.content(), "one");
        assert!(response.url().starts_with("http://127.0.0.1:"));
        ctx.finish(TestOutcome::Passed).unwrap();
    }
    assert_eq!(starts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_configured_base_url_wins_and_the_in_process_server_is_never_started() {
    let base = serve(orders());
    let starts = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&starts);
    let mut config = Configuration::new();
    config.set("Kit:Applications:orders:BaseUrl", format!("{base}/api"));
    let (run, _) = run_with(move |kit| {
        *kit.configuration_mut() = config;
        kit.add_application("orders", move |app| {
            app.add_in_process_server(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                Router::new()
            });
            app.add_rest(|rest| {
                rest.add_client();
            });
        });
    });
    let ctx = ctx_for(&run, "orders");
    assert_eq!(
        ctx.rest().path_param("id", 1).get("/orders/{id}").await.content(),
        "one"
    );
    assert_eq!(starts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refused_connection_records_http_failure_and_ends_the_operation_in_error() {
    // Bind, note the port, close: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (run, recording) = run_with(|kit| {
        kit.add_application("down", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&format!("http://127.0.0.1:{port}"));
            });
        });
    });
    let ctx = ctx_for(&run, "down");
    let err = ctx.rest().get("/anything").try_send().await.unwrap_err();
    assert!(matches!(err, RestError::Transport { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "GET /anything - the request to http://127.0.0.1:{port}/anything failed: "
        )),
        "{text}"
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        recording.tree(ctx.test_id()),
        "test\n  http.request\n    http.failure\n"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_fails_naming_the_request_and_the_limit() {
    let base = serve(orders());
    let mut config = Configuration::new();
    config.set("Kit:Rest:Responses:MaxResponseBodyBytes", "1000");
    let (run, _) = run_with(move |kit| {
        *kit.configuration_mut() = config;
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&base);
            });
        });
    });
    let ctx = ctx_for(&run, "orders");
    let err = ctx.rest().get("/big").try_send().await.unwrap_err().to_string();
    assert!(
        err.starts_with("GET /big - the response body is larger than MaxResponseBodyBytes (1000 bytes)"),
        "{err}"
    );
}
