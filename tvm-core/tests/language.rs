//! The language forms on the interpreter (and, for GPU schedules, on every OpenCL
//! device): Rust method syntax and `consts`, boundary views (`repeat_edge`,
//! `repeat_image`, `mirror_image`, `mirror_interior`, `constant_exterior`), scans,
//! argmax, reductions with a combiner, `let` blocks, `powi` and scalars of their declared
//! type, against plain references, under default and hand-written CPU and GPU schedules.

mod common;
use common::reference::{argbest_rows, blur_ref, methods_ref};
use common::*;

const METHODS: &str = r#"
pub fn methods(x: f32[n], b: f32[n], a: f32) -> y: f32[n] {
    y[i] = x[i].max(0.0).exp().mul_add(a, b[i])
        + (x[i].abs() + 1.0).sqrt().ln() * f32::consts::PI
        + x[i].clamp(-0.5, 0.5) * std::f32::consts::E
        + (x[i].abs() + 1.0).recip()
        + f32::max(x[i], b[i]).powf(2.0)
        - x[i].tanh().min(b[i].sin().abs().floor());
}
schedule!(cpu) {
    let (o, v) = y.split(y.i, 8);
    y.parallel(o);
    y.vectorize(v);
}
schedule!(cuda) {
    let (bx, tx) = y.split(y.i, 32);
    y.bind(bx, block.x);
    y.bind(tx, thread.x);
}
"#;

#[test]
fn method_syntax_and_consts_are_the_functions() {
    for n in [1usize, 29, 64] {
        let (x, b) = (rand_vec(n, 1), rand_vec(n, 2));
        let want = methods_ref(&x, &b, 0.75);
        for v in Variant::CPU_GPU {
            let inputs = vec![t(&[n], &x), t(&[n], &b)];
            check(METHODS, v, inputs, vec![scalar_f32(0.75)], &[n], &want, &format!("methods n={n}"));
        }
    }
}

/// A 1-D five-tap blur of `x` under boundary rule `rule`, reading as far as 7 outside.
fn blur_1d(rule: &str) -> String {
    let view = if rule == "constant_exterior" { format!("{rule}(x, 0.5)") } else { format!("{rule}(x)") };
    format!(
        r#"
pub fn blur(x: f32[n]) -> y: f32[n] {{
    let xb = {view};
    y[i] = xb[i - 2] + xb[i - 1] * 2.0 + xb[i] * 3.0 + xb[i + 1] * 2.0 + xb[i + 7];
}}
schedule!(cpu) {{
    let (o, v) = y.split(y.i, 8);
    y.parallel(o);
    y.vectorize(v);
}}
schedule!(cuda) {{
    let (bx, tx) = y.split(y.i, 16);
    y.bind(bx, block.x);
    y.bind(tx, thread.x);
}}
"#
    )
}

const RULES: [&str; 5] = ["constant_exterior", "repeat_edge", "repeat_image", "mirror_image", "mirror_interior"];

#[test]
fn every_boundary_rule_reads_what_halide_reads() {
    // n = 1 and 2 reflect and wrap several times within the taps; 3 and 53 do not divide
    // the splits.
    for rule in RULES {
        let src = blur_1d(rule);
        for n in [1usize, 2, 3, 53] {
            let x = rand_vec(n, 3);
            let want = blur_ref(rule, &x, 0.5);
            for v in Variant::CPU_GPU {
                check(&src, v, vec![t(&[n], &x)], vec![], &[n], &want, &format!("{rule} n={n}"));
            }
        }
    }
}

const STENCIL_2D: &str = r#"
pub fn stencil(x: f32[H, W], w: f32[3, 3]) -> y: f32[H, W] {
    let xb = repeat_edge(x);
    let t[i, j]: f32[H, W] = sum(xb[i + r - 1, j + s - 1] * w[r, s] for r in 0..3, s in 0..3);
    let tz = constant_exterior(t, 0.0);
    y[i, j] = tz[i, j - 1] + tz[i, j + 1] - t[i, j];
}
schedule!(cpu) {
    let (jo, ji) = y.split(y.j, 8);
    y.parallel(y.i);
    y.vectorize(ji);
    t.compute_at(y, y.i);
}
schedule!(cuda) {
    let (bi, ti) = y.split(y.i, 4);
    let (bj, tj) = y.split(y.j, 8);
    y.bind(bi, block.y);
    y.bind(bj, block.x);
    y.bind(ti, thread.y);
    y.bind(tj, thread.x);
}
"#;

fn stencil_ref(x: &[f32], w: &[f32], h: usize, wd: usize) -> Vec<f32> {
    let (hi, wi) = (h as i64, wd as i64);
    let at = |i: i64, j: i64| x[(i.clamp(0, hi - 1) * wi + j.clamp(0, wi - 1)) as usize];
    let t: Vec<f32> = (0..hi * wi)
        .map(|k| {
            let (i, j) = (k / wi, k % wi);
            let mut acc = 0.0;
            for r in 0..3 {
                for s in 0..3 {
                    acc += at(i + r - 1, j + s - 1) * w[(r * 3 + s) as usize];
                }
            }
            acc
        })
        .collect();
    let tz = |i: i64, j: i64| if (0..wi).contains(&j) { t[(i * wi + j) as usize] } else { 0.0 };
    (0..hi * wi)
        .map(|k| {
            let (i, j) = (k / wi, k % wi);
            tz(i, j - 1) + tz(i, j + 1) - t[k as usize]
        })
        .collect()
}

#[test]
fn boundary_views_of_inputs_and_intermediates_in_two_dims() {
    for (h, wd) in [(1usize, 1usize), (5, 7), (16, 19)] {
        let (x, w) = (rand_vec(h * wd, 4), rand_vec(9, 5));
        let want = stencil_ref(&x, &w, h, wd);
        for v in Variant::CPU_GPU {
            check(
                STENCIL_2D,
                v,
                vec![t(&[h, wd], &x), t(&[3, 3], &w)],
                vec![],
                &[h, wd],
                &want,
                &format!("stencil {h}x{wd}"),
            );
        }
    }
}

/// The interior of a boundary read has no test: on the CPU the loop over `i` is cut at
/// the borders, and its middle part reads `x` at `i - 1` and `i + 1` directly.
#[test]
fn the_interior_of_a_boundary_loop_has_no_test() {
    let src = r#"
pub fn blur3(x: f32[n]) -> y: f32[n] {
    let xb = repeat_edge(x);
    y[i] = xb[i - 1] + xb[i] + xb[i + 1];
}
schedule!(cpu) {
    let (o, v) = y.split(y.i, 8);
    y.vectorize(v);
}
"#;
    let f = lower(src, Variant::Cpu);
    let tir = tvm_core::tir::printer::print_func(&f);
    // Three loops over the vector chunks: the border before, the interior, the border after.
    assert_eq!(tir.matches("for o in").count(), 3, "the loop is not partitioned:\n{tir}");
    // The border vectors select between `x` and the edge; the interior's vector does not.
    let interior: Vec<&str> = tir.lines().filter(|l| l.contains("x[ramp(") && !l.contains("select(")).collect();
    assert_eq!(interior.len(), 1, "one vector statement without a test, the interior's:\n{tir}");
    let line = interior[0];
    assert!(
        line.contains("x[ramp(o * 8 - 1, 1, 8)]") && line.contains("x[ramp(o * 8 + 1, 1, 8)]"),
        "the interior reads x at i - 1 and i + 1 directly:\n{tir}"
    );
    assert!(!line.contains("select") && !line.contains("if "), "the interior tests its index:\n{tir}");
    // The borders read the edge elements the rule clamps to.
    assert!(tir.contains("x[0]") && tir.contains("x[n - 1]"), "{tir}");
}

const CUMSUM_ROWS: &str = r#"
pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
    y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
}
schedule!(cpu) {
    y.parallel(y.i);
    let (jo, ji) = y.split(y.j, 4);
    y.unroll(ji);
}
schedule!(cuda) {
    let (b, t) = y.split(y.i, 8);
    y.bind(b, block.x);
    y.bind(t, thread.x);
}
"#;

const RUNNING_MAX_COLS: &str = r#"
pub fn running_max(x: f32[M, N]) -> m: f32[M, N] {
    m[i, j] = if i == 0 { x[i, j] } else { max(m[i - 1, j], x[i, j]) };
}
schedule!(cpu) {
    let (jo, jv) = m.split(m.j, 8);
    m.reorder(jo, m.i, jv);
    m.parallel(jo);
    m.vectorize(jv);
}
schedule!(cuda) {
    let (b, t) = m.split(m.j, 16);
    m.reorder(b, t, m.i);
    m.bind(b, block.x);
    m.bind(t, thread.x);
}
"#;

const LINEAR_RECURRENCE: &str = r#"
pub fn iir(x: f32[n], a: f32, b: f32) -> y: f32[n] {
    let h[t]: f32[n] = x[t] + (if t >= 1 { a * h[t - 1] } else { 0.0 }) + (if t >= 2 { b * h[t - 2] } else { 0.0 });
    y[t] = h[t] * 2.0;
}
"#;

#[test]
fn scans_cumulative_sum_running_max_and_a_linear_recurrence() {
    for (m, n) in [(1usize, 1usize), (3, 17), (20, 64)] {
        let x = rand_vec(m * n, 6);
        let mut want = x.clone();
        for i in 0..m {
            for j in 1..n {
                want[i * n + j] += want[i * n + j - 1];
            }
        }
        let mut want_max = x.clone();
        for i in 1..m {
            for j in 0..n {
                want_max[i * n + j] = want_max[i * n + j].max(want_max[(i - 1) * n + j]);
            }
        }
        for v in Variant::CPU_GPU {
            check(CUMSUM_ROWS, v, vec![t(&[m, n], &x)], vec![], &[m, n], &want, &format!("cumsum {m}x{n}"));
            check(
                RUNNING_MAX_COLS,
                v,
                vec![t(&[m, n], &x)],
                vec![],
                &[m, n],
                &want_max,
                &format!("running max {m}x{n}"),
            );
        }
    }
    for n in [1usize, 2, 100] {
        let x = rand_vec(n, 7);
        let (a, b) = (0.5f32, -0.25f32);
        let mut h = vec![0.0f32; n];
        for k in 0..n {
            h[k] = x[k] + if k >= 1 { a * h[k - 1] } else { 0.0 } + if k >= 2 { b * h[k - 2] } else { 0.0 };
        }
        let want: Vec<f32> = h.iter().map(|v| v * 2.0).collect();
        for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
            let scalars = vec![scalar_f32(a), scalar_f32(b)];
            check(LINEAR_RECURRENCE, v, vec![t(&[n], &x)], scalars, &[n], &want, &format!("iir n={n}"));
        }
    }
}

const ARGMAX: &str = r#"
pub fn top1(x: f32[M, N]) -> (v: f32[M], k: i64[M], lo: f32[M], at: u64[M]) {
    (v[i], k[i]) = argmax(x[i, j] for j in 0..N);
    (lo[i], at[i]) = argmin(x[i, j].abs() for j in 0..N);
}
schedule!(cpu) {
    k.parallel(k.i);
    v.compute_at(k, k.i);
}
schedule!(cuda) {
    k.bind(k.i, block.x);
    let (ko, kt) = k.split(k.j, 32);
    k.bind(kt, thread.x);
    v.bind(v.i, block.x);
    let (vo, vt) = v.split(v.j, 32);
    v.bind(vt, thread.x);
    at.bind(at.i, block.x);
    let (ao, atx) = at.split(at.j, 32);
    at.bind(atx, thread.x);
    lo.bind(lo.i, block.x);
    let (lo_o, lo_t) = lo.split(lo.j, 32);
    lo.bind(lo_t, thread.x);
}
"#;

#[test]
fn argmax_and_argmin_give_the_value_and_the_first_index() {
    for (m, n) in [(1usize, 1usize), (4, 33), (9, 100)] {
        // Values on a coarse grid, so rows have ties; the first index must win.
        let x: Vec<f32> = rand_vec(m * n, 8).iter().map(|v| (v * 4.0).round()).collect();
        let (v, k) = argbest_rows(&x, n, true);
        let ax: Vec<f32> = x.iter().map(|v| v.abs()).collect();
        let (lo, at) = argbest_rows(&ax, n, false);
        let k: Vec<f32> = k.iter().map(|&i| i as f32).collect();
        let at: Vec<f32> = at.iter().map(|&i| i as f32).collect();
        let k_ = tvm_core::frontend::parse_str(ARGMAX).expect("parses");
        assert_eq!(k_.graph.outputs.len(), 4);
        for variant in Variant::CPU_GPU {
            let what = format!("argmax {m}x{n} {variant:?}");
            let outs = run_all(ARGMAX, variant, &x, [m, n]);
            assert_close(&outs[0], &v, &format!("{what}: v"));
            assert_close(&outs[1], &k, &format!("{what}: k"));
            assert_close(&outs[2], &lo, &format!("{what}: lo"));
            assert_close(&outs[3], &at, &format!("{what}: at"));
        }
    }
}

/// Runs the kernel `src` (one f32 input of shape `shape`, or `[shape[0]]` for one dim;
/// outputs of any type and rank whose dims are constants or the input's, starting
/// poisoned) on the interpreter and, for GPU variants, on every
/// OpenCL device; returns each output's values as f32s (every backend's must agree).
fn run_all(src: &str, variant: Variant, x: &[f32], shape: [usize; 2]) -> Vec<Vec<f32>> {
    use tvm_core::interp::{ArgValue, HostTensor};
    use tvm_core::tir::Param;
    let kernel = parse(src);
    let targets: Vec<tvm_core::Target> = match variant {
        Variant::DefaultCpu | Variant::Cpu => vec![tvm_core::Target::cpu()],
        _ => vec![tvm_core::Target::cuda(), tvm_core::Target::opencl()],
    };
    let mut results: Vec<Vec<Vec<f32>>> = Vec::new();
    for (n, target) in targets.into_iter().enumerate() {
        let s = schedule_for(&kernel, variant, target);
        let f = tvm_core::driver::lower(&s).unwrap_or_else(|e| panic!("lowering: {e:?}"));
        let ishape: Vec<usize> = match f.params.iter().find(|p| matches!(p, Param::Tensor { is_output: false, .. })) {
            Some(Param::Tensor { shape: dims, .. }) if dims.len() == 1 => vec![shape[0]],
            _ => shape.to_vec(),
        };
        let input_dims: Vec<(String, usize)> = match f.params.first() {
            Some(Param::Tensor { shape: dims, .. }) => {
                dims.iter().zip(&ishape).filter_map(|(d, &v)| d.as_var().map(|x| (x.name().to_string(), v))).collect()
            }
            _ => Vec::new(),
        };
        let dim_value = |d: &tvm_core::tir::Expr| -> usize {
            match (d.as_int(), d.as_var()) {
                (Some(c), _) => c as usize,
                (_, Some(v)) => input_dims.iter().find(|(n, _)| n == v.name()).expect("a dim of the input").1,
                _ => panic!("a dim that is neither a constant nor an input's dim"),
            }
        };
        let args = || -> Vec<ArgValue> {
            f.params
                .iter()
                .map(|p| match p {
                    Param::Tensor { buffer, is_output: false, .. } if buffer.dtype() == tvm_core::DType::F32 => {
                        ArgValue::Tensor(HostTensor::f32(ishape.clone(), x.to_vec()))
                    }
                    Param::Tensor { buffer, shape: dims, .. } => {
                        // Poisoned: an element never written shows. Its dims: constants,
                        // or the input's dims of the same name.
                        let oshape: Vec<usize> = dims.iter().map(|d| dim_value(d)).collect();
                        let size = oshape.iter().product();
                        let poison = vec![if buffer.dtype().is_float() { f64::NAN } else { 7777.0 }; size];
                        ArgValue::Tensor(HostTensor::from_f64(buffer.dtype(), oshape, &poison).unwrap())
                    }
                    Param::Scalar(v) => panic!("no scalar expected: {}", v.name()),
                })
                .collect()
        };
        let outputs = |a: &[ArgValue]| -> Vec<Vec<f32>> {
            f.params
                .iter()
                .zip(a)
                .filter(|(p, _)| matches!(p, Param::Tensor { is_output: true, .. }))
                .map(|(_, a)| a.as_tensor().unwrap().to_f64_vec().iter().map(|&v| v as f32).collect())
                .collect()
        };
        if n == 0 {
            let mut a = args();
            tvm_core::interp::run(&f, &mut a).unwrap_or_else(|e| panic!("interpreter: {e}"));
            results.push(outputs(&a));
        } else {
            for dev in common::opencl::devices() {
                let mut a = args();
                tvm_core::launch::run_on_device(&tvm_runtime::Device::OpenCl(dev), &f, &mut a)
                    .unwrap_or_else(|e| panic!("opencl:{dev}: {e}"));
                results.push(outputs(&a));
            }
        }
    }
    // Exact, but for the last bit of `exp` (the device's against Rust's).
    for r in &results[1..] {
        for (got, want) in r.iter().zip(&results[0]) {
            assert_close(got, want, "the interpreter and OpenCL differ");
        }
    }
    results.swap_remove(0)
}

/// A recurrence that reads its previous element keeps it in a local buffer indexed by the
/// loops inside the scan loop (here the eight unrolled rows), not read back from `y`.
#[test]
fn the_previous_element_of_a_recurrence_stays_in_registers() {
    let src = r#"
pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
    y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
}
schedule!(cpu) {
    let (io, ii) = y.split(y.i, 8);
    y.reorder(io, y.j, ii);
    y.parallel(io);
    y.unroll(ii);
}
"#;
    let tir = tvm_core::tir::printer::print_func(&lower(src, Variant::Cpu));
    assert!(tir.contains("alloc y_prev: f32[8] local"), "{tir}");
    assert!(!tir.contains("j - 1]"), "a read of y at j - 1 is left:\n{tir}");
    // And the results: rows that do not fill the last group of eight, on the interpreter.
    for (m, n) in [(3usize, 5usize), (11, 40)] {
        let x = rand_vec(m * n, 9);
        let mut want = x.clone();
        for row in want.chunks_mut(n) {
            for j in 1..n {
                row[j] += row[j - 1];
            }
        }
        for v in [Variant::Cpu, Variant::DefaultCpu, Variant::DefaultGpu] {
            check(src, v, vec![t(&[m, n], &x)], vec![], &[m, n], &want, &format!("cumsum {m}x{n}"));
        }
    }
    // A step of two is read back from memory as before.
    let step2 = src.replace("y[i, j - 1]", "y[i, j - 2]").replace("j >= 1", "j >= 2");
    let tir = tvm_core::tir::printer::print_func(&lower(&step2, Variant::Cpu));
    assert!(!tir.contains("y_prev"), "{tir}");
}

/// Reductions with a combiner the kernel writes: an online softmax's max and sum of
/// exponentials in one pass, argmax as one reduction of (value, index), and a single
/// value. The combiners guard `-inf - -inf` (the identity meeting itself).
const CUSTOM: &str = r#"
pub fn stats(x: f32[M, N]) -> (m: f32[M], s: f32[M], v: f32[M], k: i64[M], ss: f32[M]) {
    (m[i], s[i]) = reduce((x[i, j], 1.0) for j in 0..N, (f32::NEG_INFINITY, 0.0),
        |(m0, s0), (m1, s1)| (
            m0.max(m1),
            (if m0 == f32::NEG_INFINITY { 0.0 } else { s0 * (m0 - m0.max(m1)).exp() })
                + (if m1 == f32::NEG_INFINITY { 0.0 } else { s1 * (m1 - m0.max(m1)).exp() }),
        ));
    (v[i], k[i]) = reduce((x[i, j], j) for j in 0..N, (f32::NEG_INFINITY, i64::MAX),
        |(v0, k0), (v1, k1)| (
            if v1 > v0 || (v1 == v0 && k1 < k0) { v1 } else { v0 },
            if v1 > v0 || (v1 == v0 && k1 < k0) { k1 } else { k0 },
        ));
    ss[i] = reduce(x[i, j] * x[i, j] for j in 0..N, 0.0, |a, b| a + b);
}
schedule!(cpu) {
    let (jo, ji) = m.split(m.j, 8);
    let mf = m.rfactor(ji);
    m.parallel(m.i);
    mf.compute_at(m, m.i);
    k.parallel(k.i);
    let (so, si) = ss.split(ss.j, 4);
    let sf = ss.rfactor(si);
}
schedule!(cuda) {
    m.bind(m.i, block.x);
    let (jo, jt) = s.split(s.j, 32);
    m.bind(jt, thread.x);
    k.bind(k.i, block.x);
    let (ko, kt) = k.split(k.j, 32);
    k.bind(kt, thread.x);
    ss.bind(ss.i, block.x);
    let (so, st) = ss.split(ss.j, 32);
    ss.bind(st, thread.x);
}
"#;

#[test]
fn custom_reductions_of_several_values_schedule_like_sum() {
    for (rows, n) in [(1usize, 1usize), (3, 7), (5, 100)] {
        let x: Vec<f32> = rand_vec(rows * n, 9).iter().map(|v| (v * 4.0).round()).collect();
        let (v, k) = argbest_rows(&x, n, true);
        let k: Vec<f32> = k.iter().map(|&i| i as f32).collect();
        let s: Vec<f32> =
            x.chunks(n).zip(&v).map(|(r, &m)| r.iter().map(|&e| ((e - m) as f64).exp()).sum::<f64>() as f32).collect();
        let ss: Vec<f32> =
            x.chunks(n).map(|r| r.iter().map(|&e| (e as f64) * (e as f64)).sum::<f64>() as f32).collect();
        for variant in Variant::CPU_GPU {
            let what = format!("custom {rows}x{n} {variant:?}");
            let outs = run_all(CUSTOM, variant, &x, [rows, n]);
            assert_close(&outs[0], &v, &format!("{what}: m"));
            assert_close(&outs[1], &s, &format!("{what}: s"));
            assert_close(&outs[2], &v, &format!("{what}: v"));
            assert_eq!(outs[3], k, "{what}: k");
            assert_close(&outs[4], &ss, &format!("{what}: ss"));
        }
    }
    // A reduce in parentheses is the stage's right-hand side too.
    let paren = "pub fn f(x: f32[M, N]) -> y: f32[M] { y[i] = (reduce(x[i, j] for j in 0..N, 0.0, |a, b| a + b)); }";
    let out = run_all(paren, Variant::DefaultCpu, &x_small(), [2, 3]);
    assert_eq!(out[0], vec![3.0, 12.0], "parenthesized reduce");
    // The default CPU schedule's partial results are vector code: the combiner's values
    // are vector `let`s (a serial loop would pass the numbers above too).
    let text = tvm_core::tir::printer::print_func(&lower(CUSTOM, Variant::DefaultCpu));
    assert!(text.contains("let m_rf_x0 = x[ramp("), "the one-pass statistics are vectorized:\n{text}");
    assert!(text.contains("let v_rf_x1 = ramp("), "argmax's index lanes are a vector:\n{text}");
}

/// A softmax whose statistics (max and sum of exponentials) are one reduction of two
/// values, computed per row where the row is normalized (`compute_at`): both component
/// tensors live at the attach point.
const SOFTMAX: &str = r#"
pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
    let (m[i], s[i]): (f32[M], f32[M]) = reduce((x[i, j], 1.0) for j in 0..N, (f32::NEG_INFINITY, 0.0),
        |(m0, s0), (m1, s1)| (
            m0.max(m1),
            (if m0 == f32::NEG_INFINITY { 0.0 } else { s0 * (m0 - m0.max(m1)).exp() })
                + (if m1 == f32::NEG_INFINITY { 0.0 } else { s1 * (m1 - m0.max(m1)).exp() }),
        ));
    y[i, j] = (x[i, j] - m[i]).exp() / s[i];
}
schedule!(cpu) {
    y.parallel(y.i);
    m.compute_at(y, y.i);
    let (jo, ji) = y.split(y.j, 8);
    y.vectorize(ji);
}
schedule!(cuda) {
    y.bind(y.i, block.x);
    let (jo, jt) = y.split(y.j, 64);
    y.bind(jt, thread.x);
    s.compute_at(y, y.i);
    let (ko, kt) = s.split(s.j, 64);
    s.bind(kt, thread.x);
}
"#;

#[test]
fn a_reduction_of_two_values_computed_at_its_reader() {
    for (rows, n) in [(1usize, 1usize), (3, 9), (4, 130)] {
        let x: Vec<f32> = rand_vec(rows * n, 11).iter().map(|v| v * 6.0 - 3.0).collect();
        let want: Vec<f32> = x
            .chunks(n)
            .flat_map(|r| {
                let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
                let s: f64 = r.iter().map(|&e| (e as f64 - m).exp()).sum();
                r.iter().map(move |&e| ((e as f64 - m).exp() / s) as f32).collect::<Vec<_>>()
            })
            .collect();
        for variant in Variant::CPU_GPU {
            let outs = run_all(SOFTMAX, variant, &x, [rows, n]);
            assert_close(&outs[0], &want, &format!("softmax {rows}x{n} {variant:?}"));
        }
    }
    // Both components are realized where the stage is computed, not as outputs.
    let f = lower(SOFTMAX, Variant::Cpu);
    let text = tvm_core::tir::printer::print_func(&f);
    let (loop_at, m_at, s_at) =
        (text.find("parallel").unwrap(), text.find("alloc m:").unwrap(), text.find("alloc s:").unwrap());
    assert!(loop_at < m_at && loop_at < s_at, "m and s are allocated per row:\n{text}");
}

/// One long scan alone: the default GPU schedule spreads it over the threads (reduce the
/// chunks, scan their totals, scan the chunks from there).
const LONG_SCANS: &str = r#"
pub fn scans(x: f32[N]) -> (s: f32[N], hi: f32[N], p: f32[N]) {
    s[j] = if j >= 1 { s[j - 1] + x[j] } else { x[j] };
    hi[j] = if j == 0 { x[j] } else { x[j].max(hi[j - 1]) };
    p[j] = if j > 0 { p[j - 1] * (1.0 + x[j] / 4096.0) } else { 1.0 };
}
"#;

#[test]
fn a_long_scan_is_a_parallel_scan_on_gpus() {
    let k = parse(LONG_SCANS);
    let s = schedule_for(&k, Variant::DefaultGpu, tvm_core::Target::cuda());
    assert!(s.stages.iter().all(|st| st.parallel_scan), "every stage is a parallel scan");
    let f = tvm_core::driver::lower(&s).unwrap();
    assert_eq!(f.kernels.len(), 9, "three launches per scan");
    for n in [1usize, 2, 255, 2048, 2049, 5000, 40_000, 530_000] {
        let x: Vec<f32> = rand_vec(n, 12).iter().map(|v| (v * 8.0).round() - 4.0).collect();
        let mut s = Vec::new();
        let mut hi = Vec::new();
        let mut p = Vec::new();
        for (j, &e) in x.iter().enumerate() {
            s.push(if j == 0 { e } else { s[j - 1] + e });
            hi.push(if j == 0 { e } else { e.max(hi[j - 1]) });
            p.push(if j == 0 { 1.0f64 } else { p[j - 1] * (1.0 + e as f64 / 4096.0) });
        }
        let p: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        for variant in Variant::CPU_GPU {
            let what = format!("scans n={n} {variant:?}");
            let outs = run_all(LONG_SCANS, variant, &x, [n, 1]);
            // Small integers: every grouping of the sum is exact.
            assert_eq!(outs[0], s, "{what}: s");
            assert_eq!(outs[1], hi, "{what}: hi");
            // A float product: the groupings round differently (the serial one too, by up
            // to n ulps), so a tolerance, and only where n rounding errors stay below it.
            if n <= 40_000 {
                for (got, want) in outs[2].iter().zip(&p) {
                    assert!((got - want).abs() <= 1e-4 * want.abs(), "{what}: p {got} vs {want}");
                }
            }
        }
    }
}

/// A reduction of one value with a combiner of its own, cache-written; a later component
/// of a reduction of two values, cache-read by its reader; a combiner dividing by a
/// constant.
const CUSTOM_CACHES: &str = r#"
pub fn caches(x: f32[M, N]) -> (h: i64[M], y: f32[M], z: f32[M]) {
    h[i] = reduce((x[i, j] * 7.0) as i64 + 50 for j in 0..N, 0, |a, b| (a + b) % 1000003);
    let (m[i], s[i]): (f32[M], f32[M]) = reduce((x[i, j], x[i, j] * x[i, j]) for j in 0..N,
        (f32::NEG_INFINITY, 0.0), |(m0, s0), (m1, s1)| (m0.max(m1), s0 + s1));
    y[i] = s[i] * 0.5;
    z[i] = m[i] + 1.0;
}
schedule!(cpu) {
    let hl = h.cache_write(local);
    hl.compute_at(h, h.i);
    let sl = s.cache_read(local, [y]);
    sl.compute_at(y, y.i);
}
"#;

#[test]
fn caches_of_reductions_with_a_combiner_of_their_own() {
    let (rows, n) = (5usize, 37usize);
    let x: Vec<f32> = rand_vec(rows * n, 13).iter().map(|v| (v * 4.0).round()).collect();
    let h: Vec<f32> =
        x.chunks(n).map(|r| r.iter().fold(0i64, |a, &e| (a + (e * 7.0) as i64 + 50) % 1000003) as f32).collect();
    let y: Vec<f32> = x.chunks(n).map(|r| r.iter().map(|e| e * e).sum::<f32>() * 0.5).collect();
    let z: Vec<f32> = x.chunks(n).map(|r| r.iter().cloned().fold(f32::NEG_INFINITY, f32::max) + 1.0).collect();
    for variant in [Variant::Cpu, Variant::DefaultCpu, Variant::DefaultGpu] {
        let outs = run_all(CUSTOM_CACHES, variant, &x, [rows, n]);
        assert_eq!(outs[0], h, "{variant:?}: h");
        assert_close(&outs[1], &y, &format!("{variant:?}: y"));
        assert_close(&outs[2], &z, &format!("{variant:?}: z"));
    }
    // The cache read is of `s`, the second component, not of `m`.
    let f = lower(CUSTOM_CACHES, Variant::Cpu);
    let text = tvm_core::tir::printer::print_func(&f);
    assert!(text.contains("s_local[") && !text.contains("m_local["), "{text}");
    // Dumps show the combiner.
    let g = tvm_core::te::print_graph(&parse(CUSTOM_CACHES).graph);
    assert!(g.contains("reduce((") && g.contains("|(m0, s0), (m1, s1)|"), "{g}");
}

/// Scans along the last dim of a few rows (a leading dim of 4, and leading dims 2 x 2):
/// each row a parallel scan on GPUs (a `block.y` per row).
const ROW_SCANS: &str = r#"
pub fn row_scans(x: f32[4, N]) -> (s: f32[4, N], t: f32[2, 2, N]) {
    s[r, j] = if j >= 1 { s[r, j - 1] + x[r, j] } else { x[r, j] };
    t[a, b, j] = if j == 0 { x[a * 2 + b, j] } else { max(t[a, b, j - 1], x[a * 2 + b, j]) };
}
"#;

#[test]
fn a_long_scan_of_a_few_rows_is_a_parallel_scan_on_gpus() {
    let k = parse(ROW_SCANS);
    let s = schedule_for(&k, Variant::DefaultGpu, tvm_core::Target::cuda());
    assert!(s.stages.iter().all(|st| st.parallel_scan), "every stage is a parallel scan");
    for n in [1usize, 2049, 9000] {
        let x: Vec<f32> = rand_vec(4 * n, 14).iter().map(|v| (v * 8.0).round() - 4.0).collect();
        let mut s = x.clone();
        let mut t = x.clone();
        for r in 0..4 {
            for j in 1..n {
                s[r * n + j] += s[r * n + j - 1];
                t[r * n + j] = t[r * n + j].max(t[r * n + j - 1]);
            }
        }
        for variant in Variant::CPU_GPU {
            let outs = run_all(ROW_SCANS, variant, &x, [4, n]);
            assert_eq!(outs[0], s, "s n={n} {variant:?}");
            assert_eq!(outs[1], t, "t n={n} {variant:?}");
        }
    }
}

/// Bias + GELU (tanh form) with the biased value named once in a block, and `powi`.
const BIAS_GELU: &str = r#"
pub fn bias_gelu(x: f32[M, N], b: f32[N]) -> y: f32[M, N] {
    y[i, j] = {
        let v = x[i, j] + b[j];
        let c = 0.797_884_6;
        0.5 * v * (1.0 + (c * (v + 0.044_715 * v.powi(3))).tanh())
    };
}
schedule!(cpu) {
    y.parallel(y.i);
    let (jo, jv) = y.split(y.j, 8);
    y.vectorize(jv);
}
schedule!(cuda) {
    y.bind(y.i, block.x);
    let (jo, jt) = y.split(y.j, 32);
    y.bind(jt, thread.x);
}
"#;

#[test]
fn let_blocks_and_powi() {
    for (m, n) in [(1usize, 1usize), (3, 37)] {
        let (x, b) = (rand_vec(m * n, 60), rand_vec(n, 61));
        let want: Vec<f32> = (0..m * n)
            .map(|k| {
                let v = x[k] + b[k % n];
                0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * v.powi(3))).tanh())
            })
            .collect();
        for v in Variant::CPU_GPU {
            let inputs = vec![t(&[m, n], &x), t(&[n], &b)];
            check(BIAS_GELU, v, inputs, vec![], &[m, n], &want, &format!("bias_gelu {m}x{n}"));
        }
    }
}

/// `powi` is Rust's for every exponent it takes (the same products in the same order,
/// so the same bits), and a `let` of a literal takes the type where it is used.
#[test]
fn powi_is_rusts_powi() {
    let src = r#"
pub fn powers(x: f32[n]) -> y: f32[n] {
    y[i] = {
        let two = 2;
        x[i].powi(0) + x[i].powi(1) * 3.0 + x[i].powi(-3) + x[i].powi(7) - x[i].powi(two * 3) + x[i].powi(64)
    };
}
"#;
    let x: Vec<f32> = rand_vec(50, 62).iter().map(|v| 0.5 + v.abs()).collect();
    let want: Vec<f32> =
        x.iter().map(|&x| x.powi(0) + x.powi(1) * 3.0 + x.powi(-3) + x.powi(7) - x.powi(6) + x.powi(64)).collect();
    for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
        let got = run_f32(src, v, vec![t(&[50], &x)], vec![], &[50]);
        assert_eq!(got, want, "{v:?}");
    }
}

/// Integer scalars are values of their declared type (`x[i].clamp(lo, hi)` on `i32`s)
/// and `i64` in index arithmetic (`i + k`, `x[i + k]`).
#[test]
fn scalars_keep_their_declared_type() {
    let src = r#"
pub fn clamp_shift(x: f32[n], lo: i32, hi: i32, k: i32) -> y: f32[n] {
    y[i] = (x[i] as i32).clamp(lo, hi) as f32 + (if i + k < n && i + k >= 0 { x[i + k] } else { 0.5 });
}
schedule!(cpu) {
    let (o, v) = y.split(y.i, 8);
    y.vectorize(v);
}
schedule!(cuda) {
    let (bx, tx) = y.split(y.i, 32);
    y.bind(bx, block.x);
    y.bind(tx, thread.x);
}
"#;
    let n = 45;
    let x: Vec<f32> = rand_vec(n, 63).iter().map(|v| v * 40.0).collect();
    for (lo, hi, k) in [(-5i32, 7i32, 3i32), (0, 0, -4), (-100, 100, 50)] {
        let want: Vec<f32> = (0..n as i32)
            .map(|i| {
                let j = i + k;
                (x[i as usize] as i32).clamp(lo, hi) as f32 + if j < n as i32 && j >= 0 { x[j as usize] } else { 0.5 }
            })
            .collect();
        let scalars = || vec![scalar_i32(lo), scalar_i32(hi), scalar_i32(k)];
        for v in Variant::CPU_GPU {
            check(src, v, vec![t(&[n], &x)], scalars(), &[n], &want, &format!("clamp_shift {lo} {hi} {k}"));
        }
    }
}

/// 0, 1, .., 5 as two rows of three.
fn x_small() -> Vec<f32> {
    (0..6).map(|v| v as f32).collect()
}
