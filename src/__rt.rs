//! What generated kernels call: shape binding and checking with errors that name the
//! parameter, the dimension and both sizes; rayon; math helpers.

use std::sync::OnceLock;
use tvm_core::runtime::decide_default;
pub use tvm_core::runtime::rayon;
use tvm_core::{Device, Error};

/// The device a kernel's typed function runs on, decided on the first call (then fixed)
/// by [`decide_default`]: `TVM_DEVICE` when set and not blank (an unavailable device is
/// then an error when the kernel runs, never a silent fallback; an unparseable one is
/// `Err(InvalidDevice)` on every call), else the CPU. No kernel has CUDA code yet, so a
/// CUDA device that is present does not make it the default here, unlike
/// [`Device::try_default`].
pub fn default_device() -> Result<Device, Error> {
    static DEFAULT: OnceLock<Result<Device, Error>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            let env = std::env::var_os("TVM_DEVICE");
            decide_default(env.as_ref().map(|v| v.to_string_lossy()).as_deref(), false)
        })
        .clone()
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
pub fn bind_scalar_dim(
    slot: &mut Option<(i64, &'static str)>,
    value: usize,
    kernel: &'static str,
    param: &'static str,
) -> Result<(), Error> {
    let v = i64::try_from(value).map_err(|_| Error::index_scalar_out_of_range(kernel, param, value))?;
    *slot = Some((v, param));
    Ok(())
}

/// Checks dimension `dim` of `param` against a size known at compile time (or computed
/// from bound dims).
pub fn check_dim(
    got: usize,
    expected: i64,
    kernel: &'static str,
    param: &'static str,
    dim: usize,
) -> Result<(), Error> {
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
    Error::DeviceUnavailable {
        device: target.to_string(),
        reason: "code generation for this target is not built yet".to_string(),
    }
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

// ---- OpenCL: the generated `run` hands tensors to the OpenCL runtime ----

use tvm_core::interp::ScalarValue;
use tvm_core::runtime::{DeviceArg, Element};
use tvm_core::tir::PrimFunc;
use tvm_core::Tensor;

/// Element types whose tensors a device runtime reads and writes in place, as bytes.
pub trait HostElement: Element {
    /// The elements' bytes (native endianness; bool as 0/1).
    fn bytes(s: &[Self]) -> &[u8];
    /// Where the device writes elements of this type.
    fn out_slot(s: &mut [Self]) -> OutSlot<'_>;
}

macro_rules! plain_element {
    ($($t:ty),*) => {$(
        impl HostElement for $t {
            fn bytes(s: &[Self]) -> &[u8] {
                bytemuck::cast_slice(s)
            }
            fn out_slot(s: &mut [Self]) -> OutSlot<'_> {
                OutSlot::Bytes(bytemuck::cast_slice_mut(s))
            }
        }
    )*};
}
plain_element!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

impl HostElement for bool {
    fn bytes(s: &[Self]) -> &[u8] {
        bytemuck::cast_slice(s)
    }
    fn out_slot(s: &mut [Self]) -> OutSlot<'_> {
        // A device could write a byte other than 0 or 1, which is not a `bool`: it writes
        // into bytes, converted afterwards. They start as the tensor's values, for the
        // elements a kernel leaves unwritten (see [`OutBuf::arg`]).
        let staging = s.iter().map(|&b| b as u8).collect();
        OutSlot::Bools(s, staging)
    }
}

/// An output tensor's memory while a device runtime writes it.
pub enum OutSlot<'a> {
    /// The tensor's own memory.
    Bytes(&'a mut [u8]),
    /// Bytes converted into the tensor's bools by [`OutBuf::finish`].
    Bools(&'a mut [bool], Vec<u8>),
}

/// An output tensor handed to a device runtime: [`OutBuf::arg`] while it runs, then
/// [`OutBuf::finish`].
pub struct OutBuf<'a> {
    dtype: tvm_core::DType,
    shape: Vec<usize>,
    slot: OutSlot<'a>,
}

impl<'a> OutBuf<'a> {
    pub fn new<T: HostElement, const R: usize>(t: &'a mut Tensor<T, R>) -> Self {
        OutBuf { dtype: T::DTYPE, shape: t.shape().to_vec(), slot: T::out_slot(t.as_mut_slice()) }
    }

    /// The output as a device argument; call it once (it hands over the shape).
    ///
    /// In debug builds the device buffer starts as the tensor's contents (`upload`), so an
    /// element the kernel never writes keeps its value, as on the CPU, instead of stale
    /// bytes of an earlier run in a pooled device buffer: a test that starts an output as
    /// NaN sees the elements a kernel misses. Release builds skip that copy.
    pub fn arg(&mut self) -> DeviceArg<'_> {
        let bytes: &mut [u8] = match &mut self.slot {
            OutSlot::Bytes(b) => b,
            OutSlot::Bools(_, staging) => staging,
        };
        DeviceArg::Output {
            dtype: self.dtype,
            shape: std::mem::take(&mut self.shape),
            bytes,
            upload: cfg!(debug_assertions),
        }
    }

    /// Moves staged bytes into the tensor (nonzero is `true`).
    pub fn finish(self) {
        if let OutSlot::Bools(out, staging) = self.slot {
            for (o, b) in out.iter_mut().zip(staging) {
                *o = b != 0;
            }
        }
    }
}

/// An input tensor for a device runtime, borrowed.
pub fn input_arg<T: HostElement, const R: usize>(t: &Tensor<T, R>) -> DeviceArg<'_> {
    DeviceArg::Input { dtype: T::DTYPE, shape: t.shape().to_vec(), bytes: T::bytes(t.as_slice()) }
}

/// A scalar argument for a device runtime.
pub fn scalar_arg(v: impl Into<ScalarValue>) -> DeviceArg<'static> {
    DeviceArg::Scalar(v.into())
}

/// The kernel in `src` (the text of a `compute!` body) lowered for OpenCL, by the same
/// pipeline the macro ran.
pub fn lower_opencl(src: &str) -> Result<PrimFunc, Error> {
    let fail = |log: String| Error::CompilationFailed { target: "opencl".into(), log };
    let kernel = tvm_core::frontend::parse_str(src)
        .map_err(|e| fail(e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")))?;
    tvm_core::frontend::lower_for(&kernel, &tvm_core::Target::opencl())
        .map_err(|e| fail(e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")))
}

/// Runs a lowered function on OpenCL device `n`.
#[cfg(feature = "opencl")]
pub fn run_opencl(n: usize, f: &PrimFunc, source: &str, args: &mut [DeviceArg<'_>]) -> Result<(), Error> {
    tvm_core::runtime::opencl::run(n, f, source, args)
}

/// Without the `opencl` feature no OpenCL device is available.
#[cfg(not(feature = "opencl"))]
pub fn run_opencl(n: usize, _f: &PrimFunc, _source: &str, _args: &mut [DeviceArg<'_>]) -> Result<(), Error> {
    Device::OpenCl(n).check_available()?;
    Err(Error::DeviceUnavailable {
        device: format!("opencl:{n}"),
        reason: "tvm was built without its `opencl` feature".into(),
    })
}
