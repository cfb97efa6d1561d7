//! Helpers shared by this crate's integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::Router;

/// Serves `router` on 127.0.0.1:0 from a thread of its own; returns its base URL.
pub(crate) fn serve(router: Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, router).await.unwrap();
        });
    });
    format!("http://{address}")
}
