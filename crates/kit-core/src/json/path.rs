//! The JSON path subset: `$`, `.member`, `[index]`, and a leading member without `$`.

use std::fmt;

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// `.name`: an object member, compared case-sensitively.
    Member(String),
    /// `[n]`: a zero-based array index.
    Index(usize),
}

/// A parsed path of the subset the kit reads.
///
/// | form | meaning |
/// | --- | --- |
/// | `$` | the root |
/// | `$.a.b` | members, case-sensitive |
/// | `$.items[0].sku` | zero-based indices |
/// | `items[0]` | a leading member without `$` is `$.items[0]` |
///
/// Filters (`[?(…)]`), wildcards (`*`), quoted names (`['a']`), slices (`[0:2]`), recursive
/// descent (`..`) and negative indices are refused with a [`JsonPathError`] that says which.
///
/// ```
/// use kit_core::json::JsonPath;
/// use serde_json::json;
///
/// let doc = json!({ "items": [ { "sku": "A-1" } ] });
/// let path: JsonPath = "$.items[0].sku".parse().unwrap();
/// assert_eq!(path.resolve(&doc).unwrap(), &json!("A-1"));
/// assert!("$.items[*]".parse::<JsonPath>().unwrap_err().to_string().contains("wildcards"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    segments: Vec<PathSegment>,
}

/// A path that cannot be parsed, or that does not match a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the JSON path '{path}' did not match: {reason}")]
pub struct JsonPathError {
    /// The path as written.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl JsonPath {
    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its steps.
    pub fn segments(&self) -> &[PathSegment] {
        &self.segments
    }

    /// The value at the path, or why there is none (naming the first step that failed).
    pub fn resolve<'v>(&self, root: &'v Value) -> Result<&'v Value, JsonPathError> {
        let mut current = root;
        let mut walked = String::from("$");
        for segment in &self.segments {
            let next = match (segment, current) {
                (PathSegment::Member(name), Value::Object(map)) => map.get(name).ok_or_else(|| {
                    let similar = map.keys().find(|k| k.eq_ignore_ascii_case(name));
                    match similar {
                        Some(k) => format!(
                            "{walked} has no member '{name}' (members are case-sensitive; it has '{k}')"
                        ),
                        None => format!("{walked} has no member '{name}'"),
                    }
                }),
                (PathSegment::Index(i), Value::Array(items)) => items
                    .get(*i)
                    .ok_or_else(|| format!("{walked} has {} element(s), so no index {i}", items.len())),
                (PathSegment::Member(name), other) => Err(format!(
                    "{walked} is {}, not an object, so it has no member '{name}'",
                    kind(other)
                )),
                (PathSegment::Index(i), other) => Err(format!(
                    "{walked} is {}, not an array, so it has no index {i}",
                    kind(other)
                )),
            };
            current = next.map_err(|reason| JsonPathError {
                path: self.text.clone(),
                reason,
            })?;
            match segment {
                PathSegment::Member(name) => {
                    walked.push('.');
                    walked.push_str(name);
                }
                PathSegment::Index(i) => walked.push_str(&format!("[{i}]")),
            }
        }
        Ok(current)
    }
}

/// `an object`, `a string`, … for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for JsonPath {
    type Err = JsonPathError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| JsonPathError {
            path: text.to_owned(),
            reason,
        };
        let unsupported =
            |what: &str| fail(format!("{what} are not supported (only $, .member and [index])"));
        if text.contains("..") {
            return Err(unsupported("recursive descent ('..') and empty members"));
        }
        if text.contains('*') {
            return Err(unsupported("wildcards"));
        }
        if text.contains("[?") || text.contains("?(") {
            return Err(unsupported("filters"));
        }
        if text.contains("['") || text.contains("[\"") {
            return Err(unsupported("quoted names"));
        }
        let rest = match text.strip_prefix('$') {
            Some(rest) => rest,
            None if text.is_empty() => return Err(fail("the path is empty".into())),
            // A leading member without `$`.
            None if text.starts_with('.') || text.starts_with('[') => {
                return Err(fail("a path starts with '$' or a member name".into()));
            }
            None => {
                return format!("$.{text}").parse().map(|p: JsonPath| JsonPath {
                    text: text.to_owned(),
                    segments: p.segments,
                });
            }
        };
        let mut segments = Vec::new();
        let bytes = rest.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'.' => {
                    let start = i + 1;
                    let mut end = start;
                    while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                        end += 1;
                    }
                    if end == start {
                        return Err(fail(format!("an empty member name at character {}", start + 1)));
                    }
                    segments.push(PathSegment::Member(rest[start..end].to_owned()));
                    i = end;
                }
                b'[' => {
                    let close = rest[i..]
                        .find(']')
                        .map(|c| i + c)
                        .ok_or_else(|| fail(format!("'[' at character {} is not closed", i + 2)))?;
                    let inner = &rest[i + 1..close];
                    if inner.contains(':') {
                        return Err(unsupported("slices"));
                    }
                    let index = inner.trim().parse::<usize>().map_err(|_| {
                        if inner.trim().starts_with('-') {
                            fail("negative indices are not supported".into())
                        } else {
                            fail(format!("[{inner}] is not a zero-based index"))
                        }
                    })?;
                    segments.push(PathSegment::Index(index));
                    i = close + 1;
                }
                other => {
                    return Err(fail(format!(
                        "unexpected '{}' at character {}; members follow '.'",
                        char::from(other),
                        i + 2
                    )));
                }
            }
        }
        Ok(JsonPath {
            text: text.to_owned(),
            segments,
        })
    }
}

/// Appends a member to a path, as every path the kit reports is written: `.name`, or
/// `["name"]` when the name is not a plain identifier. Shape reports, traffic coverage and
/// OpenAPI field coverage all write paths this way, so they compare as text.
///
/// ```
/// let mut path = String::from("$");
/// kit_core::json::push_member(&mut path, "lines");
/// kit_core::json::push_member(&mut path, "unit price");
/// assert_eq!(path, r#"$.lines["unit price"]"#);
/// ```
pub fn push_member(path: &mut String, name: &str) {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '@' || c == '$');
    if plain {
        path.push('.');
        path.push_str(name);
    } else {
        // `["name"]`, escaped as serde_json escapes a string, in the path's own buffer: a
        // body's traffic coverage quotes every such name it reads (`@odata.etag`, `a b`).
        let mut bytes = std::mem::take(path).into_bytes();
        bytes.push(b'[');
        crate::event::write_json_string(&mut bytes, name);
        bytes.push(b']');
        // Escaping writes ASCII around whole characters, so the bytes stay UTF-8.
        *path =
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    }
}

/// `path` and `[index]`, written over `buffer` and returned: one buffer serves every element
/// of an array, where a `String` an element cost a shape assertion an allocation each.
pub(crate) fn index_path_in<'b>(buffer: &'b mut String, path: &str, index: usize) -> &'b str {
    buffer.clear();
    buffer.push_str(path);
    push_index(buffer, index);
    buffer
}

/// Appends `[index]` to `path`: `$.lines` and 2 make `$.lines[2]` (without `format!`, which
/// cost a shape assertion more than matching an array's element).
pub(crate) fn push_index(path: &mut String, index: usize) {
    let mut digits = itoa::Buffer::new();
    path.push('[');
    path.push_str(digits.format(index));
    path.push(']');
}

/// The path with every array index folded to `[]`: `$.lines[0].sku` becomes `$.lines[].sku`,
/// so fields seen in different elements count as one. Quoted member names (`["a[0]"]`) are
/// kept as written.
///
/// ```
/// assert_eq!(kit_core::json::fold_indices(r#"$.lines[10].tags[0]["x[1]"]"#), r#"$.lines[].tags[]["x[1]"]"#);
/// ```
pub fn fold_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    fold_indices_into(path, &mut out);
    out
}

/// [`fold_indices`] appended to `out`: a caller folding many paths reuses one buffer, and
/// allocates only for the folded paths it keeps.
///
/// ```
/// let mut folded = String::new();
/// for path in ["$.lines[0].sku", "$.lines[1].sku"] {
///     folded.clear();
///     kit_core::json::fold_indices_into(path, &mut folded);
///     assert_eq!(folded, "$.lines[].sku");
/// }
/// ```
pub fn fold_indices_into(path: &str, out: &mut String) {
    let bytes = path.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' if bytes.get(i + 1) == Some(&b'"') => {
                // A quoted name: skip to its closing quote, past escapes.
                i += 2;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'[' => {
                let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                if digits > 0 && bytes.get(i + 1 + digits) == Some(&b']') {
                    out.push_str(&path[copied..=i]);
                    copied = i + 1 + digits;
                    i = copied;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&path[copied.min(path.len())..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_index_path_is_the_path_and_the_index_in_brackets() {
        for (path, index) in [("$", 0), ("$.lines", 7), (r#"$["a b"]"#, 10), ("$.x", usize::MAX)] {
            let mut pushed = path.to_owned();
            push_index(&mut pushed, index);
            assert_eq!(pushed, format!("{path}[{index}]"));
            // Over a buffer that held anything before.
            let mut buffer = String::from("$.previous[99]");
            assert_eq!(
                index_path_in(&mut buffer, path, index),
                format!("{path}[{index}]")
            );
        }
    }

    fn resolve(path: &str, doc: &Value) -> Result<Value, String> {
        path.parse::<JsonPath>()
            .map_err(|e| e.to_string())?
            .resolve(doc)
            .cloned()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_subset_resolves() {
        let doc = json!({ "a": { "b": [10, { "c": "deep" }] }, "Case": 1 });
        assert_eq!(resolve("$", &doc).unwrap(), doc);
        assert_eq!(resolve("$.a.b[0]", &doc).unwrap(), json!(10));
        assert_eq!(resolve("$.a.b[1].c", &doc).unwrap(), json!("deep"));
        assert_eq!(
            resolve("a.b[1].c", &doc).unwrap(),
            json!("deep"),
            "a leading member without $"
        );
        assert_eq!(resolve("$.a.b[ 1 ]", &doc).unwrap()["c"], json!("deep"));
    }

    #[test]
    fn members_are_case_sensitive_and_misses_say_where() {
        let doc = json!({ "a": { "b": [10] }, "Case": 1 });
        assert_eq!(
            resolve("$.case", &doc).unwrap_err(),
            "the JSON path '$.case' did not match: $ has no member 'case' (members are case-sensitive; it has 'Case')"
        );
        assert_eq!(
            resolve("$.a.b[3]", &doc).unwrap_err(),
            "the JSON path '$.a.b[3]' did not match: $.a.b has 1 element(s), so no index 3"
        );
        assert_eq!(
            resolve("$.a.b.c", &doc).unwrap_err(),
            "the JSON path '$.a.b.c' did not match: $.a.b is an array, not an object, so it has no member 'c'"
        );
        assert_eq!(
            resolve("$.Case[0]", &doc).unwrap_err(),
            "the JSON path '$.Case[0]' did not match: $.Case is a number, not an array, so it has no index 0"
        );
    }

    #[test]
    fn folding_replaces_indices_only() {
        for (path, folded) in [
            ("$", "$"),
            ("$[0]", "$[]"),
            ("$[12].id", "$[].id"),
            ("$.a[1][2].b", "$.a[][].b"),
            (r#"$["q\"[0]"][3]"#, r#"$["q\"[0]"][]"#),
            ("$.a[x]", "$.a[x]"),
            ("$.a[", "$.a["),
            ("$.a[1", "$.a[1"),
            (r#"$["open"#, r#"$["open"#),
            ("$.é[7]", "$.é[]"),
            (r#"$["a[0]"][1]"#, r#"$["a[0]"][]"#),
            (r#"$["a["][0]"#, r#"$["a["][]"#),
        ] {
            assert_eq!(fold_indices(path), folded, "{path}");
        }
    }

    #[test]
    fn what_is_outside_the_subset_is_refused_by_name() {
        for (path, says) in [
            ("$.items[?(@.a)]", "filters"),
            ("$.items[*]", "wildcards"),
            ("$['a']", "quoted names"),
            ("$.items[0:2]", "slices"),
            ("$..a", "recursive descent"),
            ("$.items[-1]", "negative indices"),
            ("$.a[x]", "[x] is not a zero-based index"),
            ("$.a[0", "is not closed"),
            ("", "empty"),
            ("$a", "unexpected 'a'"),
            ("$.items[?@.a]", "filters"),
            ("$.items[0]?(x)", "filters"),
            ("", "the path is empty"),
            (".a", "a path starts with '$' or a member name"),
            ("[0]", "a path starts with '$' or a member name"),
        ] {
            let err = path.parse::<JsonPath>().unwrap_err().to_string();
            assert!(err.contains(says), "{path}: {err}");
        }
    }

    #[test]
    fn a_path_keeps_its_text_and_its_steps() {
        let path: JsonPath = "lines[2].sku".parse().unwrap();
        assert_eq!(path.as_str(), "lines[2].sku");
        assert_eq!(path.to_string(), "lines[2].sku");
        assert_eq!(
            path.segments(),
            [
                PathSegment::Member("lines".into()),
                PathSegment::Index(2),
                PathSegment::Member("sku".into())
            ]
        );
        assert!("$".parse::<JsonPath>().unwrap().segments().is_empty());
    }

    #[test]
    fn a_member_is_written_plain_only_when_its_name_is_an_identifier() {
        for (name, written) in [
            ("sku", "$.sku"),
            ("unit_price", "$.unit_price"),
            ("content-type", "$.content-type"),
            ("@type", "$.@type"),
            ("$ref", "$.$ref"),
            ("prix_é", "$.prix_é"),
            ("2fa", "$.2fa"),
            ("", r#"$[""]"#),
            ("unit price", r#"$["unit price"]"#),
            ("a.b", r#"$["a.b"]"#),
            ("a[0]", r#"$["a[0]"]"#),
            ("say \"hi\"", r#"$["say \"hi\""]"#),
        ] {
            let mut path = String::from("$");
            push_member(&mut path, name);
            assert_eq!(path, written, "{name:?}");
        }
    }

    proptest::proptest! {
        /// A quoted name is written as serde_json writes the name as a string, control
        /// characters, quotes, backslashes and every other character alike.
        #[test]
        fn a_member_is_quoted_as_serde_json_quotes_it(name in "\\PC{0,24}|[\\x00-\\x7f]{0,24}") {
            let mut path = String::from("$.a");
            push_member(&mut path, &name);
            let plain = !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '@' | '$'));
            let expected = if plain {
                format!("$.a.{name}")
            } else {
                format!("$.a[{}]", serde_json::Value::String(name.clone()))
            };
            proptest::prop_assert_eq!(path, expected);
        }
    }
}
