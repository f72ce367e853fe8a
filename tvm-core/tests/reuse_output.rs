//! `passes::reuse_output`: an intermediate of a row-parallel loop that the output reads
//! only at its own element lives in the output's row. Where it applies, the lowered TIR
//! has no allocation of it and reads the output; the interpreter's results on that TIR
//! equal a plain reference (tails included). Where an order or index rule fails, the
//! intermediate keeps its own buffer. (The generated Rust of the same kernel is checked
//! against the interpreter in `codegen_rust.rs`.)

#[path = "support/lowered.rs"]
mod lowered;

use lowered::has;
use tvm_core::interp::{run, ArgValue, HostTensor};
use tvm_core::tir::visit::{walk_expr, Visitor};
use tvm_core::tir::{Expr, PrimFunc, Stmt};
use tvm_core::Target;

/// `src` (an example file, or a kernel's text) lowered for the CPU with its schedule.
fn lower(src: &str) -> PrimFunc {
    let src = if src.contains("compute!") { src.to_string() } else { format!("compute! {{ {src} }}") };
    lowered::lower_for(&src, &Target::parse("cpu").unwrap(), false)
}

/// Whether `f` allocates a buffer named `name`.
fn allocates(f: &PrimFunc, name: &str) -> bool {
    has(&f.body, &|s| matches!(s, Stmt::Allocate { buffer, .. } if buffer.name() == name))
}

/// Whether `f` reads a buffer named `name`.
fn reads(f: &PrimFunc, name: &str) -> bool {
    struct V<'a>(&'a str, bool);
    impl Visitor for V<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            self.1 |= matches!(e, Expr::Load { buffer, .. } if buffer.name() == self.0);
            walk_expr(self, e)
        }
    }
    let mut v = V(name, false);
    v.visit_stmt(&f.body);
    v.1
}

/// The softmax example, whose CPU schedule computes the row's exponentials at `y.i`.
const SOFTMAX: &str = include_str!("../../examples/kernels/softmax.rs");

fn softmax_reference(x: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut y = vec![0.0; m * n];
    for i in 0..m {
        let row = &x[i * n..][..n];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for j in 0..n {
            y[i * n + j] = (row[j] - mx).exp() / s;
        }
    }
    y
}

#[test]
fn the_softmax_rows_exponentials_live_in_the_output_and_the_results_hold() {
    let f = lower(SOFTMAX);
    assert!(!allocates(&f, "e"), "`e` still has its own buffer");
    assert!(reads(&f, "y"), "nothing reads the output");
    // N = 100 and 5: a vector tail, and a row shorter than one vector (every read of
    // the sum in the guarded tail); N = 64: whole vectors only.
    for (m, n) in [(3usize, 100usize), (4, 5), (2, 64), (1, 1)] {
        let x: Vec<f64> = (0..m * n).map(|k| ((k * 7919 + 13) % 200) as f64 / 20.0 - 5.0).collect();
        let mut args = vec![
            ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![m, n], &x).unwrap()),
            ArgValue::Tensor(
                HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![m, n], &vec![f64::NAN; m * n]).unwrap(),
            ),
        ];
        run(&f, &mut args).unwrap();
        let got = args[1].as_tensor().unwrap().to_f64_vec();
        let xs: Vec<f64> = x.iter().map(|v| *v as f32 as f64).collect();
        for (k, (g, w)) in got.iter().zip(softmax_reference(&xs, m, n)).enumerate() {
            assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "M={m} N={n} y[{k}] = {g}, want {w}");
        }
    }
}

#[test]
fn an_intermediate_read_at_another_element_or_after_the_output_keeps_its_buffer() {
    // The output reads `e` at the mirrored element: writing `y[i, j]` would overwrite
    // an element a later iteration still reads.
    let mirrored = r#"
        fn mirror(x: f32[M, N]) -> y: f32[M, N] {
            let e[i, j]: f32[M, N] = x[i, j] * 2.0;
            y[i, j] = e[i, N - 1 - j] + e[i, j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            e.compute_at(y, y.i);
        }
    "#;
    assert!(allocates(&lower(mirrored), "e"));
    // Another element type: the row of `y` cannot hold it.
    let widened = r#"
        fn widen(x: f32[M, N]) -> y: f32[M, N] {
            let e[i, j]: f64[M, N] = (x[i, j] as f64) * 2.0;
            y[i, j] = e[i, j] as f32;
        }
        schedule!(cpu) {
            y.parallel(y.i);
            e.compute_at(y, y.i);
        }
    "#;
    assert!(allocates(&lower(widened), "e"));
    // Not parallel: nothing owns a row, the pass leaves the loop alone. (`reorder` shapes
    // `y`, so the auto-scheduler does not make its row loop parallel.)
    let serial = r#"
        fn twice(x: f32[M, N]) -> y: f32[M, N] {
            let e[i, j]: f32[M, N] = x[i, j] * 2.0;
            y[i, j] = e[i, j] + 1.0;
        }
        schedule!(cpu) {
            y.reorder(y.i, y.j);
            e.compute_at(y, y.i);
        }
    "#;
    assert!(allocates(&lower(serial), "e"));
    // The same with a parallel row loop: reused, and still right.
    let parallel = serial.replace("y.reorder(y.i, y.j);", "y.parallel(y.i);");
    let f = lower(&parallel);
    assert!(!allocates(&f, "e"));
    let x: Vec<f64> = (0..12).map(|k| k as f64 - 3.0).collect();
    let mut args = vec![
        ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![3, 4], &x).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![3, 4], &[f64::NAN; 12]).unwrap()),
    ];
    run(&f, &mut args).unwrap();
    let got = args[1].as_tensor().unwrap().to_f64_vec();
    assert_eq!(got, x.iter().map(|v| v * 2.0 + 1.0).collect::<Vec<_>>());
    // Two outputs read `e`: `y`'s statement runs first and `z` reads `e` (and `y`) after
    // it, so `e` cannot live in `y` (which is read, too); it can in `z`, the last to
    // read it.
    let two = r#"
        fn two(x: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) {
            let e[i, j]: f32[M, N] = x[i, j] * 2.0;
            y[i, j] = e[i, j] + 1.0;
            z[i, j] = e[i, j] - y[i, j] * 0.5;
        }
        schedule!(cpu) {
            z.parallel(z.i);
            e.compute_at(z, z.i);
            y.compute_at(z, z.i);
        }
    "#;
    let f = lower(two);
    assert!(!allocates(&f, "e") && reads(&f, "z"));
    let mut args = vec![
        ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![3, 4], &x).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![3, 4], &[f64::NAN; 12]).unwrap()),
        ArgValue::Tensor(HostTensor::from_f64(tvm_core::dtype::DType::F32, vec![3, 4], &[f64::NAN; 12]).unwrap()),
    ];
    run(&f, &mut args).unwrap();
    assert_eq!(args[1].as_tensor().unwrap().to_f64_vec(), x.iter().map(|v| v * 2.0 + 1.0).collect::<Vec<_>>());
    assert_eq!(
        args[2].as_tensor().unwrap().to_f64_vec(),
        x.iter().map(|v| v * 2.0 - (v * 2.0 + 1.0) * 0.5).collect::<Vec<_>>()
    );
}
