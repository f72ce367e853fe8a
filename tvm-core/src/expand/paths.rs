//! Every path the generated code names, in one place: generated code uses absolute
//! `::tvm::...` paths only (the runtime, re-exported by the facade), so it works whatever
//! the user imported, and a user's binary links the runtime alone.

use crate::DType;
use proc_macro2::TokenStream;
use quote::quote;

pub fn tensor() -> TokenStream {
    quote!(::tvm::Tensor)
}
pub fn device_tensor() -> TokenStream {
    quote!(::tvm::DeviceTensor)
}
pub fn device() -> TokenStream {
    quote!(::tvm::Device)
}
/// The `device` parameter of the generated functions: hygienic (mixed-site), so a kernel
/// parameter of the same name is another variable. (The expansion cache writes every
/// `device` back as this one: see [`super::cache`].)
pub fn device_param() -> proc_macro2::Ident {
    proc_macro2::Ident::new("device", proc_macro2::Span::mixed_site())
}
pub fn error() -> TokenStream {
    quote!(::tvm::Error)
}
pub fn result() -> TokenStream {
    quote!(::core::result::Result)
}
/// Support for generated code: shape binding, the CPU helpers, the GPU launch interface.
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
        "f16" => quote!(::tvm::f16),
        "bf16" => quote!(::tvm::bf16),
        "f32" => quote!(f32),
        _ => quote!(f64),
    }
}
