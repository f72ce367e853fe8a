//! An example user crate of the build-script path: `build.rs` calls
//! `tvm::build::compile_kernels()`, which compiles the CUDA code of the kernels below with
//! nvcc into `$OUT_DIR/tvm-cuda` (for `TVM_CUDA_ARCH`, default `sm_80`), and `compute!`
//! embeds the files made from its own generated source in each kernel's program. Without
//! nvcc nothing is embedded and the runtime compiles the source with NVRTC at the first
//! launch on a CUDA device.
//!
//! The kernels are the examples' own (`examples/kernels/`), included by `#[path]`, which
//! the build helper follows. Each kernel module's `#[doc(hidden)] __cuda_binaries()`
//! lists what the macro embedded.

// The kernels' doc comments are formulas (`c[i] = a[i] + b[i]`), not links.
#![allow(rustdoc::broken_intra_doc_links)]

#[path = "../../kernels/matmul.rs"]
mod matmul_kernel;
#[path = "../../kernels/softmax.rs"]
mod softmax_kernel;
#[path = "../../kernels/vector_add.rs"]
mod vector_add_kernel;

pub use matmul_kernel::matmul;
pub use softmax_kernel::softmax;
pub use vector_add_kernel::vector_add;

/// The nvcc the build script compiled the kernels with (empty: none was found).
pub const BUILD_NVCC: &str = env!("TVM_CUDA_APP_NVCC");
/// The architectures it compiled for (compute capability × 10, comma-separated).
pub const BUILD_ARCHS: &str = env!("TVM_CUDA_APP_ARCHS");

/// A kernel of the crate: its name, its CUDA source and the binaries embedded for it.
pub struct KernelInfo {
    pub name: &'static str,
    pub cuda_source: Result<&'static str, tvm::Error>,
    pub binaries: &'static [tvm::gpu::Binary],
}

/// Every kernel of the crate.
pub fn kernels() -> Vec<KernelInfo> {
    vec![
        KernelInfo {
            name: "vector_add",
            cuda_source: vector_add::source("cuda"),
            binaries: vector_add::__cuda_binaries(),
        },
        KernelInfo { name: "matmul", cuda_source: matmul::source("cuda"), binaries: matmul::__cuda_binaries() },
        KernelInfo { name: "softmax", cuda_source: softmax::source("cuda"), binaries: softmax::__cuda_binaries() },
    ]
}

/// `sm_80 cubin, sm_80 ptx`, or why there is none.
pub fn describe(binaries: &[tvm::gpu::Binary]) -> String {
    if binaries.is_empty() {
        return "none (NVRTC compiles the source at the first launch on a CUDA device)".to_string();
    }
    let each: Vec<String> =
        binaries.iter().map(|b| format!("sm_{} {} ({} bytes)", b.arch, b.format.extension(), b.bytes.len())).collect();
    each.join(", ")
}
