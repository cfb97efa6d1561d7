//! A JSON document read for matching and lookups: strings and member names borrowed from the
//! text where they have no escapes, objects as the members in document order.
//!
//! A shape assertion reads each member the shape names once. Building a `serde_json::Value`
//! for it cost more than the match: a `String` per name and per string, and the ordered map
//! hashing every name on insert (two thirds of a 600-byte body's parse). This tree keeps what
//! the match reads and no more. It is read as serde_json reads (see [`parse`]), so it accepts
//! and refuses exactly the documents a `Value` does, with the same errors and the same depth
//! limit. The OpenAPI loader reads documents of megabytes into it for the same reason.
//!
//! ```
//! use kit_core::json::doc::{self, Node};
//!
//! let node = doc::parse(br#"{"id":7,"tags":["a","b"],"name":"Rex"}"#).unwrap();
//! assert_eq!(node.get("name").and_then(Node::as_str), Some("Rex"));
//! assert_eq!(node.get("tags").and_then(Node::as_array).map(<[_]>::len), Some(2));
//! assert_eq!(node.to_value()["id"], 7);
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::number::{self, NumberToken};
use super::{string, swar};

/// One value of a document, borrowing from the text it was read from.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json holds it.
    Number(Number),
    /// A string: borrowed when the text has it without escapes.
    Str(Cow<'a, str>),
    /// An array's items.
    Array(Vec<Node<'a>>),
    /// Every member as written, duplicates included (see [`member`] and [`distinct`]).
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

/// An object's members, as [`Node::Object`] holds them.
pub type Members<'a> = [(Cow<'a, str>, Node<'a>)];

impl<'a> Node<'a> {
    /// The same value as a `serde_json::Value` (a repeated member keeps its last value, in the
    /// place of its first, as serde_json's ordered map does).
    ///
    /// ```
    /// use kit_core::json::doc;
    ///
    /// let node = doc::parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
    /// assert_eq!(node.to_value().to_string(), r#"{"a":3,"b":2}"#);
    /// ```
    pub fn to_value(&self) -> Value {
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

    /// The same value as a tree borrowing every string from `value` (a document read some
    /// other way, from YAML say).
    ///
    /// ```
    /// use kit_core::json::doc::Node;
    ///
    /// let value = serde_json::json!({"paths": {"/pets": {}}, "n": [1.5, null]});
    /// let node = Node::from_value(&value);
    /// assert_eq!(node.to_value(), value);
    /// ```
    pub fn from_value(value: &'a Value) -> Self {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::Str(Cow::Borrowed(s)),
            Value::Array(items) => Node::Array(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(name, value)| (Cow::Borrowed(name.as_str()), Node::from_value(value)))
                    .collect(),
            ),
        }
    }

    /// The value of member `name`, if this is an object that has it (the last, if it has it
    /// twice, as [`member`] finds it).
    ///
    /// ```
    /// use kit_core::json::doc;
    ///
    /// let node = doc::parse(br#"{"a":{"b":true}}"#).unwrap();
    /// assert_eq!(node.get("a").and_then(|a| a.get("b")).and_then(|b| b.as_bool()), Some(true));
    /// assert_eq!(node.get("z"), None);
    /// ```
    pub fn get(&self, name: &str) -> Option<&Node<'a>> {
        member(self.as_object()?, name).map(|(_, value)| value)
    }

    /// The members, if this is an object.
    pub fn as_object(&self) -> Option<&Members<'a>> {
        match self {
            Node::Object(members) => Some(members),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_array(&self) -> Option<&[Node<'a>]> {
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether this is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
}

/// The member `name` of an object, found as `serde_json::Map::get_key_value` finds it: a
/// repeated name has its last value.
///
/// ```
/// use kit_core::json::doc::{self, Node};
///
/// let node = doc::parse(br#"{"a":1,"a":2}"#).unwrap();
/// let (name, value) = doc::member(node.as_object().unwrap(), "a").unwrap();
/// assert_eq!((name, value.to_value()), ("a", serde_json::json!(2)));
/// ```
pub fn member<'n, 'a>(members: &'n Members<'a>, name: &str) -> Option<(&'n str, &'n Node<'a>)> {
    members
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(k, v)| (k.as_ref(), v))
}

/// Objects this large or smaller are checked for a repeated name pair by pair; larger ones
/// through a hash map.
const PAIRWISE_DISTINCT: usize = 12;

/// Whether some name is written more than once among `members`.
///
/// ```
/// use kit_core::json::doc;
///
/// let node = doc::parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
/// assert!(doc::has_repeated_name(node.as_object().unwrap()));
/// assert!(!doc::has_repeated_name(doc::parse(br#"{"a":1}"#).unwrap().as_object().unwrap()));
/// ```
pub fn has_repeated_name(members: &Members<'_>) -> bool {
    if members.len() <= PAIRWISE_DISTINCT {
        members
            .iter()
            .enumerate()
            .any(|(i, (name, _))| members[i + 1..].iter().any(|(other, _)| other == name))
    } else {
        let mut seen = rustc_hash::FxHashSet::with_capacity_and_hasher(members.len(), Default::default());
        !members.iter().all(|(name, _)| seen.insert(name.as_ref()))
    }
}

/// An object's members as serde_json's ordered map holds them: a name written twice comes
/// once, in the place of its first, with its last value. Members of an object without
/// repeated names (nearly every object) come as they are, with no map built.
///
/// ```
/// use kit_core::json::doc;
///
/// let node = doc::parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
/// let members: Vec<(&str, String)> = doc::distinct(node.as_object().unwrap())
///     .map(|(name, value)| (name, value.to_value().to_string()))
///     .collect();
/// assert_eq!(members, [("a", "3".to_owned()), ("b", "2".to_owned())]);
/// ```
pub fn distinct<'n, 'a>(members: &'n Members<'a>) -> impl Iterator<Item = (&'n str, &'n Node<'a>)> {
    // For each name written more than once: where it is first written, and where last.
    let places = has_repeated_name(members).then(|| {
        let mut places = rustc_hash::FxHashMap::<&str, (usize, usize)>::default();
        for (i, (name, _)) in members.iter().enumerate() {
            places.entry(name.as_ref()).or_insert((i, i)).1 = i;
        }
        places
    });
    members
        .iter()
        .enumerate()
        .filter_map(move |(i, (name, value))| match &places {
            None => Some((name.as_ref(), value)),
            Some(places) => {
                let &(first, last) = places.get(name.as_ref())?;
                (first == i).then(|| (name.as_ref(), &members[last].1))
            }
        })
}

/// The members of a large object by name, for finding many of them without a scan each.
///
/// ```
/// use kit_core::json::doc::{self, MemberIndex};
///
/// let node = doc::parse(br#"{"a":1,"b":2,"a":3}"#).unwrap();
/// let members = node.as_object().unwrap();
/// let index = MemberIndex::new(members);
/// assert_eq!(index.get(members, "a").map(|(_, v)| v.to_value()), Some(serde_json::json!(3)));
/// assert!(index.get(members, "c").is_none());
/// ```
pub struct MemberIndex<'n>(rustc_hash::FxHashMap<&'n str, usize>);

impl<'n> MemberIndex<'n> {
    /// Indexes `members` by name.
    pub fn new(members: &'n Members<'_>) -> Self {
        let mut index = rustc_hash::FxHashMap::with_capacity_and_hasher(members.len(), Default::default());
        for (i, (name, _)) in members.iter().enumerate() {
            // A later member of the same name replaces an earlier one, as in [`member`].
            index.insert(name.as_ref(), i);
        }
        MemberIndex(index)
    }

    /// [`member`], by the index: `members` must be the members it was made from.
    pub fn get<'a>(&self, members: &'n Members<'a>, name: &str) -> Option<(&'n str, &'n Node<'a>)> {
        let (name, value) = members.get(*self.0.get(name)?)?;
        Some((name.as_ref(), value))
    }
}

/// Reads `json` into a [`Node`] exactly as `serde_json::from_slice` does: the same tree, and
/// for a document serde_json refuses, serde_json's own error.
///
/// A document is read first by a reader of this module's own, which gives up, rather than
/// decide, wherever it is not sure to read as serde_json reads: at any error, an escaped
/// surrogate, or nesting deeper than 96 levels. Then serde_json reads the whole document.
/// A number the reader cannot make exactly as serde_json does is read by serde_json alone.
///
/// The reader saves serde's visitor calls and the regrowing of each object's and array's
/// vector: on a 421-byte order about 8% of the read, on a 1 MiB page of such orders about 40%.
///
/// ```
/// use kit_core::json::doc;
///
/// assert!(doc::parse(br#"{"a":[1,2.5,"x\n"]}"#).is_ok());
/// let error = doc::parse(b"{\"a\":1,}").unwrap_err();
/// assert_eq!(error.to_string(), serde_json::from_slice::<serde_json::Value>(b"{\"a\":1,}").unwrap_err().to_string());
/// ```
pub fn parse(json: &[u8]) -> Result<Node<'_>, serde_json::Error> {
    // Checked whole, once: string by string, the checks' calls cost the kit/raw bench's shape
    // assertion ten times as many instructions as one pass over its 420-byte bodies.
    match std::str::from_utf8(json) {
        Ok(text) => parse_str(text),
        // No JSON document holds bytes that are not UTF-8: serde_json says where.
        Err(_) => serde_json::from_slice(json),
    }
}

/// [`parse`] for text already known to be UTF-8: its strings are not checked again (on
/// GitHub's 4 MB OpenAPI document, checking them was a tenth of the load).
///
/// ```
/// use kit_core::json::doc;
///
/// let node = doc::parse_str(r#"{"name":"Zoë"}"#).unwrap();
/// assert_eq!(node.get("name").and_then(|n| n.as_str()), Some("Zoë"));
/// assert!(doc::parse_str("[1,]").is_err());
/// ```
pub fn parse_str(json: &str) -> Result<Node<'_>, serde_json::Error> {
    match Reader::new(json).document() {
        Some(node) => Ok(node),
        None => serde_json::from_str(json),
    }
}

/// The deepest nesting the reader takes on itself, below serde_json's limit of 128, so that
/// its recursion is bounded and deeper documents get serde_json's verdict.
const FAST_DEPTH: usize = 96;

/// The reader behind [`parse`]. Each method returns `None` to give the document up.
struct Reader<'a> {
    text: &'a str,
    at: usize,
    /// The members of the objects being read, innermost last: each object moves its own into
    /// a vector of the right size when it ends, so no vector grows as it is filled.
    members: Vec<(Cow<'a, str>, Node<'a>)>,
    /// The same for the items of arrays.
    items: Vec<Node<'a>>,
}

/// Room the reader's stacks start with, in members and in items: each stack is one allocation,
/// made for every document read, and a shape assertion reads every response it checks. Both
/// stay within 1 KiB (16 members of 56 bytes, 32 items of 32), the largest block glibc serves
/// from its per-thread cache. At 32 members (1 792 bytes) every read took glibc's slow path and
/// made it merge its fast bins first: about 1 200 more instructions in the allocator per
/// request of the kit/raw bench (callgrind, issue 9's forty-eighth stop). A larger document
/// grows the stacks once, as it would have past 32.
const STACK_MEMBERS: usize = 16;
const STACK_ITEMS: usize = 32;

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        Reader {
            text,
            at: 0,
            members: Vec::with_capacity(STACK_MEMBERS),
            items: Vec::with_capacity(STACK_ITEMS),
        }
    }

    /// The text's bytes, which the reader walks.
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn document(mut self) -> Option<Node<'a>> {
        let node = self.value(0)?;
        self.skip_whitespace();
        (self.at == self.bytes().len()).then_some(node)
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        self.skip_whitespace();
        let byte = *self.bytes().get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// A value inside `depth` arrays and objects.
    fn value(&mut self, depth: usize) -> Option<Node<'a>> {
        match self.next_token()? {
            b'"' => self.string().map(Node::Str),
            b'{' if depth < FAST_DEPTH => self.object(depth + 1),
            b'[' if depth < FAST_DEPTH => self.array(depth + 1),
            b't' => self.literal(b"rue", Node::Bool(true)),
            b'f' => self.literal(b"alse", Node::Bool(false)),
            b'n' => self.literal(b"ull", Node::Null),
            b'-' | b'0'..=b'9' => self.number(self.at - 1),
            _ => None,
        }
    }

    fn literal(&mut self, rest: &[u8], node: Node<'a>) -> Option<Node<'a>> {
        let end = self.at + rest.len();
        (self.bytes().get(self.at..end)? == rest).then(|| {
            self.at = end;
            node
        })
    }

    /// The members of an object whose `{` is read.
    fn object(&mut self, depth: usize) -> Option<Node<'a>> {
        let start = self.members.len();
        if self.closes(b'}') {
            return Some(Node::Object(Vec::new()));
        }
        loop {
            if self.next_token()? != b'"' {
                return None;
            }
            let name = self.string()?;
            if self.next_token()? != b':' {
                return None;
            }
            let value = self.value(depth)?;
            self.members.push((name, value));
            if self.ends_after_element(b'}')? {
                return Some(Node::Object(self.members.split_off(start)));
            }
        }
    }

    /// The items of an array whose `[` is read.
    fn array(&mut self, depth: usize) -> Option<Node<'a>> {
        let start = self.items.len();
        if self.closes(b']') {
            return Some(Node::Array(Vec::new()));
        }
        loop {
            let item = self.value(depth)?;
            self.items.push(item);
            if self.ends_after_element(b']')? {
                return Some(Node::Array(self.items.split_off(start)));
            }
        }
    }

    /// Whether the object or array just opened ends at once (its `close` is then read).
    fn closes(&mut self, close: u8) -> bool {
        self.skip_whitespace();
        let closes = self.bytes().get(self.at) == Some(&close);
        self.at += usize::from(closes);
        closes
    }

    /// After a member or an item: whether `close` ends the object or array (`Some(false)` at a
    /// comma, `None` at anything else).
    fn ends_after_element(&mut self, close: u8) -> Option<bool> {
        match self.next_token()? {
            b',' => Some(false),
            byte => (byte == close).then_some(true),
        }
    }

    /// A string whose opening quote is read: borrowed from the text when it has no escapes.
    /// Its bytes must be UTF-8 and hold no control character, as serde_json requires.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        let end = swar::next_special(self.bytes(), start);
        match *self.bytes().get(end)? {
            b'"' => {
                self.at = end + 1;
                self.text_at(start, end).map(Cow::Borrowed)
            }
            b'\\' => self.escaped(start, end).map(Cow::Owned),
            _ => None,
        }
    }

    /// The text from `start` to `end`. Both ends sit at ASCII bytes (a quote, a backslash,
    /// the end of an escape), so they are at character boundaries and nothing is checked.
    fn text_at(&self, start: usize, end: usize) -> Option<&'a str> {
        self.text.get(start..end)
    }

    /// The rest of a string from `start`, whose first escape is at `escape`.
    fn escaped(&mut self, start: usize, mut escape: usize) -> Option<String> {
        let mut text = String::with_capacity(escape - start + 16);
        let mut run = start;
        loop {
            // Runs end only at ASCII bytes, so each is UTF-8 if the whole string is.
            text.push_str(self.text_at(run, escape)?);
            match *self.bytes().get(escape)? {
                b'"' => {
                    self.at = escape + 1;
                    return Some(text);
                }
                b'\\' => {}
                _ => return None,
            }
            let (decoded, length) = match *self.bytes().get(escape + 1)? {
                // A surrogate is not a char: serde_json pairs them, or refuses, by rules of its
                // own.
                b'u' => (char::from_u32(string::hex4(self.bytes(), escape + 2)?)?, 6),
                byte => (string::short_escape(byte)?, 2),
            };
            text.push(decoded);
            run = escape + length;
            escape = swar::next_special(self.bytes(), run);
        }
    }

    /// A number from `start` (its first byte read), made as serde_json makes it: an integer
    /// of up to eighteen digits, and a number with a fraction or an exponent whose digits fit
    /// 53 bits and whose decimal exponent is at most 22 either way. serde_json (without its
    /// `float_roundtrip` feature) makes such a float with one multiplication or division by an
    /// exact power of ten, as here, so the bits are the same. Any other number is given to
    /// serde_json alone.
    fn number(&mut self, start: usize) -> Option<Node<'a>> {
        let bytes = self.bytes();
        let NumberToken {
            negative,
            integer,
            fraction,
            exponent,
            end,
        } = number::number(bytes, start)?;
        self.at = end;
        let integer = &bytes[integer];
        let fraction = &bytes[fraction];
        // Eighteen digits fit a u64, and an i64 when negated.
        if integer.len() + fraction.len() <= 18 {
            let significand = integer
                .iter()
                .chain(fraction)
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            if fraction.is_empty() && exponent.is_none() {
                if !negative {
                    return Some(Node::Number(significand.into()));
                }
                // serde_json reads `-0` as the float -0.0, which it is left to make.
                if significand != 0 {
                    return Some(Node::Number((-(significand as i64)).into()));
                }
            } else if significand < 1 << 53 {
                let written = match exponent {
                    None => 0,
                    Some((_, ref digits)) if digits.len() > 3 => i32::MAX,
                    Some((exponent_negative, digits)) => {
                        let written = bytes[digits]
                            .iter()
                            .fold(0i32, |n, d| n * 10 + i32::from(d - b'0'));
                        if exponent_negative { -written } else { written }
                    }
                };
                let decimal_exponent = written.saturating_sub(fraction.len() as i32);
                if let Some(&power) = POW10.get(decimal_exponent.unsigned_abs() as usize) {
                    // The same operations as serde_json's `f64_from_parts`, in its order.
                    let mut value = significand as f64;
                    if decimal_exponent >= 0 {
                        value *= power;
                    } else {
                        value /= power;
                    }
                    return Number::from_f64(if negative { -value } else { value }).map(Node::Number);
                }
            }
        }
        serde_json::from_slice(&bytes[start..end]).ok()
    }
}

/// The powers of ten an f64 holds exactly, the first entries of serde_json's own table.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

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

    /// A reader's first stacks are blocks glibc's per-thread cache serves (see
    /// [`STACK_MEMBERS`]): a member or a node grown larger would send every document read back
    /// to the allocator's slow path.
    #[test]
    fn the_readers_first_stacks_fit_in_a_kilobyte() {
        let reader = Reader::new("{}");
        let members = reader.members.capacity() * std::mem::size_of::<(Cow<'_, str>, Node<'_>)>();
        let items = reader.items.capacity() * std::mem::size_of::<Node<'_>>();
        assert!(members <= 1024, "{members} bytes of members");
        assert!(items <= 1024, "{items} bytes of items");
    }

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
    fn each_accessor_answers_for_its_own_kind_only() {
        let node = parse(br#"{"o":{"k":1},"a":[1,2],"s":"text","t":true,"f":false,"n":null,"i":7}"#).unwrap();
        let kinds = ["o", "a", "s", "t", "f", "n", "i"];
        let of = |name: &str| node.get(name).unwrap();
        let answers = |name: &str| {
            let n = of(name);
            (
                n.as_object().map(<[_]>::len),
                n.as_array().map(<[_]>::len),
                n.as_str(),
                n.as_bool(),
                n.is_object(),
            )
        };
        let expected = [
            (Some(1), None, None, None, true),
            (None, Some(2), None, None, false),
            (None, None, Some("text"), None, false),
            (None, None, None, Some(true), false),
            (None, None, None, Some(false), false),
            (None, None, None, None, false),
            (None, None, None, None, false),
        ];
        for (name, expected) in kinds.into_iter().zip(expected) {
            assert_eq!(answers(name), expected, "{name}");
        }
        assert_eq!(of("o").get("k").map(Node::to_value), Some(Value::from(1)));
        assert_eq!(of("a").get("k"), None, "an array has no members");
        assert_eq!(node.get("absent"), None);
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

    /// What the reader makes of `text`, checked against serde_json: a document it reads must
    /// read the same, to the last float bit and `Cow` aside; and [`parse`] always answers as
    /// serde_json does, error message included. Whether the reader read it.
    fn read_as_serde_json_reads(text: &[u8]) -> bool {
        let by_serde = serde_json::from_slice::<Node<'_>>(text);
        let parsed = parse(text);
        match (&parsed, &by_serde) {
            (Ok(ours), Ok(theirs)) => assert_eq!(format!("{ours:?}"), format!("{theirs:?}")),
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            _ => panic!(
                "{:?}: parse {parsed:?}, serde_json {by_serde:?}",
                String::from_utf8_lossy(text)
            ),
        }
        // Known text reads the same, without checking its strings; the reader reads only text.
        let Ok(known) = std::str::from_utf8(text) else {
            assert!(by_serde.is_err(), "serde_json read bytes that are not UTF-8");
            return false;
        };
        match (parse_str(known), &by_serde) {
            (Ok(ours), Ok(theirs)) => assert_eq!(format!("{ours:?}"), format!("{theirs:?}")),
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("{known:?}: parse_str {ours:?}, serde_json {theirs:?}"),
        }
        match Reader::new(known).document() {
            Some(node) => {
                let theirs = by_serde
                    .as_ref()
                    .expect("the reader took a document serde_json refuses");
                assert_eq!(format!("{node:?}"), format!("{theirs:?}"));
                true
            }
            None => false,
        }
    }

    #[test]
    fn the_reader_reads_numbers_as_serde_json_makes_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "19.99",
            "8.99",
            "0.1",
            "2.2250738585072011e-308",
            "1e308",
            "1e-400",
            "-0.0",
            "5e0",
            "5E+2",
            "5e-2",
            // Exponents too long to add up in an i32: left to serde_json, never overflowed.
            "1e-99999999999",
            "0e99999999999",
            "1e00000000000000000002",
        ] {
            assert!(read_as_serde_json_reads(text.as_bytes()), "{text}");
        }
        for refused in ["1e999", "-1e999", "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x1"] {
            assert!(!read_as_serde_json_reads(refused.as_bytes()), "{refused}");
            assert!(parse(refused.as_bytes()).is_err(), "{refused}");
        }
    }

    #[test]
    fn the_reader_decodes_escapes_and_leaves_surrogates_to_serde_json() {
        let read = br#"{"a\"b\\c\/d":"\b\f\n\r\t\u0041\u00e9\u20AC\u0000 ok"}"#;
        assert!(read_as_serde_json_reads(read));
        // A pair makes one char; a lone half is refused; serde_json decides both.
        for text in [&br#""\ud83d\ude00""#[..], br#""\ud83d""#, br#""\ude00x""#] {
            assert!(!read_as_serde_json_reads(text));
        }
        assert_eq!(
            parse(br#""\ud83d\ude00""#).unwrap(),
            Node::Str("\u{1f600}".into())
        );
        for refused in [
            &b"\"a\x01b\""[..],
            b"\"\xff\"",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"abc",
        ] {
            assert!(!read_as_serde_json_reads(refused));
            assert!(parse(refused).is_err());
        }
    }

    #[test]
    fn nesting_past_the_readers_depth_is_left_to_serde_json_and_its_limit() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(read_as_serde_json_reads(nested(FAST_DEPTH).as_bytes()));
        assert!(!read_as_serde_json_reads(nested(FAST_DEPTH + 1).as_bytes()));
        assert!(
            parse(nested(FAST_DEPTH + 1).as_bytes()).is_ok(),
            "within serde_json's limit"
        );
        let objects = format!(
            "{}1{}",
            r#"{"a":"#.repeat(FAST_DEPTH + 1),
            "}".repeat(FAST_DEPTH + 1)
        );
        assert!(!read_as_serde_json_reads(objects.as_bytes()));
        let deep = nested(10_000);
        assert!(!read_as_serde_json_reads(deep.as_bytes()));
        assert!(
            parse(deep.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("recursion limit")
        );
    }

    #[test]
    fn the_reader_takes_what_json_allows_around_tokens_and_nothing_else() {
        for text in [
            " \t\r\n{ \"a\" : [ 1 , true , false , null , { } , [ ] ] , \"a\" : \"x\" } \n",
            "[]",
            "{}",
            "\"\"",
            "true",
            "null",
        ] {
            assert!(read_as_serde_json_reads(text.as_bytes()), "{text:?}");
        }
        for refused in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:2}",
            "[1 2]",
            "{} x",
            "tru",
            "nul",
            "truex",
            "\u{feff}{}",
            "[\u{b}]",
            "{\"a\":1}}",
        ] {
            assert!(!read_as_serde_json_reads(refused.as_bytes()), "{refused:?}");
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn whitespace() -> impl Strategy<Value = &'static str> {
            prop_oneof![
                Just(""),
                Just(""),
                Just(" "),
                Just("\n  "),
                Just("\t"),
                Just("\r\n")
            ]
        }

        fn string() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                4 => "[^\"\\\\\u{0}-\u{1f}]{0,6}".prop_map(|s| s),
                1 => prop_oneof![
                    Just("\\\""), Just("\\\\"), Just("\\/"), Just("\\b"), Just("\\f"),
                    Just("\\n"), Just("\\r"), Just("\\t"),
                ].prop_map(str::to_owned),
                1 => (any::<u16>(), any::<bool>()).prop_map(|(code, upper)| {
                    if upper { format!("\\u{code:04X}") } else { format!("\\u{code:04x}") }
                }),
                1 => (0xd800u16..0xdc00, 0xdc00u16..0xe000)
                    .prop_map(|(high, low)| format!("\\u{high:04x}\\u{low:04x}")),
            ];
            proptest::collection::vec(piece, 0..5).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
        }

        fn number() -> impl Strategy<Value = String> {
            "-?(0|[1-9][0-9]{0,21})(\\.[0-9]{1,18})?([eE][+-]?[0-9]{1,3})?"
        }

        /// JSON text, whitespace and all, with what serde_json reads in ways of its own: long
        /// and negative-zero numbers, exponents out of range, escaped surrogates, repeated
        /// member names.
        fn document() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                Just("null".to_owned()),
                Just("true".to_owned()),
                Just("false".to_owned()),
                number(),
                string(),
            ];
            leaf.prop_recursive(5, 64, 6, |inner| {
                let spaced = (whitespace(), inner, whitespace())
                    .prop_map(|(a, v, b)| format!("{a}{v}{b}"))
                    .boxed();
                prop_oneof![
                    proptest::collection::vec(spaced.clone(), 0..6)
                        .prop_map(|items| format!("[{}]", items.join(","))),
                    proptest::collection::vec(
                        (prop_oneof!["\"[a-c]\"", string()], whitespace(), spaced),
                        0..6
                    )
                    .prop_map(|members| {
                        let members: Vec<String> = members
                            .into_iter()
                            .map(|(name, space, value)| format!("{name}{space}:{value}"))
                            .collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
        }

        /// Whether serde_json reads `text` by a rule the reader leaves to it.
        fn needs_serde_json(text: &str) -> bool {
            let bytes = text.as_bytes();
            bytes.windows(3).any(|w| {
                w[0] == b'u'
                    && w[1].eq_ignore_ascii_case(&b'd')
                    && matches!(w[2].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2_000))]

            #[test]
            fn the_reader_reads_every_document_as_serde_json_does(text in document()) {
                let read = read_as_serde_json_reads(text.as_bytes());
                if serde_json::from_str::<Node<'_>>(&text).is_ok() && !needs_serde_json(&text) {
                    prop_assert!(read, "the reader gave up on {text:?}");
                }
            }

            #[test]
            fn the_reader_makes_a_float_to_the_bit_as_serde_json_does(
                number in "-?(0|[1-9][0-9]{0,17})(\\.[0-9]{1,17})?([eE][+-]?[0-9]{1,2})?",
            ) {
                // Read alone and as a member; the reader must not give such a number up.
                prop_assert!(read_as_serde_json_reads(number.as_bytes()), "gave up {number}");
                read_as_serde_json_reads(format!("{{\"n\":[{number},{number}]}}").as_bytes());
            }

            #[test]
            fn a_damaged_document_reads_as_serde_json_reads_it(
                text in document(),
                edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(
                    &[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'-', b'e', b'.', b'u', 0x01, 0xff, 0xc3, b' '][..],
                )), 1..4),
            ) {
                let mut bytes = text.into_bytes();
                for (at, edit, byte) in edits {
                    let at = at.index(bytes.len() + 1);
                    match edit {
                        0 if at < bytes.len() => { bytes.remove(at); }
                        1 => bytes.insert(at, byte),
                        _ if at < bytes.len() => bytes[at] = byte,
                        _ => bytes.truncate(at),
                    }
                }
                read_as_serde_json_reads(&bytes);
            }
                    /// Objects small and large, dense in repeated names: the members come as
            /// serde_json's ordered map holds them, and a member is found as it finds it.
            #[test]
            fn distinct_members_are_serde_json_s_map(
                names in proptest::collection::vec(0u8..40, 0..40),
                small in proptest::bool::ANY,
            ) {
                let names: Vec<String> = names
                    .iter()
                    .map(|n| format!("k{}", if small { n % 6 } else { *n }))
                    .collect();
                let text = format!(
                    "{{{}}}",
                    names.iter().enumerate().map(|(i, n)| format!("\"{n}\":{i}")).collect::<Vec<_>>().join(",")
                );
                let node = parse(text.as_bytes()).unwrap();
                let members = node.as_object().unwrap();
                let value: Value = serde_json::from_str(&text).unwrap();
                let map = value.as_object().unwrap();
                let ours: Vec<(&str, Value)> = distinct(members).map(|(n, v)| (n, v.to_value())).collect();
                let theirs: Vec<(&str, Value)> = map.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
                prop_assert_eq!(ours, theirs);
                let index = MemberIndex::new(members);
                for name in names.iter().map(String::as_str).chain(["absent"]) {
                    prop_assert_eq!(node.get(name).map(Node::to_value), map.get(name).cloned());
                    prop_assert_eq!(index.get(members, name).map(|(_, v)| v.to_value()), map.get(name).cloned());
                }
            }
        }
    }
}
