//! CUDA benches, each against the best alternative in the same run, on `Device::Cuda(0)`:
//!
//! * sgemm 4096³ f32: a `compute!` kernel with the CUDA schedule of
//!   `examples/kernels/matmul.rs` (128 x 128 tiles per block of 256 threads, 8 x 8 per
//!   thread, both operands staged through shared memory with float4 loads) at 4096³,
//!   against cuBLAS `cublasSgemm_v2` (through cudarc; default math mode, so plain f32,
//!   no TF32).
//! * vector add 2^26 f32 (`examples/kernels/vector_add.rs`, and `vector_add4`: four
//!   elements a thread) against a device-to-device copy of one operand
//!   (`cuMemcpyDtoDAsync`): the add moves 3 x 256 MiB, the copy 2 x. A k-major variant of
//!   the sgemm (`sgemm_4096_kmajor`) against cuBLAS too.
//! * the memory-bound examples on 16384 x 4096 f32 (`bench_rows`) against the least
//!   traffic they must move at the copy rate.
//!
//! Everything stays on the device: inputs and outputs are `DeviceTensor`s passed to
//! `run_on` (cudarc buffers for cuBLAS and the copy), so no host copy is timed. Each timed
//! iteration ends by waiting for the GPU: for tvm-rs, the download of a 1-element device
//! tensor (written before `Device::synchronize` existed, and kept as the H200 figures were
//! measured with it: the runtime's one stream per device runs that copy after every
//! kernel enqueued before, and returns when it is done; a 4-byte copy); for cudarc,
//! `CudaStream::synchronize`. Criterion measures each side (one launch and the wait per
//! iteration); then both run interleaved for a few rounds of several launches and one
//! wait each (which amortises the wait), and a `cuda summary:` line per bench prints the
//! medians, GFLOP/s or GB/s, and the ratio tvm-rs / alternative (above 1: tvm-rs faster).
//!
//! Run: `cargo bench --bench cuda` (the binary `scripts/gpu-check.sh` stages for the GPU
//! machine). Without a CUDA device it prints why and measures nothing; without cuBLAS
//! (`libcublas.so` or `libcublas.so.12` through the dynamic loader) it measures tvm-rs
//! alone and says so.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tvm::{compute, Device, DeviceTensor, Tensor};

#[path = "../examples/kernels/vector_add.rs"]
mod vector_add_kernel;
use vector_add_kernel::vector_add;
#[path = "../examples/kernels/softmax.rs"]
mod softmax_kernel;
use softmax_kernel::softmax;
#[path = "../examples/kernels/layernorm.rs"]
mod layernorm_kernel;
use layernorm_kernel::layernorm;
#[path = "../examples/kernels/softmax_stats.rs"]
mod softmax_stats_kernel;
use softmax_stats_kernel::{stats_online, stats_two_pass};
#[path = "../examples/kernels/argmax.rs"]
mod argmax_kernel;
use argmax_kernel::top1;
#[path = "../examples/kernels/cumsum.rs"]
mod cumsum_kernel;
use cumsum_kernel::cumsum;

const N: usize = 4096;

compute! {
    /// c = a · b at 4096³, b packed into 16-column panels (inlined on CUDA); the schedules
    /// are those of `examples/kernels/matmul.rs`.
    pub fn sgemm_4096(a: f32[4096, 4096], b: f32[4096, 4096]) -> c: f32[4096, 4096] {
        let bp[x, k, y]: f32[256, 4096, 16] = b[k, x * 16 + y];
        c[i, j] = sum(a[i, k] * bp[j / 16, k, j % 16] for k in 0..4096);
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

    schedule!(cuda) {
        bp.compute_inline();
        let cl = c.cache_write(local);
        let (bi, bj, ii, jj) = c.tile(c.i, c.j, 128, 128);
        let (ty, yi) = c.split(ii, 8);
        let (tx, xi) = c.split(jj, 8);
        c.reorder(bi, bj, ty, tx, yi, xi);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        let (xo, xv) = c.split(xi, 4);
        c.vectorize(xv);
        cl.compute_at(c, tx);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 8);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.unroll(cj);
        let a_s = a.cache_read(shared, [cl]);
        let b_s = bp.cache_read(shared, [cl]);
        a_s.compute_at(cl, ko);
        b_s.compute_at(cl, ko);
        let [ay, ax] = a_s.axes();
        let af = a_s.fuse(ay, ax);
        let (at, av) = a_s.split(af, 4);
        let (aty, atx) = a_s.split(at, 16);
        a_s.bind(aty, thread.y);
        a_s.bind(atx, thread.x);
        a_s.vectorize(av);
        let [bx, bk, by] = b_s.axes();
        let bf0 = b_s.fuse(bx, bk);
        let bf = b_s.fuse(bf0, by);
        let (bt, bv) = b_s.split(bf, 4);
        let (bty, btx) = b_s.split(bt, 16);
        b_s.bind(bty, thread.y);
        b_s.bind(btx, thread.x);
        b_s.vectorize(bv);
    }
}

compute! {
    /// An inclusive prefix sum of one long vector, with no schedule: the default GPU
    /// schedule makes it a parallel scan (reduce the chunks, scan the totals, scan the
    /// chunks from their carries).
    pub fn prefix_sum(x: f32[N]) -> y: f32[N] {
        y[i] = if i >= 1 { y[i - 1] + x[i] } else { x[i] };
    }
}

compute! {
    /// c = a · b at 4096³ with both tiles staged k-major in shared memory (`at` is `a`
    /// transposed, inlined, so its shared copy is `[k][i]`; `b`'s is `[k][j]`): each thread
    /// reads its 8 rows and 8 columns of a k-step as contiguous runs (vector loads, no bank
    /// conflicts), where the example's packed panels give 8 threads of a warp one bank.
    pub fn sgemm_4096_kmajor(a: f32[4096, 4096], b: f32[4096, 4096]) -> c: f32[4096, 4096] {
        let at[k, i]: f32[4096, 4096] = a[i, k];
        c[i, j] = sum(at[k, i] * b[k, j] for k in 0..4096);
    }

    schedule!(cuda) {
        at.compute_inline();
        let cl = c.cache_write(local);
        let (bi, bj, ii, jj) = c.tile(c.i, c.j, 128, 128);
        let (ty, yi) = c.split(ii, 8);
        let (tx, xi) = c.split(jj, 8);
        c.reorder(bi, bj, ty, tx, yi, xi);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        let (xo, xv) = c.split(xi, 4);
        c.vectorize(xv);
        cl.compute_at(c, tx);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 8);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.unroll(cj);
        let a_s = at.cache_read(shared, [cl]);
        let b_s = b.cache_read(shared, [cl]);
        a_s.compute_at(cl, ko);
        b_s.compute_at(cl, ko);
        // a's tile: 8 consecutive k of a row per 8 threads (32-byte runs of global memory).
        let [ak, ai] = a_s.axes();
        a_s.reorder(ai, ak);
        let af = a_s.fuse(ai, ak);
        let (at_y, af_x) = a_s.split(af, 64);
        let (af_o, atx) = a_s.split(af_x, 16);
        a_s.reorder(af_o, at_y, atx);
        a_s.bind(at_y, thread.y);
        a_s.bind(atx, thread.x);
        // b's tile: rows of 128, float4 per thread.
        let [bk, bj2] = b_s.axes();
        let bf = b_s.fuse(bk, bj2);
        let (bt, bv) = b_s.split(bf, 4);
        let (bty, btx) = b_s.split(bt, 16);
        b_s.bind(bty, thread.y);
        b_s.bind(btx, thread.x);
        b_s.vectorize(bv);
    }
}

compute! {
    /// The vector add with four elements a thread, as float4 loads and stores.
    pub fn vector_add4(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (o, v) = c.split(c.i, 4);
        let (bx, tx) = c.split(o, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        c.vectorize(v);
    }
}

/// `n` values in [-0.5, 0.5), a different sequence per `seed`.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + seed * 17) * 7919 + seed) % 1000) as f32 / 1000.0 - 0.5).collect()
}

/// What both benches share: the device, the tvm-rs wait, cudarc's context and stream, and
/// cuBLAS or why it is missing.
struct Cuda {
    device: Device,
    /// A 1-element device tensor whose download waits for the runtime's stream.
    marker: DeviceTensor<f32, 1>,
    stream: Arc<CudaStream>,
    blas: Result<CudaBlas, String>,
}

impl Cuda {
    /// Waits for every kernel tvm-rs enqueued on the device.
    fn wait_tvm(&self) {
        self.marker.to_host().unwrap();
    }

    fn wait_cudarc(&self) {
        self.stream.synchronize().unwrap();
    }
}

/// The CUDA setup, made once; `None` (after printing why) without a CUDA device. cudarc is
/// not touched before the runtime found a usable device: it panics where libcuda is
/// missing.
fn cuda() -> Option<&'static Cuda> {
    static CUDA: OnceLock<Option<Cuda>> = OnceLock::new();
    CUDA.get_or_init(|| {
        let device = Device::Cuda(0);
        if let Err(e) = device.check_available() {
            println!("cuda bench: skipped: {e}");
            return None;
        }
        let marker = DeviceTensor::<f32, 1>::zeros(&device, [1]).unwrap();
        let ctx = CudaContext::new(0).unwrap();
        let stream = ctx.default_stream();
        let blas = load_cublas(&stream);
        match &blas {
            Ok(_) => println!("cuda bench: on {device}, against cuBLAS"),
            Err(why) => println!("cuda bench: on {device}; cuBLAS is not measured: {why}"),
        }
        Some(Cuda { device, marker, stream, blas })
    })
    .as_ref()
}

/// A cuBLAS handle on `stream`, or why there is none. cudarc panics where libcublas or
/// one of its functions is missing: the library is looked for first, and the handle made
/// under `catch_unwind`.
fn load_cublas(stream: &Arc<CudaStream>) -> Result<CudaBlas, String> {
    // SAFETY: this only tries to load each name cudarc would, and unloads them again;
    // loading runs libcublas's initialisers, which set up its own state only.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err("the dynamic loader finds no libcublas (libcublas.so, libcublas.so.12, ..)".to_string());
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| CudaBlas::new(stream.clone()))) {
        Ok(Ok(blas)) => Ok(blas),
        Ok(Err(e)) => Err(format!("creating a cuBLAS handle failed ({e:?})")),
        Err(_) => Err("loading cuBLAS panicked (a function is missing from the libcublas found)".to_string()),
    }
}

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `ours` and `theirs` interleaved for `rounds` rounds (alternating which goes first),
/// each side `launches` times per round and then its `wait`: the median seconds per launch
/// of each side.
fn interleaved(rounds: usize, launches: usize, ours: &mut dyn FnMut(), theirs: Option<&mut dyn FnMut()>) -> (f64, f64) {
    let per_launch = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() / launches as f64
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut theirs = theirs;
    for r in 0..rounds {
        if r % 2 == 1 {
            if let Some(f) = theirs.as_deref_mut() {
                b.push(per_launch(f));
            }
        }
        a.push(per_launch(ours));
        if r % 2 == 0 {
            if let Some(f) = theirs.as_deref_mut() {
                b.push(per_launch(f));
            }
        }
    }
    (median(a), if b.is_empty() { f64::NAN } else { median(b) })
}

fn configure(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
}

fn bench_sgemm(c: &mut Criterion) {
    let Some(cu) = cuda() else { return };
    let dev = &cu.device;
    let (a_host, b_host) = (values(N * N, 1), values(N * N, 2));
    let a = Tensor::from_vec(a_host.clone(), [N, N]).unwrap().to_device(dev).unwrap();
    let b = Tensor::from_vec(b_host.clone(), [N, N]).unwrap().to_device(dev).unwrap();
    let mut out = DeviceTensor::<f32, 2>::zeros(dev, [N, N]).unwrap();
    // The first call compiles the kernel (NVRTC, or the disk cache): not timed.
    let t = Instant::now();
    sgemm_4096::run_on(dev, &a, &b, &mut out).unwrap();
    cu.wait_tvm();
    println!("cuda bench: sgemm_4096 first call (load and run) {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let ours_host = out.to_host().unwrap();
    let ours = &ours_host;
    // A sample of entries against an f64 reference on the host.
    for s in 0..64 {
        let (i, j) = ((s * 977 + 13) % N, (s * 331 + 7) % N);
        let want: f64 = (0..N).map(|k| a_host[i * N + k] as f64 * b_host[k * N + j] as f64).sum();
        let scale: f64 = (0..N).map(|k| (a_host[i * N + k] as f64 * b_host[k * N + j] as f64).abs()).sum();
        let got = ours.as_slice()[i * N + j] as f64;
        // f32 sums of 4096 terms: a loose bound, far below what a wrong kernel gives.
        assert!((got - want).abs() <= 1e-4 * scale + 1e-5, "sgemm_4096[{i}, {j}] = {got}, want {want}");
    }

    // cuBLAS: column-major, so C^T = B^T A^T: the row-major b as the left operand.
    let blas = cu.blas.as_ref().ok();
    let (da, db) = (cu.stream.clone_htod(&a_host).unwrap(), cu.stream.clone_htod(&b_host).unwrap());
    let mut dc: CudaSlice<f32> = cu.stream.alloc_zeros(N * N).unwrap();
    let n = N as i32;
    let cfg = GemmConfig {
        transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        m: n,
        n,
        k: n,
        alpha: 1.0f32,
        lda: n,
        ldb: n,
        beta: 0.0f32,
        ldc: n,
    };
    let sgemm = |blas: &CudaBlas, dc: &mut CudaSlice<f32>| {
        // SAFETY: the three buffers hold N x N f32 each, as the configuration says.
        unsafe { blas.gemm(cfg, &db, &da, dc) }.unwrap();
    };
    if let Some(blas) = blas {
        sgemm(blas, &mut dc);
        let theirs = cu.stream.clone_dtoh(&dc).unwrap();
        let (mut err, mut max) = (0f32, 0f32);
        for (x, y) in ours.as_slice().iter().zip(&theirs) {
            err = err.max((x - y).abs());
            max = max.max(y.abs());
        }
        println!("cuda bench: sgemm_4096 vs cuBLAS: max |difference| {err:e}, max |c| {max}");
        assert!(err <= 1e-3 * max.max(1.0), "tvm-rs and cuBLAS disagree: {err} (max |c| {max})");
    }

    let flops = 2.0 * (N as f64).powi(3);
    let mut g = c.benchmark_group("sgemm_4096");
    configure(&mut g);
    g.throughput(Throughput::Elements(flops as u64));
    g.bench_function("tvm-rs", |bch| {
        bch.iter(|| {
            sgemm_4096::run_on(dev, &a, &b, &mut out).unwrap();
            cu.wait_tvm();
        })
    });
    if let Some(blas) = blas {
        g.bench_function("cuBLAS", |bch| {
            bch.iter(|| {
                sgemm(blas, &mut dc);
                cu.wait_cudarc();
            })
        });
    }
    g.finish();

    let launches = 5;
    let mut ours = || {
        for _ in 0..launches {
            sgemm_4096::run_on(dev, &a, &b, &mut out).unwrap();
        }
        cu.wait_tvm();
    };
    let mut theirs = || {
        if let Some(blas) = blas {
            for _ in 0..launches {
                sgemm(blas, &mut dc);
            }
            cu.wait_cudarc();
        }
    };
    let theirs_dyn = blas.is_some().then_some(&mut theirs as &mut dyn FnMut());
    let (t_ours, t_theirs) = interleaved(10, launches, &mut ours, theirs_dyn);
    let gflops = |t: f64| flops / t / 1e9;
    // The k-major variant: the same product, checked against the first, timed the same way.
    let mut out_k = DeviceTensor::<f32, 2>::zeros(dev, [N, N]).unwrap();
    sgemm_4096_kmajor::run_on(dev, &a, &b, &mut out_k).unwrap();
    let got_k = out_k.to_host().unwrap();
    let diff = got_k.as_slice().iter().zip(ours_host.as_slice()).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
    println!("cuda bench: sgemm_4096_kmajor vs sgemm_4096: max |difference| {diff:e}");
    assert!(diff <= 1e-3, "the k-major product differs from the example's by {diff}");
    let mut ours_k = || {
        for _ in 0..launches {
            sgemm_4096_kmajor::run_on(dev, &a, &b, &mut out_k).unwrap();
        }
        cu.wait_tvm();
    };
    let theirs_dyn = blas.is_some().then_some(&mut theirs as &mut dyn FnMut());
    let (t_k, t_theirs_k) = interleaved(10, launches, &mut ours_k, theirs_dyn);
    let vs_blas = if blas.is_some() {
        format!("ratio tvm-rs / cuBLAS {:.3}", t_theirs_k / t_k)
    } else {
        "cuBLAS not measured".into()
    };
    println!(
        "cuda summary: k-major sgemm 4096³ f32 (variant): tvm-rs {:.0} GFLOP/s ({:.3} ms); {vs_blas}",
        gflops(t_k),
        t_k * 1e3,
    );
    match blas {
        Some(_) => println!(
            "cuda summary: sgemm 4096³ f32: tvm-rs {:.0} GFLOP/s ({:.3} ms), cuBLAS {:.0} GFLOP/s ({:.3} ms); \
             ratio tvm-rs / cuBLAS {:.3} (medians of 10 rounds of {launches} launches and one wait)",
            gflops(t_ours),
            t_ours * 1e3,
            gflops(t_theirs),
            t_theirs * 1e3,
            t_theirs / t_ours
        ),
        None => println!(
            "cuda summary: sgemm 4096³ f32: tvm-rs {:.0} GFLOP/s ({:.3} ms); cuBLAS not measured: {}",
            gflops(t_ours),
            t_ours * 1e3,
            cu.blas.as_ref().err().unwrap()
        ),
    }
}

fn bench_vector_add(c: &mut Criterion) {
    let Some(cu) = cuda() else { return };
    let dev = &cu.device;
    let n = 1usize << 26;
    let (a_host, b_host) = (values(n, 3), values(n, 4));
    let a = Tensor::from_vec(a_host.clone(), [n]).unwrap().to_device(dev).unwrap();
    let b = Tensor::from_vec(b_host.clone(), [n]).unwrap().to_device(dev).unwrap();
    let mut out = DeviceTensor::<f32, 1>::zeros(dev, [n]).unwrap();
    vector_add::run_on(dev, &a, &b, &mut out).unwrap();
    let got_all = out.to_host().unwrap();
    for (i, ((g, x), y)) in got_all.as_slice().iter().zip(&a_host).zip(&b_host).enumerate() {
        assert_eq!(*g, x + y, "vector_add[{i}]");
    }

    let src = cu.stream.clone_htod(&a_host).unwrap();
    let mut dst: CudaSlice<f32> = cu.stream.alloc_zeros(n).unwrap();
    cu.stream.memcpy_dtod(&src, &mut dst).unwrap();
    assert_eq!(cu.stream.clone_dtoh(&dst).unwrap(), a_host, "the device-to-device copy");

    let bytes = 4.0 * n as f64;
    let mut g = c.benchmark_group("vector_add_2^26");
    configure(&mut g);
    g.throughput(Throughput::Bytes(3 * 4 * n as u64));
    g.bench_function("tvm-rs", |bch| {
        bch.iter(|| {
            vector_add::run_on(dev, &a, &b, &mut out).unwrap();
            cu.wait_tvm();
        })
    });
    g.throughput(Throughput::Bytes(2 * 4 * n as u64));
    g.bench_function("memcpy_dtod", |bch| {
        bch.iter(|| {
            cu.stream.memcpy_dtod(&src, &mut dst).unwrap();
            cu.wait_cudarc();
        })
    });
    g.finish();

    let launches = 20;
    let mut ours = || {
        for _ in 0..launches {
            vector_add::run_on(dev, &a, &b, &mut out).unwrap();
        }
        cu.wait_tvm();
    };
    let mut theirs = || {
        for _ in 0..launches {
            cu.stream.memcpy_dtod(&src, &mut dst).unwrap();
        }
        cu.wait_cudarc();
    };
    let (t_ours, t_copy) = interleaved(20, launches, &mut ours, Some(&mut theirs));
    let (gbs_ours, gbs_copy) = (3.0 * bytes / t_ours / 1e9, 2.0 * bytes / t_copy / 1e9);
    // The same add, four elements a thread (float4).
    let mut out4 = DeviceTensor::<f32, 1>::zeros(dev, [n]).unwrap();
    vector_add4::run_on(dev, &a, &b, &mut out4).unwrap();
    assert_eq!(out4.to_host().unwrap().as_slice(), got_all.as_slice(), "vector_add4 equals vector_add");
    let mut ours4 = || {
        for _ in 0..launches {
            vector_add4::run_on(dev, &a, &b, &mut out4).unwrap();
        }
        cu.wait_tvm();
    };
    let (t_ours4, t_copy4) = interleaved(20, launches, &mut ours4, Some(&mut theirs));
    let (gbs_ours4, gbs_copy4) = (3.0 * bytes / t_ours4 / 1e9, 2.0 * bytes / t_copy4 / 1e9);
    println!(
        "cuda summary: float4 vector add 2^26 f32 (variant): tvm-rs {gbs_ours4:.0} GB/s ({:.1} µs), device-to-device \
         copy {gbs_copy4:.0} GB/s; ratio tvm-rs / copy {:.3}",
        t_ours4 * 1e6,
        gbs_ours4 / gbs_copy4
    );
    println!(
        "cuda summary: vector add 2^26 f32: tvm-rs {gbs_ours:.0} GB/s ({:.1} µs, 3 x 256 MiB), device-to-device copy \
         {gbs_copy:.0} GB/s ({:.1} µs, 2 x 256 MiB); ratio tvm-rs / copy {:.3} (in GB/s; medians of 20 rounds of \
         {launches} launches and one wait)",
        t_ours * 1e6,
        t_copy * 1e6,
        gbs_ours / gbs_copy
    );
}

/// The example kernels that are bound by memory (softmax, layer norm, a softmax's
/// statistics in one pass and in two, argmax, row-wise cumsum with the example's schedule
/// of one thread per row, and a parallel prefix sum with the default schedule), each on
/// 256 MiB of f32 already on the device, checked against a host reference on a sample of
/// rows, and timed against the least traffic it must move at the rate of a
/// device-to-device copy measured in the same rounds: `fraction of the copy rate` is the
/// time that traffic takes at that rate over the kernel's time (1.0: as fast as a copy).
fn bench_rows(_c: &mut Criterion) {
    let Some(cu) = cuda() else { return };
    let dev = &cu.device;
    let (rows, cols) = (16384usize, 4096usize);
    let n = rows * cols;
    let x_host = values(n, 5);
    let x2 = Tensor::from_vec(x_host.clone(), [rows, cols]).unwrap();
    let x = x2.to_device(dev).unwrap();
    let x1 = Tensor::from_vec(x_host.clone(), [n]).unwrap().to_device(dev).unwrap();
    let gamma_host: Vec<f32> = (0..cols).map(|j| 1.0 + (j % 7) as f32 * 0.125).collect();
    let beta_host: Vec<f32> = (0..cols).map(|j| (j % 5) as f32 * 0.25 - 0.5).collect();
    let gamma = Tensor::from_vec(gamma_host.clone(), [cols]).unwrap().to_device(dev).unwrap();
    let beta = Tensor::from_vec(beta_host.clone(), [cols]).unwrap().to_device(dev).unwrap();
    let mut y = DeviceTensor::<f32, 2>::zeros(dev, [rows, cols]).unwrap();
    let mut y1 = DeviceTensor::<f32, 1>::zeros(dev, [n]).unwrap();
    let (mut m, mut s) =
        (DeviceTensor::<f32, 1>::zeros(dev, [rows]).unwrap(), DeviceTensor::<f32, 1>::zeros(dev, [rows]).unwrap());
    let mut at = DeviceTensor::<i64, 1>::zeros(dev, [rows]).unwrap();
    let src = cu.stream.clone_htod(&x_host).unwrap();
    let mut dst: CudaSlice<f32> = cu.stream.alloc_zeros(n).unwrap();
    let sample: Vec<usize> = (0..16).map(|k| (k * 1031 + 7) % rows).collect();
    let row = |r: usize| &x_host[r * cols..(r + 1) * cols];
    // Relative to the value (softmax's are about 2.4e-4 here), plus an absolute `floor`
    // for values near zero: f32 rounding of a normalised row or a running sum of
    // thousands of terms, far below what a wrong kernel gives.
    let close = |got: f32, want: f64, floor: f64, what: &str| {
        assert!((got as f64 - want).abs() <= 1e-4 * want.abs() + floor, "{what}: got {got}, want {want}");
    };

    // Each kernel once, checked on the sampled rows.
    softmax::run_on(dev, &x, &mut y).unwrap();
    let got = y.to_host().unwrap();
    for &r in &sample {
        let mx = row(r).iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let sum: f64 = row(r).iter().map(|&v| (v as f64 - mx).exp()).sum();
        for (j, &v) in row(r).iter().enumerate().step_by(61) {
            close(got.as_slice()[r * cols + j], (v as f64 - mx).exp() / sum, 1e-8, "softmax");
        }
    }
    layernorm::run_on(dev, &x, &gamma, &beta, &mut y).unwrap();
    let got = y.to_host().unwrap();
    for &r in &sample {
        let mean = row(r).iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
        let var = row(r).iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
        for (j, &v) in row(r).iter().enumerate().step_by(61) {
            let want = (v as f64 - mean) / (var + 1e-5).sqrt() * gamma_host[j] as f64 + beta_host[j] as f64;
            close(got.as_slice()[r * cols + j], want, 1e-4, "layernorm");
        }
    }
    for online in [true, false] {
        if online {
            stats_online::run_on(dev, &x, &mut m, &mut s).unwrap();
        } else {
            stats_two_pass::run_on(dev, &x, &mut m, &mut s).unwrap();
        }
        let (gm, gs) = (m.to_host().unwrap(), s.to_host().unwrap());
        for &r in &sample {
            let mx = row(r).iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(gm.as_slice()[r], mx, "softmax statistics (one pass: {online}): max of row {r}");
            let want: f64 = row(r).iter().map(|&v| (v as f64 - mx as f64).exp()).sum();
            assert!(
                ((gs.as_slice()[r] as f64 - want) / want).abs() < 1e-5,
                "softmax statistics (one pass: {online}): sum of row {r}: {} vs {want}",
                gs.as_slice()[r]
            );
        }
    }
    top1::run_on(dev, &x, &mut m, &mut at).unwrap();
    let (gm, ga) = (m.to_host().unwrap(), at.to_host().unwrap());
    for &r in &sample {
        let mx = row(r).iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let first = row(r).iter().position(|&v| v == mx).unwrap() as i64;
        assert_eq!((gm.as_slice()[r], ga.as_slice()[r]), (mx, first), "argmax of row {r}");
    }
    cumsum::run_on(dev, &x, &mut y).unwrap();
    let got = y.to_host().unwrap();
    for &r in &sample {
        let mut acc = 0f64;
        for (j, &v) in row(r).iter().enumerate() {
            acc += v as f64;
            if j % 97 == 0 {
                close(got.as_slice()[r * cols + j], acc, 1e-3, "cumsum");
            }
        }
    }
    prefix_sum::run_on(dev, &x1, &mut y1).unwrap();
    let got = y1.to_host().unwrap();
    let mut acc = 0f64;
    let mut worst = 0f64;
    for (i, &v) in x_host.iter().enumerate() {
        acc += v as f64;
        if i % 4099 == 0 || i == n - 1 {
            worst = worst.max((got.as_slice()[i] as f64 - acc).abs());
        }
    }
    // The partial sums reach 33,556, and a serial f32 scan of these values is off by up
    // to 0.025 (both by numpy in f32 and f64); the H200 run's scan was off by 0.018 on
    // this sample. A lost carry moves a whole chunk by the sum before it, and a lost
    // chunk total moves everything after it by that total (2048-element totals: median
    // 1.0).
    assert!(worst < 0.05, "prefix_sum: largest absolute error {worst} on the sample");
    println!(
        "cuda bench: memory-bound kernels on {rows}x{cols} f32 checked on {} rows; prefix_sum max |error| {worst:.3e}",
        sample.len()
    );

    // (name, the least bytes it must move); `launch(k)` runs kernel k once.
    let tensor_bytes = 4.0 * n as f64;
    let kernels = [
        ("softmax (example schedule)", 2.0 * tensor_bytes),
        ("layernorm (example schedule)", 2.0 * tensor_bytes),
        ("softmax statistics, one pass", tensor_bytes),
        ("softmax statistics, two passes", tensor_bytes),
        ("argmax (example schedule)", tensor_bytes),
        ("row cumsum (example: a thread per row)", 2.0 * tensor_bytes),
        ("prefix sum 2^26 (default: parallel scan)", 2.0 * tensor_bytes),
    ];
    let mut launch = |k: usize| match k {
        0 => softmax::run_on(dev, &x, &mut y).unwrap(),
        1 => layernorm::run_on(dev, &x, &gamma, &beta, &mut y).unwrap(),
        2 => stats_online::run_on(dev, &x, &mut m, &mut s).unwrap(),
        3 => stats_two_pass::run_on(dev, &x, &mut m, &mut s).unwrap(),
        4 => top1::run_on(dev, &x, &mut m, &mut at).unwrap(),
        5 => cumsum::run_on(dev, &x, &mut y).unwrap(),
        _ => prefix_sum::run_on(dev, &x1, &mut y1).unwrap(),
    };
    let launches = 10;
    for (k, &(name, bytes)) in kernels.iter().enumerate() {
        let mut ours = || {
            for _ in 0..launches {
                launch(k);
            }
            cu.wait_tvm();
        };
        let mut copy = || {
            for _ in 0..launches {
                cu.stream.memcpy_dtod(&src, &mut dst).unwrap();
            }
            cu.wait_cudarc();
        };
        ours();
        let (t_ours, t_copy) = interleaved(10, launches, &mut ours, Some(&mut copy));
        // The copy moves 2 x 256 MiB; at its rate, `bytes` take:
        let floor = t_copy * bytes / (2.0 * tensor_bytes);
        println!(
            "cuda summary: {name}, {rows}x{cols} f32: tvm-rs {:.1} µs ({:.0} GB/s of least traffic); the copy rate {:.0} GB/s \
             would move that traffic in {:.1} µs: fraction of the copy rate {:.3} (medians of 10 rounds of {launches} launches)",
            t_ours * 1e6,
            bytes / t_ours / 1e9,
            2.0 * tensor_bytes / t_copy / 1e9,
            floor * 1e6,
            floor / t_ours
        );
    }

    // The profile's device timestamps (CUDA events) and the peak fraction.
    let p = softmax::profile(dev, &x2).unwrap();
    println!("cuda bench: profile: {p}");
    println!("cuda bench: profile peak fraction: {:?}", p.peak_fraction());
}

criterion_group!(benches, bench_sgemm, bench_vector_add, bench_rows);
criterion_main!(benches);
