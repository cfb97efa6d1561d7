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

#[test]
fn json_doc_holds_on_its_inputs() {
    assert!(replay("json_doc", checks::json_doc::check) >= 3);
}

#[test]
fn event_line_holds_on_its_inputs() {
    assert!(replay("event_line", checks::event_line::check) >= 2);
}

#[test]
fn archive_holds_on_its_inputs() {
    assert!(replay("archive", checks::archive::check) >= 2);
}

#[test]
fn routes_holds_on_its_inputs() {
    assert!(replay("routes", checks::routes::check) >= 2);
}

#[test]
fn openapi_holds_on_its_inputs() {
    assert!(replay("openapi", checks::openapi::check) >= 4);
}

#[test]
fn sanitizer_holds_on_its_inputs() {
    assert!(replay("sanitizer", checks::sanitizer::check) >= 6);
}

#[test]
fn yaml_holds_on_its_inputs() {
    assert!(replay("yaml", checks::yaml::check) >= 4);
}

#[test]
fn report_holds_on_its_inputs() {
    assert!(replay("report", checks::report::check) >= 3);
}
