//! Replicates the body of every `unroll` loop whose extent is a constant (up to
//! [`MAX_UNROLL`] iterations), substituting the iteration number for the loop variable.
//! Afterwards no `Unrolled` loop with a constant extent of at most `MAX_UNROLL` remains.

use crate::tir::mutate::{substitute_stmt, super_stmt, Mutator};
use crate::tir::{Expr, ForKind, PrimFunc, Stmt};
use std::collections::HashMap;

/// Loops longer than this stay loops (annotated for the backend) instead of growing
/// the code without bound.
pub const MAX_UNROLL: i64 = 256;

/// Unrolls the `unroll` loops of `f`.
pub fn unroll_loops(mut f: PrimFunc) -> PrimFunc {
    f.body = Unroll.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = Unroll.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

struct Unroll;

impl Mutator for Unroll {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Unrolled, body }
                if extent.as_int().is_some_and(|e| e <= MAX_UNROLL) =>
            {
                let n = extent.as_int().expect("checked");
                let copies = (0..n)
                    .map(|k| {
                        let mut m = HashMap::new();
                        m.insert(var.clone(), min.clone() + Expr::int(k));
                        substitute_stmt((*body).clone(), &m)
                    })
                    .collect();
                Stmt::seq(copies)
            }
            s => s,
        }
    }
}
