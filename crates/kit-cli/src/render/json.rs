//! JSON: the view as it is (schema in `docs/cli.md`).

use std::io::{self, Write};

use crate::model::View;

/// The most of the document held at once: it reaches its output in pieces no larger.
pub(super) const BUFFER: usize = 128 * 1024;

pub(crate) fn write(view: &View, out: &mut dyn Write) -> io::Result<()> {
    // The serializer writes a few bytes at a time: buffered here, where its writer's type is
    // known, each piece is a copy rather than a call through `dyn Write`.
    let mut out = io::BufWriter::with_capacity(BUFFER, out);
    // The model holds strings, numbers and maps with string keys only: the only errors are the
    // writer's.
    crate::pretty::to_writer_pretty(&mut out, view)?;
    out.write_all(b"\n")?;
    out.flush()
}
