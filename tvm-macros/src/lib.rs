//! The `compute!` macro: a thin shell over `tvm_core::frontend`.
//!
//! It parses the kernel and every `schedule!` block with the same parser the build.rs
//! helper and the explorer use, and reports every error at the offending token. Code
//! generation (the typed function and its module) is not emitted yet: on a kernel
//! without errors the macro expands to nothing.

use proc_macro::TokenStream;

#[proc_macro]
pub fn compute(input: TokenStream) -> TokenStream {
    let tokens = proc_macro2::TokenStream::from(input);
    let errors: Vec<syn::Error> = match tvm_core::frontend::parse_kernel(tokens) {
        Err(errs) => errs.iter().map(|e| e.to_syn_error()).collect(),
        Ok(kernel) => tvm_core::frontend::check_schedules(&kernel)
            .iter()
            .map(|e| {
                let mut msg = e.message();
                if let Some(h) = e.help() {
                    msg.push_str(&format!("\n\nhelp: {h}"));
                }
                syn::Error::new(kernel.source_map.span(e.loc), msg)
            })
            .collect(),
    };
    errors.into_iter().map(|e| e.to_compile_error()).collect::<proc_macro2::TokenStream>().into()
}
