//! CPU benches, each against the best alternative in the same run:
//! matmul 1024³ f32 vs `matrixmultiply` (threading), vector add 2^24 vs a plain loop,
//! softmax 4096×1024 vs a plain implementation; an embedding lookup whose row index is
//! checked at run time vs the same lookup with the index clamped (which the compiler
//! proves in bounds: no check), the cost of the check.
//!
//! Run: `cargo bench --bench cpu` (the README's performance table comes from it).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tvm::{Device, Tensor};

#[path = "../examples/kernels/matmul.rs"]
mod matmul_kernel;
use matmul_kernel::matmul;

#[path = "../examples/kernels/vector_add.rs"]
mod vector_add_kernel;
use vector_add_kernel::vector_add;

#[path = "../examples/kernels/softmax.rs"]
mod softmax_kernel;
use softmax_kernel::softmax;

mod embedding {
    tvm::compute! {
        /// Rows picked by `ids`: the row index is read from memory, so it is checked.
        pub fn embed_checked(table: f32[50000, D], ids: i32[N]) -> y: f32[N, D] {
            y[i, j] = table[ids[i] as i64, j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            let (jo, ji) = y.split(y.j, 16);
            y.vectorize(ji);
        }
    }
    tvm::compute! {
        /// The same with the index clamped into the table: proved, so not checked.
        pub fn embed_clamped(table: f32[50000, D], ids: i32[N]) -> y: f32[N, D] {
            y[i, j] = table[min(max(ids[i] as i64, 0), 49999), j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            let (jo, ji) = y.split(y.j, 16);
            y.vectorize(ji);
        }
    }
}

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect()
}

fn bench_matmul(c: &mut Criterion) {
    let n = 1024;
    let a = Tensor::from_vec(values(n * n), [n, n]).unwrap();
    let b = Tensor::from_vec(values(n * n), [n, n]).unwrap();
    let mut out = Tensor::<f32, 2>::zeros([n, n]);
    let mut g = c.benchmark_group("matmul_1024");
    g.throughput(Throughput::Elements(2 * (n * n * n) as u64)).sample_size(10);
    g.bench_function(BenchmarkId::new("tvm-rs", n), |bch| {
        bch.iter(|| matmul::run(&Device::Cpu, &a, &b, &mut out).unwrap())
    });
    let mut want = vec![0f32; n * n];
    g.bench_function(BenchmarkId::new("matrixmultiply", n), |bch| {
        bch.iter(|| unsafe {
            // SAFETY: the pointers and strides describe the three n x n row-major buffers.
            matrixmultiply::sgemm(
                n,
                n,
                n,
                1.0,
                a.as_slice().as_ptr(),
                n as isize,
                1,
                b.as_slice().as_ptr(),
                n as isize,
                1,
                0.0,
                want.as_mut_ptr(),
                n as isize,
                1,
            )
        })
    });
    g.finish();
    let err = out.as_slice().iter().zip(&want).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0f32, f32::max);
    assert!(err < 1e-4, "tvm-rs and matrixmultiply disagree: {err}");
}

fn bench_vector_add(c: &mut Criterion) {
    let n = 1 << 24;
    let a = Tensor::from_vec(values(n), [n]).unwrap();
    let b = Tensor::from_vec(values(n), [n]).unwrap();
    let mut out = Tensor::<f32, 1>::zeros([n]);
    let mut g = c.benchmark_group("vector_add_2^24");
    g.throughput(Throughput::Bytes(3 * 4 * n as u64)).sample_size(10);
    g.bench_function("tvm-rs", |bch| bch.iter(|| vector_add::run(&Device::Cpu, &a, &b, &mut out).unwrap()));
    let mut plain = vec![0f32; n];
    g.bench_function("plain loop", |bch| {
        bch.iter(|| {
            for ((c, a), b) in plain.iter_mut().zip(a.as_slice()).zip(b.as_slice()) {
                *c = a + b;
            }
        })
    });
    g.finish();
    assert_eq!(out.as_slice(), &plain[..]);
}

fn softmax_plain(x: &[f32], y: &mut [f32], cols: usize) {
    for (r, o) in x.chunks(cols).zip(y.chunks_mut(cols)) {
        let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mut s = 0f32;
        for (o, v) in o.iter_mut().zip(r) {
            *o = (v - m).exp();
            s += *o;
        }
        for o in o.iter_mut() {
            *o /= s;
        }
    }
}

fn bench_softmax(c: &mut Criterion) {
    let (rows, cols) = (4096, 1024);
    let x = Tensor::from_vec(values(rows * cols), [rows, cols]).unwrap();
    let mut out = Tensor::<f32, 2>::zeros([rows, cols]);
    let mut g = c.benchmark_group("softmax_4096x1024");
    g.throughput(Throughput::Bytes(2 * 4 * (rows * cols) as u64)).sample_size(10);
    g.bench_function("tvm-rs", |bch| bch.iter(|| softmax::run(&Device::Cpu, &x, &mut out).unwrap()));
    let mut plain = vec![0f32; rows * cols];
    g.bench_function("plain", |bch| bch.iter(|| softmax_plain(x.as_slice(), &mut plain, cols)));
    g.finish();
    let err = out.as_slice().iter().zip(&plain).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(err < 1e-5, "softmax differs from the plain implementation: {err}");
}

fn bench_embedding(c: &mut Criterion) {
    let (v, d, n) = (50000usize, 256usize, 16384usize);
    let table = Tensor::from_vec(values(v * d), [v, d]).unwrap();
    let ids: Vec<i32> = (0..n).map(|i| ((i as u64 * 2654435761) % v as u64) as i32).collect();
    let ids = Tensor::from_vec(ids, [n]).unwrap();
    let (mut a, mut b) = (Tensor::<f32, 2>::zeros([n, d]), Tensor::<f32, 2>::zeros([n, d]));
    let mut g = c.benchmark_group("embedding_16384x256_of_50000");
    g.throughput(Throughput::Bytes(2 * 4 * (n * d) as u64)).sample_size(20);
    g.bench_function("tvm-rs checked", |bch| {
        bch.iter(|| embedding::embed_checked::run(&Device::Cpu, &table, &ids, &mut a).unwrap())
    });
    g.bench_function("tvm-rs clamped", |bch| {
        bch.iter(|| embedding::embed_clamped::run(&Device::Cpu, &table, &ids, &mut b).unwrap())
    });
    g.finish();
    assert_eq!(a.as_slice(), b.as_slice());
    assert!(embedding::embed_checked::source("cpu").unwrap().contains("check_index"));
    assert!(!embedding::embed_clamped::source("cpu").unwrap().contains("check_index"));
}

criterion_group!(benches, bench_matmul, bench_vector_add, bench_softmax, bench_embedding);
criterion_main!(benches);
