//! The buffered response.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use kit_core::json::{JsonPath, bind};
use kit_core::{Attributes, EventId, KitExecutionContext, Observation, semconv};
use serde::de::DeserializeOwned;

use crate::assertions::{AssertionCause, RestAssertionError, RestAssertions, RestShouldAssertions};

/// What a response was an answer to.
#[derive(Debug, Clone)]
pub(crate) struct RequestInfo {
    /// The id of the request's `http.request` operation.
    pub(crate) id: EventId,
    /// The request's number in its test, from 1 (attachments are named after it).
    pub(crate) number: u32,
    pub(crate) method: Method,
    /// The route template.
    pub(crate) route: Arc<str>,
    /// The sanitized URL.
    pub(crate) url: Arc<str>,
    /// The client's qualified name.
    pub(crate) client: Arc<str>,
    /// The entity the client's events name.
    pub(crate) entity: Arc<str>,
    /// `METHOD route`, as failure messages show the request.
    pub(crate) label: String,
}

/// The body, parsed once for every assertion and read that needs it.
#[derive(Debug)]
pub(crate) enum Body {
    Empty,
    Json(serde_json::Value),
    Invalid(String),
}

/// A response whose body is already buffered whole, so it can be read any number of times.
pub struct RestResponse {
    ctx: KitExecutionContext,
    request: RequestInfo,
    raw: http::Response<Bytes>,
    /// Every header but the `Content-*` ones, and those: split at the first read, as most
    /// responses are asserted on without either (two maps and a clone of every value were
    /// four allocations a response).
    split_headers: OnceLock<(HeaderMap, HeaderMap)>,
    text: OnceLock<String>,
    json: OnceLock<Body>,
    shapes: AtomicU32,
    /// Set once a shape was matched on the body's text: a second shape parses the `Value`
    /// that every later assertion and read shares.
    text_matched: AtomicBool,
    elapsed: Duration,
}

impl std::fmt::Debug for RestResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestResponse")
            .field(
                "request",
                &format_args!("{} {}", self.request.method, self.request.route),
            )
            .field("status", &self.raw.status())
            .field("body_len", &self.raw.body().len())
            .finish_non_exhaustive()
    }
}

impl RestResponse {
    pub(crate) fn new(
        ctx: KitExecutionContext,
        request: RequestInfo,
        raw: http::Response<Bytes>,
        elapsed: Duration,
    ) -> Self {
        RestResponse {
            ctx,
            request,
            raw,
            split_headers: OnceLock::new(),
            text: OnceLock::new(),
            json: OnceLock::new(),
            shapes: AtomicU32::new(0),
            text_matched: AtomicBool::new(false),
            elapsed,
        }
    }

    /// The status code.
    pub fn status_code(&self) -> StatusCode {
        self.raw.status()
    }

    /// True for a 2xx status.
    pub fn is_success_status_code(&self) -> bool {
        self.raw.status().is_success()
    }

    /// Every header but the `Content-*` ones.
    pub fn headers(&self) -> &HeaderMap {
        &self.split_headers().0
    }

    /// The `Content-*` headers.
    pub fn content_headers(&self) -> &HeaderMap {
        &self.split_headers().1
    }

    fn split_headers(&self) -> &(HeaderMap, HeaderMap) {
        self.split_headers.get_or_init(|| {
            let mut headers = HeaderMap::new();
            let mut content_headers = HeaderMap::new();
            for (name, value) in self.raw.headers() {
                let target = if name.as_str().starts_with("content-") {
                    &mut content_headers
                } else {
                    &mut headers
                };
                target.append(name.clone(), value.clone());
            }
            (headers, content_headers)
        })
    }

    /// The body as text (invalid UTF-8 replaced by U+FFFD), decoded once and cached.
    pub fn content(&self) -> &str {
        self.text
            .get_or_init(|| String::from_utf8_lossy(self.raw.body()).into_owned())
    }

    /// The body's bytes.
    pub fn content_bytes(&self) -> &Bytes {
        self.raw.body()
    }

    /// Time from sending the request to the end of the body.
    pub fn elapsed_time(&self) -> Duration {
        self.elapsed
    }

    /// The whole response: status, version, every header, the body.
    pub fn raw_response(&self) -> &http::Response<Bytes> {
        &self.raw
    }

    /// The id of the request's `http.request` operation, as traces show it.
    pub fn request_id(&self) -> EventId {
        self.request.id
    }

    /// The request's number in its test, from 1: its attachments are `rest-NN-…`.
    pub fn request_number(&self) -> u32 {
        self.request.number
    }

    /// `METHOD route`, as failure messages show the request.
    pub fn request_label(&self) -> &str {
        &self.request.label
    }

    /// The request's URL, sanitized.
    pub fn url(&self) -> &str {
        &self.request.url
    }

    /// The test the response belongs to.
    pub fn context(&self) -> &KitExecutionContext {
        &self.ctx
    }

    /// A copy whose body has not been parsed yet, for benchmarks that measure parsing.
    #[doc(hidden)]
    pub fn __unparsed_copy(&self) -> RestResponse {
        let mut raw = http::Response::new(self.raw.body().clone());
        *raw.status_mut() = self.raw.status();
        *raw.headers_mut() = self.raw.headers().clone();
        RestResponse::new(self.ctx.clone(), self.request.clone(), raw, self.elapsed)
    }

    /// Assertions that must hold.
    pub fn should(&self) -> RestShouldAssertions<'_> {
        RestShouldAssertions::new(self)
    }

    /// Assertions that must not hold.
    pub fn should_not(&self) -> RestAssertions<'_> {
        RestAssertions::new(self)
    }

    pub(crate) fn method(&self) -> &Method {
        &self.request.method
    }

    pub(crate) fn route(&self) -> &Arc<str> {
        &self.request.route
    }

    pub(crate) fn client_target(&self) -> &Arc<str> {
        &self.request.client
    }

    /// The entity the client's events name.
    pub(crate) fn client_entity(&self) -> Arc<str> {
        Arc::clone(&self.request.entity)
    }

    /// The number of the next expected-shape attachment of this response, from 1.
    pub(crate) fn next_shape_number(&self) -> u32 {
        self.shapes.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The body's text for a shape to match without parsing it into a `Value`: for the first
    /// shape asserted on a body nothing has parsed yet, if it is not empty.
    pub(crate) fn body_for_first_shape(&self) -> Option<&[u8]> {
        let text = self.raw.body();
        (self.json.get().is_none()
            && !self.text_matched.swap(true, Ordering::Relaxed)
            && !text.iter().all(u8::is_ascii_whitespace))
        .then_some(text)
    }

    /// The body parsed as JSON, once.
    pub(crate) fn body(&self) -> &Body {
        self.json.get_or_init(|| {
            let bytes = self.raw.body();
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Body::Empty;
            }
            match serde_json::from_slice(bytes) {
                Ok(value) => Body::Json(value),
                Err(e) => Body::Invalid(e.to_string()),
            }
        })
    }

    // === reads ===

    /// Records `http.response.deserialize` and fails the test.
    fn read_failed(
        &self,
        target: &str,
        path: Option<&str>,
        message: String,
        cause: Option<AssertionCause>,
    ) -> ! {
        let mut attributes = Attributes::with_capacity(4)
            .with(semconv::TARGET_TYPE, target)
            .with(semconv::CONTENT_LENGTH, self.raw.body().len());
        if let Some(path) = path {
            attributes.push(semconv::JSON_PATH, path);
        }
        let message = self.finish_message(message, true);
        attributes.push(semconv::KIT_FAILURE_MESSAGE, message.as_str());
        self.ctx.observe(
            Some(self.request.id),
            Observation::new(semconv::OBS_HTTP_RESPONSE_DESERIALIZE, attributes),
        );
        std::panic::panic_any(RestAssertionError::new(message, cause))
    }

    fn json_or_fail(&self, target: &str, path: Option<&str>) -> Option<&serde_json::Value> {
        match self.body() {
            Body::Empty => None,
            Body::Json(value) => Some(value),
            Body::Invalid(_) => {
                let error = serde_json::from_slice::<serde::de::IgnoredAny>(self.raw.body()).err();
                let text = error.as_ref().map(ToString::to_string).unwrap_or_default();
                self.read_failed(
                    target,
                    path,
                    format!(
                        "{} - The response body is not JSON, so it cannot be read as {target}: {text}.",
                        self.request_label()
                    ),
                    error.map(AssertionCause::Json),
                )
            }
        }
    }

    fn bind_or_fail<T: DeserializeOwned>(&self, value: &serde_json::Value, path: Option<&str>) -> T {
        let target = std::any::type_name::<T>();
        match bind::<T>(value, false) {
            Ok(t) => t,
            Err(e) => {
                let at = path.map(|p| format!(" at '{p}'")).unwrap_or_default();
                self.read_failed(
                    target,
                    path,
                    format!(
                        "{} - The JSON{at} cannot be read as {target}: {e}.",
                        self.request_label()
                    ),
                    Some(AssertionCause::Json(e)),
                )
            }
        }
    }

    fn resolve_or_fail<'v>(
        &self,
        value: &'v serde_json::Value,
        path: &str,
        target: &str,
    ) -> &'v serde_json::Value {
        match path.parse::<JsonPath>().and_then(|p| p.resolve(value)) {
            Ok(found) => found,
            Err(e) => self.read_failed(
                target,
                Some(path),
                format!(
                    "{} - The JSON path '{path}' did not match: {}.",
                    self.request_label(),
                    e.reason
                ),
                Some(AssertionCause::Path(e)),
            ),
        }
    }

    /// The body as `T`, member names bound without case; `None` for an empty body or JSON
    /// `null`. A body that is not JSON, or does not fit `T`, fails the test with serde_json's
    /// error and records `http.response.deserialize`.
    #[track_caller]
    pub fn read_as_json<T: DeserializeOwned>(&self) -> Option<T> {
        let value = self.json_or_fail(std::any::type_name::<T>(), None)?;
        if value.is_null() {
            return None;
        }
        Some(self.bind_or_fail(value, None))
    }

    /// The value at `path` (`$.items[0].sku`) as `T`; `None` for an empty body or a `null`
    /// there. A path that does not match fails the test, naming it.
    #[track_caller]
    pub fn read_as_json_at<T: DeserializeOwned>(&self, path: &str) -> Option<T> {
        let target = std::any::type_name::<T>();
        let value = self.json_or_fail(target, Some(path))?;
        let found = self.resolve_or_fail(value, path, target);
        if found.is_null() {
            return None;
        }
        Some(self.bind_or_fail(found, Some(path)))
    }

    /// The body as `T`; an empty body or JSON `null` fails the test, naming the request.
    #[track_caller]
    pub fn read_required<T: DeserializeOwned>(&self) -> T {
        let target = std::any::type_name::<T>();
        match self.json_or_fail(target, None) {
            Some(value) if !value.is_null() => self.bind_or_fail(value, None),
            found => {
                let what = if found.is_none() { "empty" } else { "JSON null" };
                self.read_failed(
                    target,
                    None,
                    format!(
                        "{} - The response body is {what}; expected {target} (request {}).",
                        self.request_label(),
                        self.request.id
                    ),
                    None,
                )
            }
        }
    }

    /// The value at `path` as `T`; an empty body, or a `null` at the path, fails the test,
    /// naming the request, whatever `T` is.
    #[track_caller]
    pub fn read_required_at<T: DeserializeOwned>(&self, path: &str) -> T {
        let target = std::any::type_name::<T>();
        let Some(value) = self.json_or_fail(target, Some(path)) else {
            self.read_failed(
                target,
                Some(path),
                format!(
                    "{} - The response body is empty, so the JSON path '{path}' holds nothing; expected {target} (request {}).",
                    self.request_label(),
                    self.request.id
                ),
                None,
            )
        };
        let found = self.resolve_or_fail(value, path, target);
        if found.is_null() {
            self.read_failed(
                target,
                Some(path),
                format!(
                    "{} - The JSON path '{path}' holds null; expected {target} (request {}).",
                    self.request_label(),
                    self.request.id
                ),
                None,
            )
        }
        self.bind_or_fail(found, Some(path))
    }

    /// The body as the type of `definition` (whose values are ignored: it is there for type
    /// inference, like a tuple or a struct literal you already have).
    #[track_caller]
    pub fn read_as_anonymous<T: DeserializeOwned>(&self, definition: T) -> Option<T> {
        drop(definition);
        self.read_as_json::<T>()
    }

    /// The body as a `serde_json::Value` (`Null` for an empty body).
    #[track_caller]
    pub fn read_as_dynamic(&self) -> serde_json::Value {
        self.json_or_fail("serde_json::Value", None)
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    }

    /// The body's bytes.
    pub fn read_as_bytes(&self) -> Vec<u8> {
        self.raw.body().to_vec()
    }
}
