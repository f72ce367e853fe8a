//! Loop partitioning for vectorized loops (TVM's `partition_const_loop`, Halide's
//! boundary splitting, at the granularity of one vector). A condition inside a
//! `vectorize` loop that depends on the loop variable, as a conjunction of comparisons
//! linear in it (the tail guard of a split that does not divide, the border test of a
//! padded read), holds for every lane exactly when it holds at both ends of the vector.
//! That test is hoisted out of the loop:
//!
//! ```text
//! if whole { loop with those conditions replaced by their parts free of the variable }
//! else { the original loop, serial }
//! ```
//!
//! so the interior vectors run without the test (and without the guarded read that
//! kept the loop scalar), and only the border vectors take the scalar path. Conditions
//! that are not such conjunctions stay where they are (and the vectorizer reports them
//! if they stop it).
//!
//! The tail of a split that does not divide a constant extent fails the test in exactly
//! one iteration of an enclosing loop (the last: `xo * 32 + xi < 56` at `xo = 1`). When
//! the test depends on one enclosing loop of constant range and fails for exactly one of
//! its values, the scalar path becomes a shorter vector loop at that value instead, over
//! the lanes that are in range (24 of 32 there), with the tests dropped:
//!
//! ```text
//! if whole { loop as above }
//! else { vectorized loop over 0..24, with xo = 1 and the tests that hold there dropped }
//! ```

use crate::arith::Analyzer;
use crate::tir::mutate::{rewrite_conditions, substitute_one, substitute_stmt, super_stmt, Mutator};
use crate::tir::visit::{conjuncts, uses_var, walk_stmt, Visitor};
use crate::tir::{CmpOp, Expr, ForKind, PrimFunc, Stmt, Var};

/// Partitions the vectorized loops of `f`.
pub fn hoist_tail_guards(mut f: PrimFunc) -> PrimFunc {
    f.body = Hoist { loops: Vec::new() }.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = Hoist { loops: Vec::new() }.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

/// The enclosing loops of the statement being rewritten, whose ranges are constant.
struct Hoist {
    loops: Vec<(Var, i64, i64)>,
}

impl Mutator for Hoist {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        if let Stmt::For { var, min, extent, kind, body } = s {
            let range = (min.as_int(), extent.as_int());
            if let (Some(lo), Some(n)) = range {
                self.loops.push((var.clone(), lo, n));
            }
            let body = Box::new(self.mutate_stmt(*body));
            if range.0.is_some() && range.1.is_some() {
                self.loops.pop();
            }
            return self.vector_loop(var, min, extent, kind, body);
        }
        super_stmt(self, s)
    }
}

impl Hoist {
    fn vector_loop(&mut self, var: Var, min: Expr, extent: Expr, kind: ForKind, body: Box<Stmt>) -> Stmt {
        if kind != ForKind::Vectorized {
            return Stmt::For { var, min, extent, kind, body };
        }
        let mut analyzer = Analyzer::new();
        analyzer.bind(&var, min.clone(), extent.clone());
        let mut peel = Peel { var: &var, analyzer: &analyzer, inner: bound_inside(&body), whole: Vec::new() };
        let fast = rewrite_conditions((*body).clone(), &mut |c| peel.peel(c));
        let whole = peel.whole;
        if whole.is_empty() {
            return Stmt::For { var, min, extent, kind: ForKind::Vectorized, body };
        }
        let fast = Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: ForKind::Vectorized,
            body: Box::new(fast),
        };
        let cond = whole.into_iter().reduce(Expr::and).expect("non-empty");
        let tail = self.vector_tail(&var, &min, &extent, &body, &cond).unwrap_or_else(|| {
            // The border is scalar by design (at most two vectors per row).
            Stmt::For { var, min, extent, kind: ForKind::Serial, body }
        });
        Stmt::If { cond, then: Box::new(fast), otherwise: Some(Box::new(tail)) }
    }

    /// The vector loop of the one iteration of an enclosing loop where `whole` fails
    /// (see the module's header), if there is exactly one.
    fn vector_tail(&self, var: &Var, min: &Expr, extent: &Expr, body: &Stmt, whole: &Expr) -> Option<Stmt> {
        let (min, extent) = (min.as_int()?, extent.as_int()?);
        let outer: Vec<&(Var, i64, i64)> = self.loops.iter().filter(|(v, ..)| uses_var(whole, v)).collect();
        let [(u, lo, n)] = outer.as_slice() else { return None };
        if *n > 4096 || crate::tir::visit::vars_of(whole).iter().any(|v| v != u) {
            return None;
        }
        let analyzer = Analyzer::new();
        let at = |v: i64| analyzer.simplify(&substitute_one(whole.clone(), u, Expr::int(v)));
        let mut failing = (*lo..lo + n).filter(|&v| !matches!(at(v), Expr::Bool(true)));
        let v = failing.next()?;
        if failing.next().is_some() || !matches!(at(v), Expr::Bool(false)) {
            return None;
        }
        let body = substitute_stmt(body.clone(), &[(u.clone(), Expr::int(v))].into_iter().collect());
        // The longest run of lanes from the first for which every test holds.
        for lanes in (1..extent).rev() {
            let mut a = Analyzer::new();
            a.bind(var, Expr::int(min), Expr::int(lanes));
            let mut peel = Peel { var, analyzer: &a, inner: bound_inside(&body), whole: Vec::new() };
            let kept = rewrite_conditions(body.clone(), &mut |c| peel.peel(c));
            let holds = peel.whole.iter().all(|t| matches!(a.simplify(t), Expr::Bool(true)));
            if holds {
                let kind = if lanes > 1 { ForKind::Vectorized } else { ForKind::Serial };
                return Some(Stmt::For {
                    var: var.clone(),
                    min: Expr::int(min),
                    extent: Expr::int(lanes),
                    kind,
                    body: Box::new(kept),
                });
            }
        }
        None
    }
}

/// Replaces each peelable condition by its part free of `var`, collecting the tests
/// that the whole vector satisfies it.
struct Peel<'a> {
    var: &'a Var,
    analyzer: &'a Analyzer,
    /// Variables bound inside the loop body (a hoisted test may not mention them).
    inner: Vec<Var>,
    whole: Vec<Expr>,
}

impl Peel<'_> {
    /// The condition with its conjuncts on `var` dropped, if every one of them can be
    /// tested for the whole vector; the tests go to `self.whole`.
    fn peel(&mut self, cond: &Expr) -> Option<Expr> {
        if !uses_var(cond, self.var) || self.inner.iter().any(|v| uses_var(cond, v)) {
            return None;
        }
        let mut kept = Vec::new();
        let mut tests = Vec::new();
        for c in conjuncts(cond.clone()) {
            if uses_var(&c, self.var) {
                tests.push(tile_condition(self.analyzer, &c, self.var)?);
            } else {
                kept.push(c);
            }
        }
        for t in tests {
            if !self.whole.contains(&t) {
                self.whole.push(t);
            }
        }
        Some(kept.into_iter().reduce(Expr::and).unwrap_or(Expr::Bool(true)))
    }
}

/// The variables bound inside `s` (loops and lets).
pub(crate) fn bound_inside(s: &Stmt) -> Vec<Var> {
    struct B(Vec<Var>);
    impl Visitor for B {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { var, .. } | Stmt::Let { var, .. } = s {
                self.0.push(var.clone());
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut b = B(Vec::new());
    b.visit_stmt(s);
    b.0
}

/// A condition free of `var` that implies `c` for every value of `var` in its range.
fn tile_condition(analyzer: &Analyzer, c: &Expr, var: &Var) -> Option<Expr> {
    let Expr::Cmp { op, a, b } = c else { return None };
    if !a.dtype().is_integer() || !a.dtype().is_scalar() {
        return None;
    }
    let diff = (**a).clone() - (**b).clone();
    let (lo, hi) = analyzer.symbolic_bounds(&diff, std::slice::from_ref(var));
    if uses_var(&lo, var) || uses_var(&hi, var) {
        return None;
    }
    let zero = Expr::typed_int(0, diff.dtype());
    Some(match op {
        CmpOp::Lt => Expr::cmp(CmpOp::Lt, hi, zero),
        CmpOp::Le => Expr::cmp(CmpOp::Le, hi, zero),
        CmpOp::Gt => Expr::cmp(CmpOp::Gt, lo, zero),
        CmpOp::Ge => Expr::cmp(CmpOp::Ge, lo, zero),
        CmpOp::Eq | CmpOp::Ne => return None,
    })
}
