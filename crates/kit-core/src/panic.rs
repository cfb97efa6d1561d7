//! Turning panic payloads into messages.
//!
//! The kit's assertions panic with their typed error as the payload, so that
//! `std::panic::catch_unwind` plus `downcast_ref` recovers it. Rust's default panic hook
//! prints such a payload as `Box<dyn Any>`; registering the type here makes both the hook
//! installed by [`install_panic_hook`] and [`panic_message`] show its `Display` text.

use std::any::Any;
use std::fmt::Display;
use std::panic::PanicHookInfo;
use std::sync::{Once, PoisonError, RwLock};

use crate::redact::SecretRegistry;

type Formatter = fn(&(dyn Any + Send)) -> Option<String>;

static FORMATTERS: RwLock<Vec<Formatter>> = RwLock::new(Vec::new());

fn format_as<T: Display + 'static>(payload: &(dyn Any + Send)) -> Option<String> {
    payload.downcast_ref::<T>().map(ToString::to_string)
}

/// Makes panics whose payload is a `T` print and report `T`'s `Display` text.
///
/// Registering the same type twice has no further effect.
pub fn register_panic_payload<T: Display + Send + 'static>() {
    let f: Formatter = format_as::<T>;
    let mut list = FORMATTERS.write().unwrap_or_else(PoisonError::into_inner);
    if !list.iter().any(|g| std::ptr::fn_addr_eq(*g, f)) {
        list.push(f);
    }
}

/// The message a panic payload carries: a `&str`, a `String`, or a registered type's text.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("status was {}", 500)).unwrap_err();
/// assert_eq!(kit_core::panic_message(&*payload), "status was 500");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        return (*s).to_owned();
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return s.clone();
    }
    registered_message(payload).unwrap_or_else(|| "panicked with a payload that is not a message".to_owned())
}

fn registered_message(payload: &(dyn Any + Send)) -> Option<String> {
    let list = FORMATTERS.read().unwrap_or_else(PoisonError::into_inner);
    list.iter().find_map(|f| f(payload))
}

/// Installs, once per process, a panic hook that prints registered payload types by their
/// `Display` text and replaces secrets known to [`SecretRegistry::global`] in every panic
/// message; panics that need neither go to the hook that was there before.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            let payload = info.payload();
            let plain = payload
                .downcast_ref::<&'static str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned());
            let (message, typed) = match plain {
                Some(m) => (m, false),
                None => match registered_message(payload) {
                    Some(m) => (m, true),
                    None => return previous(info),
                },
            };
            let redacted = SecretRegistry::global().replace_known(&message);
            if !typed && matches!(redacted, std::borrow::Cow::Borrowed(_)) {
                return previous(info);
            }
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("<unnamed>");
            let location = info
                .location()
                .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let backtrace = std::backtrace::Backtrace::capture();
            // eprintln! goes through libtest's output capture, as the default hook does.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("\nthread '{name}' panicked{location}:\n{redacted}");
                if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
                    eprintln!("stack backtrace:\n{backtrace}");
                }
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;
    use std::process::Command;

    #[derive(Debug)]
    struct Typed(&'static str);

    impl fmt::Display for Typed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "typed: {}", self.0)
        }
    }

    struct NeverRegistered;

    #[test]
    fn a_message_comes_from_a_str_a_string_or_a_registered_type() {
        register_panic_payload::<Typed>();
        register_panic_payload::<Typed>();
        let count = |list: &Vec<Formatter>| {
            let f: Formatter = format_as::<Typed>;
            list.iter().filter(|g| std::ptr::fn_addr_eq(**g, f)).count()
        };
        assert_eq!(count(&FORMATTERS.read().unwrap()), 1, "registered once");

        let payload: Box<dyn Any + Send> = Box::new("static");
        assert_eq!(panic_message(&*payload), "static");
        let payload: Box<dyn Any + Send> = Box::new(String::from("owned"));
        assert_eq!(panic_message(&*payload), "owned");
        let payload: Box<dyn Any + Send> = Box::new(Typed("a status"));
        assert_eq!(panic_message(&*payload), "typed: a status");
        let payload: Box<dyn Any + Send> = Box::new(NeverRegistered);
        assert_eq!(
            panic_message(&*payload),
            "panicked with a payload that is not a message"
        );
    }

    /// Panics as `KIT_PANIC_CHILD` says, under the kit's hook; run in a child process by the
    /// test below, because a panic hook is the whole process's.
    #[test]
    #[ignore = "a child process of the_hook_prints_typed_payloads_and_hides_known_secrets"]
    fn panicking_child() {
        // Run as an ignored test by hand (`--include-ignored`), it has nothing to do.
        let Ok(mode) = std::env::var("KIT_PANIC_CHILD") else {
            return;
        };
        install_panic_hook();
        register_panic_payload::<Typed>();
        match mode.as_str() {
            "typed" => std::panic::panic_any(Typed("a status")),
            "secret" => {
                SecretRegistry::global().remember("hunter2-correct-horse");
                panic!("signed in with hunter2-correct-horse");
            }
            "plain" => panic!("nothing to hide"),
            "unknown" => std::panic::panic_any(NeverRegistered),
            other => panic!("unexpected KIT_PANIC_CHILD {other:?}"),
        }
    }

    fn child_stderr(mode: &str) -> String {
        child_stderr_with(mode, "0")
    }

    fn child_stderr_with(mode: &str, backtrace: &str) -> String {
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "panic::tests::panicking_child",
                "--nocapture",
            ])
            .env("KIT_PANIC_CHILD", mode)
            .env("RUST_BACKTRACE", backtrace)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{mode}: the child must fail");
        String::from_utf8(output.stderr).unwrap()
    }

    #[test]
    fn the_hook_prints_typed_payloads_and_hides_known_secrets() {
        let typed = child_stderr("typed");
        assert!(
            typed.contains("panicked at crates/kit-core/src/panic.rs:") && typed.contains("typed: a status"),
            "{typed}"
        );
        assert!(!typed.contains("Box<dyn Any>"), "{typed}");
        assert!(!typed.contains("stack backtrace"), "{typed}");
        let traced = child_stderr_with("typed", "1");
        assert!(traced.contains("typed: a status\nstack backtrace:\n"), "{traced}");

        let secret = child_stderr("secret");
        assert!(secret.contains("signed in with [REDACTED]"), "{secret}");
        assert!(!secret.contains("hunter2"), "{secret}");
        // Printed by the kit's hook, which says nothing about RUST_BACKTRACE.
        assert!(!secret.contains("RUST_BACKTRACE"), "{secret}");

        // A panic that needs neither goes to the hook that was there before: the standard one.
        let plain = child_stderr("plain");
        assert!(plain.contains("nothing to hide"), "{plain}");
        assert!(plain.contains("note: run with `RUST_BACKTRACE=1`"), "{plain}");
        let unknown = child_stderr("unknown");
        assert!(unknown.contains("Box<dyn Any>"), "{unknown}");
    }
}
