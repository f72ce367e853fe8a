//! Golden tests of the TIR printer and tests of the TIR verifier, on functions built by
//! hand.
//!
//! The expected text is inline; after an intended change of the format, bless it with
//! `UPDATE_EXPECT=1 cargo test -p tvm-core --test tir_print_basic` and review the diff.

use expect_test::{expect, Expect};
use tvm_core::dtype::DType;
use tvm_core::loc::Loc;
use tvm_core::target::Target;
use tvm_core::te::print_graph;
use tvm_core::te::{self, Graph, Op, Tensor, TensorId};
use tvm_core::tir::printer::{print_expr, print_func, print_stmt};
use tvm_core::tir::verify::{assert_valid, verify, Phase};
use tvm_core::tir::*;

fn v(x: &Var) -> Expr {
    Expr::var(x)
}

fn f32c(x: f64) -> Expr {
    Expr::float(x, DType::F32)
}

fn check_expr(e: &Expr, expected: Expect) {
    expected.assert_eq(&print_expr(e));
}

/// The vector add of the printer's documentation: a parallel outer loop, a vectorized
/// inner loop and a bounds guard.
fn vector_add() -> PrimFunc {
    let n = Var::index("n");
    let a = Buffer::new("a", DType::F32, Scope::Global);
    let b = Buffer::new("b", DType::F32, Scope::Global);
    let c = Buffer::new("c", DType::F32, Scope::Global);
    let (io, ii) = (Var::index("i_o"), Var::index("i_i"));
    let idx = v(&io) * 16 + v(&ii);
    let store =
        Stmt::store(&c, vec![idx.clone()], Expr::load(&a, vec![idx.clone()]) + Expr::load(&b, vec![idx.clone()]));
    let body = Stmt::for_loop(
        io,
        (v(&n) + 15) / 16,
        ForKind::Parallel,
        Stmt::for_loop(ii, Expr::int(16), ForKind::Vectorized, Stmt::if_then(Expr::lt(idx, v(&n)), store)),
    );
    let shape = vec![v(&n)];
    PrimFunc {
        name: "vector_add".into(),
        target: Target::cpu(),
        params: vec![
            Param::Tensor { buffer: a, shape: shape.clone(), is_output: false },
            Param::Tensor { buffer: b, shape: shape.clone(), is_output: false },
            Param::Tensor { buffer: c, shape, is_output: true },
        ],
        body,
        kernels: vec![],
        checks: vec![],
    }
}

/// A CUDA function: the host launches one kernel that stages `a` through shared memory.
fn gpu_reverse_scale() -> PrimFunc {
    let n = Var::index("n");
    let alpha = Var::new("alpha", DType::F32);
    let a = Buffer::new("a", DType::F32, Scope::Global);
    let c = Buffer::new("c", DType::F32, Scope::Global);
    let a_shared = Buffer::new("a_shared", DType::F32, Scope::Shared);
    let (bx, tx) = (Var::index("bx"), Var::index("tx"));
    let gi = v(&bx) * 256 + v(&tx);
    let in_bounds = Expr::lt(gi.clone(), v(&n));
    let body = Stmt::Allocate {
        buffer: a_shared.clone(),
        extent: Expr::int(256),
        body: Box::new(Stmt::seq(vec![
            Stmt::store(
                &a_shared,
                vec![v(&tx)],
                Expr::select(in_bounds.clone(), Expr::load(&a, vec![gi.clone()]), f32c(0.0)),
            ),
            Stmt::Barrier,
            Stmt::if_then(
                in_bounds,
                Stmt::store(&c, vec![gi], Expr::load(&a_shared, vec![Expr::int(255) - v(&tx)]) * v(&alpha)),
            ),
        ])),
    };
    let kernel = Kernel {
        name: "reverse_scale_kernel0".into(),
        thread_vars: vec![(ThreadTag::BlockX, bx), (ThreadTag::ThreadX, tx)],
        grid: [(v(&n) + 255) / 256, Expr::int(1), Expr::int(1)],
        block: [Expr::int(256), Expr::int(1), Expr::int(1)],
        buffer_args: vec![a.clone(), c.clone()],
        scalar_args: vec![n.clone(), alpha.clone()],
        body,
    };
    PrimFunc {
        name: "reverse_scale".into(),
        target: Target::cuda(),
        checks: vec![],
        params: vec![
            Param::Tensor { buffer: a, shape: vec![v(&n)], is_output: false },
            Param::Tensor { buffer: c, shape: vec![v(&n)], is_output: true },
            Param::Scalar(alpha),
        ],
        body: Stmt::Launch { kernel: 0 },
        kernels: vec![kernel],
    }
}

#[test]
fn prints_cpu_loop_nest() {
    expect![[r#"
        @func cpu vector_add(a: f32[n] global, b: f32[n] global, c: f32[n] global out)
          for i_o in parallel(0, (n + 15) / 16):
            for i_i in vectorized(0, 16):
              if i_o * 16 + i_i < n:
                c[i_o * 16 + i_i] = a[i_o * 16 + i_i] + b[i_o * 16 + i_i]
    "#]]
    .assert_eq(&print_func(&vector_add()));
}

#[test]
fn display_matches_print_func() {
    let f = vector_add();
    assert_eq!(f.to_string(), print_func(&f));
    assert_eq!(f.body.to_string(), print_stmt(&f.body));
}

#[test]
fn prints_gpu_function_with_kernel() {
    expect![[r#"
        @func cuda reverse_scale(a: f32[n] global, c: f32[n] global out, alpha: f32)
          launch reverse_scale_kernel0<<<grid((n + 255) / 256, 1, 1), block(256, 1, 1)>>>(a, c, n, alpha)

        @kernel reverse_scale_kernel0(a, c, n, alpha)
          blockIdx.x: bx
          threadIdx.x: tx
          alloc a_shared: f32[256] shared
          a_shared[tx] = select(bx * 256 + tx < n, a[bx * 256 + tx], 0.0)
          barrier()
          if bx * 256 + tx < n:
            c[bx * 256 + tx] = a_shared[255 - tx] * alpha
    "#]]
    .assert_eq(&print_func(&gpu_reverse_scale()));
}

#[test]
fn prints_graph_with_reduction() {
    let (m, n, k) = (Var::index("M"), Var::index("N"), Var::index("K"));
    let mut g =
        Graph { name: "matmul".into(), tensors: vec![], params: vec![], outputs: vec![], dims: vec![], checks: vec![] };
    let placeholder = |name: &str, shape: Vec<Expr>| Tensor {
        name: name.into(),
        dtype: DType::F32,
        shape,
        op: Op::Placeholder,
        loc: Loc::NONE,
    };
    let ta = g.add(placeholder("a", vec![v(&m), v(&k)]));
    let tb = g.add(placeholder("b", vec![v(&k), v(&n)]));
    let (i, j, kk) = (Var::index("i"), Var::index("j"), Var::index("k"));
    let load = |t: TensorId, idx: Vec<Expr>| Expr::ProducerLoad { tensor: t, indices: idx, dtype: DType::F32 };
    let body = Expr::Reduce(Box::new(Reduce {
        tuple: None,
        op: ReduceOp::Sum,
        source: load(ta, vec![v(&i), v(&kk)]) * load(tb, vec![v(&kk), v(&j)]),
        axes: vec![IterVar { var: kk, dom: Range::from_extent(v(&k)), kind: IterKind::Reduce }],
    }));
    let axes = vec![
        IterVar { var: i, dom: Range::from_extent(v(&m)), kind: IterKind::DataPar },
        IterVar { var: j, dom: Range::from_extent(v(&n)), kind: IterKind::DataPar },
    ];
    let tc = g.add(Tensor {
        name: "c".into(),
        dtype: DType::F32,
        shape: vec![v(&m), v(&n)],
        op: Op::Compute { axes, body },
        loc: Loc::NONE,
    });
    g.params = vec![te::Param::Tensor(ta), te::Param::Tensor(tb)];
    g.outputs = vec![tc];
    g.dims = vec![m, k, n];
    expect![[r#"
        @graph matmul(a, b) -> c
          a: f32[M, K]
          b: f32[K, N]
          c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K)
    "#]]
    .assert_eq(&print_graph(&g));
    // Without the graph, tensor reads print by id.
    let Op::Compute { body, .. } = &g.tensor(tc).op else { unreachable!() };
    expect!["sum(t0[i, k] * t1[k, j] for k in 0..K)"].assert_eq(&print_expr(body));
}

#[test]
fn prints_scheduled_statements() {
    let m = Var::index("m");
    let c = Buffer::new("c", DType::F32, Scope::Global);
    let c_local = Buffer::new("c_local", DType::F32, Scope::Local);
    let (tx, j, x) = (Var::index("tx"), Var::index("j"), Var::index("x"));
    let s = Stmt::ThreadBinding {
        tag: ThreadTag::ThreadX,
        var: tx.clone(),
        extent: Expr::int(64),
        body: Box::new(Stmt::Realize {
            buffer: c_local.clone(),
            bounds: vec![Range::new(v(&tx), Expr::int(1)), Range::from_extent(v(&m))],
            body: Box::new(Stmt::seq(vec![
                Stmt::Let {
                    var: x.clone(),
                    value: v(&tx) * 2,
                    body: Box::new(Stmt::for_loop(
                        j.clone(),
                        v(&m),
                        ForKind::Unrolled,
                        Stmt::store(&c_local, vec![v(&tx), v(&j)], Expr::cast(DType::F32, v(&x))),
                    )),
                },
                Stmt::If {
                    cond: Expr::and(Expr::ge(v(&tx), Expr::int(1)), Expr::not(Expr::eq(v(&m), Expr::int(0)))),
                    then: Box::new(Stmt::store(&c, vec![v(&tx)], Expr::load(&c_local, vec![v(&tx), Expr::int(0)]))),
                    otherwise: Some(Box::new(Stmt::NoOp)),
                },
            ])),
        }),
    };
    expect![[r#"
        bind tx = threadIdx.x in 0..64:
          realize c_local: f32[tx:1, 0:m] local:
            let x = tx * 2:
              for j in unroll(0, m):
                c_local[tx, j] = f32(x)
            if tx >= 1 && !(m == 0):
              c[tx] = c_local[tx, 0]
            else:
              noop"#]]
    .assert_eq(&print_stmt(&s));
}

#[test]
fn prints_allocations_and_lets_in_sequence() {
    // A `let` followed by statements outside its body indents the body; the last one
    // of a sequence does not.
    let b = Buffer::new("b", DType::I32, Scope::Local);
    let (x, y) = (Var::index("x"), Var::index("y"));
    let s = Stmt::seq(vec![
        Stmt::Let { var: x.clone(), value: Expr::int(1), body: Box::new(Stmt::Barrier) },
        Stmt::Allocate {
            buffer: b.clone(),
            extent: Expr::int(4),
            body: Box::new(Stmt::Let {
                var: y.clone(),
                value: Expr::int(2),
                body: Box::new(Stmt::store(&b, vec![v(&y)], Expr::typed_int(7, DType::I32))),
            }),
        },
    ]);
    expect![[r#"
        let x = 1:
          barrier()
        alloc b: i32[4] local
        let y = 2
        b[y] = 7"#]]
    .assert_eq(&print_stmt(&s));
}

#[test]
fn prints_vector_nodes() {
    let a = Buffer::new("a", DType::F32, Scope::Global);
    let i = Var::index("i");
    let ramp = Expr::Ramp { base: Box::new(v(&i) * 4), stride: Box::new(Expr::int(1)), lanes: 4 };
    let value = Expr::Load { buffer: a.clone(), indices: vec![ramp.clone()] }
        + Expr::Broadcast { value: Box::new(f32c(1.0)), lanes: 4 };
    expect!["a[ramp(i * 4, 1, 4)] = a[ramp(i * 4, 1, 4)] + broadcast(1.0, 4)"].assert_eq(&print_stmt(&Stmt::store(
        &a,
        vec![ramp],
        value,
    )));
}

#[test]
fn parenthesizes_by_precedence() {
    let (a, b, c) = (Var::index("a"), Var::index("b"), Var::index("c"));
    check_expr(&((v(&a) + v(&b)) * v(&c)), expect!["(a + b) * c"]);
    check_expr(&(v(&a) + v(&b) * v(&c)), expect!["a + b * c"]);
    check_expr(&(v(&a) - v(&b) - v(&c)), expect!["a - b - c"]);
    check_expr(&(v(&a) - (v(&b) - v(&c))), expect!["a - (b - c)"]);
    check_expr(&(v(&a) / (v(&b) * v(&c)) % v(&c)), expect!["a / (b * c) % c"]);
    check_expr(&Expr::Neg(Box::new(v(&a) + v(&b))), expect!["-(a + b)"]);
    check_expr(&Expr::Neg(Box::new(Expr::int(-3))), expect!["-(-3)"]);
    check_expr(&(v(&a) * Expr::int(-3)), expect!["a * -3"]);
    let lt = Expr::lt(v(&a), v(&b));
    let eq = Expr::eq(v(&b), v(&c));
    check_expr(&Expr::or(Expr::and(lt.clone(), eq.clone()), lt.clone()), expect!["a < b && b == c || a < b"]);
    check_expr(
        &Expr::and(Expr::or(lt.clone(), eq.clone()), Expr::not(lt.clone())),
        expect!["(a < b || b == c) && !(a < b)"],
    );
    check_expr(&Expr::eq(lt.clone(), eq), expect!["(a < b) == (b == c)"]);
    check_expr(&Expr::min(v(&a), Expr::max(v(&b), v(&c) + 1)), expect!["min(a, max(b, c + 1))"]);
}

#[test]
fn prints_literals_calls_and_casts() {
    let x = Var::new("x", DType::F32);
    check_expr(&f32c(1.0), expect!["1.0"]);
    check_expr(&f32c(0.1), expect!["0.1"]);
    check_expr(&Expr::float(0.1, DType::F64), expect!["0.1f64"]);
    check_expr(&f32c(1e-5), expect!["1e-5"]);
    check_expr(&Expr::float(f64::NEG_INFINITY, DType::F32), expect!["-inf"]);
    check_expr(&Expr::float(f64::INFINITY, DType::F64), expect!["inff64"]);
    check_expr(&Expr::float(1e20, DType::F64), expect!["1e20f64"]);
    check_expr(&Expr::typed_int(-1, DType::U64), expect!["18446744073709551615u64"]);
    check_expr(&Expr::typed_int(i64::MIN, DType::I64), expect!["-9223372036854775808"]);
    check_expr(&Expr::Bool(true), expect!["true"]);
    let exp = Expr::Call { func: Intrinsic::Exp, args: vec![v(&x) - f32c(2.5)] };
    check_expr(&exp, expect!["exp(x - 2.5)"]);
    let fma = Expr::Call { func: Intrinsic::Fma, args: vec![v(&x), v(&x), f32c(-0.5)] };
    check_expr(&fma, expect!["fma(x, x, -0.5)"]);
    let sel = Expr::select(Expr::lt(v(&x), f32c(0.0)), Expr::Neg(Box::new(v(&x))), v(&x));
    check_expr(&sel, expect!["select(x < 0.0, -x, x)"]);
    check_expr(&Expr::cast(DType::I32, v(&x) * f32c(2.0)), expect!["i32(x * 2.0)"]);
    check_expr(&Expr::cast(DType::F16, v(&x)), expect!["f16(x)"]);
}

#[test]
fn output_does_not_depend_on_ids() {
    let first = print_func(&vector_add());
    for k in 0..17 {
        Var::index(format!("junk{k}"));
        Buffer::new("junk", DType::F32, Scope::Global);
    }
    let second = print_func(&vector_add());
    assert_eq!(first, second);
    assert_eq!(print_func(&gpu_reverse_scale()), print_func(&gpu_reverse_scale()));
}

#[test]
fn same_named_vars_and_buffers_get_suffixes() {
    // Two loops over different variables named `i`, and a variable really named `i_1`
    // that appears after them; two different buffers named `t`.
    let (i1, i2, i3, i4) = (Var::index("i"), Var::index("i"), Var::index("i_1"), Var::index("i"));
    let (t1, t2) = (Buffer::new("t", DType::I64, Scope::Global), Buffer::new("t", DType::I64, Scope::Global));
    let s = Stmt::seq(vec![
        Stmt::for_loop(i1.clone(), Expr::int(4), ForKind::Serial, Stmt::store(&t1, vec![v(&i1)], v(&i1))),
        Stmt::for_loop(i2.clone(), Expr::int(4), ForKind::Serial, Stmt::store(&t2, vec![v(&i2)], v(&i2))),
        Stmt::store(&t1, vec![v(&i3)], v(&i4)),
    ]);
    expect![[r#"
        for i in serial(0, 4):
          t[i] = i
        for i_1 in serial(0, 4):
          t_1[i_1] = i_1
        t[i_1_1] = i_2"#]]
    .assert_eq(&print_stmt(&s));
}

// ---- verifier ----

fn errors(f: &PrimFunc, phase: Phase) -> Vec<String> {
    verify(f, phase).expect_err("the function should not verify")
}

#[test]
fn valid_functions_pass() {
    assert_eq!(verify(&vector_add(), Phase::Flattened), Ok(()));
    assert_eq!(verify(&vector_add(), Phase::Scheduled), Ok(()));
    assert_eq!(verify(&gpu_reverse_scale(), Phase::Flattened), Ok(()));
    assert_valid(&gpu_reverse_scale(), Phase::Flattened, "test");
}

#[test]
fn reports_undefined_var() {
    let mut f = vector_add();
    let j = Var::index("j");
    let c = match &f.params[2] {
        Param::Tensor { buffer, .. } => buffer.clone(),
        Param::Scalar(_) => unreachable!(),
    };
    f.body = Stmt::seq(vec![f.body, Stmt::store(&c, vec![v(&j)], f32c(0.0))]);
    expect![[r#"
        [
            "body: undefined variable `j`, at `c[j] = 0.0`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_unallocated_buffer() {
    let mut f = vector_add();
    let tmp = Buffer::new("tmp", DType::F32, Scope::Global);
    f.body = Stmt::seq(vec![Stmt::store(&tmp, vec![Expr::int(0)], f32c(1.0)), f.body]);
    expect![[r#"
        [
            "body: buffer `tmp` is used but neither a parameter nor allocated in an enclosing scope, at `tmp[0] = 1.0`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_type_mismatch() {
    let mut f = vector_add();
    let c = match &f.params[2] {
        Param::Tensor { buffer, .. } => buffer.clone(),
        Param::Scalar(_) => unreachable!(),
    };
    // Built without the checking constructor, as a buggy pass might.
    let bad = Expr::Binary { op: BinOp::Add, a: Box::new(Expr::int(1)), b: Box::new(Expr::typed_int(2, DType::I32)) };
    f.body = Stmt::seq(vec![f.body, Stmt::store(&c, vec![bad], Expr::typed_int(0, DType::I32))]);
    expect![[r#"
        [
            "body: operands of `+` have different types i64 and i32: `1 + 2i32`, at `c[1 + 2i32] = 0i32`",
            "body: store of i32 into `c` of type f32, at `c[1 + 2i32] = 0i32`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_barrier_on_host() {
    let mut f = gpu_reverse_scale();
    f.body = Stmt::seq(vec![Stmt::Barrier, f.body, Stmt::Launch { kernel: 1 }]);
    expect![[r#"
        [
            "host body: barrier outside device code, at `barrier()`",
            "host body: launch of kernel 1, but the function has 1 kernel(s), at `launch kernel 1`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_multi_index_load_when_flattened() {
    let n = Var::index("n");
    let a = Buffer::new("a", DType::F32, Scope::Global);
    let c = Buffer::new("c", DType::F32, Scope::Global);
    let i = Var::index("i");
    let f = PrimFunc {
        name: "copy".into(),
        target: Target::cpu(),
        params: vec![
            Param::Tensor { buffer: a.clone(), shape: vec![v(&n), Expr::int(2)], is_output: false },
            Param::Tensor { buffer: c.clone(), shape: vec![v(&n)], is_output: true },
        ],
        body: Stmt::for_loop(
            i.clone(),
            v(&n),
            ForKind::Serial,
            Stmt::store(&c, vec![v(&i)], Expr::load(&a, vec![v(&i), Expr::int(1)])),
        ),
        kernels: vec![],
        checks: vec![],
    };
    assert_eq!(verify(&f, Phase::Scheduled), Ok(()));
    expect![[r#"
        [
            "body: access to `a` has 2 indices in flattened TIR (expected 1), at `c[i] = a[i, 1]`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_kernel_argument_and_scope_problems() {
    let mut f = gpu_reverse_scale();
    // The kernel forgets `n` and `c`, and still binds a thread; the host allocates
    // shared memory.
    f.kernels[0].scalar_args.retain(|x| x.name() != "n");
    f.kernels[0].buffer_args.truncate(1);
    let body = std::mem::replace(&mut f.kernels[0].body, Stmt::NoOp);
    f.kernels[0].body = Stmt::ThreadBinding {
        tag: ThreadTag::ThreadY,
        var: Var::index("ty"),
        extent: Expr::int(1),
        body: Box::new(body),
    };
    let s = Buffer::new("s", DType::F32, Scope::Shared);
    f.body = Stmt::Allocate { buffer: s, extent: Expr::int(4), body: Box::new(f.body) };
    expect![[r#"
        [
            "host body: shared alloc `s` outside device code, at `alloc s: f32[4] shared`",
            "kernel `reverse_scale_kernel0`: thread binding of threadIdx.y left inside a kernel after split_host_device, at `bind ty = threadIdx.y in 0..1:`",
            "kernel `reverse_scale_kernel0`: `n` is used but not in the kernel's scalar_args, at `a_shared[tx] = select(bx * 256 + tx < n, a[bx * 256 + tx], 0.0)`",
            "kernel `reverse_scale_kernel0`: `n` is used but not in the kernel's scalar_args, at `if bx * 256 + tx < n:`",
            "kernel `reverse_scale_kernel0`: global buffer `c` is used but not in the kernel's buffer_args, at `c[bx * 256 + tx] = a_shared[255 - tx] * alpha`",
        ]
    "#]].assert_debug_eq(&errors(&f, Phase::Flattened));
}

#[test]
fn reports_redefined_loop_var_and_leftover_te() {
    let n = Var::index("n");
    let c = Buffer::new("c", DType::F32, Scope::Global);
    let i = Var::index("i");
    let read = Expr::ProducerLoad { tensor: TensorId(0), indices: vec![v(&i)], dtype: DType::F32 };
    let f = PrimFunc {
        name: "twice".into(),
        target: Target::cpu(),
        params: vec![Param::Tensor { buffer: c.clone(), shape: vec![v(&n)], is_output: true }],
        body: Stmt::for_loop(
            i.clone(),
            v(&n),
            ForKind::Serial,
            Stmt::for_loop(i.clone(), v(&n), ForKind::Serial, Stmt::store(&c, vec![v(&i)], read)),
        ),
        kernels: vec![],
        checks: vec![],
    };
    expect![[r#"
        [
            "body: loop variable `i` redefined while in scope, at `for i in serial(0, n):`",
            "body: tensor read `t0[i]` left in TIR (schedule_ops replaces them), at `c[i] = t0[i]`",
        ]
    "#]]
    .assert_debug_eq(&errors(&f, Phase::Scheduled));
}

#[test]
#[should_panic(expected = "internal: TIR invalid after pass `bad_pass`: body: barrier outside device code")]
fn assert_valid_names_the_pass() {
    let mut f = vector_add();
    f.body = Stmt::seq(vec![Stmt::Barrier, f.body]);
    assert_valid(&f, Phase::Flattened, "bad_pass");
}

#[test]
fn host_thread_bindings_are_device_code_until_split() {
    // Before split_host_device: a host binding holds a shared allocation and a barrier,
    // legal in either phase.
    let mut f = gpu_reverse_scale();
    let kernel = f.kernels.remove(0);
    let body = Stmt::ThreadBinding {
        tag: ThreadTag::BlockX,
        var: kernel.thread_vars[0].1.clone(),
        extent: kernel.grid[0].clone(),
        body: Box::new(Stmt::ThreadBinding {
            tag: ThreadTag::ThreadX,
            var: kernel.thread_vars[1].1.clone(),
            extent: Expr::int(256),
            body: Box::new(kernel.body.clone()),
        }),
    };
    f.body = body.clone();
    assert_eq!(verify(&f, Phase::Flattened), Ok(()));
    assert_eq!(verify(&f, Phase::Scheduled), Ok(()));

    // After the split, a binding left in the host body is a bug; on a CPU target a binding
    // is always one.
    let mut split = f.clone();
    split.kernels = vec![kernel];
    split.body = Stmt::seq(vec![Stmt::Launch { kernel: 0 }, body]);
    let mut cpu = f.clone();
    cpu.target = Target::cpu();
    let mut errs = errors(&split, Phase::Flattened);
    errs.extend(errors(&cpu, Phase::Scheduled));
    expect![[r#"
        [
            "host body: thread binding of blockIdx.x left in the host body after split_host_device, at `bind bx = blockIdx.x in 0..(n + 255) / 256:`",
            "host body: thread binding of threadIdx.x left in the host body after split_host_device, at `bind tx = threadIdx.x in 0..256:`",
            "body: thread binding of blockIdx.x on cpu target `cpu`, at `bind bx = blockIdx.x in 0..(n + 255) / 256:`",
            "body: thread binding of threadIdx.x on cpu target `cpu`, at `bind tx = threadIdx.x in 0..256:`",
            "body: shared alloc `a_shared` on cpu target `cpu`, at `alloc a_shared: f32[256] shared`",
        ]
    "#]].assert_debug_eq(&errs);
}

#[test]
fn negative_literals_bind_like_unary_minus() {
    let a = Var::new("a", DType::F64);
    let neg_zero = Expr::float(-0.0, DType::F64);
    check_expr(&Expr::Neg(Box::new(neg_zero.clone())), expect!["-(-0.0f64)"]);
    check_expr(&(v(&a) - neg_zero), expect!["a - -0.0"]);
    let big = Expr::typed_int(-1, DType::U64);
    check_expr(&Expr::Neg(Box::new(big)), expect!["-18446744073709551615u64"]);
}
