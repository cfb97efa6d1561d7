//! Matchers for shapes: values that match a set of values rather than one.
//!
//! Each is usable anywhere inside `json!`, where it stands for "any value such that …":
//!
//! ```
//! use kit_core::json::json_value;
//! use serde_json::json;
//!
//! let shape = json!({
//!     "id": json_value::uuid(),
//!     "quantity": json_value::between(1, 10),
//!     "sku": json_value::matches("^[A-Z]-[0-9]+$"),
//!     "placed_at": json_value::date_time(),
//!     "tags": json_value::array_containing(["gift"]),
//!     "lines": json_value::each(json!({ "sku": json_value::any_string() })),
//!     "discount": json_value::absent(),
//!     "status": json_value::not(json_value::one_of(["cancelled", "refunded"])),
//! });
//! # let _ = shape;
//! ```
//!
//! | matcher | matches |
//! | --- | --- |
//! | `not_null()` | any value but `null` |
//! | `greater_than(n)`, `greater_or_equal(n)`, `less_than(n)`, `less_or_equal(n)` | a number so compared to `n` |
//! | `between(lo, hi)` | a number with `lo ≤ x ≤ hi` |
//! | `any_string()`, `any_number()`, `any_bool()`, `any_array()`, `any_object()` | any value of that type |
//! | `matches(regex)` | a string the regex finds a match in (anchor with `^…$` for all of it) |
//! | `one_of([..])` | a value equal to one of the list (numbers by value: `1` equals `1.0`) |
//! | `string_containing(s)` | a string containing `s` |
//! | `uuid()` | a string in the hyphenated UUID form (`8-4-4-4-12` hex digits) |
//! | `date_time()` | an RFC 3339 date-time string (`2026-11-22T10:00:00Z`, with an offset or `Z`) |
//! | `len(n)`, `len_between(lo, hi)` | a string (in characters), array or object of that length |
//! | `array_containing([..])` | an array in which every listed shape matches some element, each a different one, in any order |
//! | `each(shape)` | an array whose every element matches `shape` |
//! | `absent()` | an object member that is not there (only as a member's value) |
//! | `not(m)` | anything `m` does not match (`not(absent())`: a member that is there) |

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

/// The key that marks an object as a matcher inside a shape.
pub const MATCHER_KEY: &str = "$kit:matcher";

/// A matcher: put it in a shape where a value would go. Serializes to
/// `{"$kit:matcher": {…}}`, so it travels inside `json!` and any `Serialize` shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Matcher(pub(crate) MatcherKind);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum MatcherKind {
    NotNull,
    GreaterThan { value: Number },
    GreaterOrEqual { value: Number },
    LessThan { value: Number },
    LessOrEqual { value: Number },
    Between { low: Number, high: Number },
    AnyString,
    AnyNumber,
    AnyBool,
    AnyArray,
    AnyObject,
    Matches { pattern: String },
    OneOf { values: Vec<Value> },
    StringContaining { text: String },
    Uuid,
    DateTime,
    Len { len: usize },
    LenBetween { low: usize, high: usize },
    ArrayContaining { items: Vec<Value> },
    Each { shape: Value },
    Absent,
    Not { matcher: Box<MatcherKind> },
}

impl Serialize for Matcher {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(MATCHER_KEY, &self.0)?;
        map.end()
    }
}

impl From<Matcher> for Value {
    fn from(m: Matcher) -> Value {
        let mut map = serde_json::Map::new();
        map.insert(
            MATCHER_KEY.to_owned(),
            serde_json::to_value(&m.0).unwrap_or(Value::Null),
        );
        Value::Object(map)
    }
}

impl Matcher {
    /// The matcher a shape value stands for, if it is one.
    pub(crate) fn from_shape(value: &Value) -> Option<Result<MatcherKind, String>> {
        Self::marker(value).map(Self::parse)
    }

    /// The `$kit:matcher` value of a shape value that is a matcher.
    pub(crate) fn marker(value: &Value) -> Option<&Value> {
        let map = value.as_object()?;
        if map.len() != 1 {
            return None;
        }
        // The one member, compared: a keyed lookup hashes the name first, and the walk asks
        // this of every object in the shape.
        let (name, inner) = map.iter().next()?;
        (name == MATCHER_KEY).then_some(inner)
    }

    /// Parses a `$kit:matcher` value (straight from the tree: no copy of it first).
    pub(crate) fn parse(inner: &Value) -> Result<MatcherKind, String> {
        MatcherKind::deserialize(inner).map_err(|e| format!("a damaged matcher in the shape: {e}"))
    }
}

/// A number for a matcher: any integer or float.
pub trait IntoNumber {
    /// The number.
    fn into_number(self) -> Number;
}

macro_rules! into_number {
    ($($t:ty),*) => {$(
        impl IntoNumber for $t {
            fn into_number(self) -> Number {
                Number::from(self)
            }
        }
    )*};
}
into_number!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl IntoNumber for f64 {
    fn into_number(self) -> Number {
        // NaN and infinities compare with nothing; zero keeps a matcher well-formed.
        Number::from_f64(self).unwrap_or_else(|| Number::from(0))
    }
}

impl IntoNumber for f32 {
    fn into_number(self) -> Number {
        f64::from(self).into_number()
    }
}

fn values<T: Serialize>(items: impl IntoIterator<Item = T>) -> Vec<Value> {
    items
        .into_iter()
        .map(|v| serde_json::to_value(v).unwrap_or(Value::Null))
        .collect()
}

/// The matchers, named as they read in a shape: `json_value::greater_than(0)`.
pub mod json_value {
    use super::*;

    /// Any value but `null` (the member must be present).
    pub fn not_null() -> Matcher {
        Matcher(MatcherKind::NotNull)
    }

    /// A number greater than `n`.
    pub fn greater_than(n: impl IntoNumber) -> Matcher {
        Matcher(MatcherKind::GreaterThan {
            value: n.into_number(),
        })
    }

    /// A number greater than or equal to `n`.
    pub fn greater_or_equal(n: impl IntoNumber) -> Matcher {
        Matcher(MatcherKind::GreaterOrEqual {
            value: n.into_number(),
        })
    }

    /// A number less than `n`.
    pub fn less_than(n: impl IntoNumber) -> Matcher {
        Matcher(MatcherKind::LessThan {
            value: n.into_number(),
        })
    }

    /// A number less than or equal to `n`.
    pub fn less_or_equal(n: impl IntoNumber) -> Matcher {
        Matcher(MatcherKind::LessOrEqual {
            value: n.into_number(),
        })
    }

    /// A number from `low` to `high`, both included.
    pub fn between(low: impl IntoNumber, high: impl IntoNumber) -> Matcher {
        Matcher(MatcherKind::Between {
            low: low.into_number(),
            high: high.into_number(),
        })
    }

    /// Any string.
    pub fn any_string() -> Matcher {
        Matcher(MatcherKind::AnyString)
    }

    /// Any number.
    pub fn any_number() -> Matcher {
        Matcher(MatcherKind::AnyNumber)
    }

    /// `true` or `false`.
    pub fn any_bool() -> Matcher {
        Matcher(MatcherKind::AnyBool)
    }

    /// Any array.
    pub fn any_array() -> Matcher {
        Matcher(MatcherKind::AnyArray)
    }

    /// Any object.
    pub fn any_object() -> Matcher {
        Matcher(MatcherKind::AnyObject)
    }

    /// A string in which `regex` finds a match. An invalid regex is a mismatch saying why.
    pub fn matches(regex: &str) -> Matcher {
        Matcher(MatcherKind::Matches {
            pattern: regex.to_owned(),
        })
    }

    /// A value equal to one of `values`.
    pub fn one_of<T: Serialize>(values: impl IntoIterator<Item = T>) -> Matcher {
        Matcher(MatcherKind::OneOf {
            values: super::values(values),
        })
    }

    /// A string containing `text`.
    pub fn string_containing(text: &str) -> Matcher {
        Matcher(MatcherKind::StringContaining {
            text: text.to_owned(),
        })
    }

    /// A string in the hyphenated UUID form.
    pub fn uuid() -> Matcher {
        Matcher(MatcherKind::Uuid)
    }

    /// An RFC 3339 date-time string.
    pub fn date_time() -> Matcher {
        Matcher(MatcherKind::DateTime)
    }

    /// A string of `n` characters, or an array or object of `n` items.
    pub fn len(n: usize) -> Matcher {
        Matcher(MatcherKind::Len { len: n })
    }

    /// A string, array or object of `low` to `high` items, both included.
    pub fn len_between(low: usize, high: usize) -> Matcher {
        Matcher(MatcherKind::LenBetween { low, high })
    }

    /// An array in which every item of `items` (a value or shape) matches a different
    /// element, in any order.
    pub fn array_containing<T: Serialize>(items: impl IntoIterator<Item = T>) -> Matcher {
        Matcher(MatcherKind::ArrayContaining {
            items: super::values(items),
        })
    }

    /// An array whose every element matches `shape`.
    pub fn each(shape: impl Serialize) -> Matcher {
        Matcher(MatcherKind::Each {
            shape: serde_json::to_value(shape).unwrap_or(Value::Null),
        })
    }

    /// A member that must not be there.
    pub fn absent() -> Matcher {
        Matcher(MatcherKind::Absent)
    }

    /// Anything `matcher` does not match.
    pub fn not(matcher: Matcher) -> Matcher {
        Matcher(MatcherKind::Not {
            matcher: Box::new(matcher.0),
        })
    }
}

impl MatcherKind {
    /// How the matcher reads in a message: `greater than 0`, `a UUID`, …
    pub(crate) fn describe(&self) -> String {
        match self {
            MatcherKind::NotNull => "not null".into(),
            MatcherKind::GreaterThan { value } => format!("greater than {value}"),
            MatcherKind::GreaterOrEqual { value } => format!("greater than or equal to {value}"),
            MatcherKind::LessThan { value } => format!("less than {value}"),
            MatcherKind::LessOrEqual { value } => format!("less than or equal to {value}"),
            MatcherKind::Between { low, high } => format!("between {low} and {high}"),
            MatcherKind::AnyString => "any string".into(),
            MatcherKind::AnyNumber => "any number".into(),
            MatcherKind::AnyBool => "any boolean".into(),
            MatcherKind::AnyArray => "any array".into(),
            MatcherKind::AnyObject => "any object".into(),
            MatcherKind::Matches { pattern } => format!("a string matching /{pattern}/"),
            MatcherKind::OneOf { values } => format!(
                "one of {}",
                values.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")
            ),
            MatcherKind::StringContaining { text } => {
                format!("a string containing {}", Value::String(text.clone()))
            }
            MatcherKind::Uuid => "a UUID".into(),
            MatcherKind::DateTime => "an RFC 3339 date-time".into(),
            MatcherKind::Len { len } => format!("length {len}"),
            MatcherKind::LenBetween { low, high } => format!("length between {low} and {high}"),
            MatcherKind::ArrayContaining { items } => format!(
                "an array containing {}",
                items.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")
            ),
            MatcherKind::Each { shape } => format!("an array of {shape}"),
            MatcherKind::Absent => "absent".into(),
            MatcherKind::Not { matcher } => format!("not {}", matcher.describe()),
        }
    }
}

/// Whether `text` is a hyphenated UUID (`8-4-4-4-12` hex digits).
pub(crate) fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `text` is an RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, with
/// `T`/`t` or a space, the date valid (leap years included) and a leap second allowed.
pub(crate) fn is_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return false;
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return false;
    }
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            i + 6 == b.len()
                && b.get(i + 3) == Some(&b':')
                && digits(i + 1..i + 3).is_some_and(|h| h <= 23)
                && digits(i + 4..i + 6).is_some_and(|m| m <= 59)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_travel_inside_json() {
        let shape = serde_json::json!({ "n": json_value::greater_than(2) });
        assert_eq!(shape["n"][MATCHER_KEY]["kind"], "greater_than");
        let kind = Matcher::from_shape(&shape["n"]).unwrap().unwrap();
        assert_eq!(kind.describe(), "greater than 2");
        assert!(Matcher::from_shape(&serde_json::json!({ "$kit:matcher": 1, "other": 2 })).is_none());
    }

    #[test]
    fn a_matcher_converts_into_the_value_it_serialises_as() {
        let into = Value::from(json_value::greater_than(2));
        assert_eq!(into[MATCHER_KEY]["kind"], "greater_than");
        assert_eq!(into, serde_json::to_value(json_value::greater_than(2)).unwrap());
        let kind = Matcher::from_shape(&into).unwrap().unwrap();
        assert_eq!(kind.describe(), "greater than 2");
    }

    #[test]
    fn uuids_and_date_times_are_recognised() {
        assert!(is_uuid("0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2c"));
        assert!(!is_uuid("0193a0b46f3c7cc29a4e0f3f9d8a1b2c"));
        assert!(!is_uuid("0193a0b4-6f3c-7cc2-9a4e-0f3f9d8a1b2g"));
        for ok in [
            "2026-11-22T10:00:00Z",
            "2024-02-29t23:59:60.123+05:30",
            "1999-12-31 00:00:00-00:00",
            // Divisible by 400: a leap year although divisible by 100.
            "2000-02-29T00:00:00Z",
            "2026-04-30T00:00:00Z",
            "2026-02-28T00:00:00Z",
            "2026-11-22T10:59:59+23:59",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "2026-11-22",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-22T24:00:00Z",
            "2026-11-22T10:00:00",
            "2026-11-22T10:00:00+5:00",
            "2026-11-22T10:00:00.Z",
            // Divisible by 100 and not by 400: not a leap year.
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-11-00T00:00:00Z",
            "2026-11-22T10:60:00Z",
            "2026-11-22T10:00:61Z",
            // One separator wrong at a time, so each check is seen on its own.
            "2026/11-22T10:00:00Z",
            "2026-11/22T10:00:00Z",
            "2026-11-22X10:00:00Z",
            "2026-11-22T10-00:00Z",
            "2026-11-22T10:00-00Z",
            "2026-11-22T10:00:00+05-30",
            "2026-11-22T10:00:00+24:00",
            "2026-11-22T10:00:00+05:60",
            "2026-11-22T10:00:00+05:30Z",
            "2026-11-22T10:00:00Zx",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
