//! tvm-rs: a TVM-style tensor compiler inside rustc.
//!
//! This facade is the crate users depend on. It re-exports the compiler and runtime
//! ([`tvm_core`]: [`Tensor`], [`Device`], [`Error`]) and the `compute!` macro.

pub use tvm_core::*;
pub use tvm_macros::compute;

/// Support for the code `compute!` generates. Not a public API: it may change with any
/// release.
#[doc(hidden)]
pub mod __rt;
