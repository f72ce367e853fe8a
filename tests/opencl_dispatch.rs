//! The generated API on `Device::OpenCl`: kernels with GPU schedules (shared tiles,
//! barriers, cross-thread reductions) run on the OpenCL device (PoCL in CI) and agree
//! with the CPU backend. Skips with a reason when no OpenCL device exists, except under
//! `TVM_REQUIRE_TOOLS=1`, where that is a failure.
#![cfg(feature = "opencl")]

use tvm::{compute, Device, Tensor};

// The corpus matmul: shared tiles of a and b, barriers (its `schedule!(cuda)` also
// schedules OpenCL).
mod corpus_matmul {
    include!("../tvm-core/tests/corpus/matmul.rs");
}
use corpus_matmul::matmul;

compute! {
    pub fn row_sum(x: f32[M, N]) -> r: f32[M] {
        r[i] = sum(x[i, j] for j in 0..N);
    }
    schedule!(opencl) {
        r.bind(r.i, block.x);
        let (jo, ji) = r.split(r.j, 32);
        r.bind(ji, thread.x);
    }
}

compute! {
    pub fn scale_shift(x: f32[n], alpha: f32, k: usize) -> y: f32[n] {
        y[i] = alpha * x[i] + k as f32;
    }
}

fn device() -> Option<Device> {
    let d = Device::OpenCl(0);
    match d.check_available() {
        Ok(()) => Some(d),
        Err(e) if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") => panic!("TVM_REQUIRE_TOOLS=1 but {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104729) % 1000) as f32 / 500.0 - 1.0).collect()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{x} vs {y}");
    }
}

#[test]
fn generated_kernels_run_on_opencl_and_agree_with_the_cpu() -> Result<(), tvm::Error> {
    let Some(dev) = device() else { return Ok(()) };
    assert!(matmul::source("opencl")?.contains("__kernel"));
    for (m, k, n) in [(16, 16, 16), (13, 21, 10)] {
        let a = Tensor::from_vec(values(m * k, 1), [m, k])?;
        let b = Tensor::from_vec(values(k * n, 2), [k, n])?;
        let (mut gpu, mut cpu) = (Tensor::<f32, 2>::zeros([m, n]), Tensor::<f32, 2>::zeros([m, n]));
        matmul::run(&dev, &a, &b, &mut gpu)?;
        matmul::run(&Device::Cpu, &a, &b, &mut cpu)?;
        close(gpu.as_slice(), cpu.as_slice());
    }
    let x = Tensor::from_vec(values(5 * 77, 3), [5, 77])?;
    let (mut gpu, mut cpu) = (Tensor::<f32, 1>::zeros([5]), Tensor::<f32, 1>::zeros([5]));
    row_sum::run(&dev, &x, &mut gpu)?;
    row_sum::run(&Device::Cpu, &x, &mut cpu)?;
    close(gpu.as_slice(), cpu.as_slice());
    let x = Tensor::from_vec(values(1000, 4), [1000])?;
    let (mut gpu, mut cpu) = (Tensor::<f32, 1>::zeros([1000]), Tensor::<f32, 1>::zeros([1000]));
    scale_shift::run(&dev, &x, 1.5, 3, &mut gpu)?;
    scale_shift::run(&Device::Cpu, &x, 1.5, 3, &mut cpu)?;
    close(gpu.as_slice(), cpu.as_slice());
    // Shape errors are checked before anything reaches the device.
    let bad = Tensor::from_vec(values(6, 5), [2, 3])?;
    let mut out = Tensor::<f32, 2>::zeros([16, 16]);
    assert!(matches!(matmul::run(&dev, &bad, &bad, &mut out), Err(tvm::Error::ShapeMismatch { .. })));
    Ok(())
}
