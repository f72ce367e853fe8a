//! `z = a·x + y` over 16 M elements in `f32` and in `f64` from one generic kernel
//! (`fn axpy<T: Float>`), checked against a plain loop and timed against what a Rust user
//! would write instead: rayon over chunks of a zipped iterator (which LLVM vectorizes).
//!
//! Run: `cargo run --release --example axpy`

use rayon::prelude::*;
use tvm::{Device, Tensor};

mod support;

#[path = "kernels/axpy.rs"]
mod kernel;
use kernel::axpy;

fn time<T>(device: &Device, n: usize, a: T, v: impl Fn(usize) -> T) -> Result<(), tvm::Error>
where
    T: axpy::Elem + Copy + Send + Sync + Into<f64> + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let x = Tensor::from_vec((0..n).map(&v).collect(), [n])?;
    let y = Tensor::from_vec((0..n).map(|i| v(i + 7)).collect(), [n])?;
    let mut z = Tensor::<T, 1>::zeros([n]);
    axpy::run(device, &x, &y, a, &mut z)?;
    let mut base = vec![x.as_slice()[0]; n];
    let (xs, ys) = (x.as_slice(), y.as_slice());
    let speedup = axpy::profile::<T>(device, &x, &y, a)?.against(|| {
        base.par_chunks_mut(1 << 16).zip(xs.par_chunks(1 << 16).zip(ys.par_chunks(1 << 16))).for_each(|(o, (x, y))| {
            for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                *o = a * x + y;
            }
        });
        Ok::<(), tvm::Error>(())
    })?;
    // The kernel's `a * x + y` is one fused multiply-add where the CPU has FMA (one
    // rounding; LANGUAGE.md §2), the plain loop's two: they agree to a rounding of the
    // operands' size.
    let eps = if T::NAME == "f32" { f32::EPSILON as f64 } else { f64::EPSILON };
    let mut max_err = 0f64;
    for k in 0..n {
        let (xv, yv): (f64, f64) = (xs[k].into(), ys[k].into());
        let scale = (a.into() * xv).abs() + yv.abs();
        let (zk, bk): (f64, f64) = (z.as_slice()[k].into(), base[k].into());
        max_err = max_err.max((zk - bk).abs() / scale.max(f64::MIN_POSITIVE));
    }
    assert!(max_err <= 2.0 * eps, "max error {max_err:e}");
    println!(
        "axpy::<{}> n={n} on {device}: max difference from the plain loop {max_err:.1e} (of a*|x|+|y|); baseline: rayon over chunks of a zipped iterator",
        T::NAME
    );
    println!("{speedup}");
    Ok(())
}

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let n = 1 << 24;
    time::<f32>(&device, n, 1.5, |i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)?;
    time::<f64>(&device, n, 1.5, |i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0)?;
    Ok(())
}
