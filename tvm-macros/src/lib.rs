//! The `compute!` macro: a thin shell over `tvm_core::frontend`.
//!
//! Parse → check (every schedule block, against its own target) → lower for each
//! target → expand (`expand.rs`). Every error is reported at the offending token; on
//! error the macro also emits a stub of the declared function and module, so the rest of
//! the crate does not cascade into "cannot find function".

mod expand;
mod paths;
mod stub;

#[cfg(test)]
mod fuzz;

use proc_macro::TokenStream;

#[proc_macro]
pub fn compute(input: TokenStream) -> TokenStream {
    expand_tokens(proc_macro2::TokenStream::from(input)).into()
}

/// The whole expansion of `compute!`, on `proc_macro2` tokens only, so unit tests can
/// call it outside a real macro invocation.
fn expand_tokens(tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    match tvm_core::frontend::parse_kernel(tokens.clone()) {
        Err(errs) => {
            let errors: proc_macro2::TokenStream = errs.iter().map(|e| e.to_syn_error().to_compile_error()).collect();
            let stub = tvm_core::frontend::parse_syntax(tokens).map(|(ast, _)| stub::stub(&ast)).unwrap_or_default();
            quote::quote!(#errors #stub)
        }
        Ok(kernel) => match expand::lower_all(&kernel).and_then(|l| expand::expand(&kernel, &l, &tokens.to_string())) {
            Ok(ts) => ts,
            Err(errs) => {
                let errors: proc_macro2::TokenStream = errs.iter().map(|e| e.to_compile_error()).collect();
                let stub = stub::stub(&kernel.ast);
                quote::quote!(#errors #stub)
            }
        },
    }
}
