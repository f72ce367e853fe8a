//! [`Element`]: the element types a [`Tensor`](super::Tensor) can hold, and the 16-bit
//! float types [`F16`] and [`BF16`] (bit containers with conversions through `f32`).

use crate::dtype::DType;
use crate::interp::math::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, f64_to_bf16, f64_to_f16};
use std::cmp::Ordering;
use std::fmt;

mod sealed {
    pub trait Sealed {}
}

/// An element type of tensors: `bool`, the fixed-width integers, [`F16`], [`BF16`],
/// `f32` and `f64`. Sealed: the set matches the DSL's element types (DSL.md §2), and
/// generated code relies on [`Element::DTYPE`] describing the memory layout exactly.
pub trait Element: Copy + Default + fmt::Debug + PartialEq + Send + Sync + 'static + sealed::Sealed {
    /// The DSL element type (one lane).
    const DTYPE: DType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}
elements!(
    bool => BOOL, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
    u64 => U64, F16 => F16, BF16 => BF16, f32 => F32, f64 => F64,
);

macro_rules! half_type {
    ($(#[$doc:meta])* $name:ident, $to_f32:ident, $from_f32:ident, $from_f64:ident, $one:expr, $inf:expr, $nan:expr) => {
        $(#[$doc])*
        ///
        /// The field is the raw bits. Comparisons are IEEE comparisons of the values (NaN is
        /// unequal to itself, `-0 == +0`); `Debug` and `Display` print the value.
        #[derive(Clone, Copy, Default)]
        #[repr(transparent)]
        pub struct $name(pub u16);

        impl $name {
            pub const ZERO: $name = $name(0);
            pub const ONE: $name = $name($one);
            pub const INFINITY: $name = $name($inf);
            pub const NEG_INFINITY: $name = $name($inf | 0x8000);
            pub const NAN: $name = $name($nan);

            pub const fn from_bits(bits: u16) -> $name {
                $name(bits)
            }
            pub const fn to_bits(self) -> u16 {
                self.0
            }
            /// `x` rounded to nearest, ties to even.
            pub fn from_f32(x: f32) -> $name {
                $name($from_f32(x))
            }
            /// `x` rounded once to nearest, ties to even.
            pub fn from_f64(x: f64) -> $name {
                $name($from_f64(x))
            }
            /// The exact value as `f32`.
            pub fn to_f32(self) -> f32 {
                $to_f32(self.0)
            }
            /// The exact value as `f64`.
            pub fn to_f64(self) -> f64 {
                $to_f32(self.0) as f64
            }
            pub fn is_nan(self) -> bool {
                self.to_f32().is_nan()
            }
        }

        impl From<$name> for f32 {
            fn from(x: $name) -> f32 {
                x.to_f32()
            }
        }
        impl From<$name> for f64 {
            fn from(x: $name) -> f64 {
                x.to_f64()
            }
        }
        impl PartialEq for $name {
            fn eq(&self, other: &$name) -> bool {
                self.to_f32() == other.to_f32()
            }
        }
        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &$name) -> Option<Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    };
}

half_type!(
    /// An IEEE 754 binary16 float (`f16` in the DSL).
    F16, f16_to_f32, f32_to_f16, f64_to_f16, 0x3c00, 0x7c00, 0x7e00
);
half_type!(
    /// A bfloat16 float (`bf16` in the DSL): f32's 8-bit exponent, a 7-bit mantissa.
    BF16, bf16_to_f32, f32_to_bf16, f64_to_bf16, 0x3f80, 0x7f80, 0x7fc0
);
