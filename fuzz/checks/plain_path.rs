//! Path keys in their plain form, shared by the `routes` and `openapi` targets: literal text
//! and whole `{name}` templates, with no percent-encoding, query, empty segment or trailing
//! slash (the route table's rules for those are not what either target checks).

#[derive(Debug, PartialEq)]
pub(crate) enum Segment<'a> {
    Literal(&'a str),
    Template,
}

/// The path's segments, when it is plain.
pub(crate) fn segments(path: &str) -> Option<Vec<Segment<'_>>> {
    let body = path.strip_prefix('/')?;
    if body.is_empty() || path.contains(['%', '?', '#']) {
        return None;
    }
    body.split('/')
        .map(|s| {
            let name = s.strip_prefix('{').and_then(|s| s.strip_suffix('}'));
            match name {
                Some(name) if !name.is_empty() && !name.contains(['{', '}']) => Some(Segment::Template),
                None if !s.is_empty() && !s.contains(['{', '}']) => Some(Segment::Literal(s)),
                _ => None,
            }
        })
        .collect()
}

/// The segments with every template's name left out: two keys of one shape match the same
/// requests.
pub(crate) fn shape<'a>(segments: &[Segment<'a>]) -> Vec<Option<&'a str>> {
    segments
        .iter()
        .map(|s| match s {
            Segment::Literal(text) => Some(*text),
            Segment::Template => None,
        })
        .collect()
}
