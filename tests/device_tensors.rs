//! Device-resident tensors through the generated API (`run_on`, `call_on`): a chain of
//! three kernels does one upload per input and one download, counted by the runtime; the
//! results equal the host path's and a plain reference; a tensor on the wrong device or
//! of the wrong shape is an `Err`. Runs on every device present (the CPU, each OpenCL
//! device, each WebGPU adapter with the `webgpu` feature; OpenCL, and WebGPU with its
//! feature, are required under `TVM_REQUIRE_TOOLS=1`).

#[path = "../tvm-runtime/tests/support/opencl_devices.rs"]
mod opencl_devices;
#[path = "../tvm-core/tests/support/reference.rs"]
mod reference;
#[path = "../tvm-runtime/tests/support/webgpu_devices.rs"]
mod webgpu_devices;

use tvm::{compute, device_stats, Device, DeviceTensor, Error, Tensor};

compute! {
    /// y = alpha * x + b (b broadcast over rows)
    pub fn scale_shift(x: f32[M, N], b: f32[N], alpha: f32) -> y: f32[M, N] {
        y[i, j] = alpha * x[i, j] + b[j];
    }
}

compute! {
    pub fn relu(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = max(x[i, j], 0.0);
    }
}

/// Row softmax (the corpus kernel with the default schedules): on GPUs, `m` and `s` are
/// kernels of their own, so the host code allocates them as device intermediates.
mod softmax_kernel {
    include!("../tvm-core/tests/corpus/softmax_default.rs");
}
use softmax_kernel::softmax;

compute! {
    /// Two outputs of independent sizes.
    pub fn two_sizes(a: f32[n], b: f32[m]) -> (c: f32[n], d: f32[m]) {
        c[i] = a[i] * 2.0;
        d[j] = b[j] + 1.0;
    }
}

compute! {
    /// Raw and non-ASCII names, and a parameter named like the generated code's own
    /// `device`: all the user's to choose.
    pub fn r#type(r#in: f32[n], device: f32[n]) -> π: f32[n] {
        π[i] = r#in[i] * 3.0 + device[i];
    }
}

compute! {
    /// On GPUs, a loop in the host code around the launch (the outer axis is bound to
    /// nothing); the output's length is a `usize` scalar.
    pub fn tiles(x: f32[n], m: usize) -> y: f32[m] {
        y[i] = x[i % n] * 2.0;
    }
    schedule!(opencl) {
        let (o, t) = y.split(y.i, 64);
        y.bind(t, thread.x);
    }
}

compute! {
    /// On GPUs, an intermediate sized by a `usize` scalar (a host `let`) on the device.
    pub fn sums(x: f32[n], m: usize) -> y: f32[n] {
        let t[j]: f32[m] = sum(x[i] * (j as f32) for i in 0..n);
        y[i] = x[i] + t[i % m];
    }
}

/// The CPU, every usable OpenCL device and WebGPU adapter, and every usable CUDA device
/// (none here: the GPU check runs this on a machine with one).
fn devices() -> Vec<Device> {
    let mut v = vec![Device::Cpu];
    v.extend(opencl_devices::devices().map(Device::OpenCl));
    v.extend(webgpu_devices::devices().map(Device::WebGpu));
    v.extend((0..Device::cuda_device_count()).map(Device::Cuda).filter(|d| d.is_available()));
    v
}

fn inputs(m: usize, n: usize) -> (Tensor<f32, 2>, Tensor<f32, 1>) {
    let x = Tensor::from_vec(reference::rand_vec(m * n, 3), [m, n]).unwrap();
    let b = Tensor::from_vec(reference::rand_vec(n, 4), [n]).unwrap();
    (x, b)
}

/// The chain on the host, plainly.
fn reference_chain(x: &Tensor<f32, 2>, b: &Tensor<f32, 1>, alpha: f32) -> Vec<f32> {
    let [m, n] = x.shape();
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        let row: Vec<f32> = (0..n).map(|j| (alpha * x.as_slice()[i * n + j] + b.as_slice()[j]).max(0.0)).collect();
        let mx = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = row.iter().map(|v| (v - mx).exp()).collect();
        let s: f32 = e.iter().sum();
        for j in 0..n {
            out[i * n + j] = e[j] / s;
        }
    }
    out
}

#[test]
fn a_chain_of_three_kernels_transfers_each_tensor_once() -> Result<(), Error> {
    for device in devices() {
        for (m, n) in [(7usize, 33usize), (64, 256), (1, 1)] {
            let (x, b) = inputs(m, n);
            let before = device_stats();
            let xd = x.to_device(&device)?;
            let bd = b.to_device(&device)?;
            let t1 = scale_shift::call_on(&device, &xd, &bd, 1.5)?;
            let t2 = relu::call_on(&device, &t1)?;
            let t3 = softmax::call_on(&device, &t2)?;
            assert_eq!(t3.device(), device);
            let out = t3.to_host()?;
            let d = device_stats() - before;
            let want_transfers = if device == Device::Cpu { (0, 0) } else { (2, 1) };
            assert_eq!((d.uploads, d.downloads), want_transfers, "{device}, {m}x{n}: {d:?}");
            if device != Device::Cpu {
                assert_eq!(d.bytes_uploaded, 4 * (m * n + n) as u64, "{device}: {d:?}");
                assert_eq!(d.bytes_downloaded, 4 * (m * n) as u64, "{device}: {d:?}");
            }
            let want = reference_chain(&x, &b, 1.5);
            reference::assert_close(out.as_slice(), &want, 1e-5, &format!("chain on {device}, {m}x{n}"));
            // The host path agrees (it copies every input and output itself).
            let host = softmax::__call(&device, &relu::__call(&device, &scale_shift::__call(&device, &x, &b, 1.5)?)?)?;
            reference::assert_close(host.as_slice(), out.as_slice(), 1e-6, &format!("host path on {device}"));
        }
    }
    Ok(())
}

/// `run_on` writes into existing device outputs, also when they are reused across calls,
/// and moves nothing between host and device.
#[test]
fn run_on_reuses_device_outputs_without_copies() -> Result<(), Error> {
    for device in devices() {
        let (x, b) = inputs(5, 9);
        let xd = x.to_device(&device)?;
        let bd = b.to_device(&device)?;
        let mut y = DeviceTensor::<f32, 2>::zeros(&device, [5, 9])?;
        let before = device_stats();
        for alpha in [1.0f32, -2.0, 0.5] {
            scale_shift::run_on(&device, &xd, &bd, alpha, &mut y)?;
        }
        let d = device_stats() - before;
        assert_eq!((d.uploads, d.downloads), (0, 0), "{device}: {d:?}");
        let want: Vec<f32> = (0..45).map(|k| 0.5 * x.as_slice()[k] + b.as_slice()[k % 9]).collect();
        reference::assert_close(y.to_host()?.as_slice(), &want, 1e-6, &format!("run_on on {device}"));
    }
    Ok(())
}

/// A device tensor that lives elsewhere, or has the wrong shape, is an `Err` before
/// anything runs.
#[test]
fn wrong_device_or_shape_is_an_error() -> Result<(), Error> {
    let (x, b) = inputs(4, 6);
    let on_cpu = x.to_device(&Device::Cpu)?;
    let b_cpu = b.to_device(&Device::Cpu)?;
    for device in devices().into_iter().filter(|d| *d != Device::Cpu) {
        let e = relu::call_on(&device, &on_cpu).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("`x` of `relu` lives on `cpu`, but the kernel runs on `{device}` (copy it with `to_device`)")
        );
        // An output on the wrong device, the inputs right.
        let xd = x.to_device(&device)?;
        let mut y_cpu = DeviceTensor::<f32, 2>::zeros(&Device::Cpu, [4, 6])?;
        let e = relu::run_on(&device, &xd, &mut y_cpu).unwrap_err();
        assert!(matches!(&e, Error::WrongDevice { param, .. } if param == "y"), "{e:?}");
        // And the other way round: device tensors given to the CPU.
        let e = relu::call_on(&Device::Cpu, &xd).unwrap_err();
        assert!(
            matches!(&e, Error::WrongDevice { expected, got, .. } if expected == "cpu" && *got == device.to_string())
        );
    }
    // Shapes are checked as for host tensors, on every device.
    for device in devices() {
        let xd = x.to_device(&device)?;
        let short = Tensor::<f32, 1>::zeros([5]).to_device(&device)?;
        let e = scale_shift::call_on(&device, &xd, &short, 1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shape mismatch in `scale_shift`: dimension 0 of `b` is 5, expected 6 (N = 6, bound by `x`)"
        );
        let mut y = DeviceTensor::<f32, 2>::zeros(&device, [4, 7])?;
        let e = relu::run_on(&device, &xd, &mut y).unwrap_err();
        assert!(matches!(&e, Error::ShapeMismatch { param, dim: 1, got: 7, expected: 6, .. } if param == "y"));
    }
    let _ = b_cpu;
    Ok(())
}

/// Empty tensors are valid input on every device: an empty result, nothing launched;
/// but one on the wrong device is still an error.
#[test]
fn empty_device_tensors() -> Result<(), Error> {
    for device in devices() {
        let x = Tensor::<f32, 2>::zeros([0, 3]).to_device(&device)?;
        let y = relu::call_on(&device, &x)?;
        assert_eq!((y.shape(), y.device()), ([0, 3], device));
        assert!(y.to_host()?.is_empty());
        if device != Device::Cpu {
            let e = relu::call_on(&Device::Cpu, &x).unwrap_err();
            assert!(matches!(e, Error::WrongDevice { .. }), "{e:?}");
        }
    }
    Ok(())
}

/// An empty output does not stop the others from being computed, on every device.
#[test]
fn one_empty_output_of_two() -> Result<(), Error> {
    for device in devices() {
        for (n, m) in [(0usize, 5usize), (5, 0), (3, 4)] {
            let a = Tensor::from_vec((0..n).map(|i| i as f32).collect(), [n])?;
            let b = Tensor::from_vec((0..m).map(|i| i as f32).collect(), [m])?;
            let (c, d) = two_sizes::call_on(&device, &a.to_device(&device)?, &b.to_device(&device)?)?;
            let want_c: Vec<f32> = (0..n).map(|i| i as f32 * 2.0).collect();
            let want_d: Vec<f32> = (0..m).map(|i| i as f32 + 1.0).collect();
            assert_eq!(c.to_host()?.as_slice(), &want_c[..], "{device} n={n} m={m}");
            assert_eq!(d.to_host()?.as_slice(), &want_d[..], "{device} n={n} m={m}");
            let (c, d) = two_sizes::__call(&device, &a, &b)?;
            assert_eq!((c.as_slice(), d.as_slice()), (&want_c[..], &want_d[..]), "host path on {device}");
        }
    }
    Ok(())
}

/// Names a user may choose do not collide with the generated code, on any device (the
/// OpenCL kernel of `r#type` is `type_kernel0`).
#[test]
fn raw_non_ascii_and_device_names() -> Result<(), Error> {
    for device in devices() {
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3])?;
        let b = Tensor::from_vec(vec![0.5f32, 0.25, 0.0], [3])?;
        let mut out = Tensor::zeros([3]);
        r#type::run(&device, &a, &b, &mut out)?;
        assert_eq!(out.as_slice(), &[3.5, 6.25, 9.0], "{device}");
        let on = r#type::call_on(&device, &a.to_device(&device)?, &b.to_device(&device)?)?;
        assert_eq!(on.to_host()?.as_slice(), &[3.5, 6.25, 9.0], "{device}");
    }
    assert!(r#type::source("opencl")?.contains("void type_kernel0("));
    let e = r#type(&Tensor::zeros([2]), &Tensor::zeros([3])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "shape mismatch in `r#type`: dimension 0 of `device` is 3, expected 2 (n = 2, bound by `in`)"
    );
    Ok(())
}

/// Host code with a loop around the launch, a `let` from a `usize` scalar, and an
/// intermediate on the device, compiled by the macro and run on every device.
#[test]
fn host_loops_lets_and_intermediates() -> Result<(), Error> {
    let x = Tensor::from_vec(reference::rand_vec(10, 9), [10])?;
    let xs = x.as_slice();
    for device in devices() {
        for m in [1usize, 64, 150] {
            let y = tiles::__call(&device, &x, m)?;
            let want: Vec<f32> = (0..m).map(|i| xs[i % 10] * 2.0).collect();
            assert_eq!(y.as_slice(), &want[..], "tiles on {device}, m={m}");
            let y = sums::__call(&device, &x, m)?;
            let total: f32 = xs.iter().sum();
            let want: Vec<f32> = (0..10).map(|i| xs[i] + total * (i % m) as f32).collect();
            reference::assert_close(y.as_slice(), &want, 1e-5, &format!("sums on {device}, m={m}"));
        }
        // The output is checked against the scalar that sizes it.
        let mut y = Tensor::zeros([5]);
        let e = tiles::run(&device, &x, 6, &mut y).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { got: 5, expected: 6, .. }), "{e:?}");
        // An intermediate no memory holds is an error naming it, not a small buffer or an
        // abort, on every device.
        let e = sums::__call(&device, &x, 1 << 62).unwrap_err();
        let bytes = (1u128 << 62) * 4;
        assert!(
            matches!(&e, Error::OutOfMemory { reason, .. }
                if reason.contains(&format!("intermediate `t` of `sums` needs {bytes} bytes"))),
            "{device}: {e:?}"
        );
        // `i % m` with `m` = 0 divides by zero.
        let e = sums::__call(&device, &x, 0).unwrap_err();
        assert!(matches!(&e, Error::DivisionByZero { divisor, .. } if divisor == "m"), "{device}: {e:?}");
    }
    Ok(())
}
