//! Reads whose index wraps around its dim by a remainder (`frontend::check::wrap`): a
//! roll written with `%`, in Rust's truncated form and in the Euclidean form, lowers to
//! a loop whose interior reads contiguous vectors with no division, and computes the
//! roll exactly (the interpreter against a plain reference, shifts of every sign and
//! size, a row length no vector width divides).

#[path = "support/lowered.rs"]
mod lowered;

use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::tir::visit::{walk_expr, Visitor};
use tvm_core::tir::{BinOp, Expr, PrimFunc, Stmt};
use tvm_core::Target;

const ROLL: &str = r#"compute! {
    fn roll(x: f32[M, N], k: i64) -> y: f32[M, N] {
        y[i, j] = x[i, ((j - k) % N + N) % N];
    }
    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, 8);
        y.parallel(y.i);
        y.vectorize(ji);
    }
}"#;

const SHIFT: &str = r#"compute! {
    fn shift(x: f32[M, N], s: i64) -> y: f32[M, N] {
        y[i, j] = x[i, (j + s) % N] * 2.0;
    }
    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, 8);
        y.vectorize(ji);
    }
}"#;

/// Whether some store of `s` writes a vector (a `Ramp` index) of a value read with a
/// `Ramp` index, with no `%` or `/` anywhere in the statement.
fn contiguous_vector_interior(s: &Stmt) -> bool {
    #[derive(Default)]
    struct Seen {
        division: bool,
        ramp_load: bool,
    }
    impl Visitor for Seen {
        fn visit_expr(&mut self, e: &Expr) {
            match e {
                Expr::Binary { op: BinOp::Mod | BinOp::Div, .. } => self.division = true,
                Expr::Load { indices, .. } if matches!(indices.first(), Some(Expr::Ramp { .. })) => {
                    self.ramp_load = true
                }
                _ => {}
            }
            walk_expr(self, e)
        }
    }
    lowered::has(s, &|x| {
        let Stmt::Store { indices, .. } = x else { return false };
        let mut seen = Seen::default();
        seen.visit_stmt(x);
        matches!(indices.first(), Some(Expr::Ramp { .. })) && seen.ramp_load && !seen.division
    })
}

/// Runs `f` on an `m x n` input of distinct values with the scalar `k`; returns `y`.
fn run_with(f: &PrimFunc, m: usize, n: usize, k: i64) -> Vec<f64> {
    let f32 = tvm_core::dtype::DType::F32;
    let x: Vec<f64> = (0..m * n).map(|v| v as f64).collect();
    let mut args = vec![
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![m, n], &x).unwrap()),
        ArgValue::Scalar(ScalarValue::I64(k)),
        ArgValue::Tensor(HostTensor::from_f64(f32, vec![m, n], &vec![f64::NAN; m * n]).unwrap()),
    ];
    run(f, &mut args).unwrap();
    args[2].as_tensor().unwrap().to_f64_vec()
}

#[test]
fn a_roll_reads_contiguous_vectors_and_rolls_exactly() {
    let f = lowered::lower_for(ROLL, &Target::parse("cpu").unwrap(), false);
    let text = tvm_core::tir::printer::print_func(&f);
    assert!(contiguous_vector_interior(&f.body), "no contiguous vector interior:\n{text}");
    let (m, n) = (3usize, 37usize);
    for k in [0i64, 1, 5, 36, 37, 38, -1, -3, -40, 2 * 37 + 4, i64::from(i32::MAX)] {
        let got = run_with(&f, m, n, k);
        for i in 0..m {
            for j in 0..n {
                let src = (j as i64 - k).rem_euclid(n as i64) as usize;
                assert_eq!(got[i * n + j], (i * n + src) as f64, "k = {k}, y[{i}, {j}]");
            }
        }
    }
}

#[test]
fn a_truncated_remainder_shift_reads_contiguous_vectors_and_shifts_exactly() {
    let f = lowered::lower_for(SHIFT, &Target::parse("cpu").unwrap(), false);
    let text = tvm_core::tir::printer::print_func(&f);
    assert!(contiguous_vector_interior(&f.body), "no contiguous vector interior:\n{text}");
    let (m, n) = (2usize, 29usize);
    for s in [0i64, 3, 28, 29, 100] {
        let got = run_with(&f, m, n, s);
        for i in 0..m {
            for j in 0..n {
                let src = (j as i64 + s) % n as i64;
                assert_eq!(got[i * n + j], 2.0 * (i * n + src as usize) as f64, "s = {s}, y[{i}, {j}]");
            }
        }
    }
}

#[test]
fn the_derived_schedule_of_a_roll_computes_it_too() {
    let k = lowered::kernel_in(ROLL, "roll", None);
    let sch = lowered::derived_schedule(&k, &Target::parse("cpu").unwrap());
    let f = tvm_core::driver::lower(&sch).unwrap();
    // Vectorized along the rows too: the wrapped read is the border's only.
    let text = tvm_core::tir::printer::print_func(&f);
    assert!(contiguous_vector_interior(&f.body), "no contiguous vector interior:\n{text}");
    let (m, n) = (4usize, 67usize);
    for k in [0i64, 7, 66, -5] {
        let got = run_with(&f, m, n, k);
        for i in 0..m {
            for j in 0..n {
                let src = (j as i64 - k).rem_euclid(n as i64) as usize;
                assert_eq!(got[i * n + j], (i * n + src) as f64, "k = {k}, y[{i}, {j}]");
            }
        }
    }
}

/// Whether the compute body of stage `name` of `src`'s kernel has a `Select`.
fn body_has_select(src: &str, name: &str) -> bool {
    struct Sel(bool);
    impl Visitor for Sel {
        fn visit_expr(&mut self, e: &Expr) {
            self.0 |= matches!(e, Expr::Select { .. });
            walk_expr(self, e)
        }
    }
    let k = lowered::kernel_in(src, name, None);
    let mut v = Sel(false);
    for t in &k.graph.tensors {
        if let tvm_core::te::Op::Compute { body, .. } = &t.op {
            v.visit_expr(body);
        }
    }
    v.0
}

#[test]
fn only_indices_that_wrap_once_are_rewritten() {
    // A packed layout: `j` runs over 32 periods of `j % 32`.
    let packed = r#"compute! {
        fn packed(a: f32[8, 16], bp: f32[4, 16, 32]) -> c: f32[8, 128] {
            c[i, j] = sum(a[i, k] * bp[j / 32, k, j % 32] for k in 0..16);
        }
    }"#;
    assert!(!body_has_select(packed, "packed"));
    // A divisor that is not the dim's extent.
    let other = r#"compute! {
        fn other(x: f32[N], m: i64) -> y: f32[N] {
            y[i] = x[(i + 1) % m];
        }
    }"#;
    assert!(!body_has_select(other, "other"));
    assert!(body_has_select(ROLL, "roll"));
    assert!(body_has_select(SHIFT, "shift"));
}
