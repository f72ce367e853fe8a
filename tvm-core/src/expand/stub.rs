//! The stub emitted with errors: the declared function and module with the declared
//! types, so uses elsewhere in the crate type-check and only the real errors show.

use super::paths;
use crate::frontend::ast::{KernelAst, ParamAst, TensorType};
use crate::DType;
use proc_macro2::{Span, TokenStream};
use quote::quote;

fn elem(t: &TensorType) -> TokenStream {
    DType::from_name(&t.dtype.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32))
}

/// The stub of `ast`'s function and module; bodies never run (the crate has errors).
pub fn stub(ast: &KernelAst) -> TokenStream {
    let Ok(name) = syn::parse_str::<syn::Ident>(&ast.sig.name.name) else { return TokenStream::new() };
    let dev = paths::device_param();
    let (tensor, dtensor, device, error, result) =
        (paths::tensor(), paths::device_tensor(), paths::device(), paths::error(), paths::result());
    let vis = &ast.vis;
    // Parameters with host tensors, and with device tensors.
    let mut params = Vec::new();
    let mut dparams = Vec::new();
    for p in &ast.sig.params {
        let Ok(mut i) = syn::parse_str::<syn::Ident>(&p.name().name) else { return TokenStream::new() };
        // `set_span`, not `Ident::new(&i.to_string(), ..)`: that panics on raw identifiers.
        i.set_span(Span::call_site());
        let (host, dev) = match p {
            ParamAst::Tensor { ty, .. } => {
                let (e, r) = (elem(ty), ty.dims.len());
                (quote!(#i: &#tensor<#e, #r>), quote!(#i: &#dtensor<#e, #r>))
            }
            ParamAst::Scalar { ty, .. } if ty.name == "usize" => (quote!(#i: usize), quote!(#i: usize)),
            ParamAst::Scalar { ty, .. } => {
                let t = DType::from_name(&ty.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32));
                (quote!(#i: #t), quote!(#i: #t))
            }
        };
        params.push(host);
        dparams.push(dev);
    }
    let out_ty = |wrapper: &TokenStream| -> Vec<TokenStream> {
        ast.sig
            .outputs
            .iter()
            .map(|o| {
                let (e, r) = (elem(&o.ty), o.ty.dims.len());
                quote!(#wrapper<#e, #r>)
            })
            .collect()
    };
    let (outs, douts) = (out_ty(&tensor), out_ty(&dtensor));
    let out_ident = |k: usize| syn::Ident::new(&format!("__out{k}"), Span::call_site());
    let out_params: Vec<TokenStream> = outs
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let i = out_ident(k);
            quote!(#i: &mut #t)
        })
        .collect();
    let dout_params: Vec<TokenStream> = douts
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let i = out_ident(k);
            quote!(#i: &mut #t)
        })
        .collect();
    let tuple = |v: &[TokenStream]| if v.len() == 1 { v[0].clone() } else { quote!((#(#v),*)) };
    let (ret, dret) = (tuple(&outs), tuple(&douts));
    quote! {
        #[allow(unused_variables, dead_code)]
        #vis fn #name(#(#params),*) -> #result<#ret, #error> {
            ::core::unreachable!("the kernel has compile errors")
        }
        #[allow(unused_variables, dead_code, non_snake_case)]
        #vis mod #name {
            pub fn run(#dev: &#device, #(#params,)* #(#out_params),*) -> #result<(), #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn run_on(#dev: &#device, #(#dparams,)* #(#dout_params),*) -> #result<(), #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn call_on(#dev: &#device, #(#dparams),*) -> #result<#dret, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn profile(#dev: &#device, #(#params),*) -> #result<::tvm::__rt::Profile, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn source(target: &str) -> #result<&'static str, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn lowered(target: &str) -> #result<&'static str, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn schedule(target: &str) -> #result<&'static str, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
        }
    }
}
