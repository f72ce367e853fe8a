//! [`Error`]: the one error type of everything that runs (docs/LANGUAGE.md §4). Bad input is an
//! `Err` naming what was wrong, never a panic.

use std::fmt;

/// Everything that can go wrong at run time: bad shapes, devices, compilation and
/// launches. Messages are lowercase with no trailing period and name the kernel, the
/// parameter and the numbers involved.
///
/// The enum is `#[non_exhaustive]`: match it with a wildcard arm. Its variants can be
/// built anywhere (generated code builds them in the user's crate).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// A dimension of a tensor argument does not have the size the kernel requires.
    ///
    /// `expected` is the required size; `symbol` is the symbolic dim it stands for (`n`),
    /// `None` for a literal dim (`f32[1024]`); `bound_by` is the parameter that bound the
    /// symbol (an earlier tensor argument or a `usize` scalar), if any. Displayed as
    /// "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000 (n, bound
    /// by `a`)".
    ShapeMismatch {
        kernel: String,
        param: String,
        dim: usize,
        got: usize,
        expected: usize,
        symbol: Option<String>,
        bound_by: Option<String>,
    },
    /// [`Tensor::from_vec`](crate::Tensor::from_vec) (or a reshape) was given
    /// `len` elements for a shape that holds a different number.
    LengthMismatch { len: usize, shape: Vec<usize> },
    /// An array of rank `got` was given where rank `expected` is required (converting a
    /// dynamic-rank `ndarray` array).
    RankMismatch { expected: usize, got: usize },
    /// A shape whose element count (or size in bytes) does not fit in memory: the product
    /// of its non-zero dimensions, or that times the element size, exceeds `isize::MAX`.
    SizeOverflow { shape: Vec<usize> },
    /// The device cannot run anything: no driver, no such device index, or its runtime is
    /// not built.
    DeviceUnavailable { device: String, reason: String },
    /// The device exists but lacks what the kernel needs (f64 on an OpenCL device without
    /// `cl_khr_fp64`, more local memory than it has); `reason` says what.
    DeviceUnsupported { device: String, reason: String },
    /// The device has no room for `bytes` more bytes (after the runtime freed the buffers
    /// it keeps for reuse); `reason` is the driver's word.
    OutOfMemory { device: String, bytes: usize, reason: String },
    /// A device tensor given to a kernel that runs on another device: `param` of `kernel`
    /// lives on `got`, and the kernel was asked to run on `expected`.
    WrongDevice { kernel: String, param: String, expected: String, got: String },
    /// A device name that does not parse (from `TVM_DEVICE` or `Device::from_str`).
    InvalidDevice { text: String },
    /// Compiling generated code for `target` (`cuda`, `opencl`, `webgpu`) failed; `log` is the
    /// compiler's log.
    CompilationFailed { target: String, log: String },
    /// Launching (or running) kernel `kernel` failed.
    LaunchFailed { kernel: String, reason: String },
    /// A target name the kernel has no code for (`source("vulkan")`).
    UnsupportedTarget { target: String },
    /// A scalar argument whose value the kernel cannot use (a `usize` too large for the
    /// kernel's `i64` index arithmetic); `reason` says why.
    ScalarOutOfRange { kernel: String, param: String, value: String, reason: String },
    /// An index read from a tensor (or computed from values the compiler cannot bound)
    /// falls outside the dim it indexes: `index` (the source text of the index
    /// expression) is `value`, and dim `dim` of `tensor` has size `extent`. No element
    /// outside any tensor was touched; the outputs' contents are unspecified.
    IndexOutOfBounds { kernel: String, tensor: String, dim: usize, index: String, value: i64, extent: i64 },
    /// An integer division or remainder whose divisor `divisor` (its source text) is zero.
    /// The outputs' contents are unspecified.
    DivisionByZero { kernel: String, divisor: String },
    /// A broken invariant of tvm-rs itself (a bug to report), carried as an error rather
    /// than a panic because it happened at run time on the user's data.
    Internal { message: String },
}

impl Error {
    /// The [`Error::ScalarOutOfRange`] of a `usize` scalar `value` that does not fit in
    /// `i64` index arithmetic.
    pub fn index_scalar_out_of_range(kernel: &str, param: &str, value: usize) -> Error {
        Error::ScalarOutOfRange {
            kernel: kernel.to_string(),
            param: param.to_string(),
            value: value.to_string(),
            reason: format!("index arithmetic is i64 and allows at most {}", i64::MAX),
        }
    }
}

/// `[2, 3]`.
struct ShapeDisplay<'a>(&'a [usize]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ShapeMismatch { kernel, param, dim, got, expected, symbol, bound_by } => {
                write!(f, "shape mismatch in `{kernel}`: dimension {dim} of `{param}` is {got}, expected {expected}")?;
                match (symbol, bound_by) {
                    (Some(s), Some(b)) => write!(f, " ({s}, bound by `{b}`)"),
                    (Some(s), None) => write!(f, " ({s})"),
                    (None, Some(b)) => write!(f, " (bound by `{b}`)"),
                    (None, None) => Ok(()),
                }
            }
            Error::LengthMismatch { len, shape } => {
                write!(f, "length mismatch: {len} elements given for shape {}", ShapeDisplay(shape))?;
                match shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) {
                    Some(n) => write!(f, ", which holds {n}"),
                    None => write!(f, ", which holds more than {}", usize::MAX),
                }
            }
            Error::RankMismatch { expected, got } => {
                write!(f, "rank mismatch: expected {expected} dimensions, got {got}")
            }
            Error::SizeOverflow { shape } => {
                write!(f, "shape {} is too large: its size overflows the address space", ShapeDisplay(shape))
            }
            Error::DeviceUnavailable { device, reason } => write!(f, "device `{device}` is unavailable: {reason}"),
            Error::DeviceUnsupported { device, reason } => {
                write!(f, "device `{device}` cannot run this kernel: {reason}")
            }
            Error::OutOfMemory { device, bytes, reason } => {
                write!(f, "device `{device}` is out of memory: {bytes} bytes could not be allocated ({reason})")
            }
            Error::WrongDevice { kernel, param, expected, got } => write!(
                f,
                "`{param}` of `{kernel}` lives on `{got}`, but the kernel runs on `{expected}` (copy it with `to_device`)"
            ),
            Error::InvalidDevice { text } => write!(
                f,
                "invalid device `{text}`: expected `cpu`, `cuda`, `cuda:N`, `opencl`, `opencl:N`, `webgpu` or `webgpu:N` \
                 (as in TVM_DEVICE)"
            ),
            Error::CompilationFailed { target, log } => {
                write!(f, "compilation for `{target}` failed")?;
                let log = log.trim_end();
                if log.is_empty() {
                    Ok(())
                } else {
                    write!(f, ":\n{log}")
                }
            }
            Error::LaunchFailed { kernel, reason } => write!(f, "launch of `{kernel}` failed: {reason}"),
            Error::UnsupportedTarget { target } => {
                write!(f, "unsupported target `{target}`: expected `cpu`, `cuda`, `opencl`, `webgpu` or `metal`")
            }
            Error::ScalarOutOfRange { kernel, param, value, reason } => {
                write!(f, "scalar `{param}` of `{kernel}` is out of range: {value} ({reason})")
            }
            Error::IndexOutOfBounds { kernel, tensor, dim, index, value, extent } => write!(
                f,
                "index out of bounds in `{kernel}`: `{index}` is {value}, but dimension {dim} of `{tensor}` has size {extent}"
            ),
            Error::DivisionByZero { kernel, divisor } => {
                write!(f, "division by zero in `{kernel}`: the divisor `{divisor}` is 0")
            }
            Error::Internal { message } => write!(f, "internal error in tvm-rs (please report it): {message}"),
        }
    }
}

impl std::error::Error for Error {}
