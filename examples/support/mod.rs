//! What the examples share: the device they run on.

use tvm::Device;

/// `TVM_DEVICE` when set (`cpu`, `opencl`, `opencl:N`; `opencl` needs the `opencl`
/// feature), else the CPU. The examples time `run` on it; on an OpenCL device that
/// includes copying the inputs to the device and the output back.
pub fn device() -> Result<Device, tvm::Error> {
    let device = match std::env::var("TVM_DEVICE") {
        Ok(s) if !s.trim().is_empty() => s.parse()?,
        _ => Device::Cpu,
    };
    device.check_available()?;
    Ok(device)
}
