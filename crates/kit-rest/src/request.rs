//! Building and sending a request.

use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use kit_core::json::ShapeOptions;
use kit_core::redact::RecordedBody;
use kit_core::{
    Attachment, Attributes, KitExecutionContext, Observation, OperationStarted, OperationStatus, Sanitizer,
    Text, semconv,
};
use serde::Serialize;

use crate::RestError;
use crate::auth::{self, AuthScheme};
use crate::client::{ResolvedClient, join_path, resolve};
use crate::multipart::Multipart;
use crate::response::{RequestInfo, RestResponse};
use crate::settings;

enum Body {
    Bytes { bytes: Bytes, content_type: HeaderValue },
    Form(String),
}

/// Builds one request: body, headers, query. Returned by `ctx.rest()`; sent by a verb.
///
/// A problem found while building (a client that does not resolve, a header that is not
/// valid, a body that does not serialize) is reported when the request is awaited, as the
/// test's failure, with an `http.failure` event.
#[must_use = "a request is sent by a verb: .get(route), .post(route), …"]
pub struct RestRequestBuilder {
    ctx: KitExecutionContext,
    client: Result<Arc<ResolvedClient>, RestError>,
    headers: HeaderMap,
    query: Vec<(String, String)>,
    /// Names of the query parameters sent with [`sensitive_query`](Self::sensitive_query).
    sensitive_query: Vec<String>,
    path_params: Vec<(String, String)>,
    body: Option<Body>,
    auth: auth::AuthChoice,
    problem: Option<String>,
}

impl std::fmt::Debug for RestRequestBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestRequestBuilder")
            .field("client", &self.client.as_ref().map(|c| &c.target))
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}

impl RestRequestBuilder {
    pub(crate) fn new(ctx: &KitExecutionContext, name: Option<&str>) -> Self {
        RestRequestBuilder {
            ctx: ctx.clone(),
            client: resolve(ctx, name),
            headers: HeaderMap::new(),
            query: Vec::new(),
            sensitive_query: Vec::new(),
            path_params: Vec::new(),
            body: None,
            auth: auth::AuthChoice::Inherit,
            problem: None,
        }
    }

    fn fail(&mut self, problem: String) {
        self.problem.get_or_insert(problem);
    }

    /// Sends `value` as JSON, with `Content-Type: application/json; charset=utf-8`.
    pub fn body(mut self, value: &impl Serialize) -> Self {
        match serde_json::to_vec(value) {
            Ok(json) => {
                self.body = Some(Body::Bytes {
                    bytes: json.into(),
                    content_type: HeaderValue::from_static("application/json; charset=utf-8"),
                })
            }
            Err(e) => self.fail(format!("the body does not serialize to JSON: {e}")),
        }
        self
    }

    /// Sends `text` as `text/plain; charset=utf-8`.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.body = Some(Body::Bytes {
            bytes: Bytes::from(text.into()),
            content_type: HeaderValue::from_static("text/plain; charset=utf-8"),
        });
        self
    }

    /// Sends raw bytes with the given content type.
    pub fn bytes(mut self, bytes: impl Into<Bytes>, content_type: &str) -> Self {
        match header_value(content_type) {
            Ok(content_type) => {
                self.body = Some(Body::Bytes {
                    bytes: bytes.into(),
                    content_type,
                })
            }
            Err(_) => self.fail(format!(
                "the content type {content_type:?} is not a valid header value"
            )),
        }
        self
    }

    /// Sends `value` as `application/x-www-form-urlencoded`.
    pub fn form(mut self, value: &impl Serialize) -> Self {
        match serde_urlencoded::to_string(value) {
            Ok(encoded) => self.body = Some(Body::Form(encoded)),
            Err(e) => self.fail(format!("the form does not serialize: {e}")),
        }
        self
    }

    /// Sends a `multipart/form-data` body.
    pub fn multipart(mut self, form: Multipart) -> Self {
        match HeaderValue::from_str(&form.content_type()) {
            Ok(content_type) => {
                self.body = Some(Body::Bytes {
                    bytes: form.to_bytes(),
                    content_type,
                })
            }
            Err(_) => self.fail("the multipart boundary is not a valid header value".into()),
        }
        self
    }

    /// Adds a header (repeatable: a second value for the same name is added, not replaced).
    /// The value may be any text without control characters (a tab aside); text beyond ASCII
    /// is sent as its UTF-8 bytes. A value that cannot be sent fails the request, naming the
    /// header and never the value.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.append_header(name, value, false);
        self
    }

    /// Adds a header whose value is a credential, under a name the sensitive lists do not
    /// hold (`X-Auth-Token`, `X-Vault-Token`, `Private-Token`). Sent as given; recorded in the
    /// trace as `[REDACTED]`, and the value (and the credential after a scheme word, as in
    /// `Token abc…`) becomes a known secret of the run, redacted wherever it is echoed
    /// (bodies, attachments, failure messages). The value is marked as `http` marks one
    /// ([`HeaderValue::set_sensitive`]); a header an [`AuthScheme`] sets through
    /// [`AuthTarget::set_header`](crate::AuthTarget::set_header) is marked alike.
    ///
    /// ```no_run
    /// use kit_core::KitExecutionContext;
    /// use kit_rest::RestContextExt as _;
    ///
    /// async fn read_the_vault(ctx: KitExecutionContext, token: &str) {
    ///     let response = ctx.rest().sensitive_header("X-Vault-Token", token).get("/v1/secret/app").await;
    ///     assert_eq!(response.status_code(), http::StatusCode::OK);
    /// }
    /// ```
    pub fn sensitive_header(mut self, name: &str, value: &str) -> Self {
        self.append_header(name, value, true);
        self
    }

    fn append_header(&mut self, name: &str, value: &str, sensitive: bool) {
        match (HeaderName::try_from(name), header_value(value)) {
            (Ok(name), Ok(mut value)) => {
                value.set_sensitive(sensitive);
                self.headers.append(name, value);
            }
            (Err(_), _) => self.fail(format!("{name:?} is not a valid header name")),
            // Never the value itself: it may be a credential.
            (_, Err(_)) => self.fail(format!(
                "the value of header {name:?} is not a valid header value"
            )),
        }
    }

    /// Adds a query parameter (repeatable).
    pub fn query(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        self.query.push((name.into(), value.to_string()));
        self
    }

    /// Adds a query parameter whose value is a credential, under a name the sensitive lists
    /// do not hold (`X-Amz-Signature`, `sig`, `X-Goog-Credential`). Sent as given; every
    /// parameter of this name in the request's recorded URL shows `[REDACTED]`, and the value
    /// becomes a known secret of the run, redacted wherever it is echoed.
    ///
    /// ```no_run
    /// use kit_core::KitExecutionContext;
    /// use kit_rest::RestContextExt as _;
    ///
    /// async fn download(ctx: KitExecutionContext, signature: &str) {
    ///     let response = ctx
    ///         .rest()
    ///         .query("X-Amz-Expires", 300)
    ///         .sensitive_query("X-Amz-Signature", signature)
    ///         .get("/bucket/report.csv")
    ///         .await;
    ///     assert_eq!(response.status_code(), http::StatusCode::OK);
    /// }
    /// ```
    pub fn sensitive_query(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        let name = name.into();
        if !self.sensitive_query.contains(&name) {
            self.sensitive_query.push(name.clone());
        }
        self.query.push((name, value.to_string()));
        self
    }

    /// Authenticates this request with `scheme`, whatever the test or application would use.
    pub fn auth(mut self, scheme: impl AuthScheme) -> Self {
        self.auth = auth::AuthChoice::Scheme(Arc::new(scheme));
        self
    }

    /// Sends this request without authentication, whatever the test or application would use.
    pub fn without_auth(mut self) -> Self {
        self.auth = auth::AuthChoice::Without;
        self
    }

    /// Fills the route token `{name}` with `value`, percent-encoded. The route template (with
    /// its tokens) is what traces and coverage record; the filled path is what is sent.
    pub fn path_param(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        self.path_params.push((name.into(), value.to_string()));
        self
    }

    /// Sends a `GET` to `route` (relative to the client's base address, or absolute).
    pub fn get(self, route: &str) -> PendingRequest {
        self.send(Method::GET, route)
    }

    /// Sends a `POST`.
    pub fn post(self, route: &str) -> PendingRequest {
        self.send(Method::POST, route)
    }

    /// Sends a `PUT`.
    pub fn put(self, route: &str) -> PendingRequest {
        self.send(Method::PUT, route)
    }

    /// Sends a `PATCH`.
    pub fn patch(self, route: &str) -> PendingRequest {
        self.send(Method::PATCH, route)
    }

    /// Sends a `DELETE`.
    pub fn delete(self, route: &str) -> PendingRequest {
        self.send(Method::DELETE, route)
    }

    /// Sends a `HEAD`.
    pub fn head(self, route: &str) -> PendingRequest {
        self.send(Method::HEAD, route)
    }

    /// Sends an `OPTIONS`.
    pub fn options(self, route: &str) -> PendingRequest {
        self.send(Method::OPTIONS, route)
    }

    /// Sends `method` to `route`.
    pub fn send(self, method: Method, route: &str) -> PendingRequest {
        PendingRequest {
            builder: self,
            method,
            route: route.to_owned(),
        }
    }
}

/// A request ready to send. Await it for the [`RestResponse`] (a failure fails the test), or
/// call [`try_send`](Self::try_send) for a `Result`.
#[must_use = "a request is sent when awaited"]
pub struct PendingRequest {
    builder: RestRequestBuilder,
    method: Method,
    route: String,
}

impl std::fmt::Debug for PendingRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingRequest({} {})", self.method, self.route)
    }
}

impl IntoFuture for PendingRequest {
    type Output = RestResponse;
    type IntoFuture = Pin<Box<dyn Future<Output = RestResponse> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            match self.try_send().await {
                Ok(response) => response,
                // The typed error is the payload: catch_unwind + downcast_ref recovers it.
                Err(error) => std::panic::panic_any(error),
            }
        })
    }
}

/// The route template: what traces and coverage see. The query is dropped; an absolute URL
/// gives its path alone (`url.full` has the rest, sanitized), so no host, user-info or token
/// ever lands in `http.route`.
fn route_template(route: &str) -> &str {
    let without_query = route.split_once(['?', '#']).map_or(route, |(path, _)| path);
    match without_query.find("://") {
        Some(scheme_end) => {
            let after = &without_query[scheme_end + 3..];
            after.find('/').map_or("/", |i| &after[i..])
        }
        None => without_query,
    }
}

/// Replaces every `{token}` (ASCII letters, digits and `_`) in `route` by its value,
/// percent-encoded as a path segment. Braces around anything else are not a token and stay.
/// Fails naming the first token without a value.
pub(crate) fn fill_route(route: &str, params: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(route.len() + 16);
    let mut rest = route;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let token_len = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if token_len > 0 && after.as_bytes().get(token_len) == Some(&b'}') {
            let token = &after[..token_len];
            // The last value given for a token wins, as with a map.
            match params.iter().rev().find(|(name, _)| name == token) {
                Some((_, value)) => {
                    // A path has no `+` for a space: `%20`, written without a `String` a piece.
                    for piece in url::form_urlencoded::byte_serialize(value.as_bytes()) {
                        let mut parts = piece.split('+');
                        out.push_str(parts.next().unwrap_or_default());
                        for part in parts {
                            out.push_str("%20");
                            out.push_str(part);
                        }
                    }
                }
                None => {
                    return Err(format!(
                        "the route token {{{token}}} has no value; give it one with .path_param(\"{token}\", …)"
                    ));
                }
            }
            rest = &after[token_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A header value from text: any text without control characters other than tab, non-ASCII
/// included, sent as its UTF-8 bytes. HTTP allows such bytes in a field value (RFC 9110's
/// `obs-text`), and a test may need to send what some client sends. Not `HeaderValue`'s
/// `TryFrom<&str>`: since `http` 1.6 it refuses non-ASCII, so which text a request could carry
/// would hang on the `http` version a user's lock file resolves.
pub(crate) fn header_value(value: &str) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    HeaderValue::from_bytes(value.as_bytes())
}

/// A header value as text, its bytes read as UTF-8 (any that are not become U+FFFD). Not
/// `HeaderValue::to_str`, which refuses anything beyond visible ASCII: a content type whose
/// parameter holds such text (`text/plain; name="résumé"`) would then read as no type at all,
/// and a content-type assertion would say the response has none.
pub(crate) fn header_text(value: &HeaderValue) -> Cow<'_, str> {
    String::from_utf8_lossy(value.as_bytes())
}

/// Header attributes (`http.request.header.<name>` or `http.response.header.<name>`), sanitized.
fn header_attributes(attributes: &mut Attributes, side: Side, headers: &HeaderMap, sanitizer: &Sanitizer) {
    let pairs = headers.iter().map(|(name, value)| {
        let value = if value.is_sensitive() {
            sanitizer.marked_header_value(name.as_str(), value.as_bytes())
        } else {
            value.as_bytes()
        };
        (name.as_str(), value)
    });
    sanitizer.headers_with(pairs, |name, value| {
        attributes.push(header_key(side, name), value)
    });
}

/// Which message a header is on.
#[derive(Clone, Copy)]
enum Side {
    Request,
    Response,
}

/// Declares the static attribute keys of the headers nearly every request and response has.
macro_rules! common_header_keys {
    ($($name:literal),* $(,)?) => {
        /// Header names whose attribute keys are static strings.
        #[cfg(test)]
        const COMMON_HEADERS: &[&str] = &[$($name),*];

        /// The attribute key of header `name` (lower case, as `http` keeps names): a static
        /// string for the common headers, which spares an allocation per header per request.
        fn header_key(side: Side, name: &str) -> std::borrow::Cow<'static, str> {
            let known = match side {
                Side::Request => match name {
                    $($name => Some(concat!("http.request.header.", $name)),)*
                    _ => None,
                },
                Side::Response => match name {
                    $($name => Some(concat!("http.response.header.", $name)),)*
                    _ => None,
                },
            };
            match (known, side) {
                (Some(key), _) => key.into(),
                (None, Side::Request) => format!("{}{name}", semconv::HTTP_REQUEST_HEADER_PREFIX).into(),
                (None, Side::Response) => format!("{}{name}", semconv::HTTP_RESPONSE_HEADER_PREFIX).into(),
            }
        }
    };
}

common_header_keys!(
    "accept",
    "accept-encoding",
    "authorization",
    "cache-control",
    "connection",
    "content-encoding",
    "content-length",
    "content-type",
    "cookie",
    "date",
    "etag",
    "host",
    "location",
    "server",
    "set-cookie",
    "transfer-encoding",
    "user-agent",
    "vary",
);

/// What a failure before sending records: an `http.failure` under the test, and the error.
struct Failures<'a> {
    ctx: &'a KitExecutionContext,
    method: &'a Method,
    template: &'a str,
    label: String,
}

impl Failures<'_> {
    fn fail(&self, error: RestError) -> RestError {
        // Messages are built from sanitized parts; known secrets are replaced on top.
        let message = settings::sanitizer(self.ctx).text(&error.to_string());
        let attributes = Attributes::new()
            .with(semconv::HTTP_REQUEST_METHOD, method_text(self.method))
            .with(semconv::HTTP_ROUTE, self.template)
            .with(semconv::KIT_FAILURE_MESSAGE, message);
        self.ctx
            .observe(None, Observation::new(semconv::OBS_HTTP_FAILURE, attributes));
        error
    }

    fn invalid(&self, message: String) -> RestError {
        self.fail(RestError::InvalidRequest {
            request: self.label.clone(),
            message,
        })
    }
}

impl PendingRequest {
    /// Awaits the response and matches its body against `shape` (partially); on a mismatch
    /// the response is dropped and the test fails with the shape's error.
    pub fn expect<S: Serialize>(self, shape: S) -> impl Future<Output = RestResponse> + Send {
        self.expect_with(shape, ShapeOptions::default())
    }

    /// As [`expect`](Self::expect), in exact mode: members the shape does not list fail.
    pub fn expect_exact<S: Serialize>(self, shape: S) -> impl Future<Output = RestResponse> + Send {
        self.expect_with(shape, ShapeOptions::EXACT)
    }

    fn expect_with<S: Serialize>(
        self,
        shape: S,
        options: ShapeOptions,
    ) -> impl Future<Output = RestResponse> + Send {
        // Serialized now, so the future does not hold the shape (which need not be Send).
        let shape = serde_json::to_value(shape).map_err(|e| e.to_string());
        let target = std::any::type_name::<S>();
        async move {
            let response = self.await;
            match shape {
                Ok(shape) => {
                    let text = shape.to_string();
                    response.shape_check(&text, move || Ok(shape), target, &options);
                }
                Err(e) => response.shape_does_not_serialize(&e),
            }
            response
        }
    }

    /// Sends the request and returns the response, or the error, without failing the test.
    pub async fn try_send(self) -> Result<RestResponse, RestError> {
        let PendingRequest {
            builder,
            method,
            route,
        } = self;
        let ctx = builder.ctx.clone();
        let template: Arc<str> = Arc::from(route_template(&route));
        let failures = Failures {
            ctx: &ctx,
            method: &method,
            template: &template,
            label: format!("{method} {template}"),
        };
        let client = builder.client.map_err(|e| failures.fail(e))?;
        let (settings, sanitizer, number) = settings::for_request(&ctx).map_err(|e| failures.fail(e))?;
        if let Some(problem) = builder.problem {
            return Err(failures.invalid(problem));
        }
        let path = fill_route(&route, &builder.path_params).map_err(|m| failures.invalid(m))?;
        let (base, mut url) = match url::Url::parse(&path) {
            Ok(absolute) if absolute.has_host() => (Cow::Owned(absolute.clone()), absolute),
            _ => {
                let base = client.base_for(&ctx).await.map_err(|e| failures.fail(e))?;
                let url = join_path(&base, &path).map_err(|e| {
                    failures.invalid(format!(
                        "cannot build a URL from {:?} and {path:?}: {e}",
                        sanitizer.url(base.as_str())
                    ))
                })?;
                (base, url)
            }
        };
        if !builder.query.is_empty() {
            url.query_pairs_mut().extend_pairs(builder.query.iter());
        }

        // Authentication: the strongest choice applies, and adds headers or query parameters.
        let mut headers = builder.headers;
        let scheme = auth::choose(&builder.auth, &ctx, &client).map_err(|e| {
            failures.fail(RestError::Auth {
                request: failures.label.clone(),
                message: e.0,
            })
        })?;
        let auth_kind = match &scheme {
            Some(scheme) => {
                let mut auth_query = Vec::new();
                let mut target = auth::AuthTarget {
                    ctx: &ctx,
                    client_name: &client.target,
                    http: &client.client,
                    base: &base,
                    headers: &mut headers,
                    query: &mut auth_query,
                };
                scheme.apply(&mut target).await.map_err(|e| {
                    failures.fail(RestError::Auth {
                        request: failures.label.clone(),
                        message: e.0,
                    })
                })?;
                if !auth_query.is_empty() {
                    url.query_pairs_mut().extend_pairs(auth_query.iter());
                }
                Some(scheme.kind())
            }
            None => None,
        };
        // Shared, as the route and the client's name are, by both of the request's events
        // and its response.
        let shown_url: Arc<str> = Arc::from(if builder.sensitive_query.is_empty() {
            sanitizer.url(url.as_str())
        } else {
            let names: Vec<&str> = builder.sensitive_query.iter().map(String::as_str).collect();
            sanitizer.url_naming(url.as_str(), &names)
        });
        let limit = settings.responses.max_response_body_bytes;

        let mut request = client.client.request(method.clone(), url).headers(headers);
        let body = match builder.body {
            Some(Body::Bytes { bytes, content_type }) => {
                request = request
                    .header(http::header::CONTENT_TYPE, content_type.clone())
                    .body(bytes.clone());
                Some((bytes, content_type))
            }
            Some(Body::Form(encoded)) => {
                let content_type = HeaderValue::from_static("application/x-www-form-urlencoded");
                request = request
                    .header(http::header::CONTENT_TYPE, content_type.clone())
                    .body(encoded.clone());
                Some((Bytes::from(encoded), content_type))
            }
            None => None,
        };
        let request = request
            .build()
            .map_err(|e| failures.invalid(e.without_url().to_string()))?;
        let request_content_type = body.as_ref().map(|(_, ct)| header_text(ct).into_owned());
        let method_text = method_text(&method);
        let mut start_attributes = Attributes::with_capacity(12)
            .with(semconv::HTTP_REQUEST_METHOD, method_text.clone())
            .with(semconv::HTTP_ROUTE, &template)
            .with(semconv::URL_FULL, &shown_url)
            .with(semconv::KIT_CLIENT, &client.target)
            .with(semconv::KIT_REQUEST_HEADER_COUNT, request.headers().len());
        // The request owns the URL now: moved, not copied, into it.
        if let Some(host) = request.url().host_str() {
            start_attributes.push(semconv::SERVER_ADDRESS, host);
        }
        if let Some(port) = request.url().port_or_known_default() {
            start_attributes.push(semconv::SERVER_PORT, port);
        }
        if let Some(kind) = &auth_kind {
            start_attributes.push(semconv::KIT_AUTH_KIND, kind.as_ref());
        }
        header_attributes(
            &mut start_attributes,
            Side::Request,
            request.headers(),
            &sanitizer,
        );
        // After the headers: a value marked sensitive there is a known secret by now, and is
        // redacted where the body repeats it (a CSRF token sent twice, say).
        let shown_request_body = body
            .as_ref()
            .map(|(bytes, _)| sanitizer.recorded_body(request_content_type.as_deref(), bytes))
            .filter(|b| !b.text.is_empty());
        if let Some((bytes, _)) = &body {
            start_attributes.push(semconv::HTTP_REQUEST_BODY_SIZE, bytes.len());
        }
        if let Some(shown) = &shown_request_body {
            start_attributes.push(semconv::KIT_REQUEST_BODY, &shown.text);
            if shown.base64 {
                start_attributes.push(semconv::KIT_REQUEST_BODY_ENCODING, Text::from_static("base64"));
            }
        }
        let operation = ctx.start_operation(
            None,
            OperationStarted::new(semconv::OP_HTTP_REQUEST, ["REST · ", &failures.label].concat())
                .with_entity(Arc::clone(&client.entity))
                .with_attributes(start_attributes),
        );
        let info = RequestInfo {
            id: operation.id(),
            number,
            method: method.clone(),
            route: Arc::clone(&template),
            url: Arc::clone(&shown_url),
            client: Arc::clone(&client.target),
            entity: Arc::clone(&client.entity),
            label: failures.label.clone(),
        };

        let started = Instant::now();
        let transport = |e: reqwest::Error| {
            let kind = if e.is_timeout() {
                "timeout"
            } else if e.is_connect() {
                "connect"
            } else if e.is_body() || e.is_decode() {
                "body"
            } else {
                "request"
            };
            let error = RestError::Transport {
                request: failures.label.clone(),
                url: shown_url.to_string(),
                message: sanitizer.text(&error_chain(&e.without_url())),
            };
            (kind, error)
        };
        let mut response = match client.client.execute(request).await {
            Ok(r) => r,
            Err(e) => {
                let (kind, error) = transport(e);
                return Err(end_with_failure(operation, kind, error));
            }
        };
        let status = response.status();
        let too_large = || RestError::BodyTooLarge {
            request: failures.label.clone(),
            limit,
        };
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(end_with_failure(operation, "body_too_large", too_large()));
        }
        let initial = response
            .content_length()
            .unwrap_or(0)
            .min(limit)
            .min(16 * 1024 * 1024);
        let mut received = Received::default();
        // A running cap: never buffer past the limit, whatever Content-Length said.
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if received.len() as u64 + chunk.len() as u64 > limit {
                        return Err(end_with_failure(operation, "body_too_large", too_large()));
                    }
                    received.push(chunk, initial as usize);
                }
                Ok(None) => break,
                Err(e) => {
                    let (kind, error) = transport(e);
                    return Err(end_with_failure(operation, kind, error));
                }
            }
        }
        let elapsed = started.elapsed();
        let mut raw = http::Response::new(received.freeze());
        *raw.status_mut() = status;
        *raw.version_mut() = response.version();
        *raw.headers_mut() = std::mem::take(response.headers_mut());

        let response_content_type = raw
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| header_text(v).into_owned());
        let shown_response_body = sanitizer.recorded_body(response_content_type.as_deref(), raw.body());
        let mut attributes = Attributes::with_capacity(12)
            .with(semconv::HTTP_REQUEST_METHOD, method_text)
            .with(semconv::HTTP_ROUTE, &template)
            .with(semconv::HTTP_RESPONSE_STATUS_CODE, status.as_u16())
            .with(semconv::URL_FULL, &shown_url)
            .with(semconv::HTTP_RESPONSE_BODY_SIZE, raw.body().len())
            .with(
                semconv::KIT_DURATION_NS,
                u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            );
        header_attributes(&mut attributes, Side::Response, raw.headers(), &sanitizer);
        attributes.push(
            semconv::NETWORK_PROTOCOL_VERSION,
            Text::from_static(protocol_version(raw.version())),
        );
        if !shown_response_body.text.is_empty() {
            attributes.push(semconv::KIT_RESPONSE_BODY, &shown_response_body.text);
            if shown_response_body.base64 {
                attributes.push(semconv::KIT_RESPONSE_BODY_ENCODING, Text::from_static("base64"));
            }
        }
        operation.observe(Observation::new(semconv::OBS_HTTP_RESPONSE, attributes));

        if settings.capture {
            let options = &settings.attachments;
            if options.capture_request_bodies
                && let Some(shown) = shown_request_body
            {
                let attachment = Attachment::new(
                    attachment_name(number, "request"),
                    request_content_type.unwrap_or_else(|| "application/octet-stream".into()),
                    recorded_bytes(shown),
                )
                .with_description(failures.label.clone());
                ctx.attach(Some(operation.id()), attachment);
            }
            if options.capture_responses {
                let attachment = Attachment::new(
                    attachment_name(number, "response"),
                    response_content_type.unwrap_or_else(|| "text/plain".into()),
                    recorded_bytes(shown_response_body),
                )
                .with_description(crate::assertions::status_text(status));
                ctx.attach(Some(operation.id()), attachment);
            }
        }
        operation.end(
            OperationStatus::Ok,
            Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, status.as_u16()),
        );
        Ok(RestResponse::new(ctx, info, raw, elapsed))
    }
}

/// A response body as it arrives: a body that comes in one chunk (most of them) is kept as
/// that chunk, not copied; one in several is gathered into one buffer. A kept chunk may share
/// the allocation hyper read it into, as reqwest's own `bytes()` keeps it; that lives as long
/// as the response.
#[derive(Default)]
enum Received {
    #[default]
    Nothing,
    One(Bytes),
    Gathered(BytesMut),
}

impl Received {
    fn len(&self) -> usize {
        match self {
            Received::Nothing => 0,
            Received::One(bytes) => bytes.len(),
            Received::Gathered(buffer) => buffer.len(),
        }
    }

    /// Adds `chunk`; `expected` is what Content-Length promised (capped), the buffer's size
    /// when a second chunk comes.
    fn push(&mut self, chunk: Bytes, expected: usize) {
        match self {
            Received::Nothing => *self = Received::One(chunk),
            Received::One(first) => {
                let mut buffer = BytesMut::with_capacity(expected.max(first.len() + chunk.len()));
                buffer.extend_from_slice(first);
                buffer.extend_from_slice(&chunk);
                *self = Received::Gathered(buffer);
            }
            Received::Gathered(buffer) => buffer.extend_from_slice(&chunk),
        }
    }

    fn freeze(self) -> Bytes {
        match self {
            Received::Nothing => Bytes::new(),
            Received::One(bytes) => bytes,
            Received::Gathered(buffer) => buffer.freeze(),
        }
    }
}

/// The body's bytes as recorded: the text itself (no copy), or what the base64 stands for.
fn recorded_bytes(body: RecordedBody) -> Arc<[u8]> {
    if body.base64 {
        use base64::Engine as _;
        // The kit encoded it a moment ago: it decodes.
        return base64::engine::general_purpose::STANDARD
            .decode(body.text.as_bytes())
            .unwrap_or_default()
            .into();
    }
    Arc::from(body.text)
}

/// The method as an attribute: a literal for the standard methods, so that recording one
/// copies nothing.
pub(crate) fn method_text(method: &Method) -> Text {
    const STANDARD: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE",
    ];
    let name = method.as_str();
    match STANDARD.iter().find(|standard| **standard == name) {
        Some(standard) => Text::from_static(standard),
        None => Text::from(name.to_owned()),
    }
}

/// `1.1`, `2`: OpenTelemetry's `network.protocol.version`.
fn protocol_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// `rest-07-response`: an attachment of the test's request `number` (two digits at least).
pub(crate) fn attachment_name(number: u32, what: &str) -> String {
    let mut name = String::with_capacity(16 + what.len());
    name.push_str("rest-");
    if number < 10 {
        name.push('0');
    }
    push_decimal(&mut name, number);
    name.push('-');
    name.push_str(what);
    name
}

/// Appends `n` in decimal: without `format!`, whose machinery cost more than the rest of
/// naming an attachment.
pub(crate) fn push_decimal(out: &mut String, n: u32) {
    out.push_str(itoa::Buffer::new().format(n));
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

fn end_with_failure(operation: kit_core::Operation, kind: &'static str, error: RestError) -> RestError {
    let message = error.to_string();
    operation.observe(Observation::new(
        semconv::OBS_HTTP_FAILURE,
        Attributes::new()
            .with(semconv::ERROR_TYPE, kind)
            .with(semconv::KIT_FAILURE_MESSAGE, message.as_str()),
    ));
    operation.end(
        OperationStatus::Error { message },
        Attributes::new().with(semconv::ERROR_TYPE, kind),
    );
    error
}

#[cfg(test)]
mod tests {
    use super::{COMMON_HEADERS, Side, header_key, method_text};
    use http::Method;
    use kit_core::semconv;

    #[test]
    fn a_standard_method_is_recorded_as_a_literal_and_any_other_as_itself() {
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::HEAD,
            Method::OPTIONS,
            Method::CONNECT,
            Method::TRACE,
        ] {
            let (one, another) = (method_text(&method), method_text(&method));
            assert_eq!(one, method.as_str());
            // A literal: both are the same bytes, where copies would be two.
            assert_eq!(one.as_ptr(), another.as_ptr(), "{method}");
        }
        let purge = Method::from_bytes(b"PURGE").unwrap();
        assert_eq!(method_text(&purge), "PURGE");
    }

    #[test]
    fn a_common_header_key_is_the_prefix_and_name_as_any_other() {
        for name in COMMON_HEADERS.iter().copied().chain(["x-request-id"]) {
            assert_eq!(
                header_key(Side::Request, name),
                format!("{}{name}", semconv::HTTP_REQUEST_HEADER_PREFIX)
            );
            assert_eq!(
                header_key(Side::Response, name),
                format!("{}{name}", semconv::HTTP_RESPONSE_HEADER_PREFIX)
            );
        }
        assert!(matches!(
            header_key(Side::Response, "content-type"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    use super::*;

    #[test]
    fn attachment_names_and_status_texts_read_as_format_would_write_them() {
        for n in [0, 1, 9, 10, 99, 100, 4_294_967_295] {
            assert_eq!(attachment_name(n, "response"), format!("rest-{n:02}-response"));
        }
        for code in [100, 200, 204, 299, 404, 418, 599, 999] {
            let status = http::StatusCode::from_u16(code).unwrap();
            let expected = match status.canonical_reason() {
                Some(reason) => format!("{code} {reason}"),
                None => code.to_string(),
            };
            assert_eq!(crate::assertions::status_text(status), expected);
        }
    }

    fn params(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn tokens_are_filled_percent_encoded() {
        let p = params(&[("id", "a b/c?d"), ("sku_2", "X")]);
        assert_eq!(
            fill_route("/orders/{id}/items/{sku_2}", &p).unwrap(),
            "/orders/a%20b%2Fc%3Fd/items/X"
        );
        assert_eq!(
            fill_route("/x/{id}?q={id}", &params(&[("id", "1")])).unwrap(),
            "/x/1?q=1"
        );
        // A `+` in the value stays one; each space, alone or in a run, is `%20`.
        assert_eq!(
            fill_route("/s/{id}", &params(&[("id", " a+b  c é ")])).unwrap(),
            "/s/%20a%2Bb%20%20c%20%C3%A9%20"
        );
    }

    #[test]
    fn a_body_in_one_chunk_is_kept_and_one_in_several_gathered_in_order() {
        assert_eq!(Received::default().freeze(), Bytes::new());
        let chunk = Bytes::from_static(b"{\"id\":7}");
        let mut one = Received::default();
        one.push(chunk.clone(), 0);
        let kept = one.freeze();
        assert_eq!(kept, chunk);
        assert_eq!(kept.as_ptr(), chunk.as_ptr(), "one chunk is not copied");
        let mut several = Received::default();
        for (i, piece) in ["ab", "", "cde", "f"].into_iter().enumerate() {
            several.push(Bytes::from_static(piece.as_bytes()), 4);
            assert_eq!(several.len(), ["ab", "", "cde", "f"][..=i].concat().len());
        }
        assert_eq!(several.freeze(), "abcdef");
    }

    #[test]
    fn braces_around_other_characters_are_not_tokens() {
        assert_eq!(
            fill_route("/a/{not-a-token}/{}", &[]).unwrap(),
            "/a/{not-a-token}/{}"
        );
    }

    #[test]
    fn an_unfilled_token_is_named() {
        let err = fill_route("/orders/{id}", &[]).unwrap_err();
        assert_eq!(
            err,
            "the route token {id} has no value; give it one with .path_param(\"id\", …)"
        );
    }

    #[test]
    fn templates_drop_the_query_and_the_origin_of_an_absolute_url() {
        assert_eq!(route_template("/orders/{id}?expand=items"), "/orders/{id}");
        assert_eq!(
            route_template("http://u:secret@h:1/orders/{id}?token=t"),
            "/orders/{id}"
        );
        assert_eq!(route_template("https://h.example"), "/");
        assert_eq!(route_template("http://h/a/b"), "/a/b");
    }

    #[test]
    fn protocol_versions_read_as_opentelemetry_writes_them() {
        use http::Version;
        let versions = [
            (Version::HTTP_09, "0.9"),
            (Version::HTTP_10, "1.0"),
            (Version::HTTP_11, "1.1"),
            (Version::HTTP_2, "2"),
            (Version::HTTP_3, "3"),
        ];
        for (version, text) in versions {
            assert_eq!(protocol_version(version), text, "{version:?}");
        }
    }
}
