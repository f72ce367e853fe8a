//! `k·d·(x / d) + k·(x % d)` merged into `k·x` in an `i64` index, for a symbolic `d` and
//! terms with more factors (`C*H*W*(nc / C) + H*W*(nc % C)` is `H*W*nc`): the indices of
//! fused axes. The analyzer's own merge handles constant divisors only.
//!
//! The identity holds for Rust's truncating division whenever `d != 0`; where `d == 0`
//! the original index would panic, so a merged index is only ever used where the
//! original one had a value.

use crate::arith::Analyzer;
use crate::dtype::DType;
use crate::tir::{BinOp, Expr};

/// A product `coef * factors[0] * factors[1] * ...`.
#[derive(Clone, Debug)]
struct Term {
    coef: i64,
    factors: Vec<Expr>,
}

/// `e` with every merge done (unchanged when there is none, or `e` is not `i64`).
pub(super) fn merge_fused_divmod(e: &Expr, m: &Analyzer) -> Expr {
    if e.dtype() != DType::I64 {
        return e.clone();
    }
    let mut terms = Vec::new();
    if !sum_terms(e, 1, &mut terms) {
        return e.clone();
    }
    let mut changed = false;
    while let Some((i, j, merged)) = find_pair(&terms, m) {
        let (hi, lo) = (i.max(j), i.min(j));
        terms.remove(hi);
        terms.remove(lo);
        terms.push(merged);
        changed = true;
    }
    if !changed {
        return e.clone();
    }
    terms
        .into_iter()
        .filter(|t| t.coef != 0)
        .map(|t| t.factors.into_iter().fold(Expr::int(t.coef), |acc, f| acc * f))
        .reduce(|a, b| a + b)
        .unwrap_or(Expr::int(0))
}

/// Flattens `sign * e` into terms; false if some multiplication overflows.
fn sum_terms(e: &Expr, sign: i64, out: &mut Vec<Term>) -> bool {
    match e {
        Expr::Binary { op: BinOp::Add, a, b } => sum_terms(a, sign, out) && sum_terms(b, sign, out),
        Expr::Binary { op: BinOp::Sub, a, b } => sum_terms(a, sign, out) && sum_terms(b, -sign, out),
        Expr::Neg(a) => sum_terms(a, -sign, out),
        _ => match product(e) {
            Some(mut t) => match t.coef.checked_mul(sign) {
                Some(c) => {
                    t.coef = c;
                    out.push(t);
                    true
                }
                None => false,
            },
            None => false,
        },
    }
}

/// `e` as one product term; `None` if a constant overflows.
fn product(e: &Expr) -> Option<Term> {
    match e {
        Expr::Binary { op: BinOp::Mul, a, b } => {
            let (x, y) = (product(a)?, product(b)?);
            Some(Term { coef: x.coef.checked_mul(y.coef)?, factors: [x.factors, y.factors].concat() })
        }
        Expr::Int { value, .. } => Some(Term { coef: *value, factors: vec![] }),
        _ => Some(Term { coef: 1, factors: vec![e.clone()] }),
    }
}

/// Removes one occurrence of each of `sub` from `from`; `None` if one is missing.
fn minus(from: &[Expr], sub: &[Expr]) -> Option<Vec<Expr>> {
    let mut rest = from.to_vec();
    for s in sub {
        let i = rest.iter().position(|x| x == s)?;
        rest.remove(i);
    }
    Some(rest)
}

/// Two terms `k·M·(x % d)` and `k·M·d·(x / d)`, and their merge `k·M·x`.
fn find_pair(terms: &[Term], m: &Analyzer) -> Option<(usize, usize, Term)> {
    for (i, t) in terms.iter().enumerate() {
        for (fi, f) in t.factors.iter().enumerate() {
            let Expr::Binary { op: BinOp::Mod, a: x, b: d } = f else { continue };
            let Some(dt) = product(d) else { continue };
            let mut rest = t.factors.clone();
            rest.remove(fi);
            // Simplified as the index's own terms were: a quotient of a quotient by
            // constants is one quotient (`(p / 7) / 21` is `p / 147`, the third of three
            // fused axes).
            let div = m.simplify(&Expr::binary(BinOp::Div, (**x).clone(), (**d).clone()));
            for (j, u) in terms.iter().enumerate() {
                if j == i || t.coef.checked_mul(dt.coef) != Some(u.coef) {
                    continue;
                }
                let want: Vec<Expr> = [rest.clone(), dt.factors.clone(), vec![div.clone()]].concat();
                if u.factors.len() == want.len() && minus(&u.factors, &want).is_some_and(|r| r.is_empty()) {
                    let factors = [rest.clone(), vec![(**x).clone()]].concat();
                    return Some((i, j, Term { coef: t.coef, factors }));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tir::Var;

    /// Three fused axes of extents (N, 21, 7), each iteration a block of 192: the middle
    /// axis divides by 7 then by 21, the outer one by 147.
    #[test]
    fn three_fused_axes_merge_into_one_block() {
        let v = Expr::var(&Var::new("p", DType::I64));
        let div = |e: Expr, k: i64| Expr::binary(BinOp::Div, e, Expr::int(k));
        let rem = |e: Expr, k: i64| Expr::binary(BinOp::Mod, e, Expr::int(k));
        let e = div(v.clone(), 147) * Expr::int(28224)
            + rem(v.clone(), 7) * Expr::int(192)
            + rem(div(v.clone(), 7), 21) * Expr::int(1344);
        let a = Analyzer::new();
        let m = merge_fused_divmod(&e, &a);
        assert_eq!(crate::tir::printer::print_expr(&m), crate::tir::printer::print_expr(&(Expr::int(192) * v.clone())));
        // Divisors that do not nest (7 then 20, against 147) stay apart.
        let e = div(v.clone(), 147) * Expr::int(28224)
            + rem(v.clone(), 7) * Expr::int(192)
            + rem(div(v.clone(), 7), 20) * Expr::int(1344);
        assert_ne!(
            crate::tir::printer::print_expr(&merge_fused_divmod(&e, &a)),
            crate::tir::printer::print_expr(&(Expr::int(192) * v))
        );
    }
}
