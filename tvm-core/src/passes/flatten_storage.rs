//! Flattens multi-dimensional storage: every `Realize` becomes a flat `Allocate` of the
//! product of its extents, and every load and store gets one row-major index relative
//! to the realized region's origin (parameters: to the tensor's origin). Afterwards the
//! function is in the `Flattened` phase.

use crate::tir::mutate::{super_expr, super_stmt, Mutator};
use crate::tir::{Buffer, Expr, Param, PrimFunc, Stmt};
use std::collections::HashMap;

/// Flattens the storage of `f`.
pub fn flatten_storage(mut f: PrimFunc) -> PrimFunc {
    let mut m = Flatten { layout: HashMap::new() };
    for p in &f.params {
        if let Param::Tensor { buffer, shape, .. } = p {
            m.layout.insert(buffer.clone(), (vec![Expr::int(0); shape.len()], shape.clone()));
        }
    }
    f.body = m.mutate_stmt(f.body);
    f
}

struct Flatten {
    /// Origin and extents of each buffer's region.
    layout: HashMap<Buffer, (Vec<Expr>, Vec<Expr>)>,
}

impl Flatten {
    fn flat_index(&self, buffer: &Buffer, indices: Vec<Expr>) -> Vec<Expr> {
        if indices.len() <= 1 && !self.layout.contains_key(buffer) {
            return indices;
        }
        let (mins, extents) = self
            .layout
            .get(buffer)
            .unwrap_or_else(|| panic!("internal: flatten_storage: `{}` has no layout", buffer.name()));
        let mut index: Option<Expr> = None;
        for ((i, m), e) in indices.into_iter().zip(mins).zip(extents) {
            let rel = if m.is_const_int(0) { i } else { i - m.clone() };
            index = Some(match index {
                None => rel,
                Some(acc) => acc * e.clone() + rel,
            });
        }
        vec![index.unwrap_or_else(|| Expr::int(0))]
    }
}

impl Mutator for Flatten {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match super_expr(self, e) {
            Expr::Load { buffer, indices } => {
                let indices = self.flat_index(&buffer, indices);
                Expr::Load { buffer, indices }
            }
            e => e,
        }
    }

    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Realize { buffer, bounds, body } => {
                let mins: Vec<Expr> = bounds.iter().map(|r| r.min.clone()).collect();
                let extents: Vec<Expr> = bounds.iter().map(|r| r.extent.clone()).collect();
                let size = extents.iter().cloned().reduce(|a, b| a * b).unwrap_or_else(|| Expr::int(1));
                self.layout.insert(buffer.clone(), (mins, extents));
                let body = self.mutate_stmt(*body);
                Stmt::Allocate { buffer, extent: size, body: Box::new(body) }
            }
            s => match super_stmt(self, s) {
                Stmt::Store { buffer, indices, value } => {
                    let indices = self.flat_index(&buffer, indices);
                    Stmt::Store { buffer, indices, value }
                }
                Stmt::Prefetch { buffer, indices } => {
                    let indices = self.flat_index(&buffer, indices);
                    Stmt::Prefetch { buffer, indices }
                }
                s => s,
            },
        }
    }
}
