//! The process-wide kit: host, bus and archive, built once by the first test that runs.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::OnceLock;

use std::sync::Arc;

use kit_core::{Bus, Configuration, KitBuilder, KitRun, SecretRegistry};
use kit_trace::{ArchiveWriter, RunManifest, WriterOptions};

use crate::__private::HOSTS;

/// The kit of this test process.
pub(crate) struct Runtime {
    pub(crate) run: KitRun,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The process's kit, built on first use from the test crate's folder. A failure to build it
/// (a bad configuration file, a misregistered client) fails every test with the same message.
pub(crate) fn runtime(manifest_dir: &str) -> Result<&'static Runtime, &'static str> {
    RUNTIME
        .get_or_init(|| init(Path::new(manifest_dir)))
        .as_ref()
        .map_err(String::as_str)
}

fn init(manifest_dir: &Path) -> Result<Runtime, String> {
    kit_core::install_panic_hook();
    kit_rest::register_panic_payloads();
    let configuration = Configuration::load(manifest_dir).map_err(|e| e.to_string())?;
    let mut builder = KitBuilder::new(configuration);
    match HOSTS.len() {
        0 => {}
        1 => {
            let host = &HOSTS[0];
            catch_unwind(AssertUnwindSafe(|| (host.build)(&mut builder))).map_err(|p| {
                format!(
                    "the #[kit::host] function {} panicked: {}",
                    host.name,
                    kit_core::panic_message(&*p)
                )
            })?;
        }
        _ => {
            let names: Vec<&str> = HOSTS.iter().map(|h| h.name).collect();
            return Err(format!(
                "this test binary has {} #[kit::host] functions ({}); keep one",
                names.len(),
                names.join(", ")
            ));
        }
    }
    let built = builder.build().map_err(|e| e.to_string())?;
    let (run_id, runner) = crate::run_id::from_environment()?;
    let configuration = built.host.configuration();
    let niceness = configuration
        .get_parsed::<UpTo<19>>("Kit:Trace:DispatcherNiceness", "a nice value, 0–19")
        .map_err(|e| e.to_string())?
        .map_or(kit_core::DISPATCHER_NICENESS, |n| n.0);
    let mut bus = Bus::builder().dispatcher_niceness(niceness);
    let tracing = configuration
        .get_bool("Kit:Trace:Enabled")
        .map_err(|e| e.to_string())?
        .unwrap_or(true);
    if tracing {
        let mut options = WriterOptions::default();
        // 0 stores the events uncompressed: at 32 requests in flight that gave the kit 0.04
        // more of raw reqwest's throughput, and a test of one request 9–26 µs, for archives
        // several times larger (docs/performance-details.md).
        if let Some(UpTo(level)) = configuration
            .get_parsed::<UpTo<9>>("Kit:Trace:CompressionLevel", "a deflate level, 0–9")
            .map_err(|e| e.to_string())?
        {
            options = options.with_compression_level(level.into());
        }
        let dir = configuration.trace_directory(manifest_dir);
        let writer = ArchiveWriter::with_options(&dir, RunManifest::new(run_id.clone(), runner), options)
            .map_err(|e| e.to_string())?
            .with_secrets(Arc::clone(SecretRegistry::global()));
        bus = bus.collector(writer);
    }
    let bus = bus.collectors(built.collectors).start();
    Ok(Runtime {
        run: KitRun::new(built.host, bus, run_id),
    })
}

/// A whole number from 0 to `MAX`, as a setting takes it: `Kit:Trace:DispatcherNiceness`
/// (nice steps below the tests, up to 19: those between Linux's default priority and its
/// lowest) and `Kit:Trace:CompressionLevel` (deflate's levels, up to 9).
struct UpTo<const MAX: u8>(u8);

impl<const MAX: u8> std::str::FromStr for UpTo<MAX> {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s.parse() {
            Ok(n) if n <= MAX => Ok(UpTo(n)),
            _ => Err(()),
        }
    }
}

/// Writes a line straight to the process's stdout, past libtest's capture of `print!`, so a
/// person running plain `cargo test` sees it.
pub(crate) fn announce(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Writes a warning straight to stderr, past libtest's capture.
pub(crate) fn warn(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "kit: {line}");
}
