//! tvm-rs: a TVM-style tensor compiler inside rustc.
//!
//! This facade is the crate users depend on. Its API is what a program that runs kernels
//! calls: the [`compute!`] macro, which compiles kernels while the user's crate compiles,
//! and the runtime's [`Tensor`], [`DeviceTensor`], [`Device`], [`Error`], [`Element`],
//! [`DType`], [`f16`](struct@f16), [`bf16`], [`device_stats`], [`Profile`] and the switch of
//! [`tuning`] records. A program built on it links the
//! runtime alone; the compiler is `tvm::compiler` (with `tvm::build` for build scripts),
//! behind the opt-in feature `compiler`.
//!
//! The language reference is the documentation of [`compute!`].

/// The kernel language: `compute!` compiles a kernel's algorithm and its schedules into
/// typed Rust functions while the crate compiles.
///
#[doc = include_str!("../docs/LANGUAGE.md")]
pub use tvm_macros::compute;

pub use tvm_runtime::{
    bf16, device_stats, f16, Clock, DType, Device, DeviceStats, DeviceTensor, Element, Error, Profile, Speedup, Tensor,
};

/// Tuning records at run time: a kernel whose crate has `tvm-tuning/NAME.json` (written
/// by `tvm-tune`) runs the record's winner on the device and dims it was measured with.
/// These switch that off and on for the whole process (`TVM_TUNING=off` starts it off),
/// and name the device as records do.
pub mod tuning {
    pub use tvm_runtime::tune::{device_identity, set_tuning_enabled, tuning_enabled};
}

#[cfg(feature = "ndarray")]
pub use tvm_runtime::ndarray;

// What generated code, build scripts and the project's own tests name: the runtime's
// support modules. They change with the compiler, so they are not the user's API.
#[doc(hidden)]
pub use tvm_runtime::{__rt, cpu, decide_default, dtype, gpu, half, math, shape, CUDA_BACKEND};

/// The compiler (feature `compiler`): parse, schedule, lower and generate code for a
/// kernel outside a macro, as build scripts and tools do.
#[cfg(feature = "compiler")]
pub use tvm_core as compiler;

/// The build-script helper (feature `compiler`): `tvm::build::compile_kernels()` in a
/// crate's `build.rs` compiles its CUDA kernels with nvcc ahead of time, and `compute!`
/// embeds the results (see [`tvm_core::build`]).
#[cfg(feature = "compiler")]
pub use tvm_core::build;

// Every Rust snippet of the README, compiled (and run, unless marked `no_run`) as a doc test.
#[cfg(all(doctest, feature = "compiler"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeSnippets;
