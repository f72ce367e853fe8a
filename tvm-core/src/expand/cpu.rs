//! The CPU kernel: the Rust function `codegen::rust` emits for the CPU-lowered function,
//! and its call from the module's `run` and `run_on`.

use super::paths;
use super::signature::Signature;
use crate::tir::PrimFunc;
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The CPU function (an item of the module) and its name; a code generation error is a
/// compile error at the kernel's name.
pub fn function(f: &PrimFunc, span: Span) -> Result<(TokenStream, syn::Ident), Vec<syn::Error>> {
    let item = crate::codegen::rust::emit_rust(f).map_err(|e| vec![syn::Error::new(span, e.to_string())])?;
    Ok((item, crate::codegen::rust::fn_ident(f)))
}

/// The call of the CPU function `name` from a match arm: nothing runs when an output is
/// empty; `tensor` gives each tensor argument (a slice) from its identifier and whether
/// it is an output.
pub fn call(
    kernel_name: &str,
    sig: &Signature,
    f: &PrimFunc,
    name: &syn::Ident,
    tensor: impl Fn(&syn::Ident, bool) -> TokenStream,
) -> TokenStream {
    let rt = paths::rt();
    let args = sig.call_args(f, tensor);
    let outs = sig.outputs.iter().map(|o| &o.ident);
    quote! {{
        if false #(|| #outs.is_empty())* {
            return ::core::result::Result::Ok(());
        }
        #name(#(#args),*).map_err(|reason| #rt::cpu_failed(#kernel_name, reason))
    }}
}
