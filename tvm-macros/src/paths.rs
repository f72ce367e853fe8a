//! Every path the generated code names, in one place: generated code uses absolute
//! `::tvm::...` paths only, so it works whatever the user imported.

use proc_macro2::TokenStream;
use quote::quote;
use tvm_core::DType;

pub fn tensor() -> TokenStream {
    quote!(::tvm::Tensor)
}
pub fn device() -> TokenStream {
    quote!(::tvm::Device)
}
pub fn error() -> TokenStream {
    quote!(::tvm::Error)
}
pub fn result() -> TokenStream {
    quote!(::core::result::Result)
}
/// Support code for generated kernels (rayon, math helpers).
pub fn rt() -> TokenStream {
    quote!(::tvm::__rt)
}

/// The Rust element type of a tensor or scalar of `dtype`.
pub fn rust_type(dtype: DType) -> TokenStream {
    match dtype.name() {
        "bool" => quote!(bool),
        "i8" => quote!(i8),
        "i16" => quote!(i16),
        "i32" => quote!(i32),
        "i64" => quote!(i64),
        "u8" => quote!(u8),
        "u16" => quote!(u16),
        "u32" => quote!(u32),
        "u64" => quote!(u64),
        "f16" => quote!(::tvm::F16),
        "bf16" => quote!(::tvm::BF16),
        "f32" => quote!(f32),
        _ => quote!(f64),
    }
}
