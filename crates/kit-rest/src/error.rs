/// A REST request could not be made or its response could not be read.
///
/// Awaiting a request fails the test with this error as the panic payload (so
/// `std::panic::catch_unwind` plus `downcast_ref::<RestError>()` recovers it);
/// `try_send().await` returns it instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestError {
    /// No client could be resolved, or the name was ambiguous.
    #[error("{0}")]
    Resolution(String),
    /// The client resolved but has no usable base address, or could not be built.
    #[error("{0}")]
    Client(String),
    /// The request could not be built (a bad header, a body that does not serialize, a URL
    /// that does not parse).
    #[error("{request} - {message}")]
    InvalidRequest {
        /// `METHOD route`.
        request: String,
        /// What is wrong.
        message: String,
    },
    /// Sending failed: connection refused, timeout, a broken connection while reading.
    #[error("{request} - the request to {url} failed: {message}")]
    Transport {
        /// `METHOD route`.
        request: String,
        /// The sanitized URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// Authentication failed before the request was sent (a token endpoint refused, a sign-in
    /// was rejected, credentials are not configured).
    #[error("{request} - authentication failed: {message}")]
    Auth {
        /// `METHOD route`.
        request: String,
        /// What went wrong.
        message: String,
    },
    /// The response body is larger than `MaxResponseBodyBytes`; reading stopped at the limit.
    #[error(
        "{request} - the response body is larger than MaxResponseBodyBytes ({limit} bytes); reading stopped there. \
         Raise Kit:Rest:Responses:MaxResponseBodyBytes if such a body is expected"
    )]
    BodyTooLarge {
        /// `METHOD route`.
        request: String,
        /// The limit in bytes.
        limit: u64,
    },
}
