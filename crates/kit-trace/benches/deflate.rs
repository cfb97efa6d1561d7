//! What deflating a test's event lines costs the archive writer, and what the alternatives
//! would cost: the dispatcher's largest single part at 32 tests in flight (a quarter of its
//! samples in issue 9's seventy-fourth stop) and most of a one-request test's end.
//!
//! Reads every test segment (`runs/*/tests/*/NNNN.jsonl`) of an archive, then compresses each
//! from a fresh start, as the writer compresses a test's stream when it takes its deflater
//! (reset, no dictionary, one sync flush): whole, and cut to its first 6 KiB (about what a
//! test of one request writes, all of it compressed cold, with nothing earlier to refer back
//! to). The ways take turns, about 20 ms each a turn, for `KIT_BENCH_ROUNDS` rounds (default
//! 7), so that a slow spell of the machine falls on all of them; prints the median round's
//! microseconds a segment, MB/s, and the compressed size over the input.
//!
//! The ways: zlib-rs through flate2 at level 1 (the writer's, `deflate_quick`), zlib-rs at
//! level 2 and 6, with the Huffman-only and run-length strategies at level 1, and at level 1
//! with the smallest memory level (which flate2 fixes) and with an 8 KiB window, and
//! libdeflate at level 1 in one call (no streaming: the writer deflates a test's lines in
//! chunks as they come).
//!
//! `cargo bench -p kit-trace --bench deflate` reads `kit-cli`'s report fixture (small tests).
//! The segments `vs_reqwest` writes (tests of ten requests, each checking a status and a
//! shape, with attachments): keep its archive and point the bench at it:
//!
//! ```text
//! KIT_BENCH_KEEP=/tmp/seg.kittrace KIT_BENCH_SIDE=kit KIT_BENCH_ONLY=sequential \
//!   KIT_BENCH_ROUNDS=1 KIT_BENCH_REQUESTS=200 cargo bench -p kit-rest --bench vs_reqwest
//! KIT_BENCH_ARCHIVE=/tmp/seg.kittrace cargo bench -p kit-trace --bench deflate
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::{Compress, Compression, FlushCompress};
use zlib_rs::{Deflate, DeflateConfig, DeflateFlush, Method, Strategy};

#[path = "support/knobs.rs"]
#[allow(dead_code)]
mod knobs;

/// A test of one request writes about this much: its start, the request's events, its end.
const FIRST_BYTES: usize = 6 * 1024;

/// One way to compress a segment from a fresh start, into a buffer of its own with room for
/// any segment (so that none grows while timed), returning the compressed length.
trait Way {
    fn name(&self) -> String;
    fn compress(&mut self, data: &[u8]) -> usize;
}

/// The writer's way: flate2 over zlib-rs, raw deflate, reset, then a sync flush.
struct Flate2(Compress, u32, Vec<u8>);

impl Way for Flate2 {
    fn name(&self) -> String {
        format!("zlib-rs level {} (flate2; the writer's)", self.1)
    }

    fn compress(&mut self, data: &[u8]) -> usize {
        self.0.reset();
        self.2.clear();
        self.0
            .compress_vec(data, &mut self.2, FlushCompress::Sync)
            .unwrap();
        let written = self.2.len();
        whole(self.0.total_in(), data, written, self.2.capacity(), self);
        written
    }
}

/// Stops the bench unless `way` compressed all of `data` with its flush complete: all input
/// read, and the output not full (zlib's rule; a full output may hold back pending bytes). A
/// segment partly compressed would time less than the way's work.
fn whole(read: u64, data: &[u8], written: usize, room: usize, way: &dyn Way) {
    assert!(
        read == data.len() as u64 && written < room,
        "{}: {read} of {} bytes read, {written} written into {room}: the flush is not complete",
        way.name(),
        data.len()
    );
}

/// zlib-rs directly, for what flate2 does not expose (the strategy, the memory level); the
/// window's size is set here too.
struct ZlibRs(Deflate, DeflateConfig, Vec<u8>);

impl ZlibRs {
    fn new(level: i32, strategy: Strategy, room: usize) -> Self {
        Self::with(level, strategy, 15, 8, room)
    }

    fn with(level: i32, strategy: Strategy, window_bits: i32, mem_level: i32, room: usize) -> Self {
        let config = DeflateConfig {
            level,
            method: Method::Deflated,
            // Negative: raw deflate, as in a zip entry.
            window_bits: -window_bits,
            mem_level,
            strategy,
        };
        ZlibRs(Deflate::new_with_config(config), config, vec![0; room])
    }
}

impl Way for ZlibRs {
    fn name(&self) -> String {
        let c = &self.1;
        let mut name = format!("zlib-rs level {}, {:?}", c.level, c.strategy);
        if c.window_bits != -15 {
            name += &format!(", {} KiB window", (1 << -c.window_bits) / 1024);
        }
        if c.mem_level != 8 {
            name += &format!(", mem_level {}", c.mem_level);
        }
        name
    }

    fn compress(&mut self, data: &[u8]) -> usize {
        self.0.reset();
        let (read, written) = (self.0.total_in(), self.0.total_out());
        self.0
            .compress(data, &mut self.2, DeflateFlush::SyncFlush)
            .unwrap();
        let written = (self.0.total_out() - written) as usize;
        whole(self.0.total_in() - read, data, written, self.2.len(), self);
        written
    }
}

/// libdeflate in one call.
struct Libdeflate(libdeflater::Compressor, Vec<u8>);

impl Way for Libdeflate {
    fn name(&self) -> String {
        "libdeflate level 1 (one call)".into()
    }

    fn compress(&mut self, data: &[u8]) -> usize {
        self.0.deflate_compress(data, &mut self.1).unwrap()
    }
}

/// Every test segment of `archive`, read whole.
fn segments(archive: &Path) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(archive).unwrap_or_else(|e| {
        panic!(
            "{}: cannot open it (KIT_BENCH_ARCHIVE names the archive to read): {e}",
            archive.display()
        )
    });
    let mut zip = zip::ZipArchive::new(file)
        .unwrap_or_else(|e| panic!("{}: not a zip archive: {e}", archive.display()));
    let mut found = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().unwrap().into_owned();
        if name.contains("/tests/") && name.ends_with(".jsonl") {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            found.push(bytes);
        }
    }
    assert!(!found.is_empty(), "{}: no test segments in it", archive.display());
    found
}

fn main() {
    let archive = std::env::var_os("KIT_BENCH_ARCHIVE").map_or_else(
        || PathBuf::from("../kit-cli/tests/fixtures/report-fixture.kittrace"),
        PathBuf::from,
    );
    let rounds = knobs::knob(
        "KIT_BENCH_ROUNDS",
        "a number of rounds, 1 or more",
        |n| *n >= 1,
        7usize,
    );
    let whole = segments(&archive);
    let first: Vec<Vec<u8>> = whole
        .iter()
        .map(|s| s[..s.len().min(FIRST_BYTES)].to_vec())
        .collect();
    let longest = whole.iter().map(Vec::len).max().unwrap_or(0);
    println!(
        "{}: {} test segments, {:.1} KiB on average; {rounds} rounds, the median shown",
        archive.display(),
        whole.len(),
        whole.iter().map(Vec::len).sum::<usize>() as f64 / whole.len() as f64 / 1024.0,
    );
    // Room for any segment stored (deflate's worst case is a few bytes a 64 KiB block over).
    let room = longest + longest / 8 + 1024;
    let mut ways: Vec<Box<dyn Way>> = vec![
        Box::new(Flate2(
            Compress::new(Compression::new(1), false),
            1,
            Vec::with_capacity(room),
        )),
        Box::new(ZlibRs::new(1, Strategy::Default, room)),
        Box::new(ZlibRs::new(2, Strategy::Default, room)),
        Box::new(ZlibRs::new(6, Strategy::Default, room)),
        Box::new(ZlibRs::new(1, Strategy::HuffmanOnly, room)),
        Box::new(ZlibRs::new(1, Strategy::Rle, room)),
        // The memory level, which flate2 fixes at zlib's default (it sizes the buffer of
        // symbols between blocks), and a window smaller than the writer's 32 KiB.
        Box::new(ZlibRs::with(1, Strategy::Default, 15, 1, room)),
        Box::new(ZlibRs::with(1, Strategy::Default, 13, 8, room)),
        Box::new(Libdeflate(
            libdeflater::Compressor::new(libdeflater::CompressionLvl::new(1).unwrap()),
            vec![0; room],
        )),
    ];
    println!(
        "{:<42} {:>14} {:>9} {:>7} {:>14} {:>9} {:>7}",
        "way", "whole µs/seg", "MB/s", "size", "6 KiB µs/seg", "MB/s", "size"
    );
    let inputs = [&whole, &first];
    // Each input's passes a turn: about 20 ms of the writer's way, so that a turn is long
    // against the clock and short against the machine's slow spells.
    let passes: Vec<usize> = inputs
        .iter()
        .map(|input| {
            let started = Instant::now();
            pass(ways[0].as_mut(), input);
            (Duration::from_millis(20).as_secs_f64() / started.elapsed().as_secs_f64()).ceil() as usize
        })
        .collect();
    // times[way][input]: one per round. The ways take turns within each round, so a slow
    // spell falls on all of them; the first round warms the caches up and is not counted.
    let mut times = vec![vec![Vec::with_capacity(rounds); inputs.len()]; ways.len()];
    for round in 0..=rounds {
        for (w, way) in ways.iter_mut().enumerate() {
            for (i, input) in inputs.iter().enumerate() {
                let started = Instant::now();
                for _ in 0..passes[i] {
                    pass(way.as_mut(), input);
                }
                if round > 0 {
                    times[w][i].push(started.elapsed() / passes[i] as u32);
                }
            }
        }
    }
    for (w, way) in ways.iter_mut().enumerate() {
        let cells: Vec<String> = inputs
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let bytes: usize = input.iter().map(Vec::len).sum();
                let compressed = pass(way.as_mut(), input);
                let mut round_times = times[w][i].clone();
                round_times.sort();
                let median = round_times[round_times.len() / 2];
                format!(
                    "{:>14.2} {:>9.0} {:>6.1}%",
                    median.as_secs_f64() * 1e6 / input.len() as f64,
                    bytes as f64 / median.as_secs_f64() / 1e6,
                    100.0 * compressed as f64 / bytes as f64
                )
            })
            .collect();
        println!("{:<42} {} {}", way.name(), cells[0], cells[1]);
    }
}

/// Compresses every segment of `input` once; the compressed bytes in all.
fn pass(way: &mut dyn Way, input: &[Vec<u8>]) -> usize {
    input.iter().map(|segment| way.compress(black_box(segment))).sum()
}
