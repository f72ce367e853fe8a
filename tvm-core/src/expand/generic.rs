//! Kernels generic over their element type: `fn axpy<T: Float>(x: T[n], ..)`.
//!
//! The generic parameter is resolved before anything else sees the kernel: one instance
//! per type the bound allows, each the kernel's tokens with `T` replaced by the type and
//! expanded as any kernel (checked, scheduled, lowered and code-generated on its own), in a
//! hidden module `__NAME_TYPE`. Around them, the generic API: a sealed trait `NAME::Elem`
//! implemented for each instance type, and the typed function and `run`, `run_on`,
//! `call_on`, `profile`, `source`, `lowered` generic over it, each calling its instance.
//! An error that every instance reports is reported once; one that only some report says
//! for which types.

use super::paths;
use crate::frontend::ast::{KernelAst, ParamAst, TensorType};
use crate::DType;
use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};

/// The bounds a type parameter may name, with the types each allows.
pub const BOUNDS: &[(&str, &[&str])] = &[
    ("Float", &["f32", "f64"]),
    ("Signed", &["i8", "i16", "i32", "i64"]),
    ("Unsigned", &["u8", "u16", "u32", "u64"]),
    ("Integer", &["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]),
    ("Number", &["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"]),
];

/// `<T: BOUND>` of a kernel header.
pub struct Generics {
    /// The type parameter (`T`).
    pub param: Ident,
    /// The types it takes, one instance each, in order.
    pub types: Vec<String>,
}

/// Splits `fn NAME<T: BOUND>` off the kernel's tokens: the generics, and the tokens
/// without them. `Ok(None)` for a kernel without generics.
pub fn split(tokens: &TokenStream) -> Result<Option<(Generics, TokenStream)>, syn::Error> {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    // `fn NAME <` at the top level, before the body's braces.
    let Some(k) = (0..tts.len().saturating_sub(2)).find(|&k| {
        matches!(&tts[k], TokenTree::Ident(i) if i == "fn")
            && matches!(&tts[k + 1], TokenTree::Ident(_))
            && matches!(&tts[k + 2], TokenTree::Punct(p) if p.as_char() == '<')
    }) else {
        return Ok(None);
    };
    let open = k + 2;
    let Some(close) = (open..tts.len()).find(|&j| matches!(&tts[j], TokenTree::Punct(p) if p.as_char() == '>')) else {
        return Err(syn::Error::new(
            tts[open].span(),
            "expected `>` closing the type parameter, as in `fn f<T: Float>`",
        ));
    };
    let inner = &tts[open + 1..close];
    let usage = "a kernel takes one type parameter with a bound, as in `fn f<T: Float>`, or a list of types, as in `fn f<T: f32 | f64>`";
    let Some(TokenTree::Ident(param)) = inner.first() else {
        return Err(syn::Error::new(tts[open].span(), format!("expected a type parameter: {usage}")));
    };
    if !matches!(inner.get(1), Some(TokenTree::Punct(p)) if p.as_char() == ':') {
        let span = inner.get(1).map_or(param.span(), |t| t.span());
        return Err(syn::Error::new(span, format!("expected `:` and the types `{param}` takes: {usage}")));
    }
    let bound = &inner[2..];
    let mut types: Vec<String> = Vec::new();
    let mut expect_name = true;
    for t in bound {
        match t {
            TokenTree::Ident(i) if expect_name => {
                let name = i.to_string();
                if let Some((_, ts)) = BOUNDS.iter().find(|(b, _)| *b == name) {
                    for t in ts.iter() {
                        if !types.iter().any(|x| x == t) {
                            types.push(t.to_string());
                        }
                    }
                } else if DType::from_name(&name).is_some() {
                    if types.contains(&name) {
                        return Err(syn::Error::new(i.span(), format!("`{name}` is listed twice")));
                    }
                    types.push(name);
                } else {
                    let bounds: Vec<&str> = BOUNDS.iter().map(|(b, _)| *b).collect();
                    return Err(syn::Error::new(
                        i.span(),
                        format!(
                            "unknown bound `{name}`; the bounds are `{}` (each allows the types it names), or list the types: `{param}: f32 | f64`",
                            bounds.join("`, `")
                        ),
                    ));
                }
                expect_name = false;
            }
            TokenTree::Punct(p) if !expect_name && p.as_char() == '|' => expect_name = true,
            TokenTree::Punct(p) if p.as_char() == '+' => {
                return Err(syn::Error::new(
                    p.span(),
                    format!("`{param}` is one of the types listed: join them with `|`, as in `{param}: f32 | f64`"),
                ));
            }
            TokenTree::Punct(p) if p.as_char() == ',' => {
                return Err(syn::Error::new(p.span(), format!("only one type parameter: {usage}")));
            }
            other => return Err(syn::Error::new(other.span(), format!("unexpected `{other}`: {usage}"))),
        }
    }
    if types.is_empty() || expect_name {
        let span = bound.last().map_or(param.span(), |t| t.span());
        return Err(syn::Error::new(span, format!("expected the types `{param}` takes: {usage}")));
    }
    let rest: TokenStream = tts[..open].iter().chain(&tts[close + 1..]).cloned().collect();
    Ok(Some((Generics { param: param.clone(), types }, rest)))
}

/// The kernels a `compute!` input defines: itself, or one instance per type of its type
/// parameter (`(type, tokens)`), as the macro expands them.
pub fn instances(tokens: &TokenStream) -> Result<Vec<(Option<String>, TokenStream)>, syn::Error> {
    Ok(match split(tokens)? {
        None => vec![(None, tokens.clone())],
        Some((g, rest)) => {
            g.types.iter().map(|ty| (Some(ty.clone()), visible_to_parent(instantiate(&rest, &g.param, ty)))).collect()
        }
    })
}

/// `tokens` with every identifier `param` replaced by `ty` (keeping its span).
pub fn instantiate(tokens: &TokenStream, param: &Ident, ty: &str) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(i) if i == *param => TokenTree::Ident(Ident::new(ty, i.span())),
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), instantiate(&g.stream(), param, ty));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            t => t,
        })
        .collect()
}

/// The hidden module of the instance for `ty`.
pub fn instance_module(name: &str, ty: &str) -> Ident {
    format_ident!("__{}_{}", name.trim_start_matches("r#"), ty)
}

/// The generic API over the instances (which are in `instance_module(name, ty)`, each
/// with the kernel's function and module).
pub fn facade(ast: &KernelAst, g: &Generics) -> TokenStream {
    let Ok(name) = syn::parse_str::<syn::Ident>(&ast.sig.name.name) else { return TokenStream::new() };
    let kname = ast.sig.name.name.trim_start_matches("r#").to_string();
    let (tensor, dtensor, device, error, result, rt) =
        (paths::tensor(), paths::device_tensor(), paths::device(), paths::error(), paths::result(), paths::rt());
    let dev = paths::device_param();
    let vis = &ast.vis;
    let attrs = &ast.attrs;
    let p = g.param.to_string();
    // An element type: the parameter as `elem_t`, any other type as itself.
    let elem = |t: &TensorType, elem_t: &TokenStream| -> TokenStream {
        if t.dtype.name == p {
            elem_t.clone()
        } else {
            DType::from_name(&t.dtype.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32))
        }
    };
    // The declarations of the inputs, outputs and results with element type `e`.
    struct Decls {
        params: Vec<TokenStream>,
        dparams: Vec<TokenStream>,
        outs: Vec<TokenStream>,
        douts: Vec<TokenStream>,
        ret: TokenStream,
        dret: TokenStream,
    }
    let idents: Vec<Ident> =
        ast.sig.params.iter().map(|q| super::signature::ident(&q.name().name, Span::call_site())).collect();
    let out_idents: Vec<Ident> =
        ast.sig.outputs.iter().map(|o| super::signature::ident(&o.name.name, Span::call_site())).collect();
    let decls = |e: &TokenStream| -> Decls {
        let mut d = Decls {
            params: vec![],
            dparams: vec![],
            outs: vec![],
            douts: vec![],
            ret: TokenStream::new(),
            dret: TokenStream::new(),
        };
        for (q, i) in ast.sig.params.iter().zip(&idents) {
            match q {
                ParamAst::Tensor { ty, .. } => {
                    let (t, r) = (elem(ty, e), ty.dims.len());
                    d.params.push(quote!(#i: &#tensor<#t, #r>));
                    d.dparams.push(quote!(#i: &#dtensor<#t, #r>));
                }
                ParamAst::Scalar { ty, .. } => {
                    let t = if ty.name == "usize" {
                        quote!(usize)
                    } else if ty.name == p {
                        e.clone()
                    } else {
                        DType::from_name(&ty.name).map(paths::rust_type).unwrap_or_else(|| quote!(f32))
                    };
                    d.params.push(quote!(#i: #t));
                    d.dparams.push(quote!(#i: #t));
                }
            }
        }
        let mut rets = vec![];
        let mut drets = vec![];
        for (o, i) in ast.sig.outputs.iter().zip(&out_idents) {
            let (t, r) = (elem(&o.ty, e), o.ty.dims.len());
            d.outs.push(quote!(#i: &mut #tensor<#t, #r>));
            d.douts.push(quote!(#i: &mut #dtensor<#t, #r>));
            rets.push(quote!(#tensor<#t, #r>));
            drets.push(quote!(#dtensor<#t, #r>));
        }
        let tuple = |v: &[TokenStream]| if v.len() == 1 { v[0].clone() } else { quote!((#(#v),*)) };
        d.ret = tuple(&rets);
        d.dret = tuple(&drets);
        d
    };
    let Decls { params: sp, dparams: sdp, outs: so, douts: sdo, ret: sret, dret: sdret } = decls(&quote!(Self));
    let Decls { params: tp, dparams: tdp, outs: to, douts: tdo, ret: tret, dret: tdret } = decls(&quote!(T));
    let impls = g.types.iter().map(|ty| {
        let m = instance_module(&kname, ty);
        let t = DType::from_name(ty).map(paths::rust_type).unwrap_or_else(|| quote!(f32));
        let Decls { params, dparams, outs, douts, ret, dret } = decls(&t);
        quote! {
            impl Sealed for #t {}
            impl Elem for #t {
                const NAME: &'static str = #ty;
                fn __call(#(#params),*) -> #result<#ret, #error> {
                    super::#m::#name(#(#idents),*)
                }
                fn __run(#dev: &#device, #(#params,)* #(#outs),*) -> #result<(), #error> {
                    super::#m::#name::run(#dev, #(#idents,)* #(#out_idents),*)
                }
                fn __run_on(#dev: &#device, #(#dparams,)* #(#douts),*) -> #result<(), #error> {
                    super::#m::#name::run_on(#dev, #(#idents,)* #(#out_idents),*)
                }
                fn __call_on(#dev: &#device, #(#dparams),*) -> #result<#dret, #error> {
                    super::#m::#name::call_on(#dev, #(#idents),*)
                }
                fn __profile(#dev: &#device, #(#params),*) -> #result<#rt::Profile, #error> {
                    super::#m::#name::profile(#dev, #(#idents),*)
                }
                fn __source(target: &str) -> #result<&'static str, #error> {
                    super::#m::#name::source(target)
                }
                fn __lowered(target: &str) -> #result<&'static str, #error> {
                    super::#m::#name::lowered(target)
                }
                fn __schedule(target: &str) -> #result<&'static str, #error> {
                    super::#m::#name::schedule(target)
                }
            }
        }
    });
    let list = g.types.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    let elem_doc = format!("The element types `{p}` of [`{kname}`](fn@super::{kname}) may be: {list}. Sealed.");
    let mod_doc = format!("The generated code of [`{kname}`](fn@{kname}), one instance per element type, and how to run it on a chosen device.");
    let contract = super::signature::contract_doc(&ast.sig, Some(&format!("{p}: {}::Elem", kname)));
    quote! {
        #(#attrs)*
        #[doc = #contract]
        #vis fn #name<T: #name::Elem>(#(#tp),*) -> #result<#tret, #error> {
            T::__call(#(#idents),*)
        }

        #[doc = #mod_doc]
        #[allow(non_snake_case, clippy::all)]
        #vis mod #name {
            #[doc(hidden)]
            pub trait Sealed {}

            #[doc = #elem_doc]
            pub trait Elem: Sealed + Sized + ::tvm::Element {
                /// The type's name.
                const NAME: &'static str;
                #[doc(hidden)]
                fn __call(#(#sp),*) -> #result<#sret, #error>;
                #[doc(hidden)]
                fn __run(#dev: &#device, #(#sp,)* #(#so),*) -> #result<(), #error>;
                #[doc(hidden)]
                fn __run_on(#dev: &#device, #(#sdp,)* #(#sdo),*) -> #result<(), #error>;
                #[doc(hidden)]
                fn __call_on(#dev: &#device, #(#sdp),*) -> #result<#sdret, #error>;
                #[doc(hidden)]
                fn __profile(#dev: &#device, #(#sp),*) -> #result<#rt::Profile, #error>;
                #[doc(hidden)]
                fn __source(target: &str) -> #result<&'static str, #error>;
                #[doc(hidden)]
                fn __lowered(target: &str) -> #result<&'static str, #error>;
                #[doc(hidden)]
                fn __schedule(target: &str) -> #result<&'static str, #error>;
            }

            #(#impls)*

            /// Runs the instance for `T` on `device`, writing into existing outputs.
            pub fn run<T: Elem>(#dev: &#device, #(#tp,)* #(#to),*) -> #result<(), #error> {
                T::__run(#dev, #(#idents,)* #(#out_idents),*)
            }
            /// Runs the instance for `T` on `device` over device tensors.
            pub fn run_on<T: Elem>(#dev: &#device, #(#tdp,)* #(#tdo),*) -> #result<(), #error> {
                T::__run_on(#dev, #(#idents,)* #(#out_idents),*)
            }
            /// [`run_on`] into new outputs on `device`.
            pub fn call_on<T: Elem>(#dev: &#device, #(#tdp),*) -> #result<#tdret, #error> {
                T::__call_on(#dev, #(#idents),*)
            }
            /// Times the instance for `T` on `device` (`tvm::Profile`).
            pub fn profile<T: Elem>(#dev: &#device, #(#tp),*) -> #result<#rt::Profile, #error> {
                T::__profile(#dev, #(#idents),*)
            }
            /// The generated code of the instance for `T`, for `"cpu"`, `"cuda"` or `"opencl"`.
            pub fn source<T: Elem>(target: &str) -> #result<&'static str, #error> {
                T::__source(target)
            }
            /// The lowered TIR of the instance for `T`.
            pub fn lowered<T: Elem>(target: &str) -> #result<&'static str, #error> {
                T::__lowered(target)
            }
            /// The schedule of the instance for `T`, as `schedule!` source.
            pub fn schedule<T: Elem>(target: &str) -> #result<&'static str, #error> {
                T::__schedule(target)
            }
        }
    }
}

/// `text` (an instance's message) with its type `ty` written as the parameter `param`
/// wherever it stands as a word of its own (`expected `f32``, `2 as f32`).
pub fn as_param(text: &str, ty: &str, param: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(ty) {
        let before = if at > 0 { rest[..at].chars().last() } else { out.chars().last() };
        let after = rest[at + ty.len()..].chars().next();
        out.push_str(&rest[..at]);
        out.push_str(if word(before) || word(after) { ty } else { param });
        rest = &rest[at + ty.len()..];
    }
    out.push_str(rest);
    out
}

/// An instance's tokens with `pub(super)` before `fn` where the kernel has no
/// visibility: its function and module are then visible to the generic API beside the
/// hidden module that holds them.
pub fn visible_to_parent(tokens: TokenStream) -> TokenStream {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let Some(k) = tts.iter().position(|t| matches!(t, TokenTree::Ident(i) if i == "fn")) else {
        return tts.into_iter().collect();
    };
    if let Some(p) = tts[..k].iter().position(|t| matches!(t, TokenTree::Ident(i) if i == "pub")) {
        // `pub(self)` is private to the instance's module: widen it to its parent.
        let private = matches!(tts.get(p + 1), Some(TokenTree::Group(g))
            if g.delimiter() == Delimiter::Parenthesis && g.stream().to_string() == "self");
        let mut out = tts;
        if private {
            let span = out[p + 1].span();
            let mut g = Group::new(Delimiter::Parenthesis, quote!(super));
            g.set_span(span);
            out[p + 1] = TokenTree::Group(g);
        }
        return out.into_iter().collect();
    }
    let span = tts[k].span();
    let mut out: Vec<TokenTree> = tts[..k].to_vec();
    out.push(TokenTree::Ident(Ident::new("pub", span)));
    out.push(TokenTree::Group(Group::new(Delimiter::Parenthesis, quote!(super))));
    out.extend(tts[k..].iter().cloned());
    out.into_iter().collect()
}

/// The hidden module holding one instance's expansion (as visible as the kernel).
pub fn wrap_instance(vis: &syn::Visibility, name: &str, ty: &str, expansion: TokenStream) -> TokenStream {
    let m = instance_module(name, ty);
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case)]
        #vis mod #m {
            #expansion
        }
    }
}

#[cfg(test)]
mod tests {
    use super::as_param;

    #[test]
    fn an_instance_message_speaks_of_the_parameter() {
        let t = "mismatched types: expected `f32`, found integer literal `2`\nhelp: cast: `2 as f32`";
        assert_eq!(
            as_param(t, "f32", "T"),
            "mismatched types: expected `T`, found integer literal `2`\nhelp: cast: `2 as T`"
        );
        // Only the type as a word of its own: not inside another name or type.
        assert_eq!(as_param("`xf32` is `f32x4`, `f32`", "f32", "T"), "`xf32` is `f32x4`, `T`");
        assert_eq!(as_param("i8 and i8", "i8", "T"), "T and T");
    }
}
