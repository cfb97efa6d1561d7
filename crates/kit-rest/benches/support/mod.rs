//! What the `vs_reqwest` and `per_test` benches share: the API's item, the shape each kit
//! request asserts on it, the TLS configuration every client is built with, a test's runtime,
//! the CPU time by thread, and how their knobs are read. Included by path (`#[path]`): each
//! bench is a binary of its own, and each declares `common` (`tests/common`) beside it.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use kit_core::json::json_value;
use serde_json::{Value, json};

/// The bench knobs `kit-trace`'s `bus` bench reads too: the archive's, and how any is read.
#[path = "../../../kit-trace/benches/support/knobs.rs"]
pub(crate) mod knobs;

/// The item the API serves at `/items/{id}`: about 600 bytes of JSON.
pub(crate) fn item(id: u64) -> Value {
    json!({
        "id": id, "sku": format!("SKU-{id:06}"), "name": "A lamp with a long enough name to matter",
        "quantity": 3, "price": 19.99, "currency": "EUR", "status": "placed",
        "tags": ["home", "light", "sale"],
        "customer": { "id": 42, "name": "Ada Lovelace", "email": "ada@example.com", "tier": "gold" },
        "lines": [ { "sku": "A-1", "qty": 2, "price": 5.5 }, { "sku": "B-2", "qty": 1, "price": 8.99 } ],
        "placed_at": "2026-11-22T10:00:00Z", "note": "deliver to the back door, ring twice please",
    })
}

/// The shape each kit request asserts on an item.
pub(crate) fn item_shape() -> Value {
    json!({
        "id": json_value::any_number(), "sku": json_value::any_string(), "quantity": json_value::greater_than(0),
        "customer": { "name": json_value::not_null() },
        "lines": json_value::each(json!({ "sku": json_value::any_string() })),
    })
}

/// The TLS configuration the kit shares among its clients (no TLS is spoken here; building a
/// client still loads it).
pub(crate) fn tls_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider)).unwrap();
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth()
}

/// `name` read as a whole number, or `default` when unset; any other value stops the bench
/// with a message naming it ([`knobs::knob`]).
pub(crate) fn whole_knob(name: &str, default: usize) -> usize {
    knobs::knob(name, "a whole number", |_| true, default)
}

/// As [`whole_knob`], zero refused: a count of rounds, requests or tests.
pub(crate) fn positive_knob(name: &str, default: usize) -> usize {
    knobs::knob(name, "a positive whole number", |&n| n > 0, default)
}

/// A test's runtime, as the kit's runner makes one: current-thread, with I/O and time.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// CPU time by thread: the client (this main thread, which runs the runtime every request is
/// sent from), the test server's thread, the bus's dispatcher, and the rest (tokio's blocking
/// pool, where kit tests in flight together ended until issue 9's seventy-third stop, and do
/// with `KIT_BENCH_FINISH=blocking-pool`). Read from `/proc/self/task/*/schedstat` (Linux;
/// zero elsewhere), in nanoseconds. A thread that ends within a round takes its time with it, so the parts can
/// sum to less than the process's total.
#[derive(Clone, Copy, Default)]
pub(crate) struct ThreadCpu(pub(crate) [Duration; 4]);

impl ThreadCpu {
    pub(crate) const ROLES: [&'static str; 4] = ["client", "server", "dispatcher", "other"];

    pub(crate) fn now() -> Self {
        let mut cpu = ThreadCpu::default();
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return cpu;
        };
        let main = std::process::id().to_string();
        for task in tasks.flatten() {
            let path = task.path();
            let ns = std::fs::read_to_string(path.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or(0);
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let role = match comm.trim() {
                _ if task.file_name().to_str() == Some(main.as_str()) => 0,
                crate::common::SERVER_THREAD => 1,
                "kit-bus" => 2,
                _ => 3,
            };
            cpu.0[role] += Duration::from_nanos(ns);
        }
        cpu
    }

    /// The bus's dispatcher's part.
    pub(crate) fn dispatcher(self) -> Duration {
        self.0[2]
    }

    pub(crate) fn since(self, earlier: ThreadCpu) -> ThreadCpu {
        ThreadCpu(std::array::from_fn(|i| self.0[i].saturating_sub(earlier.0[i])))
    }
}
