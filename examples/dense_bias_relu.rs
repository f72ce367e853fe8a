//! A dense layer with bias and ReLU, `out = relu(x · wᵀ + bias)`, for a batch of 256,
//! 1024 inputs and 1024 outputs: the matmul tiled into an 8 x 16 register block with the
//! epilogue fused, checked against a plain reference; prints the max error, the time
//! and GFLOP/s.
//!
//! Run: `cargo run --release --example dense_bias_relu` (on the CPU), or
//! `TVM_DEVICE=opencl cargo run --release --features opencl --example dense_bias_relu` (on the
//! first OpenCL device; the time includes the copies to and from the device)

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/dense_bias_relu.rs"]
mod kernel;
use kernel::dense_bias_relu;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (m, k, n) = (256, 1024, 1024);
    let x = Tensor::from_vec((0..m * k).map(|i| ((i * 13) % 17) as f32 / 17.0 - 0.5).collect(), [m, k])?;
    let w = Tensor::from_vec((0..n * k).map(|i| ((i * 7) % 11) as f32 / 11.0 - 0.5).collect(), [n, k])?;
    let bias = Tensor::from_vec((0..n).map(|i| (i % 5) as f32 - 2.0).collect(), [n])?;
    let mut out = Tensor::<f32, 2>::zeros([m, n]);
    dense_bias_relu::run(&device, &x, &w, &bias, &mut out)?;
    let runs = 10;
    let t = Instant::now();
    for _ in 0..runs {
        dense_bias_relu::run(&device, &x, &w, &bias, &mut out)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;
    let want = support::reference::dense_bias_relu(x.as_slice(), w.as_slice(), bias.as_slice(), m, k, n);
    let max_err = support::max_relative_error(out.as_slice(), &want);
    println!(
        "dense_bias_relu {m}x{k}x{n} f32 on {device}: max relative error {max_err:.2e}, {:.2} ms, {:.1} GFLOP/s",
        secs * 1e3,
        2.0 * (m * n * k) as f64 / secs / 1e9
    );
    assert!(max_err < 1e-4);
    Ok(())
}
