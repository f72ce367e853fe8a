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
//!
//! Where the failing vector is not known at compile time (the last tile of a symbolic
//! extent, `xo * 32 + xi < n`), the border on the CPU is still a vector loop when every
//! test that depends on the variable guards stores into buffers the function allocates
//! inside the loops that run in parallel around it, inside the allocation for every lane
//! (a register tile's accumulators, a `compute_at` stage's tile). Each such store
//! writes `select(test, value, old)` on all lanes: a lane where the test fails keeps what
//! the element held, so every element ends as it would have. Loads in the value are then
//! read on every lane; the vectorizer lets the CPU code generator read them so that a
//! lane outside its buffer gives zero and the lanes that count are exact
//! (`vectorize_loops`). A register tile's border then costs a vector compare and blend
//! per update instead of a loop over its lanes:
//!
//! ```text
//! if whole { loop as above }
//! else { vectorized loop, `if t { c[j] = v }` as `c[j] = select(t, v, c[j])` }
//! ```

use crate::arith::Analyzer;
use crate::tir::mutate::{
    rewrite_conditions, rewrite_if_conditions, substitute_one, substitute_stmt, super_stmt, Mutator,
};
use crate::tir::visit::{conjuncts, uses_var, walk_stmt, Visitor};
use crate::tir::{Buffer, CmpOp, Expr, ForKind, PrimFunc, Stmt, Var};

/// Partitions the vectorized loops of `f`. On the CPU, a border of unknown position may
/// be a vector loop over its tile's own buffers (see the module's header).
pub fn hoist_tail_guards(mut f: PrimFunc) -> PrimFunc {
    let masked_tails = f.target.is_cpu();
    let written = super::vectorize_loops::written_buffers(&f);
    let hoist = || Hoist {
        loops: Vec::new(),
        allocs: Vec::new(),
        private: Vec::new(),
        in_parallel: false,
        written: written.clone(),
        masked_tails,
    };
    f.body = hoist().mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = hoist().mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

/// The enclosing loops of the statement being rewritten, whose ranges are constant, and
/// the allocations of constant size around it that no parallel loop separates from it
/// (an element of those is only ever written by the thread running the statement).
struct Hoist {
    loops: Vec<(Var, i64, i64)>,
    allocs: Vec<(Buffer, i64)>,
    /// What the vectorizer needs to see that a masked border vectorizes: every
    /// allocation since the innermost parallel loop, whether there is one, the buffers
    /// the function writes.
    private: Vec<crate::tir::BufferId>,
    in_parallel: bool,
    written: std::collections::HashSet<crate::tir::BufferId>,
    masked_tails: bool,
}

impl Mutator for Hoist {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        if let Stmt::Allocate { buffer, extent, body } = s {
            let size = extent.as_int();
            if let Some(n) = size {
                self.allocs.push((buffer.clone(), n));
            }
            self.private.push(buffer.id());
            let body = Box::new(self.mutate_stmt(*body));
            self.private.pop();
            if size.is_some() {
                self.allocs.pop();
            }
            return Stmt::Allocate { buffer, extent, body };
        }
        if let Stmt::For { var, min, extent, kind, body } = s {
            let range = (min.as_int(), extent.as_int());
            if let (Some(lo), Some(n)) = range {
                self.loops.push((var.clone(), lo, n));
            }
            let outside = (kind == ForKind::Parallel).then(|| {
                let p = std::mem::replace(&mut self.in_parallel, true);
                (std::mem::take(&mut self.allocs), std::mem::take(&mut self.private), p)
            });
            let body = Box::new(self.mutate_stmt(*body));
            if let Some((allocs, private, p)) = outside {
                (self.allocs, self.private, self.in_parallel) = (allocs, private, p);
            }
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
        let cond = whole.iter().cloned().reduce(Expr::and).expect("non-empty");
        // The tests of the guards alone (`if`s; a select's test chooses a value and leaves
        // its lanes to be stored).
        let mut guards = Peel { var: &var, analyzer: &analyzer, inner: bound_inside(&body), whole: Vec::new() };
        let guarded = rewrite_if_conditions((*body).clone(), &mut |c| guards.peel(c));
        let selects_tested = whole.iter().any(|t| !guards.whole.contains(t));
        // Where the guards hold for the whole vector but a select's test does not (the
        // border of a padded read), the border is the vector loop with its selects
        // (lenient reads of the lanes the select drops), when it vectorizes.
        let selected = if selects_tested { self.vector_or_none(&var, &min, extent.as_int(), guarded) } else { None };
        let tail = match selected {
            Some(selected) if guards.whole.is_empty() => selected,
            Some(selected) => {
                let gcond = guards.whole.into_iter().reduce(Expr::and).expect("non-empty");
                let rest = self.border(var, min, extent, body, &gcond);
                Stmt::If { cond: gcond, then: Box::new(selected), otherwise: Some(Box::new(rest)) }
            }
            None => self.border(var, min, extent, body, &cond),
        };
        Stmt::If { cond, then: Box::new(fast), otherwise: Some(Box::new(tail)) }
    }

    /// The vectors where `whole` fails: the one iteration's shorter vector, a masked
    /// vector, or else the loop, serial.
    fn border(&self, var: Var, min: Expr, extent: Expr, body: Box<Stmt>, whole: &Expr) -> Stmt {
        self.vector_tail(&var, &min, &extent, &body, whole)
            .or_else(|| self.masked_tail(&var, &min, &extent, &body))
            .unwrap_or_else(|| {
                // The border is scalar (at most two vectors per row).
                Stmt::For { var, min, extent, kind: ForKind::Serial, body }
            })
    }

    /// What the vectorizer may read on every lane of a select here.
    fn readable(&self) -> Option<super::vectorize_loops::Readable> {
        self.masked_tails.then(|| super::vectorize_loops::Readable {
            any: !self.in_parallel,
            written: self.written.clone(),
            private: self.private.clone(),
        })
    }

    /// `body` as a vector loop of `lanes` from `min`, if the vectorizer makes vector code
    /// of it (a loop it would leave serial would be reported as the user's).
    fn vector_or_none(&self, var: &Var, min: &Expr, lanes: Option<i64>, body: Stmt) -> Option<Stmt> {
        let lanes = lanes?;
        if !super::vectorize_loops::vectorizes(var, min, lanes, &body, self.readable()) {
            return None;
        }
        Some(Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: Expr::int(lanes),
            kind: ForKind::Vectorized,
            body: Box::new(body),
        })
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
        // The run of lanes is decided by one guard around the whole body (no `else`): the
        // lanes after the run store nothing. A statement outside that guard, or an `else`,
        // runs on every lane, and then no lane may be dropped.
        let guard = top_guard(&body, var)?;
        let tests: Vec<Expr> = conjuncts(guard).into_iter().filter(|t| uses_var(t, var)).collect();
        let holds_on = |a: &Analyzer| tests.iter().all(|t| holds_on_every_lane(a, t, var));
        // The longest run from the first lane on which the guard holds; the guard is a
        // conjunction of comparisons linear in the lane (constants but for it here), so it
        // fails on every lane after a lane where it provably fails.
        for lanes in (1..=extent).rev() {
            let mut a = Analyzer::new();
            a.bind(var, Expr::int(min), Expr::int(lanes));
            if !holds_on(&a) {
                continue;
            }
            if lanes < extent {
                let next = Analyzer::new();
                let at = |t: &Expr| next.simplify(&substitute_one(t.clone(), var, Expr::int(min + lanes)));
                if !tests.iter().any(|t| matches!(at(t), Expr::Bool(false))) {
                    return None;
                }
            }
            // The guard's tests, and the tests of the ifs and selects inside it that hold
            // on every lane of the run, go; the others stay.
            let kept = rewrite_conditions(body.clone(), &mut |c| proved_part(&a, var, c));
            if lanes > 1 {
                if let Some(v) = self.vector_or_none(var, &Expr::int(min), Some(lanes), kept.clone()) {
                    return Some(v);
                }
            }
            let extent = Expr::int(lanes);
            return Some(Stmt::For {
                var: var.clone(),
                min: Expr::int(min),
                extent,
                kind: ForKind::Serial,
                body: Box::new(kept),
            });
        }
        None
    }
}

/// The condition of the one `if` (without `else`) that holds the whole of `s`, through
/// its `let`s, when it tests `var`.
fn top_guard(s: &Stmt, var: &Var) -> Option<Expr> {
    match s {
        Stmt::If { cond, otherwise: None, .. } if uses_var(cond, var) => Some(cond.clone()),
        Stmt::Let { body, .. } => top_guard(body, var),
        _ => None,
    }
}

/// `c` without its comparisons on `var` that hold for every value `a` gives `var`;
/// `None` when there is none.
fn proved_part(a: &Analyzer, var: &Var, c: &Expr) -> Option<Expr> {
    if !uses_var(c, var) {
        return None;
    }
    let (mut kept, mut dropped) = (Vec::new(), false);
    for t in conjuncts(c.clone()) {
        let holds = uses_var(&t, var) && holds_on_every_lane(a, &t, var);
        if holds {
            dropped = true;
        } else {
            kept.push(t);
        }
    }
    dropped.then(|| kept.into_iter().reduce(Expr::and).unwrap_or(Expr::Bool(true)))
}

impl Hoist {
    /// The border as a vector loop whose tests on `var` select the values stored into the
    /// tile's own buffers (see the module's header), if every such test guards only
    /// stores that stay inside their allocation on every lane.
    fn masked_tail(&self, var: &Var, min: &Expr, extent: &Expr, body: &Stmt) -> Option<Stmt> {
        if !self.masked_tails {
            return None;
        }
        let mut a = Analyzer::new();
        for (v, lo, n) in &self.loops {
            a.bind(v, Expr::int(*lo), Expr::int(*n));
        }
        a.bind(var, min.clone(), extent.clone());
        let inner = bound_inside(body);
        let body = self.masked(&a, var, &inner, body)?;
        // A border the vectorizer would refuse (a select reading lanes another thread
        // writes) stays scalar, as before.
        if !super::vectorize_loops::vectorizes(var, min, extent.as_int()?, &body, self.readable()) {
            return None;
        }
        Some(Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: ForKind::Vectorized,
            body: Box::new(body),
        })
    }

    /// `s` with each test on `var` turned into a select of the values it guards; `None`
    /// where a test guards something else.
    fn masked(&self, a: &Analyzer, var: &Var, inner: &[Var], s: &Stmt) -> Option<Stmt> {
        Some(match s {
            Stmt::Seq(ss) => Stmt::Seq(ss.iter().map(|s| self.masked(a, var, inner, s)).collect::<Option<_>>()?),
            Stmt::If { cond, then, otherwise: None } if uses_var(cond, var) => {
                if inner.iter().any(|v| uses_var(cond, v)) {
                    return None;
                }
                let (on, kept): (Vec<Expr>, Vec<Expr>) =
                    conjuncts(cond.clone()).into_iter().partition(|c| uses_var(c, var));
                let test = on.into_iter().reduce(Expr::and).expect("the condition uses the variable");
                // Each store re-evaluates the test, after the stores before it: a test
                // that reads memory could read what they wrote.
                if crate::tir::visit::reads_memory(&test) {
                    return None;
                }
                let then = self.selected(a, &test, then)?;
                match kept.into_iter().reduce(Expr::and) {
                    Some(k) => Stmt::If { cond: k, then: Box::new(then), otherwise: None },
                    None => then,
                }
            }
            Stmt::If { cond, then, otherwise } if !uses_var(cond, var) => Stmt::If {
                cond: cond.clone(),
                then: Box::new(self.masked(a, var, inner, then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.masked(a, var, inner, o)?)),
                    None => None,
                },
            },
            Stmt::Let { var: v, value, body } => {
                Stmt::Let { var: v.clone(), value: value.clone(), body: Box::new(self.masked(a, var, inner, body)?) }
            }
            Stmt::If { .. } => return None,
            s => s.clone(),
        })
    }

    /// The stores of `s` (stores only) writing `select(test, value, old)`, if each is into
    /// one of `allocs`, inside it for every lane.
    fn selected(&self, a: &Analyzer, test: &Expr, s: &Stmt) -> Option<Stmt> {
        Some(match s {
            Stmt::Seq(ss) => Stmt::Seq(ss.iter().map(|s| self.selected(a, test, s)).collect::<Option<_>>()?),
            Stmt::Store { buffer, indices, value } => {
                let [index] = indices.as_slice() else { return None };
                let &(_, size) = self.allocs.iter().find(|(b, _)| b == buffer)?;
                let (lo, hi) = a.const_bounds(index)?;
                if lo < 0 || hi >= size {
                    return None;
                }
                let old = Expr::Load { buffer: buffer.clone(), indices: indices.clone() };
                Stmt::Store {
                    buffer: buffer.clone(),
                    indices: indices.clone(),
                    value: Expr::select(test.clone(), value.clone(), old),
                }
            }
            _ => return None,
        })
    }
}

/// Whether `buffer[indices] = value` is a masked store, `select(test, v, buffer[indices])`
/// with a vector test (the border's stores, see the module's header): the interpreter
/// writes only the kept lanes, and `forward_stores` leaves it alone.
pub(crate) fn is_masked_store(buffer: &Buffer, indices: &[Expr], value: &Expr) -> bool {
    matches!(value, Expr::Select { cond, otherwise, .. }
        if cond.dtype().lanes > 1
            && matches!(&**otherwise, Expr::Load { buffer: b, indices: i } if b == buffer && i == indices))
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

/// Whether the comparison `c` provably holds for every value `a` gives `var`.
fn holds_on_every_lane(a: &Analyzer, c: &Expr, var: &Var) -> bool {
    tile_condition(a, c, var).is_some_and(|w| matches!(a.simplify(&w), Expr::Bool(true)))
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
