//! Names of operations, observations and attributes: the vocabulary producers and collectors share.
//!
//! Attribute keys follow the [OpenTelemetry HTTP semantic conventions] where one exists
//! (`http.request.method`, `http.route`, `url.full`, `http.response.status_code`); keys the
//! conventions do not cover start with `kit.` or with the operation's own prefix
//! (`assertion.negated`).
//!
//! [OpenTelemetry HTTP semantic conventions]: https://opentelemetry.io/docs/specs/semconv/http/http-spans/

// --- operations ---

/// Operation: one HTTP request, from sending to its response. Named `REST · {METHOD} {route}`.
pub const OP_HTTP_REQUEST: &str = "http.request";
/// Operation: a status assertion.
pub const OP_ASSERT_STATUS: &str = "assert.http.status";
/// Operation: a content-type assertion.
pub const OP_ASSERT_CONTENT_TYPE: &str = "assert.http.content_type";
/// Operation: a header assertion.
pub const OP_ASSERT_HEADER: &str = "assert.http.header";
/// Operation: a cookie assertion.
pub const OP_ASSERT_COOKIE: &str = "assert.http.cookie";
/// Operation: a redirect-location assertion.
pub const OP_ASSERT_REDIRECT_LOCATION: &str = "assert.http.redirect_location";
/// Operation: a JSON shape assertion.
pub const OP_ASSERT_JSON_SHAPE: &str = "assert.json.shape";

// --- observations ---

/// Observation: a response arrived (every response).
pub const OBS_HTTP_RESPONSE: &str = "http.response";
/// Observation: sending or building the URI failed.
pub const OBS_HTTP_FAILURE: &str = "http.failure";
/// Observation: a shape assertion matched.
pub const OBS_HTTP_CONTRACT_SHAPE: &str = "http.contract.shape";
/// Observation: a read failed to deserialize, or a required read met nothing.
pub const OBS_HTTP_RESPONSE_DESERIALIZE: &str = "http.response.deserialize";

// --- OpenTelemetry HTTP attributes ---

/// HTTP method, upper case (`GET`).
pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
/// The route template (`/orders/{id}`), never the concrete path.
pub const HTTP_ROUTE: &str = "http.route";
/// The full URL, sanitized (no user-info, sensitive query values redacted).
pub const URL_FULL: &str = "url.full";
/// The response's status code.
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
/// The HTTP version of the response: `1.1`, `2`.
pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
/// The server's host name.
pub const SERVER_ADDRESS: &str = "server.address";
/// The server's port.
pub const SERVER_PORT: &str = "server.port";
/// Size of the request body in bytes.
pub const HTTP_REQUEST_BODY_SIZE: &str = "http.request.body.size";
/// Size of the response body in bytes.
pub const HTTP_RESPONSE_BODY_SIZE: &str = "http.response.body.size";
/// Prefix of request header attributes: `http.request.header.<lower-case name>` (a list).
pub const HTTP_REQUEST_HEADER_PREFIX: &str = "http.request.header.";
/// Prefix of response header attributes: `http.response.header.<lower-case name>` (a list).
pub const HTTP_RESPONSE_HEADER_PREFIX: &str = "http.response.header.";
/// The error's type when a request failed (`timeout`, `connect`, …).
pub const ERROR_TYPE: &str = "error.type";

// --- kit attributes ---

/// The client that sent a request (`orders:Default`).
pub const KIT_CLIENT: &str = "kit.client";
/// Number of headers the request carried.
pub const KIT_REQUEST_HEADER_COUNT: &str = "kit.http.request.header_count";
/// The request body, sanitized and truncated.
pub const KIT_REQUEST_BODY: &str = "kit.http.request.body";
/// The response body, sanitized and truncated.
pub const KIT_RESPONSE_BODY: &str = "kit.http.response.body";
/// `base64` when the request body was not UTF-8 and [`KIT_REQUEST_BODY`] holds its bytes
/// base64-encoded; absent for text.
pub const KIT_REQUEST_BODY_ENCODING: &str = "kit.http.request.body.encoding";
/// `base64` when the response body was not UTF-8 (see [`KIT_REQUEST_BODY_ENCODING`]).
pub const KIT_RESPONSE_BODY_ENCODING: &str = "kit.http.response.body.encoding";
/// How long a request took, in nanoseconds.
pub const KIT_DURATION_NS: &str = "kit.duration_ns";
/// A failure's message, sanitized.
pub const KIT_FAILURE_MESSAGE: &str = "kit.failure.message";
/// The id of the `http.request` operation an observation or assertion is about.
pub const KIT_REQUEST_ID: &str = "kit.request.id";
/// Which authentication kind a request used (the kind's name only).
pub const KIT_AUTH_KIND: &str = "kit.auth.kind";

// --- assertion attributes ---

/// What an assertion expected.
pub const ASSERTION_EXPECTED: &str = "assertion.expected";
/// What an assertion found.
pub const ASSERTION_ACTUAL: &str = "assertion.actual";
/// Present and true on the `should_not()` side.
pub const ASSERTION_NEGATED: &str = "assertion.negated";
/// Whether the assertion held.
pub const ASSERTION_RESULT: &str = "assertion.result";
/// The mismatches of a failed shape assertion (a list).
pub const ASSERTION_MISMATCHES: &str = "assertion.mismatches";
/// The JSON paths a shape assertion matched (a list).
pub const CONTRACT_MATCHED_PATHS: &str = "contract.matched_paths";
/// The type a shape or read targeted.
pub const TARGET_TYPE: &str = "target.type";
/// Length of the content a read looked at.
pub const CONTENT_LENGTH: &str = "content.length";
/// The JSON path a read used.
pub const JSON_PATH: &str = "json.path";

/// Every name above (prefixes excepted), so readers can share one `&'static str` for each
/// instead of allocating it per event.
const KNOWN: [&str; 40] = [
    OP_HTTP_REQUEST,
    OP_ASSERT_STATUS,
    OP_ASSERT_CONTENT_TYPE,
    OP_ASSERT_HEADER,
    OP_ASSERT_COOKIE,
    OP_ASSERT_REDIRECT_LOCATION,
    OP_ASSERT_JSON_SHAPE,
    OBS_HTTP_RESPONSE,
    OBS_HTTP_FAILURE,
    OBS_HTTP_CONTRACT_SHAPE,
    OBS_HTTP_RESPONSE_DESERIALIZE,
    HTTP_REQUEST_METHOD,
    HTTP_ROUTE,
    URL_FULL,
    HTTP_RESPONSE_STATUS_CODE,
    NETWORK_PROTOCOL_VERSION,
    SERVER_ADDRESS,
    SERVER_PORT,
    HTTP_REQUEST_BODY_SIZE,
    HTTP_RESPONSE_BODY_SIZE,
    ERROR_TYPE,
    KIT_CLIENT,
    KIT_REQUEST_HEADER_COUNT,
    KIT_REQUEST_BODY,
    KIT_RESPONSE_BODY,
    KIT_REQUEST_BODY_ENCODING,
    KIT_RESPONSE_BODY_ENCODING,
    KIT_DURATION_NS,
    KIT_FAILURE_MESSAGE,
    KIT_REQUEST_ID,
    KIT_AUTH_KIND,
    ASSERTION_EXPECTED,
    ASSERTION_ACTUAL,
    ASSERTION_NEGATED,
    ASSERTION_RESULT,
    ASSERTION_MISMATCHES,
    CONTRACT_MATCHED_PATHS,
    TARGET_TYPE,
    CONTENT_LENGTH,
    JSON_PATH,
];

/// The `&'static` copy of `name` when it is one of the vocabulary's names.
///
/// ```
/// assert_eq!(kit_core::semconv::intern("http.route"), Some(kit_core::semconv::HTTP_ROUTE));
/// assert_eq!(kit_core::semconv::intern("my.own"), None);
/// ```
pub fn intern(name: &str) -> Option<&'static str> {
    // Hashed: readers call this for every key of every event, and a linear scan of byte
    // comparisons was a tenth of `kit-cli report`'s time.
    static INDEX: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| KNOWN.iter().map(|k| (*k, *k)).collect())
        .get(name)
        .copied()
}
