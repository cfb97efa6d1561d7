//! YAML documents into the tree JSON documents are read into.
//!
//! serde-saphyr decides what YAML means (scalar types, anchors and aliases, merge keys, tags,
//! repeated names, its budget). Two ways into the tree keep its decisions:
//!
//! - [`read_plain`] reads a document from the events of serde-saphyr's own parser, with its
//!   limits, as long as nothing in it asks for a decision serde-saphyr makes otherwise than by
//!   reading it plainly: no anchor, alias, tag, merge key, repeated name, complex or null key,
//!   second document, or scalar whose type it cannot tell for sure (those it gives serde-saphyr
//!   alone, one scalar at a time, or the whole document back). Every real document takes it.
//! - [`YamlTree`] is serde-saphyr itself, deserializing into the tree through a visitor that
//!   makes exactly the calls `serde_json::Value`'s visitor makes; the way for everything else,
//!   and for the errors.
//!
//! Reading into a `Value` first and viewing it as a tree hashed every member name into an
//! ordered map and copied every name and string the parser had borrowed from the text; and
//! serde-saphyr's own layer, which buffers and checks events for decisions a plain document
//! does not need, cost about as much as its parser.

use std::borrow::Cow;
use std::fmt;

use granit_parser::{Event, Parser, ScalarStyle};
use kit_core::json::doc::{self, Node};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// A collection being read: its items, or its members and the name read for the next one.
enum Open<'a> {
    Sequence(Vec<Node<'a>>),
    Mapping(Vec<(Cow<'a, str>, Node<'a>)>, Option<Cow<'a, str>>),
}

/// How many scalars a document read plainly may have serde-saphyr read alone (OpenAI's has
/// about 120: image sizes, durations, versions).
const MAX_READ_ALONE: usize = 2_000;

/// How far inside serde-saphyr's budgets a document read plainly stays: near a limit, whether it
/// is breached depends on how serde-saphyr counts, so serde-saphyr reads the document.
const MARGIN: usize = 64;

/// `text` read as serde-saphyr reads it, when it is a mapping that needs none of the decisions
/// listed in the module's documentation; `None` to leave it to serde-saphyr (which also
/// reports every error).
pub(super) fn read_plain<'a>(text: &'a str, options: &serde_saphyr::options::Options) -> Option<Node<'a>> {
    let budget = options.budget.as_ref()?;
    // The parser exactly as serde-saphyr sets it up (`Budget::parser_options`), so that it
    // accepts the same documents.
    let parser_options = granit_parser::options! {
        simple_key_max_lookahead: budget.simple_key_max_lookahead,
        flow_nesting_limit: budget.flow_nesting_limit,
        block_nesting_limit: granit_parser::Options::default()
            .block_nesting_limit
            .max(budget.max_depth.saturating_add(1)),
        emit_comments: false,
    };
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut root = None;
    let (mut events, mut nodes, mut scalar_bytes, mut documents) = (0usize, 0usize, 0usize, 0usize);
    let mut read_alone = 0;
    for item in Parser::new_from_str_with_options(text, parser_options) {
        let (event, _) = item.ok()?;
        events += 1;
        let node = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(_, None) if documents == 0 => {
                documents = 1;
                continue;
            }
            Event::Scalar(value, style, 0, None) => {
                nodes += 1;
                scalar_bytes += value.len();
                if let Some(Open::Mapping(_, name @ None)) = stack.last_mut() {
                    // A name: as text, unless YAML would take it for null, merge with it, or
                    // compare it with the others as an integer.
                    if style == ScalarStyle::Plain
                        && (nullish(&value) || &*value == "<<" || integer_not_by_its_text(&value))
                    {
                        return None;
                    }
                    *name = Some(value);
                    continue;
                }
                scalar(value, style, &mut read_alone)?
            }
            Event::SequenceStart(_, 0, None) | Event::MappingStart(_, 0, None) => {
                nodes += 1;
                let names_next = matches!(stack.last(), Some(Open::Mapping(_, None)));
                // Well inside the depth limit: at its edge, serde-saphyr's way of counting decides.
                if names_next || stack.len() + 2 >= budget.max_depth {
                    return None;
                }
                stack.push(match event {
                    Event::SequenceStart(..) => Open::Sequence(Vec::new()),
                    _ => Open::Mapping(Vec::new(), None),
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Open::Sequence(items)) => Node::Array(items),
                _ => return None,
            },
            Event::MappingEnd => match stack.pop() {
                Some(Open::Mapping(members, None)) if !doc::has_repeated_name(&members) => {
                    Node::Object(members)
                }
                _ => return None,
            },
            // Anchors, aliases, tags, directives, a second document.
            _ => return None,
        };
        if events + MARGIN > budget.max_events
            || nodes + MARGIN > budget.max_nodes
            || scalar_bytes + MARGIN > budget.max_total_scalar_bytes
        {
            return None;
        }
        match stack.last_mut() {
            None if root.is_none() => root = Some(node),
            None => return None,
            Some(Open::Sequence(items)) => items.push(node),
            Some(Open::Mapping(members, name)) => members.push((name.take()?, node)),
        }
    }
    root.filter(|node| matches!(node, Node::Object(_)))
}

/// What `serde_json::Value`'s visitor gets for an untagged scalar, as serde-saphyr's
/// `deserialize_any` decides it: quoted and block scalars are text; a plain one is null, a
/// YAML 1.1 boolean, a number, or text. `None` for a numeral it cannot read alone.
fn scalar<'a>(value: Cow<'a, str>, style: ScalarStyle, read_alone: &mut usize) -> Option<Node<'a>> {
    if style != ScalarStyle::Plain {
        return Some(Node::Str(value));
    }
    if nullish(&value) {
        return Some(Node::Null);
    }
    if let Some(b) = yaml11_bool(&value) {
        return Some(Node::Bool(b));
    }
    // Only a numeral (a digit or a dot after an optional sign) can be read as a number.
    let unsigned = value.strip_prefix(['+', '-']).unwrap_or(&value);
    if !unsigned
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
    {
        return Some(Node::Str(value));
    }
    // serde-saphyr's numerals (integers in four bases with `_` between digits, Rust's floats
    // with a leading digit, `.inf`, `.nan`) hold nothing else: a space or a `:` makes text.
    if !value.bytes().all(numeral_byte) {
        return Some(Node::Str(value));
    }
    if let Some(n) = decimal_integer(&value) {
        return Some(Node::Number(n));
    }
    // Each costs a parser of its own: past a few, serde-saphyr reading the whole document
    // once is cheaper.
    *read_alone += 1;
    if *read_alone > MAX_READ_ALONE {
        return None;
    }
    alone(value)
}

/// Whether serde-saphyr may read plain name `text` as an integer that another name spells
/// otherwise. It finds repeated names by value, and integers by theirs: `-0` repeats `0`, and
/// `+1`, `0x1`, `0o1`, `0b1` and `1_0` repeat `1` and `10` (booleans and floats it compares as
/// written). The names read plainly are checked for repeats by text, which is exact for
/// decimal integers written as decimal integers are (no `+`, no leading zero, no `_`, and not
/// `-0`), the status codes of every document; a name written any other way that could be an
/// integer leaves the document to serde-saphyr. `2XX`, `1e3` and `1.5` are not integers.
fn integer_not_by_its_text(text: &str) -> bool {
    let (sign, unsigned) = match text.as_bytes().first() {
        Some(&sign @ (b'+' | b'-')) => (Some(sign), &text[1..]),
        _ => (None, text),
    };
    let bytes = unsigned.as_bytes();
    let radix =
        bytes.len() > 2 && bytes[0] == b'0' && matches!(bytes[1], b'x' | b'X' | b'o' | b'O' | b'b' | b'B');
    let integer = if radix {
        bytes[2..].iter().all(|b| b.is_ascii_hexdigit() || *b == b'_')
    } else {
        bytes.first().is_some_and(u8::is_ascii_digit)
            && bytes.iter().all(|b| b.is_ascii_digit() || *b == b'_')
    };
    let by_its_text = sign != Some(b'+')
        && !radix
        && !bytes.contains(&b'_')
        && (bytes == b"0" && sign.is_none() || bytes.first() != Some(&b'0'));
    integer && !by_its_text
}

/// A byte some numeral serde-saphyr reads may hold.
fn numeral_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_')
}

/// serde-saphyr's null spellings for a plain scalar.
fn nullish(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// serde-saphyr's YAML 1.1 booleans (its default, `strict_booleans` off), in any case.
fn yaml11_bool(text: &str) -> Option<bool> {
    let is = |word: &str| text.eq_ignore_ascii_case(word);
    if is("true") || is("yes") || is("y") || is("on") {
        Some(true)
    } else if is("false") || is("no") || is("n") || is("off") {
        Some(false)
    } else {
        None
    }
}

/// A decimal integer without a sign but `-` and without leading zeros that fits 64 bits, as
/// serde-saphyr reads it: `u64` unless negative, then `i64`. Other numerals are `None`.
fn decimal_integer(text: &str) -> Option<Number> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !plain {
        return None;
    }
    if digits.len() < text.len() {
        text.parse::<i64>().ok().map(Number::from)
    } else {
        text.parse::<u64>().ok().map(Number::from)
    }
}

/// Something numeral-shaped (`3.0.0`, `1.5`, `0x1F`, `2024-10-01`, `1d`) of [`numeral_byte`]s
/// only, read by serde-saphyr as a document of its own: the same plain scalar, unless it starts
/// a document marker. `None` for that, or for a number serde-saphyr refuses (`1e999`).
fn alone(value: Cow<'_, str>) -> Option<Node<'_>> {
    if value.starts_with("---") || value.starts_with("...") {
        return None;
    }
    let read: Value = serde_saphyr::from_str_with_options(&value, super::yaml_options(value.len())).ok()?;
    Some(match read {
        Value::String(text) if text == *value => Node::Str(value),
        Value::Number(n) => Node::Number(n),
        Value::Bool(b) => Node::Bool(b),
        Value::Null => Node::Null,
        _ => return None,
    })
}

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

/// The ways the loader can read YAML, for the `yaml` fuzz check (`fuzz/checks/yaml.rs`): the
/// text read plainly (`None` when it is left to serde-saphyr), through serde-saphyr into the
/// loader's tree, and through serde-saphyr into a `serde_json::Value`, the reference; each
/// as JSON text, or an error's text.
pub fn three_ways(text: &str) -> ThreeWays {
    let options = || super::yaml_options(text.len());
    ThreeWays {
        plain: read_plain(text, &options()).map(|node| node.to_value().to_string()),
        tree: serde_saphyr::from_str_with_options::<YamlTree<'_>>(text, options())
            .map(|t| t.0.to_value().to_string())
            .map_err(|e| e.to_string()),
        value: serde_saphyr::from_str_with_options::<serde_json::Value>(text, options())
            .map(|v| v.to_string())
            .map_err(|e| e.to_string()),
    }
}

/// What [`three_ways`] read.
#[derive(Debug)]
pub struct ThreeWays {
    /// Read plainly, when it was.
    pub plain: Option<String>,
    /// serde-saphyr into the loader's tree.
    pub tree: Result<String, String>,
    /// serde-saphyr into a `serde_json::Value`.
    pub value: Result<String, String>,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::three_ways;

    /// Both ways into the tree agree with the `Value`; the plain way may only decline.
    fn check(text: &str) -> Option<String> {
        let read = three_ways(text);
        assert_eq!(read.tree, read.value, "{text:?} through the visitor");
        if let Some(plain) = &read.plain {
            assert_eq!(Ok(plain), read.value.as_ref(), "{text:?} read plainly");
        }
        read.plain
    }

    #[test]
    fn the_real_yaml_documents_read_plainly_as_they_read_into_a_value() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/specs");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let ways = three_ways(&text);
                let value = ways.value.unwrap();
                assert!(
                    ways.tree.unwrap() == value,
                    "{} through the visitor",
                    path.display()
                );
                let plain = ways
                    .plain
                    .unwrap_or_else(|| panic!("{} not read plainly", path.display()));
                assert!(plain == value, "{} read plainly reads otherwise", path.display());
                read += 1;
            }
        }
        assert!(read >= 3, "only {read} YAML documents in {}", dir.display());
    }

    #[test]
    fn plain_documents_of_every_kind_of_scalar_and_key_read_plainly() {
        let cases = [
            // Booleans old and new, nulls, quoted look-alikes, block scalars.
            "a: [true, True, yes, no, on, off, y, n, ~, null, Null, '', \"null\", TRUE, oN]\n",
            "a: |\n  two\n  lines\nb: >\n  folded\n  text\nc: \"esc\\u00e9\\n\"\nd: 'it''s'\ne:\n",
            // Numbers of every base and size, and numerals that are text.
            "a: [0, -0, -1, 007, 0o17, 0x1F, 1_000, +5, 18446744073709551615, 18446744073709551616]\n",
            "a: [-9223372036854775808, -9223372036854775809, 1.5, -2e3, .5, 1e3, 1., +.5]\n",
            "a: [2023-08-16, 12:30, '42', \"4.2\", 1.2.3, 0x, 1e, -x, 1d, 1024x1024, 3.0.0, .foo, +x]\n",
            "a: 0-based, not 1-based (a note)\nb: 1/2\nc: 12:30:15\n",
            // Names that are not plain text, and ones YAML types otherwise as values.
            "200: ok\n404: no\ntrue: t\n1.5: f\n'q': quoted\n\"\": empty\n'~': tilde\n\"null\": n\n",
            // Names that look numeric and are compared as written: codes, ranges, floats.
            "0: zero\n-1: minus\n2XX: range\ndefault: d\n1e3: f\n1.0: g\n1.00: h\n'-0': quoted\n",
            "0x: a\n0xZ: b\n0a: c\n_10: d\n10: e\n",
            "? complex\n: value\n",
            "? |\n  a block\n: value\n\"<<\": quoted, not a merge\n",
            "%TAG !e! tag:example.com,2000:\n---\na: 1\n",
            // Shapes.
            "a: {b: {c: {d: [1, {e: f}]}}}\nb: []\nc: {}\nd: [[], [{}]]\n",
            "a:\n  - b: 1\n    c: [x, y]\n  - - nested\n    - list\n",
            "---\na: 1\n...\n",
            "# a comment\na: 1 # another\n",
            "a: plain\n  continued\n  on lines\n",
            "a: 1\r\nb: [x, y]\r\nc: |\r\n  kept\r\n",
            "ключ: значение\n\"\\u00e9t\\u00e9\": 'summer'\nemoji: 🦀\n",
        ];
        for case in cases {
            assert!(check(case).is_some(), "{case:?} not read plainly");
        }
    }

    #[test]
    fn what_serde_saphyr_decides_otherwise_is_left_to_it() {
        let cases = [
            "a: .inf\n",
            "a: -.inf\n",
            "a: .nan\n",
            "a: 1e999\n",
            "~: n\n",
            "null: n\n",
            "? \n: no name\n",
            "? [a, b]\n: value\n",
            "? {a: b}\n: value\n",
            "a: 1\nb: 2\na: 3\n",
            "base: &b {x: 1, y: 2}\nuse: *b\nmerged: {<<: *b, y: 3}\n",
            "list: &l [1, 2]\nmore: [*l, *l]\nmerge: {<<: [{a: 1}, {b: 2}]}\n",
            "a: !!str 12\nb: !!int '7'\nc: !!float 1\nd: !!bool 'true'\ne: !custom x\nf: !!null ''\n",
            "a: !!binary aGVsbG8=\n!!binary aGk=: v\n",
            "%YAML 1.2\n---\na: 1\n",
            "",
            "---\n",
            "just a string\n",
            "- 1\n- [2, [3, {}]]\n",
            "a: 1\n---\nb: 2\n",
            "a: [unclosed\n",
            "a: *nowhere\n",
            "a: b: c\n",
            "a: -\n",
            // Names serde-saphyr compares as integers: one spelled otherwise may repeat another.
            "a: {-0: true, 0: true}\n",
            "a: {+1: x, 1: y}\n",
            "a: {0x1: x, 0o1: y}\n",
            "a: {1_0: x, 10: y}\n",
            "a: {-0x1: x, -1: y}\n",
            "a: {007: x}\n",
        ];
        for case in cases {
            assert!(check(case).is_none(), "{case:?} read plainly");
        }
        let deep = format!("a: {}x{}\n", "[".repeat(200), "]".repeat(200));
        assert!(check(&deep).is_none());
        let just_deep_enough = format!("a: {}x{}\n", "[".repeat(40), "]".repeat(40));
        assert!(check(&just_deep_enough).is_some());
        // Numerals read alone cost a parser each: past a bound, the document goes back whole.
        let numerals = |n: usize| (0..n).map(|i| format!("k{i}: {i}d\n")).collect::<String>();
        assert!(check(&numerals(100)).is_some());
        assert!(check(&numerals(super::MAX_READ_ALONE + 1)).is_none());
    }

    /// A plain scalar that may be anything: words, numerals, nulls, booleans.
    fn plain_scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "true",
                "False",
                "yes",
                "NO",
                "on",
                "Off",
                "y",
                "N",
                "~",
                "null",
                "NULL",
                "0",
                "-0",
                "007",
                "0x1F",
                "0o17",
                "0b11",
                "1_000",
                "+5",
                "-17",
                "1.5",
                "-2e3",
                ".5",
                "1.",
                "3.0.0",
                "2024-10-01",
                "12:30",
                "1d",
                "1024x1024",
                "inf",
                ".inf",
                "nan",
                "1e999",
                "-x",
                ".x",
                "18446744073709551616",
                "-9223372036854775809",
                "9223372036854775807",
                "x1",
                "a.b",
            ])
            .prop_map(str::to_owned),
            "[a-z][a-z0-9_.]{0,8}",
            "[0-9][0-9a-fx._:+-]{0,8}[0-9a-z]",
            "-?[1-9][0-9]{0,20}",
        ]
    }

    /// A name: plain, quoted, or a numeral or word YAML would type as a value.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9_]{0,6}",
            plain_scalar(),
            "[a-z ]{0,6}".prop_map(|s| format!("'{s}'")),
        ]
    }

    /// A value in flow style.
    fn flow() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            plain_scalar(),
            "[a-z ]{0,6}".prop_map(|s| format!("\"{s}\"")),
            Just("''".to_owned()),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(", "))),
                prop::collection::vec((name(), inner), 0..4).prop_map(|members| {
                    let members: Vec<String> =
                        members.into_iter().map(|(n, v)| format!("{n}: {v}")).collect();
                    format!("{{{}}}", members.join(", "))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Block mappings of flow values: whatever is read plainly reads as serde-saphyr reads it.
        #[test]
        fn a_document_read_plainly_reads_as_serde_saphyr_reads_it(
            members in prop::collection::vec((name(), flow()), 1..6),
            nested in prop::collection::vec((name(), plain_scalar()), 0..4),
        ) {
            let mut text = String::new();
            for (name, value) in &members {
                text.push_str(&format!("{name}: {value}\n"));
            }
            if !nested.is_empty() {
                text.push_str("nested:\n");
                for (name, value) in &nested {
                    text.push_str(&format!("  {name}: {value}\n"));
                }
            }
            check(&text);
        }
    }
}
