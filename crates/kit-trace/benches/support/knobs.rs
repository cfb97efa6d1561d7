//! The archive knobs the `bus` bench and `kit-rest`'s `vs_reqwest` bench both read, so that a
//! run by turns sets both benches alike. Included by path (`#[path]`): the benches are binaries
//! of two crates.

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
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|n| *n <= highest)
            .unwrap_or_else(|| panic!("{name}={value:?}: expected {what}, 0–{highest}")),
        Err(_) => default,
    }
}
