//! The kit's REST client: registration, client resolution, the request builder and buffered
//! responses, each request traced as an `http.request` operation with its `http.response`.
//!
//! Users reach it through the `kit` facade (`use kit::prelude::*`). Registration extends the
//! host and application builders ([`RestRegistrarExt`], [`InProcessServerExt`]); requests
//! start from the test's context ([`RestContextExt::rest`]).
#![deny(missing_docs)]

mod assertions;
mod auth;
mod client;
mod error;
mod multipart;
mod registration;
mod request;
mod response;
mod same_shape;
mod server;
mod settings;

use kit_core::KitExecutionContext;

pub use assertions::{
    AssertionCause, RestAssertionError, RestAssertions, RestShouldAssertions, RestStatusAssertionError,
};
pub use auth::{
    ApiKey, ApiKeyIn, AuthError, AuthFuture, AuthScheme, AuthTarget, Basic, Bearer, ClientAuthentication,
    OAuth2ClientCredentials, SessionSignIn,
};
pub use client::publish_address;
pub use error::RestError;
pub use multipart::Multipart;
pub use registration::{
    DEFAULT_CLIENT, InProcessServerExt, RestBuilder, RestClientTarget, RestRegistrarExt, rest_capability,
};
pub use request::{PendingRequest, RestRequestBuilder};
pub use response::RestResponse;
pub use server::IntoInProcessService;
pub use settings::{ATTACHMENTS_SECTION, RESPONSES_SECTION, sanitizer};

/// `rest()` and `rest_named()` on a test's context.
pub trait RestContextExt {
    /// A request on the test's REST client: the client bound by `#[application(app, "Rest:c")]`,
    /// else the bound application's first client, else the client named `Default`.
    fn rest(&self) -> RestRequestBuilder;

    /// A request on the client called `name`: `app:name` for the bound application first, then
    /// `name` as given; `app:name` is exact.
    fn rest_named(&self, name: &str) -> RestRequestBuilder;
}

impl RestContextExt for KitExecutionContext {
    fn rest(&self) -> RestRequestBuilder {
        RestRequestBuilder::new(self, None)
    }

    fn rest_named(&self, name: &str) -> RestRequestBuilder {
        RestRequestBuilder::new(self, Some(name))
    }
}

/// Makes panics carrying a [`RestError`] print its message (see
/// [`kit_core::register_panic_payload`]).
pub fn register_panic_payloads() {
    kit_core::register_panic_payload::<RestError>();
    kit_core::register_panic_payload::<RestStatusAssertionError>();
    kit_core::register_panic_payload::<RestAssertionError>();
}
