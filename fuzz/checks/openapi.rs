//! OpenAPI documents from arbitrary text, JSON or YAML: loading returns a document or an error
//! (never a panic, never a hang on cyclic `$ref`s: libFuzzer's timeout catches one), and in a
//! loaded document every operation with a plain path is found again by its own template.

use kit_coverage::OpenApiDocument;

use super::plain_path;

/// Panics when the input breaks what this target checks.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let document = match OpenApiDocument::from_str(text, "fuzz") {
        Ok(document) => document,
        Err(error) => {
            // The message names the input and says what is wrong; making it must not panic.
            assert!(error.to_string().contains("fuzz"));
            return;
        }
    };
    let operations = document.operations();
    for operation in operations.iter().take(64) {
        let found = document.find(&operation.method, Some(&operation.path), None);
        assert!(found.is_none_or(|i| i < operations.len()));
        let Some(segments) = plain_path::segments(&operation.path) else {
            continue;
        };
        if !document.base_paths().is_empty() {
            continue;
        }
        let found = found.unwrap_or_else(|| {
            panic!(
                "{} {} not found by its own template",
                operation.method, operation.path
            )
        });
        let other = &operations[found];
        assert!(
            other.method.eq_ignore_ascii_case(&operation.method),
            "{} found {}",
            operation.method,
            other.method
        );
        let found_shape = plain_path::segments(&other.path).map(|s| plain_path::shape(&s));
        assert_eq!(
            found_shape,
            Some(plain_path::shape(&segments)),
            "{} found {}",
            operation.path,
            other.path
        );
    }
}
