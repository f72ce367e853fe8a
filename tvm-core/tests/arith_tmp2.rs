use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use proptest::strategy::ValueTree;
use std::collections::HashMap;
use tvm_core::arith::Analyzer;
use tvm_core::tir::*;
fn v(x: &Var) -> Expr { Expr::var(x) }
fn c(x: i64) -> Expr { Expr::int(x) }
fn show(e: &Expr) -> String { format!("{e:?}") }
const _X: fn(&Expr)->String = show;
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val { I(i64), B(bool) }
fn eval(_e: &Expr, _env: &HashMap<VarId, i64>) -> Option<Val> { None }
include!("/tmp/gen.rs");
#[test]
fn worst() {
    std::thread::Builder::new().stack_size(1 << 30).spawn(|| {
    let mut runner = TestRunner::deterministic();
    let strat = (bool_ast(), ranges());
    let mut worst = (std::time::Duration::ZERO, String::new());
    let mut maxd = (0u32, String::new());
    for _ in 0..100000 {
        let (a, r) = strat.new_tree(&mut runner).unwrap().current();
        let (an, vars) = setup(&r);
        if std::env::var("PRINT").is_ok() { eprintln!("CASE {:?}\n{:?}", r, a); }
        let e = to_bool(&a, &vars);
        tvm_core::arith::rewrite::DEPTH.with(|d| d.set((0, 0)));
        for c in &tvm_core::arith::rewrite::CNT { c.store(0, std::sync::atomic::Ordering::Relaxed); }
        let t = std::time::Instant::now();
        let _ = an.simplify(&e);
        let el = t.elapsed();
        let md = tvm_core::arith::rewrite::DEPTH.with(|d| d.get().1);
        if md > maxd.0 { maxd = (md, format!("{:?}\n{:?}", r, a)); }
        if el > worst.0 { worst = (el, format!("{:?}\n{:?}\n{:?}", tvm_core::arith::rewrite::CNT, r, a)); }
        if std::env::var("ONLY_WORST").is_ok() && el.as_millis() > 20 { for _ in 0..20 { let _ = an.simplify(&e); } }
    }
    println!("{:?}\n{}", worst.0, worst.1);
    println!("DEPTH {}\n{}", maxd.0, maxd.1);
    }).unwrap().join().unwrap();
}
