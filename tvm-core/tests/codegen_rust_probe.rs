#[test]
fn probe() {
    for src in [r#"
        fn two(x: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) { y[i, j] = x[i, j] * 2.0; z[i, j] = y[i, j] + 1.0; }
        schedule!(cpu) { z.parallel(z.i); y.compute_at(z, z.i); }
    "#, r#"
        fn two(x: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) { y[i, j] = x[i, j] * 2.0; z[i, j] = x[i, j] + 1.0; }
    "#] {
        let k = match tvm_core::frontend::parse_str(src) { Ok(k) => k, Err(e) => { println!("parse: {e:?}"); continue } };
        let s = match tvm_core::frontend::build_schedule(&k, &tvm_core::Target::cpu()) { Ok(s) => s, Err(e) => { println!("sched: {e:?}"); continue } };
        let f = tvm_core::lower::lower(&s).unwrap();
        println!("{}", tvm_core::tir::printer::print_func(&f));
        match tvm_core::codegen::emit_rust(&f) { Ok(c) => println!("ok {}", c.to_string().contains(". zip (")), Err(e) => println!("err {e}") }
    }
}
