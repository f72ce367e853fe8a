//! [`DeviceArg`]: how host memory is handed to a device runtime without a copy.

use crate::dtype::DType;
use crate::interp::ScalarValue;

/// An argument of a device runtime's `run` (`runtime::opencl::run`), borrowing the caller's memory: tensors as bytes in native
/// endianness (bool as one byte, 0 or 1), so nothing is copied on the host.
#[derive(Debug)]
pub enum DeviceArg<'a> {
    /// An input tensor of element type `dtype` and shape `shape`.
    Input { dtype: DType, shape: Vec<usize>, bytes: &'a [u8] },
    /// An output tensor: read back from the device into `bytes` after the kernels ran.
    /// With `upload`, its device memory starts as `bytes` (tests poison outputs so that
    /// an element a kernel never writes shows); without, its start is unspecified.
    Output { dtype: DType, shape: Vec<usize>, bytes: &'a mut [u8], upload: bool },
    /// A scalar parameter.
    Scalar(ScalarValue),
}

impl DeviceArg<'_> {
    /// The element type, shape and byte length of a tensor argument.
    pub fn tensor(&self) -> Option<(DType, &[usize], usize)> {
        match self {
            DeviceArg::Input { dtype, shape, bytes } => Some((*dtype, shape, bytes.len())),
            DeviceArg::Output { dtype, shape, bytes, .. } => Some((*dtype, shape, bytes.len())),
            DeviceArg::Scalar(_) => None,
        }
    }
}
