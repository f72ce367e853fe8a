//! Inserts a barrier wherever a thread may read (or overwrite) shared memory that
//! another thread wrote (or read) since the last barrier: between statements of a
//! sequence, and at the end of a loop body whose next iteration would overwrite what
//! this one read. Barriers go only where control flow is uniform across the block
//! (never under a condition or loop bound that depends on a thread index), so every
//! thread reaches every barrier.

use crate::tir::visit::{contains_barrier, uses_var, walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, PrimFunc, Scope, Stmt, Var};

/// Inserts the barriers of every kernel of `f`.
pub fn inject_thread_sync(mut f: PrimFunc) -> PrimFunc {
    for k in &mut f.kernels {
        let thread_vars: Vec<Var> =
            k.thread_vars.iter().filter(|(t, _)| !t.is_block()).map(|(_, v)| v.clone()).collect();
        let cx = Cx { thread_vars };
        k.body = cx.stmt(std::mem::replace(&mut k.body, Stmt::NoOp), true);
    }
    f
}

struct Cx {
    thread_vars: Vec<Var>,
}

#[derive(Default)]
struct Access {
    reads: Vec<Buffer>,
    writes: Vec<Buffer>,
}

impl Access {
    fn of(s: &Stmt) -> Access {
        let mut a = Access::default();
        a.visit_stmt(s);
        a
    }
    fn conflicts(&self, later: &Access) -> bool {
        // Write-after-write by different threads only happens for redundant copies of
        // the same value, so only read-after-write and write-after-read need a barrier.
        later.reads.iter().any(|b| self.writes.contains(b)) || later.writes.iter().any(|b| self.reads.contains(b))
    }
    fn merge(&mut self, o: Access) {
        self.reads.extend(o.reads);
        self.writes.extend(o.writes);
    }
    fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty()
    }
}

impl Visitor for Access {
    fn visit_expr(&mut self, e: &Expr) {
        if let Expr::Load { buffer, .. } = e {
            if buffer.scope() == Scope::Shared {
                self.reads.push(buffer.clone());
            }
        }
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Store { buffer, .. } = s {
            if buffer.scope() == Scope::Shared {
                self.writes.push(buffer.clone());
            }
        }
        walk_stmt(self, s)
    }
}

impl Cx {
    fn depends_on_thread(&self, e: &Expr) -> bool {
        self.thread_vars.iter().any(|v| uses_var(e, v))
    }

    fn stmt(&self, s: Stmt, uniform: bool) -> Stmt {
        match s {
            Stmt::Seq(ss) if uniform => {
                let mut out = Vec::new();
                let mut pending = Access::default();
                for child in ss {
                    let child = self.stmt(child, uniform);
                    if matches!(child, Stmt::Barrier) {
                        pending = Access::default();
                        out.push(child);
                        continue;
                    }
                    let acc = Access::of(&child);
                    if pending.conflicts(&acc) {
                        out.push(Stmt::Barrier);
                        pending = Access::default();
                    }
                    if contains_barrier(&child) {
                        pending = Access::default();
                    }
                    pending.merge(acc);
                    out.push(child);
                }
                Stmt::seq(out)
            }
            Stmt::Seq(ss) => Stmt::seq(ss.into_iter().map(|c| self.stmt(c, false)).collect()),
            Stmt::For { var, min, extent, kind, body } => {
                let u = uniform && !self.depends_on_thread(&min) && !self.depends_on_thread(&extent);
                let mut body = self.stmt(*body, u);
                if u {
                    let acc = Access::of(&body);
                    let ends_with_barrier = matches!(&body, Stmt::Barrier)
                        || matches!(&body, Stmt::Seq(v) if matches!(v.last(), Some(Stmt::Barrier)));
                    if !acc.is_empty() && !ends_with_barrier && acc.conflicts(&acc) {
                        body = Stmt::seq(vec![body, Stmt::Barrier]);
                    }
                }
                Stmt::For { var, min, extent, kind, body: Box::new(body) }
            }
            Stmt::If { cond, then, otherwise } => {
                let u = uniform && !self.depends_on_thread(&cond);
                Stmt::If {
                    then: Box::new(self.stmt(*then, u)),
                    otherwise: otherwise.map(|o| Box::new(self.stmt(*o, u))),
                    cond,
                }
            }
            Stmt::Let { var, value, body } => {
                let u = uniform && !self.depends_on_thread(&value);
                Stmt::Let { var, value, body: Box::new(self.stmt(*body, u)) }
            }
            Stmt::Allocate { buffer, extent, body } => {
                Stmt::Allocate { buffer, extent, body: Box::new(self.stmt(*body, uniform)) }
            }
            s => s,
        }
    }
}
