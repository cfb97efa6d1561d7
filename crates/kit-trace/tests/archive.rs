//! The archive, written through a real bus and read back from real files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use kit_core::*;
use kit_trace::*;

fn run_with_writer(dir: &Path, run_id: &str, options: WriterOptions) -> (KitRun, PathBuf) {
    run_on(Bus::builder(), dir, run_id, options)
}

/// A run whose bus is `bus` with the writer added.
fn run_on(bus: BusBuilder, dir: &Path, run_id: &str, options: WriterOptions) -> (KitRun, PathBuf) {
    let run_id = RunId::new(run_id).unwrap();
    let writer =
        ArchiveWriter::with_options(dir, RunManifest::new(run_id.clone(), "cargo-test"), options).unwrap();
    run_into(bus, writer, run_id)
}

/// A run whose bus is `bus` with `writer` added, and the archive it writes.
fn run_into(bus: BusBuilder, writer: ArchiveWriter, run_id: RunId) -> (KitRun, PathBuf) {
    let path = writer.path().to_owned();
    let bus = bus.collector(writer).start();
    let host = KitBuilder::new(Configuration::new()).build().unwrap().host;
    (KitRun::new(host, bus, run_id), path)
}

fn run_test(run: &KitRun, name: &str, requests: usize, outcome: TestOutcome) -> TestId {
    let ctx = run.begin_test(TestStarted::new(name).with_application(Some("orders".into())));
    // As the test runner does: the start is durable before the body runs.
    ctx.flush().unwrap();
    for i in 0..requests {
        let op = ctx.start_operation(
            None,
            OperationStarted::new(semconv::OP_HTTP_REQUEST, "REST · GET /orders/{id}").with_attributes(
                Attributes::new()
                    .with(semconv::HTTP_REQUEST_METHOD, "GET")
                    .with(semconv::HTTP_ROUTE, "/orders/{id}"),
            ),
        );
        op.observe(Observation::new(
            semconv::OBS_HTTP_RESPONSE,
            Attributes::new().with(semconv::HTTP_RESPONSE_STATUS_CODE, 200 + i as i64 % 2),
        ));
        op.end(OperationStatus::Ok, Attributes::new());
    }
    ctx.finish(outcome).unwrap();
    ctx.test_id()
}

/// A test's attachments, in order.
fn attachments(record: &TestRecord) -> Vec<Attachment> {
    record
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Attachment(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

fn read_all(path: &Path) -> Vec<TestRecord> {
    ArchiveReader::open(path)
        .unwrap()
        .tests()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every entry name in the archive's central directory, in order, duplicates kept: the zip
/// crate's reader (and so `ArchiveReader`) keys entries by name and shows one of each.
fn entry_names(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    let u32_at = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let eocd = bytes.len() - 22;
    assert_eq!(&bytes[eocd..eocd + 4], b"PK\x05\x06", "no end record");
    let (mut count, mut offset) = (u16_at(eocd + 10), u32_at(eocd + 16));
    if count == 0xFFFF || offset == 0xFFFF_FFFF {
        let record = u64_at(eocd - 20 + 8) as usize;
        assert_eq!(&bytes[record..record + 4], b"PK\x06\x06", "no ZIP64 end record");
        (count, offset) = (u64_at(record + 32), u64_at(record + 48));
    }
    let mut at = offset as usize;
    let mut names = Vec::new();
    for _ in 0..count {
        assert_eq!(&bytes[at..at + 4], b"PK\x01\x02", "no directory record at {at}");
        let (name, extra, comment) = (u16_at(at + 28), u16_at(at + 30), u16_at(at + 32));
        let name_at = at + 46;
        names.push(String::from_utf8(bytes[name_at..name_at + name as usize].to_vec()).unwrap());
        at = name_at + (name + extra + comment) as usize;
    }
    names
}

/// How many entries of the archive at `path` have a name that `matches`, duplicates counted.
fn count_entries(path: &Path, matches: impl Fn(&str) -> bool) -> usize {
    entry_names(path).iter().filter(|n| matches(n)).count()
}

#[test]
fn every_test_reads_back_with_its_outcome_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r1", WriterOptions::default());
    run_test(&run, "passes", 3, TestOutcome::Passed);
    run_test(
        &run,
        "fails",
        1,
        TestOutcome::Failed {
            message: "expected 201, got 500".into(),
        },
    );
    run_test(
        &run,
        "skips",
        0,
        TestOutcome::Skipped {
            reason: "no REST".into(),
        },
    );

    assert_eq!(path.file_name().unwrap(), "kit-r1.kittrace");
    let tests = read_all(&path);
    let summary: Vec<(&str, &str)> = tests
        .iter()
        .map(|t| (t.name.as_str(), t.outcome.label()))
        .collect();
    assert_eq!(
        summary,
        [("passes", "Passed"), ("fails", "Failed"), ("skips", "Skipped")]
    );
    assert_eq!(
        tests[1].outcome,
        TestOutcome::Failed {
            message: "expected 201, got 500".into()
        }
    );
    assert_eq!(tests[0].events.len(), 2 + 3 * 3);
    assert_eq!(tests[0].started.application.as_deref(), Some("orders"));
    assert!(
        tests[0]
            .events
            .windows(2)
            .all(|w| w[0].sequence + 1 == w[1].sequence)
    );
    assert!(tests.iter().all(|t| t.duration.is_some()));
    for test in &tests {
        assert!(
            test.events
                .iter()
                .all(|e| e.run_id == test.run_id && e.test_id == test.test_id)
        );
    }
    // Format 2: event lines leave the run and the test to the segment's path.
    let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
    let segment = (0..zip.len())
        .find(|&i| zip.by_index(i).unwrap().name().unwrap().ends_with(".jsonl"))
        .unwrap();
    let mut text = String::new();
    zip.by_index(segment).unwrap().read_to_string(&mut text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("{\"test_id\":"), "{text}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with("{\"id\":") && !l.contains("\"test_id\"")),
        "{text}"
    );
    let reader = ArchiveReader::open(&path).unwrap();
    assert_eq!(
        reader.runs()[0].manifest.as_ref().unwrap().format_version,
        FORMAT_VERSION
    );
    assert_eq!(reader.salvage(), None);
}

#[test]
fn between_tests_the_archive_opens_with_the_zip_crates_normal_reader() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r2", WriterOptions::default());
    for i in 0..5 {
        run_test(&run, &format!("t{i}"), 2, TestOutcome::Passed);
        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).expect("a valid zip after every test");
        // mimetype, manifest, and two segments (start, end) per finished test.
        assert_eq!(zip.len(), 2 + 2 * (i + 1));
        let mut mime = String::new();
        zip.by_index(0).unwrap().read_to_string(&mut mime).unwrap();
        assert_eq!(mime, "application/vnd.kit.trace+zip");
        for j in 0..zip.len() {
            std::io::copy(&mut zip.by_index(j).unwrap(), &mut std::io::sink()).unwrap();
        }
    }
}

#[test]
fn a_started_test_is_durable_before_its_body_runs_and_reads_back_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r3", WriterOptions::default());
    run_test(&run, "finished", 1, TestOutcome::Passed);
    let running = run.begin_test(TestStarted::new("running"));
    running.flush().unwrap();
    running.observe(
        None,
        Observation::new("buffered, not yet durable", Attributes::new()),
    );
    // The process would be killed here: read what is on disk now.
    let tests = read_all(&path);
    assert_eq!(tests.len(), 2);
    assert_eq!(tests[1].name, "running");
    assert_eq!(tests[1].outcome, TestOutcome::Interrupted);
    assert_eq!(tests[1].duration, None);
}

/// How many segment entries each test has in the archive at `path`, by test id.
fn segments_per_test(path: &Path) -> std::collections::HashMap<String, usize> {
    let zip = zip::ZipArchive::new(File::open(path).unwrap()).unwrap();
    let mut counts = std::collections::HashMap::new();
    for name in zip.file_names() {
        if let Some((_, rest)) = name.unwrap().split_once("/tests/")
            && let Some((test, _)) = rest.split_once('/')
        {
            *counts.entry(test.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

/// Begins a test as the kit's runner does: the start's flush requested, not waited for.
fn begin(run: &KitRun, name: &str) -> KitExecutionContext {
    let ctx = run.begin_test(TestStarted::new(name));
    ctx.request_flush().unwrap();
    ctx
}

#[test]
fn a_test_ending_within_the_delay_is_one_segment_however_many_tests_end_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::builder().requested_flush_delay(std::time::Duration::from_secs(30));
    let (run, path) = run_on(bus, dir.path(), "r3s", WriterOptions::default());

    let long = begin(&run, "long");
    for i in 0..5 {
        let short = begin(&run, &format!("short{i}"));
        short.finish(TestOutcome::Passed).unwrap();
        // Each end is durable when `finish` returns; the long test's start is not yet.
        let segments = segments_per_test(&path);
        assert_eq!(segments.get(&short.test_id().to_string()), Some(&1));
        assert_eq!(segments.get(&long.test_id().to_string()), None);
    }
    long.finish(TestOutcome::Passed).unwrap();
    let segments = segments_per_test(&path);
    assert_eq!(segments.len(), 6);
    assert!(segments.values().all(|n| *n == 1), "{segments:?}");
    let names: Vec<String> = read_all(&path).into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 6);
}

#[test]
fn a_running_test_is_durable_once_its_requested_flush_comes_due_whatever_ends_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let delay = std::time::Duration::from_millis(100);
    let (run, path) = run_on(
        Bus::builder().requested_flush_delay(delay),
        dir.path(),
        "r3d",
        WriterOptions::default(),
    );

    let running = begin(&run, "running");
    let started = std::time::Instant::now();
    // Tests keep ending while it runs; none of their flushes is for its start, and none may
    // cancel its start's requested flush either.
    let mut i = 0;
    while started.elapsed() < delay * 3 {
        begin(&run, &format!("other{i}"))
            .finish(TestOutcome::Passed)
            .unwrap();
        i += 1;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let tests = read_all(&path);
    let shown = tests
        .iter()
        .find(|t| t.name == "running")
        .expect("the running test's start");
    assert_eq!(shown.outcome, TestOutcome::Interrupted);
    running.finish(TestOutcome::Passed).unwrap();
    assert_eq!(segments_per_test(&path)[&running.test_id().to_string()], 2);
}

#[test]
fn writers_in_many_processes_share_one_archive() {
    // Separate writers hold separate lock handles, as separate processes do.
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_owned();
    let threads: Vec<_> = (0..6)
        .map(|w| {
            let dir_path = dir_path.clone();
            std::thread::spawn(move || {
                let (run, path) = run_with_writer(&dir_path, "shared", WriterOptions::default());
                for i in 0..15 {
                    run_test(&run, &format!("w{w}::t{i}"), 2, TestOutcome::Passed);
                }
                // The same large body from every writer: each finds the others' blob when it
                // reloads the directory, and stores none again.
                let ctx = run.begin_test(TestStarted::new(format!("w{w}::blob")));
                ctx.attach(
                    None,
                    Attachment::new("body", "text/plain", "same body ".repeat(4000).into_bytes()),
                );
                ctx.finish(TestOutcome::Passed).unwrap();
                path
            })
        })
        .collect();
    let paths: Vec<PathBuf> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(paths.windows(2).all(|w| w[0] == w[1]));
    let tests = read_all(&paths[0]);
    let mut names: Vec<String> = tests.iter().map(|t| t.name.clone()).collect();
    names.sort();
    let mut expected: Vec<String> = (0..6)
        .flat_map(|w| {
            (0..15)
                .map(move |i| format!("w{w}::t{i}"))
                .chain([format!("w{w}::blob")])
        })
        .collect();
    expected.sort();
    assert_eq!(names, expected, "each test exactly once");
    let reader = ArchiveReader::open(&paths[0]).unwrap();
    assert_eq!(reader.runs().len(), 1);
    assert_eq!(count_entries(&paths[0], |n| n.ends_with("manifest.json")), 1);
    assert_eq!(count_entries(&paths[0], |n| n.starts_with("blobs/")), 1);
    assert_eq!(count_entries(&paths[0], |n| n == "mimetype"), 1);
    let all = entry_names(&paths[0]);
    let unique: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "an entry name written twice");
}

#[test]
fn a_truncated_archive_salvages_every_test_finished_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r4", WriterOptions::default());
    let mut sizes = Vec::new();
    for i in 0..4 {
        run_test(&run, &format!("t{i}"), 3, TestOutcome::Passed);
        sizes.push(std::fs::metadata(&path).unwrap().len());
    }
    let full = std::fs::read(&path).unwrap();
    let cut_path = dir.path().join("cut.kittrace");
    // Every cut after the first test committed: at least every test that committed whole
    // before the cut's directory is read back, and never a test twice or a wrong outcome.
    for cut in (sizes[0] as usize..full.len()).step_by(7) {
        std::fs::write(&cut_path, &full[..cut]).unwrap();
        let mut reader = ArchiveReader::open(&cut_path).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
        let finished_before = sizes.iter().filter(|s| **s as usize <= cut).count();
        let finished = tests.iter().filter(|t| t.outcome == TestOutcome::Passed).count();
        assert!(
            finished >= finished_before,
            "cut at {cut}: {finished} < {finished_before}"
        );
        assert!(
            tests
                .iter()
                .all(|t| matches!(t.outcome, TestOutcome::Passed | TestOutcome::Interrupted))
        );
        if cut < full.len() && reader.salvage().is_none() {
            panic!("cut at {cut} was read as whole");
        }
    }
}

#[test]
fn a_writer_continues_an_archive_left_cut_by_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r5", WriterOptions::default());
    run_test(&run, "before", 1, TestOutcome::Passed);
    // A killed writer's half-written append: garbage where the directory was.
    let mut bytes = std::fs::read(&path).unwrap();
    let cut = bytes.len() - 30;
    bytes.truncate(cut);
    bytes.extend_from_slice(b"PK\x03\x04 half an entry");
    std::fs::write(&path, &bytes).unwrap();

    let (run2, path2) = run_with_writer(dir.path(), "r5", WriterOptions::default());
    assert_eq!(path, path2);
    run_test(&run2, "after", 1, TestOutcome::Passed);
    let mut reader = ArchiveReader::open(&path).unwrap();
    assert_eq!(reader.salvage(), None, "the second writer repaired the file");
    let names: Vec<String> = reader.tests().map(|t| t.unwrap().name).collect();
    assert_eq!(names, ["before", "after"]);
}

#[test]
fn an_archive_deleted_mid_run_is_created_again_with_a_new_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r5d", WriterOptions::default());
    let lock = dir.path().join("kit-r5d.kittrace.lock");
    run_test(&run, "before", 1, TestOutcome::Passed);
    assert!(lock.exists());
    // The writer keeps both files open between commits; deleted, neither may be written
    // again, or the next tests would vanish with the unlinked file.
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&lock).unwrap();
    run_test(&run, "after", 1, TestOutcome::Passed);
    assert!(lock.exists(), "the lock file is made again at its path");
    let names: Vec<String> = read_all(&path).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["after"]);
    assert_eq!(
        ArchiveReader::open(&path).unwrap().runs().len(),
        1,
        "with its manifest"
    );
}

#[test]
fn an_archive_replaced_mid_run_is_appended_to_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r5r", WriterOptions::default());
    run_test(&run, "before", 1, TestOutcome::Passed);
    // A copy renamed over the archive (as a sync tool or an editor saves): a new file.
    let copy = dir.path().join("copy.tmp");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    run_test(&run, "after", 1, TestOutcome::Passed);
    let mut reader = ArchiveReader::open(&path).unwrap();
    assert_eq!(reader.salvage(), None);
    let names: Vec<String> = reader.tests().map(|t| t.unwrap().name).collect();
    assert_eq!(names, ["before", "after"]);
}

#[test]
fn large_attachments_become_deduplicated_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r6", WriterOptions::default());
    // Past the 16 KiB that stay in the event.
    let body = br#"{"id":1,"sku":"A-1"}"#.repeat(1000);
    for name in ["a", "b"] {
        let ctx = run.begin_test(TestStarted::new(name));
        ctx.attach(
            None,
            Attachment::new("rest-01-response", "application/json", body.clone()).with_description("200 OK"),
        );
        if name == "a" {
            // Twice in one commit, as a retried request's body is.
            ctx.attach(
                None,
                Attachment::new("rest-02-response", "application/json", body.clone()),
            );
        }
        ctx.finish(TestOutcome::Passed).unwrap();
    }
    let mut reader = ArchiveReader::open(&path).unwrap();
    assert_eq!(reader.test_count(), 2);
    assert_eq!(reader.tests().size_hint(), (2, Some(2)));
    let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
    let sha = tests[0]
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Attachment(a) => match &a.content {
                AttachmentContent::Blob { sha256, size } => {
                    assert_eq!(*size, body.len() as u64);
                    assert_eq!(a.description.as_deref(), Some("200 OK"));
                    Some(sha256.clone())
                }
                AttachmentContent::Inline(_) => panic!("large attachments are blobs"),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    assert_eq!(reader.blob(&sha).unwrap(), body);
    let second = &attachments(&tests[1])[0];
    assert_eq!(reader.attachment_bytes(second).unwrap(), body);
    assert_eq!(count_entries(&path, |n| n.starts_with("blobs/")), 1);
    assert_eq!(reader.entry_count(), entry_names(&path).len());
}

/// The writer archives whatever the bus carries, and anyone may publish an event: a test with
/// no `test_started` (or with it out of place) reads back, and does not make the archive's
/// other tests unreadable.
#[test]
fn a_test_without_its_start_reads_back_beside_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = RunId::new("r-startless").unwrap();
    let writer = ArchiveWriter::create(dir.path(), RunManifest::new(run_id.clone(), "x")).unwrap();
    let (run, path) = run_into(Bus::builder(), writer, run_id.clone());
    let whole = run_test(&run, "whole", 2, TestOutcome::Passed);
    let line = |sequence: u64, kind: &str| {
        format!(
            r#"{{"id":"{:016x}","parent_id":null,"sequence":{sequence},"timestamp":{},"kind":{kind}}}"#,
            0xa000 + sequence,
            1_795_890_860_000_000_000 + sequence
        )
    };
    let observation =
        r#"{"observation":{"name":"http.response","attributes":{"http.response.status_code":200}}}"#;
    let started = r#"{"test_started":{"name":"started late"}}"#;
    let startless = TestId::generate();
    let late = TestId::generate();
    for (test, lines) in [
        (startless, vec![line(0, observation), line(1, observation)]),
        (late, vec![line(0, observation), line(5, started)]),
    ] {
        for text in lines {
            run.bus()
                .publish(Event::from_json_in_scope(&text, &run_id, test).unwrap())
                .unwrap();
        }
    }
    run.bus().shutdown().unwrap();

    let mut reader = ArchiveReader::open(&path).unwrap();
    let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
    assert_eq!(tests.len(), 3);
    let find = |id: TestId| tests.iter().find(|t| t.test_id == id).unwrap();
    assert_eq!(find(whole).name, "whole");
    assert_eq!(find(whole).outcome, TestOutcome::Passed);
    let startless = find(startless);
    assert_eq!((startless.name.as_str(), startless.events.len()), (NO_START, 2));
    assert_eq!(startless.outcome, TestOutcome::Interrupted);
    assert_eq!(startless.started_at, startless.events[0].timestamp);
    let late = find(late);
    assert_eq!(late.name, "started late");
    assert_eq!(late.started_at, late.events[1].timestamp);
}

/// The blob cap, like the segment cap, is the largest attachment read: one at it reads whole,
/// one byte under refuses it by name, and the test's events still read.
#[test]
fn a_blob_exactly_at_its_cap_reads_and_one_byte_over_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = RunId::new("r-blob-cap").unwrap();
    let writer = ArchiveWriter::with_options(
        dir.path(),
        RunManifest::new(run_id.clone(), "cargo-test"),
        WriterOptions::default(),
    )
    .unwrap();
    let (run, path) = run_into(Bus::builder(), writer, run_id);
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let ctx = run.begin_test(TestStarted::new("blob"));
    ctx.attach(
        None,
        Attachment::new("download", "application/octet-stream", body.clone()),
    );
    ctx.finish(TestOutcome::Passed).unwrap();

    let size = body.len() as u64;
    let at = ReaderLimits::default().with_max_blob_bytes(size);
    let mut reader = ArchiveReader::open_with(&path, at).unwrap();
    let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
    let download = &attachments(&tests[0])[0];
    assert!(matches!(download.content, AttachmentContent::Blob { .. }));
    assert_eq!(reader.attachment_bytes(download).unwrap(), body);

    let under = ReaderLimits::default().with_max_blob_bytes(size - 1);
    let mut reader = ArchiveReader::open_with(&path, under).unwrap();
    let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
    let err = reader
        .attachment_bytes(&attachments(&tests[0])[0])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("larger than the {} bytes", size - 1)),
        "{err}"
    );
    assert!(err.contains("blobs/"), "the message names the entry: {err}");
}

/// Entries past a mebibyte, each well below its reader's cap, read back whole: a segment of
/// several MiB, a 2 MiB blob, and the fingerprints of 200 secrets.
#[test]
fn entries_past_a_mebibyte_read_back_whole_below_their_caps() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = RunId::new("r-big").unwrap();
    let secrets = std::sync::Arc::new(SecretRegistry::new());
    for i in 0..200 {
        assert!(secrets.remember(&format!("remembered-secret-{i:04}")));
    }
    let writer = ArchiveWriter::with_options(
        dir.path(),
        RunManifest::new(run_id.clone(), "cargo-test"),
        WriterOptions::default(),
    )
    .unwrap()
    .with_secrets(std::sync::Arc::clone(&secrets));
    let (run, path) = run_into(Bus::builder(), writer, run_id);

    run_test(&run, "long", 8_000, TestOutcome::Passed);
    let body: Vec<u8> = (0..2 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let ctx = run.begin_test(TestStarted::new("blob"));
    ctx.attach(
        None,
        Attachment::new("download", "application/octet-stream", body.clone()),
    );
    ctx.finish(TestOutcome::Passed).unwrap();

    let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
    let mut largest_segment = 0;
    for i in 0..zip.len() {
        let entry = zip.by_index(i).unwrap();
        if entry.name().unwrap().ends_with(".jsonl") {
            largest_segment = largest_segment.max(entry.size());
        }
    }
    assert!(largest_segment > 2 * 1024 * 1024, "{largest_segment} bytes");

    let mut reader = ArchiveReader::open(&path).unwrap();
    let tests: Vec<TestRecord> = reader.tests().collect::<Result<_, _>>().unwrap();
    assert_eq!(tests[0].events.len(), 2 + 8_000 * 3);
    let download = &attachments(&tests[1])[0];
    assert!(matches!(download.content, AttachmentContent::Blob { .. }));
    assert_eq!(reader.attachment_bytes(download).unwrap(), body);
    let fingerprints: usize = reader
        .secret_fingerprints()
        .unwrap()
        .iter()
        .map(|set| set.fingerprints.len())
        .sum();
    assert_eq!(fingerprints, 200);
}

/// The lock file of the archive at `path`, locked as a writer holds it mid-commit, and its path.
fn hold_the_lock(path: &Path) -> (File, PathBuf) {
    let mut lock_path = path.to_owned().into_os_string();
    lock_path.push(".lock");
    let lock = File::options().read(true).write(true).open(&lock_path).unwrap();
    lock.lock().unwrap();
    (lock, lock_path.into())
}

/// An archive of one finished test, and its lock held as by a writer mid-commit.
fn one_test_with_the_lock_held(run_id: &str) -> (tempfile::TempDir, PathBuf, File, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), run_id, WriterOptions::default());
    run_test(&run, "first", 1, TestOutcome::Passed);
    let (lock, lock_path) = hold_the_lock(&path);
    (dir, path, lock, lock_path)
}

/// A reader opening an archive while a writer holds its lock (mid-commit, here held by the
/// test) waits for the commit to end, then reads what it left.
#[test]
fn a_reader_waits_for_a_commit_in_progress() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_dir, path, lock, _) = one_test_with_the_lock_held("r-wait");
    let opened = std::sync::Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, opened) = (path.clone(), std::sync::Arc::clone(&opened));
        std::thread::spawn(move || {
            let reader = ArchiveReader::open(&path);
            opened.store(true, Ordering::SeqCst);
            reader.map(|mut r| r.tests().count())
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !opened.load(Ordering::SeqCst),
        "the reader did not wait for the lock"
    );
    lock.unlock().unwrap();
    assert_eq!(reader.join().unwrap().unwrap(), 1);
}

/// A commit that cannot take the lock within the writer's timeout fails the flush, naming the
/// lock file; the test it held is committed by the next flush that can.
#[test]
fn a_commit_that_cannot_take_the_lock_in_time_fails_naming_it_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let options = WriterOptions::default().with_lock_timeout(std::time::Duration::from_millis(100));
    let (run, path) = run_with_writer(dir.path(), "r-stuck", options);
    run_test(&run, "first", 1, TestOutcome::Passed);
    let (lock, lock_path) = hold_the_lock(&path);

    let held = run.begin_test(TestStarted::new("held"));
    let err = held.finish(TestOutcome::Passed).unwrap_err().to_string();
    assert!(
        err.contains("waiting for the lock") && err.contains(&*lock_path.to_string_lossy()),
        "{err}"
    );
    lock.unlock().unwrap();
    run_test(&run, "after", 1, TestOutcome::Passed);
    let tests = read_all(&path);
    let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["first", "held", "after"]);
    assert!(tests.iter().all(|t| t.outcome == TestOutcome::Passed));
}

/// Each commit stores the fingerprints of the secrets met since the previous one, in an entry
/// of its own, and a commit with none new stores none.
#[test]
fn secret_fingerprints_are_stored_once_each_across_commits() {
    let dir = tempfile::tempdir().unwrap();
    let run_id = RunId::new("r-secrets").unwrap();
    let secrets = std::sync::Arc::new(SecretRegistry::new());
    let writer = ArchiveWriter::create(dir.path(), RunManifest::new(run_id.clone(), "cargo-test"))
        .unwrap()
        .with_secrets(std::sync::Arc::clone(&secrets));
    let (run, path) = run_into(Bus::builder(), writer, run_id);
    assert!(secrets.remember("first-secret-value"));
    run_test(&run, "one", 1, TestOutcome::Passed);
    assert!(secrets.remember("second-secret-value"));
    assert!(secrets.remember("third-secret-value"));
    run_test(&run, "two", 1, TestOutcome::Passed);
    run_test(&run, "three", 1, TestOutcome::Passed);

    let sets = entry_names(&path)
        .into_iter()
        .filter(|n| n.contains("/secrets/"))
        .collect::<Vec<_>>();
    assert_eq!(sets.len(), 2, "{sets:?}");
    assert_ne!(sets[0], sets[1]);
    let stored: Vec<usize> = ArchiveReader::open(&path)
        .unwrap()
        .secret_fingerprints()
        .unwrap()
        .iter()
        .map(|set| set.fingerprints.len())
        .collect();
    assert_eq!(stored, [1, 2]);
}

/// The writer's deflate level is the one its options give: level 0 stores, level 9 packs.
#[test]
fn the_compression_level_decides_how_small_the_archive_is() {
    let sizes: Vec<u64> = [0, 9]
        .into_iter()
        .map(|level| {
            let dir = tempfile::tempdir().unwrap();
            let options = WriterOptions::default().with_compression_level(level);
            let (run, path) = run_with_writer(dir.path(), "r-level", options);
            run_test(&run, "t", 200, TestOutcome::Passed);
            assert_eq!(read_all(&path)[0].events.len(), 2 + 200 * 3);
            std::fs::metadata(&path).unwrap().len()
        })
        .collect();
    assert!(
        sizes[0] > 4 * sizes[1],
        "level 0: {} bytes, level 9: {}",
        sizes[0],
        sizes[1]
    );
}

/// An attachment exactly at the inline limit stays in its event; one byte more is a blob.
#[test]
fn attachments_up_to_the_inline_limit_stay_in_their_event() {
    let dir = tempfile::tempdir().unwrap();
    let options = WriterOptions::default().with_inline_limit(8);
    let (run, path) = run_with_writer(dir.path(), "r-inline", options);
    let ctx = run.begin_test(TestStarted::new("t"));
    ctx.attach(None, Attachment::new("at", "text/plain", b"8 bytes!".to_vec()));
    ctx.attach(None, Attachment::new("over", "text/plain", b"9 bytes!!".to_vec()));
    ctx.finish(TestOutcome::Passed).unwrap();
    let mut reader = ArchiveReader::open(&path).unwrap();
    let record = reader.tests().next().unwrap().unwrap();
    let found = attachments(&record);
    assert!(
        matches!(found[0].content, AttachmentContent::Inline(_)),
        "{:?}",
        found[0]
    );
    assert!(
        matches!(found[1].content, AttachmentContent::Blob { .. }),
        "{:?}",
        found[1]
    );
    assert_eq!(reader.attachment_bytes(&found[1]).unwrap(), b"9 bytes!!");
    assert_eq!(count_entries(&path, |n| n.starts_with("blobs/")), 1);
}

/// Tests still running when the bus shuts down are committed with what they had sent, and
/// read back interrupted; a test with nothing new since its last commit gets no empty segment.
#[test]
fn the_end_of_a_run_commits_what_running_tests_had_buffered() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r-end", WriterOptions::default());
    let busy = run.begin_test(TestStarted::new("busy"));
    busy.flush().unwrap();
    busy.observe(
        None,
        Observation::new("sent after the start's commit", Attributes::new()),
    );
    let idle = run.begin_test(TestStarted::new("idle"));
    idle.flush().unwrap();
    run.bus().shutdown().unwrap();

    let tests = read_all(&path);
    assert_eq!(tests.len(), 2);
    assert_eq!(tests[0].name, "busy");
    assert_eq!(tests[0].events.len(), 2);
    assert_eq!(tests[1].events.len(), 1);
    assert!(tests.iter().all(|t| t.outcome == TestOutcome::Interrupted));
    let segments = segments_per_test(&path);
    assert_eq!(segments[&busy.test_id().to_string()], 2);
    assert_eq!(segments[&idle.test_id().to_string()], 1);
}

#[test]
fn the_writer_refuses_to_append_to_a_zip_that_does_not_start_with_mimetype() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kit-other.kittrace");
    write_zip(&path, &[("readme.txt", b"someone else's zip")]);
    let before = std::fs::read(&path).unwrap();
    let (run, _) = run_with_writer(dir.path(), "other", WriterOptions::default());
    let ctx = run.begin_test(TestStarted::new("t"));
    let err = ctx.finish(TestOutcome::Passed).unwrap_err().to_string();
    assert!(err.contains("its first entry is not `mimetype`"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// A commit that finds another process's lock held waits for it, then commits.
#[test]
fn a_commit_waits_for_another_writers_lock() {
    let (dir, path, lock, _) = one_test_with_the_lock_held("r-busy");
    let (run, _) = run_with_writer(dir.path(), "r-busy", WriterOptions::default());
    let hold = std::time::Duration::from_millis(100);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(hold);
        lock.unlock().unwrap();
    });
    let started = std::time::Instant::now();
    run_test(&run, "second", 1, TestOutcome::Passed);
    assert!(
        started.elapsed() >= hold,
        "committed after {:?}",
        started.elapsed()
    );
    releaser.join().unwrap();
    let names: Vec<String> = read_all(&path).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["first", "second"]);
}

/// A writer appending to an archive that has lost this run's manifest (a salvage can drop it)
/// writes the manifest again.
#[test]
fn a_manifest_missing_from_the_archive_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kit-lost.kittrace");
    write_zip(&path, &[(format::MIME_TYPE_ENTRY, format::MIME_TYPE.as_bytes())]);
    let (run, written) = run_with_writer(dir.path(), "lost", WriterOptions::default());
    assert_eq!(written, path);
    run_test(&run, "t", 1, TestOutcome::Passed);
    assert_eq!(count_entries(&path, |n| n.ends_with("manifest.json")), 1);
    let reader = ArchiveReader::open(&path).unwrap();
    assert_eq!(
        reader.runs()[0].manifest.as_ref().map(|m| m.run_id.as_str()),
        Some("lost")
    );
}

/// A reader gives up on a commit that does not end within its lock timeout, naming the lock.
#[test]
fn a_reader_gives_up_on_a_lock_held_past_its_timeout() {
    let (_dir, path, lock, lock_path) = one_test_with_the_lock_held("r-held");
    let limits = ReaderLimits::default().with_lock_timeout(std::time::Duration::from_millis(100));
    let err = ArchiveReader::open_with(&path, limits).unwrap_err();
    assert!(matches!(err, TraceError::LockTimedOut { .. }), "{err:?}");
    assert!(err.to_string().contains(&*lock_path.to_string_lossy()), "{err}");
    lock.unlock().unwrap();
    assert_eq!(ArchiveReader::open_with(&path, limits).unwrap().test_count(), 1);
}

#[test]
fn small_attachments_stay_in_their_event_as_text_or_base64() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "r6b", WriterOptions::default());
    let text = br#"{"id":1,"note":"caf\u00e9 \"quoted\""}"#.to_vec();
    let binary = vec![0xff, 0x00, 0xfe, b'{', 0x80];
    let ctx = run.begin_test(TestStarted::new("small"));
    ctx.attach(
        None,
        Attachment::new("rest-01-response", "application/json", text.clone()),
    );
    ctx.attach(
        None,
        Attachment::new("rest-02-response", "image/png", binary.clone()),
    );
    ctx.finish(TestOutcome::Passed).unwrap();

    let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = zip.file_names().map(|n| n.unwrap().into_owned()).collect();
    assert!(!names.iter().any(|n| n.starts_with("blobs/")), "{names:?}");
    // The text reads as itself in the segment; the binary as base64.
    let mut segments = String::new();
    for name in names.iter().filter(|n| n.ends_with(".jsonl")) {
        zip.by_name(name).unwrap().read_to_string(&mut segments).unwrap();
    }
    assert!(
        segments.contains(r#""content":{"text":"{\"id\":1,"#),
        "{segments}"
    );
    assert!(
        segments.contains(r#""content":{"inline":"/wD+e4A="}"#),
        "{segments}"
    );

    let mut reader = ArchiveReader::open(&path).unwrap();
    let record = reader.tests().next().unwrap().unwrap();
    let attachments = attachments(&record);
    assert_eq!(attachments.len(), 2);
    assert_eq!(reader.attachment_bytes(&attachments[0]).unwrap(), text);
    assert_eq!(reader.attachment_bytes(&attachments[1]).unwrap(), binary);
    assert_eq!(attachments[1].content.size(), 5);
}

#[test]
fn a_long_test_commits_intermediate_segments_and_reads_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let options = WriterOptions::default().with_segment_limit(4 * 1024);
    let (run, path) = run_with_writer(dir.path(), "r7", options);
    run_test(&run, "long", 200, TestOutcome::Passed);
    // The next test starts on the buffers the long one left: its segments count from 0 again.
    let next = run_test(&run, "next", 1, TestOutcome::Passed);
    let zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
    let run_id = RunId::new("r7").unwrap();
    for segment in 0..2 {
        let name = format::segment_path(&run_id, next, segment);
        assert!(zip.file_names().any(|n| n.unwrap() == name), "no {name}");
    }
    let segments = zip
        .file_names()
        .filter(|n| n.as_ref().unwrap().ends_with(".jsonl"))
        .count();
    assert!(segments > 5, "{segments} segments");
    let tests = read_all(&path);
    assert_eq!(tests.len(), 2);
    assert_eq!(tests[0].events.len(), 2 + 200 * 3);
    assert!(
        tests[0]
            .events
            .iter()
            .enumerate()
            .all(|(i, e)| e.sequence == i as u64)
    );
}

// === hostile input ===

fn write_zip(path: &Path, entries: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
    for (name, data) in entries {
        let options =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
}

fn open_err(path: &Path) -> String {
    ArchiveReader::open(path).unwrap_err().to_string()
}

#[test]
fn inputs_that_are_not_archives_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.kittrace");
    assert!(
        open_err(&missing).contains("cannot open"),
        "{}",
        open_err(&missing)
    );
    let empty = dir.path().join("empty.kittrace");
    std::fs::write(&empty, b"").unwrap();
    assert!(open_err(&empty).contains("the file is empty"));
    let text = dir.path().join("text.kittrace");
    std::fs::write(&text, b"hello, not a zip").unwrap();
    assert!(open_err(&text).contains("not a zip file"));
    let other = dir.path().join("other.zip");
    write_zip(&other, &[("readme.txt", b"hi")]);
    assert!(open_err(&other).contains("first entry is not `mimetype`"));
    assert!(
        open_err(dir.path()).ends_with("is not a kittrace archive: it is a folder, not a file"),
        "{}",
        open_err(dir.path())
    );
    // A device reads as endless zeros or nothing at all, whatever its size says.
    assert!(
        open_err(Path::new("/dev/zero")).ends_with("it is a device, not a file"),
        "{}",
        open_err(Path::new("/dev/zero"))
    );
}

/// A pipe (a named one, or `<(…)` in a shell) is refused at once, saying why: a zip is read
/// from its end, which a stream does not have, and opening a named pipe no one writes to
/// waited for a writer forever.
#[cfg(unix)]
#[test]
fn a_pipe_is_refused_at_once_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stream.kittrace");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(open_err(&path)).unwrap());
    let Ok(message) = rx.recv_timeout(std::time::Duration::from_secs(10)) else {
        // Let the waiting open through before failing, so the thread ends.
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        panic!("opening a named pipe no one writes to is still waiting after 10 s");
    };
    assert!(
        message.ends_with(
            "is not a kittrace archive: it is a pipe; an archive is read from its end, so save the stream to a file and name that"
        ),
        "{message}"
    );
}

/// An archive whose directory names an entry twice is refused, naming it: a reader keyed by
/// name would see one of the two, and `kit-cli audit` would never search the other.
#[test]
fn an_entry_named_twice_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "twice", WriterOptions::default());
    // Two segments: the start, flushed, and the rest.
    let test = run_test(&run, "t", 1, TestOutcome::Passed);
    let run_id = RunId::new("twice").unwrap();
    let (first, second) = (
        format::segment_path(&run_id, test, 0),
        format::segment_path(&run_id, test, 1),
    );
    let bytes = std::fs::read(&path).unwrap();
    let renamed = String::from_utf8_lossy(&bytes).matches(second.as_str()).count();
    assert_eq!(renamed, 2, "a local header and a directory record");
    let mut twice = bytes.clone();
    for at in 0..twice.len() - second.len() {
        if twice[at..].starts_with(second.as_bytes()) {
            twice[at..at + first.len()].copy_from_slice(first.as_bytes());
        }
    }
    let named_twice = dir.path().join("named-twice.kittrace");
    std::fs::write(&named_twice, &twice).unwrap();
    let err = open_err(&named_twice);
    assert!(err.contains(&format!("lists `{first}` more than once")), "{err}");
    // The same when the directory is lost and the entries are salvaged from their headers.
    std::fs::write(&named_twice, &twice[..twice.len() - 10]).unwrap();
    let err = open_err(&named_twice);
    assert!(err.contains(&format!("lists `{first}` more than once")), "{err}");
    assert_eq!(read_all(&path).len(), 1, "the untouched archive reads");
}

#[test]
fn an_entry_name_that_escapes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.kittrace");
    write_zip(
        &path,
        &[
            ("mimetype", b"application/vnd.kit.trace+zip"),
            ("../../x", b"boom"),
        ],
    );
    let err = open_err(&path);
    assert!(
        err.contains("unsafe entry name \"../../x\"") && err.contains(".."),
        "{err}"
    );
}

fn bomb(path: &Path, lie_about_size: bool) -> (RunId, TestId) {
    let run = RunId::new("bomb").unwrap();
    let test = TestId::generate();
    // 16 MiB of zeros deflate to about 16 KiB.
    let zeros = vec![0u8; 16 * 1024 * 1024];
    let manifest = serde_json::to_vec(&RunManifest::new(run.clone(), "x")).unwrap();
    let segment = format::segment_path(&run, test, 0);
    write_zip(
        path,
        &[
            ("mimetype", b"application/vnd.kit.trace+zip"),
            (&format::manifest_path(&run), &manifest),
            (&segment, &zeros),
        ],
    );
    if lie_about_size {
        // Declare 100 bytes, in the local header and in the directory record.
        let mut bytes = std::fs::read(path).unwrap();
        let real = (16u32 * 1024 * 1024).to_le_bytes();
        let mut patched = 0;
        for at in 0..bytes.len() - 4 {
            if bytes[at..at + 4] == real {
                bytes[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
                patched += 1;
            }
        }
        assert_eq!(patched, 2);
        std::fs::write(path, bytes).unwrap();
    }
    (run, test)
}

#[test]
fn a_zip_bomb_stops_at_the_cap_whether_or_not_it_declares_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ReaderLimits::default().with_max_segment_bytes(1024 * 1024);
    let path = dir.path().join("bomb.kittrace");
    let (run, test) = bomb(&path, false);
    let mut reader = ArchiveReader::open_with(&path, limits).unwrap();
    let err = reader.read_test(&run, test).unwrap_err().to_string();
    assert!(err.contains("larger than the 1048576 bytes"), "{err}");

    let path = dir.path().join("lying-bomb.kittrace");
    let (run, test) = bomb(&path, true);
    let mut reader = ArchiveReader::open_with(&path, limits).unwrap();
    let err = reader.read_test(&run, test).unwrap_err().to_string();
    assert!(err.contains("is damaged") || err.contains("larger than"), "{err}");
}

/// The cap is the largest size read, not the first refused: an entry exactly at it reads.
#[test]
fn an_entry_exactly_at_the_cap_reads_and_one_byte_over_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for method in [zip::CompressionMethod::Stored, zip::CompressionMethod::Deflated] {
        let path = dir.path().join(format!("{method:?}.kittrace"));
        let (run, test, _) = one_segment(&path, method);
        let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
        let size = zip.by_index(2).unwrap().size();
        let at = ReaderLimits::default().with_max_segment_bytes(size);
        let mut reader = ArchiveReader::open_with(&path, at).unwrap();
        // The segment is read whole; only its padding, which is not an event, is refused.
        let err = reader.read_test(&run, test).unwrap_err().to_string();
        assert!(
            err.contains("0000.jsonl:2 ") && !err.contains("larger"),
            "{method:?}: {err}"
        );
        let under = ReaderLimits::default().with_max_segment_bytes(size - 1);
        let mut reader = ArchiveReader::open_with(&path, under).unwrap();
        let err = reader.read_test(&run, test).unwrap_err().to_string();
        assert!(
            err.contains(&format!("larger than the {} bytes", size - 1)),
            "{method:?}: {err}"
        );
    }
}

/// An archive of one test whose segment is stored with `method`, and where its data begins.
fn one_segment(path: &Path, method: zip::CompressionMethod) -> (RunId, TestId, usize) {
    let run = RunId::new("damaged").unwrap();
    let test = TestId::generate();
    let manifest = serde_json::to_vec(&RunManifest::new(run.clone(), "x")).unwrap();
    let mut segment =
        format!("{{\"test_id\":\"{test}\",\"segment\":0,\"events\":0,\"final\":false,\"pid\":1}}\n");
    segment.push_str(&"padding the entry so that its middle is data, ".repeat(40));
    let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
    for (name, data, method) in [
        (
            "mimetype",
            b"application/vnd.kit.trace+zip".as_slice(),
            zip::CompressionMethod::Stored,
        ),
        (
            &format::manifest_path(&run),
            &manifest,
            zip::CompressionMethod::Stored,
        ),
        (&format::segment_path(&run, test, 0), segment.as_bytes(), method),
    ] {
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        zip.start_file(name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    let mut archive = zip::ZipArchive::new(File::open(path).unwrap()).unwrap();
    let start = archive.by_index_raw(2).unwrap().data_start().unwrap() as usize;
    (run, test, start)
}

#[test]
fn damaged_entry_data_is_refused_with_the_entry_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let damage = |path: &Path, at: usize| {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[at] ^= 0x5a;
        std::fs::write(path, bytes).unwrap();
    };
    let read = |path: &Path, run: &RunId, test: TestId| {
        let mut reader = ArchiveReader::open(path).unwrap();
        reader.read_test(run, test).unwrap_err().to_string()
    };

    // Stored: a changed byte reads as a wrong checksum.
    let path = dir.path().join("stored.kittrace");
    let (run, test, start) = one_segment(&path, zip::CompressionMethod::Stored);
    damage(&path, start + 200);
    let err = read(&path, &run, test);
    assert!(
        err.contains("0000.jsonl") && err.contains("CRC-32 does not match"),
        "{err}"
    );

    // Deflated: a changed byte in the middle of the stream is caught, whether the stream
    // breaks, ends early, comes out another size or only its checksum differs.
    for offset in [0, 3, 17, 40] {
        let path = dir.path().join(format!("deflated-{offset}.kittrace"));
        let (run, test, start) = one_segment(&path, zip::CompressionMethod::Deflated);
        damage(&path, start + offset);
        let err = read(&path, &run, test);
        assert!(
            err.contains("0000.jsonl") && err.contains("is damaged"),
            "{offset}: {err}"
        );
    }

    // Changes one size the segment declares, in both its local header and its directory
    // record (`at`: the field's offset in each).
    let redeclare =
        |path: &Path, run: &RunId, test: TestId, start: usize, at: (usize, usize), change: fn(u32) -> u32| {
            let mut bytes = std::fs::read(path).unwrap();
            let local = start - 30 - format::segment_path(run, test, 0).len() + at.0;
            let central = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap() + at.1;
            let declared = u32::from_le_bytes(bytes[local..local + 4].try_into().unwrap());
            for field in [local, central] {
                bytes[field..field + 4].copy_from_slice(&change(declared).to_le_bytes());
            }
            std::fs::write(path, bytes).unwrap();
        };

    // A deflate stream cut short: both headers declare half the stored bytes.
    let path = dir.path().join("cut.kittrace");
    let (run, test, start) = one_segment(&path, zip::CompressionMethod::Deflated);
    redeclare(&path, &run, test, start, (18, 20), |stored| stored / 2);
    let err = read(&path, &run, test);
    assert!(err.contains("0000.jsonl") && err.contains("ends early"), "{err}");

    // A size that lies low: both headers declare a tenth of what the stream inflates to. The
    // output grows past the declared size, under the cap, and the entry reads as damaged.
    let path = dir.path().join("low.kittrace");
    let (run, test, start) = one_segment(&path, zip::CompressionMethod::Deflated);
    redeclare(&path, &run, test, start, (22, 24), |size| size / 10);
    let err = read(&path, &run, test);
    assert!(err.contains("0000.jsonl") && err.contains("is damaged"), "{err}");
    assert!(!err.contains("larger"), "{err}");

    // Sizes that lie high: twice what the stream inflates to, and more than deflate could
    // ever grow the stored bytes to. The stream ends first, and the entry reads as damaged.
    for (name, change) in [
        ("high.kittrace", (|size| size * 2) as fn(u32) -> u32),
        ("impossible.kittrace", |size| size * 2000),
    ] {
        let path = dir.path().join(name);
        let (run, test, start) = one_segment(&path, zip::CompressionMethod::Deflated);
        redeclare(&path, &run, test, start, (22, 24), change);
        let err = read(&path, &run, test);
        assert!(
            err.contains("0000.jsonl") && err.contains("but declares"),
            "{name}: {err}"
        );
    }

    // A method kittrace never writes (the local header's and the directory's both say 12).
    let path = dir.path().join("bzip2.kittrace");
    let (run, test, start) = one_segment(&path, zip::CompressionMethod::Stored);
    let mut bytes = std::fs::read(&path).unwrap();
    let name_len = format::segment_path(&run, test, 0).len();
    let local = start - 30 - name_len;
    assert_eq!(&bytes[local..local + 4], b"PK\x03\x04");
    bytes[local + 8] = 12;
    let central = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    bytes[central + 10] = 12;
    std::fs::write(&path, bytes).unwrap();
    let err = read(&path, &run, test);
    assert!(err.contains("0000.jsonl") && err.contains("never uses"), "{err}");
}

#[test]
fn a_newer_major_format_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.kittrace");
    let run = RunId::new("future").unwrap();
    let mut manifest = serde_json::to_value(RunManifest::new(run.clone(), "x")).unwrap();
    manifest["format_version"] = "3.0".into();
    let manifest = serde_json::to_vec(&manifest).unwrap();
    write_zip(
        &path,
        &[
            ("mimetype", b"application/vnd.kit.trace+zip"),
            (&format::manifest_path(&run), &manifest),
        ],
    );
    let err = open_err(&path);
    assert!(
        err.contains("format 3.0, newer than the 2.0") && err.contains("upgrade kit-cli"),
        "{err}"
    );
}

/// A newer minor version of the current major (its lines leave the run and test to the
/// segment) and the first major version (its lines name both) read alike.
#[test]
fn a_newer_minor_format_and_the_first_major_read_with_unknown_fields_and_entries() {
    for (version, ids) in [("2.7", false), ("1.0", true)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("minor.kittrace");
        let run = RunId::new("minor").unwrap();
        let test = TestId::generate();
        let mut manifest = serde_json::to_value(RunManifest::new(run.clone(), "x")).unwrap();
        manifest["format_version"] = version.into();
        manifest["novelty"] = true.into();
        let manifest = serde_json::to_vec(&manifest).unwrap();
        let ids = if ids {
            format!(r#""run_id":"minor","test_id":"{test}","#)
        } else {
            String::new()
        };
        let segment = format!(
            concat!(
                r#"{{"test_id":"{t}","segment":0,"events":3,"final":true,"pid":1,"extra":1}}"#,
                "\n",
                r#"{{{ids}"id":"0000000000000001","sequence":0,"timestamp":1,"kind":{{"test_started":{{"name":"n","new":1}}}}}}"#,
                "\n",
                r#"{{{ids}"id":"0000000000000002","parent_id":"0000000000000001","sequence":1,"timestamp":2,"kind":{{"teleport":{{}}}}}}"#,
                "\n",
                r#"{{{ids}"id":"0000000000000003","sequence":2,"timestamp":3,"kind":{{"test_finished":{{"outcome":{{"status":"passed"}},"duration_ns":5}}}}}}"#,
                "\n"
            ),
            t = test,
            ids = ids,
        );
        write_zip(
            &path,
            &[
                ("mimetype", b"application/vnd.kit.trace+zip"),
                (&format::manifest_path(&run), &manifest),
                ("future/thing.bin", b"?"),
                (&format::segment_path(&run, test, 0), segment.as_bytes()),
            ],
        );
        let tests = read_all(&path);
        assert_eq!(tests[0].outcome, TestOutcome::Passed, "{version}");
        assert_eq!(
            tests[0].events[1].kind,
            EventKind::Unknown {
                kind: "teleport".into()
            },
            "{version}"
        );
        for event in &tests[0].events {
            assert_eq!((&event.run_id, event.test_id), (&run, test), "{version}");
        }
    }
}

#[test]
fn a_damaged_event_line_names_the_entry_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.kittrace");
    let run = RunId::new("bad").unwrap();
    let test = TestId::generate();
    let manifest = serde_json::to_vec(&RunManifest::new(run.clone(), "x")).unwrap();
    let segment = format!(
        "{{\"test_id\":\"{test}\",\"segment\":0,\"events\":1,\"final\":false,\"pid\":1}}\n{{not json\n"
    );
    write_zip(
        &path,
        &[
            ("mimetype", b"application/vnd.kit.trace+zip"),
            (&format::manifest_path(&run), &manifest),
            (&format::segment_path(&run, test, 0), segment.as_bytes()),
        ],
    );
    let mut reader = ArchiveReader::open(&path).unwrap();
    let err = reader.read_test(&run, test).unwrap_err().to_string();
    assert!(
        err.contains(&format!("runs/bad/tests/{test}/0000.jsonl:2")),
        "{err}"
    );

    // Bytes that are not UTF-8 on the third line: the line is counted in the bytes.
    let mut segment = segment.replace("{not json", "{}").into_bytes();
    segment.extend_from_slice(b"\xff\xfe\n");
    write_zip(
        &path,
        &[
            ("mimetype", b"application/vnd.kit.trace+zip"),
            (&format::manifest_path(&run), &manifest),
            (&format::segment_path(&run, test, 0), &segment),
        ],
    );
    let mut reader = ArchiveReader::open(&path).unwrap();
    let err = reader.read_test(&run, test).unwrap_err().to_string();
    assert!(
        err.contains(&format!("runs/bad/tests/{test}/0000.jsonl:3")) && err.contains("not UTF-8"),
        "{err}"
    );
}

#[test]
fn the_writer_refuses_to_overwrite_a_file_that_is_not_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kit-mine.kittrace");
    let precious = "precious data, not a zip ".repeat(100);
    std::fs::write(&path, &precious).unwrap();
    let (run, _) = run_with_writer(dir.path(), "mine", WriterOptions::default());
    let ctx = run.begin_test(TestStarted::new("t"));
    let err = ctx.finish(TestOutcome::Passed).unwrap_err().to_string();
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), precious);
}

/// Test `k`'s records from `readers` clones, each reading every n-th test on its own thread.
fn read_side_by_side(reader: ArchiveReader, readers: usize) -> Vec<TestRecord> {
    let mut clones: Vec<ArchiveReader> = (1..readers).map(|_| reader.clone()).collect();
    clones.push(reader);
    let parts: Vec<Vec<TestRecord>> = std::thread::scope(|s| {
        let handles: Vec<_> = clones
            .into_iter()
            .enumerate()
            .map(|(k, mut r)| {
                s.spawn(move || {
                    r.tests()
                        .skip(k)
                        .step_by(readers)
                        .collect::<Result<Vec<_>, _>>()
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = parts.iter().map(Vec::len).sum::<usize>();
    (0..total)
        .map(|i| parts[i % readers][i / readers].clone())
        .collect()
}

#[test]
fn clones_of_a_reader_read_every_nth_test_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "clones", WriterOptions::default());
    let mut sizes = Vec::new();
    for i in 0..7 {
        run_test(&run, &format!("t{i}"), 1 + i % 3, TestOutcome::Passed);
        sizes.push(std::fs::metadata(&path).unwrap().len());
    }
    // A salvaged archive too: its directory is made in memory, and clones share it.
    let full = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.kittrace");
    std::fs::write(&cut, &full[..sizes[4] as usize + 40]).unwrap();

    for (path, tests) in [(&path, 7), (&cut, 5)] {
        let expected = read_all(path);
        let reader = ArchiveReader::open(path).unwrap();
        assert_eq!(reader.salvage().is_some(), path == &cut);
        assert!(
            expected.len() >= tests,
            "{} tests in {}",
            expected.len(),
            path.display()
        );
        for readers in [1, 2, 3] {
            assert_eq!(
                read_side_by_side(reader.clone(), readers),
                expected,
                "{readers} readers of {}",
                path.display()
            );
        }
    }
}

/// `Tests::nth` skips without reading (what lets clones share the work; the report bench shows
/// it: without it every reader read every test). Here: stepping yields the right tests, and a
/// damaged test stepped over does not fail them.
#[test]
fn stepping_over_tests_yields_every_nth_whatever_lies_between() {
    let dir = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(dir.path(), "skips", WriterOptions::default());
    let ids: Vec<TestId> = (0..3)
        .map(|i| run_test(&run, &format!("t{i}"), 2, TestOutcome::Passed))
        .collect();
    // Damage the second test's entries in place: reading it fails.
    let mut bytes = std::fs::read(&path).unwrap();
    let mut zip = zip::ZipArchive::new(File::open(&path).unwrap()).unwrap();
    for i in 0..zip.len() {
        let entry = zip.by_index(i).unwrap();
        if entry.name().unwrap().contains(&ids[1].to_string()) {
            let start = entry.data_start().unwrap() as usize;
            for b in &mut bytes[start..start + entry.compressed_size() as usize] {
                *b ^= 0x5a;
            }
        }
    }
    std::fs::write(&path, &bytes).unwrap();

    let mut reader = ArchiveReader::open(&path).unwrap();
    assert!(
        reader.tests().nth(1).unwrap().is_err(),
        "the damage is seen when read"
    );
    let read: Vec<TestId> = reader.tests().step_by(2).map(|t| t.unwrap().test_id).collect();
    assert_eq!(read, [ids[0], ids[2]]);
}

#[test]
fn an_archive_of_many_runs_opens_without_comparing_each_run_with_every_other() {
    // Each entry's run was looked for among the runs already seen, in a list: an archive's
    // open was quadratic in its runs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many-runs.kittrace");
    let test = TestId::generate();
    let names: Vec<String> = (0..50_000)
        .rev()
        .map(|i| format::segment_path(&RunId::new(format!("r{i:05}")).unwrap(), test, 0))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![(format::MIME_TYPE_ENTRY, format::MIME_TYPE.as_bytes())];
    entries.extend(names.iter().map(|name| (name.as_str(), &b""[..])));
    write_zip(&path, &entries);
    let reader = ArchiveReader::open(&path).unwrap();
    let runs = reader.runs();
    assert_eq!(runs.len(), 50_000);
    assert_eq!(runs[0].run_id.to_string(), "r00000", "runs come sorted");
    assert_eq!(runs[49_999].run_id.to_string(), "r49999");
    assert!(
        runs.iter()
            .all(|run| run.tests == [test] && run.manifest.is_none())
    );
}

/// The shards of run `run_id`, one per list of test names, each `kit-{run}.kittrace` in a
/// folder of its own under `root`, as CI jobs leave them.
fn shards(root: &Path, run_id: &str, tests: &[&[&str]]) -> Vec<PathBuf> {
    tests
        .iter()
        .enumerate()
        .map(|(i, names)| {
            let dir = root.join(format!("job{i}"));
            std::fs::create_dir(&dir).unwrap();
            let (run, path) = run_with_writer(&dir, run_id, WriterOptions::default());
            for name in *names {
                run_test(&run, name, 1, TestOutcome::Passed);
            }
            path
        })
        .collect()
}

#[test]
fn a_test_run_in_two_shards_is_flagged_once_with_each_shard_named_by_its_path() {
    let root = tempfile::tempdir().unwrap();
    let shards = shards(
        root.path(),
        "m1",
        &[&["same", "same", "same", "only_a"], &["only_b", "same"]],
    );
    // Both are `kit-m1.kittrace`: only their paths tell them apart.
    let (a, b) = (shards[0].display().to_string(), shards[1].display().to_string());
    let out = root.path().join("merged.kittrace");
    let summary = merge(&shards, &out).unwrap();
    assert_eq!(summary.tests, 6);
    // Runs of a name in one shard are its own business; in another shard, a second run of it.
    assert_eq!(
        summary.duplicates,
        [format!(
            "test `same` of run m1 is in {a} and {b} (two runs of it): both kept"
        )]
    );
    let mut reader = ArchiveReader::open(&out).unwrap();
    let info = reader.merge_info().unwrap().unwrap();
    assert_eq!(info.sources, [a, b]);
    assert_eq!(info.duplicates, summary.duplicates);
    assert_eq!(reader.test_count(), 6);

    // One shard given twice is one shard: its tests are stored once, and nothing is flagged.
    let again = root.path().join("again.kittrace");
    let summary = merge(&[shards[0].clone(), shards[0].clone()], &again).unwrap();
    assert_eq!((summary.tests, summary.duplicates.len()), (4, 0));
    let info = ArchiveReader::open(&again)
        .unwrap()
        .merge_info()
        .unwrap()
        .unwrap();
    assert_eq!(info.sources, ["kit-m1.kittrace", "kit-m1.kittrace"]);
}

#[test]
fn a_merge_larger_than_what_it_holds_in_memory_reads_back_whole() {
    // 3 MiB of blobs that do not compress: the merge writes its entries as it goes, a
    // mebibyte at a time, and its one directory at the end describes them all.
    let root = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(root.path(), "m2", WriterOptions::default());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..6 {
        let body: Vec<u8> = (0..512 * 1024)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        let ctx = run.begin_test(TestStarted::new(format!("t{i}")));
        ctx.attach(
            None,
            Attachment::new("rest-01-response", "application/octet-stream", body),
        );
        ctx.finish(TestOutcome::Passed).unwrap();
    }
    let out = root.path().join("merged.kittrace");
    let summary = merge(std::slice::from_ref(&path), &out).unwrap();

    let mut shard = ArchiveReader::open(&path).unwrap();
    let mut zip = zip::ZipArchive::new(File::open(&out).unwrap()).unwrap();
    for i in 0..shard.entry_count() {
        let (name, bytes) = shard.entry(i).unwrap();
        let mut merged = Vec::new();
        zip.by_name(&name).unwrap().read_to_end(&mut merged).unwrap();
        assert!(merged == bytes, "{name} reads back otherwise");
    }
    assert_eq!(zip.len(), shard.entry_count() + 1, "and merge.json");
    assert_eq!((summary.runs, summary.tests, summary.blobs), (1, 6, 6));
    assert_eq!(entry_names(&out).len(), zip.len(), "each entry once");
    assert_eq!(read_all(&out), read_all(&path));
}

/// A writer in a folder of its own that records the fingerprint of `secret`, and its archive.
fn run_with_secret(dir: &Path, run_id: &str, secret: &str) -> (KitRun, PathBuf) {
    std::fs::create_dir(dir).unwrap();
    let run_id = RunId::new(run_id).unwrap();
    let secrets = std::sync::Arc::new(SecretRegistry::new());
    assert!(secrets.remember(secret));
    let writer = ArchiveWriter::create(dir, RunManifest::new(run_id.clone(), "cargo-test"))
        .unwrap()
        .with_secrets(secrets);
    run_into(Bus::builder(), writer, run_id)
}

#[test]
fn entries_of_one_name_with_other_content_in_two_shards_are_both_kept() {
    let root = tempfile::tempdir().unwrap();
    let (run, a) = run_with_secret(&root.path().join("a"), "m3", "first-secret-value");
    let test = run_test(&run, "t", 2, TestOutcome::Passed);
    let (run, other) = run_with_secret(&root.path().join("other"), "m3", "other-secret-value");
    run_test(&run, "u", 1, TestOutcome::Passed);
    let other_secrets = {
        let mut reader = ArchiveReader::open(&other).unwrap();
        (0..reader.entry_count())
            .map(|i| reader.entry(i).unwrap())
            .find(|(name, _)| name.contains("/secrets/"))
            .unwrap()
            .1
    };
    // Shard b: shard a with its test started under another name (a retry that differs, say)
    // and its secrets entry holding another writer's fingerprints under the same name.
    let mut reader = ArchiveReader::open(&a).unwrap();
    let entries: Vec<(String, Vec<u8>)> = (0..reader.entry_count())
        .map(|i| {
            let (name, bytes) = reader.entry(i).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            let bytes = if name.contains("/secrets/") {
                other_secrets.clone()
            } else {
                text.replace(r#""name":"t""#, r#""name":"t-again""#).into_bytes()
            };
            (name, bytes)
        })
        .collect();
    let b = root.path().join("b.kittrace");
    let entries: Vec<(&str, &[u8])> = entries.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    write_zip(&b, &entries);

    let out = root.path().join("merged.kittrace");
    let summary = merge(&[a.clone(), b], &out).unwrap();
    assert_eq!((summary.runs, summary.tests, summary.blobs), (1, 2, 0));
    let [flag] = &summary.duplicates[..] else {
        panic!("{:?}", summary.duplicates)
    };
    let kept_as = flag
        .strip_prefix(&format!(
            "test {test} of run m3 is in two shards with different events: the copy from b.kittrace is kept as "
        ))
        .unwrap_or_else(|| panic!("{flag}"));
    // Every segment of the copy moved to its new id, and reads back whole.
    let merged = read_all(&out);
    let names: Vec<(&str, String)> = merged
        .iter()
        .map(|t| (t.name.as_str(), t.test_id.to_string()))
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&("t", test.to_string())), "{names:?}");
    assert!(names.contains(&("t-again", kept_as.to_owned())), "{names:?}");
    let original = &read_all(&a)[0];
    assert!(
        merged
            .iter()
            .all(|t| t.events.len() == original.events.len() && t.outcome == TestOutcome::Passed)
    );
    let sets = ArchiveReader::open(&out).unwrap().secret_fingerprints().unwrap();
    assert_eq!(sets.len(), 2, "both writers' fingerprints are kept");
    assert_ne!(sets[0], sets[1]);
    // The same entries in two files (a shard and its copy) are stored once, and flag nothing.
    let copy = root.path().join("copy.kittrace");
    std::fs::copy(&a, &copy).unwrap();
    let again = root.path().join("again.kittrace");
    let summary = merge(&[a, copy], &again).unwrap();
    assert_eq!((summary.tests, summary.duplicates.len()), (1, 0));
    let sets = ArchiveReader::open(&again)
        .unwrap()
        .secret_fingerprints()
        .unwrap();
    assert_eq!(sets.len(), 1);
}

#[test]
fn a_shard_cut_short_is_merged_whole_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let (run, path) = run_with_writer(root.path(), "m4", WriterOptions::default());
    for i in 0..3 {
        run_test(&run, &format!("t{i}"), 2, TestOutcome::Passed);
    }
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let cut = ArchiveReader::open(&path).unwrap().salvage().unwrap();

    let out = root.path().join("merged.kittrace");
    let summary = merge(std::slice::from_ref(&path), &out).unwrap();
    let note = format!(
        "shard kit-m4.kittrace of run m4 was cut short (its writer was killed?): read {} whole entries, left out {} damaged bytes",
        cut.entries, cut.dropped_bytes
    );
    assert_eq!(summary.salvaged, [note]);
    let mut merged = ArchiveReader::open(&out).unwrap();
    assert_eq!(merged.salvage(), None, "the merged archive is whole");
    assert_eq!(merged.merge_info().unwrap().unwrap().salvaged, summary.salvaged);
    assert_eq!(read_all(&out), read_all(&path));

    // Merged again with another shard, the note stays, once, beside what the new merge finds.
    let shards = shards(root.path(), "m4", &[&["t0"]]);
    let again = root.path().join("again.kittrace");
    let summary = merge(&[out.clone(), shards[0].clone(), out.clone()], &again).unwrap();
    assert_eq!(summary.salvaged.len(), 1, "{:?}", summary.salvaged);
    assert!(summary.salvaged[0].starts_with("shard kit-m4.kittrace of run m4 was cut short"));
    assert_eq!(summary.duplicates.len(), 1, "{:?}", summary.duplicates);
    assert!(summary.duplicates[0].starts_with("test `t0` of run m4 is in merged.kittrace and "));
    let info = ArchiveReader::open(&again)
        .unwrap()
        .merge_info()
        .unwrap()
        .unwrap();
    assert_eq!(
        (info.salvaged, info.duplicates),
        (summary.salvaged, summary.duplicates)
    );
}
