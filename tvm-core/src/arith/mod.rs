//! Arithmetic analysis: variable ranges, interval and symbolic bounds, proofs of
//! conditions, and the expression simplifier every pass relies on; and the facts about
//! index expressions that code generators need ([`known_divisor`], [`index_fits_i32`]).
//!
//! An [`Analyzer`] holds what is known: the range of each bound variable (its bounds may
//! be symbolic) and conditions assumed true. Its answers are sound for every value the
//! variables can take: [`Analyzer::simplify`] never changes the value of an expression
//! that evaluates without panicking, and [`Analyzer::can_prove`] says `false` when unsure.
//!
//! Semantics followed: `/` truncates toward zero and `%` takes the dividend's sign (Rust);
//! `i64` index arithmetic is assumed not to overflow; narrower and unsigned integer types
//! may wrap, so their ranges are only used where no wrap can happen; float constants are
//! folded only in `f32` (computed in `f32`) and `f64`, never reassociated.
//!
//! `i64` expressions are put in a canonical form: a sum of monomials with constant
//! coefficients, monomials sorted by their atoms (variables in creation order), the
//! constant last, e.g. `io*4 + ii + 2`.

mod fold;
mod index;
mod interval;
pub mod narrow;
mod poly;
mod refute;
mod rewrite;
mod stmt;
mod sym;

pub use index::{index_fits_i32, known_divisor, may_be_minus_one};
pub use rewrite::forget_proofs;

use crate::dtype::DType;
use crate::tir::{Buffer, CmpOp, Expr, Var};
use poly::{from_poly, parse_poly, Poly};
use rewrite::Ctx;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What is known of a variable: inclusive bounds (simplified), each optional.
#[derive(Clone, Debug)]
pub(crate) struct VarInfo {
    pub min: Option<Expr>,
    pub max: Option<Expr>,
    /// When it was bound: inner loops are bound after outer ones, and their bounds may
    /// mention the outer variables.
    pub order: u64,
}

/// Whether `e` reads a buffer or tensor (its value may change between statements).
pub(crate) fn reads_memory(e: &Expr) -> bool {
    let mut found = false;
    crate::tir::visit::for_each_expr(e, &mut |x| {
        found |= matches!(x, Expr::Load { .. } | Expr::ProducerLoad { .. });
    });
    found
}

/// Whether `e` reads memory that may change: a tensor, or a buffer not in `readonly`.
fn reads_mutable_memory(e: &Expr, readonly: &HashSet<Buffer>) -> bool {
    let mut found = false;
    crate::tir::visit::for_each_expr(e, &mut |x| {
        found |= match x {
            Expr::Load { buffer, .. } => !readonly.contains(buffer),
            Expr::ProducerLoad { .. } => true,
            _ => false,
        };
    });
    found
}

/// A condition known to hold.
#[derive(Clone, Debug)]
pub(crate) enum Fact {
    /// An `i64` polynomial that is `<= 0`.
    Le0(Poly),
    /// A boolean expression with a known value.
    Is(Expr, bool),
}

/// Facts in the structural order of their expressions (a key of remembered proofs).
impl Ord for Fact {
    fn cmp(&self, o: &Fact) -> std::cmp::Ordering {
        match (self, o) {
            (Fact::Le0(a), Fact::Le0(b)) => a.cmp(b),
            (Fact::Is(a, x), Fact::Is(b, y)) => poly::cmp_expr(a, b).then(x.cmp(y)),
            (Fact::Le0(_), Fact::Is(..)) => std::cmp::Ordering::Less,
            (Fact::Is(..), Fact::Le0(_)) => std::cmp::Ordering::Greater,
        }
    }
}
impl PartialOrd for Fact {
    fn partial_cmp(&self, o: &Fact) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Fact {
    fn eq(&self, o: &Fact) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Fact {}

/// Known variable ranges and facts, and the simplifier and prover that use them.
#[derive(Clone, Debug, Default)]
pub struct Analyzer {
    pub(crate) vars: HashMap<Var, VarInfo>,
    next_order: u64,
    pub(crate) facts: Vec<Fact>,
    /// Names this state of `vars` and `facts`: a digest of the changes that made it from
    /// the empty state (each change's whole content, so equal digests mean equal states;
    /// a clone shares its original's, `restore` returns to the snapshot's). Another
    /// analyzer that binds the same loops the same way, as every pass over the same
    /// function does, reaches the same digest, and proofs are remembered under it
    /// (`rewrite::Ctx::prove_le0`).
    pub(crate) state: StateDigest,
    /// Buffers the function never writes (its inputs): a condition that reads them is
    /// kept as a fact (`if y0[n] + r >= 0 { .. }` bounds the reads under it).
    readonly: Arc<HashSet<Buffer>>,
}

/// See [`Analyzer::state`]: 128 bits of SHA-256.
pub(crate) type StateDigest = [u8; 16];

/// `state` after the change described by `change`.
fn advance(state: &StateDigest, change: std::fmt::Arguments) -> StateDigest {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(state);
    h.update(change.to_string().as_bytes());
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// A saved state of an [`Analyzer`], restored by [`Analyzer::restore`].
#[derive(Clone, Debug)]
pub struct Snapshot {
    vars: HashMap<Var, VarInfo>,
    facts: usize,
    state: StateDigest,
}

impl Analyzer {
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    fn set(&mut self, var: &Var, min: Option<Expr>, max: Option<Expr>) {
        self.next_order += 1;
        let info = VarInfo { min, max, order: self.next_order };
        self.state = advance(&self.state, format_args!("set {var:?} {info:?}"));
        self.vars.insert(var.clone(), info);
    }

    /// `var` takes the values `[min, min + extent)`; `min` and `extent` may be symbolic.
    /// Replaces what was known of `var`.
    pub fn bind(&mut self, var: &Var, min: Expr, extent: Expr) {
        let max = if min.dtype() == extent.dtype() {
            let one = if min.dtype().is_integer() { Some(Expr::typed_int(1, min.dtype())) } else { None };
            one.map(|one| self.simplify(&(min.clone() + extent - one)))
        } else {
            None
        };
        let min = self.simplify(&min);
        self.set(var, Some(min), max);
    }

    /// `lo <= var <= hi`.
    pub fn bind_const_bound(&mut self, var: &Var, lo: i64, hi: i64) {
        self.set(var, Some(Expr::int(lo)), Some(Expr::int(hi)));
    }

    /// `var >= 0` (a symbolic dim). Keeps a known upper bound, and a known lower bound
    /// that is already provably non-negative.
    pub fn assume_nonneg(&mut self, var: &Var) {
        let (min, max) = match self.vars.get(var) {
            Some(i) => {
                let keep = i.min.as_ref().is_some_and(|m| {
                    m.dtype().is_integer() && self.can_prove(&Expr::ge(m.clone(), Expr::typed_int(0, m.dtype())))
                });
                (if keep { i.min.clone() } else { Some(Expr::int(0)) }, i.max.clone())
            }
            None => (Some(Expr::int(0)), None),
        };
        self.set(var, min, max);
    }

    /// The buffers that nothing writes while this analyzer's facts hold: conditions that
    /// read them are kept by [`assume`](Analyzer::assume).
    pub fn set_readonly(&mut self, buffers: HashSet<Buffer>) {
        let mut ids: Vec<_> = buffers.iter().map(|b| b.id().0).collect();
        ids.sort_unstable();
        self.state = advance(&self.state, format_args!("readonly {ids:?}"));
        self.readonly = Arc::new(buffers);
    }

    /// Forgets what is known of `var`.
    pub fn unbind(&mut self, var: &Var) {
        self.state = advance(&self.state, format_args!("unbind {var:?}"));
        self.vars.remove(var);
    }

    /// Assumes `cond` holds from now on (until the scope it was assumed in ends). Parts
    /// of it that read memory are not kept: a store may change them.
    pub fn assume(&mut self, cond: &Expr) {
        let mut c = self.simplify(cond);
        // `a != b` between integers, where `a >= b` (or `a <= b`) is known, is `a > b` (or
        // `a < b`): `if i == 0 { .. } else { x[i - 1] }` with `i >= 0` reads at `i >= 1`.
        let ne = match &c {
            Expr::Cmp { op: CmpOp::Ne, a, b } => Some(((**a).clone(), (**b).clone())),
            Expr::Not(x) => match &**x {
                Expr::Cmp { op: CmpOp::Eq, a, b } => Some(((**a).clone(), (**b).clone())),
                _ => None,
            },
            _ => None,
        };
        if let Some((a, b)) = ne.filter(|(a, _)| a.dtype().is_integer()) {
            if self.can_prove(&Expr::ge(a.clone(), b.clone())) {
                c = self.simplify(&Expr::cmp(CmpOp::Gt, a, b));
            } else if self.can_prove(&Expr::le(a.clone(), b.clone())) {
                c = self.simplify(&Expr::lt(a, b));
            }
        }
        let mut facts = Vec::new();
        rewrite::decompose(&c, true, &mut facts);
        let ro = &self.readonly;
        facts.retain(|f| match f {
            Fact::Le0(p) => p.terms.keys().all(|m| m.iter().all(|a| !reads_mutable_memory(&a.0, ro))),
            Fact::Is(e, _) => !reads_mutable_memory(e, ro),
        });
        self.state = advance(&self.state, format_args!("assume {facts:?}"));
        self.facts.extend(facts);
    }

    /// The current state, to [`restore`](Analyzer::restore) after a scope.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot { vars: self.vars.clone(), facts: self.facts.len(), state: self.state }
    }

    /// Returns to the state of `s` (taken from this analyzer, scopes nested): facts are
    /// only appended, so the first `s.facts` are the snapshot's, and the state is the
    /// snapshot's again, its digest too.
    pub fn restore(&mut self, s: Snapshot) {
        self.vars = s.vars;
        self.facts.truncate(s.facts);
        self.state = s.state;
    }

    /// Runs `f`, then forgets every binding and assumption it made.
    pub fn with_scope<R>(&mut self, f: impl FnOnce(&mut Analyzer) -> R) -> R {
        let s = self.snapshot();
        let r = f(self);
        self.restore(s);
        r
    }

    /// The simplified form of `e`, with the same value for every value of the variables
    /// in their ranges (where `e` evaluates without panicking).
    pub fn simplify(&self, e: &Expr) -> Expr {
        Ctx::new(self).expr(e)
    }

    /// Whether `cond` is true for every value of the variables in their ranges. Sound;
    /// `false` when unsure.
    pub fn can_prove(&self, cond: &Expr) -> bool {
        Ctx::new(self).cond(cond) == Expr::Bool(true)
    }

    /// Inclusive constant bounds of an integer expression by interval arithmetic over
    /// the variables' ranges alone, without simplifying first: cheap, sound, and looser
    /// than [`Analyzer::const_bounds`] (which it never contradicts).
    pub fn interval_bounds(&self, e: &Expr) -> Option<(i64, i64)> {
        interval::eval(&self.vars, e, 0).as_i64()
    }

    /// Inclusive constant bounds of an integer expression, when both are finite (and
    /// fit in an `i64`).
    pub fn const_bounds(&self, e: &Expr) -> Option<(i64, i64)> {
        let mut cx = Ctx::new(self);
        let s = cx.expr(e);
        let mut iv = cx.interval(&s);
        if s.dtype() == DType::I64 {
            let p = parse_poly(&s);
            let vars: Vec<Var> = p.vars();
            let (lo, hi) = self.relax_all(&mut cx, p, &vars);
            if let Some(lo) = lo {
                iv.lo = iv.lo.max(cx.poly_interval(&lo).lo);
            }
            if let Some(hi) = hi {
                iv.hi = iv.hi.min(cx.poly_interval(&hi).hi);
            }
        }
        iv.as_i64()
    }

    /// Inclusive symbolic bounds of `e` when the variables of `relax` take every value
    /// of their ranges and the others stay fixed; `None` for an unbounded side. The
    /// bounds are simplified and mention no variable of `relax` (a side that would is
    /// given as a constant, or `None`).
    pub fn try_symbolic_bounds(&self, e: &Expr, relax: &[Var]) -> (Option<Expr>, Option<Expr>) {
        let mut cx = Ctx::new(self);
        let s = cx.expr(e);
        if !poly::touches(&s, relax) {
            return (Some(s.clone()), Some(s));
        }
        if s.dtype() != DType::I64 {
            let iv = cx.interval(&s);
            let to = |v: i128| {
                (v > interval::NEG_INF && v < interval::POS_INF)
                    .then(|| fold::store_int(v, s.dtype()).map(|x| Expr::typed_int(x, s.dtype())))
                    .flatten()
            };
            return (to(iv.lo), to(iv.hi));
        }
        let (lo, hi) = self.relax_all(&mut cx, parse_poly(&s), relax);
        (lo.map(|p| from_poly(&p)), hi.map(|p| from_poly(&p)))
    }

    /// Whether `e` (an `i64` expression), simplified, is a sum of terms that each mention
    /// at most one variable of `vars`, as `k * v` with a constant `k`, each variable in at
    /// most one term: then, when the variables range over independent intervals, its
    /// bounds from [`try_symbolic_bounds`](Analyzer::try_symbolic_bounds) are reached.
    pub fn is_separable_linear(&self, e: &Expr, vars: &[Var]) -> bool {
        if e.dtype() != DType::I64 {
            return false;
        }
        let p = parse_poly(&self.simplify(e));
        let mut seen: Vec<&Var> = Vec::new();
        for mono in p.terms.keys() {
            let mut touched = Vec::new();
            for a in mono {
                match a.0.as_var() {
                    Some(v) if vars.contains(v) => touched.push(v),
                    Some(_) => {}
                    None if poly::touches(&a.0, vars) => return false,
                    None => {}
                }
            }
            match touched.as_slice() {
                [] => {}
                [v] if mono.len() == 1 && !seen.contains(v) => seen.push(v),
                _ => return false,
            }
        }
        true
    }

    /// [`try_symbolic_bounds`](Analyzer::try_symbolic_bounds) with unbounded sides given
    /// as `i64::MIN` and `i64::MAX`.
    pub fn symbolic_bounds(&self, e: &Expr, relax: &[Var]) -> (Expr, Expr) {
        let (lo, hi) = self.try_symbolic_bounds(e, relax);
        (lo.unwrap_or(Expr::int(i64::MIN)), hi.unwrap_or(Expr::int(i64::MAX)))
    }

    /// Relaxes `relax` in `p`, innermost (most recently bound) first, until no variable
    /// of `relax` is left; sides that keep one become constant bounds or `None`.
    fn relax_all(&self, cx: &mut Ctx, p: Poly, relax: &[Var]) -> (Option<Poly>, Option<Poly>) {
        let mut order: Vec<(u64, Var)> =
            relax.iter().map(|v| (self.vars.get(v).map_or(0, |i| i.order), v.clone())).collect();
        order.sort_by_key(|x| std::cmp::Reverse(x.0));
        cx.with_budget(rewrite::BOUNDS_FUEL, |cx| Self::relax_all_in(cx, p, relax, order))
    }

    fn relax_all_in(cx: &mut Ctx, p: Poly, relax: &[Var], order: Vec<(u64, Var)>) -> (Option<Poly>, Option<Poly>) {
        let mut lo = Some(p.clone());
        let mut hi = Some(p);
        for _ in 0..4 {
            for (_, v) in &order {
                let vs = std::slice::from_ref(v);
                lo = lo.and_then(|l| if l.touches(vs) { cx.relax(&l, vs, false) } else { Some(l) });
                hi = hi.and_then(|h| if h.touches(vs) { cx.relax(&h, vs, true) } else { Some(h) });
            }
            let left = |x: &Option<Poly>| x.as_ref().is_some_and(|p| p.touches(relax));
            if !left(&lo) && !left(&hi) {
                break;
            }
        }
        let fix = |x: Option<Poly>, upper: bool, cx: &Ctx| match x {
            Some(p) if p.touches(relax) => {
                let iv = cx.poly_interval(&p);
                let v = if upper { iv.hi } else { iv.lo };
                (v > interval::NEG_INF && v < interval::POS_INF).then(|| Poly::constant(v as i64))
            }
            x => x,
        };
        (fix(lo, false, cx), fix(hi, true, cx))
    }
}
