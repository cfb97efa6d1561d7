//! Hostile and broken documents: each one a clear error naming the document and where, and
//! never a panic or a hang. Legal recursion is not hostile: it loads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kit_coverage::{OpenApiCoverageCollector, OpenApiDocument, Problem};

fn load(text: &str) -> Result<OpenApiDocument, kit_coverage::OpenApiError> {
    OpenApiDocument::from_str(text, "hostile.yaml")
}

fn error(text: &str) -> String {
    let e = load(text).expect_err("the document should be refused");
    let message = e.to_string();
    assert!(message.starts_with("hostile.yaml: "), "{message}");
    message
}

fn with_schemas(schemas: &str) -> String {
    format!(
        r##"{{"openapi":"3.0.3","paths":{{"/a":{{"get":{{"responses":{{"200":{{"content":{{"application/json":{{"schema":{{"$ref":"#/components/schemas/A"}}}}}}}}}}}}}}}},"components":{{"schemas":{schemas}}}}}"##
    )
}

#[test]
fn a_recursive_schema_is_legal_and_its_fields_are_finite() {
    let doc = load(&with_schemas(
        r##"{"A":{"properties":{"name":{},"parent":{"$ref":"#/components/schemas/A"},"kids":{"type":"array","items":{"$ref":"#/components/schemas/B"}}}},
             "B":{"properties":{"a":{"$ref":"#/components/schemas/A"},"b":{"$ref":"#/components/schemas/B"}}}}"##,
    ))
    .unwrap();
    let fields: Vec<&str> = doc.operations()[0].responses[0]
        .fields
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        ["$.kids", "$.kids[].a", "$.kids[].b", "$.name", "$.parent"]
    );
}

#[test]
fn a_cycle_of_references_that_never_reaches_a_schema_is_refused_with_its_chain() {
    let message = error(&with_schemas(
        r##"{"A":{"$ref":"#/components/schemas/B"},"B":{"$ref":"#/components/schemas/A"}}"##,
    ));
    assert!(message.contains("$ref cycle"), "{message}");
    assert!(
        message.contains("#/components/schemas/A -> #/components/schemas/B"),
        "{message}"
    );
    assert!(message.contains(" at #/"), "{message}");
    let message = error(&with_schemas(r##"{"A":{"$ref":"#/components/schemas/A"}}"##));
    assert!(message.contains("$ref cycle"), "{message}");
}

#[test]
fn a_dangling_reference_names_where_it_is_and_what_it_points_at() {
    let message = error(
        r##"{"openapi":"3.1.0","paths":{"/pets":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Missing"}}}}}}}}}"##,
    );
    assert_eq!(
        message,
        "hostile.yaml: at #/paths/~1pets/get/responses/200/content/application~1json/schema/$ref: \
         $ref `#/components/schemas/Missing` points at nothing in the document"
    );
    let e =
        load(r##"{"swagger":"2.0","paths":{},"definitions":{"A":{"items":[{"$ref":"#/definitions/B"}]}}}"##)
            .unwrap_err();
    assert!(matches!(e.problem(), Problem::DanglingRef { .. }));
    assert_eq!(e.location(), Some("#/definitions/A/items/0/$ref"));
}

#[test]
fn references_in_literal_data_are_data() {
    // An example whose value holds `$ref` (GitHub's SCIM examples do) is not a reference.
    let doc = load(
        r##"{"openapi":"3.0.0","paths":{},"components":{"examples":{"user":{"value":{"$ref":"#/nowhere"}}},
            "schemas":{"S":{"example":{"$ref":"#/nowhere"},"default":{"$ref":"#/nowhere"},"enum":[{"$ref":"#/nowhere"}],"properties":{"$ref":{"type":"string"}}}}}}"##,
    );
    assert!(doc.is_ok(), "{}", doc.unwrap_err());
}

#[test]
fn ten_thousand_deep_documents_are_refused_with_the_place() {
    let deep_json = format!(
        r#"{{"openapi":"3.0.0","paths":{{}},"x":{}1{}}}"#,
        r#"{"a":"#.repeat(10_000),
        "}".repeat(10_000)
    );
    let message = error(&deep_json);
    assert!(
        message.contains("nested more than 128 levels deep (line 1, column"),
        "{message}"
    );
    let deep_yaml = format!(
        "openapi: 3.0.0\npaths: {{}}\nx: {}1{}\n",
        "{a: ".repeat(10_000),
        "}".repeat(10_000)
    );
    let message = error(&deep_yaml);
    assert!(
        message.contains("not valid YAML: nested more than 64 levels deep (line 3 column"),
        "{message}"
    );
    let deep_block: String = (0..10_000).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    let message = error(&format!("openapi: 3.0.0\nx:\n{deep_block}"));
    assert!(
        message.contains("nested more than 64 levels deep (line 67 column"),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
}

#[test]
fn unknown_versions_are_refused_by_name() {
    let message = error(r#"{"openapi":"4.0.0","paths":{}}"#);
    assert_eq!(
        message,
        "hostile.yaml: unsupported version `openapi: 4.0.0`: the kit reads swagger 2.0 and openapi 3.0, 3.1 and 3.2"
    );
    assert!(error("swagger: '1.2'\n").contains("`swagger: 1.2`"));
    assert!(error("openapi: 3\n").contains("`openapi: 3`"));
    assert!(error("info: {title: x}\n").contains("neither `openapi` nor `swagger`"));
    assert!(error("- a\n- b\n").contains("not a mapping"));
    assert!(load("openapi: 3.2.0\npaths: {}\n").is_ok());
}

#[test]
fn invalid_yaml_and_json_name_the_line() {
    let message = error("openapi: 3.0.0\npaths:\n  /a: [unclosed\n");
    assert!(
        message.contains("not valid YAML") && message.contains("line"),
        "{message}"
    );
    let message = error("{\"openapi\": \"3.0.0\", \"paths\": {\n  \"/a\": {,}\n}}");
    assert!(
        message.contains("not valid JSON") && message.contains("line 2"),
        "{message}"
    );
    let message = error("{\"openapi\": \"3.0.0\", \"paths\": {\"/a\": ");
    assert!(message.contains("EOF"), "{message}");
    assert!(error("").contains("neither") || error("").contains("not a mapping"));
}

#[test]
fn an_alias_bomb_is_stopped_by_the_yaml_budget() {
    let mut bomb = String::from("openapi: 3.0.0\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let message = error(&bomb);
    assert!(message.contains("not valid YAML"), "{message}");
}

#[test]
fn misshapen_documents_say_what_is_wrong_where() {
    let message = error(r#"{"openapi":"3.0.0","paths":[]}"#);
    assert!(
        message.contains("at #/paths") && message.contains("`paths` is not a mapping"),
        "{message}"
    );
    let message = error(r#"{"openapi":"3.0.0","paths":{"/a":7}}"#);
    assert!(
        message.contains("at #/paths/~1a") && message.contains("not a mapping"),
        "{message}"
    );
    let message = error(r#"{"openapi":"3.0.0","paths":{"a":{}}}"#);
    assert!(message.contains("does not start with `/`"), "{message}");
    let message = error(r#"{"openapi":"3.0.0","paths":{"/a":{"get":"no"}}}"#);
    assert!(message.contains("at #/paths/~1a/get"), "{message}");
}

#[test]
fn files_that_are_missing_or_not_utf8_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let error = OpenApiDocument::from_path(&missing).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with(&missing.display().to_string()) && message.contains("cannot read"),
        "{message}"
    );
    assert_eq!(error.document(), missing.display().to_string());
    let cause = std::error::Error::source(&error).expect("the I/O error is its source");
    assert!(cause.downcast_ref::<std::io::Error>().is_some(), "{cause:?}");
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"openapi: 3.0.0\ninfo:\n  title: caf\xe9\n").unwrap();
    let message = OpenApiDocument::from_path(&latin1).unwrap_err().to_string();
    assert!(
        message.ends_with("not UTF-8: invalid byte at line 3, column 13"),
        "{message}"
    );
    let message = OpenApiCoverageCollector::from_spec(&missing)
        .unwrap_err()
        .to_string();
    assert!(message.contains("missing.yaml"), "{message}");
}

/// A document read as a stream (a pipe from `<(curl …)`, a device) has no size to check before
/// reading: it is read up to the limit and refused past it, where `/dev/zero` was read until
/// memory ran out. A document that fits loads through a pipe as from a file.
#[cfg(unix)]
#[test]
fn a_stream_is_read_up_to_the_limit_and_a_document_through_a_pipe_loads() {
    let error = OpenApiDocument::from_path("/dev/zero").unwrap_err();
    assert!(
        matches!(error.problem(), Problem::StreamTooLarge { limit: 268_435_456 }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "/dev/zero: it holds more than 268435456 bytes (read as a stream); documents over 268435456 bytes are refused"
    );

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("openapi.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, with_schemas(r#"{"A":{"type":"object"}}"#)).unwrap())
    };
    let document = OpenApiDocument::from_path(&fifo).unwrap();
    writer.join().unwrap();
    assert_eq!(document.operations().len(), 1);
}

#[test]
fn an_exclusion_that_names_nothing_is_an_error() {
    let doc = std::sync::Arc::new(
        load(r#"{"openapi":"3.0.0","paths":{"/a":{"get":{"operationId":"getA","responses":{}}}}}"#).unwrap(),
    );
    assert!(
        OpenApiCoverageCollector::new(doc.clone())
            .exclude(["GET /a", "getA"])
            .is_ok()
    );
    let message = OpenApiCoverageCollector::new(doc)
        .exclude(["GET /b"])
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "hostile.yaml: `GET /b` names no operation (use `METHOD /path` as the document writes it, or an operationId)"
    );
}
