//! Support for the code `compute!` generates (which names it `::tvm::__rt`). Not a public
//! API: it changes with the compiler.

pub use crate::cpu;
pub use crate::{bf16, f16, DType, Error};
pub use crate::gpu;
pub use crate::math::{erf as erf_f64, erf_f32};
pub use crate::shape::{bind_dim, bind_scalar_dim, check_dim, finish as finish_dims, DimSlot};
#[cfg(feature = "rayon")]
pub use rayon;


/// The error for a target name other than `cpu`, `cuda` and `opencl`.
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

/// The error for a device whose backend does not exist yet (CUDA): why the device is
/// unavailable, or that no backend runs on it.
pub fn no_backend(device: &crate::Device) -> Error {
    match device.check_available() {
        Err(e) => e,
        Ok(()) => Error::DeviceUnavailable {
            device: device.to_string(),
            reason: format!("tvm-rs has no {} backend yet", device.kind()),
        },
    }
}

/// The error of a failed CPU kernel (`reason` from the kernel function).
pub fn cpu_failed(kernel: &str, reason: &str) -> Error {
    Error::LaunchFailed { kernel: kernel.to_string(), reason: reason.to_string() }
}

/// `a / b` in host code, truncating; `Err` where the kernel's TIR has no value (division
/// by zero, `i64::MIN / -1`).
#[inline]
pub fn div(function: &str, a: i64, b: i64) -> Result<i64, Error> {
    a.checked_div(b).ok_or_else(|| host_arith(function, a, "/", b))
}

/// `a % b` in host code (the sign of `a`); `Err` as for [`div`].
#[inline]
pub fn rem(function: &str, a: i64, b: i64) -> Result<i64, Error> {
    a.checked_rem(b).ok_or_else(|| host_arith(function, a, "%", b))
}

fn host_arith(function: &str, a: i64, op: &str, b: i64) -> Error {
    Error::LaunchFailed {
        kernel: function.to_string(),
        reason: format!("the launch configuration computes {a} {op} {b}, which has no value"),
    }
}
