//! Which run a test process belongs to.

use std::ffi::OsString;

use kit_core::RunId;

/// The run id and the runner's name.
///
/// `KIT_RUN_ID` wins, then `NEXTEST_RUN_ID` (nextest runs every test in its own process and
/// gives them all one id). Under plain `cargo test` every test binary is a child of the same
/// `cargo` process, so on Linux the id is derived from that process (its pid and start time):
/// all the binaries of one `cargo test` share one archive. Otherwise a new UUIDv7.
pub(crate) fn from_environment() -> Result<(RunId, &'static str), String> {
    let nextest = std::env::var_os("NEXTEST_RUN_ID").is_some() || std::env::var_os("NEXTEST").is_some();
    let from_cargo = cargo_run_id();
    let runner = if nextest {
        "nextest"
    } else if from_cargo.is_some() {
        "cargo-test"
    } else {
        "unknown"
    };
    for variable in ["KIT_RUN_ID", "NEXTEST_RUN_ID"] {
        if let Some(value) = std::env::var_os(variable) {
            let value = value
                .into_string()
                .map_err(|v: OsString| format!("{variable} is not valid UTF-8: {v:?}"))?;
            let id = RunId::new(value).map_err(|e| format!("{variable}: {e}"))?;
            return Ok((id, runner));
        }
    }
    Ok((from_cargo.unwrap_or_else(RunId::generate), runner))
}

#[cfg(target_os = "linux")]
fn cargo_run_id() -> Option<RunId> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let ppid = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{ppid}/comm")).ok()?;
    if comm.trim() != "cargo" {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{ppid}/stat")).ok()?;
    // Fields after the command name's closing parenthesis start at field 3; start time is 22.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let start_ticks: u64 = rest.split(' ').nth(19)?.parse().ok()?;
    let boot_secs: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    // Linux reports start times in USER_HZ, which is 100 on every architecture it supports.
    let started_ms = boot_secs * 1000 + start_ticks * 10;
    let mut hasher = DefaultHasher::new();
    (boot_id.trim(), ppid, start_ticks).hash(&mut hasher);
    let a = hasher.finish();
    1u8.hash(&mut hasher);
    let b = hasher.finish();
    // A UUIDv7 stamped with cargo's start time, its other bits from what identifies that process.
    let value: u128 = (u128::from(started_ms & 0xFFFF_FFFF_FFFF) << 80)
        | (0x7 << 76)
        | (u128::from(a & 0x0FFF) << 64)
        | (0b10 << 62)
        | u128::from(b & 0x3FFF_FFFF_FFFF_FFFF);
    let hex = format!("{value:032x}");
    let text = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    );
    RunId::new(text).ok()
}

#[cfg(not(target_os = "linux"))]
fn cargo_run_id() -> Option<RunId> {
    None
}
