//! Element types of tensors and expressions, with SIMD lane counts.

use std::fmt;

/// The scalar kind of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarKind {
    Bool,
    Int,
    UInt,
    Float,
    /// bfloat16: a float with an 8-bit exponent and a 7-bit mantissa.
    BFloat,
}

/// A data type: a scalar kind, its width in bits, and a lane count (1 for scalars).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    pub kind: ScalarKind,
    pub bits: u8,
    pub lanes: u16,
}

impl DType {
    pub const BOOL: DType = DType::scalar(ScalarKind::Bool, 1);
    pub const I8: DType = DType::scalar(ScalarKind::Int, 8);
    pub const I16: DType = DType::scalar(ScalarKind::Int, 16);
    pub const I32: DType = DType::scalar(ScalarKind::Int, 32);
    pub const I64: DType = DType::scalar(ScalarKind::Int, 64);
    pub const U8: DType = DType::scalar(ScalarKind::UInt, 8);
    pub const U16: DType = DType::scalar(ScalarKind::UInt, 16);
    pub const U32: DType = DType::scalar(ScalarKind::UInt, 32);
    pub const U64: DType = DType::scalar(ScalarKind::UInt, 64);
    pub const F16: DType = DType::scalar(ScalarKind::Float, 16);
    pub const BF16: DType = DType::scalar(ScalarKind::BFloat, 16);
    pub const F32: DType = DType::scalar(ScalarKind::Float, 32);
    pub const F64: DType = DType::scalar(ScalarKind::Float, 64);
    /// The type of `usize` scalar parameters: an unsigned 64-bit integer.
    pub const USIZE: DType = DType::U64;

    pub const fn scalar(kind: ScalarKind, bits: u8) -> DType {
        DType { kind, bits, lanes: 1 }
    }

    /// The same element type with `lanes` lanes.
    pub fn with_lanes(self, lanes: u16) -> DType {
        DType { lanes, ..self }
    }

    /// The element type with one lane.
    pub fn element(self) -> DType {
        self.with_lanes(1)
    }

    pub fn is_scalar(self) -> bool {
        self.lanes == 1
    }
    pub fn is_bool(self) -> bool {
        self.kind == ScalarKind::Bool
    }
    pub fn is_int(self) -> bool {
        self.kind == ScalarKind::Int
    }
    pub fn is_uint(self) -> bool {
        self.kind == ScalarKind::UInt
    }
    /// Signed or unsigned integer.
    pub fn is_integer(self) -> bool {
        matches!(self.kind, ScalarKind::Int | ScalarKind::UInt)
    }
    /// f16, bf16, f32 or f64.
    pub fn is_float(self) -> bool {
        matches!(self.kind, ScalarKind::Float | ScalarKind::BFloat)
    }

    /// Size of one lane in bytes (bool takes one byte).
    pub fn bytes(self) -> usize {
        (self.bits as usize).div_ceil(8).max(1)
    }

    /// Parses a DSL type name (`f32`, `bf16`, `usize`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::BOOL,
            "i8" => DType::I8,
            "i16" => DType::I16,
            "i32" => DType::I32,
            "i64" => DType::I64,
            "u8" => DType::U8,
            "u16" => DType::U16,
            "u32" => DType::U32,
            "u64" => DType::U64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return None,
        })
    }

    /// The DSL name of the element type (`f32`), ignoring lanes.
    pub fn name(self) -> &'static str {
        match (self.kind, self.bits) {
            (ScalarKind::Bool, _) => "bool",
            (ScalarKind::Int, 8) => "i8",
            (ScalarKind::Int, 16) => "i16",
            (ScalarKind::Int, 32) => "i32",
            (ScalarKind::Int, _) => "i64",
            (ScalarKind::UInt, 8) => "u8",
            (ScalarKind::UInt, 16) => "u16",
            (ScalarKind::UInt, 32) => "u32",
            (ScalarKind::UInt, _) => "u64",
            (ScalarKind::Float, 16) => "f16",
            (ScalarKind::Float, 32) => "f32",
            (ScalarKind::Float, _) => "f64",
            (ScalarKind::BFloat, _) => "bf16",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lanes == 1 {
            f.write_str(self.name())
        } else {
            write!(f, "{}x{}", self.name(), self.lanes)
        }
    }
}
