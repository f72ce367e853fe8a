//! The runtime fuzz test (docs/LANGUAGE.md §4: bad input is an `Err`, never a panic, an
//! abort, a hang or a wrong answer). Random shapes (zero-sized dims, mismatched ones, a
//! huge dim in an empty tensor), random values (NaN, ±inf, subnormals, extreme integers)
//! and random index tensors for kernels of the corpus and of this suite, on every backend
//! present (the CPU and PoCL in CI), with a fixed seed (`TVM_FUZZ_SEED` picks another,
//! `TVM_FUZZ_CASES` another count). The property, per call: no panic; an `Err` exactly
//! when the input is bad (shapes that do not match, an index outside the table where a
//! lookup happens, a zero divisor where a division happens), of the kind that says so;
//! otherwise the plain reference's result.

use super::backends;
use super::bad_input::kernels as own;
use super::registered;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tvm::{Device, Error, Tensor};

/// splitmix64: deterministic, and enough for picking cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// A dim: mostly 0..=6, now and then up to 40.
    fn dim(&mut self) -> usize {
        if self.chance(15) {
            self.below(41) as usize
        } else {
            self.below(7) as usize
        }
    }
    /// A float: small integers, or a special value.
    fn float(&mut self) -> f32 {
        const SPECIAL: [f32; 9] = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE / 8.0, // subnormal
            -f32::MIN_POSITIVE / 3.0,
            0.0,
            -0.0,
            f32::MAX,
            f32::MIN,
        ];
        if self.chance(20) {
            SPECIAL[self.below(SPECIAL.len() as u64) as usize]
        } else {
            self.below(9) as f32 - 4.0
        }
    }
    /// A float for sums: as [`Rng::float`] without the largest finite values, whose sums
    /// overflow or not depending on the order of the terms.
    fn summand(&mut self) -> f32 {
        let x = self.float();
        if x.is_finite() && x.abs() > 1e30 {
            1.0
        } else {
            x
        }
    }
    /// An integer: small, or an extreme.
    fn int(&mut self) -> i32 {
        const SPECIAL: [i32; 6] = [i32::MIN, i32::MAX, -1, 0, 1, i32::MIN + 1];
        if self.chance(30) {
            SPECIAL[self.below(SPECIAL.len() as u64) as usize]
        } else {
            self.below(41) as i32 - 20
        }
    }
}

fn cases() -> usize {
    std::env::var("TVM_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(500)
}

fn seed() -> u64 {
    std::env::var("TVM_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x7e57_5eed)
}

/// Floats equal as the reference means them: bit-identical values, both NaN, or both
/// within `rtol` (relative to the larger) — and values below the normal range (which a
/// device may flush to zero) equal to zero.
fn same(got: f32, want: f32, rtol: f32) -> bool {
    let tiny = |x: f32| x.abs() < f32::MIN_POSITIVE;
    (got.is_nan() && want.is_nan())
        || got == want
        || (tiny(got) && tiny(want))
        || (got.is_finite() && want.is_finite() && (got - want).abs() <= rtol * got.abs().max(want.abs()))
}

/// Runs `f`, turning a panic into a failure of the case `what`.
fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{what}: panicked: {}", msg.unwrap_or_default())
        }
    }
}

/// Counts the calls made and the `Err`s among them, for the summary line.
#[derive(Default)]
struct Tally {
    calls: usize,
    errors: usize,
}

impl Tally {
    fn saw<T>(&mut self, r: &Result<T, Error>) {
        self.calls += 1;
        self.errors += r.is_err() as usize;
    }
}

fn vector_add_cases(dev: &Device, rng: &mut Rng, t: &mut Tally) {
    for case in 0..cases() {
        let n = rng.dim();
        let m = if rng.chance(15) { rng.dim() } else { n };
        let a: Vec<f32> = (0..n).map(|_| rng.float()).collect();
        let b: Vec<f32> = (0..m).map(|_| rng.float()).collect();
        let (ta, tb) = (Tensor::from_vec(a.clone(), [n]).unwrap(), Tensor::from_vec(b.clone(), [m]).unwrap());
        let what = format!("vector_add case {case} on {dev}: n = {n}, m = {m}");
        let mut c = Tensor::zeros([n]);
        let r = no_panic(&what, || registered::vector_add::vector_add::run(dev, &ta, &tb, &mut c));
        t.saw(&r);
        match r {
            Err(Error::ShapeMismatch { .. }) if m != n => {}
            Ok(()) if m == n => {
                for (i, (&g, (x, y))) in c.as_slice().iter().zip(a.iter().zip(&b)).enumerate() {
                    assert!(same(g, x + y, 0.0), "{what}: c[{i}] = {g}, want {x} + {y} = {}", x + y);
                }
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

fn matmul_cases(dev: &Device, rng: &mut Rng, t: &mut Tally) {
    for case in 0..cases() {
        let (m, k, n) = (rng.dim(), rng.dim(), rng.dim());
        // A mismatched inner dim now and then; a huge one in tensors with no element.
        let (k2, huge) = match rng.below(10) {
            0 => (rng.dim(), false),
            1 => (1 << 40, true),
            _ => (k, false),
        };
        let (m, n) = if huge { (0, 0) } else { (m, n) };
        let k = if huge { k2 } else { k };
        let a: Vec<f32> = (0..m * k).map(|_| rng.summand()).collect();
        let b: Vec<f32> = (0..k2 * n).map(|_| rng.summand()).collect();
        let what = format!("matmul case {case} on {dev}: {m}x{k} times {k2}x{n}");
        let (ta, tb) = (Tensor::from_vec(a.clone(), [m, k]).unwrap(), Tensor::from_vec(b.clone(), [k2, n]).unwrap());
        let mut c = Tensor::zeros([m, n]);
        let r = no_panic(&what, || registered::matmul::matmul::run(dev, &ta, &tb, &mut c));
        t.saw(&r);
        match r {
            Err(Error::ShapeMismatch { .. }) if k != k2 => {}
            Ok(()) if k == k2 => {
                for i in 0..m {
                    for j in 0..n {
                        let want: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                        let g = c.as_slice()[i * n + j];
                        assert!(same(g, want, 1e-5), "{what}: c[{i}, {j}] = {g}, want {want}");
                    }
                }
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

fn embed_cases(dev: &Device, rng: &mut Rng, t: &mut Tally) {
    for case in 0..cases() {
        let (v, d, n) = (rng.dim(), rng.dim(), rng.dim());
        let table: Vec<f32> = (0..v * d).map(|_| rng.float()).collect();
        let ids: Vec<i32> =
            (0..n).map(|_| if rng.chance(10) { rng.int() } else { rng.below(v as u64 + 2) as i32 - 1 }).collect();
        let what = format!("embed case {case} on {dev}: table {v}x{d}, ids {ids:?}");
        let (tt, ti) = (Tensor::from_vec(table.clone(), [v, d]).unwrap(), Tensor::from_vec(ids.clone(), [n]).unwrap());
        let mut y = Tensor::zeros([n, d]);
        let r = no_panic(&what, || own::embed::run(dev, &tt, &ti, &mut y));
        t.saw(&r);
        // A lookup happens for every id when rows have elements.
        let bad = d > 0 && ids.iter().any(|&r| r < 0 || r as usize >= v);
        match r {
            Err(Error::IndexOutOfBounds { value, extent, .. }) if bad => {
                assert!(extent == v as i64 && (value < 0 || value >= extent), "{what}: {value} of {extent}");
                assert!(ids.contains(&(value as i32)), "{what}: {value} is not an id");
            }
            Ok(()) if !bad => {
                for (i, &r) in ids.iter().enumerate() {
                    for j in 0..d {
                        let (g, w) = (y.as_slice()[i * d + j], table[r as usize * d + j]);
                        assert!(same(g, w, 0.0), "{what}: y[{i}, {j}] = {g}, want {w}");
                    }
                }
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

fn divide_cases(dev: &Device, rng: &mut Rng, t: &mut Tally) {
    for case in 0..cases() {
        let n = rng.dim();
        let a: Vec<i32> = (0..n).map(|_| rng.int()).collect();
        let b: Vec<i32> = (0..n).map(|_| rng.int()).collect();
        let what = format!("divide case {case} on {dev}: {a:?} / {b:?}");
        let (ta, tb) = (Tensor::from_vec(a.clone(), [n]).unwrap(), Tensor::from_vec(b.clone(), [n]).unwrap());
        let mut q = Tensor::zeros([n]);
        let r = no_panic(&what, || own::divide::run(dev, &ta, &tb, &mut q));
        t.saw(&r);
        match r {
            Err(Error::DivisionByZero { .. }) if b.contains(&0) => {}
            Ok(()) if !b.contains(&0) => {
                let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_div(*y)).collect();
                assert_eq!(q.as_slice(), &want[..], "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

fn shifted_cases(dev: &Device, rng: &mut Rng, t: &mut Tally) {
    for case in 0..cases() {
        let (m, n) = (rng.dim(), rng.dim());
        let k: i64 = match rng.below(8) {
            0 => i64::MIN,
            1 => i64::MAX,
            _ => rng.below(m as u64 + 7) as i64 - 3,
        };
        let x: Vec<f32> = (0..m).map(|_| rng.float()).collect();
        let what = format!("shifted case {case} on {dev}: {m} elements, n = {n}, k = {k}");
        let tx = Tensor::from_vec(x.clone(), [m]).unwrap();
        let mut y = Tensor::zeros([n]);
        let r = no_panic(&what, || own::shifted::run(dev, &tx, k, n, &mut y));
        t.saw(&r);
        // Index arithmetic wraps, as in the kernel.
        let at = |i: usize| (i as i64).wrapping_add(k);
        let bad = (0..n).any(|i| at(i) < 0 || at(i) >= m as i64);
        match r {
            Err(Error::IndexOutOfBounds { tensor, .. }) if bad => assert_eq!(tensor, "x", "{what}"),
            // WebGPU computes indices in 32 bits, proved exact for scalars up to a bound:
            // beyond it the launch is refused, saying so.
            Err(Error::LaunchFailed { reason, .. })
                if bad && matches!(dev, Device::WebGpu(_)) && k.unsigned_abs() > 1 << 30 =>
            {
                assert!(reason.contains("in 32 bits"), "{what}: {reason}")
            }
            Ok(()) if !bad => {
                for i in 0..n {
                    let (g, w) = (y.as_slice()[i], x[at(i) as usize]);
                    assert!(same(g, w, 0.0), "{what}: y[{i}] = {g}, want {w}");
                }
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn random_inputs_give_an_err_or_the_reference() {
    let mut rng = Rng(seed());
    let mut total = Tally::default();
    for dev in backends() {
        let mut t = Tally::default();
        vector_add_cases(dev, &mut rng, &mut t);
        matmul_cases(dev, &mut rng, &mut t);
        embed_cases(dev, &mut rng, &mut t);
        divide_cases(dev, &mut rng, &mut t);
        shifted_cases(dev, &mut rng, &mut t);
        println!("runtime fuzz on {dev}: {} calls, {} of them Err (seed {:#x})", t.calls, t.errors, seed());
        // Both outcomes occur, so neither side of the property passes vacuously.
        assert!(t.errors * 20 > t.calls && t.errors * 2 < t.calls, "{} Err of {} calls", t.errors, t.calls);
        total.calls += t.calls;
        total.errors += t.errors;
    }
    println!("runtime fuzz: {} calls in all, {} Err", total.calls, total.errors);
}
