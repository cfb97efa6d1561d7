//! Route matching: which path key of a document a request belongs to.
//!
//! A segment trie. Each node has literal children (by decoded text), mixed-pattern children
//! (`{base}...{head}`, `{name}.json`) and one template child (`{id}`). A lookup walks the
//! request's segments left to right trying literal, then pattern, then template children,
//! and backtracks when a branch dead-ends, so the first match found is the one whose
//! leftmost differing segment is the most specific: `/users/@me` beats `/users/{user_id}`,
//! and `/a/{x}/c` beats `/a/{x}/{y}` but `/a/b/{y}` beats both.
//!
//! Before the walk, a template that is a key of the document (as the kit records it, whatever
//! its parameters are named) is looked up whole in a hash map, and goes straight to the node
//! the walk would have gone down to first.
//!
//! The rules, each one something a coverage tool has got wrong on a real document:
//!
//! - paths are split into segments first and each segment percent-decoded after, so `%2F`
//!   inside a value never splits it;
//! - a trailing slash is ignored unless the document declares both `/a` and `/a/`;
//! - a query string in a path key (`/responses?beta=true`) is a constraint: the request must
//!   carry those query parameters, and a key with constraints beats one without;
//! - a template (`/users/{id}`) recorded by the kit matches template segments of the
//!   document, never a literal: `GET /users/{id}` is not a call of `/users/@me`.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

/// One segment of a path key in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeySegment {
    /// Plain text, percent-decoded.
    Literal(String),
    /// A whole-segment template: `{id}`.
    Template,
    /// Literal text and templates mixed: `{base}...{head}`.
    Pattern(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Template,
}

/// What a request's path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A concrete path: every segment is text.
    Concrete,
    /// A route template: segments with `{name}` are templates.
    Template,
}

/// A request's query string, read only when a path key asks for a parameter.
#[derive(Debug, Clone, Copy)]
struct Query<'q>(Option<&'q str>);

impl Query<'_> {
    fn has(&self, key: &str, value: &str) -> bool {
        self.0
            .is_some_and(|q| url::form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == key && v == value))
    }
}

#[derive(Debug, Clone, Default)]
struct Node {
    /// By decoded text. Fx hashing: a segment is a few bytes, and SipHash's or memcmp's
    /// per-call cost was most of a lookup.
    literals: FxHashMap<Box<str>, usize>,
    patterns: Vec<(Vec<Part>, usize)>,
    template: Option<usize>,
    /// Routes ending here with query constraints, most constraints first.
    constrained: Vec<End>,
    /// The first route ending here without constraints. Kept apart from `constrained` so
    /// a lookup reads no further memory when a node has none (most have none).
    end: Option<usize>,
}

#[derive(Debug, Clone)]
struct End {
    query: Vec<(String, String)>,
    route: usize,
}

/// Path keys of a document, ready to match requests against.
///
/// ```
/// use kit_coverage::RouteTable;
///
/// let mut table = RouteTable::new();
/// assert!(table.is_empty());
/// table.insert("/users/{user_id}");
/// table.insert("/users/@me");
/// assert_eq!((table.len(), table.is_empty()), (2, false));
/// let me = table.find_path("/users/%40me", None).unwrap();
/// assert_eq!(table.key(me), "/users/@me");
/// let other = table.find_path("/users/42", None).unwrap();
/// assert_eq!(table.key(other), "/users/{user_id}");
/// // A template recorded by the kit matches the template, never the literal.
/// assert_eq!(table.key(table.find_template("/users/{id}", None).unwrap()), "/users/{user_id}");
/// ```
#[derive(Debug, Clone)]
pub struct RouteTable {
    nodes: Vec<Node>,
    keys: Vec<String>,
    /// Each key's index, so that adding one does not compare it with every key before it:
    /// a document of a hundred thousand keys took 25 s to load that way.
    indices: FxHashMap<Box<str>, usize>,
    /// Base paths stripped from requests before matching, longest first (`/api/v10`).
    prefixes: Vec<Vec<String>>,
    /// The node each path key without percent-encoding ends at, by the key as written and
    /// by its [`Shape`]: a template or path that is a key of the document, whatever its
    /// parameters are named, is found with a hash or two instead of a visit of every
    /// segment. Both map a text to the node of its shape (a shape is its own shape).
    exact: FxHashMap<Box<[u8]>, usize>,
}

impl Default for RouteTable {
    fn default() -> Self {
        Self::new()
    }
}

impl RouteTable {
    /// An empty table.
    pub fn new() -> Self {
        RouteTable {
            nodes: vec![Node::default()],
            keys: Vec::new(),
            indices: FxHashMap::default(),
            prefixes: Vec::new(),
            exact: FxHashMap::default(),
        }
    }

    /// Adds a path key as the document writes it (`/pets/{id}`, `/responses?beta=true`);
    /// returns its index. Adding a key twice returns the first index.
    pub fn insert(&mut self, key: &str) -> usize {
        if let Some(&existing) = self.indices.get(key) {
            return existing;
        }
        let (path, query) = match key.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (key, None),
        };
        let mut node = 0;
        for raw in split(path) {
            let segment = key_segment(raw);
            node = match segment {
                KeySegment::Literal(text) => match self.nodes[node].literals.get(text.as_str()) {
                    Some(&child) => child,
                    None => {
                        let child = self.push_node();
                        self.nodes[node].literals.insert(text.into_boxed_str(), child);
                        child
                    }
                },
                KeySegment::Template => match self.nodes[node].template {
                    Some(child) => child,
                    None => {
                        let child = self.push_node();
                        self.nodes[node].template = Some(child);
                        child
                    }
                },
                KeySegment::Pattern(parts) => {
                    match self.nodes[node].patterns.iter().find(|(p, _)| *p == parts) {
                        Some(&(_, child)) => child,
                        None => {
                            let child = self.push_node();
                            self.nodes[node].patterns.push((parts, child));
                            child
                        }
                    }
                }
            };
        }
        let body = path.strip_prefix("/").unwrap_or(path);
        if !body.contains('%') {
            self.exact.entry(body.as_bytes().into()).or_insert(node);
            if let Some(shape) = Shape::of_template(body) {
                self.exact.entry(shape.as_bytes().into()).or_insert(node);
            }
        }
        let route = self.keys.len();
        self.keys.push(key.to_owned());
        self.indices.insert(key.into(), route);
        let query: Vec<(String, String)> = query
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let ending = &mut self.nodes[node];
        if query.is_empty() {
            ending.end.get_or_insert(route);
        } else {
            // Most constraints first, in the order added among equals. Put in its place: a
            // sort after every push made a hundred thousand keys on one path take 4.8 s.
            let at = ending
                .constrained
                .partition_point(|end| end.query.len() >= query.len());
            ending.constrained.insert(at, End { query, route });
        }
        route
    }

    /// Base paths to strip from requests before matching (`/api/v10`), as found in the
    /// document's `servers` or `basePath`. Replaces those set before.
    pub fn set_prefixes<S: AsRef<str>>(&mut self, prefixes: impl IntoIterator<Item = S>) {
        let mut prefixes: Vec<Vec<String>> = prefixes
            .into_iter()
            .map(|p| {
                split(p.as_ref())
                    .filter(|s| !s.is_empty())
                    .map(|s| decode(s).into_owned())
                    .collect::<Vec<_>>()
            })
            .filter(|p| !p.is_empty())
            .collect();
        prefixes.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        prefixes.dedup();
        self.prefixes = prefixes;
    }

    /// The path key of route `index`, as inserted.
    pub fn key(&self, index: usize) -> &str {
        &self.keys[index]
    }

    /// Number of path keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the table has no path key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Matches a concrete path (`/users/42`), with the request's query string if any.
    pub fn find_path(&self, path: &str, query: Option<&str>) -> Option<usize> {
        self.find(path, Kind::Concrete, query)
    }

    /// Matches a route template recorded by the kit (`/users/{id}`): its `{name}` segments
    /// match the document's template segments whatever their names.
    pub fn find_template(&self, template: &str, query: Option<&str>) -> Option<usize> {
        self.find(template, Kind::Template, query)
    }

    fn find(&self, path: &str, kind: Kind, query: Option<&str>) -> Option<usize> {
        let query = Query(query.filter(|q| !q.is_empty()));
        // By byte: `strip_prefix` with a `char` encodes it first, a tenth of an exact lookup.
        let body = path.strip_prefix("/").unwrap_or(path);
        // Only templates go straight: the kit looks a request up by its template first,
        // and by its concrete path only when the template found nothing, so that path is
        // seldom a key (and braces in it would be text, not templates). Without base
        // paths, the whole template is what the walk tries first: it is looked up before it
        // is split at all.
        let shaped = kind == Kind::Template;
        let tried = shaped && self.prefixes.is_empty();
        if tried && let Some(found) = self.exact_match(body, query) {
            return Some(found);
        }
        // Split once, decode once: a lookup that backtracks visits a segment again, and
        // splitting and decoding it on every visit was most of a lookup's cost.
        let mut inline = [""; INLINE_SEGMENTS];
        let spilled: Vec<&str>;
        let (raw, encoded): (&[&str], bool) = match split_into(body, &mut inline) {
            Some((count, encoded)) => (&inline[..count], encoded),
            None => {
                spilled = body.split('/').collect();
                (&spilled, body.contains('%'))
            }
        };
        let text = (shaped && !tried).then_some(body);
        if !encoded {
            let segments = Segments {
                raw,
                decoded: raw,
                text,
            };
            return self.find_split(segments, kind, query);
        }
        let owned: Vec<Cow<'_, str>> = raw.iter().map(|segment| decode(segment)).collect();
        let decoded: Vec<&str> = owned.iter().map(AsRef::as_ref).collect();
        self.find_split(
            Segments {
                raw,
                decoded: &decoded,
                text,
            },
            kind,
            query,
        )
    }

    /// The longest base path stripped first; then the path as it is.
    fn find_split(&self, segments: Segments<'_>, kind: Kind, query: Query<'_>) -> Option<usize> {
        for prefix in &self.prefixes {
            if let Some(rest) = segments.strip_prefix(prefix)
                && let Some(found) = self.find_normalised(rest, kind, query)
            {
                return Some(found);
            }
        }
        self.find_normalised(segments, kind, query)
    }

    /// The path as given; else with its trailing slash dropped or added.
    fn find_normalised(&self, segments: Segments<'_>, kind: Kind, query: Query<'_>) -> Option<usize> {
        if let Some(found) = self.first_match(&Lookup {
            segments,
            kind,
            query,
        }) {
            return Some(found);
        }
        match segments.raw {
            // `/` alone: dropping its slash leaves nothing to match.
            ["", ""] => None,
            [.., ""] if segments.raw.len() > 1 => {
                let last = segments.raw.len() - 1;
                let segments = Segments {
                    raw: &segments.raw[..last],
                    decoded: &segments.decoded[..last],
                    text: segments.text.and_then(|text| text.strip_suffix("/")),
                };
                self.first_match(&Lookup {
                    segments,
                    kind,
                    query,
                })
            }
            // Only requests that found nothing get here: the allocations are off the hot path.
            _ => {
                let raw: Vec<&str> = segments.raw.iter().copied().chain([""]).collect();
                let decoded: Vec<&str> = segments.decoded.iter().copied().chain([""]).collect();
                let segments = Segments {
                    raw: &raw,
                    decoded: &decoded,
                    text: None,
                };
                self.first_match(&Lookup {
                    segments,
                    kind,
                    query,
                })
            }
        }
    }

    /// What [`RouteTable::walk`] finds first from the root, by the segments' shape when
    /// their text is at hand.
    fn first_match(&self, lookup: &Lookup<'_>) -> Option<usize> {
        if let Some(text) = lookup.segments.text
            && let Some(found) = self.exact_match(text, lookup.query)
        {
            return Some(found);
        }
        self.walk(lookup, 0, 0)
    }

    /// What a walk of template `body` from the root finds, when it has the shape of a key:
    /// the walk, trying literal children before patterns and templates, goes down that
    /// key's segments first, so a route ending there is its answer. `None` when no key has
    /// the shape, or no route ending there takes the query; the walk decides then.
    fn exact_match(&self, body: &str, query: Query<'_>) -> Option<usize> {
        // The template as written first: no key has a `%`, so an encoded one finds nothing.
        let node = match self.exact.get(body.as_bytes()) {
            Some(&node) => node,
            // A template named otherwise than the key: its shape.
            None => *self.exact.get(Shape::of_template(body)?.as_bytes())?,
        };
        self.end(&self.nodes[node], query)
    }

    /// The route a lookup ending at `node` finds: the first whose query constraints the
    /// request meets, most constraints first, else the one without.
    fn end(&self, node: &Node, query: Query<'_>) -> Option<usize> {
        node.constrained
            .iter()
            .find(|end| end.query.iter().all(|(k, v)| query.has(k, v)))
            .map_or(node.end, |end| Some(end.route))
    }

    /// Matches the segments from index `at` on (none left when `at` is past the end), from
    /// `node`. What does not change along a walk comes by reference: with every part of it an
    /// argument of its own, a visit spent as much passing them on as matching.
    fn walk(&self, lookup: &Lookup<'_>, node: usize, at: usize) -> Option<usize> {
        let node = &self.nodes[node];
        let Some(&segment) = lookup.segments.raw.get(at) else {
            return self.end(node, lookup.query);
        };
        let descend = |child: usize| self.walk(lookup, child, at + 1);
        if lookup.kind == Kind::Template && segment.bytes().any(|byte| byte == b'{') {
            if is_whole_template(segment) {
                return node.template.and_then(descend);
            }
            match key_segment(segment) {
                KeySegment::Template => return node.template.and_then(descend),
                KeySegment::Pattern(parts) => {
                    for (pattern, child) in &node.patterns {
                        // The same literals in the same places, whatever the names.
                        if *pattern == parts
                            && let Some(found) = descend(*child)
                        {
                            return Some(found);
                        }
                    }
                    return node.template.and_then(descend);
                }
                // Unbalanced braces: plain text.
                KeySegment::Literal(_) => {}
            }
        }
        let text = lookup.segments.decoded[at];
        if let Some(&child) = node.literals.get(text)
            && let Some(found) = descend(child)
        {
            return Some(found);
        }
        if text.is_empty() {
            // Templates never match an empty segment: a value is required.
            return None;
        }
        for (parts, child) in &node.patterns {
            if pattern_matches(parts, text)
                && let Some(found) = descend(*child)
            {
                return Some(found);
            }
        }
        node.template.and_then(descend)
    }

    fn push_node(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }
}

/// The segments after the leading slash: `/a/b/` gives `a`, `b`, `` (a trailing slash is an
/// empty last segment) and `/` gives one empty segment.
fn split(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix('/').unwrap_or(path).split('/')
}

/// Segments a lookup splits a path into on the stack; a longer path is collected into a
/// `Vec`. GitHub's deepest path key has 10 segments, Kubernetes' 8.
const INLINE_SEGMENTS: usize = 16;

/// The segments of `body` (a path after its leading slash) into `out`, and whether any is
/// percent-encoded; `None` when there are more than `out` holds. `a/b/` gives `a`, `b`, ``
/// and `` gives one empty segment, as [`split`] does. `str::split` and `contains` search with
/// `memchr`, whose set-up per call cost more than this whole scan.
fn split_into<'b>(body: &'b str, out: &mut [&'b str; INLINE_SEGMENTS]) -> Option<(usize, bool)> {
    let bytes = body.as_bytes();
    let mut count = 0;
    let mut start = 0;
    let mut encoded = false;
    let mut from = 0;
    loop {
        let at = next_either(bytes, from, b'/', b'%');
        match bytes.get(at) {
            None => break,
            Some(b'/') => {
                *out.get_mut(count)? = &body[start..at];
                count += 1;
                start = at + 1;
            }
            Some(_) => encoded = true,
        }
        from = at + 1;
    }
    *out.get_mut(count)? = &body[start..];
    Some((count + 1, encoded))
}

/// The offset of the first `a` or `b` in `bytes` from `from` on, or `bytes.len()`: eight
/// bytes at a time, as kit-core's JSON writer looks for bytes to escape.
fn next_either(bytes: &[u8], mut from: usize, a: u8, b: u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte that is zero, exact up to the lowest one: a borrow can only
    // mark bytes above a byte that really is zero.
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let mask = zero_in(word ^ (ONES * u64::from(a))) | zero_in(word ^ (ONES * u64::from(b)));
        if mask != 0 {
            return from + (mask.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < bytes.len() && bytes[from] != a && bytes[from] != b {
        from += 1;
    }
    from
}

/// One lookup's request, as [`RouteTable::walk`] reads it.
#[derive(Debug, Clone, Copy)]
struct Lookup<'s> {
    segments: Segments<'s>,
    kind: Kind,
    query: Query<'s>,
}

/// A request's path split into segments, as written and percent-decoded (the same slice
/// when nothing is encoded).
#[derive(Debug, Clone, Copy)]
struct Segments<'s> {
    raw: &'s [&'s str],
    decoded: &'s [&'s str],
    /// The segments joined by `/`, when they are a run of a template whose shape
    /// [`RouteTable::exact_match`] has not yet looked up.
    text: Option<&'s str>,
}

impl<'s> Segments<'s> {
    /// The segments after the base path's, compared decoded; `None` when the path does not
    /// start with them. A path that is only the base path leaves one empty segment, as the
    /// root `/` is.
    fn strip_prefix(self, prefix: &[String]) -> Option<Segments<'s>> {
        let head = self.decoded.get(..prefix.len())?;
        if !head
            .iter()
            .zip(prefix)
            .all(|(segment, expected)| *segment == expected)
        {
            return None;
        }
        if self.raw.len() == prefix.len() {
            return Some(Segments {
                raw: &[""],
                decoded: &[""],
                text: self.text.map(|_| ""),
            });
        }
        // The rest of the text starts after the prefix's segments and their slashes.
        let skipped: usize = self.raw[..prefix.len()]
            .iter()
            .map(|segment| segment.len() + 1)
            .sum();
        Some(Segments {
            raw: &self.raw[prefix.len()..],
            decoded: &self.decoded[prefix.len()..],
            text: self.text.and_then(|text| text.get(skipped..)),
        })
    }
}

/// A path with each template written `{}` whatever its name, read as [`key_segment`] reads
/// a segment: two paths with one shape go down the same children of the trie. Held on the
/// stack; a path too long for it has no shape, and is walked.
struct Shape {
    bytes: [u8; Shape::CAPACITY],
    len: usize,
}

impl Shape {
    /// GitHub's longest path key is 95 bytes, Kubernetes' 120.
    const CAPACITY: usize = 256;

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Appends `bytes`; false when they do not fit.
    fn push(&mut self, bytes: &[u8]) -> bool {
        let Some(room) = self.bytes.get_mut(self.len..self.len + bytes.len()) else {
            return false;
        };
        room.copy_from_slice(bytes);
        self.len += bytes.len();
        true
    }

    /// The first `{` or `%` in `bytes` from `from` on: where a path stops being its own
    /// shape.
    fn first_special(bytes: &[u8], from: usize) -> Option<usize> {
        let at = next_either(bytes, from, b'{', b'%');
        (at < bytes.len()).then_some(at)
    }

    /// The shape of `body` (a path after its leading slash, or a key's) when it differs from
    /// `body`; `None` when `body` has no `{` (it is its own shape), has a `%`, or does not
    /// fit. A `{` is a template up to the first `}` after it in its segment; without one it
    /// is text, as the rest of its segment is.
    fn of_template(body: &str) -> Option<Shape> {
        let bytes = body.as_bytes();
        let first = Shape::first_special(bytes, 0)?;
        let mut shape = Shape {
            bytes: [0; Shape::CAPACITY],
            len: 0,
        };
        // `copied` is where the text not yet in the shape starts.
        let mut copied = 0;
        let mut at = Some(first);
        while let Some(open) = at {
            if bytes[open] == b'%' {
                return None;
            }
            let stop = next_either(bytes, open + 1, b'}', b'/');
            let resume = match bytes.get(stop) {
                Some(b'}') => {
                    if !(shape.push(&bytes[copied..open]) && shape.push(b"{}")) {
                        return None;
                    }
                    copied = stop + 1;
                    copied
                }
                // No `}` in the rest of the segment: it is all text, and no later `{` in it
                // can close either. Searching again from the next `{` made a segment of them
                // quadratic.
                _ => stop,
            };
            at = Shape::first_special(bytes, resume);
        }
        shape.push(&bytes[copied..]).then_some(shape)
    }
}

/// Percent-decodes one segment; invalid UTF-8 after decoding is replaced, not refused.
fn decode(segment: &str) -> Cow<'_, str> {
    if !segment.contains('%') {
        return Cow::Borrowed(segment);
    }
    match percent_encoding::percent_decode_str(segment).decode_utf8_lossy() {
        Cow::Borrowed(same) if same.len() == segment.len() => Cow::Borrowed(segment),
        decoded => Cow::Owned(decoded.into_owned()),
    }
}

/// `{name}` and nothing else, told without allocating (most template segments are). By bytes:
/// `contains` with a set of chars decodes each char, a tenth of a template's lookup.
fn is_whole_template(segment: &str) -> bool {
    match segment.as_bytes() {
        [b'{', inner @ .., b'}'] => !inner.is_empty() && !inner.iter().any(|b| matches!(b, b'{' | b'}')),
        _ => false,
    }
}

/// Reads one segment of a path key or template.
fn key_segment(raw: &str) -> KeySegment {
    if !raw.contains('{') {
        return KeySegment::Literal(decode(raw).into_owned());
    }
    let mut parts = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(decode(&rest[..open]).into_owned()));
        }
        parts.push(Part::Template);
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(decode(rest).into_owned()));
    }
    match parts.as_slice() {
        [Part::Template] => KeySegment::Template,
        [] => KeySegment::Literal(String::new()),
        [Part::Literal(text)] => KeySegment::Literal(text.clone()),
        _ => KeySegment::Pattern(parts),
    }
}

/// Whether `text` fits `parts` (as [`key_segment`] makes them: never two literals side by
/// side), each template taking at least one character. In one pass, as a glob is matched: a
/// literal after a template is matched where it first occurs, which leaves the most text to
/// what follows, and the last literal is matched at the end. Trying every split point of each
/// template, as it once did, made a long segment against a pattern of several templates
/// quadratic and worse.
fn pattern_matches(parts: &[Part], text: &str) -> bool {
    let mut pos = 0;
    let mut rest = parts;
    loop {
        // The templates before the next literal take a character each, at least.
        let templates = rest
            .iter()
            .take_while(|part| matches!(part, Part::Template))
            .count();
        for _ in 0..templates {
            match text[pos..].chars().next() {
                Some(taken) => pos += taken.len_utf8(),
                None => return false,
            }
        }
        rest = &rest[templates..];
        // Templates were all taken above: what follows is a literal, or nothing.
        let Some((Part::Literal(literal), after)) = rest.split_first() else {
            // The last template takes what is left; without one, nothing may be left.
            return templates > 0 || pos == text.len();
        };
        pos = match (templates, after.is_empty()) {
            // Right after the start or another literal: here, or nowhere.
            (0, _) if text[pos..].starts_with(literal.as_str()) => pos + literal.len(),
            (0, _) => return false,
            // The last literal ends the text.
            (_, true) => {
                return text.len() >= pos + literal.len() && text.ends_with(literal.as_str());
            }
            (_, false) => match text[pos..].find(literal.as_str()) {
                Some(found) => pos + found + literal.len(),
                None => return false,
            },
        };
        rest = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup as it was before it split paths once (it split and decoded a segment on
    /// every visit): the oracle the property test holds the faster one to.
    mod reference {
        use super::super::*;

        impl RouteTable {
            pub(super) fn reference_find(
                &self,
                path: &str,
                kind: Kind,
                query: Option<&str>,
            ) -> Option<usize> {
                let query = Query(query.filter(|q| !q.is_empty()));
                let body = path.strip_prefix('/').unwrap_or(path);
                // The longest base path first; then the path as it is.
                for prefix in &self.prefixes {
                    if let Some(rest) = reference_strip_prefix(body, prefix)
                        && let Some(found) = self.reference_normalised(rest, kind, query)
                    {
                        return Some(found);
                    }
                }
                self.reference_normalised(body, kind, query)
            }

            /// The path (after its leading slash) as given; else with its trailing slash dropped
            /// or added.
            fn reference_normalised(&self, body: &str, kind: Kind, query: Query<'_>) -> Option<usize> {
                if let Some(found) = self.reference_walk(0, Some(body), kind, query) {
                    return Some(found);
                }
                match body.strip_suffix('/') {
                    Some(without) if !without.is_empty() => {
                        self.reference_walk(0, Some(without), kind, query)
                    }
                    Some(_) => None,
                    // Only requests that found nothing get here: the allocation is off the hot path.
                    None => self.reference_walk(0, Some(&format!("{body}/")), kind, query),
                }
            }

            /// Matches the segments in `rest` (`None` when there are no more) from `node`.
            fn reference_walk(
                &self,
                node: usize,
                rest: Option<&str>,
                kind: Kind,
                query: Query<'_>,
            ) -> Option<usize> {
                let node = &self.nodes[node];
                let Some(rest) = rest else {
                    // The routes ending here, as the table kept them in one list before.
                    return node
                        .constrained
                        .iter()
                        .map(|end| (end.query.as_slice(), end.route))
                        .chain(node.end.map(|route| (&[][..], route)))
                        .find(|(constraints, _)| constraints.iter().all(|(k, v)| query.has(k, v)))
                        .map(|(_, route)| route);
                };
                let (segment, next) = match rest.split_once('/') {
                    Some((segment, next)) => (segment, Some(next)),
                    None => (rest, None),
                };
                if kind == Kind::Template && segment.bytes().any(|byte| byte == b'{') {
                    if is_whole_template(segment) {
                        return node
                            .template
                            .and_then(|child| self.reference_walk(child, next, kind, query));
                    }
                    match key_segment(segment) {
                        KeySegment::Template => {
                            return node
                                .template
                                .and_then(|child| self.reference_walk(child, next, kind, query));
                        }
                        KeySegment::Pattern(parts) => {
                            for (pattern, child) in &node.patterns {
                                // The same literals in the same places, whatever the names.
                                if *pattern == parts
                                    && let Some(found) = self.reference_walk(*child, next, kind, query)
                                {
                                    return Some(found);
                                }
                            }
                            return node
                                .template
                                .and_then(|child| self.reference_walk(child, next, kind, query));
                        }
                        // Unbalanced braces: plain text.
                        KeySegment::Literal(_) => {}
                    }
                }
                let text = decode(segment);
                if let Some(&child) = node.literals.get(text.as_ref())
                    && let Some(found) = self.reference_walk(child, next, kind, query)
                {
                    return Some(found);
                }
                if text.is_empty() {
                    // Templates never match an empty segment: a value is required.
                    return None;
                }
                for (parts, child) in &node.patterns {
                    if pattern_matches(parts, &text)
                        && let Some(found) = self.reference_walk(*child, next, kind, query)
                    {
                        return Some(found);
                    }
                }
                node.template
                    .and_then(|child| self.reference_walk(child, next, kind, query))
            }
        }

        /// `body` (a path after its leading slash) without the base path's segments, compared
        /// decoded; `None` when it does not start with them.
        fn reference_strip_prefix<'b>(body: &'b str, prefix: &[String]) -> Option<&'b str> {
            let mut rest = body;
            for expected in prefix {
                let (segment, next) = rest.split_once('/').unwrap_or((rest, ""));
                if decode(segment) != expected.as_str() {
                    return None;
                }
                rest = next;
            }
            Some(rest)
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5_000))]

        /// A shape is read by the rule `key_segment` reads a segment by, written again for
        /// speed: the two agree on every path of braces, slashes and text.
        #[test]
        fn a_shape_reads_braces_as_key_segment_does(
            body in proptest::string::string_regex("[a{}/.é]{0,24}").expect("a regex"),
        ) {
            // `body` is a path after its leading slash.
            let by_segments: Vec<String> = body
                .split('/')
                .map(|segment| match key_segment(segment) {
                    KeySegment::Literal(text) => text,
                    KeySegment::Template => "{}".to_owned(),
                    KeySegment::Pattern(parts) => parts
                        .iter()
                        .map(|part| match part {
                            Part::Literal(text) => text.as_str(),
                            Part::Template => "{}",
                        })
                        .collect(),
                })
                .collect();
            let expected = by_segments.join("/");
            let shape = Shape::of_template(&body);
            let shaped = shape.as_ref().map_or(body.as_bytes(), Shape::as_bytes);
            proptest::prop_assert_eq!(shaped, expected.as_bytes(), "{:?}", body);
        }
    }

    /// `pattern_matches` as it was, trying every split point of each template: the oracle
    /// of the property test below.
    fn reference_pattern_matches(parts: &[Part], text: &str) -> bool {
        match parts.split_first() {
            None => text.is_empty(),
            Some((Part::Literal(literal), rest)) => text
                .strip_prefix(literal.as_str())
                .is_some_and(|remaining| reference_pattern_matches(rest, remaining)),
            Some((Part::Template, rest)) => {
                if rest.is_empty() {
                    return !text.is_empty();
                }
                text.char_indices()
                    .skip(1)
                    .map(|(i, _)| i)
                    .any(|i| reference_pattern_matches(rest, &text[i..]))
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5_000))]

        /// Matching in one pass answers as trying every split point did: templates next to
        /// each other, literals that repeat or overlap, multi-byte characters.
        #[test]
        fn pattern_matching_in_one_pass_answers_as_trying_every_split(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    2 => proptest::strategy::Just(None),
                    3 => proptest::strategy::Strategy::prop_map("[ab.é]{1,3}", Some),
                ],
                0..6,
            ),
            text in proptest::string::string_regex("[ab.é]{0,12}").expect("a regex"),
        ) {
            // As `key_segment` makes them: literals side by side are one.
            let mut merged: Vec<Part> = Vec::new();
            for part in parts {
                match (part, merged.last_mut()) {
                    (Some(text), Some(Part::Literal(last))) => last.push_str(&text),
                    (Some(text), _) => merged.push(Part::Literal(text)),
                    (None, _) => merged.push(Part::Template),
                }
            }
            let parts = merged;
            proptest::prop_assert_eq!(
                pattern_matches(&parts, &text),
                reference_pattern_matches(&parts, &text),
                "{:?} {:?}", parts, text
            );
        }
    }

    fn table(keys: &[&str]) -> RouteTable {
        let mut t = RouteTable::new();
        for k in keys {
            t.insert(k);
        }
        t
    }

    fn path<'a>(t: &'a RouteTable, p: &str) -> Option<&'a str> {
        let (p, q) = p.split_once('?').map_or((p, None), |(a, b)| (a, Some(b)));
        t.find_path(p, q).map(|i| t.key(i))
    }

    #[test]
    fn literal_beats_template_left_to_right_with_backtracking() {
        let t = table(&["/a/{x}/c", "/a/b/{y}", "/a/{x}/{y}", "/a/b/c/d"]);
        assert_eq!(path(&t, "/a/b/c"), Some("/a/b/{y}"));
        assert_eq!(path(&t, "/a/z/c"), Some("/a/{x}/c"));
        assert_eq!(path(&t, "/a/z/q"), Some("/a/{x}/{y}"));
        // `/a/b/...` dead-ends at depth 3 for `/a/b/x/d`: nothing fits.
        assert_eq!(path(&t, "/a/b/x/d"), None);
    }

    #[test]
    fn patterns_match_between_literal_and_template() {
        let t = table(&[
            "/c/{base}...{head}",
            "/c/{ref}",
            "/c/main...dev",
            "/f/{name}.json",
        ]);
        assert_eq!(path(&t, "/c/main...dev"), Some("/c/main...dev"));
        assert_eq!(path(&t, "/c/a...b"), Some("/c/{base}...{head}"));
        assert_eq!(path(&t, "/c/a..b"), Some("/c/{ref}"));
        assert_eq!(
            path(&t, "/c/...b"),
            Some("/c/{ref}"),
            "a template takes one character at least"
        );
        assert_eq!(path(&t, "/f/x.json"), Some("/f/{name}.json"));
        assert_eq!(path(&t, "/f/.json"), None);
        assert_eq!(
            t.find_template("/c/{a}...{b}", None).map(|i| t.key(i)),
            Some("/c/{base}...{head}")
        );
        assert_eq!(
            t.find_template("/c/{sha}", None).map(|i| t.key(i)),
            Some("/c/{ref}")
        );
    }

    #[test]
    fn decoding_happens_after_splitting() {
        let t = table(&["/files/{path}", "/files/{path}/raw", "/users/@me"]);
        assert_eq!(path(&t, "/files/a%2Fb/raw"), Some("/files/{path}/raw"));
        assert_eq!(path(&t, "/files/a%2Fb"), Some("/files/{path}"));
        assert_eq!(path(&t, "/users/%40me"), Some("/users/@me"));
        assert_eq!(
            path(&t, "/files/%ff%fe"),
            Some("/files/{path}"),
            "invalid UTF-8 is replaced"
        );
    }

    #[test]
    fn trailing_slash_is_normalised_unless_both_exist() {
        let t = table(&["/api/", "/apis", "/both", "/both/"]);
        assert_eq!(path(&t, "/api"), Some("/api/"));
        assert_eq!(path(&t, "/api/"), Some("/api/"));
        assert_eq!(path(&t, "/apis/"), Some("/apis"));
        assert_eq!(path(&t, "/both"), Some("/both"));
        assert_eq!(path(&t, "/both/"), Some("/both/"));
        let root = table(&["/"]);
        assert_eq!(path(&root, "/"), Some("/"));
        assert_eq!(path(&root, ""), Some("/"));
        assert_eq!(path(&root, "/x"), None);
    }

    #[test]
    fn query_constraints_in_keys() {
        let t = table(&["/responses", "/responses?beta=true", "/only?v=2"]);
        assert_eq!(path(&t, "/responses"), Some("/responses"));
        assert_eq!(path(&t, "/responses?beta=true"), Some("/responses?beta=true"));
        assert_eq!(path(&t, "/responses?x=1&beta=true"), Some("/responses?beta=true"));
        assert_eq!(path(&t, "/responses?beta=false"), Some("/responses"));
        assert_eq!(path(&t, "/only"), None);
        assert_eq!(path(&t, "/only?v=2"), Some("/only?v=2"));
    }

    #[test]
    fn prefixes_are_stripped_longest_first() {
        let mut t = table(&["/pets", "/api/raw"]);
        t.set_prefixes(["/api", "/api/v2/", "/"]);
        assert_eq!(path(&t, "/api/pets"), Some("/pets"));
        assert_eq!(path(&t, "/api/v2/pets"), Some("/pets"));
        assert_eq!(path(&t, "/pets"), Some("/pets"));
        assert_eq!(
            path(&t, "/api/raw"),
            Some("/api/raw"),
            "unstripped when stripping finds nothing"
        );
        assert_eq!(path(&t, "/apiv/pets"), None, "prefixes end at a segment boundary");
    }

    #[test]
    fn template_segments_never_match_literals_and_never_empty() {
        let t = table(&["/users/@me", "/users/{user_id}", "/x/{id}"]);
        assert_eq!(
            t.find_template("/users/{id}", None).map(|i| t.key(i)),
            Some("/users/{user_id}")
        );
        assert_eq!(
            t.find_template("/users/@me", None).map(|i| t.key(i)),
            Some("/users/@me")
        );
        assert_eq!(path(&t, "/x/"), None);
        assert_eq!(path(&t, "/x//"), None);
    }

    #[test]
    fn unbalanced_braces_are_literal_text() {
        let t = table(&["/a/{open", "/b/x}"]);
        assert_eq!(path(&t, "/a/{open"), Some("/a/{open"));
        assert_eq!(path(&t, "/b/x}"), Some("/b/x}"));
        // Literal text beats a pattern that would also fit it, whichever came first.
        let t = table(&["/a/{p}open", "/a/{open"]);
        assert_eq!(path(&t, "/a/{open"), Some("/a/{open"));
        assert_eq!(path(&t, "/a/xopen"), Some("/a/{p}open"));
    }

    /// Parts of path keys and requests for the property test: literals, encoded text,
    /// templates, patterns, unbalanced braces and empty segments.
    const KEY_PARTS: &[&str] = &[
        "a",
        "b",
        "@me",
        "x.json",
        "a%2Fb",
        "main...dev",
        "{id}",
        "{x}",
        "{base}...{head}",
        "{name}.json",
        "{open",
        "x}",
        "",
    ];
    const REQUEST_PARTS: &[&str] = &[
        "a",
        "b",
        "%40me",
        "@me",
        "x.json",
        "a%2Fb",
        "a...b",
        "",
        "{id}",
        "{a}...{b}",
        "%ff",
        "42",
        "{open",
        "%7Bid%7D",
        "api",
        "v2",
    ];

    fn joined(parts: &[&str], picks: &[usize]) -> String {
        let segments: Vec<&str> = picks.iter().map(|&i| parts[i % parts.len()]).collect();
        segments.join("/")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Splitting once gives the answers splitting on every visit gave, for concrete
        /// paths and templates, with base paths, trailing slashes, query constraints and
        /// paths longer than the segments a lookup holds on the stack.
        #[test]
        fn split_once_lookup_answers_as_the_reference(
            keys in proptest::collection::vec(
                (proptest::collection::vec(0usize..64, 0..5), proptest::bool::ANY, proptest::bool::ANY),
                1..12,
            ),
            prefixes in proptest::collection::vec(0usize..4, 0..3),
            requests in proptest::collection::vec(
                (
                    // Mostly short paths, where base paths and the root meet; some longer
                    // than the inline segments.
                    proptest::prop_oneof![
                        4 => proptest::collection::vec(0usize..64, 0..5),
                        1 => proptest::collection::vec(0usize..64, 28..40),
                    ],
                    0usize..4,
                    proptest::bool::ANY,
                ),
                1..16,
            ),
        ) {
            let mut t = RouteTable::new();
            for (picks, trailing, constrained) in &keys {
                let mut key = format!("/{}", joined(KEY_PARTS, picks));
                if *trailing {
                    key.push('/');
                }
                if *constrained {
                    key.push_str("?beta=true");
                }
                t.insert(&key);
            }
            let bases = ["/api", "/api/v2/", "/", "/a"];
            t.set_prefixes(prefixes.iter().map(|&i| bases[i]));
            for (picks, shape, with_query) in &requests {
                let body = joined(REQUEST_PARTS, picks);
                let path = match shape {
                    0 => format!("/{body}"),
                    1 => format!("/{body}/"),
                    2 => body,
                    _ => format!("//{body}"),
                };
                let query = with_query.then_some("x=1&beta=true");
                for kind in [Kind::Concrete, Kind::Template] {
                    proptest::prop_assert_eq!(
                        t.find(&path, kind, query),
                        t.reference_find(&path, kind, query),
                        "{:?} {} {:?}", kind, path, query
                    );
                }
            }
        }
    }

    #[test]
    fn a_path_longer_than_the_inline_segments_still_matches() {
        let deep = format!("/{}", vec!["s"; INLINE_SEGMENTS + 3].join("/"));
        let template = deep.replacen("/s", "/{id}", 1);
        let t = table(&[&template]);
        assert_eq!(path(&t, &deep), Some(template.as_str()));
        assert_eq!(path(&t, &format!("{deep}/")), Some(template.as_str()));
        assert_eq!(path(&t, &deep.replacen("/s", "/%73", 2)), Some(template.as_str()));
        assert_eq!(path(&t, &format!("{deep}/s")), None);
    }

    #[test]
    fn a_path_that_is_only_the_base_path_is_the_root() {
        let mut t = table(&["/", "/pets"]);
        t.set_prefixes(["/api/v2"]);
        assert_eq!(path(&t, "/api/v2"), Some("/"));
        assert_eq!(path(&t, "/api/v2/"), Some("/"));
        assert_eq!(
            path(&t, "/api/%76%32/pets"),
            Some("/pets"),
            "base paths compare decoded"
        );
        assert_eq!(path(&t, "/api"), None);
    }

    proptest::proptest! {
        #[test]
        fn next_either_finds_what_a_byte_loop_finds(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::u8::ANY, proptest::strategy::Just(b'/'), proptest::strategy::Just(b'%'), proptest::strategy::Just(b'{'), proptest::strategy::Just(b'a')],
                0..40,
            ),
            from in 0usize..40,
            [a, b] in proptest::prop_oneof![proptest::strategy::Just([b'/', b'%']), proptest::strategy::Just([b'{', b'%']), proptest::array::uniform2(proptest::num::u8::ANY)],
        ) {
            let from = from.min(bytes.len());
            let slow = bytes[from..]
                .iter()
                .position(|&byte| byte == a || byte == b)
                .map_or(bytes.len(), |p| from + p);
            proptest::prop_assert_eq!(next_either(&bytes, from, a, b), slow);
        }
    }

    /// The key a path goes straight to by its shape, without a walk.
    fn straight<'t>(t: &'t RouteTable, template: &str) -> Option<&'t str> {
        let body = template.strip_prefix('/').unwrap_or(template);
        t.exact_match(body, Query(None)).map(|route| t.key(route))
    }

    #[test]
    fn a_path_shaped_as_a_key_goes_straight_to_its_node() {
        let long = format!("/{}", "s".repeat(Shape::CAPACITY + 1));
        let long_template = format!("{long}/{{id}}");
        let t = table(&[
            "/users/{user_id}/repos",
            "/users/@me",
            "/f/{name}.json",
            "//a",
            "/a/b",
            "/x%2Fy",
            "/",
            &long,
            &long_template,
        ]);
        // Whatever the templates are named.
        assert_eq!(straight(&t, "/users/{id}/repos"), Some("/users/{user_id}/repos"));
        assert_eq!(straight(&t, "/f/{stem}.json"), Some("/f/{name}.json"));
        assert_eq!(straight(&t, "/users/@me"), Some("/users/@me"));
        assert_eq!(straight(&t, "/"), Some("/"));
        // Values are walked.
        assert_eq!(straight(&t, "/users/42/repos"), None);
        // Every segment is in the shape, the empty ones too.
        assert_eq!(straight(&t, "//a"), Some("//a"));
        assert_eq!(straight(&t, "/a"), None);
        assert_eq!(straight(&t, "/ab"), None);
        assert_eq!(straight(&t, "/a/b"), Some("/a/b"));
        // A template without parameters is its own shape, however long.
        assert_eq!(straight(&t, &long), Some(long.as_str()));
        // Encoded keys and templates, and templates too long for a shape, are walked.
        assert_eq!(straight(&t, "/x%2Fy"), None);
        assert_eq!(straight(&t, "/users/{id}/r%65pos"), None);
        let renamed = long_template.replace("{id}", "{x}");
        assert_eq!(straight(&t, &renamed), None);
        // The walk finds each of them all the same.
        assert_eq!(path(&t, "/x%2Fy"), Some("/x%2Fy"));
        assert_eq!(
            t.find_template("/users/{id}/r%65pos", None).map(|i| t.key(i)),
            Some("/users/{user_id}/repos")
        );
        assert_eq!(
            t.find_template(&renamed, None).map(|i| t.key(i)),
            Some(long_template.as_str())
        );
        assert_eq!(path(&t, "/ab"), None);
    }

    #[test]
    fn a_template_of_unclosed_braces_is_read_in_one_pass() {
        // Each `{` without a `}` after it in its segment once sent the shape's search for `}`
        // to the end of the segment again: a megabyte of them took hours.
        let t = table(&["/a/{x}", "/{p}.json"]);
        let braces = "{".repeat(1 << 20);
        assert_eq!(t.find_template(&format!("/{braces}"), None), None);
        assert_eq!(
            t.find_template(&format!("/a/{braces}"), None).map(|i| t.key(i)),
            Some("/a/{x}")
        );
        let mixed = "{a{b/".repeat(1 << 16);
        assert_eq!(t.find_template(&format!("/a/{mixed}"), None), None);
    }

    #[test]
    fn a_long_segment_against_a_pattern_of_several_templates_is_read_in_one_pass() {
        // Every split point of the first template tried, each trying every split point of the
        // next: a concrete segment of 64 KiB against `{a}x{b}y` took minutes.
        let t = table(&["/c/{a}x{b}y", "/c/{a}x{b}", "/c/{id}"]);
        let long = "x".repeat(1 << 16);
        assert_eq!(path(&t, &format!("/c/{long}")), Some("/c/{a}x{b}"));
        assert_eq!(path(&t, &format!("/c/{long}y")), Some("/c/{a}x{b}y"));
        assert_eq!(path(&t, &format!("/c/{long}z")), Some("/c/{a}x{b}"));
        assert_eq!(path(&t, &format!("/c/y{long}")), Some("/c/{a}x{b}"));
        let t = table(&["/c/{a}x{b}y", "/c/{id}"]);
        assert_eq!(path(&t, &format!("/c/{long}z")), Some("/c/{id}"));
    }

    #[test]
    fn many_keys_are_added_without_comparing_each_with_every_other() {
        // Adding a key compared it with every key before it: a hundred thousand took 25 s.
        let mut t = RouteTable::new();
        for i in 0..50_000 {
            assert_eq!(t.insert(&format!("/a{i}/{{id}}")), i);
        }
        assert_eq!(t.insert("/a7/{id}"), 7, "a key added again keeps its first index");
        assert_eq!(t.len(), 50_000);
        assert_eq!(path(&t, "/a49999/x"), Some("/a49999/{id}"));
        // Keys on one path that differ in their query constraints only.
        let mut t = RouteTable::new();
        for i in 0..50_000 {
            t.insert(&format!("/x?a={i}"));
        }
        t.insert("/x?a=1&b=2");
        assert_eq!(path(&t, "/x?a=49999"), Some("/x?a=49999"));
        assert_eq!(
            path(&t, "/x?b=2&a=1"),
            Some("/x?a=1&b=2"),
            "most constraints first"
        );
        assert_eq!(path(&t, "/x?a=1"), Some("/x?a=1"));
    }

    #[test]
    fn going_straight_answers_as_the_walk() {
        // A concrete path written as a key with braces is text: a pattern inserted before that
        // key fits it first, as the walk finds.
        let t = table(&["/c/{base}...{head}", "/c/{a}...b"]);
        assert_eq!(path(&t, "/c/{a}...b"), Some("/c/{base}...{head}"));
        assert_eq!(
            t.find_template("/c/{x}...b", None).map(|i| t.key(i)),
            Some("/c/{a}...b")
        );
        // After a base path, the rest of the path is looked up from the next segment on.
        let mut t = table(&["/pets", "/i/pets", "/v2/pets"]);
        t.set_prefixes(["/api", "/api/v2"]);
        assert_eq!(path(&t, "/api/pets"), Some("/pets"));
        assert_eq!(path(&t, "/api/v2/pets"), Some("/pets"));
        assert_eq!(path(&t, "/api/v2/pets/"), Some("/pets"));
        assert_eq!(path(&t, "/v2/pets"), Some("/v2/pets"));
    }

    #[test]
    fn a_whole_template_is_one_pair_of_braces_around_a_name() {
        for whole in ["{id}", "{a}", "{user_id}", "{é}"] {
            assert!(is_whole_template(whole), "{whole}");
        }
        for not in [
            "{}", "{", "}", "", "id", "{id", "id}", "{a}{b}", "{a{b}", "{a}b}", "x{id}", "{id}x",
        ] {
            assert!(!is_whole_template(not), "{not}");
        }
    }

    #[test]
    fn patterns_of_different_shapes_at_one_segment_keep_their_own_routes() {
        let t = table(&["/c/{name}.json", "/c/{base}...{head}", "/c/{other}.json"]);
        assert_eq!(path(&t, "/c/x.json"), Some("/c/{name}.json"));
        assert_eq!(path(&t, "/c/a...b"), Some("/c/{base}...{head}"));
        assert_eq!(
            t.find_template("/c/{a}...{b}", None).map(|i| t.key(i)),
            Some("/c/{base}...{head}")
        );
    }

    #[test]
    fn braces_are_templates_only_in_templates() {
        let t = table(&["/f/{name}.{ext}", "/f/{path}"]);
        // A template's `{file.name}` is a variable: the document's template, never its pattern.
        assert_eq!(
            t.find_template("/f/{file.name}", None).map(|i| t.key(i)),
            Some("/f/{path}")
        );
        // In a concrete path the same text is text, and fits the pattern.
        assert_eq!(path(&t, "/f/{file.name}"), Some("/f/{name}.{ext}"));
        assert_eq!(path(&t, "/f/a.b"), Some("/f/{name}.{ext}"));
    }
}
