//! Every rule of "AddClient overloads" and every step and rule of client resolution, each
//! against real servers on loopback. Servers answer with their own name and the path asked,
//! so each test sees which client was reached.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, Uri, header};
use axum::routing::{any, get, post};
use kit_core::*;
use kit_rest::*;

mod common;
use common::{on_parallel_threads, serve};

/// A server that answers `{name} {path}` to anything.
fn named(name: &'static str) -> Router {
    Router::new().fallback(any(
        move |uri: Uri| async move { format!("{name} {}", uri.path()) },
    ))
}

fn run_with(config: &[(&str, &str)], configure: impl FnOnce(&mut KitBuilder)) -> KitRun {
    let mut configuration = Configuration::new();
    for (k, v) in config {
        configuration.set(*k, *v);
    }
    let mut builder = KitBuilder::new(configuration);
    configure(&mut builder);
    let built = builder.build().unwrap();
    KitRun::with_secrets(
        built.host,
        Bus::builder().collectors(built.collectors).start(),
        RunId::new("resolution").unwrap(),
        Arc::new(SecretRegistry::new()),
    )
}

fn test(run: &KitRun, app: Option<&str>, client: Option<&str>) -> KitExecutionContext {
    run.begin_test(
        TestStarted::new("resolution::a_test")
            .with_application(app.map(str::to_owned))
            .with_client(client.map(str::to_owned)),
    )
}

async fn body(builder: RestRequestBuilder, route: &str) -> String {
    builder.get(route).await.content().to_owned()
}

async fn error(builder: RestRequestBuilder) -> String {
    builder.get("/").try_send().await.unwrap_err().to_string()
}

// === AddClient rules ===

#[tokio::test]
async fn rule_1_a_single_client_needs_no_name() {
    let orders = serve(named("orders"));
    let run = run_with(&[], |kit| {
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().base_url(&orders);
            });
        });
    });
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest(), "/x").await, "orders /x");
    assert_eq!(body(ctx.rest_named("Default"), "/y").await, "orders /y");
}

#[tokio::test]
async fn rule_2_an_endpoint_is_appended_to_the_applications_base_url() {
    let orders = serve(named("orders"));
    let run = run_with(
        &[
            ("Kit:Applications:orders:BaseUrl", &format!("{orders}/v2")),
            ("Kit:Applications:orders:Endpoints:api", "/api/v1"),
        ],
        |kit| {
            kit.add_application("orders", |app| {
                app.add_rest(|rest| {
                    rest.add_client().endpoint("api");
                });
            });
        },
    );
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest(), "/orders").await, "orders /v2/api/v1/orders");
}

#[tokio::test]
async fn rule_2_an_endpoint_that_is_not_configured_is_named_in_the_error() {
    let orders = serve(named("orders"));
    let run = run_with(&[("Kit:Applications:orders:BaseUrl", &orders)], |kit| {
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().endpoint("api");
            });
        });
    });
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(
        error(ctx.rest()).await,
        "REST client 'orders:Default' uses endpoint 'api', but Kit:Applications:orders:Endpoints:api is not configured"
    );
}

#[tokio::test]
async fn rule_3_without_an_endpoint_the_base_url_is_used_as_it_stands() {
    let orders = serve(named("orders"));
    let explicit = serve(named("explicit"));
    let run = run_with(
        &[("Kit:Applications:orders:BaseUrl", &format!("{orders}/root"))],
        |kit| {
            kit.add_application("orders", |app| {
                app.add_rest(|rest| {
                    rest.add_client();
                    rest.add_client()
                        .named("direct")
                        .base_url(&format!("{explicit}/fixed"));
                });
            });
        },
    );
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest(), "/a").await, "orders /root/a");
    assert_eq!(body(ctx.rest_named("direct"), "/b").await, "explicit /fixed/b");
}

#[test]
fn rule_4_a_base_url_that_is_not_absolute_fails_naming_the_client_and_value() {
    for bad in ["/relative", "localhost:8080", "not a url"] {
        let mut kit = KitBuilder::new(Configuration::new());
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().named("payments").base_url(bad);
            });
        });
        let err = kit.build().unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "REST client 'payments' of application 'orders': base URL {bad:?} is not an absolute URL"
            )),
            "{err}"
        );
    }
    let mut kit = KitBuilder::new(Configuration::new());
    kit.add_rest(|rest| {
        rest.add_client().base_url("relative/path");
    });
    assert!(
        kit.build()
            .unwrap_err()
            .to_string()
            .contains("REST client 'Default' of the host: base URL \"relative/path\"")
    );
}

#[tokio::test]
async fn rule_5_a_per_test_resolver_wins_over_the_base_address_at_request_time() {
    let eu = serve(named("eu"));
    let us = serve(named("us"));
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let (eu2, us2) = (eu.clone(), us.clone());
    let run = run_with(
        &[("Kit:Applications:shop:BaseUrl", "http://127.0.0.1:9/never")],
        move |kit| {
            kit.add_application("shop", move |app| {
                app.add_rest(move |rest| {
                    rest.add_client()
                        .base_url("http://127.0.0.1:9/never")
                        .resolve_with(move |ctx: &KitExecutionContext| {
                            counted.fetch_add(1, Ordering::SeqCst);
                            let region = if ctx.client_binding() == Some("Rest:eu") {
                                &eu2
                            } else {
                                &us2
                            };
                            url::Url::parse(region).unwrap()
                        });
                    rest.add_client()
                        .named("async")
                        .resolve_with_async(move |ctx: KitExecutionContext| {
                            let us = us.clone();
                            async move {
                                tokio::task::yield_now().await;
                                url::Url::parse(&format!("{us}/{}", ctx.test_name().len())).unwrap()
                            }
                        });
                });
            });
        },
    );
    let european = test(&run, Some("shop"), Some("Rest:eu"));
    let american = test(&run, Some("shop"), None);
    assert_eq!(body(european.rest_named("Default"), "/cart").await, "eu /cart");
    assert_eq!(body(american.rest(), "/cart").await, "us /cart");
    assert_eq!(body(american.rest(), "/cart").await, "us /cart");
    assert_eq!(calls.load(Ordering::SeqCst), 3, "asked at every request");
    let expected = format!("us /{}/x", "resolution::a_test".len());
    assert_eq!(body(american.rest_named("async"), "/x").await, expected);
    let _ = eu;
}

#[tokio::test]
async fn rule_5_a_resolver_returning_a_relative_url_is_named_in_the_error() {
    let run = run_with(&[], |kit| {
        kit.add_rest(|rest| {
            rest.add_client()
                .named("odd")
                .resolve_with(|_| url::Url::parse("data:text/plain,x").unwrap());
        });
    });
    let ctx = test(&run, None, None);
    assert_eq!(
        error(ctx.rest_named("odd")).await,
        "the resolver of REST client 'odd' returned data:text/plain,x, which is not an absolute URL"
    );
}

#[tokio::test]
async fn rule_6_an_address_published_by_a_started_piece_wins_over_configuration() {
    let configured = serve(named("configured"));
    let started = serve(named("started"));
    let run = run_with(
        &[
            ("Kit:Applications:orders:BaseUrl", &configured),
            ("Kit:Applications:orders:Endpoints:api", "/api"),
        ],
        |kit| {
            kit.add_application("orders", |app| {
                app.add_rest(|rest| {
                    rest.add_client().endpoint("api");
                });
            });
        },
    );
    let before = test(&run, Some("orders"), None);
    assert_eq!(body(before.rest(), "/x").await, "configured /api/x");
    publish_address(run.host(), "Orders", &started).unwrap();
    let after = test(&run, Some("orders"), None);
    assert_eq!(body(after.rest(), "/x").await, "started /api/x");
    // A test that resolved its client before the address was published uses it from then on
    // too: the pick is kept for the test, the base address is not.
    assert_eq!(body(before.rest(), "/x").await, "started /api/x");
    // The base is kept between requests while nothing is published, and follows the next
    // publication as it followed the first.
    assert_eq!(body(before.rest(), "/x").await, "started /api/x");
    publish_address(run.host(), "orders", &configured).unwrap();
    assert_eq!(body(before.rest(), "/x").await, "configured /api/x");
    assert_eq!(body(after.rest(), "/x").await, "configured /api/x");
    let err = publish_address(run.host(), "orders", "/relative")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "the address published for application 'orders' is \"/relative\", which is not an absolute URL"
    );
}

/// A base address worked out again after a publication is the client's own, found by where
/// it was registered: here the second client of the second application.
#[tokio::test]
async fn a_published_address_renews_the_right_client_among_several_applications_and_clients() {
    let billing = serve(named("billing"));
    let configured = serve(named("configured"));
    let started = serve(named("started"));
    let run = run_with(&[("Kit:Applications:orders:BaseUrl", &configured)], |kit| {
        kit.add_application("billing", |app| {
            app.add_rest(|rest| {
                rest.add_client().named("first").base_url(&billing);
                rest.add_client().named("second").base_url(&billing);
            });
        });
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().named("admin").base_url(&billing);
                rest.add_client().named("public");
            });
        });
    });
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest_named("public"), "/x").await, "configured /x");
    publish_address(run.host(), "orders", &started).unwrap();
    assert_eq!(body(ctx.rest_named("public"), "/x").await, "started /x");
    // Two names kept side by side in one test: each stays its own.
    assert_eq!(body(ctx.rest_named("admin"), "/x").await, "billing /x");
    assert_eq!(body(ctx.rest_named("public"), "/x").await, "started /x");
    assert_eq!(body(ctx.rest_named("admin"), "/x").await, "billing /x");
}

#[tokio::test]
async fn rule_7_a_client_without_an_address_uses_the_in_process_server_rooted_at_its_endpoint_or_the_requested_name()
 {
    let run = run_with(
        &[
            ("Kit:Applications:orders:Endpoints:api", "/api"),
            ("Kit:Applications:orders:Endpoints:admin", "/admin"),
        ],
        |kit| {
            kit.add_application("orders", |app| {
                app.add_in_process_server(|| named("in-process"));
                app.add_rest(|rest| {
                    rest.add_client().named("plain");
                    rest.add_client().named("public").endpoint("api");
                });
            });
        },
    );
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest_named("public"), "/x").await, "in-process /api/x");
    assert_eq!(body(ctx.rest_named("plain"), "/x").await, "in-process /x");
    // No client is called `admin`: the bound application's first client answers; it has no
    // endpoint of its own, so it is rooted at Endpoints:admin.
    assert_eq!(body(ctx.rest_named("admin"), "/x").await, "in-process /admin/x");
}

#[tokio::test]
async fn rule_7_without_any_address_the_error_says_how_to_give_one() {
    let run = run_with(&[], |kit| {
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client();
            });
        });
    });
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(
        error(ctx.rest()).await,
        "REST client 'orders:Default' has no base address: configure Kit:Applications:orders:BaseUrl (or the environment \
         variable Kit__Applications__orders__BaseUrl), give the client .base_url(\"https://…\"), or add an in-process server"
    );
}

/// A sign-in app: `POST /login?user=N` sets a session cookie, `GET /me` says whose it is.
fn sessions() -> Router {
    #[derive(serde::Deserialize)]
    struct Login {
        user: String,
    }
    Router::new()
        .route(
            "/login",
            post(|Query(login): Query<Login>| async move {
                (
                    [(
                        header::SET_COOKIE,
                        format!("session=s-{}; Path=/; HttpOnly", login.user),
                    )],
                    "signed in",
                )
            }),
        )
        .route(
            "/me",
            get(|headers: HeaderMap| async move {
                headers
                    .get(header::COOKIE)
                    .and_then(|c| c.to_str().ok())
                    .and_then(|c| c.split(';').find_map(|p| p.trim().strip_prefix("session=s-")))
                    .unwrap_or("nobody")
                    .to_owned()
            }),
        )
}

#[test]
fn rule_8_thirty_two_parallel_tests_each_see_only_their_own_session() {
    let run = run_with(&[], |kit| {
        kit.add_application("shop", |app| {
            app.add_in_process_server(sessions);
            app.add_rest(|rest| {
                rest.add_client();
            });
        });
    });
    let results = on_parallel_threads(32, move |user, start| {
        let run = run.clone();
        async move {
            let ctx = test(&run, Some("shop"), None);
            assert_eq!(body(ctx.rest(), "/me").await, "nobody");
            start.wait();
            ctx.rest().query("user", user).post("/login").await;
            let mut seen = Vec::new();
            for _ in 0..5 {
                seen.push(body(ctx.rest(), "/me").await);
                // The other client name reaches the same jar: one per test per client.
                seen.push(body(ctx.rest_named("shop:Default"), "/me").await);
            }
            seen
        }
    });
    for (user, seen) in results.into_iter().enumerate() {
        assert!(
            seen.iter().all(|s| *s == user.to_string()),
            "user {user} saw {seen:?}"
        );
    }
}

#[tokio::test]
async fn rule_9_the_first_registration_of_a_name_wins_and_configure_callbacks_compose() {
    let first = serve(Router::new().fallback(any(|headers: HeaderMap| async move {
        let get = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        format!("first {} {}", get("x-first"), get("user-agent"))
    })));
    let run = run_with(&[], move |kit| {
        kit.add_application("orders", move |app| {
            app.add_rest(|rest| {
                rest.add_client().named("api").base_url(&first).configure(|b| {
                    let mut headers = reqwest::header::HeaderMap::new();
                    headers.insert("x-first", "yes".parse().unwrap());
                    b.default_headers(headers)
                });
            });
            app.add_rest(|rest| {
                rest.add_client()
                    .named("API")
                    .base_url("http://127.0.0.1:9/second")
                    .configure(|b| b.user_agent("second-callback"));
            });
        });
    });
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(
        body(ctx.rest_named("api"), "/").await,
        "first yes second-callback"
    );
}

// === Resolution: the four steps ===

fn three_applications(kit: &mut KitBuilder, servers: &[(&'static str, String)]) {
    let servers = servers.to_vec();
    kit.add_rest(|rest| {
        rest.add_client().named("Default").base_url(&servers[0].1);
    });
    kit.add_application("orders", |app| {
        let servers = servers.clone();
        app.add_rest(move |rest| {
            rest.add_client().named("api").base_url(&servers[1].1);
            rest.add_client().named("admin").base_url(&servers[2].1);
        });
    });
    kit.add_application("payments", |app| {
        app.add_rest(move |rest| {
            rest.add_client().named("api").base_url(&servers[3].1);
            rest.add_client().named("refunds").base_url(&servers[4].1);
        });
    });
}

fn servers() -> Vec<(&'static str, String)> {
    [
        "host-default",
        "orders-api",
        "orders-admin",
        "payments-api",
        "payments-refunds",
    ]
    .into_iter()
    .map(|n| (n, serve(named(n))))
    .collect()
}

#[tokio::test]
async fn step_1_the_requested_name_comes_first() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("orders"), Some("Rest:admin"));
    assert_eq!(body(ctx.rest_named("refunds"), "/").await, "payments-refunds /");
}

#[tokio::test]
async fn step_2_then_the_client_bound_by_the_application_attribute() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("orders"), Some("Rest:admin"));
    assert_eq!(body(ctx.rest(), "/").await, "orders-admin /");
}

#[tokio::test]
async fn step_3_then_the_bound_applications_first_client() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("payments"), None);
    assert_eq!(body(ctx.rest(), "/").await, "payments-api /");
}

#[tokio::test]
async fn step_4_then_the_client_named_default() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, None, None);
    assert_eq!(body(ctx.rest(), "/").await, "host-default /");
}

// === Resolution: the five rules ===

#[tokio::test]
async fn rule_1_a_requested_name_tries_the_application_qualified_form_first() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("payments"), None);
    assert_eq!(body(ctx.rest_named("api"), "/").await, "payments-api /");
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest_named("api"), "/").await, "orders-api /");
}

#[tokio::test]
async fn rule_2_a_name_registered_on_exactly_one_other_application_reaches_it() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest_named("refunds"), "/").await, "payments-refunds /");
}

#[tokio::test]
async fn rule_3_a_name_on_two_applications_fails_naming_both_candidates() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, None, None);
    assert_eq!(
        error(ctx.rest_named("api")).await,
        "the REST client name 'api' is registered by several applications: orders:api, payments:api; \
         qualify it, e.g. rest_named(\"orders:api\")"
    );
}

#[tokio::test]
async fn rule_4_a_qualified_name_is_exact() {
    let servers = servers();
    let run = run_with(&[], |kit| three_applications(kit, &servers));
    let ctx = test(&run, Some("orders"), None);
    assert_eq!(body(ctx.rest_named("payments:api"), "/").await, "payments-api /");
    // Exact: `orders:refunds` is not `payments:refunds`; the search goes on to step 2–4.
    assert_eq!(body(ctx.rest_named("orders:refunds"), "/").await, "orders-api /");
}

#[tokio::test]
async fn rule_5_when_nothing_resolves_the_error_lists_the_registered_clients() {
    let run = run_with(&[], |kit| {
        kit.add_application("orders", |app| {
            app.add_rest(|rest| {
                rest.add_client().named("api").base_url("http://127.0.0.1:9");
            });
        });
        kit.add_application("payments", |app| {
            app.add_rest(|rest| {
                rest.add_client().named("refunds").base_url("http://127.0.0.1:9");
            });
        });
    });
    let ctx = test(&run, None, None);
    assert_eq!(
        error(ctx.rest_named("billing")).await,
        "cannot resolve the REST client 'billing' for test 'resolution::a_test'; registered REST clients: orders:api, payments:refunds"
    );
    assert_eq!(
        error(ctx.rest()).await,
        "cannot resolve a REST client for test 'resolution::a_test'; registered REST clients: orders:api, payments:refunds"
    );
    let empty = run_with(&[], |_| {});
    let ctx = test(&empty, Some("ghost"), None);
    assert_eq!(
        error(ctx.rest()).await,
        "cannot resolve a REST client for test 'resolution::a_test' (bound to application 'ghost'); registered REST clients: none (register one with add_rest)"
    );
}

// === Requests ===

#[tokio::test]
async fn a_multipart_body_arrives_parsed_and_is_traced_redacted() {
    use axum::extract::Multipart as AxumMultipart;
    let echo = serve(Router::new().route(
        "/upload",
        post(|mut form: AxumMultipart| async move {
            let mut seen = Vec::new();
            while let Some(field) = form.next_field().await.unwrap() {
                let name = field.name().unwrap_or("").to_owned();
                let file = field.file_name().map(str::to_owned);
                let ct = field.content_type().map(str::to_owned);
                let text = field.text().await.unwrap();
                seen.push(format!("{name}|{file:?}|{ct:?}|{text}"));
            }
            seen.join("\n")
        }),
    ));
    let recording = RecordingCollector::new();
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("files", |app| {
        app.add_rest(|rest| {
            rest.add_client().base_url(&echo);
        });
    });
    let built = builder.build().unwrap();
    let run = KitRun::with_secrets(
        built.host,
        Bus::builder().collector(recording.clone()).start(),
        RunId::new("mp").unwrap(),
        Arc::new(SecretRegistry::new()),
    );
    let ctx = test(&run, Some("files"), None);
    let form = Multipart::new()
        .text("title", "Q3 \"final\"")
        .text("password", "mp-secret-123456")
        .file("report", "q3.csv", "text/csv", b"a,b\n1,2".to_vec())
        .bytes("meta", "application/json", r#"{"rows":2}"#);
    let boundary = form.boundary().to_owned();
    assert!(boundary.len() >= 16, "{boundary:?}");
    assert_eq!(
        form.content_type(),
        format!("multipart/form-data; boundary={boundary}")
    );
    let response = ctx.rest().multipart(form).post("/upload").await;
    assert_eq!(
        response.content(),
        "title|None|None|Q3 \"final\"\npassword|None|None|mp-secret-123456\nreport|Some(\"q3.csv\")|Some(\"text/csv\")|a,b\n1,2\n\
         meta|None|Some(\"application/json\")|{\"rows\":2}"
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    let traced = recording
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::OperationStarted(op) => op
                .attributes
                .get_str(semconv::KIT_REQUEST_BODY)
                .map(str::to_owned),
            _ => None,
        })
        .unwrap();
    assert!(
        traced.contains("name=\"password\"\r\n\r\n[REDACTED]\r\n") && !traced.contains("mp-secret"),
        "{traced}"
    );
}

#[tokio::test]
async fn redirects_are_not_followed_and_every_verb_is_sent() {
    let server = serve(
        Router::new()
            .route(
                "/old",
                get(|| async { axum::response::Redirect::temporary("/new?x=1") }),
            )
            .fallback(any(
                |method: axum::http::Method| async move { method.to_string() },
            )),
    );
    let run = run_with(&[], |kit| {
        kit.add_rest(|rest| {
            rest.add_client().base_url(&server);
        });
    });
    let ctx = test(&run, None, None);
    let redirect = ctx.rest().get("/old").await;
    assert_eq!(redirect.status_code(), http::StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(redirect.headers().get("location").unwrap(), "/new?x=1");
    for (pending, expected) in [
        (ctx.rest().post("/v"), "POST"),
        (ctx.rest().put("/v"), "PUT"),
        (ctx.rest().patch("/v"), "PATCH"),
        (ctx.rest().delete("/v"), "DELETE"),
        (ctx.rest().options("/v"), "OPTIONS"),
        (
            ctx.rest().send(http::Method::from_bytes(b"PURGE").unwrap(), "/v"),
            "PURGE",
        ),
    ] {
        assert_eq!(pending.await.content(), expected);
    }
    let head = ctx.rest().head("/v").await;
    assert_eq!((head.status_code(), head.content()), (http::StatusCode::OK, ""));
}
