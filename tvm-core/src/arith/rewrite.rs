//! The expression simplifier and the prover behind it.
//!
//! `i64` scalar expressions go through the canonical polynomial form ([`super::poly`]);
//! division, remainder, min, max and select are simplified on polynomials with rules
//! that are checked against the known variable ranges. Inequalities `p <= 0` are proved
//! by interval analysis, by relaxing bound variables one at a time to their symbolic
//! bounds (innermost first), and against assumed facts.

use super::fold::{cmp_values, fold_cast, fold_float, fold_int, int_value, negate_cmp, store_int};
use super::interval::{self, Iv, NEG_INF, POS_INF};
use super::poly::{cmp_expr, from_poly, merge_divmod, mul_polys, parse_poly, single, touches, Atom, Mono, Poly};
use super::{Analyzer, Fact};
use crate::dtype::DType;
use crate::tir::{BinOp, CheckKind, CmpOp, Expr, IterVar, Range, Reduce, Var};

/// How deep proofs may nest (a proof relaxes variables, which simplifies divisions and
/// minimums, which prove things).
const MAX_DEPTH: u32 = 3;

/// The work (proof steps and relaxations) one top-level proof may do; running out only
/// makes the answer "not proved". Keeps the cost of a proof bounded.
pub(crate) const PROOF_FUEL: u32 = 48;
/// The same for one top-level symbolic bound computation.
pub(crate) const BOUNDS_FUEL: u32 = 400;

/// How many answers of top-level proofs are kept (all are forgotten when full).
const REMEMBERED_PROOFS: usize = 1 << 14;

/// A top-level proof's question: the analyzer's state ([`Analyzer::state`]), the
/// polynomial and the context's facts.
type Question = (super::StateDigest, Poly, Vec<Fact>);

/// Answers of top-level proofs, shared by the threads that lower a kernel for several
/// targets at once (a question names the whole state it was asked in). A static, not a
/// thread local: nothing is left to destroy when the macro's threads end.
static PROOFS: std::sync::Mutex<std::collections::BTreeMap<Question, bool>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Forgets every remembered proof: a measurement of the compiler's time then sees what
/// a first expansion does (answers are never wrong, only faster).
pub fn forget_proofs() {
    proofs().clear();
    super::refute::forget();
}

/// The remembered answers (a panic while they were held leaves them as they were:
/// every entry is a whole answer).
fn proofs() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<Question, bool>> {
    PROOFS.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) struct Ctx<'a> {
    pub an: &'a Analyzer,
    /// Facts known inside the expression being simplified (the condition of a select
    /// while simplifying its branches, ...), on top of the analyzer's own.
    pub facts: Vec<Fact>,
    depth: u32,
    fuel: u32,
    /// Whether a top-level operation has set `fuel`.
    budgeted: bool,
    /// Relaxed forms with a min/max term met while proving (tried last).
    splittable: Vec<Poly>,
}

fn is_i64(e: &Expr) -> bool {
    e.dtype() == DType::I64
}

impl<'a> Ctx<'a> {
    pub fn new(an: &'a Analyzer) -> Ctx<'a> {
        Ctx { an, facts: Vec::new(), depth: 0, fuel: 0, budgeted: false, splittable: Vec::new() }
    }

    // ---------------------------------------------------------------- intervals

    pub fn interval(&self, e: &Expr) -> Iv {
        interval::eval(&self.an.vars, e, 0)
    }

    pub fn poly_interval(&self, p: &Poly) -> Iv {
        if p.wrapped {
            return Iv::FULL;
        }
        let mut acc = Iv::point(p.c as i128);
        for (m, &k) in &p.terms {
            let mut t = Iv::point(k as i128);
            for a in m {
                t = interval::norm(interval::mul(t, self.interval(&a.0)), DType::I64);
            }
            acc = interval::norm(interval::add(acc, t), DType::I64);
        }
        acc
    }

    // ---------------------------------------------------------------- facts

    /// Records that `c` (a simplified condition) is `positive`.
    pub fn assume(&mut self, c: &Expr, positive: bool) {
        decompose(c, positive, &mut self.facts);
    }

    fn le0_facts(&self) -> Vec<Poly> {
        self.an
            .facts
            .iter()
            .chain(self.facts.iter())
            .filter_map(|f| match f {
                Fact::Le0(p) => Some(p.clone()),
                Fact::Is(..) => None,
            })
            .collect()
    }

    /// `e` (simplified, boolean) replaced by a constant when a fact states it.
    fn fact_check(&self, e: Expr) -> Expr {
        if !e.dtype().is_scalar() || matches!(e, Expr::Bool(_)) {
            return e;
        }
        for f in self.an.facts.iter().chain(self.facts.iter()) {
            if let Fact::Is(x, v) = f {
                if *x == e {
                    return Expr::Bool(*v);
                }
            }
        }
        e
    }

    // ---------------------------------------------------------------- proving

    /// Runs `f` with `fuel` as its budget, unless it is part of an operation that
    /// already has one.
    pub fn with_budget<R>(&mut self, fuel: u32, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.budgeted {
            return f(self);
        }
        self.budgeted = true;
        self.fuel = fuel;
        let r = f(self);
        self.budgeted = false;
        r
    }

    /// Whether `p <= 0` holds for every value of the variables in their ranges (and
    /// under the facts). Sound; `false` when unsure.
    ///
    /// A top-level proof (with a budget of its own) depends on nothing but `p`, the
    /// analyzer's state and this context's facts, so its answer is remembered under
    /// them: the passes ask the same questions again and again (each `simplify` of an
    /// unchanged loop nest, each load of the same index).
    pub fn prove_le0(&mut self, p: &Poly) -> bool {
        if self.budgeted {
            return self.prove_le0_inner(p);
        }
        let key = (self.an.state, p.clone(), self.facts.clone());
        if let Some(&known) = proofs().get(&key) {
            return known;
        }
        // A question false at a known point is answered at once (see `refute`).
        let r =
            !super::refute::refuted(self.an, &self.facts, p) && self.with_budget(PROOF_FUEL, |s| s.prove_le0_inner(p));
        let mut m = proofs();
        if m.len() >= REMEMBERED_PROOFS {
            m.clear();
        }
        m.insert(key, r);
        r
    }

    /// The full proof of a top-level question, without the counterexamples and without
    /// the remembered answers (to check that a refutation never changes an answer).
    #[cfg(test)]
    pub(crate) fn prove_le0_in_full(&mut self, p: &Poly) -> bool {
        self.with_budget(PROOF_FUEL, |s| s.prove_le0_inner(p))
    }

    fn prove_le0_inner(&mut self, p: &Poly) -> bool {
        let mut p = p.clone();
        merge_divmod(&mut p);
        // The tightened form (a bound scaled by a vector width proves like the unscaled
        // one), tried after the scaled form, which `d·(x / d) == x - x % d` may need.
        let q = tighten(p.clone());
        if q != p && self.prove_le0_poly(&p) {
            return true;
        }
        self.prove_le0_poly(&q)
    }

    fn prove_le0_poly(&mut self, p: &Poly) -> bool {
        if p.wrapped {
            return false;
        }
        let p = p.clone();
        if let Some(c) = p.as_const() {
            return c <= 0;
        }
        if self.quick_le0(&p) {
            return true;
        }
        if self.without_divisions(&p).is_some_and(|q| self.quick_le0(&q)) || self.monotone_quotients(&p) {
            return true;
        }
        // A fact that is `p` up to a constant (the guard of a vector of rows, `y0[n] + r <
        // H - 63`, bounding its highest lane), before the splits below spend the fuel.
        let same_terms = |f: &Poly| !f.wrapped && f.terms == p.terms && p.c <= f.c;
        if self.an.facts.iter().chain(self.facts.iter()).any(|f| matches!(f, Fact::Le0(f) if same_terms(f))) {
            return true;
        }
        if self.depth >= MAX_DEPTH || self.fuel == 0 {
            return false;
        }
        // `min(a, b) + c <= 0` when either side is, `max(a, b) + c` when both are, each
        // proved in full at this depth, before relaxation spends the fuel on the whole:
        // a partitioned loop starts at a `min` of bounds, each non-negative for its own
        // reason.
        if minmax_atoms(&p) <= 2 {
            let split = match self.split_scaled_minmax(&p) {
                Some((true, p1, p2)) => self.prove_le0_inner(&p1) || self.prove_le0_inner(&p2),
                Some((false, p1, p2)) => self.prove_le0_inner(&p1) && self.prove_le0_inner(&p2),
                None => false,
            };
            if split {
                return true;
            }
        }
        if self.fuel == 0 {
            return false;
        }
        self.fuel -= 1;
        self.depth += 1;
        // The relaxed forms with a min/max that this proof's relaxations leave, kept apart
        // from those of the proof that called this one: a bound of this `p` (or of
        // `p - f`, which bounds `p` too) proves nothing about the caller's polynomial.
        let pending = std::mem::take(&mut self.splittable);
        let mut ok = self.relax_le0(&p);
        if !ok {
            for f in self.le0_facts() {
                let q = p.sub(&f);
                if self.quick_le0(&q) || self.relax_le0(&q) {
                    ok = true;
                    break;
                }
                // The fact scaled to cancel a term of `p` (`56·(r + y) >= 56` from
                // `r + y >= 1`, for an index that steps by rows).
                if let Some(s) = fact_scale(&p, &f) {
                    let q = p.sub(&f.scale(s));
                    if self.quick_le0(&q) || self.relax_le0(&q) {
                        ok = true;
                        break;
                    }
                }
            }
        }
        let relaxed = std::mem::replace(&mut self.splittable, pending);
        if !ok && self.depth == 1 {
            // A relaxed form with a min/max (a loop that starts or ends at a `min` of
            // bounds, as partitioned loops do), split and proved in full; at the top
            // level only, with a budget of its own (relaxing the other variables may
            // have spent the first).
            self.fuel = PROOF_FUEL;
            ok = relaxed.iter().any(|r| self.prove_le0_inner(r));
        }
        self.depth -= 1;
        ok
    }

    /// `p` scaled by the least common multiple `l` of the constant divisors `c > 1` of its
    /// terms `k·(x / c)`, with each such term replaced by a bound on the side of `k`'s
    /// sign, so that the result `<= 0` proves `p <= 0`: where `x >= 0`, `c·(x / c)` lies
    /// in `[x - (c - 1), x]`, and where `x <= 0` in `[x, x + c - 1]` (the division
    /// truncates toward zero; a term whose `x` has no known sign stays out, and so does
    /// the whole rewrite then). `None` without such a term, or if a coefficient would
    /// overflow.
    ///
    /// The bounds of partitioned loops need it: `min(S / 64, (S + 63) / 64)` is `S / 64`
    /// because `64·(S / 64) - 64·((S + 63) / 64) <= S - (S + 63 - 63) = 0`.
    fn without_divisions(&self, p: &Poly) -> Option<Poly> {
        /// The largest `l` tried: the divisors are split factors and vector widths.
        const MAX_LCM: i64 = 1 << 16;
        let mut l: i64 = 1;
        let mut divs = Vec::new();
        for (m, &k) in &p.terms {
            let Some(Expr::Binary { op: BinOp::Div, a: x, b: d }) = single(m) else { continue };
            let Some(c) = d.as_int().filter(|&c| c > 1) else { continue };
            let xp = parse_poly(x);
            let iv = self.poly_interval(&xp);
            let nonneg = if iv.lo >= 0 {
                true
            } else if iv.hi <= 0 {
                false
            } else {
                return None;
            };
            l = l.checked_mul(c / gcd(l.unsigned_abs(), c.unsigned_abs()) as i64).filter(|&l| l <= MAX_LCM)?;
            divs.push((m.clone(), k, xp, c, nonneg));
        }
        if divs.is_empty() {
            return None;
        }
        let mut rest = p.clone();
        for (m, ..) in &divs {
            rest.terms.remove(m);
        }
        let scaled = |q: &Poly, f: i64| -> Option<Poly> {
            let mut out = Poly::constant(q.c.checked_mul(f)?);
            for (m, &k) in &q.terms {
                out.add_term(m.clone(), k.checked_mul(f)?);
            }
            Some(out)
        };
        let mut out = scaled(&rest, l)?;
        for (_, k, xp, c, nonneg) in divs {
            // `l·k·(x / c) == k·(l / c)·(c·(x / c))`: the upper end of `c·(x / c)` for a
            // positive `k`, the lower end for a negative one.
            let slack = match (k > 0, nonneg) {
                (true, true) | (false, false) => 0,
                (false, true) => 1 - c,
                (true, false) => c - 1,
            };
            let end = Poly { c: xp.c.checked_add(slack)?, ..xp };
            out = out.add(&scaled(&end, k.checked_mul(l / c)?)?);
        }
        Some(out)
    }

    /// `k·(x / c) - k·(y / c) + e <= 0` for `k > 0`, a constant `c > 0` and a constant
    /// `e <= 0`: division by `c` (truncating or not) is non-decreasing, so it holds where
    /// `x <= y` (`min(S / 64, (S + 1) / 64)` is `S / 64`).
    fn monotone_quotients(&mut self, p: &Poly) -> bool {
        fn quotient(m: &Mono) -> Option<(&Expr, i64)> {
            match single(m) {
                Some(Expr::Binary { op: BinOp::Div, a: x, b: d }) => d.as_int().filter(|&c| c > 0).map(|c| (&**x, c)),
                _ => None,
            }
        }
        let mut terms = p.terms.iter();
        let (Some((m1, &k1)), Some((m2, &k2)), None) = (terms.next(), terms.next(), terms.next()) else {
            return false;
        };
        if p.c > 0 || k1.checked_neg() != Some(k2) {
            return false;
        }
        let (Some((x1, c1)), Some((x2, c2))) = (quotient(m1), quotient(m2)) else { return false };
        if c1 != c2 {
            return false;
        }
        let (x, y) = if k1 > 0 { (x1, x2) } else { (x2, x1) };
        self.prove_le0_inner(&parse_poly(x).sub(&parse_poly(y)))
    }

    /// `p == min(p1, p2)` (`true`) or `max(p1, p2)` (`false`) by its first term that is
    /// a min/max times factors of one known sign (`x·min(a, b) == min(x·a, x·b)` for
    /// `x >= 0`, `max` for `x <= 0`).
    fn split_scaled_minmax(&self, p: &Poly) -> Option<(bool, Poly, Poly)> {
        for (m, &k) in &p.terms {
            let mut found = None;
            for (i, a) in m.iter().enumerate() {
                if let Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a: x, b: y } = &*a.0 {
                    if found.is_some() {
                        found = None;
                        break;
                    }
                    found = Some((i, *op, x, y));
                }
            }
            let Some((i, op, x, y)) = found else { continue };
            let others: Mono = m.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, a)| a.clone()).collect();
            let scale = if others.is_empty() { Poly::constant(k) } else { Poly::mono(others, k) };
            let iv = self.poly_interval(&scale);
            let nonneg = iv.lo >= 0;
            if !nonneg && iv.hi > 0 {
                continue;
            }
            let mut rest = p.clone();
            rest.terms.remove(m);
            let p1 = rest.add(&mul_polys(&parse_poly(x), &scale));
            let p2 = rest.add(&mul_polys(&parse_poly(y), &scale));
            return Some(((op == BinOp::Min) == nonneg, p1, p2));
        }
        None
    }

    /// `p <= 0` by interval analysis alone, also trying `d·(x / d) == x - x % d`.
    fn quick_le0(&self, p: &Poly) -> bool {
        self.quick_le0_n(p, 3)
    }

    fn quick_le0_n(&self, p: &Poly, budget: u32) -> bool {
        if p.wrapped {
            return false;
        }
        if let Some(c) = p.as_const() {
            return c <= 0;
        }
        if self.poly_interval(p).hi <= 0 {
            return true;
        }
        if let Some(q) = div_to_mod(p) {
            if q.as_const().is_some_and(|c| c <= 0) || self.poly_interval(&q).hi <= 0 {
                return true;
            }
        }
        if budget == 0 {
            return false;
        }
        // p == min(p1, p2) <= 0 when either is; p == max(p1, p2) when both are.
        match distribute_minmax(p, &[]) {
            Some((true, p1, p2)) => self.quick_le0_n(&p1, budget - 1) || self.quick_le0_n(&p2, budget - 1),
            Some((false, p1, p2)) => self.quick_le0_n(&p1, budget - 1) && self.quick_le0_n(&p2, budget - 1),
            None => false,
        }
    }

    /// Whether the `i64` expression `e` is `>= 0`: as a divisor, it is then `>= 1`
    /// wherever the division has a value.
    fn prove_divisor(&mut self, e: &Expr) -> bool {
        is_i64(e) && self.prove_nonneg(&parse_poly(e))
    }

    pub fn prove_nonneg(&mut self, p: &Poly) -> bool {
        self.prove_le0(&p.neg())
    }

    /// Whether `-c < p < c`.
    fn prove_abs_lt(&mut self, p: &Poly, c: i64) -> bool {
        self.prove_le0(&p.add_const(1 - c)) && self.prove_le0(&p.neg().add_const(1 - c))
    }

    /// Bound variables of `p`, the most recently bound first.
    fn bound_vars_desc(&self, p: &Poly) -> Vec<Var> {
        let mut vs: Vec<(u64, Var)> =
            p.vars().into_iter().filter_map(|v| self.an.vars.get(&v).map(|i| (i.order, v))).collect();
        vs.sort_by_key(|x| std::cmp::Reverse(x.0));
        vs.into_iter().map(|(_, v)| v).collect()
    }

    fn relax_le0(&mut self, p: &Poly) -> bool {
        let mut cur = p.clone();
        for _ in 0..2 {
            let vars = self.bound_vars_desc(&cur);
            let mut changed = false;
            for v in vars {
                let vs = std::slice::from_ref(&v);
                if !cur.touches(vs) {
                    continue;
                }
                if let Some(n) = self.relax(&cur, vs, true) {
                    cur = n;
                    changed = true;
                    if self.quick_le0(&cur) {
                        return true;
                    }
                    if self.split_scaled_minmax(&cur).is_some() {
                        self.splittable.push(cur.clone());
                    }
                }
            }
            if !changed {
                break;
            }
        }
        false
    }

    // ---------------------------------------------------------------- relaxation

    /// A symbolic upper (or lower) bound of `p` over the ranges of `vs`, the other
    /// variables fixed; `None` when unbounded.
    ///
    /// A bound that wrapped on the way is no bound (`None`): every bound computed from one
    /// passes through here, so none reaches a division or a `min` atom, where its flag
    /// would be lost.
    pub fn relax(&mut self, p: &Poly, vs: &[Var], upper: bool) -> Option<Poly> {
        if p.wrapped {
            return None;
        }
        self.relax_unchecked(p, vs, upper).filter(|b| !b.wrapped)
    }

    fn relax_unchecked(&mut self, p: &Poly, vs: &[Var], upper: bool) -> Option<Poly> {
        if !p.touches(vs) {
            return Some(p.clone());
        }
        if self.fuel == 0 {
            return None;
        }
        self.fuel -= 1;
        if let Some((is_min, p1, p2)) = distribute_minmax(p, vs) {
            // p == min(p1, p2) (or max): bound both sides, keeping what they share.
            let b1 = self.relax(&p1, vs, upper);
            let b2 = self.relax(&p2, vs, upper);
            return match (b1, b2) {
                (Some(x), Some(y)) => Some(self.minmax(is_min, x, y)),
                (Some(x), None) | (None, Some(x)) if is_min == upper => Some(x),
                _ => None,
            };
        }
        let mut out = Poly::constant(p.c);
        for (m, &k) in &p.terms {
            if !m.iter().any(|a| touches(&a.0, vs)) {
                out.add_term(m.clone(), k);
                continue;
            }
            let up = (k > 0) == upper;
            if m.len() == 1 {
                let b = self.relax_atom(&m[0].0, vs, up)?;
                out = out.add(&b.scale(k));
                continue;
            }
            let (t, rest): (Vec<&Atom>, Vec<&Atom>) = m.iter().partition(|a| touches(&a.0, vs));
            if t.len() == 1 {
                let rest_poly = Poly::mono(rest.into_iter().cloned().collect(), k);
                let iv = self.poly_interval(&rest_poly);
                let up2 = if iv.lo >= 0 {
                    Some(upper)
                } else if iv.hi <= 0 {
                    Some(!upper)
                } else {
                    None
                };
                if let Some(up2) = up2 {
                    let b = self.relax_atom(&t[0].0, vs, up2)?;
                    out = out.add(&mul_polys(&rest_poly, &b));
                    continue;
                }
            }
            let b = self.term_bound(m, k, upper)?;
            out = out.add(&b);
        }
        Some(out)
    }

    /// A constant bound of `k·m` over every variable's range.
    fn term_bound(&self, m: &Mono, k: i64, upper: bool) -> Option<Poly> {
        let iv = self.poly_interval(&Poly::mono(m.clone(), k));
        const_end(iv, upper)
    }

    fn relax_atom(&mut self, a: &Expr, vs: &[Var], upper: bool) -> Option<Poly> {
        if !touches(a, vs) {
            return Some(Poly::atom(a.clone()));
        }
        match a {
            Expr::Var(v) => {
                let info = self.an.vars.get(v);
                let side = info.and_then(|i| if upper { i.max.as_ref() } else { i.min.as_ref() });
                match side {
                    Some(s) if is_i64(s) => Some(parse_poly(s)),
                    _ => const_end(self.interval(a), upper),
                }
            }
            Expr::Binary { op: BinOp::Div, a: x, b: d } if d.as_int().is_some_and(|c| c != 0) => {
                let c = d.as_int().unwrap();
                let bx = self.relax(&parse_poly(x), vs, (c > 0) == upper)?;
                Some(self.div(bx, Poly::constant(c)))
            }
            Expr::Binary { op: BinOp::Div, a: x, b: d } if !touches(d, vs) && self.prove_divisor(d) => {
                // x / d is non-decreasing in x for d >= 1 (and has no value for d == 0).
                let bx = self.relax(&parse_poly(x), vs, upper)?;
                let pd = parse_poly(d);
                Some(self.div(bx, pd))
            }
            Expr::Binary { op: BinOp::Mod, a: x, b: d }
                if d.as_int().is_some_and(|c| c != 0 && c != i64::MIN)
                    || (!touches(d, vs) && d.as_int().is_none() && self.prove_divisor(d)) =>
            {
                let pd = parse_poly(d);
                self.with_divisor(&pd, |s| s.relax_mod(x, d, vs, upper))
            }
            Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a: x, b: y } => {
                let bx = self.relax(&parse_poly(x), vs, upper);
                let by = self.relax(&parse_poly(y), vs, upper);
                let is_min = *op == BinOp::Min;
                match (bx, by) {
                    (Some(p), Some(q)) => Some(self.minmax(is_min, p, q)),
                    // min(x, y) <= x for an upper bound; max(x, y) >= x for a lower one.
                    (Some(p), None) | (None, Some(p)) if is_min == upper => Some(p),
                    _ => None,
                }
            }
            Expr::Select { then, otherwise, .. } if is_i64(then) => {
                let bt = self.relax(&parse_poly(then), vs, upper)?;
                let bo = self.relax(&parse_poly(otherwise), vs, upper)?;
                if is_partial(&bt) || is_partial(&bo) {
                    // Only one side is evaluated: a bound that may divide by zero where
                    // the select does not would be wrong (and comparing it with the
                    // other side would use facts that only hold where it is defined).
                    return const_end(self.interval(a), upper);
                }
                Some(self.minmax(!upper, bt, bo))
            }
            _ => const_end(self.interval(a), upper),
        }
    }

    /// Bounds of `x % d` over `vs`: `|x % d| < |d|`, with the sign of `x`; `x` itself
    /// when `|x| < |d|`.
    fn relax_mod(&mut self, x: &Expr, d: &Expr, vs: &[Var], upper: bool) -> Option<Poly> {
        let m = match d.as_int() {
            Some(c) => Poly::constant(c.abs()),
            None => parse_poly(d),
        };
        let px = parse_poly(x);
        let lo = self.relax(&px, vs, false);
        let hi = self.relax(&px, vs, true);
        let side = |lo: Option<Poly>, hi: Option<Poly>| if upper { hi } else { lo };
        let m1 = m.add_const(-1);
        if lo.as_ref().is_some_and(|l| self.prove_nonneg(l)) {
            if hi.as_ref().is_some_and(|h| self.prove_le0(&h.sub(&m1))) {
                return side(lo, hi);
            }
            return Some(if upper { m1 } else { Poly::constant(0) });
        }
        if hi.as_ref().is_some_and(|h| self.prove_le0(h)) {
            if lo.as_ref().is_some_and(|l| self.prove_le0(&l.neg().sub(&m1))) {
                return side(lo, hi);
            }
            return Some(if upper { Poly::constant(0) } else { m1.neg() });
        }
        Some(if upper { m1 } else { m1.neg() })
    }

    // ---------------------------------------------------------------- expressions

    /// Simplifies any expression.
    pub fn expr(&mut self, e: &Expr) -> Expr {
        if is_i64(e) {
            let p = self.poly(e);
            return from_poly(&p);
        }
        match e {
            Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_) => e.clone(),
            Expr::Var(_) => self.fact_check(e.clone()),
            Expr::Binary { op, a, b } => {
                let a = self.expr(a);
                let b = self.expr(b);
                self.binary(*op, a, b)
            }
            Expr::Cmp { op, a, b } => {
                let a = self.expr(a);
                let b = self.expr(b);
                let r = self.cmp(*op, a, b);
                self.fact_check(r)
            }
            Expr::And(a, b) => self.and(a, b),
            Expr::Or(a, b) => self.or(a, b),
            Expr::Not(a) => {
                let a = self.expr(a);
                let r = self.not(a);
                self.fact_check(r)
            }
            Expr::Neg(a) => {
                let a = self.expr(a);
                self.neg(a)
            }
            Expr::Select { cond, then, otherwise } => self.select(cond, then, otherwise),
            Expr::Cast { dtype, value } => {
                let v = self.expr(value);
                self.cast(*dtype, v)
            }
            _ => self.children(e),
        }
    }

    /// A simplified condition.
    pub fn cond(&mut self, e: &Expr) -> Expr {
        let r = self.expr(e);
        self.fact_check(r)
    }

    /// The node with its children simplified.
    fn children(&mut self, e: &Expr) -> Expr {
        match e {
            Expr::Call { func, args } => Expr::Call { func: *func, args: args.iter().map(|a| self.expr(a)).collect() },
            Expr::ProducerLoad { tensor, indices, dtype } => Expr::ProducerLoad {
                tensor: *tensor,
                indices: indices.iter().map(|a| self.expr(a)).collect(),
                dtype: *dtype,
            },
            Expr::Load { buffer, indices } => {
                Expr::Load { buffer: buffer.clone(), indices: indices.iter().map(|a| self.expr(a)).collect() }
            }
            Expr::Ramp { base, stride, lanes } => {
                Expr::Ramp { base: Box::new(self.expr(base)), stride: Box::new(self.expr(stride)), lanes: *lanes }
            }
            Expr::Broadcast { value, lanes } => Expr::Broadcast { value: Box::new(self.expr(value)), lanes: *lanes },
            Expr::Reduce(r) => {
                let axes = r
                    .axes
                    .iter()
                    .map(|ax| IterVar {
                        var: ax.var.clone(),
                        dom: Range { min: self.expr(&ax.dom.min), extent: self.expr(&ax.dom.extent) },
                        kind: ax.kind,
                    })
                    .collect();
                let r = Reduce { axes, ..(**r).clone() };
                Expr::Reduce(Box::new(r.map_sources(|s| self.expr(&s))))
            }
            Expr::Check { value, kind, site } => {
                let v = self.expr(value);
                let scalar = v.dtype().lanes == 1;
                let (kind, holds) = match kind {
                    CheckKind::Index { extent } => {
                        let n = self.expr(extent);
                        // A vector index's lowest and highest lanes: a ramp with a constant
                        // stride (the vector load of a row under a guard that bounds it) or
                        // a broadcast.
                        let ends = match &v {
                            _ if scalar => Some((v.clone(), v.clone())),
                            Expr::Ramp { base, stride, lanes } => stride.as_int().map(|st| {
                                let last = (**base).clone() + Expr::int(st * (*lanes as i64 - 1));
                                if st >= 0 {
                                    ((**base).clone(), last)
                                } else {
                                    (last, (**base).clone())
                                }
                            }),
                            Expr::Broadcast { value, .. } => Some(((**value).clone(), (**value).clone())),
                            _ => None,
                        };
                        let holds = ends.is_some_and(|(lo, hi)| {
                            self.cond(&Expr::ge(lo, Expr::int(0))) == Expr::Bool(true)
                                && self.cond(&Expr::lt(hi, n.clone())) == Expr::Bool(true)
                        });
                        (CheckKind::Index { extent: Box::new(n) }, holds)
                    }
                    CheckKind::Divisor => {
                        let zero = Expr::typed_int(0, v.dtype());
                        let holds = scalar && self.cond(&Expr::cmp(CmpOp::Ne, v.clone(), zero)) == Expr::Bool(true);
                        (CheckKind::Divisor, holds)
                    }
                };
                // A check proved to hold where it stands (after loop partitioning, say) goes.
                if holds {
                    v
                } else {
                    Expr::Check { value: Box::new(v), kind, site: *site }
                }
            }
            _ => e.clone(),
        }
    }

    /// The canonical polynomial of an `i64` scalar expression.
    pub fn poly(&mut self, e: &Expr) -> Poly {
        match e {
            Expr::Int { value, .. } => Poly::constant(*value),
            Expr::Var(_) => Poly::atom(e.clone()),
            Expr::Binary { op, a, b } => {
                let x = self.poly(a);
                let y = self.poly(b);
                match op {
                    BinOp::Add => x.add(&y),
                    BinOp::Sub => x.sub(&y),
                    BinOp::Mul => mul_polys(&x, &y),
                    BinOp::Div => self.div(x, y),
                    BinOp::Mod => self.modulo(x, y),
                    BinOp::Min => self.minmax(true, x, y),
                    BinOp::Max => self.minmax(false, x, y),
                }
            }
            Expr::Neg(a) => self.poly(a).neg(),
            Expr::Select { cond, then, otherwise } => {
                let s = self.select(cond, then, otherwise);
                if matches!(s, Expr::Select { .. }) {
                    self.atom_checked(s)
                } else {
                    parse_poly(&s)
                }
            }
            Expr::Cast { dtype, value } => {
                let v = self.expr(value);
                let c = self.cast(*dtype, v);
                if matches!(c, Expr::Cast { .. }) {
                    self.atom_checked(c)
                } else {
                    parse_poly(&c)
                }
            }
            Expr::Check { .. } => match self.children(e) {
                c @ Expr::Check { .. } => Poly::atom(c),
                v => parse_poly(&v),
            },
            _ => Poly::atom(self.children(e)),
        }
    }

    /// An atom, or its value when the ranges pin it to one.
    fn atom_checked(&self, e: Expr) -> Poly {
        match self.interval(&e).as_point() {
            Some(v) => Poly::constant(v),
            None => Poly::atom(e),
        }
    }

    /// `a / b` (truncating).
    pub fn div(&mut self, a: Poly, b: Poly) -> Poly {
        if let Some(cb) = b.as_const() {
            if cb == 0 {
                return Poly::atom(Expr::binary(BinOp::Div, from_poly(&a), Expr::int(0)));
            }
            if let Some(ca) = a.as_const() {
                return match ca.checked_div(cb) {
                    Some(v) => Poly::constant(v),
                    None => Poly::atom(Expr::binary(BinOp::Div, Expr::int(ca), Expr::int(cb))),
                };
            }
            if cb == 1 {
                return a;
            }
            if cb == -1 {
                return a.neg();
            }
            if cb > 0 {
                return self.div_pos(a, cb);
            }
            if cb != i64::MIN {
                // x / -c == -(x / c) when truncating.
                return self.div_pos(a, -cb).neg();
            }
            return self.atom_checked(Expr::binary(BinOp::Div, from_poly(&a), Expr::int(cb)));
        }
        if a.is_zero() {
            return Poly::constant(0);
        }
        if a == b {
            return Poly::constant(1);
        }
        self.with_divisor(&b.clone(), |s| s.div_sym(a, b))
    }

    /// Runs `f` knowing that the symbolic divisor `d` is `>= 1` when it is known to be
    /// `>= 0`: the division only has a value when `d != 0`.
    fn with_divisor<R>(&mut self, d: &Poly, f: impl FnOnce(&mut Self) -> R) -> R {
        let n = self.facts.len();
        if self.prove_nonneg(d) {
            self.facts.push(Fact::Le0(d.neg().add_const(1)));
        }
        let r = f(self);
        self.facts.truncate(n);
        r
    }

    /// `a / b` for a symbolic `b`.
    fn div_sym(&mut self, a: Poly, b: Poly) -> Poly {
        if self.prove_nonneg(&a) && self.prove_le0(&a.sub(&b).add_const(1)) {
            return Poly::constant(0);
        }
        if let Some((q, r)) = self.split_by_atom(&a, &b) {
            // (d·q + r) / d == q + r / d when the dividend and r are >= 0 and d >= 1.
            if self.prove_le0(&r.sub(&b).add_const(1)) {
                return q;
            }
            let rd = self.div(r, b);
            return q.add(&rd);
        }
        self.atom_checked(Expr::binary(BinOp::Div, from_poly(&a), from_poly(&b)))
    }

    /// For a divisor that is one atom `d` (a symbolic extent): `a == d·q + r` with `r`
    /// free of `d`, `q` non-zero, when `a >= 0`, `r >= 0` and `d >= 1` are proved.
    fn split_by_atom(&mut self, a: &Poly, b: &Poly) -> Option<(Poly, Poly)> {
        let d = Atom::new(b.single_atom()?.clone());
        let mut q = Poly::default();
        let mut r = Poly::constant(a.c);
        for (m, &k) in &a.terms {
            match m.iter().position(|x| *x == d) {
                Some(i) => {
                    let mut rest = m.clone();
                    rest.remove(i);
                    q.add_term(rest, k);
                }
                None => r.add_term(m.clone(), k),
            }
        }
        if q.is_zero() || !self.prove_le0(&b.neg().add_const(1)) || !self.prove_nonneg(a) {
            return None;
        }
        if self.prove_nonneg(&r) {
            return Some((q, r));
        }
        // d·q + r == d·(q - 1) + (r + d).
        let (q2, r2) = (q.add_const(-1), r.add(b));
        if !q2.is_zero() && self.prove_nonneg(&r2) {
            return Some((q2, r2));
        }
        None
    }

    /// `a / c` for a constant `c > 1`.
    fn div_pos(&mut self, a: Poly, c: i64) -> Poly {
        if let Some(ca) = a.as_const() {
            return Poly::constant(ca / c);
        }
        let (q, r) = split(&a, c);
        if r.is_zero() {
            // An exact multiple of c.
            return q;
        }
        if self.prove_abs_lt(&a, c) {
            return Poly::constant(0);
        }
        if !q.is_zero() && self.prove_nonneg(&a) && self.prove_nonneg(&r) {
            // (c·q + r) / c == q + r / c when both the dividend and r are >= 0.
            let rd = self.div_pos(r, c);
            return q.add(&rd);
        }
        if let Some((x, k)) = self.split_by_divisor(&a, c) {
            // (g·x + r) / (g·k) == x / k when 0 <= r < g and the dividend is >= 0.
            return self.div_pos(x, k);
        }
        if let Some(Expr::Binary { op: BinOp::Div, a: x, b: d }) = a.single_atom() {
            if let Some(c2) = d.as_int().filter(|&c2| c2 > 0) {
                if let Some(cc) = c.checked_mul(c2) {
                    // (x / c2) / c == x / (c2·c) when truncating, for every x.
                    let px = parse_poly(x);
                    return self.div_pos(px, cc);
                }
            }
        }
        self.atom_checked(Expr::binary(BinOp::Div, from_poly(&a), Expr::int(c)))
    }

    /// For a constant `c > 1`: `a == g·x + r` with `g` a proper divisor of `c` (`1 < g <
    /// c`, the largest that works), `0 <= r < g` and `a >= 0`; returns `x` and `k = c / g`.
    /// What makes `(4·t + v) / 8` (with `v < 4`) `t / 2`: the fused and split index of a
    /// vectorized load (TVM's canonical simplifier does the same).
    fn split_by_divisor(&mut self, a: &Poly, c: i64) -> Option<(Poly, i64)> {
        if c > 4096 || !self.prove_nonneg(a) {
            return None;
        }
        for g in (2..c).rev().filter(|g| c % g == 0) {
            let (x, r) = split(a, g);
            if x.is_zero() {
                continue;
            }
            if self.prove_nonneg(&r) && self.prove_le0(&r.add_const(1 - g)) {
                return Some((x, c / g));
            }
        }
        None
    }

    /// `a % b` (the remainder has the sign of `a`).
    pub fn modulo(&mut self, a: Poly, b: Poly) -> Poly {
        if let Some(cb) = b.as_const() {
            if cb == 0 {
                return Poly::atom(Expr::binary(BinOp::Mod, from_poly(&a), Expr::int(0)));
            }
            if let Some(ca) = a.as_const() {
                return match ca.checked_rem(cb) {
                    Some(v) => Poly::constant(v),
                    None => Poly::atom(Expr::binary(BinOp::Mod, Expr::int(ca), Expr::int(cb))),
                };
            }
            if cb == 1 || cb == -1 {
                return Poly::constant(0);
            }
            if cb == i64::MIN {
                return self.atom_checked(Expr::binary(BinOp::Mod, from_poly(&a), Expr::int(cb)));
            }
            // x % -c == x % c.
            return self.mod_pos(a, cb.abs());
        }
        if a.is_zero() || a == b {
            return Poly::constant(0);
        }
        self.with_divisor(&b.clone(), |s| s.mod_sym(a, b))
    }

    /// `a % b` for a symbolic `b`.
    fn mod_sym(&mut self, a: Poly, b: Poly) -> Poly {
        if self.prove_nonneg(&a) && self.prove_le0(&a.sub(&b).add_const(1)) {
            return a;
        }
        if let Some((_, r)) = self.split_by_atom(&a, &b) {
            // (d·q + r) % d == r % d when the dividend and r are >= 0 and d >= 1.
            return self.modulo(r, b);
        }
        self.atom_checked(Expr::binary(BinOp::Mod, from_poly(&a), from_poly(&b)))
    }

    /// `a % c` for a constant `c > 1`.
    fn mod_pos(&mut self, a: Poly, c: i64) -> Poly {
        if let Some(ca) = a.as_const() {
            return Poly::constant(ca % c);
        }
        let (q, r) = split(&a, c);
        if r.is_zero() {
            return Poly::constant(0);
        }
        if self.prove_abs_lt(&a, c) {
            return a;
        }
        if !q.is_zero() && self.prove_nonneg(&a) && self.prove_nonneg(&r) {
            return self.mod_pos(r, c);
        }
        if let Some((x, k)) = self.split_by_divisor(&a, c) {
            // (g·x + r) % (g·k) == g·(x % k) + r when 0 <= r < g and the dividend is >= 0.
            let g = c / k;
            let r = a.sub(&x.scale(g));
            return self.mod_pos(x, k).scale(g).add(&r);
        }
        if let Some(Expr::Binary { op: BinOp::Mod, a: x, b: d }) = a.single_atom() {
            if d.as_int().is_some_and(|c2| c2 != i64::MIN && c2 != 0 && c2.abs() % c == 0) {
                // (x % c2) % c == x % c when c divides c2, for every x.
                let px = parse_poly(x);
                return self.mod_pos(px, c);
            }
        }
        self.atom_checked(Expr::binary(BinOp::Mod, from_poly(&a), Expr::int(c)))
    }

    /// `min(a, b)` (or `max`).
    /// Whether `op` is dominated by `other` in a `min` (`is_min`) or `max` as the same `x`
    /// rounded up to multiples `a` and `b` where `a` divides `b`: the multiple of `b` is a
    /// multiple of `a` too, and at least `x`, so it is never below the other (for `x >=
    /// 0`, where the division rounds down). A stage read through splits by 32 and by 64
    /// has `max(((N + 31) / 32) * 32, ((N + 63) / 64) * 64)` as its extent; the prover
    /// cannot see it through the divisions, and every bound proof of the code generator
    /// then carried both.
    fn rounded_up_further(&mut self, is_min: bool, op: &Poly, other: &Poly) -> bool {
        let (Some((x, a)), Some((y, b))) = (round_up(op), round_up(other)) else { return false };
        let (small, large) = (a.min(b), a.max(b));
        // max drops the smaller multiple, min the larger
        x == y && a != b && a == if is_min { large } else { small } && large % small == 0 && self.prove_le0(&x.neg())
    }

    pub fn minmax(&mut self, is_min: bool, a: Poly, b: Poly) -> Poly {
        let op = if is_min { BinOp::Min } else { BinOp::Max };
        let mut ops = Vec::new();
        flatten_minmax(op, a, &mut ops);
        flatten_minmax(op, b, &mut ops);
        // One constant operand.
        let mut konst: Option<i64> = None;
        ops.retain(|p| match p.as_const() {
            Some(c) => {
                konst = Some(match konst {
                    None => c,
                    Some(k) if is_min => k.min(c),
                    Some(k) => k.max(c),
                });
                false
            }
            None => true,
        });
        if let Some(k) = konst {
            ops.push(Poly::constant(k));
        }
        // Drop operands another one dominates.
        let mut i = 0;
        while i < ops.len() && ops.len() > 1 {
            let mut dominated = false;
            for j in 0..ops.len() {
                if i == j {
                    continue;
                }
                let d = if is_min { ops[j].sub(&ops[i]) } else { ops[i].sub(&ops[j]) };
                if self.rounded_up_further(is_min, &ops[i], &ops[j]) || self.prove_le0(&d) {
                    dominated = true;
                    break;
                }
            }
            if dominated {
                ops.remove(i);
            } else {
                i += 1;
            }
        }
        if ops.len() == 1 {
            return ops.pop().unwrap();
        }
        if ops.len() == 2 {
            // min(x + t, y + t) == min(x, y) + t.
            let mut common = Poly::default();
            for (m, &k) in &ops[0].terms {
                if ops[1].terms.get(m) == Some(&k) {
                    common.add_term(m.clone(), k);
                }
            }
            if ops[0].c == ops[1].c {
                common.c = ops[0].c;
            }
            if !common.is_zero() {
                let x = ops[0].sub(&common);
                let y = ops[1].sub(&common);
                return common.add(&self.minmax(is_min, x, y));
            }
        }
        let mut es: Vec<Expr> = ops.iter().map(from_poly).collect();
        es.sort_by(cmp_expr);
        let mut it = es.into_iter();
        let first = it.next().unwrap();
        let e = it.fold(first, |acc, x| Expr::binary(op, acc, x));
        self.atom_checked(e)
    }

    fn select(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr) -> Expr {
        let c = self.cond(cond);
        match uniform_bool(&c) {
            Some(true) => return self.expr(then),
            Some(false) => return self.expr(otherwise),
            None => {}
        }
        let scalar = c.dtype().is_scalar();
        let n = self.facts.len();
        if scalar {
            self.assume(&c, true);
        }
        let t = self.expr(then);
        self.facts.truncate(n);
        if scalar {
            self.assume(&c, false);
        }
        let o = self.expr(otherwise);
        self.facts.truncate(n);
        if t == o {
            return t;
        }
        Expr::select(c, t, o)
    }

    fn and(&mut self, a: &Expr, b: &Expr) -> Expr {
        let a = self.cond(a);
        if uniform_bool(&a) == Some(false) {
            return a;
        }
        let n = self.facts.len();
        if a.dtype().is_scalar() {
            self.assume(&a, true);
        }
        let b = self.cond(b);
        self.facts.truncate(n);
        match (uniform_bool(&a), uniform_bool(&b)) {
            (Some(true), _) => b,
            (_, Some(true)) => a,
            // `a` is evaluated first: where it checks a value (an index, a divisor), a bad
            // one must still fail, so `a && false` stays.
            (_, Some(false)) if !crate::tir::visit::expr_has_check(&a) => b,
            _ if a == b => a,
            _ => Expr::and(a, b),
        }
    }

    fn or(&mut self, a: &Expr, b: &Expr) -> Expr {
        let a = self.cond(a);
        if uniform_bool(&a) == Some(true) {
            return a;
        }
        let n = self.facts.len();
        if a.dtype().is_scalar() {
            self.assume(&a, false);
        }
        let b = self.cond(b);
        self.facts.truncate(n);
        match (uniform_bool(&a), uniform_bool(&b)) {
            (Some(false), _) => b,
            (_, Some(false)) => a,
            // As in `and`: `a || true` stays where `a` checks a value.
            (_, Some(true)) if !crate::tir::visit::expr_has_check(&a) => b,
            _ if a == b => a,
            _ => Expr::or(a, b),
        }
    }

    fn not(&mut self, a: Expr) -> Expr {
        match a {
            Expr::Bool(b) => Expr::Bool(!b),
            Expr::Not(x) => *x,
            Expr::Cmp { op, a: x, b: y } if x.dtype().is_integer() || x.dtype().is_bool() => {
                self.cmp(negate_cmp(op), *x, *y)
            }
            a => Expr::not(a),
        }
    }

    fn neg(&mut self, a: Expr) -> Expr {
        match a {
            Expr::Int { value, dtype } => match store_int(-int_value(value, dtype), dtype) {
                Some(v) => Expr::typed_int(v, dtype),
                None => Expr::Neg(Box::new(Expr::Int { value, dtype })),
            },
            Expr::Float { value, dtype } => Expr::float(-value, dtype),
            Expr::Neg(x) => *x,
            a => Expr::Neg(Box::new(a)),
        }
    }

    fn cast(&mut self, dtype: DType, v: Expr) -> Expr {
        if v.dtype().element() == dtype.element() {
            return v;
        }
        if let Some(c) = fold_cast(dtype, &v) {
            return c;
        }
        Expr::cast(dtype, v)
    }

    /// `a op b` for operands that are not `i64` scalars (already simplified).
    fn binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let dt = a.dtype();
        if !dt.is_scalar() {
            if let (Expr::Broadcast { value: x, lanes: l1 }, Expr::Broadcast { value: y, lanes: l2 }) = (&a, &b) {
                if l1 == l2 {
                    let inner = Expr::binary(op, (**x).clone(), (**y).clone());
                    return Expr::Broadcast { value: Box::new(self.expr(&inner)), lanes: *l1 };
                }
            }
            return Expr::binary(op, a, b);
        }
        if dt.is_integer() {
            return self.int_binary(op, a, b, dt);
        }
        if dt.is_float() {
            if let (Expr::Float { value: x, .. }, Expr::Float { value: y, .. }) = (&a, &b) {
                if let Some(r) = fold_float(op, dt, *x, *y) {
                    return Expr::float(r, dt);
                }
            }
        }
        Expr::binary(op, a, b)
    }

    fn int_binary(&mut self, op: BinOp, a: Expr, b: Expr, dt: DType) -> Expr {
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            if let Some(r) = fold_int(op, dt, x, y) {
                return Expr::typed_int(r, dt);
            }
            return Expr::binary(op, a, b);
        }
        let val = |e: &Expr| e.as_int().map(|v| int_value(v, dt));
        let (va, vb) = (val(&a), val(&b));
        let zero = || Expr::typed_int(0, dt);
        match op {
            BinOp::Add if va == Some(0) => return b,
            BinOp::Add | BinOp::Sub if vb == Some(0) => return a,
            BinOp::Sub if a == b => return zero(),
            BinOp::Mul if va == Some(1) => return b,
            BinOp::Mul if vb == Some(1) => return a,
            BinOp::Mul if va == Some(0) || vb == Some(0) => return zero(),
            BinOp::Div if vb == Some(1) => return a,
            BinOp::Mod if vb == Some(1) => return zero(),
            BinOp::Div | BinOp::Mod if vb.is_some_and(|c| c > 1) => {
                let c = vb.unwrap();
                let ia = self.interval(&a);
                if ia.lo > -c && ia.hi < c {
                    return if op == BinOp::Div { zero() } else { a };
                }
            }
            BinOp::Min | BinOp::Max => {
                if a == b {
                    return a;
                }
                let (ia, ib) = (self.interval(&a), self.interval(&b));
                let is_min = op == BinOp::Min;
                if ia.hi <= ib.lo {
                    return if is_min { a } else { b };
                }
                if ib.hi <= ia.lo {
                    return if is_min { b } else { a };
                }
            }
            _ => {}
        }
        Expr::binary(op, a, b)
    }

    /// `a op b` (operands already simplified).
    fn cmp(&mut self, op: CmpOp, a: Expr, b: Expr) -> Expr {
        let dt = a.dtype();
        if dt == DType::I64 {
            let d = parse_poly(&a).sub(&parse_poly(&b));
            return self.cmp_poly(op, d);
        }
        if !dt.is_scalar() {
            return Expr::cmp(op, a, b);
        }
        if dt.is_integer() || dt.is_bool() {
            let konst = |e: &Expr| match e {
                Expr::Int { value, dtype } => Some(int_value(*value, *dtype)),
                Expr::Bool(v) => Some(*v as i128),
                _ => None,
            };
            if let (Some(x), Some(y)) = (konst(&a), konst(&b)) {
                return Expr::Bool(cmp_values(op, x, y));
            }
            if a == b {
                return Expr::Bool(matches!(op, CmpOp::Le | CmpOp::Ge | CmpOp::Eq));
            }
            let (ia, ib) = (self.interval(&a), self.interval(&b));
            let (t, f) = match op {
                CmpOp::Lt => (ia.hi < ib.lo, ia.lo >= ib.hi),
                CmpOp::Le => (ia.hi <= ib.lo, ia.lo > ib.hi),
                CmpOp::Gt => (ia.lo > ib.hi, ia.hi <= ib.lo),
                CmpOp::Ge => (ia.lo >= ib.hi, ia.hi < ib.lo),
                CmpOp::Eq => (ia.lo == ia.hi && ib.lo == ib.hi && ia.lo == ib.lo, ia.hi < ib.lo || ib.hi < ia.lo),
                CmpOp::Ne => (ia.hi < ib.lo || ib.hi < ia.lo, ia.lo == ia.hi && ib.lo == ib.hi && ia.lo == ib.lo),
            };
            if t || f {
                return Expr::Bool(t);
            }
        } else if dt.is_float() {
            if let (Expr::Float { value: x, .. }, Expr::Float { value: y, .. }) = (&a, &b) {
                return Expr::Bool(cmp_values(op, *x, *y));
            }
        }
        Expr::cmp(op, a, b)
    }

    /// `d op 0` for an `i64` polynomial `d`.
    fn cmp_poly(&mut self, op: CmpOp, d: Poly) -> Expr {
        if let Some(c) = d.as_const() {
            return Expr::Bool(cmp_values(op, c, 0));
        }
        // d <= -1, d >= 0, d <= 0, d >= 1
        let lt0 = d.add_const(1);
        let ge0 = d.neg();
        let le0 = d.clone();
        let gt0 = d.neg().add_const(1);
        let decided = match op {
            CmpOp::Lt => self.decide(&[&lt0], false, &[&ge0], false),
            CmpOp::Le => self.decide(&[&le0], false, &[&gt0], false),
            CmpOp::Gt => self.decide(&[&gt0], false, &[&le0], false),
            CmpOp::Ge => self.decide(&[&ge0], false, &[&lt0], false),
            CmpOp::Eq => self.decide(&[&le0, &ge0], true, &[&lt0, &gt0], false),
            CmpOp::Ne => self.decide(&[&lt0, &gt0], false, &[&le0, &ge0], true),
        };
        if let Some(v) = decided {
            return Expr::Bool(v);
        }
        cmp_form(op, &d)
    }

    /// `Some(true)` if the polys of `t` are proved `<= 0` (all of them for `t_all`, one
    /// otherwise), `Some(false)` if those of `f` are.
    fn decide(&mut self, t: &[&Poly], t_all: bool, f: &[&Poly], f_all: bool) -> Option<bool> {
        if self.prove_set(t, t_all) {
            return Some(true);
        }
        if self.prove_set(f, f_all) {
            return Some(false);
        }
        None
    }

    fn prove_set(&mut self, ps: &[&Poly], all: bool) -> bool {
        if all {
            ps.iter().all(|p| self.prove_le0(p))
        } else {
            ps.iter().any(|p| self.prove_le0(p))
        }
    }
}

/// `p` with every `k·(x / d)` whose coefficient `d` divides written `(k/d)·(x - x % d)`
/// (true for truncating division), when there is one.
fn div_to_mod(p: &Poly) -> Option<Poly> {
    let mut out = Poly::constant(p.c);
    let mut changed = false;
    for (m, &k) in &p.terms {
        if let Some(Expr::Binary { op: BinOp::Div, a: x, b: d }) = single(m) {
            if let Some(dv) = d.as_int().filter(|&dv| dv > 0 && k % dv == 0) {
                let px = parse_poly(x);
                let rem = Poly::atom(Expr::binary(BinOp::Mod, (**x).clone(), Expr::int(dv)));
                out = out.add(&px.sub(&rem).scale(k / dv));
                changed = true;
                continue;
            }
        }
        out.add_term(m.clone(), k);
    }
    changed.then_some(out)
}

/// `p == min(p1, p2)` (`true`) or `max(p1, p2)` (`false`) by moving the rest of `p`
/// into the first min/max term (one that mentions `vs`, unless `vs` is empty), so that
/// the rest can cancel with its operands.
fn distribute_minmax(p: &Poly, vs: &[Var]) -> Option<(bool, Poly, Poly)> {
    for (m, &k) in &p.terms {
        let Some(Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a: x, b: y }) = single(m) else {
            continue;
        };
        if !vs.is_empty() && !touches(&m[0].0, vs) {
            continue;
        }
        let mut rest = p.clone();
        rest.terms.remove(m);
        if rest.terms.is_empty() && vs.is_empty() {
            // Nothing to cancel; the interval of the atom already covers it.
            return None;
        }
        let p1 = rest.add(&parse_poly(x).scale(k));
        let p2 = rest.add(&parse_poly(y).scale(k));
        return Some(((*op == BinOp::Min) == (k > 0), p1, p2));
    }
    None
}

/// Whether `p` may have no value: it divides by something not known to be a non-zero
/// constant.
fn is_partial(p: &Poly) -> bool {
    let mut found = false;
    for m in p.terms.keys() {
        for a in m {
            crate::tir::visit::for_each_expr(&a.0, &mut |x| {
                if let Expr::Binary { op: BinOp::Div | BinOp::Mod, b, .. } = x {
                    found |= b.as_int().is_none_or(|c| c == 0);
                }
            });
        }
    }
    found
}

/// A constant end of an interval, when finite.
fn const_end(iv: Iv, upper: bool) -> Option<Poly> {
    let v = if upper { iv.hi } else { iv.lo };
    (v > NEG_INF && v < POS_INF && v >= i64::MIN as i128 && v <= i64::MAX as i128).then(|| Poly::constant(v as i64))
}

/// `a == c·q + r` where `q` takes the terms whose coefficients `c` divides and the
/// multiple of `c` in the constant, `r` the rest (its constant in `[0, c)`).
fn split(a: &Poly, c: i64) -> (Poly, Poly) {
    let mut q = Poly::constant(a.c.div_euclid(c));
    let mut r = Poly::constant(a.c.rem_euclid(c));
    for (m, &k) in &a.terms {
        if k % c == 0 {
            q.add_term(m.clone(), k / c);
        } else {
            r.add_term(m.clone(), k);
        }
    }
    (q, r)
}

fn flatten_minmax(op: BinOp, p: Poly, out: &mut Vec<Poly>) {
    if let Some(Expr::Binary { op: o, a, b }) = p.single_atom() {
        if *o == op {
            flatten_minmax(op, parse_poly(a), out);
            flatten_minmax(op, parse_poly(b), out);
            return;
        }
    }
    out.push(p);
}

/// The readable form of `d op 0`: positive terms on the left, negative ones on the right,
/// the constant on the side without terms (or the right).
fn cmp_form(op: CmpOp, d: &Poly) -> Expr {
    let mut pos = Poly::default();
    let mut neg = Poly::default();
    for (m, &k) in &d.terms {
        if k > 0 {
            pos.add_term(m.clone(), k);
        } else {
            neg.add_term(m.clone(), k.wrapping_neg());
        }
    }
    let (lhs, rhs) =
        if pos.terms.is_empty() { (Poly::constant(d.c), neg) } else { (pos, neg.add_const(d.c.wrapping_neg())) };
    Expr::cmp(op, from_poly(&lhs), from_poly(&rhs))
}

/// Splits a simplified condition into facts.
pub(crate) fn decompose(c: &Expr, positive: bool, out: &mut Vec<Fact>) {
    match c {
        Expr::Bool(_) => {}
        Expr::And(a, b) if positive => {
            decompose(a, true, out);
            decompose(b, true, out);
        }
        Expr::Or(a, b) if !positive => {
            decompose(a, false, out);
            decompose(b, false, out);
        }
        Expr::Not(a) => decompose(a, !positive, out),
        Expr::Cmp { op, a, b } if a.dtype() == DType::I64 => {
            let op = if positive { *op } else { negate_cmp(*op) };
            let d = parse_poly(a).sub(&parse_poly(b));
            match op {
                CmpOp::Lt => out.push(Fact::Le0(tighten(d.add_const(1)))),
                CmpOp::Le => out.push(Fact::Le0(tighten(d))),
                CmpOp::Gt => out.push(Fact::Le0(tighten(d.neg().add_const(1)))),
                CmpOp::Ge => out.push(Fact::Le0(tighten(d.neg()))),
                CmpOp::Eq => {
                    out.push(Fact::Le0(tighten(d.clone())));
                    out.push(Fact::Le0(tighten(d.neg())));
                }
                CmpOp::Ne => out.push(Fact::Is(Expr::cmp(CmpOp::Ne, (**a).clone(), (**b).clone()), true)),
            }
        }
        _ => {
            if c.dtype().is_scalar() {
                out.push(Fact::Is(c.clone(), positive));
            }
        }
    }
}

/// The fact `p <= 0` in its tightest integer form: `g·q + c <= 0` is `q + ceil(c / g) <= 0`
/// for the gcd `g` of the coefficients (`1 - 3·H <= 0` is `1 - H <= 0`: a loop of `3·H`
/// iterations that runs has `H >= 1`).
fn tighten(mut p: Poly) -> Poly {
    let g = p.terms.values().fold(0u64, |g, &k| gcd(g, k.unsigned_abs()));
    if g > 1 && g <= i64::MAX as u64 {
        let g = g as i64;
        for k in p.terms.values_mut() {
            *k /= g;
        }
        p.c = p.c.div_euclid(g) + i64::from(p.c.rem_euclid(g) != 0);
    }
    p
}

/// A factor `s > 1` such that `p - s·f` cancels a term of `p` (sound for a fact
/// `f <= 0`: `p <= p - s·f`).
fn fact_scale(p: &Poly, f: &Poly) -> Option<i64> {
    f.terms.iter().find_map(|(m, &kf)| {
        let kp = *p.terms.get(m)?;
        // Checked: `i64::MIN / -1` overflows.
        let q = kp.checked_div(kf)?;
        (kp.checked_rem(kf) == Some(0) && q > 1).then_some(q)
    })
}

/// `p` as `((x + a - 1) / a) * a` (`x` rounded up to a multiple of the constant `a > 1`):
/// `(x, a)`.
fn round_up(p: &Poly) -> Option<(Poly, i64)> {
    if p.c != 0 || p.terms.len() != 1 {
        return None;
    }
    let (m, &k) = p.terms.iter().next()?;
    let Some(Expr::Binary { op: BinOp::Div, a: num, b: den }) = single(m) else { return None };
    let a = den.as_int()?;
    if a <= 1 || k != a {
        return None;
    }
    let mut x = parse_poly(num);
    x.c = x.c.checked_sub(a - 1)?;
    Some((x, a))
}

/// How many terms of `p` have a min/max factor.
fn minmax_atoms(p: &Poly) -> usize {
    p.terms
        .keys()
        .filter(|m| m.iter().any(|a| matches!(&*a.0, Expr::Binary { op: BinOp::Min | BinOp::Max, .. })))
        .count()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The value of a condition that is the same constant on every lane: `true`, `false`,
/// or a vector of either (`broadcast(false, 16)`, left where a border's test on an outer
/// loop became constant).
fn uniform_bool(e: &Expr) -> Option<bool> {
    match e {
        Expr::Bool(b) => Some(*b),
        Expr::Broadcast { value, .. } => uniform_bool(value),
        _ => None,
    }
}
