//! The kit's core: the event model, the event bus, collectors, configuration, the host and
//! the execution context.
//!
//! Everything the kit records is an [`Event`] on one [`Bus`]: tests starting and finishing,
//! operations (an HTTP request, an assertion), observations (a response) and attachments.
//! [`Collector`]s consume the bus: the trace archive writer, coverage collectors, and any a
//! user writes. This crate knows nothing of HTTP clients or async runtimes: it has no tokio
//! and no reqwest, so the CLI and collectors can depend on it alone.
//!
//! # The path of an event
//!
//! ```
//! use kit_core::*;
//!
//! // A host (usually built by `#[kit::host]`), a bus with collectors, a run.
//! let recording = RecordingCollector::new();
//! let bus = Bus::builder().collector(recording.clone()).start();
//! let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
//! let run = KitRun::new(host, bus, RunId::generate());
//!
//! // A test (usually started by `#[kit::test]`) records an operation with an observation.
//! let ctx = run.begin_test(TestStarted::new("orders::creates_an_order"));
//! let request = ctx.start_operation(
//!     None,
//!     OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · POST /orders")
//!         .with_attributes(Attributes::new().with(semconv::HTTP_REQUEST_METHOD, "POST")),
//! );
//! request.observe(Observation::new(
//!     semconv::OBS_HTTP_RESPONSE,
//!     Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, 201),
//! ));
//! request.end(OperationStatus::Ok, Attributes::new());
//!
//! // Finishing flushes: every collector has seen every event when it returns.
//! ctx.finish(TestOutcome::Passed).unwrap();
//! assert_eq!(recording.tree(ctx.test_id()), "test\n  http.request\n    http.response\n");
//! ```
#![deny(missing_docs)]

mod bus;
mod collector;
pub mod config;
mod context;
pub mod event;
pub mod file;
mod host;
pub mod json;
pub mod options;
mod panic;
pub mod redact;
pub mod report;
pub mod semconv;
pub mod visible;

pub use bus::{Bus, BusBuilder, BusError, BusStats, DISPATCHER_NICENESS, PendingFlush};
pub use collector::{Collector, CollectorError, RecordingCollector, SharedCollector, render_tree};
pub use config::{ConfigError, Configuration, DEFAULT_TRACE_DIRECTORY, Section};
pub use context::{KitExecutionContext, KitRun, Operation};
pub use event::{
    Attachment, AttachmentContent, AttributeValue, Attributes, Event, EventId, EventKind, EventLines,
    InvalidRunId, Observation, OperationEnded, OperationStarted, OperationStatus, RunId, TestFinished,
    TestId, TestOutcome, TestStarted, Text, Timestamp,
};
pub use host::{
    Application, ApplicationBuilder, BuildError, BuiltHost, Capability, CollectorFactory, Extensions, Host,
    KitBuilder, KitCapabilityKinds, Registrar, Registry,
};
pub use options::{JsonDiagnosticOptions, KitHttpAttachmentOptions, RestResponseOptions};
pub use panic::{install_panic_hook, panic_message, register_panic_payload};
pub use redact::{Sanitizer, SecretRegistry};
