//! Shape binding: the one place where the symbolic dims of a kernel (`n`, `M`, `K`) get
//! their values from the arguments, and every dimension is checked against them. The
//! generated code of every kernel, the compiler's interpreter and its device launcher for
//! tests all call these, so a shape error reads the same everywhere:
//! "shape mismatch in `vector_add`: dimension 0 of `b` is 999, expected 1000 (n = 1000,
//! bound by `a`)".
//!
//! A dim is a slot `Option<(value, bound_by)>`: empty until a `usize` scalar or the first
//! tensor whose shape names it binds it; every later use is checked against it.

use crate::error::Error;

/// A dim while binding: its value and the parameter that bound it, once bound.
pub type DimSlot<'a> = Option<(i64, &'a str)>;

/// Binds `slot` (the dim named `symbol`) to dimension `dim` of parameter `param`, whose
/// size is `got`, or checks `got` against the value bound earlier.
pub fn bind_dim<'a>(
    slot: &mut DimSlot<'a>,
    got: usize,
    kernel: &str,
    param: &'a str,
    dim: usize,
    symbol: &str,
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

/// Binds `slot` to the value of the `usize` scalar parameter `param` (a dim of the same
/// name). Scalars bind before any tensor shape is looked at.
pub fn bind_scalar_dim<'a>(slot: &mut DimSlot<'a>, value: usize, kernel: &str, param: &'a str) -> Result<(), Error> {
    let v = i64::try_from(value).map_err(|_| Error::index_scalar_out_of_range(kernel, param, value))?;
    *slot = Some((v, param));
    Ok(())
}

/// Checks dimension `dim` of `param` (size `got`) against `expected`: a size known at
/// compile time, or a dim bound earlier.
pub fn check_dim(got: usize, expected: i64, kernel: &str, param: &str, dim: usize) -> Result<(), Error> {
    if expected >= 0 && got as u64 == expected as u64 {
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

/// The values of bound dims, in slot order; a dim nothing bound is 0 (the compiler only
/// leaves unbound the dims no tensor of the call uses).
pub fn finish<const N: usize>(slots: [DimSlot<'_>; N]) -> [i64; N] {
    slots.map(|s| s.map_or(0, |s| s.0))
}
