//! An archive's tests, read on other threads while this one uses them, in the archive's order.
//!
//! Reader threads inflate and parse tests, a batch of consecutive tests at a time, each every
//! n-th batch, and the calling thread takes the batches from the readers in turn. Reading is
//! about half of what `kit-cli report` does with a 100 000-request archive, and more than that
//! of an export, so two readers share it on a machine of two cores or more.
//!
//! Batches, not single tests, cross the channels: a test at a time, a 10 000-test report made
//! 9 400 futex calls; in batches of 8, 1 400. Records go back to the reader that made them to
//! be dropped: freed on the thread that allocated them, the allocator's per-thread arenas never
//! contend (freeing them on the using thread made the pipeline slower than one thread).
//! Bounded channels keep memory to a few tests in flight.

use std::sync::mpsc;

use kit_trace::{ArchiveReader, TestRecord, TraceError};

/// Threads reading an archive beside the one using it: two where there are two cores or more,
/// else one.
fn reader_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 2))
}

/// Consecutive tests a reader reads and hands over together.
const TESTS_PER_BATCH: usize = 8;

/// Batches each reader reads ahead: with two readers, some 32 tests in flight.
const BATCHES_IN_FLIGHT: usize = 2;

/// Tests a reader hands over at once, in the archive's order.
type Batch = Vec<Result<TestRecord, TraceError>>;

/// Calls `visit` with each test of `reader`'s archive, in the order of
/// [`ArchiveReader::tests`], reading ahead on other threads. Stops at the first test that
/// cannot be read (its error, after every test before it) or the first error `visit` gives.
pub(crate) fn each_test<E: From<TraceError>>(
    reader: ArchiveReader,
    mut visit: impl FnMut(&TestRecord) -> Result<(), E>,
) -> Result<(), E> {
    let readers = reader_threads();
    let mut handles: Vec<ArchiveReader> = (1..readers).map(|_| reader.clone()).collect();
    handles.push(reader);
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(readers);
        let mut give_backs = Vec::with_capacity(readers);
        for (k, reader) in handles.into_iter().enumerate() {
            let (send, receive) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
            let (give_back, given_back) = mpsc::channel::<Batch>();
            receivers.push(receive);
            give_backs.push(give_back);
            scope.spawn(move || read(reader, k, readers, send, given_back));
        }
        // Batch b comes from reader b mod n; the first reader to run dry marks the end.
        for k in (0..readers).cycle() {
            let Ok(mut batch) = receivers[k].recv() else {
                break;
            };
            // A reader's error ends its batch, and the walk with it, after the tests before.
            let failed = batch.pop_if(|record| record.is_err());
            let visited = batch.iter().flatten().try_for_each(&mut visit);
            let _ = give_backs[k].send(batch);
            visited?;
            if let Some(Err(e)) = failed {
                return Err(e.into());
            }
        }
        // Dropped here or on an early return: a reader waiting to send or for records to drop
        // sees the hang-up and ends.
        drop(give_backs);
        Ok(())
    })
}

/// Reader `k` of `readers`: reads batch b when b mod `readers` is `k`, sends it, and drops the
/// batches given back.
fn read(
    mut reader: ArchiveReader,
    k: usize,
    readers: usize,
    send: mpsc::SyncSender<Batch>,
    given_back: mpsc::Receiver<Batch>,
) {
    let mut tests = reader.tests();
    // Skip to its first batch, then past the others' between two of its own.
    let mut skip = k * TESTS_PER_BATCH;
    loop {
        let mut batch = Vec::with_capacity(TESTS_PER_BATCH);
        while batch.len() < TESTS_PER_BATCH {
            let next = if batch.is_empty() {
                tests.nth(skip)
            } else {
                tests.next()
            };
            let Some(record) = next else { break };
            let failed = record.is_err();
            batch.push(record);
            if failed {
                break;
            }
        }
        skip = (readers - 1) * TESTS_PER_BATCH;
        // The walk stops at an error, and hangs up only when it stopped.
        let failed = batch.last().is_some_and(Result::is_err);
        if batch.is_empty() || send.send(batch).is_err() || failed {
            break;
        }
        while let Ok(done) = given_back.try_recv() {
            drop(done);
        }
    }
    // The walk sees this reader run dry; what it still gives back comes until it hangs up.
    drop(send);
    for done in given_back {
        drop(done);
    }
}
