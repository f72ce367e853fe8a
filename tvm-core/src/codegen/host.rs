//! The host half of a GPU-lowered [`PrimFunc`] as Rust, and its kernels' descriptions.
//!
//! What `split_host_device` leaves on the host (loops, lets and guards over dims and
//! scalars, global allocations of intermediates, and `Launch`es) becomes one Rust
//! function, compiled into the user's crate beside the kernel's other code:
//!
//! ```text
//! fn <name>(__m: &gpu::Module, <&gpu::Buffer per tensor param>, <scalar params>, <i64 per dim>)
//!     -> Result<(), Error>
//! ```
//!
//! Tensor and scalar parameters come in `f.params` order, then the dims in
//! [`dim_vars`] order, as for the CPU function. Each launch
//! computes its grid and block from the dims with the TIR's integer semantics (wrapping
//! arithmetic, `/` truncating; a division with no value is an `Err`) and calls
//! `Module::launch` with the kernel's arguments; the runtime only checks limits and
//! enqueues. The size of each intermediate is computed with checked arithmetic (an
//! overflow is an `Err`, never a small buffer). A host body this cannot express (an
//! undefined name, mismatched types) is a `CodegenError`, not Rust that fails to compile. The kernels themselves are described by a `static` [`Program`] (name, text,
//! parameter kinds, shared memory, block shape): [`program_tokens`] writes it from
//! [`kernel_infos`], which the device launcher of tests and tools
//! ([`crate::launch`]) uses too.
//!
//! [`Program`]: tvm_runtime::gpu::Program

use super::rust::expr::{binop, is_scalar_operator, operands, scalar_operator};
use super::rust::names::Names;
use super::rust::{dim_vars, scalar_ty, unsupported};
use super::CodegenError;
use crate::dtype::{DType, ScalarKind};
use crate::tir::visit::contains_check;
use crate::tir::{BinOp, Buffer, BufferId, CheckSite, Expr, Param, PrimFunc, Scope, Stmt, Var, VarId};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashSet;
use tvm_runtime::gpu::{Backend, BinaryFormat, ParamKind};

type R<T> = Result<T, CodegenError>;

/// What the runtime needs to know of one kernel (a `gpu::KernelDesc`, owned).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelInfo {
    pub name: String,
    /// Buffer parameters (`Kernel::buffer_args`), then scalars (`Kernel::scalar_args`).
    pub params: Vec<ParamKind>,
    /// Bytes of shared memory the kernel declares.
    pub shared_bytes: u64,
    /// The block shape, when every extent is a constant.
    pub block: Option<[u32; 3]>,
}

/// The description of every kernel of `f`, in launch-index order.
pub fn kernel_infos(f: &PrimFunc) -> Vec<KernelInfo> {
    let shared = crate::passes::verify_gpu_memory::verify_gpu_memory(f).1;
    f.kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut params: Vec<ParamKind> = k.buffer_args.iter().map(|b| ParamKind::Buffer(b.dtype())).collect();
            params.extend(k.scalar_args.iter().map(|v| ParamKind::Scalar(kernel_scalar_type(f, v.dtype()))));
            if contains_check(&k.body) {
                params.push(ParamKind::Buffer(DType::I32)); // the fault buffer
            }
            let consts: Vec<Option<u32>> =
                k.block.iter().map(|e| e.as_int().and_then(|v| u32::try_from(v).ok()).filter(|&v| v >= 1)).collect();
            let block = match consts.as_slice() {
                [Some(x), Some(y), Some(z)] => Some([*x, *y, *z]),
                _ => None,
            };
            KernelInfo { name: k.name.clone(), params, shared_bytes: shared.get(i).copied().unwrap_or(0), block }
        })
        .collect()
}

/// The type a kernel of `f` takes a scalar of type `d` as: itself, except that WGSL
/// kernels take 64-bit integers as `i32` (see `codegen::wgsl::narrow`).
fn kernel_scalar_type(f: &PrimFunc, d: DType) -> DType {
    if f.target.kind == crate::TargetKind::WebGpu && crate::arith::narrow::wide(d) {
        DType::I32
    } else {
        d
    }
}

/// `static <ident>: <rt>::gpu::Program = ...;` for `f`'s kernels printed as `source`,
/// with `binaries` (outputs of the build helper for this very source, see
/// [`crate::artifact::prebuilt`]) embedded by `include_bytes!` of their absolute paths.
pub fn program_tokens(
    f: &PrimFunc,
    backend: Backend,
    source: &str,
    binaries: &[crate::artifact::Artifact],
    ident: &Ident,
    rt: &TokenStream,
) -> TokenStream {
    let backend = match backend {
        Backend::Cuda => quote!(#rt::gpu::Backend::Cuda),
        Backend::WebGpu => quote!(#rt::gpu::Backend::WebGpu),
        _ => quote!(#rt::gpu::Backend::OpenCl),
    };
    let function = &f.name;
    let kernels = kernel_infos(f).into_iter().map(|k| {
        let name = &k.name;
        let params = k.params.iter().map(|p| match p {
            ParamKind::Buffer(d) => {
                let d = dtype_tokens(*d, rt);
                quote!(#rt::gpu::ParamKind::Buffer(#d))
            }
            ParamKind::Scalar(d) => {
                let d = dtype_tokens(*d, rt);
                quote!(#rt::gpu::ParamKind::Scalar(#d))
            }
        });
        let shared = k.shared_bytes;
        let block = match k.block {
            Some([x, y, z]) => quote!(::core::option::Option::Some([#x, #y, #z])),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            #rt::gpu::KernelDesc { name: #name, params: &[#(#params),*], shared_bytes: #shared, block: #block }
        }
    });
    // A path that is not UTF-8 cannot be written in `include_bytes!`: that binary is
    // left out (the runtime then uses another, or NVRTC).
    let binaries = binaries.iter().filter_map(|b| {
        let format = match b.format {
            BinaryFormat::Ptx => quote!(#rt::gpu::BinaryFormat::Ptx),
            BinaryFormat::Cubin => quote!(#rt::gpu::BinaryFormat::Cubin),
        };
        let (arch, key, path) = (b.arch, &b.key, b.path.to_str()?);
        Some(quote!(#rt::gpu::Binary { format: #format, arch: #arch, key: #key, bytes: ::core::include_bytes!(#path) }))
    });
    let source = super::text_literal(source);
    quote! {
        static #ident: #rt::gpu::Program = #rt::gpu::Program {
            backend: #backend,
            function: #function,
            source: #source,
            kernels: &[#(#kernels),*],
            binaries: &[#(#binaries),*],
        };
    }
}

/// `<rt>::DType::F32` and so on.
fn dtype_tokens(d: DType, rt: &TokenStream) -> TokenStream {
    let name = format_ident!("{}", d.element().name().to_ascii_uppercase());
    quote!(#rt::DType::#name)
}

/// The host function of `f` (see the module docs), named `name`, calling the runtime
/// at `rt` (`::tvm::__rt`).
pub fn emit_host(f: &PrimFunc, name: &Ident, rt: &TokenStream) -> R<TokenStream> {
    if f.kernels.is_empty() && !matches!(f.body, Stmt::NoOp) {
        return Err(unsupported(format!("host code of the function `{}`, which has no kernels", f.name)));
    }
    let mut e = HostEmitter { f, rt, names: Names::default(), vars: HashSet::new(), buffers: HashSet::new() };
    let mut params = vec![quote!(__m: &#rt::gpu::Module)];
    for p in &f.params {
        params.push(match p {
            Param::Tensor { buffer, .. } => {
                e.buffers.insert(buffer.id());
                let id = e.names.buffer(buffer);
                quote!(#id: &#rt::gpu::Buffer)
            }
            Param::Scalar(v) => {
                let t = rust_type(v.dtype(), rt)?;
                let id = e.define_var(v);
                quote!(#id: #t)
            }
        });
    }
    for d in dim_vars(f) {
        let id = e.define_var(&d);
        params.push(quote!(#id: i64));
    }
    let body = e.stmt(&f.body)?;
    // Kernels that check values share one fault buffer; the first failure becomes the
    // function's error after the launches.
    let (fault, report) = if f.kernels.iter().any(|k| contains_check(&k.body)) {
        let sites = sites_tokens(&f.checks, rt);
        let fname = &f.name;
        (
            quote!(let __fault = &__m.fault_buffer()?;),
            quote! {
                if let ::core::option::Option::Some(__f) = __m.read_fault(__fault)? {
                    const __SITES: &[#rt::CheckSite] = &#sites;
                    return ::core::result::Result::Err(#rt::check_failed(#fname, __SITES, __f));
                }
            },
        )
    } else {
        (quote!(), quote!())
    };
    Ok(quote! {
        #[allow(unused_variables, unused_mut, unused_braces, unused_parens, non_snake_case, clippy::all)]
        fn #name(#(#params),*) -> ::core::result::Result<(), #rt::Error> {
            #fault
            #body
            #report
            ::core::result::Result::Ok(())
        }
    })
}

/// The table of a function's check sites, as `[<rt>::CheckSite; N]` (see
/// `tvm_runtime::__rt::check_failed`).
pub fn sites_tokens(checks: &[CheckSite], rt: &TokenStream) -> TokenStream {
    let sites = checks.iter().map(|c| match c {
        CheckSite::Index { tensor, dim, index } => {
            quote!(#rt::CheckSite::Index { tensor: #tensor, dim: #dim, index: #index })
        }
        CheckSite::Divisor { divisor } => quote!(#rt::CheckSite::Divisor { divisor: #divisor }),
    });
    quote!([#(#sites),*])
}

/// The Rust type of a scalar parameter of type `d`.
fn rust_type(d: DType, rt: &TokenStream) -> R<TokenStream> {
    Ok(match (d.kind, d.bits) {
        (ScalarKind::Float, 16) => quote!(#rt::f16),
        (ScalarKind::BFloat, _) => quote!(#rt::bf16),
        _ => scalar_ty(d)?,
    })
}

struct HostEmitter<'a> {
    f: &'a PrimFunc,
    rt: &'a TokenStream,
    names: Names,
    /// Variables and buffers defined where the code being emitted runs: an expression
    /// naming another one is an error here, not Rust that does not compile.
    vars: HashSet<VarId>,
    buffers: HashSet<BufferId>,
}

impl HostEmitter<'_> {
    fn define_var(&mut self, v: &Var) -> Ident {
        self.vars.insert(v.id());
        self.names.var(v)
    }

    fn var(&mut self, v: &Var) -> R<Ident> {
        if !self.vars.contains(&v.id()) {
            return Err(unsupported(format!("the host code naming `{}`, which is not defined there", v.name())));
        }
        Ok(self.names.var(v))
    }

    fn buffer(&mut self, b: &Buffer) -> R<Ident> {
        if !self.buffers.contains(&b.id()) {
            return Err(unsupported(format!("a launch with buffer `{}`, which the host has no memory for", b.name())));
        }
        Ok(self.names.buffer(b))
    }

    fn stmt(&mut self, s: &Stmt) -> R<TokenStream> {
        Ok(match s {
            Stmt::Seq(v) => {
                let parts = v.iter().map(|s| self.stmt(s)).collect::<R<Vec<_>>>()?;
                quote!(#(#parts)*)
            }
            Stmt::NoOp => quote!(),
            Stmt::For { var, min, extent, body, .. } => {
                let t = scalar_ty(var.dtype())?;
                if !var.dtype().is_integer() {
                    return Err(unsupported(format!("a host loop over `{}` of type {}", var.name(), var.dtype())));
                }
                let (lo, n) = (self.int_as(min, var.dtype())?, self.int_as(extent, var.dtype())?);
                let id = self.define_var(var);
                let body = self.stmt(body)?;
                // The loop variable takes `lo + k` for `k` in `0..n`, wrapping as TIR does.
                quote! {{
                    let (__lo, __n): (#t, #t) = (#lo, #n);
                    let mut __k: #t = 0;
                    while __k < __n {
                        let #id: #t = __lo.wrapping_add(__k);
                        #body
                        __k += 1;
                    }
                }}
            }
            Stmt::Let { var, value, body } => {
                if value.dtype() != var.dtype() {
                    return Err(unsupported(format!(
                        "a host `let {}: {}` of a value of type {}",
                        var.name(),
                        var.dtype(),
                        value.dtype()
                    )));
                }
                let x = self.expr(value)?;
                let t = rust_type(var.dtype(), self.rt)?;
                let id = self.define_var(var);
                let body = self.stmt(body)?;
                quote!({ let #id: #t = #x; #body })
            }
            Stmt::If { cond, then, otherwise } => {
                if cond.dtype() != DType::BOOL {
                    return Err(unsupported(format!("a host condition of type {}", cond.dtype())));
                }
                let c = self.expr(cond)?;
                let t = self.stmt(then)?;
                match otherwise {
                    Some(o) => {
                        let o = self.stmt(o)?;
                        quote!(if #c { #t } else { #o })
                    }
                    None => quote!(if #c { #t }),
                }
            }
            Stmt::Allocate { buffer, extent, body } if buffer.scope() == Scope::Global => {
                let n = self.checked(extent)?;
                let bytes = buffer.dtype().bytes();
                let name = buffer.name();
                self.buffers.insert(buffer.id());
                let id = self.names.buffer(buffer);
                let body = self.stmt(body)?;
                // A reference, as the parameters are; the buffer is dropped (back to the
                // pool) at the end of its block, and the queue is in order, so its next
                // user runs after the kernels launched here.
                quote!({ let #id = &__m.alloc(#name, #n, #bytes)?; #body })
            }
            Stmt::Launch { kernel } => self.launch(*kernel)?,
            other => {
                return Err(unsupported(format!(
                    "`{}` in the host code of a GPU function",
                    crate::tir::printer::print_stmt(other).trim()
                )))
            }
        })
    }

    fn launch(&mut self, index: usize) -> R<TokenStream> {
        let rt = self.rt;
        let k = self.f.kernels.get(index).ok_or_else(|| unsupported(format!("a launch of missing kernel {index}")))?;
        let grid = k.grid.iter().map(|e| self.int_as(e, DType::I64)).collect::<R<Vec<_>>>()?;
        let block = k.block.iter().map(|e| self.int_as(e, DType::I64)).collect::<R<Vec<_>>>()?;
        let mut args = Vec::new();
        let mut narrowed = false;
        for b in &k.buffer_args {
            let id = self.buffer(b)?;
            args.push(quote!(#rt::gpu::KernelArg::Buffer(#id)));
        }
        for v in &k.scalar_args {
            let id = self.var(v)?;
            if kernel_scalar_type(self.f, v.dtype()) != v.dtype() {
                // A WGSL kernel's 64-bit integer scalar, as the `i32` it computes with,
                // checked against the bound its 32-bit arithmetic is proved exact for.
                let limit = crate::codegen::wgsl::kernel_scalar_limit(self.f, k)?;
                let (kname, pname) = (&k.name, v.name());
                args.push(quote!(#rt::gpu::KernelArg::Scalar(#rt::gpu::Scalar::I32(
                    #rt::narrow_scalar(#id as i128, #limit, #kname, #pname)?
                ))));
                narrowed = true;
                continue;
            }
            let variant = scalar_variant(v.dtype())?;
            args.push(quote!(#rt::gpu::KernelArg::Scalar(#rt::gpu::Scalar::#variant(#id))));
        }
        if contains_check(&k.body) {
            args.push(quote!(#rt::gpu::KernelArg::Buffer(__fault)));
        }
        let i = Literal::usize_unsuffixed(index);
        // SAFETY (of the emitted `unsafe`): the program is this function's own, printed
        // from the kernels the description was made from, and every buffer is a parameter
        // whose shape the caller checked or an intermediate allocated here at the size
        // the lowering gave it: the kernel touches no element outside them.
        if narrowed {
            // A grid with a zero extent launches nothing, whatever the other dims are (as
            // `Module::launch` decides): only a launch checks the narrowed scalars.
            return Ok(quote! {{
                let __grid: [i64; 3] = [#(#grid),*];
                if !__grid.contains(&0) {
                    unsafe { __m.launch(#i, __grid, [#(#block),*], &[#(#args),*]) }?;
                }
            }});
        }
        Ok(quote! {
            unsafe { __m.launch(#i, [#(#grid),*], [#(#block),*], &[#(#args),*]) }?;
        })
    }

    /// An integer host expression as a value of the integer type `to`.
    fn int_as(&mut self, e: &Expr, to: DType) -> R<TokenStream> {
        let d = e.dtype();
        if !d.is_integer() || !d.is_scalar() {
            return Err(unsupported(format!(
                "the host expression `{}` of type {d}",
                crate::tir::printer::print_expr(e)
            )));
        }
        let x = self.expr(e)?;
        if d == to {
            return Ok(x);
        }
        let t = scalar_ty(to)?;
        Ok(quote!((#x as #t)))
    }

    /// The element count of an allocation as an `Option<i64>`: `None` where the
    /// arithmetic on the dims overflows (sums, differences and products are checked;
    /// the rest of the expression is evaluated as usual).
    fn checked(&mut self, e: &Expr) -> R<TokenStream> {
        let op = match e {
            Expr::Binary { op: BinOp::Add, .. } => Some(quote!(checked_add)),
            Expr::Binary { op: BinOp::Sub, .. } => Some(quote!(checked_sub)),
            Expr::Binary { op: BinOp::Mul, .. } => Some(quote!(checked_mul)),
            _ => None,
        };
        match (e, op) {
            (Expr::Binary { a, b, .. }, Some(op)) if e.dtype() == DType::I64 => {
                let (x, y) = (self.checked(a)?, self.checked(b)?);
                Ok(quote!(#x.and_then(|__a: i64| #y.and_then(|__b: i64| __a.#op(__b)))))
            }
            _ => {
                let x = self.int_as(e, DType::I64)?;
                Ok(quote!(::core::option::Option::Some(#x)))
            }
        }
    }

    /// A scalar host expression, with the TIR's semantics.
    fn expr(&mut self, e: &Expr) -> R<TokenStream> {
        let d = e.dtype();
        let rt = self.rt;
        let function = &self.f.name;
        if !d.is_scalar() {
            return Err(unsupported(format!("the vector host expression `{}`", crate::tir::printer::print_expr(e))));
        }
        Ok(match e {
            Expr::Var(v) => {
                let id = self.var(v)?;
                quote!(#id)
            }
            Expr::Binary { op: op @ (BinOp::Div | BinOp::Mod), a, b } if d.is_integer() => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                match b.as_int() {
                    // A constant other than 0 and -1: the division always has a value.
                    Some(c) if c != 0 && c != -1 => binop(*op, d, x, y),
                    // Else one with no value (by zero, `MIN / -1`) is an error, as in TIR.
                    _ => {
                        let (f, sym) =
                            if *op == BinOp::Div { (quote!(checked_div), "/") } else { (quote!(checked_rem), "%") };
                        quote!(#rt::checked(#x.#f(#y), #function, #sym)?)
                    }
                }
            }
            // Host code passes f16 and bf16 values through and computes nothing with them.
            Expr::Cast { dtype, value } if is_half(value.dtype()) || is_half(*dtype) => {
                return Err(unsupported(format!("the host expression `{}`", crate::tir::printer::print_expr(e))));
            }
            e if is_scalar_operator(e) => {
                let xs = operands(e).into_iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                scalar_operator(e, xs)?
            }
            _ => {
                return Err(unsupported(format!("the host expression `{}`", crate::tir::printer::print_expr(e))));
            }
        })
    }
}

/// Whether `d` is f16 or bf16 (host code passes them through, and computes nothing with
/// them).
fn is_half(d: DType) -> bool {
    d.bits == 16 && d.is_float()
}

/// The `gpu::Scalar` variant of a scalar kernel argument of type `d`.
fn scalar_variant(d: DType) -> R<Ident> {
    let name = match (d.kind, d.bits) {
        (ScalarKind::Bool, _) => "Bool",
        (ScalarKind::Int, 8) => "I8",
        (ScalarKind::Int, 16) => "I16",
        (ScalarKind::Int, 32) => "I32",
        (ScalarKind::Int, 64) => "I64",
        (ScalarKind::UInt, 8) => "U8",
        (ScalarKind::UInt, 16) => "U16",
        (ScalarKind::UInt, 32) => "U32",
        (ScalarKind::UInt, 64) => "U64",
        (ScalarKind::Float, 16) => "F16",
        (ScalarKind::BFloat, 16) => "BF16",
        (ScalarKind::Float, 32) => "F32",
        (ScalarKind::Float, 64) => "F64",
        _ => return Err(unsupported(format!("a kernel argument of type {d}"))),
    };
    Ok(format_ident!("{}", name))
}
