//! The example suite: the orders API tested through the kit.
//!
//! `cargo test -p orders-example` runs it against the in-process server; each run is
//! archived in `examples/orders/TestResults/`, which `kit-cli report` reads.

use kit::prelude::*;
use serde_json::Value;

#[kit::host]
fn host(kit: &mut KitBuilder) {
    kit.add_application("orders", |app| {
        app.add_in_process_server(orders_example::router);
        app.add_rest(|rest| {
            rest.add_client()
                .endpoint("api")
                .add_collector::<RestCoverageCollector>();
        });
    });
}

async fn place(ctx: &KitExecutionContext, sku: &str, quantity: u32) -> Value {
    let response = ctx
        .rest()
        .body(&json!({ "sku": sku, "quantity": quantity }))
        .post("/orders")
        .await;
    assert_eq!(
        response.status_code(),
        StatusCode::CREATED,
        "{}",
        response.content()
    );
    serde_json::from_str(response.content()).expect("an order as JSON")
}

#[kit::test]
#[application("orders")]
async fn health_is_ok(ctx: KitExecutionContext) {
    let response = ctx.rest().get("/health").await;
    assert_eq!(response.status_code(), StatusCode::OK);
    assert_eq!(response.content(), r#"{"status":"ok"}"#);
}

#[kit::test]
#[application("orders")]
async fn creates_an_order(ctx: KitExecutionContext) {
    let response = ctx
        .rest()
        .body(&json!({ "sku": "A-1", "quantity": 2 }))
        .post("/orders")
        .await;
    assert_eq!(response.status_code(), StatusCode::CREATED);
    let location = response.headers().get("location").expect("a Location header");
    let order: Value = serde_json::from_str(response.content()).unwrap();
    assert_eq!(location.to_str().unwrap(), format!("/api/orders/{}", order["id"]));
    assert_eq!(order["quantity"], 2);
    assert_eq!(order["status"], "placed");
}

#[kit::test]
#[application("orders")]
async fn fetches_a_placed_order(ctx: KitExecutionContext) {
    let placed = place(&ctx, "B-7", 1).await;
    let response = ctx
        .rest()
        .path_param("id", &placed["id"])
        .get("/orders/{id}")
        .await;
    assert_eq!(response.status_code(), StatusCode::OK);
    let fetched: Value = serde_json::from_str(response.content()).unwrap();
    assert_eq!(fetched, placed);
}

#[kit::test]
#[application("orders")]
async fn an_unknown_order_is_not_found(ctx: KitExecutionContext) {
    let response = ctx.rest().path_param("id", 999_999).get("/orders/{id}").await;
    assert_eq!(response.status_code(), StatusCode::NOT_FOUND);
}

#[kit::test]
#[application("orders")]
async fn a_zero_quantity_is_rejected(ctx: KitExecutionContext) {
    let response = ctx
        .rest()
        .body(&json!({ "sku": "C-3", "quantity": 0 }))
        .post("/orders")
        .await;
    assert_eq!(response.status_code(), StatusCode::BAD_REQUEST);
    assert!(response.content().contains("quantity must be at least 1"));
}

#[kit::test]
#[application("orders")]
async fn deletes_an_order(ctx: KitExecutionContext) -> Result<(), String> {
    let placed = place(&ctx, "D-4", 3).await;
    let deleted = ctx
        .rest()
        .path_param("id", &placed["id"])
        .delete("/orders/{id}")
        .await;
    if deleted.status_code() != StatusCode::NO_CONTENT {
        return Err(format!("delete answered {}", deleted.status_code()));
    }
    let again = ctx
        .rest()
        .path_param("id", &placed["id"])
        .get("/orders/{id}")
        .await;
    assert_eq!(again.status_code(), StatusCode::NOT_FOUND);
    Ok(())
}

#[kit::test]
#[application("orders")]
async fn lists_placed_orders(ctx: KitExecutionContext) {
    let placed = place(&ctx, "E-5", 5).await;
    let response = ctx.rest().get("/orders").await;
    assert_eq!(response.status_code(), StatusCode::OK);
    let orders: Vec<Value> = serde_json::from_str(response.content()).unwrap();
    assert!(orders.contains(&placed));
}

#[kit::test]
#[requires_capability(Protocol, "REST")]
async fn runs_when_rest_is_registered(ctx: KitExecutionContext) {
    let response = ctx.rest_named("orders:Default").get("/health").await;
    assert!(response.is_success_status_code());
}
