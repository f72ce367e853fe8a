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

    // Reference: a plain i-k-j loop.
    let (av, bv) = (a.as_slice(), b.as_slice());
    let mut want = vec![0f32; n * n];
    for i in 0..n {
        for k in 0..n {
            let x = av[i * n + k];
            for j in 0..n {
                want[i * n + j] += x * bv[k * n + j];
            }
        }
    }
    let max_err = c.as_slice().iter().zip(&want).map(|(g, w)| (g - w).abs() / w.abs().max(1.0)).fold(0f32, f32::max);
    println!(
        "matmul {n}x{n}x{n} f32 on {device}: max relative error {max_err:.2e}, {:.2} ms, {:.1} GFLOP/s",
        secs * 1e3,
        2.0 * (n * n * n) as f64 / secs / 1e9
    );
    assert!(max_err < 1e-4, "result differs from the reference");
    Ok(())
}
