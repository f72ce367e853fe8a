//! Moves every shared-memory allocation of a kernel to the top of the kernel body, as
//! the CUDA and OpenCL dialects declare them. Afterwards a kernel body is a nest of
//! shared `Allocate`s around statements with no shared `Allocate` inside, so barrier
//! insertion sees one flat sequence of shared-memory accesses.
//!
//! An allocation whose size depends on a loop or `let` variable of the kernel cannot move
//! above that variable's definition: it stays where it is, and `verify_gpu_memory` then
//! reports its size as not constant (a schedule error).

use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::visit::vars_of;
use crate::tir::{Buffer, Expr, PrimFunc, Scope, Stmt, Var};

/// Hoists the shared allocations of every kernel of `f`.
pub fn hoist_shared_allocations(mut f: PrimFunc) -> PrimFunc {
    for k in &mut f.kernels {
        let mut h = Hoist { found: Vec::new(), bound: Vec::new() };
        let mut body = h.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
        for (buffer, extent) in h.found.into_iter().rev() {
            body = Stmt::Allocate { buffer, extent, body: Box::new(body) };
        }
        k.body = body;
    }
    f
}

struct Hoist {
    found: Vec<(Buffer, Expr)>,
    /// The loop and `let` variables around the current statement.
    bound: Vec<Var>,
}

impl Mutator for Hoist {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::For { .. } | Stmt::Let { .. } => {
                let var = match &s {
                    Stmt::For { var, .. } | Stmt::Let { var, .. } => var.clone(),
                    _ => unreachable!("matched above"),
                };
                self.bound.push(var);
                let s = super_stmt(self, s);
                self.bound.pop();
                s
            }
            Stmt::Allocate { buffer, extent, body }
                if buffer.scope() == Scope::Shared && !vars_of(&extent).iter().any(|v| self.bound.contains(v)) =>
            {
                // An unrolled loop allocates the same buffer once per copy: keep one.
                match self.found.iter_mut().find(|(b, _)| *b == buffer) {
                    Some((_, e)) if *e != extent => *e = Expr::max(e.clone(), extent),
                    Some(_) => {}
                    None => self.found.push((buffer, extent)),
                }
                self.mutate_stmt(*body)
            }
            s => super_stmt(self, s),
        }
    }
}
