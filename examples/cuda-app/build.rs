//! Compiles the crate's CUDA kernels with nvcc (when found) for `TVM_CUDA_ARCH` (default
//! `sm_80`) into `$OUT_DIR/tvm-cuda`, where `compute!` finds and embeds them.

fn main() {
    let report = tvm::build::compile_kernels();
    // What the build did, for `main` to print and for the tests to check.
    let nvcc = report.nvcc.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let archs: Vec<String> = report.archs.iter().map(|a| a.to_string()).collect();
    println!("cargo:rustc-env=TVM_CUDA_APP_NVCC={nvcc}");
    println!("cargo:rustc-env=TVM_CUDA_APP_ARCHS={}", archs.join(","));
}
