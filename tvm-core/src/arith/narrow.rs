//! 32-bit index arithmetic: whether every 64-bit integer value a kernel computes lies in
//! `i32`, so that a code generator may compute its indices in 32 bits. CUDA and OpenCL
//! narrow a kernel whose launch extents are constants and that has no 64-bit scalars
//! ([`index_fits_i32`](super::index_fits_i32)); WGSL, which has no 64-bit integers, proves
//! it for the kernel's scalars (the dims) up to a bound and checks that bound at launch
//! (`codegen::wgsl::narrow`).
//!
//! The proof: interval arithmetic over the ranges of the thread, loop and `let` variables
//! (one pass, bottom-up, exactly the operations the printed code performs, so no
//! intermediate value leaves `i32` on the way), with quotients also bounded symbolically
//! (`arith::sym`: a fused index decomposed by divisions keeps the range of its outer
//! part, not the whole range of the fused index).

use super::sym::Sym;
use crate::dtype::DType;
use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
use crate::tir::{BinOp, CheckKind, Expr, Kernel, Stmt, VarId};
use std::collections::HashMap;

/// An interval of integers, both ends included.
pub type Iv = (i128, i128);

const LO: i128 = i32::MIN as i128;
const HI: i128 = i32::MAX as i128;

/// What `a / 0` and `a % 0` are in the printed language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroDivisor {
    /// Undefined (C): a divisor whose range holds 0 gives no range.
    Undefined,
    /// WGSL's: `a / 0` is `a`, `a % 0` is `0`.
    Dividend,
}

/// Whether `d` is a 64-bit integer type (`i64`, `u64`).
pub fn wide(d: DType) -> bool {
    d.element().bits == 64 && d.is_integer()
}

/// The values of an integer type of at most 32 bits, `None` for other types.
pub fn type_range(d: DType) -> Option<Iv> {
    let d = d.element();
    match (d.is_integer(), d.is_uint(), d.bits) {
        (true, true, b) if b <= 32 => Some((0, (1i128 << b) - 1)),
        (true, false, b) if b <= 32 => Some((-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)),
        _ => None,
    }
}

/// Whether every 64-bit integer value of `k` lies in `i32` (and is not negative where
/// its type is unsigned) with the scalars in the ranges `scalars`, the launch extents
/// computed from them: see the module docs.
pub fn fits_i32(k: &Kernel, scalars: HashMap<VarId, Iv>, zero: ZeroDivisor) -> bool {
    // The scalars are their own symbolic bounds where they are not negative.
    let sym = scalars.iter().filter(|(_, r)| r.0 >= 0).map(|(&id, _)| (id, Sym::var(id))).collect();
    let mut c = Check { vars: scalars, sym, zero, ok: true };
    for (tag, v) in &k.thread_vars {
        let ext = if tag.is_block() { &k.grid[tag.dim()] } else { &k.block[tag.dim()] };
        match c.iv(ext) {
            Some((_, hi)) if hi <= HI + 1 => {
                c.vars.insert(v.id(), (0, (hi - 1).max(0)));
                if let Some(s) = c.sym(ext) {
                    c.sym.insert(v.id(), s.add_const(-1));
                }
            }
            _ => return false,
        }
    }
    if !c.ok {
        return false;
    }
    c.visit_stmt(&k.body);
    c.ok
}

struct Check {
    vars: HashMap<VarId, Iv>,
    /// Symbolic upper bounds of variables that are not negative ([`Check::sym`]).
    sym: HashMap<VarId, Sym>,
    zero: ZeroDivisor,
    ok: bool,
}

impl Check {
    /// A symbolic upper bound of integer expression `e` when `e >= 0` (see
    /// [`super::sym`]), `None` when there is none.
    fn sym(&mut self, e: &Expr) -> Option<Sym> {
        if !e.dtype().is_integer() || self.iv(e).is_none_or(|r| r.0 < 0) {
            return None;
        }
        match e {
            Expr::Int { value, .. } => Some(Sym::constant(*value as i128)),
            Expr::Var(v) => self.sym.get(&v.id()).cloned(),
            Expr::Binary { op, a, b } => match op {
                BinOp::Add => Some(self.sym(a)?.add(&self.sym(b)?)),
                // `a - b <= a` for `b >= 0`; a constant is subtracted exactly.
                BinOp::Sub => match b.as_int() {
                    Some(k) => Some(self.sym(a)?.add_const(-(k as i128))),
                    None if self.iv(b).is_some_and(|r| r.0 >= 0) => self.sym(a),
                    None => None,
                },
                BinOp::Mul => match (a.as_int(), b.as_int()) {
                    (Some(k), _) if k >= 0 => Some(self.sym(b)?.scale(k as i128)),
                    (_, Some(k)) if k >= 0 => Some(self.sym(a)?.scale(k as i128)),
                    _ => self.sym(a)?.mul(&self.sym(b)?),
                },
                BinOp::Div => self.sym_div(a, b),
                // `a % b` lies in `0..b` (`0` for `b = 0`) for `a >= 0`.
                BinOp::Mod => self.sym(b),
                BinOp::Min => {
                    let top = |c: &Check, s: &Sym| s.largest(&|v| c.vars.get(&v).map(|r| r.1)).unwrap_or(i128::MAX);
                    match (self.sym(a), self.sym(b)) {
                        (Some(x), Some(y)) => Some(if top(self, &x) <= top(self, &y) { x } else { y }),
                        (x, y) => x.or(y),
                    }
                }
                BinOp::Max => Some(self.sym(a)?.add(&self.sym(b)?)),
            },
            // An integer cast that does not wrap (`iv` gave a range) keeps the value.
            Expr::Cast { value, .. } if value.dtype().is_integer() => self.sym(value),
            Expr::Check { kind: CheckKind::Index { extent }, .. } => self.sym(extent),
            _ => None,
        }
    }

    /// A symbolic upper bound of `a / b` for `a >= 0` and `b >= 0`: `a / c` for a
    /// constant, [`Sym::div_exact`] for a divisor that is exactly a product of scalars,
    /// else `a` itself (a quotient is never above its dividend).
    fn sym_div(&mut self, a: &Expr, b: &Expr) -> Option<Sym> {
        if self.iv(b).is_none_or(|r| r.0 < 0) {
            return None;
        }
        let sa = self.sym(a)?;
        if let Some(c) = b.as_int().filter(|&c| c > 0) {
            return Some(sa.div_const(c as i128));
        }
        match self.exact(b) {
            Some(d) if d.is_monomial() => Some(sa.div_exact(&d).unwrap_or(sa)),
            _ => Some(sa),
        }
    }

    /// `e` exactly, when it is built from scalars that are not negative and positive
    /// constants by `+`, `*` and division by a positive constant.
    fn exact(&self, e: &Expr) -> Option<Sym> {
        match e {
            Expr::Int { value, .. } if *value > 0 => Some(Sym::constant(*value as i128)),
            Expr::Var(v) => match self.sym.get(&v.id()) {
                Some(s) if *s == Sym::var(v.id()) => Some(s.clone()),
                _ => None,
            },
            Expr::Binary { op: BinOp::Add, a, b } => Some(self.exact(a)?.add(&self.exact(b)?)),
            Expr::Binary { op: BinOp::Mul, a, b } => self.exact(a)?.mul(&self.exact(b)?),
            Expr::Binary { op: BinOp::Div, a, b } => match b.as_int() {
                Some(c) if c > 0 => Some(self.exact(a)?.div_const(c as i128)),
                _ => None,
            },
            Expr::Cast { value, dtype } if value.dtype().is_integer() && dtype.is_integer() => {
                let (from, to) = (value.dtype().element(), dtype.element());
                // A cast to a type at least as wide, of a value that is not negative.
                (to.bits >= from.bits).then(|| self.exact(value)).flatten()
            }
            _ => None,
        }
    }

    /// The range of integer expression `e` (`None`: unknown), every 64-bit
    /// sub-expression checked to stay in `i32`.
    fn iv(&mut self, e: &Expr) -> Option<Iv> {
        let d = e.dtype();
        let r = match e {
            Expr::Int { value, .. } => Some((*value as i128, *value as i128)),
            Expr::Var(v) => self.vars.get(&v.id()).copied(),
            Expr::Binary { op, a, b } => {
                let (x, y) = (self.iv(a), self.iv(b));
                match (x, y) {
                    (Some((a0, a1)), Some((b0, b1))) if d.is_integer() => match op {
                        BinOp::Add => Some((a0.saturating_add(b0), a1.saturating_add(b1))),
                        BinOp::Sub => Some((a0.saturating_sub(b1), a1.saturating_sub(b0))),
                        BinOp::Mul => {
                            let m = |x: i128, y: i128| x.saturating_mul(y);
                            let p = [m(a0, b0), m(a0, b1), m(a1, b0), m(a1, b1)];
                            Some((*p.iter().min().unwrap(), *p.iter().max().unwrap()))
                        }
                        // Truncating division and remainder by a positive divisor.
                        BinOp::Div if b0 > 0 => {
                            let p = [a0 / b0, a0 / b1, a1 / b0, a1 / b1];
                            Some((*p.iter().min().unwrap(), self.sym_quotient(a, b, a0, p.into_iter().max().unwrap())))
                        }
                        // A divisor that may be 0 (a dim): WGSL's `x / 0` is `x`, and a
                        // quotient is never further from 0 than its dividend.
                        BinOp::Div if b0 == 0 && self.zero == ZeroDivisor::Dividend => {
                            Some((a0.min(0), self.sym_quotient(a, b, a0, a1.max(0))))
                        }
                        // The remainder has the sign of the dividend and is smaller than the
                        // divisor in magnitude, whatever the divisor's sign (a mirrored
                        // index's period `2 * n - 2` may be negative where it is never
                        // used); 0 by 0 in WGSL, undefined in C.
                        BinOp::Mod if b0 > 0 || b1 < 0 || self.zero == ZeroDivisor::Dividend => {
                            let m = (b0.saturating_abs().max(b1.saturating_abs()) - 1).max(0);
                            Some((if a0 < 0 { -m } else { 0 }, if a1 > 0 { m } else { 0 }))
                        }
                        BinOp::Min => Some((a0.min(b0), a1.min(b1))),
                        BinOp::Max => Some((a0.max(b0), a1.max(b1))),
                        _ => None,
                    },
                    _ => None,
                }
            }
            Expr::Neg(a) => self.iv(a).map(|(lo, hi)| (hi.saturating_neg(), lo.saturating_neg())),
            Expr::Select { cond, then, otherwise } => {
                self.visit(cond);
                match (self.iv(then), self.iv(otherwise)) {
                    (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                    _ => None,
                }
            }
            Expr::Cast { value, dtype } => {
                let r = self.iv(value);
                let (from, to) = (value.dtype().element(), dtype.element());
                // The range of the target type: an integer value outside it wraps.
                let to_range = if wide(to) {
                    Some(if to.is_uint() { (0, u64::MAX as i128) } else { (i64::MIN as i128, i64::MAX as i128) })
                } else {
                    type_range(to)
                };
                let r = if from.is_bool() {
                    Some((0, 1))
                } else if from.is_integer() {
                    r.or_else(|| type_range(from))
                } else {
                    None
                };
                r.filter(|r| to_range.is_some_and(|t| r.0 >= t.0 && r.1 <= t.1))
            }
            Expr::Check { value, kind, .. } => {
                let r = self.iv(value);
                match kind {
                    // An index check gives a value in `0..extent`, or 0 when it fails; a
                    // failed divisor check gives 1.
                    CheckKind::Index { extent } => self.iv(extent).map(|(_, hi)| (0, hi.saturating_sub(1).max(0))),
                    CheckKind::Divisor => r.map(|(lo, hi)| (lo.min(1), hi.max(1))),
                }
            }
            Expr::Load { buffer, indices } => {
                for i in indices {
                    self.visit(i);
                }
                if wide(buffer.dtype()) {
                    self.ok = false;
                }
                type_range(buffer.dtype())
            }
            Expr::Ramp { base, stride, lanes } => match (self.iv(base), self.iv(stride)) {
                (Some(b), Some(s)) => {
                    let n = *lanes as i128 - 1;
                    // Every lane is printed as `base + stride * l`.
                    let step = (s.0.saturating_mul(n).min(0), s.1.saturating_mul(n).max(0));
                    let last = (b.0.saturating_add(step.0), b.1.saturating_add(step.1));
                    if wide(d) && (step.0 < LO || step.1 > HI) {
                        self.ok = false;
                    }
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
            let lo = if d.is_uint() { 0 } else { LO };
            match r {
                Some((a, b)) if a >= lo && b <= HI => {}
                _ => self.ok = false,
            }
        }
        r
    }

    fn visit(&mut self, e: &Expr) {
        self.iv(e);
    }

    /// The upper end `hi` of a quotient `a / b` (`b >= 0`), lowered to its symbolic bound's
    /// largest value where the dividend is not negative (`a0 >= 0`).
    fn sym_quotient(&mut self, a: &Expr, b: &Expr, a0: i128, hi: i128) -> i128 {
        if a0 < 0 || !a.dtype().is_integer() {
            return hi;
        }
        let top = self.sym_div(a, b).and_then(|s| {
            let vars = &self.vars;
            s.largest(&|v| vars.get(&v).filter(|r| r.0 >= 0).map(|r| r.1))
        });
        top.map_or(hi, |t| hi.min(t))
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
                    (Some(m), Some(e)) if m.1.saturating_add(e.1) <= HI && m.0.saturating_add(e.0) >= LO => {
                        self.vars.insert(var.id(), (m.0, m.1 + e.1.max(1) - 1));
                        if m.0 >= 0 {
                            if let (Some(sm), Some(se)) = (self.sym(min), self.sym(extent)) {
                                self.sym.insert(var.id(), sm.add(&se).add_const(-1));
                            }
                        }
                    }
                    _ if !wide(var.dtype()) => {}
                    _ => self.ok = false,
                }
                self.visit_stmt(body);
            }
            Stmt::Let { var, value, body } => {
                match self.iv(value) {
                    Some(r) => {
                        self.vars.insert(var.id(), r);
                        if let Some(s) = self.sym(value) {
                            self.sym.insert(var.id(), s);
                        }
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
