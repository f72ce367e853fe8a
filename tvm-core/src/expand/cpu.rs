//! The CPU kernel: the Rust function `codegen::rust` emits for the CPU-lowered function,
//! and its call from the module's `run` and `run_on`.

use super::paths;
use super::signature::Signature;
use crate::tir::PrimFunc;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// The CPU function (an item of the module) and its name; a code generation error is a
/// compile error at the kernel's name.
pub fn function(f: &PrimFunc, span: Span) -> Result<(TokenStream, syn::Ident), Vec<syn::Error>> {
    let item = crate::codegen::rust::emit_rust(f).map_err(|e| vec![syn::Error::new(span, e.to_string())])?;
    Ok((item, crate::codegen::rust::fn_ident(f)))
}

/// The call of the CPU function `name` from a match arm: `tensor` gives each tensor
/// argument (a slice, or an `Err` through `?`) from its identifier and whether it is an
/// output. Every argument is taken first (so a tensor on the wrong device is an error
/// even when nothing would run); nothing runs when every output is empty.
pub fn call(
    kernel_name: &str,
    sig: &Signature,
    f: &PrimFunc,
    name: &syn::Ident,
    tensor: impl Fn(&syn::Ident, bool) -> TokenStream,
) -> TokenStream {
    let rt = paths::rt();
    let (mut lets, mut empty) = (Vec::new(), Vec::new());
    let args = sig.call_args(f, |i, is_output| {
        let local = format_ident!("__t{}", lets.len());
        let value = tensor(i, is_output);
        lets.push(quote!(let #local = #value;));
        if is_output {
            empty.push(quote!(#local.is_empty()));
        }
        quote!(#local)
    });
    if !crate::codegen::rust::has_checks(f) {
        return quote! {{
            #(#lets)*
            if true #(&& #empty)* {
                return ::core::result::Result::Ok(());
            }
            #name(#(#args),*)
        }};
    }
    // The run's fault cell, turned into the first failed check's error afterwards.
    let sites = crate::codegen::host::sites_tokens(&f.checks, &rt);
    quote! {{
        #(#lets)*
        if true #(&& #empty)* {
            return ::core::result::Result::Ok(());
        }
        let __fault = #rt::cpu::Fault::new();
        #name(#(#args,)* &__fault)?;
        match __fault.get() {
            ::core::option::Option::Some(__f) => {
                const __SITES: &[#rt::CheckSite] = &#sites;
                ::core::result::Result::Err(#rt::check_failed(#kernel_name, __SITES, __f))
            }
            ::core::option::Option::None => ::core::result::Result::Ok(()),
        }
    }}
}
