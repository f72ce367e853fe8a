//! `passes::fuse_loops`: the softmax example's exponentials and their sum (as wide as the
//! exponentials) run in one loop (each vector summed as it is stored), and the interpreter's results on the fused TIR
//! equal a plain softmax, tails included. Loops whose second reads outside the slice the
//! same iteration of the first wrote stay apart. (The generated Rust of the softmax is
//! checked against the interpreter in `codegen_rust.rs`.)

#[path = "support/lowered.rs"]
mod lowered;

use lowered::has;
use tvm_core::interp::{run, ArgValue, HostTensor};
use tvm_core::tir::{ForKind, PrimFunc, Stmt};
use tvm_core::Target;

fn lower(src: &str) -> PrimFunc {
    let src = if src.contains("compute!") { src.to_string() } else { format!("compute! {{ {src} }}") };
    lowered::lower_for(&src, &Target::parse("cpu").unwrap(), false)
}

/// The names of the buffers stored to by the statements of `s` outside any inner loop.
fn stored_here(s: &Stmt, out: &mut Vec<String>) {
    match s {
        Stmt::Store { buffer, .. } => out.push(buffer.name().to_string()),
        Stmt::Seq(v) => v.iter().for_each(|s| stored_here(s, out)),
        Stmt::Let { body, .. } | Stmt::Allocate { body, .. } => stored_here(body, out),
        Stmt::If { then, otherwise, .. } => {
            stored_here(then, out);
            if let Some(o) = otherwise {
                stored_here(o, out);
            }
        }
        _ => {}
    }
}

/// Whether a serial loop of `f` stores, directly in its body, to every buffer of `names`.
fn one_loop_stores(f: &PrimFunc, names: &[&str]) -> bool {
    has(&f.body, &|s| match s {
        Stmt::For { kind: ForKind::Serial, body, .. } => {
            let mut got = Vec::new();
            stored_here(body, &mut got);
            names.iter().all(|n| got.iter().any(|g| g == n))
        }
        _ => false,
    })
}

/// `f` run by the interpreter on `x` (M x N), its output `y` (M x N).
fn interpret(f: &PrimFunc, x: &[f64], m: usize, n: usize) -> Vec<f64> {
    let f32 = tvm_core::dtype::DType::F32;
    let mut args = vec![
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![m, n], x).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![m, n], &vec![f64::NAN; m * n]).unwrap()),
    ];
    run(f, &mut args).unwrap();
    args[1].as_tensor().unwrap().to_f64_vec()
}

fn input(m: usize, n: usize) -> Vec<f64> {
    (0..m * n).map(|k| (((k * 7919 + 13) % 200) as f64 / 20.0 - 5.0) as f32 as f64).collect()
}

#[test]
fn the_softmax_sums_its_exponentials_as_it_stores_them_and_the_results_hold() {
    // The example's schedule with the sum's vectors as wide as the exponentials' (its
    // `ws` knob at 32, as `w`): the two loops then have the same range.
    let src = include_str!("../../examples/kernels/softmax.rs");
    let (w, ws) = ("tune!(w: 32,", "tune!(ws: 64,");
    assert!(src.contains(w) && src.contains(ws), "the example's knobs changed");
    let f = lower(&src.replace(ws, "tune!(ws: 32,"));
    assert!(one_loop_stores(&f, &["y", "s_rf"]), "no loop stores both the exponentials and the partial sums");
    // N = 100: a vector tail; 5: a row shorter than a vector; 64: whole vectors; 1.
    for (m, n) in [(3usize, 100usize), (4, 5), (2, 64), (1, 1)] {
        let x = input(m, n);
        let got = interpret(&f, &x, m, n);
        for i in 0..m {
            let row = &x[i * n..][..n];
            let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
            for j in 0..n {
                let (g, w) = (got[i * n + j], (row[j] - mx).exp() / s);
                assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "M={m} N={n} y[{i}, {j}] = {g}, want {w}");
            }
        }
    }
}

#[test]
fn a_second_loop_that_reads_another_iterations_slice_is_not_fused() {
    // `y` reads `e` mirrored: iteration `j` of its loop needs `e[i, N-1-j]`, which the
    // loop of `e` writes at another iteration. The two loops have the same range.
    let f = lower(
        "pub fn mirror(x: f32[M, N]) -> y: f32[M, N] {
            let e[i, j]: f32[M, N] = x[i, j] * 2.0;
            y[i, j] = e[i, j] + e[i, N - 1 - j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            e.compute_at(y, y.i);
        }",
    );
    assert!(!one_loop_stores(&f, &["e", "y"]), "the mirrored read was fused");
    let (m, n) = (3, 7);
    let x = input(m, n);
    let got = interpret(&f, &x, m, n);
    for i in 0..m {
        for j in 0..n {
            let w = 2.0 * x[i * n + j] + 2.0 * x[i * n + n - 1 - j];
            assert!((got[i * n + j] - w).abs() <= 1e-5, "y[{i}, {j}] = {}, want {w}", got[i * n + j]);
        }
    }
}

#[test]
fn a_same_element_consumer_fuses_and_computes_the_same() {
    // The control of the test above: `y` reads `e` at its own element.
    let f = lower(
        "pub fn twice(x: f32[M, N]) -> y: f32[M, N] {
            let e[i, j]: f32[M, N] = x[i, j] * 2.0;
            let t[i, j]: f32[M, N] = e[i, j] + 1.0;
            y[i, j] = t[i, j] * e[i, j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            e.compute_at(y, y.i);
            t.compute_at(y, y.i);
        }",
    );
    let (m, n) = (2, 9);
    let x = input(m, n);
    let got = interpret(&f, &x, m, n);
    for k in 0..m * n {
        let e = 2.0 * x[k];
        assert!((got[k] - (e + 1.0) * e).abs() <= 1e-4, "y[{k}] = {}, want {}", got[k], (e + 1.0) * e);
    }
    // (`reuse_output` may have put `t` in `y`'s row: the fused loop stores two buffers.)
    let two = has(&f.body, &|s| match s {
        Stmt::For { kind: ForKind::Serial, body, .. } => {
            let mut got = Vec::new();
            stored_here(body, &mut got);
            got.sort();
            got.dedup();
            got.len() >= 2
        }
        _ => false,
    });
    assert!(two, "nothing was fused");
}
