//! Tuning records: `tvm-tuning/NAME.json` in the crate that holds the kernel, one file
//! per kernel, one entry per target kind (`cpu`, `opencl`, `cuda`). The tuner writes them;
//! the macro reads the entry of each target it lowers and, when its key matches, uses
//! the winner (see [`crate::tune`]).

use super::space::Knob;
use crate::frontend::ast::ScheduleBlock;
use crate::frontend::Kernel;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The version of the record format; a record of another version is stale.
pub const SCHEMA: u32 = 1;

/// The directory of records in a crate.
pub const DIR: &str = "tvm-tuning";

/// The version of the compiler, part of every key (a new compiler may lower a schedule
/// differently, so its records are measured again).
pub const COMPILER: &str = env!("CARGO_PKG_VERSION");

/// One kernel's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    pub kernel: String,
    /// By target kind: `"cpu"`, `"opencl"`, `"cuda"`.
    pub targets: BTreeMap<String, TargetRecord>,
}

/// What tuning one kernel for one target found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    pub key: Key,
    /// The knobs of the block tuned, in order.
    pub knobs: Vec<String>,
    /// Every candidate measured (or rejected), in the order measured.
    pub candidates: Vec<Measured>,
    /// The fastest correct candidate: knob name → value as written.
    pub winner: Option<BTreeMap<String, String>>,
    /// Wall time the tuner spent on this kernel and target, in seconds.
    pub tuning_seconds: f64,
    /// The median of three runs of the kernel's default schedule (no `schedule!` block),
    /// measured in the same run, for comparison.
    #[serde(default)]
    pub default_s: Option<f64>,
    /// Which space was searched: the knobs of the kernel's block, or (for a kernel with no
    /// block for the target) the one the compiler derives (`space::default_space`).
    #[serde(default)]
    pub space: Space,
    /// How the candidates were chosen: `None`, every candidate of the space was measured;
    /// else a search measured some of them (`tvm-tune --auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Search>,
}

/// A search of a space (`tvm-tune --auto`): an evolutionary search guided by a cost model
/// learned from the measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The seed of its random choices.
    pub seed: u64,
    /// Its time budget, in seconds.
    pub budget_s: f64,
    /// Rounds of candidates built and measured.
    pub rounds: usize,
    /// How many candidates the space has (saturated at `u64::MAX`).
    pub space_size: u64,
}

/// The space a record's candidates come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// The knobs (`tune!`) of the kernel's own block.
    #[default]
    Written,
    /// The space the compiler derives for a kernel without a block for the target.
    Derived,
}

/// What must match for a record to apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// [`kernel_hash`]: the algorithm and the tuned block, knob values left out.
    pub kernel_hash: String,
    /// The symbolic dims the kernel was measured with (empty for static shapes).
    pub dims: BTreeMap<String, i64>,
    /// Element types of the parameters and outputs, in order.
    pub dtypes: Vec<String>,
    /// The device: `cpu x86_64 avx2+fma`, `opencl NAME`, `cuda NAME sm_XY`
    /// (`tvm_runtime::tune::device_identity`).
    pub device: String,
    pub compiler: String,
}

/// One candidate's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub knobs: BTreeMap<String, String>,
    pub status: Status,
    /// Seconds per run, where measured.
    pub min_s: Option<f64>,
    pub median_s: Option<f64>,
    pub p20_s: Option<f64>,
    pub p80_s: Option<f64>,
    /// Largest relative error against the schedule as written.
    pub max_error: Option<f64>,
    /// Why it failed, when it did.
    pub message: Option<String>,
}

/// How a candidate ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured, and its output matched.
    Ok,
    /// The schedule does not check or lower (never run).
    Illegal,
    /// Its output differed from the schedule as written.
    Wrong,
    /// Its process failed (a crash, an error).
    Crashed,
    /// Its process ran past the timeout.
    TimedOut,
    /// Dropped after a short measurement: more than 1.5× slower than the leader.
    Slow,
}

impl Record {
    pub fn new(kernel: &str) -> Record {
        Record { schema: SCHEMA, kernel: kernel.to_string(), targets: BTreeMap::new() }
    }

    pub fn parse(text: &str) -> Result<Record, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// The record file of kernel `name` in the crate at `manifest_dir`.
pub fn path(manifest_dir: &Path, name: &str) -> PathBuf {
    manifest_dir.join(DIR).join(format!("{name}.json"))
}

/// The key of `kernel` (the macro's input `tokens`) for the block with index `block`
/// among its schedule blocks (`None`: the target has no block, its default schedule),
/// measured with `dims` on `device`.
pub fn key(
    kernel: &Kernel,
    tokens: &TokenStream,
    block: Option<usize>,
    dims: BTreeMap<String, i64>,
    device: &str,
) -> Key {
    Key {
        kernel_hash: kernel_hash(tokens, block),
        dims,
        dtypes: dtypes(kernel),
        device: device.to_string(),
        compiler: COMPILER.to_string(),
    }
}

/// The element types of `kernel`'s tensor and scalar parameters, then its outputs.
pub fn dtypes(kernel: &Kernel) -> Vec<String> {
    let g = &kernel.graph;
    let params = g.params.iter().map(|p| match p {
        crate::te::Param::Tensor(t) => g.tensor(*t).dtype.to_string(),
        crate::te::Param::Scalar(v) => v.dtype().to_string(),
    });
    params.chain(g.outputs.iter().map(|t| g.tensor(*t).dtype.to_string())).collect()
}

/// SHA-256 (hex) of the kernel's tokens with its doc comments and every schedule block
/// left out but the one with index `block`, whose knobs count by name only: a changed
/// algorithm or tuned block makes the record stale; another target's block, a comment,
/// or a value added to a knob does not.
pub fn kernel_hash(tokens: &TokenStream, block: Option<usize>) -> String {
    let mut text = String::new();
    let toks: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let (mut i, mut seen) = (0, 0usize);
    while i < toks.len() {
        // `#[doc = ..]` (what `///` becomes).
        if let (TokenTree::Punct(p), Some(TokenTree::Group(g))) = (&toks[i], toks.get(i + 1)) {
            let first = g.stream().into_iter().next();
            if p.as_char() == '#'
                && g.delimiter() == Delimiter::Bracket
                && matches!(&first, Some(TokenTree::Ident(id)) if id == "doc")
            {
                i += 2;
                continue;
            }
        }
        // `schedule ! (TARGET) { .. }`
        if let (
            TokenTree::Ident(id),
            Some(TokenTree::Punct(bang)),
            Some(TokenTree::Group(t)),
            Some(TokenTree::Group(b)),
        ) = (&toks[i], toks.get(i + 1), toks.get(i + 2), toks.get(i + 3))
        {
            if id == "schedule" && bang.as_char() == '!' && b.delimiter() == Delimiter::Brace {
                if Some(seen) == block {
                    text.push_str("schedule!");
                    canonical(&t.stream(), &mut text, &mut Knobs::default(), false);
                    text.push('{');
                    canonical(&b.stream(), &mut text, &mut Knobs::default(), true);
                    text.push('}');
                }
                seen += 1;
                i += 4;
                continue;
            }
        }
        canonical(&TokenStream::from(toks[i].clone()), &mut text, &mut Knobs::default(), false);
        i += 1;
    }
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `ts` as text that depends on the tokens alone (not on how a proc-macro server
/// prints them): each token and its spacing. In a schedule body (`knobs`), `tune!(..)`
/// is written as its name (`tune!(tile)`, `tune!(k0)` for the first unnamed knob).
/// The knobs seen so far by [`canonical`]: how many unnamed, and the names written.
#[derive(Default)]
struct Knobs {
    unnamed: usize,
    named: Vec<String>,
}

fn canonical(ts: &TokenStream, out: &mut String, seen: &mut Knobs, knobs: bool) {
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut i = 0;
    while i < toks.len() {
        if knobs {
            if let (TokenTree::Ident(id), Some(TokenTree::Punct(bang)), Some(TokenTree::Group(g))) =
                (&toks[i], toks.get(i + 1), toks.get(i + 2))
            {
                if id == "tune" && bang.as_char() == '!' && g.delimiter() == Delimiter::Parenthesis {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    let name = match inner.as_slice() {
                        // `tune!(NAME)` of a knob named before: the same name.
                        [TokenTree::Ident(r)] if seen.named.contains(&r.to_string()) => r.to_string(),
                        _ => match crate::tune::space::knob_values(&g.stream()).0 {
                            Some(n) => {
                                seen.named.push(n.clone());
                                n
                            }
                            None => {
                                seen.unnamed += 1;
                                format!("k{}", seen.unnamed - 1)
                            }
                        },
                    };
                    out.push_str(&format!("tune!({name}) "));
                    i += 3;
                    continue;
                }
            }
        }
        match &toks[i] {
            TokenTree::Ident(id) => {
                out.push_str(&id.to_string());
                out.push(' ');
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                if p.spacing() == proc_macro2::Spacing::Alone {
                    out.push(' ');
                }
            }
            TokenTree::Literal(l) => {
                out.push_str(&l.to_string());
                out.push(' ');
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ('(', ')'),
                    Delimiter::Brace => ('{', '}'),
                    Delimiter::Bracket => ('[', ']'),
                    Delimiter::None => (' ', ' '),
                };
                out.push(open);
                canonical(&g.stream(), out, seen, knobs);
                out.push(close);
                out.push(' ');
            }
        }
        i += 1;
    }
}

/// Why a record's entry does not apply to a kernel's current key (`None`: it applies).
/// `device` and `dims` are compared only when given (the macro compares them at run
/// time, where the device is known).
pub fn mismatch(have: &Key, want: &Key, compare_device: bool) -> Option<String> {
    if have.kernel_hash != want.kernel_hash {
        return Some("the kernel or its tuned schedule changed".into());
    }
    if have.compiler != want.compiler {
        return Some(format!("tuned with compiler {}, this is {}", have.compiler, want.compiler));
    }
    if have.dtypes != want.dtypes {
        return Some("the element types changed".into());
    }
    if compare_device {
        if have.device != want.device {
            return Some(format!("tuned on `{}`, this is `{}`", have.device, want.device));
        }
        if have.dims != want.dims {
            return Some(format!("tuned with dims {:?}, these are {:?}", have.dims, want.dims));
        }
    }
    None
}

/// The index (among `schedules`) of the block a target of `kind` uses, if any.
pub fn block_index(schedules: &[ScheduleBlock], kind: crate::TargetKind) -> Option<usize> {
    let (b, _) = crate::frontend::select_schedule_block(schedules, kind)?;
    schedules.iter().position(|x| std::ptr::eq(x, b))
}

/// Knob names of `knobs`, in order.
pub fn knob_names(knobs: &[Knob]) -> Vec<String> {
    knobs.iter().map(|k| k.name.clone()).collect()
}
