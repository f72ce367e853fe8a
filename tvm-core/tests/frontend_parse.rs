//! The kernels of docs/LANGUAGE.md §1–2 and a few more, parsed and checked: the graphs they
//! build, and that their schedules (given or default) build for a CPU and a GPU.

use tvm_core::driver::build_schedule;
use tvm_core::frontend::{check_schedules, parse_str, Kernel};
use tvm_core::te::{Op, Param};
use tvm_core::tir::{BinOp, Expr, IterKind, ReduceOp};
use tvm_core::{DType, Target};

mod frontend_kernels;
use frontend_kernels::*;

fn parse(src: &str) -> Kernel {
    match parse_str(src) {
        Ok(k) => k,
        Err(es) => panic!("{}", es.iter().map(|e| format!("{:?}: {e}", e.line_col())).collect::<Vec<_>>().join("\n")),
    }
}

/// The names, dtypes and ranks of the tensors, and which are reductions.
fn summary(k: &Kernel) -> Vec<(String, DType, usize, bool)> {
    k.graph.tensors.iter().map(|t| (t.name.clone(), t.dtype, t.shape.len(), t.is_reduction())).collect()
}

fn shape_text(k: &Kernel, name: &str) -> Vec<String> {
    let id = k.graph.find(name).expect("tensor exists");
    k.graph
        .tensor(id)
        .shape
        .iter()
        .map(|e| match e {
            Expr::Int { value, .. } => value.to_string(),
            Expr::Var(v) => v.name().to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// The default and given schedules build for a CPU and a GPU, and every block checks.
fn assert_schedules_build(k: &Kernel) {
    for t in [Target::cpu(), Target::cuda(), Target::opencl()] {
        if let Err(es) = build_schedule(k, &t) {
            panic!("{} on {}: {}", k.name, t, es.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
        }
    }
    let errors = check_schedules(k);
    assert!(errors.is_empty(), "{}: {errors:?}", k.name);
}

fn f32s(v: &[(&str, usize, bool)]) -> Vec<(String, DType, usize, bool)> {
    v.iter().map(|&(n, r, red)| (n.to_string(), DType::F32, r, red)).collect()
}

#[test]
fn vector_add() {
    let k = parse(VECTOR_ADD);
    assert_eq!(k.name, "vector_add");
    assert_eq!(k.docs, vec![" c[i] = a[i] + b[i]".to_string()]);
    assert!(matches!(k.vis, syn::Visibility::Public(_)));
    assert_eq!(summary(&k), f32s(&[("a", 1, false), ("b", 1, false), ("c", 1, false)]));
    assert_eq!(k.graph.dims.len(), 1);
    assert_eq!(k.graph.dims[0].name(), "n");
    assert_eq!(k.graph.dims[0].dtype(), DType::I64);
    assert_eq!(k.graph.params.len(), 2);
    assert_eq!(k.graph.outputs.len(), 1);
    assert_eq!(shape_text(&k, "c"), ["n"]);
    assert_eq!(k.schedules.len(), 2);
    assert_eq!(k.schedules[0].target, "cuda");
    assert_eq!(k.schedules[1].target, "cpu");
    assert_eq!(k.schedules[0].stmts.len(), 3);
    // c = a + b, reading the two inputs at the stage's axis.
    let c = k.graph.tensor(k.graph.outputs[0]);
    let Op::Compute { axes, body } = &c.op else { panic!("c is computed") };
    assert_eq!(axes.len(), 1);
    assert_eq!(axes[0].var.name(), "i");
    assert_eq!(axes[0].kind, IterKind::DataPar);
    let Expr::Binary { op: BinOp::Add, a, b } = body else { panic!("{body:?}") };
    assert!(matches!(&**a, Expr::ProducerLoad { indices, .. } if indices[0] == Expr::var(&axes[0].var)));
    assert!(matches!(&**b, Expr::ProducerLoad { .. }));
    assert_schedules_build(&k);
    // The user's names show in the schedule.
    for (t, names) in [(Target::cuda(), ["bx", "tx"]), (Target::cpu(), ["o", "v"])] {
        let s = build_schedule(&k, &t).unwrap();
        let sid = s.find_stage("c").unwrap();
        assert_eq!(s.leaf_names(sid), names);
    }
}

#[test]
fn matmul() {
    let k = parse(MATMUL);
    assert_eq!(summary(&k), f32s(&[("a", 2, false), ("b", 2, false), ("c", 2, true)]));
    let dims: Vec<&str> = k.graph.dims.iter().map(|d| d.name()).collect();
    assert_eq!(dims, ["M", "K", "N"]);
    assert_eq!(shape_text(&k, "c"), ["M", "N"]);
    let c = k.graph.tensor(k.graph.find("c").unwrap());
    let Some(Expr::Reduce(r)) = c.body() else { panic!() };
    assert_eq!(r.op, ReduceOp::Sum);
    assert_eq!(r.axes.len(), 1);
    assert_eq!(r.axes[0].var.name(), "k");
    assert_eq!(r.axes[0].kind, IterKind::Reduce);
    assert!(r.axes[0].dom.min.is_const_int(0));
    assert!(matches!(&r.axes[0].dom.extent, Expr::Var(v) if v.name() == "K"));
    assert_schedules_build(&k);
}

#[test]
fn dense_bias_relu() {
    let k = parse(DENSE_BIAS_RELU);
    assert_eq!(
        summary(&k),
        f32s(&[("x", 2, false), ("w", 2, false), ("bias", 1, false), ("d", 2, true), ("out", 2, false)])
    );
    assert_eq!(k.graph.outputs, vec![k.graph.find("out").unwrap()]);
    let out = k.graph.tensor(k.graph.find("out").unwrap());
    // max(d + bias, 0.0): the literal takes the type of the other operand.
    let Some(Expr::Binary { op: BinOp::Max, b, .. }) = out.body() else { panic!("{:?}", out.body()) };
    assert_eq!(**b, Expr::float(0.0, DType::F32));
    assert_schedules_build(&k);
}

#[test]
fn softmax() {
    let k = parse(SOFTMAX);
    assert_eq!(summary(&k), f32s(&[("x", 2, false), ("m", 1, true), ("e", 2, false), ("s", 1, true), ("y", 2, false)]));
    let m = k.graph.tensor(k.graph.find("m").unwrap());
    assert!(matches!(m.body(), Some(Expr::Reduce(r)) if r.op == ReduceOp::Max));
    let e = k.graph.tensor(k.graph.find("e").unwrap());
    assert!(matches!(e.body(), Some(Expr::Call { .. })));
    assert_eq!(k.graph.topo_order().len(), 4);
    assert_schedules_build(&k);
}

#[test]
fn scale() {
    let k = parse(SCALE);
    assert_eq!(summary(&k), f32s(&[("x", 1, false), ("y", 1, false)]));
    assert_eq!(k.graph.params.len(), 2);
    let Param::Scalar(alpha) = &k.graph.params[1] else { panic!() };
    assert_eq!(alpha.name(), "alpha");
    assert_eq!(alpha.dtype(), DType::F32);
    assert!(matches!(k.graph.params[0], Param::Tensor(_)));
    assert_schedules_build(&k);
}

#[test]
fn conv2d_with_padding() {
    let k = parse(CONV2D);
    assert_eq!(summary(&k), f32s(&[("data", 4, false), ("w", 4, false), ("out", 4, true)]));
    assert_eq!(shape_text(&k, "w"), ["F", "C", "3", "3"]);
    assert_eq!(shape_text(&k, "out"), ["N", "F", "H", "W"]);
    let out = k.graph.tensor(k.graph.find("out").unwrap());
    let Some(Expr::Reduce(r)) = out.body() else { panic!() };
    let names: Vec<&str> = r.axes.iter().map(|a| a.var.name()).collect();
    assert_eq!(names, ["c", "r", "s"]);
    assert!(r.axes[1].dom.extent.is_const_int(3));
    // The guard is a lazy select whose else branch is an f32 zero.
    let Expr::Binary { op: BinOp::Mul, a, .. } = &r.source else { panic!("{:?}", r.source) };
    let Expr::Select { cond, otherwise, .. } = &**a else { panic!("{a:?}") };
    assert_eq!(cond.dtype(), DType::BOOL);
    assert_eq!(**otherwise, Expr::float(0.0, DType::F32));
    assert_schedules_build(&k);
}

#[test]
fn maxpool_with_usize_dims() {
    let k = parse(MAXPOOL);
    assert_eq!(summary(&k), f32s(&[("x", 4, false), ("y", 4, true)]));
    assert_eq!(k.graph.params.len(), 3);
    let Param::Scalar(oh) = &k.graph.params[1] else { panic!() };
    assert_eq!(oh.dtype(), DType::USIZE);
    // OH and OW are dims bound by the usize parameters.
    assert_eq!(k.dim_bindings.len(), 2);
    assert_eq!(k.dim_bindings[0].scalar, *oh);
    assert_eq!(k.dim_bindings[0].dim.name(), "OH");
    assert_eq!(k.dim_bindings[0].dim.dtype(), DType::I64);
    assert!(k.graph.dims.contains(&k.dim_bindings[0].dim));
    assert_eq!(shape_text(&k, "y"), ["N", "C", "OH", "OW"]);
    let y = k.graph.tensor(k.graph.find("y").unwrap());
    let Some(Expr::Reduce(r)) = y.body() else { panic!() };
    assert_eq!(r.op, ReduceOp::Max);
    assert_eq!(r.axes.len(), 2);
    let Expr::Select { otherwise, .. } = &r.source else { panic!() };
    assert_eq!(**otherwise, Expr::float(f64::from(f32::NEG_INFINITY), DType::F32));
    assert_schedules_build(&k);
}

#[test]
fn transpose() {
    let k = parse(TRANSPOSE);
    assert_eq!(k.graph.tensors.len(), 2);
    assert!(k.graph.tensors.iter().all(|t| t.dtype == DType::F64));
    assert_eq!(shape_text(&k, "b"), ["N", "M"]);
    let b = k.graph.tensor(k.graph.find("b").unwrap());
    let names: Vec<&str> = b.axes().iter().map(|a| a.var.name()).collect();
    assert_eq!(names, ["j", "i"]);
    assert!(matches!(&b.axes()[0].dom.extent, Expr::Var(v) if v.name() == "N"));
    assert_schedules_build(&k);
}

#[test]
fn reduction_over_two_axes() {
    let k = parse(SUM2);
    assert_eq!(summary(&k), f32s(&[("a", 3, false), ("s", 1, true)]));
    let s = k.graph.tensor(k.graph.find("s").unwrap());
    assert_eq!(s.reduce_axes().len(), 2);
    assert!(s.reduce_axes().iter().all(|a| a.kind == IterKind::Reduce));
    assert_schedules_build(&k);
}

#[test]
fn two_outputs_and_integer_scalars() {
    let k = parse(MEAN_VAR);
    assert_eq!(
        summary(&k),
        f32s(&[
            ("x", 2, false),
            ("s", 1, true),
            ("mean", 1, false),
            ("d", 2, false),
            ("q", 1, true),
            ("var", 1, false)
        ])
    );
    let outs: Vec<&str> = k.graph.outputs.iter().map(|&o| k.graph.tensor(o).name.as_str()).collect();
    assert_eq!(outs, ["mean", "var"]);
    assert!(k.ast.sig.tuple_outputs);
    // `shift: i32` is an i32 var and an `i32` value, as in Rust: `shift as f32` casts it
    // directly, while `N as f32` casts the `i64` dim.
    let Param::Scalar(shift) = &k.graph.params[1] else { panic!() };
    assert_eq!(shift.dtype(), DType::I32);
    let mean = k.graph.tensor(k.graph.find("mean").unwrap());
    let mut casts = Vec::new();
    tvm_core::tir::visit::for_each_expr(mean.body().unwrap(), &mut |e| {
        if let Expr::Cast { dtype, value } = e {
            casts.push((*dtype, value.dtype()));
        }
    });
    assert!(casts.contains(&(DType::F32, DType::I64)), "{casts:?}");
    assert!(casts.contains(&(DType::F32, DType::I32)), "{casts:?}");
    assert!(!casts.contains(&(DType::I64, DType::I32)), "{casts:?}");
    assert_schedules_build(&k);
}

#[test]
fn literal_dims_and_target_string_schedules() {
    let k = parse(MATMUL_TILED);
    assert!(k.graph.dims.is_empty());
    assert_eq!(shape_text(&k, "c"), ["1024", "1024"]);
    assert_eq!(k.schedules[0].target, "cuda -arch=sm_90");
    assert_schedules_build(&k);
    let s = build_schedule(&k, &Target::cuda()).unwrap();
    let c = s.find_stage("c").unwrap();
    assert_eq!(s.leaf_names(c), ["bi", "bj", "ko", "ii", "jj", "ki"]);
    // The cache stages exist, only through their `let` names.
    assert_eq!(s.stages.len(), 3);
    let s = build_schedule(&k, &Target::parse("llvm -mcpu=skylake-avx512").unwrap()).unwrap();
    let c = s.find_stage("c").unwrap();
    assert_eq!(s.leaf_names(c), ["io", "jo", "ko", "ii", "ki", "ji"]);
}

#[test]
fn unsuffixed_literals_take_the_context_type() {
    let k = parse(
        "fn f(x: f64[n], y: i32[n], z: u8[n]) -> (a: f64[n], b: i32[n], c: u8[n], d: bool[n]) {
            a[i] = 1.5 * x[i] + 2.0 - (3.0);
            b[i] = -1 + y[i] * 2 + i32::MAX % 7;
            c[i] = z[i] / 3 + 255;
            d[i] = x[i] > 0.5 && !(y[i] == 0) || i % 2 == 0;
        }",
    );
    let body = |n: &str| k.graph.tensor(k.graph.find(n).unwrap()).body().unwrap().clone();
    assert_eq!(body("a").dtype(), DType::F64);
    assert_eq!(body("b").dtype(), DType::I32);
    assert_eq!(body("c").dtype(), DType::U8);
    assert_eq!(body("d").dtype(), DType::BOOL);
    let Expr::Binary { op: BinOp::Add, a, .. } = body("b") else { panic!() };
    let Expr::Binary { a: neg_one, .. } = &*a else { panic!() };
    assert_eq!(**neg_one, Expr::typed_int(-1, DType::I32));
}

#[test]
fn if_else_if_casts_and_intrinsics() {
    let k = parse(
        "fn f(x: f32[n], t: f32) -> y: f32[n] {
            y[i] = if x[i] > t { sqrt(x[i]) } else if x[i] < -t { -sqrt(-x[i]) } else {
                fma(x[i], 2.0, 1.0) + pow(x[i], 2.0) + min(abs(x[i]), 1.0) + (i as f32) * 0.5f32 + tanh(x[i]) as f64 as f32
            };
        }",
    );
    let y = k.graph.tensor(k.graph.find("y").unwrap());
    assert!(matches!(y.body(), Some(Expr::Select { otherwise, .. }) if matches!(**otherwise, Expr::Select { .. })));
    assert_schedules_build(&k);
}

#[test]
fn locations_point_at_the_names() {
    let k = parse(VECTOR_ADD);
    let c = k.graph.tensor(k.graph.find("c").unwrap());
    // `c` is declared on line 3 of the source, `-> c: f32[n]`.
    let (line, col) = k.source_map.line_col(c.loc).unwrap();
    assert_eq!(line, 3);
    let text = VECTOR_ADD.lines().nth(line - 1).unwrap();
    assert_eq!(&text[col..col + 1], "c");
    let a = k.graph.tensor(k.graph.find("a").unwrap());
    let (line, col) = k.source_map.line_col(a.loc).unwrap();
    assert_eq!(&VECTOR_ADD.lines().nth(line - 1).unwrap()[col..col + 2], "a:");
}

#[test]
fn parse_kernel_on_tokens() {
    let tokens: proc_macro2::TokenStream = SCALE.parse().unwrap();
    let k = tvm_core::frontend::parse_kernel(tokens).unwrap();
    assert_eq!(k.name, "scale");
}

#[test]
fn gpu_blocks_are_shared_between_cuda_and_opencl() {
    let k = parse(
        "fn f(a: f32[n]) -> c: f32[n] { c[i] = a[i]; }
         schedule!(opencl) { let (g, l) = c.split(c.i, 64); c.bind(g, block.x); c.bind(l, thread.x); }",
    );
    for t in [Target::cuda(), Target::opencl()] {
        let s = build_schedule(&k, &t).unwrap();
        assert_eq!(s.leaf_names(s.find_stage("c").unwrap()), ["g", "l"]);
    }
    // The CPU has no block and gets the default schedule.
    assert!(k.schedule_block(&Target::cpu()).is_none());
    assert!(build_schedule(&k, &Target::cpu()).is_ok());
}

#[test]
fn a_borrowed_gpu_block_that_does_not_fit_gives_way_to_the_default() {
    // 1024 threads per block: legal on CUDA, over OpenCL's 256.
    let k = parse(
        "fn f(a: f32[4096]) -> c: f32[4096] { c[i] = a[i]; }
         schedule!(cuda) { let (g, l) = c.split(c.i, 1024); c.bind(g, block.x); c.bind(l, thread.x); }",
    );
    let s = build_schedule(&k, &Target::cuda()).unwrap();
    assert_eq!(s.leaf_names(s.find_stage("c").unwrap()), ["g", "l"]);
    // On OpenCL the kernel gets what it would get with no block at all.
    let s = build_schedule(&k, &Target::opencl()).unwrap();
    let bare = parse("fn f(a: f32[4096]) -> c: f32[4096] { c[i] = a[i]; }");
    let d = build_schedule(&bare, &Target::opencl()).unwrap();
    assert_eq!(s.leaf_names(s.find_stage("c").unwrap()), d.leaf_names(d.find_stage("c").unwrap()));
    assert_ne!(s.leaf_names(s.find_stage("c").unwrap()), ["g", "l"]);
    // The same block written for OpenCL is an error there.
    let k = parse(
        "fn f(a: f32[4096]) -> c: f32[4096] { c[i] = a[i]; }
         schedule!(opencl) { let (g, l) = c.split(c.i, 1024); c.bind(g, block.x); c.bind(l, thread.x); }",
    );
    let es = build_schedule(&k, &Target::opencl()).unwrap_err();
    assert!(matches!(es[0].kind, tvm_core::schedule::ScheduleErrorKind::BlockTooLarge { .. }), "{es:?}");
    assert_eq!(check_schedules(&k), es);
}

#[test]
fn visibility_and_attributes() {
    let k = parse("#[allow(unused)]\n/// one\n/// two\npub(crate) fn f(a: f32[n]) -> c: f32[n] { c[i] = a[i]; }");
    assert!(matches!(k.vis, syn::Visibility::Restricted(_)));
    assert_eq!(k.attrs.len(), 3);
    assert_eq!(k.docs, [" one", " two"]);
    let k = parse("fn f(a: f32[n]) -> c: f32[n] { c[i] = a[i]; }");
    assert!(matches!(k.vis, syn::Visibility::Inherited));
}

#[test]
fn schedule_primitives_from_the_contract() {
    let k = parse(SCHEDULED_ROW_SUM);
    assert_schedules_build(&k);
    let s = build_schedule(&k, &Target::cuda()).unwrap();
    assert_eq!(s.stages.len(), 3);
}

/// `parse_str` takes the macro's input or a whole invocation, however the macro is named.
#[test]
fn whole_invocations_parse_like_their_input() {
    use tvm_core::frontend::unwrap_invocation;
    let inner = "pub fn add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }";
    for wrapped in [
        format!("compute! {{ {inner} }}"),
        format!("tvm::compute! {{ {inner} }}"),
        format!("::tvm::compute! {{ {inner} }}"),
        format!("compute!( {inner} );"),
        format!("tvm::compute! [ {inner} ]"),
    ] {
        let k = parse_str(&wrapped).unwrap_or_else(|e| panic!("{wrapped}: {e:?}"));
        assert_eq!(k.name, "add");
        let tokens: proc_macro2::TokenStream = wrapped.parse().unwrap();
        assert_eq!(
            unwrap_invocation(tokens).to_string(),
            inner.parse::<proc_macro2::TokenStream>().unwrap().to_string()
        );
    }
    // Not an invocation: returned as it is (and reported by the parser as usual).
    for other in [
        inner.to_string(),
        format!("other! {{ {inner} }}"),
        format!("compute::other! {{ {inner} }}"),
        format!("compute! {{ {inner} }} extra"),
        format!("compute! {{ {inner} }};;"),
    ] {
        let tokens: proc_macro2::TokenStream = other.parse().unwrap();
        assert_eq!(unwrap_invocation(tokens.clone()).to_string(), tokens.to_string(), "{other}");
    }
    assert!(parse_str(&format!("other! {{ {inner} }}")).is_err());
}
