//! Property: the schedule the auto-scheduler derives never changes what a kernel
//! computes, and never falls back (a derived schedule that does not apply or lower is a
//! compiler bug).
//!
//! Each case composes a kernel from the corpus' operators: a first operator (matmul,
//! batched matmul, dense with bias and ReLU, conv2d over a padding stage, depthwise
//! conv2d, max pooling, a transposed copy, an element-wise chain with a broadcast) whose
//! result may feed a second (a row sum, a column sum, a row softmax, a row layer norm, a
//! transpose, an element-wise map), at random shapes drawn from primes, powers of two
//! and 1, each dim a literal or a symbolic one. The kernel has no `schedule!` block, so
//! every stage is derived; it is lowered for the CPU, CUDA and OpenCL targets and run on
//! the interpreter, against the same kernel under the flat default schedule (no
//! derivation). Inputs are small integers, so every sum is exact in `f32` and the two
//! must agree exactly, except the operators with `exp`/`rsqrt`, compared with a relative
//! tolerance of 1e-5. A share of the OpenCL cases also runs on the first OpenCL device.
//!
//! Knobs: `AUTOSCHED_PROPS_CASES` (cases per target), `AUTOSCHED_PROPS_SEED`.

use tvm_core::driver::{lower_explained, ScheduleSource};
use tvm_core::frontend::parse_str;
use tvm_core::interp::{run, ArgValue, HostTensor};
use tvm_core::schedule::Schedule;
use tvm_core::tir::printer::print_func;
use tvm_core::Target;

/// A deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const SIZES: &[i64] = &[1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 48];

/// A dim: its literal value, or its symbolic name (bound by the inputs' shapes).
#[derive(Clone, Copy)]
struct Dim {
    name: &'static str,
    value: i64,
    symbolic: bool,
}

impl Dim {
    fn text(&self) -> String {
        if self.symbolic {
            self.name.to_string()
        } else {
            self.value.to_string()
        }
    }
}

/// One generated case: the kernel's text, its inputs' shapes, and whether it uses
/// transcendental functions.
struct Case {
    src: String,
    inputs: Vec<Vec<usize>>,
    inexact: bool,
}

fn dim(r: &mut Rng, name: &'static str, max: i64) -> Dim {
    let sizes: Vec<i64> = SIZES.iter().copied().filter(|&s| s <= max).collect();
    Dim { name, value: r.pick(&sizes), symbolic: r.chance(30) }
}

/// The first operator: `(signature parameters, stages, the result's name, its two dims,
/// input shapes, inexact)`. Its result is `t[i, j]`.
fn first_op(r: &mut Rng) -> (String, String, [Dim; 2], Vec<Vec<usize>>) {
    let m = dim(r, "M", 48);
    let n = dim(r, "N", 48);
    let k = dim(r, "K", 33);
    let (mt, nt, kt) = (m.text(), n.text(), k.text());
    let (mv, nv, kv) = (m.value as usize, n.value as usize, k.value as usize);
    match r.next() % 8 {
        0 => (
            format!("a: f32[{mt}, {kt}], b: f32[{kt}, {nt}]"),
            format!("let t[i, j]: f32[{mt}, {nt}] = sum(a[i, k] * b[k, j] for k in 0..{kt});"),
            [m, n],
            vec![vec![mv, kv], vec![kv, nv]],
        ),
        1 => (
            format!("x: f32[{mt}, {kt}], w: f32[{nt}, {kt}], bias: f32[{nt}]"),
            format!(
                "let d[i, j]: f32[{mt}, {nt}] = sum(x[i, k] * w[j, k] for k in 0..{kt});
                 let t[i, j]: f32[{mt}, {nt}] = max(d[i, j] + bias[j], 0.0);"
            ),
            [m, n],
            vec![vec![mv, kv], vec![nv, kv], vec![nv]],
        ),
        2 => {
            // conv2d 3x3 over a padding stage: channels K -> M, rows N (the image is N x N),
            // the result viewed as [M, N * N].
            let c = Dim { name: "C", value: r.pick(&[1, 2, 3, 8]), symbolic: false };
            let f = Dim { name: "F", value: r.pick(&[1, 4, 5, 8, 16]), symbolic: false };
            let h = Dim { name: "H", value: r.pick(&[1, 3, 7, 8, 13]), symbolic: false };
            let (cv, fv, hv) = (c.value, f.value, h.value);
            (
                format!("data: f32[1, {cv}, {hv}, {hv}], w: f32[{fv}, {cv}, 3, 3]"),
                format!(
                    "let pad[n, c, y, x]: f32[1, {cv}, {hp}, {hp}] =
                        if y >= 1 && y <= {hv} && x >= 1 && x <= {hv} {{ data[n, c, y - 1, x - 1] }} else {{ 0.0 }};
                     let cv[n, f, y, x]: f32[1, {fv}, {hv}, {hv}] =
                        sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..{cv}, r in 0..3, s in 0..3);
                     let t[i, j]: f32[{fv}, {hw}] = cv[0, i, j / {hv}, j % {hv}];",
                    hp = hv + 2,
                    hw = hv * hv
                ),
                [Dim { name: "F", value: fv, symbolic: false }, Dim { name: "HW", value: hv * hv, symbolic: false }],
                vec![vec![1, cv as usize, hv as usize, hv as usize], vec![fv as usize, cv as usize, 3, 3]],
            )
        }
        3 => {
            // depthwise 3x3 over a padding stage, channels M, rows of width N (a literal:
            // the padded width is N + 2).
            let h = Dim { name: "H", value: r.pick(&[2, 3, 5, 8]), symbolic: false };
            let (hv, hp) = (h.value, h.value + 2);
            let n = Dim { symbolic: false, ..n };
            let nt = n.text();
            (
                format!("data: f32[{mt}, {hv}, {nt}], w: f32[{mt}, 3, 3]"),
                format!(
                    "let pad[c, y, x]: f32[{mt}, {hp}, {np}] =
                        if y >= 1 && y <= {hv} && x >= 1 && x <= {nt} {{ data[c, y - 1, x - 1] }} else {{ 0.0 }};
                     let dw[c, y, x]: f32[{mt}, {hv}, {nt}] = sum(pad[c, y + r, x + s] * w[c, r, s] for r in 0..3, s in 0..3);
                     let t[i, j]: f32[{mt}, {nt}] = dw[i, 1 % {hv}, j];",
                    np = n.value + 2
                ),
                [m, n],
                vec![vec![mv, hv as usize, nv], vec![mv, 3, 3]],
            )
        }
        4 => (
            format!("a: f32[{nt}, {mt}]"),
            format!("let t[i, j]: f32[{mt}, {nt}] = a[j, i] * 2.0 - 1.0;"),
            [m, n],
            vec![vec![nv, mv]],
        ),
        5 => (
            format!("a: f32[{mt}, {nt}], b: f32[{nt}], alpha: f32"),
            format!(
                "let u[i, j]: f32[{mt}, {nt}] = a[i, j] * alpha + b[j];
                 let t[i, j]: f32[{mt}, {nt}] = max(u[i, j], 0.0) - min(u[i, j], 1.0);"
            ),
            [m, n],
            vec![vec![mv, nv], vec![nv]],
        ),
        6 => {
            // 2x2 max pooling of a [M, 2N] plane with one row pair: [M, N].
            (
                format!("a: f32[{mt}, 2, {n2}]", n2 = n.value * 2),
                format!(
                    "let t[i, j]: f32[{mt}, {nv}] = max(a[i, r, j * 2 + s] for r in 0..2, s in 0..2);",
                    nv = n.value
                ),
                [m, Dim { symbolic: false, ..n }],
                vec![vec![mv, 2, nv * 2]],
            )
        }
        _ => {
            let b = Dim { name: "B", value: r.pick(&[1, 2, 3]), symbolic: false };
            let bv = b.value;
            (
                format!("a: f32[{bv}, {mt}, {kt}], w: f32[{bv}, {kt}, {nt}]"),
                format!(
                    "let bm[q, i, j]: f32[{bv}, {mt}, {nt}] = sum(a[q, i, k] * w[q, k, j] for k in 0..{kt});
                     let t[i, j]: f32[{mt}, {nt}] = bm[{last}, i, j];",
                    last = bv - 1
                ),
                [m, n],
                vec![vec![bv as usize, mv, kv], vec![bv as usize, kv, nv]],
            )
        }
    }
}

fn case(r: &mut Rng) -> Case {
    let (params, stages, [m, n], inputs) = first_op(r);
    let (mt, nt) = (m.text(), n.text());
    let (ret, last, inexact) = match r.next() % 7 {
        0 => (format!("y: f32[{mt}]"), format!("y[i] = sum(t[i, j] for j in 0..{nt});"), false),
        1 => (format!("y: f32[{nt}]"), format!("y[j] = sum(t[i, j] for i in 0..{mt});"), false),
        2 => (
            format!("y: f32[{mt}, {nt}]"),
            format!(
                "let mx[i]: f32[{mt}] = max(t[i, j] for j in 0..{nt});
                 let e[i, j]: f32[{mt}, {nt}] = exp(t[i, j] - mx[i]);
                 let s[i]: f32[{mt}] = sum(e[i, j] for j in 0..{nt});
                 y[i, j] = e[i, j] * (1.0 / s[i]);"
            ),
            true,
        ),
        3 => (
            format!("y: f32[{mt}, {nt}]"),
            format!(
                "let s1[i]: f32[{mt}] = sum(t[i, j] for j in 0..{nt});
                 let s2[i]: f32[{mt}] = sum((t[i, j] - s1[i] / {nt} as f32) * (t[i, j] - s1[i] / {nt} as f32) for j in 0..{nt});
                 y[i, j] = (t[i, j] - s1[i] / {nt} as f32) * rsqrt(s2[i] / {nt} as f32 + 1.0);"
            ),
            true,
        ),
        4 => (format!("y: f32[{nt}, {mt}]"), "y[j, i] = t[i, j];".to_string(), false),
        5 => (format!("y: f32[{mt}, {nt}]"), "y[i, j] = t[i, j] * t[i, j] + 1.0;".to_string(), false),
        _ => (format!("y: f32[{mt}, {nt}]"), "y[i, j] = t[i, j];".to_string(), false),
    };
    let src = format!("pub fn k({params}) -> {ret} {{\n{stages}\n{last}\n}}");
    Case { src, inputs, inexact }
}

fn values(len: usize, which: usize) -> Vec<f32> {
    let mut r = Rng(which as u64 * 7919 + 17);
    (0..len).map(|_| (r.next() % 7) as f32 - 3.0).collect()
}

/// The interpreter's output of `f` on `c`'s inputs (and `alpha = 2` where the kernel
/// takes it).
fn run_case(c: &Case, f: &tvm_core::tir::PrimFunc, out_shape: &[usize]) -> Result<Vec<f32>, String> {
    let mut args: Vec<ArgValue> = c
        .inputs
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let len = shape.iter().product();
            ArgValue::Tensor(HostTensor::f32(shape.clone(), values(len, k)))
        })
        .collect();
    if c.src.contains("alpha: f32") {
        args.push(ArgValue::Scalar(tvm_core::interp::ScalarValue::F32(2.0)));
    }
    let len: usize = out_shape.iter().product();
    args.push(ArgValue::Tensor(HostTensor::f32(out_shape.to_vec(), vec![f32::NAN; len])));
    run(f, &mut args).map_err(|e| e.to_string())?;
    Ok(args.last().and_then(|a| a.as_tensor()).and_then(|t| t.as_f32()).expect("an f32 output").to_vec())
}

/// The output's shape: the kernel's declared output, evaluated at the case's dims.
fn output_shape(k: &tvm_core::frontend::Kernel, c: &Case) -> Vec<usize> {
    let out = k.graph.tensor(k.graph.outputs[0]);
    // Symbolic dims are the inputs' dims: find each by name among the inputs' shapes.
    let mut env = std::collections::HashMap::new();
    for (t, shape) in k.graph.input_tensors().iter().zip(&c.inputs) {
        for (d, &s) in k.graph.tensor(*t).shape.iter().zip(shape) {
            if let Some(v) = d.as_var() {
                env.insert(v.name().to_string(), s);
            }
        }
    }
    out.shape
        .iter()
        .map(|d| match d.as_int() {
            Some(v) => v as usize,
            None => env[d.as_var().expect("a dim").name()],
        })
        .collect()
}

fn check(c: &Case, target: &Target, opencl: bool) -> Result<bool, String> {
    let k = parse_str(&c.src).map_err(|e| format!("the kernel does not parse: {e:?}"))?;
    let (sch, source, f) = lower_explained(&k, target, &mut |_| {});
    assert!(matches!(source, ScheduleSource::Default { .. }));
    let sch = sch.ok_or("no schedule")?;
    // Nothing derived is legitimate (no rule covers the stages: the flat defaults run).
    let empty = Default::default();
    let derived = sch.derived.as_deref().unwrap_or(&empty);
    if let Some(why) = &derived.fallback {
        return Err(format!("the derived schedule fell back: {why}\n{}", derived.text));
    }
    let f = f.map_err(|e| format!("lowering failed: {e:?}\n{}", derived.text))?;
    let flat = Schedule::default_for(k.graph.clone(), target.clone());
    let flat = tvm_core::driver::lower(&flat).map_err(|e| format!("the flat default does not lower: {e:?}"))?;
    let shape = output_shape(&k, c);
    let got = run_case(c, &f, &shape)
        .map_err(|e| format!("the interpreter failed: {e}\n{}\n{}", derived.text, print_func(&f)))?;
    let want = run_case(c, &flat, &shape).map_err(|e| format!("the flat default failed: {e}"))?;
    let tol = if c.inexact { 1e-5 } else { 0.0 };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = (g - w).abs() <= tol * w.abs().max(1.0) || (g.is_nan() && w.is_nan());
        if !ok {
            return Err(format!("element {i}: derived {g}, flat default {w}\n{}\n{}", derived.text, print_func(&f)));
        }
    }
    if opencl {
        let mut args: Vec<ArgValue> = c
            .inputs
            .iter()
            .enumerate()
            .map(|(k, s)| ArgValue::Tensor(HostTensor::f32(s.clone(), values(s.iter().product(), k))))
            .collect();
        if c.src.contains("alpha: f32") {
            args.push(ArgValue::Scalar(tvm_core::interp::ScalarValue::F32(2.0)));
        }
        args.push(ArgValue::Tensor(HostTensor::f32(shape.clone(), vec![f32::NAN; shape.iter().product()])));
        tvm_core::launch::run_on_device(&tvm_runtime::Device::OpenCl(0), &f, &mut args)
            .map_err(|e| format!("opencl: {e}\n{}", derived.text))?;
        let dev = args.last().and_then(|a| a.as_tensor()).and_then(|t| t.as_f32()).expect("f32").to_vec();
        let tol = if c.inexact { 1e-4 } else { 0.0 };
        for (i, (g, w)) in dev.iter().zip(&want).enumerate() {
            if (g - w).abs() > tol * w.abs().max(1.0) {
                return Err(format!("opencl element {i}: {g}, flat default {w}\n{}", derived.text));
            }
        }
        return Ok(true);
    }
    Ok(false)
}

fn property(target: &Target, salt: u64) {
    let cases: u64 = std::env::var("AUTOSCHED_PROPS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let seed: u64 = std::env::var("AUTOSCHED_PROPS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let is_opencl = target.kind == tvm_core::TargetKind::OpenCl;
    let opencl_ok = is_opencl && tvm_runtime::Device::OpenCl(0).check_available().is_ok();
    if is_opencl && !opencl_ok && std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("TVM_REQUIRE_TOOLS=1 but there is no OpenCL device");
    }
    let mut r = Rng(seed.wrapping_mul(1000).wrapping_add(salt));
    let mut on_device = 0;
    for n in 0..cases {
        let c = case(&mut r);
        let opencl = opencl_ok && n % 4 == 0;
        match check(&c, target, opencl) {
            Ok(ran) => on_device += ran as u32,
            Err(e) => panic!("case {n} (seed {seed}) on {target}:\n{}\n{e}", c.src),
        }
    }
    if opencl_ok {
        assert!(on_device > 0, "no case ran on OpenCL");
    }
}

#[test]
fn derived_cpu_schedules_compute_what_the_default_computes() {
    property(&Target::cpu(), 1);
}

#[test]
fn derived_cuda_schedules_compute_what_the_default_computes() {
    property(&Target::cuda(), 2);
}

#[test]
fn derived_opencl_schedules_compute_what_the_default_computes_and_run_on_opencl() {
    property(&Target::opencl(), 3);
}
