//! tvm-rs: a TVM-style tensor compiler inside rustc.
//!
//! This facade is the crate users depend on. It re-exports the compiler
//! ([`tvm_core`]) and the `compute!` macro ([`tvm_macros`]).

pub use tvm_core::*;
pub use tvm_macros::compute;
