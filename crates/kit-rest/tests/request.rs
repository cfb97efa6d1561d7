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
        .route(
            "/chunked",
            // The same 4 096 bytes in four chunks, with no Content-Length.
            get(|| async {
                let chunk = axum::body::Bytes::from(vec![b'x'; 1024]);
                axum::body::Body::from_stream(futures_util::stream::iter(
                    [chunk.clone(), chunk.clone(), chunk.clone(), chunk].map(Ok::<_, std::io::Error>),
                ))
            }),
        )
        .route(
            "/slow",
            get(|| async {
                // The server has a thread of its own: blocking it delays only this answer.
                std::thread::sleep(std::time::Duration::from_millis(30));
                "late"
            }),
        )
}

/// Answers every request with the path it was sent to.
fn echo() -> Router {
    Router::new().fallback(|uri: axum::http::Uri| async move { format!("path={}", uri.path()) })
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
    assert_eq!(
        obs.attributes.get_str(semconv::NETWORK_PROTOCOL_VERSION),
        Some("1.1")
    );
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
    let (_run, recording, ctx) = client_at("orders", &format!("{base}/api"));
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
    let (_run, recording, ctx) = client_at("down", &format!("http://127.0.0.1:{port}"));
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

/// A run whose application `app` has one client based at `base`, and a test of it.
fn client_at(app: &str, base: &str) -> (KitRun, RecordingCollector, KitExecutionContext) {
    let (run, recording) = run_with(|kit| {
        kit.add_application(app, |application| {
            application.add_rest(|rest| {
                rest.add_client().base_url(base);
            });
        });
    });
    let ctx = ctx_for(&run, app);
    (run, recording, ctx)
}

/// [`client_at`] the orders server.
fn orders_test() -> (KitRun, RecordingCollector, KitExecutionContext) {
    client_at("orders", &serve(orders()))
}

#[tokio::test]
async fn what_cannot_be_sent_fails_the_request_naming_it_and_the_first_problem_wins() {
    let (_run, recording, ctx) = orders_test();
    let keys_not_strings: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let cases = [
        (
            ctx.rest().header("bad name", "x"),
            r#""bad name" is not a valid header name"#,
        ),
        (
            ctx.rest().header("x-ok", "line\nbreak"),
            r#"the value of header "x-ok" is not a valid header value"#,
        ),
        (
            ctx.rest().bytes(vec![1u8], "text/\nplain"),
            r#"the content type "text/\nplain" is not a valid header value"#,
        ),
        (
            ctx.rest().body(&keys_not_strings),
            "the body does not serialize to JSON: key must be a string",
        ),
        (
            ctx.rest().form(&serde_json::json!({ "a": { "b": 1 } })),
            "the form does not serialize: unsupported value",
        ),
        (
            ctx.rest().header("bad name", "x").header("x-ok", "\n"),
            r#""bad name" is not a valid header name"#,
        ),
    ];
    for (builder, problem) in cases {
        let err = builder.get("/api/orders/1").try_send().await.unwrap_err();
        assert!(matches!(err, RestError::InvalidRequest { .. }), "{err:?}");
        assert_eq!(err.to_string(), format!("GET /api/orders/1 - {problem}"));
    }
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        recording.tree(ctx.test_id()),
        format!("test\n{}", "  http.failure\n".repeat(6)),
        "nothing was sent"
    );
}

/// Text beyond ASCII in a header value (the builder's and a sensitive one's; a scheme's in
/// `auth.rs`) goes out as its UTF-8 bytes and is recorded as that text; `http` 1.6's
/// `TryFrom<&str>` refuses it, so the kit must not build values that way.
#[tokio::test]
async fn a_header_value_beyond_ascii_goes_out_as_its_utf8_bytes() {
    let router = Router::new().fallback(|headers: axum::http::HeaderMap| async move {
        let raw = |name: &str| {
            headers
                .get(name)
                .map(|v| v.as_bytes().to_vec())
                .unwrap_or_default()
        };
        [raw("x-name"), raw("x-vault-token")].join(&b'|')
    });
    let (_run, recording, ctx) = client_at("orders", &serve(router));
    let sent = ctx
        .rest()
        .header("x-name", "José ✓\tnaïve")
        .sensitive_header("x-vault-token", "clé-secrète-0123456789")
        .get("/who")
        .await;
    assert_eq!(
        sent.content(),
        "José ✓\tnaïve|clé-secrète-0123456789",
        "the server saw other bytes"
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    let recorded = recording
        .events_of(ctx.test_id())
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => Some(op.attributes),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        recorded.get_str("http.request.header.x-name"),
        Some("José ✓\tnaïve")
    );
    assert_eq!(
        recorded.get_str("http.request.header.x-vault-token"),
        Some("[REDACTED]")
    );
}

#[tokio::test]
async fn an_absolute_url_goes_where_it_says_and_a_route_with_a_colon_stays_under_the_base() {
    let elsewhere = serve(echo());
    let base = serve(echo());
    let (run, recording) = run_with(|kit| {
        kit.add_application("echo", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&format!("{base}/v1"));
            });
        });
    });
    let ctx = ctx_for(&run, "echo");
    let away = ctx.rest().get(&format!("{elsewhere}/elsewhere?x=1")).await;
    assert_eq!(away.content(), "path=/elsewhere");
    assert_eq!(away.url(), format!("{elsewhere}/elsewhere?x=1"));
    // A custom method (`books:archive`) parses as a URL with a scheme and no host: it is a
    // route like any other.
    let custom = ctx.rest().post("books:archive").await;
    assert_eq!(custom.content(), "path=/v1/books:archive");
    ctx.finish(TestOutcome::Passed).unwrap();
    let routes: Vec<String> = recording
        .events_of(ctx.test_id())
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op) => op.attributes.get_str(semconv::HTTP_ROUTE).map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(routes, ["/elsewhere", "books:archive"]);
}

#[tokio::test]
async fn a_body_of_exactly_the_limit_is_read_whole_with_or_without_a_length() {
    let base = serve(orders());
    for (limit, fits) in [(4096, true), (4095, false)] {
        let mut config = Configuration::new();
        config.set("Kit:Rest:Responses:MaxResponseBodyBytes", limit.to_string());
        let (run, _) = run_with(|kit| {
            *kit.configuration_mut() = config;
            kit.add_application("orders", |app| {
                app.add_rest(|rest| {
                    rest.add_client().base_url(&base);
                });
            });
        });
        let ctx = ctx_for(&run, "orders");
        for route in ["/big", "/chunked"] {
            let result = ctx.rest().get(route).try_send().await;
            if fits {
                assert_eq!(result.unwrap().content_bytes().len(), 4096, "{route}");
            } else {
                let err = result.unwrap_err();
                assert!(
                    matches!(err, RestError::BodyTooLarge { limit: 4095, .. }),
                    "{route}: {err:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_connection_closed_inside_the_body_is_a_body_failure() {
    // Promises 100 bytes, sends 5, closes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        let (stream, _) = listener.accept().unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
            line.clear();
        }
        (&stream)
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
            .unwrap();
    });
    let (_run, recording, ctx) = client_at("cut", &format!("http://{address}"));
    let err = ctx.rest().get("/cut").try_send().await.unwrap_err();
    assert!(matches!(err, RestError::Transport { .. }), "{err:?}");
    ctx.finish(TestOutcome::Passed).unwrap();
    let kinds: Vec<String> = recording
        .events_of(ctx.test_id())
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_FAILURE => {
                o.attributes.get_str(semconv::ERROR_TYPE).map(str::to_owned)
            }
            EventKind::OperationEnded(end) => end.attributes.get_str(semconv::ERROR_TYPE).map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["body", "body"]);
}

#[tokio::test]
async fn a_request_and_its_response_say_what_they_are() {
    let (_run, recording, ctx) = orders_test();
    let builder = ctx.rest().header("x-a", "1").header("x-b", "2");
    let shown = format!("{builder:?}");
    assert!(
        shown.starts_with("RestRequestBuilder { client: Ok(") && shown.ends_with("headers: 2, .. }"),
        "{shown}"
    );
    let pending = builder.post("/api/orders");
    assert_eq!(format!("{pending:?}"), "PendingRequest(POST /api/orders)");
    let created = pending.await;
    assert_eq!(
        format!("{created:?}"),
        "RestResponse { request: POST /api/orders, status: 201, body_len: 8, .. }"
    );
    assert!(created.is_success_status_code());
    assert!(!ctx.rest().get("/nowhere").await.is_success_status_code());
    let slow = ctx.rest().get("/slow").await;
    assert!(
        slow.elapsed_time() >= std::time::Duration::from_millis(30),
        "{:?}",
        slow.elapsed_time()
    );

    // A failure names the request's method; the assertion is recorded by the request's client.
    let message = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        created.should().have_http_status(http::StatusCode::OK);
    }))
    .unwrap_err()
    .downcast::<RestStatusAssertionError>()
    .unwrap()
    .to_string();
    assert!(message.contains("\n  request:  POST http://"), "{message}");
    ctx.finish(TestOutcome::Passed).unwrap();
    let entities: Vec<(String, Option<String>)> = recording
        .events_of(ctx.test_id())
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op) => {
                Some((op.name.into_owned(), op.entity.as_deref().map(str::to_owned)))
            }
            _ => None,
        })
        .collect();
    let client = Some("client:reqwest::Client:Rest:orders:Default".to_owned());
    assert_eq!(
        entities.last(),
        Some(&(semconv::OP_ASSERT_STATUS.to_owned(), client.clone()))
    );
    assert!(
        entities.iter().all(|(_, entity)| *entity == client),
        "{entities:?}"
    );
}
