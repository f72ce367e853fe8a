//! Support for the code `compute!` generates (which names it `::tvm::__rt`). Not a public
//! API: it changes with the compiler.

pub use crate::cpu;
pub use crate::gpu;
pub use crate::math::{
    erf as erf_f64, erf_f32, erf_f32_fma, exp_f32, exp_f32_fma, log_f32, log_f32_fma, pow_f32, tanh_f32, tanh_f32_fma,
};
pub use crate::profile::{call as profiled, profile};
pub use crate::shape::{bind_dim, bind_scalar_dim, check_dim, finish as finish_dims, DimSlot};
pub use crate::tune::tuned_applies;
pub use crate::{bf16, f16, DType, Error, Profile};
#[cfg(feature = "rayon")]
pub use rayon;

/// The device a kernel's typed function runs on: [`crate::Device::try_default`], except
/// that a kernel without CUDA code (its CUDA code generation failed) runs on the CPU when
/// the default is CUDA only because a device is present. A device named by `TVM_DEVICE`
/// is kept: running there then reports why there is no code.
pub fn default_device(has_cuda_code: bool) -> Result<crate::Device, Error> {
    let d = crate::Device::try_default()?;
    let chosen = std::env::var_os("TVM_DEVICE").is_some_and(|v| !v.to_string_lossy().trim().is_empty());
    Ok(match d {
        crate::Device::Cuda(_) if !has_cuda_code && !chosen => crate::Device::Cpu,
        d => d,
    })
}

/// The error for a target name other than `cpu`, `cuda`, `opencl`, `webgpu` and `metal`.
pub fn unsupported_target(target: &str) -> Error {
    Error::UnsupportedTarget { target: target.to_string() }
}

/// The error for a target whose code generation is not built yet.
pub fn not_built(target: &str) -> Error {
    Error::DeviceUnavailable {
        device: target.to_string(),
        reason: "code generation for this target is not built yet".to_string(),
    }
}

/// The error for a device the kernel has no code for (CUDA, until the compiler generates
/// its host code): why the device is unavailable, or that the kernel has no code for it.
pub fn no_backend(device: &crate::Device) -> Error {
    crate::gpu::no_backend(device)
}

/// A 64-bit integer scalar `value` (parameter `param`) of a WebGPU kernel `kernel` as
/// the `i32` its WGSL code takes: the code is proved exact while every such scalar lies
/// within `limit` of 0 (`tvm_core::codegen::wgsl::narrow`), so a value beyond it is
/// `Err(LaunchFailed)` saying so, never a wrapped index.
pub fn narrow_scalar(value: i128, limit: i64, kernel: &str, param: &str) -> Result<i32, Error> {
    match i32::try_from(value) {
        Ok(v) if value.unsigned_abs() <= limit.unsigned_abs() as u128 => Ok(v),
        _ => Err(Error::LaunchFailed {
            kernel: kernel.to_string(),
            reason: format!(
                "`{param}` is {value}: the kernel's WebGPU code computes its indices in 32 bits (WGSL has no 64-bit \
                 integers), proved exact while every dim and 64-bit scalar is at most {limit}"
            ),
        }),
    }
}

/// The error of a failed CPU kernel (`reason` from the kernel function).
pub fn cpu_failed(kernel: &str, reason: &str) -> Error {
    Error::LaunchFailed { kernel: kernel.to_string(), reason: reason.to_string() }
}

/// A check the compiler placed in a kernel (see `tvm_core::tir::Expr::Check`), as the
/// generated code describes it: site `n` of a kernel is entry `n` of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckSite {
    /// Dim `dim` of `tensor` indexed by `index` (source text).
    Index { tensor: &'static str, dim: usize, index: &'static str },
    /// The divisor `divisor` (source text) of an integer `/` or `%`.
    Divisor { divisor: &'static str },
}

/// The error of a failed check: `(site, value, extent)` as a [`cpu::Fault`] or a device's
/// fault buffer holds it. A site outside the table is an internal error.
///
/// [`cpu::Fault`]: crate::cpu::Fault
pub fn check_failed(kernel: &str, sites: &[CheckSite], (site, value, extent): (u32, i64, i64)) -> Error {
    match sites.get(site as usize) {
        Some(CheckSite::Index { tensor, dim, index }) => Error::IndexOutOfBounds {
            kernel: kernel.to_string(),
            tensor: tensor.to_string(),
            dim: *dim,
            index: index.to_string(),
            value,
            extent,
        },
        Some(CheckSite::Divisor { divisor }) => {
            Error::DivisionByZero { kernel: kernel.to_string(), divisor: divisor.to_string() }
        }
        None => Error::Internal {
            message: format!("kernel `{kernel}` reported check {site}, but it has {} checks", sites.len()),
        },
    }
}

/// The error of allocating `what` (``output `c` ``, ``intermediate `t` ``) of `kernel`, of
/// `shape` with `elem_bytes`-byte elements on `device`, from the allocation's own error: a
/// shape whose element count overflows `i64` stays `SizeOverflow` (a shape error); a byte
/// count that overflows and memory the device lacks are both `OutOfMemory`, naming the
/// tensor and the byte count (saturated at `usize::MAX` in the field, exact in the
/// reason). Other errors pass through.
pub fn alloc_failed(e: Error, device: &str, kernel: &str, what: &str, shape: &[usize], elem_bytes: usize) -> Error {
    let elements: u128 = shape.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128));
    if elements > i64::MAX as u128 && !shape.contains(&0) {
        return Error::SizeOverflow { shape: shape.to_vec() };
    }
    let exact: u128 = elements.saturating_mul(elem_bytes as u128);
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let needs = format!("{what} of `{kernel}` needs {exact} bytes (shape [{}])", dims.join(", "));
    match e {
        Error::SizeOverflow { .. } => Error::OutOfMemory {
            device: device.to_string(),
            bytes: usize::try_from(exact).unwrap_or(usize::MAX),
            reason: format!("{needs}, more than the address space holds"),
        },
        Error::OutOfMemory { device, bytes, reason } => {
            Error::OutOfMemory { device, bytes, reason: format!("{needs}: {reason}") }
        }
        other => other,
    }
}

/// The value of a host-code division (`checked_div`, `checked_rem`), or the error for
/// one that has no value in the kernel's TIR (division by zero, `MIN / -1`).
#[inline]
pub fn checked<T>(value: Option<T>, function: &str, op: &str) -> Result<T, Error> {
    value.ok_or_else(|| Error::LaunchFailed {
        kernel: function.to_string(),
        reason: format!("the launch configuration divides (`{op}`) by zero, or overflows"),
    })
}
