//! Replicates the body of every `unroll` loop whose extent is a constant (up to
//! [`MAX_UNROLL`] iterations), substituting the iteration number for the loop variable.
//! Afterwards no `Unrolled` loop with a constant extent of at most `MAX_UNROLL` remains.
//!
//! On the CPU it also unrolls a *register-tile loop*: an innermost serial loop of at most
//! [`MAX_TILE_ROWS`] iterations whose body writes vector rows of a local buffer at an
//! index of the loop variable, the rows together at most [`MAX_TILE_BYTES`] (half the
//! AVX-512 register file). `opt_gemm`'s `for mc: c_local[mc] += a * bp` is one: rolled,
//! the rows live in memory and every update loads and stores one (what `objdump` showed
//! of the 16-lane schedule); unrolled, every index is a constant and LLVM keeps the
//! whole tile in registers. LLVM's own unroller does this for TVM's vector IR, but not
//! for our lane-array loops, which carry a volatile read to keep its loop vectorizer
//! out (`cpu::lane_loop`). `cargo bench --bench peers -- sgemm_bn16` measures that
//! schedule.

use crate::schedule::MAX_UNROLL;
use crate::tir::mutate::{substitute_stmt, super_stmt, Mutator};
use crate::tir::visit::{uses_var, walk_stmt, Visitor};
use crate::tir::{Expr, ForKind, PrimFunc, Scope, Stmt, Var};
use std::collections::HashMap;

/// The most iterations of a register-tile loop unrolled without being asked.
pub const MAX_TILE_ROWS: i64 = 16;

/// The most bytes of tile rows a register-tile loop may write to be unrolled unasked.
pub const MAX_TILE_BYTES: i64 = 1024;

/// Unrolls the `unroll` loops of `f`.
pub fn unroll_loops(mut f: PrimFunc) -> PrimFunc {
    let mut u = Unroll { tiles: f.target.is_cpu() };
    f.body = u.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = u.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

struct Unroll {
    /// Also unroll register-tile loops (CPU targets).
    tiles: bool,
}

/// Whether `for var in 0..extent { body }` (serial) is a register-tile loop (module docs).
fn is_register_tile_loop(var: &Var, extent: i64, body: &Stmt) -> bool {
    #[derive(Default)]
    struct S {
        inner_loop: bool,
        rows: Vec<(crate::tir::BufferId, Expr)>,
        row_bytes: i64,
        var_rows: bool,
    }
    struct V<'a>(&'a Var, S);
    impl Visitor for V<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { .. } | Stmt::ThreadBinding { .. } => self.1.inner_loop = true,
                Stmt::Store { buffer, indices, .. } if buffer.scope() == Scope::Local => {
                    if let [i] = indices.as_slice() {
                        let lanes = i.dtype().lanes as i64;
                        let key = (buffer.id(), i.clone());
                        if lanes > 1 && uses_var(i, self.0) {
                            self.1.var_rows = true;
                        }
                        if !self.1.rows.contains(&key) {
                            self.1.row_bytes += lanes * buffer.dtype().bytes() as i64;
                            self.1.rows.push(key);
                        }
                    }
                }
                _ => {}
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    if !(2..=MAX_TILE_ROWS).contains(&extent) {
        return false;
    }
    let mut v = V(var, S::default());
    v.visit_stmt(body);
    !v.1.inner_loop && v.1.var_rows && v.1.row_bytes.saturating_mul(extent) <= MAX_TILE_BYTES
}

/// `body` once per value of `var` in `[min, min + extent)` (`extent` a constant).
fn unrolled(var: &Var, min: &Expr, extent: &Expr, body: &Stmt) -> Stmt {
    let n = extent.as_int().expect("unrolled loops have a constant extent");
    Stmt::seq(
        (0..n)
            .map(|k| {
                let mut m = HashMap::new();
                m.insert(var.clone(), min.clone() + Expr::int(k));
                substitute_stmt(body.clone(), &m)
            })
            .collect(),
    )
}

impl Unroll {
    /// Whether the loop is unrolled: asked for (`unroll`, up to `MAX_UNROLL`), or a
    /// register-tile loop on the CPU.
    fn unrolls(&self, var: &Var, extent: &Expr, kind: ForKind, body: &Stmt) -> bool {
        let Some(n) = extent.as_int() else { return false };
        match kind {
            ForKind::Unrolled => n <= MAX_UNROLL,
            ForKind::Serial => self.tiles && is_register_tile_loop(var, n, body),
            _ => false,
        }
    }
}

impl Mutator for Unroll {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind, body } if self.unrolls(&var, &extent, kind, &body) => {
                unrolled(&var, &min, &extent, &body)
            }
            s => s,
        }
    }
}
