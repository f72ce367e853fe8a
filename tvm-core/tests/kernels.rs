//! Every kernel of the registry (`support/registry.rs`: the corpus and the example
//! kernels) under (a) the default CPU schedule, (b) its hand-written CPU schedule, (c) the
//! default GPU schedule and (d) its hand-written GPU schedule (thread binding,
//! shared-memory caches, compute_at, cross-thread reductions), on the registry's cases for
//! the interpreter (shapes that do and do not divide the split factors), compared with
//! the plain references of `support/reference.rs` within each case's tolerance. Every
//! variant runs on the TIR interpreter; the GPU variants also run on every OpenCL device
//! (PoCL in CI), lowered for OpenCL and printed as OpenCL C. One test per registered file.

#[macro_use]
mod common;
use common::check_registered;
use common::registry::KERNELS;

macro_rules! interpreter_tests {
    ($( $key:ident $path:literal { $( $function:ident $(::<$ty:ident>)? ( $($param:ident),* ) -> ( $($out:ident),+ ) $cases:ident ; )+ } )*) => {$(
        #[test]
        fn $key() {
            let kernels: Vec<_> = KERNELS.iter().filter(|k| k.key == stringify!($key)).collect();
            assert!(!kernels.is_empty());
            // Every kernel lowers under the four schedules; a kernel of fixed large shapes
            // (the matmul, dense and conv2d examples) has no case for the interpreter.
            let cases: usize = kernels.into_iter().map(check_registered).sum();
            eprintln!("{}: {cases} cases", stringify!($key));
        }
    )*};
}
for_each_kernel!(interpreter_tests);
