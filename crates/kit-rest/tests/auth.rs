//! Every authentication kind against a real auth server on loopback, the precedence between
//! them, shared OAuth2 tokens, per-test sessions, and no credential in the archive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kit_core::*;
use kit_rest::*;
use kit_trace::ArchiveReader;
use serde::Deserialize;
use serde_json::json;

mod common;
use common::{ArchivedRun, on_parallel_threads, serve};

const BASIC_PASSWORD: &str = "basic-pw-7f3a9c21";
const BEARER_TOKEN: &str = "bearer-tok-5e8d2b90";
const API_KEY: &str = "api-key-19c4e6f2";
const CLIENT_SECRET: &str = "client-secret-8b1d7a3e";
const SIGN_IN_PASSWORD: &str = "sign-in-pw-2c9e4f71";

#[derive(Default)]
struct Server {
    token_requests: AtomicUsize,
    issued: Mutex<HashSet<String>>,
    /// Lifetime of issued tokens, in seconds.
    lifetime: AtomicUsize,
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::to_owned)
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "unauthorized",
    )
        .into_response()
}

#[derive(Deserialize)]
struct TokenRequest {
    grant_type: String,
    scope: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

#[derive(Deserialize)]
struct Login {
    user: String,
    password: String,
}

fn auth_server(state: Arc<Server>) -> Router {
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("ada:{BASIC_PASSWORD}")
        )
    );
    Router::new()
        .route(
            "/basic",
            get(move |headers: HeaderMap| {
                let basic = basic.clone();
                async move {
                    match headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
                        Some(v) if v == basic => "hello ada".into_response(),
                        _ => unauthorized(),
                    }
                }
            }),
        )
        .route(
            "/bearer",
            get(|headers: HeaderMap| async move {
                match bearer(&headers).as_deref() {
                    Some(BEARER_TOKEN) => "bearer ok".into_response(),
                    Some("read-only-token") => (StatusCode::FORBIDDEN, "missing scope orders:write").into_response(),
                    _ => unauthorized(),
                }
            }),
        )
        .route(
            "/key",
            get(|headers: HeaderMap, Query(q): Query<std::collections::HashMap<String, String>>| async move {
                let from_header = headers.get("x-api-key").and_then(|v| v.to_str().ok()) == Some(API_KEY);
                let from_query = q.get("api_key").map(String::as_str) == Some(API_KEY);
                match (from_header, from_query) {
                    (true, _) => "key in header".into_response(),
                    (_, true) => "key in query".into_response(),
                    _ => unauthorized(),
                }
            }),
        )
        .route(
            "/oauth/token",
            post(|State(state): State<Arc<Server>>, headers: HeaderMap, Form(form): Form<TokenRequest>| async move {
                state.token_requests.fetch_add(1, Ordering::SeqCst);
                let basic_ok = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
                    == Some(&format!(
                        "Basic {}",
                        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("svc:{CLIENT_SECRET}"))
                    ));
                let post_ok = form.client_id.as_deref() == Some("svc") && form.client_secret.as_deref() == Some(CLIENT_SECRET);
                if form.grant_type != "client_credentials" || !(basic_ok || post_ok) {
                    return (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": "invalid_client", "error_description": "unknown client or bad secret" })))
                        .into_response();
                }
                let n = state.token_requests.load(Ordering::SeqCst);
                let token = format!("access-token-{n:04}-{}", form.scope.unwrap_or_default().replace(' ', "."));
                state.issued.lock().unwrap().insert(token.clone());
                let lifetime = state.lifetime.load(Ordering::SeqCst);
                axum::Json(json!({ "access_token": token, "token_type": "Bearer", "expires_in": lifetime })).into_response()
            }),
        )
        .route(
            "/protected",
            get(|State(state): State<Arc<Server>>, headers: HeaderMap| async move {
                match bearer(&headers) {
                    Some(t) if state.issued.lock().unwrap().contains(&t) => format!("token {t}").into_response(),
                    _ => unauthorized(),
                }
            }),
        )
        .route(
            "/login",
            post(|headers: HeaderMap, body: axum::body::Bytes| async move {
                let json = headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
                let login: Login = if json {
                    serde_json::from_slice(&body).unwrap()
                } else {
                    serde_urlencoded::from_bytes(&body).unwrap()
                };
                if login.password != SIGN_IN_PASSWORD {
                    return unauthorized();
                }
                ([(header::SET_COOKIE, format!("session=s-{}; Path=/; HttpOnly", login.user))], "signed in").into_response()
            }),
        )
        .route(
            "/me",
            get(|headers: HeaderMap| async move {
                let user = headers
                    .get(header::COOKIE)
                    .and_then(|c| c.to_str().ok())
                    .and_then(|c| c.split(';').find_map(|p| p.trim().strip_prefix("session=s-")).map(str::to_owned));
                match user {
                    Some(user) => user.into_response(),
                    None => unauthorized(),
                }
            }),
        )
        .route(
            "/whoami",
            get(|headers: HeaderMap| async move {
                headers
                    .get(header::AUTHORIZATION)
                    .map(|v| v.to_str().unwrap_or("?").split(' ').next().unwrap_or("?").to_owned())
                    .or_else(|| headers.get("x-api-key").map(|_| "ApiKey".to_owned()))
                    .unwrap_or_else(|| "anonymous".to_owned())
            }),
        )
        .route(
            "/echo",
            // Every header the server got, and the body, as text: what a server echoing a
            // request back in an error does.
            post(|uri: axum::http::Uri, headers: HeaderMap, body: String| async move {
                let mut echoed: Vec<String> = std::iter::once(uri.to_string())
                    .chain(headers
                    .iter()
                    .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v.as_bytes()))))
                    .collect();
                echoed.push(body);
                echoed.join("\n")
            }),
        )
        .with_state(state)
}

struct Fixture {
    archived: ArchivedRun,
    server: Arc<Server>,
}

fn fixture(config: &[(&str, &str)], configure: impl FnOnce(&mut RestBuilder<'_>)) -> Fixture {
    let server = Arc::new(Server::default());
    server.lifetime.store(3600, Ordering::SeqCst);
    let base = serve(auth_server(Arc::clone(&server)));
    let mut configuration = Configuration::new();
    for (k, v) in config {
        configuration.set(*k, *v);
    }
    let mut builder = KitBuilder::new(configuration);
    builder.add_application("api", |app| {
        app.add_rest(|rest| {
            rest.capture_attachments(|_| {});
            rest.add_client().base_url(&base);
            configure(rest);
        });
    });
    let built = builder.build().unwrap();
    Fixture {
        archived: ArchivedRun::start(built.host, Vec::new(), "auth"),
        server,
    }
}

impl Fixture {
    fn test(&self, auth: Option<&str>) -> KitExecutionContext {
        self.archived.run.begin_test(
            TestStarted::new("auth::t")
                .with_application(Some("api".into()))
                .with_auth(auth.map(str::to_owned)),
        )
    }
}

async fn text(builder: RestRequestBuilder, route: &str) -> (StatusCode, String) {
    let r = builder.get(route).await;
    (r.status_code(), r.content().to_owned())
}

/// Why a GET of `route` could not be sent.
async fn send_error(builder: RestRequestBuilder, route: &str) -> String {
    builder.get(route).try_send().await.unwrap_err().to_string()
}

#[tokio::test]
async fn basic_authenticates_and_a_wrong_password_gets_401() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    assert_eq!(
        text(ctx.rest().auth(Basic::new("ada", BASIC_PASSWORD)), "/basic").await,
        (StatusCode::OK, "hello ada".into())
    );
    assert_eq!(
        text(ctx.rest().auth(Basic::new("ada", "wrong")), "/basic")
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(text(ctx.rest(), "/basic").await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn bearer_authenticates_and_the_server_decides_401_and_403() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    assert_eq!(
        text(ctx.rest().auth(Bearer::new(BEARER_TOKEN)), "/bearer").await,
        (StatusCode::OK, "bearer ok".into())
    );
    let forbidden = ctx
        .rest()
        .auth(Bearer::new("read-only-token"))
        .get("/bearer")
        .await;
    forbidden.should().have_http_status(StatusCode::FORBIDDEN);
    let unknown = ctx.rest().auth(Bearer::new("nope")).get("/bearer").await;
    unknown
        .should()
        .have_http_status(StatusCode::UNAUTHORIZED)
        .have_header_value("www-authenticate", "Bearer");
}

#[tokio::test]
async fn an_api_key_goes_in_a_header_or_the_query() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    assert_eq!(
        text(ctx.rest().auth(ApiKey::header("X-Api-Key", API_KEY)), "/key")
            .await
            .1,
        "key in header"
    );
    let in_query = ctx
        .rest()
        .auth(ApiKey::query("api_key", API_KEY))
        .get("/key")
        .await;
    assert_eq!(in_query.content(), "key in query");
    assert!(
        in_query.url().ends_with("/key?api_key=[REDACTED]"),
        "{}",
        in_query.url()
    );
    assert_eq!(
        text(ctx.rest().auth(ApiKey::header("X-Api-Key", "wrong")), "/key")
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn fifty_concurrent_tests_share_one_oauth2_token_and_fetch_again_after_it_expires() {
    let f = fixture(&[], |rest| {
        rest.default_auth(
            OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET)
                .scopes(["orders:read", "orders:write"]),
        );
    });
    f.server.lifetime.store(2, Ordering::SeqCst);
    let wave = |f: &Fixture| -> HashSet<String> {
        let run = f.archived.run.clone();
        on_parallel_threads(50, move |_, start| {
            let run = run.clone();
            async move {
                let ctx = run.begin_test(TestStarted::new("oauth::t").with_application(Some("api".into())));
                start.wait();
                let response = ctx.rest().get("/protected").await;
                response.should().have_http_status(StatusCode::OK);
                response.content().to_owned()
            }
        })
        .into_iter()
        .collect()
    };
    let first = wave(&f);
    assert_eq!(
        f.server.token_requests.load(Ordering::SeqCst),
        1,
        "one fetch for fifty concurrent tests"
    );
    assert_eq!(first.len(), 1, "they all used the one token: {first:?}");
    assert!(first.iter().next().unwrap().ends_with("orders:read.orders:write"));
    // After the token's lifetime, the next request fetches a new one.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let second = wave(&f);
    assert_eq!(f.server.token_requests.load(Ordering::SeqCst), 2);
    assert_ne!(first, second);
}

#[tokio::test]
async fn a_token_endpoint_that_answers_400_fails_the_request_clearly() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let err = ctx
        .rest()
        .auth(OAuth2ClientCredentials::new(
            "/oauth/token",
            "svc",
            "wrong-secret-value",
        ))
        .get("/protected")
        .try_send()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("GET /protected - authentication failed: the token endpoint http://127.0.0.1:")
            && text.ends_with("/oauth/token refused client 'svc': 400 Bad Request: invalid_client (unknown client or bad secret)"),
        "{text}"
    );
    // The client secret can go in the form body instead.
    let posted = ctx
        .rest()
        .auth(
            OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET)
                .client_authentication(ClientAuthentication::Post),
        )
        .get("/protected")
        .await;
    posted.should().have_http_status(StatusCode::OK);
}

#[tokio::test]
async fn a_session_sign_in_happens_once_per_test_and_its_cookie_stays_in_that_test() {
    let f = fixture(&[], |_| {});
    let form = SessionSignIn::form("/login", [("user", "ada"), ("password", SIGN_IN_PASSWORD)]);
    let ctx = f.test(None);
    assert_eq!(
        text(ctx.rest().auth(form.clone()), "/me").await,
        (StatusCode::OK, "ada".into())
    );
    assert_eq!(text(ctx.rest().auth(form.clone()), "/me").await.1, "ada");
    // The jar keeps the session for requests without auth too.
    assert_eq!(text(ctx.rest(), "/me").await.1, "ada");
    ctx.finish(TestOutcome::Passed).unwrap();
    let sign_ins = ArchiveReader::open(&f.archived.archive)
        .unwrap()
        .tests()
        .flat_map(|t| t.unwrap().events)
        .filter(|e| matches!(&e.kind, EventKind::OperationStarted(op) if op.attributes.get_str(semconv::HTTP_ROUTE) == Some("/login")))
        .count();
    assert_eq!(sign_ins, 1, "one sign-in for the test");
    // Another test is not signed in.
    let other = f.test(None);
    assert_eq!(text(other.rest(), "/me").await.0, StatusCode::UNAUTHORIZED);
    let json = SessionSignIn::json("/login", json!({ "user": "bob", "password": SIGN_IN_PASSWORD }));
    assert_eq!(text(other.rest().auth(json), "/me").await.1, "bob");
}

#[tokio::test]
async fn a_refused_sign_in_fails_the_request_with_the_status() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let err = ctx
        .rest()
        .auth(SessionSignIn::form(
            "/login",
            [("user", "ada"), ("password", "wrong-password-1")],
        ))
        .get("/me")
        .try_send()
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "GET /me - authentication failed: signing in at /login was refused: 401 Unauthorized"
    );
}

#[test]
fn sixty_four_parallel_tests_signed_in_as_different_users_see_only_their_own() {
    let f = fixture(&[], |_| {});
    let run = f.archived.run.clone();
    let results = on_parallel_threads(64, move |i, start| {
        let run = run.clone();
        async move {
            let ctx =
                run.begin_test(TestStarted::new(format!("user_{i}")).with_application(Some("api".into())));
            let user = format!("user{i}");
            let sign_in = SessionSignIn::form(
                "/login",
                [("user", user.as_str()), ("password", SIGN_IN_PASSWORD)],
            );
            start.wait();
            let mut seen = Vec::new();
            for _ in 0..4 {
                seen.push(
                    ctx.rest()
                        .auth(sign_in.clone())
                        .get("/me")
                        .await
                        .content()
                        .to_owned(),
                );
                seen.push(ctx.rest().get("/me").await.content().to_owned());
            }
            (user, seen)
        }
    });
    let mut cross_talk = 0;
    for (user, seen) in results {
        cross_talk += seen.iter().filter(|s| **s != user).count();
    }
    assert_eq!(cross_talk, 0);
}

// === precedence ===

const BEARER_CONFIG: (&str, &str) = ("Kit:Applications:api:Auth:Bearer:Token", BEARER_TOKEN);
const KEY_CONFIG: (&str, &str) = ("Kit:Applications:api:Auth:ApiKey:Key", API_KEY);

fn precedence_fixture() -> Fixture {
    fixture(&[BEARER_CONFIG, KEY_CONFIG], |rest| {
        rest.default_auth(Basic::new("ada", BASIC_PASSWORD));
    })
}

#[tokio::test]
async fn precedence_the_application_default_applies_when_nothing_else_does() {
    let f = precedence_fixture();
    assert_eq!(text(f.test(None).rest(), "/whoami").await.1, "Basic");
}

#[tokio::test]
async fn precedence_the_test_or_module_kind_wins_over_the_application_default() {
    let f = precedence_fixture();
    assert_eq!(text(f.test(Some("Bearer")).rest(), "/whoami").await.1, "Bearer");
    assert_eq!(text(f.test(Some("ApiKey")).rest(), "/whoami").await.1, "ApiKey");
}

#[tokio::test]
async fn precedence_the_request_wins_over_the_test() {
    let f = precedence_fixture();
    let ctx = f.test(Some("Bearer"));
    assert_eq!(
        text(ctx.rest().auth(ApiKey::header("X-Api-Key", API_KEY)), "/whoami")
            .await
            .1,
        "ApiKey"
    );
}

#[tokio::test]
async fn precedence_without_auth_beats_everything() {
    let f = precedence_fixture();
    let ctx = f.test(Some("Bearer"));
    assert_eq!(text(ctx.rest().without_auth(), "/whoami").await.1, "anonymous");
    assert_eq!(
        text(ctx.rest().auth(Bearer::new("x")).without_auth(), "/whoami")
            .await
            .1,
        "anonymous"
    );
}

#[tokio::test]
async fn the_kind_applied_is_recorded_by_name_only() {
    let f = precedence_fixture();
    let ctx = f.test(Some("Bearer"));
    ctx.rest().get("/whoami").await;
    ctx.rest().without_auth().get("/whoami").await;
    ctx.finish(TestOutcome::Passed).unwrap();
    let kinds: Vec<Option<String>> = ArchiveReader::open(&f.archived.archive)
        .unwrap()
        .tests()
        .flat_map(|t| t.unwrap().events)
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => {
                Some(op.attributes.get_str(semconv::KIT_AUTH_KIND).map(str::to_owned))
            }
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [Some("Bearer".into()), None]);
}

#[tokio::test]
async fn credentials_come_from_configuration_and_missing_ones_are_named() {
    let f = fixture(
        &[
            ("Kit:Applications:api:Auth:Default", "SessionSignIn"),
            ("Kit:Applications:api:Auth:SessionSignIn:Url", "/login"),
            ("Kit:Applications:api:Auth:SessionSignIn:Format", "json"),
            ("Kit:Applications:api:Auth:SessionSignIn:Fields:user", "cfg-user"),
            (
                "Kit:Applications:api:Auth:SessionSignIn:Fields:password",
                SIGN_IN_PASSWORD,
            ),
            (
                "Kit:Applications:api:Auth:OAuth2ClientCredentials:TokenUrl",
                "/oauth/token",
            ),
            (
                "Kit:Applications:api:Auth:OAuth2ClientCredentials:ClientId",
                "svc",
            ),
            (
                "Kit:Applications:api:Auth:OAuth2ClientCredentials:ClientSecret",
                CLIENT_SECRET,
            ),
            ("Kit:Applications:api:Auth:OAuth2ClientCredentials:Scopes", "a b"),
        ],
        |_| {},
    );
    assert_eq!(text(f.test(None).rest(), "/me").await.1, "cfg-user");
    assert!(
        text(f.test(Some("OAuth2ClientCredentials")).rest(), "/protected")
            .await
            .1
            .ends_with("-a.b")
    );
    let err = send_error(f.test(Some("Basic")).rest(), "/basic").await;
    assert_eq!(
        err,
        "GET /basic - authentication failed: Basic authentication needs Kit:Applications:api:Auth:Basic:Username in \
         configuration (or the environment variable Kit__Applications__api__Auth__Basic__Username)"
    );
    let err = send_error(f.test(Some("Kerberos")).rest(), "/basic").await;
    assert!(err.contains("unknown authentication kind \"Kerberos\""), "{err}");
}

/// A configured default made once for the test's client still fails each request that falls
/// back on it, naming the missing key, and leaves requests that choose otherwise alone.
#[tokio::test]
async fn a_configured_default_without_its_credentials_fails_every_request_that_uses_it() {
    let f = fixture(
        &[
            ("Kit:Applications:api:Auth:Default", "Basic"),
            ("Kit:Applications:api:Auth:Basic:Username", "ada"),
        ],
        |_| {},
    );
    let ctx = f.test(None);
    for _ in 0..2 {
        let err = send_error(ctx.rest(), "/whoami").await;
        assert_eq!(
            err,
            "GET /whoami - authentication failed: Basic authentication needs Kit:Applications:api:Auth:Basic:Password in \
             configuration (or the environment variable Kit__Applications__api__Auth__Basic__Password)"
        );
    }
    assert_eq!(
        text(ctx.rest().without_auth(), "/whoami").await,
        (StatusCode::OK, "anonymous".into())
    );
    assert_eq!(
        text(ctx.rest().auth(Bearer::new(BEARER_TOKEN)), "/whoami").await,
        (StatusCode::OK, "Bearer".into())
    );
}

#[tokio::test]
async fn no_credential_or_token_reaches_the_archive() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    ctx.rest()
        .auth(Basic::new("ada", BASIC_PASSWORD))
        .get("/basic")
        .await;
    ctx.rest().auth(Bearer::new(BEARER_TOKEN)).get("/bearer").await;
    ctx.rest()
        .auth(ApiKey::header("X-Custom-Key", API_KEY))
        .get("/key")
        .await;
    ctx.rest()
        .auth(ApiKey::query("api_key", API_KEY))
        .get("/key")
        .await;
    ctx.rest()
        .auth(OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET))
        .get("/protected")
        .await;
    ctx.rest()
        .auth(SessionSignIn::form(
            "/login",
            [("user", "ada"), ("password", SIGN_IN_PASSWORD)],
        ))
        .get("/me")
        .await;
    // The server echoes the token it checked: redacted by value.
    let echoed = ctx
        .rest()
        .auth(OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET))
        .get("/protected")
        .await;
    let token = echoed.content().strip_prefix("token ").unwrap().to_owned();
    let failure = ctx
        .rest()
        .auth(OAuth2ClientCredentials::new(
            "/oauth/token",
            "svc",
            "bad-client-secret-1",
        ))
        .get("/protected")
        .try_send()
        .await
        .unwrap_err()
        .to_string();
    ctx.finish(TestOutcome::Failed {
        message: failure.clone(),
    })
    .unwrap();
    let mut reader = ArchiveReader::open(&f.archived.archive).unwrap();
    let secrets = [
        BASIC_PASSWORD,
        BEARER_TOKEN,
        API_KEY,
        CLIENT_SECRET,
        SIGN_IN_PASSWORD,
        token.as_str(),
        "bad-client-secret-1",
    ];
    let mut searched = 0;
    for index in 0..reader.entry_count() {
        let (name, bytes) = reader.entry(index).unwrap();
        for secret in secrets {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} in {name}"
            );
        }
        searched += bytes.len();
    }
    assert!(searched > 5_000, "the archive holds the run ({searched} bytes)");
    for secret in secrets {
        assert!(!failure.contains(secret));
    }
    // …and the audit's fingerprints cover every one of them.
    let mut scanner = kit_core::redact::LeakScanner::new();
    for set in reader.secret_fingerprints().unwrap() {
        scanner.add_set(&set).unwrap();
    }
    for secret in secrets {
        assert!(
            scanner.find(secret.as_bytes()).is_some(),
            "{secret} is not fingerprinted"
        );
    }
}

/// The `kit.auth.kind` of each request to `route` in the archive, in order.
fn kinds_sent_to(f: &Fixture, route: &str) -> Vec<Option<String>> {
    ArchiveReader::open(&f.archived.archive)
        .unwrap()
        .tests()
        .flat_map(|t| t.unwrap().events)
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op)
                if op.name == semconv::OP_HTTP_REQUEST
                    && op.attributes.get_str(semconv::HTTP_ROUTE) == Some(route) =>
            {
                Some(op.attributes.get_str(semconv::KIT_AUTH_KIND).map(str::to_owned))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_kind_is_recorded_by_its_name_and_debug_shows_no_credential() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let sign_in = SessionSignIn::form("/login", [("user", "ada"), ("password", SIGN_IN_PASSWORD)]);
    let schemes: [(Arc<dyn AuthScheme>, &str); 5] = [
        (
            Arc::new(Basic::new("ada", BASIC_PASSWORD)),
            r#"Basic { username: "ada", .. }"#,
        ),
        (Arc::new(Bearer::new(BEARER_TOKEN)), "Bearer(..)"),
        (
            Arc::new(ApiKey::header("x-api-key", API_KEY)),
            r#"ApiKey { name: "x-api-key", in: Header, .. }"#,
        ),
        (
            Arc::new(
                OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET).scopes(["orders:read"]),
            ),
            r#"OAuth2ClientCredentials { token_url: "/oauth/token", client_id: "svc", scopes: ["orders:read"], .. }"#,
        ),
        (
            Arc::new(sign_in.clone()),
            r#"SessionSignIn { url: "/login", .. }"#,
        ),
    ];
    let shown = [
        format!("{:?}", Basic::new("ada", BASIC_PASSWORD)),
        format!("{:?}", Bearer::new(BEARER_TOKEN)),
        format!("{:?}", ApiKey::header("x-api-key", API_KEY)),
        format!(
            "{:?}",
            OAuth2ClientCredentials::new("/oauth/token", "svc", CLIENT_SECRET).scopes(["orders:read"])
        ),
        format!("{sign_in:?}"),
    ];
    for ((scheme, debug), shown) in schemes.iter().zip(&shown) {
        assert_eq!(shown, debug);
        ctx.rest().auth(Arc::clone(scheme)).get("/whoami").await;
    }
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        kinds_sent_to(&f, "/whoami"),
        [
            "Basic",
            "Bearer",
            "ApiKey",
            "OAuth2ClientCredentials",
            "SessionSignIn"
        ]
        .map(|k| Some(k.to_owned()))
    );
}

#[tokio::test]
async fn a_sign_in_remembers_its_sensitive_fields_and_the_ones_it_names() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    // `pin` is not a sensitive name: only naming it makes it a secret.
    let form = SessionSignIn::form(
        "/login",
        [
            ("user", "ada"),
            ("password", SIGN_IN_PASSWORD),
            ("pin", "pin-0123456789"),
        ],
    )
    .secret_fields(["PIN"]);
    assert_eq!(text(ctx.rest().auth(form), "/me").await.1, "ada");
    let json = SessionSignIn::json(
        "/login",
        json!({ "user": "bob", "password": SIGN_IN_PASSWORD, "code": 9_876_543_210u64 }),
    )
    .secret_fields(["code"]);
    assert_eq!(text(ctx.rest().auth(json), "/me").await.1, "bob");
    assert_eq!(
        ctx.run()
            .secrets()
            .replace_known(&format!("{SIGN_IN_PASSWORD} pin-0123456789 9876543210 ada")),
        "[REDACTED] [REDACTED] [REDACTED] ada"
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    let bodies: Vec<String> = ArchiveReader::open(&f.archived.archive)
        .unwrap()
        .tests()
        .flat_map(|t| t.unwrap().events)
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op)
                if op.attributes.get_str(semconv::HTTP_ROUTE) == Some("/login") =>
            {
                op.attributes
                    .get_str(semconv::KIT_REQUEST_BODY)
                    .map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(bodies.len(), 2);
    for body in bodies {
        assert!(
            !body.contains("pin-0123456789")
                && !body.contains("9876543210")
                && !body.contains(SIGN_IN_PASSWORD),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_test_that_switches_users_and_back_signs_in_at_each_switch() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let as_user =
        |user: &str| SessionSignIn::form("/login", [("user", user), ("password", SIGN_IN_PASSWORD)]);
    for user in ["ada", "ada", "bob", "ada", "bob", "bob"] {
        assert_eq!(text(ctx.rest().auth(as_user(user)), "/me").await.1, user);
    }
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(kinds_sent_to(&f, "/login").len(), 4, "ada, bob, ada, bob");
}

/// A kind of the user's own: what it is given to work with.
struct Probe(Arc<Mutex<Vec<String>>>);

impl AuthScheme for Probe {
    fn kind(&self) -> std::borrow::Cow<'static, str> {
        "Probe".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            let mut seen = vec![format!("{target:?}"), target.client_name().to_owned()];
            for url in ["http://elsewhere.example/token", "/oauth/token", "oauth:token"] {
                seen.push(target.resolve_url(url)?.to_string());
            }
            // Signed in with the test's own client: the cookie lands in the test's jar.
            let login = target.resolve_url("/login")?;
            let signed = target
                .http_client()
                .post(login)
                .form(&[("user", "cy"), ("password", SIGN_IN_PASSWORD)])
                .send()
                .await
                .map_err(|e| AuthError(e.to_string()))?;
            seen.push(signed.status().to_string());
            self.0.lock().unwrap().extend(seen);
            Ok(())
        })
    }
}

#[tokio::test]
async fn a_kind_of_ones_own_gets_the_clients_name_urls_and_the_tests_own_http_client() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let response = ctx.rest().auth(Probe(Arc::clone(&seen))).get("/me").await;
    assert_eq!(response.content(), "cy");
    let base = response.url().strip_suffix("/me").unwrap().to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"AuthTarget { client: "api:Default", .. }"#.to_owned(),
            "api:Default".to_owned(),
            "http://elsewhere.example/token".to_owned(),
            format!("{base}/oauth/token"),
            // A path with a colon is a path, not a URL of scheme `oauth`.
            format!("{base}/oauth:token"),
            "200 OK".to_owned(),
        ]
    );
    // Later requests of the test carry the session the kind's sign-in set.
    assert_eq!(text(ctx.rest(), "/me").await.1, "cy");
}

/// A scheme of the user's own that signs each request under a header no list names, and does
/// not remember its signature as a secret: `AuthTarget::set_header` marks it.
struct Signature(&'static str);

impl AuthScheme for Signature {
    fn kind(&self) -> std::borrow::Cow<'static, str> {
        "Signature".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move { target.set_header("X-Signature", self.0) })
    }
}

/// A scheme's header value beyond ASCII goes out as its UTF-8 bytes, as the builder's does
/// (`http` 1.6 refuses it from text), and is redacted in the record.
#[tokio::test]
async fn a_schemes_header_value_beyond_ascii_goes_out_as_its_utf8_bytes() {
    const SIGNATURE: &str = "sïgnature-✓-0123456789";
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let echoed = ctx.rest().auth(Signature(SIGNATURE)).post("/echo").await;
    assert!(
        echoed.content().contains(&format!("x-signature={SIGNATURE}")),
        "{}",
        echoed.content()
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        recorded_request_headers(&f, "x-signature"),
        [Some("[REDACTED]".to_owned())]
    );
}

/// Every entry of the archive, decompressed, one after another.
fn every_entry(f: &Fixture) -> Vec<u8> {
    let mut reader = ArchiveReader::open(&f.archived.archive).unwrap();
    let mut all = Vec::new();
    for index in 0..reader.entry_count() {
        all.extend(reader.entry(index).unwrap().1);
    }
    all
}

/// The request headers each `http.request` in the archive recorded under `name`, in order.
fn recorded_request_headers(f: &Fixture, name: &str) -> Vec<Option<String>> {
    let key = format!("http.request.header.{name}");
    ArchiveReader::open(&f.archived.archive)
        .unwrap()
        .tests()
        .flat_map(|t| t.unwrap().events)
        .filter_map(|e| match e.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => {
                Some(op.attributes.get_str(&key).map(str::to_owned))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_value_marked_sensitive_is_redacted_under_any_name_and_wherever_it_is_echoed() {
    const VAULT_TOKEN: &str = "hvs-vault-token-0c41e9d7";
    const SIGNATURE: &str = "sig-v1-6d20b7f3a8";
    const CSRF: &str = "csrf-3f9a0d5e";
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    // Echoed in the response: redacted there by value, as a known secret.
    let echoed = ctx
        .rest()
        .sensitive_header("X-Vault-Token", VAULT_TOKEN)
        .post("/echo")
        .await;
    assert!(echoed.content().contains(VAULT_TOKEN), "sent as given");
    // Under `Token`, the credential alone becomes known too; a PIN too short to be known by
    // value is still redacted in its header.
    ctx.rest()
        .sensitive_header("Private-Token", "Token private-7a51c0e2")
        .sensitive_header("X-Pin", "4711")
        .post("/echo")
        .await;
    ctx.rest().auth(Signature(SIGNATURE)).post("/echo").await;
    // Sent twice, as forms send a CSRF token: the body's copy is redacted as well.
    ctx.rest()
        .sensitive_header("X-Csrf", CSRF)
        .form(&[("csrf", CSRF), ("note", "kept")])
        .post("/echo")
        .await;
    // Not marked, under a name no list holds: recorded as sent, as the lists decide.
    ctx.rest()
        .header("X-Request-Id", "req-0001-visible")
        .post("/echo")
        .await;
    ctx.finish(TestOutcome::Passed).unwrap();

    let redacted = Some("[REDACTED]".to_owned());
    assert_eq!(
        recorded_request_headers(&f, "x-vault-token"),
        [redacted.clone(), None, None, None, None]
    );
    assert_eq!(recorded_request_headers(&f, "x-pin")[1], redacted);
    assert_eq!(recorded_request_headers(&f, "x-signature")[2], redacted);
    assert_eq!(
        recorded_request_headers(&f, "x-request-id")[4].as_deref(),
        Some("req-0001-visible")
    );
    let archive = every_entry(&f);
    let found = |needle: &str| archive.windows(needle.len()).any(|w| w == needle.as_bytes());
    for secret in [VAULT_TOKEN, "private-7a51c0e2", SIGNATURE, CSRF] {
        assert!(!found(secret), "{secret} reached the archive");
    }
    assert!(
        found("note=kept") && found("req-0001-visible"),
        "the rest is recorded"
    );
}

#[tokio::test]
async fn a_query_parameter_marked_sensitive_is_redacted_by_name_and_wherever_it_is_echoed() {
    const SIGNATURE: &str = "5f1c0e9a77d2b4c8e6";
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let response = ctx
        .rest()
        .sensitive_query("X-Amz-Signature", SIGNATURE)
        .sensitive_query("sig", "ab12")
        .query("page", 2)
        .post("/echo")
        .await;
    assert!(
        response.content().contains(SIGNATURE),
        "sent as given: {}",
        response.content()
    );
    assert!(
        response
            .url()
            .ends_with("/echo?X-Amz-Signature=[REDACTED]&sig=[REDACTED]&page=2"),
        "{}",
        response.url()
    );
    // The next request sends the same value under another name: known by value now.
    ctx.rest().query("copy", SIGNATURE).post("/echo").await;
    ctx.finish(TestOutcome::Passed).unwrap();
    let archive = every_entry(&f);
    let found = |needle: &str| archive.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(!found(SIGNATURE), "the signature reached the archive");
    // The short one is redacted in the URL recorded (too short to be known by value, its
    // echo in the body stays, as `docs/redaction.md` says).
    assert!(found("sig=[REDACTED]&page=2"), "the URL as recorded");
}

#[tokio::test]
async fn with_redaction_off_a_marked_value_is_recorded_as_sent() {
    let f = fixture(&[("Kit:Rest:Attachments:RedactSensitiveData", "false")], |_| {});
    let ctx = f.test(None);
    let response = ctx
        .rest()
        .sensitive_header("X-Vault-Token", "hvs-shown-on-purpose")
        .sensitive_query("sig", "sig-shown-on-purpose")
        .post("/echo")
        .await;
    assert!(
        response.url().ends_with("/echo?sig=sig-shown-on-purpose"),
        "{}",
        response.url()
    );
    ctx.finish(TestOutcome::Passed).unwrap();
    assert_eq!(
        recorded_request_headers(&f, "x-vault-token"),
        [Some("hvs-shown-on-purpose".to_owned())]
    );
}

#[tokio::test]
async fn a_sensitive_header_that_is_not_valid_fails_the_request_without_its_value() {
    let f = fixture(&[], |_| {});
    let ctx = f.test(None);
    let err = ctx
        .rest()
        .sensitive_header("X-Vault-Token", "hvs-line\nbreak")
        .post("/echo")
        .try_send()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"X-Vault-Token\" is not a valid header value"),
        "{err}"
    );
    assert!(!err.contains("hvs-line"), "{err}");
}
