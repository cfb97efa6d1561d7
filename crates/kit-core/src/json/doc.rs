//! A JSON document read for matching only: strings and member names borrowed from the text
//! where they have no escapes, objects as the members in document order.
//!
//! A shape assertion reads each member the shape names once. Building a `serde_json::Value`
//! for it cost more than the match: a `String` per name and per string, and the ordered map
//! hashing every name on insert (two thirds of a 600-byte body's parse). This tree keeps what
//! the match reads and no more. It is parsed by serde_json itself, so it accepts and refuses
//! exactly the documents a `Value` does, with the same errors and the same depth limit.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// One value of a document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Every member as written, duplicates included (see [`member`]).
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl Node<'_> {
    /// The same value as a `serde_json::Value` (a repeated member keeps its last value, in the
    /// place of its first, as serde_json's ordered map does).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::Str(s) => Value::String(s.as_ref().to_owned()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(members) => {
                let mut map = Map::with_capacity(members.len());
                for (name, value) in members {
                    map.insert(name.as_ref().to_owned(), value.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

/// The member `name` of an object, found as `serde_json::Map::get_key_value` finds it: a
/// repeated name has its last value.
pub(crate) fn member<'n, 'a>(
    members: &'n [(Cow<'a, str>, Node<'a>)],
    name: &str,
) -> Option<(&'n str, &'n Node<'a>)> {
    members
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(k, v)| (k.as_ref(), v))
}

/// The members of a large object by name, for finding many of them without a scan each.
pub(crate) struct MemberIndex<'n>(rustc_hash::FxHashMap<&'n str, usize>);

impl<'n> MemberIndex<'n> {
    pub(crate) fn new(members: &'n [(Cow<'_, str>, Node<'_>)]) -> Self {
        let mut index = rustc_hash::FxHashMap::with_capacity_and_hasher(members.len(), Default::default());
        for (i, (name, _)) in members.iter().enumerate() {
            // A later member of the same name replaces an earlier one, as in [`member`].
            index.insert(name.as_ref(), i);
        }
        MemberIndex(index)
    }

    /// [`member`], by the index.
    pub(crate) fn get<'a>(
        &self,
        members: &'n [(Cow<'a, str>, Node<'a>)],
        name: &str,
    ) -> Option<(&'n str, &'n Node<'a>)> {
        let (name, value) = &members[*self.0.get(name)?];
        Some((name.as_ref(), value))
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        // serde_json's `Value` makes a non-finite number `null`; the parser never yields one.
        Ok(Number::from_f64(v).map_or(Node::Null, Node::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Deserialize::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // serde_json gives no length: room for a few saves the first regrowths.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8).min(64));
        while let Some(Lent(name)) = map.next_key()? {
            members.push((name, map.next_value()?));
        }
        Ok(Node::Object(members))
    }
}

/// A string borrowed from the input when the deserializer can lend it (serde_json can, for a
/// string without escapes in text it reads from memory), copied otherwise: serde's own
/// `Cow<str>` always copies. Member names here; an event's kind and base64 content in
/// [`crate::event`].
pub(crate) struct Lent<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Lent<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(LentVisitor)
    }
}

struct LentVisitor;

impl<'de> Visitor<'de> for LentVisitor {
    type Value = Lent<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Lent(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Lent(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Lent(Cow::Owned(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_strings_without_escapes_are_borrowed_from_the_text() {
        let text = r#"{"plain":"text","esc\u0061ped":"a\nb","n":[1,-2,2.5,null,true]}"#;
        let Node::Object(members) = serde_json::from_str::<Node<'_>>(text).unwrap() else {
            panic!("an object")
        };
        assert!(matches!(members[0].0, Cow::Borrowed("plain")));
        assert!(matches!(members[0].1, Node::Str(Cow::Borrowed("text"))));
        assert!(matches!(&members[1].0, Cow::Owned(n) if n == "escaped"));
        assert!(matches!(&members[1].1, Node::Str(Cow::Owned(s)) if s == "a\nb"));
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(Node::Object(members).to_value(), value);
    }

    #[test]
    fn a_repeated_member_reads_as_serde_json_reads_it() {
        let text = r#"{"a":1,"b":2,"a":3}"#;
        let node: Node<'_> = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(node.to_value(), value);
        assert_eq!(
            value.to_string(),
            r#"{"a":3,"b":2}"#,
            "the first place, the last value"
        );
        let Node::Object(members) = node else {
            panic!("an object")
        };
        assert_eq!(
            member(&members, "a").map(|(_, v)| v.to_value()),
            Some(Value::from(3))
        );
    }

    #[test]
    fn it_refuses_what_serde_json_refuses_with_the_same_error() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let invalid_utf8 = b"{\"a\":\"\xff\"}".to_vec();
        for text in [
            b"{\"a\":1,}".to_vec(),
            b"[1 2]".to_vec(),
            b"{} trailing".to_vec(),
            b"1e999".to_vec(),
            deep.into_bytes(),
            invalid_utf8,
        ] {
            let node = serde_json::from_slice::<Node<'_>>(&text)
                .map(|_| ())
                .map_err(|e| e.to_string());
            let value = serde_json::from_slice::<Value>(&text)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert!(value.is_err(), "{}", String::from_utf8_lossy(&text));
            assert_eq!(node, value, "{}", String::from_utf8_lossy(&text));
        }
    }
}
