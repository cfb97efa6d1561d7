//! Coverage live and replayed: the collectors registered on the bus while tests talk to the
//! orders API give the very report `kit-cli coverage` computes from the run's archive; and
//! the gates' exit codes, configured and given as flags.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use axum::http::StatusCode;
use kit_core::json::json_value;
use kit_core::report::Report;
use kit_core::*;
use kit_coverage::{OpenApiCoverageCollector, RestCoverageCollector, RestTrafficCoverageCollector};
use kit_e2e::*;
use kit_rest::*;
use kit_trace::{ArchiveWriter, RunManifest};
use serde_json::json;

fn kit_cli() -> Command {
    Command::new(binary("kit-cli", "kit-cli"))
}

fn openapi_yaml() -> PathBuf {
    workspace_root().join("examples/orders/openapi.yaml")
}

/// The live collectors, kept readable while the bus owns them.
struct Live {
    rest: SharedCollector<RestCoverageCollector>,
    traffic: SharedCollector<RestTrafficCoverageCollector>,
    openapi: SharedCollector<OpenApiCoverageCollector>,
}

impl Live {
    fn report(&self) -> Report {
        let mut report = Report::default();
        self.rest.with(|c| c.write_report(&mut report));
        self.traffic.with(|c| c.write_report(&mut report));
        self.openapi.with(|c| c.write_report(&mut report));
        report
    }
}

/// Runs a small suite against the orders API with the collectors live; returns them and
/// the run's archive.
async fn run_suite(results: &Path) -> (Live, PathBuf) {
    let base = crate::loopback::serve(orders_example::router());
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("orders", |app| {
        app.add_rest(|rest| {
            rest.add_client().base_url(&format!("{base}/api"));
        });
    });
    let host = builder.build().unwrap().host;
    let run_id = RunId::new("coverage-live").unwrap();
    let writer = ArchiveWriter::create(results, RunManifest::new(run_id.clone(), "cargo-test")).unwrap();
    let archive = writer.path().to_owned();
    let live = Live {
        rest: SharedCollector::new(RestCoverageCollector::new()),
        traffic: SharedCollector::new(RestTrafficCoverageCollector::new()),
        openapi: SharedCollector::new(OpenApiCoverageCollector::from_spec(openapi_yaml()).unwrap()),
    };
    let bus = Bus::builder()
        .collector(writer)
        .collector(live.rest.clone())
        .collector(live.traffic.clone())
        .collector(live.openapi.clone())
        .start();
    let run = KitRun::with_secrets(host, bus, run_id, Arc::new(SecretRegistry::new()));
    let test = |name: &str| run.begin_test(TestStarted::new(name).with_application(Some("orders".into())));

    // Four tests at once, so their events interleave on the bus.
    let places = async {
        let ctx = test("places_and_fetches");
        let created = ctx
            .rest()
            .body(&json!({ "sku": "A-1", "quantity": 2 }))
            .post("/orders")
            .await;
        created
            .should()
            .have_http_status(StatusCode::CREATED)
            .match_shape(json!({ "id": json_value::any_number(), "sku": "A-1", "quantity": 2 }));
        let id = created.read_required::<serde_json::Value>()["id"]
            .as_u64()
            .unwrap();
        let fetched = ctx.rest().path_param("id", id).get("/orders/{id}").await;
        fetched
            .should()
            .have_http_status(StatusCode::OK)
            .match_shape(json!({ "status": json_value::any_string() }));
        ctx.finish(TestOutcome::Passed).unwrap();
    };
    let lists = async {
        let ctx = test("lists");
        // Its own order first, so the list is never empty whatever the other tests do.
        ctx.rest()
            .body(&json!({ "sku": "B-2", "quantity": 1 }))
            .post("/orders")
            .await;
        let list = ctx.rest().get("/orders").await;
        list.should().have_http_status(StatusCode::OK);
        ctx.finish(TestOutcome::Passed).unwrap();
    };
    let rejects = async {
        let ctx = test("rejects_and_misses");
        let bad = ctx
            .rest()
            .body(&json!({ "sku": "A-1", "quantity": 0 }))
            .post("/orders")
            .await;
        bad.should()
            .have_http_status(StatusCode::BAD_REQUEST)
            .match_shape(json!({ "title": json_value::any_string() }));
        let missing = ctx.rest().path_param("id", 999_999).get("/orders/{id}").await;
        missing.should().have_http_status(StatusCode::NOT_FOUND);
        ctx.finish(TestOutcome::Passed).unwrap();
    };
    let strays = async {
        let ctx = test("strays");
        // Not in the document: a path it lacks, and a method its path does not declare.
        ctx.rest().get("/metrics").await;
        ctx.rest().put("/health").await;
        ctx.finish(TestOutcome::Passed).unwrap();
    };
    tokio::join!(places, lists, rejects, strays);
    run.bus().shutdown().unwrap();
    (live, archive)
}

#[tokio::test]
async fn the_live_report_equals_kit_cli_replaying_the_archive() {
    let results = tempfile::tempdir().unwrap();
    let (live, archive) = run_suite(results.path()).await;
    let live = live.report();

    let output = run(kit_cli()
        .args(["coverage", "--format", "json", "--openapi"])
        .arg(openapi_yaml())
        .arg(&archive)
        .current_dir(results.path()));
    assert!(output.status.success(), "{}", describe(&output));
    let view: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let replayed: Report = serde_json::from_value(view["coverage"].clone()).unwrap();
    assert_eq!(live, replayed, "the live report and the replayed one differ");

    // And the report says what happened.
    let metric = |name: &str| {
        let m = live.metric(name).unwrap();
        (m.covered, m.total)
    };
    assert_eq!(
        metric("operations"),
        (3, 5),
        "GET /orders, POST /orders, GET /orders/{{id}}"
    );
    assert_eq!(metric("statuses"), (5, 8));
    let fields = live.section("openapi.fields").unwrap();
    let post_201 = fields
        .rows
        .iter()
        .find(|r| r[0] == "POST" && r[2] == "201")
        .unwrap();
    assert_eq!(post_201[3], "3/4", "{post_201:?}");
    assert_eq!(post_201[4], "$.status");
    let undescribed = live.section("openapi.undescribed").unwrap();
    let reasons: Vec<(&str, &str, &str)> = undescribed
        .rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[3].as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("PUT", "/health", "`/health` declares GET"),
            ("GET", "/metrics", "no path of the document matches"),
        ]
    );
    let traffic = live.section("traffic.fields").unwrap();
    let list = traffic
        .rows
        .iter()
        .find(|r| r[0] == "GET" && r[1] == "/orders")
        .unwrap();
    assert_eq!(
        list[5], "$[].id, $[].quantity, $[].sku, $[].status",
        "observed, never asserted"
    );
}

#[tokio::test]
async fn gates_exit_1_with_a_line_per_gate_and_0_when_met() {
    let results = tempfile::tempdir().unwrap();
    let (_, archive) = run_suite(results.path()).await;
    let coverage = |args: &[&str]| {
        run(kit_cli()
            .arg("coverage")
            .arg(&archive)
            .arg("--openapi")
            .arg(openapi_yaml())
            .args(args)
            .current_dir(results.path()))
    };
    let met = coverage(&["--fail-under-operations", "60", "--fail-under-statuses", "50"]);
    assert_eq!(met.status.code(), Some(0), "{}", describe(&met));

    let short = coverage(&[
        "--fail-under-operations",
        "80",
        "--fail-under-statuses",
        "50",
        "--fail-under-fields",
        "90%",
    ]);
    assert_eq!(short.status.code(), Some(1), "{}", describe(&short));
    let stderr = String::from_utf8_lossy(&short.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert_eq!(
        lines[0],
        "kit-cli: gate failed: operations coverage 60.0% (3 of 5) is below the gate of 80%"
    );
    assert!(
        lines[1].starts_with("kit-cli: gate failed: fields coverage "),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&short.stdout).contains("Operations never called"));

    // Excluding what was never called brings the operations figure to the gate.
    let excluded = coverage(&[
        "--fail-under-operations",
        "100",
        "--exclude",
        "DELETE /orders/{id}",
        "--exclude",
        "health",
    ]);
    assert_eq!(excluded.status.code(), Some(0), "{}", describe(&excluded));

    // Gates from configuration, overridden by a flag.
    std::fs::write(
        results.path().join("kit.toml"),
        "[Kit.Coverage]\nOpenApi = \"orders.yaml\"\n[Kit.Coverage.Gates]\nOperations = 90\n",
    )
    .unwrap();
    std::fs::copy(openapi_yaml(), results.path().join("orders.yaml")).unwrap();
    let configured = run(kit_cli()
        .arg("coverage")
        .arg(&archive)
        .current_dir(results.path()));
    assert_eq!(configured.status.code(), Some(1), "{}", describe(&configured));
    assert!(String::from_utf8_lossy(&configured.stderr).contains("below the gate of 90%"));
    let overridden = run(kit_cli()
        .args(["coverage", "--fail-under-operations", "50"])
        .arg(&archive)
        .current_dir(results.path()));
    assert_eq!(overridden.status.code(), Some(0), "{}", describe(&overridden));
    let from_env = run(kit_cli()
        .arg("coverage")
        .arg(&archive)
        .env("Kit__Coverage__Gates__Operations", "40")
        .current_dir(results.path()));
    assert_eq!(from_env.status.code(), Some(0), "{}", describe(&from_env));

    // Unusable inputs are exit 2, one line naming the input.
    for (args, expected) in [
        (vec!["--openapi", "missing.yaml"], "missing.yaml: cannot read it"),
        (vec!["--exclude", "GET /nope"], "`GET /nope` names no operation"),
        (
            vec!["--fail-under-fields", "120"],
            "not a percentage from 0 to 100",
        ),
    ] {
        let output = coverage_with(&archive, results.path(), &args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", describe(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

fn coverage_with(archive: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    run(kit_cli().arg("coverage").arg(archive).args(args).current_dir(dir))
}

/// A number under a sensitive name is redacted and remembered (rule 8); met again under a
/// plain name in the same body, it is replaced there too, as the string `"[REDACTED]"`. A bare
/// `[REDACTED]` would end traffic coverage's reading of the body there, and the fields after
/// it would never be observed.
#[tokio::test]
async fn a_secret_number_met_twice_leaves_the_body_readable_to_traffic_coverage() {
    let app = axum::Router::new().route(
        "/session",
        axum::routing::get(|| async {
            axum::Json(
                json!({ "token": 12345678, "user_id": 12345678, "name": "ada", "plan": { "tier": "pro" } }),
            )
        }),
    );
    let base = crate::loopback::serve(app);
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_application("accounts", |app| {
        app.add_rest(|rest| {
            rest.add_client().base_url(&base);
        });
    });
    let host = builder.build().unwrap().host;
    let traffic = SharedCollector::new(RestTrafficCoverageCollector::new());
    let bus = Bus::builder().collector(traffic.clone()).start();
    let run = KitRun::with_secrets(
        host,
        bus,
        RunId::new("secret-number").unwrap(),
        Arc::new(SecretRegistry::new()),
    );
    let ctx = run.begin_test(TestStarted::new("signs_in").with_application(Some("accounts".into())));
    let session = ctx.rest().get("/session").await;
    session.should().have_http_status(StatusCode::OK);
    ctx.finish(TestOutcome::Passed).unwrap();
    run.bus().shutdown().unwrap();

    let observed = traffic.with(|t| {
        t.endpoints()
            .flat_map(|e| e.observed.iter().cloned())
            .collect::<Vec<_>>()
    });
    assert_eq!(
        observed,
        ["$.name", "$.plan", "$.plan.tier", "$.token", "$.user_id"]
    );
}
