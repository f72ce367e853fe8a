//! CPU benches, each against the best alternative in the same run:
//! matmul 1024³ f32 vs `matrixmultiply` (threading), vector add 2^24 vs a plain loop,
//! softmax 4096×1024 vs a plain implementation.
//!
//! Run: `cargo bench --bench cpu` (the README's performance table comes from it).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tvm::{compute, Device, Tensor};

compute! {
    pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[64, 1024, 16] = b[k, x * 16 + y];
        c[i, j] = sum(a[i, k] * bp[j / 16, k, j % 16] for k in 0..1024);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let cl = c.cache_write(local);
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 8, 16);
        c.parallel(io);
        c.vectorize(ji);
        cl.compute_at(c, jo);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 4);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.vectorize(cj);
    }
}

compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }
    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        let (oo, oi) = c.split(o, 1024);
        c.parallel(oo);
        c.vectorize(v);
    }
}

compute! {
    pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..N);
        let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
        y[i, j] = e[i, j] / s[i];
    }
    schedule!(cpu) {
        y.parallel(y.i);
        let (jo, ji) = y.split(y.j, 16);
        y.vectorize(ji);
        m.compute_at(y, y.i);
        e.compute_at(y, y.i);
        s.compute_at(y, y.i);
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
    g.bench_function(BenchmarkId::new("tvm-rs", n), |bch| bch.iter(|| matmul::run(&Device::Cpu, &a, &b, &mut out).unwrap()));
    let mut want = vec![0f32; n * n];
    g.bench_function(BenchmarkId::new("matrixmultiply", n), |bch| {
        bch.iter(|| unsafe {
            // SAFETY: the pointers and strides describe the three n x n row-major buffers.
            matrixmultiply::sgemm(n, n, n, 1.0, a.as_slice().as_ptr(), n as isize, 1, b.as_slice().as_ptr(), n as isize, 1, 0.0, want.as_mut_ptr(), n as isize, 1)
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

criterion_group!(benches, bench_matmul, bench_vector_add, bench_softmax);
criterion_main!(benches);
