//! Finding a crate's `compute!` invocations in its source files, as a build script sees
//! them: the files are parsed with syn (no macro expansion, no `cfg` evaluation).
//!
//! The files scanned are every `*.rs` under `src/` and `examples/` of the crate, then
//! every file a `#[path = ".."]` on a `mod` item of a scanned file names (followed
//! transitively, so kernels shared from outside the crate are found). A `#[path]` is
//! resolved against the directory of the file holding it, joined with the names of the
//! inline modules around it; Rust's finer rule for a `#[path]` inside an inline module of
//! a non-`mod.rs` file is not followed. A kernel this misses (one produced by another
//! macro, or in a file reached only through `include!`) is not an error: the runtime
//! compiles its source with NVRTC at the first launch.

use proc_macro2::TokenStream;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One `compute!` invocation found in a file.
pub struct Invocation {
    pub file: PathBuf,
    /// 1-based line of the macro's name.
    pub line: usize,
    /// 1-based line of its closing delimiter.
    pub last_line: usize,
    /// The tokens inside its delimiters: what the macro receives.
    pub tokens: TokenStream,
}

/// What [`scan_files`] found (also for the build script's scan of a crate).
pub struct Scan {
    /// Every file read, in the order read (each a `rerun-if-changed`).
    pub files: Vec<PathBuf>,
    /// The files that name another file with `#[path]` on a `mod` item.
    pub with_path_mods: Vec<PathBuf>,
    pub invocations: Vec<Invocation>,
    /// Files that could not be read or parsed.
    pub problems: Vec<FileProblem>,
}

/// A file [`scan_files`] could not read or parse.
pub struct FileProblem {
    pub file: PathBuf,
    /// The 1-based line of a syntax error; `None` when the file could not be read.
    pub line: Option<usize>,
    pub error: String,
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "cannot parse {}:{line}: {}", self.file.display(), self.error),
            None => write!(f, "cannot read {}: {}", self.file.display(), self.error),
        }
    }
}

/// Scans the crate at `manifest_dir` (see the module docs).
pub(super) fn scan(manifest_dir: &Path) -> Scan {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["src", "examples"] {
        rust_files(&manifest_dir.join(dir), &mut files);
    }
    scan_files(files)
}

/// Scans `files` in order, each followed by the files its `#[path]` mods name (see the
/// module docs); every file is read once. Tools (the pipeline explorer) use this to find
/// the kernels of the files they are given, as the build script finds a crate's.
pub fn scan_files(files: Vec<PathBuf>) -> Scan {
    let mut out = Scan { files: Vec::new(), with_path_mods: Vec::new(), invocations: Vec::new(), problems: Vec::new() };
    let mut queue = files;
    // Files are read in order: the given order, then each `#[path]` target after the
    // file that names it.
    queue.reverse();
    let mut seen = HashSet::new();
    while let Some(file) = queue.pop() {
        // Named canonically (`src/../../kernels/x.rs` is `kernels/x.rs`), and read once.
        let file = std::fs::canonicalize(&file).unwrap_or(file);
        if !seen.insert(file.clone()) {
            continue;
        }
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                out.problems.push(FileProblem { file, line: None, error: e.to_string() });
                continue;
            }
        };
        out.files.push(file.clone());
        let ast = match syn::parse_file(&text) {
            Ok(ast) => ast,
            Err(e) => {
                let line = Some(e.span().start().line);
                out.problems.push(FileProblem { file, line, error: e.to_string() });
                continue;
            }
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut v = Visitor { file: &file, dir, invocations: Vec::new(), paths: Vec::new() };
        v.visit_file(&ast);
        out.invocations.extend(v.invocations);
        if !v.paths.is_empty() {
            out.with_path_mods.push(file.clone());
        }
        // Pushed in reverse so that they are read in source order, before the rest.
        queue.extend(v.paths.into_iter().rev());
    }
    out
}

/// Every `*.rs` file under `dir`, recursively, in sorted order (nothing if it is absent).
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

struct Visitor<'a> {
    file: &'a Path,
    /// The directory a `#[path]` here is relative to.
    dir: PathBuf,
    invocations: Vec<Invocation>,
    /// Files named by `#[path]` on out-of-line `mod` items.
    paths: Vec<PathBuf>,
}

/// The value of a `#[path = ".."]` attribute among `attrs`.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(last) = m.path.segments.last().filter(|s| s.ident == "compute") {
            let line = last.ident.span().start().line;
            let close = match &m.delimiter {
                syn::MacroDelimiter::Paren(d) => d.span.close(),
                syn::MacroDelimiter::Brace(d) => d.span.close(),
                syn::MacroDelimiter::Bracket(d) => d.span.close(),
            };
            let last_line = close.end().line;
            self.invocations.push(Invocation {
                file: self.file.to_path_buf(),
                line,
                last_line,
                tokens: m.tokens.clone(),
            });
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let path = path_attr(&m.attrs);
        match &m.content {
            None => {
                if let Some(p) = path {
                    self.paths.push(self.dir.join(p));
                }
            }
            Some(_) => {
                let inner = self.dir.join(path.unwrap_or_else(|| m.ident.to_string()));
                let outer = std::mem::replace(&mut self.dir, inner);
                syn::visit::visit_item_mod(self, m);
                self.dir = outer;
            }
        }
    }
}
