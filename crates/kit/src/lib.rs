//! The kit: what Rust teams put in the integration tests of the REST API they ship.
//!
//! A named HTTP client per application (`ctx.rest()`), a fluent request builder, verbs that
//! return a fully buffered [`RestResponse`], and around them a trace and coverage toolkit on
//! one event bus: every request is an event, collectors turn events into coverage, and each
//! run is archived as `TestResults/kit-{runId}.kittrace` for `kit-cli` to report on.
//!
//! # A whole test file
//!
//! ```no_run
//! // tests/orders.rs
//! use kit::prelude::*;
//!
//! #[kit::host]
//! fn host(kit: &mut KitBuilder) {
//!     kit.add_application("orders", |app| {
//!         // Optional: serve the API under test in-process (any axum Router).
//!         app.add_in_process_server(|| axum::Router::new());
//!         app.add_rest(|rest| {
//!             let _ = rest.add_client().add_collector::<RestCoverageCollector>();
//!         });
//!     });
//! }
//!
//! #[kit::test]
//! #[application("orders")]
//! async fn creates_an_order(ctx: KitExecutionContext) {
//!     let response = ctx
//!         .rest()
//!         .body(&json!({ "sku": "A-1", "quantity": 2 }))
//!         .post("/orders")
//!         .await;
//!     assert_eq!(response.status_code(), StatusCode::CREATED);
//! }
//! ```
//!
//! Configuration comes from `kit.toml` (or `kit.json`) beside the test crate's `Cargo.toml`,
//! then from environment variables, which win:
//!
//! ```toml
//! [Kit.Applications.orders]
//! BaseUrl = "http://127.0.0.1:8080"
//! [Kit.Applications.orders.Endpoints]
//! api = "/api/v1"
//! ```
//!
//! `Kit__Applications__orders__BaseUrl=http://staging.example/ cargo test` overrides it.
#![deny(missing_docs)]

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod run_id;
mod runtime;

pub mod prelude;

pub use kit_core::json::{JsonPathError, JsonShapeMismatchError, ShapeMismatch, ShapeOptions, json_value};
pub use kit_coverage::{EndpointCoverage, RestCoverageCollector};
pub use kit_macros::{application, auth, host, requires_capability, test};
pub use kit_rest::{
    ApiKey, ApiKeyIn, AssertionCause, AuthError, AuthFuture, AuthScheme, AuthTarget, Basic, Bearer,
    ClientAuthentication, DEFAULT_CLIENT, InProcessServerExt, IntoInProcessService, Multipart,
    OAuth2ClientCredentials, PendingRequest, RestAssertionError, RestAssertions, RestBuilder,
    RestClientTarget, RestContextExt, RestError, RestRegistrarExt, RestRequestBuilder, RestResponse,
    RestShouldAssertions, RestStatusAssertionError, SessionSignIn, publish_address,
};

/// The core: events, the bus, collectors, configuration, the host.
pub use kit_core as core;
/// The `.kittrace` archive: writer and reader.
pub use kit_trace as trace;
