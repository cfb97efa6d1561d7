//! OpenAPI documents from arbitrary text, JSON or YAML: loading returns a document or an error
//! (never a panic, never a hang on cyclic `$ref`s: libFuzzer's timeout catches one), and in a
//! loaded document every operation with a plain path is found again by its own template.
#![no_main]

use kit_coverage::OpenApiDocument;
use libfuzzer_sys::fuzz_target;

/// The path's segments with templates blanked (`/pets/{}`), when every segment is literal text
/// or one whole template: the rules for percent-encoding, queries, mixed patterns, empty
/// segments and trailing slashes are the route table's own target's to check.
fn plain_shape(path: &str) -> Option<String> {
    let body = path.strip_prefix('/')?;
    if body.is_empty() || path.contains(['%', '?', '#']) {
        return None;
    }
    let mut shape = String::new();
    for segment in body.split('/') {
        let inner = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}'));
        shape.push('/');
        match inner {
            Some(name) if !name.is_empty() && !name.contains(['{', '}']) => shape.push_str("{}"),
            None if !segment.is_empty() && !segment.contains(['{', '}']) => shape.push_str(segment),
            _ => return None,
        }
    }
    Some(shape)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
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
        let Some(shape) = plain_shape(&operation.path) else { continue };
        if !document.base_paths().is_empty() {
            continue;
        }
        let found = found.unwrap_or_else(|| panic!("{} {} not found by its own template", operation.method, operation.path));
        let other = &operations[found];
        assert!(other.method.eq_ignore_ascii_case(&operation.method), "{} found {}", operation.method, other.method);
        assert_eq!(plain_shape(&other.path).as_deref(), Some(shape.as_str()), "{} found {}", operation.path, other.path);
    }
});
