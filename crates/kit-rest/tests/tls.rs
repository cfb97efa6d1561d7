//! HTTPS against a real TLS server on loopback, its certificate issued by a test CA no platform
//! trusts (`fixtures/`, made with openssl, valid for a hundred years). A client without
//! `configure` callbacks uses the process's shared TLS configuration, which must still verify
//! certificates against the platform's roots; a client whose callback trusts the certificate
//! builds its own configuration, and must get it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use kit_core::*;
use kit_rest::*;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const CA: &[u8] = include_bytes!("fixtures/test-ca.cert.pem");
const CERT: &[u8] = include_bytes!("fixtures/localhost.cert.pem");
const KEY: &[u8] = include_bytes!("fixtures/localhost.key.pem");

/// Serves `hello over TLS` on `https://localhost:{port}`; returns the port.
async fn serve_tls() -> u16 {
    let cert = CertificateDer::from_pem_slice(CERT).unwrap();
    let key = PrivateKeyDer::from_pem_slice(KEY).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = Router::new().route("/", get(|| async { "hello over TLS" }));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to serve.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |request| {
                    tower::ServiceExt::oneshot(app.clone(), request)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    port
}

fn run(port: u16, trust_the_certificate: bool) -> KitRun {
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("secure", |app| {
        app.add_rest(|rest| {
            let client = rest.add_client().base_url(&format!("https://localhost:{port}"));
            if trust_the_certificate {
                client.configure(|b| {
                    let cert = reqwest::Certificate::from_pem(CA).unwrap();
                    b.tls_certs_only([cert])
                });
            }
        });
    });
    let built = builder.build().unwrap();
    KitRun::with_secrets(
        built.host,
        Bus::builder().collectors(built.collectors).start(),
        RunId::new("tls").unwrap(),
        Arc::new(SecretRegistry::new()),
    )
}

#[tokio::test]
async fn the_shared_tls_configuration_still_refuses_an_untrusted_certificate() {
    let port = serve_tls().await;
    let run = run(port, false);
    let ctx = run.begin_test(TestStarted::new("tls").with_application(Some("secure".into())));
    let err = ctx.rest().get("/").try_send().await.unwrap_err();
    let text = format!("{err:?}").to_lowercase();
    assert!(matches!(err, RestError::Transport { .. }), "{err:?}");
    assert!(text.contains("certificate"), "{text}");
    // A second test's client, built from the same shared configuration, refuses it too.
    let ctx = run.begin_test(TestStarted::new("tls 2").with_application(Some("secure".into())));
    assert!(ctx.rest().get("/").try_send().await.is_err());
}

#[tokio::test]
async fn a_client_whose_callback_trusts_the_ca_builds_its_own_tls_and_connects() {
    let port = serve_tls().await;
    let run = run(port, true);
    let ctx = run.begin_test(TestStarted::new("tls").with_application(Some("secure".into())));
    let response = ctx.rest().get("/").try_send().await.unwrap();
    response.should().have_http_status(http::StatusCode::OK);
    assert_eq!(response.content(), "hello over TLS");
}
