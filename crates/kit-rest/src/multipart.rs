//! `multipart/form-data` bodies built in memory.

use bytes::{Bytes, BytesMut};

/// A `multipart/form-data` body, built in memory so the kit can trace it and redact its
/// sensitive parts (by `name`) like any other body. (`reqwest::multipart::Form` streams its
/// parts and cannot be read back, so it is not accepted.)
///
/// ```
/// use kit_rest::Multipart;
///
/// let form = Multipart::new()
///     .text("title", "Quarterly report")
///     .file("report", "q3.csv", "text/csv", b"month,total\nJuly,12\n".to_vec());
/// assert!(form.content_type().starts_with("multipart/form-data; boundary="));
/// ```
#[derive(Debug, Clone)]
pub struct Multipart {
    boundary: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    body: Bytes,
}

impl Default for Multipart {
    fn default() -> Self {
        Self::new()
    }
}

/// Quotes a `Content-Disposition` parameter as browsers do: `"`, CR and LF percent-encoded.
fn quoted(value: &str) -> String {
    value
        .replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

impl Multipart {
    /// An empty form with a fresh random boundary.
    pub fn new() -> Self {
        Multipart {
            boundary: format!(
                "kit-{:016x}{:016x}",
                kit_core::EventId::generate().as_u64(),
                kit_core::EventId::generate().as_u64()
            ),
            parts: Vec::new(),
        }
    }

    /// Adds a text field.
    pub fn text(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file_name: None,
            content_type: None,
            body: Bytes::from(value.into()),
        });
        self
    }

    /// Adds a part with a content type of its own (a JSON document, say).
    pub fn bytes(mut self, name: impl Into<String>, content_type: &str, body: impl Into<Bytes>) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file_name: None,
            content_type: Some(content_type.to_owned()),
            body: body.into(),
        });
        self
    }

    /// Adds a file.
    pub fn file(
        mut self,
        name: impl Into<String>,
        file_name: impl Into<String>,
        content_type: &str,
        body: impl Into<Bytes>,
    ) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file_name: Some(file_name.into()),
            content_type: Some(content_type.to_owned()),
            body: body.into(),
        });
        self
    }

    /// The boundary between parts.
    pub fn boundary(&self) -> &str {
        &self.boundary
    }

    /// `multipart/form-data; boundary=…`.
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The encoded body.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::new();
        for part in &self.parts {
            out.extend_from_slice(format!("--{}\r\n", self.boundary).as_bytes());
            let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", quoted(&part.name));
            if let Some(file_name) = &part.file_name {
                disposition.push_str(&format!("; filename=\"{}\"", quoted(file_name)));
            }
            out.extend_from_slice(disposition.as_bytes());
            out.extend_from_slice(b"\r\n");
            if let Some(content_type) = &part.content_type {
                out.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&part.body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        out.freeze()
    }
}
