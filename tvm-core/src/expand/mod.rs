//! What `compute!` expands to. The proc-macro crate is a shell around [`compute`]: parse
//! (every error at its token) → check every schedule block against its own target → lower
//! for each target → generate the CPU function, and for each GPU target its device program
//! and its host code as Rust → expand the typed function and its module. Nothing of this
//! runs at the user's run time: the expansion names only `::tvm::...` runtime paths
//! ([`paths`]).
//!
//! On any error the expansion is the errors plus a stub of the declared function and
//! module (`stub`), so the rest of the user's crate type-checks and only the real errors
//! show.
//!
//! The parts, in the order the module is put together: `signature` (parameters and
//! outputs as the user passes them), `dims` (shape binding and output checks), `cpu`
//! (the CPU kernel), `gpu` (each GPU target's program and host code), `module` (the
//! typed function and `run`, `run_on`, `call_on`, `source`, `lowered`).

pub mod cache;
mod cpu;
mod dims;
pub mod generic;
mod gpu;
mod module;
pub mod paths;
mod profile;
#[doc(hidden)]
pub mod signature;
mod stub;

use crate::frontend::Kernel;
use crate::schedule::ScheduleError;
use crate::tir::PrimFunc;
use crate::Target;
use proc_macro2::TokenStream;

/// The GPU backends a build has code for: the `tvm` crate's features `cuda`, `opencl`
/// and `webgpu` reach the macro as these. A backend that is off is not lowered (its
/// schedule blocks are still checked), and the kernel's module answers for it as a kernel
/// without that code: `source`/`lowered` are `Err(UnsupportedTarget)`, a launch there is
/// `Err(DeviceUnavailable)` saying which feature is off. The CPU is always on. `webgpu`
/// also gives `source("metal")` (MSL from the WGSL, with feature `naga` of tvm-core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backends {
    pub cuda: bool,
    pub opencl: bool,
    pub webgpu: bool,
}

impl Backends {
    /// Every backend (what tools and the compiler's tests expand for).
    pub const ALL: Backends = Backends { cuda: true, opencl: true, webgpu: true };

    /// The targets lowered, in order: the CPU, then CUDA, OpenCL and WebGPU when on.
    pub fn targets(self) -> Vec<Target> {
        let mut ts = vec![Target::cpu()];
        if self.cuda {
            ts.push(Target::cuda());
        }
        if self.opencl {
            ts.push(Target::opencl());
        }
        if self.webgpu {
            ts.push(Target::webgpu());
        }
        ts
    }
}

/// The whole expansion of `compute!` on `tokens` (the macro's input) for every backend.
/// Never panics.
pub fn compute(tokens: TokenStream) -> TokenStream {
    compute_for(tokens, Backends::ALL)
}

/// The expansion of `compute!` on `tokens` with code for `backends` only. Never panics.
/// An unchanged kernel's expansion comes from the [`cache`].
pub fn compute_for(tokens: TokenStream, backends: Backends) -> TokenStream {
    match generic::split(&tokens) {
        Err(e) => e.to_compile_error(),
        Ok(Some((g, rest))) => expand_generic(&g, rest, backends),
        Ok(None) => match expand_one(tokens, backends, None) {
            Ok(ts) => ts,
            Err((errors, stub)) => {
                let errors: TokenStream = errors.iter().map(|e| e.to_compile_error()).collect();
                quote::quote!(#errors #stub)
            }
        },
    }
}

/// One kernel (without generics), or the `instance` of a generic one for that type: its
/// expansion, or its errors and the stub.
fn expand_one(
    tokens: TokenStream,
    backends: Backends,
    instance: Option<&str>,
) -> Result<TokenStream, (Vec<syn::Error>, TokenStream)> {
    let key = cache::key(&tokens, backends, instance);
    if let Some(text) = cache::load(&key) {
        let restored = crate::frontend::parse_syntax(tokens.clone())
            .ok()
            .and_then(|(ast, map)| cache::restore(&text, &signature_spans(&ast, &map)));
        if let Some(ts) = restored {
            return Ok(ts);
        }
    }
    match crate::frontend::parse_kernel(tokens.clone()) {
        Err(errs) => {
            let errors = errs.iter().map(|e| e.to_syn_error()).collect();
            let stub = crate::frontend::parse_syntax(tokens).map(|(ast, _)| stub::stub(&ast)).unwrap_or_default();
            Err((errors, stub))
        }
        Ok(kernel) => match expand_kernel(&kernel, &tokens, backends, instance) {
            Ok(ts) => {
                // Stored as text; a hit reads these tokens back with the same spans on the
                // signature's names (the tests compare the two). Not with a name `device`.
                let names = signature_spans(&kernel.ast, &kernel.source_map);
                if cache::enabled() && !names.contains_key("device") {
                    cache::store(&key, &ts.to_string());
                }
                Ok(ts)
            }
            Err(errs) => Err((errs, stub::stub(&kernel.ast))),
        },
    }
}

/// The expansion of a checked kernel: lowered for every backend (with its tuning
/// record's winners), then emitted. Code generation can refuse a schedule the lowering
/// accepted (a parallel loop whose iterations it cannot prove write disjoint parts); it
/// runs here, on the macro's thread, after lowering, so a derived schedule it refuses
/// (a compiler bug, never the user's error) is retried without the derived statements.
fn expand_kernel(
    kernel: &Kernel,
    tokens: &TokenStream,
    backends: Backends,
    instance: Option<&str>,
) -> Result<TokenStream, Vec<syn::Error>> {
    let lowered = lower_backends(kernel, backends)?;
    let derived = lowered.derived;
    match module::expand(kernel, &with_tuned(lowered, kernel, tokens, backends, instance)) {
        Err(errs) if derived => {
            let reason = format!(
                "code generation refused the derived schedule: {}",
                errs.first().map(|e| e.to_string()).unwrap_or_default()
            );
            let lowered = lower_backends_with(kernel, backends, &crate::driver::Derivation::Off { reason })?;
            module::expand(kernel, &with_tuned(lowered, kernel, tokens, backends, instance))
        }
        r => r,
    }
}

/// A generic kernel: every instance in its hidden module, and the generic API around
/// them. An error every instance reports is reported once, as it is; an error only some
/// report names the types it is for.
fn expand_generic(g: &generic::Generics, rest: TokenStream, backends: Backends) -> TokenStream {
    let ast = match crate::frontend::parse_syntax(rest.clone()) {
        Ok((ast, _)) => ast,
        Err(errs) => return errs.iter().map(|e| e.to_syn_error().to_compile_error()).collect(),
    };
    // The parameter's name is replaced everywhere: it may not name anything else.
    let p = g.param.to_string();
    let sig = &ast.sig;
    let clash = sig
        .params
        .iter()
        .map(|q| q.name())
        .chain(sig.outputs.iter().map(|o| &o.name))
        .chain(ast.stages.iter().map(|s| &s.name))
        .chain(ast.stages.iter().flat_map(|s| &s.axes))
        .find(|n| n.name == p)
        .map(|n| n.loc)
        .or_else(|| {
            let dims = sig.params.iter().filter_map(|q| match q {
                crate::frontend::ast::ParamAst::Tensor { ty, .. } => Some(ty),
                _ => None,
            });
            dims.chain(sig.outputs.iter().map(|o| &o.ty))
                .flat_map(|t| &t.dims)
                .find(|d| matches!(d, crate::frontend::ast::Dim::Name(n) if n.name == p))
                .map(|d| d.loc())
        });
    if let Some(loc) = clash {
        let span = crate::frontend::parse_syntax(rest.clone()).map(|(_, m)| m.span(loc)).unwrap_or(g.param.span());
        return syn::Error::new(
            span,
            format!(
                "`{p}` is the kernel's type parameter, so it cannot also name a tensor, a dim or an axis: rename one"
            ),
        )
        .to_compile_error();
    }
    let name = ast.sig.name.name.trim_start_matches("r#").to_string();
    let mut items = TokenStream::new();
    // Each error (by its place and text), with the types that report it.
    let mut errors: Vec<(String, syn::Error, Vec<String>)> = Vec::new();
    for ty in &g.types {
        let inst = generic::visible_to_parent(generic::instantiate(&rest, &g.param, ty));
        let body = match expand_one(inst, backends, Some(ty)) {
            Ok(ts) => ts,
            Err((errs, stub)) => {
                for e in errs.into_iter().flatten() {
                    let key = format!("{:?} {e}", e.span());
                    match errors.iter_mut().find(|(k, ..)| *k == key) {
                        Some((_, _, tys)) => tys.push(ty.clone()),
                        None => errors.push((key, e, vec![ty.clone()])),
                    }
                }
                stub
            }
        };
        items.extend(generic::wrap_instance(&ast.vis, &name, ty, body));
    }
    let errors: TokenStream = merge_instance_errors(&g.param.to_string(), &g.types, errors)
        .into_iter()
        .map(|e| e.to_compile_error())
        .collect();
    let facade = generic::facade(&ast, g);
    quote::quote!(#errors #items #facade)
}

/// The errors of a generic kernel's instances, each given with the types that report it:
/// one that every instance reports alike is reported once, as it is. The others are told
/// apart by their text with each instance's type written as the parameter (`expected
/// `f32`` of `T = f32` and `expected `f64`` of `T = f64` are both `expected `T``): those
/// alike are reported once in the parameter's words, for every type or naming the types.
fn merge_instance_errors(
    param: &str,
    types: &[String],
    errors: Vec<(String, syn::Error, Vec<String>)>,
) -> Vec<syn::Error> {
    // (the error's place and its text in the parameter's words, the first error, types).
    let mut groups: Vec<(String, String, syn::Error, Vec<String>)> = Vec::new();
    let mut out = Vec::new();
    for (_, e, tys) in errors {
        if tys.len() == types.len() {
            out.push(e);
            continue;
        }
        let text = e.to_string();
        // Only an error of one instance can speak of its type as the parameter: a text
        // several types share names a type that is not theirs.
        let general = if tys.len() == 1 { generic::as_param(&text, &tys[0], param) } else { text.clone() };
        let key = format!("{:?} {general}", e.span());
        match groups.iter_mut().find(|(k, ..)| *k == key) {
            Some((_, _, _, t)) => t.extend(tys),
            None => groups.push((key, general, e, tys)),
        }
    }
    for (_, general, e, mut tys) in groups {
        tys.sort_by_key(|t| types.iter().position(|x| x == t));
        let text = if tys.len() > 1 { general } else { e.to_string() };
        if tys.len() == types.len() {
            out.push(syn::Error::new(e.span(), text));
            continue;
        }
        let with: Vec<String> = tys.iter().map(|t| format!("`{param} = {t}`")).collect();
        let (first, help) = text.split_once('\n').unwrap_or((&text, ""));
        let sep = if help.is_empty() { "" } else { "\n" };
        out.push(syn::Error::new(e.span(), format!("{first} (with {}){sep}{help}", with.join(", "))));
    }
    out
}

/// The identifiers of a kernel's signature (its name, parameters and outputs) with the
/// user's spans.
fn signature_spans(
    ast: &crate::frontend::ast::KernelAst,
    map: &crate::loc::SourceMap,
) -> std::collections::HashMap<String, proc_macro2::Span> {
    let sig = &ast.sig;
    let names = std::iter::once(&sig.name)
        .chain(sig.params.iter().map(|p| p.name()))
        .chain(sig.outputs.iter().map(|o| &o.name));
    names.map(|n| (n.name.clone(), map.span(n.loc))).collect()
}

/// The lowered function of every target; `None` for a backend that is off.
pub struct Lowered {
    pub cpu: PrimFunc,
    pub cuda: Option<PrimFunc>,
    pub opencl: Option<PrimFunc>,
    pub webgpu: Option<PrimFunc>,
    /// Each target's schedule as `schedule!` source (`crate::frontend::schedule_source`),
    /// by target name; `NAME::schedule(target)` returns it.
    pub schedule_source: std::collections::BTreeMap<&'static str, String>,
    /// Whether some target's schedule has derived statements.
    pub derived: bool,
    /// The winners of the kernel's tuning record, lowered.
    pub tuned: TunedLowered,
}

/// The second variant of each target whose tuning record applies (`crate::tune`).
#[derive(Default)]
pub struct TunedLowered {
    /// The record file, which the expansion includes so that cargo rebuilds when it
    /// changes.
    pub record: Option<std::path::PathBuf>,
    pub cpu: Option<TunedFunc>,
    pub cuda: Option<TunedFunc>,
    pub opencl: Option<TunedFunc>,
}

/// A target's winner: its lowered function, and the device and dims it runs on.
pub struct TunedFunc {
    /// `None` when the winner is the schedule as written (no second variant is built).
    pub f: Option<PrimFunc>,
    /// `tvm_runtime::tune::device_identity` of the device the record was measured on.
    pub device: String,
    /// The dims it was measured with: each one's index in the kernel's dims, and value.
    pub dims: Vec<(usize, i64)>,
    /// The winner's knob values, `name=value` comma-joined.
    pub winner: String,
}

/// `lowered` with the winners of the kernel's tuning record (if any; a generic kernel's
/// `instance` has a record of its own) lowered next to it. A winner that no longer lowers
/// is left out (the schedule as written runs).
fn with_tuned(
    mut lowered: Lowered,
    kernel: &Kernel,
    tokens: &TokenStream,
    backends: Backends,
    instance: Option<&str>,
) -> Lowered {
    let name = crate::tune::record_name(&kernel.name, instance);
    let Some((path, bytes)) = crate::tune::record_file(&name) else { return lowered };
    lowered.tuned.record = Some(path);
    let Ok(record) = crate::tune::Record::parse(&String::from_utf8_lossy(&bytes)) else { return lowered };
    let dim_names: Vec<String> = kernel.graph.dims.iter().map(|d| d.name().to_string()).collect();
    for target in backends.targets() {
        let Some(t) = crate::tune::applied(kernel, tokens, &record, target.kind) else { continue };
        let dims: Option<Vec<(usize, i64)>> =
            t.dims.iter().map(|(n, v)| dim_names.iter().position(|d| d == n).map(|k| (k, *v))).collect();
        let Some(dims) = dims else { continue };
        let f = if t.schedules == kernel.schedules {
            None
        } else {
            let Ok(mut f) = crate::driver::lower_exact(&kernel.graph, &t.schedules, &target) else { continue };
            f.name = format!("{}_tuned", f.name);
            Some(f)
        };
        let winner: Vec<String> = t.winner.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let tf = Some(TunedFunc { f, device: t.device, dims, winner: winner.join(",") });
        match target.kind {
            crate::TargetKind::Cpu => lowered.tuned.cpu = tf,
            crate::TargetKind::Cuda => lowered.tuned.cuda = tf,
            crate::TargetKind::OpenCl => lowered.tuned.opencl = tf,
            _ => {}
        }
    }
    lowered
}

fn schedule_error(kernel: &Kernel, e: &ScheduleError) -> syn::Error {
    kernel.source_map.error(e.loc, e)
}

/// Checks every schedule block and lowers the kernel for each target kind, or returns the
/// errors (with spans) that stop it.
pub fn lower_all(kernel: &Kernel) -> Result<Lowered, Vec<syn::Error>> {
    lower_backends(kernel, Backends::ALL)
}

/// Checks every schedule block (of every target, on or off) and lowers the kernel for the
/// CPU and the backends that are on. A `schedule!(webgpu)` block of a kernel WGSL cannot
/// express is an error at the block, with the backend on or off.
pub fn lower_backends(kernel: &Kernel, backends: Backends) -> Result<Lowered, Vec<syn::Error>> {
    lower_backends_with(kernel, backends, &crate::driver::Derivation::On)
}

/// [`lower_backends`] with the auto-scheduler on or off.
fn lower_backends_with(
    kernel: &Kernel,
    backends: Backends,
    derivation: &crate::driver::Derivation,
) -> Result<Lowered, Vec<syn::Error>> {
    let mut errors: Vec<syn::Error> =
        crate::frontend::check_schedules(kernel).iter().map(|e| schedule_error(kernel, e)).collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let webgpu_block = crate::frontend::select_schedule_block(&kernel.schedules, crate::TargetKind::WebGpu)
        .and_then(|(b, borrowed)| (!borrowed).then_some(b));
    let lowering = Backends { webgpu: backends.webgpu || webgpu_block.is_some(), ..backends };
    // The lowerings are independent and touch no token or span: one thread each
    // (the expansion's latency is what a user waits for; the emission after them builds
    // token streams, which stay on this thread).
    let (graph, schedules) = (&kernel.graph, &kernel.schedules[..]);
    let timed = time_passes();
    let lowered: Vec<(LowerResult, PassTimes)> = std::thread::scope(|s| {
        let threads: Vec<_> = lowering
            .targets()
            .into_iter()
            .map(|t| {
                s.spawn(move || {
                    let mut times = Vec::new();
                    let mut trace = |e: crate::lower::PassEvent<'_>| {
                        if timed {
                            times.push((e.pass, e.micros))
                        }
                    };
                    (crate::driver::lower_with_source(graph, schedules, &t, &mut trace, derivation), times)
                })
            })
            .collect();
        threads.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    if timed {
        let names: Vec<&str> = lowering.targets().iter().map(|t| t.kind.name()).collect();
        let rows: Vec<(&str, &[(&'static str, u64)])> =
            names.iter().zip(&lowered).map(|(n, (_, t))| (*n, t.as_slice())).collect();
        eprint!("{}", pass_table(&kernel.name, &rows));
    }
    let mut schedule_source = std::collections::BTreeMap::new();
    let mut results = Vec::new();
    let mut derived = false;
    for (t, (l, _)) in lowering.targets().iter().zip(lowered) {
        let l = if t.kind == crate::TargetKind::WebGpu { wgsl_or_underived(graph, schedules, t, l) } else { l };
        // WebGPU lowered only to check its block (the backend off) shows no schedule.
        if t.kind != crate::TargetKind::WebGpu || backends.webgpu {
            schedule_source.insert(t.kind.name(), l.source);
            derived |= l.derived;
        }
        results.push(l.func);
    }
    // Errors in target order (cpu, cuda, opencl, webgpu), each message once.
    let mut funcs = Vec::new();
    for r in results {
        match r {
            Ok(f) => funcs.push(f),
            Err(es) => {
                for e in &es {
                    let err = schedule_error(kernel, e);
                    if !errors.iter().any(|x| x.to_string() == err.to_string()) {
                        errors.push(err);
                    }
                }
            }
        }
    }
    if !errors.is_empty() || funcs.len() != lowering.targets().len() {
        return Err(errors);
    }
    let mut funcs = funcs.into_iter();
    let cpu = funcs.next().expect("the CPU is always lowered");
    let cuda = if backends.cuda { funcs.next() } else { None };
    let opencl = if backends.opencl { funcs.next() } else { None };
    let webgpu = if lowering.webgpu { funcs.next() } else { None };
    if let (Some(b), Some(f)) = (webgpu_block, &webgpu) {
        if let Err(e) = crate::codegen::wgsl::emit_wgsl(f) {
            let message = format!(
                "this `schedule!(webgpu)` block schedules a kernel WGSL cannot express: {e}\nhelp: remove \
                 the block (the kernel then has no WebGPU code), or schedule it for `cuda` or `opencl`"
            );
            return Err(vec![kernel.source_map.error(b.target_loc, message)]);
        }
    }
    let webgpu = if backends.webgpu { webgpu } else { None };
    Ok(Lowered { cpu, cuda, opencl, webgpu, schedule_source, derived, tuned: TunedLowered::default() })
}

/// WebGPU's lowering `l`, or, where WGSL generation refuses it and it has derived
/// statements, the same kernel lowered without them (the written block and the flat
/// defaults), when WGSL generation accepts that. The derived schedule is chosen for
/// CUDA-like GPUs; WGSL has no 64-bit integers, and a derived index computation the
/// 32-bit proof cannot bound (see `codegen::wgsl::narrow`) must not cost the kernel its
/// WebGPU code.
fn wgsl_or_underived(
    graph: &crate::te::Graph,
    schedules: &[crate::frontend::ScheduleBlock],
    target: &Target,
    l: LowerResult,
) -> LowerResult {
    let refused = match &l.func {
        Ok(f) if l.derived => match crate::codegen::wgsl::emit_wgsl(f) {
            Ok(_) => return l,
            Err(e) => e.to_string(),
        },
        _ => return l,
    };
    let reason = format!("WGSL generation refused the derived schedule: {refused}");
    let off = crate::driver::Derivation::Off { reason };
    let retry = crate::driver::lower_with_source(graph, schedules, target, &mut |_| {}, &off);
    match &retry.func {
        Ok(f) if crate::codegen::wgsl::emit_wgsl(f).is_ok() => retry,
        _ => l,
    }
}

/// One target's lowering, and its pass times when asked for.
type LowerResult = crate::driver::Lowering;
type PassTimes = Vec<(&'static str, u64)>;

/// Whether `TVM_TIME_PASSES=1` asks for the pass times of every kernel. The expansion
/// reads the variable through `option_env!` too ([`module`]), so rustc records it as an
/// input of the crate: setting or clearing it rebuilds the crate, and cargo's replay of
/// a fresh crate's output only shows the tables of a build that asked for them.
fn time_passes() -> bool {
    std::env::var_os("TVM_TIME_PASSES").is_some_and(|v| v == "1")
}

/// One labelled table of a kernel's pass times: a row per target lowered (cpu, cuda,
/// opencl, webgpu), each pass in order with its microseconds, and the total.
pub fn pass_table(kernel: &str, rows: &[(&str, &[(&'static str, u64)])]) -> String {
    use std::fmt::Write;
    let mut out = format!("tvm: pass times of `{kernel}` in microseconds (TVM_TIME_PASSES=1)\n");
    for (target, ts) in rows {
        let total: u64 = ts.iter().map(|t| t.1).sum();
        let passes: Vec<String> = ts.iter().map(|(p, us)| format!("{p} {us}")).collect();
        let _ = writeln!(out, "  {target:<7} total {total:>7}: {}", passes.join(", "));
    }
    out
}

/// The expansion of a kernel lowered (and possibly edited) by the caller: for tests of
/// what a lowered function expands to.
#[doc(hidden)]
pub fn expand_lowered(kernel: &Kernel, lowered: &Lowered) -> Result<TokenStream, Vec<syn::Error>> {
    module::expand(kernel, lowered)
}
