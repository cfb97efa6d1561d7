//! Helpers shared by this crate's integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::Router;

/// The name of the thread [`serve`] runs its server on (the benches tell its CPU time apart).
pub(crate) const SERVER_THREAD: &str = "test-server";

/// Serves `router` on 127.0.0.1:0 from a thread of its own; returns its base URL.
pub(crate) fn serve(router: Router) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::Builder::new()
        .name(SERVER_THREAD.into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, router).await.unwrap();
            });
        })
        .unwrap();
    format!("http://{address}")
}

/// Runs `n` tests at once as the test runner does, each on a thread of its own with a
/// current-thread runtime of its own, and returns what each gave, in order. `test(i, start)`
/// makes test `i`'s body; it waits on `start` where the tests should go together.
pub(crate) fn on_parallel_threads<T, F, Fut>(n: usize, test: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize, std::sync::Arc<std::sync::Barrier>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T>,
{
    let test = std::sync::Arc::new(test);
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (test, start) = (std::sync::Arc::clone(&test), std::sync::Arc::clone(&start));
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(test(i, start))
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}
