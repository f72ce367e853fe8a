//! Code generation: lowered TIR functions to source for a backend. The CPU backend
//! ([`rust`]) emits Rust tokens that rustc and LLVM compile inside the user's crate.

pub mod c_like;
pub mod cuda;
pub mod host;
mod names;
pub mod opencl;
pub mod rust;
pub mod wgsl;

pub use cuda::emit_cuda;
pub use opencl::emit_opencl;
pub use rust::{dim_vars, emit_rust, emit_rust_with, EmitOptions};
pub use wgsl::emit_wgsl;

use std::fmt;

/// Why a lowered function cannot be turned into code. Each variant is a user-visible
/// error (the macro turns it into a compile error at the kernel), not a compiler bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// The iterations of a `parallel` loop could not be proved to write disjoint chunks
    /// of `buffer`: the access at `index` is not `loop_var * S + r` with `0 <= r < S` for
    /// one chunk size `S`, or a read of `buffer` reaches outside the iteration's chunk.
    ParallelNotDisjoint { loop_var: String, buffer: String, index: String },
    /// The function uses something the backend does not support (named in `what`).
    Unsupported { what: String },
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::ParallelNotDisjoint { loop_var, buffer, index } => write!(
                f,
                "cannot prove that the iterations of parallel loop `{loop_var}` touch disjoint parts of \
                 `{buffer}`: access at `{index}` is not `{loop_var} * S + r` with `0 <= r < S` for a single chunk \
                 size `S`"
            ),
            CodegenError::Unsupported { what } => write!(f, "code generation does not support {what}"),
        }
    }
}

impl std::error::Error for CodegenError {}
