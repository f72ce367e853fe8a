//! [`Element`]: the element types a [`Tensor`](crate::Tensor) can hold. The 16-bit floats
//! are the `half` crate's [`f16`](struct@crate::f16)(half::f16) and [`bf16`](struct@crate::bf16)(half::bf16), the types cudarc,
//! candle and burn use, so tensors cross between those crates and this one unconverted.

use crate::dtype::DType;
use half::{bf16, f16};
use std::fmt;

mod sealed {
    pub trait Sealed {}
}

/// An element type of tensors: `bool`, the fixed-width integers, [`f16`](struct@crate::f16), [`bf16`](struct@crate::bf16), `f32`
/// and `f64`. Sealed: the set matches the DSL's element types (docs/LANGUAGE.md §2), and generated
/// code relies on [`Element::DTYPE`] describing the memory layout exactly (`bool` is one
/// byte, 0 or 1; the rest are plain little-endian numbers of their width).
pub trait Element: Copy + Default + fmt::Debug + PartialEq + Send + Sync + 'static + sealed::Sealed {
    /// The DSL element type (one lane).
    const DTYPE: DType;

    /// The elements' bytes, as a device holds them.
    #[doc(hidden)]
    fn as_bytes(s: &[Self]) -> &[u8];

    /// The elements' bytes, writable, for the types every byte pattern of which is a value;
    /// `None` for `bool`, which takes [`Element::copy_from_device_bytes`] instead.
    #[doc(hidden)]
    fn as_bytes_mut(s: &mut [Self]) -> Option<&mut [u8]>;

    /// Sets the elements from bytes a device wrote (`bytes.len()` is `s.len()` times the
    /// element size): a plain copy, and for `bool` nonzero as `true` (a device may write a
    /// byte other than 0 or 1, which is not a `bool`).
    #[doc(hidden)]
    fn copy_from_device_bytes(s: &mut [Self], bytes: &[u8]);
}

macro_rules! plain_elements {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn as_bytes(s: &[Self]) -> &[u8] {
                bytemuck::cast_slice(s)
            }
            fn as_bytes_mut(s: &mut [Self]) -> Option<&mut [u8]> {
                Some(bytemuck::cast_slice_mut(s))
            }
            fn copy_from_device_bytes(s: &mut [Self], bytes: &[u8]) {
                bytemuck::cast_slice_mut(s).copy_from_slice(bytes)
            }
        }
    )*};
}
plain_elements!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f16 => F16, bf16 => BF16, f32 => F32, f64 => F64,
);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::BOOL;
    fn as_bytes(s: &[Self]) -> &[u8] {
        bytemuck::cast_slice(s)
    }
    fn as_bytes_mut(_: &mut [Self]) -> Option<&mut [u8]> {
        None
    }
    fn copy_from_device_bytes(s: &mut [Self], bytes: &[u8]) {
        for (o, &b) in s.iter_mut().zip(bytes) {
            *o = b != 0;
        }
    }
}
