//! The compiler's build id: a hash of its own sources and manifest, which keys the
//! expansion cache (`expand::cache`) so that a changed compiler never reuses an expansion
//! of an older one. Re-run whenever a source file changes.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else {
            files.push(p);
        }
    }
}

fn main() {
    // The manifest directory cargo gives this run, not the one this script was compiled
    // in (`env!`): cargo reuses a compiled build script for a copy of the package at
    // another path whose fingerprint matches, and the id then hashed the other copy's
    // sources, so edits here kept the old id and stale expansions were read back.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR for build scripts");
    let root = Path::new(&dir);
    let mut files = vec![root.join("Cargo.toml")];
    walk(&root.join("src"), &mut files);
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        f.strip_prefix(root).unwrap_or(f).hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    std::env::var("CARGO_PKG_VERSION").unwrap_or_default().hash(&mut h);
    println!("cargo:rustc-env=TVM_CORE_BUILD_ID={:016x}", h.finish());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
