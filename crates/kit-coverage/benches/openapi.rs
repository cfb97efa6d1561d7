//! The OpenAPI engine on the real documents: loading each one (parse, `$ref` check, operations,
//! field sets, route table), and route lookups on GitHub's 565 path keys: concrete paths,
//! the document's own templates, and the same templates with their parameters renamed.
//!
//! `cargo bench -p kit-coverage --bench openapi`
//!
//! Targets: GitHub (4 MB JSON) loads in ≤ 60 ms, Stripe (4 MB YAML) in ≤ 400 ms, route
//! lookups on the GitHub document ≥ 5 M/s.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kit_coverage::OpenApiDocument;

fn spec(name: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/specs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), text)
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    for name in [
        "github-api.github.com-octokit-2022-07.json",
        "stripe-spec3-2023-09.yaml",
        "kubernetes-swagger2.0-2018-10.json",
        "openai-3.1.yaml",
        "discord-3.1.json",
        "petstore-v3.0.yaml",
    ] {
        let (source, text) = spec(name);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| OpenApiDocument::from_str(black_box(&text), &source).unwrap_or_else(|e| panic!("{e}")));
        });
    }
    group.finish();
}

/// One request per operation of the document, each `{name}` of its path replaced by `with`.
fn requests(doc: &OpenApiDocument, with: &str) -> Vec<(String, String)> {
    doc.operations()
        .iter()
        .map(|o| {
            let mut path = String::new();
            let mut rest = o.path.as_str();
            while let Some(open) = rest.find('{') {
                path.push_str(&rest[..open]);
                path.push_str(with);
                rest = rest[open..]
                    .find('}')
                    .map_or("", |close| &rest[open + close + 1..]);
            }
            path.push_str(rest);
            (o.method.clone(), path)
        })
        .collect()
}

fn lookups(c: &mut Criterion) {
    let (source, text) = spec("github-api.github.com-octokit-2022-07.json");
    let doc = OpenApiDocument::from_str(&text, &source).unwrap_or_else(|e| panic!("{e}"));
    let concrete = requests(&doc, "v42");
    // Every request finds an operation (a literal sibling may win over its own, which is right).
    for (method, path) in &concrete {
        assert!(
            doc.find(method, None, Some((path, None))).is_some(),
            "{method} {path}"
        );
    }
    let mut group = c.benchmark_group("route lookups (GitHub)");
    group.throughput(Throughput::Elements(concrete.len() as u64));
    group.bench_function("concrete paths", |b| {
        b.iter(|| {
            for (method, path) in &concrete {
                black_box(doc.find(method, None, Some((black_box(path), None))));
            }
        });
    });
    let templates: Vec<(String, String)> = doc
        .operations()
        .iter()
        .map(|o| (o.method.clone(), o.path.clone()))
        .collect();
    group.bench_function("route templates", |b| {
        b.iter(|| {
            for (method, template) in &templates {
                black_box(doc.find(method, Some(black_box(template)), None));
            }
        });
    });
    // The same templates with their parameters named otherwise than the document names
    // them (`/repos/{p}/{p}`), as a test's own templates may be.
    let renamed = requests(&doc, "{p}");
    for ((method, template), (_, own)) in renamed.iter().zip(&templates) {
        assert_eq!(
            doc.find(method, Some(template), None)
                .map(|i| &doc.operations()[i].path),
            doc.find(method, Some(own), None)
                .map(|i| &doc.operations()[i].path),
            "{method} {template}"
        );
    }
    group.bench_function("renamed templates", |b| {
        b.iter(|| {
            for (method, template) in &renamed {
                black_box(doc.find(method, Some(black_box(template)), None));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, load, lookups);
criterion_main!(benches);
