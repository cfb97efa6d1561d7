//! The HTTP exchanges of a test, gathered from its events: what HAR and curl export.

use std::collections::HashMap;

use kit_core::{Attributes, Event, EventId, EventKind, OperationStatus, Timestamp, semconv};

/// One request and its response, as the trace recorded them (sanitized).
#[derive(Debug, Clone, Default)]
pub(crate) struct Exchange {
    /// The `http.request` operation's id, as 16 hex digits.
    pub(crate) id: String,
    pub(crate) started: u64,
    pub(crate) ended: Option<u64>,
    pub(crate) method: String,
    pub(crate) route: String,
    pub(crate) url: String,
    pub(crate) request_headers: Vec<(String, String)>,
    pub(crate) request_body: Option<Body>,
    pub(crate) request_body_size: Option<u64>,
    pub(crate) status: Option<u16>,
    pub(crate) protocol: Option<String>,
    pub(crate) response_headers: Vec<(String, String)>,
    pub(crate) response_body: Option<Body>,
    pub(crate) response_body_size: Option<u64>,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) failure: Option<String>,
}

/// A body as recorded: text, or base64 of bytes that were not UTF-8.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) text: String,
    pub(crate) base64: bool,
}

impl Exchange {
    /// The value of the first header `name` (lower case) of the request.
    pub(crate) fn request_header(&self, name: &str) -> Option<&str> {
        self.request_headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of the first header `name` (lower case) of the response.
    pub(crate) fn response_header(&self, name: &str) -> Option<&str> {
        self.response_headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every exchange among `events`, in the order the requests started.
pub(crate) fn exchanges(events: &[Event]) -> Vec<Exchange> {
    let mut found: Vec<Exchange> = Vec::new();
    // Each request's place in `found`, by its operation's id (the latest request under an id
    // repeated). Every operation's end looks itself up here, assertions' ends included: a scan
    // of `found` for those made a test of many requests quadratic (20 000 took 15 s).
    let mut by_id: HashMap<EventId, usize> = HashMap::new();
    let index = |by_id: &HashMap<EventId, usize>, id: Option<EventId>| by_id.get(&id?).copied();
    for event in events {
        match &event.kind {
            EventKind::OperationStarted(op) if op.name == semconv::OP_HTTP_REQUEST => {
                by_id.insert(event.id, found.len());
                let a = &op.attributes;
                let text = |key: &str| a.get_str(key).unwrap_or_default().to_owned();
                found.push(Exchange {
                    id: event.id.to_string(),
                    started: event.timestamp.as_unix_nanos(),
                    method: text(semconv::HTTP_REQUEST_METHOD),
                    route: text(semconv::HTTP_ROUTE),
                    url: text(semconv::URL_FULL),
                    request_headers: headers(a, semconv::HTTP_REQUEST_HEADER_PREFIX),
                    request_body: body(a, semconv::KIT_REQUEST_BODY, semconv::KIT_REQUEST_BODY_ENCODING),
                    request_body_size: number(a, semconv::HTTP_REQUEST_BODY_SIZE),
                    ..Exchange::default()
                });
            }
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_RESPONSE => {
                if let Some(i) = index(&by_id, event.parent_id) {
                    let a = &o.attributes;
                    let e = &mut found[i];
                    e.status =
                        number(a, semconv::HTTP_RESPONSE_STATUS_CODE).and_then(|s| u16::try_from(s).ok());
                    e.protocol = a.get_str(semconv::NETWORK_PROTOCOL_VERSION).map(str::to_owned);
                    e.response_headers = headers(a, semconv::HTTP_RESPONSE_HEADER_PREFIX);
                    e.response_body =
                        body(a, semconv::KIT_RESPONSE_BODY, semconv::KIT_RESPONSE_BODY_ENCODING);
                    e.response_body_size = number(a, semconv::HTTP_RESPONSE_BODY_SIZE);
                    e.duration_ns = number(a, semconv::KIT_DURATION_NS);
                }
            }
            EventKind::Observation(o) if o.name == semconv::OBS_HTTP_FAILURE => {
                if let Some(i) = index(&by_id, event.parent_id) {
                    found[i].failure = o
                        .attributes
                        .get_str(semconv::KIT_FAILURE_MESSAGE)
                        .map(str::to_owned);
                }
            }
            EventKind::OperationEnded(ended) => {
                if let Some(e) = index(&by_id, Some(ended.operation)).and_then(|i| found.get_mut(i)) {
                    e.ended = Some(event.timestamp.as_unix_nanos());
                    if let OperationStatus::Error { message } = &ended.status {
                        e.failure.get_or_insert_with(|| message.clone());
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// `http.request.header.<name>` attributes (lists) as name–value pairs, one per value.
fn headers(attributes: &Attributes, prefix: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (key, value) in attributes.iter() {
        let Some(name) = key.strip_prefix(prefix) else {
            continue;
        };
        match (value.as_str_list(), value.as_str()) {
            (Some(values), _) => out.extend(values.iter().map(|v| (name.to_owned(), v.clone()))),
            (None, Some(v)) => out.push((name.to_owned(), v.to_owned())),
            _ => {}
        }
    }
    out
}

fn body(attributes: &Attributes, key: &str, encoding: &str) -> Option<Body> {
    attributes.get_str(key).map(|text| Body {
        text: text.to_owned(),
        base64: attributes.get_str(encoding) == Some("base64"),
    })
}

fn number(attributes: &Attributes, key: &str) -> Option<u64> {
    attributes.get_i64(key).and_then(|n| u64::try_from(n).ok())
}

/// `2026-11-22T10:00:00.123Z` for nanoseconds since the Unix epoch (UTC, milliseconds).
pub(crate) fn rfc3339(nanos: u64) -> String {
    Timestamp::from_unix_nanos(nanos).to_rfc3339_millis()
}

/// `Timestamp` as RFC 3339.
pub(crate) fn timestamp(t: Timestamp) -> String {
    rfc3339(t.as_unix_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_315_200_123_456_789), "2026-11-22T02:40:00.123Z");
        assert_eq!(rfc3339(4_107_542_399_999_000_000), "2100-02-28T23:59:59.999Z");
    }
}
