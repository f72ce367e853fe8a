//! Vector add of 2^24 f32: the first kernel of the language reference with a CPU
//! schedule (parallel chunks, 16-lane vectors), checked against a plain loop; prints the
//! max error, the time and GB/s.
//!
//! Run: `cargo run --release --example vector_add` (on the CPU), or
//! `TVM_DEVICE=opencl cargo run --release --features opencl --example vector_add` (on the
//! first OpenCL device; the time includes the copies to and from the device)

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/vector_add.rs"]
mod kernel;
use kernel::vector_add;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let n = 1 << 24;
    let a = Tensor::from_vec((0..n).map(|i| (i % 1000) as f32 * 0.5).collect(), [n])?;
    let b = Tensor::from_vec((0..n).map(|i| (i % 7) as f32).collect(), [n])?;
    let mut c = Tensor::<f32, 1>::zeros([n]);
    vector_add::run(&device, &a, &b, &mut c)?;
    let runs = 20;
    let t = Instant::now();
    for _ in 0..runs {
        vector_add::run(&device, &a, &b, &mut c)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;
    let max_err = c
        .as_slice()
        .iter()
        .zip(a.as_slice().iter().zip(b.as_slice()))
        .map(|(c, (a, b))| (c - (a + b)).abs())
        .fold(0f32, f32::max);
    println!(
        "vector_add n=2^24 f32 on {device}: max error {max_err:.2e}, {:.3} ms, {:.1} GB/s",
        secs * 1e3,
        12.0 * n as f64 / secs / 1e9
    );
    assert_eq!(max_err, 0.0);
    Ok(())
}
