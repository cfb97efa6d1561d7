//! The OpenAPI engine on the real documents in `../shared/specs/`: every one loads with the
//! counts of the README's table, and every matching pitfall the README lists is tested on
//! the document that has it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use kit_coverage::{OpenApiDocument, OpenApiVersion, StatusKey};

fn specs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/specs")
}

/// Each document is loaded once per test binary, whichever test asks first.
fn doc(name: &str) -> Arc<OpenApiDocument> {
    static LOADED: OnceLock<Mutex<HashMap<String, Arc<OpenApiDocument>>>> = OnceLock::new();
    let loaded = LOADED.get_or_init(Default::default);
    if let Some(found) = loaded.lock().unwrap().get(name) {
        return Arc::clone(found);
    }
    let doc = Arc::new(
        OpenApiDocument::from_path(specs_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
    );
    loaded.lock().unwrap().insert(name.to_owned(), Arc::clone(&doc));
    doc
}

/// The path key a request lands on: `method`, the kit's route template if any, the URL.
fn route(doc: &OpenApiDocument, method: &str, template: Option<&str>, url: &str) -> Option<String> {
    let (path, query) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
    doc.find(method, template, Some((path, query)))
        .map(|i| doc.operations()[i].path.clone())
}

fn path(doc: &OpenApiDocument, method: &str, url: &str) -> Option<String> {
    route(doc, method, None, url)
}

fn status_key(doc: &OpenApiDocument, method: &str, url: &str, status: u16) -> Option<String> {
    let (p, q) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
    let op = doc.find(method, None, Some((p, q)))?;
    doc.operations()[op]
        .response_for(status)
        .map(|r| r.status.to_string())
}

#[test]
fn every_document_loads_with_the_counts_of_the_readme() {
    // file, version, paths, operations, webhook operations, declared responses
    let table = [
        ("webhook-example-3.1.json", OpenApiVersion::OpenApi31, 0, 0, 1, 0),
        (
            "petstore-expanded-swagger2.0.json",
            OpenApiVersion::Swagger2,
            2,
            4,
            0,
            8,
        ),
        ("petstore-v3.0.yaml", OpenApiVersion::OpenApi30, 13, 19, 0, 64),
        ("discord-3.1.json", OpenApiVersion::OpenApi31, 150, 242, 0, 738),
        ("openai-3.1.yaml", OpenApiVersion::OpenApi31, 182, 288, 16, 465),
        (
            "stripe-spec3-2023-09.yaml",
            OpenApiVersion::OpenApi30,
            318,
            468,
            0,
            936,
        ),
        (
            "github-api.github.com-octokit-2022-07.json",
            OpenApiVersion::OpenApi30,
            565,
            874,
            0,
            2108,
        ),
        (
            "kubernetes-swagger2.0-2018-10.json",
            OpenApiVersion::Swagger2,
            517,
            826,
            0,
            2015,
        ),
    ];
    for (name, version, paths, operations, webhooks, responses) in table {
        let doc = doc(name);
        assert_eq!(
            (
                doc.version(),
                doc.paths().len(),
                doc.operations().len(),
                doc.webhook_operations(),
                doc.declared_responses()
            ),
            (version, paths, operations, webhooks, responses),
            "{name}"
        );
    }
}

#[test]
fn field_denominators_stay_finite_on_recursive_schemas() {
    // Stripe's naive count of response-field paths is 126.7 million; the kit's denominator
    // (properties to 8 members, one $ref hop from a property) is bounded per response.
    for name in [
        "stripe-spec3-2023-09.yaml",
        "github-api.github.com-octokit-2022-07.json",
        "openai-3.1.yaml",
        "kubernetes-swagger2.0-2018-10.json",
        "discord-3.1.json",
    ] {
        let doc = doc(name);
        let per_response: Vec<usize> = doc
            .operations()
            .iter()
            .flat_map(|o| &o.responses)
            .map(|r| r.fields.len())
            .collect();
        let total: usize = per_response.iter().sum();
        let max = per_response.iter().max().copied().unwrap_or(0);
        assert!(total > 1000, "{name}: {total} fields is too few to be real");
        assert!(max < 5_000, "{name}: a response with {max} fields");
        assert!(total < 200_000, "{name}: {total} fields");
    }
    let stripe = doc("stripe-spec3-2023-09.yaml");
    let charge = stripe
        .operations()
        .iter()
        .find(|o| o.method == "GET" && o.path == "/v1/charges/{charge}")
        .unwrap();
    let ok = charge.response_for(200).unwrap();
    for field in [
        "$.id",
        "$.amount",
        "$.customer",
        "$.customer.email",
        "$.outcome.risk_level",
    ] {
        assert!(
            ok.fields.iter().any(|f| f == field),
            "GET /v1/charges/{{charge}} 200 lacks {field}"
        );
    }
    // customer is one hop away; what customer embeds is not expanded again.
    assert!(
        !ok.fields
            .iter()
            .any(|f| f.starts_with("$.customer.default_source."))
    );
    let list = stripe
        .operations()
        .iter()
        .find(|o| o.method == "GET" && o.path == "/v1/charges")
        .unwrap();
    assert!(
        list.response_for(200)
            .unwrap()
            .fields
            .iter()
            .any(|f| f == "$.data[].amount")
    );
}

// === routing pitfalls, each on the document that has it ===

#[test]
fn discord_literal_me_beats_the_user_id_template() {
    let discord = doc("discord-3.1.json");
    let base = "/api/v10";
    assert_eq!(
        path(&discord, "GET", &format!("{base}/users/@me")).as_deref(),
        Some("/users/@me")
    );
    assert_eq!(
        path(&discord, "GET", &format!("{base}/users/%40me")).as_deref(),
        Some("/users/@me")
    );
    assert_eq!(
        path(&discord, "GET", &format!("{base}/users/80351110224678912")).as_deref(),
        Some("/users/{user_id}")
    );
    assert_eq!(
        path(&discord, "GET", &format!("{base}/applications/@me")).as_deref(),
        Some("/applications/@me")
    );
    // Left to right: `@me` is the last segment after a percent-encoded emoji.
    assert_eq!(
        path(
            &discord,
            "PUT",
            &format!("{base}/channels/1/messages/2/reactions/%F0%9F%91%8D/@me")
        )
        .as_deref(),
        Some("/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/@me")
    );
    assert_eq!(
        path(
            &discord,
            "DELETE",
            &format!("{base}/channels/1/messages/2/reactions/%F0%9F%91%8D/42")
        )
        .as_deref(),
        Some("/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/{user_id}")
    );
    // The route template the kit recorded wins over the URL: `{id}` is a template, not @me.
    assert_eq!(
        route(&discord, "GET", Some("/users/{id}"), "/api/v10/users/@me").as_deref(),
        Some("/users/{user_id}")
    );
    assert_eq!(
        route(&discord, "GET", Some("/api/v10/users/@me"), "/api/v10/users/@me").as_deref(),
        Some("/users/@me")
    );
}

#[test]
fn github_two_variables_in_one_segment() {
    let github = doc("github-api.github.com-octokit-2022-07.json");
    assert_eq!(
        path(&github, "GET", "/repos/octocat/hello/compare/main...feature").as_deref(),
        Some("/repos/{owner}/{repo}/compare/{base}...{head}")
    );
    // Without the `...` it is the one-variable form the document also declares.
    assert_eq!(
        path(&github, "GET", "/repos/octocat/hello/compare/abc123").as_deref(),
        Some("/repos/{owner}/{repo}/compare/{basehead}")
    );
    assert_eq!(
        route(&github, "GET", Some("/repos/{o}/{r}/compare/{a}...{b}"), "/x").as_deref(),
        Some("/repos/{owner}/{repo}/compare/{base}...{head}")
    );
}

#[test]
fn github_literal_segments_beat_templates_left_to_right() {
    let github = doc("github-api.github.com-octokit-2022-07.json");
    for (method, url, expected) in [
        (
            "GET",
            "/orgs/acme/actions/runners/downloads",
            "/orgs/{org}/actions/runners/downloads",
        ),
        (
            "GET",
            "/orgs/acme/actions/runners/17",
            "/orgs/{org}/actions/runners/{runner_id}",
        ),
        (
            "GET",
            "/orgs/acme/actions/runners/17/labels",
            "/orgs/{org}/actions/runners/{runner_id}/labels",
        ),
        ("POST", "/repos/o/r/git/refs", "/repos/{owner}/{repo}/git/refs"),
        ("GET", "/user/repos", "/user/repos"),
    ] {
        assert_eq!(
            path(&github, method, url).as_deref(),
            Some(expected),
            "{method} {url}"
        );
    }
    // `/git/refs` declares POST only: a GET there is no operation, whatever a template offers.
    assert_eq!(path(&github, "GET", "/repos/o/r/git/refs"), None);
}

#[test]
fn github_percent_decoding_happens_after_splitting() {
    let github = doc("github-api.github.com-octokit-2022-07.json");
    assert_eq!(
        path(&github, "GET", "/repos/o/r/git/ref/heads%2Fmain").as_deref(),
        Some("/repos/{owner}/{repo}/git/ref/{ref}")
    );
    assert_eq!(
        path(&github, "GET", "/repos/o/r/contents/docs%2Freadme.md").as_deref(),
        Some("/repos/{owner}/{repo}/contents/{path}")
    );
    // Decoded first, `heads/main` would be two segments and match nothing.
    assert_eq!(path(&github, "GET", "/repos/o/r/git/ref/heads/main"), None);
}

#[test]
fn kubernetes_trailing_slashes_are_normalised() {
    let k8s = doc("kubernetes-swagger2.0-2018-10.json");
    for (url, expected) in [
        ("/api", "/api/"),
        ("/api/", "/api/"),
        ("/api/v1", "/api/v1/"),
        ("/apis/apps", "/apis/apps/"),
        (
            "/api/v1/namespaces/default/pods/",
            "/api/v1/namespaces/{namespace}/pods",
        ),
        (
            "/api/v1/namespaces/default/pods/web-0/log",
            "/api/v1/namespaces/{namespace}/pods/{name}/log",
        ),
        (
            "/api/v1/namespaces/default/pods/web-0",
            "/api/v1/namespaces/{namespace}/pods/{name}",
        ),
    ] {
        assert_eq!(path(&k8s, "GET", url).as_deref(), Some(expected), "{url}");
    }
}

#[test]
fn stripe_search_beats_the_charge_template() {
    let stripe = doc("stripe-spec3-2023-09.yaml");
    assert_eq!(
        path(&stripe, "GET", "/v1/charges/search").as_deref(),
        Some("/v1/charges/search")
    );
    assert_eq!(
        path(&stripe, "GET", "/v1/charges/ch_3Nx").as_deref(),
        Some("/v1/charges/{charge}")
    );
    assert_eq!(
        route(&stripe, "GET", Some("/v1/charges/{id}"), "/v1/charges/search").as_deref(),
        Some("/v1/charges/{charge}")
    );
}

#[test]
fn petstore2_base_path_is_stripped_and_can_be_overridden() {
    let petstore = doc("petstore-expanded-swagger2.0.json");
    assert_eq!(petstore.base_paths(), ["/api"]);
    assert_eq!(
        path(&petstore, "GET", "/api/pets/7").as_deref(),
        Some("/pets/{id}")
    );
    assert_eq!(
        path(&petstore, "DELETE", "/api/pets/7").as_deref(),
        Some("/pets/{id}")
    );
    assert_eq!(path(&petstore, "GET", "/api/pets").as_deref(), Some("/pets"));
    // The template is relative to a base address that already holds /api.
    assert_eq!(
        route(&petstore, "GET", Some("/pets/{petId}"), "/api/pets/7").as_deref(),
        Some("/pets/{id}")
    );
    assert_eq!(path(&petstore, "GET", "/v2/pets/7"), None);
    let moved = (*petstore).clone().with_base_paths(["/v2"]);
    assert_eq!(path(&moved, "GET", "/v2/pets/7").as_deref(), Some("/pets/{id}"));
    let petstore3 = doc("petstore-v3.0.yaml");
    assert_eq!(petstore3.base_paths(), ["/api/v3"]);
    assert_eq!(
        path(&petstore3, "GET", "/api/v3/pet/findByStatus").as_deref(),
        Some("/pet/findByStatus")
    );
    assert_eq!(
        path(&petstore3, "GET", "/api/v3/pet/10").as_deref(),
        Some("/pet/{petId}")
    );
}

#[test]
fn openai_query_string_in_a_path_key() {
    let openai = doc("openai-3.1.yaml");
    assert_eq!(openai.base_paths(), ["/v1"]);
    assert_eq!(
        path(&openai, "POST", "/v1/responses?beta=true").as_deref(),
        Some("/responses?beta=true")
    );
    assert_eq!(
        path(&openai, "POST", "/v1/responses").as_deref(),
        Some("/responses")
    );
    assert_eq!(
        path(&openai, "GET", "/v1/responses/resp_1?stream=false&beta=true").as_deref(),
        Some("/responses/{response_id}?beta=true")
    );
    assert_eq!(
        path(&openai, "GET", "/v1/responses/resp_1").as_deref(),
        Some("/responses/{response_id}")
    );
    assert_eq!(
        path(&openai, "POST", "/v1/responses/compact?beta=true").as_deref(),
        Some("/responses/compact?beta=true")
    );
    assert_eq!(
        route(&openai, "POST", Some("/responses"), "/v1/responses?beta=true").as_deref(),
        Some("/responses?beta=true"),
        "the query comes from the URL when the template has none"
    );
}

// === status precedence ===

#[test]
fn discord_exact_429_beats_the_4xx_range() {
    let discord = doc("discord-3.1.json");
    let me = "/api/v10/users/@me";
    assert_eq!(status_key(&discord, "GET", me, 200).as_deref(), Some("200"));
    assert_eq!(status_key(&discord, "GET", me, 429).as_deref(), Some("429"));
    assert_eq!(status_key(&discord, "GET", me, 404).as_deref(), Some("4XX"));
    assert_eq!(status_key(&discord, "GET", me, 401).as_deref(), Some("4XX"));
    assert_eq!(status_key(&discord, "GET", me, 500), None, "nothing declares 5xx");
}

#[test]
fn stripe_default_catches_what_nothing_else_declares() {
    let stripe = doc("stripe-spec3-2023-09.yaml");
    let charge = "/v1/charges/ch_1";
    assert_eq!(status_key(&stripe, "GET", charge, 200).as_deref(), Some("200"));
    assert_eq!(
        status_key(&stripe, "GET", charge, 402).as_deref(),
        Some("default")
    );
    assert_eq!(
        status_key(&stripe, "GET", charge, 500).as_deref(),
        Some("default")
    );
    let petstore = doc("petstore-expanded-swagger2.0.json");
    assert_eq!(
        status_key(&petstore, "GET", "/api/pets/1", 404).as_deref(),
        Some("default")
    );
    let keys: Vec<StatusKey> = stripe
        .operations()
        .iter()
        .flat_map(|o| o.responses.iter().map(|r| r.status))
        .collect();
    assert_eq!(keys.iter().filter(|k| **k == StatusKey::Default).count(), 468);
}

#[test]
fn methods_the_path_does_not_declare_find_no_operation() {
    let discord = doc("discord-3.1.json");
    assert_eq!(path(&discord, "DELETE", "/api/v10/users/@me"), None);
    assert_eq!(path(&discord, "GET", "/api/v10/nowhere"), None);
}

/// A path key with each `{name}` written `{}`.
fn shape(path: &str) -> String {
    let mut shape = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        shape.push_str(&rest[..open]);
        shape.push_str("{}");
        rest = &rest[open + close + 1..];
    }
    shape.push_str(rest);
    shape
}

#[test]
fn every_operation_is_found_by_its_template_however_its_parameters_are_named() {
    for name in [
        "petstore-expanded-swagger2.0.json",
        "petstore-v3.0.yaml",
        "discord-3.1.json",
        "openai-3.1.yaml",
        "stripe-spec3-2023-09.yaml",
        "github-api.github.com-octokit-2022-07.json",
        "kubernetes-swagger2.0-2018-10.json",
    ] {
        let doc = doc(name);
        let mut checked = 0;
        for op in doc.operations().iter().filter(|op| !op.path.contains('?')) {
            let found = |template: &str| {
                doc.find(&op.method, Some(template), None)
                    .map(|i| &doc.operations()[i])
            };
            // Its own key, or the first declared with the same shape.
            let own = found(&op.path).unwrap_or_else(|| panic!("{name}: {} {}", op.method, op.path));
            assert_eq!(own.method, op.method, "{name}: {}", op.path);
            assert_eq!(
                shape(&own.path),
                shape(&op.path),
                "{name}: {} {}",
                op.method,
                op.path
            );
            let renamed = shape(&op.path).replace("{}", "{renamed}");
            let by_renamed = found(&renamed).map(|o| (&o.method, &o.path));
            assert_eq!(by_renamed, Some((&own.method, &own.path)), "{name}: {renamed}");
            checked += 1;
        }
        assert!(checked > 0, "{name}");
    }
}
