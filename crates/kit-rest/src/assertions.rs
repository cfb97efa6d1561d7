//! Assertions on a response: `response.should()…` and `response.should_not()…`.
//!
//! Each assertion checks, records its `assert.*` operation under the request's
//! `http.request` operation, and returns the same facade so calls chain. A failed assertion
//! panics (a Rust test fails by panicking) with the typed error as the payload, so
//! `std::panic::catch_unwind` plus `downcast_ref` recovers it, and its message prints.
//!
//! | assertion | holds when |
//! | --- | --- |
//! | `have_http_status(code)` | the status is exactly `code` |
//! | `have_content_type(media)` | the media type, without parameters, equals `media` ignoring case |
//! | `have_header(name)` | a header of that name is in the response or content headers |
//! | `have_header_value(name, value)` | any value of that header equals `value` exactly |
//! | `have_cookie(name)` | a `Set-Cookie` sets a cookie of that name (names are case-sensitive) |
//! | `have_cookie_value(name, value)` | such a cookie's value (before the first `;`) equals `value` exactly |
//! | `have_redirect_location(location)` | `Location` equals `location` exactly, as it arrived |
//! | `match_shape(shape)`, `match_shape_exact(shape)`, `match_shape_with(shape, options)` | the body matches the shape (`should()` only) |

use std::error::Error as StdError;
use std::fmt;
use std::rc::Rc;

use http::StatusCode;
use kit_core::json::{
    JsonPathError, JsonShapeMismatchError, PreparedShape, ShapeMismatch, ShapeOptions, ShapeReport,
};
use kit_core::{
    Attachment, AttributeValue, Attributes, Observation, OperationStarted, OperationStatus, Text, semconv,
    visible,
};
use serde::Serialize;

use crate::request::header_text;
use crate::response::{Body, RestResponse};
use crate::settings;

/// A status assertion failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RestStatusAssertionError {
    /// The status the assertion named.
    pub expected: StatusCode,
    /// The status the response had.
    pub actual: StatusCode,
    /// The response body, sanitized and cut at the smaller of the attachment and response
    /// options' diagnostic caps.
    pub body: String,
    /// True for `should_not()`.
    pub negated: bool,
    message: String,
}

impl fmt::Display for RestStatusAssertionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for RestStatusAssertionError {}

/// What lies behind a [`RestAssertionError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum AssertionCause {
    /// A shape did not match.
    Shape(JsonShapeMismatchError),
    /// A JSON path did not resolve.
    Path(JsonPathError),
    /// The body did not deserialize into the type asked for.
    Json(serde_json::Error),
}

/// An assertion or a read failed. For a shape, `source()` is the
/// [`JsonShapeMismatchError`]; for a path, the [`JsonPathError`]; for a read into the wrong
/// type, serde_json's error.
#[derive(Debug)]
pub struct RestAssertionError {
    message: String,
    cause: Option<AssertionCause>,
}

impl RestAssertionError {
    pub(crate) fn new(message: String, cause: Option<AssertionCause>) -> Self {
        RestAssertionError { message, cause }
    }

    /// The message, as printed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The shape mismatches, for a shape assertion.
    pub fn shape_mismatch(&self) -> Option<&JsonShapeMismatchError> {
        match &self.cause {
            Some(AssertionCause::Shape(e)) => Some(e),
            _ => None,
        }
    }

    /// The path error, for a read or an assertion by path.
    pub fn path_error(&self) -> Option<&JsonPathError> {
        match &self.cause {
            Some(AssertionCause::Path(e)) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for RestAssertionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for RestAssertionError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.cause {
            Some(AssertionCause::Shape(e)) => Some(e),
            Some(AssertionCause::Path(e)) => Some(e),
            Some(AssertionCause::Json(e)) => Some(e),
            None => None,
        }
    }
}

/// `201 Created`, or the code alone.
pub(crate) fn status_text(status: StatusCode) -> String {
    status_text_after("", status)
}

/// `status 201 Created`, or `not status 201 Created`, built in one allocation: a passing status
/// assertion is on every request's path.
fn status_display(expected: StatusCode, negated: bool) -> String {
    status_text_after(if negated { "not status " } else { "status " }, expected)
}

/// `prefix`, then the status as [`status_text`] writes it, in one `String` of the right size.
fn status_text_after(prefix: &str, status: StatusCode) -> String {
    let reason = status.canonical_reason();
    let mut text = String::with_capacity(prefix.len() + 4 + reason.map_or(0, str::len));
    text.push_str(prefix);
    crate::request::push_decimal(&mut text, u32::from(status.as_u16()));
    if let Some(reason) = reason {
        text.push(' ');
        text.push_str(reason);
    }
    text
}

/// `'a', 'b'`, or `missing`.
fn quoted_list(values: &[String]) -> String {
    if values.is_empty() {
        "missing".to_owned()
    } else {
        values
            .iter()
            .map(|v| format!("'{v}'"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Positive assertions: `response.should()`.
#[derive(Debug, Clone, Copy)]
pub struct RestShouldAssertions<'r> {
    response: &'r RestResponse,
}

/// Negated assertions: `response.should_not()`. Shapes have no negated form.
#[derive(Debug, Clone, Copy)]
pub struct RestAssertions<'r> {
    response: &'r RestResponse,
}

/// What an assertion found, before deciding.
struct Check {
    operation: &'static str,
    display: String,
    /// A string for most checks; the status check records the codes as numbers.
    expected: AttributeValue,
    actual: AttributeValue,
    holds: bool,
}

impl RestResponse {
    /// Records the assertion and, when it does not hold (or holds, negated), fails the test.
    fn decide(&self, check: Check, negated: bool, message: impl FnOnce() -> String) {
        let ok = check.holds != negated;
        let mut attributes = Attributes::with_capacity(5)
            .with(semconv::ASSERTION_EXPECTED, check.expected)
            .with(semconv::ASSERTION_ACTUAL, check.actual)
            .with(semconv::KIT_CLIENT, self.client_target())
            .with(semconv::ASSERTION_RESULT, ok);
        if negated {
            attributes.push(semconv::ASSERTION_NEGATED, true);
        }
        let display = if negated {
            format!("not {}", check.display)
        } else {
            check.display
        };
        let operation = self.context().start_operation(
            Some(self.request_id()),
            OperationStarted::new(check.operation, display)
                .with_entity(self.client_entity())
                .with_attributes(attributes),
        );
        if ok {
            operation.end(OperationStatus::Ok, Attributes::new());
            return;
        }
        let message = self.finish_message(message(), true);
        operation.end(
            OperationStatus::Error {
                message: message.clone(),
            },
            Attributes::new(),
        );
        std::panic::panic_any(RestAssertionError::new(message, None));
    }

    /// `message`, with known secrets replaced and the request/response summary after it, its
    /// control characters shown as escapes ([`visible::lines`]): a body or a value quoting a
    /// terminal's escape sequences is shown as it is, not obeyed by the terminal the failure
    /// prints to.
    pub(crate) fn finish_message(&self, message: String, with_body: bool) -> String {
        let sanitizer = settings::sanitizer(self.context());
        let mut out = message;
        out.push_str(&format!(
            "\n  request:  {} {} (request {})",
            self.method(),
            self.url(),
            self.request_id()
        ));
        let media = self
            .content_headers()
            .get(http::header::CONTENT_TYPE)
            .map(|ct| format!(", {}", header_text(ct)))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n  response: {}{media}, {} bytes",
            status_text(self.status_code()),
            self.content_bytes().len()
        ));
        if with_body && !self.content_bytes().is_empty() {
            out.push_str(&format!("\n  body:     {}", self.body_excerpt()));
        }
        visible::lines(&sanitizer.text(&out)).into_owned()
    }

    /// The first lines of the sanitized body, for a failure's summary.
    fn body_excerpt(&self) -> String {
        let shown = self.sanitized_body(600);
        let lines: Vec<&str> = shown.lines().take(5).collect();
        let mut excerpt = lines.join("\n            ");
        if shown.lines().count() > 5 {
            excerpt.push_str("\n            …");
        }
        excerpt
    }

    /// The body, sanitized, cut at `cap` characters.
    pub(crate) fn sanitized_body(&self, cap: usize) -> String {
        let sanitizer = settings::sanitizer(self.context()).with_max_body_length(cap);
        let content_type = self
            .content_headers()
            .get(http::header::CONTENT_TYPE)
            .map(header_text);
        sanitizer.body(content_type.as_deref(), self.content_bytes())
    }

    fn header_values(&self, name: &str) -> Vec<String> {
        self.headers()
            .get_all(name)
            .iter()
            .chain(self.content_headers().get_all(name).iter())
            .map(|v| header_text(v).into_owned())
            .collect()
    }

    /// Values as a message may show them: a sensitive header's (or a known secret) redacted.
    fn shown_values(&self, header: &str, values: &[String]) -> Vec<String> {
        let sanitizer = settings::sanitizer(self.context());
        values
            .iter()
            .map(|v| sanitizer.header(header, &[v.as_str()]))
            .collect()
    }

    /// `(name, value)` of every cookie the response sets.
    fn cookies(&self) -> Vec<(String, String)> {
        self.header_values("set-cookie")
            .iter()
            .filter_map(|c| {
                let pair = c.split(';').next()?;
                let (name, value) = pair.split_once('=')?;
                Some((name.trim().to_owned(), value.trim().to_owned()))
            })
            .collect()
    }

    fn status_check(&self, expected: StatusCode, negated: bool) {
        let actual = self.status_code();
        let holds = actual == expected;
        if holds != negated {
            self.decide(
                Check {
                    operation: semconv::OP_ASSERT_STATUS,
                    display: status_display(expected, false),
                    expected: expected.as_u16().into(),
                    actual: actual.as_u16().into(),
                    holds,
                },
                negated,
                String::new,
            );
            return;
        }
        // A failure: the status error carries the body, cut at the smaller of the two caps.
        let settings = settings::for_response(self.context());
        let cap = settings.0.min(settings.1);
        let body = self.sanitized_body(cap);
        let first = if negated {
            format!(
                "{} - Expected status not to be {}, but it was.",
                self.request_label(),
                status_text(expected)
            )
        } else {
            format!(
                "{} - Expected status {}, but it was {}.",
                self.request_label(),
                status_text(expected),
                status_text(actual)
            )
        };
        let mut message = self.finish_message(first, false);
        if !body.is_empty() {
            message.push_str("\n  body:\n");
            message.push_str(&visible::lines(&body));
        }
        let mut attributes = Attributes::with_capacity(5)
            .with(semconv::ASSERTION_EXPECTED, expected.as_u16())
            .with(semconv::ASSERTION_ACTUAL, actual.as_u16())
            .with(semconv::KIT_CLIENT, self.client_target())
            .with(semconv::ASSERTION_RESULT, false);
        if negated {
            attributes.push(semconv::ASSERTION_NEGATED, true);
        }
        let display = status_display(expected, negated);
        let operation = self.context().start_operation(
            Some(self.request_id()),
            OperationStarted::new(semconv::OP_ASSERT_STATUS, display)
                .with_entity(self.client_entity())
                .with_attributes(attributes),
        );
        operation.end(
            OperationStatus::Error {
                message: message.clone(),
            },
            Attributes::new(),
        );
        std::panic::panic_any(RestStatusAssertionError {
            expected,
            actual,
            body,
            negated,
            message,
        });
    }

    fn content_type_check(&self, media_type: &str, negated: bool) {
        let actual = self
            .content_headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| header_text(v).into_owned());
        let media = |ct: &str| ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let holds = actual.as_deref().is_some_and(|a| media(a) == media(media_type));
        let shown = actual.clone().unwrap_or_else(|| "missing".into());
        let label = self.request_label();
        self.decide(
            Check {
                operation: semconv::OP_ASSERT_CONTENT_TYPE,
                display: format!("content type {media_type}"),
                expected: media_type.to_owned().into(),
                actual: shown.clone().into(),
                holds,
            },
            negated,
            || match (negated, actual) {
                (true, _) => {
                    format!("{label} - Expected content type not to be '{media_type}', but it was '{shown}'.")
                }
                (false, Some(a)) => {
                    format!("{label} - Expected content type '{media_type}', but it was '{a}'.")
                }
                (false, None) => {
                    format!("{label} - Expected content type '{media_type}', but the response has none.")
                }
            },
        );
    }

    fn header_check(&self, name: &str, value: Option<&str>, negated: bool) {
        let values = self.header_values(name);
        let shown = self.shown_values(name, &values);
        let label = self.request_label();
        match value {
            None => {
                let holds = !values.is_empty();
                self.decide(
                    Check {
                        operation: semconv::OP_ASSERT_HEADER,
                        display: format!("header {name}"),
                        expected: format!("{name} present").into(),
                        actual: quoted_list(&shown).into(),
                        holds,
                    },
                    negated,
                    || {
                        if negated {
                            format!(
                                "{label} - Expected header '{name}' to be absent, but it was present with value {}.",
                                quoted_list(&shown)
                            )
                        } else {
                            format!("{label} - Expected header '{name}' to be present, but it was missing.")
                        }
                    },
                );
            }
            Some(value) => {
                let holds = values.iter().any(|v| v == value);
                let sanitizer = settings::sanitizer(self.context());
                let shown_expected = sanitizer.header(name, &[value]);
                self.decide(
                    Check {
                        operation: semconv::OP_ASSERT_HEADER,
                        display: format!("header {name}"),
                        expected: shown_expected.clone().into(),
                        actual: quoted_list(&shown).into(),
                        holds,
                    },
                    negated,
                    || {
                        if negated {
                            format!("{label} - Expected header '{name}' not to have value '{shown_expected}', but it did.")
                        } else {
                            format!(
                                "{label} - Expected header '{name}' to have value '{shown_expected}', but it was {}.",
                                quoted_list(&shown)
                            )
                        }
                    },
                );
            }
        }
    }

    fn cookie_check(&self, name: &str, value: Option<&str>, negated: bool) {
        let cookies = self.cookies();
        let sanitizer = settings::sanitizer(self.context());
        let label = self.request_label();
        let set: Vec<String> = cookies
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect();
        let shown: Vec<String> = set
            .iter()
            .map(|v| sanitizer.header("Set-Cookie", &[v.as_str()]))
            .collect();
        match value {
            None => self.decide(
                Check {
                    operation: semconv::OP_ASSERT_COOKIE,
                    display: format!("cookie {name}"),
                    expected: format!("{name} set").into(),
                    actual: quoted_list(&shown).into(),
                    holds: !set.is_empty(),
                },
                negated,
                || {
                    if negated {
                        format!("{label} - Expected cookie '{name}' not to be set, but it was set to {}.", quoted_list(&shown))
                    } else {
                        let names: Vec<&str> = cookies.iter().map(|(n, _)| n.as_str()).collect();
                        let others = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
                        format!("{label} - Expected cookie '{name}' to be set, but it was not (cookies set: {others}).")
                    }
                },
            ),
            Some(value) => {
                let shown_expected = sanitizer.header("Set-Cookie", &[value]);
                self.decide(
                    Check {
                        operation: semconv::OP_ASSERT_COOKIE,
                        display: format!("cookie {name}"),
                        expected: shown_expected.clone().into(),
                        actual: quoted_list(&shown).into(),
                        holds: set.iter().any(|v| v == value),
                    },
                    negated,
                    || {
                        if negated {
                            format!("{label} - Expected cookie '{name}' not to have value '{shown_expected}', but it did.")
                        } else {
                            format!(
                                "{label} - Expected cookie '{name}' to have value '{shown_expected}', but it was {}.",
                                quoted_list(&shown)
                            )
                        }
                    },
                )
            }
        }
    }

    fn redirect_check(&self, location: &str, negated: bool) {
        let values = self.header_values("location");
        let sanitizer = settings::sanitizer(self.context());
        let actual = values.first().cloned();
        let shown_actual = actual.as_deref().map(|a| sanitizer.url(a));
        let shown_expected = sanitizer.url(location);
        let label = self.request_label();
        self.decide(
            Check {
                operation: semconv::OP_ASSERT_REDIRECT_LOCATION,
                display: format!("redirect location {shown_expected}"),
                expected: shown_expected.clone().into(),
                actual: shown_actual.clone().unwrap_or_else(|| "missing".into()).into(),
                holds: actual.as_deref() == Some(location),
            },
            negated,
            || match (negated, shown_actual) {
                (true, _) => format!("{label} - Expected redirect location not to be '{shown_expected}', but it was."),
                (false, Some(a)) => format!("{label} - Expected redirect location '{shown_expected}', but it was '{a}'."),
                (false, None) => format!(
                    "{label} - Expected redirect location '{shown_expected}', but the response has no Location header (status {})."
                    ,
                    status_text(self.status_code())
                ),
            },
        );
    }

    /// The body's report against `shape`. The first shape on a body nothing has parsed yet is
    /// matched on the text: a body that matches never becomes a `Value` (see
    /// `PreparedShape::try_matches_slice`). One that mismatches is matched on the `Value` that
    /// later reads share; one that is not JSON is left to `body`, for the error every other
    /// read gives.
    fn shape_report(&self, shape: &PreparedShape, options: &ShapeOptions) -> ShapeReport {
        if let Some(Ok(Some(report))) = self
            .body_for_first_shape()
            .map(|text| shape.try_matches_slice(text, options))
        {
            return report;
        }
        let reason = match self.body() {
            Body::Json(actual) => return shape.matches(actual, options),
            Body::Empty => "the response body is empty".to_owned(),
            Body::Invalid(e) => format!("the response body is not JSON ({e})"),
        };
        ShapeReport {
            mismatches: vec![ShapeMismatch {
                path: "$".into(),
                reason,
                expected: "a JSON document".into(),
                actual: self.body_excerpt(),
            }],
            matched: Vec::new(),
        }
    }

    /// Matches the body against `shape`, records `assert.json.shape` (and, on a match,
    /// `http.contract.shape`), attaches the shape when asked to, and fails on a mismatch.
    ///
    /// `text` is the shape serialized; `value` makes its tree when the last shape on this
    /// thread was another one.
    pub(crate) fn shape_check(
        &self,
        text: &str,
        value: impl FnOnce() -> Result<serde_json::Value, String>,
        target_type: &'static str,
        options: &ShapeOptions,
    ) {
        let shape = match prepared_shape(text, value) {
            Ok(shape) => shape,
            Err(e) => self.shape_does_not_serialize(&e),
        };
        let sanitizer = settings::sanitizer(self.context());
        let report = self.shape_report(&shape, options);
        // A mismatch under a sensitive name shows neither the value expected nor the one found.
        let rules = sanitizer.rules();
        let mismatches: Vec<ShapeMismatch> = report
            .mismatches
            .iter()
            .map(|m| {
                let sensitive = sanitizer.redacts()
                    && last_member(&m.path).is_some_and(|n| rules.is_sensitive_json_property(n));
                let hide = |text: &str| {
                    if sensitive {
                        kit_core::redact::REDACTED.to_owned()
                    } else {
                        sanitizer.text(text)
                    }
                };
                ShapeMismatch {
                    path: m.path.clone(),
                    reason: m.reason.clone(),
                    expected: hide(&m.expected),
                    actual: hide(&m.actual),
                }
            })
            .collect();
        let shown = shown_shape(&sanitizer, text);
        let matched = mismatches.is_empty();
        let bullets: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
        let mut attributes = Attributes::with_capacity(6)
            .with(semconv::ASSERTION_EXPECTED, &shown.compact)
            .with(semconv::ASSERTION_RESULT, matched)
            .with(semconv::KIT_CLIENT, self.client_target())
            .with(semconv::TARGET_TYPE, Text::from_static(target_type));
        if !bullets.is_empty() {
            attributes.push(semconv::ASSERTION_MISMATCHES, bullets.clone());
            // The whole body is on http.response; a failure also carries an excerpt here.
            // Passing assertions do not pay for sanitizing it again.
            attributes.push(semconv::ASSERTION_ACTUAL, self.body_excerpt());
        }
        let display = if options.exact { "shape (exact)" } else { "shape" };
        let operation = self.context().start_operation(
            Some(self.request_id()),
            OperationStarted::new(semconv::OP_ASSERT_JSON_SHAPE, display)
                .with_entity(self.client_entity())
                .with_attributes(attributes),
        );
        let settings = settings::for_attachments(self.context());
        if settings.capture && settings.attachments.capture_expected_shapes {
            let n = self.next_shape_number();
            let suffix = if n == 1 { String::new() } else { format!("-{n:02}") };
            let mut name = crate::request::attachment_name(self.request_number(), "expected-shape");
            name.push_str(&suffix);
            let content = shown.pretty();
            let attachment = Attachment::new(name, "application/json", content)
                .with_description(format!("{display} asserted on {}", self.request_label()));
            self.context().attach(Some(self.request_id()), attachment);
        }
        if matched {
            operation.end(OperationStatus::Ok, Attributes::new());
            self.context().observe(
                Some(self.request_id()),
                Observation::new(
                    semconv::OBS_HTTP_CONTRACT_SHAPE,
                    Attributes::with_capacity(6)
                        .with(semconv::KIT_REQUEST_ID, self.request_id().to_string())
                        .with(
                            semconv::HTTP_REQUEST_METHOD,
                            crate::request::method_text(self.method()),
                        )
                        .with(semconv::HTTP_ROUTE, self.route())
                        .with(semconv::HTTP_RESPONSE_STATUS_CODE, self.status_code().as_u16())
                        .with(semconv::CONTRACT_MATCHED_PATHS, report.matched)
                        .with(semconv::TARGET_TYPE, Text::from_static(target_type)),
                ),
            );
            return;
        }
        let first = format!(
            "{} - Shape mismatch failed with {} error(s):\n{}",
            self.request_label(),
            mismatches.len(),
            bullets
                .iter()
                .map(|b| format!("- {b}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let message = self.finish_message(first, true);
        operation.end(
            OperationStatus::Error {
                message: message.clone(),
            },
            Attributes::new(),
        );
        std::panic::panic_any(RestAssertionError::new(
            message,
            Some(AssertionCause::Shape(JsonShapeMismatchError {
                mismatches,
                matched_properties: report.matched,
            })),
        ));
    }
}

/// An expected shape as the trace shows it: sanitized once, and laid out for the attachment by
/// re-indenting the sanitized text, so the pretty form cannot show anything the compact one
/// redacted.
#[derive(Clone)]
struct ShownShape {
    /// Shared with each assertion's event, which would otherwise copy it.
    compact: std::sync::Arc<str>,
    /// The attachment's bytes, laid out once and shared by each assertion's attachment.
    pretty: std::rc::Rc<std::cell::OnceCell<std::sync::Arc<[u8]>>>,
}

impl ShownShape {
    fn pretty(&self) -> std::sync::Arc<[u8]> {
        std::sync::Arc::clone(
            self.pretty
                .get_or_init(|| pretty_json(&self.compact).into_bytes().into()),
        )
    }
}

/// The last shape asserted on this thread: its text, the shape prepared for matching (its
/// matchers parsed once), and, once sanitized, how the trace shows it, with the sanitizer that
/// sanitized it (a clone: it keeps the rules and registry alive, so an address cannot be reused
/// under it) and how many secrets that registry knew. A test asserts the same shape request
/// after request; serializing, sanitizing and parsing it again was a fifth of an assertion.
struct LastShape {
    text: Rc<str>,
    prepared: Rc<PreparedShape>,
    shown: Option<(kit_core::redact::Sanitizer, usize, ShownShape)>,
}

/// The largest shape (as JSON text) a thread keeps for its next assertion.
const MAX_KEPT_SHAPE_BYTES: usize = 64 * 1024;

thread_local! {
    static LAST_SHAPE: std::cell::RefCell<Option<LastShape>> = const { std::cell::RefCell::new(None) };
}

/// The shape whose text is `text`, prepared: the last one on this thread if it had this text,
/// else made from `value`.
fn prepared_shape(
    text: &str,
    value: impl FnOnce() -> Result<serde_json::Value, String>,
) -> Result<Rc<PreparedShape>, String> {
    let hit = LAST_SHAPE.with_borrow(|last| {
        last.as_ref()
            .filter(|l| &*l.text == text)
            .map(|l| Rc::clone(&l.prepared))
    });
    if let Some(prepared) = hit {
        return Ok(prepared);
    }
    let prepared = Rc::new(PreparedShape::new(value()?));
    // A thread keeps its last shape until its next assertion: not a large one.
    let kept = (text.len() <= MAX_KEPT_SHAPE_BYTES).then(|| LastShape {
        text: Rc::from(text),
        prepared: Rc::clone(&prepared),
        shown: None,
    });
    LAST_SHAPE.set(kept);
    Ok(prepared)
}

/// The text of the thread's last shape if `shape` serializes to it, found without building the
/// text: serializing the shape into a new string was a sixth of an assertion, and comparing it
/// as it was written still cost as much as matching a 600-byte body; walking the last shape's
/// tree in step with the serializer costs a fraction (see `same_shape`).
fn last_shape_if_same(shape: &impl Serialize) -> Option<Rc<str>> {
    // Cloned out first: the shape's `Serialize` is the caller's code, run with no borrow held.
    let (text, prepared) = LAST_SHAPE.with_borrow(|last| {
        last.as_ref()
            .map(|l| (Rc::clone(&l.text), Rc::clone(&l.prepared)))
    })?;
    crate::same_shape::serializes_to(shape, prepared.shape()).then_some(text)
}

/// How the trace shows the shape whose text is `text`: sanitized by `sanitizer`, or the last
/// shape's if it had this text, this sanitizer, and no secret was learnt since.
fn shown_shape(sanitizer: &kit_core::redact::Sanitizer, text: &str) -> ShownShape {
    let known_secrets = sanitizer.secrets().len();
    let hit = LAST_SHAPE.with_borrow(|last| {
        last.as_ref()
            .filter(|l| &*l.text == text)
            .and_then(|l| l.shown.as_ref())
            .filter(|(by, known, _)| *known == known_secrets && by.is_same(sanitizer))
            .map(|(_, _, shown)| shown.clone())
    });
    if let Some(shown) = hit {
        return shown;
    }
    let shown = ShownShape {
        compact: sanitizer.body(Some("application/json"), text.as_bytes()).into(),
        pretty: Default::default(),
    };
    LAST_SHAPE.with_borrow_mut(|last| {
        if let Some(last) = last.as_mut().filter(|l| &*l.text == text) {
            // What sanitizing remembered (a value under a sensitive name) is known from now on.
            last.shown = Some((sanitizer.clone(), sanitizer.secrets().len(), shown.clone()));
        }
    });
    shown
}

/// Compact JSON text laid out as `serde_json::to_string_pretty` lays out a document (two-space
/// indents, `"name": value`), without parsing it; text that is not compact JSON (a sanitizer
/// cut it short, say) is returned as it is.
fn pretty_json(compact: &str) -> String {
    let bytes = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() + compact.len() / 2);
    let mut depth = 0usize;
    let mut start = 0; // first byte of `compact` not yet copied
    let mut i = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        (0..depth).for_each(|_| out.push_str("  "));
    };
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string, escapes and all.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                continue;
            }
            open @ (b'{' | b'[') => {
                out.push_str(&compact[start..=i]);
                let close = if open == b'{' { b'}' } else { b']' };
                if bytes.get(i + 1) == Some(&close) {
                    out.push(close as char);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                out.push_str(&compact[start..i]);
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(bytes[i] as char);
            }
            b',' => {
                out.push_str(&compact[start..=i]);
                newline(&mut out, depth);
            }
            b':' => {
                out.push_str(&compact[start..=i]);
                out.push(' ');
            }
            b' ' | b'\n' | b'\t' | b'\r' => return compact.to_owned(),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 1;
        start = i;
    }
    if i > bytes.len() || depth != 0 {
        return compact.to_owned();
    }
    out.push_str(&compact[start..]);
    out
}

/// The last member name of a mismatch path (`$.a.password` → `password`).
fn last_member(path: &str) -> Option<&str> {
    let last = path.rsplit(['.', '[']).next()?;
    let name = last.trim_end_matches(']').trim_matches('"');
    (!name.is_empty() && !name.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

impl RestResponse {
    /// Fails the assertion of a shape that does not serialize to JSON.
    pub(crate) fn shape_does_not_serialize(&self, error: &str) -> ! {
        let message = self.finish_message(
            format!(
                "{} - The shape does not serialize to JSON: {error}",
                self.request_label()
            ),
            false,
        );
        std::panic::panic_any(RestAssertionError::new(message, None))
    }
}

macro_rules! common_assertions {
    ($negated:expr) => {
        /// The status is exactly `expected`.
        #[track_caller]
        pub fn have_http_status(self, expected: StatusCode) -> Self {
            self.response.status_check(expected, $negated);
            self
        }

        /// The media type, without parameters, is `media_type` (case-insensitive).
        #[track_caller]
        pub fn have_content_type(self, media_type: &str) -> Self {
            self.response.content_type_check(media_type, $negated);
            self
        }

        /// A header called `name` is present (in the response or content headers).
        #[track_caller]
        pub fn have_header(self, name: &str) -> Self {
            self.response.header_check(name, None, $negated);
            self
        }

        /// Some value of header `name` is exactly `value`.
        #[track_caller]
        pub fn have_header_value(self, name: &str, value: &str) -> Self {
            self.response.header_check(name, Some(value), $negated);
            self
        }

        /// A `Set-Cookie` sets cookie `name` (case-sensitive).
        #[track_caller]
        pub fn have_cookie(self, name: &str) -> Self {
            self.response.cookie_check(name, None, $negated);
            self
        }

        /// A `Set-Cookie` sets cookie `name` to exactly `value` (before its first attribute).
        #[track_caller]
        pub fn have_cookie_value(self, name: &str, value: &str) -> Self {
            self.response.cookie_check(name, Some(value), $negated);
            self
        }

        /// `Location` is exactly `location`, as it arrived (relative or absolute).
        #[track_caller]
        pub fn have_redirect_location(self, location: &str) -> Self {
            self.response.redirect_check(location, $negated);
            self
        }

        /// The response again, to read it or to switch between `should()` and `should_not()`.
        pub fn response(self) -> &'r RestResponse {
            self.response
        }
    };
}

impl<'r> RestShouldAssertions<'r> {
    pub(crate) fn new(response: &'r RestResponse) -> Self {
        RestShouldAssertions { response }
    }

    common_assertions!(false);

    /// The body matches `shape` partially: listed members only, names in any case, arrays in
    /// full. Every mismatch is reported at once. See [`kit_core::json`] for the rules and
    /// the matchers (`json_value::…`) a shape may hold.
    #[track_caller]
    pub fn match_shape<S: Serialize>(self, shape: S) -> Self {
        self.match_shape_with(shape, &ShapeOptions::default())
    }

    /// The body matches `shape`, and has no member the shape does not list.
    #[track_caller]
    pub fn match_shape_exact<S: Serialize>(self, shape: S) -> Self {
        self.match_shape_with(shape, &ShapeOptions::EXACT)
    }

    /// The body matches `shape` under `options`.
    #[track_caller]
    pub fn match_shape_with<S: Serialize>(self, shape: S, options: &ShapeOptions) -> Self {
        let text = match last_shape_if_same(&shape) {
            Some(text) => text,
            None => match serde_json::to_string(&shape) {
                Ok(text) => Rc::from(text),
                Err(e) => self.response.shape_does_not_serialize(&e.to_string()),
            },
        };
        // The tree is parsed back from the text (deeper than serde_json's parser goes: made
        // from the shape itself) only when the last shape on this thread was another one.
        let value = || {
            serde_json::from_str(&text)
                .or_else(|_| serde_json::to_value(&shape))
                .map_err(|e| e.to_string())
        };
        self.response
            .shape_check(&text, value, std::any::type_name::<S>(), options);
        self
    }
}

impl<'r> RestAssertions<'r> {
    pub(crate) fn new(response: &'r RestResponse) -> Self {
        RestAssertions { response }
    }

    common_assertions!(true);
}

#[cfg(test)]
mod tests {
    use super::{MAX_KEPT_SHAPE_BYTES, last_shape_if_same, prepared_shape, pretty_json};
    use serde_json::json;

    #[test]
    fn a_shape_is_the_last_one_only_when_it_serializes_to_the_same_text() {
        let text = r#"{"a":1,"b":[true,"x"]}"#;
        prepared_shape(text, || Ok(serde_json::from_str(text).unwrap())).unwrap();
        let same = last_shape_if_same(&json!({"a": 1, "b": [true, "x"]})).expect("the same shape");
        assert_eq!(&*same, text);
        for other in [
            json!({"a": 1, "b": [true, "y"]}),
            json!({"a": 1, "b": [true]}),
            json!({"a": 1, "b": [true, "x"], "c": null}),
            json!([]),
        ] {
            assert!(last_shape_if_same(&other).is_none(), "{other} taken for {text}");
        }
    }

    #[test]
    fn a_thread_reuses_its_last_shape_only_for_the_same_text_and_keeps_no_large_one() {
        let parse = |text: &str| {
            let text = text.to_owned();
            move || serde_json::from_str(&text).map_err(|e| e.to_string())
        };
        let unused = || -> Result<serde_json::Value, String> { panic!("the kept shape is reused") };
        let a = prepared_shape("[1]", parse("[1]")).unwrap();
        assert!(std::rc::Rc::ptr_eq(&a, &prepared_shape("[1]", unused).unwrap()));
        let b = prepared_shape("[2]", parse("[2]")).unwrap();
        assert_eq!(b.shape(), &json!([2]));
        let a_again = prepared_shape("[1]", parse("[1]")).unwrap();
        assert_eq!(a_again.shape(), &json!([1]));
        assert!(!std::rc::Rc::ptr_eq(&a, &a_again), "[2] replaced it");

        let large = serde_json::to_string(&vec!["x"; MAX_KEPT_SHAPE_BYTES / 4 + 1]).unwrap();
        let first = prepared_shape(&large, parse(&large)).unwrap();
        let second = prepared_shape(&large, parse(&large)).unwrap();
        assert!(!std::rc::Rc::ptr_eq(&first, &second), "not kept");
    }

    #[test]
    fn pretty_json_lays_out_compact_text_as_serde_json_does() {
        let documents = [
            json!({}),
            json!([]),
            json!({"a": {}, "b": [], "c": [{}], "d": [[]]}),
            json!({"id": 1, "tags": ["a", "b"], "nested": {"deep": {"x": null, "y": true}}}),
            json!(["{", "}", "[", "]", ",", ":", "quote \" and backslash \\", "\\"]),
            json!({"key with: colon, and {braces}": "value [with] brackets", "é": "ünïcødé ✓"}),
            json!([1, -2.5, 1e300, "\u{0001}", {"__kit_matcher": "any_string"}]),
            json!("just a string"),
            json!(42),
        ];
        for document in documents {
            let compact = document.to_string();
            assert_eq!(
                pretty_json(&compact),
                serde_json::to_string_pretty(&document).unwrap(),
                "{compact}"
            );
        }
    }

    #[test]
    fn text_that_is_not_compact_json_is_kept_as_it_is() {
        for text in [
            r#"{"a": 1}"#,
            r#"{"a":"unterminated"#,
            r#"{"a":[1,2"#,
            r#"{"a":"ends in a backslash\"#,
            r#"[1]"a string after the document, cut in an escape\"#,
            "",
        ] {
            assert_eq!(pretty_json(text), text);
        }
    }
}
