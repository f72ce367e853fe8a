//! Softmax over the rows of a 4096 x 1024 f32 matrix with a fused CPU schedule (the row
//! max, the exponentials and their sum computed per row inside the parallel row loop,
//! the output vectorized), checked against a plain implementation; prints the max error,
//! the time and GB/s.
//!
//! Run: `cargo run --release --example softmax` (on the CPU), or
//! `TVM_DEVICE=opencl cargo run --release --features opencl --example softmax` (on the
//! first OpenCL device; the time includes the copies to and from the device)

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/softmax.rs"]
mod kernel;
use kernel::softmax;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (rows, cols) = (4096, 1024);
    let x =
        Tensor::from_vec((0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect(), [rows, cols])?;
    let mut y = Tensor::<f32, 2>::zeros([rows, cols]);
    softmax::run(&device, &x, &mut y)?;
    let runs = 10;
    let t = Instant::now();
    for _ in 0..runs {
        softmax::run(&device, &x, &mut y)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;
    let want = support::reference::softmax(x.as_slice(), rows, cols);
    // Every probability is at most 1, so the relative error is the absolute one.
    let max_err = support::max_relative_error(y.as_slice(), &want);
    println!(
        "softmax {rows}x{cols} f32 on {device}: max error {max_err:.2e}, {:.2} ms, {:.1} GB/s",
        secs * 1e3,
        8.0 * (rows * cols) as f64 / secs / 1e9
    );
    assert!(max_err < 1e-5);
    Ok(())
}
