//! Finds the user's `vectorize`, `unroll` and `parallel` annotations that the lowered
//! loops do not honour: a `vectorize` loop that `vectorize_loops` left serial, an
//! `unroll` loop that `unroll_loops` left a loop (its extent unknown or over
//! `MAX_UNROLL`), a `parallel` loop inside another one (only the outermost runs in
//! parallel). Each is a compile error at the primitive, never quiet serial code; the
//! pipeline stops at them and [`crate::driver`] reports them.
//!
//! Annotations of the default schedule (no location) may fall back silently: it asks for
//! vectors wherever they might work. Loops bound to thread indices are not requests of
//! this kind.

use crate::loc::Loc;
use crate::passes::vectorize_loops::NotVectorized;
use crate::schedule::{AxisAnn, Schedule};
use crate::tir::visit::{walk_stmt, Visitor};
use crate::tir::{Expr, ForKind, PrimFunc, Stmt, Var};
use std::collections::HashMap;

/// An annotation the lowered code does not honour.
#[derive(Clone, Debug, PartialEq)]
pub struct DroppedAnnotation {
    pub stage: String,
    pub axis: String,
    /// The primitive that asked for it.
    pub loc: Loc,
    pub why: Dropped,
}

/// What became of an annotated loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Dropped {
    /// A `vectorize` loop that stayed serial, and why.
    NotVectorized(NotVectorized),
    /// An `unroll` loop that is still a loop (`extent`: its constant extent, if it has one).
    NotUnrolled { extent: Option<i64> },
    /// A `parallel` loop inside the parallel loop of axis `outer`.
    NestedParallel { outer: String },
}

/// The annotations of `sch` that `f` (after `unroll_loops`) does not honour, given the
/// loops `vectorize_loops` left serial: first the vectorize requests in the order of
/// `not_vectorized`, then the others in the order of `f`'s loops (host body, then
/// kernels), each loop at most once.
pub fn verify_loop_annotations(
    sch: &Schedule,
    f: &PrimFunc,
    not_vectorized: Vec<(Var, NotVectorized)>,
) -> Vec<DroppedAnnotation> {
    // Loop variable -> (stage, axis, annotation).
    let mut asked = HashMap::new();
    for st in &sch.stages {
        for (&a, ann) in &st.ann {
            if ann.kind != ForKind::Serial && ann.bind.is_none() && !ann.loc.is_none() {
                let ax = sch.axis(a);
                asked.insert(ax.var.clone(), (st.name.clone(), ax.shown().to_string(), ann.clone()));
            }
        }
    }
    let mut dropped = Vec::new();
    for (var, why) in not_vectorized {
        if let Some((stage, axis, ann)) = asked.get(&var) {
            let why = Dropped::NotVectorized(why);
            dropped.push(DroppedAnnotation { stage: stage.clone(), axis: axis.clone(), loc: ann.loc, why });
        }
    }
    let mut w = Walk { asked: &asked, parallel: Vec::new(), dropped, seen: Vec::new() };
    w.visit_stmt(&f.body);
    for k in &f.kernels {
        w.visit_stmt(&k.body);
    }
    w.dropped
}

/// Finds the unrolled loops left and the parallel loops nested in parallel ones.
struct Walk<'a> {
    asked: &'a HashMap<Var, (String, String, AxisAnn)>,
    /// The axes of the non-trivial parallel loops around the statement, outermost first.
    parallel: Vec<String>,
    dropped: Vec<DroppedAnnotation>,
    seen: Vec<Var>,
}

impl Visitor for Walk<'_> {
    fn visit_stmt(&mut self, s: &Stmt) {
        let Stmt::For { var, extent, kind, .. } = s else { return walk_stmt(self, s) };
        let request = self.asked.get(var).filter(|_| !self.seen.contains(var));
        let trivial = extent.as_int().is_some_and(|e| e <= 1);
        match (kind, request) {
            (ForKind::Unrolled, Some((stage, axis, ann))) => {
                self.seen.push(var.clone());
                let why = Dropped::NotUnrolled { extent: extent.as_int() };
                self.dropped.push(DroppedAnnotation { stage: stage.clone(), axis: axis.clone(), loc: ann.loc, why });
            }
            (ForKind::Parallel, Some((stage, axis, ann))) if !self.parallel.is_empty() && !trivial => {
                self.seen.push(var.clone());
                let why = Dropped::NestedParallel { outer: self.parallel[0].clone() };
                self.dropped.push(DroppedAnnotation { stage: stage.clone(), axis: axis.clone(), loc: ann.loc, why });
            }
            _ => {}
        }
        let parallel = *kind == ForKind::Parallel && !trivial;
        if parallel {
            let name = self.asked.get(var).map(|r| r.1.clone()).unwrap_or_else(|| var.name().to_string());
            self.parallel.push(name);
        }
        walk_stmt(self, s);
        if parallel {
            self.parallel.pop();
        }
    }
    fn visit_expr(&mut self, _: &Expr) {}
}
