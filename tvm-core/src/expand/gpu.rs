//! A GPU target of the kernel: its device program (a `static` description with the
//! program's text) and its host code as Rust (`codegen::host`), and the match arms of the
//! module's `source`, `run` and `run_on` that use them. When code generation fails for
//! the target, the arms return its message as `Error::CompilationFailed` instead, and the
//! rest of the kernel still works on its other targets.

use super::paths;
use super::signature::{param_name, Signature};
use crate::codegen::host::{emit_host, program_tokens};
use crate::tir::PrimFunc;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use tvm_runtime::gpu::Backend;

/// One GPU target's generated code, or why there is none.
pub struct GpuTarget<'f> {
    backend: Backend,
    /// The lowered function; `None` when the backend is off in this build.
    f: Option<&'f PrimFunc>,
    code: Result<Code, String>,
    /// The lowered TIR as text (empty when the backend is off).
    lowered: String,
}

struct Code {
    /// The `static` program and the host function.
    items: TokenStream,
    program: syn::Ident,
    host: syn::Ident,
    /// WebGPU: the program in the Metal Shading Language (naga's translation of the WGSL,
    /// as wgpu's Metal backend makes it), or why there is none; `None` for the other
    /// backends, and in a compiler built without naga.
    metal: Option<Result<String, String>>,
}

/// What a GPU target's code generation makes as text, with no token or span in it, so
/// that it can be made on a thread of its own while the expansion's thread emits the CPU
/// code: the device program (with its MSL for WebGPU) or why there is none, and the
/// lowered TIR as text.
pub struct Texts {
    program: Result<(String, Option<Result<String, String>>), String>,
    lowered: String,
}

/// The [`Texts`] of `f`, lowered for `backend`.
pub fn texts(f: &PrimFunc, backend: Backend) -> Texts {
    let program = (|| {
        let source = match backend {
            Backend::OpenCl => crate::codegen::opencl::emit_opencl(f),
            Backend::Cuda => crate::codegen::cuda::emit_cuda(f),
            Backend::WebGpu => crate::codegen::wgsl::emit_wgsl(f),
            _ => return Err("code generation for this target is not built yet".to_string()),
        }
        .map_err(|e| e.to_string())?;
        let metal = match backend {
            Backend::WebGpu => metal_of(&source)?,
            _ => None,
        };
        Ok((source, metal))
    })();
    Texts { program, lowered: crate::tir::printer::print_func(f) }
}

impl<'f> GpuTarget<'f> {
    /// The code of `f` (lowered for `backend`) from its [`Texts`], or none when the backend
    /// is off (`None`).
    pub fn new(lowered: Option<(&'f PrimFunc, Texts)>, backend: Backend) -> GpuTarget<'f> {
        match lowered {
            Some((f, t)) => Self::generate(f, backend, "", t),
            None => GpuTarget { backend, f: None, code: Err(String::new()), lowered: String::new() },
        }
    }

    /// [`GpuTarget::new`] with `suffix` on the names of its items (`__OPENCL_TUNED`,
    /// `__host_opencl_tuned`), so a second variant of the kernel can sit next to it.
    pub fn variant(f: &'f PrimFunc, backend: Backend, suffix: &str) -> GpuTarget<'f> {
        Self::generate(f, backend, suffix, texts(f, backend))
    }

    fn generate(f: &'f PrimFunc, backend: Backend, suffix: &str, texts: Texts) -> GpuTarget<'f> {
        let rt = paths::rt();
        let upper = backend.name().to_ascii_uppercase();
        let (program, host) = (
            format_ident!("__{}{}", upper, suffix.to_ascii_uppercase()),
            format_ident!("__host_{}{}", backend.name(), suffix),
        );
        let code = (|| {
            let (source, metal) = texts.program?;
            let host_fn = emit_host(f, &host, &rt).map_err(|e| e.to_string())?;
            // CUDA binaries a build script compiled from this very source (by key).
            let binaries = match backend {
                Backend::Cuda => crate::artifact::prebuilt_from_env(&source),
                _ => Vec::new(),
            };
            let static_item = program_tokens(f, backend, &source, &binaries, &program, &rt);
            Ok(Code { items: quote!(#static_item #host_fn), program, host, metal })
        })();
        GpuTarget { backend, f: Some(f), code, lowered: texts.lowered }
    }

    /// Whether code generation succeeded for this target.
    pub fn is_built(&self) -> bool {
        self.code.is_ok()
    }

    /// The items the module holds for this target (nothing when code generation failed).
    pub fn items(&self) -> TokenStream {
        self.code.as_ref().map(|c| c.items.clone()).unwrap_or_default()
    }

    /// Whether the backend is off in this build (nothing was lowered for it).
    pub fn is_off(&self) -> bool {
        self.f.is_none()
    }

    /// The value of `source` or `lowered` for a backend that is off.
    pub fn off_target(&self) -> TokenStream {
        let (rt, target) = (paths::rt(), self.backend.name());
        quote!(::core::result::Result::Err(#rt::unsupported_target(#target)))
    }

    /// What a launch returns without code: the code generator's message, or, for a
    /// backend that is off, the device is unavailable to this kernel.
    fn failed(&self, log: &str) -> TokenStream {
        let (error_t, target) = (paths::error(), self.backend.name());
        if self.is_off() {
            let dev = paths::device_param();
            let name = match self.backend {
                Backend::Cuda => "CUDA",
                Backend::WebGpu => "WebGPU",
                _ => "OpenCL",
            };
            let reason = format!("this build has no {name} code: the `tvm` crate's feature `{target}` is off");
            return quote!(::core::result::Result::Err(#error_t::DeviceUnavailable { device: #dev.to_string(), reason: #reason.into() }));
        }
        quote!(::core::result::Result::Err(#error_t::CompilationFailed { target: #target.into(), log: #log.into() }))
    }

    /// The program's prebuilt binaries (`&'static [gpu::Binary]`; empty when code
    /// generation failed).
    pub fn binaries_value(&self) -> TokenStream {
        match &self.code {
            Ok(c) => {
                let program = &c.program;
                quote!(#program.binaries)
            }
            Err(_) => quote!(&[]),
        }
    }

    /// `source(target)`'s value for this target.
    pub fn source_value(&self) -> TokenStream {
        match &self.code {
            Ok(c) => {
                let program = &c.program;
                quote!(::core::result::Result::Ok(#program.source))
            }
            Err(_) if self.is_off() => self.off_target(),
            Err(log) => self.failed(log),
        }
    }

    /// `source("metal")`'s value (for the WebGPU target): the MSL, or why there is none.
    pub fn metal_value(&self) -> TokenStream {
        let (rt, error_t) = (paths::rt(), paths::error());
        match &self.code {
            Ok(Code { metal: Some(Ok(text)), .. }) => {
                let text = crate::codegen::text_literal(text);
                quote!(::core::result::Result::Ok(#text))
            }
            Ok(Code { metal: Some(Err(log)), .. }) => {
                quote!(::core::result::Result::Err(#error_t::CompilationFailed { target: "metal".into(), log: #log.into() }))
            }
            Ok(Code { metal: None, .. }) => quote!(::core::result::Result::Err(#rt::unsupported_target("metal"))),
            Err(_) if self.is_off() => quote!(::core::result::Result::Err(#rt::unsupported_target("metal"))),
            Err(log) => {
                quote!(::core::result::Result::Err(#error_t::CompilationFailed { target: "metal".into(), log: #log.into() }))
            }
        }
    }

    /// `lowered(target)`'s value for this target.
    pub fn lowered_value(&self) -> TokenStream {
        match self.f {
            Some(_) => {
                let text = crate::codegen::text_literal(&self.lowered);
                quote!(::core::result::Result::Ok(#text))
            }
            None => self.off_target(),
        }
    }

    /// The body of `run`'s arm for this target (`device`, host tensors, dims `__d` in
    /// scope): load the program, upload the inputs, run the host code, download the
    /// outputs.
    pub fn run_arm(&self, sig: &Signature) -> TokenStream {
        let c = match &self.code {
            Ok(c) => c,
            Err(log) => return self.failed(log),
        };
        let dev = paths::device_param();
        let (rt, program, host) = (paths::rt(), &c.program, &c.host);
        let buf = |i: &syn::Ident, is_output: bool| {
            format_ident!("__{}_{}", if is_output { "o" } else { "b" }, i.to_string().trim_start_matches("r#"))
        };
        let inputs =
            sig.params.iter().filter(|p| matches!(p.kind, super::signature::ParamKind::Tensor { .. })).map(|p| {
                let (i, b) = (&p.ident, buf(&p.ident, false));
                quote!(let #b = __m.upload(#i.as_slice())?;)
            });
        let outputs = sig.outputs.iter().map(|o| {
            let (i, b) = (&o.ident, buf(&o.ident, true));
            quote!(let #b = __m.output(#i.as_slice())?;)
        });
        let downloads = sig.outputs.iter().map(|o| {
            let (i, b) = (&o.ident, buf(&o.ident, true));
            quote!(__m.download(&#b, #i.as_mut_slice())?;)
        });
        let args = sig.call_args(self.f.expect("code implies a function"), |i, is_output| {
            let b = buf(i, is_output);
            quote!(&#b)
        });
        quote! {{
            let __m = #rt::gpu::load(#dev, &#program)?;
            #(#inputs)*
            #(#outputs)*
            #host(&__m, #(#args),*)?;
            #(#downloads)*
            ::core::result::Result::Ok(())
        }}
    }

    /// The body of `run_on`'s arm for this target (`device`, device tensors, `__d` in
    /// scope): each tensor must live on `device`.
    pub fn run_on_arm(&self, kernel_name: &str, sig: &Signature) -> TokenStream {
        let c = match &self.code {
            Ok(c) => c,
            Err(log) => return self.failed(log),
        };
        let dev = paths::device_param();
        let (rt, program, host) = (paths::rt(), &c.program, &c.host);
        // Every tensor is checked to live on the device before the program is loaded (a
        // build error must not hide a tensor on the wrong device).
        let mut lets = Vec::new();
        let args = sig.call_args(self.f.expect("code implies a function"), |i, _| {
            let (name, local) = (param_name(i), format_ident!("__t{}", lets.len()));
            lets.push(quote!(let #local = #i.buffer_for(#dev, #kernel_name, #name)?;));
            quote!(#local)
        });
        quote! {{
            #(#lets)*
            let __m = #rt::gpu::load(#dev, &#program)?;
            #host(&__m, #(#args),*)
        }}
    }
}

/// The MSL of the WGSL program `wgsl`, which naga first validates as wgpu will (an
/// invalid program is an error of the WebGPU target: `Err` here).
#[cfg(feature = "naga")]
fn metal_of(wgsl: &str) -> Result<Option<Result<String, String>>, String> {
    let msl = crate::codegen::wgsl::naga_check::validated_msl(wgsl).map_err(|e| e.to_string())?;
    Ok(Some(msl.map_err(|e| e.to_string())))
}

/// Without naga (a compiler built without its feature `naga`, which the `tvm` crate's
/// `webgpu` turns on) there is no MSL, and nothing validates the WGSL before wgpu does.
#[cfg(not(feature = "naga"))]
fn metal_of(_wgsl: &str) -> Result<Option<Result<String, String>>, String> {
    Ok(None)
}
