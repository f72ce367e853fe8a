//! Reads whose index wraps around its dim by a remainder: `x[i, (j + s) % N]`, or the
//! Euclidean form `x[i, ((j - k) % N + N) % N]` of a roll. Such an index is not linear
//! in the loop's variable, so its read is neither contiguous nor vectorizable, and every
//! element pays a division. Where the divisor `p` is the extent of the dim it indexes and
//! the dividend `a` varies over less than one period along the stage's axes (the
//! analyzer proves `max(a) - min(a) < p`), the index wraps at most once, and it is `a`
//! itself wherever `0 <= a < p`, in both forms. The read becomes
//!
//! ```text
//! if 0 <= a && a < p { x[.., a, ..] } else { x[.., a % p, ..] }   // the remainder as written
//! ```
//!
//! the form a `repeat_image` view's read has: the test is linear in the loop's variable,
//! so `hoist_tail_guards` tests it once per vector and `partition_loops` cuts the loop at
//! the wrap point, leaving an interior of contiguous vector reads with no division.
//! Exact: the branch taken computes the same index as the one written. A packed layout's
//! `w[j / 32, k, j % 32]` is left alone: `j` runs over many periods.

use super::*;
use crate::arith::Analyzer;

/// For a read `e` (a `ProducerLoad` with checked indices) whose indices wrap once (the
/// module's summary): the condition under which they need no remainder, and the read
/// without it. The checks of the new indices are those of the written ones (same sites).
pub(super) fn unwrapped(az: &Analyzer, axes: &[Var], e: &Expr) -> Option<(Expr, Expr)> {
    let Expr::ProducerLoad { tensor, indices, dtype } = e else { return None };
    let mut cond: Option<Expr> = None;
    let mut inside = indices.clone();
    for (d, x) in indices.iter().enumerate() {
        let Expr::Check { value, kind: CheckKind::Index { extent }, site } = x else { continue };
        let Some((a, p)) = remainder(value) else { continue };
        if unchecked(p) != &**extent || !wraps_once(az, axes, a, extent) {
            continue;
        }
        let c = Expr::and(Expr::ge(a.clone(), Expr::int(0)), Expr::lt(a.clone(), (**extent).clone()));
        cond = Some(match cond {
            None => c,
            Some(prev) => Expr::and(prev, c),
        });
        inside[d] =
            Expr::Check { value: Box::new(a.clone()), kind: CheckKind::Index { extent: extent.clone() }, site: *site };
    }
    Some((cond?, Expr::ProducerLoad { tensor: *tensor, indices: inside, dtype: *dtype }))
}

/// Whether `a` varies along `axes` and over less than `p` (so it wraps at most once).
fn wraps_once(az: &Analyzer, axes: &[Var], a: &Expr, p: &Expr) -> bool {
    if !axes.iter().any(|v| crate::tir::visit::uses_var(a, v)) {
        return false;
    }
    match az.try_symbolic_bounds(a, axes) {
        (Some(lo), Some(hi)) => az.can_prove(&Expr::lt(hi - lo, p.clone())),
        _ => false,
    }
}

/// `(a, p)` of an index `a % p` or `((a % p) + p) % p` (the divisors the same).
fn remainder(x: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Binary { op: BinOp::Mod, a, b: p } = x else { return None };
    // The Euclidean form: the dividend of the outer `%` is `(a % p) + p`.
    if let Expr::Binary { op: BinOp::Add, a: m, b: q } = &**a {
        if let Expr::Binary { op: BinOp::Mod, a: inner, b: p2 } = &**m {
            if unchecked(p2) == unchecked(p) && unchecked(q) == unchecked(p) {
                return Some((inner, p));
            }
        }
    }
    Some((a, p))
}

/// `x` without the divisor check the checker put around it.
fn unchecked(x: &Expr) -> &Expr {
    match x {
        Expr::Check { value, .. } => unchecked(value),
        x => x,
    }
}
