//! Host-side values (tensors, scalars, arguments) and the scalar operations of the
//! interpreter, with Rust semantics per dtype.

use super::error::{err, ErrorKind, InterpError, R};
use crate::dtype::{DType, ScalarKind};
use crate::tir::{BinOp, CmpOp, Intrinsic};
use tvm_runtime::half::{bf16, f16};
use tvm_runtime::math::erf;

// The 16-bit floats are held as their bits; the `half` crate converts (round to nearest,
// ties to even, from f32 and from f64 in one rounding).
fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}
fn bf16_to_f32(bits: u16) -> f32 {
    bf16::from_bits(bits).to_f32()
}
fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}
fn f32_to_bf16(x: f32) -> u16 {
    bf16::from_f32(x).to_bits()
}
fn f64_to_f16(x: f64) -> u16 {
    f16::from_f64(x).to_bits()
}
fn f64_to_bf16(x: f64) -> u16 {
    bf16::from_f64(x).to_bits()
}

/// A value while the interpreter runs: a scalar, or the lanes of a vector.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    S(ScalarValue),
    V(Vec<ScalarValue>),
}

/// One scalar of any element type. `F16` and `BF16` hold the bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F16(u16),
    BF16(u16),
    F32(f32),
    F64(f64),
}

use ScalarValue as S;

impl ScalarValue {
    pub fn dtype(&self) -> DType {
        match self {
            S::Bool(_) => DType::BOOL,
            S::I8(_) => DType::I8,
            S::I16(_) => DType::I16,
            S::I32(_) => DType::I32,
            S::I64(_) => DType::I64,
            S::U8(_) => DType::U8,
            S::U16(_) => DType::U16,
            S::U32(_) => DType::U32,
            S::U64(_) => DType::U64,
            S::F16(_) => DType::F16,
            S::BF16(_) => DType::BF16,
            S::F32(_) => DType::F32,
            S::F64(_) => DType::F64,
        }
    }

    /// Zero (false) of `dtype`'s element type; `None` for a dtype with no values here.
    pub fn zero(dtype: DType) -> Option<ScalarValue> {
        Some(match (dtype.kind, dtype.bits) {
            (ScalarKind::Bool, _) => S::Bool(false),
            (ScalarKind::Int, 8) => S::I8(0),
            (ScalarKind::Int, 16) => S::I16(0),
            (ScalarKind::Int, 32) => S::I32(0),
            (ScalarKind::Int, 64) => S::I64(0),
            (ScalarKind::UInt, 8) => S::U8(0),
            (ScalarKind::UInt, 16) => S::U16(0),
            (ScalarKind::UInt, 32) => S::U32(0),
            (ScalarKind::UInt, 64) => S::U64(0),
            (ScalarKind::Float, 16) => S::F16(0),
            (ScalarKind::BFloat, 16) => S::BF16(0),
            (ScalarKind::Float, 32) => S::F32(0.0),
            (ScalarKind::Float, 64) => S::F64(0.0),
            _ => return None,
        })
    }

    /// The value of an integer (or bool, as 0/1).
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            S::Bool(b) => b as i128,
            S::I8(v) => v as i128,
            S::I16(v) => v as i128,
            S::I32(v) => v as i128,
            S::I64(v) => v as i128,
            S::U8(v) => v as i128,
            S::U16(v) => v as i128,
            S::U32(v) => v as i128,
            S::U64(v) => v as i128,
            _ => return None,
        })
    }

    /// The value as f64 (exact for every float and for integers up to 2^53).
    pub fn to_f64(&self) -> f64 {
        match *self {
            S::F16(b) => f16_to_f32(b) as f64,
            S::BF16(b) => bf16_to_f32(b) as f64,
            S::F32(v) => v as f64,
            S::F64(v) => v,
            _ => self.as_i128().unwrap_or(0) as f64,
        }
    }

    /// `v` converted to `dtype` as Rust's `as` would (floats rounded to nearest, float to
    /// integer saturating); bool is `v != 0`.
    pub fn from_f64(dtype: DType, v: f64) -> Option<ScalarValue> {
        if dtype.is_bool() {
            return Some(S::Bool(v != 0.0));
        }
        cast(dtype, S::F64(v)).ok()
    }

    /// The integer `v` as a value of the integer type `dtype`, if it fits.
    pub fn int_checked(dtype: DType, v: i128) -> Option<ScalarValue> {
        Some(match (dtype.kind, dtype.bits) {
            (ScalarKind::Int, 8) => S::I8(i8::try_from(v).ok()?),
            (ScalarKind::Int, 16) => S::I16(i16::try_from(v).ok()?),
            (ScalarKind::Int, 32) => S::I32(i32::try_from(v).ok()?),
            (ScalarKind::Int, 64) => S::I64(i64::try_from(v).ok()?),
            (ScalarKind::UInt, 8) => S::U8(u8::try_from(v).ok()?),
            (ScalarKind::UInt, 16) => S::U16(u16::try_from(v).ok()?),
            (ScalarKind::UInt, 32) => S::U32(u32::try_from(v).ok()?),
            (ScalarKind::UInt, 64) => S::U64(u64::try_from(v).ok()?),
            _ => return None,
        })
    }
}

impl From<bool> for ScalarValue {
    fn from(v: bool) -> Self {
        S::Bool(v)
    }
}
macro_rules! scalar_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for ScalarValue {
            fn from(v: $t) -> Self {
                S::$v(v)
            }
        }
    )*};
}
scalar_from!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

/// The elements of a host tensor, one variant per element type (`F16`/`BF16` as bits).
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F16(Vec<u16>),
    BF16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Evaluates `$e` with `$v` bound to the elements of host data `$d`, whatever their type
/// (f16 and bf16 as their bits). Also the device launcher's (`crate::launch`).
macro_rules! each_data {
    ($d:expr, $v:ident => $e:expr) => {
        match $d {
            HostData::Bool($v) => $e,
            HostData::I8($v) => $e,
            HostData::I16($v) => $e,
            HostData::I32($v) => $e,
            HostData::I64($v) => $e,
            HostData::U8($v) => $e,
            HostData::U16($v) => $e,
            HostData::U32($v) => $e,
            HostData::U64($v) => $e,
            HostData::F16($v) => $e,
            HostData::BF16($v) => $e,
            HostData::F32($v) => $e,
            HostData::F64($v) => $e,
        }
    };
}
pub(crate) use each_data;

impl HostData {
    pub fn len(&self) -> usize {
        each_data!(self, v => v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn dtype(&self) -> DType {
        match self {
            HostData::Bool(_) => DType::BOOL,
            HostData::I8(_) => DType::I8,
            HostData::I16(_) => DType::I16,
            HostData::I32(_) => DType::I32,
            HostData::I64(_) => DType::I64,
            HostData::U8(_) => DType::U8,
            HostData::U16(_) => DType::U16,
            HostData::U32(_) => DType::U32,
            HostData::U64(_) => DType::U64,
            HostData::F16(_) => DType::F16,
            HostData::BF16(_) => DType::BF16,
            HostData::F32(_) => DType::F32,
            HostData::F64(_) => DType::F64,
        }
    }
    /// `n` zeros of `dtype` (`None` for a dtype with no host representation).
    pub fn zeros(dtype: DType, n: usize) -> Option<HostData> {
        Some(match (dtype.kind, dtype.bits) {
            (ScalarKind::Bool, _) => HostData::Bool(vec![false; n]),
            (ScalarKind::Int, 8) => HostData::I8(vec![0; n]),
            (ScalarKind::Int, 16) => HostData::I16(vec![0; n]),
            (ScalarKind::Int, 32) => HostData::I32(vec![0; n]),
            (ScalarKind::Int, 64) => HostData::I64(vec![0; n]),
            (ScalarKind::UInt, 8) => HostData::U8(vec![0; n]),
            (ScalarKind::UInt, 16) => HostData::U16(vec![0; n]),
            (ScalarKind::UInt, 32) => HostData::U32(vec![0; n]),
            (ScalarKind::UInt, 64) => HostData::U64(vec![0; n]),
            (ScalarKind::Float, 16) => HostData::F16(vec![0; n]),
            (ScalarKind::BFloat, 16) => HostData::BF16(vec![0; n]),
            (ScalarKind::Float, 32) => HostData::F32(vec![0.0; n]),
            (ScalarKind::Float, 64) => HostData::F64(vec![0.0; n]),
            _ => return None,
        })
    }
    pub(crate) fn to_scalars(&self) -> Vec<ScalarValue> {
        match self {
            HostData::Bool(v) => v.iter().map(|&x| S::Bool(x)).collect(),
            HostData::I8(v) => v.iter().map(|&x| S::I8(x)).collect(),
            HostData::I16(v) => v.iter().map(|&x| S::I16(x)).collect(),
            HostData::I32(v) => v.iter().map(|&x| S::I32(x)).collect(),
            HostData::I64(v) => v.iter().map(|&x| S::I64(x)).collect(),
            HostData::U8(v) => v.iter().map(|&x| S::U8(x)).collect(),
            HostData::U16(v) => v.iter().map(|&x| S::U16(x)).collect(),
            HostData::U32(v) => v.iter().map(|&x| S::U32(x)).collect(),
            HostData::U64(v) => v.iter().map(|&x| S::U64(x)).collect(),
            HostData::F16(v) => v.iter().map(|&x| S::F16(x)).collect(),
            HostData::BF16(v) => v.iter().map(|&x| S::BF16(x)).collect(),
            HostData::F32(v) => v.iter().map(|&x| S::F32(x)).collect(),
            HostData::F64(v) => v.iter().map(|&x| S::F64(x)).collect(),
        }
    }
    /// Overwrites the elements with `src` (same length, values of this data's type).
    pub(crate) fn copy_from_scalars(&mut self, src: &[ScalarValue]) -> R<()> {
        if src.len() != self.len() {
            return err(ErrorKind::Internal, "internal: output length changed");
        }
        macro_rules! fill {
            ($v:expr, $var:ident) => {{
                for (d, s) in $v.iter_mut().zip(src) {
                    match s {
                        S::$var(x) => *d = *x,
                        other => {
                            return err(ErrorKind::Internal, format!("internal: {} element in output", other.dtype()))
                        }
                    }
                }
            }};
        }
        match self {
            HostData::Bool(v) => fill!(v, Bool),
            HostData::I8(v) => fill!(v, I8),
            HostData::I16(v) => fill!(v, I16),
            HostData::I32(v) => fill!(v, I32),
            HostData::I64(v) => fill!(v, I64),
            HostData::U8(v) => fill!(v, U8),
            HostData::U16(v) => fill!(v, U16),
            HostData::U32(v) => fill!(v, U32),
            HostData::U64(v) => fill!(v, U64),
            HostData::F16(v) => fill!(v, F16),
            HostData::BF16(v) => fill!(v, BF16),
            HostData::F32(v) => fill!(v, F32),
            HostData::F64(v) => fill!(v, F64),
        }
        Ok(())
    }
    /// Element `i` as a scalar.
    pub fn get(&self, i: usize) -> Option<ScalarValue> {
        Some(match self {
            HostData::Bool(v) => S::Bool(*v.get(i)?),
            HostData::I8(v) => S::I8(*v.get(i)?),
            HostData::I16(v) => S::I16(*v.get(i)?),
            HostData::I32(v) => S::I32(*v.get(i)?),
            HostData::I64(v) => S::I64(*v.get(i)?),
            HostData::U8(v) => S::U8(*v.get(i)?),
            HostData::U16(v) => S::U16(*v.get(i)?),
            HostData::U32(v) => S::U32(*v.get(i)?),
            HostData::U64(v) => S::U64(*v.get(i)?),
            HostData::F16(v) => S::F16(*v.get(i)?),
            HostData::BF16(v) => S::BF16(*v.get(i)?),
            HostData::F32(v) => S::F32(*v.get(i)?),
            HostData::F64(v) => S::F64(*v.get(i)?),
        })
    }
}

/// A dense row-major tensor on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: HostData,
}

macro_rules! tensor_ctor {
    ($($name:ident, $as_name:ident: $t:ty => $var:ident;)*) => {$(
        /// A tensor of this element type. Panics if `data.len()` is not the product of
        /// `shape` (use [`HostTensor::new`] for a checked constructor).
        pub fn $name(shape: Vec<usize>, data: Vec<$t>) -> HostTensor {
            HostTensor::new(shape, HostData::$var(data)).expect("HostTensor: data length must equal the product of shape")
        }
        /// The elements, if they are of this type.
        pub fn $as_name(&self) -> Option<&[$t]> {
            match &self.data {
                HostData::$var(v) => Some(v),
                _ => None,
            }
        }
    )*};
}

impl HostTensor {
    /// A tensor, if `data` has exactly `shape.iter().product()` elements.
    pub fn new(shape: Vec<usize>, data: HostData) -> Result<HostTensor, InterpError> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(data.len()) {
            return err(
                ErrorKind::Argument,
                format!("tensor of shape {shape:?} needs {n:?} elements but has {}", data.len()),
            );
        }
        Ok(HostTensor { shape, data })
    }
    tensor_ctor! {
        f32, as_f32: f32 => F32;
        f64, as_f64: f64 => F64;
        i8, as_i8: i8 => I8;
        i16, as_i16: i16 => I16;
        i32, as_i32: i32 => I32;
        i64, as_i64: i64 => I64;
        u8, as_u8: u8 => U8;
        u16, as_u16: u16 => U16;
        u32, as_u32: u32 => U32;
        u64, as_u64: u64 => U64;
        bool, as_bool: bool => Bool;
        f16_bits, as_f16_bits: u16 => F16;
        bf16_bits, as_bf16_bits: u16 => BF16;
    }
    /// Zeros of `dtype` (its element type). Panics for a dtype with no host representation
    /// (every [`DType`] constant has one).
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> HostTensor {
        let n = shape.iter().product();
        let data = HostData::zeros(dtype.element(), n).expect("HostTensor::zeros: unsupported dtype");
        HostTensor { shape, data }
    }
    /// `values` converted to `dtype` as Rust's `as` would (f16/bf16 rounded to nearest).
    pub fn from_f64(dtype: DType, shape: Vec<usize>, values: &[f64]) -> Result<HostTensor, InterpError> {
        let mut t = HostTensor::zeros(dtype, shape);
        if values.len() != t.data.len() {
            return err(ErrorKind::Argument, format!("{} values for a tensor of {} elements", values.len(), t.numel()));
        }
        let scalars: Vec<ScalarValue> =
            values.iter().map(|&v| ScalarValue::from_f64(dtype.element(), v).expect("dtype has values")).collect();
        t.data.copy_from_scalars(&scalars)?;
        Ok(t)
    }
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }
    /// Every element as f64 (f16/bf16 decoded, bool as 0/1, large integers rounded).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.data.len()).map(|i| self.data.get(i).map_or(0.0, |s| s.to_f64())).collect()
    }
}

/// An argument of [`run`](super::run), in the order of `PrimFunc::params`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Tensor(HostTensor),
    Scalar(ScalarValue),
}

impl ArgValue {
    pub fn as_tensor(&self) -> Option<&HostTensor> {
        match self {
            ArgValue::Tensor(t) => Some(t),
            ArgValue::Scalar(_) => None,
        }
    }
    pub fn as_scalar(&self) -> Option<ScalarValue> {
        match self {
            ArgValue::Scalar(s) => Some(*s),
            ArgValue::Tensor(_) => None,
        }
    }
}

impl From<HostTensor> for ArgValue {
    fn from(t: HostTensor) -> Self {
        ArgValue::Tensor(t)
    }
}
impl From<ScalarValue> for ArgValue {
    fn from(s: ScalarValue) -> Self {
        ArgValue::Scalar(s)
    }
}

// ---------------------------------------------------------------------------------------
// Scalar operations.

fn type_mismatch(what: &str, a: ScalarValue, b: ScalarValue) -> InterpError {
    InterpError::new(ErrorKind::Type, format!("operands of `{what}` have types {} and {}", a.dtype(), b.dtype()))
}

fn f32_arith(op: BinOp, x: f32, y: f32) -> f32 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Mod => x % y,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
    }
}

fn f64_arith(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Mod => x % y,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
    }
}

macro_rules! int_arith {
    ($op:expr, $x:expr, $y:expr, $ctor:path) => {{
        let (x, y) = ($x, $y);
        $ctor(match $op {
            BinOp::Add => x.wrapping_add(y),
            BinOp::Sub => x.wrapping_sub(y),
            BinOp::Mul => x.wrapping_mul(y),
            BinOp::Div | BinOp::Mod => {
                if y == 0 {
                    return err(
                        ErrorKind::DivisionByZero,
                        format!(
                            "integer {} by zero: {x} {} 0",
                            if $op == BinOp::Div { "division" } else { "remainder" },
                            $op.symbol()
                        ),
                    );
                }
                // `MIN / -1` wraps to `MIN` and `MIN % -1` is 0, on every backend.
                if $op == BinOp::Div {
                    x.wrapping_div(y)
                } else {
                    x.wrapping_rem(y)
                }
            }
            BinOp::Min => x.min(y),
            BinOp::Max => x.max(y),
        })
    }};
}

/// `a op b` with Rust semantics: integers wrap (two's complement), `/` truncates, `%` has
/// the sign of the dividend, division by zero and `MIN / -1` are errors; floats round to
/// their own precision after the operation (f16/bf16 computed in f32 and rounded once more,
/// which is exact for these operations).
pub(crate) fn binary(op: BinOp, a: ScalarValue, b: ScalarValue) -> R<ScalarValue> {
    Ok(match (a, b) {
        (S::I8(x), S::I8(y)) => int_arith!(op, x, y, S::I8),
        (S::I16(x), S::I16(y)) => int_arith!(op, x, y, S::I16),
        (S::I32(x), S::I32(y)) => int_arith!(op, x, y, S::I32),
        (S::I64(x), S::I64(y)) => int_arith!(op, x, y, S::I64),
        (S::U8(x), S::U8(y)) => int_arith!(op, x, y, S::U8),
        (S::U16(x), S::U16(y)) => int_arith!(op, x, y, S::U16),
        (S::U32(x), S::U32(y)) => int_arith!(op, x, y, S::U32),
        (S::U64(x), S::U64(y)) => int_arith!(op, x, y, S::U64),
        (S::F32(x), S::F32(y)) => S::F32(f32_arith(op, x, y)),
        (S::F64(x), S::F64(y)) => S::F64(f64_arith(op, x, y)),
        (S::F16(x), S::F16(y)) => S::F16(f32_to_f16(f32_arith(op, f16_to_f32(x), f16_to_f32(y)))),
        (S::BF16(x), S::BF16(y)) => S::BF16(f32_to_bf16(f32_arith(op, bf16_to_f32(x), bf16_to_f32(y)))),
        _ => return Err(type_mismatch(op.symbol(), a, b)),
    })
}

fn cmp_ord<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
    }
}

/// `a op b` (IEEE comparisons for floats: NaN compares unequal to everything).
pub(crate) fn compare(op: CmpOp, a: ScalarValue, b: ScalarValue) -> R<bool> {
    Ok(match (a, b) {
        (S::Bool(x), S::Bool(y)) => cmp_ord(op, x, y),
        (S::I8(x), S::I8(y)) => cmp_ord(op, x, y),
        (S::I16(x), S::I16(y)) => cmp_ord(op, x, y),
        (S::I32(x), S::I32(y)) => cmp_ord(op, x, y),
        (S::I64(x), S::I64(y)) => cmp_ord(op, x, y),
        (S::U8(x), S::U8(y)) => cmp_ord(op, x, y),
        (S::U16(x), S::U16(y)) => cmp_ord(op, x, y),
        (S::U32(x), S::U32(y)) => cmp_ord(op, x, y),
        (S::U64(x), S::U64(y)) => cmp_ord(op, x, y),
        (S::F16(x), S::F16(y)) => cmp_ord(op, f16_to_f32(x), f16_to_f32(y)),
        (S::BF16(x), S::BF16(y)) => cmp_ord(op, bf16_to_f32(x), bf16_to_f32(y)),
        (S::F32(x), S::F32(y)) => cmp_ord(op, x, y),
        (S::F64(x), S::F64(y)) => cmp_ord(op, x, y),
        _ => return Err(type_mismatch(op.symbol(), a, b)),
    })
}

/// `-a`: wrapping for signed integers; an error for unsigned integers and bool.
pub(crate) fn neg(a: ScalarValue) -> R<ScalarValue> {
    Ok(match a {
        S::I8(x) => S::I8(x.wrapping_neg()),
        S::I16(x) => S::I16(x.wrapping_neg()),
        S::I32(x) => S::I32(x.wrapping_neg()),
        S::I64(x) => S::I64(x.wrapping_neg()),
        S::F16(x) => S::F16(x ^ 0x8000),
        S::BF16(x) => S::BF16(x ^ 0x8000),
        S::F32(x) => S::F32(-x),
        S::F64(x) => S::F64(-x),
        _ => return err(ErrorKind::Type, format!("negation of a value of type {}", a.dtype())),
    })
}

/// `!a`: logical for bool, bitwise for integers.
pub(crate) fn not(a: ScalarValue) -> R<ScalarValue> {
    Ok(match a {
        S::Bool(x) => S::Bool(!x),
        S::I8(x) => S::I8(!x),
        S::I16(x) => S::I16(!x),
        S::I32(x) => S::I32(!x),
        S::I64(x) => S::I64(!x),
        S::U8(x) => S::U8(!x),
        S::U16(x) => S::U16(!x),
        S::U32(x) => S::U32(!x),
        S::U64(x) => S::U64(!x),
        _ => return err(ErrorKind::Type, format!("`!` of a value of type {}", a.dtype())),
    })
}

/// `v as to` with Rust semantics: integers truncate or sign-extend, float → integer
/// saturates (NaN → 0), integer → float and float → narrower float round to nearest even,
/// bool → number is 0/1. A cast to bool from anything but bool is an error (Rust has none).
pub(crate) fn cast(to: DType, v: ScalarValue) -> R<ScalarValue> {
    let to = to.element();
    if v.dtype() == to {
        return Ok(v);
    }
    if to.is_bool() {
        return err(
            ErrorKind::Type,
            format!("cast from {} to bool (not a Rust `as` cast; compare with 0 instead)", v.dtype()),
        );
    }
    if let Some(i) = v.as_i128() {
        return Ok(match (to.kind, to.bits) {
            (ScalarKind::Int, 8) => S::I8(i as i8),
            (ScalarKind::Int, 16) => S::I16(i as i16),
            (ScalarKind::Int, 32) => S::I32(i as i32),
            (ScalarKind::Int, 64) => S::I64(i as i64),
            (ScalarKind::UInt, 8) => S::U8(i as u8),
            (ScalarKind::UInt, 16) => S::U16(i as u16),
            (ScalarKind::UInt, 32) => S::U32(i as u32),
            (ScalarKind::UInt, 64) => S::U64(i as u64),
            // i128 → f64 rounds once; f64 (53 bits) → f16/bf16 (≤ 11 bits) is then an
            // innocuous double rounding.
            (ScalarKind::Float, 16) => S::F16(f64_to_f16(i as f64)),
            (ScalarKind::BFloat, 16) => S::BF16(f64_to_bf16(i as f64)),
            (ScalarKind::Float, 32) => S::F32(i as f32),
            (ScalarKind::Float, 64) => S::F64(i as f64),
            _ => return err(ErrorKind::Type, format!("cast to unsupported type {to}")),
        });
    }
    // A float: its exact value as f64, then one conversion.
    let f = v.to_f64();
    Ok(match (to.kind, to.bits) {
        (ScalarKind::Int, 8) => S::I8(f as i8),
        (ScalarKind::Int, 16) => S::I16(f as i16),
        (ScalarKind::Int, 32) => S::I32(f as i32),
        (ScalarKind::Int, 64) => S::I64(f as i64),
        (ScalarKind::UInt, 8) => S::U8(f as u8),
        (ScalarKind::UInt, 16) => S::U16(f as u16),
        (ScalarKind::UInt, 32) => S::U32(f as u32),
        (ScalarKind::UInt, 64) => S::U64(f as u64),
        (ScalarKind::Float, 16) => S::F16(f64_to_f16(f)),
        (ScalarKind::BFloat, 16) => S::BF16(f64_to_bf16(f)),
        (ScalarKind::Float, 32) => S::F32(f as f32),
        (ScalarKind::Float, 64) => S::F64(f),
        _ => return err(ErrorKind::Type, format!("cast to unsupported type {to}")),
    })
}

fn f32_intrinsic(f: Intrinsic, a: f32, b: f32, c: f32) -> f32 {
    match f {
        Intrinsic::Exp => a.exp(),
        Intrinsic::Log => a.ln(),
        Intrinsic::Sqrt => a.sqrt(),
        Intrinsic::Rsqrt => 1.0 / a.sqrt(),
        Intrinsic::Tanh => a.tanh(),
        Intrinsic::Sigmoid => 1.0 / (1.0 + (-a).exp()),
        Intrinsic::Abs => a.abs(),
        Intrinsic::Floor => a.floor(),
        Intrinsic::Ceil => a.ceil(),
        Intrinsic::Erf => erf(a as f64) as f32,
        Intrinsic::Sin => a.sin(),
        Intrinsic::Cos => a.cos(),
        Intrinsic::Pow => a.powf(b),
        Intrinsic::Fma => a.mul_add(b, c),
    }
}

fn f64_intrinsic(f: Intrinsic, a: f64, b: f64, c: f64) -> f64 {
    match f {
        Intrinsic::Exp => a.exp(),
        Intrinsic::Log => a.ln(),
        Intrinsic::Sqrt => a.sqrt(),
        Intrinsic::Rsqrt => 1.0 / a.sqrt(),
        Intrinsic::Tanh => a.tanh(),
        Intrinsic::Sigmoid => 1.0 / (1.0 + (-a).exp()),
        Intrinsic::Abs => a.abs(),
        Intrinsic::Floor => a.floor(),
        Intrinsic::Ceil => a.ceil(),
        Intrinsic::Erf => erf(a),
        Intrinsic::Sin => a.sin(),
        Intrinsic::Cos => a.cos(),
        Intrinsic::Pow => a.powf(b),
        Intrinsic::Fma => a.mul_add(b, c),
    }
}

/// A math intrinsic on scalars of one float type (`abs` also on integers, wrapping).
/// f16/bf16 are computed in f32 and rounded back.
pub(crate) fn intrinsic(f: Intrinsic, args: &[ScalarValue]) -> R<ScalarValue> {
    if args.len() != f.arity() {
        return err(ErrorKind::Type, format!("`{}` takes {} arguments, got {}", f.name(), f.arity(), args.len()));
    }
    let a = args[0];
    for &b in &args[1..] {
        if b.dtype() != a.dtype() {
            return Err(type_mismatch(f.name(), a, b));
        }
    }
    let arg = |i: usize| args.get(i).copied().unwrap_or(a);
    let f32_of = |s: ScalarValue| match s {
        S::F16(x) => f16_to_f32(x),
        S::BF16(x) => bf16_to_f32(x),
        S::F32(x) => x,
        _ => 0.0,
    };
    Ok(match a {
        S::F32(_) | S::F16(_) | S::BF16(_) => {
            let r = f32_intrinsic(f, f32_of(arg(0)), f32_of(arg(1)), f32_of(arg(2)));
            match a {
                S::F16(_) => S::F16(f32_to_f16(r)),
                S::BF16(_) => S::BF16(f32_to_bf16(r)),
                _ => S::F32(r),
            }
        }
        S::F64(_) => S::F64(f64_intrinsic(f, arg(0).to_f64(), arg(1).to_f64(), arg(2).to_f64())),
        _ if f == Intrinsic::Abs => match a {
            S::I8(x) => S::I8(x.wrapping_abs()),
            S::I16(x) => S::I16(x.wrapping_abs()),
            S::I32(x) => S::I32(x.wrapping_abs()),
            S::I64(x) => S::I64(x.wrapping_abs()),
            S::U8(_) | S::U16(_) | S::U32(_) | S::U64(_) => a,
            _ => return err(ErrorKind::Type, format!("`abs` of a value of type {}", a.dtype())),
        },
        _ => return err(ErrorKind::Type, format!("`{}` of a value of type {} (needs a float)", f.name(), a.dtype())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_semantics() {
        assert_eq!(binary(BinOp::Div, S::I32(-7), S::I32(2)).unwrap(), S::I32(-3));
        assert_eq!(binary(BinOp::Mod, S::I32(-7), S::I32(2)).unwrap(), S::I32(-1));
        assert_eq!(binary(BinOp::Mod, S::I32(7), S::I32(-2)).unwrap(), S::I32(1));
        assert_eq!(binary(BinOp::Add, S::I8(127), S::I8(1)).unwrap(), S::I8(-128));
        assert_eq!(binary(BinOp::Sub, S::U8(0), S::U8(1)).unwrap(), S::U8(255));
        assert_eq!(binary(BinOp::Div, S::I32(1), S::I32(0)).unwrap_err().kind, ErrorKind::DivisionByZero);
        assert_eq!(binary(BinOp::Div, S::I32(i32::MIN), S::I32(-1)).unwrap(), S::I32(i32::MIN));
        assert_eq!(binary(BinOp::Mod, S::I32(i32::MIN), S::I32(-1)).unwrap(), S::I32(0));
        assert_eq!(binary(BinOp::Add, S::I32(1), S::I64(1)).unwrap_err().kind, ErrorKind::Type);
    }

    #[test]
    fn casts() {
        assert_eq!(cast(DType::I8, S::I32(300)).unwrap(), S::I8(44));
        assert_eq!(cast(DType::U8, S::I32(-1)).unwrap(), S::U8(255));
        assert_eq!(cast(DType::I32, S::F32(f32::NAN)).unwrap(), S::I32(0));
        assert_eq!(cast(DType::U8, S::F32(-3.5)).unwrap(), S::U8(0));
        assert_eq!(cast(DType::I32, S::F64(1e20)).unwrap(), S::I32(i32::MAX));
        assert_eq!(cast(DType::F32, S::I64(16_777_217)).unwrap(), S::F32(16_777_216.0));
        assert_eq!(cast(DType::F32, S::F64(0.1)).unwrap(), S::F32(0.1f32));
        assert_eq!(cast(DType::F16, S::F32(1.0)).unwrap(), S::F16(0x3c00));
        assert_eq!(cast(DType::I32, S::Bool(true)).unwrap(), S::I32(1));
        assert!(cast(DType::BOOL, S::I32(1)).is_err());
    }
}
