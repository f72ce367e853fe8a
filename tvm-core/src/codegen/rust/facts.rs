//! What the emitter knows at each point of a function body, kept in two analyzers.
//!
//! * `math` knows every loop range, `if` condition and pure `let` value, and assumes (as
//!   every pass does) that index arithmetic does not overflow. It decides how a parallel
//!   loop is cut into chunks. A wrong answer there could only give wrong results, never
//!   undefined behavior: the chunks are disjoint `&mut` slices handed out by the thread pool.
//! * `safe` knows only facts that hold for the values the generated code really
//!   computes, on the fast path: the dims are bound to `[0, 2^k]` (the generated code
//!   checks this before taking the fast path), and a loop range, condition or `let`
//!   value is recorded only when it is *exact*: every integer node of it provably fits
//!   its type, so the wrapping arithmetic of the generated code computes the
//!   mathematical value. Unchecked accesses are justified by this analyzer alone.

use crate::arith::{reads_memory, Analyzer, Snapshot};
use crate::dtype::DType;
use crate::tir::visit::for_each_expr;
use crate::tir::{BinOp, Expr, Var};
use std::collections::HashMap;

pub(super) struct Facts {
    pub math: Analyzer,
    /// Asked through [`Facts::prove`] and [`Facts::exact`], which count its refusals.
    safe: Analyzer,
    /// How many times `safe` said no (a proof that failed, a value it could not bound):
    /// an emission with none at some dim bound makes the same decisions at every smaller
    /// bound, since the dims' bound is the only fact that changes with it.
    refused: std::cell::Cell<usize>,
    /// Pure `i64` `let` values, substituted into indices before they are decomposed.
    pub lets: HashMap<Var, Expr>,
}

pub(super) struct FactsSnapshot {
    math: Snapshot,
    safe: Snapshot,
    lets: HashMap<Var, Expr>,
}

impl Facts {
    /// `dims` are non-negative; on the fast path they are also at most `2^k_bits`.
    pub fn new(dims: &[Var], k_bits: u32) -> Facts {
        let mut math = Analyzer::new();
        let mut safe = Analyzer::new();
        for d in dims {
            math.assume_nonneg(d);
            safe.bind_const_bound(d, 0, 1i64 << k_bits);
        }
        Facts { math, safe, refused: std::cell::Cell::new(0), lets: HashMap::new() }
    }

    /// Whether `safe` proves `cond`; a refusal is counted.
    pub fn prove(&self, cond: &Expr) -> bool {
        let held = self.safe.can_prove(cond);
        self.refuse_unless(held)
    }

    /// `e` simplified with what `safe` knows.
    pub fn simplify_safe(&self, e: &Expr) -> Expr {
        self.safe.simplify(e)
    }

    /// Records `cond = true` in `safe` alone (a fact that only holds for the values the
    /// generated code computes where the caller is).
    pub fn assume_safe(&mut self, cond: &Expr) {
        self.safe.assume(cond);
    }

    /// How many times `safe` has said no in this emission.
    pub fn refused(&self) -> usize {
        self.refused.get()
    }

    fn refuse_unless(&self, held: bool) -> bool {
        if !held {
            self.refused.set(self.refused.get() + 1);
        }
        held
    }

    pub fn snapshot(&self) -> FactsSnapshot {
        FactsSnapshot { math: self.math.snapshot(), safe: self.safe.snapshot(), lets: self.lets.clone() }
    }

    pub fn restore(&mut self, s: FactsSnapshot) {
        self.math.restore(s.math);
        self.safe.restore(s.safe);
        self.lets = s.lets;
    }

    /// `var` takes the values `[min, min + extent)` (known in the loop's body, which runs
    /// only where `extent` is positive: an extent `max(e, 0)` is `e` there).
    pub fn bind_loop(&mut self, var: &Var, min: &Expr, extent: &Expr) {
        let extent = match extent {
            Expr::Binary { op: BinOp::Max, a, b } if b.is_const_int(0) => &**a,
            Expr::Binary { op: BinOp::Max, a, b } if a.is_const_int(0) => &**b,
            e => e,
        };
        self.math.bind(var, min.clone(), extent.clone());
        if self.exact(min) && self.exact(extent) && self.exact(&(min.clone() + extent.clone())) {
            self.safe.bind(var, min.clone(), extent.clone());
        } else {
            self.safe.unbind(var);
        }
    }

    /// `cond` (or its negation) holds.
    pub fn assume(&mut self, cond: &Expr, holds: bool) {
        let c = if holds { cond.clone() } else { Expr::not(cond.clone()) };
        let exact = self.exact(cond);
        self.math.assume(&c);
        if exact {
            self.safe.assume(&c);
        }
        // Indices are compared with the `let`s substituted (`rows_1` of a `usize` scalar
        // is `i64(rows)` there); so is the condition, for the math that proves them.
        if !self.lets.is_empty() {
            let s = crate::tir::mutate::substitute(c.clone(), &self.lets);
            if s != c {
                self.math.assume(&s);
            }
        }
    }

    /// `var` is bound to `value` for the rest of the scope.
    pub fn bind_let(&mut self, var: &Var, value: &Expr) {
        let pure = var.dtype() == DType::I64 && !reads_memory(value);
        if !pure {
            self.math.unbind(var);
            self.safe.unbind(var);
            self.lets.remove(var);
            return;
        }
        self.math.bind(var, value.clone(), Expr::int(1));
        self.lets.insert(var.clone(), value.clone());
        if self.exact(value) {
            self.safe.bind(var, value.clone(), Expr::int(1));
        } else {
            self.safe.unbind(var);
        }
    }

    /// Whether the generated code computes the mathematical value of `e` on the fast
    /// path: no memory reads, no floats, and every integer node provably within its type
    /// (so no wrapping happens anywhere in it).
    pub fn exact(&self, e: &Expr) -> bool {
        !reads_memory(e) && self.exact_node(e)
    }

    /// `exact` without the memory test. A ring-only subtree (`i64` `+`, `-`, `*`) is
    /// exact as soon as its own value fits an `i64`: wrapping arithmetic is exact modulo
    /// 2^64, whatever its intermediate values, so one bound covers the whole subtree
    /// (bounding every node of it would cost a bound per node, each over its subtree).
    fn exact_node(&self, x: &Expr) -> bool {
        if ring_only(x) {
            return self.bounded(x, DType::I64);
        }
        let d = x.dtype();
        let shape_ok = match x {
            Expr::Float { .. } | Expr::Call { .. } | Expr::Ramp { .. } | Expr::Broadcast { .. } => false,
            Expr::Cast { dtype, value } => dtype.is_integer() && value.dtype().is_integer(),
            _ => d.lanes == 1 && !d.is_float(),
        };
        if !shape_ok {
            return false;
        }
        if d.is_integer() && !self.bounded(x, d) {
            return false;
        }
        let mut ok = true;
        crate::tir::visit::for_each_child(x, &mut |c| ok = ok && self.exact_node(c));
        ok
    }

    /// Whether `safe` bounds `x` within the values of `d`: by plain interval arithmetic
    /// when that suffices (most nodes), else by the simplifying analysis.
    fn bounded(&self, x: &Expr, d: DType) -> bool {
        let ok = |b: Option<(i64, i64)>| b.is_some_and(|(lo, hi)| fits(lo, hi, d));
        self.refuse_unless(ok(self.safe.interval_bounds(x)) || ok(self.safe.const_bounds(x)))
    }
}

/// Whether `[lo, hi]` lies within the values of `d`.
fn fits(lo: i64, hi: i64, d: DType) -> bool {
    let (min, max): (i128, i128) = match (d.is_uint(), d.bits) {
        (true, 64) => (0, i64::MAX as i128),
        (true, b) => (0, (1i128 << b) - 1),
        (false, b) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
    };
    (lo as i128) >= min && (hi as i128) <= max
}

/// Whether `e` is built from `i64` constants, variables, `+`, `-` and `*` only. Wrapping
/// arithmetic is exact modulo 2^64 for these, so the computed value equals the
/// mathematical one whenever the latter fits an `i64`, whatever the intermediate values.
pub(super) fn ring_only(e: &Expr) -> bool {
    let mut ok = true;
    for_each_expr(e, &mut |x| {
        ok &= x.dtype() == DType::I64
            && match x {
                Expr::Int { .. } | Expr::Var(_) => true,
                Expr::Binary { op, .. } => matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul),
                _ => false,
            };
    });
    ok
}
