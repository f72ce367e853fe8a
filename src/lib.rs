//! tvm-rs: a TVM-style tensor compiler inside rustc.
//!
//! This facade is the crate users depend on. It re-exports the runtime ([`tvm_runtime`]:
//! [`Tensor`], [`DeviceTensor`], [`Device`], [`Error`], `f16`, `bf16`) and the
//! `compute!` macro, which compiles kernels while the user's crate compiles. A program
//! built on it links the runtime alone; the compiler is `tvm::compiler`, behind the opt-in
//! feature `compiler`, for build scripts and tools.

pub use tvm_macros::compute;
pub use tvm_runtime::*;

/// The compiler (feature `compiler`): parse, schedule, lower and generate code for a
/// kernel outside a macro, as build scripts and tools do.
#[cfg(feature = "compiler")]
pub use tvm_core as compiler;

/// The build-script helper (feature `compiler`): `tvm::build::compile_kernels()` in a
/// crate's `build.rs` compiles its CUDA kernels with nvcc ahead of time, and `compute!`
/// embeds the results (see [`tvm_core::build`]).
#[cfg(feature = "compiler")]
pub use tvm_core::build;
