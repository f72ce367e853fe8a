//! Read-only traversal of expressions and statements. Default methods recurse.

use super::expr::*;
use super::stmt::*;

pub trait Visitor {
    fn visit_expr(&mut self, e: &Expr) {
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        walk_stmt(self, s)
    }
}

/// Visits the children of `e`.
pub fn walk_expr<V: Visitor + ?Sized>(v: &mut V, e: &Expr) {
    match e {
        Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_) | Expr::Var(_) => {}
        Expr::Binary { a, b, .. } | Expr::Cmp { a, b, .. } | Expr::And(a, b) | Expr::Or(a, b) => {
            v.visit_expr(a);
            v.visit_expr(b);
        }
        Expr::Not(a) | Expr::Neg(a) => v.visit_expr(a),
        Expr::Select { cond, then, otherwise } => {
            v.visit_expr(cond);
            v.visit_expr(then);
            v.visit_expr(otherwise);
        }
        Expr::Cast { value, .. } => v.visit_expr(value),
        Expr::Call { args, .. } => args.iter().for_each(|a| v.visit_expr(a)),
        Expr::ProducerLoad { indices, .. } | Expr::Load { indices, .. } => indices.iter().for_each(|a| v.visit_expr(a)),
        Expr::Ramp { base, stride, .. } => {
            v.visit_expr(base);
            v.visit_expr(stride);
        }
        Expr::Broadcast { value, .. } => v.visit_expr(value),
        Expr::Reduce(r) => {
            for ax in &r.axes {
                v.visit_expr(&ax.dom.min);
                v.visit_expr(&ax.dom.extent);
            }
            r.sources().into_iter().for_each(|s| v.visit_expr(s));
        }
        Expr::Check { value, kind, .. } => {
            v.visit_expr(value);
            if let CheckKind::Index { extent } = kind {
                v.visit_expr(extent);
            }
        }
    }
}

/// Visits the children of `s`.
pub fn walk_stmt<V: Visitor + ?Sized>(v: &mut V, s: &Stmt) {
    match s {
        Stmt::Seq(ss) => ss.iter().for_each(|s| v.visit_stmt(s)),
        Stmt::For { min, extent, body, .. } => {
            v.visit_expr(min);
            v.visit_expr(extent);
            v.visit_stmt(body);
        }
        Stmt::ThreadBinding { extent, body, .. } => {
            v.visit_expr(extent);
            v.visit_stmt(body);
        }
        Stmt::If { cond, then, otherwise } => {
            v.visit_expr(cond);
            v.visit_stmt(then);
            if let Some(o) = otherwise {
                v.visit_stmt(o);
            }
        }
        Stmt::Let { value, body, .. } => {
            v.visit_expr(value);
            v.visit_stmt(body);
        }
        Stmt::Store { indices, value, .. } => {
            indices.iter().for_each(|i| v.visit_expr(i));
            v.visit_expr(value);
        }
        Stmt::Prefetch { indices, .. } => indices.iter().for_each(|i| v.visit_expr(i)),
        Stmt::Realize { bounds, body, .. } => {
            for r in bounds {
                v.visit_expr(&r.min);
                v.visit_expr(&r.extent);
            }
            v.visit_stmt(body);
        }
        Stmt::Allocate { extent, body, .. } => {
            v.visit_expr(extent);
            v.visit_stmt(body);
        }
        Stmt::Barrier | Stmt::WarpReduce { .. } | Stmt::Launch { .. } | Stmt::NoOp => {}
    }
}

/// The buffers `s` stores to.
pub fn written_buffers(s: &Stmt) -> std::collections::HashSet<BufferId> {
    struct W(std::collections::HashSet<BufferId>);
    impl Visitor for W {
        fn visit_expr(&mut self, _: &Expr) {}
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { buffer, .. } = s {
                self.0.insert(buffer.id());
            }
            walk_stmt(self, s)
        }
    }
    let mut w = W(Default::default());
    w.visit_stmt(s);
    w.0
}

/// Calls `f` on every expression node of `e` (pre-order).
pub fn for_each_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    struct F<'a>(&'a mut dyn FnMut(&Expr));
    impl Visitor for F<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            (self.0)(e);
            walk_expr(self, e)
        }
    }
    F(f).visit_expr(e)
}

/// Calls `f` on each direct child of `e`, in the order `walk_expr` visits them.
pub fn for_each_child(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    struct C<'a>(&'a mut dyn FnMut(&Expr));
    impl Visitor for C<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            (self.0)(e)
        }
    }
    walk_expr(&mut C(f), e)
}

/// Whether `e` mentions `var`.
pub fn uses_var(e: &Expr, var: &Var) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| {
        if let Expr::Var(v) = x {
            found |= v == var;
        }
    });
    found
}

/// The conjuncts of `e`: `a && b` split recursively (whatever its nesting), any other
/// expression as itself, in left-to-right order.
pub fn conjuncts(e: Expr) -> Vec<Expr> {
    match e {
        Expr::And(a, b) => {
            let mut v = conjuncts(*a);
            v.extend(conjuncts(*b));
            v
        }
        e => vec![e],
    }
}

/// Every variable `e` mentions, in first-appearance order, without duplicates.
pub fn vars_of(e: &Expr) -> Vec<Var> {
    let mut out: Vec<Var> = Vec::new();
    for_each_expr(e, &mut |x| {
        if let Expr::Var(v) = x {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    });
    out
}

/// Whether `s` contains a barrier, or a warp reduction (which every thread must reach
/// too).
pub fn contains_barrier(s: &Stmt) -> bool {
    struct B(bool);
    impl Visitor for B {
        fn visit_stmt(&mut self, s: &Stmt) {
            if matches!(s, Stmt::Barrier | Stmt::WarpReduce { .. }) {
                self.0 = true;
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut b = B(false);
    b.visit_stmt(s);
    b.0
}

/// Whether `s` computes with vectors (an expression or a store of more than one lane).
pub fn has_vector_code(s: &Stmt) -> bool {
    struct V(bool);
    impl Visitor for V {
        fn visit_stmt(&mut self, s: &Stmt) {
            if !self.0 {
                walk_stmt(self, s)
            }
        }
        fn visit_expr(&mut self, e: &Expr) {
            self.0 |= e.dtype().lanes > 1;
            if !self.0 {
                walk_expr(self, e)
            }
        }
    }
    let mut v = V(false);
    v.visit_stmt(s);
    v.0
}

/// Whether evaluating `e` reads memory (a `Load`).
pub fn reads_memory(e: &Expr) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| found |= matches!(x, Expr::Load { .. }));
    found
}

/// Whether `e` contains a checked value (`Expr::Check`).
pub fn expr_has_check(e: &Expr) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| found |= matches!(x, Expr::Check { .. }));
    found
}

/// Whether `s` contains a checked value (`Expr::Check`).
pub fn contains_check(s: &Stmt) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 |= matches!(e, Expr::Check { .. });
            walk_expr(self, e)
        }
    }
    let mut f = Find(false);
    f.visit_stmt(s);
    f.0
}
