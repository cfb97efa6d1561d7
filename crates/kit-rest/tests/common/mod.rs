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

/// A run of a host whose bus writes a real archive into a temporary folder, `collectors`
/// beside the writer, as the runner starts one.
pub(crate) struct ArchivedRun {
    pub(crate) run: kit_core::KitRun,
    /// The archive's path, for reading it back.
    pub(crate) archive: std::path::PathBuf,
    /// Removed when the run is dropped, after its bus is shut.
    _dir: tempfile::TempDir,
}

impl ArchivedRun {
    /// Starts the run `run_id` (also the archive's name) of `host`.
    pub(crate) fn start(
        host: kit_core::Host,
        collectors: Vec<Box<dyn kit_core::Collector>>,
        run_id: &str,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let secrets = std::sync::Arc::new(kit_core::SecretRegistry::new());
        let run_id = kit_core::RunId::new(run_id).unwrap();
        let writer =
            kit_trace::ArchiveWriter::create(dir.path(), kit_trace::RunManifest::new(run_id.clone(), "test"))
                .unwrap()
                .with_secrets(std::sync::Arc::clone(&secrets));
        let archive = writer.path().to_owned();
        let bus = kit_core::Bus::builder()
            .collector(writer)
            .collectors(collectors)
            .start();
        ArchivedRun {
            run: kit_core::KitRun::with_secrets(host, bus, run_id, secrets),
            archive,
            _dir: dir,
        }
    }
}

/// The bus stops, its archive writer done and gone, before the folder is removed. Dropped
/// with the bus running, the dispatcher could still be committing when the folder went, and
/// the archive was left behind in the temporary directory (three of four runs of this
/// crate's tests left one).
impl Drop for ArchivedRun {
    fn drop(&mut self) {
        // Fails only if the bus was shut already: nothing is left to wait for then.
        let _ = self.run.bus().shutdown();
    }
}
