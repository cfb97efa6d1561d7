//! Field paths: what a response body holds, as the kit writes paths (`$.lines[].sku`).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use kit_core::json::{push_member, read_string};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Every member path in a JSON body, array indices folded: `{"lines":[{"sku":"A"}]}` holds
/// `$.lines` and `$.lines[].sku`. Array elements themselves (`$.lines[]`) are not fields.
///
/// The body is read as a stream, without building a value. Text that is not JSON gives
/// nothing; JSON cut short (a trace body truncated at its limit) gives the fields read
/// before the cut. Nesting deeper than serde_json's limit (128) stops the reading there.
///
/// ```
/// let fields = kit_coverage::body_fields(r#"{"id":1,"lines":[{"sku":"A"},{"sku":"B","qty":2}],"x y":null}"#);
/// let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
/// assert_eq!(fields, ["$.id", "$.lines", "$.lines[].qty", "$.lines[].sku", r#"$["x y"]"#]);
/// ```
pub fn body_fields(body: &str) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    FieldTree::default().add_body(body, |field| {
        fields.insert(field.to_owned());
    });
    fields
}

/// The member paths of the bodies seen so far, as a tree of member names. A body is walked
/// along the tree: a member seen before costs one comparison of its name (usually with the
/// member that came next last time), and a path is written out only for a member never seen.
///
/// Looking each path up in a hashed set instead, written out in full and compared whole
/// (`$.items[].owner.login`), was a fifth of a 100 000-request report's replay; most of it
/// waiting for memory, as a route's fields are looked at again only after many other routes'
/// requests. So the names sit one after another in one buffer, and a node's members in one
/// array, each with its name's length: a body's lookups touch a few cache lines.
#[derive(Debug, Clone)]
pub(crate) struct FieldTree {
    /// Node 0 is the body (`$`).
    nodes: Vec<FieldNode>,
    /// Every member name, one after the other.
    names: String,
}

/// Where node 0's `elements` says there is none: node 0 is nobody's child.
const NONE: u32 = 0;

#[derive(Debug, Clone, Default)]
struct FieldNode {
    parent: u32,
    /// How the node extends its parent's path: its place in the parent's `members`, or
    /// `None` for the parent's array elements.
    place: Option<u32>,
    /// Members in the order first seen.
    members: Vec<MemberName>,
    /// Places in `members` by name, once there are many (an object keyed by ids).
    index: Option<Box<rustc_hash::FxHashMap<Box<str>, u32>>>,
    /// The node of this value's array elements, or [`NONE`].
    elements: u32,
}

/// A member: where its name is in the tree's `names`, and its node.
#[derive(Debug, Clone, Copy)]
struct MemberName {
    start: usize,
    len: usize,
    node: u32,
}

/// Members of one node past which they are found by hashing.
const INDEX_FROM: usize = 16;

impl Default for FieldTree {
    fn default() -> Self {
        FieldTree {
            nodes: vec![FieldNode::default()],
            names: String::new(),
        }
    }
}

impl FieldTree {
    /// Walks `body` as [`body_fields`] reads it and calls `new_field` with the path of each
    /// member not seen in any body before.
    ///
    /// Read by hand: through serde_json's visitors the walk was a quarter of a 100 000-request
    /// report's replay. The walk reads plain JSON only, and gives up on anything it cannot be
    /// sure serde_json reads the same way (a broken or cut body, a lone escaped surrogate, a
    /// number with an exponent or many digits, deep nesting); serde_json then reads the body
    /// again from the start. Members the walk added are found again, not reported twice, so the fields
    /// reported, and their order, are serde_json's either way.
    pub(crate) fn add_body(&mut self, body: &str, mut new_field: impl FnMut(&str)) {
        let mut walk = Walk { text: body, at: 0 };
        if walk.value(self, 0, 0, &mut new_field).is_none() {
            self.add_body_by_serde(body, new_field);
        }
    }

    /// [`FieldTree::add_body`] through serde_json alone.
    fn add_body_by_serde(&mut self, body: &str, mut new_field: impl FnMut(&str)) {
        let mut deserializer = serde_json::Deserializer::from_str(body);
        // An error only ends the reading: what was read before it stays.
        let _ = TreeWalk {
            tree: self,
            node: 0,
            new_field: &mut new_field,
        }
        .deserialize(&mut deserializer);
    }

    fn name(&self, member: MemberName) -> &str {
        &self.names[member.start..member.start + member.len]
    }

    /// Whether `member` is named `name`, looking at the name only when the lengths agree.
    fn is(&self, member: MemberName, name: &str) -> bool {
        member.len == name.len() && self.name(member) == name
    }

    /// The member `name` of `node`, tried first at `next` (where the member after the last
    /// one was, last time), added if new. Moves `next` past it.
    fn member(&mut self, node: u32, name: &str, next: &mut usize, new_field: &mut impl FnMut(&str)) -> u32 {
        let parent = &self.nodes[node as usize];
        let place = match parent.members.get(*next) {
            Some(&member) if self.is(member, name) => Some(*next),
            _ => match &parent.index {
                Some(index) => index.get(name).map(|&place| place as usize),
                None => parent.members.iter().position(|&member| self.is(member, name)),
            },
        };
        if let Some(place) = place {
            *next = place + 1;
            return parent.members[place].node;
        }
        let child = self.nodes.len() as u32;
        let place = parent.members.len();
        self.nodes.push(FieldNode {
            parent: node,
            place: Some(place as u32),
            ..FieldNode::default()
        });
        let member = MemberName {
            start: self.names.len(),
            len: name.len(),
            node: child,
        };
        self.names.push_str(name);
        let parent = &mut self.nodes[node as usize];
        parent.members.push(member);
        if let Some(index) = &mut parent.index {
            index.insert(name.into(), place as u32);
        } else if parent.members.len() > INDEX_FROM {
            let names = &self.names;
            parent.index = Some(Box::new(
                parent
                    .members
                    .iter()
                    .enumerate()
                    .map(|(at, m)| (names[m.start..m.start + m.len].into(), at as u32))
                    .collect(),
            ));
        }
        *next = place + 1;
        new_field(&self.path(child));
        child
    }

    /// The node of `node`'s array elements, added if new (elements are not fields).
    fn elements(&mut self, node: u32) -> u32 {
        let elements = self.nodes[node as usize].elements;
        if elements != NONE {
            return elements;
        }
        let child = self.nodes.len() as u32;
        self.nodes.push(FieldNode {
            parent: node,
            place: None,
            ..FieldNode::default()
        });
        self.nodes[node as usize].elements = child;
        child
    }

    /// `node`'s path (`$.lines[].sku`).
    fn path(&self, node: u32) -> String {
        let mut steps = Vec::new();
        let mut at = node;
        while at != 0 {
            let n = &self.nodes[at as usize];
            steps.push((n.parent, n.place));
            at = n.parent;
        }
        let mut path = String::from("$");
        for (parent, place) in steps.into_iter().rev() {
            match place {
                Some(place) => {
                    let member = self.nodes[parent as usize].members[place as usize];
                    push_member(&mut path, self.name(member));
                }
                None => path.push_str("[]"),
            }
        }
        path
    }
}

/// The deepest nesting the walk reads itself, below serde_json's limit of 128: deeper bodies
/// get serde_json's verdict, and the walk's recursion stays bounded.
const WALK_DEPTH: usize = 96;

/// A body read by hand. Each method returns `None` to give the body up to serde_json.
struct Walk<'b> {
    text: &'b str,
    at: usize,
}

impl<'b> Walk<'b> {
    fn bytes(&self) -> &'b [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, consumed.
    fn token(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
        let byte = *self.bytes().get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// The value at `node` of the tree, inside `depth` arrays and objects.
    fn value(
        &mut self,
        tree: &mut FieldTree,
        node: u32,
        depth: usize,
        new_field: &mut impl FnMut(&str),
    ) -> Option<()> {
        match self.token()? {
            b'{' if depth < WALK_DEPTH => {
                let mut next = 0;
                let mut token = self.token()?;
                if token == b'}' {
                    return Some(());
                }
                loop {
                    if token != b'"' {
                        return None;
                    }
                    let name = self.string()?;
                    let child = tree.member(node, &name, &mut next, new_field);
                    if self.token()? != b':' {
                        return None;
                    }
                    self.value(tree, child, depth + 1, new_field)?;
                    match self.token()? {
                        b',' => token = self.token()?,
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' if depth < WALK_DEPTH => {
                // As serde's walk: the elements' node is made even for an empty array.
                let elements = tree.elements(node);
                let before = self.at;
                if self.token()? == b']' {
                    return Some(());
                }
                self.at = before;
                loop {
                    self.value(tree, elements, depth + 1, new_field)?;
                    match self.token()? {
                        b',' => {}
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(drop),
            b't' => self.literal(b"rue"),
            b'f' => self.literal(b"alse"),
            b'n' => self.literal(b"ull"),
            b'-' | b'0'..=b'9' => self.number(self.at - 1),
            _ => None,
        }
    }

    fn literal(&mut self, rest: &[u8]) -> Option<()> {
        let end = self.at + rest.len();
        (self.bytes().get(self.at..end)? == rest).then(|| self.at = end)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` from `start`, up to twenty digits before the point: a
    /// number serde_json reads without fail. An exponent, which can take a number out of
    /// range, is serde_json's to judge.
    fn number(&mut self, start: usize) -> Option<()> {
        let digits = |from: usize| {
            from + self.bytes()[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let first = start + usize::from(self.bytes()[start] == b'-');
        let mut end = match *self.bytes().get(first)? {
            b'0' => first + 1,
            b'1'..=b'9' => digits(first),
            _ => return None,
        };
        if end - first > 20 {
            return None;
        }
        if self.bytes().get(end) == Some(&b'.') {
            let fraction = end + 1;
            end = digits(fraction);
            if end == fraction {
                return None;
            }
        }
        match self.bytes().get(end) {
            Some(b'e' | b'E' | b'0'..=b'9') => None,
            _ => {
                self.at = end;
                Some(())
            }
        }
    }

    /// A string whose `"` is read: borrowed from the body when it holds no escape.
    fn string(&mut self) -> Option<Cow<'b, str>> {
        let (text, end) = read_string(self.text, self.at)?;
        self.at = end;
        Some(text)
    }
}

struct TreeWalk<'a, F> {
    tree: &'a mut FieldTree,
    node: u32,
    new_field: &'a mut F,
}

impl<'de, F: FnMut(&str)> DeserializeSeed<'de> for TreeWalk<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(&str)> Visitor<'de> for TreeWalk<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut next = 0;
        while let Some(child) = map.next_key_seed(TreeMember {
            tree: self.tree,
            node: self.node,
            next: &mut next,
            new_field: self.new_field,
        })? {
            map.next_value_seed(TreeWalk {
                tree: self.tree,
                node: child,
                new_field: self.new_field,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let elements = self.tree.elements(self.node);
        while seq
            .next_element_seed(TreeWalk {
                tree: self.tree,
                node: elements,
                new_field: self.new_field,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(IgnoredAny).map(|_| ())
    }
}

/// A member name, found or added in the tree as it is read: its node.
struct TreeMember<'a, F> {
    tree: &'a mut FieldTree,
    node: u32,
    next: &'a mut usize,
    new_field: &'a mut F,
}

impl<'de, F: FnMut(&str)> DeserializeSeed<'de> for TreeMember<'_, F> {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, F: FnMut(&str)> Visitor<'de> for TreeMember<'_, F> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<u32, E> {
        Ok(self.tree.member(self.node, name, self.next, self.new_field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(body: &str) -> Vec<String> {
        body_fields(body).into_iter().collect()
    }

    #[test]
    fn members_at_every_depth_with_indices_folded() {
        assert_eq!(
            fields(r#"[{"id":1,"tags":[["a"]],"o":{"p":{"q":true}}},{"id":2,"extra":[]}]"#),
            ["$[].extra", "$[].id", "$[].o", "$[].o.p", "$[].o.p.q", "$[].tags"]
        );
    }

    #[test]
    fn non_json_gives_nothing_and_cut_json_gives_what_was_read() {
        assert!(fields("hello").is_empty());
        assert!(fields("").is_empty());
        assert!(fields("42").is_empty());
        assert_eq!(
            fields(r#"{"a":1,"b":{"c":"tru... [300 characters truncated]"#),
            ["$.a", "$.b", "$.b.c"]
        );
    }

    #[test]
    fn escaped_and_odd_names_are_written_as_the_shape_matcher_writes_them() {
        assert_eq!(
            fields(r#"{"a\"b":1,"\u00e9":2,"":3}"#),
            ["$.é", r#"$[""]"#, r#"$["a\"b"]"#]
        );
    }

    /// Every path of every body, once: what one tree fed all the bodies must report.
    fn reference(bodies: &[serde_json::Value]) -> BTreeSet<String> {
        fn walk(value: &serde_json::Value, path: &mut String, out: &mut BTreeSet<String>) {
            let len = path.len();
            match value {
                serde_json::Value::Object(members) => {
                    for (name, member) in members {
                        push_member(path, name);
                        out.insert(path.clone());
                        walk(member, path, out);
                        path.truncate(len);
                    }
                }
                serde_json::Value::Array(elements) => {
                    path.push_str("[]");
                    for element in elements {
                        walk(element, path, out);
                    }
                    path.truncate(len);
                }
                _ => {}
            }
        }
        let mut out = BTreeSet::new();
        for body in bodies {
            walk(body, &mut String::from("$"), &mut out);
        }
        out
    }

    /// Each new path reported once, across bodies: the tree's report, and whether any came twice.
    fn through_one_tree(bodies: &[String]) -> (BTreeSet<String>, bool) {
        let mut tree = FieldTree::default();
        let mut seen = BTreeSet::new();
        let mut twice = false;
        for body in bodies {
            tree.add_body(body, |field| twice |= !seen.insert(field.to_owned()));
        }
        (seen, twice)
    }

    #[test]
    fn a_tree_fed_many_bodies_reports_each_new_field_once() {
        let many: String = (0..40)
            .map(|i| format!(r#""k{i}":{{"v{}":1}},"#, i % 3))
            .collect();
        let bodies = [
            r#"{"id":1,"owner":{"login":"a","id":2},"tags":["x"]}"#.to_owned(),
            // The same members in another order, one new, one name twice.
            r#"{"owner":{"id":3,"login":"b","site":true},"id":4,"id":5}"#.to_owned(),
            // A member named `[]` is not the array elements; odd names as the matcher writes them.
            r#"{"[]":{"a":1},"tags":[{"a":2}],"x y":{"\"q":0}}"#.to_owned(),
            // Long names alike but for their last byte, and names of many multibyte characters.
            r#"{"abcdefghijklmnop_x":1,"abcdefghijklmnop_y":2,"aéééééééééé":3,"aééééééééééé":4}"#.to_owned(),
            r#"{"abcdefghijklmnop_y":1,"aéééééééééé":{"abcdefghijklmnop_x":0},"abcdefghijklmnop_x":2}"#
                .to_owned(),
            // More members than are searched one by one (an object keyed by ids), seen twice.
            format!("{{{many}\"last\":0}}"),
            format!("{{\"last\":1,{many}\"new\":[]}}"),
        ];
        let values: Vec<serde_json::Value> =
            bodies.iter().map(|b| serde_json::from_str(b).unwrap()).collect();
        let (seen, twice) = through_one_tree(&bodies);
        assert!(!twice);
        assert_eq!(seen, reference(&values));
        for path in [
            "$.abcdefghijklmnop_y",
            "$.aééééééééééé",
            "$.aéééééééééé.abcdefghijklmnop_x",
            r#"$["[]"].a"#,
            "$.tags[].a",
            r#"$["x y"]["\"q"]"#,
            "$.k39.v0",
            "$.new",
            "$.owner.site",
        ] {
            assert!(seen.contains(path), "{path} missing from {seen:?}");
        }
    }

    fn json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i32>().prop_map(serde_json::Value::from)
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                // Few names, so bodies share members, in different orders.
                proptest::collection::vec(
                    (
                        prop_oneof![Just("a"), Just("b"), Just("c d"), Just("[]"), Just("é")],
                        inner
                    ),
                    0..5
                )
                .prop_map(|members| serde_json::Value::Object(
                    members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn a_tree_reports_what_walking_every_body_finds(bodies in proptest::collection::vec(json(), 1..6)) {
            let texts: Vec<String> = bodies.iter().map(ToString::to_string).collect();
            let (seen, twice) = through_one_tree(&texts);
            proptest::prop_assert!(!twice);
            proptest::prop_assert_eq!(seen, reference(&bodies));
        }
    }

    #[test]
    fn an_object_keyed_by_twenty_thousand_ids_reports_each_once_forwards_and_backwards() {
        let ids: Vec<String> = (0..20_000).map(|i| format!(r#""id-{i}":{{"n":{i}}}"#)).collect();
        let forwards = format!("{{{}}}", ids.join(","));
        let backwards = format!("{{{}}}", ids.iter().rev().cloned().collect::<Vec<_>>().join(","));
        let (seen, twice) = through_one_tree(&[forwards, backwards]);
        assert!(!twice);
        assert_eq!(seen.len(), 40_000);
        assert!(seen.contains("$.id-19999.n"));
    }

    /// Every field reported, in order, by one tree fed `bodies`: walked, or by serde alone.
    fn reported(bodies: &[String], by_serde: bool) -> Vec<String> {
        let mut tree = FieldTree::default();
        let mut out = Vec::new();
        for body in bodies {
            let report = |field: &str| out.push(field.to_owned());
            if by_serde {
                tree.add_body_by_serde(body, report);
            } else {
                tree.add_body(body, report);
            }
        }
        out
    }

    /// JSON text, whitespace and all, with what the walk leaves to serde_json: escaped
    /// surrogates, exponents, long numbers, leading zeros.
    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let string = proptest::collection::vec(
            prop_oneof![
                4 => "[a-cé ]{0,4}",
                1 => prop_oneof![Just("\\\""), Just("\\\\"), Just("\\/"), Just("\\n"), Just("\\t")].prop_map(str::to_owned),
                1 => (any::<u16>(), any::<bool>()).prop_map(|(code, upper)| {
                    if upper { format!("\\u{code:04X}") } else { format!("\\u{code:04x}") }
                }),
                1 => (0xd800u16..0xdc00, 0xdc00u16..0xe000).prop_map(|(high, low)| format!("\\u{high:04x}\\u{low:04x}")),
            ],
            0..4,
        )
        .prop_map(|pieces| format!("\"{}\"", pieces.concat()));
        let space = "[ \n\t\r]{0,2}";
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
            string.clone(),
        ];
        leaf.prop_recursive(5, 48, 5, move |inner| {
            let spaced = (space, inner, space).prop_map(|(a, v, b)| format!("{a}{v}{b}"));
            prop_oneof![
                proptest::collection::vec(spaced.clone(), 0..5)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec((prop_oneof!["\"[a-c]\"", string.clone()], space, spaced), 0..5)
                    .prop_map(|members| {
                        let members: Vec<String> = members
                            .into_iter()
                            .map(|(name, s, value)| format!("{name}{s}:{value}"))
                            .collect();
                        format!("{{{}}}", members.join(","))
                    }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1_000))]

        /// Whole, cut short, or broken: the walk reports what serde_json alone reports, in the
        /// same order, across bodies that share a tree.
        #[test]
        fn the_walk_reports_what_serde_alone_reports(
            bodies in proptest::collection::vec(text(), 1..4),
            cuts in proptest::collection::vec((proptest::prelude::any::<u16>(), 0..4u8, proptest::sample::select(vec!["", ",", "}", "]", "\"", ":", "\\", "0", "e", "\u{1}"])), 0..3),
        ) {
            let mut bodies = bodies;
            let count = bodies.len();
            for (i, (at, how, piece)) in cuts.into_iter().enumerate() {
                let body = &mut bodies[i % count];
                let mut at = usize::from(at) % (body.len() + 1);
                while !body.is_char_boundary(at) {
                    at -= 1;
                }
                match how {
                    0 => body.truncate(at),
                    1 => body.insert_str(at, piece),
                    _ => {
                        let end = body[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                        body.replace_range(at..end, piece);
                    }
                }
            }
            proptest::prop_assert_eq!(reported(&bodies, false), reported(&bodies, true));
        }
    }

    /// The walk reads plain bodies itself, so serde_json is not asked again; the rest it gives
    /// up. Fields alone cannot tell (serde_json reports the same ones), so this asks the walk.
    #[test]
    fn plain_bodies_are_walked_and_the_rest_left_to_serde() {
        let walked = |body: &str| {
            let mut tree = FieldTree::default();
            let mut walk = Walk { text: body, at: 0 };
            walk.value(&mut tree, 0, 0, &mut |_: &str| {}).is_some()
        };
        for body in [
            r#"{"id":1,"login":"octocat","items":[{"name":"a"},{"name":"b"}],"ok":true,"no":false,"n":null}"#,
            r#" [ 0 , -1.5 , 12345678901234567890 , "a\"\\\/\b\f\n\r\t\u00e9" ] "#,
            r#"{"\u00e9":{}}trailing"#,
            r#"{"\ud83d\ude00":"\uD83D\uDE00"}"#,
            "[]",
            "\"text\"",
        ] {
            assert!(walked(body), "{body}");
        }
        for body in [
            r#"{"a":1e3}"#,
            r#"{"a":123456789012345678901}"#,
            r#"{"a":01}"#,
            r#"{"a":"\ud83d"}"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":"cut"#,
            "{\"a\":\"\u{1}\"}",
            "nul",
            "",
            // Alone, where no container's next token would refuse what follows the digits.
            "1e3",
            "01",
        ] {
            assert!(!walked(body), "{body}");
        }
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let nested = |depth: usize| open.repeat(depth) + "1" + &close.repeat(depth);
            assert!(walked(&nested(WALK_DEPTH)), "{open}");
            assert!(!walked(&nested(WALK_DEPTH + 1)), "{open}");
        }
        // Past the walk's depth and serde_json's, the fields above the limit are still found.
        let deep = "{\"a\":".repeat(130) + "1" + &"}".repeat(130);
        let deep = [deep];
        assert_eq!(reported(&deep, false), reported(&deep, true));
    }

    #[test]
    fn ten_thousand_deep_nesting_stops_without_overflowing_the_stack() {
        let deep = "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000);
        let found = fields(&deep);
        assert!(!found.is_empty() && found.len() < 200, "{}", found.len());
    }
}
