//! CUDA benches, each against the best alternative in the same run, on `Device::Cuda(0)`:
//!
//! * sgemm 4096³ f32: a `compute!` kernel with the CUDA schedule of
//!   `examples/kernels/matmul.rs` (128 x 128 tiles per block of 256 threads, 8 x 8 per
//!   thread, both operands staged through shared memory with float4 loads) at 4096³,
//!   against cuBLAS `cublasSgemm_v2` (through cudarc; default math mode, so plain f32,
//!   no TF32).
//! * vector add 2^26 f32 (`examples/kernels/vector_add.rs`) against a device-to-device
//!   copy of one operand (`cuMemcpyDtoDAsync`): the add moves 3 x 256 MiB, the copy 2 x.
//!
//! Everything stays on the device: inputs and outputs are `DeviceTensor`s passed to
//! `run_on` (cudarc buffers for cuBLAS and the copy), so no host copy is timed. Each timed
//! iteration ends by waiting for the GPU: for tvm-rs, the download of a 1-element device
//! tensor (the runtime has no public synchronize; its one stream per device runs that
//! copy after every kernel enqueued before, and returns when it is done); for cudarc,
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
    let ours = out.to_host().unwrap();
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
    let got = out.to_host().unwrap();
    for (i, ((g, x), y)) in got.as_slice().iter().zip(&a_host).zip(&b_host).enumerate() {
        assert_eq!(*g, x + y, "vector_add[{i}]");
    }
    drop(got);

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
    println!(
        "cuda summary: vector add 2^26 f32: tvm-rs {gbs_ours:.0} GB/s ({:.1} µs, 3 x 256 MiB), device-to-device copy \
         {gbs_copy:.0} GB/s ({:.1} µs, 2 x 256 MiB); ratio tvm-rs / copy {:.3} (in GB/s; medians of 20 rounds of \
         {launches} launches and one wait)",
        t_ours * 1e6,
        t_copy * 1e6,
        gbs_ours / gbs_copy
    );
}

criterion_group!(benches, bench_sgemm, bench_vector_add);
criterion_main!(benches);
