//! The canonical form of `i64` index arithmetic: a polynomial `Σ coef·monomial + const`
//! whose monomials are sorted products of opaque atoms (variables, divisions,
//! remainders, min/max, selects, loads, casts, ...). Coefficients use wrapping
//! arithmetic, which is exact modulo 2^64, so rewriting `+ - *` through this form never
//! changes a value. A result that wrapped says so (`wrapped`): it is still the same
//! `i64` value, but not the same integer, so the prover, which reasons about integers
//! (`3·H <= 0` is false for `H = 2^62` although `3·2^62` wraps to a negative), proves
//! nothing from it.
//!
//! Atoms are ordered structurally, variables by creation order (their ids), so the
//! printed form is deterministic: `io*4 + ii + 2`.

use crate::dtype::DType;
use crate::tir::{BinOp, CheckKind, Expr, Var};
use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Products with more terms than this stay unexpanded (one atom).
const MUL_TERM_LIMIT: usize = 64;

/// An opaque factor, ordered structurally. Shared: polynomials are copied and combined
/// throughout a proof, and their atoms (divisions, min/max, loads over whole index
/// expressions) are only ever read.
#[derive(Clone, Debug)]
pub(crate) struct Atom(pub Arc<Expr>);

impl Atom {
    pub fn new(e: Expr) -> Atom {
        Atom(Arc::new(e))
    }
}

/// The expression of a monomial that is one atom.
pub(crate) fn single(m: &Mono) -> Option<&Expr> {
    match m.as_slice() {
        [a] => Some(&a.0),
        _ => None,
    }
}

impl PartialEq for Atom {
    fn eq(&self, o: &Atom) -> bool {
        cmp_expr(&self.0, &o.0) == Ordering::Equal
    }
}
impl Eq for Atom {}
impl PartialOrd for Atom {
    fn partial_cmp(&self, o: &Atom) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Atom {
    fn cmp(&self, o: &Atom) -> Ordering {
        cmp_expr(&self.0, &o.0)
    }
}

/// A sorted, non-empty product of atoms.
pub(crate) type Mono = Vec<Atom>;

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Poly {
    pub terms: BTreeMap<Mono, i64>,
    pub c: i64,
    /// Some coefficient of this polynomial (or of one it was computed from) wrapped.
    pub wrapped: bool,
}

impl Poly {
    pub fn constant(c: i64) -> Poly {
        Poly { terms: BTreeMap::new(), c, wrapped: false }
    }
    pub fn atom(e: Expr) -> Poly {
        let mut p = Poly::default();
        p.terms.insert(vec![Atom::new(e)], 1);
        p
    }
    pub fn mono(m: Mono, k: i64) -> Poly {
        let mut p = Poly::default();
        p.add_term(m, k);
        p
    }
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }
    pub fn is_zero(&self) -> bool {
        self.terms.is_empty() && self.c == 0
    }
    pub fn add_term(&mut self, m: Mono, k: i64) {
        if m.is_empty() {
            let (c, o) = self.c.overflowing_add(k);
            self.c = c;
            self.wrapped |= o;
            return;
        }
        match self.terms.entry(m) {
            Entry::Occupied(mut o) => {
                let (v, over) = o.get().overflowing_add(k);
                self.wrapped |= over;
                if v == 0 {
                    o.remove();
                } else {
                    *o.get_mut() = v;
                }
            }
            Entry::Vacant(v) => {
                if k != 0 {
                    v.insert(k);
                }
            }
        }
    }
    pub fn add(&self, o: &Poly) -> Poly {
        let mut r = self.clone();
        for (m, &k) in &o.terms {
            r.add_term(m.clone(), k);
        }
        let (c, over) = r.c.overflowing_add(o.c);
        r.c = c;
        r.wrapped |= over || o.wrapped;
        r
    }
    pub fn sub(&self, o: &Poly) -> Poly {
        self.add(&o.neg())
    }
    pub fn neg(&self) -> Poly {
        self.scale(-1)
    }
    pub fn scale(&self, k: i64) -> Poly {
        if k == 0 {
            return Poly::default();
        }
        let mut wrapped = self.wrapped;
        let mut mul = |c: i64| {
            let (v, o) = c.overflowing_mul(k);
            wrapped |= o;
            v
        };
        let terms = self.terms.iter().map(|(m, &c)| (m.clone(), mul(c))).collect();
        let c = mul(self.c);
        Poly { terms, c, wrapped }
    }
    pub fn add_const(&self, k: i64) -> Poly {
        let mut r = self.clone();
        r.add_term(vec![], k);
        r
    }
    /// The atom, when the polynomial is exactly one atom.
    pub fn single_atom(&self) -> Option<&Expr> {
        if self.c != 0 || self.terms.len() != 1 {
            return None;
        }
        let (m, &k) = self.terms.iter().next()?;
        (k == 1 && m.len() == 1).then(|| &*m[0].0)
    }
    /// Every variable the polynomial mentions, in a deterministic order.
    pub fn vars(&self) -> Vec<Var> {
        let mut out: Vec<Var> = Vec::new();
        for m in self.terms.keys() {
            for a in m {
                for v in crate::tir::visit::vars_of(&a.0) {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
    pub fn touches(&self, vs: &[Var]) -> bool {
        self.terms.keys().any(|m| m.iter().any(|a| touches(&a.0, vs)))
    }
}

/// Whether `e` mentions one of `vs`.
pub(crate) fn touches(e: &Expr, vs: &[Var]) -> bool {
    if vs.is_empty() {
        return false;
    }
    let mut found = false;
    crate::tir::visit::for_each_expr(e, &mut |x| {
        if let Expr::Var(v) = x {
            found |= vs.contains(v);
        }
    });
    found
}

fn merge_mono(a: &Mono, b: &Mono) -> Mono {
    let mut m: Mono = a.iter().chain(b.iter()).cloned().collect();
    m.sort();
    m
}

/// `a * b`, expanded unless the product would be too large.
pub(crate) fn mul_polys(a: &Poly, b: &Poly) -> Poly {
    if let Some(k) = a.as_const() {
        let mut r = b.scale(k);
        r.wrapped |= a.wrapped;
        return r;
    }
    if let Some(k) = b.as_const() {
        let mut r = a.scale(k);
        r.wrapped |= b.wrapped;
        return r;
    }
    let na = a.terms.len() + (a.c != 0) as usize;
    let nb = b.terms.len() + (b.c != 0) as usize;
    if na * nb > MUL_TERM_LIMIT {
        let (x, y) = (from_poly(a), from_poly(b));
        let (x, y) = if cmp_expr(&x, &y) == Ordering::Greater { (y, x) } else { (x, y) };
        let mut r = Poly::atom(Expr::binary(BinOp::Mul, x, y));
        r.wrapped = a.wrapped || b.wrapped;
        return r;
    }
    let mut r = Poly { wrapped: a.wrapped || b.wrapped, ..Poly::default() };
    let ta: Vec<(Mono, i64)> =
        a.terms.iter().map(|(m, &k)| (m.clone(), k)).chain(std::iter::once((vec![], a.c))).collect();
    let tb: Vec<(Mono, i64)> =
        b.terms.iter().map(|(m, &k)| (m.clone(), k)).chain(std::iter::once((vec![], b.c))).collect();
    for (ma, ka) in &ta {
        for (mb, kb) in &tb {
            let (k, over) = ka.overflowing_mul(*kb);
            r.wrapped |= over;
            r.add_term(merge_mono(ma, mb), k);
        }
    }
    r
}

/// Reads back a canonical `i64` expression (as [`from_poly`] writes it) without
/// simplifying anything.
pub(crate) fn parse_poly(e: &Expr) -> Poly {
    match e {
        Expr::Int { value, dtype } if *dtype == DType::I64 => Poly::constant(*value),
        Expr::Binary { op: BinOp::Add, a, b } => parse_poly(a).add(&parse_poly(b)),
        Expr::Binary { op: BinOp::Sub, a, b } => parse_poly(a).sub(&parse_poly(b)),
        Expr::Binary { op: BinOp::Mul, a, b } => mul_polys(&parse_poly(a), &parse_poly(b)),
        Expr::Neg(a) => parse_poly(a).neg(),
        _ => Poly::atom(e.clone()),
    }
}

/// Rewrites `k·(x % d) + k·d·(x / d)` into `k·x` (true for truncating division).
pub(crate) fn merge_divmod(p: &mut Poly) {
    for _ in 0..16 {
        let mut found = None;
        for (m, &k) in &p.terms {
            if m.len() != 1 {
                continue;
            }
            if let Expr::Binary { op: BinOp::Mod, a: x, b: d } = &*m[0].0 {
                let Some(dv) = d.as_int() else { continue };
                let Some(kd) = k.checked_mul(dv) else { continue };
                let div = vec![Atom::new(Expr::binary(BinOp::Div, (**x).clone(), (**d).clone()))];
                if p.terms.get(&div) == Some(&kd) {
                    found = Some((m.clone(), div, k, (**x).clone()));
                    break;
                }
            }
        }
        let Some((m_mod, m_div, k, x)) = found else { return };
        p.terms.remove(&m_mod);
        p.terms.remove(&m_div);
        *p = p.add(&parse_poly(&x).scale(k));
    }
}

fn term_expr(m: &Mono, k: i64) -> Expr {
    let mut e = (*m[0].0).clone();
    for a in &m[1..] {
        e = Expr::binary(BinOp::Mul, e, (*a.0).clone());
    }
    if k != 1 {
        e = Expr::binary(BinOp::Mul, e, Expr::int(k));
    }
    e
}

/// The canonical expression of a polynomial: positive terms in order, then the negative
/// ones subtracted, then the constant.
pub(crate) fn from_poly(p: &Poly) -> Expr {
    let mut p = p.clone();
    merge_divmod(&mut p);
    let mut pos = Vec::new();
    let mut neg = Vec::new();
    for (m, &k) in &p.terms {
        if k > 0 || k == i64::MIN {
            pos.push(term_expr(m, k));
        } else {
            neg.push(term_expr(m, -k));
        }
    }
    let mut c = p.c;
    let mut acc: Option<Expr> = None;
    for t in pos {
        acc = Some(match acc {
            None => t,
            Some(a) => Expr::binary(BinOp::Add, a, t),
        });
    }
    if acc.is_none() && !neg.is_empty() && c > 0 {
        acc = Some(Expr::int(c));
        c = 0;
    }
    for t in neg {
        acc = Some(match acc {
            None => Expr::Neg(Box::new(t)),
            Some(a) => Expr::binary(BinOp::Sub, a, t),
        });
    }
    match acc {
        None => Expr::int(c),
        Some(a) if c == 0 => a,
        Some(a) if c > 0 || c == i64::MIN => Expr::binary(BinOp::Add, a, Expr::int(c)),
        Some(a) => Expr::binary(BinOp::Sub, a, Expr::int(-c)),
    }
}

fn rank(e: &Expr) -> u8 {
    match e {
        Expr::Var(_) => 0,
        Expr::Binary { .. } => 1,
        Expr::Cast { .. } => 2,
        Expr::Select { .. } => 3,
        Expr::Load { .. } => 4,
        Expr::ProducerLoad { .. } => 5,
        Expr::Call { .. } => 6,
        Expr::Cmp { .. } => 7,
        Expr::And(..) => 8,
        Expr::Or(..) => 9,
        Expr::Not(_) => 10,
        Expr::Neg(_) => 11,
        Expr::Int { .. } => 12,
        Expr::Float { .. } => 13,
        Expr::Bool(_) => 14,
        Expr::Ramp { .. } => 15,
        Expr::Broadcast { .. } => 16,
        Expr::Reduce(_) => 17,
        Expr::Check { .. } => 18,
    }
}

fn cmp_list(a: &[Expr], b: &[Expr]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| {
        for (x, y) in a.iter().zip(b) {
            let o = cmp_expr(x, y);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    })
}

/// A total structural order on expressions (variables by id).
pub(crate) fn cmp_expr(a: &Expr, b: &Expr) -> Ordering {
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Expr::Var(x), Expr::Var(y)) => x.id().cmp(&y.id()),
        (Expr::Binary { op: o1, a: a1, b: b1 }, Expr::Binary { op: o2, a: a2, b: b2 }) => {
            (*o1 as u8).cmp(&(*o2 as u8)).then_with(|| cmp_expr(a1, a2)).then_with(|| cmp_expr(b1, b2))
        }
        (Expr::Cmp { op: o1, a: a1, b: b1 }, Expr::Cmp { op: o2, a: a2, b: b2 }) => {
            (*o1 as u8).cmp(&(*o2 as u8)).then_with(|| cmp_expr(a1, a2)).then_with(|| cmp_expr(b1, b2))
        }
        (Expr::And(a1, b1), Expr::And(a2, b2)) | (Expr::Or(a1, b1), Expr::Or(a2, b2)) => {
            cmp_expr(a1, a2).then_with(|| cmp_expr(b1, b2))
        }
        (Expr::Not(x), Expr::Not(y)) | (Expr::Neg(x), Expr::Neg(y)) => cmp_expr(x, y),
        (Expr::Int { value: v1, dtype: d1 }, Expr::Int { value: v2, dtype: d2 }) => v1.cmp(v2).then(d1.cmp(d2)),
        (Expr::Float { value: v1, dtype: d1 }, Expr::Float { value: v2, dtype: d2 }) => {
            v1.total_cmp(v2).then(d1.cmp(d2))
        }
        (Expr::Bool(x), Expr::Bool(y)) => x.cmp(y),
        (Expr::Select { cond: c1, then: t1, otherwise: e1 }, Expr::Select { cond: c2, then: t2, otherwise: e2 }) => {
            cmp_expr(c1, c2).then_with(|| cmp_expr(t1, t2)).then_with(|| cmp_expr(e1, e2))
        }
        (Expr::Cast { dtype: d1, value: v1 }, Expr::Cast { dtype: d2, value: v2 }) => {
            d1.cmp(d2).then_with(|| cmp_expr(v1, v2))
        }
        (Expr::Call { func: f1, args: a1 }, Expr::Call { func: f2, args: a2 }) => {
            f1.name().cmp(f2.name()).then_with(|| cmp_list(a1, a2))
        }
        (
            Expr::ProducerLoad { tensor: t1, indices: i1, dtype: d1 },
            Expr::ProducerLoad { tensor: t2, indices: i2, dtype: d2 },
        ) => t1.cmp(t2).then(d1.cmp(d2)).then_with(|| cmp_list(i1, i2)),
        (Expr::Load { buffer: b1, indices: i1 }, Expr::Load { buffer: b2, indices: i2 }) => {
            b1.cmp(b2).then_with(|| cmp_list(i1, i2))
        }
        (Expr::Ramp { base: b1, stride: s1, lanes: l1 }, Expr::Ramp { base: b2, stride: s2, lanes: l2 }) => {
            l1.cmp(l2).then_with(|| cmp_expr(b1, b2)).then_with(|| cmp_expr(s1, s2))
        }
        (Expr::Broadcast { value: v1, lanes: l1 }, Expr::Broadcast { value: v2, lanes: l2 }) => {
            l1.cmp(l2).then_with(|| cmp_expr(v1, v2))
        }
        (Expr::Reduce(x), Expr::Reduce(y)) => format!("{x:?}").cmp(&format!("{y:?}")),
        (Expr::Check { value: v1, kind: k1, site: s1 }, Expr::Check { value: v2, kind: k2, site: s2 }) => {
            let extent = |k: &CheckKind| match k {
                CheckKind::Index { extent } => Some((**extent).clone()),
                CheckKind::Divisor => None,
            };
            s1.cmp(s2).then_with(|| cmp_expr(v1, v2)).then_with(|| match (extent(k1), extent(k2)) {
                (Some(a), Some(b)) => cmp_expr(&a, &b),
                (a, b) => a.is_some().cmp(&b.is_some()),
            })
        }
        _ => Ordering::Equal,
    })
}
