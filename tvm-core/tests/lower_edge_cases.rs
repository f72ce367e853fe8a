//! Legal but extreme schedules and shapes: lowering returns a function or a schedule
//! error, never panics, and what it returns computes the right thing.

mod common;
use common::*;
use tvm_core::driver::build_schedule;
use tvm_core::frontend::parse_str;
use tvm_core::Target;

fn lower_result(src: &str, target: Target) -> Result<(), String> {
    let k = parse_str(src).map_err(|e| format!("{e:?}"))?;
    let s = build_schedule(&k, &target).map_err(|e| format!("{e:?}"))?;
    tvm_core::driver::lower(&s).map(|_| ()).map_err(|e| format!("{e:?}"))
}

#[test]
fn huge_split_factors_do_not_overflow() {
    for f in ["9223372036854775807", "4611686018427387904", "1"] {
        let src = format!("fn f(a: f32[n]) -> c: f32[n] {{ c[i] = a[i] * 2.0; }} schedule!(cpu) {{ let (o, i) = c.split(c.i, {f}); let (oo, oi) = c.split(o, {f}); c.unroll(oi); }}");
        let r = std::panic::catch_unwind(|| lower_result(&src, Target::cpu()));
        assert!(r.is_ok(), "factor {f} panicked");
        let src = format!("fn f(a: f32[1000]) -> c: f32[1000] {{ c[i] = a[i] * 2.0; }} schedule!(cpu) {{ let (o, i) = c.split(c.i, {f}); c.vectorize(i); }}");
        let r = std::panic::catch_unwind(|| lower_result(&src, Target::cpu()));
        assert!(r.is_ok(), "factor {f} panicked");
    }
}

#[test]
fn long_vectorize_is_strip_mined_and_computes_right() {
    let src = r#"
        fn f(a: f32[1000]) -> c: f32[1000] { c[i] = a[i] + 1.0; }
        schedule!(cpu) { let (o, v) = c.split(c.i, 500); c.unroll(o); c.vectorize(v); }
    "#;
    // 500 lanes: 7 vectors of 64 and one of 52 per unrolled copy, no scalar loop.
    let f = lower(src, Variant::Cpu);
    let text = tvm_core::tir::printer::print_func(&f);
    assert_eq!(text.matches("ramp(").count(), 2 * 2 * 2, "{text}");
    assert!(text.contains(", 1, 64)") && text.contains(", 1, 52)"), "{text}");
    assert!(!text.contains("for v in"), "{text}");
    let src = r#"
        fn f(a: f32[1000]) -> c: f32[1000] { c[i] = a[i] + 1.0; }
        schedule!(cpu) { let (o, v) = c.split(c.i, 500); c.unroll(o); c.vectorize(v); }
    "#;
    let a = rand_vec(1000, 1);
    let got = run_f32(src, Variant::Cpu, vec![t(&[1000], &a)], vec![], &[1000]);
    let want: Vec<f32> = a.iter().map(|x| x + 1.0).collect();
    assert_close(&got, &want, "unroll 2 x vectorize 500");
    assert_eq!(got.len(), 1000);
}

#[test]
fn zero_sized_dims_give_empty_results() {
    let src = "fn f(a: f32[n, m]) -> c: f32[n, m] { c[i, j] = a[i, j] * 2.0; }";
    for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
        assert!(run_f32(src, v, vec![t(&[0, 5], &[])], vec![], &[0, 5]).is_empty());
        assert!(run_f32(src, v, vec![t(&[5, 0], &[])], vec![], &[5, 0]).is_empty());
    }
    // A reduction over an empty axis is its identity.
    let src = "fn f(a: f32[n, m]) -> c: f32[n] { c[i] = sum(a[i, j] for j in 0..m); }";
    for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
        assert_eq!(run_f32(src, v, vec![t(&[3, 0], &[])], vec![], &[3]), vec![0.0; 3]);
    }
}

#[test]
fn default_cpu_schedule_reduces_rows_in_vector_lanes_only_where_reads_are_contiguous() {
    let text = |src: &str| tvm_core::tir::printer::print_func(&lower(src, Variant::DefaultCpu));
    // A row sum: 16 partial sums per row (AVX-512 f32 lanes), vector code, then combined.
    let row = text("fn f(x: f32[M, N]) -> r: f32[M] { r[i] = sum(x[i, j] for j in 0..N); }");
    assert!(row.contains("alloc r_rf: f32[16]") && row.contains("x[ramp("), "{row}");
    // A column sum reads with a stride of a row: no lanes across the reduction.
    let col = text("fn f(x: f32[M, N]) -> r: f32[N] { r[j] = sum(x[i, j] for i in 0..M); }");
    assert!(!col.contains("_rf"), "{col}");
    // Nor a matmul's reduction (b is read down a column), nor a short one.
    let mm =
        text("fn f(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K); }");
    assert!(!mm.contains("_rf"), "{mm}");
    let short = text("fn f(x: f32[M, 8]) -> r: f32[M] { r[i] = sum(x[i, j] for j in 0..8); }");
    assert!(!short.contains("_rf"), "{short}");
    // And the row sum computes the same as the reference, with a tail (N = 37).
    let x = rand_vec(3 * 37, 5);
    let got = run_f32(
        "fn f(x: f32[M, N]) -> r: f32[M] { r[i] = sum(x[i, j] for j in 0..N); }",
        Variant::DefaultCpu,
        vec![t(&[3, 37], &x)],
        vec![],
        &[3],
    );
    let want: Vec<f32> = x.chunks(37).map(|r| r.iter().sum()).collect();
    assert_close(&got, &want, "default row sum");
}

/// `opt_gemm`'s register tile: `for mc: c_local[mc] += a * bp` (rows of one vector each).
fn tile_gemm(rows: usize, lanes: usize) -> String {
    format!(
        r#"
        fn f(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {{
            c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
        }}
        schedule!(cpu) {{
            let cc = c.cache_write(local);
            let (mo, no, mi, ni) = c.tile(c.i, c.j, {rows}, {lanes});
            cc.compute_at(c, no);
            let [mc, nc] = cc.axes();
            let (ko, ki) = cc.split(cc.k, 4);
            cc.reorder(ko, mc, ki, nc);
            cc.vectorize(nc);
            cc.unroll(ki);
        }}
    "#
    )
}

#[test]
fn cpu_register_tile_loops_unroll_within_the_register_budget() {
    let a = rand_vec(64 * 64, 3);
    let b = rand_vec(64 * 64, 4);
    let mut want = vec![0f32; 64 * 64];
    for i in 0..64 {
        for j in 0..64 {
            want[i * 64 + j] = (0..64).map(|k| a[i * 64 + k] * b[k * 64 + j]).sum();
        }
    }
    // 16 rows of 16 f32 (1 KB): unrolled, every row at a constant index. 8 rows of 32
    // f32: also 1 KB, unrolled. 16 rows of 32 (2 KB, more than half the AVX-512
    // registers): stays a loop, as written.
    for (rows, lanes, unrolled) in [(16, 16, true), (8, 32, true), (16, 32, false)] {
        let src = tile_gemm(rows, lanes);
        let text = tvm_core::tir::printer::print_func(&lower(&src, Variant::Cpu));
        let tile_loop = format!("for i_1 in serial(0, {rows})");
        assert_eq!(!text.contains(&tile_loop), unrolled, "{rows} x {lanes}:\n{text}");
        if unrolled {
            let last = format!("c_local[ramp({}, 1, {lanes})] = c_local_v", (rows - 1) * lanes);
            assert!(text.contains(&last), "{rows} x {lanes}: the last row at a constant index:\n{text}");
        }
        let got = run_f32(&src, Variant::Cpu, vec![t(&[64, 64], &a), t(&[64, 64], &b)], vec![], &[64, 64]);
        assert_close(&got, &want, &format!("tile {rows} x {lanes}"));
    }
    // The rule is the CPU's: the same loop in a CUDA function stays a loop.
    use tvm_core::tir::{Buffer, Expr, ForKind, PrimFunc, Scope, Stmt, Var};
    use tvm_core::DType;
    let tile = Buffer::new("tile", DType::F32, Scope::Local);
    let i = Var::new("i", DType::I64);
    let row = Expr::Ramp { base: Box::new(Expr::var(&i) * Expr::int(16)), stride: Box::new(Expr::int(1)), lanes: 16 };
    let zero = Expr::Broadcast { value: Box::new(Expr::float(0.0, DType::F32)), lanes: 16 };
    let body = Stmt::for_loop(i.clone(), Expr::int(16), ForKind::Serial, Stmt::store(&tile, vec![row], zero));
    let loops = |target: Target| {
        let f =
            PrimFunc { name: "t".into(), target, params: vec![], body: body.clone(), kernels: vec![], checks: vec![] };
        let out = tvm_core::passes::unroll_loops::unroll_loops(f);
        tvm_core::tir::printer::print_func(&out).matches("for i in").count()
    };
    assert_eq!(loops(Target::cpu()), 0, "cpu: unrolled");
    assert_eq!(loops(Target::cuda()), 1, "cuda: as scheduled");
}

#[test]
fn a_border_select_in_one_vector_still_stores_every_lane() {
    // `x < 50` fails in the last vector only (x = 48..63): its lanes 50..63 take the
    // `else` side, 7.0, and must be stored like the others.
    let src = r#"
        fn f(a: f32[64]) -> c: f32[64] { c[x] = if x < 50 { a[x] } else { 7.0 }; }
        schedule!(cpu) { let (o, v) = c.split(c.x, 16); c.vectorize(v); }
    "#;
    let a = rand_vec(64, 3);
    let got = run_f32(src, Variant::Cpu, vec![t(&[64], &a)], vec![], &[64]);
    let want: Vec<f32> = (0..64).map(|x| if x < 50 { a[x] } else { 7.0 }).collect();
    assert_close(&got, &want, "one-sided border in the last vector");
    // A padded row (borders at both ends, and a tail: 58 = 3 x 16 + 10): every vector of
    // it stays a vector, the border ones with their select.
    let src = r#"
        fn f(a: f32[4, 56]) -> p: f32[4, 58] {
            p[y, x] = if x >= 1 && x <= 56 { a[y, x - 1] } else { 0.5 };
        }
        schedule!(cpu) { let (o, v) = p.split(p.x, 16); p.vectorize(v); }
    "#;
    let text = tvm_core::tir::printer::print_func(&lower(src, Variant::Cpu));
    assert!(!text.contains("serial(0, 16)"), "a border vector became a scalar loop:\n{text}");
    // The tail too (10 lanes): every store to `p` is a vector store.
    let stores: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("p[")).collect();
    assert!(!stores.is_empty() && stores.iter().all(|l| l.contains("p[ramp(")), "a scalar store of `p`:\n{text}");
    let a = rand_vec(4 * 56, 4);
    let got = run_f32(src, Variant::Cpu, vec![t(&[4, 56], &a)], vec![], &[4, 58]);
    let want: Vec<f32> = (0..4 * 58)
        .map(|i| (i / 58, i % 58))
        .map(|(y, x)| if (1..=56).contains(&x) { a[y * 56 + x - 1] } else { 0.5 })
        .collect();
    assert_close(&got, &want, "padded rows");
}
