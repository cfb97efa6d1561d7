//! Whether a shape serializes to a JSON tree already known, found by walking the tree as the
//! shape serializes, without writing any text.
//!
//! An assertion keeps its thread's last shape (its text and tree) because tests assert the
//! same shape request after request. Telling that the next shape is that one by serializing it
//! and comparing the text cost as much as matching the body; walking the kept tree in step
//! with the serializer costs a fraction. The walk says "the same" only when `serde_json` would
//! write the same text: for anything whose text could differ from its tree (`f32`s, byte
//! strings, 128-bit integers, map keys that are not strings, raw values), it says "differs",
//! and the caller serializes the shape as before.

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::Value;
use serde_json::map::Iter;

/// Whether `shape` serializes (with `serde_json`, keeping map order) to the tree `expected`.
pub(crate) fn serializes_to<S: Serialize + ?Sized>(shape: &S, expected: &Value) -> bool {
    shape.serialize(SameAs { expected }).is_ok()
}

/// The walk's only error: the shape is not the tree (or might not write the same text).
#[derive(Debug)]
pub(crate) struct Differs;

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the shape differs from the last one")
    }
}

impl std::error::Error for Differs {}

impl ser::Error for Differs {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Differs
    }
}

fn same(yes: bool) -> Result<(), Differs> {
    if yes { Ok(()) } else { Err(Differs) }
}

/// Narrow integers are written as the wide ones they convert to.
macro_rules! widened {
    ($($method:ident($narrow:ty) => $wide_method:ident($wide:ty);)*) => {$(
        fn $method(self, v: $narrow) -> Result<(), Differs> {
            self.$wide_method(<$wide>::from(v))
        }
    )*};
}

/// Serializes into a comparison with `expected`.
struct SameAs<'a> {
    expected: &'a Value,
}

impl<'a> SameAs<'a> {
    /// The tree under `variant` in `{ variant: tree }`, which is how an enum variant with data
    /// serializes.
    fn variant(&self, variant: &str) -> Result<&'a Value, Differs> {
        match self.expected {
            Value::Object(map) if map.len() == 1 => map.get(variant).ok_or(Differs),
            _ => Err(Differs),
        }
    }
}

/// Walks an array's elements in step.
struct Elements<'a> {
    rest: std::slice::Iter<'a, Value>,
}

impl<'a> Elements<'a> {
    fn of(expected: &'a Value) -> Result<Self, Differs> {
        match expected {
            Value::Array(items) => Ok(Elements { rest: items.iter() }),
            _ => Err(Differs),
        }
    }

    fn next<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Differs> {
        let expected = self.rest.next().ok_or(Differs)?;
        value.serialize(SameAs { expected })
    }

    fn end(mut self) -> Result<(), Differs> {
        same(self.rest.next().is_none())
    }
}

/// Walks an object's members in step, in order.
struct Members<'a> {
    rest: Iter<'a>,
    /// The value of the member whose name came last.
    value: Option<&'a Value>,
}

impl<'a> Members<'a> {
    fn of(expected: &'a Value) -> Result<Self, Differs> {
        match expected {
            Value::Object(map) => Ok(Members {
                rest: map.iter(),
                value: None,
            }),
            _ => Err(Differs),
        }
    }

    fn name<T: Serialize + ?Sized>(&mut self, name: &T) -> Result<(), Differs> {
        let (expected, value) = self.rest.next().ok_or(Differs)?;
        name.serialize(NameIs { expected })?;
        self.value = Some(value);
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Differs> {
        let expected = self.value.take().ok_or(Differs)?;
        value.serialize(SameAs { expected })
    }

    fn end(mut self) -> Result<(), Differs> {
        same(self.rest.next().is_none() && self.value.is_none())
    }
}

impl<'a> ser::Serializer for SameAs<'a> {
    type Ok = ();
    type Error = Differs;
    type SerializeSeq = Elements<'a>;
    type SerializeTuple = Elements<'a>;
    type SerializeTupleStruct = Elements<'a>;
    type SerializeTupleVariant = Elements<'a>;
    type SerializeMap = Members<'a>;
    type SerializeStruct = Members<'a>;
    type SerializeStructVariant = Members<'a>;

    widened! {
        serialize_i8(i8) => serialize_i64(i64);
        serialize_i16(i16) => serialize_i64(i64);
        serialize_i32(i32) => serialize_i64(i64);
        serialize_u8(u8) => serialize_u64(u64);
        serialize_u16(u16) => serialize_u64(u64);
        serialize_u32(u32) => serialize_u64(u64);
    }

    fn serialize_bool(self, v: bool) -> Result<(), Differs> {
        same(self.expected.as_bool() == Some(v))
    }

    fn serialize_i64(self, v: i64) -> Result<(), Differs> {
        same(matches!(self.expected, Value::Number(n) if !n.is_f64() && n.as_i64() == Some(v)))
    }

    fn serialize_u64(self, v: u64) -> Result<(), Differs> {
        same(matches!(self.expected, Value::Number(n) if !n.is_f64() && n.as_u64() == Some(v)))
    }

    fn serialize_f32(self, _: f32) -> Result<(), Differs> {
        // Written with f32's shortest digits, kept as an f64: text and tree can disagree.
        Err(Differs)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Differs> {
        if !v.is_finite() {
            // Written as `null`.
            return same(self.expected.is_null());
        }
        same(matches!(self.expected, Value::Number(n)
            if n.is_f64() && n.as_f64().is_some_and(|e| e.to_bits() == v.to_bits())))
    }

    fn serialize_char(self, v: char) -> Result<(), Differs> {
        let mut buf = [0u8; 4];
        self.serialize_str(v.encode_utf8(&mut buf))
    }

    fn serialize_str(self, v: &str) -> Result<(), Differs> {
        same(self.expected.as_str() == Some(v))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), Differs> {
        Err(Differs)
    }

    fn serialize_none(self) -> Result<(), Differs> {
        same(self.expected.is_null())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Differs> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Differs> {
        same(self.expected.is_null())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Differs> {
        same(self.expected.is_null())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Differs> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Differs> {
        // serde_json's own tokens (raw values, arbitrary-precision numbers) are written as text.
        if name.starts_with("$serde_json") {
            return Err(Differs);
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Differs> {
        let expected = self.variant(variant)?;
        value.serialize(SameAs { expected })
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Elements<'a>, Differs> {
        Elements::of(self.expected)
    }

    fn serialize_tuple(self, _: usize) -> Result<Elements<'a>, Differs> {
        Elements::of(self.expected)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Elements<'a>, Differs> {
        Elements::of(self.expected)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Elements<'a>, Differs> {
        Elements::of(self.variant(variant)?)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Members<'a>, Differs> {
        Members::of(self.expected)
    }

    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Members<'a>, Differs> {
        if name.starts_with("$serde_json") {
            return Err(Differs);
        }
        Members::of(self.expected)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Members<'a>, Differs> {
        Members::of(self.variant(variant)?)
    }
}

/// The four ways of serializing a sequence walk the expected array alike.
macro_rules! walk_elements {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Elements<'_> {
            type Ok = ();
            type Error = Differs;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Differs> {
                self.next(value)
            }

            fn end(self) -> Result<(), Differs> {
                Elements::end(self)
            }
        }
    )*};
}

walk_elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Members<'_> {
    type Ok = ();
    type Error = Differs;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Differs> {
        self.name(key)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Differs> {
        self.value(value)
    }

    fn end(self) -> Result<(), Differs> {
        Members::end(self)
    }
}

/// A struct and a struct variant walk the expected object alike.
macro_rules! walk_fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Members<'_> {
            type Ok = ();
            type Error = Differs;

            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Differs> {
                self.name(key)?;
                self.value(value)
            }

            fn end(self) -> Result<(), Differs> {
                Members::end(self)
            }
        }
    )*};
}

walk_fields!(SerializeStruct, SerializeStructVariant);

/// Compares a member name with `expected`: only a string name is taken (serde_json writes
/// other keys, numbers and booleans, as text of its own making).
struct NameIs<'a> {
    expected: &'a str,
}

macro_rules! names_are_strings_only {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Differs> {
            Err(Differs)
        })*
    };
}

impl ser::Serializer for NameIs<'_> {
    type Ok = ();
    type Error = Differs;
    type SerializeSeq = Impossible<(), Differs>;
    type SerializeTuple = Impossible<(), Differs>;
    type SerializeTupleStruct = Impossible<(), Differs>;
    type SerializeTupleVariant = Impossible<(), Differs>;
    type SerializeMap = Impossible<(), Differs>;
    type SerializeStruct = Impossible<(), Differs>;
    type SerializeStructVariant = Impossible<(), Differs>;

    fn serialize_str(self, v: &str) -> Result<(), Differs> {
        same(self.expected == v)
    }

    names_are_strings_only! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Differs> {
        Err(Differs)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Result<(), Differs> {
        Err(Differs)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Differs> {
        Err(Differs)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Differs> {
        Err(Differs)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Differs> {
        Err(Differs)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Differs> {
        Err(Differs)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Differs> {
        Err(Differs)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Differs> {
        Err(Differs)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Differs> {
        Err(Differs)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Differs> {
        Err(Differs)
    }
}

#[cfg(test)]
mod tests {
    use super::serializes_to;
    use serde::Serialize;
    use serde_json::{Value, json};

    /// The tree a shape's text parses to, as the assertion keeps it.
    fn kept<S: Serialize>(shape: &S) -> Value {
        serde_json::from_str(&serde_json::to_string(shape).unwrap()).unwrap()
    }

    #[derive(Serialize)]
    #[allow(dead_code)]
    enum Kind {
        Plain,
        Wrapped(u8),
        Pair(u8, String),
        Named { a: i32, b: Option<f64> },
    }

    #[derive(Serialize)]
    struct Item {
        id: i64,
        tags: Vec<&'static str>,
        kind: Kind,
        price: f64,
        note: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        hidden: Option<u8>,
    }

    fn item(kind: Kind) -> Item {
        Item {
            id: -3,
            tags: vec!["a", "b"],
            kind,
            price: 19.99,
            note: None,
            hidden: None,
        }
    }

    #[test]
    fn a_shape_is_its_own_kept_tree() {
        let shapes = [
            json!({"a": 1, "b": [true, "x", null, -2, 1.5, 18446744073709551615u64], "c": {"d": {}}}),
            json!([]),
            json!("text"),
            json!({"$kit:matcher": {"kind": "greater_than", "value": 0}}),
            json!(0.0),
            json!(-0.0),
            json!(1e300),
        ];
        for shape in &shapes {
            assert!(serializes_to(shape, &kept(shape)), "{shape}");
        }
        for kind in [
            Kind::Plain,
            Kind::Wrapped(7),
            Kind::Pair(1, "x".into()),
            Kind::Named { a: 1, b: Some(2.5) },
        ] {
            let shape = item(kind);
            assert!(serializes_to(&shape, &kept(&shape)));
        }
        assert!(serializes_to(&(1u8, 'c', ()), &kept(&(1u8, 'c', ()))));
    }

    /// Whatever differs in the text differs in the walk: a value, a type, a name, an order, a
    /// length; and shapes whose text could differ from their tree are never taken as the same.
    #[test]
    fn a_shape_written_otherwise_differs() {
        let base = json!({"a": 1, "b": [true, "x"], "c": 2.0});
        let tree = kept(&base);
        for other in [
            json!({"a": 2, "b": [true, "x"], "c": 2.0}),
            json!({"a": 1.0, "b": [true, "x"], "c": 2.0}),
            json!({"a": "1", "b": [true, "x"], "c": 2.0}),
            json!({"a": 1, "b": [true, "x"], "c": 2}),
            json!({"a": 1, "b": [true], "c": 2.0}),
            json!({"a": 1, "b": [true, "x", "y"], "c": 2.0}),
            json!({"b": [true, "x"], "a": 1, "c": 2.0}),
            json!({"a": 1, "b": [true, "x"]}),
            json!({"a": 1, "b": [true, "x"], "c": 2.0, "d": null}),
            json!({"a": 1, "B": [true, "x"], "c": 2.0}),
            json!([1, [true, "x"], 2.0]),
        ] {
            assert!(!serializes_to(&other, &tree), "{other}");
        }
        assert!(!serializes_to(&json!(-0.0), &kept(&json!(0.0))));
        assert!(!serializes_to(
            &item(Kind::Wrapped(7)),
            &kept(&item(Kind::Wrapped(8)))
        ));
        assert!(!serializes_to(&item(Kind::Plain), &kept(&item(Kind::Wrapped(0)))));
        // Text and tree can disagree for these: never the same.
        assert!(!serializes_to(&0.1f32, &kept(&0.1f32)));
        assert!(!serializes_to(&1u128, &kept(&1u64)));
        let numbered: std::collections::BTreeMap<u8, u8> = [(1, 2)].into();
        assert!(!serializes_to(&numbered, &kept(&numbered)));
        assert!(!serializes_to(&serde_bytes_like(), &kept(&serde_bytes_like())));
    }

    /// Each kind of value the serializer can meet, against a tree that differs from it in
    /// that value alone. A walk that took one for the same would assert the last shape's text
    /// instead of this one.
    #[test]
    fn every_kind_of_value_is_compared_not_assumed() {
        use std::collections::BTreeMap;
        #[derive(Serialize)]
        struct Unit;
        #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
        struct Newtype(u8);
        #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
        enum Key {
            Named(u8),
        }
        let some_key: BTreeMap<Option<&str>, u8> = [(Some("a"), 1)].into();
        let newtype_key: BTreeMap<Newtype, u8> = [(Newtype(1), 1)].into();
        let variant_key: BTreeMap<Key, u8> = [(Key::Named(1), 1)].into();
        let differing: [(&dyn erased::Shape, Value); 12] = [
            (&json!([true]), json!([false])),
            (&-4i64, json!(-3)),
            (&'d', json!("c")),
            (&None::<u8>, json!(0)),
            (&Some(1u8), json!(2)),
            (&(), json!(1)),
            (&Unit, json!(1)),
            (&Newtype(1), json!(2)),
            // A variant's tree is an object of that one member.
            (&Kind::Wrapped(7), json!({"Wrapped": 7, "x": 1})),
            // Names of other types than strings are never taken, whatever they would write.
            (&some_key, json!({"b": 1})),
            (&newtype_key, json!({"2": 1})),
            (&variant_key, json!({"Other": 1})),
        ];
        for (shape, tree) in differing {
            assert!(!shape.same_as(&tree), "{tree}");
        }
        // And each, against its own tree, is the same (where serde_json writes it from one).
        assert!(serializes_to(&[false], &json!([false])));
        assert!(serializes_to(&-3i64, &json!(-3)));
        assert!(serializes_to(&'c', &json!("c")));
        assert!(serializes_to(&None::<u8>, &json!(null)));
        assert!(serializes_to(&Some(2u8), &json!(2)));
        assert!(serializes_to(&(), &json!(null)));
        assert!(serializes_to(&Unit, &json!(null)));
        assert!(serializes_to(&Newtype(2), &json!(2)));
    }

    /// Shapes of different types in one list.
    mod erased {
        pub(super) trait Shape {
            fn same_as(&self, tree: &serde_json::Value) -> bool;
        }

        impl<T: serde::Serialize> Shape for T {
            fn same_as(&self, tree: &serde_json::Value) -> bool {
                super::serializes_to(self, tree)
            }
        }
    }

    /// Bytes serialized as bytes (what `serde_bytes` does).
    fn serde_bytes_like() -> impl Serialize {
        struct Bytes;
        impl Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(b"ab")
            }
        }
        Bytes
    }
}
