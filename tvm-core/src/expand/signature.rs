//! The kernel's parameters and outputs as the user passes them, and the argument lists of
//! the lowered functions (CPU and host code) built from them.

use super::paths;
use crate::frontend::ast::{Dim, ParamAst, Signature as SigAst, TensorType};
use crate::frontend::Kernel;
use crate::te::Param;
use crate::tir::{self, Expr, PrimFunc};
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// One parameter.
pub struct ParamInfo {
    pub ident: syn::Ident,
    pub kind: ParamKind,
}

pub enum ParamKind {
    /// A tensor of element type `elem` and rank `rank`.
    Tensor { elem: TokenStream, rank: usize },
    /// A scalar of Rust type `ty`; `usize` scalars are passed to kernels as `u64`.
    Scalar { ty: TokenStream, is_usize: bool },
}

/// One output.
pub struct OutputInfo {
    pub ident: syn::Ident,
    pub elem: TokenStream,
    pub rank: usize,
    /// Each dimension as a `usize` expression of the bound dims `__d`.
    pub shape: Vec<TokenStream>,
}

/// The kernel's signature, and its dims in [`crate::te::Graph::dims`] order (the order of
/// the `__d` array of the generated code).
pub struct Signature {
    pub name: syn::Ident,
    pub params: Vec<ParamInfo>,
    pub outputs: Vec<OutputInfo>,
    pub dims: Vec<String>,
}

/// The identifier `name` (as the frontend spells it: raw identifiers keep their `r#`,
/// which `Ident::new` rejects with a panic).
pub fn ident(name: &str, span: Span) -> syn::Ident {
    match name.strip_prefix("r#") {
        Some(raw) => syn::Ident::new_raw(raw, span),
        None => syn::Ident::new(name, span),
    }
}

/// The name of a parameter as messages show it (a raw identifier without its `r#`).
pub fn param_name(i: &syn::Ident) -> String {
    let s = i.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}

impl Signature {
    pub fn of(kernel: &Kernel) -> Signature {
        let g = &kernel.graph;
        let dims: Vec<String> = g.dims.iter().map(|d| d.name().to_string()).collect();
        let mut params = Vec::new();
        for (p, ast) in g.params.iter().zip(&kernel.ast.sig.params) {
            let span = kernel.span(ast.name().loc);
            params.push(match p {
                Param::Tensor(t) => {
                    let tt = g.tensor(*t);
                    let kind = ParamKind::Tensor { elem: paths::rust_type(tt.dtype), rank: tt.shape.len() };
                    ParamInfo { ident: ident(&tt.name, span), kind }
                }
                Param::Scalar(v) => {
                    let is_usize = matches!(ast, ParamAst::Scalar { ty, .. } if ty.name == "usize");
                    let ty = if is_usize { quote!(usize) } else { paths::rust_type(v.dtype()) };
                    ParamInfo { ident: ident(v.name(), span), kind: ParamKind::Scalar { ty, is_usize } }
                }
            });
        }
        let outputs = g
            .outputs
            .iter()
            .zip(&kernel.ast.sig.outputs)
            .map(|(&o, ast)| {
                let t = g.tensor(o);
                OutputInfo {
                    ident: ident(&t.name, kernel.span(ast.name.loc)),
                    elem: paths::rust_type(t.dtype),
                    rank: t.shape.len(),
                    shape: t.shape.iter().map(|e| dim_value(e, &dims)).collect(),
                }
            })
            .collect();
        let name = ident(&kernel.name, kernel.span(kernel.ast.sig.name.loc));
        Signature { name, params, outputs, dims }
    }

    /// `__d[k]`, the value of dim `name`.
    pub fn dim(&self, name: &str) -> TokenStream {
        let k = self.dims.iter().position(|d| d == name).expect("a dim of the function is a dim of the kernel");
        quote!(__d[#k])
    }

    /// The arguments of a lowered function of this kernel (the CPU function, or a GPU
    /// target's host function), in its order: each tensor parameter as `tensor(ident)`,
    /// each scalar by value (`usize` ones `as u64`), then each dim (`__d[k]`). `tensor`
    /// gets the tensor's identifier and whether it is an output.
    pub fn call_args(
        &self,
        f: &PrimFunc,
        mut tensor: impl FnMut(&syn::Ident, bool) -> TokenStream,
    ) -> Vec<TokenStream> {
        let mut args = Vec::new();
        for p in &f.params {
            match p {
                tir::Param::Tensor { buffer, is_output, .. } => {
                    args.push(tensor(&self.find(buffer.name()), *is_output))
                }
                tir::Param::Scalar(v) => {
                    let i = self.find(v.name());
                    let usize_scalar = self
                        .params
                        .iter()
                        .any(|p| p.ident == i && matches!(p.kind, ParamKind::Scalar { is_usize: true, .. }));
                    args.push(if usize_scalar { quote!(#i as u64) } else { quote!(#i) });
                }
            }
        }
        for v in crate::codegen::dim_vars(f) {
            args.push(self.dim(v.name()));
        }
        args
    }

    /// The parameter or output named `name` (a lowered function's parameters are the
    /// kernel's, by name).
    fn find(&self, name: &str) -> syn::Ident {
        let same = |i: &syn::Ident| {
            let s = i.to_string();
            s == name || s.strip_prefix("r#") == Some(name) || name.strip_prefix("r#") == Some(s.as_str())
        };
        self.params
            .iter()
            .map(|p| &p.ident)
            .chain(self.outputs.iter().map(|o| &o.ident))
            .find(|i| same(i))
            .cloned()
            .unwrap_or_else(|| panic!("internal: `{name}` is not a parameter of the kernel"))
    }
}

/// The shape expression of dim `e` given the dims array `__d`: a literal or a dim (the
/// only forms docs/LANGUAGE.md §2 allows in a signature).
fn dim_value(e: &Expr, dims: &[String]) -> TokenStream {
    match e {
        Expr::Int { value, .. } => {
            let v = *value as usize;
            quote!(#v)
        }
        Expr::Var(v) => {
            let k = dims.iter().position(|d| d == v.name()).expect("dims of outputs are bound");
            quote!((__d[#k] as usize))
        }
        _ => quote!(0usize),
    }
}

/// The rustdoc the typed function gets after the user's own: the declared signature, each
/// tensor's element type and shape (`x: f32[M, N]`, rustdoc shows only `&Tensor<f32, 2>`),
/// where the dims come from, and what the module of the same name offers.
pub fn contract_doc(sig: &SigAst, generic: Option<&str>) -> String {
    let ty = |t: &TensorType| {
        let dims: Vec<String> = t
            .dims
            .iter()
            .map(|d| match d {
                Dim::Lit { value, .. } => value.to_string(),
                Dim::Name(n) => n.name.clone(),
            })
            .collect();
        format!("{}[{}]", t.dtype.name, dims.join(", "))
    };
    let name = sig.name.name.trim_start_matches("r#");
    let params: Vec<String> = sig
        .params
        .iter()
        .map(|p| match p {
            ParamAst::Tensor { name, ty: t } => format!("{}: {}", name.name, ty(t)),
            ParamAst::Scalar { name, ty } => format!("{}: {}", name.name, ty.name),
        })
        .collect();
    let outputs: Vec<String> = sig.outputs.iter().map(|o| format!("{}: {}", o.name.name, ty(&o.ty))).collect();
    let returns = if outputs.len() == 1 { outputs[0].clone() } else { format!("({})", outputs.join(", ")) };
    let generic = generic.map(|g| format!("<{g}>")).unwrap_or_default();
    let mut dims: Vec<String> = Vec::new();
    for p in &sig.params {
        if let ParamAst::Tensor { ty, .. } = p {
            for d in &ty.dims {
                if let Dim::Name(n) = d {
                    if !dims.contains(&n.name) {
                        dims.push(n.name.clone());
                    }
                }
            }
        }
    }
    let mut doc = format!("\n# Shapes\n\n`{name}{generic}({}) -> {returns}`\n\n", params.join(", "));
    for p in &params {
        doc.push_str(&format!("- `{p}`\n"));
    }
    for o in &outputs {
        doc.push_str(&format!("- returns `{o}`, a new tensor\n"));
    }
    if !dims.is_empty() {
        let list: Vec<String> = dims.iter().map(|d| format!("`{d}`")).collect();
        let (dims_are, sizes) =
            if list.len() == 1 { ("dim", "is the inputs' size") } else { ("dims", "are the inputs' sizes") };
        doc.push_str(&format!(
            "\nThe {dims_are} {} {sizes} at the call; inputs that disagree on one are \
             `Err(ShapeMismatch)` naming the parameter and the dimension.\n",
            list.join(", ")
        ));
    }
    doc.push_str(&format!(
        "\n# Running\n\nThis function runs on the default device (`tvm::Device::try_default()`: `TVM_DEVICE` \
         when set, else CUDA when a device is present and the kernel has CUDA code, else the CPU) and \
         returns new host tensors. The module [`{name}`](mod@{name}) has the other \
         ways: `run` (a device you choose, into outputs you allocated), `run_on` and `call_on` (device \
         tensors, which stay on the device between calls), `profile` (a median time with the FLOPs and bytes \
         of one run), and `source`, `lowered` and `schedule` (the generated code, the lowered TIR and the \
         schedule, per target).\n"
    ));
    doc
}
