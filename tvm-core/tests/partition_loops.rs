//! `passes::partition_loops` on sibling loops: the three horizontal taps of a padded 3x3
//! window, unrolled, each sweep the accumulator row; their partitioned interiors are one
//! and the same range (`common_interiors`), so LLVM vectorizes each sweep alike and a
//! vector load of the row is forwarded from the store of the sweep before. The
//! interpreter's results on that TIR equal a plain convolution. (The generated Rust of
//! such kernels is checked against the interpreter in `codegen_rust.rs`.) And the bounds
//! it leaves with a symbolic extent, folded by the simplifier.

#[path = "support/lowered.rs"]
mod lowered;

use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::tir::visit::{walk_stmt, Visitor};
use tvm_core::tir::{ForKind, PrimFunc, Stmt};
use tvm_core::Target;

const PAD_CONV: &str = r#"compute! {
    fn pad_conv(data: f32[4, 10, 40], w: f32[3, 4, 3, 3]) -> out: f32[3, 10, 40] {
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
}"#;

/// The (min, extent) of every serial loop of `s` that has no loop inside and at least
/// `long` iterations.
fn innermost(s: &Stmt, long: i64) -> Vec<(i64, i64)> {
    struct V(i64, Vec<(i64, i64)>);
    impl Visitor for V {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { kind: ForKind::Serial, min, extent, body, .. } = s {
                let inner = lowered::has(body, &|y| matches!(y, Stmt::For { .. }));
                if let (false, Some(m), Some(e)) = (inner, min.as_int(), extent.as_int()) {
                    if e >= self.0 {
                        self.1.push((m, e));
                    }
                }
            }
            walk_stmt(self, s)
        }
    }
    let mut v = V(long, Vec::new());
    v.visit_stmt(s);
    v.1
}

#[test]
fn sibling_taps_share_one_interior() {
    let f: PrimFunc = lowered::lower_for(PAD_CONV, &Target::parse("cpu").unwrap(), false);
    let loops = innermost(&f.body, 30);
    // The three taps' sweeps (and their unswitched `else` copies) over columns 1..39;
    // only the zeroing and the copy out over 0..40.
    let taps: Vec<_> = loops.iter().filter(|l| **l != (0, 40)).collect();
    assert!(taps.len() >= 3, "tap sweeps: {loops:?}\n{}", tvm_core::tir::printer::print_func(&f));
    assert!(taps.iter().all(|l| **l == (1, 38)), "different interiors: {loops:?}");
    assert_eq!(loops.len() - taps.len(), 2, "a tap left whole (0..40): {loops:?}");

    // The interpreter on the partitioned TIR against a plain convolution.
    let (cn, h, wd, fc) = (4usize, 10usize, 40usize, 3usize);
    let data: Vec<f64> = (0..cn * h * wd).map(|k| ((k * 7919 % 97) as f64 - 48.0) / 16.0).collect();
    let wt: Vec<f64> = (0..fc * cn * 9).map(|k| ((k * 131 % 23) as f64 - 11.0) / 8.0).collect();
    let f32 = tvm_core::dtype::DType::F32;
    let mut args = vec![
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![cn, h, wd], &data).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![fc, cn, 3, 3], &wt).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![fc, h, wd], &vec![f64::NAN; fc * h * wd]).unwrap()),
    ];
    run(&f, &mut args).unwrap();
    let got = args[2].as_tensor().unwrap().to_f64_vec();
    for f_ in 0..fc {
        for y in 0..h {
            for x in 0..wd {
                let mut want = 0.0f64;
                for c in 0..cn {
                    for r in 0..3 {
                        for s in 0..3 {
                            let (yy, xx) = (y + r, x + s);
                            if yy >= 1 && yy <= h && xx >= 1 && xx <= wd {
                                want += data[(c * h + yy - 1) * wd + xx - 1] * wt[((f_ * cn + c) * 3 + r) * 3 + s];
                            }
                        }
                    }
                }
                let g = got[(f_ * h + y) * wd + x];
                assert!((g - want).abs() <= 1e-4 * (1.0 + want.abs()), "out[{f_}, {y}, {x}] = {g}, want {want}");
            }
        }
    }
}

/// With a symbolic extent, the bounds loop partitioning leaves fold: the vectorized
/// interior of a reduction over `S` runs `0..S / 16` and its tail from `S / 16`, not
/// `min(S / 16, (S + 15) / 16)` (the simplifier proves the rounded-down quotient the
/// smaller).
#[test]
fn symbolic_bounds_of_partitioned_loops_fold() {
    for src in [
        "compute! { fn rows(x: f32[M, S]) -> y: f32[M] { y[i] = sum(x[i, j] for j in 0..S); } }",
        "compute! { fn softmax(x: f32[M, S]) -> y: f32[M, S] {
            let m[i]: f32[M] = max(x[i, j] for j in 0..S);
            let e[i, j]: f32[M, S] = (x[i, j] - m[i]).exp();
            let s[i]: f32[M] = sum(e[i, j] for j in 0..S);
            y[i, j] = e[i, j] / s[i];
        } }",
    ] {
        let f: PrimFunc = lowered::lower_for(src, &Target::parse("cpu").unwrap(), true);
        let text = tvm_core::tir::printer::print_func(&f);
        let loops: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("for ")).collect();
        assert!(loops.iter().all(|l| !l.contains("min(") && !l.contains("max(")), "unfolded bounds:\n{text}");
        assert!(loops.iter().any(|l| l.contains("serial(0, S / 16)")), "no partitioned interior:\n{text}");
        assert!(loops.iter().any(|l| l.contains("serial(S / 16, ")), "no tail:\n{text}");
    }
}

/// A tiled transpose over symbolic `M x N`: the split of `M` by the tile may not divide,
/// so every element of a tile is guarded by `y_vo * 16 + y_vi < M`. Partitioned, the loop
/// over the tiles runs `0..M / 16` with no such guard and the last tile keeps it; the
/// interpreter's results equal the transpose at sizes below, at and above multiples of
/// the tile (and of no rows at all).
#[test]
fn symbolic_split_tail_is_peeled_off_the_tiles() {
    let src = "compute! { fn transpose(x: f32[M, N]) -> y: f32[N, M] {
        y[j, i] = x[i, j];
    } }";
    let f: PrimFunc = lowered::lower_for(src, &Target::parse("cpu").unwrap(), true);
    let text = tvm_core::tir::printer::print_func(&f);
    let mut main = None;
    let mut tail = None;
    for (k, l) in text.lines().enumerate() {
        if l.contains("serial(0, M / 16)") {
            main = Some(k);
        } else if l.contains("serial(M / 16, ") {
            tail = Some(k);
        }
    }
    let (Some(main), Some(tail)) = (main, tail) else { panic!("no interior and tail over the tiles:\n{text}") };
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[main + 1..tail].iter().all(|l| !l.contains("< M")),
        "a tile of the interior keeps a guard on M:\n{text}"
    );
    assert!(lines[tail..].iter().any(|l| l.contains("< M")), "the tail lost its guard:\n{text}");

    check_transpose(&f, &[(0, 3), (5, 7), (16, 16), (32, 17), (37, 20), (15, 33)]);
}

/// The border after a partitioned interior, where the one test that bounds it is false
/// on every iteration, keeps nothing that test guards. A transpose in tiles of 32 x 32
/// (the derived schedule's before it staged the tiles): the rows of a tile run
/// `0..min(M - y_vo * 32, 32)` with no guard; the rest of the tile's row (from there to
/// 32) would only hold iterations past `M`, so no second copy of the store is left. The
/// interpreter's results equal the transpose at sizes with and without tails.
#[test]
fn a_border_its_only_test_rules_out_is_dropped() {
    let src = "compute! { fn transpose(x: f32[M, N]) -> y: f32[N, M] {
        y[j, i] = x[i, j];
    }
    schedule!(cpu) {
        let (y_uo, y_vo, y_ui, y_vi) = y.tile(y.j, y.i, 32, 32);
        y.parallel(y_uo);
    } }";
    let f = lowered::lower_for(src, &Target::parse("cpu").unwrap(), false);
    let text = tvm_core::tir::printer::print_func(&f);
    let stores = text.lines().filter(|l| l.trim_start().starts_with("y[")).count();
    assert_eq!(stores, 1, "a border past the end kept its copy of the store:\n{text}");
    assert!(text.contains("min(M - y_vo * 32, 32)"), "the rows of a tile are not bounded by M:\n{text}");
    check_transpose(&f, &[(0, 3), (5, 7), (32, 32), (33, 40), (70, 31)]);
}

/// The interpreter's results of the transpose `f` (`y[j, i] = x[i, j]` over `M x N`)
/// equal the transpose at each size `(M, N)`.
fn check_transpose(f: &PrimFunc, sizes: &[(usize, usize)]) {
    let f32 = tvm_core::dtype::DType::F32;
    for &(m, n) in sizes {
        let x: Vec<f64> = (0..m * n).map(|k| (k * 7919 % 997) as f64).collect();
        let mut args = vec![
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![m, n], &x).unwrap()),
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![n, m], &vec![f64::NAN; m * n]).unwrap()),
        ];
        run(f, &mut args).unwrap_or_else(|e| panic!("{m} x {n}: {e:?}"));
        let got = args[1].as_tensor().unwrap().to_f64_vec();
        for i in 0..m {
            for j in 0..n {
                assert_eq!(got[j * m + i], x[i * n + j], "{m} x {n}: y[{j}, {i}]");
            }
        }
    }
}

/// A register tile along a symbolic axis guards each of its rows (`n_uo * 8 + k < N`)
/// inside the tile's reduction; those tests mention only the parallel loop's variable,
/// so the parallel body is versioned on them once (`version_parallel`): the body's first
/// copy of the reduction, the fast path, runs with no test of `N` at all. The interpreter's results equal a plain
/// channels-last convolution at batch sizes below, at and past multiples of the tile.
#[test]
fn a_tile_along_a_symbolic_axis_tests_its_rows_once_per_parallel_iteration() {
    let src = "compute! { fn conv(x: f32[N, 6, 6, 3], w: f32[3, 3, 3, 16]) -> y: f32[N, 4, 4, 16] {
        y[n, i, j, f] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..3, r in 0..3, s in 0..3);
    } }";
    let k = tvm_core::frontend::parse_str(&src[src.find("compute!").unwrap()..]).expect("parses");
    let f = tvm_core::driver::lower(&lowered::derived_schedule(&k, &Target::parse("cpu").unwrap())).expect("lowers");
    let text = tvm_core::tir::printer::print_func(&f);
    let tests_n = |s: &Stmt| {
        lowered::has(
            s,
            &|y| matches!(y, Stmt::If { cond, .. } if tvm_core::tir::printer::print_expr(cond).contains("< N")),
        )
    };
    let mut loops = Vec::new();
    struct Reduction<'a>(&'a mut Vec<bool>, &'a dyn Fn(&Stmt) -> bool);
    impl Visitor for Reduction<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { var, body, .. } = s {
                if var.name() == "c" {
                    self.0.push((self.1)(body));
                }
            }
            walk_stmt(self, s)
        }
    }
    Reduction(&mut loops, &tests_n).visit_stmt(&f.body);
    // The first copy of the reduction is the versioned body's fast path.
    assert!(loops.len() >= 2, "no versioned reduction loops:\n{text}");
    assert!(!loops[0], "the first loop of the reduction tests its rows against N:\n{text}");

    let f32 = tvm_core::dtype::DType::F32;
    for n in [1usize, 7, 8, 9, 17] {
        let x: Vec<f64> = (0..n * 108).map(|k| (k * 7919 % 997) as f64 / 997.0 - 0.5).collect();
        let w: Vec<f64> = (0..432).map(|k| (k * 104729 % 991) as f64 / 991.0 - 0.5).collect();
        let mut args = vec![
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![n, 6, 6, 3], &x).unwrap()),
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![3, 3, 3, 16], &w).unwrap()),
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![n, 4, 4, 16], &vec![f64::NAN; n * 256]).unwrap()),
        ];
        run(&f, &mut args).unwrap_or_else(|e| panic!("N = {n}: {e:?}"));
        let got = args[2].as_tensor().unwrap().to_f64_vec();
        for (o, g) in got.iter().enumerate() {
            let (b, i, j, fi) = (o / 256, o / 64 % 4, o / 16 % 4, o % 16);
            let mut want = 0.0;
            for c in 0..3 {
                for r in 0..3 {
                    for s in 0..3 {
                        want += x[((b * 6 + i + r) * 6 + j + s) * 3 + c] * w[((c * 3 + r) * 3 + s) * 16 + fi];
                    }
                }
            }
            assert!((g - want).abs() <= 1e-4, "N = {n}: y[{b}, {i}, {j}, {fi}] = {g}, not {want}");
        }
    }
}

/// A rows-first convolution without a schedule: the derived parallel loop fuses the rows
/// with the two blocks of filters (`y_par / 2` is the row), and `version_parallel` tests
/// the window's row test once per iteration, in the whole tiles and in the masked ones of
/// a width under 32 (there inside a vector select's condition). With `oh = H` the last
/// rows' window crosses `H`, so the slow copies run too. The interpreter's results on
/// that TIR equal a plain convolution.
#[test]
fn a_fused_parallel_row_s_window_test_keeps_the_convolution_s_values() {
    let k = tvm_core::frontend::parse_str(lowered::CONV_ROWS_FIRST).expect("parses");
    let f = tvm_core::driver::lower(&lowered::derived_schedule(&k, &Target::parse("cpu").unwrap())).expect("lowers");
    let text = tvm_core::tir::printer::print_func(&f);
    let versioned =
        text.lines().filter(|l| l.trim_start().starts_with("if") && l.contains("y_par / 2 < H - 2")).count();
    assert!(versioned >= 2, "the row test is not versioned in both paths:\n{text}");

    let f32 = tvm_core::dtype::DType::F32;
    for (h, wd, oh, ow) in [(8usize, 22usize, 8usize, 20usize), (7, 42, 7, 40), (9, 35, 7, 33), (5, 12, 3, 10)] {
        let x: Vec<f64> = (0..h * 10 * wd).map(|k| (k * 7919 % 997) as f64 / 997.0 - 0.5).collect();
        let w: Vec<f64> = (0..16 * 90).map(|k| (k * 104729 % 991) as f64 / 991.0 - 0.5).collect();
        let mut args = vec![
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![h, 10, wd], &x).unwrap()),
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![16, 10, 3, 3], &w).unwrap()),
            ArgValue::Scalar(ScalarValue::U64(oh as u64)),
            ArgValue::Scalar(ScalarValue::U64(ow as u64)),
            ArgValue::Tensor(HostTensor::from_f64(f32, vec![oh, 16, ow], &vec![f64::NAN; oh * 16 * ow]).unwrap()),
        ];
        run(&f, &mut args).unwrap_or_else(|e| panic!("{h} x {wd}: {e:?}"));
        let got = args[4].as_tensor().unwrap().to_f64_vec();
        for i in 0..oh {
            for fi in 0..16 {
                for j in 0..ow {
                    let mut want = 0.0f64;
                    for c in 0..10 {
                        for r in 0..3 {
                            for s in 0..3 {
                                if i + r < h && j + s < wd {
                                    want += x[((i + r) * 10 + c) * wd + j + s] * w[((fi * 10 + c) * 3 + r) * 3 + s];
                                }
                            }
                        }
                    }
                    let g = got[(i * 16 + fi) * ow + j];
                    assert!(
                        (g - want.max(0.0)).abs() <= 1e-4,
                        "{h} x {wd}: y[{i}, {fi}, {j}] = {g}, not {}",
                        want.max(0.0)
                    );
                }
            }
        }
    }
}
