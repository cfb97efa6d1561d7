//! Attachments and REST's options, through real requests and the real archive writer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::Router;
use axum::http::header::SET_COOKIE;
use axum::routing::{get, post};
use kit_core::*;
use kit_rest::*;
use kit_trace::{ArchiveReader, TestRecord};

mod common;
use common::{ArchivedRun as Run, serve};

fn api() -> Router {
    Router::new()
        .route(
            "/login",
            post(|body: String| async move {
                (
                    [
                        (SET_COOKIE, "session=sess-0123456789; Path=/; HttpOnly"),
                        (SET_COOKIE, "theme=dark"),
                    ],
                    format!(r#"{{"token":"tok-abcdefghij","user":"ada","echo":{body:?}}}"#),
                )
            }),
        )
        .route("/items", get(|| async { r#"[{"id":1},{"id":2}]"# }))
}

/// A run whose host is made by `configure`, with the archive writer on its bus.
fn run_with(config: Configuration, configure: impl FnOnce(&mut KitBuilder)) -> Run {
    let mut builder = KitBuilder::new(config);
    configure(&mut builder);
    let built = builder.build().unwrap();
    Run::start(built.host, built.collectors, "attachments")
}

/// A run whose application `api` captures attachments with the default options.
fn capturing_run(base: &str) -> Run {
    run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.capture_attachments(|_| {});
                rest.add_client().base_url(base);
            });
        });
    })
}

fn tests_of(run: &Run) -> Vec<TestRecord> {
    ArchiveReader::open(&run.archive)
        .unwrap()
        .tests()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn attachments(record: &TestRecord) -> Vec<(String, String, Option<String>)> {
    record
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Attachment(a) => Some((a.name.clone(), a.media_type.clone(), a.description.clone())),
            _ => None,
        })
        .collect()
}

fn attachment_text(run: &Run, record: &TestRecord, name: &str) -> String {
    let attachment = record
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Attachment(a) if a.name == name => Some(a.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no attachment {name}"));
    let bytes = ArchiveReader::open(&run.archive)
        .unwrap()
        .attachment_bytes(&attachment)
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

async fn two_requests(run: &Run, name: &str) {
    two_requests_unfinished(run, name)
        .await
        .finish(TestOutcome::Passed)
        .unwrap();
}

/// The test `name` of the application `api`, signed in and with its items fetched.
async fn two_requests_unfinished(run: &Run, name: &str) -> KitExecutionContext {
    let ctx = run
        .run
        .begin_test(TestStarted::new(name).with_application(Some("api".into())));
    ctx.rest()
        .body(&serde_json::json!({ "user": "ada", "password": "pw-0123456789" }))
        .post("/login")
        .await;
    ctx.rest().get("/items").await;
    ctx
}

#[tokio::test]
async fn without_capture_attachments_nothing_is_attached_but_requests_are_traced() {
    let base = serve(api());
    let run = run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&base);
            });
        });
    });
    two_requests(&run, "quiet").await;
    // Expected shapes are attachments too, though each kind's own switch is on by default.
    let ctx = run
        .run
        .begin_test(TestStarted::new("quiet shape").with_application(Some("api".into())));
    let items = ctx.rest().get("/items").await;
    items
        .should()
        .match_shape(serde_json::json!([{ "id": 1 }, { "id": 2 }]));
    ctx.finish(TestOutcome::Passed).unwrap();
    let tests = tests_of(&run);
    assert_eq!(tests.len(), 2);
    assert!(tests.iter().all(|t| attachments(t).is_empty()));
    let requests = tests[0]
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST))
        .count();
    assert_eq!(requests, 2);
}

#[tokio::test]
async fn attachments_are_numbered_per_test_redacted_and_described() {
    let base = serve(api());
    let run = capturing_run(&base);
    // Two tests at once: each numbers its own requests from 1.
    tokio::join!(two_requests(&run, "first"), two_requests(&run, "second"));
    for record in tests_of(&run) {
        assert_eq!(
            attachments(&record),
            vec![
                (
                    "rest-01-request".into(),
                    "application/json; charset=utf-8".into(),
                    Some("POST /login".into())
                ),
                (
                    "rest-01-response".into(),
                    "text/plain; charset=utf-8".into(),
                    Some("200 OK".into())
                ),
                (
                    "rest-02-response".into(),
                    "text/plain; charset=utf-8".into(),
                    Some("200 OK".into())
                ),
            ],
            "{}",
            record.name
        );
        assert_eq!(
            attachment_text(&run, &record, "rest-01-request"),
            r#"{"user":"ada","password":"[REDACTED]"}"#
        );
        let response = attachment_text(&run, &record, "rest-01-response");
        assert!(
            response.starts_with(r#"{"token":"[REDACTED]","user":"ada","echo":"#),
            "{response}"
        );
        assert!(
            !response.contains("pw-0123456789"),
            "the echoed password is redacted by value: {response}"
        );
    }
}

#[tokio::test]
async fn events_carry_sanitized_headers_and_bodies() {
    let base = serve(api());
    let run = run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&base);
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    ctx.rest()
        .header("Authorization", "Bearer bearer-0123456789")
        .query("token", "query-0123456789")
        .form(&[("password", "form-0123456789"), ("user", "ada")])
        .post("/login")
        .await;
    ctx.finish(TestOutcome::Passed).unwrap();
    let record = &tests_of(&run)[0];
    let attrs = |name: &str| {
        record
            .events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::OperationStarted(op) if op.name == name => Some(op.attributes.clone()),
                EventKind::Observation(o) if o.name == name => Some(o.attributes.clone()),
                _ => None,
            })
            .unwrap()
    };
    let request = attrs(semconv::OP_HTTP_REQUEST);
    assert_eq!(
        request.get_str("http.request.header.authorization"),
        Some("[REDACTED]")
    );
    assert!(
        request
            .get_str(semconv::URL_FULL)
            .unwrap()
            .ends_with("/login?token=[REDACTED]")
    );
    assert_eq!(
        request.get_str(semconv::KIT_REQUEST_BODY),
        Some("password=[REDACTED]&user=ada")
    );
    let response = attrs(semconv::OBS_HTTP_RESPONSE);
    assert_eq!(
        response.get_str("http.response.header.set-cookie"),
        Some("[REDACTED]")
    );
    let body = response.get_str(semconv::KIT_RESPONSE_BODY).unwrap();
    assert!(
        body.starts_with(r#"{"token":"[REDACTED]""#) && !body.contains("form-0123456789"),
        "{body}"
    );
}

#[tokio::test]
async fn capture_switches_and_configuration_decide_what_is_attached() {
    let base = serve(api());
    let mut config = Configuration::new();
    // Configuration wins over the callback that turned responses off.
    config.set("Kit:Rest:Attachments:CaptureResponses", "true");
    let run = run_with(config, |kit| {
        kit.add_rest(|rest| {
            rest.capture_attachments(|o| o.capture_responses = false);
        });
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                // A later callback on an application still applies after the host's.
                rest.capture_attachments(|o| o.capture_request_bodies = false);
                rest.add_client().base_url(&base);
            });
        });
    });
    two_requests(&run, "switched").await;
    let names: Vec<String> = attachments(&tests_of(&run)[0]).into_iter().map(|a| a.0).collect();
    assert_eq!(names, ["rest-01-response", "rest-02-response"]);
}

#[tokio::test]
async fn attachment_callbacks_apply_in_registration_order_across_host_and_applications() {
    let base = serve(api());
    let run = run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.capture_attachments(|o| o.capture_responses = false);
                rest.add_client().base_url(&base);
            });
        });
        // Registered after the application's callback, so applied after it: responses again.
        kit.add_rest(|rest| {
            rest.capture_attachments(|o| o.capture_responses = true);
        });
    });
    two_requests(&run, "ordered").await;
    let names: Vec<String> = attachments(&tests_of(&run)[0]).into_iter().map(|a| a.0).collect();
    assert_eq!(names, ["rest-01-request", "rest-01-response", "rest-02-response"]);
}

#[tokio::test]
async fn response_options_are_first_wins_and_bind_from_kit_rest_responses() {
    let base = serve(api());
    let run = run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.configure_responses(|o| o.max_response_body_bytes = 10);
                rest.configure_responses(|o| o.max_response_body_bytes = 1_000_000);
                rest.add_client().base_url(&base);
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    let err = ctx.rest().get("/items").try_send().await.unwrap_err();
    assert!(
        err.to_string().contains("MaxResponseBodyBytes (10 bytes)"),
        "{err}"
    );

    let mut config = Configuration::new();
    config.set("Kit:Rest:Responses:MaxResponseBodyBytes", "5");
    let run = run_with(config, |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.configure_responses(|o| o.max_response_body_bytes = 1_000_000);
                rest.add_client().base_url(&base);
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    let err = ctx.rest().get("/items").try_send().await.unwrap_err();
    assert!(
        err.to_string().contains("MaxResponseBodyBytes (5 bytes)"),
        "{err}"
    );
}

/// A server that never answers fails its request at `Kit:Rest:Responses:TimeoutSeconds` (100 s
/// unless configured), where the request waited forever and hung its test and the run; a
/// client's own `timeout` wins for that client.
#[tokio::test]
async fn a_server_that_never_answers_fails_the_request_at_the_timeout() {
    let base = serve(Router::new().route("/stuck", get(std::future::pending::<&'static str>)));
    let mut config = Configuration::new();
    config.set("Kit:Rest:Responses:TimeoutSeconds", "0.3");
    let run = run_with(config, |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&base);
                rest.add_client()
                    .named("patient")
                    .base_url(&base)
                    .configure(|b| b.timeout(std::time::Duration::from_millis(1500)));
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    for (request, at_least) in [
        (ctx.rest(), std::time::Duration::from_millis(300)),
        (ctx.rest_named("patient"), std::time::Duration::from_millis(1500)),
    ] {
        let started = std::time::Instant::now();
        let sent = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            request.get("/stuck").try_send(),
        )
        .await
        .expect("the request is still waiting after 20 s");
        let waited = started.elapsed();
        let err = sent.unwrap_err();
        assert!(
            matches!(&err, RestError::Transport { message, .. } if message.contains("timed out")),
            "{err}"
        );
        assert!(
            waited >= at_least,
            "failed after {waited:?}, before its {at_least:?}"
        );
    }
}

#[tokio::test]
async fn a_misconfigured_option_fails_requests_naming_the_key() {
    let base = serve(api());
    let mut config = Configuration::new();
    config.set("Kit:Rest:Attachments:CaptureResponses", "sometimes");
    let run = run_with(config, |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&base);
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    let err = ctx.rest().get("/items").try_send().await.unwrap_err().to_string();
    assert!(
        err.contains("Kit:Rest:Attachments:CaptureResponses") && err.contains("sometimes"),
        "{err}"
    );
}

#[tokio::test]
async fn with_redaction_off_values_pass_but_user_info_is_removed() {
    let base = serve(api());
    let run = run_with(Configuration::new(), |kit| {
        kit.add_application("api", |app| {
            app.add_rest(|rest| {
                rest.capture_attachments(|o| o.redact_sensitive_data = false);
                rest.add_client()
                    .base_url(&base.replace("http://", "http://user:pw-0123456789@"));
            });
        });
    });
    let ctx = run
        .run
        .begin_test(TestStarted::new("t").with_application(Some("api".into())));
    ctx.rest()
        .query("token", "visible-token")
        .body(&serde_json::json!({ "password": "visible" }))
        .post("/login")
        .await;
    ctx.finish(TestOutcome::Passed).unwrap();
    let record = &tests_of(&run)[0];
    let request = record
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::OperationStarted(op) => Some(op.attributes.clone()),
            _ => None,
        })
        .unwrap();
    let url = request.get_str(semconv::URL_FULL).unwrap();
    assert!(
        url.contains("token=visible-token") && !url.contains("pw-0123456789") && !url.contains("user@"),
        "{url}"
    );
    assert_eq!(
        attachment_text(&run, record, "rest-01-request"),
        r#"{"password":"visible"}"#
    );
}

#[tokio::test]
async fn an_expected_shape_is_attached_pretty_and_redacted_like_the_assertion_event() {
    let base = serve(api());
    let run = capturing_run(&base);
    let ctx = run
        .run
        .begin_test(TestStarted::new("shape").with_application(Some("api".into())));
    // The login makes `pw-0123456789` a known secret; the shape then mentions it by value.
    ctx.rest()
        .body(&serde_json::json!({ "user": "ada", "password": "pw-0123456789" }))
        .post("/login")
        .await;
    let response = ctx.rest().get("/items").await;
    let shape = serde_json::json!([{ "id": 1, "note": "pw-0123456789", "password": "x" }, { "id": 2 }]);
    let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        response.should().match_shape(&shape);
    }));
    assert!(failure.is_err(), "the items have no note");
    ctx.finish(TestOutcome::Failed {
        message: "shape".into(),
    })
    .unwrap();

    let record = tests_of(&run).remove(0);
    let attached = attachment_text(&run, &record, "rest-02-expected-shape");
    assert_eq!(
        attached,
        "[\n  {\n    \"id\": 1,\n    \"note\": \"[REDACTED]\",\n    \"password\": \"[REDACTED]\"\n  },\n  {\n    \"id\": 2\n  }\n]"
    );
    let expected = record
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_ASSERT_JSON_SHAPE => op
                .attributes
                .get_str(semconv::ASSERTION_EXPECTED)
                .map(str::to_owned),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        expected,
        r#"[{"id":1,"note":"[REDACTED]","password":"[REDACTED]"},{"id":2}]"#
    );
}

/// The kit reuses a shape it sanitized for the next assertion of the same shape, but not once
/// a secret was learnt in between.
#[tokio::test]
async fn a_shape_asserted_again_after_a_secret_is_learnt_is_redacted_anew() {
    let base = serve(api());
    let run = capturing_run(&base);
    let ctx = run
        .run
        .begin_test(TestStarted::new("again").with_application(Some("api".into())));
    let shape = serde_json::json!([{ "id": 1 }, { "id": 2, "note": "pw-learnt-later" }]);
    let assert_it = |response: &RestResponse| {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            response.should().match_shape(&shape);
        }));
    };
    assert_it(&ctx.rest().get("/items").await);
    assert_it(&ctx.rest().get("/items").await);
    // Sent under `password`: the sanitizer learns the value and redacts it everywhere after.
    ctx.rest()
        .body(&serde_json::json!({ "password": "pw-learnt-later" }))
        .post("/login")
        .await;
    assert_it(&ctx.rest().get("/items").await);
    ctx.finish(TestOutcome::Passed).unwrap();

    let record = tests_of(&run).remove(0);
    for name in ["rest-01-expected-shape", "rest-02-expected-shape"] {
        assert!(
            attachment_text(&run, &record, name).contains("pw-learnt-later"),
            "not a secret yet in {name}"
        );
    }
    let last = attachment_text(&run, &record, "rest-04-expected-shape");
    assert!(!last.contains("pw-learnt-later"), "{last}");
    assert!(last.contains("\"note\": \"[REDACTED]\""), "{last}");
}

/// Tests of one run share what a shape sanitized to (their sanitizers share rules and the
/// run's secrets), but a secret one test learns is redacted from the shape in the next.
#[tokio::test]
async fn a_shape_kept_from_an_earlier_test_is_redacted_anew_once_a_later_test_learns_a_secret() {
    let base = serve(api());
    let run = capturing_run(&base);
    let shape = serde_json::json!([{ "id": 1 }, { "id": 2, "note": "pw-of-the-second-test" }]);
    let assert_it = |response: &RestResponse| {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            response.should().match_shape(&shape);
        }));
    };
    let first = run
        .run
        .begin_test(TestStarted::new("first").with_application(Some("api".into())));
    assert_it(&first.rest().get("/items").await);
    let first_sanitizer = kit_rest::sanitizer(&first);
    first.finish(TestOutcome::Passed).unwrap();
    let second = run
        .run
        .begin_test(TestStarted::new("second").with_application(Some("api".into())));
    // What lets the second test reuse the first one's sanitized shape.
    assert!(kit_rest::sanitizer(&second).is_same(&first_sanitizer));
    second
        .rest()
        .body(&serde_json::json!({ "password": "pw-of-the-second-test" }))
        .post("/login")
        .await;
    assert_it(&second.rest().get("/items").await);
    second.finish(TestOutcome::Passed).unwrap();

    let records = tests_of(&run);
    let shown = |test: &str, name: &str| {
        let record = records.iter().find(|r| r.name == test).unwrap();
        attachment_text(&run, record, name)
    };
    assert!(shown("first", "rest-01-expected-shape").contains("pw-of-the-second-test"));
    let later = shown("second", "rest-02-expected-shape");
    assert!(!later.contains("pw-of-the-second-test"), "{later}");
    assert!(later.contains("\"note\": \"[REDACTED]\""), "{later}");
}

/// Tests run as tasks of one runtime, all in flight at once, end by awaiting `finish_async`:
/// none blocks the runtime's one thread, and each test's requests and attachments are in the
/// archive on disk when its wait resolves.
#[tokio::test]
async fn tests_in_flight_on_one_runtime_are_each_durable_when_their_awaited_end_resolves() {
    let base = serve(api());
    let run = capturing_run(&base);
    let test = |i: usize| {
        let run = &run;
        async move {
            let name = format!("in_flight_{i}");
            two_requests_unfinished(run, &name)
                .await
                .finish_async(TestOutcome::Passed)
                .await
                .unwrap();
            let records = tests_of(run);
            let record = records
                .iter()
                .find(|r| r.name == name)
                .unwrap_or_else(|| panic!("{name} is not in the archive when its end resolved"));
            assert_eq!(record.outcome, TestOutcome::Passed);
            assert_eq!(attachments(record).len(), 3, "{name}: {:?}", attachments(record));
        }
    };
    futures_util::future::join_all((0..32).map(test)).await;
    assert_eq!(tests_of(&run).len(), 32);
}
