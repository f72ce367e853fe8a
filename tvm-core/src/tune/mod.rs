//! Generate, measure, tune: the search space a schedule declares with knobs
//! (`tune!(8, 16, 32)`, [`space`]), and the records a tuner writes and the macro applies
//! ([`record`]).
//!
//! The loop: a `schedule!` block marks numbers or choices as knobs; every combination
//! is checked by the same rules as any schedule while the macro expands (a value that is
//! legal in no combination is an error at its token). The tuner (`tvm-tune`) measures
//! the legal candidates on a device and writes `tvm-tuning/NAME.json` into the kernel's
//! crate. The macro reads that record while expanding: for every target whose entry
//! matches the kernel (its hash with knob values left out, element types, compiler
//! version), it lowers the winner as a second variant, which the generated code runs
//! when the device and the dims are the ones the record was measured on and
//! `TVM_TUNING` is not `off`; otherwise the schedule as written (every knob's first
//! value) runs.

pub mod record;
pub mod space;

pub use record::{Key, Measured, Record, Search, Space, Status, TargetRecord};
pub use space::{check, knobs, resolve, Knob, MAX_CANDIDATES};

use crate::frontend::ast::ScheduleBlock;
use crate::frontend::Kernel;
use crate::TargetKind;
use proc_macro2::{TokenStream, TokenTree};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A record's winner for one target, as the macro applies it.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub kind: TargetKind,
    /// The kernel's schedule blocks with the winner's values in the tuned block.
    pub schedules: Vec<ScheduleBlock>,
    /// The device the record was measured on (`Key::device`).
    pub device: String,
    /// The dims it was measured with.
    pub dims: BTreeMap<String, i64>,
    pub winner: BTreeMap<String, String>,
}

/// The record file of a kernel while the macro expands it: `CARGO_MANIFEST_DIR` of the
/// crate being compiled, `tvm-tuning/NAME.json`; its path and bytes, if it exists.
pub fn record_file(name: &str) -> Option<(PathBuf, Vec<u8>)> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let path = record::path(std::path::Path::new(&dir), name);
    let bytes = std::fs::read(&path).ok()?;
    Some((path, bytes))
}

/// The name of a kernel's record (`tvm-tuning/NAME.json`): the kernel's, or for the
/// instance of a generic kernel for type `instance`, `NAME_TYPE` (`roll_f32`, as the
/// instance's hidden module `__roll_f32`), one record per instance.
pub fn record_name(kernel: &str, instance: Option<&str>) -> String {
    let kernel = kernel.trim_start_matches("r#");
    match instance {
        Some(ty) => format!("{kernel}_{ty}"),
        None => kernel.to_string(),
    }
}

/// The kernel's name from the macro's input tokens (the identifier after the first
/// top-level `fn`), without parsing the kernel.
pub fn kernel_name(tokens: &TokenStream) -> Option<String> {
    let mut it = tokens.clone().into_iter();
    while let Some(t) = it.next() {
        if matches!(&t, TokenTree::Ident(id) if id == "fn") {
            return match it.next() {
                Some(TokenTree::Ident(n)) => Some(n.to_string().trim_start_matches("r#").to_string()),
                _ => None,
            };
        }
    }
    None
}

/// The winner of `record` for target `kind`, when its entry applies to `kernel` (the
/// macro's input `tokens`): same kernel hash, element types and compiler, a winner that
/// is a candidate of the block's knobs now, and a schedule with it that checks. The
/// device and dims are left to the generated code, which knows them.
pub fn applied(kernel: &Kernel, tokens: &TokenStream, record: &Record, kind: TargetKind) -> Option<Tuned> {
    if record.schema != record::SCHEMA || record.kernel != kernel.name {
        return None;
    }
    let entry = record.targets.get(kind.name())?;
    let winner = entry.winner.clone()?;
    if entry.space == Space::Derived {
        // The derived space applies to a kernel that still has no block for the target.
        if record::block_index(&kernel.ast.schedules, kind).is_some() {
            return None;
        }
        let (aug, k) = space::with_default_space(tokens, kernel, kind)?;
        let mut t = applied_to(&k, &aug, entry, kind, winner)?;
        // The kernel's own blocks, and the derived one for this target.
        t.schedules = k.schedules;
        let b = record::block_index(&k.ast.schedules, kind)?;
        let choice = space::choice_from(&knobs(&k.ast.schedules[b]), &t.winner)?;
        t.schedules[b] = resolve(&k.ast.schedules[b], &choice);
        return Some(t);
    }
    applied_to(kernel, tokens, entry, kind, winner)
}

fn applied_to(
    kernel: &Kernel,
    tokens: &TokenStream,
    entry: &TargetRecord,
    kind: TargetKind,
    winner: BTreeMap<String, String>,
) -> Option<Tuned> {
    let block = record::block_index(&kernel.ast.schedules, kind);
    let want = record::key(kernel, tokens, block, entry.key.dims.clone(), &entry.key.device);
    if record::mismatch(&entry.key, &want, false).is_some() {
        return None;
    }
    let mut schedules = kernel.schedules.clone();
    if let Some(b) = block {
        let raw = &kernel.ast.schedules[b];
        let ks = knobs(raw);
        let choice = space::choice_from(&ks, &winner)?;
        schedules[b] = resolve(raw, &choice);
    } else if !winner.is_empty() {
        return None;
    }
    Some(Tuned { kind, schedules, device: entry.key.device.clone(), dims: entry.key.dims.clone(), winner })
}
