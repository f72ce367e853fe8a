//! The backend suite: every kernel the tests and examples define, with its schedules, run
//! through the generated API (`kernel::run(&device, ..)`) on every backend present, and
//! compared with the plain references of `tvm-core/tests/support/reference.rs`.
//!
//! The backends are every device of [`Device::all`] that is available: the CPU always,
//! each OpenCL device (PoCL in CI; `tvm`'s `opencl` feature), each CUDA device (`cuda`
//! feature; a driver and a GPU), each WebGPU adapter (`webgpu` feature; Mesa's lavapipe
//! in CI). A backend that is missing is skipped with a printed reason, except that
//! `TVM_REQUIRE_TOOLS=1` (CI) requires an OpenCL device and, with the `webgpu` feature, a
//! WebGPU adapter, and `TVM_REQUIRE_CUDA=1` (`scripts/gpu-check.sh`) a CUDA device. A
//! kernel WGSL cannot express (f64, 64-bit integer tensors; [`NOT_ON_WEBGPU`]) must fail
//! on a WebGPU device with the documented error ([`ran`]).
//!
//! The kernels are those of the registry (`tvm-core/tests/support/registry.rs`: the corpus
//! of the compiler's tests and the example kernels), each file compiled by `compute!` in a
//! module of its own and each of its cases run on every backend ([`registered`]): a
//! kernel added to the registry runs here with no edit. Below them, the kernels of this
//! suite alone (f64, integers, bool outputs, a schedule of OpenCL's own).
//!
//! Outputs start poisoned (NaN, or the integer type's minimum), so an element a backend
//! never writes fails the comparison (in debug builds an OpenCL output starts as the
//! tensor's contents, as on the CPU; release builds skip that copy).

mod bad_input;
mod fuzz;
mod language;

use std::sync::OnceLock;
use tvm::{Device, Tensor};

#[macro_use]
#[path = "../../tvm-core/tests/support/registry.rs"]
mod registry;
use registry::reference::{self, assert_close, rand_vec, rtol_for_sum};

/// The tolerance of kernels that do not reduce, or reduce over at most 64 terms.
const RTOL: f32 = 1e-5;

mod registered;

/// Kernels of this suite alone: what no corpus or example kernel covers (f64, integers).
mod own {
    tvm::compute! {
        /// Row dot products in f64, a cross-thread reduction on GPUs.
        pub fn row_dot_f64(x: f64[M, N], y: f64[M, N], alpha: f64) -> d: f64[M] {
            let s[i]: f64[M] = sum(x[i, j] * y[i, j] for j in 0..N);
            d[i] = alpha * s[i];
        }
        schedule!(cpu) {
            d.parallel(d.i);
            s.compute_at(d, d.i);
        }
        schedule!(cuda) {
            d.bind(d.i, block.x);
            s.compute_at(d, d.i);
            let (jo, ji) = s.split(s.j, 64);
            s.bind(ji, thread.x);
        }
    }

    tvm::compute! {
        /// Integer arithmetic, comparisons and selects: a clamped affine map of i32.
        pub fn clamp_affine_i32(x: i32[n], lo: i32, hi: i32) -> y: i32[n] {
            y[i] = min(max(x[i] * 3 - 7, lo), hi);
        }
        schedule!(cpu) {
            let (o, v) = y.split(y.i, 8);
            y.vectorize(v);
        }
        schedule!(cuda) {
            let (b, t) = y.split(y.i, 64);
            y.bind(b, block.x);
            y.bind(t, thread.x);
        }
    }
}

/// Kernels that only this suite schedules for OpenCL, or that pass a `usize` scalar.
mod own_opencl {
    tvm::compute! {
        /// Row sums with a schedule of its own for OpenCL (not the CUDA one): a block per
        /// row, 32 threads reducing across it.
        pub fn row_sum(x: f32[M, N]) -> r: f32[M] {
            r[i] = sum(x[i, j] for j in 0..N);
        }
        schedule!(opencl) {
            r.bind(r.i, block.x);
            let (jo, ji) = r.split(r.j, 32);
            r.bind(ji, thread.x);
        }
    }

    tvm::compute! {
        /// A `usize` scalar used as a value (kernels take it as `u64`).
        pub fn scale_shift(x: f32[n], alpha: f32, k: usize) -> y: f32[n] {
            y[i] = alpha * x[i] + k as f32;
        }
    }
}

mod own_vectors {
    tvm::compute! {
        /// `y = a * x + b * x²` with float4 loads and stores on OpenCL (a thread handles 4
        /// consecutive elements) and 16 lanes on the CPU.
        pub fn poly_vec4(x: f32[n], a: f32, b: f32) -> y: f32[n] {
            y[i] = a * x[i] + b * x[i] * x[i];
        }
        schedule!(cpu) {
            let (o, v) = y.split(y.i, 16);
            y.parallel(o);
            y.vectorize(v);
        }
        schedule!(cuda) {
            let (o, v) = y.split(y.i, 4);
            let (bx, tx) = y.split(o, 64);
            y.bind(bx, block.x);
            y.bind(tx, thread.x);
            y.vectorize(v);
        }
    }
}

mod own_mask {
    tvm::compute! {
        /// A bool output (bytes on devices, converted back to `bool`).
        pub fn in_range(x: f32[n], lo: f32, hi: f32) -> m: bool[n] {
            m[i] = x[i] >= lo && x[i] <= hi;
        }
        schedule!(cuda) {
            let (b, t) = m.split(m.i, 32);
            m.bind(b, block.x);
            m.bind(t, thread.x);
        }
    }
}

/// The devices this run tests, decided once and printed.
fn backends() -> &'static [Device] {
    static BACKENDS: OnceLock<Vec<Device>> = OnceLock::new();
    BACKENDS.get_or_init(|| {
        let mut found = Vec::new();
        for d in Device::all() {
            match d.check_available() {
                Ok(()) => found.push(d),
                Err(e) => eprintln!("backend suite: {d} is skipped: {e}"),
            }
        }
        if !found.iter().any(|d| matches!(d, Device::Cuda(_))) {
            let why = match Device::Cuda(0).check_available() {
                Err(e) => e.to_string(),
                Ok(()) => "`tvm` was built without its `cuda` feature".to_string(),
            };
            // scripts/gpu-check.sh sets TVM_REQUIRE_CUDA=1 on the GPU machine.
            if std::env::var("TVM_REQUIRE_CUDA").as_deref() == Ok("1") {
                panic!("TVM_REQUIRE_CUDA=1 but the CUDA backend cannot run: {why}");
            }
            eprintln!("backend suite: CUDA is skipped: {why}");
        }
        if !found.iter().any(|d| matches!(d, Device::OpenCl(_))) {
            let why = if cfg!(feature = "opencl") {
                "no usable OpenCL device"
            } else {
                "`tvm` was built without its `opencl` feature"
            };
            if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
                panic!("TVM_REQUIRE_TOOLS=1 but the OpenCL backend cannot run: {why}");
            }
            eprintln!("backend suite: OpenCL is skipped: {why}");
        }
        if cfg!(feature = "webgpu") && !found.iter().any(|d| matches!(d, Device::WebGpu(_))) {
            let why = Device::WebGpu(0).check_available().err().map(|e| e.to_string()).unwrap_or_default();
            if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
                panic!("TVM_REQUIRE_TOOLS=1 but the WebGPU backend cannot run: {why}");
            }
            eprintln!("backend suite: WebGPU is skipped: {why}");
        }
        let names: Vec<String> = found.iter().map(|d| d.to_string()).collect();
        eprintln!("backend suite runs on: {}", names.join(", "));
        found
    })
}

/// Runs `run` on every backend into an output of `shape` that starts as NaN, and
/// compares the output with `want`.
fn on_every_backend<const R: usize>(
    what: &str,
    shape: [usize; R],
    want: &[f32],
    rtol: f32,
    run: impl Fn(&Device, &mut Tensor<f32, R>) -> Result<(), tvm::Error>,
) {
    for d in backends() {
        let mut out = Tensor::full(shape, f32::NAN);
        run(d, &mut out).unwrap_or_else(|e| panic!("{what} on {d}: {e}"));
        assert_close(out.as_slice(), want, rtol, &format!("{what} on {d}"));
    }
}

/// Whether run `r` on `d` of a kernel that holds `lacks` (a type WGSL does not have, or
/// `None`) ran: on a WebGPU device such a kernel must fail with the documented error
/// (`CompilationFailed` for `webgpu`, naming the type), and there is nothing to compare;
/// elsewhere, and for other kernels, it must succeed.
fn ran(d: &Device, what: &str, lacks: Option<&str>, r: Result<(), tvm::Error>) -> bool {
    match (d, lacks) {
        (Device::WebGpu(_), Some(ty)) => match r {
            Err(tvm::Error::CompilationFailed { target, log })
                if target == "webgpu" && log.contains(&format!("{ty} ")) && log.contains("WGSL has no") =>
            {
                false
            }
            other => panic!("{what} on {d}: expected the error naming {ty}, got {other:?}"),
        },
        _ => {
            r.unwrap_or_else(|e| panic!("{what} on {d}: {e}"));
            true
        }
    }
}

fn tensor<const R: usize>(data: &[f32], shape: [usize; R]) -> Tensor<f32, R> {
    Tensor::from_vec(data.to_vec(), shape).expect("the data fits the shape")
}

// ---- This suite's own kernels. ----

/// f64 end to end: on OpenCL the program enables `cl_khr_fp64`, which the runtime checks
/// the device reports before building it.
#[test]
fn row_dot_f64() {
    for (m, n) in [(3usize, 200usize), (1, 7)] {
        let x: Vec<f64> = (0..m * n).map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0).collect();
        let y: Vec<f64> = (0..m * n).map(|i| ((i * 11 % 53) as f64 - 26.0) / 3.0).collect();
        let want: Vec<f64> = (0..m).map(|i| 0.5 * (0..n).map(|j| x[i * n + j] * y[i * n + j]).sum::<f64>()).collect();
        let tx = Tensor::from_vec(x, [m, n]).unwrap();
        let ty = Tensor::from_vec(y, [m, n]).unwrap();
        for d in backends() {
            let mut out = Tensor::full([m], f64::NAN);
            if !ran(d, "row_dot_f64", Some("f64"), own::row_dot_f64::run(d, &tx, &ty, 0.5, &mut out)) {
                continue;
            }
            for (i, (g, w)) in out.as_slice().iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "row_dot_f64 {m}x{n} on {d}: row {i}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn clamp_affine_i32() {
    for n in [100usize, 64, 3] {
        let x: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 61 - 30).collect();
        let want: Vec<i32> = x.iter().map(|&v| (v * 3 - 7).clamp(-20, 25)).collect();
        let tx = Tensor::from_vec(x, [n]).unwrap();
        for d in backends() {
            let mut out = Tensor::full([n], i32::MIN);
            own::clamp_affine_i32::run(d, &tx, -20, 25, &mut out).unwrap_or_else(|e| panic!("clamp on {d}: {e}"));
            assert_eq!(out.as_slice(), &want[..], "clamp_affine_i32 n={n} on {d}");
        }
    }
}

#[test]
fn poly_vec4() {
    for n in [4096usize, 1000, 6, 1] {
        let x = rand_vec(n, 33);
        let want: Vec<f32> = x.iter().map(|&v| 1.5 * v + -0.5 * v * v).collect();
        let tx = tensor(&x, [n]);
        on_every_backend(&format!("poly_vec4 n={n}"), [n], &want, RTOL, |d, y| {
            own_vectors::poly_vec4::run(d, &tx, 1.5, -0.5, y)
        });
    }
    // The OpenCL program of the written block uses vector types (not checked under
    // `TVM_SCHEDULES=derived`, which ignores the block).
    let text = own_vectors::poly_vec4::source("opencl").unwrap();
    if std::env::var("TVM_SCHEDULES").as_deref() != Ok("derived") {
        assert!(text.contains("vload4") && text.contains("vstore4") && text.contains("float4"), "{text}");
    }
}

#[test]
fn row_sum_with_an_opencl_schedule() {
    for (m, n) in [(5usize, 77usize), (4, 32), (3, 1)] {
        let x = rand_vec(m * n, 34);
        let want = reference::row_sum(&x, m, n);
        let tx = tensor(&x, [m, n]);
        on_every_backend(&format!("row_sum {m}x{n}"), [m], &want, rtol_for_sum(n), |d, r| {
            own_opencl::row_sum::run(d, &tx, r)
        });
    }
    // OpenCL lowers with its own schedule block, not the default GPU schedule.
    let (opencl, cuda) =
        (own_opencl::row_sum::lowered("opencl").unwrap(), own_opencl::row_sum::lowered("cuda").unwrap());
    assert_ne!(opencl, cuda, "the OpenCL schedule block is not used");
}

#[test]
fn scale_shift_usize_scalar() {
    for (n, k) in [(1000usize, 3usize), (7, 0), (1, 1 << 20)] {
        let x = rand_vec(n, 35);
        let want: Vec<f32> = reference::scale(&x, 1.5).iter().map(|v| v + k as f32).collect();
        let tx = tensor(&x, [n]);
        on_every_backend(&format!("scale_shift n={n} k={k}"), [n], &want, RTOL, |d, y| {
            own_opencl::scale_shift::run(d, &tx, 1.5, k, y)
        });
    }
}

/// Shapes are checked before anything reaches a device: a wrong input shape is
/// `ShapeMismatch` on every backend, and the output is left untouched.
#[test]
fn shape_errors_on_every_backend() {
    let bad = tensor(&rand_vec(6, 36), [2, 3]);
    for d in backends() {
        let mut out = Tensor::<f32, 2>::full([16, 16], 7.0);
        let r = registered::matmul::matmul::run(d, &bad, &bad, &mut out);
        assert!(matches!(r, Err(tvm::Error::ShapeMismatch { .. })), "matmul of [2, 3] by [2, 3] on {d}: {r:?}");
        assert!(out.as_slice().iter().all(|&v| v == 7.0), "the output changed on {d}");
    }
}

#[test]
fn in_range_bool_output() {
    for n in [100usize, 1] {
        let x = rand_vec(n, 32);
        let want: Vec<bool> = x.iter().map(|&v| (-0.25..=0.5).contains(&v)).collect();
        let tx = tensor(&x, [n]);
        for d in backends() {
            // Start from the opposite of the answer, so every element must be written.
            let mut out = Tensor::from_vec(want.iter().map(|b| !b).collect(), [n]).unwrap();
            own_mask::in_range::run(d, &tx, -0.25, 0.5, &mut out).unwrap_or_else(|e| panic!("in_range on {d}: {e}"));
            assert_eq!(out.as_slice(), &want[..], "in_range n={n} on {d}");
        }
    }
}

/// A kernel module's `source` function.
type Source = fn(&str) -> Result<&'static str, tvm::Error>;

/// Every kernel of the suite, by name, with its `source` function.
fn every_source() -> &'static [(&'static str, Source)] {
    static ALL: OnceLock<Vec<(&'static str, Source)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = registered::sources();
        all.extend(own_sources());
        all.extend(language::sources());
        all
    })
}

fn own_sources() -> &'static [(&'static str, Source)] {
    &[
        ("row_dot_f64", own::row_dot_f64::source),
        ("clamp_affine_i32", own::clamp_affine_i32::source),
        ("in_range", own_mask::in_range::source),
        ("poly_vec4", own_vectors::poly_vec4::source),
        ("row_sum", own_opencl::row_sum::source),
        ("scale_shift", own_opencl::scale_shift::source),
    ]
}

/// Every kernel's OpenCL program builds on every OpenCL backend with warnings as errors
/// (the runtime builds them without `-Werror`, since a user's driver may warn about
/// anything).
#[cfg(feature = "opencl")]
#[test]
fn opencl_programs_build_without_warnings() {
    let rt = tvm::gpu::opencl::OpenClRuntime::global();
    for d in backends() {
        let Device::OpenCl(n) = *d else { continue };
        for (name, source) in every_source() {
            let text = source("opencl").unwrap_or_else(|e| panic!("{name}: no OpenCL source: {e}"));
            if let Err(e) = rt.build_uncached(n, text, "-Werror") {
                panic!("{name} on {d}: {e}\n--- source ---\n{text}");
            }
        }
    }
}

/// Every kernel of the suite has CUDA code, and NVRTC compiles it to cubins for sm_80 and
/// sm_90 (NVRTC runs the same assembler as ptxas). Needs a loadable libnvrtc (skips
/// without one, unless `TVM_REQUIRE_TOOLS=1`).
#[test]
fn cuda_programs_compile_with_nvrtc() {
    use tvm::gpu::{cuda, BinaryFormat};
    let sources: Vec<(&str, &str)> = every_source()
        .iter()
        .map(|(name, source)| (*name, source("cuda").unwrap_or_else(|e| panic!("{name}: no CUDA source: {e}"))))
        .collect();
    for (name, text) in &sources {
        assert!(text.contains("extern \"C\" __global__ void"), "{name}:\n{text}");
    }
    if let Err(e) = cuda::nvrtc_version() {
        if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("TVM_REQUIRE_TOOLS=1 but NVRTC cannot be loaded: {e}");
        }
        return eprintln!("skipping the NVRTC builds: {e}");
    }
    for (name, text) in &sources {
        for arch in [80, 90] {
            let built = cuda::compile_cuda_with(text, arch, BinaryFormat::Cubin, None)
                .unwrap_or_else(|e| panic!("{name} for sm_{arch}: {e}\n--- source ---\n{text}"));
            assert!(!built.bytes.is_empty(), "{name} for sm_{arch}: an empty cubin");
        }
    }
}

/// The kernels of the suite WGSL cannot express, and the type that stops each: their
/// `source("webgpu")` and `source("metal")` are the documented error, and on a WebGPU
/// device [`ran`] expects it.
pub(crate) const NOT_ON_WEBGPU: &[(&str, &str)] = &[
    ("row_dot_f64", "f64"),
    ("axpy f64", "f64"),
    ("weighted_rows i64", "i64"),
    ("example_argmax::top1", "i64"),
    ("nearest_zero", "u64"),
    ("softmax_stats", "i64"),
    ("example_axpy::axpy::<f64>", "f64"),
    ("clamp_any i8", "i8"),
    ("clamp_any i64", "i64"),
    // `i + k` for an `i32` scalar `k`: 64-bit index arithmetic not provably within 32 bits.
    ("shifted_by", "64-bit"),
];

/// Every other kernel of the suite has WGSL (validated by naga while the macro expanded)
/// and MSL translated from it; the kernels WGSL cannot express fail with an error naming
/// the type and the reason, for both targets.
#[cfg(feature = "webgpu")]
#[test]
fn webgpu_and_metal_sources() {
    let mut ran = Vec::new();
    for (name, source) in every_source() {
        match NOT_ON_WEBGPU.iter().find(|(n, _)| n == name) {
            Some((_, ty)) => {
                for target in ["webgpu", "metal"] {
                    match source(target) {
                        Err(tvm::Error::CompilationFailed { target: t, log })
                            if t == target && log.contains(&format!("{ty} ")) && log.contains("WGSL has no") => {}
                        other => panic!("{name}: {target} should name {ty}: {other:?}"),
                    }
                }
            }
            None => {
                let wgsl = source("webgpu").unwrap_or_else(|e| panic!("{name}: no WGSL: {e}"));
                assert!(wgsl.contains("@compute @workgroup_size("), "{name}:\n{wgsl}");
                let msl = source("metal").unwrap_or_else(|e| panic!("{name}: no MSL: {e}"));
                assert!(msl.contains("kernel void") && msl.contains("#include <metal_stdlib>"), "{name}:\n{msl}");
                ran.push(*name);
            }
        }
    }
    eprintln!("WGSL and MSL for: {}", ran.join(", "));
    assert!(ran.len() + NOT_ON_WEBGPU.len() == every_source().len());
}
