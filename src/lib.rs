//! tvm-rs: a TVM-style tensor compiler inside rustc.
//!
//! This facade is the crate users depend on. It re-exports the compiler and runtime
//! ([`tvm_core`]: [`Tensor`], [`Device`], [`Error`]) and the `compute!` macro.

pub use tvm_core::*;
// The half-precision element types, where generated code (and its error stubs) name them.
pub use tvm_core::runtime::{BF16, F16};
pub use tvm_macros::compute;

/// Support for the code `compute!` generates. Not a public API: it may change with any
/// release.
#[doc(hidden)]
pub mod __rt;
