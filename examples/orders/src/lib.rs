//! A small orders API: the application the example suite tests.
//!
//! | method | route | answers |
//! | --- | --- | --- |
//! | GET | `/api/health` | 200 `{"status":"ok"}` |
//! | GET | `/api/orders` | 200, every order |
//! | POST | `/api/orders` | 201 with `Location`, or 400 for a quantity of zero |
//! | GET | `/api/orders/{id}` | 200, or 404 |
//! | DELETE | `/api/orders/{id}` | 204, or 404 |
//!
//! Its OpenAPI document is `openapi.yaml` beside this crate's `Cargo.toml`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// An order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Order {
    /// Its id.
    pub id: u64,
    /// What was ordered.
    pub sku: String,
    /// How many.
    pub quantity: u32,
    /// `placed`.
    pub status: String,
}

/// What a client sends to place an order.
#[derive(Debug, Deserialize)]
pub struct NewOrder {
    /// What to order.
    pub sku: String,
    /// How many; at least one.
    pub quantity: u32,
}

#[derive(Clone, Default)]
struct Store {
    inner: Arc<Mutex<(u64, BTreeMap<u64, Order>)>>,
}

impl Store {
    fn with<R>(&self, f: impl FnOnce(&mut (u64, BTreeMap<u64, Order>)) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The API, with an empty store.
pub fn router() -> Router {
    Router::new()
        .route("/api/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/api/orders", get(list).post(create))
        .route("/api/orders/{id}", get(fetch).delete(remove))
        .with_state(Store::default())
}

async fn list(State(store): State<Store>) -> Json<Vec<Order>> {
    Json(store.with(|(_, orders)| orders.values().cloned().collect()))
}

async fn create(State(store): State<Store>, Json(new): Json<NewOrder>) -> Response {
    if new.quantity == 0 {
        let problem = json!({ "title": "invalid order", "detail": "quantity must be at least 1" });
        return (StatusCode::BAD_REQUEST, Json(problem)).into_response();
    }
    let order = store.with(|(next, orders)| {
        *next += 1;
        let order = Order {
            id: *next,
            sku: new.sku,
            quantity: new.quantity,
            status: "placed".into(),
        };
        orders.insert(order.id, order.clone());
        order
    });
    let location = format!("/api/orders/{}", order.id);
    (StatusCode::CREATED, [(header::LOCATION, location)], Json(order)).into_response()
}

async fn fetch(State(store): State<Store>, Path(id): Path<u64>) -> Response {
    match store.with(|(_, orders)| orders.get(&id).cloned()) {
        Some(order) => Json(order).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "title": "no such order", "id": id })),
        )
            .into_response(),
    }
}

async fn remove(State(store): State<Store>, Path(id): Path<u64>) -> StatusCode {
    match store.with(|(_, orders)| orders.remove(&id)) {
        Some(_) => StatusCode::NO_CONTENT,
        None => StatusCode::NOT_FOUND,
    }
}
