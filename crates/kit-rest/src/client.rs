//! Client resolution: from a test and an optional name to a built, per-test client.
//!
//! `ctx.rest_named(name)` tries, in order (`ctx.rest()` starts at step 2):
//!
//! 1. the requested name: an application-qualified name (`orders:payments`) is exact;
//!    otherwise `{bound application}:{name}`, then the name as given (a host-level client),
//!    then the one application client of that name anywhere (several: an error naming each);
//! 2. the client bound by `#[application("app", "Rest:client")]`;
//! 3. the bound application's first registered client;
//! 4. the client named `Default` (host-level, else the one application client so named).
//!
//! When nothing resolves, the error lists every registered client.
//!
//! A resolved client's base address, strongest first: its per-test resolver
//! (`resolve_with`), its explicit `base_url`, an address a started piece of the application
//! published, the configured `Kit:Applications:{app}:BaseUrl` (with the client's endpoint
//! appended), the application's in-process server (rooted at the client's endpoint, else at
//! the requested name as an endpoint).

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kit_core::{Host, KitExecutionContext};
use url::Url;

use crate::RestError;
use crate::registration::{ClientRegistration, Configure, DEFAULT_CLIENT, Resolver, RestRegistration};
use crate::server::InProcessServer;

/// Where a client's base address comes from at request time.
#[derive(Clone)]
pub(crate) enum BaseAddress {
    /// Known when the client was built.
    Fixed(Url),
    /// Asked of the client's resolver for every request.
    Resolved(Resolver),
}

/// A client resolved for one test: its own `reqwest::Client` (so its own cookie jar) and
/// base address.
pub(crate) struct ResolvedClient {
    pub(crate) client: reqwest::Client,
    pub(crate) base: BaseAddress,
    /// The qualified name (`orders:Default`, or the name alone for host-level clients).
    pub(crate) target: Arc<str>,
    /// The entity its events name: `client:reqwest::Client:Rest:{target}`, made once.
    pub(crate) entity: Arc<str>,
    /// The application the client belongs to.
    pub(crate) application: Option<String>,
    /// The default authentication registered for it.
    pub(crate) default_auth: Option<Arc<dyn crate::auth::AuthScheme>>,
    /// The scheme its application's `Auth:Default` key names in the configuration, made when
    /// resolved (the configuration does not change, and a scheme keeps no state of its own:
    /// tokens and sign-ins are kept by the host and the test), or why it cannot be. Looking
    /// the key up for every request cost as much as the rest of choosing its scheme, and the
    /// scheme was made again from its section each time.
    pub(crate) configured_auth: Option<Result<Arc<dyn crate::auth::AuthScheme>, crate::auth::AuthError>>,
}

impl std::fmt::Debug for ResolvedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedClient")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl ResolvedClient {
    /// The base address for a request of `ctx`: borrowed when it is fixed, since each request
    /// joins its path onto a copy of its own anyway.
    pub(crate) async fn base_for(&self, ctx: &KitExecutionContext) -> Result<Cow<'_, Url>, RestError> {
        match &self.base {
            BaseAddress::Fixed(url) => Ok(Cow::Borrowed(url)),
            BaseAddress::Resolved(resolver) => {
                let url = match resolver {
                    Resolver::Sync(f) => f(ctx),
                    Resolver::Async(f) => f(ctx.clone()).await,
                };
                if url.has_host() {
                    Ok(Cow::Owned(url))
                } else {
                    Err(RestError::Client(format!(
                        "the resolver of REST client '{}' returned {url}, which is not an absolute URL",
                        self.target
                    )))
                }
            }
        }
    }
}

/// The `reqwest` clients one test has built, by qualified client name: one cookie jar per
/// test per client, however the client was reached. Kept in the test's extensions, so no
/// other test ever sees them.
#[derive(Default)]
struct TestClients(HashMap<String, reqwest::Client>);

/// Addresses started pieces of applications published, by application (lower case), and how
/// many publications there have been: a test's resolved base address stays good while that
/// count has not moved.
#[derive(Default)]
struct PublishedAddresses {
    by_application: Mutex<HashMap<String, Url>>,
    generation: AtomicU64,
}

impl PublishedAddresses {
    fn of(host: &Host) -> Arc<Self> {
        host.singleton(|_| PublishedAddresses::default())
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// Publishes the address a started piece of `application` serves at (a container, a server
/// the suite started itself). Clients of the application that have no explicit `base_url`
/// use it from then on, over the configured `BaseUrl`; their endpoint is appended as it would
/// be to `BaseUrl`.
///
/// Fails when `url` is not an absolute URL.
pub fn publish_address(host: &Host, application: &str, url: &str) -> Result<(), RestError> {
    let parsed = Url::parse(url).ok().filter(Url::has_host).ok_or_else(|| {
        RestError::Client(format!(
            "the address published for application '{application}' is {url:?}, which is not an absolute URL"
        ))
    })?;
    let published = PublishedAddresses::of(host);
    published
        .by_application
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(application.to_ascii_lowercase(), parsed);
    // After the address is in: a resolution that read the count before this reads it again
    // as changed, and works its base out anew.
    published.generation.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

fn published(host: &Host, application: &str) -> Option<Url> {
    PublishedAddresses::of(host)
        .by_application
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&application.to_ascii_lowercase())
        .cloned()
}

/// One registered client, where it was registered, and the `configure` callbacks of later
/// registrations of the same name (which are otherwise ignored, but whose callbacks compose).
struct Candidate<'h> {
    application: Option<&'h str>,
    registration: &'h ClientRegistration,
    more_configure: Vec<&'h Configure>,
}

impl Candidate<'_> {
    fn qualified(&self) -> String {
        qualified(self.application, self.registration)
    }
}

fn qualified(application: Option<&str>, registration: &ClientRegistration) -> String {
    match application {
        Some(app) => format!("{app}:{}", registration.name()),
        None => registration.name().to_owned(),
    }
}

/// Every client, host-level first, then each application's in registration order; a name
/// registered twice is one candidate, the first registration.
fn candidates(host: &Host) -> Vec<Candidate<'_>> {
    let mut out: Vec<Candidate<'_>> = Vec::new();
    let host_level = host
        .extensions()
        .get::<RestRegistration>()
        .into_iter()
        .map(|r| (None, r));
    let per_app = host.applications().iter().filter_map(|a| {
        a.extensions()
            .get::<RestRegistration>()
            .map(|r| (Some(a.name()), r))
    });
    for (application, registration) in host_level.chain(per_app) {
        for client in &registration.clients {
            let name = qualified(application, client);
            match out.iter_mut().find(|c| c.qualified().eq_ignore_ascii_case(&name)) {
                Some(first) => first.more_configure.extend(&client.configure),
                None => out.push(Candidate {
                    application,
                    registration: client,
                    more_configure: Vec::new(),
                }),
            }
        }
    }
    out
}

/// The one application client named `name`; an error naming every candidate when several
/// applications share it.
fn unique_by_name(all: &[Candidate<'_>], name: &str) -> Result<Option<usize>, RestError> {
    let matches: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, c)| c.application.is_some() && c.registration.name().eq_ignore_ascii_case(name))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(RestError::Resolution(format!(
            "the REST client name '{name}' is registered by several applications: {}; qualify it, e.g. rest_named(\"{}\")",
            many.iter()
                .map(|i| all[*i].qualified())
                .collect::<Vec<_>>()
                .join(", "),
            all[many[0]].qualified()
        ))),
    }
}

fn pick<'h>(
    host: &'h Host,
    ctx: &KitExecutionContext,
    requested: Option<&str>,
) -> Result<Candidate<'h>, RestError> {
    let mut all = candidates(host);
    let named = |name: &str| all.iter().position(|c| c.qualified().eq_ignore_ascii_case(name));
    let bound_app = ctx.application();
    let step_1 = || -> Result<Option<usize>, RestError> {
        let Some(name) = requested else { return Ok(None) };
        if name.contains(':') {
            // An already qualified name is exact.
            return Ok(named(name));
        }
        if let Some(i) = bound_app
            .and_then(|app| named(&format!("{app}:{name}")))
            .or_else(|| named(name))
        {
            return Ok(Some(i));
        }
        unique_by_name(&all, name)
    };
    let step_2 = || {
        let client = ctx
            .client_binding()
            .and_then(|b| b.split_once(':'))
            .filter(|(protocol, _)| protocol.eq_ignore_ascii_case("rest"))
            .map(|(_, client)| client)?;
        named(&format!("{}:{client}", bound_app?))
    };
    let step_3 = || {
        let app = bound_app?;
        all.iter()
            .position(|c| c.application.is_some_and(|a| a.eq_ignore_ascii_case(app)))
    };
    let step_4 = || -> Result<Option<usize>, RestError> {
        match named(DEFAULT_CLIENT) {
            Some(i) => Ok(Some(i)),
            None => unique_by_name(&all, DEFAULT_CLIENT),
        }
    };
    let found = match step_1()? {
        Some(i) => Some(i),
        None => match step_2().or_else(step_3) {
            Some(i) => Some(i),
            None => step_4()?,
        },
    };
    match found {
        Some(i) => Ok(all.swap_remove(i)),
        None => {
            let names: Vec<String> = all.iter().map(Candidate::qualified).collect();
            let wanted = match requested {
                Some(name) => format!("the REST client '{name}'"),
                None => "a REST client".to_owned(),
            };
            let binding = match bound_app {
                Some(app) => format!(" (bound to application '{app}')"),
                None => String::new(),
            };
            Err(RestError::Resolution(format!(
                "cannot resolve {wanted} for test '{}'{binding}; registered REST clients: {}",
                ctx.test_name(),
                if names.is_empty() {
                    "none (register one with add_rest)".to_owned()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

/// The default authentication registered where the client was: its application's
/// `add_rest`, or the host's for host-level clients.
fn default_auth(host: &Host, application: Option<&str>) -> Option<Arc<dyn crate::auth::AuthScheme>> {
    let registration = match application {
        Some(app) => host.application(app)?.extensions().get::<RestRegistration>(),
        None => host.extensions().get::<RestRegistration>(),
    };
    registration?.default_auth.clone()
}

/// Joins a base URL and a relative path: `http://h/api` + `/v1/orders` is
/// `http://h/api/v1/orders`. The base's path is kept, unlike RFC 3986 resolution, which
/// would drop it for a path starting with `/`.
pub(crate) fn join_path(base: &Url, path: &str) -> Result<Url, url::ParseError> {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let mut url = base.clone();
    let (base_path, path) = (base.path().trim_end_matches('/'), path.trim_start_matches('/'));
    // Pushed, not `format!`ted: this runs for every request.
    let mut joined = String::with_capacity(base_path.len() + 1 + path.len());
    joined.push_str(base_path);
    joined.push('/');
    joined.push_str(path);
    url.set_path(&joined);
    if let Some(query) = query {
        let combined = match base.query() {
            Some(existing) if !existing.is_empty() => format!("{existing}&{query}"),
            _ => query.to_owned(),
        };
        url.set_query(Some(&combined));
    }
    Ok(url)
}

fn base_address(
    host: &Host,
    candidate: &Candidate<'_>,
    requested: Option<&str>,
) -> Result<BaseAddress, RestError> {
    // Named only in errors: formatting it for every request cost more than the rest.
    let qualified = || candidate.qualified();
    let registration = candidate.registration;
    if let Some(resolver) = &registration.resolver {
        return Ok(BaseAddress::Resolved(resolver.clone()));
    }
    if let Some(url) = &registration.base_url {
        return Ok(BaseAddress::Fixed(url.clone()));
    }
    let Some(app_name) = candidate.application else {
        return Err(RestError::Client(format!(
            "the host-level REST client '{}' has no base URL; give it one with .base_url(\"https://…\") or .resolve_with(…)",
            qualified()
        )));
    };
    let config = host.configuration();
    let app_section = format!("Kit:Applications:{app_name}");
    let endpoint_path = |name: &str, required: bool| -> Result<Option<String>, RestError> {
        let key = format!("{app_section}:Endpoints:{name}");
        match config.get(&key) {
            Some(path) => Ok(Some(path.to_owned())),
            None if required => Err(RestError::Client(format!(
                "REST client '{}' uses endpoint '{name}', but {key} is not configured",
                qualified()
            ))),
            None => Ok(None),
        }
    };
    let under_endpoint = |base: Url| -> Result<BaseAddress, RestError> {
        match &registration.endpoint {
            Some(endpoint) => {
                let path = endpoint_path(endpoint, true)?.unwrap_or_default();
                join_path(&base, &path)
                    .map(BaseAddress::Fixed)
                    .map_err(|e| RestError::Client(format!("{}: {e}", qualified())))
            }
            None => Ok(BaseAddress::Fixed(base)),
        }
    };
    if let Some(url) = published(host, app_name) {
        return under_endpoint(url);
    }
    let base_key = format!("{app_section}:BaseUrl");
    if let Some(text) = config.get(&base_key) {
        let base = Url::parse(text).ok().filter(Url::has_host).ok_or_else(|| {
            RestError::Client(format!(
                "{base_key} (from {}) is {text:?}, which is not an absolute URL",
                config.origin(&base_key).unwrap_or("configuration")
            ))
        })?;
        return under_endpoint(base);
    }
    let application = host.application(app_name);
    if let Some(server) = application.and_then(|a| a.extensions().get::<InProcessServer>()) {
        let address = server.address().map_err(RestError::Client)?;
        let base = Url::parse(&format!("http://{address}/")).map_err(|e| RestError::Client(e.to_string()))?;
        // Rooted at the client's endpoint, else at the requested name as an endpoint.
        let path = match (&registration.endpoint, requested) {
            (Some(endpoint), _) => endpoint_path(endpoint, true)?,
            (None, Some(name)) if !name.contains(':') => endpoint_path(name, false)?,
            _ => None,
        };
        return match path {
            Some(path) => join_path(&base, &path)
                .map(BaseAddress::Fixed)
                .map_err(|e| RestError::Client(format!("{}: {e}", qualified()))),
            None => Ok(BaseAddress::Fixed(base)),
        };
    }
    Err(RestError::Client(format!(
        "REST client '{}' has no base address: configure {base_key} (or the environment variable \
         Kit__Applications__{app_name}__BaseUrl), give the client .base_url(\"https://…\"), or add an in-process server",
        qualified()
    )))
}

/// What one test's requests resolved, by requested name. The registrations and the test's
/// bindings do not change while it runs, so the pick (which names every candidate) is made
/// once per test and name, not per request. The base address is kept while no address has
/// been published since it was worked out (a started piece of an application may publish one
/// meanwhile), and worked out again when one has.
#[derive(Default)]
struct TestResolutions(Vec<(Option<String>, Resolution)>);

impl TestResolutions {
    /// Keeps `resolution` for `requested` in `ctx`'s test, over any kept before.
    fn keep(ctx: &KitExecutionContext, requested: Option<&str>, resolution: Resolution) {
        ctx.with_extensions(|ext| {
            let kept = &mut ext.get_or_insert_with(TestResolutions::default).0;
            match kept.iter_mut().find(|(name, _)| name.as_deref() == requested) {
                Some((_, old)) => *old = resolution,
                None => kept.push((requested.map(str::to_owned), resolution)),
            }
        });
    }
}

#[derive(Clone)]
struct Resolution {
    resolved: Arc<ResolvedClient>,
    /// How to tell the base address is stale and work it out again; `None` when the
    /// registration fixes it (a `base_url`, or a resolver that runs per request anyway).
    again: Option<Again>,
}

#[derive(Clone)]
struct Again {
    /// Where the registration is (its application's index, or none for the host's, and its
    /// index there).
    at: (Option<usize>, usize),
    published: Arc<PublishedAddresses>,
    /// The count of publications read before the base address was worked out: configuration
    /// and in-process servers' addresses never change, so the base is good while it holds.
    generation: u64,
}

/// The registered client at `at` (see [`Again::at`]).
fn candidate_at(host: &Host, (application, index): (Option<usize>, usize)) -> Option<Candidate<'_>> {
    let (application, registration) = match application {
        Some(i) => {
            let app = host.applications().get(i)?;
            (Some(app.name()), app.extensions().get::<RestRegistration>()?)
        }
        None => (None, host.extensions().get::<RestRegistration>()?),
    };
    Some(Candidate {
        application,
        registration: registration.clients.get(index)?,
        more_configure: Vec::new(),
    })
}

/// Where `candidate`'s registration is in `host`, for [`candidate_at`].
fn locate(host: &Host, candidate: &Candidate<'_>) -> Option<(Option<usize>, usize)> {
    let (application, registration) = match candidate.application {
        Some(name) => {
            let i = host.applications().iter().position(|a| a.name() == name)?;
            (
                Some(i),
                host.applications()[i].extensions().get::<RestRegistration>()?,
            )
        }
        None => (None, host.extensions().get::<RestRegistration>()?),
    };
    let index = registration
        .clients
        .iter()
        .position(|c| std::ptr::eq(c, candidate.registration))?;
    Some((application, index))
}

/// The test's client for `requested` (or the one resolution picks), built on first use.
pub(crate) fn resolve(
    ctx: &KitExecutionContext,
    requested: Option<&str>,
) -> Result<Arc<ResolvedClient>, RestError> {
    let host = ctx.host();
    let known = ctx.with_extensions(|ext| {
        ext.get::<TestResolutions>().and_then(|r| {
            r.0.iter()
                .find(|(name, _)| name.as_deref() == requested)
                .map(|(_, resolution)| resolution.clone())
        })
    });
    match known {
        Some(Resolution {
            resolved,
            again: None,
        }) => return Ok(resolved),
        Some(Resolution {
            resolved,
            again: Some(again),
        }) => {
            let generation = again.published.generation();
            if generation == again.generation {
                return Ok(resolved);
            }
            // The registrations never change, so the candidate is found again; were it not,
            // the pick below is made afresh rather than keeping a stale base.
            if let Some(candidate) = candidate_at(host, again.at) {
                let renewed = Arc::new(ResolvedClient {
                    client: resolved.client.clone(),
                    base: base_address(host, &candidate, requested)?,
                    target: resolved.target.clone(),
                    entity: Arc::clone(&resolved.entity),
                    application: resolved.application.clone(),
                    default_auth: resolved.default_auth.clone(),
                    configured_auth: resolved.configured_auth.clone(),
                });
                let resolution = Resolution {
                    resolved: Arc::clone(&renewed),
                    again: Some(Again { generation, ..again }),
                };
                TestResolutions::keep(ctx, requested, resolution);
                return Ok(renewed);
            }
        }
        None => {}
    }
    let candidate = pick(host, ctx, requested)?;
    let qualified = candidate.qualified();
    // Read before the base is worked out, so that a publication meanwhile makes it stale.
    let published = PublishedAddresses::of(host);
    let generation = published.generation();
    // The requested name can choose the in-process endpoint, so the base is worked out per
    // requested name; the client (and its cookie jar) is the test's one for this name.
    let base = base_address(host, &candidate, requested)?;
    let cached = ctx.with_extensions(|ext| {
        ext.get::<TestClients>()
            .and_then(|c| c.0.get(&qualified).cloned())
    });
    let client = match cached {
        Some(client) => client,
        None => build_client(ctx, &candidate, &qualified)?,
    };
    let resolved = Arc::new(ResolvedClient {
        client,
        base,
        entity: Arc::from(format!("client:reqwest::Client:Rest:{qualified}")),
        target: Arc::from(qualified),
        application: candidate.application.map(str::to_owned),
        default_auth: default_auth(host, candidate.application),
        configured_auth: crate::auth::configured_default(ctx.configuration(), candidate.application),
    });
    let fixed = candidate.registration.resolver.is_some() || candidate.registration.base_url.is_some();
    // A registration that cannot be found again (none today) is resolved afresh each time.
    let again = if fixed {
        None
    } else {
        locate(host, &candidate).map(|at| Again {
            at,
            published,
            generation,
        })
    };
    if fixed || again.is_some() {
        let resolution = Resolution {
            resolved: Arc::clone(&resolved),
            again,
        };
        TestResolutions::keep(ctx, requested, resolution);
    }
    Ok(resolved)
}

fn build_client(
    ctx: &KitExecutionContext,
    candidate: &Candidate<'_>,
    qualified: &str,
) -> Result<reqwest::Client, RestError> {
    let mut builder = reqwest::Client::builder()
        .cookie_store(true)
        // A 3xx and its Location must reach the test's assertions.
        .redirect(reqwest::redirect::Policy::none());
    // A server that never answers fails the test instead of hanging it; set before the
    // callbacks, so that a client's own `timeout` wins.
    if let Some(timeout) = crate::settings::for_attachments(ctx).responses.timeout {
        builder = builder.timeout(timeout);
    }
    // Without callbacks, the client gets the process's TLS configuration: reqwest's own loads
    // and parses every root certificate of the platform, milliseconds that would otherwise be
    // paid by every test (the shared one loads them once, at the process's first handshake).
    // A callback may change TLS settings, which a preconfigured backend would silently
    // override, so its clients build their own.
    if candidate.registration.configure.is_empty()
        && candidate.more_configure.is_empty()
        && let Some(tls) = shared_tls()
    {
        builder = builder.tls_backend_preconfigured(tls.clone());
    }
    for configure in candidate
        .registration
        .configure
        .iter()
        .chain(candidate.more_configure.iter().copied())
    {
        builder = configure(builder);
    }
    let client = builder
        .build()
        .map_err(|e| RestError::Client(format!("REST client '{qualified}' could not be built: {e}")))?;
    // Two tasks of one test racing here keep the first client built.
    Ok(ctx.with_extensions(|ext| {
        ext.get_or_insert_with(TestClients::default)
            .0
            .entry(qualified.to_owned())
            .or_insert(client)
            .clone()
    }))
}

/// The TLS configuration reqwest builds for a client without TLS settings (the installed or
/// the aws-lc-rs crypto provider, the platform's verifier, HTTP/1.1 over ALPN), built once; its
/// verifier loads the platform's roots at the first handshake ([`LazyPlatformVerifier`]).
/// `None` when it cannot be built here; the client then builds its own and reports why.
fn shared_tls() -> Option<&'static rustls::ClientConfig> {
    SHARED_TLS
        .get_or_init(|| {
            let provider = rustls::crypto::CryptoProvider::get_default()
                .cloned()
                .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
            let verifier = Arc::new(LazyPlatformVerifier::new(Arc::clone(&provider)));
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .ok()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::clone(&verifier) as _)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some((config, verifier))
        })
        .as_ref()
        .map(|(config, _)| config)
}

/// [`shared_tls`]'s configuration, and its verifier kept at hand (a test checks that building
/// the configuration loaded no roots).
static SHARED_TLS: std::sync::OnceLock<Option<(rustls::ClientConfig, Arc<LazyPlatformVerifier>)>> =
    std::sync::OnceLock::new();

/// The platform's certificate verifier, made at the first handshake that needs it. Making it
/// loads and parses every root certificate of the platform (19.1 M instructions, 18–44 ms
/// here), which a process whose tests speak only plain HTTP, as each test's own process
/// does under nextest, would otherwise pay at its first client. Signatures are checked as the
/// platform's verifier checks them, with the provider's algorithms, which need no roots.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    /// Makes the verifier of certificates: the platform's, but for tests.
    make: MakeVerifier,
    made: std::sync::OnceLock<Result<Arc<dyn rustls::client::danger::ServerCertVerifier>, rustls::Error>>,
}

type MakeVerifier = fn(
    Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::client::danger::ServerCertVerifier>, rustls::Error>;

impl LazyPlatformVerifier {
    fn new(provider: Arc<rustls::crypto::CryptoProvider>) -> Self {
        LazyPlatformVerifier {
            provider,
            make: |provider| Ok(Arc::new(rustls_platform_verifier::Verifier::new(provider)?)),
            made: std::sync::OnceLock::new(),
        }
    }

    /// The verifier of certificates; why there is none (no root certificates, say) fails the
    /// handshake that needed it, not the plain HTTP requests of the process.
    fn made(&self) -> Result<&Arc<dyn rustls::client::danger::ServerCertVerifier>, rustls::Error> {
        self.made
            .get_or_init(|| (self.make)(Arc::clone(&self.provider)))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl rustls::client::danger::ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.made()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A boxed resolver future.
pub(crate) type BoxUrlFuture = Pin<Box<dyn Future<Output = Url> + Send>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_under_the_base_path() {
        let base = Url::parse("http://h:1/api/v1/").unwrap();
        assert_eq!(
            join_path(&base, "/orders").unwrap().as_str(),
            "http://h:1/api/v1/orders"
        );
        assert_eq!(
            join_path(&base, "orders/2?x=1").unwrap().as_str(),
            "http://h:1/api/v1/orders/2?x=1"
        );
        let root = Url::parse("http://h:1").unwrap();
        assert_eq!(join_path(&root, "/orders").unwrap().as_str(), "http://h:1/orders");
        let with_query = Url::parse("http://h/a?k=v").unwrap();
        assert_eq!(
            join_path(&with_query, "b?x=1").unwrap().as_str(),
            "http://h/a/b?k=v&x=1"
        );
        let empty_query = Url::parse("http://h/a?").unwrap();
        assert_eq!(
            join_path(&empty_query, "b?x=1").unwrap().as_str(),
            "http://h/a/b?x=1"
        );
    }

    /// The process's shared configuration is built without reading a single root certificate:
    /// no test of this binary makes a handshake through it.
    #[test]
    fn the_shared_configuration_loads_no_roots_until_a_handshake() {
        assert!(shared_tls().is_some());
        let (_, verifier) = SHARED_TLS.get().unwrap().as_ref().unwrap();
        assert!(verifier.made.get().is_none());
    }

    /// A whole handshake through the lazy verifier, over TLS 1.3 and 1.2 (whose signatures it
    /// checks itself), with the test CA standing in for the platform's roots: the roots are
    /// loaded at the first handshake, not before, and once.
    #[test]
    fn the_lazy_verifier_makes_its_verifier_at_the_first_handshake_and_completes_it() {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
        use std::sync::atomic::AtomicUsize;

        static MADE: AtomicUsize = AtomicUsize::new(0);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = Arc::new(LazyPlatformVerifier {
            provider: Arc::clone(&provider),
            make: |provider| {
                MADE.fetch_add(1, Ordering::SeqCst);
                let mut roots = rustls::RootCertStore::empty();
                let ca = CertificateDer::from_pem_slice(include_bytes!("../tests/fixtures/test-ca.cert.pem"));
                roots.add(ca.map_err(|e| rustls::Error::General(e.to_string()))?)?;
                rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map(|v| v as Arc<dyn rustls::client::danger::ServerCertVerifier>)
                    .map_err(|e| rustls::Error::General(e.to_string()))
            },
            made: std::sync::OnceLock::new(),
        });
        let cert =
            CertificateDer::from_pem_slice(include_bytes!("../tests/fixtures/localhost.cert.pem")).unwrap();
        let key =
            PrivateKeyDer::from_pem_slice(include_bytes!("../tests/fixtures/localhost.key.pem")).unwrap();
        let server_config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .unwrap(),
        );
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let client_config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
                .with_protocol_versions(&[version])
                .unwrap()
                .dangerous()
                .with_custom_certificate_verifier(Arc::clone(&verifier) as _)
                .with_no_client_auth();
            let before = MADE.load(Ordering::SeqCst);
            assert_eq!(
                before,
                usize::from(version == &rustls::version::TLS12),
                "made before its handshake"
            );
            let name = ServerName::try_from("localhost").unwrap();
            let mut client = rustls::ClientConnection::new(Arc::new(client_config), name).unwrap();
            let mut server = rustls::ServerConnection::new(Arc::clone(&server_config)).unwrap();
            // Bytes go back and forth in memory until both sides are done.
            for _ in 0..20 {
                if !client.is_handshaking() && !server.is_handshaking() {
                    break;
                }
                let mut wire = Vec::new();
                client.write_tls(&mut wire).unwrap();
                server.read_tls(&mut wire.as_slice()).unwrap();
                server.process_new_packets().unwrap();
                let mut wire = Vec::new();
                server.write_tls(&mut wire).unwrap();
                client.read_tls(&mut wire.as_slice()).unwrap();
                client.process_new_packets().unwrap();
            }
            assert!(!client.is_handshaking(), "{version:?} did not complete");
            assert_eq!(client.protocol_version(), Some(version.version));
            assert_eq!(
                MADE.load(Ordering::SeqCst),
                1,
                "made once, at the first handshake"
            );
        }
    }
}
