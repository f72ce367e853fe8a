//! Row-wise cumulative sum of a 4096 x 1024 f32 matrix (a recurrence: `y[i, j]` reads
//! `y[i, j - 1]`), checked against a plain loop and timed against what a Rust user would
//! write instead: rayon over the rows, a running sum in each.
//!
//! Run: `cargo run --release --example cumsum`

use rayon::prelude::*;
use tvm::Tensor;

mod support;

#[path = "kernels/cumsum.rs"]
mod kernel;
use kernel::cumsum;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (rows, cols) = (4096, 1024);
    let x =
        Tensor::from_vec((0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect(), [rows, cols])?;
    let mut y = Tensor::<f32, 2>::zeros([rows, cols]);
    cumsum::run(&device, &x, &mut y)?;
    // The reference, in f64 so that it is the exact prefix sum up to one rounding.
    let mut max_err = 0f64;
    for (row_x, row_y) in x.as_slice().chunks(cols).zip(y.as_slice().chunks(cols)) {
        let mut acc = 0f64;
        for (&a, &b) in row_x.iter().zip(row_y) {
            acc += a as f64;
            max_err = max_err.max((b as f64 - acc).abs() / acc.abs().max(1.0));
        }
    }
    // An f32 running sum of 1024 terms of magnitude <= 1 drifts by at most ~1024 ulps.
    assert!(max_err < 1e-4, "max error {max_err:e}");
    let mut base = vec![0f32; rows * cols];
    let speedup = cumsum::profile(&device, &x)?.against(|| {
        base.par_chunks_mut(cols).zip(x.as_slice().par_chunks(cols)).for_each(|(out, row)| {
            let mut acc = 0f32;
            for (o, &v) in out.iter_mut().zip(row) {
                acc += v;
                *o = acc;
            }
        });
        Ok::<(), tvm::Error>(())
    })?;
    assert_eq!(base, y.as_slice(), "the same sums in the same order");
    println!("cumsum {rows}x{cols} f32 on {device}: max error {max_err:.2e}; baseline: rayon over the rows, a running sum each");
    println!("{speedup}");
    Ok(())
}
