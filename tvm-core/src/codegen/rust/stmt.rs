//! Statements, and the loads and stores whose bounds checks the analyzer removes.
//!
//! An access is unchecked only when all of this holds, and the proved bound is passed
//! to the access helper as its `_proof` argument (tokens cannot carry comments):
//! * the buffer's length is known (a parameter's shape product, checked at entry, or an
//!   allocation's exact extent);
//! * the index is computed exactly on the fast path: built from `+ - *` only (wrapping
//!   arithmetic is exact modulo 2^64, and the proved value fits an `i64`), or with every
//!   node provably within `i64`;
//! * the `safe` analyzer proves `0 <= index && index + lanes <= len` (for a chunk of a
//!   parallel loop also `0 <= r && r + lanes <= size`, see [`super::parallel`]);
//! * it is a scalar or a contiguous (`ramp(b, 1, L)`) access outside a lazily
//!   evaluated lane and outside the scalar tail of a vectorized `if` (see `Stmt::If`).
//!
//! Everything else indexes with Rust's checks.

use super::expr::{float_lit, int_lit};
use super::facts::ring_only;
use super::{unsupported, BufInfo, BufKind, Emitter, R};
use crate::dtype::DType;
use crate::tir::mutate::substitute;
use crate::tir::printer::print_expr;
use crate::tir::visit::{vars_of, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, ForKind, Stmt, Var};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashMap;

/// Allocations up to this many elements with a constant extent live on the stack.
const MAX_STACK_ELEMENTS: i64 = 4096;

/// The largest constant stride of a vector load that reads the run of elements its
/// lanes span in one load and shuffles (see `Emitter::load`).
const MAX_LOAD_STRIDE: i64 = 4;

/// How an access reaches its buffer.
pub(super) struct Access {
    pub info: BufInfo,
    /// The index into the slice being accessed (chunk-relative inside parallel loops).
    pub index: Expr,
    /// The bound proved, when the access may skip its check.
    pub proof: Option<String>,
}

impl Emitter<'_> {
    pub(super) fn stmt(&mut self, s: &Stmt) -> R<TokenStream> {
        if self.stop_on_refusal && self.facts.refused() > 0 {
            self.fell_short = true;
            return Err(unsupported("a dim bound that the `safe` analyzer refused".to_string()));
        }
        let code = self.stmt_code(s)?;
        if !self.opts.markers {
            return Ok(code);
        }
        let (kind, id) = match s {
            Stmt::For { var, .. } => (quote!(loop), var.id().0),
            Stmt::Store { buffer, .. } => (quote!(store), buffer.id().0),
            _ => return Ok(code),
        };
        let id = proc_macro2::Literal::u32_unsuffixed(id);
        Ok(quote!(__tvm_mark!(#kind #id); #code __tvm_mark!(end #kind #id);))
    }

    fn stmt_code(&mut self, s: &Stmt) -> R<TokenStream> {
        Ok(match s {
            Stmt::Seq(ss) => {
                let parts = ss.iter().map(|s| self.stmt(s)).collect::<R<Vec<_>>>()?;
                quote!(#(#parts)*)
            }
            Stmt::For { var, min, extent, kind, body } => {
                let trivial = extent.as_int().is_some_and(|e| e <= 1);
                if *kind == ForKind::Parallel && !self.in_parallel && !trivial {
                    return self.parallel_loop(var, min, extent, body);
                }
                let v = self.names.var(var);
                let (lo, ext) = (self.expr(min)?, self.expr(extent)?);
                let snap = self.facts.snapshot();
                self.facts.bind_loop(var, min, extent);
                // Lane-array code, or the guarded scalar border of a vector loop (once
                // partitioned out, LLVM vectorizes it with masked gathers and scatters).
                let lane_code = crate::tir::visit::has_vector_code(body) || is_guarded_innermost(body);
                let mut body = self.stmt(body)?;
                self.facts.restore(snap);
                if lane_code {
                    self.helpers.insert("__lane_loop");
                    body = quote!(#body __lane_loop(););
                }
                if min.is_const_int(0) {
                    let zero = int_lit(0, var.dtype())?;
                    quote!(for #v in #zero..#ext { #body })
                } else {
                    // Saturating: the values taken are always within `[min, min + extent)`.
                    quote!({
                        let __lo = #lo;
                        for #v in __lo..__lo.saturating_add(#ext) { #body }
                    })
                }
            }
            Stmt::If { cond, then, otherwise } => {
                let c = self.expr(cond)?;
                let snap = self.facts.snapshot();
                self.facts.assume(cond, true);
                let t = self.stmt(then)?;
                self.facts.restore(snap);
                match otherwise {
                    Some(o) => {
                        let snap = self.facts.snapshot();
                        self.facts.assume(cond, false);
                        // The scalar tail of a vectorized main path keeps its bounds
                        // checks: unchecked, LLVM merges the fully unrolled tail with the
                        // main path (whose condition implies every tail guard) and splits
                        // the main path's vectors (16 lanes became 8 + 4 + 2 + 1 + 1 in
                        // `objdump`). The tail runs at most once per row.
                        let tail = self.in_tail || has_vector_store(then);
                        let was = std::mem::replace(&mut self.in_tail, tail);
                        let o = self.stmt(o);
                        self.in_tail = was;
                        let o = o?;
                        self.facts.restore(snap);
                        quote!(if #c { #t } else { #o })
                    }
                    None => quote!(if #c { #t }),
                }
            }
            Stmt::Let { var, value, body } => {
                let (v, ty, x) = (self.names.var(var), self.value_ty(var.dtype())?, self.expr(value)?);
                let snap = self.facts.snapshot();
                self.facts.bind_let(var, value);
                let body = self.stmt(body)?;
                self.facts.restore(snap);
                quote!({
                    let #v: #ty = #x;
                    #body
                })
            }
            Stmt::Store { buffer, indices, value } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported("multi-dimensional stores (the function was not flattened)"));
                };
                match super::cse::common(value) {
                    // The repeats bound first, then the store of what reads them.
                    Some((lets, value)) => {
                        let store = Stmt::Store { buffer: buffer.clone(), indices: indices.clone(), value };
                        let s = lets.into_iter().rev().fold(store, |body, (var, value)| Stmt::Let {
                            var,
                            value,
                            body: Box::new(body),
                        });
                        self.stmt_code(&s)?
                    }
                    None => self.store(buffer, index, value)?,
                }
            }
            Stmt::Prefetch { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported("multi-dimensional prefetches (the function was not flattened)"));
                };
                // Checked access: `prefetch` takes the slice and an index that may lie
                // outside it (then nothing is fetched).
                let acc = self.access(buffer, index, true)?;
                let arg = slice_arg(&acc.info, false);
                let (i, rt) = (self.expr(&acc.index)?, &self.opts.rt_path);
                quote!(#rt::cpu::prefetch(#arg, #i);)
            }
            Stmt::Allocate { buffer, extent, body } => self.allocate(buffer, extent, body)?,
            Stmt::NoOp => quote!(),
            Stmt::ThreadBinding { .. } | Stmt::Barrier | Stmt::WarpReduce { .. } | Stmt::Launch { .. } => {
                return Err(unsupported("GPU statements (thread bindings, barriers, launches) in a cpu function"))
            }
            Stmt::Realize { .. } => return Err(unsupported("`realize` (the function was not flattened)")),
        })
    }

    fn allocate(&mut self, buffer: &Buffer, extent: &Expr, body: &Stmt) -> R<TokenStream> {
        let id = self.names.buffer(buffer);
        let d = buffer.dtype();
        let (t, zero) = (self.value_ty(d)?, zero(d)?);
        let decl = match extent.as_int() {
            // A cache line or more: aligned to one, so that vector rows of it (a register
            // tile's write cache) never straddle two lines.
            Some(n) if (0..=MAX_STACK_ELEMENTS).contains(&n) && n * (d.bits as i64 / 8) >= 64 => {
                let n = Literal::usize_unsuffixed(n as usize);
                self.helpers.insert("__Align64");
                quote!(let mut #id: __Align64<[#t; #n]> = __Align64([#zero; #n]);)
            }
            Some(n) if (0..=MAX_STACK_ELEMENTS).contains(&n) => {
                let n = Literal::usize_unsuffixed(n as usize);
                quote!(let mut #id: [#t; #n] = [#zero; #n];)
            }
            // A buffer from a pool of the calling thread, bound to a plain slice: stores
            // through it cannot change the pool's bookkeeping, so LLVM keeps its address
            // in a register. Inside a parallel loop's body, once per iteration
            // (`try_scratch`); outside, a 64-byte-aligned block (`try_vec`). Fallible: `?`
            // leaves the function with `OutOfMemory`.
            _ => {
                let n = self.expr(extent)?;
                let (rt, name, kname) = (&self.opts.rt_path, buffer.name(), &self.f.name);
                let guard = format_ident!("__buf_{}", id);
                let alloc = if self.in_parallel {
                    quote!(#rt::cpu::try_scratch::<#t>(#n as i64, #zero, #name, #kname)?)
                } else {
                    quote!(#rt::cpu::try_vec::<#t>(#n as i64, #zero, #name, #kname)?)
                };
                quote!(
                    let mut #guard = #alloc;
                    let #id: &mut [#t] = &mut #guard;
                )
            }
        };
        let len = self.facts.exact(extent).then(|| extent.clone());
        let info = BufInfo { ident: id, dtype: d, len, kind: BufKind::Local };
        let old = self.bufs.insert(buffer.clone(), info);
        let body = self.stmt(body)?;
        match old {
            Some(o) => self.bufs.insert(buffer.clone(), o),
            None => self.bufs.remove(buffer),
        };
        Ok(quote!({
            #decl
            #body
        }))
    }

    fn store(&mut self, buffer: &Buffer, index: &Expr, value: &Expr) -> R<TokenStream> {
        // The value first, then the index: the interpreter's order.
        let v = self.expr(value)?;
        let lanes = index.dtype().lanes;
        let acc = self.access(buffer, index, false)?;
        if matches!(acc.info.kind, BufKind::Input) {
            return Err(unsupported(format!("a store to input `{}`", buffer.name())));
        }
        let id = acc.info.ident.clone();
        let arg = slice_arg(&acc.info, true);
        let l = Literal::usize_unsuffixed(lanes as usize);
        Ok(match (&acc.index, acc.proof) {
            (Expr::Ramp { base, stride, .. }, proof) if stride.is_const_int(1) => {
                let b = self.expr(base)?;
                match proof {
                    Some(p) => {
                        self.helpers.insert("__stv");
                        quote!({
                            let __v = #v;
                            unsafe { __stv::<_, #l, __FAST>(#arg, #b, __v, #p) }
                        })
                    }
                    None => {
                        self.helpers.insert("__stv_c");
                        quote!({
                            let __v = #v;
                            __stv_c::<_, #l>(#arg, #b, __v)
                        })
                    }
                }
            }
            (i, _) if lanes > 1 => {
                // A scatter, lane by lane.
                let li = self.lane(i)?;
                quote!({
                    let __v = #v;
                    for __l in 0..#l {
                        #id[#li as usize] = __v[__l];
                    }
                })
            }
            (i, Some(p)) => {
                let i = self.expr(i)?;
                self.helpers.insert("__st");
                quote!({
                    let __v = #v;
                    unsafe { __st::<_, __FAST>(#arg, #i, __v, #p) }
                })
            }
            (i, None) => {
                let i = self.expr(i)?;
                quote!(#id[#i as usize] = #v;)
            }
        })
    }

    /// A load (scalar or vector) outside lazily evaluated lanes.
    pub(super) fn load(&mut self, buffer: &Buffer, index: &Expr) -> R<TokenStream> {
        let lanes = index.dtype().lanes;
        let acc = self.access(buffer, index, false)?;
        let id = acc.info.ident.clone();
        let arg = slice_arg(&acc.info, false);
        let l = Literal::usize_unsuffixed(lanes as usize);
        // An index with a checked part may still be outside the buffer when the check
        // failed (its fallback 0 in an empty dim): such a read gives 0, never panics (the
        // run returns the check's error).
        let checked = crate::tir::visit::expr_has_check(index);
        let rt = self.opts.rt_path.clone();
        Ok(match (&acc.index, acc.proof) {
            (Expr::Ramp { base, stride, .. }, proof) if stride.is_const_int(1) => {
                let b = self.expr(base)?;
                match proof {
                    Some(p) => {
                        self.helpers.insert("__ldv");
                        quote!((unsafe { __ldv::<_, #l, __FAST>(#arg, #b, #p) }))
                    }
                    None if checked => quote!(#rt::cpu::ldv_or_default::<_, #l>(#arg, #b)),
                    None if self.lenient => quote!(#rt::cpu::ldv_lanes::<_, #l>(#arg, #b)),
                    None => {
                        self.helpers.insert("__ldv_c");
                        quote!(__ldv_c::<_, #l>(#arg, #b))
                    }
                }
            }
            (Expr::Ramp { base, stride, .. }, Some(p)) if stride.as_int().is_some_and(|s| s > 1) => {
                // A small constant stride whose span is proved in bounds: the span in one
                // load (a vector or two), the lanes picked from it by a shuffle
                // instead of one load per lane.
                let s = stride.as_int().expect("checked");
                let span = Literal::usize_unsuffixed(((lanes as i64 - 1) * s + 1) as usize);
                let (b, t, s) =
                    (self.expr(base)?, super::scalar_ty(acc.info.dtype)?, Literal::usize_unsuffixed(s as usize));
                self.helpers.insert("__ldv");
                quote!({
                    let __w: [#t; #span] = unsafe { __ldv::<_, #span, __FAST>(#arg, #b, #p) };
                    ::core::array::from_fn::<#t, #l, _>(|__l| __w[__l * #s])
                })
            }
            (Expr::Ramp { base, stride, .. }, None)
                if !checked && !self.lenient && stride.as_int().is_some_and(|s| (2..=MAX_LOAD_STRIDE).contains(&s)) =>
            {
                // Not proved: the same span load where it is inside the buffer (one
                // comparison), lane by lane (and bounds-checked) where it is not.
                let s = stride.as_int().expect("checked");
                let span = Literal::usize_unsuffixed(((lanes as i64 - 1) * s + 1) as usize);
                let (b, s) = (self.expr(base)?, Literal::usize_unsuffixed(s as usize));
                let rt = self.opts.rt_path.clone();
                quote!(#rt::cpu::ldv_strided::<_, #l, #span, #s>(#arg, #b))
            }
            (i, _) if lanes > 1 => {
                // A gather, lane by lane.
                let (li, t) = (self.lane(i)?, super::scalar_ty(acc.info.dtype)?);
                if checked || self.lenient {
                    quote!(::core::array::from_fn::<#t, #l, _>(|__l| #rt::cpu::ld_or_default(&#id[..], #li)))
                } else {
                    quote!(::core::array::from_fn::<#t, #l, _>(|__l| #id[#li as usize]))
                }
            }
            (i, Some(p)) => {
                let i = self.expr(i)?;
                self.helpers.insert("__ld");
                quote!((unsafe { __ld::<_, __FAST>(#arg, #i, #p) }))
            }
            (i, None) if checked || self.lenient => {
                let i = self.expr(i)?;
                quote!(#rt::cpu::ld_or_default(&#id[..], #i))
            }
            (i, None) => {
                let i = self.expr(i)?;
                quote!(#id[#i as usize])
            }
        })
    }

    /// Lane `__l` of a vector load (inside a lazily evaluated lane: always checked).
    pub(super) fn load_lane(&mut self, buffer: &Buffer, index: &Expr) -> R<TokenStream> {
        let acc = self.access(buffer, index, true)?;
        let id = acc.info.ident.clone();
        let li = self.lane(&acc.index)?;
        // Lenient (a side of a vector select, see `Emitter::lenient`): a lane the select
        // drops may lie outside the buffer, in a gather's index or under `&&` too.
        if crate::tir::visit::expr_has_check(index) || self.lenient {
            let rt = &self.opts.rt_path;
            return Ok(quote!(#rt::cpu::ld_or_default(&#id[..], #li)));
        }
        Ok(quote!(#id[#li as usize]))
    }

    /// Resolves an access: the chunk-relative index inside a parallel loop, and the
    /// proof that lets it skip its bounds check, if any.
    pub(super) fn access(&mut self, buffer: &Buffer, index: &Expr, in_lane: bool) -> R<Access> {
        let Some(info) = self.bufs.get(buffer).cloned() else {
            return Err(unsupported(format!(
                "an access to `{}`, which is neither a parameter nor allocated",
                buffer.name()
            )));
        };
        let (local, chunk) = match &info.kind {
            BufKind::Chunk(_) => {
                let c = self.chunk_index(buffer, index)?;
                (c.index.clone(), Some(c))
            }
            _ => (index.clone(), None),
        };
        // The elements the access spans from its first: its lanes, or for a ramp of a
        // small constant stride (a stride-2 pooling's windows) the run of elements from
        // its first lane to its last, which it loads whole (see `load`).
        let contiguous = |i: &Expr| match i {
            Expr::Ramp { base, stride, lanes } => match stride.as_int() {
                Some(1) => Some(((**base).clone(), *lanes as i64)),
                Some(s @ 2..=MAX_LOAD_STRIDE) if !in_lane => Some(((**base).clone(), (*lanes as i64 - 1) * s + 1)),
                _ => None,
            },
            i => Some((i.clone(), i.dtype().lanes as i64)),
        };
        let mut proof = None;
        let allowed = self.opts.unchecked && !in_lane && !self.in_tail;
        if let (true, Some(len), Some((base, lanes))) = (allowed, &info.len, contiguous(&local)) {
            let p = match &chunk {
                // The chunk holds `[start, start + size)` of the buffer, clipped to its
                // length: the access must lie in both, and the chunks start in it.
                Some(c) if c.size_exact && c.offset_exact => {
                    let whole = c.start.clone() + base.clone();
                    let ok = self.in_bounds(&base, lanes, &c.size, true)
                        && self.in_bounds(&whole, lanes, len, false)
                        && self.facts.prove(&Expr::ge(c.offset.clone(), Expr::int(0)));
                    ok.then(|| {
                        let (b, s, o, w, n) = (
                            self.show(&base),
                            self.show(&c.size),
                            self.show(&c.offset),
                            self.show(&whole),
                            self.show(len),
                        );
                        format!("0 <= {b} && {b} + {lanes} <= {s} && 0 <= {o} && {w} + {lanes} <= {n}")
                    })
                }
                Some(_) => None,
                None => self.in_bounds(&base, lanes, len, true).then(|| {
                    let (b, n) = (self.show(&base), self.show(len));
                    format!("0 <= {b} && {b} + {lanes} <= {n}")
                }),
            };
            if !self.probing {
                self.proved(p.is_some())?;
            }
            if let Some(p) = p {
                proof = Some(format!("SAFETY: {p} (proved)"));
                self.unchecked += 1;
            }
        }
        Ok(Access { info, index: local, proof })
    }

    /// `e` as text (simplified with what the `safe` analyzer knows), with the
    /// variables' Rust names.
    fn show(&mut self, e: &Expr) -> String {
        let e = &self.facts.simplify_safe(e);
        let mut map = HashMap::new();
        for v in vars_of(e) {
            let id = self.names.var(&v).to_string();
            map.insert(v.clone(), Expr::Var(Var::new(id, v.dtype())));
        }
        print_expr(&substitute(e.clone(), &map))
    }

    /// Whether `0 <= base && base + lanes <= len` holds for the values the generated code
    /// computes (`computed`: `base` itself is evaluated by the generated code; if not,
    /// its parts are, exactly).
    fn in_bounds(&self, base: &Expr, lanes: i64, len: &Expr, computed: bool) -> bool {
        if base.dtype() != DType::I64 || len.dtype() != DType::I64 {
            return false;
        }
        if computed && !(ring_only(base) || self.facts.exact(base)) {
            return false;
        }
        self.facts.prove(&Expr::ge(base.clone(), Expr::int(0)))
            && self.facts.prove(&Expr::le(base.clone() + Expr::int(lanes), len.clone()))
    }
}

/// Whether `s` stores a vector.
fn has_vector_store(s: &Stmt) -> bool {
    struct V(bool);
    impl Visitor for V {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { indices, .. } = s {
                self.0 |= indices.iter().any(|i| i.dtype().lanes > 1);
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut v = V(false);
    v.visit_stmt(s);
    v.0
}

/// Whether `s` is innermost code (no loop inside) with a store under an `if`.
fn is_guarded_innermost(s: &Stmt) -> bool {
    struct G {
        loops: bool,
        guarded_store: bool,
        under_if: u32,
    }
    impl Visitor for G {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { .. } => self.loops = true,
                Stmt::Store { .. } if self.under_if > 0 => self.guarded_store = true,
                Stmt::If { .. } => {
                    self.under_if += 1;
                    walk_stmt(self, s);
                    self.under_if -= 1;
                    return;
                }
                _ => {}
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut g = G { loops: false, guarded_store: false, under_if: 0 };
    g.visit_stmt(s);
    !g.loops && g.guarded_store
}

/// A buffer as a slice argument: parameters and chunks are slices already, allocations
/// are arrays or `Vec`s.
pub(super) fn slice_arg(info: &BufInfo, mutable: bool) -> TokenStream {
    let id = &info.ident;
    match (&info.kind, mutable) {
        (BufKind::Local, true) => quote!(&mut #id[..]),
        (BufKind::Local, false) => quote!(&#id[..]),
        _ => quote!(#id),
    }
}

/// The zero of a scalar type.
pub(super) fn zero(d: DType) -> R<TokenStream> {
    if d.is_bool() {
        Ok(quote!(false))
    } else if d.is_float() {
        float_lit(0.0, d)
    } else {
        int_lit(0, d)
    }
}
