//! Constant interval analysis of integer expressions.
//!
//! Ends are `i128` with two sentinels for unbounded ends. `i64` arithmetic is assumed
//! not to overflow (index arithmetic), so an `i64` end outside the type's range only
//! means "unbounded". Narrower types and unsigned types are analysed exactly: a node
//! whose interval leaves the type's range may have wrapped, and gets the whole range.

use super::fold::{int_range, int_value};
use super::VarInfo;
use crate::dtype::{DType, ScalarKind};
use crate::tir::{BinOp, CheckKind, Expr, Var};
use std::collections::HashMap;

pub(crate) const NEG_INF: i128 = -(1i128 << 100);
pub(crate) const POS_INF: i128 = 1i128 << 100;

/// How deep the bounds of a variable's bounds are followed.
const VAR_DEPTH: u32 = 6;

/// An inclusive interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Iv {
    pub lo: i128,
    pub hi: i128,
}

impl Iv {
    pub const FULL: Iv = Iv { lo: NEG_INF, hi: POS_INF };
    pub fn point(v: i128) -> Iv {
        Iv { lo: v, hi: v }
    }
    /// Both ends as `i64`, when finite and representable.
    pub fn as_i64(&self) -> Option<(i64, i64)> {
        let ok = |v: i128| v > NEG_INF && v < POS_INF && v >= i64::MIN as i128 && v <= i64::MAX as i128;
        (ok(self.lo) && ok(self.hi)).then_some((self.lo as i64, self.hi as i64))
    }
    /// The single value, if the interval is one point.
    pub fn as_point(&self) -> Option<i64> {
        match self.as_i64() {
            Some((a, b)) if a == b => Some(a),
            _ => None,
        }
    }
    pub fn union(self, o: Iv) -> Iv {
        Iv { lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
    }
}

fn is_inf(a: i128) -> bool {
    a <= NEG_INF || a >= POS_INF
}
fn clamp_inf(v: i128) -> i128 {
    v.clamp(NEG_INF, POS_INF)
}
pub(crate) fn e_neg(a: i128) -> i128 {
    if a <= NEG_INF {
        POS_INF
    } else if a >= POS_INF {
        NEG_INF
    } else {
        -a
    }
}
/// Sum of two lower ends.
pub(crate) fn add_lo(a: i128, b: i128) -> i128 {
    if a <= NEG_INF || b <= NEG_INF {
        NEG_INF
    } else if a >= POS_INF || b >= POS_INF {
        POS_INF
    } else {
        clamp_inf(a + b)
    }
}
/// Sum of two upper ends.
pub(crate) fn add_hi(a: i128, b: i128) -> i128 {
    if a >= POS_INF || b >= POS_INF {
        POS_INF
    } else if a <= NEG_INF || b <= NEG_INF {
        NEG_INF
    } else {
        clamp_inf(a + b)
    }
}
pub(crate) fn e_mul(a: i128, b: i128) -> i128 {
    if a == 0 || b == 0 {
        return 0;
    }
    let inf = if (a > 0) == (b > 0) { POS_INF } else { NEG_INF };
    if is_inf(a) || is_inf(b) {
        return inf;
    }
    a.checked_mul(b).map(clamp_inf).unwrap_or(inf)
}
/// `a / c` (truncating) for a finite non-zero `c`.
fn e_div(a: i128, c: i128) -> i128 {
    if is_inf(a) {
        if (a > 0) == (c > 0) {
            POS_INF
        } else {
            NEG_INF
        }
    } else {
        a / c
    }
}
fn e_abs(a: i128) -> i128 {
    if a < 0 {
        e_neg(a)
    } else {
        a
    }
}

pub(crate) fn add(x: Iv, y: Iv) -> Iv {
    Iv { lo: add_lo(x.lo, y.lo), hi: add_hi(x.hi, y.hi) }
}
pub(crate) fn mul(x: Iv, y: Iv) -> Iv {
    let c = [e_mul(x.lo, y.lo), e_mul(x.lo, y.hi), e_mul(x.hi, y.lo), e_mul(x.hi, y.hi)];
    Iv { lo: *c.iter().min().unwrap(), hi: *c.iter().max().unwrap() }
}

fn is_i64(dt: DType) -> bool {
    dt.kind == ScalarKind::Int && dt.bits == 64
}

/// The values of type `dt` (`FULL` for `i64` and non-integers).
pub(crate) fn type_range(dt: DType) -> Iv {
    match dt.kind {
        ScalarKind::Bool => Iv { lo: 0, hi: 1 },
        ScalarKind::Int | ScalarKind::UInt if !is_i64(dt) => {
            let (lo, hi) = int_range(dt);
            Iv { lo, hi }
        }
        _ => Iv::FULL,
    }
}

/// Applies the type's overflow rule to the interval of a node of type `dt`.
pub(crate) fn norm(iv: Iv, dt: DType) -> Iv {
    if is_i64(dt) {
        let (mn, mx) = (i64::MIN as i128, i64::MAX as i128);
        let lo = if iv.lo < mn {
            NEG_INF
        } else if iv.lo > mx {
            mx
        } else {
            iv.lo
        };
        let hi = if iv.hi > mx {
            POS_INF
        } else if iv.hi < mn {
            mn
        } else {
            iv.hi
        };
        Iv { lo, hi }
    } else if dt.is_integer() || dt.is_bool() {
        let r = type_range(dt);
        if iv.lo < r.lo || iv.hi > r.hi {
            r
        } else {
            iv
        }
    } else {
        Iv::FULL
    }
}

pub(crate) fn binop(op: BinOp, x: Iv, y: Iv) -> Iv {
    if matches!(op, BinOp::Div | BinOp::Mod) && y.lo == 0 && y.hi == 0 {
        // Always divides by zero. The node may sit in a branch that is not taken (a
        // select), so it must not get an empty interval, which would prove anything.
        return Iv::FULL;
    }
    match op {
        BinOp::Add => add(x, y),
        BinOp::Sub => Iv { lo: add_lo(x.lo, e_neg(y.hi)), hi: add_hi(x.hi, e_neg(y.lo)) },
        BinOp::Mul => mul(x, y),
        BinOp::Div => {
            if y.lo == y.hi && y.lo != 0 && !is_inf(y.lo) {
                let c = y.lo;
                if c > 0 {
                    Iv { lo: e_div(x.lo, c), hi: e_div(x.hi, c) }
                } else {
                    Iv { lo: e_div(x.hi, c), hi: e_div(x.lo, c) }
                }
            } else if y.lo >= 1 {
                // |x / y| <= |x|, with the sign of x (or zero).
                Iv { lo: x.lo.min(0), hi: x.hi.max(0) }
            } else if y.hi <= -1 {
                Iv { lo: e_neg(x.hi).min(0), hi: e_neg(x.lo).max(0) }
            } else {
                // Defined only for y != 0, where |x / y| <= |x|.
                let m = e_abs(x.lo).max(e_abs(x.hi));
                Iv { lo: e_neg(m), hi: m }
            }
        }
        BinOp::Mod => {
            // The remainder has the sign of x and a magnitude below |y|.
            let ym = e_abs(y.lo).max(e_abs(y.hi));
            let mm = if ym >= POS_INF { POS_INF } else { (ym - 1).max(0) };
            if y.lo == y.hi && !is_inf(y.lo) && y.lo != 0 {
                let c = e_abs(y.lo);
                if (x.lo >= 0 && x.hi < c) || (x.hi <= 0 && x.lo > -c) {
                    return x;
                }
            }
            if x.lo >= 0 {
                Iv { lo: 0, hi: x.hi.min(mm) }
            } else if x.hi <= 0 {
                Iv { lo: x.lo.max(e_neg(mm)), hi: 0 }
            } else {
                Iv { lo: x.lo.max(e_neg(mm)), hi: x.hi.min(mm) }
            }
        }
        BinOp::Min => Iv { lo: x.lo.min(y.lo), hi: x.hi.min(y.hi) },
        BinOp::Max => Iv { lo: x.lo.max(y.lo), hi: x.hi.max(y.hi) },
    }
}

/// The interval of `e` given the variables' bounds.
pub(crate) fn eval(vars: &HashMap<Var, VarInfo>, e: &Expr, depth: u32) -> Iv {
    let dt = e.dtype();
    if !(dt.is_integer() || dt.is_bool()) {
        return Iv::FULL;
    }
    let r = match e {
        Expr::Int { value, dtype } => Iv::point(int_value(*value, *dtype)),
        Expr::Bool(b) => Iv::point(*b as i128),
        Expr::Var(v) => {
            let mut iv = type_range(dt);
            if depth < VAR_DEPTH {
                if let Some(info) = vars.get(v) {
                    if let Some(m) = &info.min {
                        iv.lo = iv.lo.max(eval(vars, m, depth + 1).lo);
                    }
                    if let Some(m) = &info.max {
                        iv.hi = iv.hi.min(eval(vars, m, depth + 1).hi);
                    }
                }
            }
            iv
        }
        Expr::Binary { op, a, b } => binop(*op, eval(vars, a, depth), eval(vars, b, depth)),
        Expr::Neg(a) => {
            let x = eval(vars, a, depth);
            Iv { lo: e_neg(x.hi), hi: e_neg(x.lo) }
        }
        Expr::Select { then, otherwise, .. } => eval(vars, then, depth).union(eval(vars, otherwise, depth)),
        Expr::Cast { dtype, value } => {
            let src = value.dtype();
            let full = type_range(*dtype);
            if src.is_integer() || src.is_bool() {
                let x = eval(vars, value, depth);
                let fit = if is_i64(*dtype) { Iv { lo: i64::MIN as i128, hi: i64::MAX as i128 } } else { full };
                if x.lo >= fit.lo && x.hi <= fit.hi {
                    x
                } else {
                    full
                }
            } else {
                full
            }
        }
        Expr::Cmp { .. } | Expr::And(..) | Expr::Or(..) | Expr::Not(_) => Iv { lo: 0, hi: 1 },
        // A checked index is in `[0, extent)`, or 0 when the check fails.
        Expr::Check { kind: CheckKind::Index { extent }, .. } => {
            let n = eval(vars, extent, depth);
            Iv { lo: 0, hi: if is_inf(n.hi) { POS_INF } else { (n.hi - 1).max(0) } }
        }
        _ => type_range(dt),
    };
    norm(r, dt)
}
