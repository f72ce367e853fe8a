//! The arithmetic analyzer and simplifier: exact forms of the cases lowering relies on,
//! and property tests that simplification never changes a value.

use proptest::prelude::*;
use std::collections::HashMap;
use tvm_core::arith::Analyzer;
use tvm_core::dtype::DType;
use tvm_core::target::Target;
use tvm_core::tir::{BinOp, Buffer, CmpOp, Expr, ForKind, Kernel, Param, PrimFunc, Scope, Stmt, ThreadTag, Var, VarId};

// ------------------------------------------------------------------ helpers

fn v(x: &Var) -> Expr {
    Expr::var(x)
}
fn c(x: i64) -> Expr {
    Expr::int(x)
}
fn lt(a: Expr, b: Expr) -> Expr {
    Expr::lt(a, b)
}

/// A small infix printer (the crate's printer is not the subject here).
fn show(e: &Expr) -> String {
    fn prec(e: &Expr) -> u8 {
        match e {
            Expr::Binary { op: BinOp::Add | BinOp::Sub, .. } => 1,
            Expr::Binary { op: BinOp::Mul | BinOp::Div | BinOp::Mod, .. } => 2,
            _ => 3,
        }
    }
    fn wrap(e: &Expr, min: u8) -> String {
        if prec(e) < min {
            format!("({})", show(e))
        } else {
            show(e)
        }
    }
    match e {
        Expr::Int { value, .. } => value.to_string(),
        Expr::Float { value, .. } => format!("{value:?}"),
        Expr::Bool(b) => b.to_string(),
        Expr::Var(x) => x.name().to_string(),
        Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a, b } => {
            format!("{}({}, {})", op.symbol(), show(a), show(b))
        }
        Expr::Binary { op, a, b } => {
            let p = prec(e);
            let sep = if p == 2 { "" } else { " " };
            format!("{}{sep}{}{sep}{}", wrap(a, p), op.symbol(), wrap(b, p + 1))
        }
        Expr::Cmp { op, a, b } => format!("{} {} {}", show(a), op.symbol(), show(b)),
        Expr::And(a, b) => format!("({} && {})", show(a), show(b)),
        Expr::Or(a, b) => format!("({} || {})", show(a), show(b)),
        Expr::Not(a) => format!("!({})", show(a)),
        Expr::Neg(a) => format!("-{}", wrap(a, 3)),
        Expr::Select { cond, then, otherwise } => {
            format!("select({}, {}, {})", show(cond), show(then), show(otherwise))
        }
        Expr::Cast { dtype, value } => format!("{}({})", dtype, show(value)),
        Expr::Load { buffer, indices } => {
            format!("{}[{}]", buffer.name(), indices.iter().map(show).collect::<Vec<_>>().join(", "))
        }
        other => format!("{other:?}"),
    }
}

fn simp(an: &Analyzer, e: Expr) -> String {
    show(&an.simplify(&e))
}

// ------------------------------------------------------------------ bound inference

#[test]
fn region_extents_fold_to_constants() {
    let io = Var::index("io");
    let an = Analyzer::new();
    // [io*4 + 0, io*4 + 3 + 2]: extent = max - min + 1
    let max = v(&io) * 4 + 3 + 2;
    let min = v(&io) * 4 + 0;
    assert_eq!(simp(&an, max.clone() - min + 1), "6");
    assert_eq!(simp(&an, (v(&io) * 4 + 3 + 2) - v(&io) * 4 + 1), "6");
    assert_eq!(simp(&an, (v(&io) * 4 + 5) - (v(&io) * 4 + 2) + 1), "4");
    assert_eq!(simp(&an, max), "io*4 + 5");
    let n = Var::index("n");
    assert_eq!(simp(&an, v(&n) - 1 - 0 + 1), "n");
    // Constants distribute and like terms collect.
    assert_eq!(simp(&an, (v(&io) + 2) * 3 - v(&io) * 2), "io + 6");
    assert_eq!(simp(&an, (v(&n) - v(&io)) * 2 + v(&io) * 2 - v(&n)), "n");
}

#[test]
fn symbolic_bounds_relax_inner_var() {
    let io = Var::index("io");
    let ii = Var::index("ii");
    let mut an = Analyzer::new();
    an.bind(&io, c(0), c(16));
    an.bind(&ii, c(0), c(4));
    let e = v(&io) * 4 + v(&ii) + 2;
    let (lo, hi) = an.symbolic_bounds(&e, &[ii.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("io*4 + 2".to_string(), "io*4 + 5".to_string()));
    assert_eq!(simp(&an, hi - lo + 1), "4");
    // Relaxing both gives constants.
    let (lo, hi) = an.symbolic_bounds(&e, &[io.clone(), ii.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("2".to_string(), "65".to_string()));
    assert_eq!(an.const_bounds(&e), Some((2, 65)));
    // A var outside `relax` stays.
    let n = Var::index("n");
    let (lo, hi) = an.symbolic_bounds(&(v(&n) * v(&ii) + v(&io)), &[io.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("ii*n".to_string(), "ii*n + 15".to_string()));
}

#[test]
fn symbolic_bounds_with_symbolic_ranges() {
    let n = Var::index("n");
    let io = Var::index("io");
    let ii = Var::index("ii");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.bind(&io, c(0), (v(&n) + 3) / 4);
    an.bind(&ii, c(0), c(4));
    let (lo, hi) = an.symbolic_bounds(&(v(&io) * 4 + v(&ii)), &[ii.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("io*4".to_string(), "io*4 + 3".to_string()));
    let (lo, hi) = an.symbolic_bounds(&(v(&io) * 4 + v(&ii)), &[io.clone(), ii.clone()]);
    assert_eq!(show(&lo), "0");
    assert_eq!(show(&hi), "(n + 3)/4*4 - 1");
    // Unbounded side.
    let m = Var::index("m");
    let (lo, hi) = an.try_symbolic_bounds(&(v(&m) + v(&ii)), &[m.clone()]);
    assert_eq!((lo, hi), (None, None));
    let (lo, hi) = an.try_symbolic_bounds(&(v(&n) + v(&ii)), &[n.clone(), ii.clone()]);
    assert_eq!((lo.map(|e| show(&e)), hi), (Some("0".to_string()), None));
    assert_eq!(an.symbolic_bounds(&v(&m), &[m.clone()]), (c(i64::MIN), c(i64::MAX)));
}

#[test]
fn tail_guards() {
    let io = Var::index("io");
    let ii = Var::index("ii");
    let mut an = Analyzer::new();
    an.bind(&io, c(0), c(16));
    an.bind(&ii, c(0), c(4));
    let guard = lt(v(&io) * 4 + v(&ii), c(64));
    assert!(an.can_prove(&guard));
    assert_eq!(simp(&an, guard), "true");
    // Not proved by the bounds: must stay.
    let tight = lt(v(&io) * 4 + v(&ii), c(63));
    assert!(!an.can_prove(&tight));
    assert_eq!(simp(&an, tight), "io*4 + ii < 63");
    // Provably false.
    assert_eq!(simp(&an, Expr::ge(v(&io) * 4 + v(&ii), c(64))), "false");
    // Symbolic extents: io in [0, (n+3)/4) does not prove io*4 + ii < n.
    let n = Var::index("n");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.bind(&io, c(0), (v(&n) + 3) / 4);
    an.bind(&ii, c(0), c(4));
    let g = lt(v(&io) * 4 + v(&ii), v(&n));
    assert!(!an.can_prove(&g));
    assert_eq!(simp(&an, g), "io*4 + ii < n");
    // ... but io in [0, n/4) does.
    an.bind(&io, c(0), v(&n) / 4);
    assert!(an.can_prove(&lt(v(&io) * 4 + v(&ii), v(&n))));
}

#[test]
fn comparisons_against_symbolic_extent() {
    let n = Var::index("n");
    let x = Var::index("x");
    let mut an = Analyzer::new();
    an.bind(&x, c(0), v(&n));
    assert!(an.can_prove(&lt(v(&x), v(&n))));
    assert!(an.can_prove(&Expr::le(v(&x) + 1, v(&n))));
    assert!(an.can_prove(&Expr::ge(v(&x), c(0))));
    assert!(!an.can_prove(&lt(v(&x) + 1, v(&n))));
    assert_eq!(simp(&an, Expr::cmp(CmpOp::Ge, v(&x), v(&n))), "false");
    assert_eq!(simp(&an, lt(v(&x) + 1, v(&n))), "x < n - 1");
    assert_eq!(simp(&an, lt(c(5), v(&n))), "5 < n");
}

#[test]
fn bounds_of_divisions_remainders_and_min() {
    let n = Var::index("n");
    let f = Var::index("f");
    let mut an = Analyzer::new();
    an.bind(&f, c(0), c(12 * 7));
    assert_eq!(an.const_bounds(&(v(&f) / 7)), Some((0, 11)));
    assert_eq!(an.const_bounds(&(v(&f) % 7)), Some((0, 6)));
    assert_eq!(an.const_bounds(&(v(&f) - 100)), Some((-100, -17)));
    assert_eq!(an.const_bounds(&(v(&n) + v(&f))), None);
    // Split of a symbolic extent with a tail: ii in [0, min(4, n - io*4)).
    let io = Var::index("io");
    let ii = Var::index("ii");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.bind(&io, c(0), (v(&n) + 3) / 4);
    an.bind(&ii, c(0), Expr::min(c(4), v(&n) - v(&io) * 4));
    let i = v(&io) * 4 + v(&ii);
    assert!(an.can_prove(&lt(i.clone(), v(&n))));
    let (lo, hi) = an.symbolic_bounds(&(i.clone() + 2), &[ii.clone()]);
    assert_eq!(show(&lo), "io*4 + 2");
    assert_eq!(show(&an.simplify(&(hi - lo + 1))), "min(n - io*4, 4)");
    let (lo, hi) = an.symbolic_bounds(&(i.clone() + 2), &[io.clone(), ii.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("2".to_string(), "n + 1".to_string()));
    // Fused axes of symbolic extents: f in [0, n*m), m >= 0 (and m != 0 wherever f % m
    // or f / m has a value).
    let m = Var::index("m");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.assume_nonneg(&m);
    an.bind(&f, c(0), v(&n) * v(&m));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) % v(&m)), &[f.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("0".to_string(), "m - 1".to_string()));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) / v(&m)), &[f.clone()]);
    assert_eq!((show(&lo), show(&hi)), ("0".to_string(), "(n*m - 1)/m".to_string()));
}

#[test]
fn facts_and_scopes() {
    let x = Var::index("x");
    let n = Var::index("n");
    let mut an = Analyzer::new();
    an.with_scope(|an| {
        an.assume(&lt(v(&x), v(&n)));
        assert!(an.can_prove(&Expr::le(v(&x), v(&n) - 1)));
        assert!(an.can_prove(&lt(v(&x) - 5, v(&n))));
        assert!(!an.can_prove(&lt(v(&x) + 1, v(&n))));
        an.bind(&x, c(0), c(4));
        assert!(an.can_prove(&Expr::ge(v(&n), c(1))));
    });
    assert!(!an.can_prove(&lt(v(&x), v(&n))));
    assert!(!an.can_prove(&Expr::ge(v(&x), c(0))));
    let s = an.snapshot();
    an.bind_const_bound(&x, 2, 3);
    assert!(an.can_prove(&Expr::ge(v(&x), c(2))));
    an.restore(s);
    assert!(!an.can_prove(&Expr::ge(v(&x), c(2))));
}

#[test]
fn other_nodes_keep_their_shape() {
    let x = Var::index("x");
    let an = Analyzer::new();
    let a = Buffer::new("A", DType::F32, Scope::Global);
    let ld = Expr::load(&a, vec![Expr::Ramp { base: Box::new(v(&x) * 4 + 0), stride: Box::new(c(1) * 1), lanes: 4 }]);
    let want = Expr::load(&a, vec![Expr::Ramp { base: Box::new(v(&x) * 4), stride: Box::new(c(1)), lanes: 4 }]);
    assert_eq!(an.simplify(&ld), want);
    let call = Expr::Call { func: tvm_core::tir::Intrinsic::Exp, args: vec![Expr::float(0.0, DType::F32)] };
    assert_eq!(an.simplify(&call), call);
    let bc = Expr::binary(
        BinOp::Add,
        Expr::Broadcast { value: Box::new(c(2)), lanes: 4 },
        Expr::Broadcast { value: Box::new(c(3)), lanes: 4 },
    );
    assert_eq!(an.simplify(&bc), Expr::Broadcast { value: Box::new(c(5)), lanes: 4 });
    // A load in an index is an atom of the canonical form.
    let b = Buffer::new("B", DType::I64, Scope::Global);
    let e = Expr::load(&b, vec![v(&x)]) + 1 - 1;
    assert_eq!(an.simplify(&e), Expr::load(&b, vec![v(&x)]));
}

// ------------------------------------------------------------------ division

#[test]
fn division_of_nonnegative_sums() {
    let i = Var::index("i");
    let j = Var::index("j");
    let mut an = Analyzer::new();
    an.assume_nonneg(&i);
    an.bind(&j, c(0), c(8));
    assert_eq!(simp(&an, (v(&i) * 8 + v(&j)) / 8), "i");
    assert_eq!(simp(&an, (v(&i) * 8 + v(&j)) % 8), "j");
    assert_eq!(simp(&an, (v(&i) * 16 + v(&j) + 8) / 8), "i*2 + 1");
    assert_eq!(simp(&an, (v(&i) * 8 + v(&j) + 3) / 8), "i + (j + 3)/8");
    assert_eq!(simp(&an, (v(&i) * 8 + v(&j) + 3) % 8), "(j + 3)%8");
    assert_eq!(simp(&an, v(&j) / 8), "0");
    assert_eq!(simp(&an, v(&j) % 8), "j");
    assert_eq!(simp(&an, (v(&i) / 4) / 2), "i/8");
    // Exact multiples, whatever the sign.
    let k = Var::index("k");
    assert_eq!(simp(&an, (v(&k) * 8) / 4), "k*2");
    assert_eq!(simp(&an, (v(&k) * 8 + 4) % 4), "0");
    assert_eq!(simp(&an, v(&k) % 1), "0");
    assert_eq!(simp(&an, v(&k) / 1), "k");
    // Symbolic divisors: j in [0, m).
    let m = Var::index("m");
    let jm = Var::index("jm");
    an.bind(&m, c(1), c(100));
    an.bind(&jm, c(0), v(&m));
    assert_eq!(simp(&an, (v(&i) * v(&m) + v(&jm)) / v(&m)), "i");
    assert_eq!(simp(&an, (v(&i) * v(&m) + v(&jm)) % v(&m)), "jm");
    assert_eq!(simp(&an, (v(&i) * v(&m) * 2 + v(&jm) + 2) / v(&m)), "i*2 + (jm + 2)/m");
    // m >= 0 is enough: m == 0 would divide by zero.
    let m0 = Var::index("m0");
    let j0 = Var::index("j0");
    an.assume_nonneg(&m0);
    an.bind(&j0, c(0), v(&m0));
    assert_eq!(simp(&an, (v(&i) * v(&m0) + v(&j0)) / v(&m0)), "i");
    assert_eq!(simp(&an, (v(&i) * v(&m0) + v(&j0)) % v(&m0)), "j0");
    // Unknown sign of the divisor: not rewritten.
    let s0 = Var::index("s0");
    assert_eq!(simp(&an, (v(&i) * v(&s0) + v(&j)) / v(&s0)), "(i*s0 + j)/s0");
    // Fused indices: f/4*4 + f%4 == f.
    let f = Var::index("f");
    assert_eq!(simp(&an, v(&f) / 4 * 4 + v(&f) % 4), "f");
}

#[test]
fn truncating_division_of_negatives_is_not_rewritten() {
    let i = Var::index("i");
    let j = Var::index("j");
    let mut an = Analyzer::new();
    an.bind_const_bound(&i, -2, 2);
    an.bind(&j, c(0), c(8));
    let d = an.simplify(&((v(&i) * 8 + v(&j)) / 8));
    assert_eq!(show(&d), "(i*8 + j)/8");
    let m = an.simplify(&((v(&i) * 8 + v(&j)) % 8));
    assert_eq!(show(&m), "(i*8 + j)%8");
    // And the values agree with Rust's operators everywhere.
    for iv in -2..=2 {
        for jv in 0..8 {
            let env = HashMap::from([(i.id(), iv), (j.id(), jv)]);
            let want_d = (iv * 8 + jv) / 8;
            let want_m = (iv * 8 + jv) % 8;
            assert_eq!(eval(&d, &env), Some(Val::I(want_d)));
            assert_eq!(eval(&m, &env), Some(Val::I(want_m)));
        }
    }
    // Constant folding truncates.
    assert_eq!(simp(&an, c(-7) / c(2)), "-3");
    assert_eq!(simp(&an, c(-7) % c(2)), "-1");
    assert_eq!(simp(&an, c(7) / c(-2)), "-3");
    // -c < x < c: x / c == 0 for either sign.
    let k = Var::index("k");
    an.bind_const_bound(&k, -3, 3);
    assert_eq!(simp(&an, v(&k) / 4), "0");
    assert_eq!(simp(&an, v(&k) % 4), "k");
    // Division by zero is left for run time.
    assert_eq!(simp(&an, v(&k) / 0), "k/0");
    assert_eq!(simp(&an, c(3) % c(0)), "3%0");
}

// ------------------------------------------------------------------ min, max, select, logic

/// `x` rounded up to multiples of `a` and of `b` (`a` divides `b`): the multiple of `b` is
/// never below the other where `x >= 0` (a stage read through splits by 32 and by 64).
#[test]
fn round_up_to_dividing_multiples() {
    let n = Var::index("n");
    let up = |x: Expr, a: i64| (x + c(a - 1)) / c(a) * c(a);
    let mut an = Analyzer::new();
    an.bind(&n, c(0), c(100_000));
    let max = Expr::max(up(v(&n), 32), up(v(&n), 64));
    let min = Expr::min(up(v(&n), 64), up(v(&n), 32));
    assert_eq!(simp(&an, max.clone()), simp(&an, up(v(&n), 64)));
    assert_eq!(simp(&an, min.clone()), simp(&an, up(v(&n), 32)));
    // Value by value, over the bound range's start.
    for k in 0..300 {
        let mut env = HashMap::new();
        env.insert(n.id(), k);
        for (e, want) in [(&max, up(v(&n), 64)), (&min, up(v(&n), 32))] {
            let s = an.simplify(e);
            assert_eq!(eval(&s, &env), eval(&want, &env), "n = {k}: {}", show(&s));
        }
    }
    // 24 does not divide 64 (n = 30: 48 against 64; n = 60: 72 against 64): both kept.
    assert!(simp(&an, Expr::max(up(v(&n), 24), up(v(&n), 64))).starts_with("max("));
    // Without `n >= 0` (truncating division), nothing is dropped.
    let x = Var::index("x");
    assert!(simp(&Analyzer::new(), Expr::max(up(v(&x), 32), up(v(&x), 64))).starts_with("max("));
}

#[test]
fn min_max() {
    let x = Var::index("x");
    let i = Var::index("i");
    let mut an = Analyzer::new();
    an.bind(&i, c(0), c(4));
    assert_eq!(simp(&an, Expr::min(v(&x) + 2, v(&x) + 5)), "x + 2");
    assert_eq!(simp(&an, Expr::max(v(&x) + 2, v(&x) + 5)), "x + 5");
    assert_eq!(simp(&an, Expr::min(v(&i), c(10))), "i");
    assert_eq!(simp(&an, Expr::max(v(&i), c(10))), "10");
    assert_eq!(simp(&an, Expr::min(v(&i), c(2))), "min(i, 2)");
    assert_eq!(simp(&an, Expr::min(Expr::min(v(&x), c(4)), c(3))), "min(x, 3)");
    assert_eq!(simp(&an, Expr::min(v(&x) * 4 + v(&i), v(&x) * 4 + 3)), "x*4 + i");
    let w = Var::index("w");
    assert_eq!(simp(&an, Expr::min(v(&x) * 4 + v(&w), v(&x) * 4 + 3)), "x*4 + min(w, 3)");
    assert_eq!(simp(&an, Expr::min(v(&x), v(&x))), "x");
}

/// The minimums of the bounds loop partitioning leaves with a symbolic extent fold: a
/// quotient of a smaller non-negative numerator is never larger, and a rounded-up
/// quotient scaled back never below a rounded-down one.
#[test]
fn min_max_of_quotients() {
    let s = Var::index("S");
    let mut an = Analyzer::new();
    an.assume_nonneg(&s);
    let q = |a: Expr, d: i64| a / d;
    assert_eq!(simp(&an, Expr::min(q(v(&s), 64), q(v(&s) + 63, 64))), "S/64");
    assert_eq!(simp(&an, Expr::max(q(v(&s), 64), q(v(&s) + 63, 64))), "(S + 63)/64");
    assert_eq!(simp(&an, Expr::min(q(v(&s) + 63, 64) * 2, q(v(&s), 32))), "S/32");
    let nested = Expr::min(
        Expr::min(Expr::min(q(v(&s), 64), q(v(&s) + 15, 64)), q(v(&s) + 63, 64)),
        Expr::min(q(v(&s) + 15, 16) / 4, q(v(&s) + 1, 64)),
    );
    assert_eq!(simp(&an, nested), "S/64");
    // Truncating division is non-decreasing whatever the numerator's sign.
    let x = Var::index("x");
    assert_eq!(simp(&Analyzer::new(), Expr::min(q(v(&x), 4), q(v(&x) + 3, 4))), "x/4");
    assert_eq!(simp(&Analyzer::new(), Expr::max(q(v(&x) - 1, 4), q(v(&x) + 3, 4))), "(x + 3)/4");
    // Not a bound: `S/64 + 1` may exceed `(S + 63)/64`.
    assert!(simp(&an, Expr::min(q(v(&s), 64) + 1, q(v(&s) + 63, 64))).starts_with("min("));
}

#[test]
fn select_and_logic() {
    let x = Var::index("x");
    let i = Var::index("i");
    let mut an = Analyzer::new();
    an.bind(&i, c(0), c(4));
    let b = Buffer::new("A", DType::I64, Scope::Global);
    let load = Expr::load(&b, vec![v(&x)]);
    // A proved condition takes its side; the other side is not looked at.
    assert_eq!(simp(&an, Expr::select(lt(v(&i), c(4)), v(&x) + 0, load.clone() / 0)), "x");
    assert_eq!(simp(&an, Expr::select(Expr::Bool(false), load.clone() / 0, v(&x))), "x");
    // Not proved: stays, branches simplified (the else branch knows i >= 2).
    assert_eq!(simp(&an, Expr::select(lt(v(&i), c(2)), v(&x) * 1, Expr::max(v(&i), c(2)))), "select(i < 2, x, i)");
    assert_eq!(simp(&an, Expr::select(lt(v(&x), c(2)), v(&i), v(&i))), "i");
    // Boolean connectives with constant sides.
    let p = lt(v(&x), c(3));
    assert_eq!(simp(&an, Expr::and(Expr::Bool(true), p.clone())), "x < 3");
    assert_eq!(simp(&an, Expr::and(p.clone(), Expr::Bool(false))), "false");
    assert_eq!(simp(&an, Expr::or(p.clone(), Expr::Bool(true))), "true");
    assert_eq!(simp(&an, Expr::or(Expr::Bool(false), p.clone())), "x < 3");
    assert_eq!(simp(&an, Expr::not(Expr::Bool(false))), "true");
    assert_eq!(simp(&an, Expr::not(p.clone())), "x >= 3");
    assert_eq!(simp(&an, Expr::and(lt(v(&i), c(4)), p.clone())), "x < 3");
    // The right side of && knows the left one.
    assert_eq!(simp(&an, Expr::and(p.clone(), lt(v(&x), c(10)))), "x < 3");
    assert_eq!(simp(&an, Expr::or(p.clone(), lt(v(&x), c(1)))), "x < 3");
}

// ------------------------------------------------------------------ other types

#[test]
fn constant_folding_of_every_type() {
    let an = Analyzer::new();
    let i32c = |x| Expr::typed_int(x, DType::I32);
    let u8c = |x| Expr::typed_int(x, DType::U8);
    let f32c = |x| Expr::float(x, DType::F32);
    assert_eq!(an.simplify(&(i32c(3) * i32c(4) + i32c(1))), i32c(13));
    // Overflow of a narrow type is not folded.
    let big = i32c(i32::MAX as i64) + i32c(1);
    assert_eq!(an.simplify(&big), big);
    assert_eq!(an.simplify(&(u8c(200) - u8c(100))), u8c(100));
    let under = u8c(1) - u8c(2);
    assert_eq!(an.simplify(&under), under);
    // f32 arithmetic is rounded to f32.
    let s = an.simplify(&(f32c(0.1f32 as f64) + f32c(0.2f32 as f64)));
    assert_eq!(s, f32c((0.1f32 + 0.2f32) as f64));
    let d = an.simplify(&(Expr::float(0.1, DType::F64) + Expr::float(0.2, DType::F64)));
    assert_eq!(d, Expr::float(0.1 + 0.2, DType::F64));
    // f16 is left alone; floats are never reassociated.
    let h = Expr::float(1.0, DType::F16) + Expr::float(2.0, DType::F16);
    assert_eq!(an.simplify(&h), h);
    let a = Var::new("a", DType::F32);
    let assoc = (v(&a) + f32c(1.0)) + f32c(2.0);
    assert_eq!(an.simplify(&assoc), assoc);
    let zero = v(&a) + f32c(0.0);
    assert_eq!(an.simplify(&zero), zero);
    // Casts of constants.
    assert_eq!(an.simplify(&Expr::cast(DType::U8, c(300))), u8c(44));
    assert_eq!(an.simplify(&Expr::cast(DType::I8, c(200))), Expr::typed_int(-56, DType::I8));
    assert_eq!(an.simplify(&Expr::cast(DType::I32, f32c(-2.7))), i32c(-2));
    assert_eq!(an.simplify(&Expr::cast(DType::U8, f32c(300.0))), u8c(255));
    assert_eq!(an.simplify(&Expr::cast(DType::F32, c(16777217))), f32c(16777216.0));
    assert_eq!(an.simplify(&Expr::cast(DType::I64, Expr::typed_int(-1, DType::I32))), c(-1));
    // Comparisons of constants of every type.
    assert_eq!(an.simplify(&Expr::lt(f32c(1.0), f32c(2.0))), Expr::Bool(true));
    assert_eq!(an.simplify(&Expr::lt(u8c(255), u8c(1))), Expr::Bool(false));
    let nan = Expr::float(f64::NAN, DType::F32);
    assert_eq!(an.simplify(&Expr::eq(nan.clone(), nan)), Expr::Bool(false));
}

#[test]
fn narrow_integer_ranges_respect_wrapping() {
    let x = Var::new("x", DType::U8);
    let an = Analyzer::new();
    // x + 1 may wrap to 0 in u8: x + 1 > 0 is not provable.
    let e = Expr::cmp(CmpOp::Gt, v(&x) + Expr::typed_int(1, DType::U8), Expr::typed_int(0, DType::U8));
    assert!(!an.can_prove(&e));
    assert!(an.can_prove(&Expr::ge(v(&x), Expr::typed_int(0, DType::U8))));
    let y = Var::new("y", DType::I32);
    let mut an = Analyzer::new();
    an.bind_const_bound(&y, 0, 10);
    let i32c = |x| Expr::typed_int(x, DType::I32);
    assert!(an.can_prove(&Expr::lt(v(&y) * i32c(2), i32c(21))));
    assert_eq!(an.simplify(&(v(&y) / i32c(16))), i32c(0));
    assert_eq!(an.simplify(&Expr::min(v(&y), i32c(100))), v(&y));
}

#[test]
fn output_is_deterministic() {
    let a = Var::index("a");
    let b = Var::index("b");
    let an = Analyzer::new();
    let e1 = v(&b) * 3 + v(&a) * 2 + 1 + v(&b) * v(&a);
    let e2 = v(&a) * v(&b) + 1 + v(&a) * 2 + v(&b) * 3;
    assert_eq!(an.simplify(&e1), an.simplify(&e2));
    assert_eq!(simp(&an, e1), "a*2 + a*b + b*3 + 1");
    assert_eq!(simp(&an, v(&a) - v(&b)), "a - b");
    assert_eq!(simp(&an, v(&b) - v(&a)), "b - a");
    assert_eq!(simp(&an, c(3) - v(&a)), "3 - a");
    assert_eq!(simp(&an, c(0) - v(&a) - 3), "-a - 3");
    assert_eq!(simp(&an, (v(&a) + 1) * (v(&a) - 1)), "a*a - 1");
}

// ------------------------------------------------------------------ statements

fn store(b: &Buffer, i: Expr) -> Stmt {
    Stmt::store(b, vec![i], Expr::float(1.0, DType::F32))
}

#[test]
fn statements() {
    let out = Buffer::new("out", DType::F32, Scope::Global);
    let io = Var::index("io");
    let ii = Var::index("ii");
    // for io in 0..16 { for ii in 0..4 { if io*4 + ii < 64 { out[io*4 + ii + 0] = 1 } } }
    let body = Stmt::if_then(lt(v(&io) * 4 + v(&ii), c(64)), store(&out, v(&io) * 4 + v(&ii) + 0));
    let nest =
        Stmt::for_loop(io.clone(), c(16), ForKind::Serial, Stmt::for_loop(ii.clone(), c(4), ForKind::Serial, body));
    let mut an = Analyzer::new();
    let s = an.simplify_stmt(nest);
    let want = Stmt::for_loop(
        io.clone(),
        c(16),
        ForKind::Serial,
        Stmt::for_loop(ii.clone(), c(4), ForKind::Serial, store(&out, v(&io) * 4 + v(&ii))),
    );
    assert_eq!(s, want);
    // The analyzer forgot the loop ranges afterwards.
    assert!(!an.can_prove(&lt(v(&ii), c(4))));

    // Extent 0 disappears, extent 1 is substituted (serial), kept when parallel.
    let k = Var::index("k");
    assert_eq!(an.simplify_stmt(Stmt::for_loop(k.clone(), c(3) - 3, ForKind::Serial, store(&out, v(&k)))), Stmt::NoOp);
    let one = Stmt::For {
        var: k.clone(),
        min: c(5),
        extent: c(2) - 1,
        kind: ForKind::Unrolled,
        body: Box::new(store(&out, v(&k) * 2)),
    };
    assert_eq!(an.simplify_stmt(one), store(&out, c(10)));
    let par = Stmt::for_loop(k.clone(), c(1), ForKind::Parallel, store(&out, v(&k)));
    assert_eq!(an.simplify_stmt(par.clone()), par);

    // If false with an else keeps the else; nested Seq and NoOp flatten.
    let x = Var::index("x");
    let s = Stmt::Seq(vec![
        Stmt::NoOp,
        Stmt::If {
            cond: lt(c(3), c(2)),
            then: Box::new(store(&out, c(0))),
            otherwise: Some(Box::new(Stmt::Seq(vec![store(&out, c(1)), Stmt::NoOp]))),
        },
        Stmt::Seq(vec![store(&out, v(&x)), Stmt::Seq(vec![store(&out, c(2))])]),
        Stmt::if_then(Expr::Bool(false), store(&out, c(9))),
    ]);
    assert_eq!(an.simplify_stmt(s), Stmt::Seq(vec![store(&out, c(1)), store(&out, v(&x)), store(&out, c(2))]));

    // A guard the ranges do not prove stays; an inner repeat of it goes.
    let n = Var::index("n");
    let g = lt(v(&x), v(&n));
    let s = Stmt::for_loop(
        x.clone(),
        v(&n) + 3,
        ForKind::Serial,
        Stmt::if_then(g.clone(), Stmt::if_then(Expr::le(v(&x), v(&n) - 1), store(&out, v(&x)))),
    );
    // (The loop's own bound then stops at the guard's: `x < n` ends the loop at `n`.)
    let want = Stmt::for_loop(x.clone(), v(&n), ForKind::Serial, store(&out, v(&x)));
    assert_eq!(an.simplify_stmt(s), want);
    // A guard that is not an upper bound of the loop variable stays.
    let s = Stmt::for_loop(
        x.clone(),
        v(&n) + 3,
        ForKind::Serial,
        Stmt::if_then(Expr::lt(v(&n), v(&x)), store(&out, v(&x))),
    );
    assert_eq!(an.simplify_stmt(s.clone()), s);
    // An upper bound beyond the loop's end does not extend it.
    let s = Stmt::for_loop(x.clone(), c(4), ForKind::Serial, Stmt::if_then(g.clone(), store(&out, v(&x))));
    assert_eq!(an.simplify_stmt(s.clone()), s);
    // A constant bound inside a constant loop, with a further condition kept.
    let s = Stmt::for_loop(
        x.clone(),
        c(3),
        ForKind::Serial,
        Stmt::if_then(Expr::and(lt(v(&x), c(2)), g.clone()), store(&out, v(&x))),
    );
    let want = Stmt::for_loop(x.clone(), c(2), ForKind::Serial, Stmt::if_then(g.clone(), store(&out, v(&x))));
    assert_eq!(an.simplify_stmt(s), want);
    // Three conjuncts, folded to the left: the bound is the last one, after an upper bound
    // that does not hold (`x < n`) and an unrelated condition; both of those are kept.
    let m = Var::index("m");
    let other = lt(v(&m), v(&n));
    let s = Stmt::for_loop(
        x.clone(),
        c(3),
        ForKind::Serial,
        Stmt::if_then(Expr::and(Expr::and(g.clone(), other.clone()), lt(v(&x), c(2))), store(&out, v(&x))),
    );
    let want = Stmt::for_loop(x.clone(), c(2), ForKind::Serial, Stmt::if_then(Expr::and(g, other), store(&out, v(&x))));
    assert_eq!(an.simplify_stmt(s), want);

    // Conditions that read memory are not assumed past a store.
    let a = Buffer::new("A", DType::I64, Scope::Global);
    let a0 = Expr::load(&a, vec![c(0)]);
    let inner = Stmt::if_then(lt(a0.clone(), c(5)), store(&out, c(1)));
    let s = Stmt::if_then(lt(a0.clone(), c(5)), Stmt::Seq(vec![Stmt::store(&a, vec![c(0)], c(10)), inner.clone()]));
    assert_eq!(an.simplify_stmt(s.clone()), s);
    // ... nor used as symbolic loop bounds; a single iteration starting at a load stays
    // a loop.
    let s = Stmt::For {
        var: k.clone(),
        min: a0.clone(),
        extent: c(1),
        kind: ForKind::Serial,
        body: Box::new(Stmt::Seq(vec![
            Stmt::store(&a, vec![c(0)], c(10)),
            Stmt::if_then(Expr::ge(v(&k), a0.clone()), store(&out, c(1))),
        ])),
    };
    assert_eq!(an.simplify_stmt(s.clone()), s);

    // Let is kept; its variable gets the bounds of its value.
    let t = Var::index("t");
    let s = Stmt::for_loop(
        k.clone(),
        c(4),
        ForKind::Serial,
        Stmt::Let {
            var: t.clone(),
            value: v(&k) * 2 + 0,
            body: Box::new(Stmt::if_then(lt(v(&t), c(7)), store(&out, v(&t)))),
        },
    );
    let want = Stmt::for_loop(
        k.clone(),
        c(4),
        ForKind::Serial,
        Stmt::Let { var: t.clone(), value: v(&k) * 2, body: Box::new(store(&out, v(&t))) },
    );
    assert_eq!(an.simplify_stmt(s), want);

    // The else branch knows the negated condition.
    let s = Stmt::If {
        cond: lt(v(&x), c(5)),
        then: Box::new(store(&out, c(0))),
        otherwise: Some(Box::new(Stmt::if_then(Expr::ge(v(&x), c(5)), store(&out, c(1))))),
    };
    let want = Stmt::If {
        cond: lt(v(&x), c(5)),
        then: Box::new(store(&out, c(0))),
        otherwise: Some(Box::new(store(&out, c(1)))),
    };
    assert_eq!(an.simplify_stmt(s), want);
}

#[test]
fn pass_over_a_function() {
    let n = Var::index("n");
    let a = Buffer::new("A", DType::F32, Scope::Global);
    let i = Var::index("i");
    let bx = Var::index("blockIdx.x");
    let tx = Var::index("threadIdx.x");
    // Host: for i in 0..n { if i >= 0 { A[i] = 1 } }
    let host = Stmt::Seq(vec![
        Stmt::for_loop(i.clone(), v(&n), ForKind::Serial, Stmt::if_then(Expr::ge(v(&i), c(0)), store(&a, v(&i)))),
        Stmt::Launch { kernel: 0 },
    ]);
    // Kernel: if bx*64 + tx < 64*((n+63)/64) { A[bx*64 + tx] = 1 }, with tx < 64 proved.
    let idx = v(&bx) * 64 + v(&tx);
    let kbody = Stmt::if_then(
        Expr::and(lt(v(&tx), c(64)), lt(idx.clone(), (v(&n) + 63) / 64 * 64)),
        store(&a, idx.clone() + 0),
    );
    let f = PrimFunc {
        name: "f".into(),
        target: Target::cuda(),
        params: vec![Param::Tensor { buffer: a.clone(), shape: vec![v(&n)], is_output: true }],
        checks: vec![],
        body: host,
        kernels: vec![Kernel {
            name: "f_kernel0".into(),
            thread_vars: vec![(ThreadTag::BlockX, bx.clone()), (ThreadTag::ThreadX, tx.clone())],
            grid: [(v(&n) + 63) / 64, c(1), c(1)],
            block: [c(64), c(1), c(1)],
            buffer_args: vec![a.clone()],
            scalar_args: vec![],
            body: kbody,
        }],
    };
    let g = tvm_core::passes::simplify::simplify(f);
    assert_eq!(
        g.body,
        Stmt::Seq(vec![
            Stmt::for_loop(i.clone(), v(&n), ForKind::Serial, store(&a, v(&i))),
            Stmt::Launch { kernel: 0 }
        ])
    );
    assert_eq!(g.kernels[0].body, store(&a, v(&bx) * 64 + v(&tx)));
}

// ------------------------------------------------------------------ evaluator

#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    I(i64),
    B(bool),
}

/// Rust semantics on `i64`; `None` where evaluation panics (division by zero,
/// overflow).
fn eval(e: &Expr, env: &HashMap<VarId, i64>) -> Option<Val> {
    let int = |e: &Expr| match eval(e, env)? {
        Val::I(x) => Some(x),
        Val::B(_) => panic!("bool where int expected"),
    };
    let boolean = |e: &Expr| match eval(e, env)? {
        Val::B(x) => Some(x),
        Val::I(_) => panic!("int where bool expected"),
    };
    Some(match e {
        Expr::Int { value, .. } => Val::I(*value),
        Expr::Bool(b) => Val::B(*b),
        Expr::Var(x) => Val::I(*env.get(&x.id()).expect("unbound var")),
        Expr::Binary { op, a, b } => {
            let (x, y) = (int(a)?, int(b)?);
            Val::I(match op {
                BinOp::Add => x.checked_add(y)?,
                BinOp::Sub => x.checked_sub(y)?,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::Div => x.checked_div(y)?,
                BinOp::Mod => x.checked_rem(y)?,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
            })
        }
        Expr::Neg(a) => Val::I(int(a)?.checked_neg()?),
        Expr::Cmp { op, a, b } => {
            let (x, y) = (int(a)?, int(b)?);
            Val::B(match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
            })
        }
        Expr::And(a, b) => Val::B(boolean(a)? && boolean(b)?),
        Expr::Or(a, b) => Val::B(boolean(a)? || boolean(b)?),
        Expr::Not(a) => Val::B(!boolean(a)?),
        Expr::Select { cond, then, otherwise } => {
            if boolean(cond)? {
                eval(then, env)?
            } else {
                eval(otherwise, env)?
            }
        }
        other => panic!("evaluator: unexpected {other:?}"),
    })
}

// ------------------------------------------------------------------ random expressions

#[derive(Clone, Debug)]
enum IAst {
    Var(usize),
    Const(i64),
    Bin(u8, Box<IAst>, Box<IAst>),
    Scale(i64, Box<IAst>),
    DivC(i64, Box<IAst>),
    ModC(i64, Box<IAst>),
    Neg(Box<IAst>),
    Sel(Box<BAst>, Box<IAst>, Box<IAst>),
}

#[derive(Clone, Debug)]
enum BAst {
    Const(bool),
    Cmp(u8, Box<IAst>, Box<IAst>),
    And(Box<BAst>, Box<BAst>),
    Or(Box<BAst>, Box<BAst>),
    Not(Box<BAst>),
}

const OPS: [BinOp; 7] = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod, BinOp::Min, BinOp::Max];
const CMPS: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne];

fn int_leaf() -> BoxedStrategy<IAst> {
    prop_oneof![3 => (0..3usize).prop_map(IAst::Var), 2 => (-9i64..=9).prop_map(IAst::Const)].boxed()
}

fn cmp_of(i: BoxedStrategy<IAst>) -> BoxedStrategy<BAst> {
    (0..6u8, i.clone(), i).prop_map(|(o, a, b)| BAst::Cmp(o, Box::new(a), Box::new(b))).boxed()
}

fn int_ast() -> BoxedStrategy<IAst> {
    int_leaf().prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            4 => (0..7u8, inner.clone(), inner.clone()).prop_map(|(o, a, b)| IAst::Bin(o, Box::new(a), Box::new(b))),
            3 => (-4i64..=8, inner.clone()).prop_map(|(k, a)| IAst::Scale(k, Box::new(a))),
            2 => (prop_oneof![1i64..=8, -4i64..=-1], inner.clone()).prop_map(|(k, a)| IAst::DivC(k, Box::new(a))),
            2 => (prop_oneof![1i64..=8, -4i64..=-1], inner.clone()).prop_map(|(k, a)| IAst::ModC(k, Box::new(a))),
            1 => inner.clone().prop_map(|a| IAst::Neg(Box::new(a))),
            1 => (cmp_of(int_leaf()), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| IAst::Sel(Box::new(c), Box::new(a), Box::new(b))),
            1 => (cmp_of(inner.clone().boxed()), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| IAst::Sel(Box::new(c), Box::new(a), Box::new(b))),
        ]
    })
    .boxed()
}

fn bool_ast() -> impl Strategy<Value = BAst> {
    let leaf = prop_oneof![1 => any::<bool>().prop_map(BAst::Const), 6 => cmp_of(int_ast())];
    leaf.prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| BAst::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| BAst::Or(Box::new(a), Box::new(b))),
            inner.clone().prop_map(|a| BAst::Not(Box::new(a))),
        ]
    })
}

fn to_int(a: &IAst, vars: &[Var]) -> Expr {
    match a {
        IAst::Var(i) => v(&vars[*i]),
        IAst::Const(k) => c(*k),
        IAst::Bin(o, x, y) => Expr::binary(OPS[*o as usize], to_int(x, vars), to_int(y, vars)),
        IAst::Scale(k, x) => to_int(x, vars) * *k,
        IAst::DivC(k, x) => to_int(x, vars) / *k,
        IAst::ModC(k, x) => to_int(x, vars) % *k,
        IAst::Neg(x) => Expr::Neg(Box::new(to_int(x, vars))),
        IAst::Sel(cnd, x, y) => Expr::select(to_bool(cnd, vars), to_int(x, vars), to_int(y, vars)),
    }
}

fn to_bool(a: &BAst, vars: &[Var]) -> Expr {
    match a {
        BAst::Const(b) => Expr::Bool(*b),
        BAst::Cmp(o, x, y) => Expr::cmp(CMPS[*o as usize], to_int(x, vars), to_int(y, vars)),
        BAst::And(x, y) => Expr::and(to_bool(x, vars), to_bool(y, vars)),
        BAst::Or(x, y) => Expr::or(to_bool(x, vars), to_bool(y, vars)),
        BAst::Not(x) => Expr::not(to_bool(x, vars)),
    }
}

/// Ranges of x, y, z: `(lo, extent)` each; z's range starts at `x + lo` when
/// `z_follows_x`; y is only known to be non-negative when `y_free` (its values are
/// still sampled from `|lo| + [0, extent)`).
#[derive(Clone, Debug)]
struct Ranges {
    r: [(i64, i64); 3],
    z_follows_x: bool,
    y_free: bool,
}

fn ranges() -> impl Strategy<Value = Ranges> {
    (prop::array::uniform3((-6i64..=6, 1i64..=6)), any::<bool>(), prop::bool::weighted(0.2))
        .prop_map(|(r, z, f)| Ranges { r, z_follows_x: z, y_free: f })
}

fn setup(r: &Ranges) -> (Analyzer, Vec<Var>) {
    let vars = vec![Var::index("x"), Var::index("y"), Var::index("z")];
    let mut an = Analyzer::new();
    an.bind(&vars[0], c(r.r[0].0), c(r.r[0].1));
    if r.y_free {
        an.assume_nonneg(&vars[1]);
    } else {
        an.bind(&vars[1], c(r.r[1].0), c(r.r[1].1));
    }
    let zmin = if r.z_follows_x { v(&vars[0]) + r.r[2].0 } else { c(r.r[2].0) };
    an.bind(&vars[2], zmin, c(r.r[2].1));
    (an, vars)
}

fn point(r: &Ranges, vars: &[Var], p: (u8, u8, u8)) -> HashMap<VarId, i64> {
    let x = r.r[0].0 + p.0 as i64 % r.r[0].1;
    let y = if r.y_free { r.r[1].0.abs() } else { r.r[1].0 } + p.1 as i64 % r.r[1].1;
    let z = r.r[2].0 + if r.z_follows_x { x } else { 0 } + p.2 as i64 % r.r[2].1;
    HashMap::from([(vars[0].id(), x), (vars[1].id(), y), (vars[2].id(), z)])
}

fn check_same(e: &Expr, s: &Expr, env: &HashMap<VarId, i64>) -> Result<(), TestCaseError> {
    if let Some(want) = eval(e, env) {
        let got = eval(s, env);
        prop_assert_eq!(got, Some(want), "\n  original:   {}\n  simplified: {}\n  at {:?}", show(e), show(s), env);
    }
    Ok(())
}

// ------------------------------------------------------------------ narrow types

/// Evaluates an expression of a narrow integer type: with wrapping arithmetic, or
/// checked (`None` on overflow, like a debug build). Values are the type's values.
fn eval_narrow(e: &Expr, env: &HashMap<VarId, i128>, wrap: bool) -> Option<i128> {
    let dt = e.dtype();
    let bits = dt.bits as u32;
    let (lo, hi) =
        if dt.is_uint() { (0, (1i128 << bits) - 1) } else { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) };
    let fix = |v: i128| -> Option<i128> {
        if v >= lo && v <= hi {
            Some(v)
        } else if wrap {
            let m = v.rem_euclid(1i128 << bits);
            Some(if m > hi { m - (1i128 << bits) } else { m })
        } else {
            None
        }
    };
    let b = |e: &Expr| eval_narrow(e, env, wrap);
    match e {
        Expr::Int { value, .. } => Some(if dt.is_uint() { *value as i128 & hi } else { *value as i128 }),
        Expr::Bool(v) => Some(*v as i128),
        Expr::Var(x) => Some(env[&x.id()]),
        Expr::Binary { op, a, b: bb } => {
            let (x, y) = (b(a)?, b(bb)?);
            fix(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x.checked_div(y).filter(|_| y != 0)?,
                BinOp::Mod => x.checked_rem(y).filter(|_| y != 0)?,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
            })
        }
        Expr::Neg(a) => fix(-b(a)?),
        Expr::Cmp { op, a, b: bb } => {
            let (x, y) = (b(a)?, b(bb)?);
            Some(match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
            } as i128)
        }
        Expr::And(a, bb) => Some((b(a)? != 0 && b(bb)? != 0) as i128),
        Expr::Or(a, bb) => Some((b(a)? != 0 || b(bb)? != 0) as i128),
        Expr::Not(a) => Some((b(a)? == 0) as i128),
        Expr::Select { cond, then, otherwise } => {
            if b(cond)? != 0 {
                b(then)
            } else {
                b(otherwise)
            }
        }
        other => panic!("evaluator: unexpected {other:?}"),
    }
}

fn to_narrow(a: &IAst, vars: &[Var], dt: DType, big: bool) -> Expr {
    let k = |v: i64| {
        let v = if dt.is_uint() { v.rem_euclid(256) } else { v };
        Expr::typed_int(v, dt)
    };
    match a {
        IAst::Var(i) => v(&vars[*i]),
        IAst::Const(x) => k(if big { *x * 13 } else { *x }),
        IAst::Bin(o, x, y) => Expr::binary(OPS[*o as usize], to_narrow(x, vars, dt, big), to_narrow(y, vars, dt, big)),
        IAst::Scale(s, x) => Expr::binary(BinOp::Mul, to_narrow(x, vars, dt, big), k(*s)),
        IAst::DivC(s, x) => Expr::binary(BinOp::Div, to_narrow(x, vars, dt, big), k(*s)),
        IAst::ModC(s, x) => Expr::binary(BinOp::Mod, to_narrow(x, vars, dt, big), k(*s)),
        IAst::Neg(x) if dt.is_uint() => to_narrow(x, vars, dt, big),
        IAst::Neg(x) => Expr::Neg(Box::new(to_narrow(x, vars, dt, big))),
        IAst::Sel(c, x, y) => {
            Expr::select(narrow_cond(c, vars, dt, big), to_narrow(x, vars, dt, big), to_narrow(y, vars, dt, big))
        }
    }
}

fn narrow_cond(a: &BAst, vars: &[Var], dt: DType, big: bool) -> Expr {
    match a {
        BAst::Const(b) => Expr::Bool(*b),
        BAst::Cmp(o, x, y) => Expr::cmp(CMPS[*o as usize], to_narrow(x, vars, dt, big), to_narrow(y, vars, dt, big)),
        BAst::And(x, y) => Expr::and(narrow_cond(x, vars, dt, big), narrow_cond(y, vars, dt, big)),
        BAst::Or(x, y) => Expr::or(narrow_cond(x, vars, dt, big), narrow_cond(y, vars, dt, big)),
        BAst::Not(x) => Expr::not(narrow_cond(x, vars, dt, big)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("ARITH_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(500), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn simplify_preserves_integer_values(
        a in int_ast(),
        r in ranges(),
        pts in prop::collection::vec(any::<(u8, u8, u8)>(), 8),
    ) {
        let (an, vars) = setup(&r);
        let e = to_int(&a, &vars);
        let s = an.simplify(&e);
        // Simplifying is idempotent enough to keep values too.
        let s2 = an.simplify(&s);
        for p in &pts {
            let env = point(&r, &vars, *p);
            check_same(&e, &s, &env)?;
            check_same(&e, &s2, &env)?;
        }
    }

    #[test]
    fn simplify_preserves_boolean_values(
        a in bool_ast(),
        r in ranges(),
        pts in prop::collection::vec(any::<(u8, u8, u8)>(), 8),
    ) {
        let (an, vars) = setup(&r);
        let e = to_bool(&a, &vars);
        let s = an.simplify(&e);
        let proved = an.can_prove(&e);
        for p in &pts {
            let env = point(&r, &vars, *p);
            check_same(&e, &s, &env)?;
            if proved {
                if let Some(v) = eval(&e, &env) {
                    prop_assert_eq!(v, Val::B(true), "proved but false: {} at {:?}", show(&e), env);
                }
            }
        }
    }

    #[test]
    fn simplify_preserves_narrow_integer_values(
        a in int_ast(),
        unsigned in any::<bool>(),
        bounded in any::<bool>(),
        big in any::<bool>(),
        r in prop::array::uniform3((prop_oneof![-8i64..=8, -128i64..=127], prop_oneof![1i64..=8, 1i64..=64])),
        pts in prop::collection::vec(any::<(u8, u8, u8)>(), 8),
    ) {
        let dt = if unsigned { DType::U8 } else { DType::I8 };
        let vars = vec![Var::new("x", dt), Var::new("y", dt), Var::new("z", dt)];
        let (tlo, thi) = if unsigned { (0, 255) } else { (-128, 127) };
        let mut an = Analyzer::new();
        let ranges: Vec<(i64, i64)> = r
            .iter()
            .map(|&(lo, ext)| {
                let lo = if unsigned { lo + 128 } else { lo };
                if bounded { (lo, (lo + ext - 1).min(thi)) } else { (tlo, thi) }
            })
            .collect();
        if bounded {
            for (x, &(lo, hi)) in vars.iter().zip(&ranges) {
                an.bind_const_bound(x, lo, hi);
            }
        }
        let e = to_narrow(&a, &vars, dt, big);
        let s = an.simplify(&e);
        if std::env::var("SHOWN").is_ok() { eprintln!("{}  ==>  {}", show(&e), show(&s)); }
        for p in &pts {
            let q = [p.0, p.1, p.2];
            let env: HashMap<VarId, i128> = vars
                .iter()
                .zip(&ranges)
                .zip(q)
                .map(|((x, &(lo, hi)), k)| (x.id(), (lo + (k as i64 * 7919) % (hi - lo + 1)) as i128))
                .collect();
            for wrap in [false, true] {
                if let Some(want) = eval_narrow(&e, &env, wrap) {
                    let got = eval_narrow(&s, &env, wrap);
                    prop_assert_eq!(got, Some(want), "\n  original:   {}\n  simplified: {}\n  wrap {} at {:?}", show(&e), show(&s), wrap, env);
                }
            }
        }
    }

    #[test]
    fn bounds_contain_every_value(
        a in int_ast(),
        r in ranges(),
        pts in prop::collection::vec(any::<(u8, u8, u8)>(), 8),
    ) {
        let (an, vars) = setup(&r);
        let e = to_int(&a, &vars);
        let cb = an.const_bounds(&e);
        let (lo, hi) = an.try_symbolic_bounds(&e, &vars[1..]);
        for p in &pts {
            let env = point(&r, &vars, *p);
            let Some(Val::I(x)) = eval(&e, &env) else { continue };
            if let Some((l, h)) = cb {
                prop_assert!(l <= x && x <= h, "{} = {} outside [{}, {}] at {:?}", show(&e), x, l, h, env);
            }
            // Symbolic bounds over y, z hold with x fixed, and can be evaluated wherever
            // the expression can.
            if let Some(lo) = &lo {
                let l = eval(lo, &env);
                prop_assert!(l.is_some(), "{} = {}: bound {} fails at {:?}", show(&e), x, show(lo), env);
                if let Some(Val::I(l)) = l {
                    prop_assert!(l <= x, "{} = {} below {} = {} at {:?}", show(&e), x, show(lo), l, env);
                }
            }
            if let Some(hi) = &hi {
                let h = eval(hi, &env);
                prop_assert!(h.is_some(), "{} = {}: bound {} fails at {:?}", show(&e), x, show(hi), env);
                if let Some(Val::I(h)) = h {
                    prop_assert!(x <= h, "{} = {} above {} = {} at {:?}", show(&e), x, show(hi), h, env);
                }
            }
        }
    }
}

/// The else branch of a loop body versioned on its window's last tap: `k` runs to
/// `min(K, N - j)`, and `!(j + k + 1 < N)` leaves only `k = N - j - 1`, where the window's
/// second tap `j + k + 1` is out of bounds. A proof may not use the relaxed forms left by
/// the proofs nested in it (`K >= 1` there, through the assumption): one of them once
/// "proved" `j + k + 1 < N` and dropped the tap's guard, which the random schedule test
/// caught as an out-of-bounds read.
#[test]
fn a_proof_does_not_borrow_the_relaxed_forms_of_a_nested_one() {
    let (n, kk, j, k, t) = (Var::index("N"), Var::index("K"), Var::index("j"), Var::index("k"), Var::index("t"));
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.assume_nonneg(&kk);
    an.bind(&j, c(0), v(&n));
    an.bind(&k, c(0), Expr::min(v(&kk), v(&n) - v(&j)));
    an.bind(&t, c(0), c(2));
    an.assume(&Expr::not(lt(v(&j) + v(&k) + c(1), v(&n))));
    assert!(!an.can_prove(&lt(v(&j) + v(&k) + v(&t), v(&n))), "the second tap is out of bounds at k = N - j - 1");
    assert!(an.can_prove(&Expr::not(lt(v(&j) + v(&k) + c(1), v(&n)))), "the assumption itself");
    assert_eq!(simp(&an, lt(v(&j) + v(&k) + c(1), v(&n))), "false");
    // The first tap is in bounds there.
    assert!(an.can_prove(&lt(v(&j) + v(&k), v(&n))));
}

/// Proofs are remembered by the analyzer's state: the same question under another state
/// (another range, a fact assumed, a scope left) is asked again, and the same state
/// reached by another analyzer gets the same answer.
#[test]
fn remembered_proofs_answer_only_their_own_state() {
    let i = Var::index("i");
    let n = Var::index("n");
    let q = lt(v(&i) + c(4), v(&n) * c(2));
    let mut a = Analyzer::new();
    a.bind(&i, c(0), c(10));
    a.bind_const_bound(&n, 8, 100);
    assert!(a.can_prove(&q));
    // Another analyzer, the same changes: the same state, the same answer.
    let mut same = Analyzer::new();
    same.bind(&i, c(0), c(10));
    same.bind_const_bound(&n, 8, 100);
    assert!(same.can_prove(&q));
    // A wider range of `n`: not proved (n = 4 fails), whatever was remembered.
    let mut b = Analyzer::new();
    b.bind(&i, c(0), c(10));
    b.bind_const_bound(&n, 4, 100);
    assert!(!b.can_prove(&q));
    // A fact in a scope proves it; leaving the scope forgets the fact and the answer.
    b.with_scope(|s| {
        s.assume(&Expr::ge(v(&n), c(8)));
        assert!(s.can_prove(&q));
    });
    assert!(!b.can_prove(&q));
    // Rebinding `i` wider in `a` (the same variable, a new state): not proved.
    a.bind(&i, c(0), c(20));
    assert!(!a.can_prove(&q));
    a.unbind(&i);
    assert!(!a.can_prove(&q));
}

/// A fact is kept in its tightest integer form: `3·H >= 1` (a loop of `3·H` iterations
/// that runs) gives `H >= 1`, which dividing by `H` needs.
#[test]
fn a_scaled_fact_is_tightened_to_whole_numbers() {
    let h = Var::new("H", DType::I64);
    let mut an = Analyzer::new();
    an.assume_nonneg(&h);
    assert!(!an.can_prove(&Expr::ge(v(&h), c(1))));
    an.assume(&Expr::ge(v(&h) * c(3), c(1)));
    assert!(an.can_prove(&Expr::ge(v(&h), c(1))));
    // `2·H <= 5` gives `H <= 2`.
    an.assume(&Expr::le(v(&h) * c(2), c(5)));
    assert!(an.can_prove(&Expr::le(v(&h), c(2))));
    assert!(!an.can_prove(&Expr::le(v(&h), c(1))));
}

/// `a && false` is `false` and `a || true` is `true`, except where `a` checks a value:
/// `&&` and `||` evaluate `a` first, and a bad index there must still fail the call
/// (docs/LANGUAGE.md §4), so the check stays.
#[test]
fn a_checked_operand_keeps_its_short_circuit() {
    use tvm_core::tir::CheckKind;
    let mut an = Analyzer::new();
    let (t, ids) = (Buffer::new("t", DType::F32, Scope::Global), Buffer::new("ids", DType::I64, Scope::Global));
    let i = Var::index("i");
    let plain = Expr::Load { buffer: ids.clone(), indices: vec![v(&i)] };
    let checked =
        Expr::Check { value: Box::new(plain.clone()), kind: CheckKind::Index { extent: Box::new(c(8)) }, site: 0 };
    let read = |index: Expr| {
        Expr::cmp(CmpOp::Gt, Expr::Load { buffer: t.clone(), indices: vec![index] }, Expr::float(0.0, DType::F32))
    };
    let never = lt(v(&i), c(0));
    an.bind_const_bound(&i, 0, 63);
    assert_eq!(an.simplify(&Expr::and(read(plain.clone()), never.clone())), Expr::Bool(false));
    assert_eq!(an.simplify(&Expr::or(read(plain), Expr::not(never.clone()))), Expr::Bool(true));
    let kept = an.simplify(&Expr::and(read(checked.clone()), never.clone()));
    assert!(matches!(&kept, Expr::And(a, b) if **a == read(checked.clone()) && **b == Expr::Bool(false)), "{kept:?}");
    let kept = an.simplify(&Expr::or(read(checked.clone()), Expr::not(never)));
    assert!(matches!(&kept, Expr::Or(a, b) if **a == read(checked) && **b == Expr::Bool(true)), "{kept:?}");
}
