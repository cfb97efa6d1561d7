//! Field paths: what a response body holds, as the kit writes paths (`$.lines[].sku`).

use std::collections::BTreeSet;
use std::fmt;

use kit_core::json::push_member;
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
    pub(crate) fn add_body(&mut self, body: &str, mut new_field: impl FnMut(&str)) {
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

    #[test]
    fn ten_thousand_deep_nesting_stops_without_overflowing_the_stack() {
        let deep = "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000);
        let found = fields(&deep);
        assert!(!found.is_empty() && found.len() < 200, "{}", found.len());
    }
}
