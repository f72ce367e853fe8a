//! The expansion cache: an unchanged kernel is not lowered again on the next expansion.
//!
//! rustc expands every macro of a crate each time the crate is rebuilt, and rust-analyzer
//! expands them again as the user types; lowering and code generation are about half of
//! an incremental debug build of a crate with kernels (README, "Kernels in debug
//! builds"). A successful expansion is kept as text, keyed by the SHA-256 of the macro's
//! input tokens, the backends, and the compiler's build id (a hash of tvm-core's own
//! sources, from its build script), in `OUT_DIR/expansions` of tvm-core's build (so in the
//! target directory, and `cargo clean` clears it).
//!
//! Text loses spans, so an expansion read back is given its spans again:
//! - identifiers named like the kernel, its parameters or its outputs take the user's
//!   spans (rust-analyzer's "go to definition" and rustc's notes then point at the
//!   kernel's signature, as without the cache);
//! - the `device` parameter of the generated functions is mixed-site (hygienic: a kernel
//!   parameter called `device` is another variable); every `device` identifier read back
//!   is made mixed-site again, so a kernel with a parameter, output or name `device` is not
//!   cached (mixed-site paths resolve items as call-site ones do, so only that variable
//!   is concerned).
//!
//! A fresh expansion is returned as built (walking it again would cost the largest
//! kernels a third of their expansion); the tests check that a hit equals it.
//!
//! Not cached: expansions with errors (their spans matter), and expansions whose output
//! depends on more than their tokens: with `TVM_TIME_PASSES=1` or `TVM_DUMP_TIR` set, or
//! with a build script's CUDA binaries present (`tvm::build`). `TVM_EXPANSION_CACHE=off`
//! turns the cache off. Concurrent rustc and rust-analyzer processes are safe: an entry is
//! written to a temporary file and renamed into place, and carries its key and length, so
//! a partial or foreign file is a miss, never an expansion.

use super::Backends;
use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The format of an entry; part of its key.
const FORMAT: &str = "tvm-rs expansion v1";

/// At most this many entries are kept; past it the oldest are removed.
const MAX_ENTRIES: usize = 512;

/// Where entries live: `OUT_DIR/expansions` of tvm-core's build.
fn dir() -> Option<PathBuf> {
    if std::env::var_os("TVM_EXPANSION_CACHE").is_some_and(|v| v == "off" || v == "0") {
        return None;
    }
    // The other inputs of an expansion: pass times and TIR dumps print while expanding;
    // a build script's CUDA binaries are embedded by what is on disk.
    if std::env::var_os("TVM_TIME_PASSES").is_some_and(|v| v == "1")
        || std::env::var_os("TVM_DUMP_TIR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("OUT_DIR").is_some_and(|d| crate::artifact::artifact_dir(Path::new(&d)).is_dir())
    {
        return None;
    }
    Some(Path::new(env!("OUT_DIR")).join("expansions"))
}

/// The key of an expansion of `tokens` (a generic kernel's `instance` for that type) for
/// `backends`. The kernel's tuning record, when there is one, is part of the key (its path
/// and bytes).
pub fn key(tokens: &TokenStream, backends: Backends, instance: Option<&str>) -> String {
    let mut h = Sha256::new();
    let record = crate::tune::kernel_name(tokens)
        .and_then(|n| crate::tune::record_file(&crate::tune::record_name(&n, instance)));
    let (path, bytes) = match &record {
        Some((p, b)) => (p.to_string_lossy().into_owned(), &b[..]),
        None => (String::new(), &[][..]),
    };
    // `TVM_SCHEDULES=derived` changes what a kernel expands to.
    let (b, t) = (format!("{backends:?} {}", crate::autosched::written_blocks_ignored()), tokens.to_string());
    let parts: [&[u8]; 6] =
        [FORMAT.as_bytes(), env!("TVM_CORE_BUILD_ID").as_bytes(), b.as_bytes(), t.as_bytes(), path.as_bytes(), bytes];
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether expansions are cached here (not off, and no input beyond the tokens).
pub fn enabled() -> bool {
    dir().is_some()
}

/// The file of the entry `key`; `None` when the cache is off (for tests and tools).
pub fn path(key: &str) -> Option<PathBuf> {
    dir().map(|d| d.join(key))
}

/// The stored text of the expansion of `key`, if there is a whole one.
pub fn load(key: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir()?.join(key)).ok()?;
    let (header, body) = text.split_once('\n')?;
    let want = format!("{FORMAT} {key} {}", body.len());
    (header == want).then(|| body.to_string())
}

/// Stores the text of a successful expansion under `key`; any failure only means no entry.
pub fn store(key: &str, text: &str) {
    let Some(dir) = dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let tmp = dir.join(format!(".{key}.{}.{nanos}.tmp", std::process::id()));
    let entry = format!("{FORMAT} {key} {}\n{text}", text.len());
    if std::fs::write(&tmp, entry).is_ok() && std::fs::rename(&tmp, dir.join(key)).is_ok() {
        prune(&dir);
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Removes the oldest entries past [`MAX_ENTRIES`].
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> =
        entries.flatten().filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path()))).collect();
    if files.len() <= MAX_ENTRIES {
        return;
    }
    files.sort();
    for (_, p) in &files[..files.len() - MAX_ENTRIES] {
        let _ = std::fs::remove_file(p);
    }
}

/// The expansion from its text: parsed, the user's identifiers given their spans back
/// (`names`: each identifier of the kernel's signature and its span), every `device`
/// made the hygienic one.
pub fn restore(text: &str, names: &HashMap<String, Span>) -> Option<TokenStream> {
    let ts: TokenStream = text.parse().ok()?;
    Some(respan(ts, names))
}

/// The user's spans on `names`, and the hygienic `device`, throughout `ts`.
fn respan(ts: TokenStream, names: &HashMap<String, Span>) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan(g.stream(), names));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            TokenTree::Ident(i) => {
                let s = i.to_string();
                if s == "device" {
                    TokenTree::Ident(Ident::new("device", Span::mixed_site()))
                } else if let Some(span) = names.get(&s) {
                    let mut i = i;
                    i.set_span(*span);
                    TokenTree::Ident(i)
                } else {
                    TokenTree::Ident(i)
                }
            }
            other => other,
        })
        .collect()
}
