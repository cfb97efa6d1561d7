//! A JSON document written a piece at a time, laid out byte for byte as
//! `serde_json::to_vec_pretty` lays out the whole of it.
//!
//! An export of an archive is as large as the archive's events: built whole as a
//! `serde_json::Value`, 100 000 requests took 1.4 GiB (HAR) and 2.4 GiB (OTLP) before a byte was
//! written. Containers are opened and closed here by hand and each element is serialized on its
//! own, straight to the output at its depth, so nothing is held, whatever the document's size.

use std::io::{self, Write};

use serde::Serialize;

/// The innermost open container: whether it is an array, and whether it has members yet.
struct Open {
    array: bool,
    filled: bool,
}

/// Writes one JSON document to `out`, as `serde_json`'s pretty printer would (two spaces an
/// indent, `[]` and `{}` for empty containers). The caller keeps the structure: a key before
/// each member of an object, every container ended.
pub(crate) struct PrettyWriter<W: Write> {
    out: W,
    open: Vec<Open>,
}

impl<W: Write> PrettyWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        PrettyWriter {
            out,
            open: Vec::new(),
        }
    }

    /// A new line indented to the current depth.
    fn new_line(&mut self) -> io::Result<()> {
        new_line(&mut self.out, self.open.len())
    }

    /// A member's separator and line in the open container: a comma after the first.
    fn separate(&mut self) -> io::Result<()> {
        if let Some(open) = self.open.last_mut()
            && std::mem::replace(&mut open.filled, true)
        {
            self.out.write_all(b",")?;
        }
        self.new_line()
    }

    /// Before a value: in an array, its separator and line (in an object, `key` wrote them).
    fn member(&mut self) -> io::Result<()> {
        match self.open.last() {
            Some(open) if open.array => self.separate(),
            _ => Ok(()),
        }
    }

    /// `"key": ` in the open object; its value comes next.
    pub(crate) fn key(&mut self, key: &str) -> io::Result<()> {
        self.separate()?;
        serde_json::to_writer(&mut self.out, key)?;
        self.out.write_all(b": ")
    }

    pub(crate) fn begin_object(&mut self) -> io::Result<()> {
        self.begin(false)
    }

    pub(crate) fn begin_array(&mut self) -> io::Result<()> {
        self.begin(true)
    }

    fn begin(&mut self, array: bool) -> io::Result<()> {
        self.member()?;
        self.out.write_all(if array { b"[" } else { b"{" })?;
        self.open.push(Open { array, filled: false });
        Ok(())
    }

    /// Ends the innermost open container (nothing if none is open).
    pub(crate) fn end(&mut self) -> io::Result<()> {
        let Some(open) = self.open.pop() else {
            return Ok(());
        };
        if open.filled {
            self.new_line()?;
        }
        self.out.write_all(if open.array { b"]" } else { b"}" })
    }

    /// A whole value: an element of the open array, or the value after a `key`.
    pub(crate) fn value(&mut self, value: &impl Serialize) -> io::Result<()> {
        self.member()?;
        write_at(&mut self.out, self.open.len(), value)
    }

    /// Ends every open container and the document's line, and gives the writer back.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        while !self.open.is_empty() {
            self.end()?;
        }
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `value` as `serde_json::to_writer_pretty` writes it, byte for byte, and faster: its
/// `PrettyFormatter` writes an indent one level at a time, two bytes a call, and a report's
/// 15 MB of JSON is mostly indented lines.
pub(crate) fn to_writer_pretty(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    write_at(out, 0, value)
}

/// `value` laid out as it would be `depth` containers deep in a pretty document.
fn write_at(out: &mut impl Write, depth: usize, value: &impl Serialize) -> io::Result<()> {
    let formatter = Indented { depth, filled: false };
    value.serialize(&mut serde_json::Serializer::with_formatter(out, formatter))?;
    Ok(())
}

/// A line break and `depth` indents of two spaces.
fn new_line(out: &mut (impl Write + ?Sized), depth: usize) -> io::Result<()> {
    const SPACES: &[u8; 64] = &[b' '; 64];
    out.write_all(b"\n")?;
    let mut indent = 2 * depth;
    while indent > 0 {
        let piece = indent.min(SPACES.len());
        out.write_all(&SPACES[..piece])?;
        indent -= piece;
    }
    Ok(())
}

/// `serde_json`'s pretty layout (its `PrettyFormatter`, two spaces an indent) for a value that
/// starts `depth` containers deep in the document: serialized straight to the output, not
/// serialized apart and indented again line by line, which was half of an export's writing.
struct Indented {
    depth: usize,
    /// Whether the innermost container being written has a member yet.
    filled: bool,
}

impl Indented {
    fn begin(&mut self, out: &mut (impl Write + ?Sized), bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.filled = false;
        out.write_all(bracket)
    }

    fn end(&mut self, out: &mut (impl Write + ?Sized), bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.filled {
            new_line(out, self.depth)?;
        }
        out.write_all(bracket)
    }

    fn member(&mut self, out: &mut (impl Write + ?Sized), first: bool) -> io::Result<()> {
        if !first {
            out.write_all(b",")?;
        }
        new_line(out, self.depth)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.begin(out, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.end(out, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.member(out, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.filled = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.begin(out, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.end(out, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.member(out, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.filled = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// `value` written piece by piece: containers by hand, down to `depth`, scalars whole
    /// below it.
    fn streamed(w: &mut PrettyWriter<Vec<u8>>, value: &Value, depth: usize) {
        match value {
            Value::Array(items) if depth > 0 => {
                w.begin_array().unwrap();
                for item in items {
                    streamed(w, item, depth - 1);
                }
                w.end().unwrap();
            }
            Value::Object(members) if depth > 0 => {
                w.begin_object().unwrap();
                for (k, v) in members {
                    w.key(k).unwrap();
                    streamed(w, v, depth - 1);
                }
                w.end().unwrap();
            }
            other => w.value(other).unwrap(),
        }
    }

    fn same_as_serde(value: &Value) {
        let mut whole = serde_json::to_vec_pretty(value).unwrap();
        let mut direct = Vec::new();
        to_writer_pretty(&mut direct, value).unwrap();
        assert_eq!(
            String::from_utf8(direct).unwrap(),
            String::from_utf8(whole.clone()).unwrap(),
            "whole"
        );
        whole.push(b'\n');
        for depth in 0..6 {
            let mut w = PrettyWriter::new(Vec::new());
            streamed(&mut w, value, depth);
            let out = w.finish().unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(whole.clone()).unwrap(),
                "by hand to depth {depth}"
            );
        }
    }

    #[test]
    fn documents_are_laid_out_as_serde_lays_them_out() {
        same_as_serde(&json!({}));
        same_as_serde(&json!([]));
        same_as_serde(&json!({ "log": { "entries": [], "pages": [{}], "version": "1.2" } }));
        same_as_serde(&json!([[1, [2, {"a\nb": "c\"\n"}], {}], null, "x"]));
        // Deeper than one piece of indent (32 levels).
        let mut deep = json!({ "leaf": [1, 2] });
        for depth in 0..40 {
            deep = if depth % 2 == 0 {
                json!([deep, depth])
            } else {
                json!({ "k": deep })
            };
        }
        same_as_serde(&deep);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\n\"\\\\ é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[a-z\n\"]{0,4}", inner), 0..5)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_document_streams_to_serde_s_bytes(value in json_value()) {
            same_as_serde(&value);
        }
    }
}
