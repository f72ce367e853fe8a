//! Constant folding with the semantics of the expression's type: integers of every width
//! (unsigned ones stored as their bits in an `i64`), `f32` computed in `f32`, `f64` in
//! `f64`. Anything whose result is not certain (integer overflow of a narrow type,
//! division by zero, `f16`/`bf16` arithmetic, intrinsics) is not folded.

use crate::dtype::{DType, ScalarKind};
use crate::tir::{BinOp, CmpOp, Expr};

/// The value of an integer constant of type `dt` (unsigned values are zero-extended,
/// narrow signed values sign-extended from their low bits).
pub(crate) fn int_value(v: i64, dt: DType) -> i128 {
    let bits = dt.bits as u32;
    if dt.is_uint() {
        if bits >= 64 {
            v as u64 as i128
        } else {
            (v as u64 & ((1u64 << bits) - 1)) as i128
        }
    } else if bits >= 64 {
        v as i128
    } else {
        let s = 64 - bits;
        ((v << s) >> s) as i128
    }
}

/// The inclusive range of values of integer type `dt`.
pub(crate) fn int_range(dt: DType) -> (i128, i128) {
    let bits = dt.bits.clamp(1, 64) as u32;
    if dt.is_uint() {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    }
}

/// `v` as a stored constant of type `dt`, if it is in range.
pub(crate) fn store_int(v: i128, dt: DType) -> Option<i64> {
    let (lo, hi) = int_range(dt);
    if v < lo || v > hi {
        return None;
    }
    Some(if dt.is_uint() { v as u64 as i64 } else { v as i64 })
}

/// `v` converted to type `dt` the way Rust's `as` does between integers (keeps the low
/// bits).
pub(crate) fn wrap_int(v: i128, dt: DType) -> i64 {
    let bits = dt.bits.clamp(1, 64) as u32;
    let m = v & ((1i128 << bits) - 1);
    if dt.is_uint() {
        m as u64 as i64
    } else if m >= (1i128 << (bits - 1)) {
        (m - (1i128 << bits)) as i64
    } else {
        m as i64
    }
}

/// `a op b` on integer constants of type `dt`; `None` on overflow or division by zero.
pub(crate) fn fold_int(op: BinOp, dt: DType, a: i64, b: i64) -> Option<i64> {
    let (x, y) = (int_value(a, dt), int_value(b, dt));
    let r = match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        BinOp::Div => x.checked_div(y)?,
        BinOp::Mod => x.checked_rem(y)?,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
    };
    store_int(r, dt)
}

pub(crate) fn cmp_values<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
    }
}

/// The comparison that is true exactly when `op` is false (on integers and bools).
pub(crate) fn negate_cmp(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
    }
}

fn is_f32(dt: DType) -> bool {
    dt.kind == ScalarKind::Float && dt.bits == 32
}
fn is_f64(dt: DType) -> bool {
    dt.kind == ScalarKind::Float && dt.bits == 64
}

/// `a op b` on float constants of type `dt`: only `f32` (computed in `f32`) and `f64`.
/// `min`/`max` only when the result does not depend on NaN or signed-zero handling.
pub(crate) fn fold_float(op: BinOp, dt: DType, a: f64, b: f64) -> Option<f64> {
    if matches!(op, BinOp::Min | BinOp::Max) {
        if a.is_nan() || b.is_nan() || (a == b && a.to_bits() != b.to_bits()) {
            return None;
        }
        let pick_a = if op == BinOp::Min { a <= b } else { a >= b };
        return Some(if pick_a { a } else { b });
    }
    if is_f32(dt) {
        let (x, y) = (a as f32, b as f32);
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Mod => x % y,
            BinOp::Min | BinOp::Max => unreachable!(),
        };
        Some(r as f64)
    } else if is_f64(dt) {
        Some(match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            BinOp::Mod => a % b,
            BinOp::Min | BinOp::Max => unreachable!(),
        })
    } else {
        None
    }
}

/// A float value converted to the integer type `dt` with Rust's saturating `as`.
fn float_to_int(v: f64, dt: DType) -> i64 {
    if v.is_nan() {
        return 0;
    }
    let (lo, hi) = int_range(dt);
    let t = v.trunc();
    let r: i128 = if t <= lo as f64 {
        lo
    } else if t >= hi as f64 {
        hi
    } else {
        t as i128
    };
    store_int(r.clamp(lo, hi), dt).expect("in range")
}

/// `value as dtype` for a constant `value`, when its result is certain.
pub(crate) fn fold_cast(dtype: DType, value: &Expr) -> Option<Expr> {
    let to = dtype.element();
    if !value.dtype().is_scalar() {
        return None;
    }
    match value {
        Expr::Int { value: v, dtype: from } => {
            let x = int_value(*v, *from);
            if to.is_integer() {
                Some(Expr::typed_int(wrap_int(x, to), to))
            } else if is_f32(to) {
                Some(Expr::float(x as f32 as f64, to))
            } else if is_f64(to) {
                Some(Expr::float(x as f64, to))
            } else {
                None
            }
        }
        Expr::Bool(b) => {
            if to.is_integer() {
                Some(Expr::typed_int(*b as i64, to))
            } else if to.is_bool() {
                Some(value.clone())
            } else if is_f32(to) || is_f64(to) {
                Some(Expr::float(*b as i64 as f64, to))
            } else {
                None
            }
        }
        Expr::Float { value: v, dtype: from } => {
            if to.is_integer() {
                Some(Expr::typed_int(float_to_int(*v, to), to))
            } else if is_f32(to) {
                Some(Expr::float(*v as f32 as f64, to))
            } else if is_f64(to) {
                Some(Expr::float(*v, to))
            } else if to == from.element() {
                Some(value.clone())
            } else {
                None
            }
        }
        _ => None,
    }
}
