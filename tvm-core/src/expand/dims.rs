//! Shape binding in the generated code: `__dims` binds every dim from the `usize` scalars
//! and then the input shapes (in parameter order), checking every later use, through the
//! runtime's one binder (`tvm_runtime::shape`); `output_checks` checks outputs given by
//! the caller against the bound dims.

use super::paths;
use super::signature::{ParamKind, Signature};
use crate::frontend::Kernel;
use crate::tir::Expr;
use proc_macro2::TokenStream;
use quote::quote;

/// `fn __dims(<tensor shapes as [usize; R]>, <usize scalars>) -> Result<[i64; ND], Error>`,
/// and the arguments that call it (`a.shape()`, ..., `n`).
pub fn dims_fn(kernel: &Kernel, sig: &Signature) -> (TokenStream, Vec<TokenStream>) {
    let (rt, error_t, result_t) = (paths::rt(), paths::error(), paths::result());
    let kname = &kernel.name;
    let nd = sig.dims.len();
    let mut params = Vec::new();
    let mut args = Vec::new();
    for p in &sig.params {
        let i = &p.ident;
        match &p.kind {
            ParamKind::Tensor { rank, .. } => {
                params.push(quote!(#i: [usize; #rank]));
                args.push(quote!(#i.shape()));
            }
            ParamKind::Scalar { is_usize: true, .. } => {
                params.push(quote!(#i: usize));
                args.push(quote!(#i));
            }
            ParamKind::Scalar { .. } => {}
        }
    }
    let slot = |name: &str| {
        let k = sig.dims.iter().position(|d| d == name).expect("a bound dim is a dim");
        quote!(&mut __d[#k])
    };
    let mut bind = Vec::new();
    for b in &kernel.dim_bindings {
        let name = b.dim.name();
        // The scalar parameter of the same name, with the user's span.
        let Some(s) = sig
            .params
            .iter()
            .map(|p| &p.ident)
            .find(|i| super::signature::param_name(i) == name.trim_start_matches("r#"))
        else {
            continue;
        };
        let slot = slot(name);
        bind.push(quote!(#rt::bind_scalar_dim(#slot, #s, #kname, #name)?;));
    }
    let g = &kernel.graph;
    for (p, gp) in sig.params.iter().zip(&g.params) {
        let crate::te::Param::Tensor(t) = gp else { continue };
        let i = &p.ident;
        let pname = super::signature::param_name(i);
        for (d, e) in g.tensor(*t).shape.iter().enumerate() {
            match e {
                Expr::Var(v) => {
                    let (slot, dname) = (slot(v.name()), v.name());
                    bind.push(quote!(#rt::bind_dim(#slot, #i[#d], #kname, #pname, #d, #dname)?;));
                }
                _ => {
                    let want = e.as_int().unwrap_or(0);
                    bind.push(quote!(#rt::check_dim(#i[#d], #want, #kname, #pname, #d)?;));
                }
            }
        }
    }
    let f = quote! {
        fn __dims(#(#params),*) -> #result_t<[i64; #nd], #error_t> {
            let mut __d: [#rt::DimSlot<'static>; #nd] = [::core::option::Option::None; #nd];
            #(#bind)*
            ::core::result::Result::Ok(#rt::finish_dims(__d))
        }
    };
    (f, args)
}

/// Checks of every output's shape (`<ident>.shape()`) against the bound dims `__d`.
pub fn output_checks(kernel: &Kernel, sig: &Signature) -> TokenStream {
    let rt = paths::rt();
    let kname = &kernel.name;
    let mut checks = Vec::new();
    for o in &sig.outputs {
        let i = &o.ident;
        let pname = super::signature::param_name(i);
        for (d, s) in o.shape.iter().enumerate() {
            checks.push(quote!(#rt::check_dim(#i.shape()[#d], #s as i64, #kname, #pname, #d)?;));
        }
    }
    quote!(#(#checks)*)
}
