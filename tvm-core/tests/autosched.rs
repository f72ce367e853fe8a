//! The auto-scheduler as a user meets it: what it derives for kernels without a schedule
//! (the rules' shapes for matmul, conv2d, softmax, row and column sums, transposes, on the
//! CPU and on GPUs), and the schedule source `NAME::schedule(target)` shows, which pasted
//! into the kernel gives the same TIR, for every kernel of the registry on every target.

#[macro_use]
mod common;
use common::lowered::{kernel_tokens_in, without_blocks};
use common::registry::KERNELS;
use tvm_core::driver::{lower_explained, schedule_source};
use tvm_core::frontend::{parse_kernel, parse_str};
use tvm_core::tir::printer::print_func;
use tvm_core::Target;

/// The derived statements for `src` (a kernel without a block) on `target`, checked to
/// apply and lower without falling back.
fn derived(src: &str, target: &str) -> String {
    let k = parse_str(src).unwrap_or_else(|e| panic!("{e:?}"));
    let (sch, _, f) = lower_explained(&k, &Target::parse(target).unwrap(), &mut |_| {});
    let sch = sch.expect("a schedule");
    let d = sch.derived.as_ref().expect("derived statements");
    assert!(d.fallback.is_none(), "fallback: {:?}\n{}", d.fallback, d.text);
    f.unwrap_or_else(|e| panic!("{e:?}"));
    d.text.clone()
}

const MATMUL: &str = "pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
    c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024);
}";
const SOFTMAX: &str = "pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
    let m[i]: f32[M] = max(x[i, j] for j in 0..N);
    let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
    let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
    y[i, j] = e[i, j] * (1.0 / s[i]);
}";
const CONV2D: &str = "pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
    let pad[n, c, y, x]: f32[1, 64, 58, 58] =
        if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
    out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
}";

#[test]
fn a_matmul_gets_a_register_tile_and_a_packed_panel_on_the_cpu() {
    let d = derived(MATMUL, "cpu");
    for want in [
        "let c_l = c.cache_write(local);",
        "let b_p = b.pack(1, 32, [c_l]);",
        "b_p.parallel(b_p_0);",
        "b_p.vectorize(b_p_2);",
        "c.parallel(c_uo);",
        "c_l.compute_at(c, c_uio);",
        "c_l.unroll(c_l_i);",
        "c_l.vectorize(c_l_j);",
    ] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    // 8 rows of 32 lanes (two 16-lane registers: 16 accumulators), blocks of 128 rows.
    assert!(d.contains("c.split(c.i, 128)") && d.contains("c.split(c.j, 32)") && d.contains("c.split(c_ui, 8)"), "{d}");
    // With AVX2's 16 registers of 8 lanes the tile shrinks to 4 rows of 16 lanes, and the
    // panels with it.
    let d = derived(MATMUL, "llvm -mattr=+avx2,+fma");
    assert!(d.contains("c.split(c.j, 16)") && d.contains("c.split(c_ui, 4)"), "{d}");
    assert!(d.contains("let b_p = b.pack(1, 16, [c_l]);"), "{d}");
    // Columns read one further along: a panel of 32 of them is not one of `b`'s packed
    // panels, so each block of rows copies its panel where it reads it.
    let shifted = "pub fn shifted(a: f32[1024, 1024], b: f32[1024, 1025]) -> c: f32[1024, 1024] {
        c[i, j] = sum(a[i, k] * b[k, j + 1] for k in 0..1024);
    }";
    let d = derived(shifted, "cpu");
    assert!(d.contains("let b_l = b.cache_read(local, [c_l]);") && d.contains("b_l.compute_at(c, c_vo);"), "{d}");
    assert!(!d.contains(".pack("), "{d}");
}

#[test]
fn a_tile_across_the_rows_computes_the_convolution() {
    // Rows of 10 columns, 16 filters (one vector), a bias and a ReLU fused into the tile.
    let conv = "pub fn conv(x: f32[2, 3, 12, 12], w: f32[16, 3, 3, 3], b: f32[16]) -> y: f32[2, 16, 10, 10] {
        let c[n, f, i, j]: f32[2, 16, 10, 10] = sum(x[n, k, i + r, j + s] * w[f, k, r, s] for k in 0..3, r in 0..3, s in 0..3);
        y[n, f, i, j] = (c[n, f, i, j] + b[f]).max(0.0);
    }";
    let d = derived(conv, "cpu");
    assert!(d.contains("vectorized across the rows") && d.contains("let w_p = w.pack(0, 16, [c]);"), "{d}");
    assert!(d.contains("y.split(y.j, 10)") && d.contains("y.vectorize(y_vi);"), "{d}");
    let (x, w, b) = (common::rand_vec(2 * 3 * 144, 1), common::rand_vec(16 * 27, 2), common::rand_vec(16, 3));
    let mut want = vec![0f32; 2 * 16 * 100];
    for n in 0..2 {
        for f in 0..16 {
            for i in 0..10 {
                for j in 0..10 {
                    let mut acc = 0f32;
                    for k in 0..3 {
                        for r in 0..3 {
                            for s in 0..3 {
                                acc += x[((n * 3 + k) * 12 + i + r) * 12 + j + s] * w[((f * 3 + k) * 3 + r) * 3 + s];
                            }
                        }
                    }
                    want[((n * 16 + f) * 10 + i) * 10 + j] = (acc + b[f]).max(0.0);
                }
            }
        }
    }
    let inputs = vec![common::t(&[2, 3, 12, 12], &x), common::t(&[16, 3, 3, 3], &w), common::t(&[16], &b)];
    let got = common::run_f32(conv, common::Variant::DerivedCpu, inputs, vec![], &[2, 16, 10, 10]);
    common::assert_close(&got, &want, "a tile across the rows");
}

#[test]
fn a_packed_operand_computes_what_the_original_does() {
    // A batched matmul whose `b` is larger than the L2 (8 KiB here) and shared by two
    // blocks of rows: packed along its last dimension once, its panels and batches in
    // parallel; the columns do not fill the last panel. With the L2 of the target's
    // defaults, `b` fits, and each block copies its panels.
    let bmm = "pub fn bmm(a: f32[3, 37, 19], b: f32[3, 19, 70]) -> c: f32[3, 37, 70] {
        c[q, i, j] = sum(a[q, i, k] * b[q, k, j] for k in 0..19);
    }";
    let small_l2 = "cpu -l2-cache=8K";
    let d = derived(bmm, small_l2);
    assert!(d.contains("let b_p = b.pack(2, 32, [c_l]);") && d.contains("b_p.fuse(b_p_0, b_p_1)"), "{d}");
    let d = derived(bmm, "cpu");
    assert!(d.contains("let b_l = b.cache_read(local, [c_l]);") && !d.contains(".pack("), "{d}");
    let (a, b) = (common::rand_vec(3 * 37 * 19, 1), common::rand_vec(3 * 19 * 70, 2));
    let mut want = vec![0f32; 3 * 37 * 70];
    for q in 0..3 {
        for i in 0..37 {
            for j in 0..70 {
                want[(q * 37 + i) * 70 + j] =
                    (0..19).map(|k| a[(q * 37 + i) * 19 + k] * b[(q * 19 + k) * 70 + j]).sum();
            }
        }
    }
    let k = common::parse(bmm);
    let sch = common::lowered::derived_schedule(&k, &Target::parse(small_l2).unwrap());
    let f = tvm_core::driver::lower(&sch).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(print_func(&f).contains("alloc b_p"), "{}", print_func(&f));
    let mut args = vec![
        common::t(&[3, 37, 19], &a),
        common::t(&[3, 19, 70], &b),
        common::t(&[3, 37, 70], &[f32::NAN; 3 * 37 * 70]),
    ];
    tvm_core::interp::run(&f, &mut args).unwrap_or_else(|e| panic!("{e}"));
    let got = args[2].as_tensor().and_then(|t| t.as_f32()).expect("an f32 output").to_vec();
    common::assert_close(&got, &want, "bmm with b packed");
}

#[test]
fn a_softmax_computes_its_rows_inside_the_parallel_row_loop() {
    let d = derived(SOFTMAX, "cpu");
    for want in ["y.parallel(y.i);", "m.compute_at(y, y.i);", "e.compute_at(y, y.i);", "let s_rf = s.rfactor(s_ki);"] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    // Its rows follow one another in memory: the hardware prefetcher streams them.
    assert!(!d.contains(".prefetch("), "{d}");
    // On a GPU: a block per row, the reductions across its threads, the exponential inlined.
    let d = derived(SOFTMAX, "cuda");
    for want in ["e.compute_inline();", "y.bind(y.i, block.x);", "m.bind(m_ki, thread.x);", "s.bind(s_ki, thread.x);"] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
}

/// A block that only places the reductions (`compute_at`) leaves them to the rules: they
/// stay vectorized partial results (rfactor) inside the row loop, not scalar loops.
#[test]
fn a_partial_block_keeps_the_derived_treatment_of_what_it_does_not_say() {
    let src = format!(
        "{}\nschedule!(cpu) {{ y.parallel(y.i); m.compute_at(y, y.i); s.compute_at(y, y.i); }}",
        SOFTMAX.trim_end()
    );
    let d = derived(&src, "cpu");
    for want in ["m.rfactor(", "s.rfactor(", "vectorize("] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    // What the block said is not said again.
    assert!(!d.contains("y.parallel(") && !d.contains("m.compute_at(y, y.i)"), "{d}");
}

/// A depthwise convolution reads each padded element a few times within one channel (no
/// output axis its read ignores): the padding is inlined on the CPU, its borders left to
/// loop partitioning, where a convolution over channels computes it once. The
/// interpreter's output equals a plain loop over the zero-padded window.
#[test]
fn a_depthwise_conv_inlines_its_padding_on_the_cpu() {
    let src = "pub fn dw(data: f32[1, 32, 20, 20], w: f32[32, 3, 3]) -> out: f32[1, 32, 20, 20] {
        let pad[n, c, y, x]: f32[1, 32, 22, 22] =
            if y >= 1 && y <= 20 && x >= 1 && x <= 20 { data[n, c, y - 1, x - 1] } else { 0.0 };
        out[n, c, y, x] = sum(pad[n, c, y + r, x + s] * w[c, r, s] for r in 0..3, s in 0..3);
    }";
    let d = derived(src, "cpu");
    assert!(d.contains("pad.compute_inline()") && !d.contains("pad.parallel("), "{d}");
    let k = parse_str(src).unwrap();
    let f = tvm_core::driver::lower_for(&k, &Target::parse("cpu").unwrap()).unwrap();
    let (data, w) = (common::rand_vec(32 * 400, 7), common::rand_vec(32 * 9, 3));
    let mut args = vec![
        common::t(&[1, 32, 20, 20], &data),
        common::t(&[32, 3, 3], &w),
        common::t(&[1, 32, 20, 20], &[f32::NAN; 32 * 400]),
    ];
    tvm_core::interp::run(&f, &mut args).unwrap_or_else(|e| panic!("{e}"));
    let got = args[2].as_tensor().and_then(|t| t.as_f32()).expect("an f32 output").to_vec();
    for c in 0..32 {
        for y in 0..20i64 {
            for x in 0..20i64 {
                let mut want = 0.0f64;
                for r in 0..3i64 {
                    for s in 0..3i64 {
                        let (yy, xx) = (y + r - 1, x + s - 1);
                        if (0..20).contains(&yy) && (0..20).contains(&xx) {
                            want +=
                                data[c * 400 + (yy * 20 + xx) as usize] as f64 * w[c * 9 + (r * 3 + s) as usize] as f64;
                        }
                    }
                }
                let v = got[c * 400 + (y * 20 + x) as usize] as f64;
                assert!((v - want).abs() <= 1e-4 * (1.0 + want.abs()), "out[{c}, {y}, {x}] = {v}, want {want}");
            }
        }
    }
}

#[test]
fn a_conv2d_pads_once_and_vectorizes_across_rows_that_are_not_whole_vectors() {
    let d = derived(CONV2D, "cpu");
    // The padding is computed once (not inlined: its test would split the vector rows).
    assert!(!d.contains("pad.compute_inline()") && d.contains("pad.parallel("), "{d}");
    // Its rows of 58 are short: not in vectors (the border would fall inside two of its
    // four), but cut at the border, the 56 columns between a plain copy loop.
    assert!(!d.contains("pad.vectorize("), "{d}");
    let k = common::parse(CONV2D);
    let f = tvm_core::driver::lower(&common::lowered::derived_schedule(&k, &Target::cpu())).unwrap();
    let text = print_func(&f);
    assert!(text.contains("pad[y * 58 + x + pad_par * 3364] = data[y * 56 + x + pad_par * 3136 - 57]"), "{text}");
    // A padded row of 1026 keeps its vectors: two of 65 hold the border.
    let long =
        CONV2D.replace("56", "1024").replace("58", "1026").replace("64, 64, 3, 3", "4, 4, 3, 3").replace("64", "4");
    let long = derived(&long, "cpu");
    assert!(long.contains("pad.vectorize("), "{long}");
    // A short row whose values cost a call each stays in vectors, border and all.
    let costly = CONV2D.replace("data[n, c, y - 1, x - 1]", "exp(data[n, c, y - 1, x - 1])");
    let costly = derived(&costly, "cpu");
    assert!(costly.contains("pad.vectorize("), "{costly}");
    // Rows of 56 are three and a half vectors; 64 filters are four: the filters are the
    // vector axis, 14 columns the tile's rows, the weights packed by panels of 16 filters.
    for want in [
        "let w_p = w.pack(0, 16, [out_l]);",
        "out.split(out.f, 16)",
        "out.split(out.x, 14)",
        "out.vectorize(out_vi);",
        "out_l.unroll(out_l_x);",
        "out_l.vectorize(out_l_f);",
    ] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    // The accumulators, in the output's order filters before columns, are stored
    // transposed: every vector access of them is contiguous.
    assert!(text.contains("out_local[ramp(") && !text.contains(", 14, 16)]"), "{text}");
    assert!(text.contains("out_local[ramp(208, 1, 16)]"), "{text}");
    // Rows of whole vectors keep them as the vector axis.
    let wide = "pub fn wide(data: f32[1, 16, 34, 34], w: f32[32, 16, 3, 3]) -> out: f32[1, 32, 32, 32] {
        out[n, f, y, x] = sum(data[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..16, r in 0..3, s in 0..3);
    }";
    let d = derived(wide, "cpu");
    assert!(d.contains("out.vectorize(out.x)") && !d.contains(".pack("), "{d}");
    // Not across the rows: the weights read twice (once at filter 0, which the filters do
    // not change: packing would rewrite both reads alike), or a symbolic axis between the
    // filters and the columns (the output's vectors would step by an unknown stride).
    let twice = "pub fn twice(inp: f32[8, 56, 56], w: f32[64, 8, 3, 3]) -> out: f32[64, 54, 54] {
        out[f, y, x] = sum(w[0, c, r, s] * inp[c, y + r, x + s] * w[f, c, r, s] for c in 0..8, r in 0..3, s in 0..3);
    }";
    let symbolic = "pub fn symbolic(inp: f32[8, H, 56], w: f32[64, 8, 3]) -> out: f32[64, H, 54] {
        out[f, y, x] = sum(inp[c, y, x + s] * w[f, c, s] for c in 0..8, s in 0..3);
    }";
    for (src, target) in [(twice, "llvm -mattr=+avx2,+fma"), (twice, "cpu"), (symbolic, "cpu")] {
        let d = derived(src, target);
        assert!(!d.contains("vectorized across the rows") && !d.contains("w.pack("), "{target}: {d}");
    }
    let d = derived(CONV2D, "cuda");
    assert!(d.contains("cache_read(shared") && d.contains("bind(out_bz, block.z)"), "{d}");
}

#[test]
fn a_gpu_block_is_no_larger_than_the_axes_it_tiles() {
    // 48 filters over rows of 9 outputs (R-Net's second convolution): a block of 48 x 32
    // outputs (12 x 8 threads of 4 x 4), not 64 x 64 (256 threads, 36 of them in range),
    // and the operands' copies spread over those 96 threads (8 along x, rows of 12).
    let conv = "pub fn conv(x: f32[N, 28, 11, 11], w: f32[48, 28, 3, 3]) -> c: f32[N, 48, 9, 9] {
        c[n, f, i, j] = sum(x[n, k, i + r, j + s] * w[f, k, r, s] for k in 0..28, r in 0..3, s in 0..3);
    }";
    for target in ["cuda", "opencl"] {
        let d = derived(conv, target);
        assert!(d.contains("blocks of 48 x 32 outputs, 96 threads of 4 x 4"), "{target}: {d}");
        assert!(d.contains("c.split(c.f, 48)") && d.contains("c.split(c.j, 32)"), "{target}: {d}");
        // 12 x 8 threads: the compute's split into threads and the copies' are one knob each.
        assert!(d.contains("c.split_nparts(c_ii, 12)") && d.contains("c.split_nparts(c_jj, 8)"), "{target}: {d}");
        assert!(d.contains("x_s.split(x_s_f, 8)") && d.contains("x_s.split(x_s_r, 12)"), "{target}: {d}");
    }
    // A large matmul keeps the full block.
    let d = derived(MATMUL, "cuda");
    assert!(d.contains("blocks of 64 x 64 outputs, 256 threads"), "{d}");
}

#[test]
fn a_gpu_block_stages_no_more_than_the_shared_memory_holds() {
    // A channels-last convolution (O-Net's third): per slice of 8 channels, the block's
    // input region is its rows of crops times the 3 x 3 window, nine times what the
    // rows alone take. 64 x 64 outputs stage 9 x 8 x (64 + 64) floats, 36 KiB: under
    // CUDA's 48 KiB, over OpenCL's 32 KiB (the block halves its rows) and WebGPU's
    // 16 KiB (down to 8 rows). Each lowers (`derived` checks it) within its limit.
    let conv = "pub fn conv(x: f32[N, 10, 10, 64], w: f32[64, 3, 3, 64]) -> c: f32[N, 8, 8, 64] {
        c[n, i, j, f] = sum(x[n, i + r, j + s, k] * w[k, r, s, f] for k in 0..64, r in 0..3, s in 0..3);
    }";
    for (target, block) in [("cuda", "64 x 64"), ("opencl", "32 x 64"), ("webgpu", "8 x 32")] {
        let d = derived(conv, target);
        assert!(d.contains(&format!("blocks of {block} outputs")), "{target}: {d}");
    }
}

#[test]
fn a_gather_reduction_fuses_its_leading_axes_for_the_parallel_loop() {
    // An area resize's row pass: three channels alone would leave one of two cores idle
    // a third of the time; the channels and rows together give every core tasks.
    let d = derived(
        "pub fn resize_rows(img: u8[H, W, 3], xs: i32[OW, L], wx: f32[OW, L]) -> h: f32[3, H, OW] {
            let ie = repeat_edge(img);
            h[c, r, j] = sum(wx[j, b] * (ie[r, xs[j, b] as i64, c] as f32) for b in 0..L);
        }",
        "cpu",
    );
    assert!(d.contains("let h_par = h.fuse(h.c, h.r);") && d.contains("h.parallel(h_par);"), "{d}");
    // A reduction that reads no index from memory keeps the other rules' treatment.
    let d = derived(SOFTMAX, "cpu");
    assert!(!d.contains("each output reduced in place"), "{d}");
}

#[test]
fn a_prime_row_count_gets_a_full_register_tile_with_a_tail() {
    // 127 rows have no divisor between 2 and 8: a tile of one row (2 accumulators) would
    // leave the FMA units waiting on each other; 8 rows and a tail of 7 do not.
    let d = derived(
        "pub fn mm(a: f32[127, 127], b: f32[127, 127]) -> c: f32[127, 127] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..127); }",
        "cpu",
    );
    assert!(d.contains("register tile of 8 x i by 32 `j` lanes (16 accumulators"), "{d}");
    // A row count with a fair divisor keeps it: 10 rows in tiles of 5.
    let d = derived(
        "pub fn mm(a: f32[10, 64], b: f32[64, 256]) -> c: f32[10, 256] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64); }",
        "cpu",
    );
    assert!(d.contains("register tile of 5 x i"), "{d}");
}

#[test]
fn an_expensive_stage_broadcast_over_rows_is_computed_once() {
    // `rstd[j]` (a square root and a division) read by every row of `y[i, j]`: inlined,
    // each row would recompute it.
    let d = derived(
        "pub fn col_std(x: f32[R, C]) -> y: f32[R, C] {
            let s[j]: f32[C] = sum(x[k, j] for k in 0..R);
            let mean[j]: f32[C] = s[j] / R as f32;
            let v[j]: f32[C] = sum((x[k, j] - mean[j]) * (x[k, j] - mean[j]) for k in 0..R);
            let rstd[j]: f32[C] = 1.0 / (v[j] / R as f32).sqrt();
            y[i, j] = (x[i, j] - mean[j]) * rstd[j];
        }",
        "cpu",
    );
    assert!(!d.contains("rstd.compute_inline()") && d.contains("rstd.vectorize("), "{d}");
    // Read along the inner axis only (`r[i]` in `y[i, j]`), LLVM hoists it: inlined.
    let d = derived(
        "pub fn row_scale(x: f32[R, C]) -> y: f32[R, C] {
            let s[i]: f32[R] = sum(x[i, k] for k in 0..C);
            let r[i]: f32[R] = 1.0 / s[i].sqrt();
            y[i, j] = x[i, j] * r[i];
        }",
        "cpu",
    );
    assert!(d.contains("r.compute_inline()"), "{d}");
}

#[test]
fn a_stencil_through_a_boundary_view_takes_one_vector_blocks_and_unrolls_its_window() {
    // Blocks of 64 lanes of a 128-wide row all reach past an edge, and each then takes
    // the clamped reads; blocks of 16 leave 6 of 8 in the interior.
    let d = derived(
        "pub fn dw(x: f32[C, H, W], w: f32[C, 3, 3]) -> y: f32[C, H, W] {
            let xe = repeat_edge(x);
            y[c, i, j] = sum(xe[c, i + r - 1, j + t - 1] * w[c, r, t] for r in 0..3, t in 0..3);
        }",
        "cpu",
    );
    assert!(
        d.contains("y.split(y.j, 16)") && d.contains("y_l.unroll(y_l.r)") && d.contains("y_l.unroll(y_l.t)"),
        "{d}"
    );
}

/// P-Net's third convolution: no batch, 32 filters, so the filter blocks are the
/// parallel loop's only tasks.
const CONV_FEW_FILTERS: &str = "pub fn conv(x: f32[16, H, W], w: f32[32, 16, 3, 3], oh: usize, ow: usize) -> y: f32[32, oh, ow] {
    y[f, i, j] = sum(if i + r < H && j + s < W { x[c, i + r, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..16, r in 0..3, s in 0..3);
}";

#[test]
fn a_conv_with_few_filters_keeps_tall_register_tiles_while_every_core_has_a_block() {
    // Four blocks of 8 filters give each of 4 cores one: the tile keeps 8 rows (16
    // accumulators), loading each vector of `x` once for 8 filters.
    let d = derived(CONV_FEW_FILTERS, "cpu");
    assert!(d.contains("y.split(y.f, 8)") && d.contains("y_l.compute_at(y, y.i)"), "{d}");
    // With 16 cores, tiles of 4 filters (the fewest rows that still hide the FMA
    // latency) make 8 blocks.
    let d = derived(CONV_FEW_FILTERS, "llvm -num-cores=16");
    assert!(d.contains("y.split(y.f, 4)"), "{d}");
    // P-Net's second convolution, 16 filters: two blocks of 8 for the default 4 cores (a
    // tile of 4 rows does half the FMAs per load and broadcast, and doubling the tasks
    // for two more cores would not pay for it); with 8 cores, four blocks of 4.
    let sixteen =
        CONV_FEW_FILTERS.replace("f32[32, 16, 3, 3]", "f32[16, 16, 3, 3]").replace("f32[32, oh", "f32[16, oh");
    let d = derived(&sixteen, "cpu");
    assert!(d.contains("y.split(y.f, 8)") && d.contains("register tile of 8 x f"), "{d}");
    let d = derived(&sixteen, "cpu -num-cores=8");
    assert!(d.contains("y.split(y.f, 4)"), "{d}");
}

#[test]
fn reductions_along_either_axis_and_transposes() {
    let rows = derived("pub fn rowsum(x: f32[M, N]) -> y: f32[M] { y[i] = sum(x[i, k] for k in 0..N); }", "cpu");
    assert!(rows.contains("y.rfactor(") && rows.contains("y.parallel("), "{rows}");
    let cols = derived("pub fn colsum(x: f32[M, N]) -> y: f32[N] { y[j] = sum(x[k, j] for k in 0..M); }", "cpu");
    assert!(cols.contains("y.cache_write(local)") && cols.contains("y_l.vectorize(y_l_j)"), "{cols}");
    let t = derived("pub fn transpose(x: f32[M, N]) -> y: f32[N, M] { y[i, j] = x[j, i]; }", "cpu");
    // Tiles of 8 rows of `x` (rows 2^k floats apart share an L1 set of 8 ways) by 32
    // bytes, `x`'s part staged through a local tile by vector loads; the rows not unrolled
    // (each unrolled row would cost the macro a bounds proof).
    assert!(t.contains("y.tile(y.i, y.j, 8, 8)") && !t.contains("unroll"), "{t}");
    assert!(t.contains("let x_l = x.cache_read(local, [y]);") && t.contains("x_l.compute_at(y, y_vo);"), "{t}");
    assert!(t.contains("x_l.vectorize(x_l_1);"), "{t}");
    // A read that is also guarded, or of two elements, is not staged: the old tiles.
    let t = derived("pub fn tsum(x: f32[M, N]) -> y: f32[N, M] { y[i, j] = x[j, i] + x[j, i] * 2.0; }", "cpu");
    assert!(!t.contains("cache_read"), "{t}");
    // Bytes: 32 of them a tile row, still 8 rows.
    let t = derived("pub fn t8(x: u8[M, N]) -> y: u8[N, M] { y[i, j] = x[j, i]; }", "cpu");
    assert!(t.contains("y.tile(y.i, y.j, 32, 8)") && t.contains("cache_read"), "{t}");
}

/// An interleaved image read as planes (`q[c, j, i] = img[i, j, c]`): the tiles run
/// along the columns, whose read steps by three, not along the three channels (a tile
/// side of three); with too few channels for the cores the tile rows take the channels
/// in, one fused axis in parallel.
#[test]
fn an_image_read_as_planes_is_tiled_along_its_columns_in_parallel() {
    let d = derived("pub fn planes(img: u8[H, W, 3]) -> q: u8[3, W, H] { q[c, j, i] = img[i, j, c]; }", "cpu");
    assert!(d.contains("let q_rows = q.fuse(q.c, q.j);"), "{d}");
    assert!(d.contains("q.tile(q_rows, q.i, 128, 128)") && d.contains("q.parallel(q_uo);"), "{d}");
    // With a vector's worth of channels (64 bytes), the channels are the tile's rows:
    // the read is contiguous along them, so 32 of them from 8 pixels are staged.
    let d = derived("pub fn planes(img: u8[H, W, 64]) -> q: u8[64, W, H] { q[c, j, i] = img[i, j, c]; }", "cpu");
    assert!(d.contains("q.tile(q.c, q.i, 32, 8)") && !d.contains("q_rows"), "{d}");
    assert!(d.contains("let img_l = img.cache_read(local, [q]);") && d.contains("img_l.vectorize(img_l_2);"), "{d}");
}

/// A pooling (a reduction over a small window whose reads advance two elements per
/// output): its rows in parallel, its last axis in vectors, the window's taps unrolled
/// around each vector in a local accumulator. A window reduction along a strided axis of
/// stride 8 is not one (its vector loads would span too much).
#[test]
fn a_pooling_is_vectorized_along_its_rows_with_its_taps_unrolled() {
    let d = derived(
        "pub fn pool(x: f32[4, 32, 64]) -> y: f32[4, 16, 32] { \
            y[c, i, j] = max(x[c, i * 2 + p, j * 2 + q] for p in 0..2, q in 0..2); }",
        "cpu",
    );
    assert!(d.contains("let y_l = y.cache_write(local);"), "{d}");
    assert!(d.contains("y.vectorize(y_vi);") && d.contains("y_l.reorder(y_l.p, y_l.q, y_l_j);"), "{d}");
    assert!(d.contains("y_l.unroll(y_l.p);") && d.contains("y_l.unroll(y_l.q);"), "{d}");
    let far = parse_str(
        "pub fn pool(x: f32[4, 64, 256]) -> y: f32[4, 8, 32] { \
            y[c, i, j] = max(x[c, i * 8 + p, j * 8 + q] for p in 0..2, q in 0..2); }",
    )
    .unwrap();
    let (sch, _, f) = lower_explained(&far, &Target::cpu(), &mut |_| {});
    f.unwrap();
    let far = sch.and_then(|s| s.derived).map(|d| d.text).unwrap_or_default();
    assert!(!far.contains("y_l"), "{far}");
}

/// A read made only where a boundary or a wrap's condition fails (the `else` of the
/// select a boundary view or a `%` roll becomes) does not keep the axis scalar: loop
/// partitioning leaves the interior to the contiguous branch.
#[test]
fn border_reads_leave_the_interior_in_vectors() {
    let stencil = derived(
        "pub fn diff(x: f32[M, N]) -> y: f32[M, N] { let xe = repeat_edge(x); y[i, j] = x[i, j] - xe[i, j - 1]; }",
        "cpu",
    );
    assert!(stencil.contains("y.vectorize("), "{stencil}");
    let roll = derived("pub fn roll(x: f32[N], k: i64) -> y: f32[N] { y[i] = x[((i - k) % N + N) % N]; }", "cpu");
    assert!(roll.contains("y.vectorize("), "{roll}");
    // A read that is strided everywhere still keeps the axis scalar.
    let gather = derived("pub fn g(x: f32[M, N]) -> y: f32[N, M] { y[i, j] = x[j, i] * 2.0; }", "cpu");
    assert!(!gather.contains("vectorize(y.i)") && !gather.contains("vectorize(y.j)"), "{gather}");
}

/// Every kernel of the registry on every target: its schedule as source, pasted into the
/// kernel in place of its blocks, lowers to the same TIR.
#[test]
fn pasted_schedules_lower_to_the_same_tir() {
    let mut checked = 0;
    for k in KERNELS {
        let tokens = kernel_tokens_in(k.text, k.function, k.instance);
        let kernel = parse_kernel(tokens.clone()).unwrap_or_else(|e| panic!("{}: {e:?}", k.label()));
        for target in [Target::cpu(), Target::cuda(), Target::opencl()] {
            let what = format!("{} on {}", k.label(), target.kind.name());
            let (sch, source, f) = lower_explained(&kernel, &target, &mut |_| {});
            let (Some(sch), Ok(f)) = (sch, f) else { panic!("{what}: does not lower") };
            let text = schedule_source(&kernel.schedules, &target, &sch, &source);
            let mut pasted = without_blocks(tokens.clone());
            pasted.extend(text.parse::<proc_macro2::TokenStream>().unwrap_or_else(|e| panic!("{what}: {e}\n{text}")));
            let again = parse_kernel(pasted).unwrap_or_else(|e| panic!("{what}: the pasted kernel: {e:?}\n{text}"));
            let (_, _, f2) = lower_explained(&again, &target, &mut |_| {});
            let f2 = f2.unwrap_or_else(|e| panic!("{what}: the pasted schedule does not lower: {e:?}\n{text}"));
            assert_eq!(print_func(&f), print_func(&f2), "{what}: the pasted schedule\n{text}");
            checked += 1;
        }
    }
    assert!(checked >= 3 * 27, "{checked}");
}

/// A dense layer with its weights stored `[out, in]` reduces along contiguous elements
/// of both operands, each reused along the other's axis: the derived schedule cuts the
/// outputs into blocks (the block's rows of `w` stay in L1 while the rows of `x` go by)
/// sized by the target's caches, and still computes the layer: the interpreter's output
/// equals a plain triple loop. Two rows (little reuse of `w`) keep the plain rows.
#[test]
fn a_dense_layer_with_transposed_weights_is_blocked_for_the_caches() {
    use tvm_core::interp::{run, ArgValue, HostTensor};
    let src = "pub fn dense(x: f32[40, 64], w: f32[24, 64]) -> d: f32[40, 24] {
        d[i, j] = sum(x[i, k] * w[j, k] for k in 0..64);
    }";
    // Rows of 256 bytes: 4 of `w` fill the 1 KB L1, 16 of `x` half the 8 KB L2, halved
    // to 8 so that the 40 rows make a few tasks for each core.
    let target = "cpu -l1-cache=1K -l2-cache=8K";
    let d = derived(src, target);
    assert!(d.contains("blocks of 8 x 4 outputs"), "{d}");
    assert!(d.contains("d.reorder(d_io, d_jo, d_ii, d_jj)") && d.contains("d.parallel(d_io)"), "{d}");
    let k = parse_str(src).unwrap();
    let f = tvm_core::driver::lower_for(&k, &Target::parse(target).unwrap()).unwrap();
    let x: Vec<f32> = (0..40 * 64).map(|i| ((i * 37) % 23) as f32 / 23.0 - 0.5).collect();
    let w: Vec<f32> = (0..24 * 64).map(|i| ((i * 11) % 19) as f32 / 19.0 - 0.5).collect();
    let mut args = vec![
        ArgValue::Tensor(HostTensor::f32(vec![40, 64], x.clone())),
        ArgValue::Tensor(HostTensor::f32(vec![24, 64], w.clone())),
        ArgValue::Tensor(HostTensor::f32(vec![40, 24], vec![f32::NAN; 40 * 24])),
    ];
    run(&f, &mut args).unwrap();
    let got = args[2].as_tensor().unwrap().to_f64_vec();
    for i in 0..40 {
        for j in 0..24 {
            let want: f64 = (0..64).map(|k| x[i * 64 + k] as f64 * w[j * 64 + k] as f64).sum();
            assert!(
                (got[i * 24 + j] - want).abs() <= 1e-4 * want.abs().max(1.0),
                "d[{i}, {j}]: {} against {want}",
                got[i * 24 + j]
            );
        }
    }
    let one = derived(
        "pub fn gemv(x: f32[2, 64], w: f32[24, 64]) -> d: f32[2, 24] {
        d[i, j] = sum(x[i, k] * w[j, k] for k in 0..64); }",
        target,
    );
    assert!(!one.contains("blocks of"), "{one}");
}

/// A channels-last convolution over a batch of unknown size (crops): the register tile's
/// rows are a crop's columns, not the batch, so the parallel loop has a task per crop
/// and row whatever the batch; tiled by 8 crops, a batch of 16 gave the two cores one
/// block each and a batch of 3 gave one core everything.
#[test]
fn a_channels_last_conv_over_an_unknown_batch_tiles_its_columns() {
    let src = "pub fn conv(x: f32[N, 23, 23, 32], w: f32[32, 3, 3, 64]) -> c: f32[N, 21, 21, 64] {
        c[n, i, j, f] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..32, r in 0..3, s in 0..3);
    }";
    let d = derived(src, "cpu");
    assert!(d.contains("c.split(c.j, ") && d.contains("c.fuse(c.n, c.i, c_uo)"), "{d}");
    // Nine columns would tile as 8 and 1: the batch is the tile's rows.
    let nine = "pub fn conv(x: f32[N, 11, 11, 28], w: f32[28, 3, 3, 48]) -> c: f32[N, 9, 9, 48] {
        c[n, i, j, f] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..28, r in 0..3, s in 0..3);
    }";
    let d = derived(nine, "cpu");
    assert!(d.contains("c.split(c.n, "), "{d}");
    // With a known batch longer than the columns, the batch is the tile's rows.
    let d =
        derived(&src.replace("f32[N, 23, 23, 32]", "f32[64, 23, 23, 32]").replace("f32[N, 21", "f32[64, 21"), "cpu");
    assert!(d.contains("c.split(c.n, "), "{d}");
}

/// A target whose FMA units and latency ask for one row of accumulators, with more cores
/// than the 4 rows of a matmul give tasks: the register tile shrinks to one row and the
/// derivation ends there (it looped forever once the tile was one row).
#[test]
fn a_tile_shrunk_to_one_row_for_the_cores_stops_there() {
    let src = "pub fn mm(a: f32[4, 64], b: f32[64, 64]) -> c: f32[4, 64] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
    }";
    let d = derived(src, "cpu -num-cores=8 -fma-units=1 -fma-latency=2");
    assert!(d.contains("register tile of 1 x i"), "{d}");
}
