//! The typed function and its module, put together from the parts:
//!
//! ```text
//! pub fn NAME(inputs..) -> Result<outputs, Error>        on the default device (__rt::default_device)
//! pub mod NAME {
//!     pub fn run(device, inputs.., &mut outputs..)        host tensors
//!     pub fn run_on(device, device inputs.., &mut device outputs..)
//!     pub fn call_on(device, device inputs..) -> Result<device outputs, Error>
//!     pub fn source(target) / lowered(target)
//!     #[doc(hidden)] pub fn __cuda_binaries()             what a build script prebuilt
//!     fn __dims(..); fn __launch(..); fn __launch_on(..)
//!     <the CPU function>; per GPU target: static __OPENCL, fn __host_opencl(..) (and
//!     __CUDA, __WEBGPU)
//! }
//! ```

use super::gpu::GpuTarget;
use super::signature::{ParamKind, Signature};
use super::{cpu, dims, paths, Lowered};
use crate::frontend::Kernel;
use proc_macro2::TokenStream;
use quote::quote;
use tvm_runtime::gpu::Backend;

/// The typed function and its module.
pub fn expand(kernel: &Kernel, lowered: &Lowered) -> Result<TokenStream, Vec<syn::Error>> {
    let sig = Signature::of(kernel);
    let name = &sig.name;
    let kname = &kernel.name;
    let (vis, attrs) = (&kernel.vis, &kernel.attrs);
    let dev = paths::device_param();
    let (tensor_t, dtensor_t, device_t, error_t, result_t, rt) =
        (paths::tensor(), paths::device_tensor(), paths::device(), paths::error(), paths::result(), paths::rt());
    let nd = sig.dims.len();

    // Parameters with host tensors and with device tensors; outputs alike.
    let decls = |wrapper: &TokenStream| -> Vec<TokenStream> {
        sig.params
            .iter()
            .map(|p| {
                let i = &p.ident;
                match &p.kind {
                    ParamKind::Tensor { elem, rank } => quote!(#i: &#wrapper<#elem, #rank>),
                    ParamKind::Scalar { ty, .. } => quote!(#i: #ty),
                }
            })
            .collect()
    };
    let out_types = |wrapper: &TokenStream| -> Vec<TokenStream> {
        sig.outputs
            .iter()
            .map(|o| {
                let (e, r) = (&o.elem, o.rank);
                quote!(#wrapper<#e, #r>)
            })
            .collect()
    };
    let (p_decls, dp_decls) = (decls(&tensor_t), decls(&dtensor_t));
    let (out_tys, dout_tys) = (out_types(&tensor_t), out_types(&dtensor_t));
    let p_idents: Vec<&syn::Ident> = sig.params.iter().map(|p| &p.ident).collect();
    let out_idents: Vec<&syn::Ident> = sig.outputs.iter().map(|o| &o.ident).collect();
    let out_decls: Vec<TokenStream> = out_idents.iter().zip(&out_tys).map(|(i, t)| quote!(#i: &mut #t)).collect();
    let dout_decls: Vec<TokenStream> = out_idents.iter().zip(&dout_tys).map(|(i, t)| quote!(#i: &mut #t)).collect();
    let tuple = |v: &[TokenStream]| if v.len() == 1 { v[0].clone() } else { quote!((#(#v),*)) };
    let (ret_ty, dret_ty) = (tuple(&out_tys), tuple(&dout_tys));
    let ret_val = if out_idents.len() == 1 {
        let i = out_idents[0];
        quote!(#i)
    } else {
        quote!((#(#out_idents),*))
    };
    // Outputs are allocated fallibly: a size that overflows or memory the device lacks is
    // `OutOfMemory` naming the output and its byte count.
    let alloc_err = |o: &super::signature::OutputInfo, device: TokenStream| {
        let (e, what) = (&o.elem, format!("output `{}`", o.ident));
        quote!(|__e| #rt::alloc_failed(__e, &#device, #kname, #what, &__shape, ::core::mem::size_of::<#e>()))
    };
    let out_allocs: Vec<TokenStream> = sig
        .outputs
        .iter()
        .zip(&out_tys)
        .map(|(o, t)| {
            let (i, shape) = (&o.ident, &o.shape);
            let err = alloc_err(o, quote!("cpu"));
            quote!(let mut #i = { let __shape = [#(#shape),*]; <#t>::try_zeros(__shape).map_err(#err)? };)
        })
        .collect();
    let dout_allocs = sig.outputs.iter().zip(&dout_tys).map(|(o, t)| {
        let (i, shape) = (&o.ident, &o.shape);
        let err = alloc_err(o, quote!(#dev.to_string()));
        quote!(let mut #i = { let __shape = [#(#shape),*]; <#t>::uninit_for_output(#dev, __shape).map_err(#err)? };)
    });

    let (dims_fn, dims_args) = dims::dims_fn(kernel, &sig);
    let out_checks = dims::output_checks(kernel, &sig);

    // The CPU kernel, on host tensors and on device tensors (host memory on the CPU),
    // emitted as tokens on this thread while the GPU targets' programs (naga validates
    // and translates the WGSL) and the lowered TIR's text are made on threads of their
    // own: they hold no token or span.
    let gpu_fns = [
        (lowered.opencl.as_ref(), Backend::OpenCl),
        (lowered.cuda.as_ref(), Backend::Cuda),
        (lowered.webgpu.as_ref(), Backend::WebGpu),
    ];
    let (cpu_code, [opencl_texts, cuda_texts, webgpu_texts], lowered_cpu) = std::thread::scope(|s| {
        let texts = gpu_fns.map(|(f, b)| f.map(|f| s.spawn(move || super::gpu::texts(f, b))));
        let cpu_text = s.spawn(|| crate::tir::printer::print_func(&lowered.cpu));
        let cpu_code = cpu::function(&lowered.cpu, kernel, sig.name.span());
        fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        }
        (cpu_code, texts.map(|h| h.map(join)), join(cpu_text))
    });
    let (cpu_fn, cpu_name) = cpu_code?;
    let cpu_run = cpu::call(kname, &sig, &lowered.cpu, &cpu_name, |i, out| {
        if out {
            quote!(#i.as_mut_slice())
        } else {
            quote!(#i.as_slice())
        }
    });
    let cpu_run_on = cpu::call(kname, &sig, &lowered.cpu, &cpu_name, |i, out| {
        let n = super::signature::param_name(i);
        if out {
            quote!(#i.host_for_mut(#kname, #n)?)
        } else {
            quote!(#i.host_for(#kname, #n)?)
        }
    });

    // The GPU targets with a backend.
    let opencl = GpuTarget::new(lowered.opencl.as_ref().zip(opencl_texts), Backend::OpenCl);
    let (mut opencl_items, opencl_source) = (opencl.items(), opencl.source_value());
    let (mut opencl_run, mut opencl_run_on) = (opencl.run_arm(&sig), opencl.run_on_arm(kname, &sig));
    let cuda = GpuTarget::new(lowered.cuda.as_ref().zip(cuda_texts), Backend::Cuda);
    let cuda_built = cuda.is_built();
    let (mut cuda_items, cuda_source) = (cuda.items(), cuda.source_value());
    let (mut cuda_run, mut cuda_run_on) = (cuda.run_arm(&sig), cuda.run_on_arm(kname, &sig));
    let webgpu = GpuTarget::new(lowered.webgpu.as_ref().zip(webgpu_texts), Backend::WebGpu);
    let (webgpu_items, webgpu_source, metal_source) = (webgpu.items(), webgpu.source_value(), webgpu.metal_value());
    let (webgpu_run, webgpu_run_on) = (webgpu.run_arm(&sig), webgpu.run_on_arm(kname, &sig));

    // The winners of a tuning record: a second variant per target, run where the record
    // was measured (`tvm_runtime::tune::tuned_applies`).
    let guard = |t: &super::TunedFunc| {
        let want = &t.device;
        let (ks, vs): (Vec<usize>, Vec<i64>) = t.dims.iter().copied().unzip();
        quote!(#rt::tuned_applies(#dev, #want, &[#((#ks, #vs)),*], &__d[..]))
    };
    let mut tuned_cpu_fn = TokenStream::new();
    let (mut cpu_run, mut cpu_run_on) = (cpu_run, cpu_run_on);
    if let Some((t, tf)) = lowered.tuned.cpu.as_ref().and_then(|t| Some((t, t.f.as_ref()?))) {
        let (f, fname) = cpu::function(tf, kernel, sig.name.span())?;
        let run =
            cpu::call(
                kname,
                &sig,
                tf,
                &fname,
                |i, out| {
                    if out {
                        quote!(#i.as_mut_slice())
                    } else {
                        quote!(#i.as_slice())
                    }
                },
            );
        let run_on = cpu::call(kname, &sig, tf, &fname, |i, out| {
            let n = super::signature::param_name(i);
            if out {
                quote!(#i.host_for_mut(#kname, #n)?)
            } else {
                quote!(#i.host_for(#kname, #n)?)
            }
        });
        let g = guard(t);
        cpu_run = quote!(if #g { #run } else { #cpu_run });
        cpu_run_on = quote!(if #g { #run_on } else { #cpu_run_on });
        tuned_cpu_fn = f;
    }
    for (t, backend, items, run, run_on) in [
        (&lowered.tuned.opencl, Backend::OpenCl, &mut opencl_items, &mut opencl_run, &mut opencl_run_on),
        (&lowered.tuned.cuda, Backend::Cuda, &mut cuda_items, &mut cuda_run, &mut cuda_run_on),
    ] {
        let Some((t, tf)) = t.as_ref().and_then(|t| Some((t, t.f.as_ref()?))) else { continue };
        let v = GpuTarget::variant(tf, backend, "_tuned");
        if !v.is_built() {
            continue;
        }
        let (g, (r, ro)) = (guard(t), (v.run_arm(&sig), v.run_on_arm(kname, &sig)));
        *run = quote!(if #g { #r } else { #run });
        *run_on = quote!(if #g { #ro } else { #run_on });
        items.extend(v.items());
    }
    let tuned_rows = [("cpu", &lowered.tuned.cpu), ("cuda", &lowered.tuned.cuda), ("opencl", &lowered.tuned.opencl)]
        .into_iter()
        .filter_map(|(target, t)| {
            let t = t.as_ref()?;
            let (device, winner) = (&t.device, &t.winner);
            let dims: Vec<String> = t.dims.iter().map(|(k, v)| format!("{}={v}", sig.dims[*k])).collect();
            let dims = dims.join(",");
            Some(quote!((#target, #device, #dims, #winner)))
        });
    let record_dep = lowered.tuned.record.as_ref().map(|p| {
        let p = p.to_string_lossy();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#p);
        )
    });
    let cuda_binaries = cuda.binaries_value();

    // The static cost of one call per target, for `profile` and `TVM_PROFILE=1`.
    let cost_fns = [
        super::profile::cost_fn("cpu", Some(&lowered.cpu), &sig),
        super::profile::cost_fn("opencl", lowered.opencl.as_ref(), &sig),
        super::profile::cost_fn("cuda", lowered.cuda.as_ref(), &sig),
        super::profile::cost_fn("webgpu", lowered.webgpu.as_ref(), &sig),
    ];
    let cost_of = quote!(|| match #dev {
        #device_t::Cpu => __cost_cpu(&__d),
        #device_t::OpenCl(_) => __cost_opencl(&__d),
        #device_t::Cuda(_) => __cost_cuda(&__d),
        #device_t::WebGpu(_) => __cost_webgpu(&__d),
        _ => ::core::option::Option::None,
    });
    let (lowered_cuda, lowered_opencl, lowered_webgpu) =
        (cuda.lowered_value(), opencl.lowered_value(), webgpu.lowered_value());
    let schedule_of = |name: &str, g: Option<&super::gpu::GpuTarget>| match (lowered.schedule_source.get(name), g) {
        (Some(text), _) => quote!(::core::result::Result::Ok(#text)),
        (None, Some(g)) => g.off_target(),
        (None, None) => quote!(::core::result::Result::Err(#rt::unsupported_target(#name))),
    };
    let (schedule_cpu, schedule_cuda, schedule_opencl, schedule_webgpu) = (
        schedule_of("cpu", None),
        schedule_of("cuda", Some(&cuda)),
        schedule_of("opencl", Some(&opencl)),
        schedule_of("webgpu", Some(&webgpu)),
    );
    let source_cpu = crate::codegen::text_literal(&rust_source(&cpu_fn));
    let lowered_cpu = crate::codegen::text_literal(&lowered_cpu);
    let docs_run = format!(
        "Runs `{kname}` on `device`, writing into outputs you allocated: the inputs, then the outputs, each of \
         the shape the function `{kname}` documents under \"Shapes\" (a tensor of another shape is \
         `Err(ShapeMismatch)`). On a GPU the inputs are uploaded and the outputs downloaded; `run_on` keeps \
         them on the device."
    );

    // The module's outer doc resolves its links where the module is declared, where the
    // function and the module share the name: `fn@` picks the function (a bare
    // [`NAME`] is ambiguous there, and rustdoc shows it as written).
    let mod_doc = format!("The generated code of [`{kname}`](fn@{kname}) and how to run it on a chosen device.");
    let contract = super::signature::contract_doc(&kernel.ast.sig, None);
    Ok(quote! {
        #(#attrs)*
        #[doc = #contract]
        #vis fn #name(#(#p_decls),*) -> #result_t<#ret_ty, #error_t> {
            #name::__call(&#rt::default_device(#cuda_built)?, #(#p_idents),*)
        }

        #[doc = #mod_doc]
        #[allow(non_snake_case, unused_variables, unused_mut, clippy::all, clippy::pedantic)]
        #vis mod #name {
            // `TVM_TIME_PASSES=1` makes this expansion print pass times; reading the
            // variable here makes rustc track it, so setting or clearing it rebuilds.
            const _: ::core::option::Option<&str> = ::core::option_env!("TVM_TIME_PASSES");
            // `TVM_SCHEDULES=derived` (a test mode) ignores the written blocks; tracked the
            // same way.
            const _: ::core::option::Option<&str> = ::core::option_env!("TVM_SCHEDULES");

            #[doc = #docs_run]
            pub fn run(#dev: &#device_t, #(#p_decls,)* #(#out_decls),*) -> #result_t<(), #error_t> {
                let __d = __dims(#(#dims_args),*)?;
                #out_checks
                #rt::profiled(#kname, #dev, #cost_of, || __launch(#dev, &__d, #(#p_idents,)* #(#out_idents),*))
            }

            /// Times `run` on `device` (a warm-up, then repeats until the median settles)
            /// into new outputs, and reports the times with the FLOPs and bytes of one run,
            /// counted from the lowered code (`tvm::Profile`).
            pub fn profile(#dev: &#device_t, #(#p_decls),*) -> #result_t<#rt::Profile, #error_t> {
                let __d = __dims(#(#dims_args),*)?;
                #(#out_allocs)*
                let __cost = (#cost_of)();
                #rt::profile(#kname, #dev, __cost, || __launch(#dev, &__d, #(#p_idents,)* #(&mut #out_idents),*))
            }

            /// Runs on `device` over tensors that live there (`Tensor::to_device`), writing
            /// into existing outputs: no copy between host and device. A tensor on another
            /// device is `Err(WrongDevice)`.
            pub fn run_on(#dev: &#device_t, #(#dp_decls,)* #(#dout_decls),*) -> #result_t<(), #error_t> {
                let __d = __dims(#(#dims_args),*)?;
                #out_checks
                #rt::profiled(#kname, #dev, #cost_of, || __launch_on(#dev, &__d, #(#p_idents,)* #(#out_idents),*))
            }

            /// [`run_on`] into new outputs on `device`.
            pub fn call_on(#dev: &#device_t, #(#dp_decls),*) -> #result_t<#dret_ty, #error_t> {
                let __d = __dims(#(#dims_args),*)?;
                #(#dout_allocs)*
                #rt::profiled(#kname, #dev, #cost_of, || __launch_on(#dev, &__d, #(#p_idents,)* #(&mut #out_idents),*))?;
                ::core::result::Result::Ok(#ret_val)
            }

            /// The winners of the kernel's tuning record (`tvm-tuning/NAME.json`) compiled
            /// into this build, one per target whose record applies: `(target, device,
            /// dims, knob values)`. A call on that device with those dims runs the winner
            /// (unless `TVM_TUNING=off`); every other call runs the schedule as written.
            pub const TUNED: &[(&str, &str, &str, &str)] = &[#(#tuned_rows),*];

            /// The generated code for `"cpu"`, `"cuda"`, `"opencl"`, `"webgpu"` (WGSL) or
            /// `"metal"` (MSL, translated from the WGSL); `Err` for a backend whose `tvm`
            /// feature is off, and for a kernel the target cannot express (saying why).
            pub fn source(target: &str) -> #result_t<&'static str, #error_t> {
                match target {
                    "cpu" => ::core::result::Result::Ok(#source_cpu),
                    "opencl" => #opencl_source,
                    "cuda" => #cuda_source,
                    "webgpu" => #webgpu_source,
                    "metal" => #metal_source,
                    other => ::core::result::Result::Err(#rt::unsupported_target(other)),
                }
            }

            /// The lowered TIR for `"cpu"`, `"cuda"`, `"opencl"` or `"webgpu"` (also
            /// `"metal"`'s).
            pub fn lowered(target: &str) -> #result_t<&'static str, #error_t> {
                match target {
                    "cpu" => ::core::result::Result::Ok(#lowered_cpu),
                    "cuda" => #lowered_cuda,
                    "opencl" => #lowered_opencl,
                    "webgpu" | "metal" => #lowered_webgpu,
                    other => ::core::result::Result::Err(#rt::unsupported_target(other)),
                }
            }

            /// The schedule that runs for `"cpu"`, `"cuda"`, `"opencl"` or `"webgpu"` (also
            /// `"metal"`'s), as `schedule!` source: the written block (its knobs at the
            /// values compiled in), then the statements the auto-scheduler derived for the
            /// stages it leaves unshaped, each group with its reason. Pasted into the
            /// kernel, it produces the same code.
            /// (A tuning record's winner, where one applies, is listed in [`TUNED`].)
            pub fn schedule(target: &str) -> #result_t<&'static str, #error_t> {
                match target {
                    "cpu" => #schedule_cpu,
                    "cuda" => #schedule_cuda,
                    "opencl" => #schedule_opencl,
                    "webgpu" | "metal" => #schedule_webgpu,
                    other => ::core::result::Result::Err(#rt::unsupported_target(other)),
                }
            }

            /// The CUDA binaries a build script compiled for this kernel's CUDA source and
            /// the macro embedded (`tvm::build`); empty: NVRTC compiles `source("cuda")` at
            /// the first launch on a CUDA device.
            #[doc(hidden)]
            pub fn __cuda_binaries() -> &'static [#rt::gpu::Binary] {
                #cuda_binaries
            }

            #[doc(hidden)]
            pub fn __call(#dev: &#device_t, #(#p_decls),*) -> #result_t<#ret_ty, #error_t> {
                let __d = __dims(#(#dims_args),*)?;
                #(#out_allocs)*
                #rt::profiled(#kname, #dev, #cost_of, || __launch(#dev, &__d, #(#p_idents,)* #(&mut #out_idents),*))?;
                ::core::result::Result::Ok(#ret_val)
            }

            #dims_fn

            fn __launch(#dev: &#device_t, __d: &[i64; #nd], #(#p_decls,)* #(#out_decls),*) -> #result_t<(), #error_t> {
                match #dev {
                    #device_t::Cpu => #cpu_run,
                    #device_t::OpenCl(_) => #opencl_run,
                    #device_t::Cuda(_) => #cuda_run,
                    #device_t::WebGpu(_) => #webgpu_run,
                    other => ::core::result::Result::Err(#rt::no_backend(other)),
                }
            }

            fn __launch_on(#dev: &#device_t, __d: &[i64; #nd], #(#dp_decls,)* #(#dout_decls),*) -> #result_t<(), #error_t> {
                match #dev {
                    #device_t::Cpu => #cpu_run_on,
                    #device_t::OpenCl(_) => #opencl_run_on,
                    #device_t::Cuda(_) => #cuda_run_on,
                    #device_t::WebGpu(_) => #webgpu_run_on,
                    other => ::core::result::Result::Err(#rt::no_backend(other)),
                }
            }

            #(#cost_fns)*
            #cpu_fn
            #tuned_cpu_fn
            // The kernel's tuning record: a change to it rebuilds this crate.
            #record_dep
            #opencl_items
            #cuda_items
            #webgpu_items
        }
    })
}

/// The CPU function's source text (`source("cpu")`): prettyplease's layout, or, for a
/// function of more than [`PRETTY_TOKENS`] tokens, the linear one of
/// [`crate::codegen::rust::layout`] (prettyplease has `syn` parse the whole function
/// first: on the largest unrolled kernels, that parse and the printing took more than
/// half as long as emitting the function).
fn rust_source(tokens: &TokenStream) -> String {
    let mut budget = PRETTY_TOKENS;
    if more_tokens_than(tokens, &mut budget) {
        crate::codegen::rust::layout::layout(tokens)
    } else {
        pretty_rust(tokens)
    }
}

/// See [`rust_source`]. `onet_head`, the smallest of the face detector's layers that gets
/// the linear layout, has about 84 000.
const PRETTY_TOKENS: usize = 50_000;

/// Whether `tokens` has more than `budget` tokens (a group's delimiters as one); it stops
/// counting there (the walk copies every group it enters).
fn more_tokens_than(tokens: &TokenStream, budget: &mut usize) -> bool {
    for t in tokens.clone() {
        if *budget == 0 {
            return true;
        }
        *budget -= 1;
        if let proc_macro2::TokenTree::Group(g) = t {
            if more_tokens_than(&g.stream(), budget) {
                return true;
            }
        }
    }
    false
}

/// Rust tokens as formatted source text (prettyplease, close to rustfmt's layout), for
/// `source("cpu")`; tokens that do not parse as items (never the emitted function) as the
/// token stream's text.
fn pretty_rust(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}
