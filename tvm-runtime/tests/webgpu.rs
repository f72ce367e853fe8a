//! The runtime's GPU interface on a real WebGPU adapter (Mesa's lavapipe in CI), with
//! hand-written WGSL programs described the way generated code describes them: loading
//! and its cache, launches with buffers and scalars at their bindings, sizes that are not
//! whole words, the buffer pool, errors (a shader wgpu rejects, limits, no adapter),
//! timestamp timing. Skips (printing why) without an adapter, unless `TVM_REQUIRE_TOOLS=1`.
#![cfg(feature = "webgpu")]

#[path = "support/webgpu_devices.rs"]
mod webgpu_devices;

use tvm_runtime::gpu::{self, Backend, KernelArg, KernelDesc, ParamKind, Program, Scalar};
use tvm_runtime::{device_stats, DType, Device, DeviceTensor, Error, Tensor};

const DEV: Device = Device::WebGpu(0);

fn device_or_skip(test: &str) -> bool {
    let found = !webgpu_devices::devices().is_empty();
    if !found {
        eprintln!("skipping {test}: no usable WebGPU adapter");
    }
    found
}

/// `y[i] = a * x[i] + f32(k)` for `i < n`, 64 invocations a workgroup; the ABI of the
/// compiler's WGSL: buffers at the bindings of their parameters, the scalars one uniform
/// struct at the first scalar's binding.
const SCALE_SRC: &str = "
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct Args { a: f32, n: i32, k: i32 }
@group(0) @binding(2) var<uniform> args: Args;
@compute @workgroup_size(64, 1, 1)
fn scale(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = i32(id.x);
  if (i < args.n) {
    y[i] = args.a * x[i] + f32(args.k);
  }
}
";

static SCALE: Program = Program {
    backend: Backend::WebGpu,
    function: "scale",
    source: SCALE_SRC,
    kernels: &[KernelDesc {
        name: "scale",
        params: &[
            ParamKind::Buffer(DType::F32),
            ParamKind::Buffer(DType::F32),
            ParamKind::Scalar(DType::F32),
            ParamKind::Scalar(DType::I32),
            ParamKind::Scalar(DType::I32),
        ],
        shared_bytes: 0,
        block: Some([64, 1, 1]),
    }],
    binaries: &[],
};

fn scale(m: &gpu::Module, x: &DeviceTensor<f32, 1>, y: &DeviceTensor<f32, 1>, a: f32, k: i32) -> Result<(), Error> {
    assert_eq!(x.len(), y.len(), "the kernel touches n elements of both");
    let n = x.len() as i64;
    let args = [
        KernelArg::Buffer(x.buffer_for(&DEV, "scale", "x")?),
        KernelArg::Buffer(y.buffer_for(&DEV, "scale", "y")?),
        KernelArg::Scalar(Scalar::F32(a)),
        KernelArg::Scalar(Scalar::I32(n as i32)),
        KernelArg::Scalar(Scalar::I32(k)),
    ];
    // SAFETY: `SCALE_SRC` is the kernel `SCALE` describes; it touches elements `0..n` of
    // `x` and `y`, which both hold `n`.
    unsafe { m.launch(0, [(n + 63) / 64, 1, 1], [64, 1, 1], &args) }
}

#[test]
fn a_program_runs_on_device_tensors_with_counted_transfers() {
    if !device_or_skip("a_program_runs_on_device_tensors_with_counted_transfers") {
        return;
    }
    let m = gpu::load(&DEV, &SCALE).unwrap();
    for n in [1usize, 3, 63, 64, 65, 1000] {
        let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let before = device_stats();
        let x = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(&DEV).unwrap();
        let y = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
        let z = DeviceTensor::<f32, 1>::zeros(&DEV, [n]).unwrap();
        // A chain on the device: y = 2x + 1, z = -y + 3.
        scale(&m, &x, &y, 2.0, 1).unwrap();
        scale(&m, &y, &z, -1.0, 3).unwrap();
        let out = z.to_host().unwrap();
        let d = device_stats() - before;
        assert_eq!((d.uploads, d.downloads), (1, 1), "n={n}: {d:?}");
        let want: Vec<f32> = host.iter().map(|v| -(2.0 * v + 1.0) + 3.0).collect();
        assert_eq!(out.as_slice(), &want[..], "n={n}");
        assert_eq!(x.to_host().unwrap().as_slice(), &host[..], "the input is unchanged");
    }
    assert!(gpu::load(&DEV, &SCALE).unwrap().same_build(&m), "the program is built once per device");
}

/// Tensors whose byte size is not a multiple of 4 (bools, one byte each) go to the device
/// and back whole, and zeros are zeros.
#[test]
fn odd_sizes_round_trip() {
    if !device_or_skip("odd_sizes_round_trip") {
        return;
    }
    for n in [1usize, 3, 5, 17] {
        let host: Vec<bool> = (0..n).map(|i| i % 3 == 1).collect();
        let t = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(&DEV).unwrap();
        assert_eq!(t.to_host().unwrap().as_slice(), &host[..], "n={n}");
        let z = DeviceTensor::<bool, 1>::zeros(&DEV, [n]).unwrap();
        assert!(z.to_host().unwrap().as_slice().iter().all(|&b| !b), "n={n}");
    }
    let e = Tensor::<f32, 1>::zeros([0]).to_device(&DEV).unwrap();
    assert_eq!(e.to_host().unwrap().len(), 0);
}

/// A shader wgpu rejects is `CompilationFailed` for `webgpu`, cached with its error; a
/// block over the device's limits and shared memory over its workgroup storage are
/// refused when the program is loaded.
#[test]
fn loading_checks_shaders_and_limits() {
    if !device_or_skip("loading_checks_shaders_and_limits") {
        return;
    }
    static BAD: Program = Program {
        backend: Backend::WebGpu,
        function: "bad",
        source: "@compute @workgroup_size(1) fn bad() { not wgsl; }",
        kernels: &[KernelDesc { name: "bad", params: &[], shared_bytes: 0, block: Some([1, 1, 1]) }],
        binaries: &[],
    };
    let e1 = gpu::load(&DEV, &BAD).err().expect("a shader that does not parse");
    assert!(matches!(&e1, Error::CompilationFailed { target, log } if target == "webgpu" && !log.is_empty()), "{e1}");
    assert!(gpu::is_cached(&DEV, &BAD));
    assert_eq!(gpu::load(&DEV, &BAD).err(), Some(e1), "the failed build is cached with its error");

    const ONE: &str = "@compute @workgroup_size(1) fn one() {}";
    static HUGE_BLOCK: Program = Program {
        backend: Backend::WebGpu,
        function: "huge_block",
        source: ONE,
        kernels: &[KernelDesc { name: "one", params: &[], shared_bytes: 0, block: Some([1 << 20, 1, 1]) }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &HUGE_BLOCK).err().expect("a block over the limits");
    assert!(matches!(&e, Error::LaunchFailed { reason, .. } if reason.contains("invocations")), "{e}");
    static HUGE_SHARED: Program = Program {
        backend: Backend::WebGpu,
        function: "huge_shared",
        source: ONE,
        kernels: &[KernelDesc { name: "one", params: &[], shared_bytes: 1 << 40, block: Some([1, 1, 1]) }],
        binaries: &[],
    };
    let e = gpu::load(&DEV, &HUGE_SHARED).err().expect("shared memory over the limit");
    assert!(matches!(&e, Error::DeviceUnsupported { reason, .. } if reason.contains("workgroup storage")), "{e}");
    // A program of another backend is a bug of the caller, not a crash.
    static OTHER: Program = Program { backend: Backend::OpenCl, ..SCALE };
    assert!(matches!(gpu::load(&DEV, &OTHER), Err(Error::Internal { .. })));
}

/// A buffer larger than the device binds is `OutOfMemory` naming the limit; a grid over
/// the device's workgroups per dimension is `LaunchFailed`; a scalar type WGSL lacks is an
/// internal error (generated code never passes one).
#[test]
fn limits_are_errors() {
    if !device_or_skip("limits_are_errors") {
        return;
    }
    let m = gpu::load(&DEV, &SCALE).unwrap();
    let e = m.alloc("big", Some(1 << 40), 4).err().expect("4 TiB");
    assert!(matches!(&e, Error::OutOfMemory { reason, .. } if reason.contains("big")), "{e}");
    let x = DeviceTensor::<f32, 1>::zeros(&DEV, [4]).unwrap();
    let buf = x.buffer_for(&DEV, "scale", "x").unwrap();
    let args = [
        KernelArg::Buffer(buf),
        KernelArg::Buffer(buf),
        KernelArg::Scalar(Scalar::F32(1.0)),
        KernelArg::Scalar(Scalar::I32(0)),
        KernelArg::Scalar(Scalar::I32(0)),
    ];
    // SAFETY: n = 0: the kernel touches nothing (and this grid is refused before it runs).
    let e = unsafe { m.launch(0, [1 << 31, 1, 1], [64, 1, 1], &args) }.unwrap_err();
    assert!(matches!(&e, Error::LaunchFailed { reason, .. } if reason.contains("workgroups")), "{e}");
}

/// `y[b] = b` for each of `n` workgroups of one invocation, in the generator's form of a
/// kernel whose 1-D grid may be folded: it takes `@builtin(num_workgroups)`, recovers its
/// linear workgroup id and returns past the grid (`n`, its scalar).
const IOTA_SRC: &str = "
@group(0) @binding(0) var<storage, read_write> y: array<i32>;
struct Args { n: i32 }
@group(0) @binding(1) var<uniform> args: Args;
@compute @workgroup_size(1, 1, 1)
fn iota(@builtin(workgroup_id) tvm_block: vec3<u32>, @builtin(num_workgroups) tvm_groups: vec3<u32>) {
  let b: u32 = tvm_block.x + tvm_groups.x * (tvm_block.y + tvm_groups.y * tvm_block.z);
  if (b >= u32(args.n)) {
    return;
  }
  y[b] = i32(b);
}
";

static IOTA: Program = Program {
    backend: Backend::WebGpu,
    function: "iota",
    source: IOTA_SRC,
    kernels: &[KernelDesc {
        name: "iota",
        params: &[ParamKind::Buffer(DType::I32), ParamKind::Scalar(DType::I32)],
        shared_bytes: 0,
        block: Some([1, 1, 1]),
    }],
    binaries: &[],
};

/// A 1-D grid over the device's workgroups per dimension runs folded: every workgroup of
/// the grid runs once (each element written, none past the grid); one too large even
/// folded is `LaunchFailed`.
#[test]
fn a_large_1d_grid_is_folded() {
    if !device_or_skip("a_large_1d_grid_is_folded") {
        return;
    }
    let m = gpu::load(&DEV, &IOTA).unwrap();
    let n = 65535 * 3 + 17;
    let y = Tensor::full([n + 64], -1i32).to_device(&DEV).unwrap();
    let args = [KernelArg::Buffer(y.buffer_for(&DEV, "iota", "y").unwrap()), KernelArg::Scalar(Scalar::I32(n as i32))];
    // SAFETY: `IOTA_SRC` is the kernel `IOTA` describes; it writes elements `0..n` of
    // `y`, which holds `n + 64`.
    unsafe { m.launch(0, [n as i64, 1, 1], [1, 1, 1], &args) }.unwrap();
    let got = y.to_host().unwrap();
    for (i, &v) in got.as_slice().iter().enumerate() {
        assert_eq!(v, if i < n { i as i32 } else { -1 }, "element {i}");
    }
    // More workgroups than x, y and z can hold together: refused before anything runs.
    let e = unsafe { m.launch(0, [1 << 50, 1, 1], [1, 1, 1], &args) }.unwrap_err();
    assert!(matches!(&e, Error::LaunchFailed { reason, .. } if reason.contains("folded")), "{e}");
}

/// With timestamp queries, a profile's launches are timed on the device.
#[test]
fn launches_are_timed_on_the_device() {
    if !device_or_skip("launches_are_timed_on_the_device") {
        return;
    }
    let rt = gpu::webgpu::WebGpuRuntime::global();
    if !rt.has_timestamps(0).unwrap() {
        return eprintln!("skipping: the adapter has no timestamp queries");
    }
    let m = gpu::load(&DEV, &SCALE).unwrap();
    let x = DeviceTensor::<f32, 1>::zeros(&DEV, [100_000]).unwrap();
    let y = DeviceTensor::<f32, 1>::zeros(&DEV, [100_000]).unwrap();
    gpu::begin_timing();
    scale(&m, &x, &y, 2.0, 1).unwrap();
    let t = gpu::end_timing().expect("a device time");
    assert!(t > 0.0 && t < 10.0, "{t} s");
}

#[test]
fn devices_parse_and_a_missing_adapter_is_unavailable() {
    assert_eq!("webgpu".parse::<Device>().unwrap(), Device::WebGpu(0));
    assert_eq!("WebGPU:2".parse::<Device>().unwrap(), Device::WebGpu(2));
    assert_eq!(Device::WebGpu(3).to_string(), "webgpu:3");
    assert_eq!(Device::WebGpu(0).kind(), "webgpu");
    let e = Device::WebGpu(1000).check_available().unwrap_err();
    assert!(matches!(&e, Error::DeviceUnavailable { device, .. } if device == "webgpu:1000"), "{e}");
    assert!(DeviceTensor::<f32, 1>::zeros(&Device::WebGpu(1000), [4]).is_err());
}
