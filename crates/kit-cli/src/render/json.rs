//! JSON: the view as it is (schema in `docs/cli.md`).

use crate::model::View;

pub(crate) fn render(view: &View) -> String {
    // The model holds strings, numbers and maps with string keys only: it always serializes.
    let mut text = serde_json::to_string_pretty(view).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    text.push('\n');
    text
}
