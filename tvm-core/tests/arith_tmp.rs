use tvm_core::arith::Analyzer;
use tvm_core::tir::*;
fn v(x: &Var) -> Expr { Expr::var(x) }
fn c(x: i64) -> Expr { Expr::int(x) }
#[test]
fn find() {
    let x = Var::index("x"); let y = Var::index("y"); let z = Var::index("z");
    let e = Expr::select(Expr::cmp(CmpOp::Gt, v(&x), v(&z)), v(&x) / -2, v(&y) % v(&x) * 1);
    for xl in -6..=0 { for xe in 1..=6 { if xl + xe <= 0 { continue }
    for yfree in [false, true] {
    for yl in -6..=0 { for ye in 1..=6 { if yl + ye <= 0 { continue }
    for zl in -6..=6 { for ze in 1..=6 { for follow in [false, true] {
        let (lo, hi) = if follow { (zl, zl + ze - 1) } else { (zl, zl + ze - 1) };
        if !(lo <= -1 && -1 <= hi) { continue }
        let mut an = Analyzer::new();
        an.bind(&x, c(xl), c(xe));
        if yfree { an.assume_nonneg(&y) } else { an.bind(&y, c(yl), c(ye)); }
        an.bind(&z, if follow { v(&x) + zl } else { c(zl) }, c(ze));
        let (_l, h) = an.try_symbolic_bounds(&e, &[y.clone(), z.clone()]);
        if let Some(h) = h { if let Some(Expr::Int{value, ..}) = Some(Analyzer::new().simplify(&tvm_core::tir::mutate::substitute_one(h.clone(), &x, c(0)))) { if value < 0 {
            println!("x [{xl},{xe}) yfree {yfree} y [{yl},{ye}) z {follow} [{zl}, {ze}) -> {:?}", h);
            return;
        }}}
    }}}}}}}}
}
