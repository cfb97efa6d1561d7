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
            rest.capture_attachments(|_| {});
            rest.add_client()
                .endpoint("api")
                .add_collector::<RestCoverageCollector>()
                .add_collector::<RestTrafficCoverageCollector>();
        });
    });
}

async fn place(ctx: &KitExecutionContext, sku: &str, quantity: u32) -> Value {
    let response = ctx
        .rest()
        .body(&json!({ "sku": sku, "quantity": quantity }))
        .post("/orders")
        .await;
    response.should().have_http_status(StatusCode::CREATED);
    response.read_required()
}

#[kit::test]
#[application("orders")]
async fn health_is_ok(ctx: KitExecutionContext) {
    ctx.rest()
        .get("/health")
        .await
        .should()
        .have_http_status(StatusCode::OK)
        .have_content_type("application/json")
        .match_shape_exact(json!({ "status": "ok" }));
}

#[kit::test]
#[application("orders")]
async fn creates_an_order(ctx: KitExecutionContext) {
    let response = ctx
        .rest()
        .body(&json!({ "sku": "A-1", "quantity": 2 }))
        .post("/orders")
        .await;
    response
        .should()
        .have_http_status(StatusCode::CREATED)
        .have_header("Location")
        .match_shape(json!({
            "id": json_value::greater_than(0),
            "sku": "A-1",
            "quantity": 2,
            "status": json_value::one_of(["placed"]),
        }));
    let id: u64 = response.read_required_at("$.id");
    response
        .should()
        .have_header_value("location", &format!("/api/orders/{id}"));
}

#[kit::test]
#[application("orders")]
async fn fetches_a_placed_order(ctx: KitExecutionContext) {
    let placed = place(&ctx, "B-7", 1).await;
    ctx.rest()
        .path_param("id", &placed["id"])
        .get("/orders/{id}")
        .expect_exact(&placed)
        .await;
}

#[kit::test]
#[application("orders")]
async fn an_unknown_order_is_not_found(ctx: KitExecutionContext) {
    ctx.rest()
        .path_param("id", 999_999)
        .get("/orders/{id}")
        .await
        .should()
        .have_http_status(StatusCode::NOT_FOUND)
        .match_shape(json!({ "title": json_value::string_containing("no such order") }));
}

#[kit::test]
#[application("orders")]
async fn a_zero_quantity_is_rejected(ctx: KitExecutionContext) {
    ctx.rest()
        .body(&json!({ "sku": "C-3", "quantity": 0 }))
        .post("/orders")
        .await
        .should()
        .have_http_status(StatusCode::BAD_REQUEST)
        .match_shape(json!({ "detail": "quantity must be at least 1" }));
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
    ctx.rest()
        .path_param("id", &placed["id"])
        .get("/orders/{id}")
        .await
        .should()
        .have_http_status(StatusCode::NOT_FOUND);
    Ok(())
}

#[kit::test]
#[application("orders")]
async fn lists_placed_orders(ctx: KitExecutionContext) {
    let placed = place(&ctx, "E-5", 5).await;
    ctx.rest()
        .get("/orders")
        .await
        .should()
        .have_http_status(StatusCode::OK)
        .match_shape(json_value::array_containing([placed]));
}

#[kit::test]
#[requires_capability(Protocol, "REST")]
async fn runs_when_rest_is_registered(ctx: KitExecutionContext) {
    let response = ctx.rest_named("orders:Default").get("/health").await;
    assert!(response.is_success_status_code());
    response
        .should_not()
        .have_http_status(StatusCode::SERVICE_UNAVAILABLE);
}
