//! Matmul 1024³ f32 with a TVM-tutorial CPU schedule (packed B, tiles computed into a
//! local accumulator, vectorized and unrolled inner loops, parallel rows), checked
//! against a plain reference; prints the max error, the time and GFLOP/s.
//!
//! Run: `cargo run --release --example matmul` (on the CPU), or
//! `TVM_DEVICE=opencl cargo run --release --features opencl --example matmul` (on the
//! first OpenCL device; the time includes the copies to and from the device)

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/matmul.rs"]
mod kernel;
use kernel::matmul;

fn main() -> Result<(), tvm::Error> {
    let n = 1024;
    let a = Tensor::from_vec((0..n * n).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect(), [n, n])?;
    let b = Tensor::from_vec((0..n * n).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect(), [n, n])?;
    let mut c = Tensor::<f32, 2>::zeros([n, n]);
    let device = support::device()?;
    matmul::run(&device, &a, &b, &mut c)?; // warm up
    let runs = 5;
    let t = Instant::now();
    for _ in 0..runs {
        matmul::run(&device, &a, &b, &mut c)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;

    let want = support::reference::matmul(a.as_slice(), b.as_slice(), n, n, n);
    let max_err = support::max_relative_error(c.as_slice(), &want);
    println!(
        "matmul {n}x{n}x{n} f32 on {device}: max relative error {max_err:.2e}, {:.2} ms, {:.1} GFLOP/s",
        secs * 1e3,
        2.0 * (n * n * n) as f64 / secs / 1e9
    );
    assert!(max_err < 1e-4, "result differs from the reference");
    Ok(())
}
