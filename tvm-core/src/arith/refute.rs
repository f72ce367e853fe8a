//! Counterexamples that answer a proof at once.
//!
//! A sound prover never proves `p <= 0` when some values of the variables, in their known
//! ranges and satisfying the known facts, make `p` positive. So a question that is false
//! at one such point can be answered "not proved" without spending the proof's fuel: the
//! answer is the one a sound full proof gives (the prover proves nothing from a
//! coefficient that wrapped: see `Poly::wrapped`). Most questions the
//! passes ask and cannot prove are of that kind (the simplifier asks both `c` and `!c`
//! of every condition it meets), and a failed proof spends all its fuel: it is the
//! costly kind of question.
//!
//! A point ([`Point`]) is a value for each variable of the analyzer, drawn in the order
//! the variables were bound (a loop's bounds may mention the loops around it) from its
//! range: its ends, and values between them. A point is kept only when every fact holds
//! at it, evaluated in exact integer arithmetic (an expression that would panic, divide
//! by zero or leave the `i64` range there rules the point out). Points depend only on
//! the analyzer's state, so they are drawn once per state ([`super::Analyzer::state`]).

use super::fold::cmp_values;
use super::poly::Poly;
use super::{Analyzer, Fact, StateDigest};
use crate::dtype::DType;
use crate::tir::{BinOp, Expr, Var};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Values of the variables (`i64` ones only).
pub(crate) type Point = HashMap<Var, i64>;

/// How many points are drawn per state (those that break a fact are dropped).
const DRAWS: u64 = 24;

/// How many states' points are kept (all are forgotten when full).
const REMEMBERED_STATES: usize = 1 << 12;

/// The points of each state, shared by the threads that lower a kernel for several targets.
static POINTS: Mutex<Option<HashMap<StateDigest, Arc<Vec<Point>>>>> = Mutex::new(None);

/// Forgets the points of every state (with the remembered proofs).
pub(crate) fn forget() {
    *POINTS.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Whether `p > 0` at a point that satisfies every range and fact of `an` and `facts`
/// (then `p <= 0` cannot be proved).
pub(crate) fn refuted(an: &Analyzer, facts: &[Fact], p: &Poly) -> bool {
    let points = points(an);
    points.iter().any(|pt| {
        let mut pt = Free { pt, extra: HashMap::new() };
        facts.iter().all(|f| holds(f, &mut pt) == Some(true)) && poly_value(p, &mut pt).is_some_and(|v| v > 0)
    })
}

/// The points of `an`'s state, drawn on first use.
fn points(an: &Analyzer) -> Arc<Vec<Point>> {
    if let Some(p) = POINTS.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(&an.state)) {
        return p.clone();
    }
    let drawn: Arc<Vec<Point>> = Arc::new((0..DRAWS).filter_map(|seed| draw(an, seed)).collect());
    let mut m = POINTS.lock().unwrap_or_else(|e| e.into_inner());
    let m = m.get_or_insert_with(HashMap::new);
    if m.len() >= REMEMBERED_STATES {
        m.clear();
    }
    m.insert(an.state, drawn.clone());
    drawn
}

/// Values for the variables that appear in no range: any value is possible, so one
/// fixed by the variable's name keeps the answer deterministic.
struct Free<'a> {
    pt: &'a Point,
    extra: HashMap<Var, i64>,
}

impl Free<'_> {
    fn var(&mut self, v: &Var) -> Option<i64> {
        if v.dtype() != DType::I64 {
            return None;
        }
        if let Some(&x) = self.pt.get(v) {
            return Some(x);
        }
        Some(*self.extra.entry(v.clone()).or_insert_with(|| free_value(v)))
    }
}

/// A value for an unconstrained variable: small and non-negative, as dims and indices are.
fn free_value(v: &Var) -> i64 {
    let h = v.name().bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    [1, 2, 3, 5, 7, 16][(h % 6) as usize]
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Sizes of the dims and the distances from a known end that the draws use: mostly
/// large enough for the loops to run and their partitions to be non-empty, sometimes tiny.
const SIZES: [i64; 10] = [1000, 61, 37, 16, 7, 1000, 3, 2, 1, 0];

/// Draw `seed`: each variable at an end of its range or near one, in the order they were
/// bound (seed 0: every lower end, seed 1: every upper end, half-open ranges reaching
/// 1000 from their end); `None` if a range is empty there or a fact fails.
fn draw(an: &Analyzer, seed: u64) -> Option<Point> {
    let mut vars: Vec<(&Var, &super::VarInfo)> = an.vars.iter().filter(|(v, _)| v.dtype() == DType::I64).collect();
    vars.sort_by_key(|(_, i)| i.order);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(1));
    // The draw's usual size; each variable keeps it three times in four.
    let size = if seed < 2 { 1000 } else { SIZES[rng.below(SIZES.len() as u64) as usize] };
    let mut pt = Point::new();
    for (v, info) in vars {
        let mut free = Free { pt: &pt, extra: HashMap::new() };
        let lo = info.min.as_ref().map(|e| value(e, &mut free));
        let hi = info.max.as_ref().map(|e| value(e, &mut free));
        let extra = free.extra;
        let s = if seed < 2 || rng.below(4) != 0 { size } else { SIZES[rng.below(SIZES.len() as u64) as usize] };
        let x = match (lo, hi) {
            // A bound that cannot be evaluated here (a load, a float): the point says nothing.
            (Some(None), _) | (_, Some(None)) => return None,
            (Some(Some(lo)), Some(Some(hi))) => {
                if lo > hi {
                    return None;
                }
                // Within `[lo, hi]` whatever their size (`s >= 0`, so `near <= hi - lo`).
                let width = (hi as i128 - lo as i128).min(s as i128) as u64;
                let near = (rng.next() % (width + 1)) as i64;
                match (seed, rng.below(4)) {
                    (0, _) | (2.., 0) => lo,
                    (1, _) | (2.., 1) => hi,
                    (_, 2) => lo + near,
                    _ => hi - near,
                }
            }
            (Some(Some(lo)), None) => lo.checked_add(s)?,
            (None, Some(Some(hi))) => hi.checked_sub(s)?,
            (None, None) => s,
        };
        pt.extend(extra);
        pt.insert(v.clone(), x);
    }
    // A bound that mentions a variable bound later was evaluated with a free value
    // for it: every range is checked again at the whole point, with every fact.
    let mut free = Free { pt: &pt, extra: HashMap::new() };
    for (v, info) in &an.vars {
        let Some(&x) = pt.get(v) else { continue };
        let lo = info.min.as_ref().map(|e| value(e, &mut free));
        let hi = info.max.as_ref().map(|e| value(e, &mut free));
        if lo.is_some_and(|lo| lo.is_none_or(|lo| x < lo)) || hi.is_some_and(|hi| hi.is_none_or(|hi| x > hi)) {
            return None;
        }
    }
    if !an.facts.iter().all(|f| holds(f, &mut free) == Some(true)) {
        return None;
    }
    let extra = free.extra;
    pt.extend(extra);
    Some(pt)
}

/// Whether a fact holds at the point; `None` when it cannot be evaluated there.
fn holds(f: &Fact, pt: &mut Free) -> Option<bool> {
    match f {
        Fact::Le0(p) => poly_value(p, pt).map(|v| v <= 0),
        Fact::Is(e, want) => truth(e, pt).map(|b| b == *want),
    }
}

/// The exact value of a polynomial (`None` if an atom cannot be evaluated, or the value
/// leaves the `i64` range: the prover reasons about index arithmetic that does not
/// overflow).
fn poly_value(p: &Poly, pt: &mut Free) -> Option<i64> {
    let mut acc = p.c as i128;
    for (m, &k) in &p.terms {
        let mut t = k as i128;
        for a in m {
            t = t.checked_mul(value(&a.0, pt)? as i128)?;
        }
        acc = acc.checked_add(t)?;
    }
    i64::try_from(acc).ok()
}

/// The exact value of an `i64` expression, with Rust's `/` and `%`.
fn value(e: &Expr, pt: &mut Free) -> Option<i64> {
    if e.dtype() != DType::I64 {
        return None;
    }
    match e {
        Expr::Int { value, .. } => Some(*value),
        Expr::Var(v) => pt.var(v),
        Expr::Neg(a) => value(a, pt)?.checked_neg(),
        Expr::Binary { op, a, b } => {
            let (x, y) = (value(a, pt)?, value(b, pt)?);
            match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div => x.checked_div(y),
                BinOp::Mod => x.checked_rem(y),
                BinOp::Min => Some(x.min(y)),
                BinOp::Max => Some(x.max(y)),
            }
        }
        Expr::Select { cond, then, otherwise } => {
            if truth(cond, pt)? {
                value(then, pt)
            } else {
                value(otherwise, pt)
            }
        }
        _ => None,
    }
}

/// The value of a boolean expression over `i64` comparisons.
fn truth(e: &Expr, pt: &mut Free) -> Option<bool> {
    match e {
        Expr::Bool(b) => Some(*b),
        Expr::Not(a) => truth(a, pt).map(|b| !b),
        Expr::And(a, b) => Some(truth(a, pt)? && truth(b, pt)?),
        Expr::Or(a, b) => Some(truth(a, pt)? || truth(b, pt)?),
        Expr::Cmp { op, a, b } if a.dtype() == DType::I64 => Some(cmp_values(*op, value(a, pt)?, value(b, pt)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arith::poly::parse_poly;
    use crate::arith::rewrite::Ctx;
    use proptest::prelude::*;

    fn var(name: &str) -> (Var, Expr) {
        let v = Var::new(name, DType::I64);
        let e = Expr::var(&v);
        (v, e)
    }

    /// `a - b` as the question `a - b <= 0`, i.e. `a <= b`.
    fn le(a: Expr, b: Expr) -> Poly {
        parse_poly(&a).sub(&parse_poly(&b))
    }

    #[test]
    fn a_bound_false_somewhere_in_the_ranges_is_refuted_and_a_true_one_is_not() {
        let (n, ne) = var("n");
        let (i, ie) = var("i");
        let mut an = Analyzer::new();
        an.assume_nonneg(&n);
        an.bind(&i, Expr::int(0), ne.clone());
        // `i <= 5` fails for `n = 1000, i = 999`; `i <= n - 1` holds everywhere.
        assert!(refuted(&an, &[], &le(ie.clone(), Expr::int(5))));
        assert!(!refuted(&an, &[], &le(ie.clone(), ne.clone() - Expr::int(1))));
        // Under the fact `i >= 10`, `10 <= i` holds and `i <= 10` does not.
        an.assume(&Expr::ge(ie.clone(), Expr::int(10)));
        assert!(!refuted(&an, &[], &le(Expr::int(10), ie.clone())));
        assert!(refuted(&an, &[], &le(ie.clone(), Expr::int(10))));
        // A context fact counts too: with `i <= 10` known, `i <= 10` is not refuted.
        let facts = vec![Fact::Le0(le(ie.clone(), Expr::int(10)))];
        assert!(!refuted(&an, &facts, &le(ie, Expr::int(10))));
    }

    #[test]
    fn every_point_lies_in_the_ranges_and_satisfies_the_facts() {
        let (n, ne) = var("n");
        let (i, ie) = var("i");
        let (j, je) = var("j");
        let mut an = Analyzer::new();
        an.assume_nonneg(&n);
        an.bind(&i, Expr::int(0), Expr::binary(BinOp::Div, ne.clone(), Expr::int(8)));
        an.bind(&j, ie.clone() * Expr::int(8), Expr::int(8));
        an.assume(&Expr::lt(je.clone() + Expr::int(3), ne.clone()));
        let pts = points(&an);
        assert!(!pts.is_empty(), "the draws find points of a satisfiable state");
        for p in pts.iter() {
            let (n, i, j) = (p[&n], p[&i], p[&j]);
            assert!(n >= 0 && 0 <= i && i < n / 8 && i * 8 <= j && j < i * 8 + 8 && j + 3 < n, "{p:?}");
        }
    }

    #[test]
    fn an_empty_range_has_no_points() {
        let (n, ne) = var("n");
        let (i, _) = var("i");
        let mut an = Analyzer::new();
        an.assume_nonneg(&n);
        an.bind(&i, ne.clone(), Expr::int(-1) - ne);
        assert!(points(&an).is_empty());
    }

    #[test]
    fn ranges_as_wide_as_i64_draw_points_without_overflow() {
        let (i, ie) = var("i");
        let mut an = Analyzer::new();
        an.bind_const_bound(&i, i64::MIN, i64::MAX);
        assert!(!points(&an).is_empty());
        assert!(refuted(&an, &[], &le(ie, Expr::int(0))));
    }

    #[test]
    fn a_bound_that_wraps_proves_nothing() {
        // `3·H` with `H` up to `2^62` reaches `3·2^62`, past `i64::MAX`: its upper bound
        // wraps to `-2^62`, which once "proved" `3·H <= 0`.
        let (h, he) = var("H");
        let mut an = Analyzer::new();
        an.bind_const_bound(&h, 1, 1 << 62);
        let three_h = parse_poly(&(he.clone() * Expr::int(3)));
        assert!(!Ctx::new(&an).prove_le0_in_full(&three_h));
        assert!(!Ctx::new(&an).prove_le0_in_full(&three_h.add_const(-(1 << 62))));
        // What holds is still proved: `H <= 2^62`, and `-3·H <= 0`.
        assert!(Ctx::new(&an).prove_le0_in_full(&parse_poly(&he).add_const(-(1 << 62))));
        assert!(Ctx::new(&an).prove_le0_in_full(&three_h.neg()));
    }

    /// A random question over `n >= 0`, `i in [0, n)`, `j in [0, 8)`: a small linear
    /// form with an optional division, remainder or minimum.
    fn question() -> impl Strategy<Value = (i64, i64, i64, i64, u8, i64)> {
        (-3i64..=3, -3i64..=3, -3i64..=3, -20i64..=20, 0u8..4, 1i64..=9)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

        /// A refutation never changes an answer: what is refuted, the full proof does not
        /// prove either (the prover is sound, so this checks the points are real ones).
        #[test]
        fn a_refuted_question_is_never_proved(
            (kn, ki, kj, k0, form, d) in question(),
            fact in -4i64..=4,
            huge in any::<bool>(),
        ) {
            let (n, ne) = var("n");
            let (i, ie) = var("i");
            let (j, je) = var("j");
            let mut an = Analyzer::new();
            if huge {
                // A dimension as large as the emitter assumes for its widest index type:
                // its multiples overflow `i64`.
                an.bind_const_bound(&n, 0, 1 << 62);
            } else {
                an.assume_nonneg(&n);
            }
            an.bind(&i, Expr::int(0), ne.clone());
            an.bind(&j, Expr::int(0), Expr::int(8));
            // A fact relating the variables: `i + j <= n + fact`.
            an.assume(&Expr::le(ie.clone() + je.clone(), ne.clone() + Expr::int(fact)));
            let extra = match form {
                0 => Expr::int(0),
                1 => Expr::binary(BinOp::Div, ie.clone() + je.clone(), Expr::int(d)),
                2 => Expr::binary(BinOp::Mod, ie.clone(), Expr::int(d)),
                _ => Expr::binary(BinOp::Min, ie.clone(), je.clone() * Expr::int(d)),
            };
            let e = ne * Expr::int(kn) + ie * Expr::int(ki) + je * Expr::int(kj) + extra + Expr::int(k0);
            let p = parse_poly(&e);
            if refuted(&an, &[], &p) {
                prop_assert!(!Ctx::new(&an).prove_le0_in_full(&p), "refuted but proved: {e:?} <= 0");
            }
        }
    }
}
