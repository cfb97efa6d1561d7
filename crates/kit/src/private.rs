//! What the attribute macros expand to. Not a public API: it changes without notice.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

pub use kit_core::KitCapabilityKinds;
pub use linkme;

use kit_core::{Capability, KitBuilder, KitExecutionContext, TestOutcome, TestStarted};

use crate::runtime::{announce, runtime, warn};

/// A `#[kit::host]` function.
pub struct HostFn {
    /// The function.
    pub build: fn(&mut KitBuilder),
    /// Its path, for messages.
    pub name: &'static str,
}

/// Every `#[kit::host]` function linked into the binary.
#[linkme::distributed_slice]
pub static HOSTS: [HostFn];

/// A capability a test requires.
pub struct Requirement {
    /// Its kind.
    pub kind: KitCapabilityKinds,
    /// Its name.
    pub name: &'static str,
}

/// What `#[kit::test]` knows about a test.
pub struct TestSpec {
    /// The function's name.
    pub name: &'static str,
    /// `module_path!()` where it is defined.
    pub module_path: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
    /// The test crate's folder.
    pub manifest_dir: &'static str,
    /// `#[application("app", ..)]`.
    pub application: Option<&'static str>,
    /// `#[application(.., "Rest:client")]`.
    pub client: Option<&'static str>,
    /// `#[auth(Kind)]`.
    pub auth: Option<&'static str>,
    /// `#[requires_capability(..)]`s.
    pub requires: &'static [Requirement],
}

impl TestSpec {
    /// The name libtest and nextest show: the module path without the crate, then the function.
    pub fn test_name(&self) -> String {
        match self.module_path.split_once("::") {
            Some((_, path)) => format!("{path}::{}", self.name),
            None => self.name.to_owned(),
        }
    }
}

/// What a test body may return.
pub trait TestResult {
    /// The failure message, if the body failed.
    fn failure(self) -> Option<String>;
}

impl TestResult for () {
    fn failure(self) -> Option<String> {
        None
    }
}

impl<E: std::fmt::Debug> TestResult for Result<(), E> {
    fn failure(self) -> Option<String> {
        self.err().map(|e| format!("the test returned Err: {e:?}"))
    }
}

/// Runs one `#[kit::test]`.
pub fn run_test<F, Fut>(spec: &'static TestSpec, body: F)
where
    F: FnOnce(KitExecutionContext) -> Fut,
    Fut: Future,
    Fut::Output: TestResult,
{
    let name = spec.test_name();
    let kit = match runtime(spec.manifest_dir) {
        Ok(kit) => kit,
        Err(message) => {
            announce(&format!("Failed {name}"));
            panic!("the kit could not start: {message}");
        }
    };
    let info = TestStarted::new(name.clone())
        .with_application(spec.application.map(str::to_owned))
        .with_client(spec.client.map(str::to_owned))
        .with_auth(spec.auth.map(str::to_owned))
        .with_location(Some(format!("{}:{}", spec.file, spec.line)));
    let ctx = kit.run.begin_test(info);

    let host = kit.run.host();
    if let Some(missing) = spec.requires.iter().find(|r| {
        !host.has_capability(&Capability {
            kind: r.kind,
            name: r.name.to_owned(),
        })
    }) {
        let reason = format!(
            "requires capability {}:{}, which the host does not register",
            missing.kind, missing.name
        );
        finish(
            &ctx,
            &name,
            TestOutcome::Skipped {
                reason: reason.clone(),
            },
        );
        announce(&format!("Skipped {name}: {reason}"));
        return;
    }
    // The start is committed while the body runs (within the bus's requested-flush delay, or
    // with the end of a test over sooner): if the process dies later, the test reads back as
    // interrupted rather than vanishing. Waiting for that commit here cost every test a round
    // trip to the archive before its first request.
    if let Err(e) = ctx.request_flush() {
        warn(&format!("the start of test {name} could not be recorded: {e}"));
    }

    let result = catch_unwind(AssertUnwindSafe(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the test's tokio runtime: {e}"));
        // Declared after the runtime, so dropped before it however the body ends.
        let end_coming = EndComing(&ctx);
        let output = runtime.block_on(body(ctx.clone()));
        drop(end_coming);
        // Dropping the runtime cancels tasks the test left running; their operations end
        // now, before the test's end is recorded.
        drop(runtime);
        output.failure()
    }));
    match result {
        Ok(None) => {
            finish(&ctx, &name, TestOutcome::Passed);
            announce(&format!("Passed {name}"));
        }
        Ok(Some(message)) => {
            // What is recorded and printed is redacted: the error may hold a token.
            let message = kit_rest::sanitizer(&ctx).text(&message);
            finish(
                &ctx,
                &name,
                TestOutcome::Failed {
                    message: message.clone(),
                },
            );
            announce(&format!("Failed {name}"));
            panic!("{message}");
        }
        Err(payload) => {
            // A test's own assertions may print a body or a token: what is recorded is redacted.
            let message = kit_rest::sanitizer(&ctx).text(&kit_core::panic_message(&*payload));
            finish(&ctx, &name, TestOutcome::Failed { message });
            announce(&format!("Failed {name}"));
            resume_unwind(payload);
        }
    }
}

/// Tells the bus, when dropped, that the test's end is coming (see
/// [`KitExecutionContext::expect_finish`]): its dispatcher then wakes while the test's runtime
/// drops (45–65 µs), instead of when the end's flush comes, and a test of one request ends
/// some 20–50 µs sooner (`cargo bench -p kit-rest --bench per_test`). A drop, so that a body
/// that panics gives the word too.
struct EndComing<'a>(&'a KitExecutionContext);

impl Drop for EndComing<'_> {
    fn drop(&mut self) {
        // Only a bus already shut refuses; the end's flush then reports it.
        let _ = self.0.expect_finish();
    }
}

fn finish(ctx: &KitExecutionContext, name: &str, outcome: TestOutcome) {
    if let Err(e) = ctx.finish(outcome) {
        warn(&format!("the trace of test {name} is incomplete: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn spec(name: &'static str, line: u32) -> TestSpec {
        TestSpec {
            name,
            module_path: module_path!(),
            file: file!(),
            line,
            manifest_dir: env!("CARGO_MANIFEST_DIR"),
            application: None,
            client: None,
            auth: None,
            requires: &[],
        }
    }

    static PASSES: TestSpec = spec("passes", line!());
    static PANICS: TestSpec = spec("panics", line!());

    /// The runner tells the bus that a test's end is coming before it drops the test's runtime
    /// (`EndComing`), whether the body returns or panics. Nothing else shows it: the gain is
    /// time (`cargo bench -p kit-rest --bench per_test`), so the bus counts what it is told.
    /// The only test in this binary that runs tests, so nothing else moves the count.
    #[test]
    fn the_runner_announces_every_tests_end_to_the_bus() {
        let kit = runtime(PASSES.manifest_dir).unwrap();
        let before = kit.run.bus().stats().announced;

        run_test(&PASSES, |_ctx| async {});
        assert_eq!(kit.run.bus().stats().announced, before + 1);

        fn fail() {
            panic!("the body fails");
        }
        let panicked = catch_unwind(|| run_test(&PANICS, |_ctx| async { fail() }));
        assert!(panicked.is_err());
        assert_eq!(kit.run.bus().stats().announced, before + 2);
    }
}
