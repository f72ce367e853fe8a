//! Layer normalization of a 4096 x 1024 f32 matrix (per-row mean and variance, scale and
//! shift) with a fused CPU schedule, checked against a plain f64 implementation; prints
//! the max error, the time and GB/s.
//!
//! Run: `cargo run --release --example layernorm`

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/layernorm.rs"]
mod kernel;
use kernel::layernorm;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (rows, cols) = (4096, 1024);
    let x =
        Tensor::from_vec((0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect(), [rows, cols])?;
    let gamma = Tensor::from_vec((0..cols).map(|j| 1.0 + (j % 7) as f32 * 0.1).collect(), [cols])?;
    let beta = Tensor::from_vec((0..cols).map(|j| (j % 5) as f32 * 0.1 - 0.2).collect(), [cols])?;
    let mut y = Tensor::<f32, 2>::zeros([rows, cols]);
    layernorm::run(&device, &x, &gamma, &beta, &mut y)?;
    let runs = 10;
    let t = Instant::now();
    for _ in 0..runs {
        layernorm::run(&device, &x, &gamma, &beta, &mut y)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;
    let want = support::reference::layernorm(x.as_slice(), gamma.as_slice(), beta.as_slice(), rows, cols);
    let max_err = support::max_relative_error(y.as_slice(), &want);
    println!(
        "layernorm {rows}x{cols} f32 on {device}: max error {max_err:.2e}, {:.2} ms, {:.1} GB/s",
        secs * 1e3,
        8.0 * (rows * cols) as f64 / secs / 1e9
    );
    assert!(max_err < 1e-4);
    Ok(())
}
