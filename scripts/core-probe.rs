//! Work of three kinds, timed: what `scripts/core-probe` runs on one core alone and on both at
//! once, to tell whether this virtual machine's two CPUs compute independently (two cores) or
//! share one core's units (one core's two hardware threads), and how fast the machine computes
//! in the spell it is in. Built by the script with `rustc -O`; no crates.
use std::hint::black_box;
use std::time::Instant;

/// Independent integer operations: bound by the core's execution units, which two hardware
/// threads of one core share, so a pair on one core takes up to twice as long.
fn units(n: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    for i in 0..n {
        a = a.wrapping_add(i ^ b);
        b = b.rotate_left(5) ^ c;
        c = c.wrapping_add(d);
        d ^= a;
    }
    a ^ b ^ c ^ d
}

/// One dependent chain of multiplications: bound by latency, which leaves units free, so two
/// hardware threads of one core barely slow each other; a slower clock slows it all the same.
fn chain(n: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..n {
        x = (x ^ (x >> 29)).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

/// A byte loop over 32 KiB, as an event line's escaping or a hash reads one: loads, compares
/// and a multiply a byte, all in the first-level cache.
fn bytes(buffer: &[u8], passes: usize) -> u64 {
    let (mut hash, mut escapes) = (0xcbf2_9ce4_8422_2325u64, 0u64);
    for _ in 0..passes {
        for &byte in black_box(buffer) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            escapes += u64::from(byte == b'"' || byte == b'\\' || byte < 0x20);
        }
    }
    hash ^ escapes
}

fn main() {
    let kind = std::env::args().nth(1).unwrap_or_default();
    let buffer: Vec<u8> = (0..32_768u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let started = Instant::now();
    let result = match kind.as_str() {
        "units" => units(black_box(200_000_000)),
        "chain" => chain(black_box(150_000_000)),
        "bytes" => bytes(&buffer, black_box(6_000)),
        _ => {
            eprintln!("core-probe: say units, chain or bytes, not {kind:?}");
            std::process::exit(2);
        }
    };
    black_box(result);
    println!("{:.4}", started.elapsed().as_secs_f64());
}
