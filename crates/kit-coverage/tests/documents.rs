//! What a document declares, read as the OpenAPI versions say: status keys, server paths,
//! operations by version, which media types are JSON, and what loading noted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kit_coverage::{OpenApiDocument, StatusKey};

fn load(text: &str) -> OpenApiDocument {
    OpenApiDocument::from_str(text, "documents.json").unwrap()
}

/// A document of one path whose one operation answers `responses` (a JSON object's members).
fn one_operation(version: &str, extra: &str, responses: &str) -> OpenApiDocument {
    load(&format!(
        r#"{{"openapi":"{version}",{extra}"paths":{{"/a":{{"get":{{"responses":{{{responses}}}}}}}}}}}"#
    ))
}

#[test]
fn status_keys_are_codes_ranges_of_either_case_or_default_and_nothing_else() {
    assert_eq!(StatusKey::parse("404"), Some(StatusKey::Code(404)));
    assert_eq!(StatusKey::parse("2XX"), Some(StatusKey::Range(2)));
    assert_eq!(StatusKey::parse("2xx"), Some(StatusKey::Range(2)));
    assert_eq!(StatusKey::parse("default"), Some(StatusKey::Default));
    for nonsense in ["2XY", "2YX", "x-note", "Default", "600", "20", "2000", ""] {
        assert_eq!(StatusKey::parse(nonsense), None, "{nonsense}");
    }
    let doc = one_operation(
        "3.0.3",
        "",
        r#""2xx":{},"2XY":{},"x-note":{},"default":{},"404":{}"#,
    );
    let keys: Vec<String> = doc.operations()[0]
        .responses
        .iter()
        .map(|r| r.status.to_string())
        .collect();
    assert_eq!(keys, ["2XX", "default", "404"]);
}

#[test]
fn a_server_url_gives_its_path_with_or_without_a_scheme() {
    let servers = |url: &str| {
        let extra = format!(r#""servers":[{{"url":"{url}"}}],"#);
        one_operation("3.0.3", &extra, r#""200":{}"#)
            .base_paths()
            .to_vec()
    };
    assert_eq!(servers("https://api.example.com/v1?x=1"), ["/v1"]);
    assert_eq!(servers("//api.example.com/v2"), ["/v2"]);
    assert_eq!(servers("/v3#top"), ["/v3"]);
}

#[test]
fn query_and_additional_operations_are_operations_only_from_openapi_3_2() {
    let text = |version: &str| {
        format!(
            r#"{{"openapi":"{version}","paths":{{"/a":{{
                "get":{{"responses":{{"200":{{}}}}}},
                "query":{{"responses":{{"200":{{}}}}}},
                "additionalOperations":{{"COPY":{{"responses":{{"200":{{}}}}}}}}}}}}}}"#
        )
    };
    let methods = |version: &str| -> Vec<String> {
        let doc = load(&text(version));
        let mut methods: Vec<String> = doc.operations().iter().map(|o| o.method.clone()).collect();
        methods.sort();
        methods
    };
    assert_eq!(methods("3.2.0"), ["COPY", "GET", "QUERY"]);
    assert_eq!(methods("3.1.0"), ["GET"]);
}

#[test]
fn methods_are_found_whatever_their_case_and_told_apart_past_their_eighth_byte() {
    let doc = load(
        r#"{"openapi":"3.2.0","paths":{"/a":{
            "get":{"responses":{"200":{}}},
            "additionalOperations":{
                "PROPFIND-LONG":{"responses":{"200":{}}},
                "PROPFIND-LONGER":{"responses":{"200":{}}},
                "PROPFIND":{"responses":{"200":{}}}}}}}"#,
    );
    let found = |method: &str| {
        doc.find(method, None, Some(("/a", None)))
            .map(|op| doc.operations()[op].method.clone())
    };
    assert_eq!(found("get").as_deref(), Some("GET"));
    assert_eq!(found("GET").as_deref(), Some("GET"));
    assert_eq!(found("propfind").as_deref(), Some("PROPFIND"));
    assert_eq!(found("PROPFIND-LONG").as_deref(), Some("PROPFIND-LONG"));
    assert_eq!(found("propfind-longer").as_deref(), Some("PROPFIND-LONGER"));
    assert_eq!(
        found("PROPFIND-LONGEST"),
        None,
        "same first eight bytes, another name"
    );
    assert_eq!(
        found("PROPFIND-LONGRR"),
        None,
        "same length and first eight bytes"
    );
    assert_eq!(found("POST"), None);
    assert_eq!(found("GE"), None);
}

#[test]
fn json_media_types_and_wildcards_declare_fields_and_others_none() {
    let schema = r#"{"schema":{"type":"object","properties":{"id":{"type":"integer"}}}}"#;
    let fields = |media_type: &str| {
        let doc = one_operation(
            "3.0.3",
            "",
            &format!(r#""200":{{"content":{{"{media_type}":{schema}}}}}"#),
        );
        doc.operations()[0].responses[0].fields.to_vec()
    };
    for json in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/problem+json",
        "*/*",
        "application/*",
    ] {
        assert_eq!(fields(json), ["$.id"], "{json}");
    }
    for other in ["text/plain", "application/xml", "application/jsonx", "text/*"] {
        assert_eq!(fields(other), Vec::<String>::new(), "{other}");
    }
}

#[test]
fn loading_notes_references_it_did_not_follow() {
    let local = one_operation("3.0.3", "", r#""200":{}"#);
    assert_eq!(local.notes(), Vec::<String>::new());
    let external = one_operation(
        "3.0.3",
        "",
        r#""200":{"content":{"application/json":{"schema":{"$ref":"other.yaml#/Pet"}}}}"#,
    );
    assert_eq!(
        external.notes(),
        ["1 $ref(s) point outside the document and were not followed"]
    );
}

/// A document whose components hold `schemas`, with one operation answering 200 with
/// `response_schema` and 201 with `other_schema`.
fn with_schemas(version: &str, schemas: &str, response_schema: &str, other_schema: &str) -> String {
    let content = |schema: &str| format!(r#"{{"content":{{"application/json":{{"schema":{schema}}}}}}}"#);
    format!(
        r#"{{"openapi":"{version}","paths":{{"/a":{{"get":{{"responses":{{"200":{},"201":{}}}}}}}}},"components":{{"schemas":{schemas}}}}}"#,
        content(response_schema),
        content(other_schema)
    )
}

fn fields_by_status(doc: &OpenApiDocument) -> Vec<Vec<String>> {
    doc.operations()[0]
        .responses
        .iter()
        .map(|r| r.fields.to_vec())
        .collect()
}

#[test]
fn a_reference_into_an_array_item_resolves() {
    let doc = load(&with_schemas(
        "3.0.3",
        r#"{"A":{"allOf":[{"type":"object","properties":{"id":{"type":"integer"}}}]}}"#,
        r##"{"$ref":"#/components/schemas/A/allOf/0"}"##,
        r#"{"type":"string"}"#,
    ));
    assert_eq!(fields_by_status(&doc)[0], ["$.id"]);
}

#[test]
fn references_under_properties_named_like_keywords_or_extensions_are_checked() {
    for name in ["default", "example", "enum", "x-note", "examples"] {
        let schemas =
            format!(r##"{{"A":{{"type":"object","properties":{{"{name}":{{"$ref":"#/nowhere"}}}}}}}}"##);
        let text = with_schemas("3.0.3", &schemas, r##"{"$ref":"#/components/schemas/A"}"##, "{}");
        let error = OpenApiDocument::from_str(&text, "documents.json")
            .expect_err(name)
            .to_string();
        assert!(error.contains("#/nowhere"), "{name}: {error}");
    }
    // An extension's value is data, whatever it holds.
    let text = with_schemas(
        "3.0.3",
        r##"{"A":{"type":"object","x-data":{"$ref":"#/nowhere"}}}"##,
        r##"{"$ref":"#/components/schemas/A"}"##,
        "{}",
    );
    assert!(OpenApiDocument::from_str(&text, "documents.json").is_ok());
}

#[test]
fn a_schema_with_keywords_beside_its_reference_has_fields_of_its_own() {
    let doc = load(&with_schemas(
        "3.1.0",
        r#"{"A":{"type":"object","properties":{"id":{"type":"integer"}}}}"#,
        r##"{"$ref":"#/components/schemas/A"}"##,
        r##"{"$ref":"#/components/schemas/A","properties":{"extra":{"type":"string"}}}"##,
    ));
    assert_eq!(
        fields_by_status(&doc),
        [
            vec!["$.id".to_owned()],
            vec!["$.extra".to_owned(), "$.id".to_owned()]
        ]
    );
}

#[test]
fn versions_are_named_as_readers_know_them() {
    for (head, name) in [
        (r#""swagger":"2.0""#, "Swagger 2.0"),
        (r#""openapi":"3.0.3""#, "OpenAPI 3.0"),
        (r#""openapi":"3.1.0""#, "OpenAPI 3.1"),
        (r#""openapi":"3.2.0""#, "OpenAPI 3.2"),
    ] {
        let doc = load(&format!(r#"{{{head},"paths":{{}}}}"#));
        assert_eq!(doc.version().to_string(), name);
    }
}

#[test]
fn a_name_written_twice_reads_once_in_its_first_place_with_its_last_value() {
    let doc = load(
        r#"{"openapi":"3.0.0","paths":{
            "/a":{"get":{"responses":{"200":{}}}},
            "/b":{"get":{"responses":{"200":{}}}},
            "/a":{"post":{"responses":{"201":{},"201":{"content":{"application/json":{"schema":
                {"properties":{"x":{},"x":{"properties":{"y":{}}}}}}}}}}}}}"#,
    );
    assert_eq!(doc.paths(), ["/a", "/b"]);
    let labels: Vec<String> = doc.operations().iter().map(|o| o.label()).collect();
    assert_eq!(labels, ["POST /a", "GET /b"]);
    assert_eq!(fields_by_status(&doc)[0], ["$.x", "$.x.y"]);
}

#[test]
fn a_json_document_loads_alike_read_as_json_and_as_yaml() {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/specs/discord-3.1.json");
    let json = std::fs::read_to_string(&path).unwrap();
    let as_json = OpenApiDocument::from_str(&json, "discord.json").unwrap();
    // JSON is YAML: a comment first sends it to the YAML reader.
    let as_yaml = OpenApiDocument::from_str(&format!("# read as YAML\n{json}"), "discord.yaml").unwrap();
    assert_eq!(as_json.operations(), as_yaml.operations());
    assert_eq!(as_json.paths(), as_yaml.paths());
    assert_eq!(as_json.base_paths(), as_yaml.base_paths());
}

/// A document whose `/a` path item, its responses and its 200 response are each reached
/// through `hops` references in a row (`components/x/p1` → `p2` → … → the object).
fn referenced_everywhere(hops: usize) -> String {
    let chain = |kind: &str, target: &str| -> String {
        (1..=hops)
            .map(|i| {
                let next = if i == hops {
                    target.to_owned()
                } else {
                    format!(r##"{{"$ref":"#/components/{kind}/{}"}}"##, i + 1)
                };
                format!(r#""{i}":{next}"#)
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let first = |kind: &str| format!(r##"{{"$ref":"#/components/{kind}/1"}}"##);
    let response = r#"{"content":{"application/json":{"schema":{"properties":{"x":{}}}}}}"#;
    format!(
        r#"{{"openapi":"3.1.0","paths":{{"/a":{}}},"components":{{
            "items":{{{}}},"all":{{{}}},"ok":{{{}}}}}}}"#,
        first("items"),
        chain("items", &format!(r#"{{"get":{{"responses":{}}}}}"#, first("all"))),
        chain("all", &format!(r#"{{"200":{},"404":{{}}}}"#, first("ok"))),
        chain("ok", response),
    )
}

#[test]
fn path_items_responses_and_responses_given_by_reference_are_followed_to_the_end_of_a_chain() {
    for hops in [1, 2, 64] {
        let doc = load(&referenced_everywhere(hops));
        assert_eq!(doc.operations().len(), 1, "{hops}");
        assert_eq!(fields_by_status(&doc), [vec!["$.x".to_owned()], vec![]], "{hops}");
    }
    // One more is taken for a cycle.
    let error = OpenApiDocument::from_str(&referenced_everywhere(65), "documents.json")
        .expect_err("65 references in a row")
        .to_string();
    assert!(error.contains("cycle"), "{error}");
}
