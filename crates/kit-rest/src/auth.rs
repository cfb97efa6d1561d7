//! Authentication: the shared model and its kinds.
//!
//! A kind implements [`AuthScheme`]: given an outgoing request, it adds what the request needs
//! (a header, a query parameter, a signed-in session). Which kind applies, strongest first:
//!
//! 1. `.without_auth()` on the request: none;
//! 2. `.auth(kind)` on the request;
//! 3. `#[auth(Kind)]` on the test, else on its module (credentials from configuration);
//! 4. the application's default: `rest.default_auth(kind)` at registration, else
//!    `Kit:Applications:{app}:Auth:Default = "Kind"` in configuration.
//!
//! The kind's name (never a credential) is recorded on the `http.request` operation as
//! `kit.auth.kind`. Every credential and token a kind handles is remembered as a secret of the
//! run, so it is redacted by value wherever it appears and `kit-cli audit` searches for it.
//!
//! Credentials in configuration (environment variables override them, so CI can inject them):
//!
//! | kind | keys under `Kit:Applications:{app}:Auth:{Kind}` |
//! | --- | --- |
//! | `Basic` | `Username`, `Password` |
//! | `Bearer` | `Token` |
//! | `ApiKey` | `Key`, `Name` (default `X-Api-Key`), `In` (`header`, the default, or `query`) |
//! | `OAuth2ClientCredentials` | `TokenUrl`, `ClientId`, `ClientSecret`, `Scopes` (a list, or space-separated), `ClientAuthentication` (`basic`, the default, or `post`) |
//! | `SessionSignIn` | `Url`, `Format` (`form`, the default, or `json`), `Fields:{name}` |

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use kit_core::{Attributes, Configuration, KitExecutionContext, Observation, semconv};
use url::Url;

use crate::RestRequestBuilder;

/// An authentication step failed (a token endpoint refused, a sign-in was rejected, the
/// credentials are not configured).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthError(pub String);

/// A boxed future of an authentication step.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<(), AuthError>> + Send + 'a>>;

/// What a scheme may do to a request about to be sent.
pub struct AuthTarget<'a> {
    pub(crate) ctx: &'a KitExecutionContext,
    pub(crate) client_name: &'a str,
    pub(crate) http: &'a reqwest::Client,
    pub(crate) base: &'a Url,
    pub(crate) headers: &'a mut HeaderMap,
    pub(crate) query: &'a mut Vec<(String, String)>,
}

impl fmt::Debug for AuthTarget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthTarget")
            .field("client", &self.client_name)
            .finish_non_exhaustive()
    }
}

impl AuthTarget<'_> {
    /// The test.
    pub fn context(&self) -> &KitExecutionContext {
        self.ctx
    }

    /// The client's qualified name (`orders:Default`).
    pub fn client_name(&self) -> &str {
        self.client_name
    }

    /// The client's base address for this request.
    pub fn base_url(&self) -> &Url {
        self.base
    }

    /// The test's `reqwest` client for this client name (its cookie jar is the test's).
    pub fn http_client(&self) -> &reqwest::Client {
        self.http
    }

    /// Sets a header (replacing one the request had). The value may be any text without
    /// control characters (a tab aside); text beyond ASCII is sent as its UTF-8 bytes.
    pub fn set_header(&mut self, name: &str, value: &str) -> Result<(), AuthError> {
        let name = HeaderName::try_from(name)
            .map_err(|_| AuthError(format!("{name:?} is not a valid header name")))?;
        let mut value = crate::request::header_value(value)
            .map_err(|_| AuthError(format!("the value of {name} is not a valid header value")))?;
        value.set_sensitive(true);
        self.headers.insert(name, value);
        Ok(())
    }

    /// Adds a query parameter.
    pub fn add_query(&mut self, name: &str, value: &str) {
        self.query.push((name.to_owned(), value.to_owned()));
    }

    /// Remembers `value` as a secret of the run: it is redacted by value everywhere.
    pub fn remember_secret(&self, value: &str) {
        self.ctx.run().secrets().remember(value);
    }

    /// A request on the same client, without authentication (to sign in, say). It is traced
    /// and redacted like any request, and its cookies land in the test's jar.
    pub fn request(&self) -> RestRequestBuilder {
        RestRequestBuilder::new(self.ctx, Some(self.client_name)).without_auth()
    }

    /// An absolute URL for `url`, relative to the client's base address when it is a path.
    pub fn resolve_url(&self, url: &str) -> Result<Url, AuthError> {
        match Url::parse(url) {
            Ok(absolute) if absolute.has_host() => Ok(absolute),
            _ => crate::client::join_path(self.base, url)
                .map_err(|e| AuthError(format!("{url:?} is not a usable URL: {e}"))),
        }
    }
}

/// An authentication kind. Implement it for a kind of your own; the kit's are [`Basic`],
/// [`Bearer`], [`ApiKey`], [`OAuth2ClientCredentials`] and [`SessionSignIn`].
pub trait AuthScheme: Send + Sync + 'static {
    /// The kind's name, recorded on each request it applies to.
    fn kind(&self) -> Cow<'static, str>;

    /// Adds what the request needs. Remember every credential and token with
    /// [`AuthTarget::remember_secret`].
    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a>;
}

impl AuthScheme for Arc<dyn AuthScheme> {
    fn kind(&self) -> Cow<'static, str> {
        (**self).kind()
    }
    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        (**self).apply(target)
    }
}

// === Basic ===

/// HTTP Basic: `Authorization: Basic base64(user:password)`.
#[derive(Clone)]
pub struct Basic {
    username: String,
    password: String,
}

impl fmt::Debug for Basic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Basic")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Basic {
    /// Basic credentials.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Basic {
            username: username.into(),
            password: password.into(),
        }
    }
}

impl AuthScheme for Basic {
    fn kind(&self) -> Cow<'static, str> {
        "Basic".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            let pair = format!("{}:{}", self.username, self.password);
            let encoded = base64::engine::general_purpose::STANDARD.encode(&pair);
            target.remember_secret(&self.password);
            target.remember_secret(&pair);
            target.remember_secret(&encoded);
            target.set_header("authorization", &format!("Basic {encoded}"))
        })
    }
}

// === Bearer ===

/// A bearer token: `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct Bearer {
    token: String,
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer(..)")
    }
}

impl Bearer {
    /// A bearer token.
    pub fn new(token: impl Into<String>) -> Self {
        Bearer { token: token.into() }
    }
}

impl AuthScheme for Bearer {
    fn kind(&self) -> Cow<'static, str> {
        "Bearer".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            target.remember_secret(&self.token);
            target.set_header("authorization", &format!("Bearer {}", self.token))
        })
    }
}

// === ApiKey ===

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyIn {
    /// A header.
    Header,
    /// A query parameter.
    Query,
}

/// An API key, in a header or a query parameter.
#[derive(Clone)]
pub struct ApiKey {
    name: String,
    key: String,
    place: ApiKeyIn,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .field("in", &self.place)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    /// A key sent in header `name` (`X-Api-Key`, say).
    pub fn header(name: impl Into<String>, key: impl Into<String>) -> Self {
        ApiKey {
            name: name.into(),
            key: key.into(),
            place: ApiKeyIn::Header,
        }
    }

    /// A key sent as query parameter `name` (`api_key`, say).
    pub fn query(name: impl Into<String>, key: impl Into<String>) -> Self {
        ApiKey {
            name: name.into(),
            key: key.into(),
            place: ApiKeyIn::Query,
        }
    }
}

impl AuthScheme for ApiKey {
    fn kind(&self) -> Cow<'static, str> {
        "ApiKey".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            target.remember_secret(&self.key);
            match self.place {
                ApiKeyIn::Header => target.set_header(&self.name, &self.key),
                ApiKeyIn::Query => {
                    target.add_query(&self.name, &self.key);
                    Ok(())
                }
            }
        })
    }
}

// === OAuth2 client credentials ===

/// How the client authenticates to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuthentication {
    /// HTTP Basic with the client id and secret (RFC 6749's recommendation).
    #[default]
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Post,
}

/// OAuth 2.0 client credentials: a token fetched from the token endpoint and sent as a bearer
/// token. One fetch serves every test of the run that needs the same token (same client, token
/// endpoint, client id and scopes), even concurrently; it is fetched again shortly before it
/// expires (a tenth of its lifetime, at most 30 s, before).
#[derive(Clone)]
pub struct OAuth2ClientCredentials {
    token_url: String,
    client_id: String,
    client_secret: String,
    scopes: Vec<String>,
    client_authentication: ClientAuthentication,
}

impl fmt::Debug for OAuth2ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth2ClientCredentials")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuth2ClientCredentials {
    /// Credentials for `token_url` (absolute, or a path on the client's base address).
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        OAuth2ClientCredentials {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: Vec::new(),
            client_authentication: ClientAuthentication::Basic,
        }
    }

    /// Asks for these scopes.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Authenticates to the token endpoint this way (default: HTTP Basic).
    pub fn client_authentication(mut self, how: ClientAuthentication) -> Self {
        self.client_authentication = how;
        self
    }

    async fn fetch(&self, target: &AuthTarget<'_>, url: &Url) -> Result<CachedToken, AuthError> {
        let scope = self.scopes.join(" ");
        let mut form = vec![("grant_type", "client_credentials".to_owned())];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        let mut request = target
            .http_client()
            .post(url.clone())
            .header(http::header::ACCEPT, "application/json");
        match self.client_authentication {
            ClientAuthentication::Basic => {
                request = request.basic_auth(&self.client_id, Some(&self.client_secret))
            }
            ClientAuthentication::Post => {
                form.push(("client_id", self.client_id.clone()));
                form.push(("client_secret", self.client_secret.clone()));
            }
        }
        let sanitizer = crate::settings::sanitizer(target.context());
        let shown_url = sanitizer.url(url.as_str());
        let refused = |why: String| {
            AuthError(sanitizer.text(&format!(
                "the token endpoint {shown_url} refused client '{}': {why}",
                self.client_id
            )))
        };
        let started = Instant::now();
        let response = request
            .form(&form)
            .send()
            .await
            .map_err(|e| refused(format!("the request failed: {}", e.without_url())))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| refused(format!("reading its answer failed: {}", e.without_url())))?;
        let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        let mut attributes = Attributes::with_capacity(4)
            .with(semconv::URL_FULL, shown_url.as_str())
            .with(semconv::HTTP_RESPONSE_STATUS_CODE, status.as_u16())
            .with(
                semconv::KIT_DURATION_NS,
                u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            );
        if !status.is_success() {
            // RFC 6749 §5.2: {"error": "...", "error_description": "..."}.
            let error = parsed
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or("no error code");
            let description = parsed
                .get("error_description")
                .and_then(|e| e.as_str())
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let error = refused(format!(
                "{}: {error}{description}",
                crate::assertions::status_text(status)
            ));
            attributes.push(semconv::KIT_FAILURE_MESSAGE, error.0.as_str());
            target
                .context()
                .observe(None, Observation::new("auth.token", attributes));
            return Err(error);
        }
        let Some(token) = parsed.get("access_token").and_then(|t| t.as_str()) else {
            return Err(refused("its answer has no access_token".into()));
        };
        target.remember_secret(token);
        let lifetime = parsed
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .map(Duration::from_secs);
        if let Some(lifetime) = lifetime {
            attributes.push("kit.auth.expires_in_s", lifetime.as_secs());
        }
        target
            .context()
            .observe(None, Observation::new("auth.token", attributes));
        Ok(CachedToken {
            token: token.to_owned(),
            refresh_at: lifetime.map(|l| Instant::now() + l - (l / 10).min(Duration::from_secs(30))),
        })
    }
}

#[derive(Clone)]
struct CachedToken {
    token: String,
    /// When to fetch again: before the token expires.
    refresh_at: Option<Instant>,
}

/// Which token a request needs: client, token endpoint, client id, scopes, and a hash of the
/// client secret (a token fetched with one secret must not serve another).
type TokenKey = (String, String, String, String, u64);

/// The run's OAuth2 tokens, one slot per [`TokenKey`]. A slot's async lock makes concurrent
/// tests (each on its own runtime) wait for one fetch.
#[derive(Default)]
struct TokenCache(Mutex<HashMap<TokenKey, Arc<tokio::sync::Mutex<Option<CachedToken>>>>>);

impl AuthScheme for OAuth2ClientCredentials {
    fn kind(&self) -> Cow<'static, str> {
        "OAuth2ClientCredentials".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            target.remember_secret(&self.client_secret);
            let url = target.resolve_url(&self.token_url)?;
            let mut secret_hash = std::collections::hash_map::DefaultHasher::new();
            self.client_secret.hash(&mut secret_hash);
            let key = (
                target.client_name().to_owned(),
                url.to_string(),
                self.client_id.clone(),
                self.scopes.join(" "),
                secret_hash.finish(),
            );
            let slot = Arc::clone(
                target
                    .context()
                    .host()
                    .singleton(|_| TokenCache::default())
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(key)
                    .or_default(),
            );
            let mut cached = slot.lock().await;
            let fresh = cached
                .as_ref()
                .filter(|t| t.refresh_at.is_none_or(|at| Instant::now() < at))
                .cloned();
            let token = match fresh {
                Some(token) => token,
                None => {
                    let token = self.fetch(target, &url).await?;
                    *cached = Some(token.clone());
                    token
                }
            };
            drop(cached);
            target.remember_secret(&token.token);
            target.set_header("authorization", &format!("Bearer {}", token.token))
        })
    }
}

// === Session sign-in ===

#[derive(Clone)]
enum SignInBody {
    Form(Vec<(String, String)>),
    Json(serde_json::Value),
}

/// A sign-in request, made before the test's first request that needs it, and again only when
/// a request of the test signs in on the same client with other credentials (a test that
/// switches users and back signs in at each switch); the session cookie it sets stays in that
/// test's cookie jar, so parallel tests never share a session. The sign-in is traced
/// (redacted) like any request; a status that is not 2xx or 3xx fails the request that needed
/// it.
#[derive(Clone)]
pub struct SessionSignIn {
    url: String,
    body: SignInBody,
    secret_fields: Vec<String>,
}

impl fmt::Debug for SessionSignIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionSignIn")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl SessionSignIn {
    /// Signs in by posting a form to `url` (a path on the client's base address, or absolute).
    pub fn form<K: Into<String>, V: Into<String>>(
        url: impl Into<String>,
        fields: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        SessionSignIn {
            url: url.into(),
            body: SignInBody::Form(fields.into_iter().map(|(k, v)| (k.into(), v.into())).collect()),
            secret_fields: Vec::new(),
        }
    }

    /// Signs in by posting `body` as JSON to `url`.
    pub fn json(url: impl Into<String>, body: serde_json::Value) -> Self {
        SessionSignIn {
            url: url.into(),
            body: SignInBody::Json(body),
            secret_fields: Vec::new(),
        }
    }

    /// Also treats these fields' values as secrets (fields with a sensitive name, such as
    /// `password`, are already).
    pub fn secret_fields<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.secret_fields = names.into_iter().map(Into::into).collect();
        self
    }

    fn fields(&self) -> Vec<(String, String)> {
        match &self.body {
            SignInBody::Form(fields) => fields.clone(),
            SignInBody::Json(serde_json::Value::Object(map)) => map
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .collect(),
            SignInBody::Json(_) => Vec::new(),
        }
    }

    fn identity(&self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.url.hash(&mut hasher);
        match &self.body {
            SignInBody::Form(fields) => fields.hash(&mut hasher),
            SignInBody::Json(value) => value.to_string().hash(&mut hasher),
        }
        hasher.finish()
    }
}

/// Whose session each client of a test holds: the credentials of its last sign-in, by client
/// name. A set of every sign-in done would skip signing back in as a user the test had
/// switched away from, and send that user's requests with the other user's session. The
/// lock keeps two tasks of one test from signing in twice.
#[derive(Default)]
struct SignedIn(Arc<tokio::sync::Mutex<HashMap<String, u64>>>);

impl AuthScheme for SessionSignIn {
    fn kind(&self) -> Cow<'static, str> {
        "SessionSignIn".into()
    }

    fn apply<'a>(&'a self, target: &'a mut AuthTarget<'_>) -> AuthFuture<'a> {
        Box::pin(async move {
            let sanitizer = crate::settings::sanitizer(target.context());
            for (name, value) in self.fields() {
                if sanitizer.rules().is_sensitive_json_property(&name)
                    || self.secret_fields.iter().any(|s| s.eq_ignore_ascii_case(&name))
                {
                    target.remember_secret(&value);
                }
            }
            let done = target
                .context()
                .with_extensions(|ext| Arc::clone(&ext.get_or_insert_with(SignedIn::default).0));
            let mut done = done.lock().await;
            let identity = self.identity();
            if done.get(target.client_name()) == Some(&identity) {
                return Ok(());
            }
            let request = match &self.body {
                SignInBody::Form(fields) => target.request().form(fields),
                SignInBody::Json(body) => target.request().body(body),
            };
            let response =
                request.post(&self.url).try_send().await.map_err(|e| {
                    AuthError(format!("signing in at {} failed: {e}", sanitizer.url(&self.url)))
                })?;
            let status = response.status_code();
            if !(status.is_success() || status.is_redirection()) {
                return Err(AuthError(format!(
                    "signing in at {} was refused: {}",
                    sanitizer.url(&self.url),
                    crate::assertions::status_text(status)
                )));
            }
            done.insert(target.client_name().to_owned(), identity);
            Ok(())
        })
    }
}

// === configuration ===

/// The kind `#[auth(kind)]` (or `Auth:Default`) names, with its credentials from
/// `Kit:Applications:{app}:Auth:{kind}` (or `Kit:Auth:{kind}` for a host-level client).
pub(crate) fn from_configuration(
    configuration: &Configuration,
    application: Option<&str>,
    kind: &str,
) -> Result<Arc<dyn AuthScheme>, AuthError> {
    let section = configuration.section(&format!("{}:{kind}", auth_section(application)));
    let required = |name: &str| -> Result<String, AuthError> {
        section.get(name).map(str::to_owned).ok_or_else(|| {
            let variable = section.key(name).replace(':', "__");
            AuthError(format!(
                "{kind} authentication needs {} in configuration (or the environment variable {variable})",
                section.key(name)
            ))
        })
    };
    let scheme: Arc<dyn AuthScheme> = match kind.to_ascii_lowercase().as_str() {
        "basic" => Arc::new(Basic::new(required("Username")?, required("Password")?)),
        "bearer" => Arc::new(Bearer::new(required("Token")?)),
        "apikey" => {
            let name = section.get("Name").unwrap_or("X-Api-Key").to_owned();
            match section.get("In").map(str::to_ascii_lowercase).as_deref() {
                None | Some("header") => Arc::new(ApiKey::header(name, required("Key")?)),
                Some("query") => Arc::new(ApiKey::query(name, required("Key")?)),
                Some(other) => {
                    return Err(AuthError(format!(
                        "{} is {other:?}; expected header or query",
                        section.key("In")
                    )));
                }
            }
        }
        "oauth2clientcredentials" => {
            let scopes = section
                .get_list("Scopes")
                .or_else(|| {
                    section
                        .get("Scopes")
                        .map(|s| s.split_whitespace().map(str::to_owned).collect())
                })
                .unwrap_or_default();
            let how = match section
                .get("ClientAuthentication")
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                None | Some("basic") => ClientAuthentication::Basic,
                Some("post") => ClientAuthentication::Post,
                Some(other) => {
                    return Err(AuthError(format!(
                        "{} is {other:?}; expected basic or post",
                        section.key("ClientAuthentication")
                    )));
                }
            };
            Arc::new(
                OAuth2ClientCredentials::new(
                    required("TokenUrl")?,
                    required("ClientId")?,
                    required("ClientSecret")?,
                )
                .scopes(scopes)
                .client_authentication(how),
            )
        }
        "sessionsignin" => {
            let url = required("Url")?;
            let fields_section = section.section("Fields");
            let fields: Vec<(String, String)> = fields_section
                .children()
                .into_iter()
                .filter_map(|name| fields_section.get(&name).map(|v| (name, v.to_owned())))
                .collect();
            match section.get("Format").map(str::to_ascii_lowercase).as_deref() {
                None | Some("form") => Arc::new(SessionSignIn::form(url, fields)),
                Some("json") => {
                    let body = fields
                        .into_iter()
                        .map(|(k, v)| (k, serde_json::Value::String(v)))
                        .collect();
                    Arc::new(SessionSignIn::json(url, serde_json::Value::Object(body)))
                }
                Some(other) => {
                    return Err(AuthError(format!(
                        "{} is {other:?}; expected form or json",
                        section.key("Format")
                    )));
                }
            }
        }
        _ => {
            return Err(AuthError(format!(
                "unknown authentication kind {kind:?}; the kinds configuration can give are Basic, Bearer, ApiKey, \
                 OAuth2ClientCredentials and SessionSignIn (use .auth(…) in code for others)"
            )));
        }
    };
    Ok(scheme)
}

/// What a request asked for.
#[derive(Clone, Default)]
pub(crate) enum AuthChoice {
    /// Whatever the test or the application uses.
    #[default]
    Inherit,
    /// This scheme.
    Scheme(Arc<dyn AuthScheme>),
    /// None at all.
    Without,
}

/// The scheme a request uses: its own, else the test's (or its module's), else the
/// application's default. `Without` beats all.
pub(crate) fn choose(
    choice: &AuthChoice,
    ctx: &KitExecutionContext,
    client: &crate::client::ResolvedClient,
) -> Result<Option<Arc<dyn AuthScheme>>, AuthError> {
    match choice {
        AuthChoice::Without => return Ok(None),
        AuthChoice::Scheme(scheme) => return Ok(Some(Arc::clone(scheme))),
        AuthChoice::Inherit => {}
    }
    let configuration = ctx.configuration();
    let application = client.application.as_deref();
    if let Some(kind) = ctx.auth_kind() {
        return from_configuration(configuration, application, kind).map(Some);
    }
    if let Some(scheme) = &client.default_auth {
        return Ok(Some(Arc::clone(scheme)));
    }
    client.configured_auth.clone().transpose()
}

/// The scheme `Kit:Applications:{application}:Auth:Default` (or, for a host-level client,
/// `Kit:Auth:Default`) names, with its credentials, if the key is set; or why it cannot be
/// made, for each request that falls back on it to fail with.
pub(crate) fn configured_default(
    configuration: &Configuration,
    application: Option<&str>,
) -> Option<Result<Arc<dyn AuthScheme>, AuthError>> {
    let kind = configuration.get(&format!("{}:Default", auth_section(application)))?;
    Some(from_configuration(configuration, application, kind))
}

/// The configuration section of `application`'s authentication (`Kit:Auth` for a host-level
/// client): its kinds' keys and its `Default` live under it.
fn auth_section(application: Option<&str>) -> String {
    match application {
        Some(app) => format!("Kit:Applications:{app}:Auth"),
        None => "Kit:Auth".to_owned(),
    }
}
