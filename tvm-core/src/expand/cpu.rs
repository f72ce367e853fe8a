//! The CPU kernel: the Rust function `codegen::rust` emits for the CPU-lowered function,
//! and its call from the module's `run` and `run_on`.

use super::paths;
use super::signature::Signature;
use crate::codegen::CodegenError;
use crate::frontend::ast::{SExpr, SchedStmt};
use crate::frontend::Kernel;
use crate::loc::Loc;
use crate::tir::PrimFunc;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// The CPU function (an item of the module) and its name; a code generation error is a
/// compile error at the `parallel` it is about, else at the kernel's name (`span`).
pub fn function(f: &PrimFunc, kernel: &Kernel, span: Span) -> Result<(TokenStream, syn::Ident), Vec<syn::Error>> {
    let item = crate::codegen::rust::emit_rust(f).map_err(|e| {
        let (at, help) = match &e {
            CodegenError::ParallelNotDisjoint { loop_var, buffer, .. } => (
                parallel_stmt(kernel, loop_var).map(|loc| kernel.span(loc)),
                format!(
                    "\nhelp: each iteration of a parallel loop writes one contiguous block of `{buffer}`: make an \
                     axis parallel whose blocks are contiguous in its layout (its outermost one, or that axis fused \
                     with the next ones: `let p = {buffer}.fuse(..)`), with the loops it contains inside it"
                ),
            ),
            _ => (None, String::new()),
        };
        vec![syn::Error::new(at.unwrap_or(span), format!("{e}{help}"))]
    })?;
    Ok((item, crate::codegen::rust::fn_ident(f)))
}

/// The `X.parallel(AXIS)` statement of the kernel's CPU block whose axis is `var`.
fn parallel_stmt(kernel: &Kernel, var: &str) -> Option<Loc> {
    let block = kernel.schedule_block(&crate::Target::parse("cpu").ok()?)?;
    block.stmts.iter().find_map(|st| {
        let SchedStmt::Call { call: SExpr::Method { method, args, .. }, .. } = st else { return None };
        match args.first()? {
            SExpr::Name(n) if method.name == "parallel" && n.name == var => Some(n.loc),
            SExpr::Field { field, .. } if method.name == "parallel" && field.name == var => Some(field.loc),
            _ => None,
        }
    })
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
