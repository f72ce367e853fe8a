//! The kernels to tune: every `compute!` in the sources, each generic kernel's instances
//! (one record each, `NAME_TYPE`, as the macro names their modules), with the block the
//! target uses and its knobs, or the space the compiler derives for a kernel without one.

use crate::cli::Options;
use proc_macro2::TokenStream;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tvm_core::frontend::Kernel;
use tvm_core::tune::{self, record, space};

/// A kernel (or a generic kernel's instance) to tune, with its tuned block and knobs.
pub struct Found {
    /// The file that holds it (touched after a record is written, so cargo expands it
    /// again).
    pub file: PathBuf,
    /// The record's name: the kernel's, or `NAME_TYPE` for an instance.
    pub name: String,
    /// What the bench compiles: the kernel's tokens (an instance's, with its type put in;
    /// with the derived block appended for a derived space).
    pub tokens: TokenStream,
    /// What the macro hashes for the record's key: the same tokens as the macro sees them
    /// (an instance's are visible to the generic API beside its module).
    pub key_tokens: TokenStream,
    pub kernel: Kernel,
    pub block: Option<usize>,
    pub knobs: Vec<space::Knob>,
    /// The block is the derived default space (`--default-space`, `--auto`), not the
    /// user's.
    pub derived: bool,
}

impl Found {
    /// The record key of this kernel measured with `dims` on the device `identity`.
    pub fn key(&self, dims: BTreeMap<String, i64>, identity: &str) -> record::Key {
        record::key(&self.kernel, &self.key_tokens, self.block, dims, identity)
    }

    /// The symbolic dims of the kernel that `dims` lacks.
    pub fn missing_dims(&self, dims: &BTreeMap<String, i64>) -> Vec<String> {
        let names = self.kernel.graph.dims.iter().map(|d| d.name().to_string());
        names.filter(|n| !dims.contains_key(n)).collect()
    }
}

/// What the sources hold for the options: the kernels to tune, and why others are not.
pub struct Kernels {
    pub found: Vec<Found>,
    /// Kernels that were not tuned, with why and what to do.
    pub untuned: Vec<Untuned>,
}

/// A kernel that has nothing to tune for the target.
pub struct Untuned {
    pub name: String,
    pub why: Why,
}

pub enum Why {
    /// No block for the target, and the derived space was not asked for.
    NoBlock,
    /// A block without knobs; the statement to show, written for the kernel's own output
    /// stage and axis (`y.split(y.i, tune!(w: 8, 16, 32))`).
    NoKnobs { example: String },
    /// No block, and the compiler derives no size to search for its form.
    NoDerivedSpace,
}

/// The kernels of `o.paths`, whose records are in `crate_dir`. Errors are the messages of
/// kernels asked for by name (`--kernel`) that the sources do not define.
pub fn find(o: &Options, crate_dir: &Path) -> Result<Kernels, String> {
    let mut files = Vec::new();
    for p in &o.paths {
        if p.is_dir() {
            for sub in ["src", "examples"] {
                tvm_core::build::scan::rust_files(&p.join(sub), &mut files);
            }
        } else if p.exists() {
            files.push(p.clone());
        } else {
            return Err(format!("no file or directory `{}`", p.display()));
        }
    }
    let scan = tvm_core::build::scan::scan_files(files);
    for p in &scan.problems {
        eprintln!("tvm-tune: {p}");
    }
    let kind = o.target.kind;
    let mut out = Kernels { found: Vec::new(), untuned: Vec::new() };
    let mut seen = std::collections::HashSet::new();
    // Every kernel name the sources define (instances by both names), in the order the
    // sources give them, for `--kernel`.
    let mut defined: Vec<String> = Vec::new();
    for inv in scan.invocations {
        let instances = match tvm_core::expand::generic::split(&inv.tokens) {
            Err(_) => {
                eprintln!("tvm-tune: {}:{}: the kernel does not compile; skipped", inv.file.display(), inv.line);
                continue;
            }
            Ok(None) => vec![(None, inv.tokens.clone(), inv.tokens.clone())],
            Ok(Some((g, rest))) => g
                .types
                .iter()
                .map(|ty| {
                    let t = tvm_core::expand::generic::instantiate(&rest, &g.param, ty);
                    (Some(ty.clone()), t.clone(), tvm_core::expand::generic::visible_to_parent(t))
                })
                .collect(),
        };
        for (ty, tokens, key_tokens) in instances {
            let Ok(kernel) = tvm_core::frontend::parse_kernel(tokens.clone()) else {
                eprintln!("tvm-tune: {}:{}: the kernel does not compile; skipped", inv.file.display(), inv.line);
                break;
            };
            let name = tune::record_name(&kernel.name, ty.as_deref());
            for n in [&kernel.name, &name] {
                if !defined.contains(n) {
                    defined.push(n.clone());
                }
            }
            if !o.kernels.is_empty() && !o.kernels.contains(&kernel.name) && !o.kernels.contains(&name) {
                continue;
            }
            // The same kernel shared by several files (`#[path]`) is tuned once.
            if !seen.insert(name.clone()) {
                continue;
            }
            let block = record::block_index(&kernel.ast.schedules, kind);
            let file = inv.file.clone();
            if block.is_none() {
                // `--check` checks a record `--default-space` or `--auto` wrote even when not
                // asked for the derived spaces: it goes stale as a written space's does.
                let recorded = o.check && has_entry(crate_dir, &name, kind.name());
                if !o.default_space && !recorded {
                    out.untuned.push(Untuned { name, why: Why::NoBlock });
                    continue;
                }
                // No block for the target: the space the compiler derives from the compute.
                let derived = space::with_default_space(&tokens, &kernel, kind).zip(space::with_default_space(
                    &key_tokens,
                    &kernel,
                    kind,
                ));
                match derived {
                    Some(((aug, k), (key_aug, _))) => {
                        let block = record::block_index(&k.ast.schedules, kind);
                        let knobs = block.map(|b| tune::knobs(&k.ast.schedules[b])).unwrap_or_default();
                        out.found.push(Found {
                            file,
                            name,
                            tokens: aug,
                            key_tokens: key_aug,
                            kernel: k,
                            block,
                            knobs,
                            derived: true,
                        });
                    }
                    None => out.untuned.push(Untuned { name, why: Why::NoDerivedSpace }),
                }
                continue;
            }
            let knobs = block.map(|b| tune::knobs(&kernel.ast.schedules[b])).unwrap_or_default();
            if knobs.is_empty() {
                out.untuned.push(Untuned { name, why: Why::NoKnobs { example: knob_example(&kernel) } });
                continue;
            }
            out.found.push(Found { file, name, tokens, key_tokens, kernel, block, knobs, derived: false });
        }
    }
    if let Some(k) = o.kernels.iter().find(|k| !defined.contains(k)) {
        let known = if defined.is_empty() { "none".to_string() } else { defined.join(", ") };
        return Err(format!("no kernel `{k}` in the sources given (their kernels: {known})"));
    }
    Ok(out)
}

/// Whether the record of the kernel `name` in `crate_dir` has an entry for `kind`.
fn has_entry(crate_dir: &Path, name: &str, kind: &str) -> bool {
    let text = std::fs::read_to_string(record::path(crate_dir, name));
    text.ok().and_then(|t| record::Record::parse(&t).ok()).is_some_and(|r| r.targets.contains_key(kind))
}

/// A `split` with a knob, on the innermost axis of the kernel's first output stage: the
/// hint for a block without knobs shows it in the kernel's own names.
fn knob_example(kernel: &Kernel) -> String {
    let out = kernel.graph.outputs.first().map(|t| kernel.graph.tensor(*t));
    let (stage, axis) = match out.and_then(|t| t.axes().last().map(|a| (t.name.as_str(), a.var.name()))) {
        Some((s, a)) => (s.to_string(), a.to_string()),
        None => ("y".into(), "i".into()),
    };
    format!("{stage}.split({stage}.{axis}, tune!(w: 8, 16, 32))")
}

/// What to do about the kernels that were not tuned for `kind` (one line each reason).
pub fn advice(untuned: &[Untuned], kind: &str) -> Vec<String> {
    let names = |w: fn(&Why) -> bool| -> Vec<String> {
        untuned.iter().filter(|u| w(&u.why)).map(|u| format!("`{}`", u.name)).collect()
    };
    let mut out = Vec::new();
    let no_block = names(|w| matches!(w, Why::NoBlock));
    if !no_block.is_empty() {
        out.push(format!(
            "{} {} no `schedule!({kind})` block: `--default-space` measures every candidate of the space the \
             compiler derives for {}, `--auto` searches it within a time budget (`--budget 2m`)",
            no_block.join(", "),
            if no_block.len() == 1 { "has" } else { "have" },
            if no_block.len() == 1 { "it" } else { "them" },
        ));
    }
    let no_knobs = names(|w| matches!(w, Why::NoKnobs { .. }));
    if !no_knobs.is_empty() {
        let example = untuned.iter().find_map(|u| match &u.why {
            Why::NoKnobs { example } => Some(example.as_str()),
            _ => None,
        });
        out.push(format!(
            "{} {} no knobs in {} `schedule!({kind})` block: mark the sizes to try with `tune!(..)`, as in \
             `{}`",
            no_knobs.join(", "),
            if no_knobs.len() == 1 { "has" } else { "have" },
            if no_knobs.len() == 1 { "its" } else { "their" },
            example.unwrap_or_default(),
        ));
    }
    let no_space = names(|w| matches!(w, Why::NoDerivedSpace));
    if !no_space.is_empty() {
        out.push(format!(
            "{}: the compiler derives no size to search for {} (its schedule is fixed); write a \
             `schedule!({kind})` block with `tune!(..)` knobs to tune {}",
            no_space.join(", "),
            if no_space.len() == 1 { "its form" } else { "their forms" },
            if no_space.len() == 1 { "it" } else { "them" },
        ));
    }
    out
}
