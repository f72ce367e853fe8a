//! Parallel loops: the runtime's pool over disjoint chunks of every buffer the loop writes.
//!
//! For loop `v in [min, min + extent)`, every access to a buffer the body writes (and
//! that lives outside the loop) must be `O + (v - min) * S + r` where `O` and `S` do not
//! depend on anything bound inside the loop and are the same for every access to that
//! buffer, and the `math` analyzer proves `0 <= r` and `r + span < S` (`span`: the extent
//! of a vector access) for every value of the inner loops under the guards that enclose
//! the access. Then iteration `v` only touches chunk `v - min` of `S` elements of
//! `buf[O..]`, and the body indexes that chunk at `r`. Otherwise the loop is rejected
//! ([`CodegenError::ParallelNotDisjoint`]); it is never made serial silently.
//!
//! `O` (zero unless the loop is nested in others, like `f` in `for n { parallel f }`) is
//! found by a first, probing emission of the body: each access's lowest element over the
//! inner loops, and the provably smallest of those is taken. An access in a branch whose
//! guards pin `v` to its first or last value (the narrower last panel of a packed operand)
//! no longer names `v`, which the simplifier replaced by that value: it is read as
//! `index + (v - value) * S` with the `S` of the loop's other accesses, and then proved
//! like them.
//!
//! Race freedom does not rest on the proof: the chunks are `&mut` slices handed out by
//! `tvm_runtime::pool::ChunksMut`, chunk `k` to iteration `k` only (`par_for` runs each
//! iteration once), so they are disjoint, and other buffers are shared read-only. The proof makes the chunked code compute what the
//! serial loop computes.

use super::expr::int_lit;
use super::fused::merge_fused_divmod;
use super::stmt::slice_arg;
use super::{BufKind, Chunk, Emitter, R};
use crate::codegen::CodegenError;
use crate::tir::mutate::{substitute, substitute_one};
use crate::tir::printer::print_expr;
use crate::tir::visit::{uses_var, vars_of, walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, Stmt, Var};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeSet;
use std::collections::HashMap;

/// An access to a chunked buffer.
pub(super) struct ChunkAccess {
    /// The index into the chunk.
    pub index: Expr,
    /// The chunk size, and whether the generated code computes it exactly.
    pub size: Expr,
    pub size_exact: bool,
    /// `offset + (v - min) * size`: where the chunk starts in the whole buffer.
    pub start: Expr,
    /// The chunk offset `O`, and whether the generated code computes it exactly.
    pub offset: Expr,
    pub offset_exact: bool,
}

/// What a loop body touches.
#[derive(Default)]
struct Scan {
    /// Buffers stored to (that are not allocated inside), in order of appearance.
    written: Vec<Buffer>,
    /// Buffers loaded from (that are not allocated inside), in order of appearance.
    read: Vec<Buffer>,
    allocated: BTreeSet<Buffer>,
    /// Variables bound inside (loop and `let` variables).
    bound: BTreeSet<Var>,
    /// Variables used, in order of appearance.
    used: Vec<Var>,
}

impl Visitor for Scan {
    fn visit_expr(&mut self, e: &Expr) {
        match e {
            Expr::Var(v) if !self.used.contains(v) => self.used.push(v.clone()),
            Expr::Load { buffer, .. } if !self.read.contains(buffer) => self.read.push(buffer.clone()),
            _ => {}
        }
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Store { buffer, .. } if !self.written.contains(buffer) => self.written.push(buffer.clone()),
            Stmt::Allocate { buffer, .. } => {
                self.allocated.insert(buffer.clone());
            }
            Stmt::For { var, .. } | Stmt::Let { var, .. } => {
                self.bound.insert(var.clone());
            }
            _ => {}
        }
        walk_stmt(self, s)
    }
}

impl Emitter<'_> {
    /// An outermost parallel loop with a possibly non-trivial extent.
    pub(super) fn parallel_loop(&mut self, var: &Var, min: &Expr, extent: &Expr, body: &Stmt) -> R<TokenStream> {
        let body = &self.hoist_divisions(var, min, extent, body);
        let mut scan = Scan::default();
        scan.visit_stmt(body);
        let written: Vec<Buffer> = scan.written.iter().filter(|b| !scan.allocated.contains(*b)).cloned().collect();
        let shared: Vec<Buffer> =
            scan.read.iter().filter(|b| !scan.allocated.contains(*b) && !written.contains(b)).cloned().collect();
        let mut free: Vec<Var> = scan.used.iter().filter(|v| !scan.bound.contains(*v) && *v != var).cloned().collect();
        // A chunk-relative index is emitted with the `let`s outside substituted (see
        // `chunk_index`): the variables of their values are passed in too.
        let mut k = 0;
        while k < free.len() {
            if let Some(value) = self.facts.lets.get(&free[k]) {
                for x in vars_of(value) {
                    if !free.contains(&x) && !scan.bound.contains(&x) && x != *var {
                        free.push(x);
                    }
                }
            }
            k += 1;
        }
        let mut inner = scan.bound.clone();
        inner.insert(var.clone());
        for b in &written {
            match self.bufs.get(b).map(|i| &i.kind) {
                None => {
                    return Err(super::unsupported(format!(
                        "a store to `{}`, which is neither a parameter nor allocated",
                        b.name()
                    )))
                }
                Some(BufKind::Input) => return Err(super::unsupported(format!("a store to input `{}`", b.name()))),
                Some(_) => {}
            }
        }

        // Probe for the chunk offsets, then emit the body for real.
        let (unchecked, helpers) = (self.unchecked, self.helpers.clone());
        self.probing = true;
        let probe = self.chunked_body(var, min, extent, body, &written, &inner, &HashMap::new());
        self.probing = false;
        (self.unchecked, self.helpers) = (unchecked, helpers);
        let mut offsets = HashMap::new();
        for (b, ch) in probe?.1 {
            let m = &self.facts.math;
            let lowest = ch
                .candidates
                .iter()
                .find(|c| ch.candidates.iter().all(|d| m.can_prove(&Expr::le((*c).clone(), d.clone()))));
            offsets.insert(b, lowest.or(ch.candidates.first()).cloned().unwrap_or(Expr::int(0)));
        }
        let (body, chunks) = self.chunked_body(var, min, extent, body, &written, &inner, &offsets)?;

        // The per-iteration function and its feature-level wrappers.
        let n = self.n_par;
        self.n_par += 1;
        let fname = format_ident!("__par{}", n);
        let v = self.names.var(var);
        let vty = self.value_ty(var.dtype())?;
        let mut params = vec![quote!(#v: #vty)];
        let mut pnames = vec![v.clone()];
        let mut args = vec![quote!(#v)];
        for (b, _) in &chunks {
            let (id, t) = (self.bufs[b].ident.clone(), self.value_ty(b.dtype())?);
            params.push(quote!(#id: &mut [#t]));
            pnames.push(id.clone());
            args.push(quote!(#id));
        }
        for b in &shared {
            let info = self.bufs.get(b).cloned().ok_or_else(|| {
                super::unsupported(format!("a load from `{}`, which is neither a parameter nor allocated", b.name()))
            })?;
            let (id, t) = (info.ident.clone(), self.value_ty(b.dtype())?);
            params.push(quote!(#id: &[#t]));
            pnames.push(id.clone());
            args.push(slice_arg(&info, false));
        }
        for x in &free {
            let (id, t) = (self.names.var(x), self.value_ty(x.dtype())?);
            params.push(quote!(#id: #t));
            pnames.push(id.clone());
            args.push(quote!(#id));
        }
        if self.has_checks {
            let rt = &self.opts.rt_path;
            params.push(quote!(__fault: &#rt::cpu::Fault));
            pnames.push(format_ident!("__fault"));
            args.push(quote!(__fault));
        }
        let rt = self.opts.rt_path.clone();
        let mut arms = Vec::new();
        let mut wrappers = Vec::new();
        for (i, lv) in self.levels.iter().enumerate() {
            let w = format_ident!("__par{}_{}", n, lv.suffix);
            let (arch, enable, i) = (lv.arch, &lv.enable, i as u8);
            wrappers.push(quote! {
                #[cfg(target_arch = #arch)]
                #[target_feature(enable = #enable)]
                unsafe fn #w<const __FAST: bool>(#(#params),*) -> ::core::result::Result<(), #rt::Error> {
                    #fname::<#i, __FAST>(#(#pnames),*)
                }
            });
            // `__LEVEL` is `i` only inside the wrapper that detected these features.
            arms.push(quote!(#[cfg(target_arch = #arch)] #i => unsafe { #w::<__FAST>(#(#args),*) },));
        }
        self.items.push(quote! {
            #[inline(always)]
            fn #fname<const __LEVEL: u8, const __FAST: bool>(#(#params),*) -> ::core::result::Result<(), #rt::Error> {
                #body
                ::core::result::Result::Ok(())
            }
            #(#wrappers)*
        });

        // The runtime's pool runs the iterations (`tvm_runtime::pool::par_for`), each
        // taking its chunk of every written buffer.
        self.helpers.insert("__par_for");
        self.helpers.insert("__ChunksMut");
        let rt = self.opts.rt_path.clone();
        let ext = self.expr(extent)?;
        let zero = int_lit(0, extent.dtype())?;
        let one = int_lit(1, extent.dtype())?;
        let mut setup = Vec::new();
        let mut take = Vec::new();
        for (b, ch) in &chunks {
            let info = &self.bufs[b];
            let (id, mut arg) = (info.ident.clone(), slice_arg(info, true));
            let size = ch.size.clone().expect("a written buffer has a chunk size");
            let s = self.expr(&size)?;
            let offset = ch.offset.clone().expect("the chunk offset is chosen");
            if !offset.is_const_int(0) {
                self.helpers.insert("__from");
                let o = self.expr(&offset)?;
                arg = quote!(__from(#arg, #o));
            }
            let c = format_ident!("__chunks_{}", id.to_string());
            setup.push(quote!(let #c = __ChunksMut::new(#arg, ::core::cmp::Ord::max(#s, #one) as usize);));
            // SAFETY: `par_for` passes each iteration number to exactly one call, so
            // chunk `__k` is taken once.
            take.push(quote!(let #id = unsafe { #c.chunk(__k) };));
        }
        let first = if min.is_const_int(0) {
            quote!(let #v: #vty = __k as #vty;)
        } else {
            let m = self.expr(min)?;
            quote!(let #v: #vty = (__k as #vty).wrapping_add(#m);)
        };
        self.proved_divisions.clear();
        Ok(quote! {
            {
                let __n: usize = ::core::cmp::Ord::max(#ext, #zero) as usize;
                #(#setup)*
                __par_for(__n, |__k: usize| -> ::core::result::Result<(), #rt::Error> {
                    #(#take)*
                    #first
                    match __LEVEL {
                        #(#arms)*
                        _ => #fname::<__LEVEL, __FAST>(#(#args),*),
                    }
                })?;
            }
        })
    }

    /// `body` with each division or remainder by a symbolic divisor that depends on
    /// nothing bound inside (a fused parallel axis's `p / H`, `p % H`) computed once, in
    /// a `let` at the start of the iteration. Inside the loops LLVM keeps it where the
    /// source has it (in a select's branch it is not hoisted), one 64-bit division per
    /// element. Only divisions the emitter proves non-negative by a positive divisor
    /// there are moved (see `nonnegative_division`): computed where the source did not,
    /// they can neither panic nor differ.
    fn hoist_divisions(&mut self, var: &Var, min: &Expr, extent: &Expr, body: &Stmt) -> Stmt {
        let mut scan = Scan::default();
        scan.visit_stmt(body);
        // Only divisions under a condition (a select's branch, an `if`'s body): LLVM
        // hoists the others itself, and every `let` makes the emitter's proofs of the
        // accesses that use it dearer.
        struct Find<'a> {
            bound: &'a BTreeSet<Var>,
            found: Vec<Expr>,
            conditional: u32,
        }
        impl Visitor for Find<'_> {
            fn visit_expr(&mut self, e: &Expr) {
                match e {
                    Expr::Binary { op: crate::tir::BinOp::Div | crate::tir::BinOp::Mod, b, .. }
                        if self.conditional > 0
                            && e.dtype() == crate::dtype::DType::I64
                            && !matches!(**b, Expr::Int { .. })
                            && !vars_of(e).iter().any(|v| self.bound.contains(v))
                            && !crate::arith::reads_memory(e)
                            // A check records a fault where it is evaluated: not moved
                            // out of its guard.
                            && !crate::tir::visit::expr_has_check(e) =>
                    {
                        if !self.found.contains(e) {
                            self.found.push(e.clone());
                        }
                    }
                    Expr::Select { cond, then, otherwise } => {
                        self.visit_expr(cond);
                        self.conditional += 1;
                        self.visit_expr(then);
                        self.visit_expr(otherwise);
                        self.conditional -= 1;
                    }
                    _ => walk_expr(self, e),
                }
            }
            fn visit_stmt(&mut self, s: &Stmt) {
                match s {
                    Stmt::If { cond, then, otherwise } => {
                        self.visit_expr(cond);
                        self.conditional += 1;
                        self.visit_stmt(then);
                        if let Some(o) = otherwise {
                            self.visit_stmt(o);
                        }
                        self.conditional -= 1;
                    }
                    _ => walk_stmt(self, s),
                }
            }
        }
        let mut find = Find { bound: &scan.bound, found: Vec::new(), conditional: 0 };
        find.visit_stmt(body);
        let mut found = find.found;
        if found.is_empty() {
            return body.clone();
        }
        // An iteration runs only when the loop has one: `extent >= 1` there (with `p` in
        // `[0, 3 * H)`, `H >= 1`). Known for these proofs alone: as a fact of every loop
        // it made each proof of the body dearer (the macro's time on the MTCNN kernels
        // doubled).
        let snap = self.facts.snapshot();
        self.facts.bind_loop(var, min, extent);
        if extent.dtype() == crate::dtype::DType::I64 && !matches!(extent, Expr::Int { .. }) && self.facts.exact(extent)
        {
            self.facts.assume_safe(&Expr::ge(extent.clone(), Expr::int(1)));
        }
        found.retain(|e| match e {
            Expr::Binary { a, b, .. } => self.nonnegative_division(a, b),
            _ => false,
        });
        self.facts.restore(snap);
        self.proved_divisions = found.clone();
        if !self.probing {
            self.hoisted += found.len();
        }
        let lets: Vec<(Var, Expr)> =
            found.into_iter().enumerate().map(|(i, e)| (Var::new(format!("__q{i}"), e.dtype()), e)).collect();
        struct Replace<'a>(&'a [(Var, Expr)]);
        impl crate::tir::mutate::Mutator for Replace<'_> {
            fn mutate_expr(&mut self, e: Expr) -> Expr {
                match self.0.iter().find(|(_, x)| *x == e) {
                    Some((v, _)) => Expr::var(v),
                    None => crate::tir::mutate::super_expr(self, e),
                }
            }
        }
        let replaced = crate::tir::mutate::Mutator::mutate_stmt(&mut Replace(&lets), body.clone());
        lets.into_iter().rev().fold(replaced, |body, (var, value)| Stmt::Let { var, value, body: Box::new(body) })
    }

    /// Emits a parallel loop's body with the `written` buffers replaced by their chunks
    /// (at `offsets`, or probing for them when empty); the chunks as they ended up.
    #[allow(clippy::too_many_arguments)]
    fn chunked_body(
        &mut self,
        var: &Var,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
        written: &[Buffer],
        inner: &BTreeSet<Var>,
        offsets: &HashMap<Buffer, Expr>,
    ) -> R<(TokenStream, Vec<(Buffer, Chunk)>)> {
        let saved = self.bufs.clone();
        for b in written {
            let info = self.bufs.get_mut(b).expect("written buffers are known");
            info.kind = BufKind::Chunk(Chunk {
                var: var.clone(),
                min: min.clone(),
                size: None,
                offset: offsets.get(b).cloned(),
                candidates: Vec::new(),
                inner: inner.clone(),
            });
        }
        let snap = self.facts.snapshot();
        self.facts.bind_loop(var, min, extent);
        self.in_parallel = true;
        let body = self.stmt(body);
        self.in_parallel = false;
        self.facts.restore(snap);
        let chunks = written
            .iter()
            .map(|b| match &self.bufs[b].kind {
                BufKind::Chunk(c) => (b.clone(), c.clone()),
                _ => unreachable!("internal: `{}` is no longer chunked", b.name()),
            })
            .collect();
        self.bufs = saved;
        Ok((body?, chunks))
    }

    /// The chunk-relative index of an access to a chunked buffer, or the reason the loop
    /// cannot be parallel.
    pub(super) fn chunk_index(&mut self, buffer: &Buffer, index: &Expr) -> R<ChunkAccess> {
        let BufKind::Chunk(ch) = self.bufs[buffer].kind.clone() else {
            unreachable!("internal: `{}` is not chunked", buffer.name())
        };
        let fail = || CodegenError::ParallelNotDisjoint {
            loop_var: ch.var.name().to_string(),
            buffer: buffer.name().to_string(),
            index: print_expr(index),
        };
        let (base, stride, lanes) = match index {
            Expr::Ramp { base, stride, lanes } => (&**base, Some(&**stride), *lanes as i64),
            i if i.dtype().lanes == 1 => (i, None, 1),
            _ => return Err(fail()),
        };
        let span = match stride {
            None => 0,
            Some(s) => s.as_int().ok_or_else(fail)? * (lanes - 1),
        };
        let m = &self.facts.math;
        let b = merge_fused_divmod(&substitute(base.clone(), &self.facts.lets), m);
        let v = Expr::var(&ch.var);
        // A border iteration of the loop in a branch of its own (the last panel of a packed
        // operand, narrower than the others): the guards pin `v` to its first or last value,
        // which the simplifier wrote in its place. Put back `v` at the chunk size the other
        // accesses found, so the access shows which chunk it is in.
        let b = match (&ch.size, m.interval_bounds(&v)) {
            (Some(s), Some((lo, hi))) if !uses_var(&b, &ch.var) => {
                let pinned = [hi, lo].into_iter().find(|&c| m.can_prove(&Expr::eq(v.clone(), Expr::int(c))));
                match pinned {
                    Some(c) => m.simplify(&(b + (v.clone() - c) * s.clone())),
                    None => b,
                }
            }
            _ => b,
        };
        let size = m.simplify(&(substitute_one(b.clone(), &ch.var, v.clone() + 1) - b.clone()));
        if vars_of(&size).iter().any(|x| ch.inner.contains(x)) {
            return Err(fail());
        }
        let rest = m.simplify(&(b - (v.clone() - ch.min.clone()) * size.clone()));
        if uses_var(&rest, &ch.var) {
            return Err(fail());
        }
        if let Some(s) = &ch.size {
            if !m.simplify(&(s.clone() - size.clone())).is_const_int(0) {
                return Err(fail());
            }
        }
        let inner: Vec<Var> = ch.inner.iter().cloned().collect();
        let offset = match &ch.offset {
            Some(o) => o.clone(),
            None => {
                // Probing: this access's lowest element, if it is the same for every
                // iteration (an inner loop that starts where a partitioned one ended
                // starts at a point that depends on `v`; `O` may not).
                let lo = m
                    .try_symbolic_bounds(&rest, &inner)
                    .0
                    .filter(|lo| !vars_of(lo).iter().any(|x| ch.inner.contains(x) || *x == ch.var));
                // The bounds over the loops' ranges ignore the guards: a read of the
                // previous element under `j != 0` reaches -1 by them, not by the guard.
                let below_0 = |lo: &Expr| m.can_prove(&Expr::lt(lo.clone(), Expr::int(0)));
                match lo {
                    Some(lo) if below_0(&lo) && m.can_prove(&Expr::ge(rest.clone(), Expr::int(0))) => Expr::int(0),
                    lo => lo.unwrap_or(Expr::int(0)),
                }
            }
        };
        let r = m.simplify(&(rest - offset.clone()));
        if ch.offset.is_some() && !within_chunk(m, &r, span, &size, &inner) {
            return Err(fail());
        }
        // Not simplified: this is what the generated code's chunk offset is, exactly.
        let start = offset.clone() + (v - ch.min.clone()) * size.clone();
        if let BufKind::Chunk(c) = &mut self.bufs.get_mut(buffer).expect("a chunked buffer").kind {
            c.size = Some(size.clone());
            if c.offset.is_none() {
                c.candidates.push(offset.clone());
            }
        }
        // Judged here: a guard around this access may be what bounds them.
        let size_exact = !self.probing && self.facts.exact(&size);
        let offset_exact = !self.probing && self.facts.exact(&offset);
        let index = match stride {
            Some(s) => Expr::Ramp { base: Box::new(r), stride: Box::new(s.clone()), lanes: lanes as u16 },
            None => r,
        };
        Ok(ChunkAccess { index, size, size_exact, start, offset, offset_exact })
    }
}

/// Whether `0 <= r + span` and `r + span < size` for every lane (`span` the offset of the
/// last lane from the first), where the guards and loops around the access hold. When
/// that fails as asked, the inner loops whose steps move `r` by a symbolic amount (a row
/// `N * ii` of a tile) are relaxed to their ranges first: `N * ii + (jo * 8 + ji) < 8 * N`
/// then reads `7 * N + (jo * 8 + ji) < 8 * N`, which the guard `jo * 8 + ji < N` proves.
fn within_chunk(m: &crate::arith::Analyzer, r: &Expr, span: i64, size: &Expr, inner: &[Var]) -> bool {
    let ok = |lo: &Expr, hi: &Expr| {
        m.can_prove(&Expr::ge(lo.clone() + span.min(0), Expr::int(0)))
            && m.can_prove(&Expr::lt(hi.clone() + span.max(0), size.clone()))
    };
    if ok(r, r) {
        return true;
    }
    let rows: Vec<Var> = inner
        .iter()
        .filter(|x| {
            uses_var(r, x) && {
                let step = m.simplify(&(substitute_one(r.clone(), x, Expr::var(x) + 1) - r.clone()));
                step.as_int().is_none()
            }
        })
        .cloned()
        .collect();
    if rows.is_empty() {
        return false;
    }
    match m.try_symbolic_bounds(r, &rows) {
        (Some(lo), Some(hi)) => ok(&lo, &hi),
        _ => false,
    }
}
