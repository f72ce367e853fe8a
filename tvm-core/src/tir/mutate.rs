//! Rewriting of expressions and statements. Default methods rebuild the node from its
//! rewritten children, moving (not copying) what did not change.

use super::expr::*;
use super::stmt::*;
use std::collections::HashMap;

pub trait Mutator {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        super_expr(self, e)
    }
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        super_stmt(self, s)
    }
}

fn bx<M: Mutator + ?Sized>(m: &mut M, e: Box<Expr>) -> Box<Expr> {
    Box::new(m.mutate_expr(*e))
}
fn bs<M: Mutator + ?Sized>(m: &mut M, s: Box<Stmt>) -> Box<Stmt> {
    Box::new(m.mutate_stmt(*s))
}

/// Rewrites the children of `e`.
pub fn super_expr<M: Mutator + ?Sized>(m: &mut M, e: Expr) -> Expr {
    match e {
        Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_) | Expr::Var(_) => e,
        Expr::Binary { op, a, b } => Expr::Binary { op, a: bx(m, a), b: bx(m, b) },
        Expr::Cmp { op, a, b } => Expr::Cmp { op, a: bx(m, a), b: bx(m, b) },
        Expr::And(a, b) => Expr::And(bx(m, a), bx(m, b)),
        Expr::Or(a, b) => Expr::Or(bx(m, a), bx(m, b)),
        Expr::Not(a) => Expr::Not(bx(m, a)),
        Expr::Neg(a) => Expr::Neg(bx(m, a)),
        Expr::Select { cond, then, otherwise } => {
            Expr::Select { cond: bx(m, cond), then: bx(m, then), otherwise: bx(m, otherwise) }
        }
        Expr::Cast { dtype, value } => Expr::Cast { dtype, value: bx(m, value) },
        Expr::Call { func, args } => Expr::Call { func, args: args.into_iter().map(|a| m.mutate_expr(a)).collect() },
        Expr::ProducerLoad { tensor, indices, dtype } => {
            Expr::ProducerLoad { tensor, indices: indices.into_iter().map(|a| m.mutate_expr(a)).collect(), dtype }
        }
        Expr::Load { buffer, indices } => {
            Expr::Load { buffer, indices: indices.into_iter().map(|a| m.mutate_expr(a)).collect() }
        }
        Expr::Ramp { base, stride, lanes } => Expr::Ramp { base: bx(m, base), stride: bx(m, stride), lanes },
        Expr::Broadcast { value, lanes } => Expr::Broadcast { value: bx(m, value), lanes },
        Expr::Reduce(r) => {
            let mut r = *r;
            r.axes = std::mem::take(&mut r.axes)
                .into_iter()
                .map(|ax| IterVar {
                    var: ax.var,
                    dom: Range { min: m.mutate_expr(ax.dom.min), extent: m.mutate_expr(ax.dom.extent) },
                    kind: ax.kind,
                })
                .collect();
            Expr::Reduce(Box::new(r.map_sources(|s| m.mutate_expr(s))))
        }
        Expr::Check { value, kind, site } => {
            let kind = match kind {
                CheckKind::Index { extent } => CheckKind::Index { extent: bx(m, extent) },
                CheckKind::Divisor => CheckKind::Divisor,
            };
            Expr::Check { value: bx(m, value), kind, site }
        }
    }
}

/// Rewrites the children of `s`.
pub fn super_stmt<M: Mutator + ?Sized>(m: &mut M, s: Stmt) -> Stmt {
    match s {
        Stmt::Seq(ss) => Stmt::seq(ss.into_iter().map(|s| m.mutate_stmt(s)).collect()),
        Stmt::For { var, min, extent, kind, body } => {
            Stmt::For { var, min: m.mutate_expr(min), extent: m.mutate_expr(extent), kind, body: bs(m, body) }
        }
        Stmt::ThreadBinding { tag, var, extent, body } => {
            Stmt::ThreadBinding { tag, var, extent: m.mutate_expr(extent), body: bs(m, body) }
        }
        Stmt::If { cond, then, otherwise } => {
            Stmt::If { cond: m.mutate_expr(cond), then: bs(m, then), otherwise: otherwise.map(|o| bs(m, o)) }
        }
        Stmt::Let { var, value, body } => Stmt::Let { var, value: m.mutate_expr(value), body: bs(m, body) },
        Stmt::Store { buffer, indices, value } => Stmt::Store {
            buffer,
            indices: indices.into_iter().map(|i| m.mutate_expr(i)).collect(),
            value: m.mutate_expr(value),
        },
        Stmt::Prefetch { buffer, indices } => {
            Stmt::Prefetch { buffer, indices: indices.into_iter().map(|i| m.mutate_expr(i)).collect() }
        }
        Stmt::Realize { buffer, bounds, body } => Stmt::Realize {
            buffer,
            bounds: bounds
                .into_iter()
                .map(|r| Range { min: m.mutate_expr(r.min), extent: m.mutate_expr(r.extent) })
                .collect(),
            body: bs(m, body),
        },
        Stmt::Allocate { buffer, extent, body } => {
            Stmt::Allocate { buffer, extent: m.mutate_expr(extent), body: bs(m, body) }
        }
        Stmt::Barrier | Stmt::WarpReduce { .. } | Stmt::Launch { .. } | Stmt::NoOp => s,
    }
}

/// Replaces variables by expressions.
pub struct Substitute<'a>(pub &'a HashMap<Var, Expr>);

impl Mutator for Substitute<'_> {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        if let Expr::Var(v) = &e {
            if let Some(r) = self.0.get(v) {
                return r.clone();
            }
            return e;
        }
        super_expr(self, e)
    }
}

pub fn substitute(e: Expr, map: &HashMap<Var, Expr>) -> Expr {
    if map.is_empty() {
        return e;
    }
    Substitute(map).mutate_expr(e)
}

pub fn substitute_stmt(s: Stmt, map: &HashMap<Var, Expr>) -> Stmt {
    if map.is_empty() {
        return s;
    }
    Substitute(map).mutate_stmt(s)
}

/// Replaces one variable by an expression.
pub fn substitute_one(e: Expr, var: &Var, by: Expr) -> Expr {
    let mut m = HashMap::new();
    m.insert(var.clone(), by);
    substitute(e, &m)
}

/// Rewrites the condition of every `if` and `select` of `s`, inside out: `f` returns the
/// new condition, or `None` to keep it. A condition rewritten to `true` leaves its
/// `then` side in place of the whole `if` or `select` (the loop passes drop the tests
/// they have proven or moved out this way).
pub fn rewrite_conditions(s: Stmt, f: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Stmt {
    RewriteConditions { f, selects: true }.mutate_stmt(s)
}

/// [`rewrite_conditions`] for the conditions of the `if`s alone: a select's stays (it
/// chooses a value, where an `if` guards a statement).
pub fn rewrite_if_conditions(s: Stmt, f: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Stmt {
    RewriteConditions { f, selects: false }.mutate_stmt(s)
}

struct RewriteConditions<'a> {
    f: &'a mut dyn FnMut(&Expr) -> Option<Expr>,
    selects: bool,
}

impl Mutator for RewriteConditions<'_> {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::If { cond, then, otherwise } => match (self.f)(&cond) {
                Some(Expr::Bool(true)) => *then,
                Some(kept) => Stmt::If { cond: kept, then, otherwise },
                None => Stmt::If { cond, then, otherwise },
            },
            s => s,
        }
    }
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        if !self.selects {
            return e;
        }
        match super_expr(self, e) {
            Expr::Select { cond, then, otherwise } => match (self.f)(&cond) {
                Some(Expr::Bool(true)) => *then,
                Some(kept) => Expr::select(kept, *then, *otherwise),
                None => Expr::Select { cond, then, otherwise },
            },
            e => e,
        }
    }
}
