//! What the examples share: the device they run on, the plain references they check
//! against (the ones the test suites use) and the error measure they print.

use tvm::Device;

#[path = "../../tvm-core/tests/support/reference.rs"]
pub mod reference;

/// The device the typed functions run on (`Device::try_default`: `TVM_DEVICE` when set,
/// such as `cpu`, `opencl` or `opencl:N`, else the CPU until kernels have CUDA code); an
/// unavailable device is an error. The examples time `run` on it; on an OpenCL device that
/// includes copying the inputs to the device and the output back.
pub fn device() -> Result<Device, tvm::Error> {
    let device = Device::try_default()?;
    device.check_available()?;
    Ok(device)
}

/// The largest `|got - want| / max(|want|, 1)`; NaN if any element is NaN (so that a
/// `max_err < tol` check fails on it).
#[allow(dead_code)] // not every example uses it
pub fn max_relative_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "the result and the reference differ in length");
    got.iter().zip(want).map(|(g, w)| (g - w).abs() / w.abs().max(1.0)).fold(0f32, |m, e| {
        if m.is_nan() || e.is_nan() {
            f32::NAN
        } else {
            m.max(e)
        }
    })
}
