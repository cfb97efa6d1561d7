//! A shape assertion on a 1 MiB JSON body, against a plain `serde_json::from_slice` of it.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//!
//! `cargo bench -p kit-rest --bench shape`
//!
//! The response is fetched once from a loopback server; each measurement asserts on unparsed
//! copies of it, so the parse is paid every time and the HTTP round trip never. The four
//! variants are measured in turn, round after round, in one process (allocator and caches warm
//! alike), and the median of each is reported with its ratio to the plain parse. Trees are
//! freed outside the timed sections for all four. A first shape is matched on the body's text;
//! a read, or a second shape, parses the `Value` they share.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use kit_core::json::json_value;
use kit_core::*;
use kit_rest::*;
use serde_json::json;

#[path = "../tests/common/mod.rs"]
mod common;

fn body() -> String {
    let mut items = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < 1024 * 1024 {
        let item = json!({ "id": i, "sku": format!("SKU-{i:06}"), "quantity": i % 7 + 1, "price": 9.99,
            "tags": ["a", "b"], "customer": { "name": format!("Customer {i}"), "tier": "gold" } });
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    json!({ "page": 1, "total": items.len(), "items": items }).to_string()
}

fn fetch(body: String) -> RestResponse {
    let base = common::serve(Router::new().route(
        "/big",
        get(move || async move { ([("content-type", "application/json")], body) }),
    ));
    let mut builder = KitBuilder::new(Configuration::new());
    builder.add_rest(|rest| {
        rest.add_client().base_url(&base);
    });
    let built = builder.build().unwrap();
    let run = KitRun::with_secrets(
        built.host,
        Bus::builder().start(),
        RunId::new("bench").unwrap(),
        Arc::new(SecretRegistry::new()),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = run.begin_test(TestStarted::new("bench"));
        ctx.rest().get("/big").await
    })
}

const ROUNDS: usize = 15;
const PER_ROUND: u32 = 8;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[allow(clippy::print_stdout)]
fn main() {
    let response = fetch(body());
    let bytes = response.content_bytes().clone();
    let shape = json!({
        "page": 1, "total": json_value::greater_than(0),
        "items": json_value::array_containing([json!({ "sku": "SKU-000042", "customer": { "tier": "gold" } })]),
    });
    let (mut plain, mut one, mut read, mut many) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS + 2 {
        let mut keep = Vec::new();
        let t = Instant::now();
        for _ in 0..PER_ROUND {
            keep.push(serde_json::from_slice::<serde_json::Value>(black_box(&bytes)).ok());
        }
        let p = t.elapsed() / PER_ROUND;
        drop(keep);

        let copies: Vec<RestResponse> = (0..PER_ROUND).map(|_| response.__unparsed_copy()).collect();
        let t = Instant::now();
        for r in &copies {
            r.should().match_shape(&shape);
        }
        let o = t.elapsed() / PER_ROUND;
        drop(copies);

        let copies: Vec<RestResponse> = (0..PER_ROUND).map(|_| response.__unparsed_copy()).collect();
        let t = Instant::now();
        for r in &copies {
            r.should().match_shape(&shape);
            black_box(r.read_as_json_at::<u64>("$.total"));
        }
        let r1 = t.elapsed() / PER_ROUND;
        drop(copies);

        let copies: Vec<RestResponse> = (0..PER_ROUND).map(|_| response.__unparsed_copy()).collect();
        let t = Instant::now();
        for r in &copies {
            r.should().have_http_status(http::StatusCode::OK);
            for _ in 0..5 {
                r.should().match_shape(&shape);
            }
            black_box(r.read_as_json_at::<u64>("$.total"));
            black_box(r.read_as_json_at::<String>("$.items[42].sku"));
            black_box(r.read_required_at::<u64>("$.page"));
        }
        let m = t.elapsed() / PER_ROUND;
        drop(copies);
        // The first two rounds warm the allocator up.
        if round >= 2 {
            plain.push(p);
            one.push(o);
            read.push(r1);
            many.push(m);
        }
    }
    let (plain, one, read, many) = (median(plain), median(one), median(read), median(many));
    let ratio = |d: Duration| d.as_secs_f64() / plain.as_secs_f64();
    println!(
        "1 MiB JSON ({} bytes), median of {ROUNDS} rounds of {PER_ROUND}",
        bytes.len()
    );
    println!("{:<48} {:>10} {:>8}", "", "time", "ratio");
    println!(
        "{:<48} {:>10.2?} {:>8.3}",
        "serde_json::from_slice::<Value> (reference)", plain, 1.0
    );
    println!(
        "{:<48} {:>10.2?} {:>8.3}",
        "should().match_shape",
        one,
        ratio(one)
    );
    println!(
        "{:<48} {:>10.2?} {:>8.3}",
        "match_shape, then one read",
        read,
        ratio(read)
    );
    println!(
        "{:<48} {:>10.2?} {:>8.3}",
        "status + 5 shapes + 3 reads (parsed once)",
        many,
        ratio(many)
    );
}
