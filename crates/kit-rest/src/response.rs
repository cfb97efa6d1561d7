//! The buffered response.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use kit_core::{EventId, KitExecutionContext};

/// What a response was an answer to.
#[derive(Debug, Clone)]
pub(crate) struct RequestInfo {
    /// The id of the request's `http.request` operation.
    pub(crate) id: EventId,
    /// The request's number in its test, from 1 (attachments are named after it).
    pub(crate) number: u32,
    pub(crate) method: Method,
    /// The route template.
    pub(crate) route: String,
    /// The sanitized URL.
    pub(crate) url: String,
}

/// A response whose body is already buffered whole, so it can be read any number of times.
pub struct RestResponse {
    ctx: KitExecutionContext,
    request: RequestInfo,
    raw: http::Response<Bytes>,
    headers: HeaderMap,
    content_headers: HeaderMap,
    text: OnceLock<String>,
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
        let mut headers = HeaderMap::new();
        let mut content_headers = HeaderMap::new();
        for (name, value) in raw.headers() {
            let target = if name.as_str().starts_with("content-") {
                &mut content_headers
            } else {
                &mut headers
            };
            target.append(name.clone(), value.clone());
        }
        RestResponse {
            ctx,
            request,
            raw,
            headers,
            content_headers,
            text: OnceLock::new(),
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
        &self.headers
    }

    /// The `Content-*` headers.
    pub fn content_headers(&self) -> &HeaderMap {
        &self.content_headers
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
    pub fn request_label(&self) -> String {
        format!("{} {}", self.request.method, self.request.route)
    }

    /// The request's URL, sanitized.
    pub fn url(&self) -> &str {
        &self.request.url
    }

    /// The test the response belongs to.
    pub fn context(&self) -> &KitExecutionContext {
        &self.ctx
    }
}
