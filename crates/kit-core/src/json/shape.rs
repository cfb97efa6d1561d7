//! Matching a JSON document against an expected shape.
//!
//! The rules:
//!
//! 1. an object in the shape matches an object with at least its members; other members are
//!    ignored, unless in **exact** mode, where each one is a mismatch;
//! 2. member names are compared case-insensitively by default (an exact spelling is preferred
//!    when both exist); `case_sensitive` turns that off;
//! 3. an array matches an array of the same length, position by position;
//! 4. a scalar matches an equal scalar; numbers by value (`1` equals `1.0`);
//! 5. a matcher ([`json_value`](crate::json::json_value)) matches what it says;
//! 6. every mismatch is reported, each with its JSON path, and so is every path that matched.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use super::bind::same_name_in_any_case;
use super::doc::{self, Node};
use super::matchers::{Matcher, MatcherKind, is_rfc3339, is_uuid};
use super::path::{index_path_in, kind, push_member};

/// How a shape is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShapeOptions {
    /// Members the shape does not list are mismatches (default false: ignored).
    pub exact: bool,
    /// Member names must match in case (default false).
    pub case_sensitive: bool,
}

impl ShapeOptions {
    /// Partial, case-insensitive: the default.
    pub const PARTIAL: ShapeOptions = ShapeOptions {
        exact: false,
        case_sensitive: false,
    };

    /// Exact, case-insensitive.
    pub const EXACT: ShapeOptions = ShapeOptions {
        exact: true,
        case_sensitive: false,
    };
}

/// One way a document differs from a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeMismatch {
    /// Where: `$.items[0].sku`.
    pub path: String,
    /// What: `values differ`, `property is missing`, …
    pub reason: String,
    /// What the shape wanted, as JSON or a matcher's description.
    pub expected: String,
    /// What the document had, as JSON (or `<missing>`).
    pub actual: String,
}

impl fmt::Display for ShapeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}]: {}. (Expected: {}, Actual: {})",
            self.path, self.reason, self.expected, self.actual
        )
    }
}

/// The outcome of matching a document against a shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapeReport {
    /// Every mismatch, in document order.
    pub mismatches: Vec<ShapeMismatch>,
    /// Every path the shape named and the document matched (members and elements).
    pub matched: Vec<String>,
}

impl ShapeReport {
    /// An empty report with room for `paths` matched paths.
    fn with_room_for(paths: usize) -> Self {
        ShapeReport {
            mismatches: Vec::new(),
            matched: Vec::with_capacity(paths),
        }
    }

    /// True when there is no mismatch.
    pub fn is_match(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// A shape did not match: every mismatch, and the paths that did match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Shape mismatch failed with {} error(s):\n{}", .mismatches.len(), .mismatches.iter().map(|m| format!("- {m}")).collect::<Vec<_>>().join("\n"))]
pub struct JsonShapeMismatchError {
    /// Every mismatch.
    pub mismatches: Vec<ShapeMismatch>,
    /// The paths that matched.
    pub matched_properties: Vec<String>,
}

/// Longest text of a value shown in a mismatch.
const SHOWN: usize = 200;

fn show(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn show_expected(shape: &Value) -> String {
    match Matcher::from_shape(shape) {
        Some(Ok(kind)) => kind.describe(),
        _ => show(shape),
    }
}

fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
        (Some(x), Some(y), _, _) => x == y,
        (_, _, Some(x), Some(y)) => x == y,
        _ => a.as_f64().zip(b.as_f64()).is_some_and(|(x, y)| x == y),
    }
}

/// Deep equality with numbers compared by value.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

fn compare(a: &serde_json::Number, b: &serde_json::Number) -> Option<std::cmp::Ordering> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => match (a.as_u64(), b.as_u64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
        },
    }
}

/// The most members of an object that the match on a document tree scans for each name the
/// shape lists; a larger object is indexed first, so that a shape listing many of its members
/// is not matched in quadratic time.
const LONGEST_SCANNED_OBJECT: usize = 32;

/// A parsed matcher, shared by every place the walk meets it.
type Parsed = Rc<Result<MatcherKind, String>>;

/// Matchers parsed so far in one assertion, by the address of their `$kit:matcher` value. An
/// `each` shape is met once per element, and parsing its matchers anew each time cost more than
/// the rest of the walk on a large array. The addresses stay valid and unique for the whole
/// walk: they point into the caller's shape, or into `each` shapes held by parsed matchers that
/// this map keeps alive. Fx-hashed: the key is an address, and SipHash made a lookup cost
/// more than the matcher it finds.
#[derive(Default)]
struct MatcherCache(RefCell<rustc_hash::FxHashMap<*const Value, Parsed>>);

impl MatcherCache {
    fn get(&self, shape: &Value) -> Option<Parsed> {
        let inner = Matcher::marker(shape)?;
        let key: *const Value = inner;
        if let Some(parsed) = self.0.borrow().get(&key) {
            return Some(Rc::clone(parsed));
        }
        let parsed = Rc::new(Matcher::parse(inner));
        self.0.borrow_mut().insert(key, Rc::clone(&parsed));
        Some(parsed)
    }
}

struct Walk<'o> {
    options: &'o ShapeOptions,
    report: ShapeReport,
    matchers: Rc<MatcherCache>,
}

impl Walk<'_> {
    /// A walk that records into a report of its own, sharing this one's parsed matchers.
    fn probe(&self) -> Walk<'_> {
        Walk {
            options: self.options,
            report: ShapeReport::default(),
            matchers: Rc::clone(&self.matchers),
        }
    }

    fn mismatch(&mut self, path: &str, reason: impl Into<String>, expected: String, actual: String) {
        self.report.mismatches.push(ShapeMismatch {
            path: path.to_owned(),
            reason: reason.into(),
            expected,
            actual,
        });
    }

    fn find_member<'a>(
        &self,
        map: &'a serde_json::Map<String, Value>,
        name: &str,
    ) -> Option<(&'a String, &'a Value)> {
        if let Some((k, v)) = map.get_key_value(name) {
            return Some((k, v));
        }
        if self.options.case_sensitive {
            return None;
        }
        map.iter().find(|(k, _)| same_name_in_any_case(k, name))
    }

    /// Matches `actual` at `path` against `shape`; records the path as matched when nothing
    /// under it mismatched.
    fn node(&mut self, path: &str, shape: &Value, actual: &Value) {
        let before = self.report.mismatches.len();
        self.node_inner(path, shape, actual);
        if self.report.mismatches.len() == before && path != "$" {
            self.report.matched.push(path.to_owned());
        }
    }

    fn node_inner(&mut self, path: &str, shape: &Value, actual: &Value) {
        if let Some(matcher) = self.matchers.get(shape) {
            match &*matcher {
                Ok(kind) => self.matcher(path, kind, actual),
                Err(why) => self.mismatch(path, why.clone(), show(shape), show(actual)),
            }
            return;
        }
        match (shape, actual) {
            (Value::Object(expected), Value::Object(got)) => {
                // One buffer for the members' paths: an allocation per object, not per member.
                let mut member_path = String::with_capacity(path.len() + 16);
                for (name, member_shape) in expected {
                    member_path.clear();
                    member_path.push_str(path);
                    match self.find_member(got, name) {
                        Some((actual_name, value)) => {
                            push_member(&mut member_path, actual_name);
                            let absent = self
                                .matchers
                                .get(member_shape)
                                .is_some_and(|m| matches!(*m, Ok(MatcherKind::Absent)));
                            if absent {
                                self.mismatch(
                                    &member_path,
                                    "property should be absent",
                                    "absent".into(),
                                    show(value),
                                );
                            } else {
                                self.node(&member_path, member_shape, value);
                            }
                        }
                        None => {
                            push_member(&mut member_path, name);
                            match self.matchers.get(member_shape).as_deref() {
                                Some(Ok(MatcherKind::Absent)) => {}
                                _ => self.mismatch(
                                    &member_path,
                                    "property is missing",
                                    show_expected(member_shape),
                                    "<missing>".into(),
                                ),
                            }
                        }
                    }
                }
                if self.options.exact {
                    for (name, value) in got {
                        if !self.listed(expected, name) {
                            let mut member_path = path.to_owned();
                            push_member(&mut member_path, name);
                            self.mismatch(
                                &member_path,
                                "unexpected property",
                                "<not in the shape>".into(),
                                show(value),
                            );
                        }
                    }
                }
            }
            (Value::Array(expected), Value::Array(got)) => {
                if expected.len() != got.len() {
                    self.mismatch(
                        path,
                        "array length differs",
                        format!("{} item(s)", expected.len()),
                        format!("{} item(s)", got.len()),
                    );
                }
                // One buffer for the items' paths, as for an object's members.
                let mut buffer = String::with_capacity(path.len() + 8);
                for (i, (item_shape, item)) in expected.iter().zip(got).enumerate() {
                    self.node(index_path_in(&mut buffer, path, i), item_shape, item);
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                if !numbers_equal(x, y) {
                    self.mismatch(path, "values differ", show(shape), show(actual));
                }
            }
            (Value::Object(_), _) | (Value::Array(_), _) => {
                self.mismatch(
                    path,
                    format!("types differ: expected {}, found {}", kind(shape), kind(actual)),
                    show(shape),
                    show(actual),
                );
            }
            _ => {
                if shape != actual {
                    let reason = if std::mem::discriminant(shape) == std::mem::discriminant(actual) {
                        "values differ".to_owned()
                    } else {
                        format!("types differ: expected {}, found {}", kind(shape), kind(actual))
                    };
                    self.mismatch(path, reason, show(shape), show(actual));
                }
            }
        }
    }

    /// Matches a document tree: true, with every matched path recorded, when nothing under
    /// `path` mismatched; false at the first mismatch, leaving the report incomplete (the
    /// caller starts again on a `Value`, which reports every mismatch). Each step mirrors
    /// `node_inner`, so a match records the paths, in the order, that it records.
    ///
    /// `path` is one buffer for the whole walk: each member or element is pushed onto it and
    /// cut off again, so a walk allocates only the paths it records.
    fn doc_node(&mut self, path: &mut String, shape: &Value, actual: &Node<'_>) -> bool {
        if !self.doc_node_inner(path, shape, actual) {
            return false;
        }
        if path != "$" {
            self.report.matched.push(path.clone());
        }
        true
    }

    /// [`doc_node`](Self::doc_node) on `path` with `[index]` pushed, and cut off again.
    fn doc_element(&mut self, path: &mut String, index: usize, shape: &Value, actual: &Node<'_>) -> bool {
        let len = path.len();
        super::path::push_index(path, index);
        let matched = self.doc_node(path, shape, actual);
        path.truncate(len);
        matched
    }

    fn doc_node_inner(&mut self, path: &mut String, shape: &Value, actual: &Node<'_>) -> bool {
        if let Some(matcher) = self.matchers.get(shape) {
            // The common matchers read the tree as `matcher` reads a `Value`; the others read
            // a `Value`, made of this one value (most often a scalar).
            let number = |ok: fn(std::cmp::Ordering) -> bool, bound: &serde_json::Number| match actual {
                Node::Number(n) => compare(n, bound).is_some_and(ok),
                _ => false,
            };
            match (&*matcher, actual) {
                (Ok(MatcherKind::Each { shape }), Node::Array(items)) => {
                    return items
                        .iter()
                        .enumerate()
                        .all(|(i, item)| self.doc_element(path, i, shape, item));
                }
                (Ok(MatcherKind::NotNull), _) => return !matches!(actual, Node::Null),
                (Ok(MatcherKind::AnyString), _) => return matches!(actual, Node::Str(_)),
                (Ok(MatcherKind::AnyNumber), _) => return matches!(actual, Node::Number(_)),
                (Ok(MatcherKind::AnyBool), _) => return matches!(actual, Node::Bool(_)),
                (Ok(MatcherKind::AnyArray), _) => return matches!(actual, Node::Array(_)),
                (Ok(MatcherKind::AnyObject), _) => return matches!(actual, Node::Object(_)),
                (Ok(MatcherKind::GreaterThan { value }), _) => return number(|o| o.is_gt(), value),
                (Ok(MatcherKind::GreaterOrEqual { value }), _) => return number(|o| o.is_ge(), value),
                (Ok(MatcherKind::LessThan { value }), _) => return number(|o| o.is_lt(), value),
                (Ok(MatcherKind::LessOrEqual { value }), _) => return number(|o| o.is_le(), value),
                (Ok(MatcherKind::Between { low, high }), _) => {
                    return number(|o| o.is_ge(), low) && number(|o| o.is_le(), high);
                }
                (Ok(MatcherKind::ArrayContaining { items }), Node::Array(elements)) => {
                    // As `matcher` does: each item takes the first element left that it matches.
                    // The probes share one path buffer: items × elements of them may run.
                    let mut used = vec![false; elements.len()];
                    let mut probe_path = String::from("$");
                    return items.iter().all(|item| {
                        let found = (0..elements.len())
                            .find(|&i| !used[i] && self.doc_dry_run(&mut probe_path, item, &elements[i]));
                        found.inspect(|&i| used[i] = true).is_some()
                    });
                }
                _ => {}
            }
            let before = self.report.mismatches.len();
            self.node_inner(path, shape, &actual.to_value());
            return self.report.mismatches.len() == before;
        }
        match (shape, actual) {
            (Value::Object(expected), Node::Object(got)) => {
                let index = (got.len() > LONGEST_SCANNED_OBJECT).then(|| doc::MemberIndex::new(got));
                let len = path.len();
                for (name, member_shape) in expected {
                    let absent = self
                        .matchers
                        .get(member_shape)
                        .is_some_and(|m| matches!(*m, Ok(MatcherKind::Absent)));
                    match self.find_doc_member(got, index.as_ref(), name) {
                        // A member the shape wants absent is there: a mismatch.
                        Some(_) if absent => return false,
                        Some((actual_name, value)) => {
                            push_member(path, actual_name);
                            let matched = self.doc_node(path, member_shape, value);
                            path.truncate(len);
                            if !matched {
                                return false;
                            }
                        }
                        None if absent => {}
                        None => return false,
                    }
                }
                !self.options.exact || got.iter().all(|(name, _)| self.listed(expected, name))
            }
            (Value::Array(expected), Node::Array(got)) => {
                expected.len() == got.len()
                    && expected
                        .iter()
                        .zip(got)
                        .enumerate()
                        .all(|(i, (item_shape, item))| self.doc_element(path, i, item_shape, item))
            }
            (Value::Number(x), Node::Number(y)) => numbers_equal(x, y),
            (Value::String(x), Node::Str(y)) => x == y,
            (Value::Bool(x), Node::Bool(y)) => x == y,
            (Value::Null, Node::Null) => true,
            _ => false,
        }
    }

    /// Whether `actual` matches `shape`, without recording anything (`dry_run` on a tree).
    /// `path` is a scratch buffer holding `$`; the walk leaves it as it found it.
    fn doc_dry_run(&self, path: &mut String, shape: &Value, actual: &Node<'_>) -> bool {
        let mut probe = self.probe();
        probe.doc_node_inner(path, shape, actual) && probe.report.mismatches.is_empty()
    }

    /// `find_member` on a document tree's object (`index` is given for a large one).
    fn find_doc_member<'n, 'a>(
        &self,
        got: &'n [(std::borrow::Cow<'a, str>, Node<'a>)],
        index: Option<&doc::MemberIndex<'n>>,
        name: &str,
    ) -> Option<(&'n str, &'n Node<'a>)> {
        let found = match index {
            Some(index) => index.get(got, name),
            None => doc::member(got, name),
        };
        if found.is_some() {
            return found;
        }
        if self.options.case_sensitive {
            return None;
        }
        // The first name that matches in any case, with its last value, as `Map::iter` has it.
        let (first, _) = got.iter().find(|(k, _)| same_name_in_any_case(k, name))?;
        doc::member(got, first)
    }

    /// Whether a document's member `name` is one the shape lists (exact mode).
    fn listed(&self, expected: &serde_json::Map<String, Value>, name: &str) -> bool {
        expected.contains_key(name)
            || (!self.options.case_sensitive && expected.keys().any(|k| same_name_in_any_case(k, name)))
    }

    /// Whether `actual` matches `shape`, without recording anything.
    fn dry_run(&self, shape: &Value, actual: &Value) -> bool {
        let mut probe = self.probe();
        probe.node_inner("$", shape, actual);
        probe.report.mismatches.is_empty()
    }

    fn matcher(&mut self, path: &str, kind: &MatcherKind, actual: &Value) {
        let fail = |walk: &mut Self, reason: &str| walk.mismatch(path, reason, kind.describe(), show(actual));
        let number = |v: &Value| v.as_number().cloned();
        let ordered = |bound: &serde_json::Number, ok: fn(std::cmp::Ordering) -> bool| {
            number(actual).and_then(|n| compare(&n, bound)).is_some_and(ok)
        };
        let length = || match actual {
            Value::String(s) => Some(s.chars().count()),
            Value::Array(a) => Some(a.len()),
            Value::Object(o) => Some(o.len()),
            _ => None,
        };
        let ok = match kind {
            MatcherKind::NotNull => !actual.is_null(),
            MatcherKind::GreaterThan { value } => ordered(value, |o| o.is_gt()),
            MatcherKind::GreaterOrEqual { value } => ordered(value, |o| o.is_ge()),
            MatcherKind::LessThan { value } => ordered(value, |o| o.is_lt()),
            MatcherKind::LessOrEqual { value } => ordered(value, |o| o.is_le()),
            MatcherKind::Between { low, high } => ordered(low, |o| o.is_ge()) && ordered(high, |o| o.is_le()),
            MatcherKind::AnyString => actual.is_string(),
            MatcherKind::AnyNumber => actual.is_number(),
            MatcherKind::AnyBool => actual.is_boolean(),
            MatcherKind::AnyArray => actual.is_array(),
            MatcherKind::AnyObject => actual.is_object(),
            MatcherKind::Matches { pattern } => match regex::Regex::new(pattern) {
                Ok(re) => actual.as_str().is_some_and(|s| re.is_match(s)),
                Err(e) => {
                    let reason = format!(
                        "the pattern is not a valid regex ({})",
                        e.to_string().lines().last().unwrap_or("")
                    );
                    return fail(self, &reason);
                }
            },
            MatcherKind::OneOf { values } => values.iter().any(|v| values_equal(v, actual)),
            MatcherKind::StringContaining { text } => {
                actual.as_str().is_some_and(|s| s.contains(text.as_str()))
            }
            MatcherKind::Uuid => actual.as_str().is_some_and(is_uuid),
            MatcherKind::DateTime => actual.as_str().is_some_and(is_rfc3339),
            MatcherKind::Len { len } => length() == Some(*len),
            MatcherKind::LenBetween { low, high } => length().is_some_and(|n| *low <= n && n <= *high),
            MatcherKind::ArrayContaining { items } => {
                let Value::Array(elements) = actual else {
                    return fail(self, "expected an array");
                };
                let mut used = vec![false; elements.len()];
                let mut missing = Vec::new();
                for item in items {
                    let found = (0..elements.len()).find(|&i| !used[i] && self.dry_run(item, &elements[i]));
                    match found {
                        Some(i) => used[i] = true,
                        None => missing.push(show_expected(item)),
                    }
                }
                if missing.is_empty() {
                    true
                } else {
                    return self.mismatch(
                        path,
                        format!("no element matches {}", missing.join(", ")),
                        kind.describe(),
                        show(actual),
                    );
                }
            }
            MatcherKind::Each { shape } => {
                let Value::Array(elements) = actual else {
                    return fail(self, "expected an array");
                };
                let mut buffer = String::with_capacity(path.len() + 8);
                for (i, element) in elements.iter().enumerate() {
                    self.node(index_path_in(&mut buffer, path, i), shape, element);
                }
                return;
            }
            MatcherKind::Absent => {
                return fail(
                    self,
                    "absent() only applies to an object member, and this value is there",
                );
            }
            MatcherKind::Not { matcher } => {
                if matches!(**matcher, MatcherKind::Absent) {
                    // A member that is there: reaching here means it is.
                    true
                } else {
                    let mut probe = self.probe();
                    probe.matcher("$", matcher, actual);
                    !probe.report.mismatches.is_empty()
                }
            }
        };
        if !ok {
            let reason = match kind {
                MatcherKind::GreaterThan { .. }
                | MatcherKind::GreaterOrEqual { .. }
                | MatcherKind::LessThan { .. }
                | MatcherKind::LessOrEqual { .. }
                | MatcherKind::Between { .. }
                    if !actual.is_number() =>
                {
                    format!("expected a number, found {}", kind_of(actual))
                }
                _ => "value does not match".to_owned(),
            };
            fail(self, &reason);
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    kind(value)
}

/// Matches `actual` against `shape`.
///
/// ```
/// use kit_core::json::{json_value, match_shape, ShapeOptions};
/// use serde_json::json;
///
/// let actual = json!({ "id": 7, "Quantity": 2, "lines": [ { "sku": "A" } ], "extra": true });
/// let report = match_shape(
///     &json!({ "id": json_value::not_null(), "quantity": json_value::greater_than(0), "lines": [ { "sku": "A" } ] }),
///     &actual,
///     &ShapeOptions::default(),
/// );
/// assert!(report.is_match());
/// assert_eq!(report.matched, ["$.id", "$.Quantity", "$.lines[0].sku", "$.lines[0]", "$.lines"]);
///
/// let exact = match_shape(&json!({ "id": 8 }), &actual, &ShapeOptions::EXACT);
/// assert_eq!(exact.mismatches.len(), 4, "the id differs, and three members are not in the shape");
/// assert_eq!(exact.mismatches[0].to_string(), "[$.id]: values differ. (Expected: 8, Actual: 7)");
/// ```
pub fn match_shape(shape: &Value, actual: &Value, options: &ShapeOptions) -> ShapeReport {
    walk(shape, actual, options, Rc::default(), 0)
}

fn walk(
    shape: &Value,
    actual: &Value,
    options: &ShapeOptions,
    matchers: Rc<MatcherCache>,
    paths: usize,
) -> ShapeReport {
    let mut walk = Walk {
        options,
        report: ShapeReport::with_room_for(paths),
        matchers,
    };
    walk.node("$", shape, actual);
    walk.report
}

/// A shape to match many times: the matchers in it are parsed at their first use and kept,
/// where [`match_shape`] parses them on every call. A test that asserts one shape request
/// after request keeps one of these. Not `Send`: it is meant for one thread.
///
/// ```
/// use kit_core::json::{PreparedShape, ShapeOptions, json_value};
/// use serde_json::json;
///
/// let shape = PreparedShape::new(json!({ "id": json_value::greater_than(0) }));
/// for id in 1..=3 {
///     assert!(shape.matches(&json!({ "id": id }), &ShapeOptions::default()).is_match());
/// }
/// assert!(!shape.matches(&json!({ "id": 0 }), &ShapeOptions::default()).is_match());
/// ```
pub struct PreparedShape {
    shape: Value,
    /// Keyed by the addresses of matcher values inside `shape` (held on the heap by its maps
    /// and arrays, so they do not move with this struct) and inside `each` shapes the parsed
    /// matchers own.
    matchers: Rc<MatcherCache>,
    /// How many paths the last match recorded: room made for as many in the next report, where
    /// growing the list from empty reallocated it three times for a ten-field body.
    paths_last_time: Cell<usize>,
}

impl PreparedShape {
    /// Prepares `shape`.
    pub fn new(shape: Value) -> Self {
        PreparedShape {
            shape,
            matchers: Rc::default(),
            paths_last_time: Cell::new(0),
        }
    }

    /// Keeps the number of paths `report` matched, for the next report's room.
    fn remember_paths(&self, report: ShapeReport) -> ShapeReport {
        self.paths_last_time.set(report.matched.len());
        report
    }

    /// The shape.
    pub fn shape(&self) -> &Value {
        &self.shape
    }

    /// Matches `actual` against the shape, as [`match_shape`] does.
    pub fn matches(&self, actual: &Value, options: &ShapeOptions) -> ShapeReport {
        self.remember_paths(walk(
            &self.shape,
            actual,
            options,
            Rc::clone(&self.matchers),
            self.paths_last_time.get(),
        ))
    }

    /// Matches the JSON document `json` against the shape: the report [`matches`](Self::matches)
    /// gives for the document's `Value`, or the error `serde_json::from_slice` gives for text
    /// that is not JSON.
    ///
    /// A document that matches is read once, into a tree that borrows its strings from `json`,
    /// and never becomes a `Value`: that costs less than `serde_json::from_slice` alone. A
    /// document that does not match is parsed again into a `Value`, to report every mismatch
    /// (see [`try_matches_slice`](Self::try_matches_slice) to parse it yourself).
    ///
    /// ```
    /// use kit_core::json::{PreparedShape, ShapeOptions, json_value};
    /// use serde_json::json;
    ///
    /// let shape = PreparedShape::new(json!({ "id": json_value::greater_than(0), "tags": ["a"] }));
    /// let body = br#"{"id": 7, "Tags": ["a"], "name": "lamp"}"#;
    /// let report = shape.matches_slice(body, &ShapeOptions::default()).unwrap();
    /// assert_eq!(report.matched, ["$.id", "$.Tags[0]", "$.Tags"]);
    ///
    /// let report = shape.matches_slice(br#"{"id": 0, "tags": []}"#, &ShapeOptions::default()).unwrap();
    /// assert_eq!(report.mismatches.len(), 2);
    /// assert!(shape.matches_slice(b"{\"id\": ", &ShapeOptions::default()).is_err());
    /// ```
    pub fn matches_slice(
        &self,
        json: &[u8],
        options: &ShapeOptions,
    ) -> Result<ShapeReport, serde_json::Error> {
        if let Some(report) = self.try_matches_slice(json, options)? {
            return Ok(report);
        }
        let value: Value = serde_json::from_slice(json)?;
        Ok(self.matches(&value, options))
    }

    /// Matches the JSON document `json` on its text only: `Some` report of a match (the one
    /// [`matches`](Self::matches) gives), `None` at the first mismatch, for the caller to match
    /// the document's `Value` (one it may keep for other reads) and report every mismatch.
    ///
    /// ```
    /// use kit_core::json::{PreparedShape, ShapeOptions};
    /// use serde_json::json;
    ///
    /// let shape = PreparedShape::new(json!({ "id": 7 }));
    /// let options = ShapeOptions::default();
    /// let report = shape.try_matches_slice(br#"{"id": 7, "x": [1]}"#, &options).unwrap();
    /// assert_eq!(report.map(|r| r.matched), Some(vec!["$.id".to_owned()]));
    /// assert_eq!(shape.try_matches_slice(br#"{"id": 8}"#, &options).unwrap(), None);
    /// assert!(shape.try_matches_slice(b"[", &options).is_err());
    /// ```
    pub fn try_matches_slice(
        &self,
        json: &[u8],
        options: &ShapeOptions,
    ) -> Result<Option<ShapeReport>, serde_json::Error> {
        let document = doc::parse(json)?;
        let mut walk = Walk {
            options,
            report: ShapeReport::with_room_for(self.paths_last_time.get()),
            matchers: Rc::clone(&self.matchers),
        };
        let mut path = String::with_capacity(64);
        path.push('$');
        let matched = walk.doc_node(&mut path, &self.shape, &document);
        Ok(matched.then(|| self.remember_paths(walk.report)))
    }
}

impl std::fmt::Debug for PreparedShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedShape")
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}
