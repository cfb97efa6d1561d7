//! Registering REST clients on the host and on applications.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kit_core::{
    ApplicationBuilder, Capability, Collector, CollectorFactory, KitExecutionContext,
    KitHttpAttachmentOptions, Registrar, RestResponseOptions,
};

use crate::auth::AuthScheme;
use crate::client::BoxUrlFuture;

use crate::server::InProcessServer;

/// A `reqwest::ClientBuilder` callback.
pub(crate) type Configure = Arc<dyn Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder + Send + Sync>;

/// A per-test base-address resolver.
#[derive(Clone)]
pub(crate) enum Resolver {
    Sync(Arc<dyn Fn(&KitExecutionContext) -> url::Url + Send + Sync>),
    Async(Arc<dyn Fn(KitExecutionContext) -> BoxUrlFuture + Send + Sync>),
}

/// One `add_client()` registration.
#[derive(Clone, Default)]
pub(crate) struct ClientRegistration {
    pub(crate) name: Option<String>,
    pub(crate) base_url: Option<url::Url>,
    pub(crate) endpoint: Option<String>,
    pub(crate) configure: Vec<Configure>,
    pub(crate) resolver: Option<Resolver>,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("name", &self.name)
            .field("base_url", &self.base_url.as_ref().map(url::Url::as_str))
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl ClientRegistration {
    /// The name the client answers to: its own, or `Default`.
    pub(crate) fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_CLIENT)
    }
}

/// The name of a client registered without one.
pub const DEFAULT_CLIENT: &str = "Default";

/// An attachment-options callback of `capture_attachments`.
pub(crate) type AttachmentCallback = Arc<dyn Fn(&mut KitHttpAttachmentOptions) + Send + Sync>;
/// A response-options callback of `configure_responses`.
pub(crate) type ResponseCallback = Arc<dyn Fn(&mut RestResponseOptions) + Send + Sync>;

/// Orders callbacks registered on different builders (the host's, each application's) by when
/// they were registered: options are per protocol, not per application.
static REGISTRATION_ORDER: AtomicU64 = AtomicU64::new(0);

fn next_order() -> u64 {
    REGISTRATION_ORDER.fetch_add(1, Ordering::Relaxed)
}

/// What an application (or the host, for host-level clients) registered for REST.
/// Kept in the builders' extensions.
#[derive(Default, Clone)]
pub(crate) struct RestRegistration {
    pub(crate) clients: Vec<ClientRegistration>,
    /// True once `capture_attachments` was called.
    pub(crate) capture: bool,
    pub(crate) attachment_callbacks: Vec<(u64, AttachmentCallback)>,
    pub(crate) response_callbacks: Vec<(u64, ResponseCallback)>,
    /// `default_auth`: the first registration wins.
    pub(crate) default_auth: Option<Arc<dyn AuthScheme>>,
}

impl fmt::Debug for RestRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestRegistration")
            .field("clients", &self.clients)
            .field("capture", &self.capture)
            .finish_non_exhaustive()
    }
}

/// Registers REST clients: the argument of `add_rest`.
pub struct RestBuilder<'a> {
    registration: &'a mut RestRegistration,
    collectors: Vec<CollectorFactory>,
    errors: Vec<String>,
    owner: String,
}

impl fmt::Debug for RestBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestBuilder")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl<'a> RestBuilder<'a> {
    /// Adds a client and returns its target builder. A client registered under a name
    /// already taken is ignored when resolving (the first registration wins).
    pub fn add_client(&mut self) -> RestClientTarget<'_, 'a> {
        self.registration.clients.push(ClientRegistration::default());
        RestClientTarget { builder: self }
    }

    /// Turns attachments on for REST (`rest-NN-request`, `rest-NN-response`,
    /// `rest-NN-expected-shape`) and adjusts their options. Every call applies, in
    /// registration order (on the host and on every application); then
    /// `Kit:Rest:Attachments` is bound over the result. Requests are traced either way.
    ///
    /// The options' sensitive lists and redaction switch apply to traces and failure messages
    /// too, not only to attachments.
    pub fn capture_attachments(
        &mut self,
        configure: impl Fn(&mut KitHttpAttachmentOptions) + Send + Sync + 'static,
    ) -> &mut Self {
        self.registration.capture = true;
        self.registration
            .attachment_callbacks
            .push((next_order(), Arc::new(configure)));
        self
    }

    /// Authenticates every request of this application's clients (or of the host-level
    /// clients) with `scheme`, unless the request or the test says otherwise. The first
    /// registration wins.
    pub fn default_auth(&mut self, scheme: impl AuthScheme) -> &mut Self {
        if self.registration.default_auth.is_none() {
            self.registration.default_auth = Some(Arc::new(scheme));
        }
        self
    }

    /// Adjusts REST's response options (`max_response_body_bytes`,
    /// `max_diagnostic_body_length`). The first registration wins; `Kit:Rest:Responses` is
    /// bound over it.
    pub fn configure_responses(
        &mut self,
        configure: impl Fn(&mut RestResponseOptions) + Send + Sync + 'static,
    ) -> &mut Self {
        self.registration
            .response_callbacks
            .push((next_order(), Arc::new(configure)));
        self
    }
}

/// Configures one client; returned by [`RestBuilder::add_client`], which has already
/// registered it (a target may be dropped unconfigured: that is a default client).
pub struct RestClientTarget<'b, 'a> {
    builder: &'b mut RestBuilder<'a>,
}

impl fmt::Debug for RestClientTarget<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestClientTarget")
            .field("client", self.client())
            .finish()
    }
}

impl RestClientTarget<'_, '_> {
    fn client(&self) -> &ClientRegistration {
        // `add_client` pushed this target's registration last, and the target borrows the
        // builder mutably, so nothing was pushed since.
        match self.builder.registration.clients.last() {
            Some(c) => c,
            None => unreachable!("a client target exists only after add_client"),
        }
    }

    fn client_mut(&mut self) -> &mut ClientRegistration {
        match self.builder.registration.clients.last_mut() {
            Some(c) => c,
            None => unreachable!("a client target exists only after add_client"),
        }
    }

    /// Names the client. Omit it when the application has one client.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.client_mut().name = Some(name.into());
        self
    }

    /// Sets an absolute base URL, which wins over the application's `BaseUrl`. A URL that is
    /// not absolute makes the host fail to build, with an error naming the client and value.
    pub fn base_url(mut self, url: &str) -> Self {
        match url::Url::parse(url) {
            Ok(parsed) if parsed.has_host() => self.client_mut().base_url = Some(parsed),
            _ => {
                let owner = self.builder.owner.clone();
                let name = self.client().name().to_owned();
                self.builder.errors.push(format!(
                    "REST client '{name}' of {owner}: base URL {url:?} is not an absolute URL (expected something like \"https://host/path\")"
                ));
            }
        }
        self
    }

    /// Appends the path configured as `Kit:Applications:{application}:Endpoints:{endpoint}` to
    /// the application's base URL.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.client_mut().endpoint = Some(endpoint.into());
        self
    }

    /// Adds a callback that configures the `reqwest::ClientBuilder` of every client built from
    /// this registration (timeouts, proxies, TLS roots, default headers).
    pub fn configure(
        mut self,
        callback: impl Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder + Send + Sync + 'static,
    ) -> Self {
        self.client_mut().configure.push(Arc::new(callback));
        self
    }

    /// Resolves the base address per test, at request time: the resolver wins over the
    /// client's base URL and the application's. Called for every request.
    pub fn resolve_with(
        mut self,
        resolver: impl Fn(&KitExecutionContext) -> url::Url + Send + Sync + 'static,
    ) -> Self {
        self.client_mut().resolver = Some(Resolver::Sync(Arc::new(resolver)));
        self
    }

    /// Resolves the base address per test, at request time, asynchronously (ask a service
    /// registry, wait for a container). Called for every request.
    pub fn resolve_with_async<F, Fut>(mut self, resolver: F) -> Self
    where
        F: Fn(KitExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = url::Url> + Send + 'static,
    {
        let boxed = move |ctx: KitExecutionContext| -> BoxUrlFuture { Box::pin(resolver(ctx)) };
        self.client_mut().resolver = Some(Resolver::Async(Arc::new(boxed)));
        self
    }

    /// Puts a collector of type `C` on the bus (once, however many clients ask for it).
    pub fn add_collector<C: Collector + Default>(self) -> Self {
        self.builder.collectors.push(CollectorFactory::of::<C>());
        self
    }
}

/// The REST capability every `add_rest` declares.
pub fn rest_capability() -> Capability {
    Capability::protocol("REST")
}

/// `add_rest` on the host builder (clients that belong to no application) and on application
/// builders (clients that share the application's base URL).
pub trait RestRegistrarExt: Registrar + Sized {
    /// Registers REST. Repeated calls never fail; each callback adds its clients; the shared
    /// setup (the REST capability, the registration itself) happens once.
    fn add_rest(&mut self, configure: impl FnOnce(&mut RestBuilder<'_>)) -> &mut Self {
        self.add_capability(rest_capability());
        let owner = self.describe();
        let registration = self
            .extensions_mut()
            .get_or_insert_with(RestRegistration::default);
        let mut builder = RestBuilder {
            registration,
            collectors: Vec::new(),
            errors: Vec::new(),
            owner,
        };
        configure(&mut builder);
        let RestBuilder {
            collectors, errors, ..
        } = builder;
        for factory in collectors {
            self.add_collector_factory(factory);
        }
        for error in errors {
            self.record_error(error);
        }
        self
    }
}

impl<R: Registrar> RestRegistrarExt for R {}

/// `add_in_process_server` on an application builder.
pub trait InProcessServerExt {
    /// Serves the application in-process: `factory` makes an axum `Router` (or any tower
    /// service), which the kit serves on a loopback port it picks, on a runtime of its own,
    /// the first time a client of this application needs it. Clients with no base URL of
    /// their own use it. A configured `Kit:Applications:{app}:BaseUrl` wins: the server is
    /// then never started.
    fn add_in_process_server<F, S>(&mut self, factory: F) -> &mut Self
    where
        F: FnOnce() -> S + Send + 'static,
        S: crate::server::IntoInProcessService;
}

impl InProcessServerExt for ApplicationBuilder {
    fn add_in_process_server<F, S>(&mut self, factory: F) -> &mut Self
    where
        F: FnOnce() -> S + Send + 'static,
        S: crate::server::IntoInProcessService,
    {
        let name = self.name().to_owned();
        self.extensions_mut().insert(InProcessServer::new(name, factory));
        self
    }
}
