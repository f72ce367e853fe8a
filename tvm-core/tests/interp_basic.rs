//! The TIR interpreter on hand-built functions: results, exact arithmetic, and every
//! strictness rule (bounds, initialization, races, barriers, divergence).

use tvm_core::dtype::DType;
use tvm_core::interp::{run, run_with_options, ArgValue, ErrorKind, HostTensor, InterpError, RunOptions, ScalarValue};
use tvm_core::target::Target;
use tvm_core::te::TensorId;
use tvm_core::tir::*;

// ---- Builders -----------------------------------------------------------------------

fn int(v: i64) -> Expr {
    Expr::int(v)
}
fn v(x: &Var) -> Expr {
    Expr::var(x)
}
fn f32c(x: f64) -> Expr {
    Expr::float(x, DType::F32)
}
fn ld(b: &Buffer, i: Expr) -> Expr {
    Expr::load(b, vec![i])
}
fn st(b: &Buffer, i: Expr, value: Expr) -> Stmt {
    Stmt::store(b, vec![i], value)
}
fn for_(x: &Var, extent: Expr, body: Stmt) -> Stmt {
    Stmt::for_loop(x.clone(), extent, ForKind::Serial, body)
}
fn par(x: &Var, extent: Expr, body: Stmt) -> Stmt {
    Stmt::for_loop(x.clone(), extent, ForKind::Parallel, body)
}
fn alloc(b: &Buffer, extent: i64, body: Stmt) -> Stmt {
    Stmt::Allocate { buffer: b.clone(), extent: int(extent), body: Box::new(body) }
}
fn global(name: &str, dtype: DType) -> Buffer {
    Buffer::new(name, dtype, Scope::Global)
}
fn input(b: &Buffer, shape: Vec<Expr>) -> Param {
    Param::Tensor { buffer: b.clone(), shape, is_output: false }
}
fn output(b: &Buffer, shape: Vec<Expr>) -> Param {
    Param::Tensor { buffer: b.clone(), shape, is_output: true }
}
fn cpu_func(params: Vec<Param>, body: Stmt) -> PrimFunc {
    PrimFunc { name: "f".into(), target: Target::cpu(), params, body, kernels: vec![], checks: vec![] }
}
fn t(x: HostTensor) -> ArgValue {
    ArgValue::Tensor(x)
}
fn out_f32(args: &[ArgValue], i: usize) -> Vec<f32> {
    args[i].as_tensor().unwrap().as_f32().unwrap().to_vec()
}
fn expect_err(f: &PrimFunc, args: &mut [ArgValue], kind: ErrorKind, needles: &[&str]) -> InterpError {
    let e = match run(f, args) {
        Ok(()) => panic!("expected a {kind:?} error, but the run succeeded"),
        Err(e) => e,
    };
    assert_eq!(e.kind, kind, "{e}");
    let text = e.to_string();
    for n in needles {
        assert!(text.contains(n), "`{text}` does not mention `{n}`");
    }
    e
}
/// Deterministic pseudo-random f32s in [-2, 2).
fn randoms(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// `C[i] = A[i] + B[i]` for `i < n`, `n` a symbolic dim.
fn vector_add() -> PrimFunc {
    let n = Var::index("n");
    let (a, b, c) = (global("A", DType::F32), global("B", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let body = for_(&i, v(&n), st(&c, v(&i), ld(&a, v(&i)) + ld(&b, v(&i))));
    cpu_func(vec![input(&a, vec![v(&n)]), input(&b, vec![v(&n)]), output(&c, vec![v(&n)])], body)
}

// ---- CPU ----------------------------------------------------------------------------

#[test]
fn cpu_vector_add() {
    let f = vector_add();
    let (a, b) = (randoms(37, 1), randoms(37, 2));
    let mut args = vec![
        t(HostTensor::f32(vec![37], a.clone())),
        t(HostTensor::f32(vec![37], b.clone())),
        t(HostTensor::zeros(DType::F32, vec![37])),
    ];
    run(&f, &mut args).unwrap();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(out_f32(&args, 2), want);
    // Inputs are untouched.
    assert_eq!(args[0].as_tensor().unwrap().as_f32().unwrap(), &a[..]);
}

#[test]
fn argument_checks() {
    let f = vector_add();
    let z = |n| t(HostTensor::zeros(DType::F32, vec![n]));
    // `n` bound by A to 4, but B has 5 elements.
    // The runtime's message, as generated code gives it.
    expect_err(
        &f,
        &mut [z(4), z(5), z(4)],
        ErrorKind::Argument,
        &["dimension 0 of `B` is 5, expected 4 (n = 4, bound by `A`)"],
    );
    expect_err(&f, &mut [z(4), z(4)], ErrorKind::Argument, &["3 arguments"]);
    expect_err(&f, &mut [z(4), t(HostTensor::zeros(DType::F64, vec![4])), z(4)], ErrorKind::Argument, &["f32", "f64"]);
    expect_err(&f, &mut [z(4), t(HostTensor::zeros(DType::F32, vec![2, 2])), z(4)], ErrorKind::Argument, &["dims"]);
    expect_err(&f, &mut [z(4), ArgValue::Scalar(ScalarValue::F32(1.0)), z(4)], ErrorKind::Argument, &["scalar"]);
    // A constant dim must match.
    let a = global("A", DType::F32);
    let g = cpu_func(vec![output(&a, vec![int(3)])], Stmt::NoOp);
    expect_err(&g, &mut [z(4)], ErrorKind::Argument, &["dimension 0 of `A` is 4, expected 3"]);
    run(&g, &mut [z(3)]).unwrap();
}

#[test]
fn reduction_into_local_accumulator() {
    // B[i] = sum_k A[i*8 + k], through a one-element local accumulator.
    let (a, b) = (global("A", DType::F32), global("B", DType::F32));
    let acc = Buffer::new("acc", DType::F32, Scope::Local);
    let (i, k) = (Var::index("i"), Var::index("k"));
    let body = for_(
        &i,
        int(4),
        alloc(
            &acc,
            1,
            Stmt::seq(vec![
                st(&acc, int(0), f32c(0.0)),
                for_(&k, int(8), st(&acc, int(0), ld(&acc, int(0)) + ld(&a, v(&i) * 8 + v(&k)))),
                st(&b, v(&i), ld(&acc, int(0))),
            ]),
        ),
    );
    let f = cpu_func(vec![input(&a, vec![int(32)]), output(&b, vec![int(4)])], body);
    let data = randoms(32, 3);
    let mut args = vec![t(HostTensor::f32(vec![32], data.clone())), t(HostTensor::zeros(DType::F32, vec![4]))];
    run(&f, &mut args).unwrap();
    let want: Vec<f32> = (0..4).map(|i| data[i * 8..i * 8 + 8].iter().fold(0.0f32, |s, x| s + x)).collect();
    assert_eq!(out_f32(&args, 1), want);
}

#[test]
fn f32_arithmetic_rounds_after_every_operation() {
    // C[i] = ((A[i] * B[i] + A[i]) * B[i] - A[i]) / B[i], bit for bit as Rust f32 computes it.
    let (a, b, c) = (global("A", DType::F32), global("B", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let (x, y) = (ld(&a, v(&i)), ld(&b, v(&i)));
    let e = Expr::binary(BinOp::Div, ((x.clone() * y.clone() + x.clone()) * y.clone()) - x, y);
    let n = 256;
    let f = cpu_func(
        vec![input(&a, vec![int(n)]), input(&b, vec![int(n)]), output(&c, vec![int(n)])],
        for_(&i, int(n), st(&c, v(&i), e)),
    );
    let (av, bv) = (randoms(n as usize, 4), randoms(n as usize, 5));
    let mut args = vec![
        t(HostTensor::f32(vec![n as usize], av.clone())),
        t(HostTensor::f32(vec![n as usize], bv.clone())),
        t(HostTensor::zeros(DType::F32, vec![n as usize])),
    ];
    run(&f, &mut args).unwrap();
    let got = out_f32(&args, 2);
    let mut differs_from_f64 = 0;
    for k in 0..n as usize {
        let (x, y) = (av[k], bv[k]);
        let want = ((x * y + x) * y - x) / y;
        assert_eq!(got[k].to_bits(), want.to_bits(), "element {k}");
        let (x64, y64) = (x as f64, y as f64);
        if ((((x64 * y64 + x64) * y64 - x64) / y64) as f32).to_bits() != want.to_bits() {
            differs_from_f64 += 1;
        }
    }
    // The inputs do discriminate: computing in f64 and rounding once gives other bits.
    assert!(differs_from_f64 > 10, "{differs_from_f64}");
}

#[test]
fn f16_and_bf16_round_through_their_own_precision() {
    for dt in [DType::F16, DType::BF16] {
        let (a, c) = (global("A", dt), global("C", dt));
        let i = Var::index("i");
        let one = Expr::float(1.0, dt);
        let f = cpu_func(
            vec![input(&a, vec![int(1)]), output(&c, vec![int(2)])],
            Stmt::seq(vec![
                // (1 + x) - 1 with x below the precision: 0.
                st(&c, int(0), (one.clone() + ld(&a, int(0))) - one),
                st(&c, int(1), Expr::cast(dt, Expr::cast(DType::F32, ld(&a, int(0))) * Expr::float(3.0, DType::F32))),
            ]),
        );
        let _ = i;
        let tiny = if dt == DType::F16 { 1.0 / 4096.0 } else { 1.0 / 1024.0 };
        let mut args = vec![t(HostTensor::from_f64(dt, vec![1], &[tiny]).unwrap()), t(HostTensor::zeros(dt, vec![2]))];
        run(&f, &mut args).unwrap();
        let got = args[1].as_tensor().unwrap().to_f64_vec();
        assert_eq!(got, vec![0.0, 3.0 * tiny], "{dt}");
    }
}

#[test]
fn out_of_bounds_load_is_an_error() {
    let (a, c) = (global("A", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    // Reads A[i + 1] for i < 8, A has 8 elements.
    let f = cpu_func(
        vec![input(&a, vec![int(8)]), output(&c, vec![int(8)])],
        for_(&i, int(8), st(&c, v(&i), ld(&a, v(&i) + 1))),
    );
    let mut args = vec![t(HostTensor::zeros(DType::F32, vec![8])), t(HostTensor::f32(vec![8], vec![7.0; 8]))];
    expect_err(&f, &mut args, ErrorKind::OutOfBounds, &["`A`", "index 8", "8 elements"]);
    // Outputs untouched on error.
    assert_eq!(out_f32(&args, 1), vec![7.0; 8]);
    // Negative index and out-of-bounds store.
    let g = cpu_func(vec![output(&c, vec![int(8)])], st(&c, int(-1), f32c(0.0)));
    expect_err(&g, &mut [t(HostTensor::zeros(DType::F32, vec![8]))], ErrorKind::OutOfBounds, &["store to `C`", "-1"]);
}

#[test]
fn uninitialized_read_of_an_allocation_is_an_error() {
    let c = global("C", DType::F32);
    let tmp = Buffer::new("tmp", DType::F32, Scope::Global);
    let i = Var::index("i");
    // Writes tmp[0..3], reads tmp[0..4].
    let body = alloc(
        &tmp,
        4,
        Stmt::seq(vec![for_(&i, int(3), st(&tmp, v(&i), f32c(1.0))), for_(&i, int(4), st(&c, v(&i), ld(&tmp, v(&i))))]),
    );
    let f = cpu_func(vec![output(&c, vec![int(4)])], body);
    expect_err(&f, &mut [t(HostTensor::zeros(DType::F32, vec![4]))], ErrorKind::Uninitialized, &["element 3", "`tmp`"]);
}

#[test]
fn storing_to_an_input_is_an_error() {
    let a = global("A", DType::F32);
    let f = cpu_func(vec![input(&a, vec![int(2)])], st(&a, int(0), f32c(1.0)));
    expect_err(&f, &mut [t(HostTensor::zeros(DType::F32, vec![2]))], ErrorKind::WriteToInput, &["`A`"]);
}

#[test]
fn parallel_loop_races() {
    let (a, c) = (global("A", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let params = || vec![input(&a, vec![int(4)]), output(&c, vec![int(4)])];
    let args =
        || vec![t(HostTensor::f32(vec![4], vec![1.0, 2.0, 3.0, 4.0])), t(HostTensor::zeros(DType::F32, vec![4]))];
    // Disjoint writes, shared reads: fine.
    let ok = cpu_func(params(), par(&i, int(4), st(&c, v(&i), ld(&a, int(0)) + ld(&a, v(&i)))));
    let mut good = args();
    run(&ok, &mut good).unwrap();
    assert_eq!(out_f32(&good, 1), vec![2.0, 3.0, 4.0, 5.0]);
    // Every iteration writes C[0].
    let ww = cpu_func(params(), par(&i, int(4), st(&c, int(0), ld(&a, v(&i)))));
    expect_err(&ww, &mut args(), ErrorKind::Race, &["parallel loop over `i`", "`C` element 0", "i = 0", "i = 1"]);
    // The same loop, serial, is fine.
    let serial = cpu_func(params(), for_(&i, int(4), st(&c, int(0), ld(&a, v(&i)))));
    run(&serial, &mut args()).unwrap();
    // Iteration i reads C[i + 1], which iteration i + 1 writes.
    let rw = cpu_func(params(), par(&i, int(3), st(&c, v(&i), ld(&c, v(&i) + 1))));
    expect_err(
        &rw,
        &mut args(),
        ErrorKind::Race,
        &["`C` element 1", "read by iteration i = 0", "written by iteration i = 1"],
    );
    // A local accumulator allocated inside each iteration is private.
    let acc = Buffer::new("acc", DType::F32, Scope::Local);
    let private = cpu_func(
        params(),
        par(
            &i,
            int(4),
            alloc(&acc, 1, Stmt::seq(vec![st(&acc, int(0), ld(&a, v(&i))), st(&c, v(&i), ld(&acc, int(0)))])),
        ),
    );
    run(&private, &mut args()).unwrap();
    // One allocated outside the loop is shared by the iterations: a race.
    let shared = cpu_func(
        params(),
        alloc(
            &acc,
            1,
            par(&i, int(4), Stmt::seq(vec![st(&acc, int(0), ld(&a, v(&i))), st(&c, v(&i), ld(&acc, int(0)))])),
        ),
    );
    expect_err(&shared, &mut args(), ErrorKind::Race, &["`acc` element 0"]);
}

#[test]
fn select_evaluates_only_the_taken_branch() {
    // C[i] = i < 4 ? A[i] : -1 for i < 6, A has 4 elements.
    let (a, c) = (global("A", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let guarded = Expr::select(Expr::lt(v(&i), int(4)), ld(&a, v(&i)), f32c(-1.0));
    let f = cpu_func(vec![input(&a, vec![int(4)]), output(&c, vec![int(6)])], for_(&i, int(6), st(&c, v(&i), guarded)));
    let mut args =
        vec![t(HostTensor::f32(vec![4], vec![1.0, 2.0, 3.0, 4.0])), t(HostTensor::zeros(DType::F32, vec![6]))];
    run(&f, &mut args).unwrap();
    assert_eq!(out_f32(&args, 1), vec![1.0, 2.0, 3.0, 4.0, -1.0, -1.0]);
    // Also `&&` short-circuits: i < 4 && A[i] > 2.
    let b = global("B", DType::BOOL);
    let cond = Expr::and(Expr::lt(v(&i), int(4)), Expr::cmp(CmpOp::Gt, ld(&a, v(&i)), f32c(2.0)));
    let g = cpu_func(vec![input(&a, vec![int(4)]), output(&b, vec![int(6)])], for_(&i, int(6), st(&b, v(&i), cond)));
    let mut args =
        vec![t(HostTensor::f32(vec![4], vec![1.0, 2.0, 3.0, 4.0])), t(HostTensor::zeros(DType::BOOL, vec![6]))];
    run(&g, &mut args).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().as_bool().unwrap(), &[false, false, true, true, false, false]);
    // Unguarded, the same read is an error.
    let h = cpu_func(
        vec![input(&a, vec![int(4)]), output(&c, vec![int(6)])],
        for_(&i, int(6), st(&c, v(&i), ld(&a, v(&i)))),
    );
    expect_err(
        &h,
        &mut [t(HostTensor::zeros(DType::F32, vec![4])), t(HostTensor::zeros(DType::F32, vec![6]))],
        ErrorKind::OutOfBounds,
        &["`A`"],
    );
}

fn ramp(base: Expr, lanes: u16) -> Expr {
    Expr::Ramp { base: Box::new(base), stride: Box::new(int(1)), lanes }
}

#[test]
fn vector_ramp_load_and_store() {
    // C[4i..4i+4] = A[4i..4i+4] * B[4i..4i+4] + broadcast(1).
    let (a, b, c) = (global("A", DType::F32), global("B", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let idx = || ramp(v(&i) * 4, 4);
    let value = Expr::load(&a, vec![idx()]) * Expr::load(&b, vec![idx()])
        + Expr::Broadcast { value: Box::new(f32c(1.0)), lanes: 4 };
    let f = cpu_func(
        vec![input(&a, vec![int(16)]), input(&b, vec![int(16)]), output(&c, vec![int(16)])],
        Stmt::for_loop(i.clone(), int(4), ForKind::Vectorized, Stmt::store(&c, vec![idx()], value)),
    );
    let (av, bv) = (randoms(16, 6), randoms(16, 7));
    let mut args = vec![
        t(HostTensor::f32(vec![16], av.clone())),
        t(HostTensor::f32(vec![16], bv.clone())),
        t(HostTensor::zeros(DType::F32, vec![16])),
    ];
    run(&f, &mut args).unwrap();
    let want: Vec<f32> = av.iter().zip(&bv).map(|(x, y)| x * y + 1.0).collect();
    assert_eq!(out_f32(&args, 2), want);

    // A vector select guards the lanes past the end: C[r] = r < 10 ? A[r] : 0 over 4 lanes.
    let lanes = |e: Expr| Expr::Broadcast { value: Box::new(e), lanes: 4 };
    let guarded = Expr::select(Expr::lt(idx(), lanes(int(10))), Expr::load(&a, vec![idx()]), lanes(f32c(0.0)));
    let g = cpu_func(
        vec![input(&a, vec![int(10)]), output(&c, vec![int(12)])],
        for_(&i, int(3), Stmt::store(&c, vec![idx()], guarded)),
    );
    let av: Vec<f32> = (0..10).map(|x| x as f32).collect();
    let mut args = vec![t(HostTensor::f32(vec![10], av)), t(HostTensor::zeros(DType::F32, vec![12]))];
    run(&g, &mut args).unwrap();
    assert_eq!(out_f32(&args, 1), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 0.0, 0.0]);
    // A vector load running past the end is an error naming the first bad lane.
    let h = cpu_func(
        vec![input(&a, vec![int(10)]), output(&c, vec![int(12)])],
        for_(&i, int(3), Stmt::store(&c, vec![idx()], Expr::load(&a, vec![idx()]))),
    );
    expect_err(
        &h,
        &mut [t(HostTensor::zeros(DType::F32, vec![10])), t(HostTensor::zeros(DType::F32, vec![12]))],
        ErrorKind::OutOfBounds,
        &["`A`", "index 10"],
    );
}

#[test]
fn integer_division_semantics() {
    // Out[k] for (x, y) in pairs: [x / y, x % y], i32.
    let o = global("O", DType::I32);
    let x = Var::new("x", DType::I32);
    let y = Var::new("y", DType::I32);
    let f = PrimFunc {
        name: "div".into(),
        target: Target::cpu(),
        params: vec![Param::Scalar(x.clone()), Param::Scalar(y.clone()), output(&o, vec![int(4)])],
        body: Stmt::seq(vec![
            st(&o, int(0), v(&x) / v(&y)),
            st(&o, int(1), v(&x) % v(&y)),
            st(&o, int(2), v(&x) + v(&y)),
            st(&o, int(3), v(&x) * v(&y)),
        ]),
        kernels: vec![],
        checks: vec![],
    };
    let go = |a: i32, b: i32| -> Result<Vec<i32>, InterpError> {
        let mut args =
            vec![ArgValue::Scalar(a.into()), ArgValue::Scalar(b.into()), t(HostTensor::zeros(DType::I32, vec![4]))];
        run(&f, &mut args)?;
        Ok(args[2].as_tensor().unwrap().as_i32().unwrap().to_vec())
    };
    for (a, b) in [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5), (i32::MAX, 1), (i32::MIN, 3)] {
        assert_eq!(go(a, b).unwrap(), vec![a / b, a % b, a.wrapping_add(b), a.wrapping_mul(b)], "{a}, {b}");
    }
    assert_eq!(go(-7, 2).unwrap()[..2], [-3, -1]);
    assert_eq!(go(i32::MAX, 1).unwrap()[2], i32::MIN); // wraps
    assert_eq!(go(5, 0).unwrap_err().kind, ErrorKind::DivisionByZero);
    // `MIN / -1` wraps (and `MIN % -1` is 0), as on every backend.
    assert_eq!(go(i32::MIN, -1).unwrap()[..2], [i32::MIN, 0]);
    // A scalar of the wrong type is rejected.
    let mut args =
        vec![ArgValue::Scalar(7i64.into()), ArgValue::Scalar(2i32.into()), t(HostTensor::zeros(DType::I32, vec![4]))];
    assert_eq!(run(&f, &mut args).unwrap_err().kind, ErrorKind::Argument);

    // u8 wraps, casts truncate.
    let p = global("P", DType::U8);
    let z = Var::new("z", DType::U8);
    let g = cpu_func(
        vec![Param::Scalar(z.clone()), output(&p, vec![int(2)])],
        Stmt::seq(vec![
            st(&p, int(0), v(&z) - Expr::typed_int(1, DType::U8)),
            st(&p, int(1), Expr::cast(DType::U8, Expr::typed_int(300, DType::I32))),
        ]),
    );
    let mut args = vec![ArgValue::Scalar(0u8.into()), t(HostTensor::zeros(DType::U8, vec![2]))];
    run(&g, &mut args).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().as_u8().unwrap(), &[255, 44]);
}

#[test]
#[allow(clippy::excessive_precision)]
fn erf_intrinsic_is_accurate() {
    let (a, c) = (global("A", DType::F64), global("C", DType::F64));
    let i = Var::index("i");
    let call = Expr::Call { func: Intrinsic::Erf, args: vec![ld(&a, v(&i))] };
    let xs = [0.0, 1e-10, 0.1, 0.5, 1.0, 1.5, 2.0, -2.5, 3.0, 4.0, -5.0];
    let want = [
        0.0,
        1.1283791670955126e-10,
        0.1124629160182848922,
        0.5204998778130465377,
        0.8427007929497148693,
        0.9661051464753107271,
        0.9953222650189527342,
        -0.9995930479825550411,
        0.9999779095030014146,
        0.9999999845827420997,
        -0.9999999999984625402,
    ];
    let n = xs.len() as i64;
    let f = cpu_func(vec![input(&a, vec![int(n)]), output(&c, vec![int(n)])], for_(&i, int(n), st(&c, v(&i), call)));
    let mut args =
        vec![t(HostTensor::f64(vec![xs.len()], xs.to_vec())), t(HostTensor::zeros(DType::F64, vec![xs.len()]))];
    run(&f, &mut args).unwrap();
    let got = args[1].as_tensor().unwrap().as_f64().unwrap();
    for k in 0..xs.len() {
        let rel = if want[k] == 0.0 { got[k].abs() } else { ((got[k] - want[k]) / want[k]).abs() };
        assert!(rel < 1e-13, "erf({}) = {}, want {} (rel {rel:e})", xs[k], got[k], want[k]);
    }
}

#[test]
fn other_intrinsics_match_std() {
    let (a, c) = (global("A", DType::F32), global("C", DType::F32));
    let i = Var::index("i");
    let fs = [
        (Intrinsic::Exp, (|x: f32| x.exp()) as fn(f32) -> f32),
        (Intrinsic::Tanh, |x| x.tanh()),
        (Intrinsic::Sigmoid, |x| 1.0 / (1.0 + (-x).exp())),
        (Intrinsic::Rsqrt, |x| 1.0 / x.abs().sqrt()),
        (Intrinsic::Floor, |x| x.floor()),
        (Intrinsic::Sin, |x| x.sin()),
    ];
    let xs = randoms(16, 9);
    for (func, reference) in fs {
        let arg = if func == Intrinsic::Rsqrt {
            Expr::Call { func: Intrinsic::Abs, args: vec![ld(&a, v(&i))] }
        } else {
            ld(&a, v(&i))
        };
        let body = for_(&i, int(16), st(&c, v(&i), Expr::Call { func, args: vec![arg] }));
        let f = cpu_func(vec![input(&a, vec![int(16)]), output(&c, vec![int(16)])], body);
        let mut args = vec![t(HostTensor::f32(vec![16], xs.clone())), t(HostTensor::zeros(DType::F32, vec![16]))];
        run(&f, &mut args).unwrap();
        let want: Vec<f32> = xs.iter().map(|&x| reference(x)).collect();
        assert_eq!(out_f32(&args, 1), want, "{func:?}");
    }
    // fma rounds once.
    let (x, y, z) = (1.0f32 + f32::EPSILON, 1.0f32 - f32::EPSILON, -1.0f32);
    let body =
        st(&c, int(0), Expr::Call { func: Intrinsic::Fma, args: vec![f32c(x as f64), f32c(y as f64), f32c(z as f64)] });
    let f = cpu_func(vec![output(&c, vec![int(1)])], body);
    let mut args = vec![t(HostTensor::zeros(DType::F32, vec![1]))];
    run(&f, &mut args).unwrap();
    assert_eq!(out_f32(&args, 0)[0], x.mul_add(y, z));
    assert_ne!(x.mul_add(y, z), x * y + z);
}

#[test]
fn cpu_matmul_64() {
    let n = 64;
    let (a, b, c) = (global("A", DType::F32), global("B", DType::F32), global("C", DType::F32));
    let (i, j, k) = (Var::index("i"), Var::index("j"), Var::index("k"));
    let ci = || v(&i) * n + v(&j);
    let body = par(
        &i,
        int(n),
        for_(
            &j,
            int(n),
            Stmt::seq(vec![
                st(&c, ci(), f32c(0.0)),
                for_(&k, int(n), st(&c, ci(), ld(&c, ci()) + ld(&a, v(&i) * n + v(&k)) * ld(&b, v(&k) * n + v(&j)))),
            ]),
        ),
    );
    let f = cpu_func(
        vec![input(&a, vec![int(n), int(n)]), input(&b, vec![int(n), int(n)]), output(&c, vec![int(n), int(n)])],
        body,
    );
    let (av, bv) = (randoms(4096, 10), randoms(4096, 11));
    let mut args = vec![
        t(HostTensor::f32(vec![64, 64], av.clone())),
        t(HostTensor::f32(vec![64, 64], bv.clone())),
        t(HostTensor::zeros(DType::F32, vec![64, 64])),
    ];
    run(&f, &mut args).unwrap();
    let got = out_f32(&args, 2);
    for i in 0..64 {
        for j in 0..64 {
            let mut s = 0.0f32;
            for k in 0..64 {
                s += av[i * 64 + k] * bv[k * 64 + j];
            }
            assert_eq!(got[i * 64 + j], s);
        }
    }
}

// ---- Un-flattened functions and errors of form ------------------------------------------

#[test]
fn multi_dimensional_access_through_realize() {
    // T realized over [2, 5) × [0, 3); T[r, s] = r * 10 + s; C[r - 2, s] (a 3×3 param) = T[r, s].
    let c = global("C", DType::I64);
    let tb = Buffer::new("T", DType::I64, Scope::Global);
    let (r, s) = (Var::index("r"), Var::index("s"));
    let fill = Stmt::For {
        var: r.clone(),
        min: int(2),
        extent: int(3),
        kind: ForKind::Serial,
        body: Box::new(for_(&s, int(3), Stmt::store(&tb, vec![v(&r), v(&s)], v(&r) * 10 + v(&s)))),
    };
    let copy = Stmt::For {
        var: r.clone(),
        min: int(2),
        extent: int(3),
        kind: ForKind::Serial,
        body: Box::new(for_(&s, int(3), Stmt::store(&c, vec![v(&r) - 2, v(&s)], Expr::load(&tb, vec![v(&r), v(&s)])))),
    };
    let realize = |body| Stmt::Realize {
        buffer: tb.clone(),
        bounds: vec![Range::new(int(2), int(3)), Range::new(int(0), int(3))],
        body: Box::new(body),
    };
    let f = cpu_func(vec![output(&c, vec![int(3), int(3)])], realize(Stmt::seq(vec![fill, copy])));
    let mut args = vec![t(HostTensor::zeros(DType::I64, vec![3, 3]))];
    run(&f, &mut args).unwrap();
    assert_eq!(args[0].as_tensor().unwrap().as_i64().unwrap(), &[20, 21, 22, 30, 31, 32, 40, 41, 42]);
    // Index 1 of dimension 0 is below the realized region.
    let g = cpu_func(vec![output(&c, vec![int(3), int(3)])], realize(Stmt::store(&tb, vec![int(1), int(0)], int(0))));
    expect_err(
        &g,
        &mut [t(HostTensor::zeros(DType::I64, vec![3, 3]))],
        ErrorKind::OutOfBounds,
        &["`T`", "dimension 0", "2..5"],
    );
}

#[test]
fn malformed_programs_are_errors_not_panics() {
    let c = global("C", DType::F32);
    let params = || vec![output(&c, vec![int(2)])];
    let args = || vec![t(HostTensor::zeros(DType::F32, vec![2]))];
    let x = Var::index("x");
    // Undefined variable.
    let f = cpu_func(params(), st(&c, v(&x), f32c(1.0)));
    expect_err(&f, &mut args(), ErrorKind::UndefinedVariable, &["`x`"]);
    // Type mismatch.
    let f = cpu_func(
        params(),
        st(&c, int(0), Expr::Binary { op: BinOp::Add, a: Box::new(f32c(1.0)), b: Box::new(int(1)) }),
    );
    expect_err(&f, &mut args(), ErrorKind::Type, &["f32", "i64"]);
    // Store of the wrong type.
    let f = cpu_func(params(), st(&c, int(0), int(1)));
    expect_err(&f, &mut args(), ErrorKind::Type, &["`C`"]);
    // Not lowered.
    let pl = Expr::ProducerLoad { tensor: TensorId(0), indices: vec![int(0)], dtype: DType::F32 };
    let f = cpu_func(params(), st(&c, int(0), pl));
    expect_err(&f, &mut args(), ErrorKind::NotLowered, &["not lowered"]);
    // An unbound buffer.
    let other = global("Other", DType::F32);
    let f = cpu_func(params(), st(&c, int(0), ld(&other, int(0))));
    expect_err(&f, &mut args(), ErrorKind::UnboundBuffer, &["`Other`"]);
    // A barrier on the host; a launch of a missing kernel; an intrinsic with no arguments.
    expect_err(&cpu_func(params(), Stmt::Barrier), &mut args(), ErrorKind::InvalidProgram, &["barrier"]);
    expect_err(&cpu_func(params(), Stmt::Launch { kernel: 3 }), &mut args(), ErrorKind::InvalidProgram, &["kernel 3"]);
    let f = cpu_func(params(), st(&c, int(0), Expr::Call { func: Intrinsic::Exp, args: vec![] }));
    expect_err(&f, &mut args(), ErrorKind::Type, &["exp"]);
    // Negative allocation.
    let tmp = Buffer::new("tmp", DType::F32, Scope::Global);
    let f = cpu_func(params(), Stmt::Allocate { buffer: tmp.clone(), extent: int(-1), body: Box::new(Stmt::NoOp) });
    expect_err(&f, &mut args(), ErrorKind::InvalidProgram, &["`tmp`"]);
}

// ---- GPU ----------------------------------------------------------------------------

struct Gpu {
    a: Buffer,
    b: Buffer,
    tile: Buffer,
    bx: Var,
    tx: Var,
}

impl Gpu {
    fn new() -> Gpu {
        Gpu {
            a: global("A", DType::F32),
            b: global("B", DType::F32),
            tile: Buffer::new("tile", DType::F32, Scope::Shared),
            bx: Var::index("blockIdx.x"),
            tx: Var::index("threadIdx.x"),
        }
    }
    /// 2 blocks × 8 threads; `body` is the kernel body.
    fn func(&self, body: Stmt) -> PrimFunc {
        let kernel = Kernel {
            name: "k".into(),
            thread_vars: vec![(ThreadTag::BlockX, self.bx.clone()), (ThreadTag::ThreadX, self.tx.clone())],
            grid: [int(2), int(1), int(1)],
            block: [int(8), int(1), int(1)],
            buffer_args: vec![self.a.clone(), self.b.clone()],
            scalar_args: vec![],
            body,
        };
        PrimFunc {
            name: "gpu".into(),
            target: Target::cuda(),
            params: vec![input(&self.a, vec![int(16)]), output(&self.b, vec![int(16)])],
            body: Stmt::Launch { kernel: 0 },
            kernels: vec![kernel],
            checks: vec![],
        }
    }
    fn gid(&self) -> Expr {
        v(&self.bx) * 8 + v(&self.tx)
    }
    /// tile[tx] = A[gid]; (barrier;) B[gid] = tile[tx] + tile[(tx + 1) % 8].
    fn rotate(&self, barrier: bool) -> PrimFunc {
        let load = st(&self.tile, v(&self.tx), ld(&self.a, self.gid()));
        let use_ = st(&self.b, self.gid(), ld(&self.tile, v(&self.tx)) + ld(&self.tile, (v(&self.tx) + 1) % 8));
        let body = if barrier { Stmt::seq(vec![load, Stmt::Barrier, use_]) } else { Stmt::seq(vec![load, use_]) };
        self.func(alloc(&self.tile, 8, body))
    }
    fn args() -> Vec<ArgValue> {
        vec![
            t(HostTensor::f32(vec![16], (0..16).map(|x| x as f32).collect())),
            t(HostTensor::zeros(DType::F32, vec![16])),
        ]
    }
}

#[test]
fn gpu_shared_tile_with_barrier() {
    let g = Gpu::new();
    let mut args = Gpu::args();
    run(&g.rotate(true), &mut args).unwrap();
    let want: Vec<f32> = (0..16).map(|i| (i + (i / 8) * 8 + (i % 8 + 1) % 8) as f32).collect();
    assert_eq!(out_f32(&args, 1), want);
}

#[test]
fn gpu_missing_barrier_is_a_race() {
    let g = Gpu::new();
    let e = expect_err(
        &g.rotate(false),
        &mut Gpu::args(),
        ErrorKind::Race,
        &[
            "race on shared buffer `tile` element 1 between threads 0 and 1: missing barrier",
            "kernel `k`",
            "block (0,0,0)",
        ],
    );
    assert!(e.to_string().contains("thread 1"), "{e}");
}

#[test]
fn gpu_barrier_in_divergent_if() {
    let g = Gpu::new();
    let body = Stmt::seq(vec![
        st(&g.tile, v(&g.tx), ld(&g.a, g.gid())),
        Stmt::if_then(Expr::lt(v(&g.tx), int(4)), Stmt::Barrier),
        st(&g.b, g.gid(), ld(&g.tile, v(&g.tx))),
    ]);
    expect_err(
        &g.func(alloc(&g.tile, 8, body)),
        &mut Gpu::args(),
        ErrorKind::Divergence,
        &["barrier inside divergent control flow"],
    );
    // A uniform `if` around a barrier is fine.
    let body = Stmt::seq(vec![
        st(&g.tile, v(&g.tx), ld(&g.a, g.gid())),
        Stmt::if_then(Expr::lt(v(&g.bx), int(4)), Stmt::Barrier),
        st(&g.b, g.gid(), ld(&g.tile, (v(&g.tx) + 1) % 8)),
    ]);
    run(&g.func(alloc(&g.tile, 8, body)), &mut Gpu::args()).unwrap();
}

#[test]
fn gpu_barrier_in_loop_with_thread_dependent_bounds() {
    let g = Gpu::new();
    let k = Var::index("k");
    let body = Stmt::seq(vec![
        st(&g.tile, v(&g.tx), ld(&g.a, g.gid())),
        for_(&k, v(&g.tx), Stmt::Barrier),
        st(&g.b, g.gid(), ld(&g.tile, v(&g.tx))),
    ]);
    expect_err(
        &g.func(alloc(&g.tile, 8, body)),
        &mut Gpu::args(),
        ErrorKind::Divergence,
        &["barrier inside a loop whose bounds differ between threads"],
    );
}

#[test]
fn gpu_kernel_sees_only_its_arguments() {
    let g = Gpu::new();
    let mut f = g.func(st(&g.b, g.gid(), ld(&g.a, g.gid())));
    run(&f, &mut Gpu::args()).unwrap();
    f.kernels[0].buffer_args = vec![g.b.clone()];
    expect_err(&f, &mut Gpu::args(), ErrorKind::UnboundBuffer, &["`A`", "buffer_args"]);
}

#[test]
fn gpu_global_race_between_blocks() {
    // Every block writes B[tx] = A[8 * bx + tx]: blocks 0 and 1 both write element 1 (element 0
    // first gets 0.0, the value it already holds, which races with nothing).
    let g = Gpu::new();
    let f = g.func(st(&g.b, v(&g.tx), ld(&g.a, g.gid())));
    expect_err(
        &f,
        &mut Gpu::args(),
        ErrorKind::Race,
        &["global buffer `B` element 1", "block (0,0,0)", "block (1,0,0)"],
    );
    let mut args = Gpu::args();
    run_with_options(&f, &mut args, &RunOptions { check_global_races: false }).unwrap();
    assert_eq!(out_f32(&args, 1)[..8], (8..16).map(|x| x as f32).collect::<Vec<_>>()[..]);
    // Redundant writes of the same value (every block writes B[tx] = A[tx]) are benign.
    let same = g.func(st(&g.b, v(&g.tx), ld(&g.a, v(&g.tx))));
    let mut args = Gpu::args();
    run(&same, &mut args).unwrap();
    assert_eq!(out_f32(&args, 1)[..8], (0..8).map(|x| x as f32).collect::<Vec<_>>()[..]);
    // So is a shared tile every thread fills redundantly, read after a barrier.
    let body = Stmt::seq(vec![
        st(&g.tile, v(&g.tx) % 4, ld(&g.a, v(&g.tx) % 4)),
        Stmt::Barrier,
        st(&g.b, g.gid(), ld(&g.tile, v(&g.tx) % 4)),
    ]);
    run(&g.func(alloc(&g.tile, 4, body)), &mut Gpu::args()).unwrap();
}

#[test]
fn gpu_local_memory_is_per_thread() {
    // Each thread keeps its own accumulator across a barrier.
    let g = Gpu::new();
    let acc = Buffer::new("acc", DType::F32, Scope::Local);
    let body = alloc(
        &acc,
        1,
        Stmt::seq(vec![
            st(&acc, int(0), ld(&g.a, g.gid())),
            Stmt::Barrier,
            st(&g.b, g.gid(), ld(&acc, int(0)) * f32c(2.0)),
        ]),
    );
    let mut args = Gpu::args();
    run(&g.func(body), &mut args).unwrap();
    assert_eq!(out_f32(&args, 1), (0..16).map(|x| 2.0 * x as f32).collect::<Vec<_>>());
}

#[test]
fn gpu_tiled_matmul_64() {
    // C = A · B, 64×64, 16×16 tiles in shared memory, 4×4 blocks of 16×16 threads.
    let n = 64i64;
    let ts = 16i64;
    let (a, b, c) = (global("A", DType::F32), global("B", DType::F32), global("C", DType::F32));
    let (sa, sb) = (Buffer::new("As", DType::F32, Scope::Shared), Buffer::new("Bs", DType::F32, Scope::Shared));
    let acc = Buffer::new("acc", DType::F32, Scope::Local);
    let (bx, by, tx, ty) = (Var::index("bx"), Var::index("by"), Var::index("tx"), Var::index("ty"));
    let (ko, ki) = (Var::index("ko"), Var::index("ki"));
    let row = || v(&by) * ts + v(&ty);
    let col = || v(&bx) * ts + v(&tx);
    let body = alloc(
        &sa,
        ts * ts,
        alloc(
            &sb,
            ts * ts,
            alloc(
                &acc,
                1,
                Stmt::seq(vec![
                    st(&acc, int(0), f32c(0.0)),
                    for_(
                        &ko,
                        int(n / ts),
                        Stmt::seq(vec![
                            st(&sa, v(&ty) * ts + v(&tx), ld(&a, row() * n + v(&ko) * ts + v(&tx))),
                            st(&sb, v(&ty) * ts + v(&tx), ld(&b, (v(&ko) * ts + v(&ty)) * n + col())),
                            Stmt::Barrier,
                            for_(
                                &ki,
                                int(ts),
                                st(
                                    &acc,
                                    int(0),
                                    ld(&acc, int(0)) + ld(&sa, v(&ty) * ts + v(&ki)) * ld(&sb, v(&ki) * ts + v(&tx)),
                                ),
                            ),
                            Stmt::Barrier,
                        ]),
                    ),
                    st(&c, row() * n + col(), ld(&acc, int(0))),
                ]),
            ),
        ),
    );
    let kernel = Kernel {
        name: "matmul".into(),
        thread_vars: vec![
            (ThreadTag::BlockX, bx.clone()),
            (ThreadTag::BlockY, by.clone()),
            (ThreadTag::ThreadX, tx.clone()),
            (ThreadTag::ThreadY, ty.clone()),
        ],
        grid: [int(n / ts), int(n / ts), int(1)],
        block: [int(ts), int(ts), int(1)],
        buffer_args: vec![a.clone(), b.clone(), c.clone()],
        scalar_args: vec![],
        body,
    };
    let mut f = PrimFunc {
        name: "matmul".into(),
        target: Target::cuda(),
        params: vec![input(&a, vec![int(n * n)]), input(&b, vec![int(n * n)]), output(&c, vec![int(n * n)])],
        body: Stmt::Launch { kernel: 0 },
        kernels: vec![kernel],
        checks: vec![],
    };
    let (av, bv) = (randoms(4096, 12), randoms(4096, 13));
    let args = || {
        vec![
            t(HostTensor::f32(vec![4096], av.clone())),
            t(HostTensor::f32(vec![4096], bv.clone())),
            t(HostTensor::zeros(DType::F32, vec![4096])),
        ]
    };
    let mut got = args();
    run(&f, &mut got).unwrap();
    let got = out_f32(&got, 2);
    for i in 0..64 {
        for j in 0..64 {
            let mut s = 0.0f32;
            for k in 0..64 {
                s += av[i * 64 + k] * bv[k * 64 + j];
            }
            assert_eq!(got[i * 64 + j], s, "C[{i}, {j}]");
        }
    }
    // Without the second barrier, the next tile overwrites what slower threads still read.
    if let Stmt::Allocate { body, .. } = &mut f.kernels[0].body {
        if let Stmt::Allocate { body, .. } = &mut **body {
            if let Stmt::Allocate { body, .. } = &mut **body {
                if let Stmt::Seq(v) = &mut **body {
                    if let Stmt::For { body, .. } = &mut v[1] {
                        if let Stmt::Seq(inner) = &mut **body {
                            inner.pop();
                        }
                    }
                }
            }
        }
    }
    expect_err(&f, &mut args(), ErrorKind::Race, &["race on shared buffer `As`", "missing barrier"]);
}

#[test]
fn gpu_launch_limits() {
    let g = Gpu::new();
    let mut f = g.func(Stmt::NoOp);
    f.kernels[0].block = [int(2048), int(1), int(1)];
    expect_err(&f, &mut Gpu::args(), ErrorKind::InvalidProgram, &["2048 threads"]);
    let mut f = g.func(Stmt::NoOp);
    f.kernels[0].grid = [int(-1), int(1), int(1)];
    expect_err(&f, &mut Gpu::args(), ErrorKind::InvalidProgram, &["grid.x"]);
    let mut f = g.func(Stmt::NoOp);
    f.kernels[0].block = [int(0), int(1), int(1)];
    expect_err(&f, &mut Gpu::args(), ErrorKind::InvalidProgram, &["block.x"]);
    // An empty grid (a zero-sized tensor) launches nothing.
    let mut f = g.func(Stmt::NoOp);
    f.kernels[0].grid = [int(0), int(1), int(1)];
    assert!(tvm_core::interp::run(&f, &mut Gpu::args()).is_ok());
}

#[test]
fn gpu_thread_binding_inside_a_kernel_guards_extra_threads() {
    // The launch has 8 threads; a stage bound to threadIdx.x with extent 5 runs on 0..5 only.
    let g = Gpu::new();
    let body = Stmt::ThreadBinding {
        tag: ThreadTag::ThreadX,
        var: g.tx.clone(),
        extent: int(5),
        body: Box::new(st(&g.b, g.gid(), ld(&g.a, g.gid()) + f32c(100.0))),
    };
    let mut args = Gpu::args();
    run(&g.func(body), &mut args).unwrap();
    let want: Vec<f32> = (0..16).map(|i| if i % 8 < 5 { i as f32 + 100.0 } else { 0.0 }).collect();
    assert_eq!(out_f32(&args, 1), want);
    // An extent beyond the launch would leave iterations unrun.
    let body =
        Stmt::ThreadBinding { tag: ThreadTag::ThreadX, var: g.tx.clone(), extent: int(9), body: Box::new(Stmt::NoOp) };
    expect_err(&g.func(body), &mut Gpu::args(), ErrorKind::InvalidProgram, &["threadIdx.x", "extent 9"]);
}

#[test]
fn gpu_uninitialized_shared_read_without_a_race() {
    // Threads 0..7 fill tile[0..7]; after the barrier thread 6 reads tile[7], which nobody wrote.
    let g = Gpu::new();
    let body = Stmt::seq(vec![
        Stmt::if_then(Expr::lt(v(&g.tx), int(7)), st(&g.tile, v(&g.tx), ld(&g.a, g.gid()))),
        Stmt::Barrier,
        st(&g.b, g.gid(), ld(&g.tile, (v(&g.tx) + 1) % 8)),
    ]);
    expect_err(&g.func(alloc(&g.tile, 8, body)), &mut Gpu::args(), ErrorKind::Uninitialized, &["element 7 of `tile`"]);
}

#[test]
fn gpu_cross_thread_tree_reduction() {
    // The shape lower_cross_thread_reduction emits: each of 8 threads reduces a strided part
    // into a local accumulator, then a tree in shared memory with a barrier per level, and
    // thread 0 writes the block's result.
    let (a, b) = (global("A", DType::F32), global("B", DType::F32));
    let (acc, red) = (Buffer::new("acc", DType::F32, Scope::Local), Buffer::new("red", DType::F32, Scope::Shared));
    let (bx, tx, k) = (Var::index("blockIdx_x"), Var::index("threadIdx_x"), Var::index("k"));
    let mut body = vec![
        st(&acc, int(0), f32c(0.0)),
        for_(&k, int(4), st(&acc, int(0), ld(&acc, int(0)) + ld(&a, v(&bx) * 32 + v(&k) * 8 + v(&tx)))),
        st(&red, v(&tx), ld(&acc, int(0))),
        Stmt::Barrier,
    ];
    for step in [4, 2, 1] {
        let cond = Expr::and(Expr::lt(v(&tx), int(step)), Expr::lt(v(&tx) + step, int(8)));
        body.push(Stmt::if_then(cond, st(&red, v(&tx), ld(&red, v(&tx)) + ld(&red, v(&tx) + step))));
        body.push(Stmt::Barrier);
    }
    body.push(Stmt::if_then(Expr::eq(v(&tx), int(0)), st(&b, v(&bx), ld(&red, int(0)))));
    body.push(Stmt::Barrier);
    let kernel = Kernel {
        name: "sum_kernel0".into(),
        thread_vars: vec![(ThreadTag::BlockX, bx.clone()), (ThreadTag::ThreadX, tx.clone())],
        grid: [int(3), int(1), int(1)],
        block: [int(8), int(1), int(1)],
        buffer_args: vec![a.clone(), b.clone()],
        scalar_args: vec![],
        body: alloc(&red, 8, alloc(&acc, 1, Stmt::seq(body))),
    };
    let f = PrimFunc {
        name: "sum".into(),
        target: Target::cuda(),
        params: vec![input(&a, vec![int(3), int(32)]), output(&b, vec![int(3)])],
        body: Stmt::Launch { kernel: 0 },
        kernels: vec![kernel],
        checks: vec![],
    };
    let data = randoms(96, 14);
    let mut args = vec![t(HostTensor::f32(vec![3, 32], data.clone())), t(HostTensor::zeros(DType::F32, vec![3]))];
    run(&f, &mut args).unwrap();
    let want: Vec<f32> = (0..3)
        .map(|blk| {
            let mut r: Vec<f32> = (0..8).map(|t| (0..4).fold(0.0f32, |s, k| s + data[blk * 32 + k * 8 + t])).collect();
            for step in [4, 2, 1] {
                for t in 0..step {
                    r[t] += r[t + step];
                }
            }
            r[0]
        })
        .collect();
    assert_eq!(out_f32(&args, 1), want);
}
