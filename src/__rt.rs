//! What generated kernels call: shape binding and checking with errors that name the
//! parameter, the dimension and both sizes; rayon; math helpers.

pub use tvm_core::runtime::rayon;
use tvm_core::{Device, Error};

/// The device a kernel's typed function runs on: `TVM_DEVICE` when set (an unavailable
/// device is then an error, never a silent fallback), else CUDA when a device is
/// present and the kernel has CUDA code, else the CPU.
pub fn default_device(has_cuda_code: bool) -> Result<Device, Error> {
    let requested = std::env::var("TVM_DEVICE").map(|v| !v.trim().is_empty()).unwrap_or(false);
    if requested {
        return Device::try_default();
    }
    match Device::try_default()? {
        Device::Cuda(n) if has_cuda_code => Ok(Device::Cuda(n)),
        _ => Ok(Device::Cpu),
    }
}

/// Binds dim slot `slot` (named `symbol`) to dimension `dim` of parameter `param`, or
/// checks it against the size bound earlier.
pub fn bind_dim(
    slot: &mut Option<(i64, &'static str)>,
    got: usize,
    kernel: &'static str,
    param: &'static str,
    dim: usize,
    symbol: &'static str,
) -> Result<(), Error> {
    match *slot {
        None => {
            let v = i64::try_from(got).map_err(|_| Error::index_scalar_out_of_range(kernel, param, got))?;
            *slot = Some((v, param));
            Ok(())
        }
        Some((v, bound_by)) if v as usize != got => Err(Error::ShapeMismatch {
            kernel: kernel.to_string(),
            param: param.to_string(),
            dim,
            got,
            expected: v as usize,
            symbol: Some(format!("{symbol} = {v}")),
            bound_by: Some(bound_by.to_string()),
        }),
        Some(_) => Ok(()),
    }
}

/// Binds a dim to the value of the `usize` scalar parameter of the same name.
pub fn bind_scalar_dim(slot: &mut Option<(i64, &'static str)>, value: usize, kernel: &'static str, param: &'static str) -> Result<(), Error> {
    let v = i64::try_from(value).map_err(|_| Error::index_scalar_out_of_range(kernel, param, value))?;
    *slot = Some((v, param));
    Ok(())
}

/// Checks dimension `dim` of `param` against a size known at compile time (or computed
/// from bound dims).
pub fn check_dim(got: usize, expected: i64, kernel: &'static str, param: &'static str, dim: usize) -> Result<(), Error> {
    if got as i64 == expected && expected >= 0 {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            kernel: kernel.to_string(),
            param: param.to_string(),
            dim,
            got,
            expected: expected.max(0) as usize,
            symbol: None,
            bound_by: None,
        })
    }
}

/// The error for a target whose code generation is not built yet.
pub fn not_built(target: &str) -> Error {
    Error::DeviceUnavailable { device: target.to_string(), reason: "code generation for this target is not built yet".to_string() }
}

/// The error for a target name other than `cpu`, `cuda` and `opencl`.
pub fn unsupported_target(target: &str) -> Error {
    Error::UnsupportedTarget { target: target.to_string() }
}

/// The error function in f32 (the f64 one, rounded).
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    tvm_core::interp::math::erf(x as f64) as f32
}

/// The error function in f64.
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    tvm_core::interp::math::erf(x)
}
