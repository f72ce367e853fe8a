//! The corpus: the kernels every suite shares, one `tvm::compute! { .. }` invocation per
//! file, listed once here. The compiler's tests read them as text ([`ALL`], or one file
//! by `include_str!`); the backend suite (`tests/backends/`) compiles each one as a
//! module through [`for_each_corpus_kernel!`]. A kernel added to the list runs in both.

/// Calls `$m!(name, ...)` with the file name (without `.rs`) of every corpus kernel.
#[allow(unused_macros)]
macro_rules! for_each_corpus_kernel {
    ($m:ident) => {
        $m!(
            conv2d,
            dense_bias_relu,
            embedding,
            matmul,
            matmul_64,
            matmul_tiled,
            max_pool,
            row_sum_golden,
            row_sum_rfactor,
            scale,
            softmax,
            softmax_default,
            sum_two_axes,
            transpose,
            vector_add,
            vector_add_1024,
            vector_add_golden,
        );
    };
}

macro_rules! corpus_sources {
    ($($name:ident),* $(,)?) => {
        /// Every corpus kernel: (file name, the file's text).
        #[allow(dead_code)]
        pub const ALL: &[(&str, &str)] = &[$((stringify!($name), include_str!(concat!(stringify!($name), ".rs")))),*];
    };
}
for_each_corpus_kernel!(corpus_sources);
