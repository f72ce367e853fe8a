//! Symbolic upper bounds for [`super::narrow`]: a value `0 <= e <= U`, `U` a polynomial in
//! the kernel's scalars (the dims) with positive coefficients, kept where interval
//! arithmetic loses what a quotient is.
//!
//! A fused loop decomposed over a 1-D grid is the case it is for. With
//! `bx < (N*F*H*W + 255) / 256` and `tx < 256`, the index `fused = bx * 256 + tx` is at
//! most `N*F*H*W + 254`, so `fused / (F*H*W)` is at most `N + 254`. Intervals alone, with
//! every dim in `[0, B]`, give that quotient the whole range of `fused`, `B^4`, and its
//! products with the other dims `B^7`: a proof for dims up to 16 only. Here:
//! - `k * (X / c) <= (k / c) * X` when `c` divides `k` (absorbed as soon as a product
//!   makes the coefficient a multiple of `c`, `X >= 0`);
//! - `a <= D*Q + r` with `D` the divisor's exact monomial gives `a / D <= Q + max(r, 0)`
//!   (for `D >= 1`; for `D = 0` WGSL's `a / 0` is `a <= r`, and `Q >= 0`).
//!
//! Every coefficient is positive (the constant may be negative), and every atom is `>= 0`
//! and nondecreasing in the scalars, so a bound is largest with each scalar at the top of
//! its range ([`Sym::largest`]).

use std::collections::BTreeMap;

use crate::tir::VarId;

/// A factor: a scalar (`>= 0`), or `X / c` (truncating, `c > 0`, `X >= 0`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Atom {
    Var(VarId),
    Div(Box<Sym>, i128),
}

/// `Σ k · Π atoms + c`, every `k > 0`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Sym {
    terms: BTreeMap<Vec<Atom>, i128>,
    c: i128,
}

/// Products with more terms than this are not formed (the bound is given up).
const TERM_LIMIT: usize = 64;

impl Sym {
    pub fn constant(c: i128) -> Sym {
        Sym { terms: BTreeMap::new(), c }
    }

    pub fn var(v: VarId) -> Sym {
        Sym::atom(Atom::Var(v))
    }

    fn atom(a: Atom) -> Sym {
        let mut terms = BTreeMap::new();
        terms.insert(vec![a], 1);
        Sym { terms, c: 0 }
    }

    pub fn add(&self, o: &Sym) -> Sym {
        let mut r = self.clone();
        for (m, k) in &o.terms {
            let e = r.terms.entry(m.clone()).or_insert(0);
            *e = e.saturating_add(*k);
        }
        r.c = r.c.saturating_add(o.c);
        r
    }

    pub fn add_const(&self, k: i128) -> Sym {
        Sym { terms: self.terms.clone(), c: self.c + k }
    }

    /// `k * self` for `k >= 0`, with `k' * (X / c)` absorbed into `(k' / c) * X` where `c`
    /// divides `k'`.
    pub fn scale(&self, k: i128) -> Sym {
        if k == 0 {
            return Sym::default();
        }
        let mut r = Sym::constant(self.c.saturating_mul(k));
        for (m, &q) in &self.terms {
            let kq = q.saturating_mul(k);
            match &m[..] {
                [Atom::Div(x, c)] if kq % c == 0 => r = r.add(&x.scale(kq / c)),
                _ => *r.terms.entry(m.clone()).or_insert(0) += kq,
            }
        }
        r
    }

    /// `self * o`, both bounds of values `>= 0` (a negative constant is dropped: the rest
    /// is a bound too).
    pub fn mul(&self, o: &Sym) -> Option<Sym> {
        if self.terms.is_empty() {
            return Some(o.scale(self.c.max(0)));
        }
        if o.terms.is_empty() {
            return Some(self.scale(o.c.max(0)));
        }
        let (a, b) = (self.add_const(-self.c.min(0)), o.add_const(-o.c.min(0)));
        if (a.terms.len() + 1) * (b.terms.len() + 1) > TERM_LIMIT {
            return None;
        }
        let ta = a.terms.iter().map(|(m, &k)| (m.clone(), k)).chain([(vec![], a.c)]);
        let tb: Vec<(Vec<Atom>, i128)> = b.terms.iter().map(|(m, &k)| (m.clone(), k)).chain([(vec![], b.c)]).collect();
        let mut r = Sym::default();
        for (ma, ka) in ta {
            for (mb, kb) in &tb {
                let k = ka.saturating_mul(*kb);
                if k == 0 {
                    continue;
                }
                let mut m: Vec<Atom> = ma.iter().chain(mb).cloned().collect();
                m.sort();
                if m.is_empty() {
                    r.c += k;
                } else {
                    *r.terms.entry(m).or_insert(0) += k;
                }
            }
        }
        Some(r)
    }

    /// A bound of `a / c` (truncating, `c > 0`) for `0 <= a <= self`.
    pub fn div_const(&self, c: i128) -> Sym {
        if self.terms.values().all(|k| k % c == 0) {
            let terms = self.terms.iter().map(|(m, k)| (m.clone(), k / c)).collect();
            return Sym { terms, c: self.c.div_euclid(c) };
        }
        if self.c < 0 {
            // `X / c` is an atom only for `X >= 0`; `self` without its negative constant
            // is a bound too.
            return Sym::atom(Atom::Div(Box::new(self.add_const(-self.c)), c));
        }
        Sym::atom(Atom::Div(Box::new(self.clone()), c))
    }

    /// A bound of `a / d` (WGSL's: `a / 0` is `a`) for `0 <= a <= self`, where `d` is
    /// exactly the single term of `divisor` (`d >= 0`): `Q + max(r, 0)` when `self` is
    /// `d * Q + r`; `None` when it is not of that form.
    pub fn div_exact(&self, divisor: &Sym) -> Option<Sym> {
        let (dm, &dk) = match (divisor.terms.len(), divisor.c) {
            (1, 0) => divisor.terms.iter().next()?,
            _ => return None,
        };
        let mut q = Sym::constant(self.c.max(0));
        for (m, &k) in &self.terms {
            if k % dk != 0 {
                return None;
            }
            let mut rest = m.clone();
            for a in dm {
                let i = rest.iter().position(|x| x == a)?;
                rest.remove(i);
            }
            if rest.is_empty() {
                q.c += k / dk;
            } else {
                *q.terms.entry(rest).or_insert(0) += k / dk;
            }
        }
        Some(q)
    }

    /// The bound's largest value with each scalar `v` at `top(v)` (atoms are
    /// nondecreasing and coefficients positive); `None` for a scalar without a top.
    pub fn largest(&self, top: &dyn Fn(VarId) -> Option<i128>) -> Option<i128> {
        let mut total = self.c;
        for (m, &k) in &self.terms {
            let mut p = k;
            for a in m {
                let v = match a {
                    Atom::Var(id) => top(*id)?,
                    Atom::Div(x, c) => x.largest(top)?.max(0) / c,
                };
                p = p.saturating_mul(v);
            }
            total = total.saturating_add(p);
        }
        Some(total)
    }

    /// Whether it is a single term with no constant (a divisor [`Sym::div_exact`] takes).
    pub fn is_monomial(&self) -> bool {
        self.terms.len() == 1 && self.c == 0
    }
}
