//! Builds the loop nest of every stage from the schedule and the inferred bounds: one
//! loop (or thread binding) per leaf axis, guards where a split or a clipped region
//! leaves iterations outside the tensor, reduction init and update, producers realized
//! and computed at their attach points, and cross-thread reductions. The result is in
//! the `Scheduled` phase: multi-dimensional loads and stores in absolute coordinates,
//! `Realize` for every non-parameter tensor.

use super::infer_bound::Bounds;
use super::lower_cross_thread_reduction::{allreduce, allreduce_tuple, combine_into, shared_elements, warp_plan};
use crate::schedule::{Attach, AxisId, Schedule, ScheduleError, ScheduleErrorKind, StageId};
use crate::te::{Op, Param as TeParam, TensorId};
use crate::tir::mutate::{substitute, substitute_stmt, super_expr, Mutator};
use crate::tir::{Buffer, Expr, IterKind, Param, PrimFunc, Range, Scope, Stmt, Var};
use std::collections::HashMap;

/// Lowers the stages of `sch` (inlined stages already substituted) to a TIR function.
/// `shifted`, where some split may shift, are the bounds with the tails of those splits
/// shifted inwards ([`super::infer_bound::infer_bound_shifted`]): a root stage with such a
/// split gets its nest twice, `if e >= f { nest with the shifted bounds } else { nest with b }`.
pub fn schedule_ops<'a>(
    sch: &'a Schedule,
    b: &'a Bounds,
    shifted: Option<&'a Bounds>,
) -> Result<PrimFunc, Vec<ScheduleError>> {
    let mut cx = Ctx { sch, b, buffers: HashMap::new(), errors: Vec::new() };
    cx.make_buffers();
    let order: Vec<StageId> =
        sch.stages_in_order().into_iter().filter(|&s| sch.stage(s).attach == Attach::Root).collect();
    let mut body = Stmt::NoOp;
    for &sid in order.iter().rev() {
        let mut nest = cx.make_nest(sid);
        let shift = shifted.and_then(|s| Some((s, s.shift_conditions(sch, sid).into_iter().reduce(Expr::and)?)));
        if let Some((shifted, cond)) = shift {
            cx.b = shifted;
            let whole = cx.make_nest(sid);
            cx.b = b;
            nest = Stmt::If { cond, then: Box::new(whole), otherwise: Some(Box::new(nest)) };
        }
        body = cx.realize(sid, Stmt::seq(vec![nest, body]));
    }
    // Dims bound by `usize` scalar parameters rather than by shapes: a `let` from the
    // scalar. A dim in the shape of a parameter (an input, or an output, which the caller
    // passes with a shape checked against the scalar) is already bound by it, and binding
    // it again would shadow a variable in scope.
    let param_dims: Vec<Var> = sch
        .graph
        .params
        .iter()
        .filter_map(|p| match p {
            TeParam::Tensor(t) => Some(*t),
            TeParam::Scalar(_) => None,
        })
        .chain(sch.graph.outputs.iter().copied())
        .flat_map(|t| sch.graph.tensor(t).shape.iter().filter_map(|e| e.as_var().cloned()).collect::<Vec<_>>())
        .collect();
    for d in sch.graph.dims.iter().rev() {
        if param_dims.contains(d) {
            continue;
        }
        if let Some(s) = sch.graph.scalar_params().into_iter().find(|s| s.name() == d.name()) {
            body = Stmt::Let { var: d.clone(), value: Expr::cast(d.dtype(), Expr::var(&s)), body: Box::new(body) };
        }
    }
    let mut params = Vec::new();
    for p in &sch.graph.params {
        params.push(match p {
            TeParam::Tensor(t) => cx.tensor_param(*t, false),
            TeParam::Scalar(v) => Param::Scalar(v.clone()),
        });
    }
    for &o in &sch.graph.outputs {
        params.push(cx.tensor_param(o, true));
    }
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    Ok(PrimFunc {
        name: sch.graph.name.clone(),
        target: sch.target.clone(),
        params,
        body,
        kernels: Vec::new(),
        checks: sch.graph.checks.clone(),
    })
}

struct Ctx<'a> {
    sch: &'a Schedule,
    b: &'a Bounds,
    buffers: HashMap<TensorId, Buffer>,
    errors: Vec<ScheduleError>,
}

impl Ctx<'_> {
    fn make_buffers(&mut self) {
        let g = &self.sch.graph;
        for id in g.ids() {
            let t = g.tensor(id);
            let scope = match self.sch.stage_of(id) {
                Some(s) if !g.is_output(id) => self.sch.storage_scope(s),
                _ => Scope::Global,
            };
            self.buffers.insert(id, Buffer::new(&t.name, t.dtype, scope));
        }
    }

    fn tensor_param(&self, t: TensorId, is_output: bool) -> Param {
        Param::Tensor { buffer: self.buffers[&t].clone(), shape: self.sch.graph.tensor(t).shape.clone(), is_output }
    }

    /// Wraps `body` in the storage of `sid`'s tensors (every component of a reduction
    /// over several values) that are not parameters.
    fn realize(&self, sid: StageId, body: Stmt) -> Stmt {
        let st = self.sch.stage(sid);
        let bounds: Vec<Range> = st.root_axes.iter().map(|a| self.b.root[a].clone()).collect();
        let mut body = body;
        for t in self.sch.graph.tuple_outputs(st.tensor).into_iter().rev() {
            if !self.sch.graph.is_output(t) {
                body = Stmt::Realize { buffer: self.buffers[&t].clone(), bounds: bounds.clone(), body: Box::new(body) };
            }
        }
        body
    }

    /// The stages computed at `axis` of `sid`, producers first, realized and computed
    /// before `rest`.
    fn attach_at(&mut self, sid: StageId, axis: AxisId, rest: Stmt) -> Stmt {
        let attached: Vec<StageId> = self
            .sch
            .stages_in_order()
            .into_iter()
            .filter(|&p| self.sch.stage(p).attach == Attach::At { stage: sid, axis })
            .collect();
        let mut body = rest;
        for &p in attached.iter().rev() {
            let nest = self.make_nest(p);
            body = self.realize(p, Stmt::seq(vec![nest, body]));
        }
        body
    }

    fn make_loop(&mut self, sid: StageId, a: AxisId, body: Stmt) -> Stmt {
        let ann = self.sch.ann(sid, a);
        let var = self.sch.axis(a).var.clone();
        let extent = self.b.extent(a).clone();
        let body = self.with_prefetches(sid, a, &var, &extent, body);
        if let Some((e, f)) = self.shifted_split(sid, a) {
            // The whole blocks, then the last one shifted inwards, as two loops over one
            // variable: in each, `min(o * f, e - f)` folds to one side (the simplifier
            // knows the loop's range), and the first is partitioned like any other.
            let whole = e.clone() / f.clone();
            let tail = (e + (f.clone() - 1)) / f - whole.clone();
            let first = Stmt::for_loop(var.clone(), whole.clone(), ann.kind, body.clone());
            let last = Stmt::For { var, min: whole, extent: tail, kind: ann.kind, body: Box::new(body) };
            return Stmt::seq(vec![first, last]);
        }
        match ann.bind {
            Some(tag) => Stmt::ThreadBinding { tag, var, extent, body: Box::new(body) },
            None => Stmt::for_loop(var, extent, ann.kind, body),
        }
    }

    /// For the outer axis `a` of a split of `sid` that the bounds shift inwards, the
    /// parent's extent and the factor.
    fn shifted_split(&self, sid: StageId, a: AxisId) -> Option<(Expr, Expr)> {
        if !self.b.shifts(a) {
            return None;
        }
        self.sch.stage(sid).relations.iter().find_map(|r| match *r {
            crate::schedule::Relation::Split { parent, outer, inner, .. } if outer == a => {
                Some((self.b.extent(parent).clone(), self.b.extent(inner).clone()))
            }
            _ => None,
        })
    }

    /// `body` (of the loop of `axis` of `sid`, over `var` in `0..extent`) after the
    /// prefetches asked for at that loop: each fetches the region of its tensor that
    /// iteration `var + offset` reads, clipped to the tensor, one cache line at a time.
    fn with_prefetches(&mut self, sid: StageId, axis: AxisId, var: &Var, extent: &Expr, body: Stmt) -> Stmt {
        let st = self.sch.stage(sid);
        if !st.prefetches.iter().any(|p| p.axis == axis) {
            return body;
        }
        let mut out = Vec::new();
        for p in st.prefetches.iter().filter(|p| p.axis == axis) {
            let buf = self.buffers[&p.tensor].clone();
            let shape = self.sch.graph.tensor(p.tensor).shape.clone();
            let (stage, axis_name, tensor) =
                (st.name.clone(), self.sch.axis(axis).name.clone(), buf.name().to_string());
            let parallel = self.sch.ann(sid, axis).kind == crate::tir::ForKind::Parallel;
            if parallel && crate::tir::visit::written_buffers(&body).contains(&buf.id()) {
                let kind = ScheduleErrorKind::PrefetchWrittenInParallel { stage, axis: axis_name, tensor };
                self.errors.push(ScheduleError::new(p.loc, kind));
                continue;
            }
            match read_region(&body, &buf, &self.sch.graph.dims) {
                // A side without a bound would prefetch from the tensor's edge: all of
                // it, per iteration. Refused rather than done.
                Some(region) => match region.into_iter().map(|(l, h)| l.zip(h)).collect::<Option<Vec<_>>>() {
                    Some(bounds) => out.push(prefetch_nest(&buf, &shape, bounds, var, extent, p.offset)),
                    None => self.errors.push(ScheduleError::new(
                        p.loc,
                        ScheduleErrorKind::PrefetchUnbounded { stage, axis: axis_name, tensor },
                    )),
                },
                None => self.errors.push(ScheduleError::new(
                    p.loc,
                    ScheduleErrorKind::PrefetchNotRead { stage, axis: axis_name, tensor },
                )),
            }
        }
        out.push(body);
        Stmt::seq(out)
    }

    /// Reads of tensors become loads of their buffers.
    fn to_loads(&self, e: Expr) -> Expr {
        struct L<'a>(&'a HashMap<TensorId, Buffer>);
        impl Mutator for L<'_> {
            fn mutate_expr(&mut self, e: Expr) -> Expr {
                match super_expr(self, e) {
                    Expr::ProducerLoad { tensor, indices, .. } => {
                        Expr::Load { buffer: self.0[&tensor].clone(), indices }
                    }
                    e => e,
                }
            }
        }
        L(&self.buffers).mutate_expr(e)
    }

    fn make_nest(&mut self, sid: StageId) -> Stmt {
        let sch = self.sch;
        let st = sch.stage(sid).clone();
        let t = sch.graph.tensor(st.tensor).clone();
        let buf = self.buffers[&st.tensor].clone();
        if let (true, Some(m)) = (st.parallel_scan, sch.graph.scan_monoid(st.tensor)) {
            // The scan dim is the last (the default schedule's rule).
            let axes = t.axes();
            let element = |lead: &[Expr], j: Expr| {
                let map: HashMap<Var, Expr> =
                    axes.iter().map(|a| a.var.clone()).zip(lead.iter().cloned().chain([j])).collect();
                self.to_loads(substitute(m.element.clone(), &map))
            };
            let (n, lead) = t.shape.split_last().expect("a scan has a dim");
            return super::parallel_scan::parallel_scan(&st.name, &m, &buf, lead, n.clone(), &element, &sch.target);
        }
        let map = self.b.root_var_map(sch, sid);
        let Op::Compute { axes, body } = &t.op else { unreachable!("stages compute") };
        let indices: Vec<Expr> = axes.iter().map(|a| map[&a.var].clone()).collect();
        // Guards: inside the computed region, and inside the tensor's shape.
        let mut spatial_guard = Vec::new();
        let attached = matches!(st.attach, Attach::At { .. });
        for ((a, idx), dim) in st.root_axes.iter().zip(&indices).zip(&t.shape) {
            let r = &self.b.root[a];
            spatial_guard.push(Expr::lt(idx.clone(), r.min.clone() + r.extent.clone()));
            if attached {
                // The region a consumer reads may reach past the tensor (padding, tails).
                spatial_guard.push(Expr::ge(idx.clone(), Expr::int(0)));
                spatial_guard.push(Expr::lt(idx.clone(), dim.clone()));
            }
        }
        // A split of a derived axis that does not divide it leaves iterations past the
        // parent's extent: guard them (root axes are guarded above).
        let leaf_vals: HashMap<AxisId, Expr> = st.leaf.iter().map(|&a| (a, Expr::var(&sch.axis(a).var))).collect();
        let vals = self.b.axis_values(sch, sid, &leaf_vals);
        let mut derived_spatial = Vec::new();
        let mut derived_reduce = Vec::new();
        for r in &st.relations {
            if let crate::schedule::Relation::Split { parent, .. } = *r {
                if st.root_axes.contains(&parent) || st.reduce_axes.contains(&parent) {
                    continue;
                }
                let g = Expr::lt(vals[&parent].clone(), self.b.extent(parent).clone());
                match sch.axis(parent).kind {
                    IterKind::DataPar => derived_spatial.push(g),
                    IterKind::Reduce => derived_reduce.push(g),
                }
            }
        }
        spatial_guard.extend(derived_spatial);
        let leaf = st.leaf.clone();
        let Expr::Reduce(red) = body else {
            if let Some(nest) = self.scan_in_registers(sid, &buf, body, &map, &indices, &spatial_guard) {
                return nest;
            }
            let value = self.to_loads(substitute(body.clone(), &map));
            let store = guarded(&spatial_guard, Stmt::store(&buf, indices, value));
            return self.wrap_loops(sid, &leaf, store);
        };
        let mut reduce_guard = spatial_guard.clone();
        reduce_guard.extend(derived_reduce);
        for (a, iv) in st.reduce_axes.iter().zip(&red.axes) {
            let v = map[&iv.var].clone();
            let r = &self.b.root[a];
            reduce_guard.push(Expr::lt(v, r.min.clone() + r.extent.clone()));
        }
        // Every component of the reduction (one for a built-in combiner).
        let bufs: Vec<Buffer> = sch.graph.tuple_outputs(st.tensor).iter().map(|t| self.buffers[t].clone()).collect();
        let sources: Vec<Expr> =
            red.sources().into_iter().map(|s| self.to_loads(substitute(s.clone(), &map))).collect();
        let identities = red.identities(t.dtype);
        let r0 = leaf.iter().position(|&a| sch.axis(a).kind == IterKind::Reduce).unwrap_or(leaf.len());
        let thread_reduce: Vec<AxisId> = leaf[r0..]
            .iter()
            .copied()
            .filter(|&a| sch.axis(a).kind == IterKind::Reduce && sch.ann(sid, a).bind.is_some())
            .collect();
        let inner = if thread_reduce.is_empty() {
            let acc = bufs.iter().map(|b| (b.clone(), indices.clone())).collect();
            let update = combine_into(red, &st.name, acc, sources);
            let update_nest = self.wrap_loops(sid, &leaf[r0..], guarded(&reduce_guard, update));
            // The init runs the spatial loops inside the first reduction loop again.
            let mut fresh = HashMap::new();
            let mut init_axes = Vec::new();
            for &a in &leaf[r0..] {
                if sch.axis(a).kind == IterKind::DataPar {
                    let v = sch.axis(a).var.copy_fresh();
                    fresh.insert(sch.axis(a).var.clone(), Expr::var(&v));
                    init_axes.push((a, v));
                }
            }
            let stores = bufs.iter().zip(identities).map(|(b, id)| Stmt::store(b, indices.clone(), id)).collect();
            let mut init = guarded(&spatial_guard, Stmt::seq(stores));
            init = substitute_stmt(init, &fresh);
            for (a, v) in init_axes.into_iter().rev() {
                let ann = sch.ann(sid, a);
                let extent = self.b.extent(a).clone();
                init = match ann.bind {
                    Some(tag) => Stmt::ThreadBinding { tag, var: v, extent, body: Box::new(init) },
                    None => Stmt::for_loop(v, extent, ann.kind, init),
                };
            }
            Stmt::seq(vec![init, update_nest])
        } else {
            let parts = Reduction { red, bufs: &bufs, indices, sources, identities };
            self.cross_thread(sid, &leaf, r0, &thread_reduce, parts, &spatial_guard, &reduce_guard)
        };
        self.wrap_loops(sid, &leaf[..r0], inner)
    }

    /// A recurrence that reads only the previous element along its scan axis (`y[i, j -
    /// 1]`), where the scan axis is a loop of the stage as it was (not split or fused) and
    /// the loops inside it have constant extents (at most 64 iterations in all, none
    /// vectorized or bound): the previous element is kept in a local buffer (registers)
    /// indexed by the inner loops, written after each store, instead of read back from the
    /// tensor. A store and a load of the same tensor at indices the code generator's
    /// compiler cannot tell apart (several rows at a symbolic stride) would otherwise
    /// chain every iteration through memory.
    fn scan_in_registers(
        &mut self,
        sid: StageId,
        buf: &Buffer,
        body: &Expr,
        map: &HashMap<Var, Expr>,
        indices: &[Expr],
        spatial_guard: &[Expr],
    ) -> Option<Stmt> {
        let sch = self.sch;
        let st = sch.stage(sid);
        let scan = sch.scan_axis(sid)?;
        let p = st.leaf.iter().position(|&a| a == scan)?;
        let t = sch.graph.tensor(st.tensor);
        let d = sch.graph.scan_dim(st.tensor)?;
        // Every read of itself is at the previous element, its indices proved in bounds.
        let mut ok = true;
        crate::tir::visit::for_each_expr(body, &mut |e| {
            if let Expr::ProducerLoad { tensor, indices: ix, .. } = e {
                if *tensor == st.tensor {
                    for (k, (x, ax)) in ix.iter().zip(t.axes()).enumerate() {
                        let want = if k == d { Expr::var(&ax.var) - 1 } else { Expr::var(&ax.var) };
                        ok &= *x == want;
                    }
                }
            }
        });
        if !ok {
            return None;
        }
        let inner = &st.leaf[p + 1..];
        let mut size = 1i64;
        let mut flat = Expr::int(0);
        for &a in inner {
            let ann = sch.ann(sid, a);
            let e = self.b.extent(a).as_int()?;
            if ann.bind.is_some() || ann.kind == crate::tir::ForKind::Vectorized || e <= 0 {
                return None;
            }
            size = size.checked_mul(e)?;
            flat = flat * e + Expr::var(&sch.axis(a).var);
        }
        if size > 64 {
            return None;
        }
        let prev = Buffer::new(format!("{}_prev", st.name), buf.dtype(), Scope::Local);
        struct Prev<'a> {
            tensor: TensorId,
            prev: &'a Buffer,
            at: &'a Expr,
        }
        impl Mutator for Prev<'_> {
            fn mutate_expr(&mut self, e: Expr) -> Expr {
                match super_expr(self, e) {
                    Expr::ProducerLoad { tensor, .. } if tensor == self.tensor => {
                        Expr::load(self.prev, vec![self.at.clone()])
                    }
                    e => e,
                }
            }
        }
        let body = Prev { tensor: st.tensor, prev: &prev, at: &flat }.mutate_expr(body.clone());
        let value = self.to_loads(substitute(body, map));
        let store = Stmt::seq(vec![
            Stmt::store(buf, indices.to_vec(), value),
            Stmt::store(&prev, vec![flat.clone()], Expr::load(buf, indices.to_vec())),
        ]);
        let leaf = st.leaf.clone();
        let nest = self.wrap_loops(sid, &leaf[p..], guarded(spatial_guard, store));
        let nest = Stmt::realize(&prev, Expr::int(size), nest);
        Some(self.wrap_loops(sid, &leaf[..p], nest))
    }

    /// Wraps `body` in the loops of `axes`, inserting attached stages at each level.
    fn wrap_loops(&mut self, sid: StageId, axes: &[AxisId], body: Stmt) -> Stmt {
        self.wrap_loops_except(sid, axes, None, body)
    }

    /// [`Self::wrap_loops`], but `skip` gets no loop of its own (its binding is emitted
    /// around the whole nest); its attached stages still go at its place.
    fn wrap_loops_except(&mut self, sid: StageId, axes: &[AxisId], skip: Option<AxisId>, body: Stmt) -> Stmt {
        let mut body = body;
        for &a in axes.iter().rev() {
            body = self.attach_at(sid, a, body);
            if Some(a) != skip {
                body = self.make_loop(sid, a, body);
            }
        }
        body
    }

    #[allow(clippy::too_many_arguments)]
    fn cross_thread(
        &mut self,
        sid: StageId,
        leaf: &[AxisId],
        r0: usize,
        thread_reduce: &[AxisId],
        parts: Reduction,
        spatial_guard: &[Expr],
        reduce_guard: &[Expr],
    ) -> Stmt {
        let sch = self.sch;
        let st = sch.stage(sid);
        let loc = sch.ann(sid, thread_reduce[0]).loc;
        let fail = |cx: &mut Self, why: &'static str| {
            cx.errors.push(ScheduleError::new(
                loc,
                ScheduleErrorKind::RfactorUnsupported {
                    stage: st.name.clone(),
                    axis: sch.axis(thread_reduce[0]).name.clone(),
                    why,
                },
            ));
            Stmt::NoOp
        };
        if thread_reduce.len() > 1 {
            return fail(self, "a cross-thread reduction binds one reduction axis to a thread index");
        }
        if leaf[r0..].iter().any(|&a| sch.axis(a).kind == IterKind::DataPar) {
            return fail(self, "a cross-thread reduction needs its reduction axes innermost");
        }
        let tb = thread_reduce[0];
        let Some(ext) = self.b.extent(tb).as_int() else {
            return fail(self, "the extent of a thread-bound reduction axis must be a compile-time constant");
        };
        let tag = sch.ann(sid, tb).bind.expect("bound");
        let tid = Expr::var(&sch.axis(tb).var);
        // Rows: the other thread indices of this stage, each owning a slice of `red`.
        let mut row = Expr::int(0);
        let mut rows = 1i64;
        for &a in &leaf[..r0] {
            if sch.ann(sid, a).bind.is_some_and(|t| !t.is_block()) {
                let Some(e) = self.b.extent(a).as_int() else {
                    return fail(self, "the thread extents of a cross-thread reduction must be compile-time constants");
                };
                row = row * e + Expr::var(&sch.axis(a).var);
                rows *= e;
            }
        }
        let Reduction { red, bufs, indices, sources, identities } = parts;
        // One local accumulator and one shared buffer per component, named after the
        // stage (or the component's tensor when there are several).
        let name = |b: &Buffer| if bufs.len() == 1 { st.name.clone() } else { b.name().to_string() };
        let accs: Vec<Buffer> =
            bufs.iter().map(|b| Buffer::new(format!("{}_acc", name(b)), b.dtype(), Scope::Local)).collect();
        let reds: Vec<Buffer> =
            bufs.iter().map(|b| Buffer::new(format!("{}_red", name(b)), b.dtype(), Scope::Shared)).collect();
        let zero = || vec![Expr::int(0)];
        let update = combine_into(red, &st.name, accs.iter().map(|a| (a.clone(), zero())).collect(), sources);
        let nest = self.wrap_loops_except(sid, &leaf[r0..], Some(tb), guarded(reduce_guard, update));
        let spatial_guard = spatial_guard.to_vec();
        let outs = bufs.to_vec();
        let write = move |vs: Vec<Expr>| {
            let stores = outs.iter().zip(vs).map(|(b, v)| Stmt::store(b, indices.clone(), v)).collect();
            guarded(&spatial_guard, Stmt::seq(stores))
        };
        let target = &sch.target;
        // Shuffles need the reduction's threads to be consecutive lanes: every `thread.x`
        // binding of the schedule has this extent (so it is the block's x extent).
        let same_x = sch.stages.iter().all(|st| {
            st.ann.iter().all(|(&a, ann)| {
                ann.bind != Some(crate::tir::ThreadTag::ThreadX) || self.b.extent(a).as_int() == Some(ext)
            })
        });
        let (tree, warps) = if red.tuple.is_some() {
            (allreduce_tuple(red, &st.name, &accs, &reds, &tid, ext, &row, write), None)
        } else {
            let warps = warp_plan(tag, ext, bufs[0].dtype(), target.warp_size)
                .filter(|_| same_x)
                .map(|k| (k, target.warp_size));
            let write = move |v: Expr| write(vec![v]);
            (allreduce(red.op, &accs[0], &reds[0], &tid, ext, &row, warps, write), warps)
        };
        let inits = accs.iter().zip(identities).map(|(a, id)| Stmt::store(a, zero(), id)).collect();
        let mut part = Stmt::seq(vec![Stmt::seq(inits), nest, tree]);
        for acc in accs.into_iter().rev() {
            part = Stmt::realize(&acc, Expr::int(1), part);
        }
        let red_elements = shared_elements(ext, rows, warps);
        if red_elements != 0 {
            for r in reds.into_iter().rev() {
                part = Stmt::realize(&r, Expr::int(red_elements), part);
            }
        }
        Stmt::ThreadBinding { tag, var: sch.axis(tb).var.clone(), extent: Expr::int(ext), body: Box::new(part) }
    }
}

/// What a reduction stage stores: its combiner, the buffers of its components (one for a
/// built-in combiner) at `indices`, and each component's source and identity.
struct Reduction<'a> {
    red: &'a crate::tir::Reduce,
    bufs: &'a [Buffer],
    indices: Vec<Expr>,
    sources: Vec<Expr>,
    identities: Vec<Expr>,
}

/// `if all(conds) { s }`.
fn guarded(conds: &[Expr], s: Stmt) -> Stmt {
    let mut it = conds.iter().cloned();
    match it.next() {
        None => s,
        Some(first) => Stmt::if_then(it.fold(first, Expr::and), s),
    }
}

/// The region of `buf` that `body` reads, per dim: inclusive bounds in terms of the
/// variables bound outside `body` (`None` on a side that the analysis cannot bound, such
/// as an index read from memory). `None` when `body` does not read `buf`. Conditions are
/// ignored, so the region may be larger than what is read.
fn read_region(body: &Stmt, buf: &Buffer, dims: &[Var]) -> Option<Vec<(Option<Expr>, Option<Expr>)>> {
    use crate::arith::Analyzer;
    use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
    struct R<'a> {
        buf: &'a Buffer,
        an: Analyzer,
        /// Loop variables bound inside `body`, relaxed over their ranges.
        inner: Vec<Var>,
        lets: HashMap<Var, Expr>,
        region: Option<Vec<(Option<Expr>, Option<Expr>)>>,
    }
    impl Visitor for R<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { var, min, extent, body, .. } => {
                    self.visit_expr(min);
                    self.visit_expr(extent);
                    let snap = self.an.snapshot();
                    self.an.bind(var, substitute(min.clone(), &self.lets), substitute(extent.clone(), &self.lets));
                    self.inner.push(var.clone());
                    self.visit_stmt(body);
                    self.inner.pop();
                    self.an.restore(snap);
                }
                Stmt::ThreadBinding { var, extent, body, .. } => {
                    let snap = self.an.snapshot();
                    self.an.bind(var, Expr::int(0), substitute(extent.clone(), &self.lets));
                    self.inner.push(var.clone());
                    self.visit_stmt(body);
                    self.inner.pop();
                    self.an.restore(snap);
                }
                Stmt::Let { var, value, body } => {
                    self.visit_expr(value);
                    let v = substitute(value.clone(), &self.lets);
                    self.lets.insert(var.clone(), v);
                    self.visit_stmt(body);
                    self.lets.remove(var);
                }
                s => walk_stmt(self, s),
            }
        }
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Load { buffer, indices } = e {
                if buffer == self.buf {
                    let r: Vec<(Option<Expr>, Option<Expr>)> = indices
                        .iter()
                        .map(|i| {
                            let i = substitute(i.clone(), &self.lets);
                            // An index read from memory has only its type's bounds.
                            if crate::arith::reads_memory(&i) {
                                (None, None)
                            } else {
                                self.an.try_symbolic_bounds(&i, &self.inner)
                            }
                        })
                        .collect();
                    self.region = Some(match self.region.take() {
                        None => r,
                        Some(old) => old
                            .into_iter()
                            .zip(r)
                            .map(|((l0, h0), (l1, h1))| {
                                (l0.zip(l1).map(|(a, b)| Expr::min(a, b)), h0.zip(h1).map(|(a, b)| Expr::max(a, b)))
                            })
                            .collect(),
                    });
                }
            }
            walk_expr(self, e)
        }
    }
    let mut an = Analyzer::new();
    for d in dims {
        an.assume_nonneg(d);
    }
    let mut r = R { buf, an, inner: Vec::new(), lets: HashMap::new(), region: None };
    r.visit_stmt(body);
    let region = r.region?;
    Some(region.into_iter().map(|(l, h)| (l.map(|l| r.an.simplify(&l)), h.map(|h| r.an.simplify(&h)))).collect())
}

/// `if var + offset < extent`, a nest over the rows of `region` (inclusive bounds per
/// dim; each dim but the last clipped to `shape`) that prefetches the last dim's span
/// every cache line and at its end. With `var` replaced by `var + offset` in the region.
fn prefetch_nest(
    buf: &Buffer,
    shape: &[Expr],
    region: Vec<(Expr, Expr)>,
    var: &Var,
    extent: &Expr,
    offset: i64,
) -> Stmt {
    let next = Expr::var(var) + Expr::int(offset);
    let mut map = HashMap::new();
    map.insert(var.clone(), next.clone());
    // Clipped to the tensor: `[lo, hi]` inside `[0, dim - 1]` (empty when `lo > hi`).
    let clipped: Vec<(Expr, Expr)> = region
        .into_iter()
        .zip(shape)
        .map(|((lo, hi), dim)| {
            let lo = Expr::max(substitute(lo, &map), Expr::int(0));
            let hi = Expr::min(substitute(hi, &map), dim.clone() - Expr::int(1));
            (lo, hi)
        })
        .collect();
    let Some(((lo_l, hi_l), rows)) = clipped.split_last() else {
        return Stmt::NoOp;
    };
    // Elements per 64-byte line.
    let line = (512 / buf.dtype().bits.max(8) as i64).max(1);
    let c = Var::index("pf_c");
    let span = hi_l.clone() - lo_l.clone();
    let count = Expr::select(Expr::ge(span.clone(), Expr::int(0)), span / Expr::int(line) + Expr::int(2), Expr::int(0));
    let mut indices: Vec<Expr> = Vec::new();
    let mut row_vars = Vec::new();
    for (k, (lo, _)) in rows.iter().enumerate() {
        let v = Var::index(format!("pf_{k}"));
        indices.push(lo.clone() + Expr::var(&v));
        row_vars.push(v);
    }
    indices.push(Expr::min(lo_l.clone() + Expr::var(&c) * Expr::int(line), hi_l.clone()));
    let mut s = Stmt::for_loop(c, count, crate::tir::ForKind::Serial, Stmt::Prefetch { buffer: buf.clone(), indices });
    for ((lo, hi), v) in rows.iter().zip(row_vars).rev() {
        let n = Expr::max(hi.clone() - lo.clone() + Expr::int(1), Expr::int(0));
        s = Stmt::for_loop(v, n, crate::tir::ForKind::Serial, s);
    }
    Stmt::if_then(Expr::lt(next, extent.clone()), s)
}
