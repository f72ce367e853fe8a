//! The README's lists cannot drift from the repository: every test file is named in its
//! Tests list (between `<!-- tests -->` and `<!-- /tests -->`) and every file that list
//! names exists; every path of its Layout block (between `<!-- layout -->` and
//! `<!-- /layout -->`) exists, and the block names every top-level folder and every
//! module of `tvm-core/src`. (The pass lists are `pass_lists.rs`'s.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The README's text between `<!-- NAME -->` and `<!-- /NAME -->`.
fn block(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (open, close) = (format!("<!-- {name} -->"), format!("<!-- /{name} -->"));
    let start = text.find(&open).unwrap_or_else(|| panic!("README.md has no `{open}`")) + open.len();
    let end = start + text[start..].find(&close).unwrap_or_else(|| panic!("README.md has no `{close}`"));
    text[start..end].to_string()
}

/// The `.rs` files directly inside `dir` (relative to the repository root).
fn rs_files(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The folders whose `.rs` files are tests (a suite's `main.rs` is its folder's entry).
const TEST_DIRS: [&str; 8] = [
    "tests",
    "tests/backends",
    "tests/ui",
    "tvm-core/tests",
    "tvm-runtime/tests",
    "tvm-explorer/tests",
    "tvm-tune/tests",
    "examples/mtcnn/tests",
];

#[test]
fn every_test_file_is_listed_and_every_listed_file_exists() {
    let list = block("tests");
    // The names in code spans: `name.rs`, or a path ending in one.
    let named: BTreeSet<String> = list
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.ends_with(".rs"))
        .map(|s| s.rsplit('/').next().unwrap().to_string())
        .collect();
    let mut all = BTreeSet::new();
    let mut missing = Vec::new();
    for dir in TEST_DIRS {
        for f in rs_files(dir) {
            all.insert(f.clone());
            // The backend suite's entry point and the UI package's empty library.
            let entry = (dir == "tests/backends" && f == "main.rs") || (dir == "tests/ui" && f == "lib.rs");
            if !entry && !named.contains(&f) {
                missing.push(format!("{dir}/{f}"));
            }
        }
    }
    assert!(missing.is_empty(), "test files the README's Tests list does not name: {missing:?}");
    let unknown: Vec<_> = named.iter().filter(|f| !all.contains(*f)).collect();
    assert!(unknown.is_empty(), "the README's Tests list names files that do not exist: {unknown:?}");
}

#[test]
fn the_layout_names_what_exists_and_every_folder_and_module() {
    let layout = block("layout");
    let mut paths = Vec::new();
    let mut parent = String::new();
    for line in layout.lines().filter(|l| !l.starts_with("```") && !l.trim().is_empty()) {
        // The path column ends at the first run of two spaces.
        let indent = line.len() - line.trim_start().len();
        let head = line.trim_start().split("  ").next().unwrap().trim();
        if indent == 0 {
            parent = head.to_string();
            paths.push(head.to_string());
        } else if indent <= 4 {
            // An entry inside the folder above (deeper indents continue a description).
            for p in head.split(", ") {
                paths.push(format!("{parent}{p}"));
            }
        }
    }
    let absent: Vec<_> = paths.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(absent.is_empty(), "the README's Layout names paths that do not exist: {absent:?}");
    let listed: BTreeSet<&str> = paths.iter().map(|p| p.trim_end_matches('/')).collect();
    let mut unlisted = Vec::new();
    for e in std::fs::read_dir(root()).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && !name.starts_with('.') && name != "target" && !listed.contains(name.as_str()) {
            unlisted.push(name);
        }
    }
    for e in std::fs::read_dir(root().join("tvm-core/src")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let path = format!("tvm-core/src/{name}");
        if name != "lib.rs" && !listed.contains(path.as_str()) {
            unlisted.push(path);
        }
    }
    unlisted.sort();
    assert!(unlisted.is_empty(), "folders and modules the README's Layout does not name: {unlisted:?}");
}

/// The Layout's `benches/` entry names every file and folder directly in `benches/` (the
/// criterion benches, the scripts, the peers), so a new one cannot go unlisted.
#[test]
fn the_layout_names_every_bench() {
    let layout = block("layout");
    let mut lines = layout.lines().skip_while(|l| !l.starts_with("benches/"));
    let first = lines.next().expect("the Layout has a `benches/` entry");
    let entry: Vec<&str> = std::iter::once(first).chain(lines.take_while(|l| l.starts_with(' '))).collect();
    let entry = entry.join(" ");
    let mut unnamed = Vec::new();
    for e in std::fs::read_dir(root().join("benches")).unwrap() {
        let e = e.unwrap();
        let mut name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() {
            name.push('/');
        }
        let named = entry.split(|c: char| c.is_whitespace() || ",;()".contains(c)).any(|w| w == name);
        if !named {
            unnamed.push(name);
        }
    }
    unnamed.sort();
    assert!(unnamed.is_empty(), "benches the README's Layout does not name: {unnamed:?}");
}
