//! Facts about integer index expressions that code generators rely on: a divisor every
//! value of an index has (the alignment proof of vector accesses), whether a kernel's
//! 64-bit index arithmetic provably fits in 32 bits, and whether a divisor may be -1
//! (where `MIN / -1` would overflow).

use super::narrow::{fits_i32, wide, ZeroDivisor};
use crate::dtype::DType;
use crate::tir::{BinOp, Expr, Kernel, VarId};
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
/// `i64` arithmetic may be printed as `int` (CUDA C, OpenCL C): the kernel holds no 64-bit
/// integer data (buffers, scalars, loads), every launch extent is a constant, and every
/// `i64` value the printed code computes, intermediate ones included, lies inside `i32`
/// ([`super::narrow`], with C's division: a divisor that may be 0 gives no range).
pub fn index_fits_i32(k: &Kernel) -> bool {
    if k.buffer_args.iter().any(|b| wide(b.dtype())) || k.scalar_args.iter().any(|v| wide(v.dtype())) {
        return false;
    }
    // No scalar has a range: a launch extent that is not a constant has none either.
    fits_i32(k, HashMap::new(), ZeroDivisor::Undefined)
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
