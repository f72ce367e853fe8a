//! Simplifies every expression and statement of a function without changing what it
//! computes: index arithmetic in canonical form, constants folded, conditions that the
//! loop ranges prove true or false removed with their dead branch, loops without
//! iterations removed and single-iteration serial loops replaced by their body.
//! Symbolic dims of tensor parameters are taken to be non-negative; kernel index
//! variables range over their launch extents.

use crate::arith::Analyzer;
use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, Param, PrimFunc, Stmt};
use std::collections::HashSet;

pub fn simplify(mut f: PrimFunc) -> PrimFunc {
    let mut an = Analyzer::new();
    for p in &f.params {
        if let Param::Tensor { shape, .. } = p {
            for d in shape {
                if let Expr::Var(v) = d {
                    if v.dtype().is_integer() {
                        an.assume_nonneg(v);
                    }
                }
            }
        }
    }
    an.set_readonly(readonly(&f));
    let body = std::mem::replace(&mut f.body, crate::tir::Stmt::NoOp);
    f.body = an.simplify_stmt(body);
    for k in &mut f.kernels {
        for e in k.grid.iter_mut().chain(k.block.iter_mut()) {
            *e = an.simplify(e);
        }
        let mut kan = an.clone();
        for (tag, var) in &k.thread_vars {
            let extent = if tag.is_block() { &k.grid[tag.dim()] } else { &k.block[tag.dim()] };
            if extent.dtype().is_integer() && var.dtype() == extent.dtype() {
                kan.bind(var, Expr::typed_int(0, extent.dtype()), extent.clone());
            }
        }
        let body = std::mem::replace(&mut k.body, crate::tir::Stmt::NoOp);
        k.body = kan.simplify_stmt(body);
    }
    f
}

/// The buffers `f` reads and never writes, its kernels included.
fn readonly(f: &PrimFunc) -> HashSet<Buffer> {
    #[derive(Default)]
    struct Scan {
        read: HashSet<Buffer>,
        written: HashSet<Buffer>,
    }
    impl Visitor for Scan {
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Load { buffer, .. } = e {
                self.read.insert(buffer.clone());
            }
            walk_expr(self, e)
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { buffer, .. } | Stmt::WarpReduce { buffer, .. } = s {
                self.written.insert(buffer.clone());
            }
            walk_stmt(self, s)
        }
    }
    let mut scan = Scan::default();
    scan.visit_stmt(&f.body);
    for k in &f.kernels {
        scan.visit_stmt(&k.body);
    }
    scan.read.difference(&scan.written).cloned().collect()
}
