//! Statement simplification: loop ranges are bound while their bodies are simplified,
//! conditions proved true or false drop their `If`, empty and single-iteration loops go.

use super::{reads_memory, Analyzer};
use crate::tir::mutate::substitute_stmt;
use crate::tir::visit::conjuncts;
use crate::tir::{CmpOp, Expr, ForKind, Range, Stmt, Var};
use std::collections::HashMap;

impl Analyzer {
    /// Simplifies every expression of `s` and its control flow:
    /// - `For`: the variable is bound to `[min, min + extent)` in the body; a loop that
    ///   provably runs no iteration, or whose body becomes empty, is removed; a serial or
    ///   unrolled loop of extent 1 becomes its body with `min` for the variable.
    /// - `ThreadBinding`: the variable is bound to `[0, extent)` in the body.
    /// - `If`: a condition proved true or false keeps only the branch taken; otherwise
    ///   each branch is simplified knowing the condition (or its negation).
    /// - `Let`: kept; the variable gets the constant bounds of its value.
    /// - `Seq`: flattened, without `NoOp`s.
    pub fn simplify_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Seq(ss) => Stmt::seq(ss.into_iter().map(|s| self.simplify_stmt(s)).collect()),
            Stmt::For { var, min, extent, kind, body } => {
                let min = self.simplify(&min);
                let extent = self.simplify(&extent);
                if extent.dtype().is_integer() && self.can_prove(&le_zero(&extent)) {
                    return Stmt::NoOp;
                }
                if extent.is_const_int(1) && matches!(kind, ForKind::Serial | ForKind::Unrolled) && !reads_memory(&min)
                {
                    let mut m = HashMap::new();
                    m.insert(var.clone(), min);
                    return self.simplify_stmt(substitute_stmt(*body, &m));
                }
                let snap = self.snapshot();
                self.bind_range(&var, &min, &extent);
                let body = self.simplify_stmt(*body);
                self.restore(snap);
                if matches!(body, Stmt::NoOp) {
                    return Stmt::NoOp;
                }
                // `for v in [min, min + e) { if .. && v < x && .. { .. } }` with
                // `x - min <= e` proved: the loop stops at `x` instead.
                if matches!(kind, ForKind::Serial | ForKind::Unrolled) {
                    for (x, rest) in upper_bound_guards(&var, &body) {
                        let new_extent = self.simplify(&(x - min.clone()));
                        if self.can_prove(&Expr::cmp(CmpOp::Le, new_extent.clone(), extent.clone())) {
                            let Stmt::If { then, .. } = body else { unreachable!("matched by upper_bound_guards") };
                            let body = match rest {
                                Some(c) => Stmt::if_then(c, *then),
                                None => *then,
                            };
                            return self.simplify_stmt(Stmt::For {
                                var,
                                min,
                                extent: new_extent,
                                kind,
                                body: Box::new(body),
                            });
                        }
                    }
                }
                Stmt::For { var, min, extent, kind, body: Box::new(body) }
            }
            Stmt::ThreadBinding { tag, var, extent, body } => {
                let extent = self.simplify(&extent);
                let snap = self.snapshot();
                if extent.dtype().is_integer() {
                    self.bind_range(&var, &Expr::typed_int(0, extent.dtype()), &extent);
                }
                let body = self.simplify_stmt(*body);
                self.restore(snap);
                Stmt::ThreadBinding { tag, var, extent, body: Box::new(body) }
            }
            Stmt::If { cond, then, otherwise } => {
                let cond = self.simplify(&cond);
                match cond {
                    Expr::Bool(true) => return self.simplify_stmt(*then),
                    Expr::Bool(false) => return otherwise.map_or(Stmt::NoOp, |o| self.simplify_stmt(*o)),
                    _ => {}
                }
                let snap = self.snapshot();
                self.assume(&cond);
                let then = self.simplify_stmt(*then);
                self.restore(snap);
                let otherwise = otherwise.map(|o| {
                    let snap = self.snapshot();
                    self.assume(&Expr::not(cond.clone()));
                    let o = self.simplify_stmt(*o);
                    self.restore(snap);
                    o
                });
                let otherwise = otherwise.filter(|o| !matches!(o, Stmt::NoOp));
                match (then, otherwise) {
                    (Stmt::NoOp, None) => Stmt::NoOp,
                    (Stmt::NoOp, Some(o)) => {
                        let not = self.simplify(&Expr::not(cond));
                        Stmt::If { cond: not, then: Box::new(o), otherwise: None }
                    }
                    (then, otherwise) => Stmt::If { cond, then: Box::new(then), otherwise: otherwise.map(Box::new) },
                }
            }
            Stmt::Let { var, value, body } => {
                let value = self.simplify(&value);
                let snap = self.snapshot();
                self.unbind(&var);
                if var.dtype().is_integer() {
                    if let Some((lo, hi)) = self.const_bounds(&value) {
                        self.bind_const_bound(&var, lo, hi);
                    }
                }
                let body = self.simplify_stmt(*body);
                self.restore(snap);
                if matches!(body, Stmt::NoOp) {
                    return Stmt::NoOp;
                }
                Stmt::Let { var, value, body: Box::new(body) }
            }
            Stmt::Store { buffer, indices, value } => Stmt::Store {
                buffer,
                indices: indices.iter().map(|i| self.simplify(i)).collect(),
                value: self.simplify(&value),
            },
            Stmt::Prefetch { buffer, indices } => {
                Stmt::Prefetch { buffer, indices: indices.iter().map(|i| self.simplify(i)).collect() }
            }
            Stmt::Realize { buffer, bounds, body } => Stmt::Realize {
                buffer,
                bounds: bounds
                    .iter()
                    .map(|r| Range { min: self.simplify(&r.min), extent: self.simplify(&r.extent) })
                    .collect(),
                body: Box::new(self.simplify_stmt(*body)),
            },
            Stmt::Allocate { buffer, extent, body } => {
                Stmt::Allocate { buffer, extent: self.simplify(&extent), body: Box::new(self.simplify_stmt(*body)) }
            }
            s @ (Stmt::Barrier | Stmt::WarpReduce { .. } | Stmt::Launch { .. } | Stmt::NoOp) => s,
        }
    }
}

impl Analyzer {
    /// Binds `var` to `[min, min + extent)`, symbolically unless the bounds read memory
    /// (a store in the body could change them): then only to their constant bounds.
    fn bind_range(&mut self, var: &Var, min: &Expr, extent: &Expr) {
        if !reads_memory(min) && !reads_memory(extent) {
            self.bind(var, min.clone(), extent.clone());
            return;
        }
        self.unbind(var);
        if !min.dtype().is_integer() || min.dtype() != extent.dtype() {
            return;
        }
        let max = min.clone() + extent.clone() - Expr::typed_int(1, min.dtype());
        let lo = self.const_bounds(min).map(|b| b.0);
        let hi = self.const_bounds(&max).map(|b| b.1);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            self.bind_const_bound(var, lo, hi);
        }
    }
}

fn le_zero(e: &Expr) -> Expr {
    Expr::cmp(CmpOp::Le, e.clone(), Expr::typed_int(0, e.dtype()))
}

/// Each way to read `body` as `if c1 && .. && v < x && .. && cn { .. }` (no `else`; the
/// `&&`s nested in any way), with `x` free of `v` and of memory reads: `(x, the other
/// conjuncts)`, in the order of the conjuncts.
fn upper_bound_guards(v: &Var, body: &Stmt) -> Vec<(Expr, Option<Expr>)> {
    let Stmt::If { cond, otherwise: None, .. } = body else { return Vec::new() };
    let is_bound = |c: &Expr| match c {
        Expr::Cmp { op: CmpOp::Lt, a, b } => {
            a.as_var() == Some(v) && !crate::tir::visit::uses_var(b, v) && !reads_memory(b) && b.dtype().is_integer()
        }
        _ => false,
    };
    let cs = conjuncts(cond.clone());
    (0..cs.len())
        .filter(|&i| is_bound(&cs[i]))
        .map(|i| {
            let mut rest = cs.clone();
            let Expr::Cmp { b, .. } = rest.remove(i) else { unreachable!("matched by is_bound") };
            (*b, rest.into_iter().reduce(Expr::and))
        })
        .collect()
}
