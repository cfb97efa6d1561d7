//! Every assertion (should and should_not), every shape rule, every read and path rule, on
//! real responses from a loopback server. Failure messages are pinned with insta.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use kit_core::json::{ShapeOptions, json_value};
use kit_core::*;
use kit_rest::*;
use serde::Deserialize;
use serde_json::json;

mod common;
use common::serve;

fn api() -> Router {
    let order = json!({
        "id": 7, "sku": "A-1", "quantity": 2, "status": "placed",
        "lines": [ { "sku": "A-1", "qty": 2 }, { "sku": "B-2", "qty": 1 } ],
        "customer": { "name": "Ada", "tier": "gold" },
        "placed_at": "2026-11-22T10:00:00Z", "ref": "0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c",
        "note": null
    });
    Router::new()
        .route("/order", get(move || async move { axum::Json(order.clone()) }))
        .route(
            "/created",
            get(|| async {
                (
                    StatusCode::CREATED,
                    // Appended, not inserted: two Set-Cookie and two Vary headers.
                    axum::response::AppendHeaders([
                        (header::LOCATION, "/orders/7"),
                        (header::SET_COOKIE, "session=sess-0123456789; Path=/; HttpOnly"),
                        (header::SET_COOKIE, "theme=dark; Path=/"),
                        (header::CACHE_CONTROL, "no-store"),
                        (header::VARY, "Accept"),
                        (header::VARY, "Cookie"),
                    ]),
                    axum::Json(json!({ "id": 7 })),
                )
            }),
        )
        .route(
            "/redirect",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/new?x=1")]) }),
        )
        .route("/empty", get(|| async { StatusCode::NO_CONTENT }))
        .route(
            "/null",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "null") }),
        )
        .route("/text", get(|| async { "hello" }))
        .route(
            "/resume",
            // A parameter holding text beyond ASCII, as some servers name a download.
            get(|| async {
                let content_type =
                    header::HeaderValue::from_bytes("text/plain; name=\"résumé\"".as_bytes()).unwrap();
                ([(header::CONTENT_TYPE, content_type)], "hello")
            }),
        )
        // A build log, coloured for a terminal, as some APIs return one.
        .route(
            "/log",
            get(|| async { "build \x1b[31mfailed\x1b[0m\r\n\tat step 3\x07\x1b]0;owned\x07" }),
        )
        .route("/five-lines", get(|| async { "one\ntwo\nthree\nfour\nfive" }))
        .route("/six-lines", get(|| async { "one\ntwo\nthree\nfour\nfive\nsix" }))
        .route(
            "/broken",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "{\"a\": ") }),
        )
        .route(
            "/secret",
            get(|| async {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(
                        json!({ "error": "database down", "password": "db-pass-0123456789", "retry": true }),
                    ),
                )
            }),
        )
}

struct Fixture {
    run: KitRun,
    recording: RecordingCollector,
}

fn fixture() -> Fixture {
    // As the `kit` facade does: typed failures print their message.
    kit_core::install_panic_hook();
    kit_rest::register_panic_payloads();
    let base = serve(api());
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("shop", |app| {
        app.add_rest(|rest| {
            rest.capture_attachments(|_| {});
            rest.add_client().base_url(&base);
        });
    });
    let built = builder.build().unwrap();
    let recording = RecordingCollector::new();
    let run = KitRun::with_secrets(
        built.host,
        Bus::builder().collector(recording.clone()).start(),
        RunId::new("assertions").unwrap(),
        Arc::new(SecretRegistry::new()),
    );
    Fixture { run, recording }
}

impl Fixture {
    fn test(&self) -> KitExecutionContext {
        self.run
            .begin_test(TestStarted::new("shop::t").with_application(Some("shop".into())))
    }
}

/// The message of the failure `f` panics with (which must be one of the kit's errors).
fn failure(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the assertion should fail");
    if let Some(e) = payload.downcast_ref::<RestAssertionError>() {
        assert_eq!(e.message(), e.to_string(), "message() is what prints");
        return e.to_string();
    }
    if let Some(e) = payload.downcast_ref::<RestStatusAssertionError>() {
        return e.to_string();
    }
    panic!("not a kit failure: {}", kit_core::panic_message(&*payload));
}

/// The operations named `name` that `events` start, in order.
fn started<'e>(events: &'e [Event], name: &str) -> Vec<&'e OperationStarted> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::OperationStarted(op) if op.name == name => Some(op),
            _ => None,
        })
        .collect()
}

fn snapshot(name: &str, message: &str) {
    insta::with_settings!({
        filters => vec![
            (r"127\.0\.0\.1:\d+", "127.0.0.1:[port]"),
            (r"request [0-9a-f]{16}", "request [id]"),
        ],
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, message);
    });
}

// === status ===

#[tokio::test]
async fn have_http_status_holds_and_fails_with_the_body() {
    let f = fixture();
    let ctx = f.test();
    let created = ctx.rest().get("/created").await;
    created.should().have_http_status(StatusCode::CREATED);
    created.should_not().have_http_status(StatusCode::OK);
    let message = failure(|| {
        created.should().have_http_status(StatusCode::OK);
    });
    snapshot("status_failure", &message);
    let message = failure(|| {
        created.should_not().have_http_status(StatusCode::CREATED);
    });
    snapshot("status_failure_negated", &message);
    ctx.finish(TestOutcome::Passed).unwrap();
    // Passing and failing, each assertion records its display and both codes as numbers.
    // Display, expected, actual, held.
    type Recorded = (String, Option<i64>, Option<i64>, Option<bool>);
    let events = f.recording.events_of(ctx.test_id());
    let recorded: Vec<Recorded> = started(&events, semconv::OP_ASSERT_STATUS)
        .into_iter()
        .map(|op| {
            (
                op.display_name.clone(),
                op.attributes.get_i64(semconv::ASSERTION_EXPECTED),
                op.attributes.get_i64(semconv::ASSERTION_ACTUAL),
                op.attributes
                    .get(semconv::ASSERTION_RESULT)
                    .and_then(AttributeValue::as_bool),
            )
        })
        .collect();
    assert_eq!(
        recorded,
        [
            ("status 201 Created".to_owned(), Some(201), Some(201), Some(true)),
            ("not status 200 OK".to_owned(), Some(200), Some(201), Some(true)),
            ("status 200 OK".to_owned(), Some(200), Some(201), Some(false)),
            (
                "not status 201 Created".to_owned(),
                Some(201),
                Some(201),
                Some(false)
            ),
        ]
    );
}

#[tokio::test]
async fn a_status_failure_on_a_body_holding_a_password_shows_it_redacted() {
    let f = fixture();
    let ctx = f.test();
    let response = ctx.rest().get("/secret").await;
    let payload = catch_unwind(AssertUnwindSafe(|| {
        response.should().have_http_status(StatusCode::OK);
    }))
    .unwrap_err();
    let error = payload
        .downcast_ref::<RestStatusAssertionError>()
        .expect("the typed error is the payload");
    assert_eq!(
        (error.expected, error.actual, error.negated),
        (StatusCode::OK, StatusCode::INTERNAL_SERVER_ERROR, false)
    );
    assert_eq!(
        error.body,
        r#"{"error":"database down","password":"[REDACTED]","retry":true}"#
    );
    assert!(!error.to_string().contains("db-pass"));
    snapshot("status_failure_with_password", &error.to_string());
}

// === content type, headers, cookies, redirects ===

#[tokio::test]
async fn have_content_type_compares_the_media_type_without_parameters_ignoring_case() {
    let f = fixture();
    let ctx = f.test();
    let text = ctx.rest().get("/text").await;
    text.should()
        .have_content_type("TEXT/plain")
        .have_content_type("text/plain; charset=latin1");
    text.should_not().have_content_type("application/json");
    snapshot(
        "content_type_failure",
        &failure(|| {
            text.should().have_content_type("application/json");
        }),
    );
    snapshot(
        "content_type_failure_negated",
        &failure(|| {
            text.should_not().have_content_type("text/plain");
        }),
    );
    let empty = ctx.rest().get("/empty").await;
    assert!(
        failure(|| {
            empty.should().have_content_type("application/json");
        })
        .contains("Expected content type 'application/json', but the response has none.")
    );
}

/// A content type whose parameter holds text beyond ASCII is still the response's type: it
/// matches by its media type, and a failure shows it as it came.
#[tokio::test]
async fn have_content_type_reads_a_type_with_text_beyond_ascii_in_a_parameter() {
    let f = fixture();
    let ctx = f.test();
    let resume = ctx.rest().get("/resume").await;
    resume.should().have_content_type("text/plain");
    let message = failure(|| {
        resume.should().have_content_type("application/json");
    });
    assert!(
        message
            .contains(r#"Expected content type 'application/json', but it was 'text/plain; name="résumé"'."#),
        "{message}"
    );
    assert!(
        message.contains(r#"response: 200 OK, text/plain; name="résumé", 5 bytes"#),
        "{message}"
    );
}

/// A body quoted in a failure reaches the terminal escaped: its colours, bell and window
/// title are shown, not obeyed, and its carriage return cannot overwrite the line.
#[tokio::test]
async fn a_failure_shows_a_bodys_control_characters_escaped() {
    let f = fixture();
    let ctx = f.test();
    let log = ctx.rest().get("/log").await;
    let hidden = |m: &str| m.chars().any(|c| !matches!(c, '\n' | '\t') && c.is_control());
    let shown = r"build \u{1b}[31mfailed\u{1b}[0m";
    let status = failure(|| {
        log.should().have_http_status(StatusCode::CREATED);
    });
    assert!(!hidden(&status), "{status:?}");
    assert!(
        status.contains(&format!("{shown}\n\tat step 3\\u{{7}}\\u{{1b}}]0;owned\\u{{7}}")),
        "{status}"
    );
    let content_type = failure(|| {
        log.should().have_content_type("application/json");
    });
    assert!(!hidden(&content_type), "{content_type:?}");
    assert!(
        content_type.contains(&format!("body:     {shown}")),
        "{content_type}"
    );
    // Only the message escapes: the error's body field is the body as it came.
    let payload = catch_unwind(AssertUnwindSafe(|| {
        log.should().have_http_status(StatusCode::CREATED);
    }))
    .unwrap_err();
    let error = payload.downcast_ref::<RestStatusAssertionError>().unwrap();
    assert_eq!(error.body, log.content());
    assert!(error.body.contains("\x1b[31m"), "{:?}", error.body);
}

#[tokio::test]
async fn have_header_finds_response_and_content_headers() {
    let f = fixture();
    let ctx = f.test();
    let created = ctx.rest().get("/created").await;
    created
        .should()
        .have_header("cache-control")
        .have_header("Content-Type")
        .have_header("LOCATION");
    created.should_not().have_header("x-missing");
    snapshot(
        "header_failure",
        &failure(|| {
            created.should().have_header("x-missing");
        }),
    );
    snapshot(
        "header_failure_negated",
        &failure(|| {
            created.should_not().have_header("cache-control");
        }),
    );
}

#[tokio::test]
async fn have_header_value_matches_any_value_exactly() {
    let f = fixture();
    let ctx = f.test();
    let created = ctx.rest().get("/created").await;
    created
        .should()
        .have_header_value("vary", "Accept")
        .have_header_value("Vary", "Cookie");
    created.should_not().have_header_value("vary", "accept");
    snapshot(
        "header_value_failure",
        &failure(|| {
            created.should().have_header_value("vary", "Origin");
        }),
    );
    snapshot(
        "header_value_failure_missing",
        &failure(|| {
            created.should().have_header_value("x-request-id", "1");
        }),
    );
    // A sensitive header's values never show.
    let message = failure(|| {
        created.should().have_header_value("set-cookie", "nope");
    });
    assert!(
        message.contains(
            "Expected header 'set-cookie' to have value '[REDACTED]', but it was '[REDACTED]', '[REDACTED]'."
        ),
        "{message}"
    );
    assert!(!message.contains("sess-0123456789"));
}

#[tokio::test]
async fn have_cookie_finds_cookies_by_case_sensitive_name() {
    let f = fixture();
    let ctx = f.test();
    let created = ctx.rest().get("/created").await;
    created.should().have_cookie("session").have_cookie("theme");
    created.should_not().have_cookie("Session");
    snapshot(
        "cookie_failure",
        &failure(|| {
            created.should().have_cookie("SESSION");
        }),
    );
    let message = failure(|| {
        created.should_not().have_cookie("session");
    });
    assert!(
        message.contains("Expected cookie 'session' not to be set, but it was set to '[REDACTED]'."),
        "{message}"
    );
}

#[tokio::test]
async fn have_cookie_value_compares_the_value_before_its_attributes() {
    let f = fixture();
    let ctx = f.test();
    let created = ctx.rest().get("/created").await;
    created
        .should()
        .have_cookie_value("theme", "dark")
        .have_cookie_value("session", "sess-0123456789");
    created.should_not().have_cookie_value("theme", "light");
    let message = failure(|| {
        created.should().have_cookie_value("theme", "light");
    });
    snapshot("cookie_value_failure", &message);
}

#[tokio::test]
async fn have_redirect_location_compares_location_as_it_arrived() {
    let f = fixture();
    let ctx = f.test();
    let redirect = ctx.rest().get("/redirect").await;
    redirect
        .should()
        .have_http_status(StatusCode::FOUND)
        .have_redirect_location("/new?x=1");
    redirect
        .should_not()
        .have_redirect_location("http://127.0.0.1/new?x=1");
    snapshot(
        "redirect_failure",
        &failure(|| {
            redirect.should().have_redirect_location("/new");
        }),
    );
    let text = ctx.rest().get("/text").await;
    assert!(
        failure(|| {
            text.should().have_redirect_location("/x");
        })
        .contains("but the response has no Location header (status 200 OK)")
    );
}

// === shapes ===

#[tokio::test]
async fn match_shape_rules_on_a_real_response() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    // Partial objects, case-insensitive names, arrays in full, matchers.
    order
        .should()
        .match_shape(json!({ "ID": 7, "sku": "A-1" }))
        .match_shape(json!({ "lines": [ { "sku": "A-1" }, { "sku": "B-2" } ] }))
        .match_shape(json!({
            "id": json_value::not_null(), "quantity": json_value::greater_than(0),
            "placed_at": json_value::date_time(), "ref": json_value::uuid(),
            "lines": json_value::each(json!({ "qty": json_value::between(1, 9) })),
            "discount": json_value::absent(), "note": json_value::not(json_value::absent()),
        }));
    // Arrays are exact.
    assert!(
        failure(|| {
            order
                .should()
                .match_shape(json!({ "lines": [ { "sku": "A-1" } ] }));
        })
        .contains("[$.lines]: array length differs. (Expected: 1 item(s), Actual: 2 item(s))")
    );
    // Case-sensitive on request.
    let sensitive = ShapeOptions {
        case_sensitive: true,
        ..ShapeOptions::default()
    };
    assert!(
        failure(|| {
            order.should().match_shape_with(json!({ "ID": 7 }), &sensitive);
        })
        .contains("[$.ID]: property is missing.")
    );
    // Exact mode flags every unlisted field.
    let message = failure(|| {
        order.should().match_shape_exact(json!({ "id": 7, "sku": "A-1" }));
    });
    assert!(
        message.starts_with("GET /order - Shape mismatch failed with 7 error(s):"),
        "{message}"
    );
}

/// A response's first shape is matched on the body's text, without a `Value`; what comes after
/// it (reads, more shapes, a failure) reads the body as before.
#[tokio::test]
async fn a_shape_matched_on_the_text_leaves_reads_and_later_shapes_whole() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    order.should().match_shape(
        json!({ "ID": 7, "lines": json_value::each(json!({ "sku": json_value::any_string() })) }),
    );
    assert_eq!(order.read_as_json_at::<u64>("$.id"), Some(7));
    assert!(
        failure(|| {
            order.should().match_shape(json!({ "id": 8 }));
        })
        .contains("[$.id]: values differ. (Expected: 8, Actual: 7)")
    );
    let again = ctx.rest().get("/order").await;
    assert!(
        failure(|| {
            again.should().match_shape(json!({ "id": 8 }));
        })
        .contains("[$.id]: values differ. (Expected: 8, Actual: 7)")
    );
    again.should().match_shape(json!({ "id": 7 }));
    assert_eq!(
        again.read_as_json_at::<String>("$.lines[1].sku").as_deref(),
        Some("B-2")
    );
}

#[tokio::test]
async fn a_seven_mismatch_shape_failure_lists_them_all_with_paths() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    let payload = catch_unwind(AssertUnwindSafe(|| {
        order.should().match_shape(json!({
            "id": 8,
            "sku": json_value::matches("^B-"),
            "quantity": json_value::greater_than(5),
            "status": json_value::one_of(["shipped", "delivered"]),
            "lines": [ { "sku": "A-1", "qty": 3 }, { "sku": "C-3" } ],
            "customer": { "tier": "platinum" },
        }));
    }))
    .unwrap_err();
    let error = payload.downcast_ref::<RestAssertionError>().unwrap();
    let mismatch = error.shape_mismatch().expect("the source is the shape mismatch");
    assert_eq!(mismatch.mismatches.len(), 7);
    let source = std::error::Error::source(error).unwrap().to_string();
    assert!(
        source.starts_with("Shape mismatch failed with 7 error(s):"),
        "{source}"
    );
    assert!(mismatch.matched_properties.contains(&"$.lines[0].sku".to_owned()));
    // The bus delivers on its own thread: what the collector holds is complete once flushed.
    ctx.flush().unwrap();
    let events = f.recording.events_of(ctx.test_id());
    let shape_op = &started(&events, semconv::OP_ASSERT_JSON_SHAPE)[0].attributes;
    assert_eq!(
        shape_op
            .get(semconv::ASSERTION_RESULT)
            .and_then(AttributeValue::as_bool),
        Some(false)
    );
    assert_eq!(
        shape_op
            .get(semconv::ASSERTION_MISMATCHES)
            .and_then(AttributeValue::as_str_list)
            .map(<[String]>::len),
        Some(7)
    );
    assert!(
        shape_op
            .get_str(semconv::ASSERTION_ACTUAL)
            .unwrap()
            .starts_with("{\"id\":7,")
    );
    assert!(
        shape_op
            .get_str(semconv::ASSERTION_EXPECTED)
            .unwrap()
            .contains("\"platinum\"")
    );
    snapshot("shape_failure_many", &error.to_string());
}

#[tokio::test]
async fn a_shape_mismatch_under_a_sensitive_name_hides_both_values() {
    let f = fixture();
    let ctx = f.test();
    let secret = ctx.rest().get("/secret").await;
    let message = failure(|| {
        secret
            .should()
            .match_shape(json!({ "password": "guess-0123456789", "error": "fine" }));
    });
    assert!(
        message.contains("- [$.password]: values differ. (Expected: [REDACTED], Actual: [REDACTED])"),
        "{message}"
    );
    assert!(
        message.contains("- [$.error]: values differ. (Expected: \"fine\", Actual: \"database down\")"),
        "{message}"
    );
    assert!(!message.contains("db-pass") && !message.contains("guess-0123456789"));
}

#[tokio::test]
async fn a_shape_on_a_body_that_is_not_json_says_so() {
    let f = fixture();
    let ctx = f.test();
    let text = ctx.rest().get("/text").await;
    assert!(
        failure(|| {
            text.should().match_shape(json!({ "a": 1 }));
        })
        .contains("[$]: the response body is not JSON (expected value at line 1 column 1).")
    );
    let empty = ctx.rest().get("/empty").await;
    assert!(
        failure(|| {
            empty.should().match_shape(json!({}));
        })
        .contains("[$]: the response body is empty.")
    );
}

#[tokio::test]
async fn expect_awaits_matches_and_returns_the_response() {
    let f = fixture();
    let ctx = f.test();
    let response = ctx.rest().get("/order").expect(json!({ "sku": "A-1" })).await;
    assert_eq!(response.status_code(), StatusCode::OK);
    ctx.rest().get("/created").expect_exact(json!({ "id": 7 })).await;
    let failed = tokio::spawn({
        let ctx = ctx.clone();
        async move {
            ctx.rest().get("/created").expect_exact(json!({})).await;
        }
    })
    .await
    .unwrap_err();
    let payload = failed.into_panic();
    let error = payload.downcast_ref::<RestAssertionError>().unwrap();
    assert!(
        error.to_string().contains("[$.id]: unexpected property."),
        "{error}"
    );
}

// === events and attachments ===

#[tokio::test]
async fn a_request_with_a_status_and_a_shape_assertion_is_one_tree() {
    let f = fixture();
    let ctx = f.test();
    ctx.rest()
        .get("/order")
        .await
        .should()
        .have_http_status(StatusCode::OK)
        .match_shape(json!({ "id": 7, "lines": [ { "sku": "A-1" }, {} ] }));
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        f.recording.tree(ctx.test_id()),
        "test\n  http.request\n    http.response\n    rest-01-response\n    assert.http.status\n    assert.json.shape\n    rest-01-expected-shape\n    http.contract.shape\n"
    );
    let events = f.recording.events_of(ctx.test_id());
    let contract = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_CONTRACT_SHAPE => {
                Some(o.attributes.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(
        contract
            .get(semconv::CONTRACT_MATCHED_PATHS)
            .and_then(AttributeValue::as_str_list)
            .unwrap(),
        ["$.id", "$.lines[0].sku", "$.lines[0]", "$.lines[1]", "$.lines"]
    );
    assert_eq!(contract.get_i64(semconv::HTTP_RESPONSE_STATUS_CODE), Some(200));
    assert_eq!(contract.get_str(semconv::HTTP_ROUTE), Some("/order"));
    let status = started(&events, semconv::OP_ASSERT_STATUS)[0];
    // The codes are numbers, as a failing status assertion records them.
    assert_eq!(status.attributes.get_i64(semconv::ASSERTION_EXPECTED), Some(200));
    assert_eq!(status.attributes.get_i64(semconv::ASSERTION_ACTUAL), Some(200));
    assert_eq!(status.display_name, "status 200 OK");
    assert_eq!(
        status.attributes.get_str(semconv::KIT_CLIENT),
        Some("shop:Default")
    );
}

#[tokio::test]
async fn negated_assertions_are_marked_and_repeated_shapes_numbered() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    order.should_not().have_http_status(StatusCode::NOT_FOUND);
    order
        .should()
        .match_shape(json!({ "id": 7 }))
        .match_shape(json!({ "sku": "A-1" }))
        .match_shape(json!({}));
    ctx.finish(TestOutcome::Passed).unwrap();
    let events = f.recording.events_of(ctx.test_id());
    let negated = started(&events, semconv::OP_ASSERT_STATUS)[0];
    assert_eq!(negated.display_name, "not status 404 Not Found");
    assert_eq!(negated.attributes.get_i64(semconv::ASSERTION_EXPECTED), Some(404));
    assert_eq!(negated.attributes.get_i64(semconv::ASSERTION_ACTUAL), Some(200));
    let negated = &negated.attributes;
    assert_eq!(
        negated
            .get(semconv::ASSERTION_NEGATED)
            .and_then(AttributeValue::as_bool),
        Some(true)
    );
    let names: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Attachment(a) if a.name.contains("shape") => Some(a.name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        [
            "rest-01-expected-shape",
            "rest-01-expected-shape-02",
            "rest-01-expected-shape-03"
        ]
    );
}

#[tokio::test]
async fn a_failure_shows_the_first_five_lines_of_the_body_and_marks_the_rest() {
    let f = fixture();
    let ctx = f.test();
    let five = ctx.rest().get("/five-lines").await;
    let message = failure(|| {
        five.should().have_header("x-missing");
    });
    assert!(
        message.ends_with(
            "body:     one\n            two\n            three\n            four\n            five"
        ),
        "{message}"
    );
    let six = ctx.rest().get("/six-lines").await;
    let message = failure(|| {
        six.should().have_header("x-missing");
    });
    assert!(
        message.ends_with("            five\n            …"),
        "{message:?}"
    );
    assert!(!message.contains("\n            six"), "{message}");
}

// === reads ===

#[derive(Deserialize, Debug, PartialEq)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Order {
    #[serde(rename = "ID")]
    id: u64,
    sku: String,
    lines: Vec<Line>,
    note: Option<String>,
}

#[tokio::test]
async fn reads_bind_case_insensitively_and_by_path() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    let read: Order = order.read_as_json().unwrap();
    assert_eq!(
        (read.id, read.sku.as_str(), read.lines.len(), read.note),
        (7, "A-1", 2, None)
    );
    assert_eq!(
        order.read_as_json_at::<String>("$.lines[1].sku"),
        Some("B-2".into())
    );
    assert_eq!(
        order.read_as_json_at::<String>("lines[0].sku"),
        Some("A-1".into()),
        "a leading member without $"
    );
    assert_eq!(
        order.read_as_json_at::<Line>("$.lines[0]"),
        Some(Line {
            sku: "A-1".into(),
            qty: 2
        })
    );
    assert_eq!(order.read_as_json_at::<String>("$.note"), None);
    assert_eq!(order.read_required::<Order>().id, 7);
    assert_eq!(order.read_required_at::<u32>("$.quantity"), 2);
    assert_eq!(order.read_as_dynamic()["customer"]["tier"], "gold");
    assert_eq!(order.read_as_bytes(), order.content_bytes().to_vec());
    #[derive(Deserialize, Debug, PartialEq)]
    struct Summary {
        id: u64,
        sku: String,
    }
    // The definition's values are ignored: it only gives the type.
    let summary = order
        .read_as_anonymous(Summary {
            id: 0,
            sku: String::new(),
        })
        .unwrap();
    assert_eq!(
        summary,
        Summary {
            id: 7,
            sku: "A-1".into()
        }
    );
    #[derive(Deserialize, Debug, PartialEq)]
    struct Customer {
        name: String,
        tier: String,
    }
    assert_eq!(
        order.read_as_json_at::<Customer>("$.customer").unwrap().tier,
        "gold"
    );
}

#[tokio::test]
async fn empty_and_null_bodies_read_as_none_and_required_reads_fail_naming_the_request() {
    let f = fixture();
    let ctx = f.test();
    let empty = ctx.rest().get("/empty").await;
    let null = ctx.rest().get("/null").await;
    assert_eq!(empty.read_as_json::<Order>(), None);
    assert_eq!(null.read_as_json::<Order>(), None);
    assert_eq!(empty.read_as_json_at::<u8>("$.a"), None);
    assert_eq!(empty.read_as_dynamic(), serde_json::Value::Null);
    let id = empty.request_id();
    let message = failure(|| {
        empty.read_required::<Order>();
    });
    assert!(
        message.starts_with(&format!(
            "GET /empty - The response body is empty; expected assertions::Order (request {id})."
        )),
        "{message}"
    );
    snapshot(
        "read_required_null",
        &failure(|| {
            null.read_required::<Order>();
        }),
    );
    let order = ctx.rest().get("/order").await;
    let message = failure(|| {
        order.read_required_at::<String>("$.note");
    });
    assert!(
        message.starts_with(
            "GET /order - The JSON path '$.note' holds null; expected alloc::string::String (request "
        ),
        "{message}"
    );
    let message = failure(|| {
        empty.read_required_at::<u32>("$.x");
    });
    assert!(
        message.contains("The response body is empty, so the JSON path '$.x' holds nothing"),
        "{message}"
    );
}

#[tokio::test]
async fn a_path_that_does_not_match_fails_with_the_path_error_as_source() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    let payload = catch_unwind(AssertUnwindSafe(|| {
        order.read_as_json_at::<String>("$.lines[5].sku");
    }))
    .unwrap_err();
    let error = payload.downcast_ref::<RestAssertionError>().unwrap();
    assert_eq!(
        error.path_error().unwrap().reason,
        "$.lines has 2 element(s), so no index 5"
    );
    snapshot("path_failure", &error.to_string());
    for (path, says) in [
        ("$.lines[?(@.qty>1)]", "filters are not supported"),
        ("$.lines[*].sku", "wildcards are not supported"),
        ("$['sku']", "quoted names are not supported"),
        ("$.lines[0:1]", "slices are not supported"),
        ("$.SKU", "members are case-sensitive; it has 'sku'"),
    ] {
        let message = failure(|| {
            order.read_as_json_at::<serde_json::Value>(path);
        });
        assert!(
            message.starts_with(&format!("GET /order - The JSON path '{path}' did not match: ")),
            "{message}"
        );
        assert!(message.contains(says), "{path}: {message}");
    }
}

#[tokio::test]
async fn a_wrong_type_fails_with_serdes_error_and_records_deserialize() {
    let f = fixture();
    let ctx = f.test();
    let order = ctx.rest().get("/order").await;
    let payload = catch_unwind(AssertUnwindSafe(|| {
        order.read_as_json_at::<u32>("$.sku");
    }))
    .unwrap_err();
    let error = payload.downcast_ref::<RestAssertionError>().unwrap();
    assert!(error.to_string().starts_with("GET /order - The JSON at '$.sku' cannot be read as u32: invalid type: string \"A-1\", expected u32."), "{error}");
    let source = std::error::Error::source(error).unwrap();
    assert!(source.downcast_ref::<serde_json::Error>().is_some());
    let broken = ctx.rest().get("/broken").await;
    assert!(failure(|| {
        broken.read_as_dynamic();
    })
    .contains("The response body is not JSON, so it cannot be read as serde_json::Value: EOF while parsing a value"));
    ctx.finish(TestOutcome::Passed).unwrap();
    let deserialize: Vec<Attributes> = f
        .recording
        .events_of(ctx.test_id())
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_RESPONSE_DESERIALIZE => {
                Some(o.attributes)
            }
            _ => None,
        })
        .collect();
    assert_eq!(deserialize.len(), 2);
    assert_eq!(deserialize[0].get_str(semconv::TARGET_TYPE), Some("u32"));
    assert_eq!(deserialize[0].get_str(semconv::JSON_PATH), Some("$.sku"));
    assert!(deserialize[0].get_i64(semconv::CONTENT_LENGTH).unwrap() > 100);
}
