//! The in-process server: an application under test served on loopback by the kit.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, OnceLock, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::Request;
use tower::Service;

/// What `add_in_process_server` accepts: an axum `Router`, or any tower service of axum's
/// request and response types.
pub trait IntoInProcessService: Send + 'static {
    /// The service as a router.
    fn into_router(self) -> Router;
}

impl<S> IntoInProcessService for S
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    fn into_router(self) -> Router {
        Router::new().fallback_service(self)
    }
}

type Factory = Box<dyn FnOnce() -> Router + Send>;

/// An application's in-process server, started the first time a client needs it and then
/// shared by every test of the binary.
pub(crate) struct InProcessServer {
    application: String,
    factory: Mutex<Option<Factory>>,
    address: OnceLock<Result<SocketAddr, String>>,
}

impl InProcessServer {
    pub(crate) fn new<F, S>(application: String, factory: F) -> Self
    where
        F: FnOnce() -> S + Send + 'static,
        S: IntoInProcessService,
    {
        InProcessServer {
            application,
            factory: Mutex::new(Some(Box::new(move || factory().into_router()))),
            address: OnceLock::new(),
        }
    }

    /// The server's address, starting it if it is not running.
    pub(crate) fn address(&self) -> Result<SocketAddr, String> {
        self.address.get_or_init(|| self.start()).clone()
    }

    fn start(&self) -> Result<SocketAddr, String> {
        let failed = |why: String| {
            format!(
                "the in-process server of application '{}' did not start: {why}",
                self.application
            )
        };
        let factory = self
            .factory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| failed("it was already started once".into()))?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| failed(format!("cannot bind 127.0.0.1:0: {e}")))?;
        let address = listener.local_addr().map_err(|e| failed(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| failed(e.to_string()))?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        // The server gets a thread and a runtime of its own: a server spawned on one test's
        // runtime would die when that test ends.
        std::thread::Builder::new()
            .name(format!("kit-server-{}", self.application))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("cannot start its runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    // Built inside the runtime, so a factory may spawn tasks or open pools.
                    let router = match catch_unwind(AssertUnwindSafe(factory)) {
                        Ok(router) => router,
                        Err(payload) => {
                            let _ = ready_tx.send(Err(format!(
                                "its factory panicked: {}",
                                kit_core::panic_message(&*payload)
                            )));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    // Serves until the process exits; an accept error ends only this server.
                    let _ = axum::serve(listener, router).await;
                });
            })
            .map_err(|e| failed(format!("cannot spawn its thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(address),
            Ok(Err(why)) => Err(failed(why)),
            Err(_) => Err(failed("its thread ended before it was ready".into())),
        }
    }
}

impl std::fmt::Debug for InProcessServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessServer")
            .field("application", &self.application)
            .field("address", &self.address.get())
            .finish_non_exhaustive()
    }
}
