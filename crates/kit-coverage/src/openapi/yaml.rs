//! YAML documents read by serde-saphyr straight into the tree JSON documents are read into.
//!
//! serde-saphyr decides everything YAML decides (scalar types, anchors and aliases, merge keys,
//! tags, duplicate keys, the budget); this visitor only builds the tree, as
//! `serde_json::Value`'s own visitor would build a `Value`, call for call. Reading into a
//! `Value` first and viewing it as a tree hashed every member name into an ordered map and
//! copied every name and string the parser had borrowed from the text.

use std::borrow::Cow;
use std::fmt;

use kit_core::json::doc::Node;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A document's tree, as serde-saphyr reads it.
pub(super) struct YamlTree<'de>(pub(super) Node<'de>);

impl<'de> de::Deserialize<'de> for YamlTree<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor).map(YamlTree)
    }
}

/// Builds a [`Node`] from what `serde_json::Value`'s visitor takes, as it does: a non-finite
/// float becomes `null`, a 128-bit integer a number only if it fits 64 bits.
struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(value.into()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Node<'de>, E> {
        let number = match (i64::try_from(value), u64::try_from(value)) {
            (Ok(n), _) => Number::from(n),
            (_, Ok(n)) => Number::from(n),
            _ => return Err(E::custom("number out of range")),
        };
        Ok(Node::Number(number))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Node<'de>, E> {
        u64::try_from(value)
            .map(|n| Node::Number(n.into()))
            .map_err(|_| E::custom("number out of range"))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Node<'de>, E> {
        Ok(Number::from_f64(value).map_or(Node::Null, Node::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value.to_owned())))
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Borrowed(value)))
    }

    fn visit_string<E>(self, value: String) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value)))
    }

    fn visit_none<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(YamlTree(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        // Every member is kept, a repeated name too: `doc::distinct` and `doc::member` read
        // them as the ordered map would have kept them.
        let mut members = Vec::new();
        let mut first = true;
        while let Some(name) = map.next_key_seed(Key { first })? {
            first = false;
            let YamlTree(value) = map.next_value()?;
            members.push((name, value));
        }
        Ok(Node::Object(members))
    }
}

/// A member's name, asked for as `Value`'s visitor asks: the first as a `str` (its
/// `KeyClassifier`), the rest as a `String`.
struct Key {
    first: bool,
}

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        if self.first {
            deserializer.deserialize_str(KeyVisitor { first: true })
        } else {
            deserializer.deserialize_string(KeyVisitor { first: false })
        }
    }
}

/// Takes a name as `KeyClassifier` takes the first (text only) and `String` the rest (UTF-8
/// bytes too), and says what it expected in their words.
struct KeyVisitor {
    first: bool,
}

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.first { "a string key" } else { "a string" })
    }

    fn visit_str<E>(self, value: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(value.to_owned()))
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_string<E>(self, value: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(value))
    }

    fn visit_bytes<E: de::Error>(self, value: &[u8]) -> Result<Cow<'de, str>, E> {
        if self.first {
            return Err(E::invalid_type(de::Unexpected::Bytes(value), &self));
        }
        std::str::from_utf8(value)
            .map(|text| Cow::Owned(text.to_owned()))
            .map_err(|_| E::invalid_value(de::Unexpected::Bytes(value), &self))
    }

    fn visit_byte_buf<E: de::Error>(self, value: Vec<u8>) -> Result<Cow<'de, str>, E> {
        if self.first {
            return Err(E::invalid_type(de::Unexpected::Bytes(&value), &self));
        }
        String::from_utf8(value)
            .map(Cow::Owned)
            .map_err(|e| E::invalid_value(de::Unexpected::Bytes(&e.into_bytes()), &self))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::Value;

    use super::YamlTree;

    /// What the loader made before: serde-saphyr into a `Value`.
    fn as_value(text: &str) -> Result<String, String> {
        serde_saphyr::from_str_with_options::<Value>(text, super::super::yaml_options(text.len()))
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    }

    /// What it makes now, as a `Value` for comparison.
    fn as_tree(text: &str) -> Result<String, String> {
        serde_saphyr::from_str_with_options::<YamlTree<'_>>(text, super::super::yaml_options(text.len()))
            .map(|t| t.0.to_value().to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_real_yaml_documents_read_as_they_read_into_a_value() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/specs");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let tree = as_tree(&text).unwrap();
                assert!(tree == as_value(&text).unwrap(), "{} reads otherwise", path.display());
                read += 1;
            }
        }
        assert!(read >= 3, "only {read} YAML documents in {}", dir.display());
    }

    #[test]
    fn every_kind_of_node_reads_as_it_reads_into_a_value() {
        let cases = [
            // Scalars as YAML types them: booleans old and new, nulls, numbers of every base,
            // too large for 64 bits, non-finite, dates, quoted look-alikes, block scalars.
            "a: [true, True, yes, no, on, off, y, n, ~, null, Null, '', \"null\"]\n",
            "a: [0, -1, 007, 0o17, 0x1F, 1_000, +5, 18446744073709551615, 18446744073709551616]\n",
            "a: [-9223372036854775808, -9223372036854775809, 1.5, -2e3, .5, 1e3]\n",
            "a: .inf\n",
            "a: -.inf\n",
            "a: .nan\n",
            "a: 1e999\n",
            "a: [2023-08-16, 12:30, '42', \"4.2\", 1.2.3, 0x, 1e, -x]\n",
            "a: -\n",
            "a: |\n  two\n  lines\nb: >\n  folded\n  text\nc: \"esc\\u00e9\\n\"\nd: 'it''s'\n",
            // Keys that are not plain text.
            "200: ok\n404: no\ntrue: t\n1.5: f\n'q': quoted\n\"\": empty\n",
            "~: n\n",
            "null: n\n",
            "? complex\n: value\n",
            "? [a, b]\n: value\n",
            "? {a: b}\n: value\n",
            "? \n: no key\n",
            // Repeated names, anchors, aliases, merge keys, tags.
            "a: 1\nb: 2\na: 3\n",
            "base: &b {x: 1, y: 2}\nuse: *b\nmerged: {<<: *b, y: 3}\n",
            "list: &l [1, 2]\nmore: [*l, *l]\nmerge: {<<: [{a: 1}, {b: 2}]}\n",
            "a: !!str 12\nb: !!int '7'\nc: !!float 1\nd: !!bool 'true'\ne: !custom x\nf: !!null ''\n",
            "a: !!binary aGVsbG8=\n!!binary aGk=: v\n",
            // Shapes of whole documents.
            "",
            "---\n",
            "just a string\n",
            "- 1\n- [2, [3, {}]]\n- {}\n- []\n",
            "a: {b: {c: {d: [1, {e: f}]}}}\n",
            "a: 1\n---\nb: 2\n",
            "a: [unclosed\n",
            "a: *nowhere\n",
            "a: b: c\n",
            "\t- tab\n",
        ];
        for case in cases {
            assert_eq!(as_tree(case), as_value(case), "{case:?}");
        }
        let deep = format!("{}x{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(as_tree(&deep), as_value(&deep));
    }
}
