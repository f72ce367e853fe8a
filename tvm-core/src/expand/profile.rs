//! The static cost of each target's lowered function as Rust: `fn __cost_<target>(__d)
//! -> Option<(f64, f64)>`, the FLOPs and global-memory bytes of one call at the bound dims
//! (`crate::cost`), for `NAME::profile` and `TVM_PROFILE=1`. `None` where the count depends
//! on more than the dims (a loop whose extent depends on another loop's variable).

use super::signature::Signature;
use crate::tir::{BinOp, Expr, PrimFunc};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The cost function of target `target` (`f` lowered for it, or `None`: a backend off).
pub fn cost_fn(target: &str, f: Option<&PrimFunc>, sig: &Signature) -> TokenStream {
    let name = format_ident!("__cost_{}", target);
    let nd = sig.dims.len();
    let body = f
        .and_then(|f| {
            let (_, flops, bytes) = crate::cost::cost(f);
            let an = crate::arith::Analyzer::new();
            let (flops, bytes) = (value(&an.simplify(&flops), sig)?, value(&an.simplify(&bytes), sig)?);
            Some(quote!(::core::option::Option::Some((#flops, #bytes))))
        })
        .unwrap_or_else(|| quote!(::core::option::Option::None));
    quote! {
        #[allow(unused_parens, unused_variables, clippy::all)]
        fn #name(__d: &[i64; #nd]) -> ::core::option::Option<(f64, f64)> {
            #body
        }
    }
}

/// `e` as an `f64` expression over the dims `__d[k]`; `None` for anything else.
fn value(e: &Expr, sig: &Signature) -> Option<TokenStream> {
    Some(match e {
        Expr::Int { value, .. } => {
            let v = *value as f64;
            quote!(#v)
        }
        Expr::Var(v) => {
            let k = sig.dims.iter().position(|d| d == v.name())?;
            quote!((__d[#k] as f64))
        }
        Expr::Cast { value: x, .. } => value(x, sig)?,
        Expr::Binary { op, a, b } => {
            let (a, b) = (value(a, sig)?, value(b, sig)?);
            match op {
                BinOp::Add => quote!((#a + #b)),
                BinOp::Sub => quote!((#a - #b)),
                BinOp::Mul => quote!((#a * #b)),
                // Integer division and remainder (truncating), 0 for a zero divisor.
                BinOp::Div => quote!({ let __b = #b; if __b == 0.0 { 0.0 } else { (#a / __b).trunc() } }),
                BinOp::Mod => quote!({ let __b = #b; if __b == 0.0 { 0.0 } else { #a % __b } }),
                BinOp::Min => quote!(f64::min(#a, #b)),
                BinOp::Max => quote!(f64::max(#a, #b)),
            }
        }
        _ => return None,
    })
}
