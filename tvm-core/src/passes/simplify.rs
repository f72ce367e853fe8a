//! Simplifies every expression and statement of a function without changing what it
//! computes: index arithmetic in canonical form, constants folded, conditions that the
//! loop ranges prove true or false removed with their dead branch, loops without
//! iterations removed and single-iteration serial loops replaced by their body.
//! Symbolic dims of tensor parameters are taken to be non-negative; kernel index
//! variables range over their launch extents.

use crate::arith::Analyzer;
use crate::tir::{Expr, Param, PrimFunc};

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
