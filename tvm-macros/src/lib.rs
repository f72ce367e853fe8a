//! The `compute!` macro: the entry point only. The expansion (parse, check, lower,
//! generate, expand) is the compiler's, in `tvm_core::expand`.

use proc_macro::TokenStream;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Compiles a kernel and its schedules (see the language reference, the documentation of `tvm::compute!`) into a typed
/// function and a module of the same name.
#[proc_macro]
pub fn compute(input: TokenStream) -> TokenStream {
    let tokens = proc_macro2::TokenStream::from(input);
    // The `tvm` crate's backend features, passed on to this crate: a backend that is off
    // is not lowered.
    let backends = tvm_core::expand::Backends {
        cuda: cfg!(feature = "cuda"),
        opencl: cfg!(feature = "opencl"),
        webgpu: cfg!(feature = "webgpu"),
    };
    match catch_unwind(AssertUnwindSafe(|| tvm_core::expand::compute_for(tokens, backends))) {
        Ok(out) => out.into(),
        // A broken invariant of the compiler (the fuzz tests look for these): a compile
        // error that says so, rather than rustc's "proc macro panicked".
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let msg = format!("internal error in tvm-rs (please report it with this kernel): {what}");
            format!("::core::compile_error!({msg:?});").parse().unwrap_or_default()
        }
    }
}
