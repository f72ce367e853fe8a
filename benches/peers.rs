//! The tvm-rs side of the peer comparison (`benches/peers/run.py`, which runs this bench,
//! then TVM, Halide, numpy and ONNX Runtime on the same kernels, and prints one table).
//! One criterion group per kernel, named as in `benches/peers/peers.py`, with the
//! function id `tvm-rs`; 3 s warm-up and 10 samples, as the peers are timed.
//!
//! Run: `bash benches/peers/run.sh` (all of it), or `cargo bench --bench peers` (this side).

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use tvm::{Device, Tensor};

#[path = "peers/kernels.rs"]
mod same_schedule;

#[path = "peers/noschedule.rs"]
mod noschedule;

#[path = "../examples/kernels/conv2d.rs"]
mod conv2d_kernel;
#[path = "../examples/kernels/layernorm.rs"]
mod layernorm_kernel;
#[path = "../examples/kernels/matmul.rs"]
mod matmul_kernel;
#[path = "../examples/kernels/softmax.rs"]
mod softmax_kernel;
#[path = "../examples/kernels/vector_add.rs"]
mod vector_add_kernel;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + seed) * 7919) % 1000) as f32 / 1000.0 - 0.5).collect()
}

fn bench(c: &mut Criterion, id: &str, mut f: impl FnMut()) {
    // TVM and Halide are given the schedules as written: so is tvm-rs (not the winners
    // of the examples' tuning records; `benches/tuning.rs` compares those).
    tvm::tuning::set_tuning_enabled(false);
    let mut g = c.benchmark_group(id);
    g.sample_size(10).warm_up_time(Duration::from_secs(3)).measurement_time(Duration::from_secs(5));
    g.bench_function("tvm-rs", |b| b.iter(&mut f));
    g.finish();
}

fn gemm(c: &mut Criterion) {
    let n = 1024;
    let a = Tensor::from_vec(values(n * n, 1), [n, n]).unwrap();
    let b = Tensor::from_vec(values(n * n, 2), [n, n]).unwrap();
    let mut out = Tensor::<f32, 2>::zeros([n, n]);
    let d = Device::Cpu;
    use same_schedule::*;
    bench(c, "sgemm_bn32", || sgemm_bn32::run(&d, &a, &b, &mut out).unwrap());
    bench(c, "sgemm_bn16", || sgemm_bn16::run(&d, &a, &b, &mut out).unwrap());
    bench(c, "sgemm_bn64", || sgemm_bn64::run(&d, &a, &b, &mut out).unwrap());
    bench(c, "sgemm_bn32_nocache", || sgemm_bn32_nocache::run(&d, &a, &b, &mut out).unwrap());
    bench(c, "matmul", || matmul_kernel::matmul::run(&d, &a, &b, &mut out).unwrap());
}

fn conv(c: &mut Criterion) {
    let data = Tensor::from_vec(values(64 * 56 * 56, 3), [1, 64, 56, 56]).unwrap();
    let w = Tensor::from_vec(values(64 * 64 * 9, 4), [64, 64, 3, 3]).unwrap();
    let mut out = Tensor::<f32, 4>::zeros([1, 64, 56, 56]);
    let d = Device::Cpu;
    bench(c, "conv2d_padded", || same_schedule::conv2d_padded::run(&d, &data, &w, &mut out).unwrap());
    bench(c, "conv2d", || conv2d_kernel::conv2d::run(&d, &data, &w, &mut out).unwrap());
    bench(c, "conv2d_if", || same_schedule::conv2d_if::run(&d, &data, &w, &mut out).unwrap());
}

fn rows(c: &mut Criterion) {
    let (m, n) = (4096, 1024);
    let x = Tensor::from_vec(values(m * n, 5).iter().map(|v| v * 8.0).collect(), [m, n]).unwrap();
    let gamma = Tensor::from_vec(values(n, 6), [n]).unwrap();
    let beta = Tensor::from_vec(values(n, 7), [n]).unwrap();
    let mut y = Tensor::<f32, 2>::zeros([m, n]);
    let d = Device::Cpu;
    bench(c, "softmax", || softmax_kernel::softmax::run(&d, &x, &mut y).unwrap());
    bench(c, "layernorm", || layernorm_kernel::layernorm::run(&d, &x, &gamma, &beta, &mut y).unwrap());
}

fn vector_add(c: &mut Criterion) {
    let n = 1 << 24;
    let a = Tensor::from_vec(values(n, 8), [n]).unwrap();
    let b = Tensor::from_vec(values(n, 9), [n]).unwrap();
    let mut out = Tensor::<f32, 1>::zeros([n]);
    let d = Device::Cpu;
    bench(c, "vector_add", || vector_add_kernel::vector_add::run(&d, &a, &b, &mut out).unwrap());
    // The machine's copy bandwidth in the same run (2 x 2^24 x 4 bytes moved).
    let mut dst = vec![0f32; n];
    let mut g = c.benchmark_group("copy");
    g.sample_size(10).warm_up_time(Duration::from_secs(3)).measurement_time(Duration::from_secs(5));
    g.bench_function("copy_from_slice", |bch| bch.iter(|| dst.copy_from_slice(a.as_slice())));
    g.finish();
}

/// The roll of `auto_roll`, in columns (as `ROLL` in peers.py).
const ROLL: i64 = 37;

/// The kernels without a `schedule!` block (the auto-scheduler's schedules).
fn no_schedule(c: &mut Criterion) {
    use noschedule::*;
    let d = Device::Cpu;
    let t2 = |r: usize, k: usize, salt: usize| Tensor::from_vec(values(r * k, salt), [r, k]).unwrap();
    for n in [1024, 1000, 127] {
        let (a, b) = (t2(n, n, 1), t2(n, n, 2));
        let mut out = Tensor::<f32, 2>::zeros([n, n]);
        match n {
            1024 => bench(c, "auto_matmul", || auto_matmul::run(&d, &a, &b, &mut out).unwrap()),
            1000 => bench(c, "auto_matmul_1000", || auto_matmul_1000::run(&d, &a, &b, &mut out).unwrap()),
            _ => bench(c, "auto_matmul_127", || auto_matmul_127::run(&d, &a, &b, &mut out).unwrap()),
        }
    }
    let a = Tensor::from_vec(values(16 * 256 * 256, 3), [16, 256, 256]).unwrap();
    let b = Tensor::from_vec(values(16 * 256 * 256, 4), [16, 256, 256]).unwrap();
    let mut out = Tensor::<f32, 3>::zeros([16, 256, 256]);
    bench(c, "auto_bmm", || auto_bmm::run(&d, &a, &b, &mut out).unwrap());
    let data = Tensor::from_vec(values(64 * 56 * 56, 3), [1, 64, 56, 56]).unwrap();
    let w = Tensor::from_vec(values(64 * 64 * 9, 4), [64, 64, 3, 3]).unwrap();
    let mut out = Tensor::<f32, 4>::zeros([1, 64, 56, 56]);
    bench(c, "auto_conv2d", || auto_conv2d::run(&d, &data, &w, &mut out).unwrap());
    let data = Tensor::from_vec(values(128 * 56 * 56, 5), [1, 128, 56, 56]).unwrap();
    let w = Tensor::from_vec(values(128 * 9, 6), [128, 3, 3]).unwrap();
    let mut out = Tensor::<f32, 4>::zeros([1, 128, 56, 56]);
    bench(c, "auto_dwconv", || auto_dwconv::run(&d, &data, &w, &mut out).unwrap());
    let (m, n) = (4096, 1024);
    let x = Tensor::from_vec(values(m * n, 5).iter().map(|v| v * 8.0).collect(), [m, n]).unwrap();
    let (gamma, beta) = (Tensor::from_vec(values(n, 6), [n]).unwrap(), Tensor::from_vec(values(n, 7), [n]).unwrap());
    let mut y = Tensor::<f32, 2>::zeros([m, n]);
    bench(c, "auto_softmax", || auto_softmax::run(&d, &x, &mut y).unwrap());
    bench(c, "auto_layernorm", || auto_layernorm::run(&d, &x, &gamma, &beta, &mut y).unwrap());
    bench(c, "auto_chain", || auto_chain::run(&d, &x, &gamma, &beta, &mut y).unwrap());
    bench(c, "auto_roll", || auto_roll::run(&d, &x, ROLL, &mut y).unwrap());
    let sq = t2(4096, 4096, 8);
    let mut r = Tensor::<f32, 1>::zeros([4096]);
    bench(c, "auto_rowsum", || auto_rowsum::run(&d, &sq, &mut r).unwrap());
    bench(c, "auto_colsum", || auto_colsum::run(&d, &sq, &mut r).unwrap());
    let mut t = Tensor::<f32, 2>::zeros([4096, 4096]);
    bench(c, "auto_transpose", || auto_transpose::run(&d, &sq, &mut t).unwrap());
}

criterion_group!(benches, gemm, conv, rows, vector_add, no_schedule);
criterion_main!(benches);
