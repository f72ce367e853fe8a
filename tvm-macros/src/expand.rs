//! Expansion of a checked kernel: the typed function, its module (`run`, `source`,
//! `lowered`) and the CPU code, lowered and generated while the macro expands.

use crate::paths;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use tvm_core::frontend::Kernel;
use tvm_core::schedule::ScheduleError;
use tvm_core::te::{Param, TensorId};
use tvm_core::tir::{Expr, PrimFunc};
use tvm_core::Target;

/// The lowered function of every target, or the errors (with spans) that stop it.
pub struct Lowered {
    pub cpu: PrimFunc,
    pub cuda: PrimFunc,
    pub opencl: PrimFunc,
}

pub fn schedule_error(kernel: &Kernel, e: &ScheduleError) -> syn::Error {
    kernel.source_map.error(e.loc, e)
}

/// Checks every schedule block and lowers the kernel for each target kind.
pub fn lower_all(kernel: &Kernel) -> Result<Lowered, Vec<syn::Error>> {
    let mut errors: Vec<syn::Error> =
        tvm_core::frontend::check_schedules(kernel).iter().map(|e| schedule_error(kernel, e)).collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut lower = |target: Target| -> Option<PrimFunc> {
        let result = tvm_core::frontend::lower_for(kernel, &target);
        match result {
            Ok(f) => Some(f),
            Err(es) => {
                for e in &es {
                    let err = schedule_error(kernel, e);
                    if !errors.iter().any(|x| x.to_string() == err.to_string()) {
                        errors.push(err);
                    }
                }
                None
            }
        }
    };
    let cpu = lower(Target::cpu());
    let cuda = lower(Target::cuda());
    let opencl = lower(Target::opencl());
    match (cpu, cuda, opencl) {
        (Some(cpu), Some(cuda), Some(opencl)) if errors.is_empty() => Ok(Lowered { cpu, cuda, opencl }),
        _ => Err(errors),
    }
}

/// What the generated code needs to know about one parameter.
struct ParamInfo {
    ident: syn::Ident,
    /// The Rust type as the user passes it.
    ty: TokenStream,
    kind: ParamKind,
}

enum ParamKind {
    Tensor {
        tensor: TensorId,
    },
    /// A scalar; `usize` scalars are passed to kernels as `u64`.
    Scalar {
        is_usize: bool,
    },
}

/// The identifier `name` (as the frontend spells it: raw identifiers keep their `r#`,
/// which `Ident::new` rejects with a panic).
fn ident(name: &str, span: Span) -> syn::Ident {
    match name.strip_prefix("r#") {
        Some(raw) => syn::Ident::new_raw(raw, span),
        None => syn::Ident::new(name, span),
    }
}

/// The shape expression of dim `e` given the dims array `__d`.
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

/// The typed function and its module.
pub fn expand(kernel: &Kernel, lowered: &Lowered, src: &str) -> Result<TokenStream, Vec<syn::Error>> {
    let g = &kernel.graph;
    let span = kernel.span(kernel.ast.sig.name.loc);
    let name = ident(&kernel.name, span);
    let kname = &kernel.name;
    let vis = &kernel.vis;
    let attrs = &kernel.attrs;
    let (tensor_t, device_t, error_t, result_t, rt) =
        (paths::tensor(), paths::device(), paths::error(), paths::result(), paths::rt());
    let dims: Vec<String> = g.dims.iter().map(|d| d.name().to_string()).collect();
    let nd = dims.len();

    // Parameters as the user passes them.
    let mut params = Vec::new();
    for (p, ast) in g.params.iter().zip(&kernel.ast.sig.params) {
        let pspan = kernel.span(ast.name().loc);
        match p {
            Param::Tensor(t) => {
                let tt = g.tensor(*t);
                let elem = paths::rust_type(tt.dtype);
                let rank = tt.shape.len();
                params.push(ParamInfo {
                    ident: ident(&tt.name, pspan),
                    ty: quote!(&#tensor_t<#elem, #rank>),
                    kind: ParamKind::Tensor { tensor: *t },
                });
            }
            Param::Scalar(v) => {
                let is_usize =
                    matches!(ast, tvm_core::frontend::ast::ParamAst::Scalar { ty, .. } if ty.name == "usize");
                let ty = if is_usize { quote!(usize) } else { paths::rust_type(v.dtype()) };
                params.push(ParamInfo { ident: ident(v.name(), pspan), ty, kind: ParamKind::Scalar { is_usize } });
            }
        }
    }
    let outputs: Vec<(syn::Ident, TokenStream, TokenStream, Vec<TokenStream>)> = g
        .outputs
        .iter()
        .zip(&kernel.ast.sig.outputs)
        .map(|(&o, ast)| {
            let t = g.tensor(o);
            let elem = paths::rust_type(t.dtype);
            let rank = t.shape.len();
            let shape: Vec<TokenStream> = t.shape.iter().map(|e| dim_value(e, &dims)).collect();
            let ty = quote!(#tensor_t<#elem, #rank>);
            (ident(&t.name, kernel.span(ast.name.loc)), elem, ty, shape)
        })
        .collect();

    let p_idents: Vec<&syn::Ident> = params.iter().map(|p| &p.ident).collect();
    let p_decls: Vec<TokenStream> = params
        .iter()
        .map(|p| {
            let (i, t) = (&p.ident, &p.ty);
            quote!(#i: #t)
        })
        .collect();
    let out_idents: Vec<&syn::Ident> = outputs.iter().map(|o| &o.0).collect();
    let out_decls: Vec<TokenStream> = outputs.iter().map(|(i, _, t, _)| quote!(#i: &mut #t)).collect();
    let ret_ty = if outputs.len() == 1 {
        outputs[0].2.clone()
    } else {
        let ts = outputs.iter().map(|o| &o.2);
        quote!((#(#ts),*))
    };
    let ret_val = if outputs.len() == 1 {
        let i = &outputs[0].0;
        quote!(#i)
    } else {
        quote!((#(#out_idents),*))
    };

    // Dims: from `usize` scalars first, then from input shapes in parameter order.
    let mut bind = Vec::new();
    for b in &kernel.dim_bindings {
        let k = dims.iter().position(|d| *d == b_name(b)).expect("a bound dim is a dim");
        let s = ident(&b_name(b), Span::call_site());
        let sname = b_name(b);
        bind.push(quote!(#rt::bind_scalar_dim(&mut __d[#k], #s, #kname, #sname)?;));
    }
    for p in &params {
        let ParamKind::Tensor { tensor, .. } = p.kind else { continue };
        let i = &p.ident;
        let pname = i.to_string();
        for (d, e) in g.tensor(tensor).shape.iter().enumerate() {
            match e {
                Expr::Var(v) => {
                    let k = dims.iter().position(|x| x == v.name()).expect("input dims are dims");
                    let dname = v.name();
                    bind.push(quote!(#rt::bind_dim(&mut __d[#k], #i.shape()[#d], #kname, #pname, #d, #dname)?;));
                }
                _ => {
                    let want = e.as_int().unwrap_or(0);
                    bind.push(quote!(#rt::check_dim(#i.shape()[#d], #want, #kname, #pname, #d)?;));
                }
            }
        }
    }
    let out_checks: Vec<TokenStream> = outputs
        .iter()
        .map(|(i, _, _, shape)| {
            let pname = i.to_string();
            let checks = shape
                .iter()
                .enumerate()
                .map(|(d, s)| quote!(#rt::check_dim(#i.shape()[#d], #s as i64, #kname, #pname, #d)?;));
            quote!(#(#checks)*)
        })
        .collect();
    let out_allocs: Vec<TokenStream> =
        outputs.iter().map(|(i, _, t, shape)| quote!(let mut #i = <#t>::try_zeros([#(#shape),*])?;)).collect();

    // The CPU kernel call: PrimFunc params in order, then its dim variables.
    let cpu = &lowered.cpu;
    let cpu_fn = tvm_core::codegen::rust::emit_rust(cpu).map_err(|e| vec![syn::Error::new(span, e.to_string())])?;
    let cpu_fn_name = tvm_core::codegen::rust::fn_ident(cpu);
    let mut cpu_args = Vec::new();
    for p in &cpu.params {
        match p {
            tvm_core::tir::Param::Tensor { buffer, is_output, .. } => {
                let i = ident(buffer.name(), span);
                cpu_args.push(if *is_output { quote!(#i.as_mut_slice()) } else { quote!(#i.as_slice()) });
            }
            tvm_core::tir::Param::Scalar(v) => {
                let i = ident(v.name(), span);
                let usize_scalar = params
                    .iter()
                    .any(|p| p.ident == v.name() && matches!(p.kind, ParamKind::Scalar { is_usize: true }));
                cpu_args.push(if usize_scalar { quote!(#i as u64) } else { quote!(#i) });
            }
        }
    }
    for v in tvm_core::codegen::rust::dim_vars(cpu) {
        let k = dims.iter().position(|d| d == v.name()).expect("kernel dims are dims");
        cpu_args.push(quote!(__d[#k]));
    }
    let empty_checks = out_idents.iter().map(|i| quote!(#i.is_empty()));

    // OpenCL: the program text is generated now; the host side runs the lowered function
    // (lowered again from the kernel's text on first use, by the same pipeline). When the
    // OpenCL code generator fails, `source("opencl")` and every OpenCL launch return its
    // message as `CompilationFailed`, without lowering anything.
    let opencl_src = tvm_core::codegen::opencl::emit_opencl(&lowered.opencl).map_err(|e| e.to_string());
    let opencl_failed = |log: &str| quote!(#error_t::CompilationFailed { target: "opencl".into(), log: #log.into() });
    let opencl_source_arm = match &opencl_src {
        Ok(text) => quote!(Ok(#text)),
        Err(log) => {
            let e = opencl_failed(log);
            quote!(Err(#e))
        }
    };
    let mut cl_args = Vec::new();
    for p in &params {
        let i = &p.ident;
        cl_args.push(match p.kind {
            ParamKind::Tensor { .. } => quote!(#rt::input_arg(#i)),
            ParamKind::Scalar { is_usize: true } => quote!(#rt::scalar_arg(#i as u64)),
            ParamKind::Scalar { is_usize: false } => quote!(#rt::scalar_arg(#i)),
        });
    }
    // Outputs are written in place through one `OutBuf` each.
    let out_bufs: Vec<syn::Ident> = (0..out_idents.len()).map(|k| format_ident!("__out{}", k)).collect();
    for b in &out_bufs {
        cl_args.push(quote!(#b.arg()));
    }
    let opencl_launch = match &opencl_src {
        Ok(text) => quote! {
            static __FUNC: ::std::sync::OnceLock<#result_t<::tvm::tir::PrimFunc, #error_t>> = ::std::sync::OnceLock::new();
            let __f = __FUNC.get_or_init(|| #rt::lower_opencl(#src)).as_ref().map_err(|e| e.clone())?;
            #(let mut #out_bufs = #rt::OutBuf::new(#out_idents);)*
            {
                let mut __args = [#(#cl_args),*];
                #rt::run_opencl(*__n, __f, #text, &mut __args)?;
            }
            #(#out_bufs.finish();)*
            Ok(())
        },
        Err(log) => {
            let e = opencl_failed(log);
            quote!(Err(#e))
        }
    };
    let lowered_cpu = tvm_core::tir::printer::print_func(&lowered.cpu);
    let lowered_cuda = tvm_core::tir::printer::print_func(&lowered.cuda);
    let lowered_opencl = tvm_core::tir::printer::print_func(&lowered.opencl);
    let source_cpu = cpu_fn.to_string();
    let docs_run = format!("Runs `{kname}` on `device`, writing into existing outputs of the right shapes.");

    Ok(quote! {
        #(#attrs)*
        #vis fn #name(#(#p_decls),*) -> #result_t<#ret_ty, #error_t> {
            // No kernel has CUDA code yet: the default device is the CPU unless
            // TVM_DEVICE asks for another.
            let __device = #rt::default_device()?;
            #name::__call(&__device, #(#p_idents),*)
        }

        #[doc = concat!("The generated code of [`", #kname, "`] and how to run it on a chosen device.")]
        #[allow(non_snake_case, unused_variables, unused_mut, clippy::all, clippy::pedantic)]
        #vis mod #name {
            #[doc = #docs_run]
            pub fn run(device: &#device_t, #(#p_decls,)* #(#out_decls),*) -> #result_t<(), #error_t> {
                let __d = __dims(#(#p_idents),*)?;
                #(#out_checks)*
                __launch(device, &__d, #(#p_idents,)* #(#out_idents),*)
            }

            /// The generated code for `"cpu"`, `"cuda"` or `"opencl"`.
            pub fn source(target: &str) -> #result_t<&'static str, #error_t> {
                match target {
                    "cpu" => Ok(#source_cpu),
                    "opencl" => #opencl_source_arm,
                    "cuda" => Err(#rt::not_built(target)),
                    other => Err(#rt::unsupported_target(other)),
                }
            }

            /// The lowered TIR for `"cpu"`, `"cuda"` or `"opencl"`.
            pub fn lowered(target: &str) -> #result_t<&'static str, #error_t> {
                match target {
                    "cpu" => Ok(#lowered_cpu),
                    "cuda" => Ok(#lowered_cuda),
                    "opencl" => Ok(#lowered_opencl),
                    other => Err(#rt::unsupported_target(other)),
                }
            }

            #[doc(hidden)]
            pub fn __call(device: &#device_t, #(#p_decls),*) -> #result_t<#ret_ty, #error_t> {
                let __d = __dims(#(#p_idents),*)?;
                #(#out_allocs)*
                __launch(device, &__d, #(#p_idents,)* #(&mut #out_idents),*)?;
                Ok(#ret_val)
            }

            fn __dims(#(#p_decls),*) -> #result_t<[i64; #nd], #error_t> {
                let mut __d: [::core::option::Option<(i64, &'static str)>; #nd] = [::core::option::Option::None; #nd];
                #(#bind)*
                let mut __out = [0i64; #nd];
                for (o, d) in __out.iter_mut().zip(__d) {
                    *o = d.map_or(0, |d| d.0);
                }
                Ok(__out)
            }

            fn __launch(device: &#device_t, __d: &[i64; #nd], #(#p_decls,)* #(#out_decls),*) -> #result_t<(), #error_t> {
                match device {
                    #device_t::Cpu => {
                        if false #(|| #empty_checks)* {
                            return Ok(());
                        }
                        #cpu_fn_name(#(#cpu_args),*)
                            .map_err(|reason| #error_t::LaunchFailed { kernel: #kname.to_string(), reason: reason.to_string() })
                    }
                    #device_t::OpenCl(__n) => {
                        #opencl_launch
                    }
                    other => {
                        other.check_available()?;
                        Err(#rt::not_built(&other.to_string()))
                    }
                }
            }

            #cpu_fn
        }
    })
}

fn b_name(b: &tvm_core::frontend::DimBinding) -> String {
    b.dim.name().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR_ADD: &str = "fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }";

    /// The expansion of `VECTOR_ADD` after `edit` changed its lowered functions, as text,
    /// and the OpenCL code generator's error on the edited OpenCL function.
    fn expand_with(edit: impl FnOnce(&mut Lowered)) -> (String, Option<String>) {
        let kernel = tvm_core::frontend::parse_kernel(VECTOR_ADD.parse().unwrap()).unwrap_or_else(|_| panic!("parses"));
        let mut lowered = lower_all(&kernel).unwrap_or_else(|_| panic!("lowers"));
        edit(&mut lowered);
        let error = tvm_core::codegen::opencl::emit_opencl(&lowered.opencl).err().map(|e| e.to_string());
        let out = expand(&kernel, &lowered, VECTOR_ADD).unwrap_or_else(|_| panic!("expands"));
        syn::parse2::<syn::File>(out.clone()).expect("the expansion parses as items");
        (out.to_string(), error)
    }

    #[test]
    fn opencl_codegen_failure_keeps_its_message() {
        let (ok, error) = expand_with(|_| {});
        assert!(error.is_none());
        assert!(ok.contains("lower_opencl") && ok.contains("run_opencl") && !ok.contains("CompilationFailed"), "{ok}");
        // A kernel launch inside a kernel, which the OpenCL code generator rejects.
        let (bad, error) = expand_with(|l| l.opencl.kernels[0].body = tvm_core::tir::Stmt::Launch { kernel: 0 });
        let message = error.expect("the OpenCL code generator fails");
        // `source("opencl")` and the OpenCL launch arm both return it, and nothing is
        // lowered or run on OpenCL.
        let failed = format!("CompilationFailed {{ target : \"opencl\" . into () , log : {message:?} . into () }}");
        assert_eq!(bad.matches(&failed).count(), 2, "{failed}\n---\n{bad}");
        assert!(!bad.contains("lower_opencl") && !bad.contains("run_opencl") && !bad.contains("OutBuf"), "{bad}");
    }
}
