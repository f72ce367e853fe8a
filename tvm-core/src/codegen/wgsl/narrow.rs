//! 32-bit index arithmetic for WGSL, which has no 64-bit integers: for which values of the
//! dims a kernel's `i64` (and `u64`) arithmetic provably fits in `i32`.
//!
//! TIR computes indices in `i64`. A WGSL kernel computes them in `i32`, which is exact as
//! long as no value, intermediate ones included, leaves `i32`. With symbolic dims nothing
//! fits for every shape (`i * K + k` grows with `M` and `K`), so the proof is made for
//! shapes up to a bound: every 64-bit integer scalar of the function (the dims, and
//! scalars such as a `usize` parameter) lies in `[0, B]` (dims and unsigned scalars) or
//! `[-B, B]`, and then every 64-bit value the printed code computes lies in `i32`, by
//! interval arithmetic over the ranges of the thread, loop and `let` variables (one pass,
//! bottom-up, the operations WGSL performs). [`scalar_limit`] finds the largest power of
//! two `B` (or `i32::MAX`) for which this holds; the generated host code checks each
//! 64-bit scalar against it before a launch and passes it as an `i32`, so a larger shape
//! is an error, never a wrapped index.
//!
//! The proof is [`crate::arith::narrow`]'s, the one CUDA's and OpenCL's narrowing makes,
//! with the scalars bounded instead of absent, the grid's extents computed from them, and
//! WGSL's division (`a / 0` is `a`).

use crate::arith::narrow::wide;
use crate::arith::narrow::{fits_i32, type_range, ZeroDivisor};
use crate::codegen::dim_vars;
use crate::dtype::DType;
use crate::tir::{Kernel, Param, PrimFunc, VarId};
use std::collections::HashSet;

const HI: i128 = i32::MAX as i128;

/// The largest bound `B` (a power of two, or `i32::MAX`) such that kernel `k` of `f`
/// computes every 64-bit integer value exactly in `i32` when each 64-bit integer scalar
/// lies in `[0, B]` (dims and unsigned scalars) or `[-B, B]`; `None` when not even
/// `B = 1` is enough (or the kernel holds 64-bit integers in memory).
pub fn scalar_limit(f: &PrimFunc, k: &Kernel) -> Option<i64> {
    let dims: HashSet<VarId> = dim_vars(f).iter().map(|v| v.id()).collect();
    let scalars: Vec<(VarId, DType)> = f
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar(v) => Some((v.id(), v.dtype())),
            Param::Tensor { .. } => None,
        })
        .chain(dim_vars(f).iter().map(|v| (v.id(), v.dtype())))
        .chain(k.scalar_args.iter().map(|v| (v.id(), v.dtype())))
        .collect();
    let fits = |b: i128| {
        let ranges = scalars
            .iter()
            .filter_map(|&(id, d)| {
                let r = if wide(d) {
                    if dims.contains(&id) || d.is_uint() {
                        (0, b)
                    } else {
                        (-b, b)
                    }
                } else {
                    type_range(d)?
                };
                Some((id, r))
            })
            .collect();
        fits_i32(k, ranges, ZeroDivisor::Dividend)
    };
    // Monotone in the bound (interval arithmetic only widens with its inputs): the
    // largest that fits, by bisection over the exponent.
    let bound = |e: u32| if e >= 31 { HI } else { 1i128 << e };
    if !fits(bound(0)) {
        return None;
    }
    let (mut lo, mut hi) = (0u32, 31u32);
    if fits(bound(hi)) {
        return Some(i32::MAX as i64);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(bound(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(bound(lo) as i64)
}
