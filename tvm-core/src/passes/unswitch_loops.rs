//! Loop unswitching (CPU): a test that does not change while a serial loop runs is taken
//! once, before the loop, and the loop is written twice, once for each outcome.
//!
//! ```text
//! for c in 0..64:                        if xo * 32 < 25:
//!   if xo * 32 < 25:                       for c in 0..64:
//!     acc[ramp(0, 1, 32)] += ..      =>      acc[ramp(0, 1, 32)] += ..
//!   else:                                else:
//!     for x in 0..32: ..                   for c in 0..64:
//!                                             for x in 0..32: ..
//! ```
//!
//! The tail of a split that does not divide leaves such a test in front of every
//! statement of a register tile (`hoist_tail_guards` makes each vector statement
//! `if whole { vector } else { lanes }`), inside the reduction loops: taken every
//! iteration, it keeps LLVM from holding the tile in registers and runs the tail tile
//! lane by lane. Unswitched, the full tiles run the vector loop nest with no test, and
//! the tail tile its own copy. Applied bottom-up, a test rises through every loop it
//! does not depend on.
//!
//! Exact: the test reads no memory and none of the variables the loop binds, so it has
//! the same value in every iteration; each copy keeps the branch that value takes.

use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::visit::{reads_memory, uses_var, walk_stmt, Visitor};
use crate::tir::{Expr, ForKind, PrimFunc, Stmt, Var};

/// The most loops one function unswitches: each one doubles a loop nest's code.
const BUDGET: usize = 8;

/// A loop body larger than this (in statements) is not copied.
const MAX_BODY: usize = 4096;

/// Unswitches the serial loops of `f`'s host body (CPU functions have no kernels).
pub fn unswitch_loops(mut f: PrimFunc) -> PrimFunc {
    let mut u = Unswitch { budget: BUDGET };
    f.body = u.mutate_stmt(f.body);
    f
}

struct Unswitch {
    budget: usize,
}

impl Mutator for Unswitch {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Serial, body } if self.budget > 0 => {
                let Some(cond) = invariant_test(&var, &body) else {
                    return Stmt::For { var, min, extent, kind: ForKind::Serial, body };
                };
                if size(&body) > MAX_BODY {
                    return Stmt::For { var, min, extent, kind: ForKind::Serial, body };
                }
                self.budget -= 1;
                let copy = |taken: bool| Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: ForKind::Serial,
                    body: Box::new(decide(&body, &cond, taken)),
                };
                Stmt::If { cond: cond.clone(), then: Box::new(copy(true)), otherwise: Some(Box::new(copy(false))) }
            }
            s => s,
        }
    }
}

/// The condition of the first `if` in `body` that depends neither on `var` nor on any
/// variable bound inside `body`, and reads no memory.
fn invariant_test(var: &Var, body: &Stmt) -> Option<Expr> {
    struct Find<'a> {
        var: &'a Var,
        inner: Vec<Var>,
        found: Option<Expr>,
    }
    impl Visitor for Find<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if self.found.is_some() {
                return;
            }
            if let Stmt::If { cond, .. } = s {
                let free = !uses_var(cond, self.var) && !self.inner.iter().any(|v| uses_var(cond, v));
                if free && !reads_memory(cond) && cond.dtype().lanes == 1 {
                    self.found = Some(cond.clone());
                    return;
                }
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut f = Find { var, inner: super::hoist_tail_guards::bound_inside(body), found: None };
    f.visit_stmt(body);
    f.found
}

/// `s` with every `if cond` replaced by the branch `taken` selects.
fn decide(s: &Stmt, cond: &Expr, taken: bool) -> Stmt {
    struct Decide<'a> {
        cond: &'a Expr,
        taken: bool,
    }
    impl Mutator for Decide<'_> {
        fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
            match s {
                Stmt::If { cond, then, otherwise } if &cond == self.cond => {
                    let branch = if self.taken { Some(*then) } else { otherwise.map(|o| *o) };
                    self.mutate_stmt(branch.unwrap_or(Stmt::NoOp))
                }
                s => super_stmt(self, s),
            }
        }
    }
    Decide { cond, taken }.mutate_stmt(s.clone())
}

/// The number of statements in `s`.
fn size(s: &Stmt) -> usize {
    struct Count(usize);
    impl Visitor for Count {
        fn visit_stmt(&mut self, s: &Stmt) {
            self.0 += 1;
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut c = Count(0);
    c.visit_stmt(s);
    c.0
}
