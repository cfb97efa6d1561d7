//! `kit-cli curl`: a traced request as a curl command.

use std::fmt::Write as _;
use std::path::Path;

use kit_trace::ArchiveReader;

use crate::exchanges::{Exchange, exchanges};
use crate::{Exit, write_output};

/// Headers curl sets itself, or that would be wrong to replay as recorded.
const SKIPPED_HEADERS: [&str; 3] = ["content-length", "host", "transfer-encoding"];

pub(crate) fn curl(archive: &Path, request: &str) -> Result<(), Exit> {
    let wanted = request.trim().to_ascii_lowercase();
    if wanted.len() != 16 || !wanted.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Exit::input(format!(
            "`{request}` is not a request id: 16 hex digits, as reports and failure messages show them"
        )));
    }
    let archive = crate::inputs::archive(archive).map_err(Exit::input)?;
    let mut reader = ArchiveReader::open(archive).map_err(Exit::input)?;
    for record in reader.tests() {
        let record = record.map_err(Exit::input)?;
        if let Some(exchange) = exchanges(&record.events).into_iter().find(|e| e.id == wanted) {
            let mut text = command(&exchange);
            text.push('\n');
            return write_output(None, text.as_bytes());
        }
    }
    Err(Exit::input(format!(
        "{}: no request {wanted} in the archive",
        archive.display()
    )))
}

/// The command, one option a line. Values were redacted when recorded and stay so: a comment
/// says so when one was.
pub(crate) fn command(e: &Exchange) -> String {
    let mut out = String::new();
    let redacted = e.request_headers.iter().any(|(_, v)| v.contains("[REDACTED]"))
        || e.url.contains("[REDACTED]")
        || e.request_body
            .as_ref()
            .is_some_and(|b| b.text.contains("[REDACTED]"));
    let _ = writeln!(out, "# {} {} (request {}), as recorded", e.method, e.route, e.id);
    if redacted {
        out.push_str("# [REDACTED] values were secrets: put the real ones back before sending\n");
    }
    let body = e.request_body.as_ref();
    if body.is_some_and(|b| b.text.contains(" characters truncated]")) {
        out.push_str("# the body was cut when it was recorded: it is not whole\n");
    }
    if let Some(b) = body.filter(|b| b.base64) {
        let _ = write!(out, "printf '%s' {} | base64 -d | ", quote(&b.text));
    }
    out.push_str("curl");
    match e.method.as_str() {
        "GET" => {}
        "HEAD" => out.push_str(" --head"),
        method => {
            let _ = write!(out, " -X {}", quote(method));
        }
    }
    let _ = write!(out, " {}", quote(&e.url));
    for (name, value) in &e.request_headers {
        if SKIPPED_HEADERS.contains(&name.as_str()) {
            continue;
        }
        let _ = write!(out, " \\\n  -H {}", quote(&format!("{name}: {value}")));
    }
    if let Some(b) = body {
        if b.base64 {
            out.push_str(" \\\n  --data-binary @-");
        } else {
            let _ = write!(out, " \\\n  --data-raw {}", quote(&b.text));
        }
    }
    out
}

/// A POSIX shell word: single quotes, each `'` written `'\''`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchanges::Body;

    #[test]
    fn a_post_with_headers_and_a_quote_in_its_body() {
        let e = Exchange {
            id: "00000000000000ab".into(),
            method: "POST".into(),
            route: "/orders".into(),
            url: "http://127.0.0.1:8080/api/orders?x=1".into(),
            request_headers: vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), "[REDACTED]".into()),
                ("content-length".into(), "12".into()),
            ],
            request_body: Some(Body {
                text: r#"{"note":"it's"}"#.into(),
                base64: false,
            }),
            ..Exchange::default()
        };
        assert_eq!(
            command(&e),
            "# POST /orders (request 00000000000000ab), as recorded\n\
             # [REDACTED] values were secrets: put the real ones back before sending\n\
             curl -X 'POST' 'http://127.0.0.1:8080/api/orders?x=1' \\\n  \
             -H 'content-type: application/json' \\\n  \
             -H 'authorization: [REDACTED]' \\\n  \
             --data-raw '{\"note\":\"it'\\''s\"}'"
        );
    }

    #[test]
    fn a_binary_body_is_piped_through_base64() {
        let e = Exchange {
            id: "1".repeat(16),
            method: "PUT".into(),
            url: "http://h/x".into(),
            request_body: Some(Body {
                text: "AAEC/w==".into(),
                base64: true,
            }),
            ..Exchange::default()
        };
        assert!(command(&e).contains(
            "printf '%s' 'AAEC/w==' | base64 -d | curl -X 'PUT' 'http://h/x' \\\n  --data-binary @-"
        ));
    }
}
