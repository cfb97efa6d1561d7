//! The kit's `.kittrace` archive: a crash-safe writer, a streaming reader that salvages
//! damaged archives, and the format's constants.
//!
//! A run's trace is written to `TestResults/kit-{runId}.kittrace`, a standard zip archive that
//! is valid after every finished test: no closing step is ever needed, which matters because
//! Rust test binaries run no destructors at exit and, under nextest, no process knows it is
//! the last. The layout and its versioning are described in [`format`](mod@format).
//!
//! - [`ArchiveWriter`] is a [`Collector`](kit_core::Collector): put it on the bus and every
//!   test's events become durable when the test flushes at its end.
//! - [`ArchiveReader`] reads an archive back one test at a time, salvaging one whose writer
//!   was killed, refusing unsafe entry names, oversized entries and newer major versions.
//!
//! ```
//! use kit_core::*;
//! use kit_trace::{ArchiveReader, ArchiveWriter, RunManifest};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let run_id = RunId::new("example").unwrap();
//! let writer = ArchiveWriter::create(dir.path(), RunManifest::new(run_id.clone(), "cargo-test")).unwrap();
//! let path = writer.path().to_owned();
//! let run = KitRun::new(
//!     KitBuilder::new(Configuration::new()).build().unwrap().host,
//!     Bus::builder().collector(writer).start(),
//!     run_id,
//! );
//! for name in ["first", "second"] {
//!     let ctx = run.begin_test(TestStarted::new(name));
//!     ctx.observe(None, Observation::new("note", Attributes::new()));
//!     ctx.finish(TestOutcome::Passed).unwrap();
//! }
//!
//! let mut reader = ArchiveReader::open(&path).unwrap();
//! let names: Vec<String> = reader.tests().map(|t| t.unwrap().name).collect();
//! assert_eq!(names, ["first", "second"]);
//! ```
#![deny(missing_docs)]

mod error;
pub mod format;
mod merge;
mod read;
mod writer;
mod zipfile;

pub use error::TraceError;
pub use format::{FORMAT_VERSION, FormatVersion, RunManifest};
pub use merge::{MergeInfo, MergeSummary, merge};
pub use read::{ArchiveReader, NO_START, ReaderLimits, RunSummary, Salvage, TestRecord, Tests};
pub use writer::{ArchiveWriter, WriterOptions, WriterStats, archive_file_name};
