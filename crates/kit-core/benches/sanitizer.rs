//! Sanitizer throughput on a 1 MiB JSON body, beside a plain `serde_json::from_slice` of the
//! same bytes for scale, and on a 1 MiB HTML page; and the leak scan `kit-cli audit` runs over
//! every entry of an archive.
//!
//! `cargo bench -p kit-core --bench sanitizer`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kit_core::KitHttpAttachmentOptions;
use kit_core::redact::{LeakScanner, Sanitizer, SecretRegistry};

/// About 1 MiB of orders, one sensitive field in every object (or, `named` false, none),
/// some nesting.
fn orders(named: bool) -> Vec<u8> {
    let sensitive = if named { "token" } else { "ticket" };
    let mut out = String::from("[");
    let mut i = 0;
    while out.len() < 1024 * 1024 {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            r#"{{"id":{i},"sku":"SKU-{i:06}","quantity":{q},"price":{p}.99,"customer":{{"name":"Customer {i}","email":"c{i}@example.com","{sensitive}":"tok-{i:08x}-abcdef"}},"lines":[{{"sku":"A","qty":1}},{{"sku":"B","qty":2}}],"note":"deliver to the back door, ring twice"}}"#,
            q = i % 7 + 1,
            p = i % 100
        ));
        i += 1;
    }
    out.push(']');
    out.into_bytes()
}

/// About 1 MiB of HTML as a server renders it: each block a form with a hidden sensitive
/// field, a script holding its state as JSON and a configuration as JavaScript, a text area
/// and a paragraph. Every block's values differ, so each is a new secret on the first pass.
fn page() -> Vec<u8> {
    let mut out = String::from("<!doctype html><html><head><title>Orders</title></head><body>\n");
    let mut i = 0;
    while out.len() < 1024 * 1024 {
        out.push_str(&format!(
            r#"<section class="order" data-id="{i}"><form method="post" action="/orders/{i}">
<input type="hidden" name="csrf_token" value="csrf-{i:08x}-abcdef"><input type="hidden" name="id_token" value="idt-{i:08x}-abcdef">
<textarea name="note" rows="3">deliver to the back door, ring twice &amp; wait</textarea><button type="submit">Save</button></form>
<script type="application/json" id="state-{i}">{{"order":{{"id":{i},"sku":"SKU-{i:06}","access_token":"acc-{i:08x}-abcdef","lines":[1,2]}}}}</script>
<script>window.config_{i} = {{ apiKey: "key-{i:08x}-abcdef", region: "eu-west-1", retries: 3 }}; if (a < b) {{ go(); }}</script>
<p>Order <b>{i}</b> for <a href="/customers/{i}">Customer {i}</a>, placed today.</p></section>
"#
        ));
        i += 1;
    }
    out.push_str("</body></html>");
    out.into_bytes()
}

/// A sanitizer with the default options that knows 100 secrets.
fn sanitizer() -> Sanitizer {
    let secrets = Arc::new(SecretRegistry::new());
    for n in 0..100 {
        secrets.remember(&format!("known-secret-{n:04}-xyz"));
    }
    Sanitizer::new(&KitHttpAttachmentOptions::default(), secrets)
}

fn bench(c: &mut Criterion) {
    let body = orders(true);
    let unnamed = orders(false);
    // Learns the body's 5 000 tokens as secrets on its first pass, as a run would.
    let learning = sanitizer();
    let mut group = c.benchmark_group("1 MiB JSON");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("serde_json::from_slice (reference)", |b| {
        b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(black_box(&body)).ok()))
    });
    group.bench_function("sanitizer.body (redact, 100 known secrets, cap 65 536)", |b| {
        b.iter(|| black_box(learning.body(Some("application/json"), black_box(&body))))
    });
    let uncapped = learning.clone().with_max_body_length(usize::MAX);
    group.bench_function("sanitizer.body (redact, 100 known secrets, no cap)", |b| {
        b.iter(|| black_box(uncapped.body(Some("application/json"), black_box(&body))))
    });
    // Most bodies name no sensitive property: they pass unchanged once none is found. A
    // sanitizer of its own, which has not learnt the other body's tokens (this body has the
    // same values under another name, and would be searched for 5 000 more secrets).
    let fresh = sanitizer();
    group.bench_function(
        "sanitizer.body (no sensitive name in it, 100 known secrets, cap 65 536)",
        |b| b.iter(|| black_box(fresh.body(Some("application/json"), black_box(&unnamed)))),
    );
    group.finish();

    // HTML is read as markup: form fields by name, scripts as JSON and as JavaScript, text
    // areas as text. Learns the page's secrets on its first pass, as the JSON rows do.
    let html = page();
    let learning_html = sanitizer().with_max_body_length(usize::MAX);
    let mut group = c.benchmark_group("1 MiB HTML");
    group.throughput(Throughput::Bytes(html.len() as u64));
    group.bench_function("sanitizer.body (redact, 100 known secrets, no cap)", |b| {
        b.iter(|| black_box(learning_html.body(Some("text/html"), black_box(&html))))
    });
    group.finish();

    // What `kit-cli audit` does to each entry: a run's secrets known by fingerprint (their
    // lengths spread, as tokens', keys' and passwords' are), or three given in clear. The
    // body holds none of them: every window is looked at.
    let mut group = c.benchmark_group("leak scan, 1 MiB");
    group.throughput(Throughput::Bytes(body.len() as u64));
    let run = SecretRegistry::new();
    for n in 0..100 {
        run.remember(&format!("secret-{n:03}-{}", "x".repeat(n % 12)));
    }
    let mut fingerprinted = LeakScanner::new();
    for fingerprint in run.fingerprints_from(0).0 {
        fingerprinted.add_fingerprint(&run.salt(), fingerprint);
    }
    group.bench_function("100 secrets of 12 lengths, by fingerprint", |b| {
        b.iter(|| black_box(fingerprinted.find(black_box(&body))))
    });
    // The same secrets in clear, as a secrets file gives them: one automaton for every length.
    let mut hundred_in_clear = LeakScanner::new();
    for n in 0..100 {
        hundred_in_clear.add_secret(format!("secret-{n:03}-{}", "x".repeat(n % 12)).as_bytes());
    }
    group.bench_function("100 secrets of 12 lengths, in clear", |b| {
        b.iter(|| black_box(hundred_in_clear.find(black_box(&body))))
    });
    let mut in_clear = LeakScanner::new();
    for secret in ["tok-abcdef123456", "secret-value-xyz", "ghp_abcdefghijklmnop"] {
        in_clear.add_secret(secret.as_bytes());
    }
    group.bench_function("3 secrets of 2 lengths, in clear", |b| {
        b.iter(|| black_box(in_clear.find(black_box(&body))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
