//! The schedule primitives of docs/LANGUAGE.md §3. Each checks the rules that can be decided when
//! it is applied and returns the error of the first one broken.

use super::*;
use crate::te::{Op, Tensor};
use crate::tir::mutate::{substitute, Mutator};
use crate::tir::{Expr, IterVar, Range, Reduce};
use std::collections::HashMap;

/// An argument with the location of its token.
pub type Arg<T> = (T, Loc);

fn err<T>(loc: Loc, kind: ScheduleErrorKind) -> Result<T, ScheduleError> {
    Err(ScheduleError::new(loc, kind))
}

impl Schedule {
    /// Checks that `axis` is a current axis of `stage`; returns its leaf position.
    pub fn check_leaf(&self, stage: StageId, (axis, loc): Arg<AxisId>) -> Result<usize, ScheduleError> {
        let ax = self.axis(axis);
        let st = self.stage(stage);
        if ax.stage != stage {
            return err(
                loc,
                ScheduleErrorKind::AxisOfOtherStage {
                    axis: ax.shown().to_string(),
                    owner: self.stage(ax.stage).name.clone(),
                    stage: st.name.clone(),
                },
            );
        }
        match st.leaf.iter().position(|&a| a == axis) {
            Some(p) => Ok(p),
            None => {
                let by = st
                    .relations
                    .iter()
                    .find_map(|r| match r {
                        Relation::Split { parent, .. } if *parent == axis => Some("split"),
                        Relation::Fuse { outer, inner, .. } if *outer == axis || *inner == axis => Some("fuse"),
                        _ => None,
                    })
                    .unwrap_or("primitive");
                err(loc, ScheduleErrorKind::AxisConsumed { stage: st.name.clone(), axis: ax.shown().to_string(), by })
            }
        }
    }

    fn touch(&mut self, stage: StageId) {
        self.stage_mut(stage).touched = true;
    }

    /// Marks a stage whose own loops a primitive changed (or that a primitive made).
    fn shape(&mut self, stage: StageId) {
        let st = self.stage_mut(stage);
        st.touched = true;
        st.shaped = true;
    }

    /// Renames an axis made by split or fuse (the frontend names them after the user's
    /// `let` bindings). Root axes keep their names, since their variables appear in the
    /// body; the binding's name becomes their alias, for messages.
    pub fn set_axis_name(&mut self, axis: AxisId, name: &str) {
        let st = self.axis(axis).stage;
        let is_root = {
            let s = self.stage(st);
            s.root_axes.contains(&axis) || s.reduce_axes.contains(&axis)
        };
        let a = &mut self.axes[axis.0 as usize];
        if is_root {
            // The algorithm's names stay; messages use the binding's.
            a.alias = (a.name != name).then(|| name.to_string());
        } else {
            a.name = name.to_string();
            a.var = Var::new(name, a.var.dtype());
        }
    }

    fn split_impl(
        &mut self,
        stage: StageId,
        axis: Arg<AxisId>,
        by: SplitBy,
        loc: Loc,
    ) -> Result<(AxisId, AxisId), ScheduleError> {
        self.shape(stage);
        let pos = self.check_leaf(stage, axis)?;
        let v = match by {
            SplitBy::Factor(v) | SplitBy::NParts(v) => v,
        };
        if v <= 0 {
            return err(loc, ScheduleErrorKind::BadSplitFactor { value: v.to_string() });
        }
        let parent = self.axis(axis.0).clone();
        let outer =
            self.new_axis(&format!("{}_o", parent.name), Var::index(format!("{}_o", parent.name)), parent.kind, stage);
        let inner =
            self.new_axis(&format!("{}_i", parent.name), Var::index(format!("{}_i", parent.name)), parent.kind, stage);
        let st = self.stage_mut(stage);
        st.leaf.splice(pos..=pos, [outer, inner]);
        st.relations.push(Relation::Split { parent: axis.0, outer, inner, by });
        Ok((outer, inner))
    }

    /// `split(axis, factor)`: the inner axis has extent `factor`.
    pub fn split(
        &mut self,
        stage: StageId,
        axis: Arg<AxisId>,
        factor: Arg<i64>,
    ) -> Result<(AxisId, AxisId), ScheduleError> {
        self.split_impl(stage, axis, SplitBy::Factor(factor.0), factor.1)
    }

    /// `split_nparts(axis, n)`: the outer axis has extent `n`.
    pub fn split_nparts(
        &mut self,
        stage: StageId,
        axis: Arg<AxisId>,
        nparts: Arg<i64>,
    ) -> Result<(AxisId, AxisId), ScheduleError> {
        self.split_impl(stage, axis, SplitBy::NParts(nparts.0), nparts.1)
    }

    /// `tile(x, y, fx, fy)`: `(xo, yo, xi, yi)`.
    pub fn tile(
        &mut self,
        stage: StageId,
        x: Arg<AxisId>,
        y: Arg<AxisId>,
        fx: Arg<i64>,
        fy: Arg<i64>,
    ) -> Result<(AxisId, AxisId, AxisId, AxisId), ScheduleError> {
        if x.0 == y.0 {
            self.check_leaf(stage, x)?;
            let st = self.stage(stage);
            return err(
                y.1,
                ScheduleErrorKind::ReorderDuplicate {
                    stage: st.name.clone(),
                    axis: self.axis(y.0).shown().to_string(),
                },
            );
        }
        self.check_leaf(stage, y)?;
        let (xo, xi) = self.split(stage, x, fx)?;
        let (yo, yi) = self.split(stage, y, fy)?;
        self.reorder(stage, &[(xo, x.1), (yo, y.1), (xi, x.1), (yi, y.1)])?;
        Ok((xo, yo, xi, yi))
    }

    /// `fuse(outer, inner)`: one axis iterating both, `outer` adjacent before `inner`.
    pub fn fuse(&mut self, stage: StageId, outer: Arg<AxisId>, inner: Arg<AxisId>) -> Result<AxisId, ScheduleError> {
        self.shape(stage);
        let po = self.check_leaf(stage, outer)?;
        let pi = self.check_leaf(stage, inner)?;
        let (ao, ai) = (self.axis(outer.0).clone(), self.axis(inner.0).clone());
        if ao.kind != ai.kind {
            return err(
                inner.1,
                ScheduleErrorKind::FuseMixedKinds {
                    stage: self.stage(stage).name.clone(),
                    outer: ao.shown().to_string(),
                    inner: ai.shown().to_string(),
                },
            );
        }
        if pi != po + 1 {
            return err(
                inner.1,
                ScheduleErrorKind::FuseNotAdjacent {
                    stage: self.stage(stage).name.clone(),
                    outer: ao.shown().to_string(),
                    inner: ai.shown().to_string(),
                    order: self.leaf_names(stage),
                },
            );
        }
        let name = format!("{}_{}_f", ao.name, ai.name);
        let fused = self.new_axis(&name, Var::index(&name), ao.kind, stage);
        let st = self.stage_mut(stage);
        st.leaf.splice(po..=pi, [fused]);
        st.relations.push(Relation::Fuse { outer: outer.0, inner: inner.0, fused });
        Ok(fused)
    }

    /// `reorder(a, b, ...)`: the named axes take the positions they occupy, in the given
    /// order; the other axes stay where they are.
    pub fn reorder(&mut self, stage: StageId, order: &[Arg<AxisId>]) -> Result<(), ScheduleError> {
        self.shape(stage);
        let mut positions = Vec::new();
        for (k, &a) in order.iter().enumerate() {
            if order[..k].iter().any(|b| b.0 == a.0) {
                return err(
                    a.1,
                    ScheduleErrorKind::ReorderDuplicate {
                        stage: self.stage(stage).name.clone(),
                        axis: self.axis(a.0).shown().to_string(),
                    },
                );
            }
            positions.push(self.check_leaf(stage, a)?);
        }
        positions.sort();
        let st = self.stage_mut(stage);
        for (p, a) in positions.into_iter().zip(order) {
            st.leaf[p] = a.0;
        }
        if let Some((outer, inner)) = self.scan_order_violation(stage) {
            let loc = order.iter().find(|a| a.0 == inner).map_or(order[0].1, |a| a.1);
            let scan = self.scan_axis(stage).map(|a| self.axis(a).shown().to_string()).unwrap_or_default();
            return err(
                loc,
                ScheduleErrorKind::ScanAxisReordered {
                    stage: self.stage(stage).name.clone(),
                    outer: self.axis(outer).shown().to_string(),
                    inner: self.axis(inner).shown().to_string(),
                    scan,
                },
            );
        }
        Ok(())
    }

    /// For a recurrence, the first pair of loops `(outer, inner)` derived from the outer
    /// and the inner part of a split of its scan axis where `inner` runs outside `outer`
    /// (the scan would then visit its elements out of order).
    fn scan_order_violation(&self, sid: StageId) -> Option<(AxisId, AxisId)> {
        let scan = self.scan_axis(sid)?;
        let st = self.stage(sid);
        let lineage = self.derived_axes(sid, scan);
        let pos = |a: &AxisId| st.leaf.iter().position(|l| l == a);
        for r in &st.relations {
            let Relation::Split { parent, outer, inner, .. } = *r else { continue };
            if !lineage.contains(&parent) {
                continue;
            }
            let (outs, ins) = (self.derived_axes(sid, outer), self.derived_axes(sid, inner));
            let last_outer = outs.iter().filter_map(pos).max();
            let first_inner = ins.iter().filter_map(pos).min();
            if let (Some(o), Some(i)) = (last_outer, first_inner) {
                if i < o {
                    return Some((st.leaf[o], st.leaf[i]));
                }
            }
        }
        None
    }

    /// The root axis a recurrence (a stage that reads its own earlier elements) runs
    /// along, if `stage` is one.
    pub fn scan_axis(&self, stage: StageId) -> Option<AxisId> {
        let st = self.stage(stage);
        self.graph.scan_dim(st.tensor).and_then(|d| st.root_axes.get(d).copied())
    }

    /// `root` and every axis split or fused from it, so far.
    pub fn derived_axes(&self, stage: StageId, root: AxisId) -> Vec<AxisId> {
        let mut set = vec![root];
        for r in &self.stage(stage).relations {
            match *r {
                Relation::Split { parent, outer, inner, .. } if set.contains(&parent) => set.extend([outer, inner]),
                Relation::Fuse { outer, inner, fused } if set.contains(&outer) || set.contains(&inner) => {
                    set.push(fused)
                }
                _ => {}
            }
        }
        set
    }

    /// An error if `axis` is (part of) the scan axis of a recurrence: it must stay a
    /// serial loop.
    fn check_not_scan(&self, stage: StageId, axis: Arg<AxisId>, what: &'static str) -> Result<(), ScheduleError> {
        let Some(scan) = self.scan_axis(stage) else { return Ok(()) };
        // The outer part of `split_nparts(scan, 1)` has one iteration: binding it puts the
        // whole scan in one GPU thread.
        let single = self
            .stage(stage)
            .relations
            .iter()
            .any(|r| matches!(r, Relation::Split { outer, by: SplitBy::NParts(1), .. } if *outer == axis.0));
        if !single && self.derived_axes(stage, scan).contains(&axis.0) {
            return err(
                axis.1,
                ScheduleErrorKind::ScanAxisAnnotated {
                    stage: self.stage(stage).name.clone(),
                    axis: self.axis(axis.0).shown().to_string(),
                    scan: self.axis(scan).shown().to_string(),
                    what,
                },
            );
        }
        Ok(())
    }

    /// An error if `stage` is a recurrence: it is computed whole, at the root.
    fn check_not_scan_stage(&self, stage: Arg<StageId>, what: &'static str) -> Result<(), ScheduleError> {
        if self.scan_axis(stage.0).is_some() {
            let name = self.stage(stage.0).name.clone();
            return err(stage.1, ScheduleErrorKind::ScanStageMoved { stage: name, what });
        }
        Ok(())
    }

    fn annotate(&mut self, stage: StageId, axis: AxisId, f: impl FnOnce(&mut AxisAnn), loc: Loc) {
        let ann = self.stage_mut(stage).ann.entry(axis).or_insert(AxisAnn { kind: ForKind::Serial, bind: None, loc });
        ann.loc = loc;
        f(ann);
    }

    /// `bind(axis, tag)`.
    pub fn bind(&mut self, stage: StageId, axis: Arg<AxisId>, tag: Arg<ThreadTag>) -> Result<(), ScheduleError> {
        self.shape(stage);
        self.check_leaf(stage, axis)?;
        let ax = self.axis(axis.0).clone();
        let st = self.stage(stage);
        if !self.target.is_gpu() {
            return err(tag.1, ScheduleErrorKind::BindOnCpu { axis: ax.shown().to_string() });
        }
        self.check_not_scan(stage, axis, "bind")?;
        if ax.kind == IterKind::Reduce && tag.0.is_block() {
            return err(
                tag.1,
                ScheduleErrorKind::ReduceAxisBoundToBlock {
                    stage: st.name.clone(),
                    axis: ax.shown().to_string(),
                    tag: tag.0.dsl_name(),
                },
            );
        }
        if let Some(t) = st.ann.get(&axis.0).and_then(|a| a.bind) {
            return err(
                axis.1,
                ScheduleErrorKind::AxisAlreadyBound {
                    stage: st.name.clone(),
                    axis: ax.shown().to_string(),
                    tag: t.dsl_name(),
                },
            );
        }
        if let Some((&other, _)) = st.ann.iter().find(|(a, ann)| ann.bind == Some(tag.0) && st.leaf.contains(a)) {
            return err(
                tag.1,
                ScheduleErrorKind::DuplicateThreadTag {
                    stage: st.name.clone(),
                    tag: tag.0.dsl_name(),
                    first: self.axis(other).shown().to_string(),
                    second: ax.shown().to_string(),
                },
            );
        }
        self.annotate(stage, axis.0, |a| a.bind = Some(tag.0), tag.1);
        Ok(())
    }

    /// `parallel(axis)`.
    pub fn parallel(&mut self, stage: StageId, axis: Arg<AxisId>) -> Result<(), ScheduleError> {
        self.shape(stage);
        self.check_leaf(stage, axis)?;
        let ax = self.axis(axis.0).clone();
        if ax.kind == IterKind::Reduce {
            return err(
                axis.1,
                ScheduleErrorKind::ParallelOnReduce {
                    stage: self.stage(stage).name.clone(),
                    axis: ax.shown().to_string(),
                },
            );
        }
        if self.target.is_gpu() {
            return err(axis.1, ScheduleErrorKind::ParallelOnGpu { axis: ax.shown().to_string() });
        }
        self.check_not_scan(stage, axis, "parallelize")?;
        self.annotate(stage, axis.0, |a| a.kind = ForKind::Parallel, axis.1);
        Ok(())
    }

    /// `vectorize(axis)`; innermost position and constant extent are checked by
    /// [`Schedule::validate`], since later primitives may change them.
    pub fn vectorize(&mut self, stage: StageId, axis: Arg<AxisId>) -> Result<(), ScheduleError> {
        self.shape(stage);
        self.check_leaf(stage, axis)?;
        let ax = self.axis(axis.0).clone();
        if ax.kind == IterKind::Reduce {
            return err(
                axis.1,
                ScheduleErrorKind::VectorizeOnReduce {
                    stage: self.stage(stage).name.clone(),
                    axis: ax.shown().to_string(),
                },
            );
        }
        self.check_not_scan(stage, axis, "vectorize")?;
        self.annotate(stage, axis.0, |a| a.kind = ForKind::Vectorized, axis.1);
        Ok(())
    }

    /// `prefetch(tensor, axis, offset)`: see [`Prefetch`]. Where the axis ends up (still
    /// a loop, not vectorized) and what the tensor is are checked by
    /// [`Schedule::validate`]; whether the loop reads the tensor, by the lowering.
    pub fn prefetch(
        &mut self,
        stage: StageId,
        tensor: Arg<TensorId>,
        axis: Arg<AxisId>,
        offset: Arg<i64>,
    ) -> Result<(), ScheduleError> {
        self.shape(stage);
        self.check_leaf(stage, axis)?;
        if self.target.is_gpu() {
            let name = self.graph.tensor(tensor.0).name.clone();
            return err(tensor.1, ScheduleErrorKind::PrefetchOnGpu { tensor: name });
        }
        if offset.0 <= 0 {
            return err(offset.1, ScheduleErrorKind::BadPrefetchOffset { value: offset.0.to_string() });
        }
        let p = Prefetch { tensor: tensor.0, axis: axis.0, offset: offset.0, loc: tensor.1, axis_loc: axis.1 };
        self.stage_mut(stage).prefetches.push(p);
        Ok(())
    }

    /// `unroll(axis)`.
    pub fn unroll(&mut self, stage: StageId, axis: Arg<AxisId>) -> Result<(), ScheduleError> {
        self.shape(stage);
        self.check_leaf(stage, axis)?;
        self.annotate(stage, axis.0, |a| a.kind = ForKind::Unrolled, axis.1);
        Ok(())
    }

    /// Whether `a` reads `b`, directly or through other stages.
    pub fn depends_on(&self, a: TensorId, b: TensorId) -> bool {
        // `b`'s stage computes every component of a reduction of several values.
        let bs = self.graph.tuple_outputs(b);
        let mut stack = vec![a];
        let mut seen = Vec::new();
        while let Some(t) = stack.pop() {
            for p in self.graph.inputs_of(t) {
                if bs.contains(&p) {
                    return true;
                }
                if !seen.contains(&p) {
                    seen.push(p);
                    stack.push(p);
                }
            }
        }
        false
    }

    /// `producer.compute_at(consumer, axis)`. Whether the place encloses every consumer
    /// is checked by [`Schedule::validate`].
    pub fn compute_at(
        &mut self,
        producer: Arg<StageId>,
        consumer: Arg<StageId>,
        axis: Arg<AxisId>,
    ) -> Result<(), ScheduleError> {
        self.touch(producer.0);
        self.touch(consumer.0);
        self.check_not_scan_stage(producer, "compute_at")?;
        let (p, c) = (self.stage(producer.0).clone(), self.stage(consumer.0).clone());
        if producer.0 == consumer.0 || self.depends_on(p.tensor, c.tensor) {
            return err(consumer.1, ScheduleErrorKind::ComputeAtCycle { producer: p.name, consumer: c.name });
        }
        if self.axis(axis.0).stage != consumer.0 || !c.leaf.contains(&axis.0) {
            return err(
                axis.1,
                ScheduleErrorKind::ComputeAtAxisNotInConsumer {
                    consumer: c.name.clone(),
                    axis: self.axis(axis.0).shown().to_string(),
                    owner: self.stage(self.axis(axis.0).stage).name.clone(),
                    legal: self.leaf_names(consumer.0),
                },
            );
        }
        let st = self.stage_mut(producer.0);
        st.attach = Attach::At { stage: consumer.0, axis: axis.0 };
        st.attach_loc = axis.1;
        Ok(())
    }

    /// `stage.compute_inline()`.
    pub fn compute_inline(&mut self, stage: Arg<StageId>) -> Result<(), ScheduleError> {
        self.touch(stage.0);
        let st = self.stage(stage.0);
        if self.graph.is_output(st.tensor) {
            return err(stage.1, ScheduleErrorKind::InlineOutput { stage: st.name.clone() });
        }
        if self.graph.tensor(st.tensor).is_reduction() {
            return err(stage.1, ScheduleErrorKind::InlineReduction { stage: st.name.clone() });
        }
        self.check_not_scan_stage(stage, "compute_inline")?;
        let st = self.stage_mut(stage.0);
        st.attach = Attach::Inline;
        st.attach_loc = stage.1;
        Ok(())
    }

    /// `stage.compute_root()`.
    pub fn compute_root(&mut self, stage: Arg<StageId>) -> Result<(), ScheduleError> {
        self.touch(stage.0);
        let st = self.stage_mut(stage.0);
        st.attach = Attach::Root;
        st.attach_loc = stage.1;
        Ok(())
    }

    fn check_scope(&self, scope: Scope, name: &str, loc: Loc) -> Result<(), ScheduleError> {
        if scope == Scope::Shared && !self.target.is_gpu() {
            return err(loc, ScheduleErrorKind::SharedOnCpu { stage: name.to_string() });
        }
        Ok(())
    }

    fn fresh_name(&self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while self.graph.find(&name).is_some() {
            name = format!("{base}{k}");
            k += 1;
        }
        name
    }

    /// A copy stage `t[axes] = src[axes]` over the shape of `src`.
    fn copy_tensor(&mut self, src: TensorId, name: String, loc: Loc) -> TensorId {
        let s = self.graph.tensor(src).clone();
        let names: Vec<String> = match &s.op {
            Op::Compute { axes, .. } => axes.iter().map(|a| a.var.name().to_string()).collect(),
            Op::Placeholder => (0..s.shape.len()).map(|d| format!("ax{d}")).collect(),
        };
        let axes: Vec<IterVar> = names
            .iter()
            .zip(&s.shape)
            .map(|(n, e)| IterVar { var: Var::index(n), dom: Range::from_extent(e.clone()), kind: IterKind::DataPar })
            .collect();
        let body = Expr::ProducerLoad {
            tensor: src,
            indices: axes.iter().map(|a| Expr::var(&a.var)).collect(),
            dtype: s.dtype,
        };
        self.graph.add(Tensor { name, dtype: s.dtype, shape: s.shape.clone(), op: Op::Compute { axes, body }, loc })
    }

    /// `let t = x.cache_read(scope, [readers])`: `t` copies `x`, and the readers read `t`.
    pub fn cache_read(
        &mut self,
        tensor: Arg<TensorId>,
        scope: Arg<Scope>,
        readers: &[Arg<StageId>],
    ) -> Result<StageId, ScheduleError> {
        let tname = self.graph.tensor(tensor.0).name.clone();
        self.check_scope(scope.0, &tname, scope.1)?;
        for r in readers {
            let rt = self.stage(r.0).tensor;
            if !self.graph.inputs_of(rt).contains(&tensor.0) {
                return err(
                    r.1,
                    ScheduleErrorKind::CacheReadNotReader { tensor: tname, reader: self.stage(r.0).name.clone() },
                );
            }
        }
        let name = self.fresh_name(&format!("{tname}_{}", scope.0.name()));
        let new = self.copy_tensor(tensor.0, name, scope.1);
        for r in readers {
            // Every component of a reduction of several values reads what its stage reads.
            for rt in self.graph.tuple_outputs(self.stage(r.0).tensor) {
                let t = self.graph.tensor_mut(rt);
                if let Op::Compute { body, .. } = &mut t.op {
                    *body = ReplaceTensor { from: tensor.0, to: new }.mutate_expr(body.clone());
                }
            }
        }
        let sid = self.add_stage(new);
        self.shape(sid);
        let st = self.stage_mut(sid);
        st.scope = Some(scope.0);
        Ok(sid)
    }

    /// `let t = x.pack(dim, factor, [readers])`: `t` holds `x` with dimension `dim` split
    /// by `factor`, the outer part first and the inner part last (`b[k, j]` packed along
    /// dimension 1 by 32 is `t[j / 32, k, j % 32]`), zero past the end of `dim`; the
    /// readers read `t`. A stage in memory of its own, computed at the root: a panel of
    /// `factor` columns is then contiguous for every row of the other dimensions.
    pub fn pack(
        &mut self,
        tensor: Arg<TensorId>,
        dim: Arg<i64>,
        factor: Arg<i64>,
        readers: &[Arg<StageId>],
    ) -> Result<StageId, ScheduleError> {
        let src = self.graph.tensor(tensor.0).clone();
        let rank = src.shape.len();
        let d = match usize::try_from(dim.0) {
            Ok(d) if d < rank => d,
            _ => {
                return err(
                    dim.1,
                    ScheduleErrorKind::PackDim { tensor: src.name.clone(), dim: dim.0.to_string(), rank },
                );
            }
        };
        for r in readers {
            let rt = self.stage(r.0).tensor;
            if !self.graph.inputs_of(rt).contains(&tensor.0) {
                return err(
                    r.1,
                    ScheduleErrorKind::CacheReadNotReader {
                        tensor: src.name.clone(),
                        reader: self.stage(r.0).name.clone(),
                    },
                );
            }
        }
        let f = factor.0;
        let n = src.shape[d].clone();
        // ceil(n / f), without overflow for any factor (the outer extent of an empty
        // dimension is 1: one panel, all zeros).
        let outer_extent = match n.as_int() {
            Some(e) => Expr::int(e / f + i64::from(e % f != 0)),
            None => (n.clone() - 1) / f + 1,
        };
        let base: Vec<String> = match &src.op {
            Op::Compute { axes, .. } => axes.iter().map(|a| a.var.name().to_string()).collect(),
            Op::Placeholder => (0..rank).map(|k| format!("ax{k}")).collect(),
        };
        // The packed tensor's axes: [outer of d, the other dims in order, inner of d].
        let mut names = vec![format!("{}_o", base[d])];
        let mut shape = vec![outer_extent];
        for k in (0..rank).filter(|&k| k != d) {
            names.push(base[k].clone());
            shape.push(src.shape[k].clone());
        }
        names.push(format!("{}_i", base[d]));
        shape.push(Expr::int(f));
        let axes: Vec<IterVar> = names
            .iter()
            .zip(&shape)
            .map(|(nm, e)| IterVar { var: Var::index(nm), dom: Range::from_extent(e.clone()), kind: IterKind::DataPar })
            .collect();
        let v = |k: usize| Expr::var(&axes[k].var);
        let along = v(0) * f + v(rank);
        let mut indices = Vec::with_capacity(rank);
        let mut rest = 1;
        for k in 0..rank {
            if k == d {
                indices.push(along.clone());
            } else {
                indices.push(v(rest));
                rest += 1;
            }
        }
        let load = Expr::ProducerLoad { tensor: tensor.0, indices, dtype: src.dtype };
        let body = if n.as_int().is_some_and(|e| e % f == 0) {
            load
        } else {
            let zero = if src.dtype.is_float() {
                Expr::float(0.0, src.dtype)
            } else if src.dtype.is_integer() {
                Expr::typed_int(0, src.dtype)
            } else {
                Expr::cast(src.dtype, Expr::int(0))
            };
            Expr::select(Expr::lt(along, n), load, zero)
        };
        let name = self.fresh_name(&format!("{}_p", src.name));
        let new = self.graph.add(Tensor { name, dtype: src.dtype, shape, op: Op::Compute { axes, body }, loc: dim.1 });
        for r in readers {
            for rt in self.graph.tuple_outputs(self.stage(r.0).tensor) {
                let t = self.graph.tensor_mut(rt);
                if let Op::Compute { body, .. } = &mut t.op {
                    *body = PackReads { from: tensor.0, to: new, dim: d, factor: f }.mutate_expr(body.clone());
                }
            }
        }
        let sid = self.add_stage(new);
        self.shape(sid);
        self.stage_mut(sid).scope = Some(Scope::Global);
        Ok(sid)
    }

    /// `let t = s.cache_write(scope)`: `t` computes what `s` did (its reduction
    /// included), and `s` copies `t`.
    pub fn cache_write(&mut self, stage: Arg<StageId>, scope: Arg<Scope>) -> Result<StageId, ScheduleError> {
        self.shape(stage.0);
        let st = self.stage(stage.0).clone();
        self.check_scope(scope.0, &st.name, scope.1)?;
        self.check_not_scan_stage(stage, "cache_write")?;
        let outs = self.graph.tuple_outputs(st.tensor);
        if outs.len() > 1 {
            let outputs = outs.iter().map(|&t| self.graph.tensor(t).name.clone()).collect();
            return err(stage.1, ScheduleErrorKind::CacheWriteSeveralOutputs { stage: st.name, outputs });
        }
        if !st.relations.is_empty()
            || !st.ann.is_empty()
            || st.attach != Attach::Root
            || st.leaf != st.root_axes.iter().chain(&st.reduce_axes).copied().collect::<Vec<_>>()
        {
            return err(stage.1, ScheduleErrorKind::CacheWriteAfterTransform { stage: st.name });
        }
        let old = self.graph.tensor(st.tensor).clone();
        let name = self.fresh_name(&format!("{}_{}", old.name, scope.0.name()));
        let cache = self.graph.add(Tensor { name: name.clone(), ..old.clone() });
        // A reduction with a combiner of its own names its tensors: the cache's is itself.
        if let Op::Compute { body: Expr::Reduce(r), .. } = &mut self.graph.tensor_mut(cache).op {
            **r = r.component(0, &[cache]);
        }
        // The original tensor now copies the cache over fresh axes.
        let axes: Vec<IterVar> = old
            .axes()
            .iter()
            .map(|a| IterVar { var: a.var.copy_fresh(), dom: a.dom.clone(), kind: IterKind::DataPar })
            .collect();
        let body = Expr::ProducerLoad {
            tensor: cache,
            indices: axes.iter().map(|a| Expr::var(&a.var)).collect(),
            dtype: old.dtype,
        };
        self.graph.tensor_mut(st.tensor).op = Op::Compute { axes, body };
        // The cache stage takes over the old axis ids; the stage gets new ones.
        let cid = StageId(self.stages.len() as u32);
        for &a in st.root_axes.iter().chain(&st.reduce_axes) {
            self.axes[a.0 as usize].stage = cid;
        }
        self.stages.push(Stage {
            tensor: cache,
            name,
            scope: Some(scope.0),
            touched: true,
            shaped: true,
            ..st.clone()
        });
        let mut root = Vec::new();
        let t = self.graph.tensor(st.tensor).clone();
        for iv in t.axes() {
            root.push(self.new_axis(iv.var.name(), iv.var.clone(), IterKind::DataPar, stage.0));
        }
        let s = self.stage_mut(stage.0);
        // The loops (and the prefetches at them) are the cache stage's now.
        s.prefetches.clear();
        s.leaf = root.clone();
        s.root_axes = root;
        s.reduce_axes = Vec::new();
        Ok(cid)
    }

    /// `let rf = s.rfactor(axis)`: the reduction over `axis` becomes a spatial axis of a
    /// new stage of partial results (first axis), which `s` then reduces. `axis` is a
    /// root reduction axis or one part of a single split of one. `s` starts afresh:
    /// its axes are new.
    pub fn rfactor(&mut self, stage: Arg<StageId>, axis: Arg<AxisId>) -> Result<StageId, ScheduleError> {
        self.shape(stage.0);
        self.check_leaf(stage.0, axis)?;
        let st = self.stage(stage.0).clone();
        let ax = self.axis(axis.0).clone();
        let unsupported = |why| {
            err(
                axis.1,
                ScheduleErrorKind::RfactorUnsupported { stage: st.name.clone(), axis: ax.shown().to_string(), why },
            )
        };
        if ax.kind != IterKind::Reduce {
            return unsupported("it is not a reduction axis");
        }
        // The stage gets new axes: what names its old spatial axes would be dropped.
        let names = |a: &AxisId| self.axis(*a).shown().to_string();
        let what = st
            .ann
            .iter()
            .find(|(a, ann)| {
                self.axis(**a).kind == IterKind::DataPar && (ann.kind != ForKind::Serial || ann.bind.is_some())
            })
            .map(|(a, ann)| match (ann.bind, ann.kind) {
                (Some(t), _) => format!("`bind({}, {})`", names(a), t.dsl_name()),
                (None, ForKind::Parallel) => format!("`parallel({})`", names(a)),
                (None, ForKind::Vectorized) => format!("`vectorize({})`", names(a)),
                (None, _) => format!("`unroll({})`", names(a)),
            })
            .or_else(|| {
                self.stages.iter().find_map(|o| match o.attach {
                    Attach::At { stage: s, axis } if s == stage.0 => {
                        Some(format!("`{}.compute_at({}, {})`", o.name, st.name, names(&axis)))
                    }
                    _ => None,
                })
            });
        if let Some(what) = what {
            return err(stage.1, ScheduleErrorKind::RfactorAfterSchedule { stage: st.name.clone(), what });
        }
        let old = self.graph.tensor(st.tensor).clone();
        let Some(Expr::Reduce(red)) = old.body().cloned() else {
            return unsupported("the stage is not a reduction");
        };
        let root_ivs: Vec<IterVar> = red.axes.clone();
        // Find the root reduction axis `k` that `axis` comes from, and how.
        let (k_root, part) = if let Some(i) = st.reduce_axes.iter().position(|&a| a == axis.0) {
            (i, None)
        } else {
            let split = st.relations.iter().find_map(|r| match r {
                Relation::Split { parent, outer, inner, by } if *outer == axis.0 || *inner == axis.0 => {
                    Some((*parent, *outer == axis.0, *by))
                }
                _ => None,
            });
            match split {
                Some((parent, is_outer, by)) => match st.reduce_axes.iter().position(|&a| a == parent) {
                    Some(i) => (i, Some((is_outer, by))),
                    None => return unsupported("it comes from more than one split or fuse"),
                },
                None => return unsupported("it comes from a fuse"),
            }
        };
        let k = &root_ivs[k_root];
        let kext = k.dom.extent.clone();
        // The rf tensor: axes [r, spatial...]; reduces over the other reduction axes and
        // the other part of k's split.
        let r_var = Var::index(&ax.name);
        let spatial: Vec<IterVar> = old
            .axes()
            .iter()
            .map(|a| IterVar { var: a.var.copy_fresh(), dom: a.dom.clone(), kind: IterKind::DataPar })
            .collect();
        let mut map: HashMap<Var, Expr> =
            old.axes().iter().zip(&spatial).map(|(a, b)| (a.var.clone(), Expr::var(&b.var))).collect();
        let mut rf_red: Vec<IterVar> = Vec::new();
        let mut guard: Option<Expr> = None;
        let r_extent;
        match part {
            None => {
                r_extent = kext.clone();
                map.insert(k.var.clone(), Expr::var(&r_var));
            }
            Some((is_outer, by)) => {
                let (f_outer, f_inner) = match by {
                    SplitBy::Factor(f) => ((kext.clone() + (f - 1)) / f, Expr::int(f)),
                    SplitBy::NParts(n) => (Expr::int(n), (kext.clone() + (n - 1)) / n),
                };
                let other = Var::index(format!("{}_{}", k.var.name(), if is_outer { "i" } else { "o" }));
                let (outer_e, inner_e, r_ext, other_ext) = if is_outer {
                    (Expr::var(&r_var), Expr::var(&other), f_outer, f_inner.clone())
                } else {
                    (Expr::var(&other), Expr::var(&r_var), f_inner.clone(), f_outer)
                };
                r_extent = r_ext;
                let kval = outer_e * f_inner + inner_e;
                guard = Some(Expr::lt(kval.clone(), kext.clone()));
                map.insert(k.var.clone(), kval);
                rf_red.push(IterVar { var: other, dom: Range::from_extent(other_ext), kind: IterKind::Reduce });
            }
        }
        for (i, iv) in root_ivs.iter().enumerate() {
            if i != k_root {
                let nv = iv.var.copy_fresh();
                map.insert(iv.var.clone(), Expr::var(&nv));
                rf_red.push(IterVar { var: nv, dom: iv.dom.clone(), kind: IterKind::Reduce });
            }
        }
        // Every component of the reduction (one for a built-in combiner) gets an rf
        // tensor; the first one's stage computes them all.
        let outs = self.graph.tuple_outputs(st.tensor);
        let identities = red.identities(old.dtype);
        let rf_red = (!rf_red.is_empty() || red.tuple.is_some()).then_some(rf_red);
        // Past the end of the split axis, each component reads its identity.
        let red = (*red).clone().map_components(|c, s| {
            let s = substitute(s, &map);
            match &guard {
                Some(g) => Expr::select(g.clone(), s, identities[c].clone()),
                None => s,
            }
        });
        let mut rf_axes =
            vec![IterVar { var: r_var, dom: Range::from_extent(r_extent.clone()), kind: IterKind::DataPar }];
        rf_axes.extend(spatial);
        let base = self.graph.tensors.len() as u32;
        let rf_ids: Vec<TensorId> = (0..outs.len() as u32).map(|c| TensorId(base + c)).collect();
        for (c, &out) in outs.iter().enumerate() {
            let t = self.graph.tensor(out).clone();
            let rf_body = match &rf_red {
                None => red.source.clone(),
                Some(axes) => Expr::Reduce(Box::new(Reduce { axes: axes.clone(), ..red.component(c, &rf_ids) })),
            };
            let mut rf_shape = vec![r_extent.clone()];
            rf_shape.extend(t.shape.iter().cloned());
            let rf_name = self.fresh_name(&format!("{}_rf", t.name));
            let id = self.graph.add(Tensor {
                name: rf_name,
                dtype: t.dtype,
                shape: rf_shape,
                op: Op::Compute { axes: rf_axes.clone(), body: rf_body },
                loc: axis.1,
            });
            debug_assert_eq!(id, rf_ids[c]);
        }
        let rf = rf_ids[0];
        // s now reduces rf over the factored axis.
        let s_axes: Vec<IterVar> =
            old.axes().iter().map(|a| IterVar { var: a.var.copy_fresh(), ..a.clone() }).collect();
        let kr = IterVar { var: Var::index(&ax.name), dom: Range::from_extent(r_extent), kind: IterKind::Reduce };
        let mut idx = vec![Expr::var(&kr.var)];
        idx.extend(s_axes.iter().map(|a| Expr::var(&a.var)));
        let reads: Vec<Expr> = rf_ids
            .iter()
            .map(|&t| Expr::ProducerLoad { tensor: t, indices: idx.clone(), dtype: self.graph.tensor(t).dtype })
            .collect();
        let mut reads = reads.into_iter();
        let over_rf = Reduce { axes: vec![kr], ..red }.map_sources(|_| reads.next().expect("one read per component"));
        for (c, &out) in outs.iter().enumerate() {
            let body = Expr::Reduce(Box::new(over_rf.component(c, &outs)));
            self.graph.tensor_mut(out).op = Op::Compute { axes: s_axes.clone(), body };
        }
        // Rebuild s's stage from its new op, keeping its place and scope.
        let fresh = self.add_stage(st.tensor);
        let mut new_stage = self.stages.pop().expect("just added");
        debug_assert_eq!(StageId(self.stages.len() as u32), fresh);
        for &a in new_stage.root_axes.iter().chain(&new_stage.reduce_axes) {
            self.axes[a.0 as usize].stage = stage.0;
        }
        new_stage.attach = st.attach;
        new_stage.attach_loc = st.attach_loc;
        new_stage.scope = st.scope;
        new_stage.touched = true;
        new_stage.shaped = true;
        new_stage.replaced = st.replaced.clone();
        new_stage.replaced.extend(st.root_axes.iter().chain(&st.reduce_axes).map(|&a| self.axis(a).name.clone()));
        // Stages attached at s's old axes are attached at root now: those axes are gone.
        for other in self.stages.iter_mut() {
            if let Attach::At { stage: s, .. } = other.attach {
                if s == stage.0 {
                    other.attach = Attach::Root;
                }
            }
        }
        *self.stage_mut(stage.0) = new_stage;
        let rid = self.add_stage(rf);
        self.shape(rid);
        Ok(rid)
    }
}

/// Replaces reads of one tensor by reads of another.
struct ReplaceTensor {
    from: TensorId,
    to: TensorId,
}

impl Mutator for ReplaceTensor {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match crate::tir::mutate::super_expr(self, e) {
            Expr::ProducerLoad { tensor, indices, dtype } if tensor == self.from => {
                Expr::ProducerLoad { tensor: self.to, indices, dtype }
            }
            e => e,
        }
    }
}

/// Rewrites reads of `from[.., i_dim, ..]` as reads of its packed copy
/// `to[i_dim / factor, .., i_dim % factor]` (see [`Schedule::pack`]).
struct PackReads {
    from: TensorId,
    to: TensorId,
    dim: usize,
    factor: i64,
}

impl Mutator for PackReads {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match crate::tir::mutate::super_expr(self, e) {
            Expr::ProducerLoad { tensor, indices, dtype } if tensor == self.from => {
                let along = indices[self.dim].clone();
                let mut packed = vec![along.clone() / self.factor];
                packed.extend(indices.iter().enumerate().filter(|&(k, _)| k != self.dim).map(|(_, i)| i.clone()));
                packed.push(along % self.factor);
                Expr::ProducerLoad { tensor: self.to, indices: packed, dtype }
            }
            e => e,
        }
    }
}
