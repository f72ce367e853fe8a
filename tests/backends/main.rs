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
//! kernel WGSL cannot express (f64, 64-bit integer tensors) must fail on a WebGPU device
//! with the documented error ([`ran`]). A kernel is added once, here,
//! and runs on every backend: the corpus kernels are included from
//! `tvm-core/tests/corpus/` (the same files the compiler's own tests parse), the example
//! kernels from `examples/kernels/`.
//!
//! Outputs start as NaN, so an element a backend never writes fails the comparison (in
//! debug builds an OpenCL output starts as the tensor's contents, as on the CPU; release
//! builds skip that copy).

mod bad_input;
mod fuzz;
mod language;

use std::sync::OnceLock;
use tvm::{Device, Tensor};

#[path = "../../tvm-core/tests/support/reference.rs"]
mod reference;
use reference::{assert_close, rand_vec, rtol_for_sum};

/// The tolerance of kernels that do not reduce, or reduce over at most 64 terms.
const RTOL: f32 = 1e-5;

/// The corpus kernels, each file a `tvm::compute!` invocation in a module of its own.
mod corpus {
    macro_rules! corpus {
        ($($name:ident),* $(,)?) => {
            $(pub mod $name {
                include!(concat!("../../tvm-core/tests/corpus/", stringify!($name), ".rs"));
            })*
        };
    }
    corpus!(
        vector_add,
        vector_add_1024,
        vector_add_golden,
        matmul,
        matmul_64,
        matmul_tiled,
        dense_bias_relu,
        softmax,
        softmax_default,
        conv2d,
        transpose,
        max_pool,
        sum_two_axes,
        row_sum_rfactor,
        row_sum_golden,
        scale,
    );
}

#[path = "../../examples/kernels/conv2d.rs"]
mod example_conv2d;
#[path = "../../examples/kernels/dense_bias_relu.rs"]
mod example_dense;
#[path = "../../examples/kernels/layernorm.rs"]
mod example_layernorm;
#[path = "../../examples/kernels/matmul.rs"]
mod example_matmul;
#[path = "../../examples/kernels/softmax.rs"]
mod example_softmax;
#[path = "../../examples/kernels/vector_add.rs"]
mod example_vector_add;

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
            y[i] = min(max(x[i] * 3 - 7, lo as i32), hi as i32);
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

// ---- The corpus kernels (the compiler's tests), on shapes that do and do not divide
// their split factors. ----

#[test]
fn vector_add() {
    for n in [1usize, 77, 1000, 4096] {
        let (a, b) = (rand_vec(n, 1), rand_vec(n, 2));
        let want = reference::vector_add(&a, &b);
        let (ta, tb) = (tensor(&a, [n]), tensor(&b, [n]));
        on_every_backend(&format!("corpus vector_add n={n}"), [n], &want, RTOL, |d, c| {
            corpus::vector_add::vector_add::run(d, &ta, &tb, c)
        });
        on_every_backend(&format!("corpus vector_add_golden n={n}"), [n], &want, RTOL, |d, c| {
            corpus::vector_add_golden::vector_add::run(d, &ta, &tb, c)
        });
    }
    let (a, b) = (rand_vec(1024, 3), rand_vec(1024, 4));
    let want = reference::vector_add(&a, &b);
    let (ta, tb) = (tensor(&a, [1024]), tensor(&b, [1024]));
    on_every_backend("corpus vector_add_1024", [1024], &want, RTOL, |d, c| {
        corpus::vector_add_1024::vector_add::run(d, &ta, &tb, c)
    });
}

#[test]
fn matmul() {
    for (m, k, n) in [(16, 16, 16), (37, 23, 19), (64, 128, 48)] {
        let (a, b) = (rand_vec(m * k, 5), rand_vec(k * n, 6));
        let want = reference::matmul(&a, &b, m, k, n);
        let (ta, tb) = (tensor(&a, [m, k]), tensor(&b, [k, n]));
        let rtol = rtol_for_sum(k);
        on_every_backend(&format!("corpus matmul {m}x{k}x{n}"), [m, n], &want, rtol, |d, c| {
            corpus::matmul::matmul::run(d, &ta, &tb, c)
        });
        on_every_backend(&format!("corpus matmul_tiled {m}x{k}x{n}"), [m, n], &want, rtol, |d, c| {
            corpus::matmul_tiled::matmul::run(d, &ta, &tb, c)
        });
    }
    assert!(corpus::matmul::matmul::source("opencl").unwrap().contains("__kernel"));
    let (a, b) = (rand_vec(64 * 64, 7), rand_vec(64 * 64, 8));
    let want = reference::matmul(&a, &b, 64, 64, 64);
    let (ta, tb) = (tensor(&a, [64, 64]), tensor(&b, [64, 64]));
    on_every_backend("corpus matmul_64", [64, 64], &want, RTOL, |d, c| corpus::matmul_64::matmul::run(d, &ta, &tb, c));
}

#[test]
fn dense_bias_relu() {
    for (m, k, n) in [(8, 8, 16), (7, 13, 10), (33, 70, 40)] {
        let (x, w, bias) = (rand_vec(m * k, 9), rand_vec(n * k, 10), rand_vec(n, 11));
        let want = reference::dense_bias_relu(&x, &w, &bias, m, k, n);
        let (tx, tw, tb) = (tensor(&x, [m, k]), tensor(&w, [n, k]), tensor(&bias, [n]));
        on_every_backend(&format!("corpus dense_bias_relu {m}x{k}x{n}"), [m, n], &want, rtol_for_sum(k), |d, o| {
            corpus::dense_bias_relu::dense_bias_relu::run(d, &tx, &tw, &tb, o)
        });
    }
}

#[test]
fn softmax() {
    for rows in [1usize, 3, 16] {
        let x = rand_vec(rows * 40, 12);
        let want = reference::softmax(&x, rows, 40);
        let tx = tensor(&x, [rows, 40]);
        on_every_backend(&format!("corpus softmax {rows}x40"), [rows, 40], &want, RTOL, |d, y| {
            corpus::softmax::softmax::run(d, &tx, y)
        });
    }
    for (rows, cols) in [(3usize, 40usize), (5, 129)] {
        let x = rand_vec(rows * cols, 13);
        let want = reference::softmax(&x, rows, cols);
        let tx = tensor(&x, [rows, cols]);
        on_every_backend(&format!("corpus softmax_default {rows}x{cols}"), [rows, cols], &want, RTOL, |d, y| {
            corpus::softmax_default::softmax::run(d, &tx, y)
        });
    }
}

#[test]
fn conv2d() {
    for (nb, f, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 3, 5, 7), (1, 4, 17, 13)] {
        let (data, wt) = (rand_vec(nb * 3 * h * w, 14), rand_vec(f * 27, 15));
        let want = reference::conv2d_3x3(&data, &wt, nb, 3, f, h, w);
        let (td, tw) = (tensor(&data, [nb, 3, h, w]), tensor(&wt, [f, 3, 3, 3]));
        on_every_backend(&format!("corpus conv2d {nb}x{f}x{h}x{w}"), [nb, f, h, w], &want, RTOL, |d, o| {
            corpus::conv2d::conv2d::run(d, &td, &tw, o)
        });
    }
}

#[test]
fn transpose() {
    for (m, n) in [(16usize, 8usize), (9, 13), (1, 100)] {
        let a = rand_vec(m * n, 16);
        let want = reference::transpose(&a, m, n);
        let ta = tensor(&a, [m, n]);
        on_every_backend(&format!("corpus transpose {m}x{n}"), [n, m], &want, RTOL, |d, b| {
            corpus::transpose::transpose::run(d, &ta, b)
        });
    }
}

#[test]
fn max_pool() {
    for (nb, c, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 1, 6, 9)] {
        let data = rand_vec(nb * c * h * w, 17);
        let want = reference::max_pool_3x3(&data, nb, c, h, w);
        let td = tensor(&data, [nb, c, h, w]);
        on_every_backend(&format!("corpus max_pool {nb}x{c}x{h}x{w}"), [nb, c, h, w], &want, RTOL, |d, o| {
            corpus::max_pool::max_pool::run(d, &td, o)
        });
    }
}

#[test]
fn row_sums() {
    for a in [4usize, 3] {
        let x = rand_vec(a * 32, 18);
        let want = reference::row_sum(&x, a, 32);
        let tx = tensor(&x, [a, 4, 8]);
        on_every_backend(&format!("corpus sum_two_axes {a}x4x8"), [a], &want, RTOL, |d, s| {
            corpus::sum_two_axes::sum_two_axes::run(d, &tx, s)
        });
    }
    for (m, n) in [(4usize, 64usize), (3, 37), (2, 1000)] {
        let x = rand_vec(m * n, 19);
        let want = reference::row_sum(&x, m, n);
        let tx = tensor(&x, [m, n]);
        on_every_backend(&format!("corpus row_sum_rfactor {m}x{n}"), [m], &want, rtol_for_sum(n), |d, r| {
            corpus::row_sum_rfactor::row_sum::run(d, &tx, r)
        });
    }
    for m in [1usize, 5] {
        let x = rand_vec(m * 100, 20);
        let want = reference::row_sum(&x, m, 100);
        let tx = tensor(&x, [m, 100]);
        on_every_backend(&format!("corpus row_sum_golden {m}x100"), [m], &want, rtol_for_sum(100), |d, r| {
            corpus::row_sum_golden::row_sum::run(d, &tx, r)
        });
    }
}

#[test]
fn scale() {
    for n in [10usize, 1] {
        let x = rand_vec(n, 21);
        let want = reference::scale(&x, -2.5);
        let tx = tensor(&x, [n]);
        on_every_backend(&format!("corpus scale n={n}"), [n], &want, RTOL, |d, y| {
            corpus::scale::scale::run(d, &tx, -2.5, y)
        });
    }
}

// ---- The example kernels, at the examples' shapes, with their tuned schedules. ----

#[test]
fn example_matmul_1024() {
    let n = 1024;
    let (a, b) = (rand_vec(n * n, 22), rand_vec(n * n, 23));
    let want = reference::matmul(&a, &b, n, n, n);
    let (ta, tb) = (tensor(&a, [n, n]), tensor(&b, [n, n]));
    on_every_backend("example matmul 1024³", [n, n], &want, rtol_for_sum(n), |d, c| {
        example_matmul::matmul::run(d, &ta, &tb, c)
    });
}

#[test]
fn example_dense_bias_relu() {
    let (m, k, n) = (256, 1024, 1024);
    let (x, w, bias) = (rand_vec(m * k, 24), rand_vec(n * k, 25), rand_vec(n, 26));
    let want = reference::dense_bias_relu(&x, &w, &bias, m, k, n);
    let (tx, tw, tb) = (tensor(&x, [m, k]), tensor(&w, [n, k]), tensor(&bias, [n]));
    on_every_backend("example dense_bias_relu 256x1024x1024", [m, n], &want, rtol_for_sum(k), |d, o| {
        example_dense::dense_bias_relu::run(d, &tx, &tw, &tb, o)
    });
}

#[test]
fn example_softmax() {
    for (rows, cols) in [(64usize, 1024usize), (5, 300)] {
        let x: Vec<f32> = rand_vec(rows * cols, 27).iter().map(|v| v * 8.0).collect();
        let want = reference::softmax(&x, rows, cols);
        let tx = tensor(&x, [rows, cols]);
        on_every_backend(&format!("example softmax {rows}x{cols}"), [rows, cols], &want, RTOL, |d, y| {
            example_softmax::softmax::run(d, &tx, y)
        });
    }
}

#[test]
fn example_layernorm() {
    for (rows, cols) in [(64usize, 1024usize), (5, 300), (2, 7)] {
        let x: Vec<f32> = rand_vec(rows * cols, 28).iter().map(|v| v * 4.0 + 1.0).collect();
        let (g, b) = (rand_vec(cols, 29), rand_vec(cols, 30));
        let want = reference::layernorm(&x, &g, &b, rows, cols);
        let (tx, tg, tb) = (tensor(&x, [rows, cols]), tensor(&g, [cols]), tensor(&b, [cols]));
        on_every_backend(&format!("example layernorm {rows}x{cols}"), [rows, cols], &want, 1e-4, |d, y| {
            example_layernorm::layernorm::run(d, &tx, &tg, &tb, y)
        });
    }
}

#[test]
fn example_conv2d() {
    let (c, h, w) = (64, 56, 56);
    // Twice, on different data: the second call's intermediates (the padded input, the
    // extended rows) are the first call's blocks, reused as they were left
    // (`cpu::try_vec`'s pool), so a kernel that read an element of one before writing it
    // would see the first call's values.
    for seeds in [(28, 29), (38, 39)] {
        let (data, wt) = (rand_vec(c * h * w, seeds.0), rand_vec(c * c * 9, seeds.1));
        let want = reference::conv2d_3x3(&data, &wt, 1, c, c, h, w);
        let (td, tw) = (tensor(&data, [1, c, h, w]), tensor(&wt, [c, c, 3, 3]));
        on_every_backend("example conv2d 64->64 56x56", [1, c, h, w], &want, rtol_for_sum(c * 9), |d, o| {
            example_conv2d::conv2d::run(d, &td, &tw, o)
        });
    }
}

#[test]
fn example_vector_add() {
    for n in [1usize << 16, 1000] {
        let (a, b) = (rand_vec(n, 30), rand_vec(n, 31));
        let want = reference::vector_add(&a, &b);
        let (ta, tb) = (tensor(&a, [n]), tensor(&b, [n]));
        on_every_backend(&format!("example vector_add n={n}"), [n], &want, RTOL, |d, c| {
            example_vector_add::vector_add::run(d, &ta, &tb, c)
        });
    }
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
    // The OpenCL program uses vector types.
    let text = own_vectors::poly_vec4::source("opencl").unwrap();
    assert!(text.contains("vload4") && text.contains("vstore4") && text.contains("float4"), "{text}");
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
        let r = corpus::matmul::matmul::run(d, &bad, &bad, &mut out);
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
        let mut all = own_sources().to_vec();
        all.extend(language::sources());
        all
    })
}

fn own_sources() -> &'static [(&'static str, Source)] {
    &[
        ("vector_add", corpus::vector_add::vector_add::source),
        ("vector_add_1024", corpus::vector_add_1024::vector_add::source),
        ("vector_add_golden", corpus::vector_add_golden::vector_add::source),
        ("matmul", corpus::matmul::matmul::source),
        ("matmul_64", corpus::matmul_64::matmul::source),
        ("matmul_tiled", corpus::matmul_tiled::matmul::source),
        ("dense_bias_relu", corpus::dense_bias_relu::dense_bias_relu::source),
        ("softmax", corpus::softmax::softmax::source),
        ("softmax_default", corpus::softmax_default::softmax::source),
        ("conv2d", corpus::conv2d::conv2d::source),
        ("transpose", corpus::transpose::transpose::source),
        ("max_pool", corpus::max_pool::max_pool::source),
        ("sum_two_axes", corpus::sum_two_axes::sum_two_axes::source),
        ("row_sum_rfactor", corpus::row_sum_rfactor::row_sum::source),
        ("row_sum_golden", corpus::row_sum_golden::row_sum::source),
        ("scale", corpus::scale::scale::source),
        ("example matmul", example_matmul::matmul::source),
        ("example dense_bias_relu", example_dense::dense_bias_relu::source),
        ("example softmax", example_softmax::softmax::source),
        ("example layernorm", example_layernorm::layernorm::source),
        ("example conv2d", example_conv2d::conv2d::source),
        ("example vector_add", example_vector_add::vector_add::source),
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
const NOT_ON_WEBGPU: &[(&str, &str)] = &[
    ("row_dot_f64", "f64"),
    ("axpy f64", "f64"),
    ("weighted_rows i64", "i64"),
    ("example argmax", "i64"),
    ("nearest_zero", "u64"),
    ("softmax_stats", "i64"),
    ("example axpy f64", "f64"),
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
