//! A 1 GiB streamed response against the default 10 MiB cap, in a process of its own so that
//! its peak memory can be read: it fails fast with the error, without buffering past the cap.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::routing::get;
use kit_core::*;
use kit_rest::*;

mod common;
use common::serve;

const GIB: u64 = 1024 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;

/// Peak resident memory of this process, from `/proc/self/status` (`VmHWM`, what
/// `/usr/bin/time -v` reports as maximum resident set size), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_one_gib_streamed_body_fails_fast_at_the_cap_and_memory_stays_low() {
    let sent = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&sent);
    // 1 GiB, made chunk by chunk as the client reads, with no Content-Length: only a running
    // cap can stop it.
    let server = serve(Router::new().route(
        "/huge",
        get(move || {
            let counter = Arc::clone(&counter);
            async move {
                let chunk = Bytes::from(vec![b'x'; CHUNK]);
                let stream = futures_util::stream::unfold(0u64, move |done| {
                    let chunk = chunk.clone();
                    let counter = Arc::clone(&counter);
                    async move {
                        if done >= GIB {
                            return None;
                        }
                        counter.fetch_add(CHUNK as u64, Ordering::Relaxed);
                        Some((Ok::<_, std::io::Error>(chunk), done + CHUNK as u64))
                    }
                });
                Body::from_stream(stream)
            }
        }),
    ));
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_rest(|rest| {
        rest.add_client().base_url(&server);
    });
    let built = builder.build().unwrap();
    let run = KitRun::with_secrets(
        built.host,
        Bus::builder().start(),
        RunId::new("huge").unwrap(),
        Arc::new(SecretRegistry::new()),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = rt.block_on(async {
        let ctx = run.begin_test(TestStarted::new("huge"));
        ctx.rest().get("/huge").try_send().await.unwrap_err()
    });
    assert!(
        matches!(
            error,
            RestError::BodyTooLarge {
                limit: 10_485_760,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "GET /huge - the response body is larger than MaxResponseBodyBytes (10485760 bytes); reading stopped there. \
         Raise Kit:Rest:Responses:MaxResponseBodyBytes if such a body is expected"
    );
    // Fast: the server got to send little more than the cap (plus what sockets buffer).
    let sent_mib = sent.load(Ordering::Relaxed) / (1024 * 1024);
    assert!(
        sent_mib < 64,
        "the server sent {sent_mib} MiB before the client stopped"
    );
    let peak_mib = peak_rss_kib() / 1024;
    println!("1 GiB streamed body: failed after the server sent {sent_mib} MiB; peak RSS {peak_mib} MiB");
    assert!(peak_mib < 64, "peak RSS {peak_mib} MiB");
}
