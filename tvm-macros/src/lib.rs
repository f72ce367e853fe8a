//! The `compute!` macro: the entry point only. The expansion (parse, check, lower,
//! generate, expand) is the compiler's, in `tvm_core::expand`.

use proc_macro::TokenStream;

/// Compiles a kernel and its schedules (see the `tvm` crate and DSL.md) into a typed
/// function and a module of the same name.
#[proc_macro]
pub fn compute(input: TokenStream) -> TokenStream {
    tvm_core::expand::compute(input.into()).into()
}
