//! Turns every `vectorize` loop with a constant extent into vector operations: the loop
//! variable becomes `ramp(min, 1, lanes)`, loads and stores at contiguous or strided
//! indices become vector loads and stores, loop-invariant values are broadcast. A loop
//! whose body cannot be vectorized exactly (inner loops, guards that depend on the loop
//! variable, gathers, guarded reads) stays a serial loop, so results never change.

use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::visit::{for_each_expr, uses_var};
use crate::tir::{BinOp, Expr, ForKind, PrimFunc, Stmt, Var};

/// The largest vector the pass creates; longer loops stay serial.
pub const MAX_LANES: i64 = 64;

/// Vectorizes the `vectorize` loops of `f`.
pub fn vectorize_loops(mut f: PrimFunc) -> PrimFunc {
    f.body = Vectorize.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = Vectorize.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

struct Vectorize;

impl Mutator for Vectorize {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Vectorized, body } => {
                let lanes = extent.as_int().filter(|&l| (2..=MAX_LANES).contains(&l));
                let cx = lanes.map(|l| Cx { var: var.clone(), min: min.clone(), lanes: l as u16 });
                match cx.and_then(|cx| cx.stmt(&body)) {
                    Some(v) => v,
                    None => Stmt::For { var, min, extent, kind: ForKind::Serial, body },
                }
            }
            s => s,
        }
    }
}

struct Cx {
    var: Var,
    min: Expr,
    lanes: u16,
}

fn lanes_of(e: &Expr) -> u16 {
    e.dtype().lanes
}

impl Cx {
    fn stmt(&self, s: &Stmt) -> Option<Stmt> {
        match s {
            Stmt::Store { buffer, indices, value } => {
                let [index] = indices.as_slice() else { return None };
                let index = self.expr(index)?;
                if !matches!(index, Expr::Ramp { .. }) {
                    return None;
                }
                let value = self.broadcast(self.expr(value)?);
                Some(Stmt::Store { buffer: buffer.clone(), indices: vec![index], value })
            }
            Stmt::Seq(ss) => Some(Stmt::Seq(ss.iter().map(|s| self.stmt(s)).collect::<Option<Vec<_>>>()?)),
            Stmt::If { cond, then, otherwise } if !uses_var(cond, &self.var) => Some(Stmt::If {
                cond: cond.clone(),
                then: Box::new(self.stmt(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                },
            }),
            Stmt::NoOp => Some(Stmt::NoOp),
            _ => None,
        }
    }

    fn broadcast(&self, e: Expr) -> Expr {
        if lanes_of(&e) == 1 {
            Expr::Broadcast { value: Box::new(e), lanes: self.lanes }
        } else {
            e
        }
    }

    /// The vector form of `e`; scalar when `e` does not depend on the loop variable.
    fn expr(&self, e: &Expr) -> Option<Expr> {
        if !uses_var(e, &self.var) {
            return Some(e.clone());
        }
        let l = self.lanes;
        Some(match e {
            Expr::Var(_) => Expr::Ramp { base: Box::new(self.min.clone()), stride: Box::new(Expr::int(1)), lanes: l },
            Expr::Binary { op, a, b } => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match (op, &a, &b) {
                    (BinOp::Add | BinOp::Sub, Expr::Ramp { base, stride, .. }, s) if lanes_of(s) == 1 => Expr::Ramp {
                        base: Box::new(Expr::binary(*op, (**base).clone(), s.clone())),
                        stride: stride.clone(),
                        lanes: l,
                    },
                    (BinOp::Add, s, Expr::Ramp { base, stride, .. }) if lanes_of(s) == 1 => {
                        Expr::Ramp { base: Box::new(s.clone() + (**base).clone()), stride: stride.clone(), lanes: l }
                    }
                    (
                        BinOp::Add | BinOp::Sub,
                        Expr::Ramp { base: b1, stride: s1, .. },
                        Expr::Ramp { base: b2, stride: s2, .. },
                    ) => Expr::Ramp {
                        base: Box::new(Expr::binary(*op, (**b1).clone(), (**b2).clone())),
                        stride: Box::new(Expr::binary(*op, (**s1).clone(), (**s2).clone())),
                        lanes: l,
                    },
                    (BinOp::Mul, Expr::Ramp { base, stride, .. }, s)
                    | (BinOp::Mul, s, Expr::Ramp { base, stride, .. })
                        if lanes_of(s) == 1 =>
                    {
                        Expr::Ramp {
                            base: Box::new((**base).clone() * s.clone()),
                            stride: Box::new((**stride).clone() * s.clone()),
                            lanes: l,
                        }
                    }
                    _ => Expr::binary(*op, self.broadcast(a), self.broadcast(b)),
                }
            }
            Expr::Cmp { op, a, b } => Expr::cmp(*op, self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::And(a, b) => Expr::and(self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::Or(a, b) => Expr::or(self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::Not(a) => Expr::not(self.expr(a)?),
            Expr::Neg(a) => Expr::Neg(Box::new(self.expr(a)?)),
            Expr::Select { cond, then, otherwise } => {
                // Only the taken side may be evaluated: a lane-wise select evaluates both,
                // which is exact only when neither side reads memory.
                if uses_var(cond, &self.var) && (has_load(then) || has_load(otherwise)) {
                    return None;
                }
                let c = self.expr(cond)?;
                let (t, o) = (self.broadcast(self.expr(then)?), self.broadcast(self.expr(otherwise)?));
                Expr::select(c, t, o)
            }
            Expr::Cast { dtype, value } => Expr::cast(*dtype, self.expr(value)?),
            Expr::Call { func, args } => Expr::Call {
                func: *func,
                args: args.iter().map(|a| self.expr(a).map(|a| self.broadcast(a))).collect::<Option<_>>()?,
            },
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else { return None };
                let index = self.expr(index)?;
                if !matches!(index, Expr::Ramp { .. }) {
                    return None;
                }
                Expr::Load { buffer: buffer.clone(), indices: vec![index] }
            }
            _ => return None,
        })
    }
}

fn has_load(e: &Expr) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| found |= matches!(x, Expr::Load { .. }));
    found
}
