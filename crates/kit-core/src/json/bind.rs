//! Binding a document to a type, member names compared without case by default.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

/// Deserializes `T` from `value` without cloning it. With `case_sensitive` false (the kit's
/// default for reads), an object member whose name differs from a struct field only in case
/// (`Quantity` for `quantity`) binds to that field, at any depth. An exact spelling wins when
/// both are present.
///
/// ```
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Deserialize, Debug, PartialEq)]
/// struct Order { id: u64, lines: Vec<Line> }
/// #[derive(Deserialize, Debug, PartialEq)]
/// struct Line { sku: String }
///
/// let doc = json!({ "ID": 7, "Lines": [ { "SKU": "A-1" } ] });
/// let order: Order = kit_core::json::bind(&doc, false).unwrap();
/// assert_eq!(order, Order { id: 7, lines: vec![Line { sku: "A-1".into() }] });
/// assert!(kit_core::json::bind::<Order>(&doc, true).is_err());
/// ```
pub fn bind<T: DeserializeOwned>(value: &Value, case_sensitive: bool) -> Result<T, serde_json::Error> {
    if case_sensitive {
        T::deserialize(value)
    } else {
        T::deserialize(Loose(value))
    }
}

struct Loose<'a>(&'a Value);

impl<'de> Deserializer<'de> for Loose<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_u64() {
                    visitor.visit_u64(i)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(LooseSeq(items.iter())),
            Value::Object(map) => visitor.visit_map(LooseMap::new(map, None)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(LooseMap::new(map, Some(fields))),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // Variant payloads bind as serde_json binds them (case-sensitively).
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_bytes(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_byte_buf(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct LooseSeq<'de>(std::slice::Iter<'de, Value>);

impl<'de> SeqAccess<'de> for LooseSeq<'de> {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next().map(|v| seed.deserialize(Loose(v))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct LooseMap<'de> {
    entries: serde_json::map::Iter<'de>,
    map: &'de Map<String, Value>,
    fields: Option<&'static [&'static str]>,
    value: Option<&'de Value>,
}

impl<'de> LooseMap<'de> {
    fn new(map: &'de Map<String, Value>, fields: Option<&'static [&'static str]>) -> Self {
        LooseMap {
            entries: map.iter(),
            map,
            fields,
            value: None,
        }
    }

    /// The field `key` binds to: itself, or the field spelt like it but for case, unless the
    /// document also has that field's exact spelling.
    fn rename(&self, key: &'de str) -> &'de str {
        let Some(fields) = self.fields else { return key };
        if fields.contains(&key) {
            return key;
        }
        match fields.iter().find(|f| same_name_in_any_case(f, key)) {
            Some(field) if !self.map.contains_key(*field) => field,
            _ => key,
        }
    }
}

impl<'de> MapAccess<'de> for LooseMap<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let name = self.rename(key);
        seed.deserialize(BorrowedStrDeserializer::<serde_json::Error>::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(Loose(value)),
            None => Err(de::Error::custom("a map value was asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// Whether two member names are the same but for case: ASCII first, then Unicode's lower case
/// (`Straße` and `STRASSE` are not; `ÉTÉ` and `été` are). Shapes and binding both find names so.
pub(crate) fn same_name_in_any_case(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Order {
        order_id: u64,
        total: f64,
        note: Option<String>,
        tags: Vec<String>,
        status: Status,
        #[serde(default)]
        missing: Option<u8>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        Placed,
    }

    #[test]
    fn every_kind_of_value_binds_and_names_ignore_case() {
        let doc = json!({ "ORDERID": 7, "Total": 12.5, "note": null, "TAGS": ["a"], "Status": "placed", "extra": {"x": 1} });
        let order: Order = bind(&doc, false).unwrap();
        assert_eq!(
            order,
            Order {
                order_id: 7,
                total: 12.5,
                note: None,
                tags: vec!["a".into()],
                status: Status::Placed,
                missing: None
            }
        );
    }

    #[test]
    fn an_exact_spelling_wins_over_another_case() {
        #[derive(Deserialize, Debug)]
        struct One {
            id: u8,
        }
        let one: One = bind(&json!({ "ID": 1, "id": 2 }), false).unwrap();
        assert_eq!(one.id, 2);
    }

    #[test]
    fn a_wrong_type_is_serde_jsons_error() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct One {
            id: u8,
        }
        let err = bind::<One>(&json!({ "id": "seven" }), false)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "invalid type: string \"seven\", expected u8");
    }
}
