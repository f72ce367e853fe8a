//! The device launcher of tests and tools (`tvm_core::launch`) on a real OpenCL
//! implementation (PoCL in CI), against the interpreter. Skips (printing why) when no
//! OpenCL device exists, unless `TVM_REQUIRE_TOOLS=1`, which turns the skip into a
//! failure.
//!
//! Hand-written OpenCL C with hand-built PrimFuncs test the launcher and the runtime's
//! checks through it (scalars, intermediates, shape and build errors, limits,
//! concurrency); the corpus kernels run on OpenCL in `kernels.rs` (through
//! `common::check`), here only the empty-tensor case. The runtime's own tests (program
//! cache, build options, device tensors) are in `tvm-runtime/tests/`.

mod common;

use common::opencl::device_or_skip;
use tvm_core::codegen::opencl::emit_opencl;
use tvm_core::frontend::parse_str;
use tvm_core::interp::{self, ArgValue, HostTensor, ScalarValue};
use tvm_core::launch::run_source_on_device;
use tvm_core::tir::{Buffer, Expr, Kernel, Param, PrimFunc, Scope, Stmt, ThreadTag, Var};
use tvm_core::{DType, Target};
use tvm_runtime::gpu::opencl::{Caps, OpenClRuntime};
use tvm_runtime::Device;
use tvm_runtime::Error;

/// The f32 output (argument 3) of an axpy run.
fn out_f32(args: &[ArgValue]) -> &[f32] {
    args[3].as_tensor().and_then(|t| t.as_f32()).expect("an f32 output")
}

const BLOCK: i64 = 64;

/// `c[i] = alpha * a[i] + b[i]` for `i < n` (n bound by `a`), one thread per element:
/// grid `ceil(n / 64)`, block 64; `tmp = alpha * a` goes through a global intermediate
/// the host body allocates, so two kernels run.
struct Axpy {
    f: PrimFunc,
    source: String,
}

fn axpy(block: i64) -> Axpy {
    let n = Var::index("n");
    let alpha = Var::new("alpha", DType::F32);
    let g = |name: &str| Buffer::new(name, DType::F32, Scope::Global);
    let (a, b, c, tmp) = (g("a"), g("b"), g("c"), g("tmp"));
    let grid = (Expr::var(&n) + (block - 1)) / block;
    let kernel = |name: &str, bufs: Vec<Buffer>, scalars: Vec<Var>, body: &dyn Fn(Expr) -> Stmt| {
        let (bx, tx) = (Var::index("bx"), Var::index("tx"));
        let i = Expr::var(&bx) * block + Expr::var(&tx);
        Kernel {
            name: name.into(),
            thread_vars: vec![(ThreadTag::BlockX, bx), (ThreadTag::ThreadX, tx)],
            grid: [grid.clone(), Expr::int(1), Expr::int(1)],
            block: [Expr::int(block), Expr::int(1), Expr::int(1)],
            buffer_args: bufs,
            scalar_args: scalars,
            body: Stmt::if_then(Expr::lt(i.clone(), Expr::var(&n)), body(i)),
        }
    };
    let k0 = kernel("axpy_scale", vec![a.clone(), tmp.clone()], vec![n.clone(), alpha.clone()], &|i| {
        Stmt::store(&tmp, vec![i.clone()], Expr::var(&alpha) * Expr::load(&a, vec![i]))
    });
    let k1 = kernel("axpy_add", vec![tmp.clone(), b.clone(), c.clone()], vec![n.clone()], &|i| {
        Stmt::store(&c, vec![i.clone()], Expr::load(&tmp, vec![i.clone()]) + Expr::load(&b, vec![i]))
    });
    let f = PrimFunc {
        name: "axpy".into(),
        target: Target::opencl(),
        checks: vec![],
        params: vec![
            Param::Tensor { buffer: a, shape: vec![Expr::var(&n)], is_output: false },
            Param::Tensor { buffer: b, shape: vec![Expr::var(&n)], is_output: false },
            Param::Scalar(alpha),
            Param::Tensor { buffer: c, shape: vec![Expr::var(&n)], is_output: true },
        ],
        body: Stmt::Allocate {
            buffer: tmp,
            extent: Expr::var(&n),
            body: Box::new(Stmt::seq(vec![Stmt::Launch { kernel: 0 }, Stmt::Launch { kernel: 1 }])),
        },
        kernels: vec![k0, k1],
    };
    let source = format!(
        r#"
__kernel void axpy_scale(__global float* a, __global float* tmp, long n, float alpha) {{
    long i = (long)get_group_id(0) * {block} + (long)get_local_id(0);
    if (i < n) {{ tmp[i] = alpha * a[i]; }}
}}
__kernel void axpy_add(__global float* tmp, __global float* b, __global float* c, long n) {{
    long i = (long)get_group_id(0) * {block} + (long)get_local_id(0);
    if (i < n) {{ c[i] = tmp[i] + b[i]; }}
}}
"#
    );
    Axpy { f, source }
}

/// Runs the hand-written axpy program `source` (or a broken variant of it, which does
/// not get as far as launching) for `k.f`.
fn run(dev: usize, k: &Axpy, source: &str, args: &mut [ArgValue]) -> Result<(), Error> {
    // SAFETY: `axpy`'s program holds `k.f`'s kernels with its parameters, each guarded by
    // `i < n`; the broken variants the tests give fail to build or to load.
    unsafe { run_source_on_device(&Device::OpenCl(dev), &k.f, source, args) }
}

fn axpy_args(n: usize, m: usize) -> Vec<ArgValue> {
    let a: Vec<f32> = (0..n).map(|i| (i as f32) * 0.25 - 3.0).collect();
    let b: Vec<f32> = (0..m).map(|i| 1.0 / (1.0 + i as f32)).collect();
    vec![
        ArgValue::Tensor(HostTensor::f32(vec![n], a)),
        ArgValue::Tensor(HostTensor::f32(vec![m], b)),
        ArgValue::Scalar(ScalarValue::F32(1.5)),
        ArgValue::Tensor(HostTensor::zeros(DType::F32, vec![n])),
    ]
}

#[test]
fn axpy_matches_the_interpreter() {
    if !device_or_skip("axpy_matches_the_interpreter") {
        return;
    }
    eprintln!("opencl:0 is {}", OpenClRuntime::global().device_name(0).unwrap_or_default());
    let k = axpy(BLOCK);
    for n in [1usize, 63, 64, 65, 1000] {
        let mut want = axpy_args(n, n);
        interp::run(&k.f, &mut want).unwrap();
        let mut got = axpy_args(n, n);
        run(0, &k, &k.source, &mut got).unwrap();
        common::assert_close(out_f32(&got), out_f32(&want), &format!("axpy n={n}"));
        // Inputs are untouched.
        assert_eq!(got[0], want[0]);
    }
}

#[test]
fn empty_tensor_launches_nothing() {
    if !device_or_skip("empty_tensor_launches_nothing") {
        return;
    }
    let k = axpy(BLOCK);
    let mut got = axpy_args(0, 0);
    run(0, &k, &k.source, &mut got).unwrap();
    assert_eq!(got[3].as_tensor().unwrap().numel(), 0);
}

#[test]
fn shape_mismatch_is_reported() {
    if !device_or_skip("shape_mismatch_is_reported") {
        return;
    }
    let k = axpy(BLOCK);
    let mut args = axpy_args(10, 9);
    let before = args.clone();
    let e = run(0, &k, &k.source, &mut args).unwrap_err();
    assert!(
        matches!(&e, Error::ShapeMismatch { param, dim: 0, got: 9, expected: 10, symbol: Some(s), bound_by: Some(by), .. }
            if param == "b" && s == "n = 10" && by == "a"),
        "{e:?}"
    );
    // The message generated code gives for the same mistake (one binder).
    assert_eq!(e.to_string(), "shape mismatch in `axpy`: dimension 0 of `b` is 9, expected 10 (n = 10, bound by `a`)");
    assert_eq!(args, before);
}

#[test]
fn build_failure_carries_the_log() {
    if !device_or_skip("build_failure_carries_the_log") {
        return;
    }
    let k = axpy(BLOCK);
    let bad = "__kernel void axpy_scale(__global float* a) { this is not C; }";
    let e = run(0, &k, bad, &mut axpy_args(4, 4)).unwrap_err();
    match &e {
        Error::CompilationFailed { target, log } => {
            assert_eq!(target, "opencl");
            assert!(!log.trim().is_empty(), "empty build log");
        }
        other => panic!("expected CompilationFailed, got {other:?}"),
    }
}

#[test]
fn missing_kernel_is_a_launch_failure() {
    if !device_or_skip("missing_kernel_is_a_launch_failure") {
        return;
    }
    let k = axpy(BLOCK);
    let src = "__kernel void other(__global float* a) { a[0] = 1.0f; }";
    let e = run(0, &k, src, &mut axpy_args(4, 4)).unwrap_err();
    assert!(matches!(&e, Error::LaunchFailed { kernel, .. } if kernel == "axpy_scale"), "{e:?}");
}

#[test]
fn oversized_block_is_a_clear_error() {
    if !device_or_skip("oversized_block_is_a_clear_error") {
        return;
    }
    let k = axpy(1 << 20);
    let e = run(0, &k, &k.source, &mut axpy_args(4, 4)).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::LaunchFailed { .. }), "{msg}");
    assert!(msg.contains("1048576") && msg.contains("maximum"), "{msg}");
}

#[test]
fn missing_device_is_unavailable() {
    let n = OpenClRuntime::global().device_count();
    let k = axpy(BLOCK);
    let e = run(n, &k, &k.source, &mut axpy_args(4, 4)).unwrap_err();
    assert!(matches!(&e, Error::DeviceUnavailable { device, .. } if *device == format!("opencl:{n}")), "{e:?}");
}

/// A corpus kernel on empty tensors: the grid is empty, nothing is launched, and the run
/// succeeds (the cases with data are in `kernels.rs`).
#[test]
fn corpus_vector_add_empty() {
    if !device_or_skip("corpus_vector_add_empty") {
        return;
    }
    use common::{opencl::run_f32, t, Variant};
    for dev in common::opencl::devices() {
        for v in [Variant::Gpu, Variant::DefaultGpu] {
            let inputs = vec![t(&[0], &[]), t(&[0], &[])];
            let got = run_f32(dev, include_str!("corpus/vector_add.rs"), v, inputs, vec![], &[0]);
            assert!(got.is_empty(), "{v:?} on opencl:{dev}: {got:?}");
        }
    }
}

/// The OpenCL C of an f64 row reduction (a cross-thread tree in local memory).
fn f64_program() -> String {
    let k = parse_str(
        "fn dot(x: f64[M, N], y: f64[M, N]) -> d: f64[M] { d[i] = sum(x[i, j] * y[i, j] for j in 0..N); }
         schedule!(opencl) { d.bind(d.i, block.x); let (jo, ji) = d.split(d.j, 32); d.bind(ji, thread.x); }",
    )
    .unwrap();
    let f = tvm_core::driver::lower_for(&k, &Target::opencl()).unwrap();
    emit_opencl(&f).unwrap()
}

fn caps(fp64: bool, local_mem_bytes: u64) -> Caps {
    Caps { label: "opencl:9 (test: device)".into(), fp64, fp16: false, local_mem_bytes }
}

/// f64 is used only when the device reports it: a program that enables cl_khr_fp64 is
/// refused (before the driver sees it) on a device without it, with a clear error.
#[test]
fn f64_needs_a_device_that_reports_it() {
    let f64_src = f64_program();
    assert!(f64_src.contains("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"), "{f64_src}");
    assert_eq!(caps(true, 1 << 16).check_program(&f64_src), Ok(()));
    let e = caps(false, 1 << 16).check_program(&f64_src).unwrap_err();
    assert!(matches!(e, Error::DeviceUnsupported { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "device `opencl:9 (test: device)` cannot run this kernel: the kernel computes in f64, and the device does not \
         report cl_khr_fp64"
    );
    // An f32 program needs nothing.
    let k = parse_str("fn add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }").unwrap();
    let f32_src = emit_opencl(&tvm_core::driver::lower_for(&k, &Target::opencl()).unwrap()).unwrap();
    assert!(!f32_src.contains("cl_khr_fp64"));
    assert_eq!(caps(false, 1 << 16).check_program(&f32_src), Ok(()));
}

/// The real device's capabilities, and the f64 program on it: run if it reports fp64,
/// refused with `DeviceUnsupported` if not (PoCL reports it).
#[test]
fn f64_program_on_the_device() {
    if !device_or_skip("f64_program_on_the_device") {
        return;
    }
    let rt = OpenClRuntime::global();
    let c = rt.caps(0).unwrap();
    assert!(c.local_mem_bytes >= 16 * 1024, "OpenCL requires at least 16 KiB of local memory: {c:?}");
    let src = f64_program();
    match rt.build_uncached(0, &src, "-Werror") {
        Ok(log) => assert!(c.fp64, "built an f64 program on a device without fp64 ({c:?}): {log}"),
        Err(e) => {
            assert!(!c.fp64, "the f64 program does not build: {e}");
            assert!(matches!(e, Error::DeviceUnsupported { .. }), "{e:?}");
        }
    }
}

/// Runs from several threads at once share the device's queue and buffer pool: each
/// gets its own buffers, and every result is right, also when sizes repeat (pooled
/// buffers are reused) and change (they are not).
#[test]
fn concurrent_runs_with_pooled_buffers() {
    if !device_or_skip("concurrent_runs_with_pooled_buffers") {
        return;
    }
    let k = axpy(BLOCK);
    std::thread::scope(|s| {
        for t in 0..4usize {
            let k = &k;
            s.spawn(move || {
                for round in 0..6usize {
                    let n = [1000usize, 1000, 77, 4096, 1000, 77][(round + t) % 6];
                    let mut args = axpy_args(n, n);
                    // Distinct data per thread and round.
                    if let ArgValue::Tensor(a) = &mut args[0] {
                        let v: Vec<f32> = (0..n).map(|i| (i * (t + 1) + round) as f32).collect();
                        *a = HostTensor::f32(vec![n], v);
                    }
                    let mut want = args.clone();
                    interp::run(&k.f, &mut want).unwrap();
                    run(0, &k, &k.source, &mut args).unwrap();
                    common::assert_close(out_f32(&args), out_f32(&want), &format!("axpy n={n}, thread {t}"));
                }
            });
        }
    });
}
