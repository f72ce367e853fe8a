//! The tvm-rs runtime: everything a program that uses `compute!` links, and nothing of the
//! compiler (no syn, no parser, no lowering). The `tvm` facade re-exports it.
//!
//! * [`Tensor`]: a host tensor; [`DeviceTensor`]: a tensor that stays on one device
//!   across kernel calls; [`Element`]: their element types, with the `half` crate's
//!   [`f16`](struct@crate::f16) and [`bf16`](struct@crate::bf16).
//! * [`Device`]: where kernels run, and the process-wide default ([`Device::try_default`]).
//! * [`Error`]: everything that can go wrong at run time.
//! * [`gpu`]: the GPU backends behind one interface (OpenCL and CUDA, loaded at run time;
//!   WebGPU through wgpu),
//!   which the host code `compute!` generates for GPU targets calls; [`device_stats`]
//!   counts the copies between host and device.
//!
//! Cargo features: `opencl` (default; libOpenCL is loaded when first used, never linked),
//! `cuda` (default; libcuda and libnvrtc are loaded when first used, never linked),
//! `rayon` (default; the parallel loops of generated CPU code), `webgpu` (off by default;
//! wgpu, built in, on the Vulkan, Metal or DX12 driver it finds), `ndarray` (conversions).

#[doc(hidden)]
pub mod __rt;
#[doc(hidden)]
pub mod cpu;
mod device;
mod device_tensor;
pub mod dtype;
mod element;
mod error;
pub mod gpu;
pub mod math;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
#[cfg(feature = "rayon")]
#[doc(hidden)]
pub mod pool;
pub mod profile;
pub mod shape;
mod stats;
mod storage;
mod tensor;
pub mod tune;

pub use device::{decide_default, Device, CUDA_BACKEND};
pub use device_tensor::DeviceTensor;
pub use dtype::DType;
pub use element::Element;
pub use error::Error;
pub use half::{self, bf16, f16};
pub use profile::{Clock, Profile, Speedup};
pub use stats::{device_stats, DeviceStats};
pub use tensor::Tensor;

/// The `ndarray` crate the conversions of [`Tensor`] are written against.
#[cfg(feature = "ndarray")]
pub use ndarray;
