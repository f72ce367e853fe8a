//! The runtime's GPU interface on a real OpenCL implementation (PoCL in CI), with
//! hand-written programs described the way generated code describes them (static
//! `gpu::Program`s): loading and its cache, launches and their checks, device tensors,
//! the buffer pool and the transfer counts. Skips (printing why) when no OpenCL device
//! exists, unless `TVM_REQUIRE_TOOLS=1`, which turns the skip into a failure.

#[path = "support/opencl_devices.rs"]
mod opencl_devices;

use opencl_devices::device_or_skip;
use tvm_runtime::gpu::opencl::{Caps, OpenClRuntime};
use tvm_runtime::gpu::{self, Backend, KernelArg, KernelDesc, ParamKind, Program, Scalar};
use tvm_runtime::{device_stats, f16, DType, Device, DeviceTensor, Error, Tensor};

const DEV: Device = Device::OpenCl(0);

/// One test at a time: they share the device's buffer pool, whose contents
/// `freed_buffers_are_reused_and_cleared` counts on.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// `y[i] = a * x[i] + (float)k` for `i < n`, one work-item per element.
const SCALE_SRC: &str = "__kernel void scale(__global float* x, __global float* y, float a, long n, int k) {
    long i = (long)get_global_id(0);
    if (i < n) { y[i] = a * x[i] + (float)k; }
}";

const SCALE_PARAMS: &[ParamKind] = &[
    ParamKind::Buffer(DType::F32),
    ParamKind::Buffer(DType::F32),
    ParamKind::Scalar(DType::F32),
    ParamKind::Scalar(DType::I64),
    ParamKind::Scalar(DType::I32),
];

static SCALE: Program = Program {
    backend: Backend::OpenCl,
    function: "scale",
    source: SCALE_SRC,
    kernels: &[KernelDesc { name: "scale", params: SCALE_PARAMS, shared_bytes: 0, block: None }],
    binaries: &[],
};

/// Runs `SCALE` on `x` into `y`: `y = a * x + k`.
fn scale(m: &gpu::Module, x: &DeviceTensor<f32, 1>, y: &DeviceTensor<f32, 1>, a: f32, k: i32) -> Result<(), Error> {
    assert_eq!(x.len(), y.len(), "the kernel touches n elements of both");
    let n = x.len() as i64;
    let args = [
        KernelArg::Buffer(x.buffer_for(&DEV, "scale", "x")?),
        KernelArg::Buffer(y.buffer_for(&DEV, "scale", "y")?),
        KernelArg::Scalar(Scalar::F32(a)),
        KernelArg::Scalar(Scalar::I64(n)),
        KernelArg::Scalar(Scalar::I32(k)),
    ];
    // SAFETY: `SCALE_SRC` is the kernel `SCALE` describes, and it touches elements
    // `0..n` of `x` and `y`, which both hold `n`.
    unsafe { m.launch(0, [(n + 63) / 64, 1, 1], [64, 1, 1], &args) }
}

#[test]
fn a_program_runs_on_device_tensors_with_counted_transfers() {
    let _serial = serial();
    if !device_or_skip("a_program_runs_on_device_tensors_with_counted_transfers") {
        return;
    }
    for n in [1usize, 63, 64, 65, 1000] {
        let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let before = device_stats();
        let x = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(&DEV).unwrap();
        let y = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
        let z = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
        let m = gpu::load(&DEV, &SCALE).unwrap();
        // A chain on the device: y = 2x + 1, z = -y + 3.
        scale(&m, &x, &y, 2.0, 1).unwrap();
        scale(&m, &y, &z, -1.0, 3).unwrap();
        let out = z.to_host().unwrap();
        let d = device_stats() - before;
        assert_eq!((d.uploads, d.downloads), (1, 1), "n={n}: {d:?}");
        assert_eq!((d.bytes_uploaded, d.bytes_downloaded), (4 * n as u64, 4 * n as u64), "n={n}: {d:?}");
        let want: Vec<f32> = host.iter().map(|v| -(2.0 * v + 1.0) + 3.0).collect();
        assert_eq!(out.as_slice(), &want[..], "n={n}");
        assert_eq!(x.to_host().unwrap().as_slice(), &host[..], "the input is unchanged");
    }
}

/// The cache builds a program once per device (also when several threads load it at
/// once), and keeps a failed build with its error.
#[test]
fn programs_load_once() {
    let _serial = serial();
    if !device_or_skip("programs_load_once") {
        return;
    }
    static ONCE: Program = Program {
        backend: Backend::OpenCl,
        function: "once",
        source: "__kernel void programs_load_once(__global int* a) { a[0] = 7; }",
        kernels: &[KernelDesc {
            name: "programs_load_once",
            params: &[ParamKind::Buffer(DType::I32)],
            shared_bytes: 0,
            block: Some([1, 1, 1]),
        }],
        binaries: &[],
    };
    assert!(!gpu::is_cached(&DEV, &ONCE));
    let loaded: Vec<gpu::Module> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| gpu::load(&DEV, &ONCE).unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(gpu::is_cached(&DEV, &ONCE));
    assert!(loaded.iter().all(|m| m.same_build(&loaded[0])), "concurrent loads built the program more than once");
    assert!(gpu::load(&DEV, &ONCE).unwrap().same_build(&loaded[0]), "a later load built it again");
    assert!(!gpu::load(&DEV, &SCALE).unwrap().same_build(&loaded[0]), "two programs share a build");

    static BAD: Program = Program {
        backend: Backend::OpenCl,
        function: "bad",
        source: "__kernel void programs_load_once_bad(__global int* a) { not C; }",
        kernels: &[],
        binaries: &[],
    };
    let e1 = gpu::load(&DEV, &BAD).err().expect("a program that does not compile");
    assert!(matches!(&e1, Error::CompilationFailed { target, log } if target == "opencl" && !log.trim().is_empty()));
    assert!(gpu::is_cached(&DEV, &BAD));
    assert_eq!(gpu::load(&DEV, &BAD).err(), Some(e1), "the failed build is cached with its error");
}

/// What loading checks: every kernel of the description exists in the program, and a
/// constant block shape fits the device's and the kernel's limits.
#[test]
fn loading_checks_kernels_and_block_shapes() {
    let _serial = serial();
    if !device_or_skip("loading_checks_kernels_and_block_shapes") {
        return;
    }
    static MISSING: Program = Program {
        backend: Backend::OpenCl,
        function: "missing",
        source: SCALE_SRC,
        kernels: &[KernelDesc { name: "not_there", params: &[], shared_bytes: 0, block: None }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &MISSING).err().unwrap();
    assert!(
        matches!(&e, Error::LaunchFailed { kernel, reason } if kernel == "not_there" && reason.contains("no kernel"))
    );

    static HUGE_BLOCK: Program = Program {
        backend: Backend::OpenCl,
        function: "huge",
        source: SCALE_SRC,
        kernels: &[KernelDesc { name: "scale", params: SCALE_PARAMS, shared_bytes: 0, block: Some([1 << 20, 1, 1]) }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &HUGE_BLOCK).err().unwrap();
    let msg = e.to_string();
    assert!(matches!(e, Error::LaunchFailed { .. }) && msg.contains("1048576") && msg.contains("maximum"), "{msg}");

    static HUGE_SHARED: Program = Program {
        backend: Backend::OpenCl,
        function: "shared",
        source: SCALE_SRC,
        kernels: &[KernelDesc { name: "scale", params: SCALE_PARAMS, shared_bytes: 1 << 40, block: None }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &HUGE_SHARED).err().unwrap();
    assert!(
        matches!(&e, Error::DeviceUnsupported { reason, .. } if reason.contains("1099511627776 bytes of local memory"))
    );
}

/// What a launch checks: the arguments against the description (a generated-code bug,
/// `Internal`), extents (negative: an error; zero: nothing runs), the block shape against
/// the limits.
#[test]
fn launches_check_arguments_and_extents() {
    let _serial = serial();
    if !device_or_skip("launches_check_arguments_and_extents") {
        return;
    }
    let m = gpu::load(&DEV, &SCALE).unwrap();
    let x = Tensor::from_vec(vec![1.0f32; 8], [8]).unwrap().to_device(&DEV).unwrap();
    let y = DeviceTensor::<f32, 1>::zeros(&DEV, [8]).unwrap();
    let (bx, by) = (x.buffer_for(&DEV, "t", "x").unwrap(), y.buffer_for(&DEV, "t", "y").unwrap());
    // SAFETY (of every launch below): `SCALE_SRC` is what `SCALE` describes; the good
    // arguments give it n = 8 elements of `x` and `y`, which hold 8; the others are
    // refused before anything runs.
    let launch = |kernel: usize, grid: [i64; 3], block: [i64; 3], args: &[KernelArg<'_>]| unsafe {
        m.launch(kernel, grid, block, args)
    };
    let good = [
        KernelArg::Buffer(bx),
        KernelArg::Buffer(by),
        KernelArg::Scalar(Scalar::F32(2.0)),
        KernelArg::Scalar(Scalar::I64(8)),
        KernelArg::Scalar(Scalar::I32(0)),
    ];
    // Too few arguments, and a scalar of the wrong type.
    let e = launch(0, [1, 1, 1], [8, 1, 1], &good[..4]).unwrap_err();
    assert!(matches!(&e, Error::Internal { message } if message.contains("4 arguments for 5 parameters")), "{e:?}");
    let mut wrong = good;
    wrong[3] = KernelArg::Scalar(Scalar::I32(8));
    let e = launch(0, [1, 1, 1], [8, 1, 1], &wrong).unwrap_err();
    assert!(matches!(e, Error::Internal { .. }), "{e:?}");
    let e = launch(1, [1, 1, 1], [8, 1, 1], &good).unwrap_err();
    assert!(matches!(e, Error::Internal { .. }), "{e:?}");
    // A negative extent is an error; a zero one launches nothing.
    let e = launch(0, [-1, 1, 1], [8, 1, 1], &good).unwrap_err();
    assert!(
        matches!(&e, Error::LaunchFailed { kernel, reason } if kernel == "scale" && reason == "grid extent 0 is -1")
    );
    launch(0, [0, 1, 1], [8, 1, 1], &good).unwrap();
    assert_eq!(y.to_host().unwrap().as_slice(), &[0.0; 8], "a zero grid ran the kernel");
    // A block over the device's limit (the description has no constant block).
    let e = launch(0, [1, 1, 1], [1 << 20, 1, 1], &good).unwrap_err();
    assert!(matches!(&e, Error::LaunchFailed { reason, .. } if reason.contains("maximum")), "{e:?}");
    // And the good launch runs.
    launch(0, [1, 1, 1], [8, 1, 1], &good).unwrap();
    assert_eq!(y.to_host().unwrap().as_slice(), &[2.0; 8]);
}

/// A device tensor used where it does not live is `Err(WrongDevice)`; a copy of another
/// shape is `Err(ShapeMismatch)`; a device that does not exist is `Err(DeviceUnavailable)`.
#[test]
fn device_tensors_refuse_the_wrong_device_and_shape() {
    let _serial = serial();
    if !device_or_skip("device_tensors_refuse_the_wrong_device_and_shape") {
        return;
    }
    let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let on_cpu = t.to_device(&Device::Cpu).unwrap();
    let on_cl = t.to_device(&DEV).unwrap();
    assert_eq!((on_cpu.device(), on_cl.device()), (Device::Cpu, DEV));
    let e = on_cpu.buffer_for(&DEV, "k", "x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "`x` of `k` lives on `cpu`, but the kernel runs on `opencl:0` (copy it with `to_device`)"
    );
    let e = on_cl.host_for("k", "x").unwrap_err();
    assert!(matches!(&e, Error::WrongDevice { expected, got, .. } if expected == "cpu" && got == "opencl:0"), "{e:?}");
    let other = Device::OpenCl(OpenClRuntime::global().device_count());
    let e = on_cl.buffer_for(&other, "k", "x").unwrap_err();
    assert!(matches!(e, Error::WrongDevice { .. }), "{e:?}");
    let e = t.to_device(&other).unwrap_err();
    assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e:?}");

    let mut d = DeviceTensor::<f32, 1>::zeros(&DEV, [4]).unwrap();
    let e = d.copy_from(&t).unwrap_err();
    assert_eq!(e.to_string(), "shape mismatch in `DeviceTensor::copy_from`: dimension 0 of `src` is 3, expected 4");
    d.copy_from(&Tensor::from_vec(vec![4.0, 3.0, 2.0, 1.0], [4]).unwrap()).unwrap();
    let mut back = Tensor::zeros([4]);
    d.copy_to(&mut back).unwrap();
    assert_eq!(back.as_slice(), &[4.0, 3.0, 2.0, 1.0]);
}

/// Dropped device memory goes back to the pool and serves the next allocation of its
/// size; `zeros` clears what it takes from the pool.
#[test]
fn freed_buffers_are_reused_and_cleared() {
    let _serial = serial();
    if !device_or_skip("freed_buffers_are_reused_and_cleared") {
        return;
    }
    // A size no other test of this binary allocates (the pool is per device).
    let n = 12_345usize;
    let a = Tensor::from_vec(vec![9.0f32; n], [n]).unwrap().to_device(&DEV).unwrap();
    drop(a);
    let before = device_stats();
    let z = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
    let d = device_stats() - before;
    assert_eq!((d.allocations, d.pool_reuses), (0, 1), "{d:?}");
    assert!(z.to_host().unwrap().as_slice().iter().all(|&v| v == 0.0), "zeros kept the old contents");
    // A size the pool has not got is allocated.
    let before = device_stats();
    let w = DeviceTensor::<f32, 1>::zeros(&DEV, [n + 1]).unwrap();
    let d = device_stats() - before;
    assert_eq!((d.allocations, d.pool_reuses), (1, 0), "{d:?}");
    drop((z, w));
}

/// Element types whose bytes are not a plain copy on the device side (`bool` as one
/// byte) and the 16-bit floats cross intact.
#[test]
fn bool_and_f16_tensors_round_trip() {
    let _serial = serial();
    if !device_or_skip("bool_and_f16_tensors_round_trip") {
        return;
    }
    let b = Tensor::from_vec(vec![true, false, false, true, true], [5]).unwrap();
    assert_eq!(b.to_device(&DEV).unwrap().to_host().unwrap(), b);
    let h = Tensor::from_vec((0..7).map(|i| f16::from_f32(i as f32 * 0.25 - 1.0)).collect(), [7]).unwrap();
    assert_eq!(h.to_device(&DEV).unwrap().to_host().unwrap(), h);
    let empty = Tensor::<f32, 2>::zeros([0, 5]);
    let d = empty.to_device(&DEV).unwrap();
    assert_eq!((d.shape(), d.is_empty()), ([0, 5], true));
    assert_eq!(d.to_host().unwrap(), empty);
}

/// `build_uncached` returns the compiler's diagnostics: `-Werror` turns a warning into a
/// failed build whose log names it.
#[test]
fn build_options_and_log() {
    let _serial = serial();
    if !device_or_skip("build_options_and_log") {
        return;
    }
    let rt = OpenClRuntime::global();
    let src = "__kernel void k(__global int* a) { int unused; a[0] = 1; if ((a[0] == 1)) { a[1] = 2; } }";
    assert!(rt.build_uncached(0, src, "").is_ok());
    match rt.build_uncached(0, src, "-Werror") {
        Err(Error::CompilationFailed { log, .. }) => assert!(log.contains("error"), "{log}"),
        other => panic!("expected a failed build, got {other:?}"),
    }
}

fn caps(fp64: bool, local_mem_bytes: u64) -> Caps {
    Caps { label: "opencl:9 (test: device)".into(), fp64, fp16: false, local_mem_bytes }
}

#[test]
fn local_memory_beyond_the_device_is_refused() {
    let _serial = serial();
    assert_eq!(caps(true, 4096).check_local_memory("k0", 4096), Ok(()));
    let e = caps(true, 4096).check_local_memory("k0", 4100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "device `opencl:9 (test: device)` cannot run this kernel: kernel `k0` uses 4100 bytes of local memory, more \
         than the device's 4096 bytes"
    );
}

/// Launches from several threads at once share the device's queue, kernel objects and
/// buffer pool: every result is right.
#[test]
fn concurrent_launches() {
    let _serial = serial();
    if !device_or_skip("concurrent_launches") {
        return;
    }
    std::thread::scope(|s| {
        for t in 0..4usize {
            s.spawn(move || {
                let m = gpu::load(&DEV, &SCALE).unwrap();
                for round in 0..8usize {
                    let n = [1000usize, 77, 4096, 1000][(round + t) % 4];
                    let host: Vec<f32> = (0..n).map(|i| (i * (t + 1) + round) as f32).collect();
                    let x = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(&DEV).unwrap();
                    let y = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
                    scale(&m, &x, &y, 0.5, t as i32).unwrap();
                    let want: Vec<f32> = host.iter().map(|v| 0.5 * v + t as f32).collect();
                    assert_eq!(y.to_host().unwrap().as_slice(), &want[..], "thread {t}, round {round}");
                }
            });
        }
    });
}

/// Misuse of the interface is an `Err`, never a panic: a download into memory of another
/// length, a kernel name the driver cannot take, a launch with a block other than the
/// constant one a kernel requires, an intermediate whose size overflows, a GPU program
/// on the CPU.
#[test]
fn misuse_is_an_error_not_a_panic() {
    let _serial = serial();
    let e = gpu::load(&Device::Cpu, &SCALE).err().unwrap();
    assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e:?}");
    if !device_or_skip("misuse_is_an_error_not_a_panic") {
        return;
    }
    let m = gpu::load(&DEV, &SCALE).unwrap();
    let b = m.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut short = [0f32; 2];
    let e = m.download(&b, &mut short).unwrap_err();
    assert_eq!(e.to_string(), "length mismatch: 2 elements given for shape [3], which holds 3");
    let mut long = [0f32; 4];
    assert!(matches!(m.download(&b, &mut long), Err(Error::LengthMismatch { len: 4, .. })));
    let mut exact = [0f32; 3];
    m.download(&b, &mut exact).unwrap();
    assert_eq!(exact, [1.0, 2.0, 3.0]);

    static NUL_NAME: Program = Program {
        backend: Backend::OpenCl,
        function: "nul",
        source: SCALE_SRC,
        kernels: &[KernelDesc { name: "sca\0le", params: SCALE_PARAMS, shared_bytes: 0, block: None }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &NUL_NAME).err().unwrap();
    assert!(matches!(&e, Error::CompilationFailed { log, .. } if log.contains("NUL")), "{e:?}");

    static FIXED_BLOCK: Program = Program {
        backend: Backend::OpenCl,
        function: "fixed",
        source: SCALE_SRC,
        kernels: &[KernelDesc { name: "scale", params: SCALE_PARAMS, shared_bytes: 0, block: Some([64, 1, 1]) }],
        binaries: &[],
    };
    let m = gpu::load(&DEV, &FIXED_BLOCK).unwrap();
    let x = DeviceTensor::<f32, 1>::zeros(&DEV, [32]).unwrap();
    let args = [
        KernelArg::Buffer(x.buffer_for(&DEV, "t", "x").unwrap()),
        KernelArg::Buffer(x.buffer_for(&DEV, "t", "x").unwrap()),
        KernelArg::Scalar(Scalar::F32(1.0)),
        KernelArg::Scalar(Scalar::I64(32)),
        KernelArg::Scalar(Scalar::I32(0)),
    ];
    // SAFETY: refused before anything runs (the block is not the required one).
    let e = unsafe { m.launch(0, [1, 1, 1], [32, 1, 1], &args) }.unwrap_err();
    assert!(matches!(&e, Error::Internal { message } if message.contains("requires [64, 1, 1]")), "{e:?}");

    // A size that overflows is OutOfMemory, naming the intermediate and the byte count.
    let e = m.alloc("tmp", None, 4).unwrap_err();
    assert!(e.to_string().ends_with("(the size of intermediate `tmp` of `fixed` overflows)"), "{e}");
    let e = m.alloc("tmp", Some(i64::MAX), 4).unwrap_err();
    let want = format!("intermediate `tmp` of `fixed` needs {} bytes", i64::MAX as i128 * 4);
    assert!(matches!(&e, Error::OutOfMemory { bytes: usize::MAX, reason, .. } if reason.contains(&want)), "{e:?}");
    assert_eq!(m.alloc("tmp", Some(10), 4).unwrap().len_bytes(), 40);
}

/// A buffer larger than the device's largest (`CL_DEVICE_MAX_MEM_ALLOC_SIZE`) is
/// `OutOfMemory` before the driver is asked (a CPU driver on a machine that overcommits
/// memory may hand it out, and the process be killed using it); one just under that bound
/// is the driver's to refuse or grant.
#[test]
fn buffers_beyond_the_device_limit_are_refused_up_front() {
    let _serial = serial();
    if !device_or_skip("buffers_beyond_the_device_limit_are_refused_up_front") {
        return;
    }
    let e = DeviceTensor::<f32, 1>::zeros(&DEV, [1usize << 40]).unwrap_err();
    match &e {
        Error::OutOfMemory { device, bytes, reason } => {
            assert!(device.starts_with("opencl:0"), "{device}");
            assert_eq!(*bytes, 4usize << 40);
            assert!(reason.contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The device still works after the refusal.
    let t = Tensor::from_vec(vec![1.0f32, 2.0], [2]).unwrap();
    let mut back = Tensor::zeros([2]);
    t.to_device(&DEV).unwrap().copy_to(&mut back).unwrap();
    assert_eq!(back.as_slice(), &[1.0, 2.0]);
}
