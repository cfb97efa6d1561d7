//! `kit-cli export`: HAR 1.2 and OTLP/JSON, written one test at a time as the tests are read
//! ahead ([`crate::read_ahead`]).

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use base64::Engine as _;
use serde::Serialize;
use serde_json::json;

use kit_core::{AttributeValue, Attributes, EventId, EventKind, OperationStatus, TestOutcome, semconv};
use kit_trace::{ArchiveReader, TestRecord};

use crate::Exit;
use crate::exchanges::{Body, Exchange, exchanges, rfc3339, timestamp};
use crate::pretty::PrettyWriter;

/// `kit-cli export`: `archive`, or when none is named the newest in the folder the tests write
/// to (found through the configuration in `config`).
pub(crate) fn export(
    archive: Option<&Path>,
    har: Option<&Path>,
    otlp: Option<&Path>,
    config: Option<&Path>,
) -> Result<(), Exit> {
    let archive = match archive {
        Some(path) => crate::inputs::archive(path).map_err(Exit::input)?.to_owned(),
        None => {
            let configured = crate::inputs::configuration(config).map_err(Exit::input)?;
            crate::inputs::newest_archive(&configured, "name an archive to export another")
                .map_err(Exit::input)?
        }
    };
    let open = || ArchiveReader::open(&archive).map_err(Exit::input);
    if let Some(path) = har {
        let reader = open()?;
        write_streamed(path, |w| har_document(reader, w))?;
    }
    if let Some(path) = otlp {
        let reader = open()?;
        write_streamed(path, |w| otlp_document(reader, w))?;
    }
    Ok(())
}

/// Why an export stopped: the archive could not be read, or the output not written.
enum Failed {
    Read(kit_trace::TraceError),
    Write(std::io::Error),
}

impl From<kit_trace::TraceError> for Failed {
    fn from(e: kit_trace::TraceError) -> Self {
        Failed::Read(e)
    }
}

impl From<std::io::Error> for Failed {
    fn from(e: std::io::Error) -> Self {
        Failed::Write(e)
    }
}

type Out<'a> = PrettyWriter<BufWriter<&'a File>>;

/// Writes the document `write` streams to `path`, whole or not at all
/// ([`crate::output::write_whole`]).
fn write_streamed(path: &Path, write: impl FnOnce(&mut Out<'_>) -> Result<(), Failed>) -> Result<(), Exit> {
    let written = crate::output::write_whole(path, |file| {
        let mut w = PrettyWriter::new(BufWriter::with_capacity(256 * 1024, file));
        write(&mut w)?;
        // `finish` flushes what the buffer holds.
        w.finish()?;
        Ok(())
    });
    written.map_err(|failed| match failed {
        Failed::Read(e) => Exit::input(e),
        Failed::Write(e) => Exit::input(format!("{}: cannot write: {e}", path.display())),
    })
}

// === HAR 1.2 ===

/// A test's HAR page, kept small until the entries are written: one per test.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    started_date_time: String,
    id: String,
    title: String,
    page_timings: PageTimings,
    /// The test's outcome.
    comment: &'static str,
}

/// Neither is measured.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageTimings {
    on_content_load: i64,
    on_load: i64,
}

/// HAR 1.2: one page per test (id: the test id, title: its name), one entry per request.
/// Entries are written as each test is read, and the pages after them (JSON members have no
/// order), so only the pages are held: a few strings a test.
fn har_document(reader: ArchiveReader, w: &mut Out<'_>) -> Result<(), Failed> {
    w.begin_object()?;
    w.key("log")?;
    w.begin_object()?;
    w.key("version")?;
    w.value(&"1.2")?;
    w.key("creator")?;
    w.value(&json!({ "name": "kit-cli", "version": env!("CARGO_PKG_VERSION") }))?;
    w.key("entries")?;
    w.begin_array()?;
    let mut pages = Vec::new();
    crate::read_ahead::each_test(reader, |record| -> Result<(), Failed> {
        let page = Page {
            started_date_time: timestamp(record.started_at),
            id: record.test_id.to_string(),
            title: record.name.clone(),
            page_timings: PageTimings {
                on_content_load: -1,
                on_load: -1,
            },
            comment: record.outcome.label(),
        };
        for exchange in exchanges(&record.events) {
            let http_version = format!("HTTP/{}", exchange.protocol.as_deref().unwrap_or("1.1"));
            w.value(&har_entry(&page.id, &exchange, &http_version))?;
        }
        pages.push(page);
        Ok(())
    })?;
    w.end()?;
    w.key("pages")?;
    w.begin_array()?;
    for page in &pages {
        w.value(page)?;
    }
    Ok(())
}

/// A HAR entry, borrowed from its exchange: serialized as it stands, with no map built for it.
/// Members are in the order HAR 1.2 lists them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HarEntry<'a> {
    pageref: &'a str,
    started_date_time: String,
    time: f64,
    request: HarRequest<'a>,
    response: HarResponse<'a>,
    cache: Empty,
    timings: Timings,
    comment: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest<'a> {
    method: &'a str,
    url: &'a str,
    http_version: &'a str,
    cookies: Vec<NameValue<'a>>,
    headers: Vec<NameValue<'a>>,
    query_string: Vec<NameValue<'a>>,
    headers_size: i64,
    body_size: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    post_data: Option<PostData<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HarResponse<'a> {
    status: u16,
    status_text: &'static str,
    http_version: &'a str,
    cookies: Vec<NameValue<'a>>,
    headers: Vec<NameValue<'a>>,
    content: Content<'a>,
    #[serde(rename = "redirectURL")]
    redirect_url: &'a str,
    headers_size: i64,
    body_size: i64,
}

#[derive(Serialize)]
struct NameValue<'a> {
    name: Cow<'a, str>,
    value: Cow<'a, str>,
}

impl<'a> NameValue<'a> {
    fn new(name: impl Into<Cow<'a, str>>, value: impl Into<Cow<'a, str>>) -> Self {
        NameValue {
            name: name.into(),
            value: value.into(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PostData<'a> {
    mime_type: &'a str,
    text: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Content<'a> {
    size: i64,
    mime_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
}

/// `{}`.
#[derive(Serialize)]
struct Empty {}

/// Only the whole is measured: it is all `wait`; the phases the kit does not see are -1.
#[derive(Serialize)]
struct Timings {
    blocked: i64,
    dns: i64,
    connect: i64,
    ssl: i64,
    send: i64,
    wait: f64,
    receive: i64,
}

/// A body as HAR shows it, and whether that is base64. The trace keeps every body that is not
/// UTF-8 as base64 of its bytes; HAR's `text` is the text a viewer shows, which browsers
/// decode by the body's charset. So text the trace kept as bytes is shown as the text it
/// stands for: UTF-16 as the sanitizer read it (by its byte-order mark, its type's `charset`
/// or its zeros), and text in another charset the type names (`iso-8859-1`, `Shift_JIS`…)
/// decoded as the WHATWG Encoding Standard decodes it, as a browser does. What does not
/// decode cleanly (a lone surrogate, an odd byte, a byte its charset has no character for)
/// stays base64: its bytes are not lost.
fn shown<'a>(body: &'a Body, content_type: Option<&str>) -> (Cow<'a, str>, bool) {
    if !body.base64 {
        return (Cow::Borrowed(&body.text), false);
    }
    let base64 = &base64::engine::general_purpose::STANDARD;
    // Decoded whole only when it may be UTF-16: an image's megabytes are not decoded to be
    // kept as they were. The first eight letters are the first six bytes, and what tells
    // UTF-16 (a mark, a charset, the zeros of the first two characters) is in the first four.
    let may_be_utf16 = || {
        let start = body.text.get(..8).unwrap_or(&body.text);
        base64
            .decode(start)
            .is_ok_and(|start| kit_core::redact::utf16_text(content_type, &start).is_some())
    };
    let kept = (Cow::Borrowed(body.text.as_str()), true);
    // A label of UTF-8 adds nothing (these bytes are not UTF-8, or the trace would have kept
    // text), and UTF-16 is told below, as the sanitizer tells it.
    let named = content_type
        .and_then(|t| kit_core::redact::header_parameter(t, "charset"))
        .and_then(|label| encoding_rs::Encoding::for_label(label.trim().as_bytes()))
        .filter(|&e| ![encoding_rs::UTF_8, encoding_rs::UTF_16LE, encoding_rs::UTF_16BE].contains(&e));
    let utf16 = may_be_utf16();
    if !utf16 && named.is_none() {
        return kept;
    }
    // Decoded once, for both readings: a marked body under another charset's label that is
    // not clean UTF-16 falls through to its label's.
    let Ok(bytes) = base64.decode(&body.text) else {
        return kept;
    };
    if utf16
        && let Some(text) = kit_core::redact::utf16_text(content_type, &bytes)
        && !text.contains(char::REPLACEMENT_CHARACTER)
    {
        return (Cow::Owned(text), false);
    }
    if let Some(encoding) = named
        && let Some(text) = encoding.decode_without_bom_handling_and_without_replacement(&bytes)
    {
        return (Cow::Owned(text.into_owned()), false);
    }
    kept
}

fn har_entry<'a>(page: &'a str, e: &'a Exchange, http_version: &'a str) -> HarEntry<'a> {
    let total_ms = e
        .duration_ns
        .or_else(|| e.ended.map(|end| end.saturating_sub(e.started)))
        .map_or(0.0, |ns| ns as f64 / 1e6);
    let query_string = url::Url::parse(&e.url)
        .map(|u| {
            u.query_pairs()
                .map(|(name, value)| NameValue::new(name.into_owned(), value.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let request_type = e.request_header("content-type");
    let post_data = e.request_body.as_ref().map(|body| {
        let (text, base64) = shown(body, request_type);
        PostData {
            mime_type: request_type.unwrap_or("application/octet-stream"),
            text,
            // HAR 1.2 has no encoding on postData; the comment says how to read the text.
            comment: base64.then_some("base64: the body was not UTF-8"),
        }
    });
    let request = HarRequest {
        method: &e.method,
        url: &e.url,
        http_version,
        cookies: cookies(e.request_header("cookie"), ';'),
        headers: har_headers(&e.request_headers),
        query_string,
        headers_size: -1,
        body_size: e.request_body_size.map_or(-1, |n| n as i64),
        post_data,
    };
    let response = HarResponse {
        // No response (a transport failure): HAR records status 0.
        status: e.status.unwrap_or(0),
        status_text: e.status.map_or("", status_text),
        http_version,
        cookies: e
            .response_headers
            .iter()
            .filter(|(n, _)| n == "set-cookie")
            .flat_map(|(_, v)| cookies(Some(v.split(';').next().unwrap_or_default()), ';'))
            .collect(),
        headers: har_headers(&e.response_headers),
        content: {
            let response_type = e.response_header("content-type");
            let shown = e.response_body.as_ref().map(|body| shown(body, response_type));
            Content {
                size: e.response_body_size.map_or(0, |n| n as i64),
                mime_type: response_type.unwrap_or_default(),
                encoding: shown.as_ref().and_then(|(_, base64)| base64.then_some("base64")),
                text: shown.map(|(text, _)| text),
            }
        },
        redirect_url: e.response_header("location").unwrap_or_default(),
        headers_size: -1,
        body_size: e.response_body_size.map_or(-1, |n| n as i64),
    };
    HarEntry {
        pageref: page,
        started_date_time: rfc3339(e.started),
        time: total_ms,
        request,
        response,
        cache: Empty {},
        timings: Timings {
            blocked: -1,
            dns: -1,
            connect: -1,
            ssl: -1,
            send: 0,
            wait: total_ms,
            receive: 0,
        },
        comment: match &e.failure {
            Some(failure) => format!("request {}: {failure}", e.id),
            None => format!("request {}", e.id),
        },
    }
}

fn har_headers(headers: &[(String, String)]) -> Vec<NameValue<'_>> {
    headers
        .iter()
        .map(|(name, value)| NameValue::new(name.as_str(), value.as_str()))
        .collect()
}

/// `a=1; b=2` as HAR cookies.
fn cookies(header: Option<&str>, separator: char) -> Vec<NameValue<'_>> {
    header
        .into_iter()
        .flat_map(|h| h.split(separator))
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            Some(NameValue::new(name.trim(), value.trim()))
        })
        .collect()
}

fn status_text(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

// === OTLP/JSON ===

/// `SPAN_KIND_INTERNAL` and `SPAN_KIND_CLIENT` (OTLP/JSON writes enums as integers).
const KIND_INTERNAL: u8 = 1;
const KIND_CLIENT: u8 = 3;
/// `STATUS_CODE_OK` and `STATUS_CODE_ERROR`.
const STATUS_OK: u8 = 1;
const STATUS_ERROR: u8 = 2;

/// An ExportTraceServiceRequest: one resource per run, a trace per test (its id the test's),
/// a root span per test, a span per operation (CLIENT `{METHOD} {route}` for requests), and
/// assertions and observations as events of the span they belong to.
fn otlp_document(reader: ArchiveReader, w: &mut Out<'_>) -> Result<(), Failed> {
    w.begin_object()?;
    w.key("resourceSpans")?;
    w.begin_array()?;
    // The reader gives runs one after another, in id order: each run's spans are written
    // under its resource as its tests are read.
    let mut run: Option<kit_core::RunId> = None;
    crate::read_ahead::each_test(reader, |record| -> Result<(), Failed> {
        if run.as_ref() != Some(&record.run_id) {
            if run.is_some() {
                end_resource(w)?;
            }
            w.begin_object()?;
            w.key("resource")?;
            w.value(&json!({ "attributes": [
                attribute("service.name", "kit"),
                attribute("kit.run.id", record.run_id.as_str()),
            ] }))?;
            w.key("scopeSpans")?;
            w.begin_array()?;
            w.begin_object()?;
            w.key("scope")?;
            w.value(&json!({ "name": "kit", "version": env!("CARGO_PKG_VERSION") }))?;
            w.key("spans")?;
            w.begin_array()?;
            run = Some(record.run_id.clone());
        }
        let trace_id = record.test_id.to_string().replace('-', "");
        for span in test_spans(record, &trace_id) {
            w.value(&span)?;
        }
        Ok(())
    })?;
    if run.is_some() {
        end_resource(w)?;
    }
    Ok(())
}

/// Ends a run's spans, its scope, its scopes and its resource.
fn end_resource(w: &mut Out<'_>) -> Result<(), Failed> {
    for _ in 0..4 {
        w.end()?;
    }
    Ok(())
}

/// An OTLP span, borrowed from its test's events where it can be: serialized as it stands,
/// with no map built for it. Members in the order the exporter has always written them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Span<'a> {
    trace_id: &'a str,
    span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_span_id: Option<String>,
    name: Cow<'a, str>,
    kind: u8,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    /// Set once the span's operation ends (the test's own span: from its outcome).
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status>,
    attributes: Vec<KeyValue<'a>>,
    events: Vec<SpanEvent<'a>>,
}

#[derive(Serialize)]
struct Status {
    code: u8,
    message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpanEvent<'a> {
    time_unix_nano: String,
    name: &'a str,
    attributes: Vec<KeyValue<'a>>,
}

/// OTLP's KeyValue.
#[derive(Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: AnyValue<'a>,
}

/// OTLP/JSON's AnyValue: 64-bit integers as strings, lists as arrayValue.
#[derive(Serialize)]
enum AnyValue<'a> {
    #[serde(rename = "stringValue")]
    String(Cow<'a, str>),
    #[serde(rename = "intValue")]
    Int(String),
    #[serde(rename = "doubleValue")]
    Double(f64),
    #[serde(rename = "boolValue")]
    Bool(bool),
    #[serde(rename = "arrayValue")]
    Array { values: Vec<AnyValue<'a>> },
}

/// A test's spans in the order they started, found by the id of the event that started them
/// (the test's own span by its first event's): a test of many requests looks its spans up once
/// an event, so a scan of the list made exporting it quadratic (20 000 requests in one test
/// took 6.4 s). Ids are turned into text only where a span is written.
struct Spans<'a> {
    in_order: Vec<Span<'a>>,
    by_id: HashMap<EventId, usize>,
}

impl<'a> Spans<'a> {
    /// The test's own span, first and always there.
    fn new(root_id: Option<EventId>, root: Span<'a>) -> Self {
        let mut spans = Spans {
            in_order: Vec::new(),
            by_id: HashMap::new(),
        };
        spans.push(root_id, root);
        spans
    }

    /// Adds a span; an id already taken still finds the first span that took it.
    fn push(&mut self, id: Option<EventId>, span: Span<'a>) {
        if let Some(id) = id {
            self.by_id.entry(id).or_insert(self.in_order.len());
        }
        self.in_order.push(span);
    }

    /// The span `parent` names, or the test's own span for none.
    fn of_parent(&mut self, parent: Option<EventId>) -> Option<&mut Span<'a>> {
        let i = match parent {
            Some(id) => *self.by_id.get(&id)?,
            None => 0,
        };
        self.in_order.get_mut(i)
    }

    /// The test's own span.
    fn root(&mut self) -> &mut Span<'a> {
        // `new` pushed it first, and spans are never removed.
        &mut self.in_order[0]
    }
}

/// An assertion started and not yet ended: an event of its parent's span once it ends.
struct OpenAssertion<'a> {
    parent: Option<EventId>,
    stamp: u64,
    name: &'a str,
    attributes: &'a Attributes,
}

fn test_spans<'a>(record: &'a TestRecord, trace_id: &'a str) -> Vec<Span<'a>> {
    let started = record.started_at.as_unix_nanos();
    let last = record
        .events
        .last()
        .map_or(started, |e| e.timestamp.as_unix_nanos());
    let ended = record.duration.map_or(last, |d| {
        started.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    });
    // The test's span is its `test_started` event's. A test archived without one (events
    // published by hand) gets a fixed root id: its first event may be an operation, whose
    // span would otherwise share the root's id.
    let root_event = record
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::TestStarted(_)))
        .map(|e| e.id);
    let root_id = root_event.map_or_else(|| "0000000000000001".to_owned(), |id| id.to_string());
    let (status, message) = match &record.outcome {
        TestOutcome::Passed | TestOutcome::Skipped { .. } => (STATUS_OK, String::new()),
        TestOutcome::Failed { message } => (STATUS_ERROR, message.clone()),
        _ => (STATUS_ERROR, "interrupted: the test never finished".to_owned()),
    };
    let mut root = span(
        trace_id,
        root_id.clone(),
        None,
        Cow::Borrowed(&record.name),
        KIND_INTERNAL,
        started,
        ended,
    );
    root.attributes = vec![
        attribute("kit.test.name", &record.name),
        attribute("kit.test.outcome", record.outcome.label()),
    ];
    root.status = Some(Status {
        code: status,
        message,
    });
    let mut spans = Spans::new(root_event, root);
    // Assertion operations become events of their parent's span when they end. By id, with
    // every start kept: a recorder that repeats an id has each start taken by one end, in turn.
    let mut assertions: HashMap<EventId, VecDeque<OpenAssertion<'a>>> = HashMap::new();
    for event in &record.events {
        match &event.kind {
            EventKind::OperationStarted(op) if op.name.starts_with("assert.") => {
                assertions.entry(event.id).or_default().push_back(OpenAssertion {
                    parent: event.parent_id,
                    stamp: event.timestamp.as_unix_nanos(),
                    name: &op.display_name,
                    attributes: &op.attributes,
                });
            }
            EventKind::OperationStarted(op) => {
                let (name, kind) = if op.name == semconv::OP_HTTP_REQUEST {
                    let method = op
                        .attributes
                        .get_str(semconv::HTTP_REQUEST_METHOD)
                        .unwrap_or("HTTP");
                    let route = op.attributes.get_str(semconv::HTTP_ROUTE).unwrap_or("");
                    (Cow::Owned(format!("{method} {route}")), KIND_CLIENT)
                } else {
                    (Cow::Borrowed(op.display_name.as_str()), KIND_INTERNAL)
                };
                let parent = event.parent_id.map_or_else(|| root_id.clone(), |p| p.to_string());
                let stamp = event.timestamp.as_unix_nanos();
                let mut operation = span(
                    trace_id,
                    event.id.to_string(),
                    Some(parent),
                    name,
                    kind,
                    stamp,
                    ended,
                );
                operation.attributes = otel_attributes(&op.attributes);
                operation.attributes.push(attribute("kit.operation", &*op.name));
                spans.push(Some(event.id), operation);
            }
            EventKind::OperationEnded(end) => {
                let (status, message) = match &end.status {
                    OperationStatus::Error { message } => (STATUS_ERROR, message.clone()),
                    _ => (STATUS_OK, String::new()),
                };
                if let Some(OpenAssertion {
                    parent,
                    stamp,
                    name,
                    attributes: attrs,
                }) = assertions.get_mut(&end.operation).and_then(VecDeque::pop_front)
                {
                    let mut attributes = otel_attributes(attrs);
                    // The kit records whether an assertion held; an operation of another
                    // recorder may not, and then its status says. One key either way: OTLP
                    // attribute keys are unique.
                    if attrs.get(semconv::ASSERTION_RESULT).is_none() {
                        attributes.push(KeyValue {
                            key: semconv::ASSERTION_RESULT,
                            value: AnyValue::Bool(status == STATUS_OK),
                        });
                    }
                    if !message.is_empty() {
                        attributes.push(attribute("exception.message", message));
                    }
                    let event = SpanEvent {
                        time_unix_nano: stamp.to_string(),
                        name,
                        attributes,
                    };
                    match spans.of_parent(parent) {
                        Some(span) => span.events.push(event),
                        None => spans.root().events.push(event),
                    }
                } else if let Some(span) = spans.of_parent(Some(end.operation)) {
                    span.end_time_unix_nano = event.timestamp.as_unix_nanos().to_string();
                    span.status = Some(Status {
                        code: status,
                        message,
                    });
                    span.attributes.extend(otel_attributes(&end.attributes));
                }
            }
            EventKind::Observation(o) => {
                let Some(span) = spans.of_parent(event.parent_id) else {
                    continue;
                };
                if o.name == semconv::OBS_HTTP_RESPONSE {
                    // The response's figures are the CLIENT span's attributes, as OTel has them.
                    for key in [
                        semconv::HTTP_RESPONSE_STATUS_CODE,
                        semconv::HTTP_RESPONSE_BODY_SIZE,
                        semconv::NETWORK_PROTOCOL_VERSION,
                    ] {
                        if let Some(value) = o.attributes.get(key) {
                            span.attributes.push(KeyValue {
                                key,
                                value: any_value(value),
                            });
                        }
                    }
                } else {
                    span.events.push(SpanEvent {
                        time_unix_nano: event.timestamp.as_unix_nanos().to_string(),
                        name: &o.name,
                        attributes: otel_attributes(&o.attributes),
                    });
                }
            }
            _ => {}
        }
    }
    spans.in_order
}

/// A span with no status, attributes or events yet; it ends no earlier than it starts.
fn span<'a>(
    trace_id: &'a str,
    span_id: String,
    parent_span_id: Option<String>,
    name: Cow<'a, str>,
    kind: u8,
    start: u64,
    end: u64,
) -> Span<'a> {
    Span {
        trace_id,
        span_id,
        parent_span_id,
        name,
        kind,
        start_time_unix_nano: start.to_string(),
        end_time_unix_nano: end.max(start).to_string(),
        status: None,
        attributes: Vec::new(),
        events: Vec::new(),
    }
}

/// Attributes as OTLP KeyValues, bodies left out (they are in the archive and in HAR).
fn otel_attributes(attributes: &Attributes) -> Vec<KeyValue<'_>> {
    attributes
        .iter()
        .filter(|(key, _)| *key != semconv::KIT_REQUEST_BODY && *key != semconv::KIT_RESPONSE_BODY)
        .map(|(key, value)| KeyValue {
            key,
            value: any_value(value),
        })
        .collect()
}

/// A string attribute.
fn attribute<'a>(key: &'a str, value: impl Into<Cow<'a, str>>) -> KeyValue<'a> {
    KeyValue {
        key,
        value: AnyValue::String(value.into()),
    }
}

fn any_value(value: &AttributeValue) -> AnyValue<'_> {
    match value {
        AttributeValue::Str(s) => AnyValue::String(Cow::Borrowed(s)),
        AttributeValue::Int(i) => AnyValue::Int(i.to_string()),
        AttributeValue::Float(f) => AnyValue::Double(*f),
        AttributeValue::Bool(b) => AnyValue::Bool(*b),
        AttributeValue::StrList(list) => AnyValue::Array {
            values: list.iter().map(|s| AnyValue::String(Cow::Borrowed(s))).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange() -> Exchange {
        Exchange {
            id: "00000000000000aa".into(),
            started: 1_700_000_000_123_000_000,
            ended: Some(1_700_000_000_125_500_000),
            method: "POST".into(),
            route: "/orders".into(),
            url: "http://127.0.0.1:8080/orders?page=2&q=a%20b".into(),
            request_headers: vec![
                ("content-type".into(), "application/octet-stream".into()),
                ("cookie".into(), "session=[REDACTED]; theme=dark".into()),
            ],
            request_body: Some(Body {
                text: "AAEC".into(),
                base64: true,
            }),
            request_body_size: Some(3),
            status: None,
            protocol: Some("2".into()),
            response_headers: vec![
                ("set-cookie".into(), "id=7; Path=/; HttpOnly".into()),
                ("location".into(), "/orders/7".into()),
            ],
            response_body: Some(Body {
                text: "/w==".into(),
                base64: true,
            }),
            response_body_size: None,
            duration_ns: None,
            failure: Some("connection reset".into()),
        }
    }

    /// Every member HAR 1.2 lists, in its order, for an exchange that takes every branch: a
    /// binary request and response body, no status (a transport failure), cookies both ways,
    /// a query string, no recorded duration (the span's ends give it).
    #[test]
    fn a_har_entry_has_every_member_in_order() {
        let e = exchange();
        let entry = serde_json::to_string(&har_entry("t1", &e, "HTTP/2")).unwrap();
        let expected = json!({
            "pageref": "t1",
            "startedDateTime": "2023-11-14T22:13:20.123Z",
            "time": 2.5,
            "request": {
                "method": "POST",
                "url": "http://127.0.0.1:8080/orders?page=2&q=a%20b",
                "httpVersion": "HTTP/2",
                "cookies": [
                    { "name": "session", "value": "[REDACTED]" },
                    { "name": "theme", "value": "dark" },
                ],
                "headers": [
                    { "name": "content-type", "value": "application/octet-stream" },
                    { "name": "cookie", "value": "session=[REDACTED]; theme=dark" },
                ],
                "queryString": [
                    { "name": "page", "value": "2" },
                    { "name": "q", "value": "a b" },
                ],
                "headersSize": -1,
                "bodySize": 3,
                "postData": {
                    "mimeType": "application/octet-stream",
                    "text": "AAEC",
                    "comment": "base64: the body was not UTF-8",
                },
            },
            "response": {
                "status": 0,
                "statusText": "",
                "httpVersion": "HTTP/2",
                "cookies": [{ "name": "id", "value": "7" }],
                "headers": [
                    { "name": "set-cookie", "value": "id=7; Path=/; HttpOnly" },
                    { "name": "location", "value": "/orders/7" },
                ],
                "content": { "size": 0, "mimeType": "", "text": "/w==", "encoding": "base64" },
                "redirectURL": "/orders/7",
                "headersSize": -1,
                "bodySize": -1,
            },
            "cache": {},
            "timings": { "blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 2.5, "receive": 0 },
            "comment": "request 00000000000000aa: connection reset",
        });
        assert_eq!(entry, expected.to_string());

        // A text exchange that was answered: a status and its reason, no encoding, no comment
        // on the body, the time as recorded.
        let mut e = exchange();
        e.status = Some(201);
        e.failure = None;
        e.duration_ns = Some(1_250_000);
        e.request_body = Some(Body {
            text: "{}".into(),
            base64: false,
        });
        e.response_body = Some(Body {
            text: "{\"id\":7}".into(),
            base64: false,
        });
        e.response_body_size = Some(8);
        e.request_body_size = None;
        let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
        assert_eq!(entry["request"]["bodySize"], -1, "not recorded");
        assert_eq!(entry["time"], 1.25);
        assert_eq!(entry["response"]["status"], 201);
        assert_eq!(entry["response"]["statusText"], "Created");
        assert_eq!(
            entry["request"]["postData"],
            json!({ "mimeType": "application/octet-stream", "text": "{}" })
        );
        assert_eq!(
            entry["response"]["content"],
            json!({ "size": 8, "mimeType": "", "text": "{\"id\":7}" })
        );
        assert_eq!(entry["response"]["bodySize"], 8);
        assert_eq!(entry["comment"], "request 00000000000000aa");
    }

    /// Text in UTF-16, which the trace keeps as base64 of its bytes, is shown as its text: a
    /// .NET service's answer after its byte-order mark, a body under a type naming
    /// `utf-16be`, and JSON told by its zeros. What does not decode cleanly, and bytes that are
    /// not UTF-16, stay base64.
    #[test]
    fn a_har_shows_text_in_utf_16_as_its_text() {
        let base64 = |bytes: &[u8]| Body {
            text: base64::engine::general_purpose::STANDARD.encode(bytes),
            base64: true,
        };
        let utf16 = |text: &str, big_endian: bool| -> Vec<u8> {
            let to_bytes: fn(u16) -> [u8; 2] = if big_endian {
                u16::to_be_bytes
            } else {
                u16::to_le_bytes
            };
            text.encode_utf16().flat_map(to_bytes).collect()
        };
        let mut e = exchange();
        e.status = Some(200);
        e.request_headers[0].1 = "application/json; charset=UTF-16BE".into();
        e.request_body = Some(base64(&utf16("{\"sku\":\"é-7\"}", true)));
        e.response_headers
            .push(("content-type".into(), "text/xml".into()));
        let mut answer = vec![0xff, 0xfe];
        answer.extend(utf16("<ok>✓ 𝄞</ok>", false));
        e.response_body = Some(base64(&answer));
        let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
        assert_eq!(
            entry["request"]["postData"],
            json!({ "mimeType": "application/json; charset=UTF-16BE", "text": "{\"sku\":\"é-7\"}" })
        );
        assert_eq!(
            entry["response"]["content"],
            json!({ "size": 0, "mimeType": "text/xml", "text": "<ok>✓ 𝄞</ok>" })
        );

        // An odd byte at the end, a lone surrogate: the bytes as they were, in base64.
        let mut odd = answer.clone();
        odd.push(b'x');
        let mut lone = answer.clone();
        lone.extend([0x00, 0xd8]);
        for bytes in [odd, lone] {
            e.response_body = Some(base64(&bytes));
            let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
            assert_eq!(entry["response"]["content"]["encoding"], "base64");
            assert_eq!(
                entry["response"]["content"]["text"],
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            );
        }
        // No mark and no charset: by the zeros of its first two characters under a type that
        // says text, as the sanitizer read it; under a type of bytes, not guessed at.
        e.request_headers[0].1 = "application/json".into();
        e.request_body = Some(base64(&utf16("{}", true)));
        let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
        assert_eq!(
            entry["request"]["postData"],
            json!({ "mimeType": "application/json", "text": "{}" })
        );
        e.request_headers[0].1 = "application/octet-stream".into();
        let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
        assert_eq!(entry["request"]["postData"]["text"], "AHsAfQ==");
        assert_eq!(
            entry["request"]["postData"]["comment"],
            "base64: the body was not UTF-8"
        );
    }

    /// Text in a charset its type names, kept as bytes since it is not UTF-8, is shown as its
    /// text, decoded as a browser decodes it: `iso-8859-1` as windows-1252 (`0x80` is `€`),
    /// Shift_JIS. A byte its charset has no character for, and bytes under a type that names
    /// UTF-8, stay base64.
    #[test]
    fn a_har_shows_text_in_a_named_charset_as_its_text() {
        let base64 = |bytes: &[u8]| Body {
            text: base64::engine::general_purpose::STANDARD.encode(bytes),
            base64: true,
        };
        let mut e = exchange();
        e.status = Some(200);
        e.response_headers
            .push(("content-type".into(), "text/html; charset=\"ISO-8859-1\"".into()));
        e.response_body = Some(base64(b"<p>Gr\xfc\xdfe \x80 5</p>"));
        e.request_headers[0].1 = "text/plain; charset=Shift_JIS".into();
        e.request_body = Some(base64(b"\x93\xfa\x96\x7b"));
        let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
        assert_eq!(
            entry["response"]["content"],
            json!({ "size": 0, "mimeType": "text/html; charset=\"ISO-8859-1\"", "text": "<p>Grüße € 5</p>" })
        );
        assert_eq!(
            entry["request"]["postData"],
            json!({ "mimeType": "text/plain; charset=Shift_JIS", "text": "日本" })
        );
        // A lead byte with nothing after it, and bytes that are no UTF-8 under a type that
        // says UTF-8: the bytes as they were.
        for (content_type, bytes) in [
            ("text/plain; charset=Shift_JIS", &b"\x93\xfa\x96"[..]),
            ("text/plain; charset=utf-8", b"\xff ok"),
        ] {
            e.request_headers[0].1 = content_type.into();
            e.request_body = Some(base64(bytes));
            let entry = serde_json::to_value(har_entry("t1", &e, "HTTP/1.1")).unwrap();
            assert_eq!(
                entry["request"]["postData"]["comment"], "base64: the body was not UTF-8",
                "{content_type}"
            );
        }
    }

    /// OTLP/JSON's AnyValue for each kind of attribute: integers as strings, lists as
    /// `arrayValue`, a float that is not finite as `null` (JSON has no NaN).
    #[test]
    fn every_attribute_value_is_an_otlp_any_value() {
        let cases = [
            (
                AttributeValue::Str("a\"b".into()),
                json!({ "stringValue": "a\"b" }),
            ),
            (AttributeValue::Int(-7), json!({ "intValue": "-7" })),
            (
                AttributeValue::Int(i64::MAX),
                json!({ "intValue": "9223372036854775807" }),
            ),
            (AttributeValue::Float(1.5), json!({ "doubleValue": 1.5 })),
            (AttributeValue::Float(f64::NAN), json!({ "doubleValue": null })),
            (AttributeValue::Bool(true), json!({ "boolValue": true })),
            (
                AttributeValue::StrList(vec!["text/html".into(), "*/*".into()]),
                json!({ "arrayValue": { "values": [{ "stringValue": "text/html" }, { "stringValue": "*/*" }] } }),
            ),
            (
                AttributeValue::StrList(vec![]),
                json!({ "arrayValue": { "values": [] } }),
            ),
        ];
        for (value, expected) in cases {
            let written = serde_json::to_string(&any_value(&value)).unwrap();
            assert_eq!(written, expected.to_string(), "{value:?}");
        }
    }
}
