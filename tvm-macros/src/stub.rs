//! The stub emitted with errors: the declared function and module with the declared
//! types, so uses elsewhere in the crate type-check and only the real errors show.

use crate::paths;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use tvm_core::frontend::ast::{KernelAst, ParamAst, TensorType};
use tvm_core::DType;

fn elem(t: &TensorType) -> TokenStream {
    DType::from_name(&t.dtype.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32))
}

/// The stub of `ast`'s function and module; bodies never run (the crate has errors).
pub fn stub(ast: &KernelAst) -> TokenStream {
    let Ok(name) = syn::parse_str::<syn::Ident>(&ast.sig.name.name) else { return TokenStream::new() };
    let (tensor, device, error, result) = (paths::tensor(), paths::device(), paths::error(), paths::result());
    let vis = &ast.vis;
    let mut params = Vec::new();
    for p in &ast.sig.params {
        let Ok(mut i) = syn::parse_str::<syn::Ident>(&p.name().name) else { return TokenStream::new() };
        // `set_span`, not `Ident::new(&i.to_string(), ..)`: that panics on raw identifiers.
        i.set_span(Span::call_site());
        params.push(match p {
            ParamAst::Tensor { ty, .. } => {
                let (e, r) = (elem(ty), ty.dims.len());
                quote!(#i: &#tensor<#e, #r>)
            }
            ParamAst::Scalar { ty, .. } if ty.name == "usize" => quote!(#i: usize),
            ParamAst::Scalar { ty, .. } => {
                let t = DType::from_name(&ty.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32));
                quote!(#i: #t)
            }
        });
    }
    let outs: Vec<TokenStream> = ast
        .sig
        .outputs
        .iter()
        .map(|o| {
            let (e, r) = (elem(&o.ty), o.ty.dims.len());
            quote!(#tensor<#e, #r>)
        })
        .collect();
    let out_params: Vec<TokenStream> = ast
        .sig
        .outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let i = syn::Ident::new(&format!("__out{k}"), Span::call_site());
            let (e, r) = (elem(&o.ty), o.ty.dims.len());
            quote!(#i: &mut #tensor<#e, #r>)
        })
        .collect();
    let ret = if outs.len() == 1 { outs[0].clone() } else { quote!((#(#outs),*)) };
    quote! {
        #[allow(unused_variables, dead_code)]
        #vis fn #name(#(#params),*) -> #result<#ret, #error> {
            ::core::unreachable!("the kernel has compile errors")
        }
        #[allow(unused_variables, dead_code, non_snake_case)]
        #vis mod #name {
            pub fn run(device: &#device, #(#params,)* #(#out_params),*) -> #result<(), #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn source(target: &str) -> #result<&'static str, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
            pub fn lowered(target: &str) -> #result<&'static str, #error> {
                ::core::unreachable!("the kernel has compile errors")
            }
        }
    }
}
