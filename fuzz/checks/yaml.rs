//! The OpenAPI loader's plain YAML reader (`read_plain`, written for speed) against
//! serde-saphyr on arbitrary text: a document it reads, it reads as serde-saphyr reads it
//! into a `serde_json::Value` (it may only decline, leaving the document to serde-saphyr), and
//! serde-saphyr into the loader's own tree agrees with serde-saphyr into a `Value`.

use kit_coverage::__fuzz::yaml_three_ways;

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ways = yaml_three_ways(text);
    if let Some(plain) = &ways.plain {
        assert_eq!(Ok(plain), ways.value.as_ref(), "read plainly");
    }
    match (&ways.tree, &ways.value) {
        (Ok(tree), Ok(value)) => assert_eq!(tree, value, "through the loader's tree"),
        (Err(_), Err(_)) => {}
        _ => panic!("the tree read {:?}, the value {:?}", ways.tree, ways.value),
    }
}
