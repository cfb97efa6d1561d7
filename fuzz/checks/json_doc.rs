//! The kit's own JSON reader (`kit_core::json::doc`, written for speed) against serde_json on
//! arbitrary bytes: both accept the same documents and read the same values, and a shape
//! matched on the text agrees with the same shape matched on serde's `Value`.

use kit_core::json::{PreparedShape, ShapeOptions, doc, json_value};
use serde_json::{Value, json};

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let ours = doc::parse(data);
    let serde = serde_json::from_slice::<Value>(data);
    match (&ours, &serde) {
        (Ok(node), Ok(value)) => {
            // Text, not `==`: an ordered map compares equal in any order, and the order of
            // members is what a report shows.
            assert_eq!(node.to_value().to_string(), value.to_string());
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("doc::parse {:?} but serde_json {:?}", ours.is_ok(), serde.is_ok()),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let node = doc::parse_str(text);
        assert_eq!(
            node.map(|n| n.to_value().to_string()).map_err(|e| e.to_string()),
            serde.as_ref().map(Value::to_string).map_err(|e| e.to_string()),
        );
    }
    let Ok(value) = serde else { return };

    // The document as its own shape, and shapes of matchers that reach into any object.
    let mut shapes = vec![value.clone()];
    if let Value::Object(map) = &value {
        let mut loose = serde_json::Map::new();
        for (i, name) in map.keys().enumerate() {
            let matcher = match i % 4 {
                0 => json_value::not_null(),
                1 => json_value::any_string(),
                2 => json_value::greater_than(0),
                _ => json_value::each(json!({ "id": json_value::any_number() })),
            };
            loose.insert(name.clone(), matcher.into());
        }
        shapes.push(Value::Object(loose));
    }
    for (exact, case_sensitive) in [(false, false), (true, false), (false, true)] {
        let options = ShapeOptions {
            exact,
            case_sensitive,
        };
        for shape in &shapes {
            let shape = PreparedShape::new(shape.clone());
            let by_value = shape.matches(&value, &options);
            match shape.try_matches_slice(data, &options) {
                Ok(Some(report)) => assert_eq!(report, by_value),
                Ok(None) => assert!(!by_value.is_match(), "the text mismatched, the value matched"),
                Err(e) => panic!("serde read the document, the shape's reader did not: {e}"),
            }
        }
    }
}
