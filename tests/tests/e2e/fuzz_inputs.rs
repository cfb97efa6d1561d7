//! Every committed fuzz input (`fuzz/seeds/` and `fuzz/regressions/`) through its target's
//! check, as a plain test: CI builds no fuzzer (it needs sanitizer flags), but the checks
//! compile against the kit's current API here, and an input that once failed stays fixed.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/mod.rs"]
mod checks;

/// Runs `check` on every file under `fuzz/seeds/{target}` and `fuzz/regressions/{target}`,
/// naming the file that fails it; returns how many files it ran.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for folder in ["seeds", "regressions"] {
        collect(&root.join(folder).join(target), &mut files);
    }
    files.sort();
    for file in &files {
        let data = std::fs::read(file).unwrap();
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            let name = file.strip_prefix(&root).unwrap_or(file).display();
            panic!("fuzz target {target} fails on fuzz/{name}: {message}");
        }
    }
    files.len()
}

/// The files under `dir`, at any depth, as libFuzzer reads a corpus folder; none if it is absent.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// A test a target, `{target}_holds_on_its_inputs`, that also asserts how many committed
/// inputs it found: a folder moved or emptied fails rather than passing on nothing.
macro_rules! holds_on_its_inputs {
    ($($test:ident: $target:ident, at least $files:literal;)*) => {$(
        #[test]
        fn $test() {
            let files = replay(stringify!($target), checks::$target::check);
            assert!(files >= $files, "{} inputs for {}", files, stringify!($target));
        }
    )*};
}

holds_on_its_inputs! {
    json_doc_holds_on_its_inputs: json_doc, at least 3;
    event_line_holds_on_its_inputs: event_line, at least 3;
    archive_holds_on_its_inputs: archive, at least 2;
    routes_holds_on_its_inputs: routes, at least 2;
    openapi_holds_on_its_inputs: openapi, at least 4;
    sanitizer_holds_on_its_inputs: sanitizer, at least 7;
    yaml_holds_on_its_inputs: yaml, at least 5;
    report_holds_on_its_inputs: report, at least 5;
}
