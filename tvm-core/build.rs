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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("Cargo.toml")];
    walk(&root.join("src"), &mut files);
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        f.strip_prefix(root).unwrap_or(f).hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    env!("CARGO_PKG_VERSION").hash(&mut h);
    println!("cargo:rustc-env=TVM_CORE_BUILD_ID={:016x}", h.finish());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
