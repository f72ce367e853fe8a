//! [`DeviceTensor`]: a tensor that lives on one device, so that a chain of kernels runs with
//! one upload per input and one download per result (docs/LANGUAGE.md §4, ARCHITECTURE.md
//! "Device-resident data").
//!
//! ```no_run
//! # use tvm_runtime::{Device, DeviceTensor, Tensor};
//! # fn main() -> Result<(), tvm_runtime::Error> {
//! let device = Device::OpenCl(0);
//! let x = Tensor::from_vec(vec![1.0f32; 1024], [1024])?.to_device(&device)?; // one upload
//! let mut y = DeviceTensor::<f32, 1>::zeros(&device, [1024])?;
//! // kernel_a::run_on(&device, &x, &mut y)?; kernel_b::run_on(&device, &y, &mut x2)?; ...
//! let host: Tensor<f32, 1> = y.to_host()?;                                  // one download
//! # Ok(()) }
//! ```
//!
//! On [`Device::Cpu`] a device tensor is host memory, so the same code runs there too.

use crate::device::Device;
use crate::element::Element;
use crate::error::Error;
use crate::gpu;
use crate::storage::{host_oom, Storage as HostData};
use crate::tensor::{element_count, Tensor};
use std::fmt;

/// A tensor of `T` with `R` dimensions on one device, row-major and contiguous. Its device
/// memory goes back to the runtime's pool when it is dropped.
pub struct DeviceTensor<T: Element, const R: usize> {
    shape: [usize; R],
    storage: Storage<T>,
}

enum Storage<T: Element> {
    /// On the CPU (aligned as host tensors are).
    Host(HostData<T>),
    /// On a GPU device.
    Gpu(gpu::Buffer),
}

impl<T: Element, const R: usize> Tensor<T, R> {
    /// A copy of the tensor on `device` (one upload to a GPU device; a plain copy on the
    /// CPU). `Err(DeviceUnavailable)` when the device cannot run.
    pub fn to_device(&self, device: &Device) -> Result<DeviceTensor<T, R>, Error> {
        let storage = match device {
            Device::Cpu => Storage::Host(HostData::try_copy_of(self.as_slice()).map_err(host_oom)?),
            _ => Storage::Gpu(gpu::Gpu::of(device)?.upload(self.as_slice())?),
        };
        Ok(DeviceTensor { shape: self.shape(), storage })
    }
}

impl<T: Element, const R: usize> DeviceTensor<T, R> {
    /// A tensor of `shape` on `device` filled with zeros (`false`, `+0.0`), without any
    /// host-to-device copy. `Err(SizeOverflow)` for a shape too large to address,
    /// `Err(DeviceUnavailable)` when the device cannot run.
    pub fn zeros(device: &Device, shape: [usize; R]) -> Result<Self, Error> {
        let n = element_count::<T>(&shape)?;
        let storage = match device {
            Device::Cpu => Storage::Host(HostData::try_filled(n, T::default()).map_err(host_oom)?),
            _ => {
                let mut b = gpu::Gpu::of(device)?.alloc(n * std::mem::size_of::<T>())?;
                b.fill_zero()?;
                Storage::Gpu(b)
            }
        };
        Ok(DeviceTensor { shape, storage })
    }

    /// A tensor of `shape` on `device` whose contents the next kernel writes: pooled
    /// memory that is not cleared (on the host, a block a dropped tensor of the same size
    /// left, else zeros); generated code allocates outputs with this, and every element
    /// of an output is written by its kernel.
    #[doc(hidden)]
    pub fn uninit_for_output(device: &Device, shape: [usize; R]) -> Result<Self, Error> {
        let n = element_count::<T>(&shape)?;
        let storage = match device {
            Device::Cpu => Storage::Host(HostData::try_for_overwrite(n).map_err(host_oom)?),
            _ => Storage::Gpu(gpu::Gpu::of(device)?.alloc(n * std::mem::size_of::<T>())?),
        };
        Ok(DeviceTensor { shape, storage })
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> Device {
        match &self.storage {
            Storage::Host(_) => Device::Cpu,
            Storage::Gpu(b) => b.device(),
        }
    }

    /// The shape, outermost dimension first.
    pub fn shape(&self) -> [usize; R] {
        self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> crate::DType {
        T::DTYPE
    }

    /// The number of dimensions, `R`.
    pub const fn rank(&self) -> usize {
        R
    }

    /// The number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A host copy (one download from a GPU device).
    pub fn to_host(&self) -> Result<Tensor<T, R>, Error> {
        let mut t = Tensor::try_zeros(self.shape)?;
        self.copy_to(&mut t)?;
        Ok(t)
    }

    /// Copies the elements into `out`, a host tensor of the same shape (one download from
    /// a GPU device); `Err(ShapeMismatch)` for another shape.
    pub fn copy_to(&self, out: &mut Tensor<T, R>) -> Result<(), Error> {
        same_shape("DeviceTensor::copy_to", "out", self.shape, out.shape())?;
        match &self.storage {
            Storage::Host(v) => out.as_mut_slice().copy_from_slice(v.as_slice()),
            Storage::Gpu(b) => b.read_elements(out.as_mut_slice())?,
        }
        Ok(())
    }

    /// Overwrites the elements with those of `src`, a host tensor of the same shape (one
    /// upload to a GPU device); `Err(ShapeMismatch)` for another shape.
    pub fn copy_from(&mut self, src: &Tensor<T, R>) -> Result<(), Error> {
        same_shape("DeviceTensor::copy_from", "src", self.shape, src.shape())?;
        match &mut self.storage {
            Storage::Host(v) => v.as_mut_slice().copy_from_slice(src.as_slice()),
            Storage::Gpu(b) => b.write(T::as_bytes(src.as_slice()))?,
        }
        Ok(())
    }

    /// The elements for a CPU kernel `kernel` of which this is parameter `param`;
    /// `Err(WrongDevice)` when the tensor is not on the CPU.
    #[doc(hidden)]
    pub fn host_for(&self, kernel: &str, param: &str) -> Result<&[T], Error> {
        match &self.storage {
            Storage::Host(v) => Ok(v.as_slice()),
            Storage::Gpu(b) => Err(wrong_device(kernel, param, &Device::Cpu, b.device())),
        }
    }

    /// [`DeviceTensor::host_for`], writable.
    #[doc(hidden)]
    pub fn host_for_mut(&mut self, kernel: &str, param: &str) -> Result<&mut [T], Error> {
        match &mut self.storage {
            Storage::Host(v) => Ok(v.as_mut_slice()),
            Storage::Gpu(b) => Err(wrong_device(kernel, param, &Device::Cpu, b.device())),
        }
    }

    /// The device memory for a kernel `kernel` on `device` of which this is parameter
    /// `param`; `Err(WrongDevice)` when the tensor lives elsewhere.
    #[doc(hidden)]
    pub fn buffer_for(&self, device: &Device, kernel: &str, param: &str) -> Result<&gpu::Buffer, Error> {
        match &self.storage {
            Storage::Gpu(b) if b.device() == *device => Ok(b),
            _ => Err(wrong_device(kernel, param, device, self.device())),
        }
    }
}

fn wrong_device(kernel: &str, param: &str, expected: &Device, got: Device) -> Error {
    Error::WrongDevice {
        kernel: kernel.to_string(),
        param: param.to_string(),
        expected: expected.to_string(),
        got: got.to_string(),
    }
}

fn same_shape<const R: usize>(func: &str, param: &str, have: [usize; R], other: [usize; R]) -> Result<(), Error> {
    for d in 0..R {
        crate::shape::check_dim(other[d], have[d] as i64, func, param, d)?;
    }
    Ok(())
}

impl<T: Element, const R: usize> fmt::Debug for DeviceTensor<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceTensor")
            .field("dtype", &format_args!("{}", T::DTYPE.name()))
            .field("shape", &self.shape)
            .field("device", &format_args!("{}", self.device()))
            .finish()
    }
}
