//! The CPU backend: a lowered CPU [`PrimFunc`] becomes one Rust function (tokens) that
//! rustc and LLVM compile in the user's crate.
//!
//! # The emitted function
//!
//! ```text
//! fn __tvm_cpu_<name>(<params>, <dims>[, __fault: &Fault]) -> Result<(), Error>
//! ```
//!
//! Tensor inputs are `&[T]`, outputs `&mut [T]`, scalars their own type (`u64` for
//! `usize`), then one `i64` per dim variable in [`dim_vars`] order, then, where the
//! function checks values ([`has_checks`]), the run's `Fault` cell, which the caller
//! turns into the first failed check's error. It returns `Err(LaunchFailed)` when a
//! slice's length is not the product of its shape, or when the target names CPU features
//! (`-mattr=+avx2,+fma`) that this CPU lacks, and `Err(OutOfMemory)` when an
//! intermediate outside the parallel loops cannot be allocated; else it runs the kernel
//! and returns `Ok(())`.
//!
//! Inside: `__body` holds the statements once, `#[inline(always)]`, generic over the
//! feature level and over `__FAST` (below). It is instantiated inside one
//! `#[target_feature]` wrapper per level (`avx512f`; `avx2,fma`; none) chosen at run time
//! with `is_x86_feature_detected!`, or, for a target with explicit features, inside one
//! wrapper with exactly those. On x86-64 the level without features is instantiated only
//! with every access checked (`__FAST = false`, below): it runs on CPUs without AVX2.
//! Each outermost `parallel` loop becomes a call of the runtime's thread pool
//! (`tvm_runtime::pool::par_for`) with disjoint chunks of the buffers it writes, whose
//! per-iteration work is a function `__parN` with its own per-level
//! `#[target_feature]` wrappers: closures do not inherit
//! the features of a function they are merely inlined into (checked with `objdump`).
//!
//! # Safety
//!
//! The only `unsafe` code is (1) calls of `#[target_feature]` functions after the
//! features were detected, and (2) unchecked loads and stores whose bounds the
//! `facts` analyzer proved, on the fast path only. The fast path (`__FAST = true`) is
//! taken when every dim is at most `2^k`; `k` is chosen here, per function, as the
//! largest bound that keeps every proof. Slower inputs run the same code with every
//! access checked. (3) Parallel loops take their `&mut` chunks from
//! `tvm_runtime::pool::ChunksMut`, chunk `k` for iteration `k`: race-free because the pool
//! runs each iteration exactly once (its unit tests check that).

mod cse;
pub(crate) mod expr;
mod facts;
mod fused;
pub mod layout;
pub(crate) mod names;
mod parallel;
mod stmt;

use super::CodegenError;
use crate::dtype::{DType, ScalarKind};
use crate::target::Target;
use crate::tir::{Buffer, Expr, Param, PrimFunc, Var};
use facts::Facts;
use names::Names;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::{BTreeSet, HashMap};

type R<T> = Result<T, CodegenError>;

/// Switches of [`emit_rust_with`].
#[derive(Clone, Debug)]
pub struct EmitOptions {
    /// Where the generated code finds the runtime's support: the CPU helpers and the
    /// thread pool (`<rt_path>::cpu`) and `erf`
    /// (`<rt_path>::erf_f32`, `<rt_path>::erf_f64`). Default: `::tvm::__rt`.
    pub rt_path: TokenStream,
    /// Use unchecked loads and stores where their bounds are proved. Default: on.
    pub unchecked: bool,
    /// Contract `a * b + c` on floats into one fused multiply-add (one rounding instead
    /// of two) on the feature levels that have FMA, as TVM and Halide do. Default: on;
    /// the target's `-fp-contract=off` turns it off too.
    pub contract: bool,
    /// Put a marker statement before and after every loop and store:
    /// `__tvm_mark!(loop ID);` .. `__tvm_mark!(end loop ID);` (`ID`: the loop variable's
    /// `VarId`; `store ID`: the buffer's `BufferId`), so a tool that prints the code can
    /// record which lines each TIR node became (see [`resolve_marks`]). The marked code
    /// is for display: it does not compile. Default: off.
    pub markers: bool,
}

impl Default for EmitOptions {
    fn default() -> Self {
        EmitOptions { rt_path: quote!(::tvm::__rt), unchecked: true, contract: true, markers: false }
    }
}

/// The dim variables of `f`: the distinct variables of its tensor parameters' shapes, in
/// first-appearance order (the order of the emitted function's trailing `i64` params).
pub fn dim_vars(f: &PrimFunc) -> Vec<Var> {
    let mut out: Vec<Var> = Vec::new();
    for p in &f.params {
        if let Param::Tensor { shape, .. } = p {
            for d in shape {
                for v in crate::tir::visit::vars_of(d) {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
        }
    }
    out
}

/// The name of the function [`emit_rust`] emits for `f`: `__tvm_cpu_<name>`, where every
/// character of `f.name` that cannot be in an identifier (the `#` of a raw identifier, a
/// non-ASCII letter) becomes `_`. Code that calls the emitted function names it with this.
pub fn fn_ident(f: &PrimFunc) -> Ident {
    let name: String = f.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    format_ident!("__tvm_cpu_{}", name)
}

/// The Rust function for a lowered CPU function, with the default [`EmitOptions`].
pub fn emit_rust(f: &PrimFunc) -> Result<TokenStream, CodegenError> {
    emit_rust_with(f, &EmitOptions::default())
}

/// The Rust function for a lowered CPU function.
pub fn emit_rust_with(f: &PrimFunc, opts: &EmitOptions) -> Result<TokenStream, CodegenError> {
    if !f.target.is_cpu() || !f.kernels.is_empty() {
        return Err(unsupported(format!("target `{}` (only cpu functions are emitted as Rust)", f.target)));
    }
    // Every parameter's type must have a Rust type here (f16 and bf16 do not, yet), also
    // where the body never reads the parameter.
    for p in &f.params {
        let d = match p {
            Param::Tensor { buffer, .. } => buffer.dtype(),
            Param::Scalar(v) => v.dtype(),
        };
        scalar_ty(d)?;
    }
    let dims = dim_vars(f);
    let levels = levels_of(&f.target)?;
    // The smallest dim bound proves the most accesses (and divisions); take the largest
    // bound that proves as many. A proof never needs a smaller bound than one it already
    // has, so the bounds that prove as many are the smaller ones up to some `k`. The
    // largest is emitted first, to its end only while its `safe` analyzer never says no:
    // then every smaller bound makes the same decisions (the dims' bound is the only fact
    // that changes with it), and that emission is the answer (kernels whose indices are
    // linear in their dims get it; without dims the bound changes nothing). Otherwise the
    // smallest bound is emitted, then the largest again, stopping at the first proof of
    // the smallest's it fails, then the others by bisection. (Each emission that falls
    // short costs failed proofs, the prover's dearest work: a product of dims, which
    // overflows at large bounds, fails every bound down to about 2^24.)
    let internal = || unsupported("internal: an emission with nothing to match stopped".to_string());
    let mut probe = Emitter::new(f, opts, &dims, &levels, K_BITS[0]);
    probe.stop_on_refusal = !dims.is_empty();
    if let Some(e) = probe.run()? {
        return Ok(assemble(f, opts, &dims, &levels, e));
    }
    let mut best = Emitter::new(f, opts, &dims, &levels, K_BITS[K_BITS.len() - 1]).run()?.ok_or_else(internal)?;
    if best.unchecked > 0 || best.hoisted > 0 {
        // The emission at `2^k` if it proves as many as `best`, else `None` (it stops at
        // the first proof of `best`'s it fails).
        let expect = best.proofs.clone();
        let (unchecked, hoisted) = (best.unchecked, best.hoisted);
        let run = |k: u32| -> R<Option<Emitted>> {
            let mut e = Emitter::new(f, opts, &dims, &levels, k);
            e.expect = expect.clone();
            Ok(e.run()?.filter(|e| e.unchecked == unchecked && e.hoisted == hoisted))
        };
        if let Some(e) = run(K_BITS[0])? {
            best = e;
        } else {
            // The largest good bound is among K_BITS[lo..=hi]; K_BITS[hi] is good (`best`
            // holds its emission).
            let (mut lo, mut hi) = (1, K_BITS.len() - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                match run(K_BITS[mid])? {
                    Some(e) => {
                        hi = mid;
                        best = e;
                    }
                    None => lo = mid + 1,
                }
            }
        }
    }
    Ok(assemble(f, opts, &dims, &levels, best))
}

/// Removes the marker lines of printed code emitted with [`EmitOptions::markers`] and
/// returns the code with the line range each marked node spans in it (0-based, in the
/// returned text; a node emitted more than once, as in each feature level's copy of the
/// body, has a range per copy).
pub fn resolve_marks(printed: &str) -> (String, Vec<crate::tir::printer::LineSpan>) {
    use crate::tir::printer::{LineSpan, NodeRef};
    use crate::tir::{BufferId, VarId};
    let mut out = String::new();
    let mut spans = Vec::new();
    let mut open: Vec<(NodeRef, usize)> = Vec::new();
    let mut line = 0;
    for l in printed.lines() {
        let t = l.trim();
        let mark = t.strip_prefix("__tvm_mark!(").and_then(|r| r.strip_suffix(");"));
        let Some(mark) = mark else {
            out.push_str(l);
            out.push('\n');
            line += 1;
            continue;
        };
        let words: Vec<&str> = mark.split_whitespace().collect();
        let (end, kind, id) = match words.as_slice() {
            ["end", k, id] => (true, *k, *id),
            [k, id] => (false, *k, *id),
            _ => continue,
        };
        let Ok(id) = id.parse::<u32>() else { continue };
        let node = if kind == "loop" { NodeRef::Loop(VarId(id)) } else { NodeRef::Store(BufferId(id)) };
        if !end {
            open.push((node, line));
        } else if let Some(i) = open.iter().rposition(|(n, _)| *n == node) {
            let (_, first) = open.remove(i);
            spans.push(LineSpan { node, first, last: line.max(first + 1) - 1 });
        }
    }
    (out, spans)
}

/// Candidate bounds `2^k` on every dim for the fast path, largest first. The largest is
/// 2^48: a dim is the extent of a tensor, and a tensor with more than 2^48 elements needs
/// more than 256 TiB even at a byte an element, more memory than any machine has, so a
/// larger bound would let no more calls take the fast path, and each candidate costs the
/// macro an emission of the whole function. (A tensor with a zero extent and another of
/// more than 2^48 takes the checked path, and writes nothing.)
const K_BITS: [u32; 5] = [48, 40, 32, 24, 16];

/// A feature level: the body is compiled once per level.
pub(super) struct Level {
    /// The wrapper suffix (`avx512`).
    pub suffix: String,
    /// `target_arch` of the level.
    pub arch: &'static str,
    /// The `target_feature(enable = ..)` string.
    pub enable: String,
    /// The features to detect at run time.
    pub detect: Vec<String>,
}

/// The levels for `target`: detected at run time for the plain CPU target; exactly the
/// target's features (and no portable fallback) when it names some.
fn levels_of(target: &Target) -> R<Vec<Level>> {
    if target.features.is_empty() {
        let lv = |suffix: &str, enable: &str, detect: &[&str]| Level {
            suffix: suffix.into(),
            arch: "x86_64",
            enable: enable.into(),
            detect: detect.iter().map(|s| s.to_string()).collect(),
        };
        return Ok(vec![
            lv("avx512", "avx512f,avx512vl", &["avx512f", "avx512vl"]),
            lv("avx2", "avx2,fma", &["avx2", "fma"]),
        ]);
    }
    let x86 = ["sse2", "sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f"];
    let arch = if target.features.iter().all(|f| x86.contains(&f.as_str())) {
        "x86_64"
    } else if target.features.iter().all(|f| f == "neon") {
        "aarch64"
    } else {
        return Err(unsupported(format!("the mix of features of target `{target}`")));
    };
    Ok(vec![Level {
        suffix: "target".into(),
        arch,
        enable: target.features.join(","),
        detect: target.features.clone(),
    }])
}

pub(crate) fn unsupported(what: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported { what: what.into() }
}

/// How a buffer is reached from the code being emitted.
#[derive(Clone, Debug)]
pub(super) enum BufKind {
    /// A tensor input: `&[T]`.
    Input,
    /// A tensor output: `&mut [T]`.
    Output,
    /// An allocation: an array or a `Vec` owned by the function.
    Local,
    /// Inside a parallel loop: this iteration's chunk of a buffer it writes.
    Chunk(Chunk),
}

/// A buffer cut into chunks by parallel loop `var`: iteration `var` owns elements
/// `offset + [(var - min) * size, (var - min + 1) * size)`.
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub var: Var,
    pub min: Expr,
    /// Set by the first access; every other access must agree.
    pub size: Option<Expr>,
    /// Where chunk 0 starts (loop-invariant); `None` while probing for it.
    pub offset: Option<Expr>,
    /// While probing: the lowest element each access reaches in chunk 0's terms.
    pub candidates: Vec<Expr>,
    /// Variables bound inside the loop (a chunk size may not mention them).
    pub inner: BTreeSet<Var>,
}

#[derive(Clone, Debug)]
pub(super) struct BufInfo {
    pub ident: Ident,
    pub dtype: DType,
    /// The number of elements, when the generated code's buffer provably has exactly
    /// that many (parameters: the product of the shape; allocations: an exact extent).
    pub len: Option<Expr>,
    pub kind: BufKind,
}

/// The state of one emission of a function body.
pub(super) struct Emitter<'f> {
    f: &'f PrimFunc,
    opts: &'f EmitOptions,
    levels: &'f [Level],
    names: Names,
    facts: Facts,
    bufs: HashMap<Buffer, BufInfo>,
    /// Functions emitted beside `__body` (the parallel loops' per-iteration work).
    items: Vec<TokenStream>,
    n_par: usize,
    in_parallel: bool,
    /// Inside the scalar tail of a vectorized `if`/`else` (see `Stmt::If` in `stmt.rs`).
    in_tail: bool,
    /// Emitting a side of a vector select whose condition varies: its loads read every
    /// lane, a lane outside the buffer as zero (the lanes the select takes are inside).
    lenient: bool,
    /// Emitting a parallel body only to find its chunk offsets (no proofs, no errors
    /// about chunk bounds; the tokens are thrown away).
    probing: bool,
    unchecked: usize,
    /// Whether each bounds proof attempted so far held, in emission order.
    proofs: Vec<bool>,
    /// The proofs of the emission with the smallest dim bound (empty: none to match): a
    /// larger bound that fails one of them proves fewer accesses, so its emission stops
    /// there (`fell_short`) instead of spending the prover's fuel on the rest.
    expect: Vec<bool>,
    fell_short: bool,
    /// Stop (`fell_short`) at the first statement after the `safe` analyzer said no: the
    /// probe of the largest dim bound, which is the answer only if it never does.
    stop_on_refusal: bool,
    /// Divisions computed once per parallel iteration (`parallel::hoist_divisions`).
    hoisted: usize,
    /// Those of the parallel loop being emitted, proved non-negative by a positive
    /// divisor where its iterations run (emitted as unsigned divisions).
    proved_divisions: Vec<crate::tir::Expr>,
    helpers: BTreeSet<&'static str>,
    /// The fast path's bound on every dim is `2^k_bits`.
    k_bits: u32,
    /// Float `a * b + c` becomes a fused multiply-add where the level has FMA.
    pub(super) contract: bool,
    /// The function checks values (`Expr::Check`): every function of it takes the run's
    /// `__fault: &Fault`.
    pub(super) has_checks: bool,
}

/// The result of [`Emitter::run`].
pub(super) struct Emitted {
    names: Names,
    body: TokenStream,
    items: Vec<TokenStream>,
    proofs: Vec<bool>,
    unchecked: usize,
    hoisted: usize,
    helpers: BTreeSet<&'static str>,
    k_bits: u32,
}

impl<'f> Emitter<'f> {
    fn new(f: &'f PrimFunc, opts: &'f EmitOptions, dims: &[Var], levels: &'f [Level], k_bits: u32) -> Self {
        let mut names = Names::default();
        let mut bufs = HashMap::new();
        for p in &f.params {
            match p {
                Param::Tensor { buffer, shape, is_output } => {
                    let len = shape.iter().cloned().reduce(|a, b| a * b).unwrap_or(Expr::int(1));
                    let kind = if *is_output { BufKind::Output } else { BufKind::Input };
                    let info = BufInfo { ident: names.buffer(buffer), dtype: buffer.dtype(), len: Some(len), kind };
                    bufs.insert(buffer.clone(), info);
                }
                Param::Scalar(v) => {
                    names.var(v);
                }
            }
        }
        for d in dims {
            names.var(d);
        }
        Emitter {
            f,
            opts,
            levels,
            names,
            facts: Facts::new(dims, k_bits),
            bufs,
            items: Vec::new(),
            n_par: 0,
            in_parallel: false,
            in_tail: false,
            lenient: false,
            probing: false,
            unchecked: 0,
            proofs: Vec::new(),
            expect: Vec::new(),
            fell_short: false,
            stop_on_refusal: false,
            hoisted: 0,
            proved_divisions: Vec::new(),
            helpers: BTreeSet::new(),
            k_bits,
            contract: opts.contract && f.target.fp_contract,
            has_checks: has_checks(f),
        }
    }

    /// A constant condition, true in the instances of the feature levels that have FMA
    /// (`__LEVEL` is the level's index in the body and in parallel loops' bodies).
    /// The condition that the instance being emitted is for an x86-64 level with
    /// AVX-512F, if there is such a level.
    pub(super) fn avx512_levels(&self) -> Option<TokenStream> {
        let ids: Vec<Literal> = self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, lv)| lv.arch == "x86_64" && lv.enable.split(',').any(|f| f == "avx512f"))
            .map(|(i, _)| Literal::u8_suffixed(i as u8))
            .collect();
        (!ids.is_empty()).then(|| quote!(matches!(__LEVEL, #(#ids)|*)))
    }

    pub(super) fn fma_levels(&self) -> TokenStream {
        let ids: Vec<Literal> = self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, lv)| lv.arch == "aarch64" || lv.enable.split(',').any(|f| f == "fma" || f == "avx512f"))
            .map(|(i, _)| Literal::u8_suffixed(i as u8))
            .collect();
        if ids.is_empty() {
            quote!(false)
        } else {
            quote!(matches!(__LEVEL, #(#ids)|*))
        }
    }

    /// The emitted function; `None` when it fell short of `expect` (and stopped).
    fn run(mut self) -> R<Option<Emitted>> {
        let body = match self.stmt(&self.f.body.clone()) {
            Err(_) if self.fell_short => return Ok(None),
            r => r?,
        };
        // A refusal in the last statement leaves no statement after it to stop at.
        if self.stop_on_refusal && self.facts.refused() > 0 {
            return Ok(None);
        }
        Ok(Some(Emitted {
            names: self.names,
            body,
            items: self.items,
            unchecked: self.unchecked,
            proofs: self.proofs,
            hoisted: self.hoisted,
            helpers: self.helpers,
            k_bits: self.k_bits,
        }))
    }

    /// Records whether a bounds proof held; an error (which stops the emission) when a
    /// proof of `expect` failed.
    pub(super) fn proved(&mut self, held: bool) -> R<()> {
        let i = self.proofs.len();
        self.proofs.push(held);
        if !held && self.expect.get(i) == Some(&true) {
            self.fell_short = true;
            return Err(unsupported("a dim bound that proves fewer accesses".to_string()));
        }
        Ok(())
    }

    /// The Rust type of a value of `d` (`[T; L]` for vectors).
    pub(super) fn value_ty(&self, d: DType) -> R<TokenStream> {
        let t = scalar_ty(d)?;
        Ok(if d.lanes > 1 {
            let l = Literal::usize_unsuffixed(d.lanes as usize);
            quote!([#t; #l])
        } else {
            t
        })
    }
}

/// The Rust name of a scalar type (in scope through `use ::core::primitive::*` names).
pub(crate) fn scalar_ty(d: DType) -> R<TokenStream> {
    let name = match (d.kind, d.bits) {
        (ScalarKind::Bool, _) => "bool",
        (ScalarKind::Int, 8) => "i8",
        (ScalarKind::Int, 16) => "i16",
        (ScalarKind::Int, 32) => "i32",
        (ScalarKind::Int, 64) => "i64",
        (ScalarKind::UInt, 8) => "u8",
        (ScalarKind::UInt, 16) => "u16",
        (ScalarKind::UInt, 32) => "u32",
        (ScalarKind::UInt, 64) => "u64",
        (ScalarKind::Float, 32) => "f32",
        (ScalarKind::Float, 64) => "f64",
        _ => return Err(unsupported(format!("values of type {}", d.element()))),
    };
    let id = Ident::new(name, Span::call_site());
    Ok(quote!(#id))
}

/// `::core::primitive::T` (for the signature, outside the body's `use`).
fn full_ty(d: DType) -> R<TokenStream> {
    let t = scalar_ty(d)?;
    Ok(quote!(::core::primitive::#t))
}

/// The import of a runtime helper the body calls by `name` (`__ld` is
/// `<rt>::cpu::ld`, ...): the helpers are ordinary `#[inline(always)]` functions of the
/// runtime, imported under the short names the body uses.
fn helper(name: &str, rt: &TokenStream) -> TokenStream {
    let f = match name {
        "__par_for" => "par_for",
        "__ChunksMut" => "ChunksMut",
        "__from" => "from",
        "__ld" => "ld",
        "__st" => "st",
        "__ldv" => "ldv",
        "__stv" => "stv",
        "__ldv_c" => "ldv_checked",
        "__stv_c" => "stv_checked",
        "__map1" => "map1",
        "__map2" => "map2",
        "__map3" => "map3",
        "__lane_loop" => "lane_loop",
        "__Align64" => "Align64",
        _ => unreachable!("internal: the runtime has no CPU helper for `{name}`"),
    };
    let (f, short) = (format_ident!("{}", f), format_ident!("{}", name));
    quote!(use #rt::cpu::#f as #short;)
}

/// Puts the function together: signature, checks, helpers, body, dispatch.
fn assemble(f: &PrimFunc, opts: &EmitOptions, dims: &[Var], levels: &[Level], e: Emitted) -> TokenStream {
    let Emitted { mut names, body, items, unchecked, proofs: _, hoisted: _, helpers, k_bits } = e;
    let rt = &opts.rt_path;
    let fname = fn_ident(f);
    let mut sig = Vec::new();
    let mut inner = Vec::new();
    let mut args = Vec::new();
    let mut checks = Vec::new();
    for p in &f.params {
        let (id, full, short) = match p {
            Param::Tensor { buffer, shape, is_output } => {
                let id = names.buffer(buffer);
                let (full, short) = (full_ty(buffer.dtype()).unwrap(), scalar_ty(buffer.dtype()).unwrap());
                let dims: Vec<TokenStream> = shape.iter().map(|d| dim_expr(d, &mut names)).collect();
                let shown = shape.iter().map(crate::tir::printer::print_expr).collect::<Vec<_>>().join(", ");
                let msg = format!("the length of `{}` is not the product of its shape [{shown}]", buffer.name());
                let kname = &f.name;
                checks.push(quote! {
                    if !__len_is(#id.len(), &[#(#dims),*]) {
                        return ::core::result::Result::Err(#rt::cpu_failed(#kname, #msg));
                    }
                });
                if *is_output {
                    (id, quote!(&mut [#full]), quote!(&mut [#short]))
                } else {
                    (id, quote!(&[#full]), quote!(&[#short]))
                }
            }
            Param::Scalar(v) => (names.var(v), full_ty(v.dtype()).unwrap(), scalar_ty(v.dtype()).unwrap()),
        };
        sig.push(quote!(#id: #full));
        inner.push(quote!(#id: #short));
        args.push(quote!(#id));
    }
    for d in dims {
        let id = names.var(d);
        sig.push(quote!(#id: ::core::primitive::i64));
        inner.push(quote!(#id: i64));
        args.push(quote!(#id));
    }
    if has_checks(f) {
        sig.push(quote!(__fault: &#rt::cpu::Fault));
        inner.push(quote!(__fault: &#rt::cpu::Fault));
        args.push(quote!(__fault));
    }
    let fast = if unchecked > 0 {
        let bound = Literal::i64_suffixed(1i64 << k_bits);
        let conds = dims.iter().map(|d| {
            let id = names.var(d);
            quote!(#id <= #bound)
        });
        quote!(true #(&& #conds)*)
    } else {
        quote!(true)
    };
    let helper_items = helpers.iter().map(|h| helper(h, rt));
    let wrappers = levels.iter().enumerate().map(|(i, lv)| {
        let w = format_ident!("__body_{}", lv.suffix);
        let (arch, enable, i) = (lv.arch, &lv.enable, i as u8);
        quote! {
            #[cfg(target_arch = #arch)]
            #[target_feature(enable = #enable)]
            unsafe fn #w<const __FAST: bool>(#(#inner),*) -> ::core::result::Result<(), #rt::Error> {
                __body::<#i, __FAST>(#(#args),*)
            }
        }
    });
    let dispatch = dispatch(f, levels, &args, unchecked > 0, rt);
    quote! {
        #[allow(
            non_snake_case, unused_variables, unused_mut, unused_parens, unused_braces, unused_unsafe,
            unused_imports, dead_code, clippy::all
        )]
        fn #fname(#(#sig),*) -> ::core::result::Result<(), #rt::Error> {
            use ::core::primitive::{bool, f32, f64, i16, i32, i64, i8, str, u128, u16, u32, u64, u8, usize};
            use #rt::cpu::len_is as __len_is;
            #(#helper_items)*
            #(#checks)*
            #[inline(always)]
            fn __body<const __LEVEL: u8, const __FAST: bool>(#(#inner),*) -> ::core::result::Result<(), #rt::Error> {
                #body
                ::core::result::Result::Ok(())
            }
            #(#items)*
            #(#wrappers)*
            let __fast: bool = #fast;
            #dispatch
        }
    }
}

/// Runs the best level the CPU has (or the target's own level, or an error).
fn dispatch(f: &PrimFunc, levels: &[Level], args: &[TokenStream], has_slow: bool, rt: &TokenStream) -> TokenStream {
    let ok = quote!(::core::result::Result::Ok(()));
    let detect = |lv: &Level| {
        let fs = lv.detect.iter().map(|d| {
            if lv.arch == "x86_64" {
                quote!(::std::is_x86_feature_detected!(#d))
            } else {
                quote!(::std::arch::is_aarch64_feature_detected!(#d))
            }
        });
        quote!(#(#fs)&&*)
    };
    if !f.target.features.is_empty() {
        let lv = &levels[0];
        let (arch, cond) = (lv.arch, detect(lv));
        let w = format_ident!("__body_{}", lv.suffix);
        let msg = format!("it was compiled for `{}`, and this CPU lacks some of {}", f.target, lv.detect.join(", "));
        let kname = &f.name;
        let run = if has_slow {
            quote! {
                if __fast { unsafe { #w::<true>(#(#args),*) } } else { unsafe { #w::<false>(#(#args),*) } }
            }
        } else {
            quote!(unsafe { #w::<true>(#(#args),*) })
        };
        return quote! {
            #[cfg(target_arch = #arch)]
            {
                if #cond {
                    // The features were just detected.
                    #run?;
                    return #ok;
                }
            }
            ::core::result::Result::Err(#rt::cpu_failed(#kname, #msg))
        };
    }
    let tries = levels.iter().map(|lv| {
        let (arch, cond) = (lv.arch, detect(lv));
        let w = format_ident!("__body_{}", lv.suffix);
        quote! {
            #[cfg(target_arch = #arch)]
            {
                if __fast && #cond {
                    unsafe { #w::<true>(#(#args),*) }?;
                    return #ok;
                }
            }
        }
    });
    // On x86-64 the portable instance runs only on a CPU without AVX2 + FMA (or when a dim
    // exceeds the fast path's bound): there it is the checked one alone, so the body is
    // compiled three times, not four (LLVM's time on the unrolled tiles is most of a
    // release build of such kernels). Elsewhere it is the main instance, fast and checked.
    let portable = if has_slow {
        quote! {
            {
                #[cfg(target_arch = "x86_64")]
                let __r = __body::<255, false>(#(#args),*);
                #[cfg(not(target_arch = "x86_64"))]
                let __r = if __fast { __body::<255, true>(#(#args),*) } else { __body::<255, false>(#(#args),*) };
                __r
            }
        }
    } else {
        quote!(__body::<255, true>(#(#args),*))
    };
    quote! {
        #(#tries)*
        #portable?;
        #ok
    }
}

/// Whether `f` checks values (`Expr::Check`): its function then takes a last parameter
/// `__fault: &Fault` that records the first failed check of the run.
pub fn has_checks(f: &PrimFunc) -> bool {
    !f.checks.is_empty() && crate::tir::visit::contains_check(&f.body)
}

/// A shape entry as an `i64` expression (a constant or a dim).
fn dim_expr(d: &Expr, names: &mut Names) -> TokenStream {
    match d {
        Expr::Int { value, .. } => {
            let l = Literal::i64_suffixed(*value);
            quote!(#l)
        }
        Expr::Var(v) => {
            let id = names.var(v);
            quote!(#id)
        }
        other => {
            panic!("internal: shape entry `{}` is neither a constant nor a dim", crate::tir::printer::print_expr(other))
        }
    }
}
