//! The CPU backend against the interpreter: every kernel below is lowered for the CPU,
//! emitted as Rust, and compiled (all of them in one fixture crate, one cargo build)
//! under `target/codegen-test/`; its outputs on fixed inputs must equal the
//! interpreter's (bit for bit for integers, within 1e-5 relative for floats). Also a
//! golden test of the emitted code and the rejection of a parallel loop whose iterations
//! write interleaved elements.
//!
//! Bless the golden after an intended change with
//! `UPDATE_EXPECT=1 cargo test -p tvm-rs-core --test codegen_rust`.

use expect_test::expect;
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_core::codegen::{dim_vars, emit_rust, emit_rust_with, CodegenError, EmitOptions};
use tvm_core::dtype::DType;
use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::tir::{Param, PrimFunc};
use tvm_core::Target;

#[path = "support/lowered.rs"]
mod lowered;

/// `src` lowered for `target` as `compute!` lowers it.
fn lower(src: &str, target: &str) -> PrimFunc {
    // An example file: its `compute!` invocation, after the docs and `use` lines.
    let src = src.find("compute!").map_or(src, |i| &src[i..]);
    let kernel = tvm_core::frontend::parse_str(src).unwrap_or_else(|e| panic!("{e:?}"));
    let target = Target::parse(target).unwrap();
    tvm_core::driver::lower_for(&kernel, &target).unwrap_or_else(|e| panic!("{e:?}"))
}

// ---------------------------------------------------------------------------------------
// The kernels.

const VECTOR_ADD_DEFAULT: &str = r#"
    fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }
"#;

const VECTOR_ADD_16: &str = include_str!("corpus/vector_add_golden.rs");

/// An area resize's row pass (no schedule): a gather reduction whose fused parallel loop
/// divides by the symbolic `H`.
const RESIZE_ROWS: &str = r#"
    fn resize_rows(img: f32[H, W, 3], xs: i32[OW, L], wx: f32[OW, L]) -> h: f32[3, H, OW] {
        let ie = repeat_edge(img);
        h[c, r, j] = sum(wx[j, b] * ie[r, xs[j, b] as i64, c] for b in 0..L);
    }
"#;

/// A crop's row pass (no schedule): the rows of each box from its first (`y0[n]`, an
/// input), zero outside the image, in vectors of rows where the guard of the vector
/// proves them inside; the stage's extent is a `usize` scalar, a `let` in the function
/// that the parallel loop's chunk of `t` is proved with.
const CROP_ROWS: &str = r#"
    fn crop_rows(q: f32[C, W, H], y0: i32[N], xs: i32[N, S, K], wx: f32[N, S, K], ys: i32[N, S, K], rows: usize)
        -> x: f32[N, C, S, S]
    {
        let qe = constant_exterior(q, 0.0);
        let t[n, c, j, r]: f32[N, C, S, rows] =
            sum(wx[n, j, b] * qe[c, xs[n, j, b] as i64, y0[n] as i64 + r] for b in 0..K);
        let te = repeat_edge(t);
        x[n, c, j, i] = sum(te[n, c, j, ys[n, i, a] as i64] for a in 0..K);
    }
"#;

/// A P-Net layer: a convolution over a symbolic width `W`, derived schedule (a register
/// tile of 32 `j` lanes accumulated inside `y`'s tile). Its border tiles (and, below 32
/// columns, every tile) store their accumulators masked (`hoist_tail_guards`).
const CONV_ROWS: &str = r#"
    fn conv_rows(x: f32[C, H, W], w: f32[F, C, 3, 3]) -> y: f32[F, H, W] {
        let c[f, i, j]: f32[F, H, W] = sum(if i + r < H && j + s < W { x[c, i + r, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..C, r in 0..3, s in 0..3);
        y[f, i, j] = c[f, i, j].max(0.0);
    }
"#;

/// A stride-2 pooling with no schedule (the window rule: its taps are vector loads of
/// stride 2, one span load and a shuffle each where the span is inside `x`).
const POOL2: &str = r#"
    fn pool2(x: f32[C, H, W]) -> y: f32[C, H, W] {
        y[c, i, j] = max(if i * 2 + p < H && j * 2 + q < W { x[c, i * 2 + p, j * 2 + q] } else { -1000.0 }
            for p in 0..2, q in 0..2);
    }
"#;

const MATMUL: &str = include_str!("corpus/matmul.rs");

const SOFTMAX: &str = include_str!("corpus/softmax_default.rs");

/// A matmul whose `b` is packed into panels of 16 columns, at symbolic sizes (the last
/// panel's test on `N` in every panel) and at fixed ones whose last panel is narrower (8
/// of 40 columns): that panel is an iteration of the parallel loop in a branch of its own,
/// its index written with the loop variable's value in place of the variable.
const PACKED: &str = r#"
    fn packed(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
    schedule!(cpu) {
        let cl = c.cache_write(local);
        let bp = b.pack(1, 16, [cl]);
        let [bo, bk, bi] = bp.axes();
        bp.parallel(bo);
        bp.vectorize(bi);
        let (jo, ji) = c.split(c.j, 16);
        c.parallel(c.i);
        c.vectorize(ji);
        cl.compute_at(c, jo);
        let [ci, cj] = cl.axes();
        cl.reorder(cl.k, ci, cj);
        cl.vectorize(cj);
    }
"#;

/// A convolution without a schedule over rows of 12 columns and 16 filters: the derived
/// tile is vectorized across the rows (the filters), its weights packed, its accumulators
/// stored transposed (`transpose_locals`).
const CONV_ACROSS: &str = r#"
    fn conv_across(x: f32[2, 3, 14, 14], w: f32[16, 3, 3, 3]) -> y: f32[2, 16, 12, 12] {
        y[n, f, i, j] = sum(x[n, k, i + r, j + s] * w[f, k, r, s] for k in 0..3, r in 0..3, s in 0..3);
    }
"#;

/// A transpose without a schedule: tiles of 8 x 8, `a`'s part of a tile staged through a
/// local tile by vector loads of its rows, ragged tiles at both ends.
const TRANSPOSE_STAGED: &str = r#"
    fn transpose_staged(a: f32[M, N]) -> b: f32[N, M] {
        b[i, j] = a[j, i];
    }
"#;

const PACKED_FIXED: &str = r#"
    fn packed_fixed(a: f32[5, 7], b: f32[7, 40]) -> c: f32[5, 40] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..7);
    }
    schedule!(cpu) {
        let cl = c.cache_write(local);
        let bp = b.pack(1, 16, [cl]);
        let [bo, bk, bi] = bp.axes();
        bp.parallel(bo);
        bp.vectorize(bi);
        let (jo, ji) = c.split(c.j, 16);
        c.parallel(c.i);
        c.vectorize(ji);
        cl.compute_at(c, jo);
    }
"#;

const CONV2D: &str = include_str!("corpus/conv2d.rs");

const MAXPOOL: &str = include_str!("corpus/max_pool.rs");

const TRANSPOSE: &str = include_str!("corpus/transpose.rs");

const SUM2: &str = include_str!("corpus/sum_two_axes.rs");

const INT_DIV: &str = r#"
    fn int_div(a: i32[n], b: i32[n]) -> c: i32[n] {
        c[i] = a[i] / b[i] + a[i] % b[i] * 3 - a[i] / 7 % 5;
    }
"#;

const SCALE: &str = include_str!("corpus/scale.rs");

const ACTIVATIONS: &str = r#"
    fn activations(x: f32[n]) -> y: f32[n] {
        y[i] = erf(x[i]) + sigmoid(x[i]) * tanh(x[i]) - sqrt(abs(x[i])) + rsqrt(x[i] * x[i] + 1.0) + floor(x[i] * 3.0);
    }
"#;

/// One parallel loop writes two outputs (a chunk of each per iteration) and reads back its
/// own chunk of the first.
const TWO_OUTPUTS: &str = r#"
    fn two_outputs(x: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) {
        y[i, j] = x[i, j] * 2.0;
        z[i, j] = y[i, j] + 1.0;
    }
    schedule!(cpu) {
        z.parallel(z.i);
        y.compute_at(z, z.i);
    }
"#;

/// A 5-point stencil whose borders are `if`s, vectorized along a row: the loop
/// partitioning peels the border vectors, the interior is vector code.
const STENCIL: &str = r#"
    fn stencil(a: f32[H, W]) -> y: f32[H, W] {
        y[i, j] = a[i, j] * 4.0
            - (if i >= 1 { a[i - 1, j] } else { 0.0 })
            - (if i + 1 < H { a[i + 1, j] } else { 0.0 })
            - (if j >= 1 { a[i, j - 1] } else { 0.0 })
            - (if j + 1 < W { a[i, j + 1] } else { 0.0 });
    }
    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, 16);
        y.parallel(y.i);
        y.vectorize(ji);
    }
"#;

/// A 3x3 convolution with its zero padding as an `if` inside the reduction, rows in
/// parallel into a local accumulator, the window's columns unrolled, no `vectorize`:
/// loop partitioning peels the row's border columns and unswitching the row's border
/// test, so the interior loops read without a test and LLVM vectorizes them.
const PAD_CONV: &str = r#"
    fn pad_conv(data: f32[C, H, W], w: f32[F, C, 3, 3]) -> out: f32[F, H, W] {
        out[f, y, x] = sum(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..C, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let ol = out.cache_write(local);
        let fy = out.fuse(out.f, out.y);
        out.parallel(fy);
        ol.compute_at(out, fy);
        let [of, oy, ox] = ol.axes();
        ol.reorder(ol.c, ol.r, ol.s, ox);
        ol.unroll(ol.s);
    }
"#;

/// The same with static shapes: the code generator proves every read of the interior in
/// bounds (with symbolic shapes the reads are checked, and LLVM leaves a loop that may
/// panic scalar), so its machine code shows whether the interior is vector code.
const PAD_CONV_FIXED: &str = r#"
    fn pad_conv_fixed(data: f32[4, 10, 40], w: f32[3, 4, 3, 3]) -> out: f32[3, 10, 40] {
        out[f, y, x] = sum(
            if y + r >= 1 && y + r <= 10 && x + s >= 1 && x + s <= 40 {
                data[c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..4, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let ol = out.cache_write(local);
        let fy = out.fuse(out.f, out.y);
        out.parallel(fy);
        ol.compute_at(out, fy);
        let [of, oy, ox] = ol.axes();
        ol.reorder(ol.c, ol.r, ol.s, ox);
        ol.unroll(ol.s);
    }
"#;

/// The TVM tutorial's `opt_gemm` schedule at 32 lanes (two AVX-512 registers per
/// vector): packed b, a local write cache, k unrolled by 4.
const OPT_GEMM: &str = r#"
    fn opt_gemm(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        let bp[x, k, y]: f32[2, 64, 32] = b[k, x * 32 + y];
        c[i, j] = sum(a[i, k] * bp[j / 32, k, j % 32] for k in 0..64);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let cc = c.cache_write(local);
        let (mo, no, mi, ni) = c.tile(c.i, c.j, 32, 32);
        c.parallel(mo);
        cc.compute_at(c, no);
        let [mc, nc] = cc.axes();
        let (ko, ki) = cc.split(cc.k, 4);
        cc.reorder(ko, mc, ki, nc);
        cc.vectorize(nc);
        cc.unroll(ki);
    }
"#;

/// Prefetches: two rows of `x` two iterations ahead (a 2-D region, clipped at the last
/// rows; empty when `N` is 0), and a block of `b`'s rows at a reduction loop.
const PREFETCH: &str = r#"
    fn pf_rows(x: f32[M, N], a: f32[M, K], b: f32[K, N]) -> (y: f32[M, N], c: f32[M, N]) {
        y[i, j] = x[i, j] + (if i + 1 < M { x[i + 1, j] } else { 0.0 });
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
    schedule!(cpu) {
        y.parallel(y.i);
        y.prefetch(x, y.i, 2);
        let (ko, ki) = c.split(c.k, 4);
        c.reorder(c.i, ko, c.j, ki);
        c.prefetch(b, ko, 1);
    }
"#;

/// The softmax example's CPU schedule as written: the row of exponentials lives in the
/// row of `y` (`passes::reuse_output`); its sum reads it back there, guarded in the tail,
/// and the last pass scales it in place.
const SOFTMAX_EXAMPLE: &str = include_str!("../../examples/kernels/softmax.rs");

/// 64 lanes of i32 and 8 lanes of f64 (with a multiply-add), with tails.
const WIDE: &str = r#"
    fn wide(a: i32[n], x: f64[n]) -> (c: i32[n], z: f64[n]) {
        c[i] = a[i] * 3 + a[i] / 4;
        z[i] = x[i] * x[i] + 0.5;
    }
    schedule!(cpu) {
        let (co, ci) = c.split(c.i, 64);
        c.vectorize(ci);
        let (zo, zi) = z.split(z.i, 8);
        z.vectorize(zi);
    }
"#;

struct Kernel {
    src: &'static str,
    target: &'static str,
    /// Dim values, one map per case.
    cases: Vec<Vec<(&'static str, usize)>>,
    /// Values of the scalar parameters, in order.
    scalars: Vec<ScalarValue>,
}

fn kernels() -> Vec<Kernel> {
    let k = |src, target, cases: &[&[(&'static str, usize)]]| Kernel {
        src,
        target,
        cases: cases.iter().map(|c| c.to_vec()).collect(),
        scalars: vec![],
    };
    vec![
        k(VECTOR_ADD_DEFAULT, "cpu", &[&[("n", 77)], &[("n", 64)], &[("n", 1)], &[("n", 0)]]),
        k(VECTOR_ADD_16, "cpu", &[&[("n", 1000)], &[("n", 16)], &[("n", 5)]]),
        k(VECTOR_ADD_DEFAULT, "llvm -mattr=+avx2,+fma", &[&[("n", 45)]]),
        k(MATMUL, "cpu -fp-contract=off", &[&[("M", 13), ("K", 19), ("N", 11)]]),
        k(
            MATMUL,
            "cpu",
            &[
                &[("M", 16), ("K", 16), ("N", 16)],
                &[("M", 13), ("K", 19), ("N", 11)],
                &[("M", 64), ("K", 48), ("N", 80)],
            ],
        ),
        k(SOFTMAX, "cpu", &[&[("M", 4), ("N", 40)], &[("M", 3), ("N", 37)]]),
        k(
            RESIZE_ROWS,
            "cpu",
            &[&[("H", 5), ("W", 7), ("OW", 4), ("L", 3)], &[("H", 1), ("W", 2), ("OW", 9), ("L", 1)]],
        ),
        // The last two cases have a dim above the fast path's bound (2^16 here), so the
        // checked instantiation runs: once on data (its loads and stores execute), once
        // with empty tensors (the parallel loop's one iteration gets an empty chunk).
        k(
            CONV2D,
            "cpu",
            &[
                &[("N", 1), ("F", 2), ("H", 8), ("W", 8)],
                &[("N", 2), ("F", 3), ("H", 5), ("W", 7)],
                &[("N", 1), ("F", 1), ("H", 70000), ("W", 1)],
                &[("N", 1), ("F", 1), ("H", 70000), ("W", 0)],
            ],
        ),
        // 70 rows: vectors of 64 and an overlapping last one; 20: the scalar rows only.
        // The indices are the harness's integers in [-99, 99]: most boxes start above
        // or below the 120-row image, some cross its edges.
        Kernel {
            scalars: vec![ScalarValue::U64(70)],
            ..k(CROP_ROWS, "cpu", &[&[("C", 2), ("W", 9), ("H", 120), ("N", 12), ("S", 3), ("K", 2)]])
        },
        Kernel {
            scalars: vec![ScalarValue::U64(20)],
            ..k(CROP_ROWS, "cpu", &[&[("C", 1), ("W", 4), ("H", 30), ("N", 3), ("S", 2), ("K", 3)]])
        },
        // The derived parallel loop fused from rows and filter blocks: `oh = H`, so the
        // last rows' window crosses `H` (the versioned row test fails, the slow copy
        // runs); width 20, masked tiles only (their selects' condition versioned, their
        // reads lenient vectors). The whole tiles' path runs in the interpreter in
        // `partition_loops.rs`.
        Kernel {
            scalars: vec![ScalarValue::U64(8), ScalarValue::U64(20)],
            ..k(lowered::CONV_ROWS_FIRST, "cpu", &[&[("H", 8), ("W", 22), ("oh", 8), ("ow", 20)]])
        },
        // Widths 21 (every tile a border), 34 (a whole tile and a border) and 64 (whole
        // tiles, the last one's window reading past `W` under its test).
        k(
            CONV_ROWS,
            "cpu",
            &[
                &[("C", 2), ("H", 6), ("W", 21), ("F", 4)],
                &[("C", 3), ("H", 5), ("W", 34), ("F", 5)],
                &[("C", 1), ("H", 4), ("W", 64), ("F", 3)],
            ],
        ),
        k(
            POOL2,
            "cpu",
            &[&[("C", 2), ("H", 5), ("W", 70)], &[("C", 1), ("H", 3), ("W", 33)], &[("C", 3), ("H", 2), ("W", 16)]],
        ),
        k(MAXPOOL, "cpu", &[&[("N", 1), ("C", 2), ("H", 8), ("W", 8)], &[("N", 2), ("C", 1), ("H", 6), ("W", 9)]]),
        k(TRANSPOSE, "cpu", &[&[("M", 16), ("N", 8)], &[("M", 9), ("N", 13)]]),
        k(SUM2, "cpu", &[&[("A", 4)], &[("A", 3)], &[("A", 9)]]),
        k(INT_DIV, "cpu", &[&[("n", 103)]]),
        Kernel { scalars: vec![ScalarValue::F32(2.5)], ..k(SCALE, "cpu", &[&[("n", 10)], &[("n", 33)]]) },
        k(ACTIVATIONS, "cpu", &[&[("n", 50)]]),
        k(TWO_OUTPUTS, "cpu", &[&[("M", 5), ("N", 7)]]),
        k(
            STENCIL,
            "cpu",
            &[&[("H", 6), ("W", 50)], &[("H", 3), ("W", 16)], &[("H", 2), ("W", 7)], &[("H", 1), ("W", 1)]],
        ),
        k(
            PAD_CONV,
            "cpu",
            &[
                &[("C", 2), ("H", 5), ("W", 19), ("F", 2)],
                &[("C", 3), ("H", 4), ("W", 40), ("F", 2)],
                &[("C", 1), ("H", 3), ("W", 2), ("F", 1)],
                &[("C", 1), ("H", 1), ("W", 1), ("F", 2)],
            ],
        ),
        k(PAD_CONV_FIXED, "cpu", &[&[]]),
        k(OPT_GEMM, "cpu", &[&[]]),
        k(
            PACKED,
            "cpu",
            &[
                &[("M", 3), ("K", 5), ("N", 40)],
                &[("M", 2), ("K", 3), ("N", 32)],
                &[("M", 1), ("K", 1), ("N", 1)],
                &[("M", 2), ("K", 0), ("N", 5)],
            ],
        ),
        k(PACKED_FIXED, "cpu", &[&[]]),
        k(CONV_ACROSS, "cpu", &[&[]]),
        k(
            TRANSPOSE_STAGED,
            "cpu",
            &[
                &[("M", 16), ("N", 8)],
                &[("M", 9), ("N", 13)],
                &[("M", 1), ("N", 17)],
                &[("M", 0), ("N", 5)],
                &[("M", 33), ("N", 7)],
            ],
        ),
        k(WIDE, "cpu", &[&[("n", 200)], &[("n", 64)], &[("n", 3)]]),
        k(
            SOFTMAX_EXAMPLE,
            "cpu",
            &[
                &[("M", 3), ("N", 100)],
                &[("M", 2), ("N", 64)],
                &[("M", 4), ("N", 5)],
                &[("M", 1), ("N", 1)],
                &[("M", 0), ("N", 7)],
            ],
        ),
        k(
            PREFETCH,
            "cpu",
            &[
                &[("M", 5), ("N", 37), ("K", 10)],
                &[("M", 1), ("N", 3), ("K", 3)],
                &[("M", 3), ("N", 0), ("K", 2)],
                &[("M", 0), ("N", 4), ("K", 0)],
            ],
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Inputs, and the interpreter's outputs.

/// Deterministic values: floats in [-1, 1), integers in [-99, 99] without 0 (divisors).
fn values(dtype: DType, n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 40) as f64 / (1u64 << 24) as f64;
            if dtype.is_float() {
                u * 2.0 - 1.0
            } else {
                let v = (u * 198.0) as i64 - 99;
                (if v == 0 { 7 } else { v }) as f64
            }
        })
        .collect()
}

fn poison(dtype: DType) -> f64 {
    if dtype.is_float() {
        f64::NAN
    } else {
        i32::MIN as f64
    }
}

fn to_bytes(dtype: DType, v: &[f64]) -> Vec<u8> {
    match dtype {
        DType::F32 => v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect(),
        DType::I32 => v.iter().flat_map(|x| (*x as i32).to_le_bytes()).collect(),
        DType::F64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        d => panic!("test inputs of type {d}"),
    }
}

fn from_bytes(dtype: DType, b: &[u8]) -> Vec<f64> {
    match dtype {
        DType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::I32 => b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::F64 => b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        d => panic!("test outputs of type {d}"),
    }
}

/// One run of one kernel: the inputs written for the fixture, and the expected outputs.
struct Case {
    name: String,
    /// Per tensor parameter: (name, dtype, numel, data or the expected output).
    tensors: Vec<(String, DType, usize, bool, Vec<f64>)>,
}

fn shape_of(p: &[tvm_core::tir::Expr], dims: &HashMap<String, usize>) -> Vec<usize> {
    p.iter()
        .map(|d| match d {
            tvm_core::tir::Expr::Int { value, .. } => *value as usize,
            tvm_core::tir::Expr::Var(v) => dims[v.name()],
            other => panic!("shape entry {other:?}"),
        })
        .collect()
}

fn interp_case(f: &PrimFunc, kernel: &Kernel, dims: &HashMap<String, usize>, name: String) -> Case {
    let mut args = Vec::new();
    let mut tensors = Vec::new();
    let mut scalars = kernel.scalars.iter();
    for (pi, p) in f.params.iter().enumerate() {
        match p {
            Param::Tensor { buffer, shape, is_output } => {
                let shape = shape_of(shape, dims);
                let n: usize = shape.iter().product();
                let d = buffer.dtype();
                let data = if *is_output { vec![poison(d); n] } else { values(d, n, pi as u64 + 1) };
                args.push(ArgValue::Tensor(HostTensor::from_f64(d, shape, &data).unwrap()));
                tensors.push((buffer.name().to_string(), d, n, *is_output, data));
            }
            Param::Scalar(_) => args.push(ArgValue::Scalar(*scalars.next().expect("a value per scalar param"))),
        }
    }
    run(f, &mut args).unwrap_or_else(|e| panic!("{name}: interpreter: {e}"));
    for (t, a) in tensors.iter_mut().zip(args.iter().filter_map(|a| a.as_tensor())) {
        if t.3 {
            t.4 = a.to_f64_vec();
            // Every element is written: a poisoned one left over would match the
            // emitted code's poison (`close` takes NaN for NaN) without being computed.
            let unwritten = t.4.iter().position(|v| v.is_nan() || (!t.1.is_float() && *v == poison(t.1)));
            assert_eq!(unwritten, None, "{name}: the interpreter leaves `{}` unwritten or NaN", t.0);
        }
    }
    Case { name, tensors }
}

// ---------------------------------------------------------------------------------------
// The fixture crate.

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/codegen-test/fixture")
}

/// Writes `path` only if its contents change, so cargo rebuilds only what changed.
fn write_if_changed(path: &Path, contents: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(contents) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

fn rust_ty(d: DType) -> TokenStream {
    match d {
        DType::F32 => quote!(f32),
        DType::I32 => quote!(i32),
        DType::F64 => quote!(f64),
        d => panic!("test tensors of type {d}"),
    }
}

fn scalar_tokens(s: &ScalarValue) -> TokenStream {
    match s {
        ScalarValue::F32(v) => quote!(#v),
        ScalarValue::I32(v) => quote!(#v),
        ScalarValue::U64(v) => quote!(#v),
        other => panic!("test scalars {other:?}"),
    }
}

/// The module of one kernel: the emitted function and a `cases` function that runs it.
fn kernel_module(f: &PrimFunc, kernel: &Kernel, cases: &[Case], dims_of: &[HashMap<String, usize>]) -> String {
    let opts = EmitOptions { rt_path: quote!(::tvm_runtime::__rt), ..EmitOptions::default() };
    let code = emit_rust_with(f, &opts).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    let fname = tvm_core::codegen::rust::fn_ident(f);
    let runs = cases.iter().zip(dims_of).map(|(case, dims)| {
        let mut stmts = Vec::new();
        let mut args = Vec::new();
        let mut outs = Vec::new();
        let mut tensors = case.tensors.iter();
        let mut scalars = kernel.scalars.iter();
        for p in &f.params {
            match p {
                Param::Tensor { .. } => {
                    let (name, d, n, is_out, _) = tensors.next().unwrap();
                    let id = quote::format_ident!("t_{}", name);
                    let (ty, file) = (rust_ty(*d), format!("{}_{}", case.name, name));
                    if *is_out {
                        let p = if d.is_float() { quote!(<#ty>::NAN) } else { quote!(<#ty>::MIN) };
                        stmts.push(quote!(let mut #id: Vec<#ty> = vec![#p; #n];));
                        args.push(quote!(&mut #id));
                        outs.push(quote!(wr(dir, #file, &#id);));
                    } else {
                        stmts.push(quote!(let #id: Vec<#ty> = rd(dir, #file);));
                        args.push(quote!(&#id));
                    }
                }
                Param::Scalar(_) => args.push(scalar_tokens(scalars.next().unwrap())),
            }
        }
        for d in dim_vars(f) {
            let v = dims[d.name()] as i64;
            args.push(quote!(#v));
        }
        let label = &case.name;
        if tvm_core::codegen::rust::has_checks(f) {
            // The inputs hold no zero divisor and no index read from memory: no check fails.
            return quote! {{
                #(#stmts)*
                let fault = ::tvm_runtime::cpu::Fault::new();
                #fname(#(#args,)* &fault).expect(#label);
                assert_eq!(fault.get(), None, "{}: a check failed", #label);
                #(#outs)*
            }};
        }
        quote! {{
            #(#stmts)*
            #fname(#(#args),*).expect(#label);
            #(#outs)*
        }}
    });
    let module = quote! {
        use super::{rd, wr};
        #code
        pub(crate) fn cases(dir: &std::path::Path) {
            #(#runs)*
        }
    };
    module.to_string()
}

const FIXTURE_MAIN_HEAD: &str = r#"
//! Generated by tvm-core/tests/codegen_rust.rs: runs every emitted kernel on the inputs
//! in the directory given as the first argument and writes the outputs beside them.
#![allow(clippy::all)]

pub(crate) trait Elem: Sized + Copy {
    const SIZE: usize;
    fn from_le(b: &[u8]) -> Self;
    fn to_le(self) -> Vec<u8>;
}
macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
            fn to_le(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
        }
    )*};
}
elem!(f32, i32, f64);
pub(crate) fn rd<T: Elem>(dir: &std::path::Path, name: &str) -> Vec<T> {
    let b = std::fs::read(dir.join(format!("{name}.in"))).unwrap();
    b.chunks_exact(T::SIZE).map(T::from_le).collect()
}
pub(crate) fn wr<T: Elem>(dir: &std::path::Path, name: &str, v: &[T]) {
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le()).collect();
    std::fs::write(dir.join(format!("{name}.out")), b).unwrap();
}
"#;

const FIXTURE_TOML: &str = r#"[package]
name = "codegen_fixture"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
# What the emitted code calls at `rt_path` (the facade's `tvm::__rt`): the runtime alone.
tvm-runtime = { package = "tvm-rs-runtime", path = "TVM_RUNTIME_PATH", default-features = false, features = ["rayon"] }

[profile.release]
debug = false

# Not a member of the tvm-rs workspace above.
[workspace]
"#;

/// Builds the fixture (offline first, from the local registry cache) and returns the
/// path of its binary.
fn build_fixture(dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = dir.join("target");
    let build = |offline: bool| {
        let mut c = Command::new(&cargo);
        c.arg("build").arg("--release").arg("--quiet").arg("--manifest-path").arg(dir.join("Cargo.toml"));
        if offline {
            c.arg("--offline");
        }
        for v in
            ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_MAKEFLAGS"]
        {
            c.env_remove(v);
        }
        c.env("CARGO_TARGET_DIR", &target);
        c.output().expect("cargo runs")
    };
    let mut out = build(true);
    if !out.status.success() {
        out = build(false);
    }
    assert!(out.status.success(), "the fixture does not build:\n{}", String::from_utf8_lossy(&out.stderr));
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(!warnings.contains("warning"), "the emitted code has warnings:\n{warnings}");
    target.join("release/codegen_fixture")
}

fn close(got: f64, want: f64) -> bool {
    if got.is_nan() || want.is_nan() {
        return got.is_nan() && want.is_nan();
    }
    (got - want).abs() <= 1e-5 * want.abs().max(1.0)
}

#[test]
fn emitted_kernels_match_the_interpreter() {
    let dir = fixture_dir();
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut mods = Vec::new();
    let mut all_cases = Vec::new();
    for (ki, kernel) in kernels().iter().enumerate() {
        let f = lower(kernel.src, kernel.target);
        let dims_of: Vec<HashMap<String, usize>> =
            kernel.cases.iter().map(|c| c.iter().map(|(k, v)| (k.to_string(), *v)).collect()).collect();
        let cases: Vec<Case> = dims_of
            .iter()
            .enumerate()
            .map(|(ci, dims)| interp_case(&f, kernel, dims, format!("k{ki}_{}_c{ci}", f.name)))
            .collect();
        for c in &cases {
            for (name, d, _, is_out, v) in &c.tensors {
                if !is_out {
                    write_if_changed(&data.join(format!("{}_{name}.in", c.name)), &to_bytes(*d, v));
                }
            }
        }
        let module = kernel_module(&f, kernel, &cases, &dims_of);
        write_if_changed(&dir.join(format!("src/k{ki}.rs")), module.as_bytes());
        mods.push(ki);
        all_cases.extend(cases);
    }
    let mut main = FIXTURE_MAIN_HEAD.to_string();
    for k in &mods {
        main += &format!("mod k{k};\n");
    }
    main += "fn main() {\n    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap());\n";
    for k in &mods {
        main += &format!("    k{k}::cases(&dir);\n");
    }
    main += "}\n";
    write_if_changed(&dir.join("src/main.rs"), main.as_bytes());
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tvm-runtime");
    let toml = FIXTURE_TOML.replace("TVM_RUNTIME_PATH", &runtime.canonicalize().unwrap().display().to_string());
    write_if_changed(&dir.join("Cargo.toml"), toml.as_bytes());

    let bin = build_fixture(&dir);
    let out = Command::new(&bin).arg(&data).output().expect("the fixture runs");
    assert!(out.status.success(), "the fixture failed:\n{}", String::from_utf8_lossy(&out.stderr));

    let mut failures = Vec::new();
    for c in &all_cases {
        for (name, d, n, is_out, want) in &c.tensors {
            if !is_out {
                continue;
            }
            let got = from_bytes(*d, &std::fs::read(data.join(format!("{}_{name}.out", c.name))).unwrap());
            assert_eq!(got.len(), *n, "{}: length of `{name}`", c.name);
            let exact = !d.is_float();
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                let ok = if exact { g == w } else { close(*g, *w) };
                if !ok {
                    failures.push(format!("{}: `{name}`[{i}] = {g}, the interpreter says {w}", c.name));
                    break;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    machine_code(&bin);
}

/// The AVX-512 instances of the wide-vector kernels, read back from the fixture's
/// machine code (`objdump`, required under `TVM_REQUIRE_TOOLS=1`): contiguous lanes are
/// plain vector loads and stores, multiply-adds are FMAs, and nothing is gathered or
/// scattered (LLVM once vectorized `opt_gemm`'s row loop across iterations: 72
/// `vgatherqps`, 64 `vscatterqps`).
fn machine_code(bin: &Path) {
    let Ok(out) = Command::new("objdump").args(["-d", "--no-show-raw-insn", "-C"]).arg(bin).output() else {
        assert!(std::env::var("TVM_REQUIRE_TOOLS").as_deref() != Ok("1"), "TVM_REQUIRE_TOOLS=1 but no objdump");
        println!("skipped the machine-code checks: no objdump on PATH");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // Function name -> its instructions.
    let mut funcs: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")).map(|(_, n)| n) {
            funcs.push((name.to_string(), Vec::new()));
        } else if let (Some((_, body)), Some(f)) = (line.split_once(":\t"), funcs.last_mut()) {
            f.1.push(body);
        }
    }
    let code = |kernel: &str| -> Vec<&str> {
        let want = format!("__tvm_cpu_{kernel}::");
        let got: Vec<&str> = funcs
            .iter()
            .filter(|(n, _)| n.contains(&want) && n.ends_with("avx512"))
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        assert!(!got.is_empty(), "no AVX-512 instance of `{kernel}` in the fixture");
        got
    };
    let count = |code: &[&str], pat: &str| code.iter().filter(|i| i.contains(pat)).count();
    for kernel in ["opt_gemm", "stencil", "wide"] {
        let c = code(kernel);
        let (g, sc) = (count(&c, "gather"), count(&c, "scatter"));
        assert_eq!((g, sc), (0, 0), "`{kernel}`: {g} gathers and {sc} scatters in its AVX-512 code");
    }
    let gemm = code("opt_gemm");
    let fma = gemm.iter().filter(|i| i.starts_with("vfmadd") && i.contains("zmm")).count();
    // 32 rows x 4 unrolled k x 2 registers per 32-lane vector, at least once.
    assert!(fma >= 8, "`opt_gemm`: {fma} zmm FMAs");
    let stencil = code("stencil");
    // The four subtractions of the interior, 16 lanes at a time.
    let subs = stencil.iter().filter(|i| i.starts_with("vsubps") && i.contains("zmm")).count();
    assert!(subs >= 4, "`stencil`: {subs} zmm subtractions (the interior is not vector code)");
    let pad = code("pad_conv_fixed");
    // Every read proven in bounds once the border columns are partitioned off and the
    // border rows' test is unswitched out of the row loop (before: three calls to the
    // bounds-check panic, and the taps with a border column left scalar), and the
    // interior of the taps vectorized by LLVM.
    // (The parallel loop's body, `__par0`: the host part around it calls the allocator
    // and rayon.)
    let par: Vec<&str> = funcs
        .iter()
        .filter(|(n, _)| n.contains("__tvm_cpu_pad_conv_fixed::__par") && n.ends_with("avx512"))
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    assert!(!par.is_empty(), "no parallel body of `pad_conv_fixed` in the fixture");
    let calls = count(&par, "call");
    assert_eq!(calls, 0, "`pad_conv_fixed`: {calls} calls (bounds checks) in its AVX-512 loop body");
    let fma = pad.iter().filter(|i| i.starts_with("vfmadd") && i.contains("zmm")).count();
    assert!(fma >= 3, "`pad_conv_fixed`: {fma} zmm FMAs (the padded interior is not vector code)");
    // Each `prefetch` request is prefetch instructions (they compile to nothing if the
    // hint is lost on the way): `y`'s in its parallel loop's body (`__par*`), `c`'s in
    // the serial nest of the function body (`__body`).
    let pf = |part: &str| -> usize {
        funcs
            .iter()
            .filter(|(n, _)| n.contains("__tvm_cpu_pf_rows::") && n.contains(part) && n.ends_with("avx512"))
            .map(|(_, b)| count(b, "prefetcht0"))
            .sum()
    };
    let (par, body) = (pf("__par"), pf("__body"));
    assert!(par >= 1 && body >= 1, "`pf_rows`: {par} prefetches in the parallel loop, {body} in the serial nest");
}

// ---------------------------------------------------------------------------------------
// The emitted code itself.

#[path = "support/rustfmt.rs"]
mod rustfmt;
use rustfmt::pretty;

/// `a * b + c` on floats becomes `mul_add` on the levels with FMA (a constant condition of
/// each level's instance), and stays two operations with `-fp-contract=off`. (The
/// fixture above runs the contracted matmul and conv2d against the interpreter.)
#[test]
fn float_multiply_adds_contract_unless_turned_off() {
    let on = emit_rust(&lower(MATMUL, "cpu")).unwrap().to_string();
    assert!(on.contains("mul_add") && on.contains("matches ! (__LEVEL , 0u8 | 1u8)"), "{on}");
    let avx2_only = emit_rust(&lower(MATMUL, "llvm -mattr=+avx2")).unwrap().to_string();
    assert!(avx2_only.contains("if false {"), "a level without FMA must not contract:\n{avx2_only}");
    let off = emit_rust(&lower(MATMUL, "cpu -fp-contract=off")).unwrap().to_string();
    assert!(!off.contains("mul_add"), "{off}");
}

/// A fused parallel loop's `p / H` and `p % H` under a select (the resize's clamped read)
/// are computed once per iteration, as unsigned divisions that cannot panic (proved
/// `p >= 0`, `H >= 1` there): kept in the select's branches, LLVM leaves a 64-bit
/// division per element in the innermost loop.
/// (The fixture above runs the kernel against the interpreter.)
#[test]
fn a_fused_parallel_loop_divides_once_per_iteration() {
    let code = emit_rust(&lower(RESIZE_ROWS, "cpu")).unwrap().to_string();
    for op in ["/", "%"] {
        let hoisted = format!("i64 = (((h_par as u64) {op} :: core :: num :: NonZeroU64 :: new (H as u64)");
        assert!(code.contains(&hoisted), "no `let` of h_par {op} H:\n{code}");
    }
    assert!(!code.contains("h_par . wrapping_div (H)") && !code.contains("h_par . wrapping_rem (H)"), "{code}");
}

/// The crop's rows inside the image are read as whole vectors: the guard of each vector
/// of rows (`min(..) + y0[n] >= 0 && .. < H - 63`, a condition on an input, which nothing
/// in the function writes) proves every lane in bounds, so the row index keeps no check
/// and the load is one `ramp`, not 64 checked lanes. (The fixture above runs it.)
#[test]
fn a_vector_of_rows_under_its_guard_is_one_load() {
    let f = lower(CROP_ROWS, "cpu");
    let tir = tvm_core::tir::printer::print_func(&f);
    // The load of `q` itself is the ramp, its base the row `y0[n]` starts at.
    let vector_rows = tir.lines().any(|l| {
        l.split("q[ramp(")
            .skip(1)
            .any(|load| load.split(", 1, 64)]").next().is_some_and(|base| base.contains("i64(y0[")))
    });
    assert!(vector_rows, "no vector load of `q`'s rows:\n{tir}");
    assert!(!tir.contains("check_index(ramp("), "a vector of rows is still checked lane by lane:\n{tir}");
    let code = emit_rust(&f).unwrap().to_string();
    assert!(code.contains("fn __par"), "{code}");
}

/// The border tile of a symbolic width is vector code: its accumulators are stored
/// masked (a select of the new value and the element itself), not lane by lane.
#[test]
fn a_border_tile_of_a_symbolic_width_accumulates_in_vectors() {
    let f = lower(CONV_ROWS, "cpu");
    let tir = tvm_core::tir::printer::print_func(&f);
    let masked = tir.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("c[ramp(") && l.contains("= select(ramp(") && l.ends_with("c[ramp(0, 1, 32)])")
    });
    assert!(masked, "no masked vector update of the border tile's accumulators:\n{tir}");
    // No accumulator is updated one lane at a time any more.
    let scalar_update = tir.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("c[j") && l.contains("] = c[j")
    });
    assert!(!scalar_update, "a border tile still accumulates lane by lane:\n{tir}");
    emit_rust(&f).unwrap();
}

/// A parallel loop fused from rows and filter blocks: the window's row test on `y_par / 2`
/// is tested once per iteration, in the full tiles and in the masked ones of a narrow
/// output alike, and the masked tiles' selects stay vector code (`y_par / 2` in their
/// indices is a division that cannot fail), not lane by lane.
#[test]
fn a_fused_row_s_window_test_is_versioned_and_its_masked_tiles_stay_vectors() {
    let f = lower(lowered::CONV_ROWS_FIRST, "cpu");
    let tir = tvm_core::tir::printer::print_func(&f);
    assert!(tir.contains("for y_par in parallel"), "the derived schedule changed:\n{tir}");
    let versioned = tir.lines().filter(|l| l.trim_start().starts_with("if") && l.contains("y_par / 2 < H - 2")).count();
    // The full tiles' path (`ow >= 32`) and the masked tiles' (a vector select's
    // `broadcast(r + y_par / 2 < H)`).
    assert!(versioned >= 2, "the row test is not versioned in both paths:\n{tir}");
    let code = emit_rust(&f).unwrap().to_string();
    assert!(!code.contains("if __c [__l]"), "a select evaluated lane by lane:\n{code}");
    // The masked tiles' reads of `x`, in vectors whose lanes outside `x` read zero.
    assert!(code.contains("ldv_lanes :: < _ , 32 > (x ,"), "no lenient vector load of `x`:\n{code}");
}

/// The window rule's stride-2 taps load their span once and pick every other lane.
#[test]
fn a_pooling_s_taps_load_their_span_once() {
    let f = lower(POOL2, "cpu");
    let tir = tvm_core::tir::printer::print_func(&f);
    assert!(tir.contains(", 2, 16)]"), "no stride-2 vector load:\n{tir}");
    let code = emit_rust(&f).unwrap().to_string();
    assert!(code.contains("ldv_strided") || code.contains("__w [__l * 2"), "{code}");
}

#[test]
fn emission_is_deterministic() {
    for src in [VECTOR_ADD_16, MATMUL, CONV2D] {
        let (f, g) = (lower(src, "cpu"), lower(src, "cpu"));
        assert_eq!(emit_rust(&f).unwrap().to_string(), emit_rust(&g).unwrap().to_string());
    }
}

#[test]
fn parallel_loop_over_interleaved_elements_is_rejected() {
    // Iteration `i2` writes c[o * 4 + i2] for every o: elements 4 apart, not a chunk.
    let src = r#"
        fn copy(a: f32[n]) -> c: f32[n] { c[i] = a[i]; }
        schedule!(cpu) {
            let (o, i2) = c.split(c.i, 4);
            c.reorder(i2, o);
            c.parallel(i2);
        }
    "#;
    let f = lower(src, "cpu");
    match emit_rust(&f) {
        Err(CodegenError::ParallelNotDisjoint { loop_var, buffer, index }) => {
            assert_eq!((loop_var.as_str(), buffer.as_str()), ("i2", "c"), "{index}");
        }
        other => panic!("expected ParallelNotDisjoint, got {other:?}"),
    }
}

#[test]
fn parallel_reduction_is_rejected() {
    // Make the row sum's reduction loop the parallel one: every iteration accumulates
    // into the same element.
    use tvm_core::tir::mutate::{super_stmt, Mutator};
    use tvm_core::tir::{ForKind, Stmt};
    struct Swap;
    impl Mutator for Swap {
        fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
            match super_stmt(self, s) {
                Stmt::For { var, min, extent, kind, body } => {
                    let kind = match kind {
                        ForKind::Parallel => ForKind::Serial,
                        _ if var.name().starts_with('j') => ForKind::Parallel,
                        k => k,
                    };
                    Stmt::For { var, min, extent, kind, body }
                }
                s => s,
            }
        }
    }
    // (An explicit schedule: the default one reduces 16 lanes at a time.)
    let src = "fn row_sum(x: f32[M, N]) -> r: f32[M] { r[i] = sum(x[i, j] for j in 0..N); } schedule!(cpu) { r.parallel(r.i); }";
    let mut f = lower(src, "cpu");
    f.body = Swap.mutate_stmt(f.body);
    let printed = tvm_core::tir::printer::print_func(&f);
    assert!(printed.contains("for j in parallel"), "{printed}");
    match emit_rust(&f) {
        Err(CodegenError::ParallelNotDisjoint { loop_var, buffer, .. }) => {
            assert_eq!((loop_var.as_str(), buffer.as_str()), ("j", "r"));
        }
        other => panic!("expected ParallelNotDisjoint, got {other:?}\n{printed}"),
    }
}

#[test]
fn explicit_target_features_give_one_level() {
    let f = lower(VECTOR_ADD_DEFAULT, "llvm -mattr=+avx2,+fma");
    let code = emit_rust(&f).unwrap().to_string();
    assert!(code.contains("__body_target"), "{code}");
    assert!(code.contains(r#"enable = "avx2,fma""#), "{code}");
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(!code.contains("__body_avx512") && !squeezed.contains("__body::<255"), "{code}");
    assert!(code.contains("this CPU lacks some of avx2, fma"), "{code}");
}

#[test]
fn the_fast_path_bound_fits_the_kernel() {
    // The largest bound on the dims that keeps every proof: index arithmetic of degree
    // one in the dims (vector add), and products a tensor's size bounds (matmul's
    // `i * K`), allow the largest candidate, 2^48 (no tensor has more elements). (Matmul's
    // was 2^24 while a bound that wrapped past `i64` proved false claims at 2^62, which
    // changed the count of proofs there.)
    let bound = |src| {
        let code = emit_rust(&lower(src, "cpu")).unwrap().to_string();
        let at = code.find("let __fast : bool = ").expect("a fast-path condition");
        code[at..].split(';').next().unwrap().trim().to_string()
    };
    assert_eq!(bound(VECTOR_ADD_16), "let __fast : bool = true && n <= 281474976710656i64");
    assert_eq!(
        bound(MATMUL),
        "let __fast : bool = true && M <= 281474976710656i64 && K <= 281474976710656i64 && N <= 281474976710656i64"
    );
    // P-Net's second convolution (`examples/kernels/mtcnn.rs`): its parallel chunks'
    // products of dims overflow `i64` at the larger bounds, so the proofs that hold at
    // 2^16 hold up to 2^24 and no further. The search tries 2^48, then bisects, and each
    // emission stops at its first failed proof; it finds what trying every bound finds.
    let pnet_conv2 = "compute! {
        pub fn pnet_conv2(x: f32[10, H, W], w: f32[16, 10, 3, 3], b: f32[16], alpha: f32[16], oh: usize, ow: usize)
            -> y: f32[16, oh, ow]
        {
            let c[f, i, j]: f32[16, oh, ow] = sum(if i + r < H && j + s < W { x[c, i + r, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..10, r in 0..3, s in 0..3);
            y[f, i, j] = (c[f, i, j] + b[f]).max(0.0) + alpha[f] * (c[f, i, j] + b[f]).min(0.0);
        }
    }";
    assert_eq!(bound(pnet_conv2), "let __fast : bool = true && H <= 16777216i64 && W <= 16777216i64 && oh_1 <= 16777216i64 && ow_1 <= 16777216i64");
}

#[test]
fn unchecked_accesses_are_off_when_asked() {
    let f = lower(VECTOR_ADD_16, "cpu");
    // The control: by default the vector accesses are unchecked, with their proofs.
    let default = emit_rust(&f).unwrap().to_string();
    assert!(default.contains("SAFETY") && default.contains("cpu :: ldv as __ldv"), "{default}");
    let opts = EmitOptions { unchecked: false, ..EmitOptions::default() };
    let code = emit_rust_with(&f, &opts).unwrap().to_string();
    // No proof strings, and none of the unchecked helpers (each takes a proof).
    let unchecked = ["cpu :: ld as", "cpu :: st as", "cpu :: ldv as", "cpu :: stv as", "get_unchecked"];
    assert!(!code.contains("SAFETY") && !unchecked.iter().any(|h| code.contains(h)), "{code}");
}

#[test]
fn fused_axes_are_chunked() {
    // The parallel axis `nc` fuses `n` and `c`: stores at `C*H*W*(nc / C) + H*W*(nc % C)
    // + ...`, which is `H*W*nc + ...`, a chunk of `H*W` elements per iteration.
    let code = pretty(&emit_rust(&lower(MAXPOOL, "cpu")).unwrap());
    assert!(code.contains("__ChunksMut::new(out, ::core::cmp::Ord::max(H.wrapping_mul(W), 1i64) as usize)"), "{code}");
}

#[test]
fn vector_add_golden() {
    let f = lower(VECTOR_ADD_16, "cpu");
    let code = pretty(&emit_rust(&f).unwrap());
    expect![[r##"
        #[allow(
            non_snake_case,
            unused_variables,
            unused_mut,
            unused_parens,
            unused_braces,
            unused_unsafe,
            unused_imports,
            dead_code,
            clippy::all
        )]
        fn __tvm_cpu_vector_add(
            a: &[::core::primitive::f32],
            b: &[::core::primitive::f32],
            c: &mut [::core::primitive::f32],
            n: ::core::primitive::i64,
        ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
            use ::core::primitive::{bool, f32, f64, i16, i32, i64, i8, str, u128, u16, u32, u64, u8, usize};
            use ::tvm::__rt::cpu::lane_loop as __lane_loop;
            use ::tvm::__rt::cpu::ldv as __ldv;
            use ::tvm::__rt::cpu::len_is as __len_is;
            use ::tvm::__rt::cpu::map2 as __map2;
            use ::tvm::__rt::cpu::par_for as __par_for;
            use ::tvm::__rt::cpu::stv as __stv;
            use ::tvm::__rt::cpu::ChunksMut as __ChunksMut;
            if !__len_is(a.len(), &[n]) {
                return ::core::result::Result::Err(::tvm::__rt::cpu_failed(
                    "vector_add",
                    "the length of `a` is not the product of its shape [n]",
                ));
            }
            if !__len_is(b.len(), &[n]) {
                return ::core::result::Result::Err(::tvm::__rt::cpu_failed(
                    "vector_add",
                    "the length of `b` is not the product of its shape [n]",
                ));
            }
            if !__len_is(c.len(), &[n]) {
                return ::core::result::Result::Err(::tvm::__rt::cpu_failed(
                    "vector_add",
                    "the length of `c` is not the product of its shape [n]",
                ));
            }
            #[inline(always)]
            fn __body<const __LEVEL: u8, const __FAST: bool>(
                a: &[f32],
                b: &[f32],
                c: &mut [f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                {
                    let __n: usize = ::core::cmp::Ord::max(n.wrapping_add(15i64).wrapping_div(16i64), 0i64) as usize;
                    let __chunks_c = __ChunksMut::new(c, ::core::cmp::Ord::max(16i64, 1i64) as usize);
                    __par_for(__n, |__k: usize| -> ::core::result::Result<(), ::tvm::__rt::Error> {
                        let c = unsafe { __chunks_c.chunk(__k) };
                        let o: i64 = __k as i64;
                        match __LEVEL {
                            #[cfg(target_arch = "x86_64")]
                            0u8 => unsafe { __par0_avx512::<__FAST>(o, c, a, b, n) },
                            #[cfg(target_arch = "x86_64")]
                            1u8 => unsafe { __par0_avx2::<__FAST>(o, c, a, b, n) },
                            _ => __par0::<__LEVEL, __FAST>(o, c, a, b, n),
                        }
                    })?;
                }
                ::core::result::Result::Ok(())
            }
            #[inline(always)]
            fn __par0<const __LEVEL: u8, const __FAST: bool>(
                o: i64,
                c: &mut [f32],
                a: &[f32],
                b: &[f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                if (o.wrapping_mul(16i64) < n.wrapping_sub(15i64)) {
                    {
                        let __v = {
                            let (__a0, __a1) = (
                                (unsafe {
                                    __ldv::<_, 16, __FAST>(
                                        a,
                                        o.wrapping_mul(16i64),
                                        "SAFETY: 0 <= o * 16 && o * 16 + 16 <= n (proved)",
                                    )
                                }),
                                (unsafe {
                                    __ldv::<_, 16, __FAST>(
                                        b,
                                        o.wrapping_mul(16i64),
                                        "SAFETY: 0 <= o * 16 && o * 16 + 16 <= n (proved)",
                                    )
                                }),
                            );
                            if matches!(__LEVEL, 0u8) {
                                unsafe { ::tvm::__rt::cpu::arith_f32_avx512::<16, 0>(__a0, __a1) }
                            } else {
                                __map2(__a0, __a1, |__x, __y| (__x + __y))
                            }
                        };
                        unsafe {
                            __stv::<_, 16, __FAST>(
                                c,
                                0i64,
                                __v,
                                "SAFETY: 0 <= 0 && 0 + 16 <= 16 && 0 <= 0 && o * 16 + 16 <= n (proved)",
                            )
                        }
                    }
                } else {
                    for v in 0i64..16i64 {
                        if (o.wrapping_mul(16i64).wrapping_add(v) < n) {
                            c[v as usize] = (a[o.wrapping_mul(16i64).wrapping_add(v) as usize]
                                + b[o.wrapping_mul(16i64).wrapping_add(v) as usize]);
                        }
                        __lane_loop();
                    }
                }
                ::core::result::Result::Ok(())
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl")]
            unsafe fn __par0_avx512<const __FAST: bool>(
                o: i64,
                c: &mut [f32],
                a: &[f32],
                b: &[f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                __par0::<0u8, __FAST>(o, c, a, b, n)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn __par0_avx2<const __FAST: bool>(
                o: i64,
                c: &mut [f32],
                a: &[f32],
                b: &[f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                __par0::<1u8, __FAST>(o, c, a, b, n)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl")]
            unsafe fn __body_avx512<const __FAST: bool>(
                a: &[f32],
                b: &[f32],
                c: &mut [f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                __body::<0u8, __FAST>(a, b, c, n)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn __body_avx2<const __FAST: bool>(
                a: &[f32],
                b: &[f32],
                c: &mut [f32],
                n: i64,
            ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
                __body::<1u8, __FAST>(a, b, c, n)
            }
            let __fast: bool = true && n <= 281474976710656i64;
            #[cfg(target_arch = "x86_64")]
            {
                if __fast && ::std::is_x86_feature_detected!("avx512f") && ::std::is_x86_feature_detected!("avx512vl") {
                    unsafe { __body_avx512::<true>(a, b, c, n) }?;
                    return ::core::result::Result::Ok(());
                }
            }
            #[cfg(target_arch = "x86_64")]
            {
                if __fast && ::std::is_x86_feature_detected!("avx2") && ::std::is_x86_feature_detected!("fma") {
                    unsafe { __body_avx2::<true>(a, b, c, n) }?;
                    return ::core::result::Result::Ok(());
                }
            }
            {
                #[cfg(target_arch = "x86_64")]
                let __r = __body::<255, false>(a, b, c, n);
                #[cfg(not(target_arch = "x86_64"))]
                let __r = if __fast { __body::<255, true>(a, b, c, n) } else { __body::<255, false>(a, b, c, n) };
                __r
            }?;
            ::core::result::Result::Ok(())
        }
    "##]]
    .assert_eq(&code);
}

/// A `let` of a stage's block is one subexpression repeated wherever it is used in the
/// TIR; the emitter binds it once before the store (`codegen::rust::cse`). A repeat in a
/// select's branch stays in the branch: it may read where the condition says not to.
#[test]
fn a_repeated_subexpression_is_computed_once() {
    let src = "compute! { pub fn gelu(x: f32[M, N], b: f32[N]) -> y: f32[M, N] {
        y[i, j] = { let v = x[i, j] + b[j]; 0.5 * v * (1.0 + (0.79788 * (v + 0.044715 * v * v * v)).tanh()) };
    } }";
    let f = lower(src, "cpu");
    let code = emit_rust(&f).unwrap().to_string();
    // `v` is five reads of `x` in the TIR: the code reads `x` once for each store of `y`
    // (the vector body, its tails), each read an access helper whose first argument is
    // the slice.
    let tir = tvm_core::tir::printer::print_func(&f);
    assert!(tir.matches("x[").count() >= 5 * tir.matches("y[").count(), "{tir}");
    // Calls `__ld.. :: < .. > (SLICE , ..` or `__st.. :: < .. > (SLICE , ..`.
    let calls = |slice: &str| {
        let mut n = 0;
        for (at, _) in code.match_indices("__ld").chain(code.match_indices("__st")) {
            let rest = &code[at..];
            let name = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let Some(generics) = rest[name..].strip_prefix(" :: <") else { continue };
            let Some(close) = generics.find("> (") else { continue };
            n += usize::from(generics[close + 3..].starts_with(&format!("{slice} ,")));
        }
        n
    };
    let (reads, stores) = (calls("x"), calls("y"));
    assert!(
        stores >= 1 && reads == stores,
        "x read {reads} times for {stores} stores:\n{}",
        pretty(&emit_rust(&f).unwrap())
    );
    assert!(code.contains("let cse0"), "{code}");

    // Under a select, only the condition is shared.
    let src = "compute! { pub fn guarded(x: f32[N], k: i64) -> y: f32[N] {
        y[i] = if i >= k { x[i - k] * x[i - k] + x[i - k] } else { 0.0 };
    } }";
    let f = lower(src, "cpu");
    let code = emit_rust(&f).unwrap().to_string();
    assert!(!code.contains("let cse"), "{}", pretty(&emit_rust(&f).unwrap()));
}
