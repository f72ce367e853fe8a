//! Host overhead per call on OpenCL: the generated `run` of a 1024-element vector add
//! against a hand-written opencl3 launch of the same program text, in the same run.
//!
//! The hand-written side does what a careful user would write by hand for each call on
//! host data: its buffers, program and kernel object are made once, outside the timed
//! loop; each call writes both inputs, sets the arguments, launches and reads the output
//! back (blocking). The generated side does all of that plus its checks (shapes, device,
//! limits) and its caches. Both run on OpenCL device 0 (on this project's machines, PoCL).
//!
//! Criterion measures each side on its own; then the two calls run interleaved for 3000
//! rounds (alternating which goes first), and the medians and the median per-round ratio
//! are printed: PoCL's timings drift on a shared machine, and interleaving cancels that.
//!
//! Run: `cargo bench --bench opencl_overhead`. With no OpenCL device it prints why and
//! measures nothing.

use criterion::{criterion_group, criterion_main, Criterion};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;
use tvm::{Device, Tensor};

#[path = "../examples/kernels/vector_add.rs"]
mod vector_add_kernel;
use vector_add_kernel::vector_add;

const N: usize = 1024;

/// The first device of the first platform that has one: `Device::OpenCl(0)`.
fn first_device() -> Option<ClDevice> {
    let platforms = opencl3::platform::get_platforms().ok()?;
    platforms
        .iter()
        .find_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).ok().and_then(|ids| ids.first().copied()))
        .map(ClDevice::new)
}

fn bench(c: &mut Criterion) {
    let device = Device::OpenCl(0);
    if let Err(e) = device.check_available() {
        eprintln!("opencl_overhead: skipped: {e}");
        return;
    }
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let (ta, tb) = (Tensor::from_vec(a.clone(), [N]).unwrap(), Tensor::from_vec(b.clone(), [N]).unwrap());
    let mut tc = Tensor::<f32, 1>::zeros([N]);

    // The hand-written launch of the program the macro generated.
    let source = vector_add::source("opencl").unwrap();
    let dev = first_device().expect("an OpenCL device");
    let context = Context::from_device(&dev).unwrap();
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0).unwrap();
    let program = Program::create_and_build_from_source(&context, source, "").unwrap();
    let kernel = Kernel::create(&program, "vector_add_kernel0").unwrap();
    // SAFETY: no host pointer is passed.
    let make = || unsafe { Buffer::<f32>::create(&context, CL_MEM_READ_WRITE, N, std::ptr::null_mut()).unwrap() };
    let (mut da, mut db, dc) = (make(), make(), make());
    let mut out = vec![0f32; N];
    let mut by_hand = |out: &mut [f32]| {
        // SAFETY: each buffer holds N f32; the copies are blocking; the arguments match
        // the kernel's parameters (three `__global float*`, then a `long`).
        unsafe {
            queue.enqueue_write_buffer(&mut da, CL_BLOCKING, 0, &a, &[]).unwrap();
            queue.enqueue_write_buffer(&mut db, CL_BLOCKING, 0, &b, &[]).unwrap();
            kernel.set_arg(0, &dc.get()).unwrap();
            kernel.set_arg(1, &da.get()).unwrap();
            kernel.set_arg(2, &db.get()).unwrap();
            kernel.set_arg(3, &(N as i64)).unwrap();
            let global = [N.div_ceil(256) * 256, 1, 1];
            let local = [256usize, 1, 1];
            queue
                .enqueue_nd_range_kernel(kernel.get(), 3, std::ptr::null(), global.as_ptr(), local.as_ptr(), &[])
                .unwrap();
            queue.enqueue_read_buffer(&dc, CL_BLOCKING, 0, out, &[]).unwrap();
        }
    };
    by_hand(&mut out);
    assert_eq!(out, want, "the hand-written launch computes the sum");
    vector_add::run(&device, &ta, &tb, &mut tc).unwrap();
    assert_eq!(tc.as_slice(), &want[..], "the generated run computes the sum");

    let mut g = c.benchmark_group("opencl_vector_add_1024");
    g.bench_function("generated run", |bch| bch.iter(|| vector_add::run(&device, &ta, &tb, &mut tc).unwrap()));
    g.bench_function("hand-written opencl3", |bch| bch.iter(|| by_hand(&mut out)));
    g.finish();

    // The same two calls interleaved (generated, hand-written, then the other order), so
    // that both see the same state of a shared 2-core machine: per-call medians, and the
    // median of the per-round ratios.
    let rounds = 3000;
    let (mut gen, mut hand, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut time_gen = || {
            let t = std::time::Instant::now();
            vector_add::run(&device, &ta, &tb, &mut tc).unwrap();
            t.elapsed().as_secs_f64()
        };
        let (a, b) = if r % 2 == 0 {
            let a = time_gen();
            let t = std::time::Instant::now();
            by_hand(&mut out);
            (a, t.elapsed().as_secs_f64())
        } else {
            let t = std::time::Instant::now();
            by_hand(&mut out);
            let b = t.elapsed().as_secs_f64();
            (time_gen(), b)
        };
        gen.push(a);
        hand.push(b);
        ratio.push(a / b);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (g, h, r) = (median(&mut gen), median(&mut hand), median(&mut ratio));
    println!(
        "interleaved, {rounds} rounds: generated run {:.1} µs, hand-written {:.1} µs (medians); \
         median ratio generated / hand-written {r:.3}",
        g * 1e6,
        h * 1e6
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
