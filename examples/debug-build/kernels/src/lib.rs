//! The six example kernels (`examples/kernels/`) as a crate of their own. The workspace's
//! `Cargo.toml` compiles this crate optimized in debug builds:
//!
//! ```toml
//! [profile.dev.package.tvm-example-kernels]
//! opt-level = 3
//! ```
//!
//! so an application that depends on it builds fast in debug and still runs its kernels at
//! release speed (`examples/debug-build/app`). A kernel's code is compiled in the crate
//! whose `compute!` generated it, with that crate's profile.

#[path = "../../../kernels/conv2d.rs"]
mod conv2d_kernel;
#[path = "../../../kernels/dense_bias_relu.rs"]
mod dense_bias_relu_kernel;
#[path = "../../../kernels/layernorm.rs"]
mod layernorm_kernel;
#[path = "../../../kernels/matmul.rs"]
mod matmul_kernel;
#[path = "../../../kernels/softmax.rs"]
mod softmax_kernel;
#[path = "../../../kernels/vector_add.rs"]
mod vector_add_kernel;

pub use conv2d_kernel::conv2d;
pub use dense_bias_relu_kernel::dense_bias_relu;
pub use layernorm_kernel::layernorm;
pub use matmul_kernel::matmul;
pub use softmax_kernel::softmax;
pub use vector_add_kernel::vector_add;
