//! The `report` target: what it checks is in `checks/report.rs`.
#![no_main]

// Every check is compiled, only this target's is called.
#[allow(dead_code)]
#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::report::check(data));
