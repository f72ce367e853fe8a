use tvm_core::arith::Analyzer;
use tvm_core::tir::*;
fn v(x: &Var) -> Expr { Expr::var(x) }
fn c(x: i64) -> Expr { Expr::int(x) }
fn show(e: &Expr) -> String {
    fn prec(e: &Expr) -> u8 { match e { Expr::Binary { op: BinOp::Add | BinOp::Sub, .. } => 1, Expr::Binary { op: BinOp::Mul | BinOp::Div | BinOp::Mod, .. } => 2, _ => 3 } }
    fn wrap(e: &Expr, min: u8) -> String { if prec(e) < min { format!("({})", show(e)) } else { show(e) } }
    match e {
        Expr::Int { value, .. } => value.to_string(),
        Expr::Bool(b) => b.to_string(),
        Expr::Var(x) => x.name().to_string(),
        Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a, b } => format!("{}({}, {})", op.symbol(), show(a), show(b)),
        Expr::Binary { op, a, b } => { let p = prec(e); format!("{} {} {}", wrap(a, p), op.symbol(), wrap(b, p + 1)) }
        Expr::Cmp { op, a, b } => format!("{} {} {}", show(a), op.symbol(), show(b)),
        Expr::And(a, b) => format!("({} && {})", show(a), show(b)),
        Expr::Or(a, b) => format!("({} || {})", show(a), show(b)),
        Expr::Not(a) => format!("!({})", show(a)),
        Expr::Neg(a) => format!("-{}", wrap(a, 3)),
        Expr::Select { cond, then, otherwise } => format!("select({}, {}, {})", show(cond), show(then), show(otherwise)),
        other => format!("{other:?}"),
    }
}
#[test]
fn samples() {
    let n = Var::index("n");
    let io = Var::index("io"); let ii = Var::index("ii");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n);
    an.bind(&io, c(0), (v(&n) + 3) / 4);
    an.bind(&ii, c(0), Expr::min(c(4), v(&n) - v(&io) * 4));
    let i = v(&io) * 4 + v(&ii);
    println!("guard {}", show(&an.simplify(&Expr::lt(i.clone(), v(&n)))));
    let (lo, hi) = an.symbolic_bounds(&(i.clone() + 2), &[ii.clone()]);
    println!("bounds {} .. {}", show(&lo), show(&hi));
    println!("extent {}", show(&an.simplify(&(hi.clone() - lo.clone() + 1))));
    let (lo, hi) = an.symbolic_bounds(&(i.clone() + 2), &[io.clone(), ii.clone()]);
    println!("bounds all {} .. {}", show(&lo), show(&hi));
    // fused
    let f = Var::index("f"); let m = Var::index("m");
    let mut an = Analyzer::new();
    an.assume_nonneg(&n); an.assume_nonneg(&m);
    an.assume(&Expr::ge(v(&m), c(1)));
    an.bind(&f, c(0), v(&n) * v(&m));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) / v(&m)), &[f.clone()]);
    println!("fused outer {} .. {}", show(&lo), show(&hi));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) % v(&m)), &[f.clone()]);
    println!("fused inner {} .. {}", show(&lo), show(&hi));
    an.bind(&f, c(0), c(12 * 7));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) / 7 ), &[f.clone()]);
    println!("fused outer {} .. {}", show(&lo), show(&hi));
    println!("{}", show(&an.simplify(&((v(&f) / 7) * 7 + v(&f) % 7 ))));
    println!("{}", show(&an.simplify(&((v(&f) % 7) + (v(&f) / 7) * 7 + 1))));
    println!("{}", show(&an.simplify(&(((v(&f) / 7) * 7 + v(&f) % 7) / 7 ))));
    let (lo, hi) = an.symbolic_bounds(&(v(&f) % 7 ), &[f.clone()]);
    println!("fused inner {} .. {}", show(&lo), show(&hi));
    // conv-like
    let x = Var::index("x"); let k = Var::index("k"); let xo = Var::index("xo");
    let mut an = Analyzer::new();
    an.bind(&xo, c(0), c(8)); an.bind(&x, c(0), c(4)); an.bind(&k, c(0), c(3));
    let e = (v(&xo) * 4 + v(&x)) * 2 + v(&k) - 1;
    let (lo, hi) = an.symbolic_bounds(&e, &[x.clone(), k.clone()]);
    println!("conv {} .. {} ext {}", show(&lo), show(&hi), show(&an.simplify(&(hi.clone() - lo.clone() + 1))));
    println!("{}", show(&an.simplify(&Expr::and(Expr::ge(e.clone(), c(0)), Expr::lt(e.clone(), c(64))))));
    println!("{}", show(&an.simplify(&Expr::select(Expr::ge(e.clone(), c(0)), e.clone(), c(0)))));
}
