//! `kit-cli curl`: a traced request as a curl command.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;

use kit_core::{EventId, visible};
use kit_trace::{ArchiveReader, TraceError};

use crate::exchanges::{Exchange, exchanges};
use crate::read_ahead;
use crate::{Exit, write_output};

/// Headers curl sets itself, or that would be wrong to replay as recorded.
const SKIPPED_HEADERS: [&str; 3] = ["content-length", "host", "transfer-encoding"];

/// `kit-cli curl [ARCHIVE] <REQUEST>`: `archive` a file or a folder, or when left out the
/// folder the tests write to (found through the configuration in `config`).
pub(crate) fn curl(archive: Option<&Path>, request: &str, config: Option<&Path>) -> Result<(), Exit> {
    let not_an_id = || {
        Exit::input(format!(
            "`{request}` is not a request id: 16 hex digits, as reports and failure messages show them"
        ))
    };
    let digits = request.trim();
    // Ids are written with all 16 digits; a shorter one was cut when copied.
    if digits.len() != 16 {
        return Err(not_an_id());
    }
    let wanted: EventId = digits.parse().map_err(|_| not_an_id())?;
    let folder = match archive {
        Some(path) if !path.is_dir() => {
            let archive = crate::inputs::archive(path).map_err(Exit::input)?;
            return match find(archive, wanted)? {
                Some(text) => write_output(None, text.as_bytes()),
                None => Err(Exit::input(format!(
                    "{}: no request {wanted} in the archive",
                    archive.display()
                ))),
            };
        }
        Some(folder) => folder.to_owned(),
        None => {
            let configured = crate::inputs::configuration(config).map_err(Exit::input)?;
            crate::inputs::tests_folder(&configured).map_err(Exit::input)?
        }
    };
    let archives = crate::inputs::newest_first(
        crate::inputs::archives(std::slice::from_ref(&folder)).map_err(Exit::input)?,
    );
    // An archive that cannot be read (a damaged copy, a stray file) is passed over, so that it
    // hides no request the others hold, and named: on stderr as the search goes on, and in
    // the error if the request is not found.
    let mut unread = 0;
    for archive in &archives {
        match find(archive, wanted) {
            Ok(Some(text)) => return write_output(None, text.as_bytes()),
            Ok(None) => {}
            Err(e) => {
                crate::note(&format!("{}; left out of the search", e.message));
                unread += 1;
            }
        }
    }
    let mut message = format!(
        "{}: no request {wanted} in its {}",
        folder.display(),
        crate::render::counted(archives.len(), "archive", "archives")
    );
    if unread > 0 {
        message.push_str(&format!(" ({unread} of them could not be read)"));
    }
    Err(Exit::input(message))
}

/// The command for request `wanted` with a line break after it, if `archive` holds it.
fn find(archive: &Path, wanted: EventId) -> Result<Option<String>, Exit> {
    let reader = ArchiveReader::open(archive).map_err(Exit::input)?;
    // The walk stops at the request's test: `Found` is the early way out, not an error.
    let found = read_ahead::each_test(reader, |record| {
        // Only the one test holding the id pairs its events into exchanges.
        if !record.events.iter().any(|event| event.id == wanted) {
            return Ok(());
        }
        let wanted = wanted.to_string();
        match exchanges(&record.events).into_iter().find(|e| e.id == wanted) {
            Some(exchange) => Err(Walk::Found(command(&exchange))),
            None => Ok(()),
        }
    });
    match found {
        Err(Walk::Found(mut text)) => {
            text.push('\n');
            Ok(Some(text))
        }
        Err(Walk::Unreadable(e)) => Err(Exit::input(e)),
        Ok(()) => Ok(None),
    }
}

/// How a walk of the archive ends early.
enum Walk {
    /// The request's command.
    Found(String),
    /// A test could not be read.
    Unreadable(TraceError),
}

impl From<TraceError> for Walk {
    fn from(e: TraceError) -> Self {
        Walk::Unreadable(e)
    }
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
    // A line break in the route would end the comment, and the rest would run as a command.
    let _ = writeln!(
        out,
        "# {} {} (request {}), as recorded",
        visible::text(&e.method),
        visible::text(&e.route),
        e.id
    );
    if redacted {
        out.push_str("# [REDACTED] values were secrets: put the real ones back before sending\n");
    }
    let body = e.request_body.as_ref();
    if body.is_some_and(|b| b.text.contains(" characters truncated]")) {
        out.push_str("# the body was cut when it was recorded: it is not whole\n");
    }
    // Bytes that were not text are piped in from their base64, and so is text holding a NUL,
    // which no shell word can carry (bash drops it, and the body sent would not be the one
    // recorded).
    let piped = body.and_then(|b| match (b.base64, b.text.contains('\0')) {
        (true, _) => Some(Cow::Borrowed(b.text.as_str())),
        (false, true) => Some(Cow::Owned(
            base64::engine::general_purpose::STANDARD.encode(&b.text),
        )),
        (false, false) => None,
    });
    if let Some(encoded) = &piped {
        let _ = write!(out, "printf '%s' {} | base64 -d | ", quote(encoded));
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
        if piped.is_some() {
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

    /// A shell word cannot hold a NUL (bash drops it, dash refuses the script): text holding
    /// one is piped in from its base64 too, so that the body is sent byte for byte.
    #[test]
    fn text_holding_a_nul_is_piped_through_base64() {
        let e = Exchange {
            id: "2".repeat(16),
            method: "POST".into(),
            url: "http://h/x".into(),
            request_body: Some(Body {
                text: "a\0b".into(),
                base64: false,
            }),
            ..Exchange::default()
        };
        let command = command(&e);
        assert!(
            command.contains(
                "printf '%s' 'YQBi' | base64 -d | curl -X 'POST' 'http://h/x' \\\n  --data-binary @-"
            ),
            "{command}"
        );
        assert!(!command.contains('\0'), "{command:?}");
    }
}
