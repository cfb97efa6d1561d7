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
    each_field(body, |field| {
        if !fields.contains(field) {
            fields.insert(field.to_owned());
        }
    });
    fields
}

/// Calls `visit` with the path of every member of `body`, as [`body_fields`] reads them, once
/// per occurrence: each path is lent from one buffer, so a caller that holds it already
/// allocates nothing.
pub(crate) fn each_field(body: &str, mut visit: impl FnMut(&str)) {
    let mut path = String::from("$");
    let mut deserializer = serde_json::Deserializer::from_str(body);
    // An error only ends the reading: what was read before it stays.
    let _ = Walk {
        path: &mut path,
        visit: &mut visit,
    }
    .deserialize(&mut deserializer);
}

struct Walk<'a, F> {
    path: &'a mut String,
    visit: &'a mut F,
}

impl<'de, F: FnMut(&str)> DeserializeSeed<'de> for Walk<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(&str)> Visitor<'de> for Walk<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let len = self.path.len();
        while map.next_key_seed(Member(self.path))?.is_some() {
            (self.visit)(self.path);
            let walked = map.next_value_seed(Walk {
                path: self.path,
                visit: self.visit,
            });
            self.path.truncate(len);
            walked?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let len = self.path.len();
        self.path.push_str("[]");
        let walked = (|| {
            while seq
                .next_element_seed(Walk {
                    path: self.path,
                    visit: self.visit,
                })?
                .is_some()
            {}
            Ok(())
        })();
        self.path.truncate(len);
        walked
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

/// A member name, pushed onto the path as it is read: serde's `Cow<str>` would allocate every
/// name, although a name without escapes can be read in place.
struct Member<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<(), E> {
        push_member(self.0, name);
        Ok(())
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

    #[test]
    fn ten_thousand_deep_nesting_stops_without_overflowing_the_stack() {
        let deep = "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000);
        let found = fields(&deep);
        assert!(!found.is_empty() && found.len() < 200, "{}", found.len());
    }
}
