//! The language forms, compiled by the macro and run through the generated API on every
//! backend: Rust method syntax and `consts`, boundary views, argmax/argmin, `reduce` of
//! several values, generic kernels, scans, scalars of their declared type, `let` blocks
//! and `powi`. (The example kernels of these forms are the
//! registry's, in `registered.rs`.)

use super::reference::{argbest_rows, blur_ref, methods_ref, rand_vec};
use super::{on_every_backend, tensor, Source, RTOL};

#[allow(dead_code)]
pub mod arg {
    tvm::compute! {
        /// The smallest |x| of each row and its first column as a `u64`, default schedules.
        pub fn nearest_zero(x: f32[M, N]) -> (v: f32[M], at: u64[M]) {
            (v[i], at[i]) = argmin(x[i, j].abs() for j in 0..N);
        }
    }
}

#[test]
fn argmin_on_every_backend() {
    // (Argmax is the example's `top1`, a registered kernel.)
    for (m, n) in [(1usize, 1usize), (7, 100), (64, 1030)] {
        // A coarse grid of values: rows have ties, and the first index must win.
        let x: Vec<f32> = rand_vec(m * n, 50).iter().map(|v| (v * 8.0).round()).collect();
        let tx = tensor(&x, [m, n]);
        let ax: Vec<f32> = x.iter().map(|v| v.abs()).collect();
        let (lv, lk) = argbest_rows(&ax, n, false);
        for d in super::backends() {
            let mut bv = tvm::Tensor::<f32, 1>::full([m], f32::NAN);
            let mut bk = tvm::Tensor::<u64, 1>::full([m], u64::MAX);
            if super::ran(d, "nearest_zero", Some("u64"), arg::nearest_zero::run(d, &tx, &mut bv, &mut bk)) {
                assert_eq!(bv.as_slice(), &lv[..], "nearest_zero {m}x{n} on {d}");
                let lk64: Vec<u64> = lk.iter().map(|&i| i as u64).collect();
                assert_eq!(bk.as_slice(), &lk64[..], "nearest_zero {m}x{n} on {d}");
            }
        }
    }
}

#[allow(dead_code)]
pub mod custom {
    tvm::compute! {
        /// A row's max and the sum of `exp(x - max)` in one pass (an online softmax's
        /// statistics), and its largest value with its first index as one reduction of
        /// (value, index): default CPU schedules (vector partial results), a cross-thread
        /// reduction on GPU targets.
        pub fn softmax_stats(x: f32[M, N]) -> (m: f32[M], s: f32[M], v: f32[M], k: i64[M]) {
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
        }
        schedule!(cuda) {
            m.bind(m.i, block.x);
            let (jo, jt) = s.split(s.j, 64);
            m.bind(jt, thread.x);
            k.bind(k.i, block.x);
            let (ko, kt) = k.split(k.j, 64);
            k.bind(kt, thread.x);
        }
    }
}

#[test]
fn reductions_of_several_values_on_every_backend() {
    for (rows, n) in [(1usize, 1usize), (7, 100), (33, 1030)] {
        let x: Vec<f32> = rand_vec(rows * n, 51).iter().map(|v| (v * 8.0).round()).collect();
        let tx = tensor(&x, [rows, n]);
        let (v, k) = argbest_rows(&x, n, true);
        let s: Vec<f32> =
            x.chunks(n).zip(&v).map(|(r, &m)| r.iter().map(|&e| ((e - m) as f64).exp()).sum::<f64>() as f32).collect();
        for d in super::backends() {
            let what = format!("softmax_stats {rows}x{n} on {d}");
            let mut tm = tvm::Tensor::<f32, 1>::full([rows], f32::NAN);
            let mut ts = tvm::Tensor::<f32, 1>::full([rows], f32::NAN);
            let mut tv = tvm::Tensor::<f32, 1>::full([rows], f32::NAN);
            let mut tk = tvm::Tensor::<i64, 1>::full([rows], -1);
            if !super::ran(
                d,
                &what,
                Some("i64"),
                custom::softmax_stats::run(d, &tx, &mut tm, &mut ts, &mut tv, &mut tk),
            ) {
                continue;
            }
            assert_eq!(tm.as_slice(), &v[..], "{what}: m");
            for (got, want) in ts.as_slice().iter().zip(&s) {
                assert!((got - want).abs() <= RTOL * 10.0 * want.abs(), "{what}: s {got} vs {want}");
            }
            assert_eq!(tv.as_slice(), &v[..], "{what}: v");
            assert_eq!(tk.as_slice(), &k[..], "{what}: k");
        }
    }
}

#[allow(dead_code)]
pub mod methods {
    tvm::compute! {
        /// Every method form, `f32::max(a, b)` and two `consts`.
        pub fn methods(x: f32[n], b: f32[n], a: f32) -> y: f32[n] {
            y[i] = x[i].max(0.0).exp().mul_add(a, b[i])
                + (x[i].abs() + 1.0).sqrt().ln() * f32::consts::PI
                + x[i].clamp(-0.5, 0.5) * std::f32::consts::E
                + (x[i].abs() + 1.0).recip()
                + f32::max(x[i], b[i]).powf(2.0)
                - x[i].tanh().min(b[i].sin().abs().floor());
        }
        schedule!(cuda) {
            let (bx, tx) = y.split(y.i, 64);
            y.bind(bx, block.x);
            y.bind(tx, thread.x);
        }
    }
}

#[test]
fn method_syntax() {
    for n in [1usize, 100, 1027] {
        let (x, b) = (rand_vec(n, 40), rand_vec(n, 41));
        let want = methods_ref(&x, &b, 0.75);
        let (tx, tb) = (tensor(&x, [n]), tensor(&b, [n]));
        on_every_backend(&format!("methods n={n}"), [n], &want, RTOL, |d, y| {
            methods::methods::run(d, &tx, &tb, 0.75, y)
        });
    }
}

/// One blur kernel per boundary rule, reading up to 7 elements outside.
macro_rules! blur_kernels {
    ($($rule:ident),*) => {$(
        #[allow(dead_code)] // the typed function; the tests call `run`
        pub mod $rule {
            tvm::compute! {
                pub fn blur(x: f32[n]) -> y: f32[n] {
                    let xb = $rule(x);
                    y[i] = xb[i - 2] + xb[i - 1] * 2.0 + xb[i] * 3.0 + xb[i + 1] * 2.0 + xb[i + 7];
                }
                schedule!(cpu) {
                    let (o, v) = y.split(y.i, 16);
                    y.parallel(o);
                    y.vectorize(v);
                }
            }
        }
    )*};
}
blur_kernels!(repeat_edge, repeat_image, mirror_image, mirror_interior);

#[allow(dead_code)]
pub mod constant_exterior {
    tvm::compute! {
        pub fn blur(x: f32[n], outside: f32) -> y: f32[n] {
            let xb = constant_exterior(x, outside);
            y[i] = xb[i - 2] + xb[i - 1] * 2.0 + xb[i] * 3.0 + xb[i + 1] * 2.0 + xb[i + 7];
        }
    }
}

#[test]
fn boundary_rules() {
    for n in [1usize, 2, 5, 100, 1003] {
        let x = rand_vec(n, 42);
        let tx = tensor(&x, [n]);
        type Blur = fn(&tvm::Device, &tvm::Tensor<f32, 1>, &mut tvm::Tensor<f32, 1>) -> Result<(), tvm::Error>;
        let rules: [(&str, Blur); 4] = [
            ("repeat_edge", repeat_edge::blur::run),
            ("repeat_image", repeat_image::blur::run),
            ("mirror_image", mirror_image::blur::run),
            ("mirror_interior", mirror_interior::blur::run),
        ];
        for (rule, run) in rules {
            let want = blur_ref(rule, &x, 0.0);
            on_every_backend(&format!("{rule} n={n}"), [n], &want, RTOL, |d, y| run(d, &tx, y));
        }
        let want = blur_ref("constant_exterior", &x, -3.0);
        on_every_backend(&format!("constant_exterior n={n}"), [n], &want, RTOL, |d, y| {
            constant_exterior::blur::run(d, &tx, -3.0, y)
        });
    }
}

/// An empty tensor has no edge to repeat: reading it is an error, not a read outside it.
#[test]
fn a_boundary_view_of_an_empty_tensor_is_an_error() {
    pub mod shifted {
        tvm::compute! {
            pub fn shifted(x: f32[n], m: usize) -> y: f32[m] {
                let xb = repeat_edge(x);
                y[i] = xb[i];
            }
        }
    }
    let x = tvm::Tensor::<f32, 1>::zeros([0]);
    for d in super::backends() {
        let mut y = tvm::Tensor::zeros([3]);
        let e = shifted::shifted::run(d, &x, 3, &mut y).expect_err("a read of an empty tensor");
        assert!(matches!(e, tvm::Error::IndexOutOfBounds { .. }), "{d}: {e}");
        let mut y = tvm::Tensor::zeros([0]);
        shifted::shifted::run(d, &x, 0, &mut y).unwrap_or_else(|e| panic!("{d}: nothing to read: {e}"));
    }
}

pub(super) fn sources() -> Vec<(&'static str, Source)> {
    vec![
        ("methods", methods::methods::source),
        ("repeat_edge", repeat_edge::blur::source),
        ("repeat_image", repeat_image::blur::source),
        ("mirror_image", mirror_image::blur::source),
        ("mirror_interior", mirror_interior::blur::source),
        ("constant_exterior", constant_exterior::blur::source),
        ("axpy f32", generic::axpy::source::<f32>),
        ("axpy f64", generic::axpy::source::<f64>),
        ("weighted_rows i32", generic::weighted_rows::source::<i32>),
        ("weighted_rows i64", generic::weighted_rows::source::<i64>),
        ("cumsum", scans::cumsum::source),
        ("running_max", scans::running_max::source),
        ("iir", scans::iir::source),
        ("prefix_sum", scans::prefix_sum::source),
        ("row_max", scans::row_max::source),
        ("nearest_zero", arg::nearest_zero::source),
        ("softmax_stats", custom::softmax_stats::source),
        ("clamp_any i8", scalars::clamp_any::source::<i8>),
        ("clamp_any i64", scalars::clamp_any::source::<i64>),
        ("shifted_by", scalars::shifted_by::source),
        ("bias_gelu", scalars::bias_gelu::source),
    ]
}

#[allow(dead_code)]
pub mod scalars {
    tvm::compute! {
        /// A clamp between two scalars of the element type, for every signed type: `lo` and
        /// `hi` are `T`s, the literal a `T`.
        pub fn clamp_any<T: Signed>(x: T[n], lo: T, hi: T) -> y: T[n] {
            y[i] = x[i].clamp(lo, hi) - 1;
        }
        schedule!(cpu) {
            let (o, v) = y.split(y.i, 16);
            y.vectorize(v);
        }
        schedule!(cuda) {
            let (b, t) = y.split(y.i, 64);
            y.bind(b, block.x);
            y.bind(t, thread.x);
        }
    }

    tvm::compute! {
        /// A shift by an `i32` scalar: `i64` in the index and in the guard's comparison.
        pub fn shifted_by(x: f32[n], k: i32) -> y: f32[n] {
            y[i] = if i + k >= 0 && i + k < n { x[i + k] } else { -1.0 };
        }
    }

    tvm::compute! {
        /// Bias + GELU (tanh form) with the biased value named once, and `powi`.
        pub fn bias_gelu(x: f32[M, N], b: f32[N]) -> y: f32[M, N] {
            y[i, j] = {
                let v = x[i, j] + b[j];
                0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * v.powi(3))).tanh())
            };
        }
        schedule!(cpu) {
            y.parallel(y.i);
            let (jo, jv) = y.split(y.j, 16);
            y.vectorize(jv);
        }
        schedule!(cuda) {
            y.bind(y.i, block.x);
            let (jo, jt) = y.split(y.j, 64);
            y.bind(jt, thread.x);
        }
    }
}

#[test]
fn scalars_of_their_declared_type_on_every_backend() {
    // `lacks`: the type WGSL has not (the kernel fails on WebGPU with the error naming it).
    fn clamp_all<T: scalars::clamp_any::Elem + Copy + PartialEq + std::fmt::Debug>(
        x: &[T],
        lo: T,
        hi: T,
        want: &[T],
        lacks: Option<&str>,
    ) {
        let n = x.len();
        let tx = tvm::Tensor::from_vec(x.to_vec(), [n]).unwrap();
        for d in super::backends() {
            let mut y = tvm::Tensor::<T, 1>::zeros([n]);
            if !super::ran(d, "clamp_any", lacks, scalars::clamp_any::run(d, &tx, lo, hi, &mut y)) {
                continue;
            }
            assert_eq!(y.as_slice(), want, "clamp_any::<{}> on {d}", <T as scalars::clamp_any::Elem>::NAME);
        }
    }
    let n = 203;
    let x: Vec<i64> = (0..n as i64).map(|k| (k * 7919) % 255 - 127).collect();
    let want = |lo: i64, hi: i64| -> Vec<i64> { x.iter().map(|v| v.clamp(&lo, &hi) - 1).collect() };
    let cast = |v: &[i64]| -> (Vec<i8>, Vec<i16>, Vec<i32>) {
        (
            v.iter().map(|&v| v as i8).collect(),
            v.iter().map(|&v| v as i16).collect(),
            v.iter().map(|&v| v as i32).collect(),
        )
    };
    let (x8, x16, x32) = cast(&x);
    let w = want(-100, 90);
    let (w8, w16, w32) = cast(&w);
    clamp_all::<i8>(&x8, -100, 90, &w8, Some("i8"));
    clamp_all::<i16>(&x16, -100, 90, &w16, Some("i16"));
    clamp_all::<i32>(&x32, -100, 90, &w32, None);
    clamp_all::<i64>(&x, -100, 90, &w, Some("i64"));

    for k in [-3i32, 0, 5, 300] {
        let xs = rand_vec(n, 70);
        let want: Vec<f32> = (0..n as i64)
            .map(|i| {
                let j = i + k as i64;
                if (0..n as i64).contains(&j) {
                    xs[j as usize]
                } else {
                    -1.0
                }
            })
            .collect();
        let tx = tensor(&xs, [n]);
        // `i + k` with `k` any `i32` is not provably within 32 bits: not on WebGPU.
        for d in super::backends() {
            let mut y = tvm::Tensor::full([n], f32::NAN);
            if super::ran(d, "shifted_by", Some("64-bit"), scalars::shifted_by::run(d, &tx, k, &mut y)) {
                assert_eq!(y.as_slice(), &want[..], "shifted_by {k} on {d}");
            }
        }
    }
}

#[test]
fn let_blocks_and_powi_on_every_backend() {
    for (m, n) in [(1usize, 1usize), (5, 100), (64, 1030)] {
        let (x, b) = (rand_vec(m * n, 71), rand_vec(n, 72));
        let want: Vec<f32> = (0..m * n)
            .map(|k| {
                let v = x[k] + b[k % n];
                0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044_715 * v.powi(3))).tanh())
            })
            .collect();
        let (tx, tb) = (tensor(&x, [m, n]), tensor(&b, [n]));
        on_every_backend(&format!("bias_gelu {m}x{n}"), [m, n], &want, RTOL, |d, y| {
            scalars::bias_gelu::run(d, &tx, &tb, y)
        });
    }
}

pub mod generic {
    tvm::compute! {
        /// `z = a·x + y` for every float type.
        pub fn axpy<T: Float>(x: T[n], y: T[n], a: T) -> z: T[n] {
            z[i] = a.mul_add(x[i], y[i]);
        }
        schedule!(cpu) {
            let (o, v) = z.split(z.i, 16);
            z.parallel(o);
            z.vectorize(v);
        }
    }

    tvm::compute! {
        /// Row sums of a matrix of `i32` or `i64`, scaled by a per-row weight of a fixed type.
        pub fn weighted_rows<T: i32 | i64>(x: T[M, N], w: i32[M]) -> (s: T[M], m: T[M]) {
            let t[i]: T[M] = sum(x[i, j] for j in 0..N);
            s[i] = t[i] * (w[i] as T);
            m[i] = max(x[i, j] for j in 0..N);
        }
        schedule!(cuda) {
            let (b, t) = s.split(s.i, 32);
            s.bind(b, block.x);
            s.bind(t, thread.x);
        }
    }
}

#[test]
fn generic_kernels_run_every_instance() {
    use generic::{axpy, weighted_rows};
    let n = 1003;
    let x = rand_vec(n, 43);
    let y = rand_vec(n, 44);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 1.5f32.mul_add(*x, *y)).collect();
    let (tx, ty) = (tensor(&x, [n]), tensor(&y, [n]));
    on_every_backend("axpy::<f32>", [n], &want, RTOL, |d, z| axpy::run(d, &tx, &ty, 1.5, z));
    // The typed function picks the instance from its arguments.
    let z = axpy(&tx, &ty, 1.5f32).unwrap();
    super::reference::assert_close(z.as_slice(), &want, RTOL, "axpy(f32)");
    // f64 on every backend, exactly (one fused multiply-add per element, or its CPU emulation).
    let x64: Vec<f64> = x.iter().map(|&v| v as f64 / 3.0).collect();
    let y64: Vec<f64> = y.iter().map(|&v| v as f64 / 7.0).collect();
    let want64: Vec<f64> = x64.iter().zip(&y64).map(|(x, y)| 1.25f64.mul_add(*x, *y)).collect();
    let (tx64, ty64) = (tvm::Tensor::from_vec(x64, [n]).unwrap(), tvm::Tensor::from_vec(y64, [n]).unwrap());
    for d in super::backends() {
        let mut z = tvm::Tensor::<f64, 1>::zeros([n]);
        if !super::ran(d, "axpy::<f64>", Some("f64"), axpy::run::<f64>(d, &tx64, &ty64, 1.25, &mut z)) {
            continue;
        }
        for (k, (g, w)) in z.as_slice().iter().zip(&want64).enumerate() {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "axpy::<f64> on {d}: element {k}: {g} vs {w}");
        }
    }
    assert_eq!(<f64 as axpy::Elem>::NAME, "f64");
    assert!(axpy::source::<f64>("cpu").unwrap().contains("f64"));
    assert_ne!(axpy::source::<f32>("cpu").unwrap(), axpy::source::<f64>("cpu").unwrap(), "one instance per type");
    assert!(axpy::source::<f32>("opencl").unwrap().contains("float"));
    assert!(axpy::lowered::<f64>("cuda").unwrap().contains("f64"));

    // Integer instances, two outputs, a fixed-type input cast to `T`.
    let (m, cols) = (37usize, 129usize);
    let xi: Vec<i64> = (0..m * cols).map(|k| ((k * 7919) % 2001) as i64 - 1000).collect();
    let w: Vec<i32> = (0..m).map(|r| r as i32 - 18).collect();
    let want_s: Vec<i64> = (0..m).map(|r| xi[r * cols..(r + 1) * cols].iter().sum::<i64>() * w[r] as i64).collect();
    let want_m: Vec<i64> = (0..m).map(|r| *xi[r * cols..(r + 1) * cols].iter().max().unwrap()).collect();
    let tw = tvm::Tensor::from_vec(w, [m]).unwrap();
    let tx64 = tvm::Tensor::from_vec(xi.clone(), [m, cols]).unwrap();
    let tx32 = tvm::Tensor::from_vec(xi.iter().map(|&v| v as i32).collect(), [m, cols]).unwrap();
    for d in super::backends() {
        let mut out = None;
        let r = weighted_rows::call_on(d, &tx64.to_device(d).unwrap(), &tw.to_device(d).unwrap())
            .and_then(|(s, mx)| Ok(out = Some((s.to_host()?, mx.to_host()?))));
        if let (true, Some((s, mx))) = (super::ran(d, "weighted_rows::<i64>", Some("i64"), r), out) {
            assert_eq!(s.as_slice(), &want_s[..], "weighted_rows::<i64> on {d}");
            assert_eq!(mx.as_slice(), &want_m[..], "weighted_rows::<i64> on {d}");
        }
        let mut s32 = tvm::Tensor::<i32, 1>::zeros([m]);
        let mut m32 = tvm::Tensor::<i32, 1>::zeros([m]);
        weighted_rows::run(d, &tx32, &tw, &mut s32, &mut m32).unwrap_or_else(|e| panic!("{d}: {e}"));
        let want32: Vec<i32> = want_s.iter().map(|&v| v as i32).collect();
        assert_eq!(s32.as_slice(), &want32[..], "weighted_rows::<i32> on {d}");
    }
    let (s, _) = weighted_rows(&tx32, &tw).unwrap();
    assert_eq!(s.as_slice()[0], want_s[0] as i32);
}

#[allow(dead_code)]
pub mod scans {
    tvm::compute! {
        /// Row-wise cumulative sum.
        pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
            y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
        }
        schedule!(cpu) {
            y.parallel(y.i);
        }
    }

    tvm::compute! {
        /// Column-wise running max, vectorized across the columns (the rows, the scan,
        /// run in order; parallel chunks of columns would not be contiguous).
        pub fn running_max(x: f32[M, N]) -> m: f32[M, N] {
            m[i, j] = if i == 0 { x[i, j] } else { max(m[i - 1, j], x[i, j]) };
        }
        schedule!(cpu) {
            let (jo, jv) = m.split(m.j, 8);
            m.vectorize(jv);
        }
    }

    tvm::compute! {
        /// One long cumulative sum, default schedules: a parallel scan on GPU targets.
        pub fn prefix_sum(x: f32[n]) -> y: f32[n] {
            y[t] = if t >= 1 { y[t - 1] + x[t] } else { x[t] };
        }
    }

    tvm::compute! {
        /// Three long running maxima: a parallel scan per row on GPU targets.
        pub fn row_max(x: f32[3, n]) -> y: f32[3, n] {
            y[r, t] = if t == 0 { x[r, t] } else { x[r, t].max(y[r, t - 1]) };
        }
    }

    tvm::compute! {
        /// A second-order linear recurrence (an IIR filter) as an intermediate.
        pub fn iir(x: f32[n], a: f32, b: f32) -> y: f32[n] {
            let h[t]: f32[n] = x[t] + (if t >= 1 { a * h[t - 1] } else { 0.0 }) + (if t >= 2 { b * h[t - 2] } else { 0.0 });
            y[t] = h[t] * 2.0;
        }
    }
}

#[test]
fn scans_on_every_backend() {
    for (m, n) in [(1usize, 1usize), (5, 33), (64, 1000)] {
        let x = rand_vec(m * n, 45);
        let mut sum = x.clone();
        let mut mx = x.clone();
        for i in 0..m {
            for j in 0..n {
                if j >= 1 {
                    sum[i * n + j] += sum[i * n + j - 1];
                }
                if i >= 1 {
                    mx[i * n + j] = mx[i * n + j].max(mx[(i - 1) * n + j]);
                }
            }
        }
        let tx = tensor(&x, [m, n]);
        on_every_backend(&format!("cumsum {m}x{n}"), [m, n], &sum, super::rtol_for_sum(n), |d, y| {
            scans::cumsum::run(d, &tx, y)
        });
        on_every_backend(&format!("running_max {m}x{n}"), [m, n], &mx, RTOL, |d, y| scans::running_max::run(d, &tx, y));
    }
    // Small integers: every grouping of the parallel scan's sums is exact.
    for n in [1usize, 2047, 2049, 100_000, 600_000] {
        let x: Vec<f32> = rand_vec(n, 47).iter().map(|v| (v * 8.0).round() - 4.0).collect();
        let want: Vec<f32> = x
            .iter()
            .scan(0.0f32, |acc, &v| {
                *acc += v;
                Some(*acc)
            })
            .collect();
        let tx = tensor(&x, [n]);
        on_every_backend(&format!("prefix_sum n={n}"), [n], &want, 0.0, |d, y| scans::prefix_sum::run(d, &tx, y));
        let x3: Vec<f32> = rand_vec(3 * n, 48);
        let mut want3 = x3.clone();
        for r in 0..3 {
            for j in 1..n {
                want3[r * n + j] = want3[r * n + j].max(want3[r * n + j - 1]);
            }
        }
        let tx3 = tensor(&x3, [3, n]);
        on_every_backend(&format!("row_max 3x{n}"), [3, n], &want3, 0.0, |d, y| scans::row_max::run(d, &tx3, y));
    }
    for n in [1usize, 2, 777] {
        let x = rand_vec(n, 46);
        let (a, b) = (0.5f32, -0.25f32);
        let mut h = vec![0.0f32; n];
        for k in 0..n {
            h[k] = x[k] + if k >= 1 { a * h[k - 1] } else { 0.0 } + if k >= 2 { b * h[k - 2] } else { 0.0 };
        }
        let want: Vec<f32> = h.iter().map(|v| v * 2.0).collect();
        let tx = tensor(&x, [n]);
        on_every_backend(&format!("iir n={n}"), [n], &want, 1e-4, |d, y| scans::iir::run(d, &tx, a, b, y));
    }
}
