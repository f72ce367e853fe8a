//! The knobs of a schedule block (`tune!(..)`, docs/LANGUAGE.md §3): the list of them,
//! the block with one candidate's values put in, and their errors.
//!
//! A knob is named by what is written before its `:` (`tune!(tile: 8, 16)`), else by its
//! place among the block's unnamed knobs: `k0`, `k1`, .. . A candidate is one value per
//! knob; candidate 0 takes every knob's first value, which is the schedule as written.
//! Candidates are numbered like an odometer whose last knob turns fastest. The tuner's
//! side of the space (candidates as tokens, records, derived spaces) is
//! [`crate::tune::space`].

use super::ast::{SExpr, SchedStmt, ScheduleBlock};
use crate::loc::Loc;
use crate::schedule::{ScheduleError, ScheduleErrorKind as K};
use crate::target::Target;
use std::collections::BTreeMap;

/// The most candidates one block may make (every one is checked while the macro expands).
pub const MAX_CANDIDATES: usize = 4096;

/// One knob of a block.
#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    pub name: String,
    /// The values as written (`16`, `c.i`), in order.
    pub values: Vec<String>,
    /// Where each value is.
    pub value_locs: Vec<Loc>,
    /// The whole `tune!(..)`; or the name, when one is written.
    pub loc: Loc,
    /// Whether the name was written (`tune!(NAME: ..)`), so later `tune!(NAME)` take
    /// its value.
    pub named: bool,
}

/// The knobs of `block`, in the order written.
pub fn knobs(block: &ScheduleBlock) -> Vec<Knob> {
    let mut out: Vec<Knob> = Vec::new();
    let mut unnamed = 0;
    for st in &block.stmts {
        if let SchedStmt::Call { call, .. } = st {
            walk(call, &mut |e| {
                if let SExpr::Knob { name, values, loc } = e {
                    if reference(e, |n| out.iter().any(|k| k.named && k.name == n)).is_some() {
                        return;
                    }
                    let (name, loc, named) = match name {
                        Some(n) => (n.name.clone(), n.loc, true),
                        None => {
                            unnamed += 1;
                            (format!("k{}", unnamed - 1), *loc, false)
                        }
                    };
                    let texts = values.iter().map(|v| v.to_string()).collect();
                    let value_locs = values.iter().map(|v| v.loc()).collect();
                    out.push(Knob { name, values: texts, value_locs, loc, named });
                }
            });
        }
    }
    out
}

/// The knob `e` refers to, when it is `tune!(NAME)` and `defined(NAME)`: a named knob
/// written earlier, whose value it takes (`tune!(tx: 64, 128)` .. `tune!(tx)`).
fn reference(e: &SExpr, defined: impl Fn(&str) -> bool) -> Option<String> {
    match e {
        SExpr::Knob { name: None, values, .. } => match values.as_slice() {
            [SExpr::Name(n)] if defined(&n.name) => Some(n.name.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn walk(e: &SExpr, f: &mut impl FnMut(&SExpr)) {
    f(e);
    match e {
        SExpr::Field { base, .. } => walk(base, f),
        SExpr::Method { base, args, .. } => {
            walk(base, f);
            args.iter().for_each(|a| walk(a, f));
        }
        SExpr::Index { base, index, .. } => {
            walk(base, f);
            walk(index, f);
        }
        SExpr::List { items, .. } | SExpr::Knob { values: items, .. } => items.iter().for_each(|a| walk(a, f)),
        SExpr::Name(_) | SExpr::Int { .. } | SExpr::Lit { .. } => {}
    }
}

/// `block` with knob `k` (in the order of [`knobs`]) replaced by its value `choice[k]`
/// (its first value where `choice` is short).
pub fn resolve(block: &ScheduleBlock, choice: &[usize]) -> ScheduleBlock {
    let mut st = Put { choice, next: 0, chosen: BTreeMap::new() };
    let stmts = block
        .stmts
        .iter()
        .map(|s| match s {
            SchedStmt::Call { pattern, call, loc } => {
                SchedStmt::Call { pattern: pattern.clone(), call: st.put(call), loc: *loc }
            }
            bad => bad.clone(),
        })
        .collect();
    ScheduleBlock { target: block.target.clone(), target_loc: block.target_loc, stmts }
}

/// The state of [`resolve`]: the next knob's number, and the values named knobs took.
struct Put<'c> {
    choice: &'c [usize],
    next: usize,
    chosen: BTreeMap<String, SExpr>,
}

impl Put<'_> {
    fn put(&mut self, e: &SExpr) -> SExpr {
        match e {
            SExpr::Knob { name, values, .. } => {
                if let Some(r) = reference(e, |n| self.chosen.contains_key(n)) {
                    return self.chosen[&r].clone();
                }
                let k = self.next;
                self.next += 1;
                let i = self.choice.get(k).copied().unwrap_or(0).min(values.len().saturating_sub(1));
                let v = values.get(i).cloned().unwrap_or_else(|| e.clone());
                if let Some(n) = name {
                    self.chosen.insert(n.name.clone(), v.clone());
                }
                v
            }
            SExpr::Field { base, field, loc } => {
                SExpr::Field { base: Box::new(self.put(base)), field: field.clone(), loc: *loc }
            }
            SExpr::Method { base, method, args, loc } => {
                let base = Box::new(self.put(base));
                let args = args.iter().map(|a| self.put(a)).collect();
                SExpr::Method { base, method: method.clone(), args, loc: *loc }
            }
            SExpr::Index { base, index, loc } => {
                SExpr::Index { base: Box::new(self.put(base)), index: Box::new(self.put(index)), loc: *loc }
            }
            SExpr::List { items, loc } => SExpr::List { items: items.iter().map(|i| self.put(i)).collect(), loc: *loc },
            other => other.clone(),
        }
    }
}

/// How many candidates `knobs` make.
pub fn space_size(knobs: &[Knob]) -> u128 {
    knobs.iter().fold(1u128, |n, k| n.saturating_mul(k.values.len() as u128))
}

/// Candidate number `n`'s value of every knob (the last knob turns fastest).
pub fn choice_of(knobs: &[Knob], mut n: usize) -> Vec<usize> {
    let mut out = vec![0; knobs.len()];
    for (k, knob) in knobs.iter().enumerate().rev() {
        let len = knob.values.len().max(1);
        out[k] = n % len;
        n /= len;
    }
    out
}

/// The block's knob errors: two knobs of one name, a value written twice, too many
/// candidates, and a value no legal candidate has (each candidate is applied to `graph`
/// for `target` by the same rules as any schedule). Candidate 0's own errors are the
/// block's ordinary errors, reported elsewhere; the never-legal check runs only when
/// candidate 0 is legal.
pub fn check(graph: &crate::te::Graph, block: &ScheduleBlock, target: &Target) -> Vec<ScheduleError> {
    let errors = check_syntax(block);
    if !errors.is_empty() || super::schedule::apply_block(graph, &resolve(block, &[]), target.clone()).is_err() {
        return errors;
    }
    check_values(graph, block, target)
}

/// The errors of the knobs as written: no value, a knob inside a knob, two knobs of one
/// name, a value written twice, too many candidates. A block with any of these is not
/// applied (its knobs mean nothing yet).
pub fn check_syntax(block: &ScheduleBlock) -> Vec<ScheduleError> {
    let mut errors = Vec::new();
    for st in &block.stmts {
        if let SchedStmt::Call { call, .. } = st {
            walk(call, &mut |e| {
                if let SExpr::Knob { values, loc, .. } = e {
                    if values.is_empty() {
                        errors.push(ScheduleError::new(*loc, K::KnobWithoutValues));
                    }
                    for v in values {
                        if let SExpr::Knob { loc, .. } = v {
                            errors.push(ScheduleError::new(*loc, K::KnobInKnob));
                        }
                    }
                }
            });
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    let ks = knobs(block);
    for (i, k) in ks.iter().enumerate() {
        if ks[..i].iter().any(|o| o.name == k.name) {
            errors.push(ScheduleError::new(k.loc, K::KnobNameTaken { name: k.name.clone() }));
        }
        for (j, v) in k.values.iter().enumerate() {
            if k.values[..j].contains(v) {
                errors.push(ScheduleError::new(
                    k.value_locs[j],
                    K::KnobValueRepeated { knob: k.name.clone(), value: v.clone() },
                ));
            }
        }
    }
    let size = space_size(&ks);
    if size > MAX_CANDIDATES as u128 {
        let loc = ks[0].loc;
        errors.push(ScheduleError::new(loc, K::KnobSpaceTooLarge { count: size, limit: MAX_CANDIDATES }));
    }
    errors
}

/// The values with which no candidate of `block` (whose knobs passed [`check_syntax`]
/// and whose candidate 0 is legal) is a legal schedule for `target`.
pub fn check_values(graph: &crate::te::Graph, block: &ScheduleBlock, target: &Target) -> Vec<ScheduleError> {
    let ks = knobs(block);
    if ks.is_empty() {
        return Vec::new();
    }
    let size = space_size(&ks);
    let mut errors = Vec::new();
    // Which values some legal candidate has; the first error of each value otherwise.
    let mut legal: Vec<Vec<bool>> = ks.iter().map(|k| vec![false; k.values.len()]).collect();
    let mut why: Vec<Vec<Option<String>>> = ks.iter().map(|k| vec![None; k.values.len()]).collect();
    for n in 0..size as usize {
        let choice = choice_of(&ks, n);
        // Skip a candidate whose values are all known to be legal already.
        if choice.iter().enumerate().all(|(k, &i)| legal[k][i]) {
            continue;
        }
        match super::schedule::apply_block(graph, &resolve(block, &choice), target.clone()) {
            Ok(_) => choice.iter().enumerate().for_each(|(k, &i)| legal[k][i] = true),
            Err(es) => {
                let first = es.first().map(|e| e.message()).unwrap_or_default();
                for (k, &i) in choice.iter().enumerate() {
                    why[k][i].get_or_insert_with(|| first.clone());
                }
            }
        }
    }
    for (k, knob) in ks.iter().enumerate() {
        for (i, v) in knob.values.iter().enumerate() {
            if !legal[k][i] {
                let why = why[k][i].clone().unwrap_or_default();
                errors.push(ScheduleError::new(
                    knob.value_locs[i],
                    K::KnobValueNeverLegal { knob: knob.name.clone(), value: v.clone(), why },
                ));
            }
        }
    }
    errors
}
