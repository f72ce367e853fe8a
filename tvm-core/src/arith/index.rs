//! Facts about integer index expressions that code generators rely on: a divisor every
//! value of an index has (the alignment proof of vector accesses), whether a kernel's
//! 64-bit index arithmetic provably fits in 32 bits, and whether a divisor may be -1
//! (where `MIN / -1` would overflow).

use crate::dtype::DType;
use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
use crate::tir::{BinOp, Expr, Kernel, Stmt, VarId};
use std::collections::HashMap;

/// A positive integer that provably divides every value of the integer expression `e`
/// (1 when nothing better is known): constants, sums, differences and products, and
/// `let`-bound variables whose divisor is in `lets`. The alignment proof of vector
/// accesses (TVM's `ModularSet`, without residues).
pub fn known_divisor(e: &Expr, lets: &HashMap<VarId, i64>) -> i64 {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a.abs()
        } else {
            gcd(b, a % b)
        }
    }
    let d = match e {
        Expr::Int { value, .. } => value.checked_abs().unwrap_or(0),
        Expr::Var(v) => lets.get(&v.id()).copied().unwrap_or(1),
        Expr::Binary { op: BinOp::Add | BinOp::Sub, a, b } => gcd(known_divisor(a, lets), known_divisor(b, lets)),
        Expr::Binary { op: BinOp::Mul, a, b } => {
            known_divisor(a, lets).checked_mul(known_divisor(b, lets)).unwrap_or(1)
        }
        Expr::Neg(a) => known_divisor(a, lets),
        Expr::Cast { value, dtype }
            if dtype.is_integer() && value.dtype().is_integer() && dtype.bits >= value.dtype().bits =>
        {
            known_divisor(value, lets)
        }
        _ => 1,
    };
    // 0 divides only 0: every value is then a multiple of anything; keep it finite.
    if d == 0 {
        1 << 30
    } else {
        d
    }
}

/// Whether every index value of kernel `k` provably fits in a 32-bit `int`, so that its
/// `i64` arithmetic may be printed as `int`: the kernel holds no 64-bit integer data
/// (buffers, scalars, loads), every launch extent is a constant, and every `i64` value
/// the printed code computes, intermediate ones included, lies inside `i32` by interval
/// arithmetic over the ranges of the thread, loop and `let` variables (one pass,
/// bottom-up, exactly the operations C performs, so nothing overflows on the way).
pub fn index_fits_i32(k: &Kernel) -> bool {
    type Iv = (i128, i128);
    fn wide(d: DType) -> bool {
        d.element().bits == 64 && d.is_integer()
    }
    const LO: i128 = i32::MIN as i128;
    const HI: i128 = i32::MAX as i128;
    struct Check {
        vars: HashMap<VarId, Iv>,
        ok: bool,
    }
    impl Check {
        /// The range of integer expression `e` (`None`: unknown), every `i64`
        /// sub-expression checked to stay in `i32`.
        fn iv(&mut self, e: &Expr) -> Option<Iv> {
            let d = e.dtype();
            let r = match e {
                Expr::Int { value, .. } => Some((*value as i128, *value as i128)),
                Expr::Var(v) => self.vars.get(&v.id()).copied(),
                Expr::Binary { op, a, b } => {
                    let (x, y) = (self.iv(a), self.iv(b));
                    match (x, y) {
                        (Some((a0, a1)), Some((b0, b1))) => match op {
                            BinOp::Add => Some((a0 + b0, a1 + b1)),
                            BinOp::Sub => Some((a0 - b1, a1 - b0)),
                            BinOp::Mul => {
                                let m = |x: i128, y: i128| x.saturating_mul(y);
                                let p = [m(a0, b0), m(a0, b1), m(a1, b0), m(a1, b1)];
                                Some((*p.iter().min().unwrap(), *p.iter().max().unwrap()))
                            }
                            // Truncating division and remainder by a positive divisor.
                            BinOp::Div if b0 > 0 => {
                                let p = [a0 / b0, a0 / b1, a1 / b0, a1 / b1];
                                Some((*p.iter().min().unwrap(), *p.iter().max().unwrap()))
                            }
                            BinOp::Mod if b0 > 0 => {
                                Some((if a0 < 0 { -(b1 - 1) } else { 0 }, if a1 > 0 { b1 - 1 } else { 0 }))
                            }
                            BinOp::Min => Some((a0.min(b0), a1.min(b1))),
                            BinOp::Max => Some((a0.max(b0), a1.max(b1))),
                            _ => None,
                        },
                        _ => None,
                    }
                }
                Expr::Neg(a) => self.iv(a).map(|(lo, hi)| (-hi, -lo)),
                Expr::Select { cond, then, otherwise } => {
                    self.visit(cond);
                    match (self.iv(then), self.iv(otherwise)) {
                        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                        _ => None,
                    }
                }
                Expr::Cast { value, dtype } => {
                    let r = self.iv(value);
                    let from = value.dtype();
                    // The range of the target type: a value outside it wraps.
                    let to = dtype.element();
                    let to_range = match (to.is_integer(), to.is_uint()) {
                        (true, true) => Some((0i128, (1i128 << to.bits) - 1)),
                        (true, false) => Some((-(1i128 << (to.bits - 1)), (1i128 << (to.bits - 1)) - 1)),
                        _ => None,
                    };
                    let fits = |r: Iv| to_range.is_some_and(|t| r.0 >= t.0 && r.1 <= t.1);
                    match (r, from.is_integer()) {
                        (Some(r), true) if fits(r) => Some(r),
                        (Some(_), true) => None,
                        _ if from.is_integer() && from.bits <= 32 => Some(if from.is_uint() {
                            (0, (1i128 << from.bits) - 1)
                        } else {
                            (-(1i128 << (from.bits - 1)), (1i128 << (from.bits - 1)) - 1)
                        }),
                        _ => None,
                    }
                }
                Expr::Load { buffer, indices } => {
                    for i in indices {
                        self.visit(i);
                    }
                    if wide(buffer.dtype()) {
                        self.ok = false;
                    }
                    None
                }
                Expr::Ramp { base, stride, lanes } => match (self.iv(base), self.iv(stride)) {
                    (Some(b), Some(s)) => {
                        let last = (b.0 + s.0.min(0) * (*lanes as i128 - 1), b.1 + s.1.max(0) * (*lanes as i128 - 1));
                        Some(last)
                    }
                    _ => None,
                },
                Expr::Broadcast { value, .. } => self.iv(value),
                other => {
                    walk_expr(self, other);
                    None
                }
            };
            if wide(d) {
                match r {
                    Some((lo, hi)) if lo >= LO && hi <= HI => {}
                    _ => self.ok = false,
                }
            }
            r
        }
        fn visit(&mut self, e: &Expr) {
            self.iv(e);
        }
    }
    impl Visitor for Check {
        fn visit_expr(&mut self, e: &Expr) {
            if self.ok {
                self.iv(e);
            }
        }
        fn visit_stmt(&mut self, s: &Stmt) {
            if !self.ok {
                return;
            }
            match s {
                Stmt::For { var, min, extent, body, .. } => {
                    match (self.iv(min), self.iv(extent)) {
                        // The printed bound `min + extent` must fit too.
                        (Some(m), Some(e)) if m.1 + e.1 <= HI && m.0 + e.0 >= LO => {
                            self.vars.insert(var.id(), (m.0, m.1 + e.1.max(1) - 1));
                        }
                        _ => self.ok = false,
                    }
                    self.visit_stmt(body);
                }
                Stmt::Let { var, value, body } => {
                    match self.iv(value) {
                        Some(r) => {
                            self.vars.insert(var.id(), r);
                        }
                        None if wide(var.dtype()) => self.ok = false,
                        None => {}
                    }
                    self.visit_stmt(body);
                }
                Stmt::Allocate { buffer, .. } | Stmt::Store { buffer, .. } if wide(buffer.dtype()) => self.ok = false,
                s => walk_stmt(self, s),
            }
        }
    }
    if k.buffer_args.iter().any(|b| wide(b.dtype())) || k.scalar_args.iter().any(|v| wide(v.dtype())) {
        return false;
    }
    let mut c = Check { vars: HashMap::new(), ok: true };
    for (tag, v) in &k.thread_vars {
        let ext = if tag.is_block() { &k.grid[tag.dim() as usize] } else { &k.block[tag.dim() as usize] };
        match ext.as_int() {
            Some(n) if n >= 1 && n <= i32::MAX as i64 => {
                c.vars.insert(v.id(), (0, n as i128 - 1));
            }
            _ => return false,
        }
    }
    c.visit_stmt(&k.body);
    c.ok
}

/// Whether `b`, the divisor of a `/` or `%` of type `d`, may be -1 with the dividend the
/// type's minimum: `d` is a signed integer and `b` not a constant other than -1.
pub fn may_be_minus_one(d: DType, b: &Expr) -> bool {
    let constant = match b {
        Expr::Broadcast { value, .. } => value.as_int(),
        b => b.as_int(),
    };
    d.is_int() && constant.is_none_or(|c| c == -1)
}
