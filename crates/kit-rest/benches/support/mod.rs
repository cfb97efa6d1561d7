//! What the `vs_reqwest` and `per_test` benches share: the API's item, the shape each kit
//! request asserts on it, and the TLS configuration every client is built with. Included by
//! path (`#[path]`): each bench is a binary of its own.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use kit_core::json::json_value;
use serde_json::{Value, json};

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
