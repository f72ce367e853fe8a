//! The kernel registry: every kernel of the corpus (`tvm-core/tests/corpus/`) and of the
//! examples (`examples/kernels/`), listed once in [`for_each_kernel!`], each with its
//! cases: the shapes it runs on, its inputs, the plain reference's outputs and the
//! tolerance of each.
//!
//! Everything that runs or builds kernels iterates this list:
//! - `tvm-core/tests/kernels.rs`: every case on the TIR interpreter under four schedules
//!   (default and own, CPU and GPU), the GPU ones also on every OpenCL device;
//! - `tests/backends/`: every kernel compiled by `compute!` and every case run through the
//!   generated `run` on every backend present, every program built by the OpenCL compiler
//!   and by NVRTC;
//! - `tvm-core/tests/codegen_cuda.rs` and `codegen_opencl.rs`: every kernel's CUDA and
//!   OpenCL C, built by NVRTC and ptxas and by the OpenCL compiler;
//! - `tvm-core/tests/expand.rs` and `macro_fuzz.rs`: the expansions of the files.
//!
//! Adding a kernel everywhere: its file (one or more `compute!` invocations), and one
//! entry below naming the file, each kernel's function with its parameters and outputs
//! in order, and its cases function in [`cases`] (whose reference, when new, goes to
//! `reference.rs`).
//!
//! This file is included by both test crates (`tvm-core`'s and the root's), so it uses
//! only `std`; each side converts [`Arg`]s and [`Want`]s to its own values.
#![allow(dead_code)]

#[path = "reference.rs"]
pub mod reference;

/// Calls `$m! { .. }` with every registered kernel file:
///
/// ```text
/// key "path" { function(parameters..) -> (outputs..) cases; .. }
/// ```
///
/// `key` names the file uniquely (the module the backend suite compiles it into); `path`
/// is the file relative to a folder two levels below the repository root (`tests/backends/`,
/// `tvm-core/tests/`: where the suites including it sit). Each kernel of the file follows
/// (a generic one once per instance, `axpy::<f32>`), its parameters and outputs named in
/// the kernel's order, and the function of [`cases`] that gives its cases.
#[allow(unused_macros)]
macro_rules! for_each_kernel {
    ($m:ident) => {
        $m! {
            conv2d "../../tvm-core/tests/corpus/conv2d.rs" { conv2d(data, w) -> (out) conv2d_3x3; }
            dense_bias_relu "../../tvm-core/tests/corpus/dense_bias_relu.rs" {
                dense_bias_relu(x, w, bias) -> (out) dense_bias_relu;
            }
            embedding "../../tvm-core/tests/corpus/embedding.rs" {
                embedding(table, ids, num, den) -> (y) embedding;
            }
            matmul "../../tvm-core/tests/corpus/matmul.rs" { matmul(a, b) -> (c) matmul; }
            matmul_64 "../../tvm-core/tests/corpus/matmul_64.rs" { matmul(a, b) -> (c) matmul_64; }
            matmul_tiled "../../tvm-core/tests/corpus/matmul_tiled.rs" { matmul(a, b) -> (c) matmul; }
            max_pool "../../tvm-core/tests/corpus/max_pool.rs" { max_pool(data) -> (out) max_pool; }
            row_sum_golden "../../tvm-core/tests/corpus/row_sum_golden.rs" { row_sum(x) -> (r) row_sum_100; }
            row_sum_rfactor "../../tvm-core/tests/corpus/row_sum_rfactor.rs" { row_sum(x) -> (r) row_sum; }
            scale "../../tvm-core/tests/corpus/scale.rs" { scale(x, alpha) -> (y) scale; }
            softmax "../../tvm-core/tests/corpus/softmax.rs" { softmax(x) -> (y) softmax_40; }
            softmax_default "../../tvm-core/tests/corpus/softmax_default.rs" { softmax(x) -> (y) softmax; }
            sum_two_axes "../../tvm-core/tests/corpus/sum_two_axes.rs" { sum_two_axes(x) -> (s) sum_two_axes; }
            transpose "../../tvm-core/tests/corpus/transpose.rs" { transpose(a) -> (b) transpose; }
            vector_add "../../tvm-core/tests/corpus/vector_add.rs" { vector_add(a, b) -> (c) vector_add; }
            vector_add_1024 "../../tvm-core/tests/corpus/vector_add_1024.rs" {
                vector_add(a, b) -> (c) vector_add_1024;
            }
            vector_add_golden "../../tvm-core/tests/corpus/vector_add_golden.rs" {
                vector_add(a, b) -> (c) vector_add;
            }
            example_argmax "../../examples/kernels/argmax.rs" { top1(scores) -> (best, at) example_argmax; }
            example_axpy "../../examples/kernels/axpy.rs" {
                axpy::<f32>(x, y, a) -> (z) example_axpy_f32;
                axpy::<f64>(x, y, a) -> (z) example_axpy_f64;
            }
            example_conv2d "../../examples/kernels/conv2d.rs" { conv2d(data, w) -> (out) example_conv2d; }
            example_cumsum "../../examples/kernels/cumsum.rs" { cumsum(x) -> (y) example_cumsum; }
            example_dense_bias_relu "../../examples/kernels/dense_bias_relu.rs" {
                dense_bias_relu(x, w, bias) -> (out) example_dense_bias_relu;
            }
            example_layernorm "../../examples/kernels/layernorm.rs" {
                layernorm(x, gamma, beta) -> (y) example_layernorm;
            }
            example_matmul "../../examples/kernels/matmul.rs" { matmul(a, b) -> (c) example_matmul; }
            example_softmax "../../examples/kernels/softmax.rs" { softmax(x) -> (y) example_softmax; }
            example_softmax_stats "../../examples/kernels/softmax_stats.rs" {
                stats_online(x) -> (m, s) example_softmax_stats;
                stats_two_pass(x) -> (m, s) example_softmax_stats;
            }
            example_vector_add "../../examples/kernels/vector_add.rs" {
                vector_add(a, b) -> (c) example_vector_add;
            }
        }
    };
}

/// One registered kernel: a function (one instance, if generic) of a registered file.
pub struct Kernel {
    /// The file's key in [`for_each_kernel!`].
    pub key: &'static str,
    /// The file, relative to a folder two levels below the repository root.
    pub path: &'static str,
    /// The file's text.
    pub text: &'static str,
    /// The kernel's function name.
    pub function: &'static str,
    /// The instance's element type, for a generic kernel.
    pub instance: Option<&'static str>,
    /// The parameters and the outputs, named in the kernel's order.
    pub params: &'static [&'static str],
    pub outputs: &'static [&'static str],
    /// Its cases for `Suite`.
    pub cases: fn(Suite) -> Vec<Case>,
}

impl Kernel {
    /// `key::function` (with `::<type>` for an instance): how failures name it.
    pub fn label(&self) -> String {
        match self.instance {
            Some(t) => format!("{}::{}::<{t}>", self.key, self.function),
            None => format!("{}::{}", self.key, self.function),
        }
    }
}

// The texts are included relative to this file (`tvm-core/tests/support/`, one level
// deeper than the paths' folders), which is where it is in both crates.
macro_rules! kernel_table {
    ($( $key:ident $path:literal {
        $( $function:ident $(::<$ty:ident>)? ( $($param:ident),* ) -> ( $($out:ident),+ ) $cases:ident ; )+
    } )*) => {
        /// Every registered kernel, in the order of [`for_each_kernel!`].
        pub const KERNELS: &[Kernel] = &[$($(Kernel {
            key: stringify!($key),
            path: $path,
            text: include_str!(concat!("../", $path)),
            function: stringify!($function),
            instance: { let _i: Option<&str> = None; $(let _i = Some(stringify!($ty));)? _i },
            params: &[$(stringify!($param)),*],
            outputs: &[$(stringify!($out)),+],
            cases: cases::$cases,
        }),+),*];

        /// Every registered file: (key, path, text).
        pub const FILES: &[(&str, &str, &str)] =
            &[$((stringify!($key), $path, include_str!(concat!("../", $path)))),*];
    };
}
for_each_kernel!(kernel_table);

/// The registered kernel `key::function` (the first instance, if generic).
pub fn kernel(key: &str, function: &str) -> &'static Kernel {
    KERNELS
        .iter()
        .find(|k| k.key == key && k.function == function)
        .unwrap_or_else(|| panic!("no registered kernel {key}::{function}"))
}

/// Which suite asks for a kernel's cases: the interpreter runs each case under four
/// schedules, the GPU ones by simulating every thread, so it gets the cases of sizes it
/// runs in seconds (none for a kernel of fixed large shapes); the backends get all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    Interpreter,
    Backends,
}

/// The elements of a tensor, of one of the types the registered kernels take and give.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

macro_rules! data_from {
    ($($t:ty => $var:ident),*) => {$(
        impl From<Vec<$t>> for Data {
            fn from(v: Vec<$t>) -> Data {
                Data::$var(v)
            }
        }
    )*};
}
data_from!(f32 => F32, f64 => F64, i32 => I32, i64 => I64);

/// One argument of a run, in the kernel's parameter order.
#[derive(Clone, Debug)]
pub enum Arg {
    Tensor { shape: Vec<usize>, data: Data },
    F32(f32),
    F64(f64),
}

/// A tensor argument.
pub fn tensor(shape: &[usize], data: impl Into<Data>) -> Arg {
    let data = data.into();
    assert_eq!(shape.iter().product::<usize>(), data.len(), "a tensor of shape {shape:?}");
    Arg::Tensor { shape: shape.to_vec(), data }
}

/// One output of a run: its shape, the reference's elements, and how close a backend must
/// come: `|got - want| <= rtol * max(|want|, 1)` for floats (0: exactly), exact for
/// integers.
#[derive(Clone, Debug)]
pub struct Want {
    pub shape: Vec<usize>,
    pub data: Data,
    pub rtol: f64,
}

/// One run of a kernel: what it is called in failures, its arguments, and its outputs.
#[derive(Clone, Debug)]
pub struct Case {
    pub what: String,
    pub args: Vec<Arg>,
    pub wants: Vec<Want>,
}

impl Case {
    pub fn new(what: impl Into<String>, args: Vec<Arg>) -> Case {
        Case { what: what.into(), args, wants: Vec::new() }
    }

    /// The next output: the reference's elements of `shape`, within `rtol` (see [`Want`]).
    pub fn want(mut self, shape: &[usize], data: impl Into<Data>, rtol: f64) -> Case {
        let data = data.into();
        assert_eq!(shape.iter().product::<usize>(), data.len(), "{}: an output of shape {shape:?}", self.what);
        let float = matches!(data, Data::F32(_) | Data::F64(_));
        assert!(float || rtol == 0.0, "{}: integers compare exactly", self.what);
        self.wants.push(Want { shape: shape.to_vec(), data, rtol });
        self
    }
}

/// Panics naming the first element of `got` that is not within `want`'s tolerance (NaN
/// anywhere, an element never written of a poisoned output, fails).
pub fn check_output(got: &Data, want: &Want, what: &str) {
    assert_eq!(got.len(), want.data.len(), "{what}: length");
    let close = |g: f64, w: f64| (g - w).abs() <= want.rtol * w.abs().max(1.0);
    let bad = match (got, &want.data) {
        (Data::F32(g), Data::F32(w)) => g.iter().zip(w).position(|(&g, &w)| !close(g as f64, w as f64)),
        (Data::F64(g), Data::F64(w)) => g.iter().zip(w).position(|(&g, &w)| !close(g, w)),
        (Data::I32(g), Data::I32(w)) => g.iter().zip(w).position(|(g, w)| g != w),
        (Data::I64(g), Data::I64(w)) => g.iter().zip(w).position(|(g, w)| g != w),
        (g, w) => panic!("{what}: got {g:?}, want elements of another type {w:?}"),
    };
    if let Some(i) = bad {
        let at = |d: &Data| match d {
            Data::F32(v) => v[i].to_string(),
            Data::F64(v) => v[i].to_string(),
            Data::I32(v) => v[i].to_string(),
            Data::I64(v) => v[i].to_string(),
        };
        panic!("{what}: element {i}: got {}, want {} (rtol {})", at(got), at(&want.data), want.rtol);
    }
}

/// The cases of every registered kernel: shapes that do and do not divide the schedules'
/// split factors, deterministic inputs, the references of `reference.rs`, and each
/// output's tolerance.
pub mod cases {
    use super::reference::{self as r, rand_vec, rtol_for_sum};
    use super::{tensor, Case, Suite};

    /// The tolerance of results with no reduction, or one of at most 64 terms.
    const RTOL: f64 = 1e-5;

    fn sum_rtol(terms: usize) -> f64 {
        rtol_for_sum(terms) as f64
    }

    pub fn vector_add(_: Suite) -> Vec<Case> {
        [1usize, 64, 77, 1000, 4096]
            .into_iter()
            .map(|n| {
                let (a, b) = (rand_vec(n, 1), rand_vec(n, 2));
                let want = r::vector_add(&a, &b);
                Case::new(format!("n={n}"), vec![tensor(&[n], a), tensor(&[n], b)]).want(&[n], want, RTOL)
            })
            .collect()
    }

    pub fn vector_add_1024(_: Suite) -> Vec<Case> {
        let (a, b) = (rand_vec(1024, 3), rand_vec(1024, 4));
        let want = r::vector_add(&a, &b);
        vec![Case::new("n=1024", vec![tensor(&[1024], a), tensor(&[1024], b)]).want(&[1024], want, RTOL)]
    }

    fn matmul_case(m: usize, k: usize, n: usize, seed: u64) -> Case {
        let (a, b) = (rand_vec(m * k, seed), rand_vec(k * n, seed + 1));
        let want = r::matmul(&a, &b, m, k, n);
        Case::new(format!("{m}x{k}x{n}"), vec![tensor(&[m, k], a), tensor(&[k, n], b)]).want(&[m, n], want, sum_rtol(k))
    }

    pub fn matmul(_: Suite) -> Vec<Case> {
        [(16, 16, 16), (13, 19, 11), (37, 23, 19), (64, 48, 80), (64, 128, 48)]
            .into_iter()
            .map(|(m, k, n)| matmul_case(m, k, n, 5))
            .collect()
    }

    pub fn matmul_64(_: Suite) -> Vec<Case> {
        vec![matmul_case(64, 64, 64, 7)]
    }

    pub fn dense_bias_relu(_: Suite) -> Vec<Case> {
        [(8, 8, 16), (7, 13, 10), (33, 70, 40)].into_iter().map(|(m, k, n)| dense_case(m, k, n, 9)).collect()
    }

    fn dense_case(m: usize, k: usize, n: usize, seed: u64) -> Case {
        let (x, w, bias) = (rand_vec(m * k, seed), rand_vec(n * k, seed + 1), rand_vec(n, seed + 2));
        let want = r::dense_bias_relu(&x, &w, &bias, m, k, n);
        let args = vec![tensor(&[m, k], x), tensor(&[n, k], w), tensor(&[n], bias)];
        Case::new(format!("{m}x{k}x{n}"), args).want(&[m, n], want, sum_rtol(k))
    }

    fn softmax_case(rows: usize, cols: usize, x: Vec<f32>) -> Case {
        let want = r::softmax(&x, rows, cols);
        Case::new(format!("{rows}x{cols}"), vec![tensor(&[rows, cols], x)]).want(&[rows, cols], want, RTOL)
    }

    /// The corpus softmax has rows of 40.
    pub fn softmax_40(_: Suite) -> Vec<Case> {
        [1usize, 3, 4, 16].into_iter().map(|rows| softmax_case(rows, 40, rand_vec(rows * 40, 12))).collect()
    }

    pub fn softmax(_: Suite) -> Vec<Case> {
        [(3usize, 40usize), (5, 129)].into_iter().map(|(m, n)| softmax_case(m, n, rand_vec(m * n, 13))).collect()
    }

    /// Three input channels, a 3x3 window with zero padding 1.
    pub fn conv2d_3x3(_: Suite) -> Vec<Case> {
        [(1usize, 2usize, 8usize, 8usize), (2, 3, 5, 7), (1, 4, 17, 13)]
            .into_iter()
            .map(|(nb, f, h, w)| {
                let (data, wt) = (rand_vec(nb * 3 * h * w, 14), rand_vec(f * 27, 15));
                let want = r::conv2d_3x3(&data, &wt, nb, 3, f, h, w);
                let args = vec![tensor(&[nb, 3, h, w], data), tensor(&[f, 3, 3, 3], wt)];
                Case::new(format!("{nb}x{f}x{h}x{w}"), args).want(&[nb, f, h, w], want, RTOL)
            })
            .collect()
    }

    pub fn transpose(_: Suite) -> Vec<Case> {
        [(16usize, 8usize), (9, 13), (1, 100)]
            .into_iter()
            .map(|(m, n)| {
                let a = rand_vec(m * n, 16);
                let want = r::transpose(&a, m, n);
                Case::new(format!("{m}x{n}"), vec![tensor(&[m, n], a)]).want(&[n, m], want, RTOL)
            })
            .collect()
    }

    pub fn max_pool(_: Suite) -> Vec<Case> {
        [(1usize, 2usize, 8usize, 8usize), (2, 1, 6, 9)]
            .into_iter()
            .map(|(nb, c, h, w)| {
                let data = rand_vec(nb * c * h * w, 17);
                let want = r::max_pool_3x3(&data, nb, c, h, w);
                Case::new(format!("{nb}x{c}x{h}x{w}"), vec![tensor(&[nb, c, h, w], data)]).want(
                    &[nb, c, h, w],
                    want,
                    RTOL,
                )
            })
            .collect()
    }

    /// `x[a, 4, 8]` summed over its last two axes.
    pub fn sum_two_axes(_: Suite) -> Vec<Case> {
        [4usize, 3]
            .into_iter()
            .map(|a| {
                let x = rand_vec(a * 32, 18);
                let want = r::row_sum(&x, a, 32);
                Case::new(format!("{a}x4x8"), vec![tensor(&[a, 4, 8], x)]).want(&[a], want, RTOL)
            })
            .collect()
    }

    fn row_sum_case(m: usize, n: usize, seed: u64) -> Case {
        let x = rand_vec(m * n, seed);
        let want = r::row_sum(&x, m, n);
        Case::new(format!("{m}x{n}"), vec![tensor(&[m, n], x)]).want(&[m], want, sum_rtol(n))
    }

    pub fn row_sum(_: Suite) -> Vec<Case> {
        [(4usize, 64usize), (3, 37), (2, 1000)].into_iter().map(|(m, n)| row_sum_case(m, n, 19)).collect()
    }

    /// The golden row sum has rows of 100.
    pub fn row_sum_100(_: Suite) -> Vec<Case> {
        [1usize, 5].into_iter().map(|m| row_sum_case(m, 100, 20)).collect()
    }

    pub fn scale(_: Suite) -> Vec<Case> {
        [(10usize, 2.5f32), (10, -2.5), (1, -2.5)]
            .into_iter()
            .map(|(n, alpha)| {
                let x = rand_vec(n, 21);
                let want = r::scale(&x, alpha);
                Case::new(format!("n={n} alpha={alpha}"), vec![tensor(&[n], x), super::Arg::F32(alpha)]).want(
                    &[n],
                    want,
                    RTOL,
                )
            })
            .collect()
    }

    /// Row indices and ratios read from memory: the ratios' integer divisions of negative
    /// numbers truncate toward zero.
    pub fn embedding(_: Suite) -> Vec<Case> {
        [(5usize, 19usize, 7usize), (50, 16, 33), (3, 1, 1)]
            .into_iter()
            .map(|(v, d, n)| {
                let table = rand_vec(v * d, 22);
                let ids: Vec<i32> = (0..n).map(|i| ((i * 7 + 3) % v) as i32).collect();
                let num: Vec<i32> = (0..n as i32).map(|i| i * 5 - 13).collect();
                let den: Vec<i32> = (0..n as i32).map(|i| if i % 2 == 0 { 3 } else { -2 }).collect();
                let want = r::embedding(&table, d, &ids, &num, &den);
                let args = vec![tensor(&[v, d], table), tensor(&[n], ids), tensor(&[n], num), tensor(&[n], den)];
                Case::new(format!("{n} rows of {v}x{d}"), args).want(&[n, d], want, RTOL)
            })
            .collect()
    }

    // ---- The example kernels: at the examples' shapes where they are fixed. ----

    pub fn example_matmul(suite: Suite) -> Vec<Case> {
        match suite {
            Suite::Interpreter => vec![],
            Suite::Backends => vec![matmul_case(1024, 1024, 1024, 22)],
        }
    }

    pub fn example_dense_bias_relu(suite: Suite) -> Vec<Case> {
        match suite {
            Suite::Interpreter => vec![],
            Suite::Backends => vec![dense_case(256, 1024, 1024, 24)],
        }
    }

    /// Twice, on different data: the second call's intermediates (the padded input, the
    /// extended rows) are the first call's blocks, reused as they were left
    /// (`cpu::try_vec`'s pool), so a kernel that read an element of one before writing it
    /// would see the first call's values.
    pub fn example_conv2d(suite: Suite) -> Vec<Case> {
        if suite == Suite::Interpreter {
            return vec![];
        }
        let (c, h, w) = (64, 56, 56);
        [(28, 29), (38, 39)]
            .into_iter()
            .map(|(s0, s1)| {
                let (data, wt) = (rand_vec(c * h * w, s0), rand_vec(c * c * 9, s1));
                let want = r::conv2d_3x3(&data, &wt, 1, c, c, h, w);
                let args = vec![tensor(&[1, c, h, w], data), tensor(&[c, c, 3, 3], wt)];
                Case::new(format!("64->64 56x56 (seeds {s0}, {s1})"), args).want(&[1, c, h, w], want, sum_rtol(c * 9))
            })
            .collect()
    }

    /// Values up to 8 in magnitude: `exp` over a wide range.
    pub fn example_softmax(_: Suite) -> Vec<Case> {
        [(64usize, 1024usize), (5, 300)]
            .into_iter()
            .map(|(m, n)| softmax_case(m, n, rand_vec(m * n, 27).iter().map(|v| v * 8.0).collect()))
            .collect()
    }

    /// Rows of mean about 1: the mean's cancellation matters.
    pub fn example_layernorm(_: Suite) -> Vec<Case> {
        [(64usize, 1024usize), (5, 300), (2, 7)]
            .into_iter()
            .map(|(m, n)| {
                let x: Vec<f32> = rand_vec(m * n, 28).iter().map(|v| v * 4.0 + 1.0).collect();
                let (g, b) = (rand_vec(n, 29), rand_vec(n, 30));
                let want = r::layernorm(&x, &g, &b, m, n);
                let args = vec![tensor(&[m, n], x), tensor(&[n], g), tensor(&[n], b)];
                Case::new(format!("{m}x{n}"), args).want(&[m, n], want, 1e-4)
            })
            .collect()
    }

    pub fn example_vector_add(suite: Suite) -> Vec<Case> {
        let sizes: &[usize] = match suite {
            Suite::Interpreter => &[1000],
            Suite::Backends => &[1 << 16, 1000],
        };
        sizes
            .iter()
            .map(|&n| {
                let (a, b) = (rand_vec(n, 30), rand_vec(n, 31));
                let want = r::vector_add(&a, &b);
                Case::new(format!("n={n}"), vec![tensor(&[n], a), tensor(&[n], b)]).want(&[n], want, RTOL)
            })
            .collect()
    }

    /// A coarse grid of values: rows have ties, and the first index must win.
    pub fn example_argmax(_: Suite) -> Vec<Case> {
        [(1usize, 1usize), (7, 100), (64, 1030)]
            .into_iter()
            .map(|(m, n)| {
                let x: Vec<f32> = rand_vec(m * n, 50).iter().map(|v| (v * 8.0).round()).collect();
                let (best, at) = r::argbest_rows(&x, n, true);
                Case::new(format!("{m}x{n}"), vec![tensor(&[m, n], x)]).want(&[m], best, 0.0).want(&[m], at, 0.0)
            })
            .collect()
    }

    pub fn example_axpy_f32(suite: Suite) -> Vec<Case> {
        let n = if suite == Suite::Interpreter { 1003 } else { 100_003 };
        let (x, y) = (rand_vec(n, 48), rand_vec(n, 49));
        let want = r::axpy(0.75f32, &x, &y);
        vec![Case::new(format!("n={n}"), vec![tensor(&[n], x), tensor(&[n], y), super::Arg::F32(0.75)]).want(
            &[n],
            want,
            RTOL,
        )]
    }

    /// f64 to within its own precision: one product and one sum per element.
    pub fn example_axpy_f64(suite: Suite) -> Vec<Case> {
        let n = if suite == Suite::Interpreter { 1003 } else { 100_003 };
        let x: Vec<f64> = rand_vec(n, 48).iter().map(|&v| v as f64 / 3.0).collect();
        let y: Vec<f64> = rand_vec(n, 49).iter().map(|&v| v as f64 / 7.0).collect();
        let want = r::axpy(1.25f64, &x, &y);
        vec![Case::new(format!("n={n}"), vec![tensor(&[n], x), tensor(&[n], y), super::Arg::F64(1.25)]).want(
            &[n],
            want,
            1e-12,
        )]
    }

    pub fn example_cumsum(suite: Suite) -> Vec<Case> {
        let (m, n) = if suite == Suite::Interpreter { (7, 100) } else { (300, 1000) };
        let x = rand_vec(m * n, 47);
        let want = r::cumsum_rows(&x, n);
        vec![Case::new(format!("{m}x{n}"), vec![tensor(&[m, n], x)]).want(&[m, n], want, sum_rtol(n))]
    }

    /// The max exactly; the sum of exponentials (at least 1) within 1e-5.
    pub fn example_softmax_stats(_: Suite) -> Vec<Case> {
        [(1usize, 1usize), (5, 300), (16, 1030)]
            .into_iter()
            .map(|(m, n)| {
                let x: Vec<f32> = rand_vec(m * n, 52).iter().map(|v| v * 20.0 - 10.0).collect();
                let (max, sum) = r::softmax_stats(&x, n);
                Case::new(format!("{m}x{n}"), vec![tensor(&[m, n], x)]).want(&[m], max, 0.0).want(&[m], sum, 1e-5)
            })
            .collect()
    }
}
