//! Runs the crate's kernels on `Device::default()` (CUDA when a device is present and the
//! runtime has the CUDA backend, else the CPU; `TVM_DEVICE` chooses), checks them against
//! plain loops, and prints which device ran and which CUDA binaries the build embedded.
//!
//! `cargo run --release -p tvm-cuda-app` (with nvcc on `PATH` or in `NVCC` the binaries
//! are embedded; `TVM_CUDA_ARCH=sm_80,sm_90` chooses the architectures).

use tvm::{Device, Tensor};
use tvm_cuda_app::{describe, kernels, matmul, softmax, vector_add, BUILD_ARCHS, BUILD_NVCC};

fn main() -> Result<(), tvm::Error> {
    let device = Device::default();
    println!("device: {device}");

    let n = 1 << 20;
    let a = Tensor::from_vec((0..n).map(|i| (i % 1000) as f32 * 0.5).collect(), [n])?;
    let b = Tensor::from_vec((0..n).map(|i| (i % 7) as f32).collect(), [n])?;
    let mut c = Tensor::<f32, 1>::zeros([n]);
    vector_add::run(&device, &a, &b, &mut c)?;
    let ok = c.as_slice().iter().zip(a.as_slice().iter().zip(b.as_slice())).all(|(c, (a, b))| *c == a + b);
    println!("vector_add n=2^20 on {device}: {}", if ok { "ok" } else { "WRONG" });

    // 1024³: rows 0, 511 and 1023 are checked against a plain loop.
    let m = 1024;
    let a = Tensor::from_vec((0..m * m).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect(), [m, m])?;
    let b = Tensor::from_vec((0..m * m).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect(), [m, m])?;
    let mut c = Tensor::<f32, 2>::zeros([m, m]);
    matmul::run(&device, &a, &b, &mut c)?;
    let (a_, b_, c_) = (a.as_slice(), b.as_slice(), c.as_slice());
    let mut max_err = 0f32;
    for i in [0, 511, 1023] {
        for j in 0..m {
            let want: f32 = (0..m).map(|k| a_[i * m + k] * b_[k * m + j]).sum();
            max_err = max_err.max((c_[i * m + j] - want).abs() / want.abs().max(1.0));
        }
    }
    println!("matmul 1024³ on {device}: max relative error {max_err:.1e} (3 rows checked)");

    let (rows, cols) = (64, 1000);
    let x = Tensor::from_vec((0..rows * cols).map(|i| ((i * 3) % 17) as f32 / 4.0).collect(), [rows, cols])?;
    let y = softmax(&x)?;
    let worst = y.as_slice().chunks(cols).map(|r| (r.iter().sum::<f32>() - 1.0).abs()).fold(0f32, f32::max);
    println!("softmax {rows}x{cols} on {}: rows sum to 1 within {worst:.1e}", Device::default());

    let nvcc = if BUILD_NVCC.is_empty() { "none found".to_string() } else { BUILD_NVCC.to_string() };
    println!("build: nvcc {nvcc}; TVM_CUDA_ARCH compute capabilities {BUILD_ARCHS}");
    for k in kernels() {
        println!("{}: CUDA binaries embedded: {}", k.name, describe(k.binaries));
    }
    assert!(ok && max_err < 1e-4 && worst < 1e-4, "a kernel computed a wrong result");
    Ok(())
}
