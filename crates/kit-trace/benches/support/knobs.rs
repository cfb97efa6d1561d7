//! The archive knobs the `bus` bench and `kit-rest`'s `vs_reqwest` bench both read, so that a
//! run by turns sets both benches alike, and the one way every bench knob is read. Included by
//! path (`#[path]`): the benches are binaries of two crates (`kit-rest`'s through its
//! `support` module).

use kit_core::DISPATCHER_NICENESS;
use kit_trace::WriterOptions;

/// `KIT_BENCH_NICENESS`: how far below the bench's thread the dispatcher runs, the bus's
/// default ([`DISPATCHER_NICENESS`]) when unset; 0 to run it level, as before issue 9's
/// sixty-second stop.
pub(crate) fn dispatcher_niceness() -> u8 {
    bounded("KIT_BENCH_NICENESS", "a nice value", 19, DISPATCHER_NICENESS)
}

/// `KIT_BENCH_LEVEL`: the archive's deflate level, the writer's default when unset.
pub(crate) fn deflate_level() -> u32 {
    bounded(
        "KIT_BENCH_LEVEL",
        "a deflate level",
        9,
        WriterOptions::default().compression_level,
    )
}

/// The variable `name` read as a number from 0 to `highest`, or `default` when unset; any
/// other value stops the bench with a message naming it.
fn bounded<T>(name: &str, what: &str, highest: T, default: T) -> T
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    knob(name, &format!("{what}, 0–{highest}"), |n| *n <= highest, default)
}

/// The variable `name` read as a `T` that `allowed` accepts, or `default` when unset. Any
/// other value stops the bench with a message naming it (`what` says what was expected): a
/// misspelt value that fell back to the default measured something other than what was asked,
/// and said nothing.
pub(crate) fn knob<T: std::str::FromStr>(
    name: &str,
    what: &str,
    allowed: impl Fn(&T) -> bool,
    default: T,
) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|n| allowed(n))
            .unwrap_or_else(|| panic!("{name}={value:?}: expected {what}")),
        Err(_) => default,
    }
}
