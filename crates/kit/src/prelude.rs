//! `use kit::prelude::*;` brings what a test file needs.

pub use http::{Method, StatusCode};
pub use serde_json::json;

pub use kit_core::json::{ShapeOptions, json_value};
pub use kit_core::{
    ApplicationBuilder, Capability, Collector, Configuration, Event, EventKind, KitBuilder,
    KitCapabilityKinds, KitExecutionContext, Registrar, SharedCollector,
};
pub use kit_coverage::{OpenApiCoverageCollector, RestCoverageCollector, RestTrafficCoverageCollector};
pub use kit_macros::{application, auth, requires_capability};
pub use kit_rest::{
    ApiKey, AuthScheme, Basic, Bearer, InProcessServerExt, Multipart, OAuth2ClientCredentials,
    PendingRequest, RestAssertionError, RestAssertions, RestContextExt, RestError, RestRegistrarExt,
    RestRequestBuilder, RestResponse, RestShouldAssertions, RestStatusAssertionError, SessionSignIn,
};
