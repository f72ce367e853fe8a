//! Rules that depend on the final state of a schedule: where producers are attached,
//! vectorized axes, thread bindings and block sizes.

use super::*;

impl Schedule {
    /// The extent of an axis when it is a compile-time constant (root stages only: an
    /// attached stage's root extents come from bound inference).
    pub fn static_extent(&self, axis: AxisId) -> Option<i64> {
        let ax = self.axis(axis);
        let st = self.stage(ax.stage);
        for r in &st.relations {
            match *r {
                Relation::Split { parent, outer, inner, by } if outer == axis || inner == axis => {
                    let p = self.static_extent(parent);
                    // Extents near i64::MAX must not overflow: such an extent is unknown.
                    let ceil_div = |p: Option<i64>, d: i64| p.and_then(|p| p.checked_add(d - 1)).map(|x| x / d);
                    return match (by, outer == axis) {
                        (SplitBy::Factor(f), false) => Some(f),
                        (SplitBy::Factor(f), true) => ceil_div(p, f),
                        (SplitBy::NParts(n), true) => Some(n),
                        (SplitBy::NParts(n), false) => ceil_div(p, n),
                    };
                }
                Relation::Fuse { outer, inner, fused } if fused == axis => {
                    return self.static_extent(outer)?.checked_mul(self.static_extent(inner)?);
                }
                _ => {}
            }
        }
        if st.attach != Attach::Root {
            return None;
        }
        let t = self.graph.tensor(st.tensor);
        if let Some(i) = st.root_axes.iter().position(|&a| a == axis) {
            return t.axes()[i].dom.extent.as_int();
        }
        if let Some(i) = st.reduce_axes.iter().position(|&a| a == axis) {
            return t.reduce_axes()[i].dom.extent.as_int();
        }
        None
    }

    /// The stages that read `stage`'s tensor once inlined stages are substituted.
    pub fn effective_consumers(&self, stage: StageId) -> Vec<StageId> {
        let mut out = Vec::new();
        let mut stack = self.graph.tuple_outputs(self.stage(stage).tensor);
        while let Some(t) = stack.pop() {
            for c in self.graph.consumers_of(t) {
                let Some(cs) = self.stage_of(c) else { continue };
                if self.stage(cs).attach == Attach::Inline {
                    stack.push(c);
                } else if !out.contains(&cs) {
                    out.push(cs);
                }
            }
        }
        out.sort();
        out
    }

    /// Where in `outer`'s loop nest `stage` runs: `Some(position)` of the attach axis of
    /// the chain link inside `outer` (`usize::MAX` for `outer` itself), `None` when
    /// `stage` is not inside `outer`.
    fn position_in(&self, stage: StageId, outer: StageId) -> Option<usize> {
        if stage == outer {
            return Some(usize::MAX);
        }
        let mut cur = stage;
        for _ in 0..self.stages.len() {
            match self.stage(cur).attach {
                Attach::At { stage: s, axis } => {
                    if s == outer {
                        return self.stage(outer).leaf.iter().position(|&a| a == axis);
                    }
                    cur = s;
                }
                _ => return None,
            }
        }
        None
    }

    /// The places where `producer` may be computed: `stage.axis` names.
    pub fn legal_attach_points(&self, producer: StageId) -> Vec<String> {
        let consumers = self.effective_consumers(producer);
        let mut out = Vec::new();
        if consumers.is_empty() {
            return out;
        }
        for s in self.stage_ids() {
            if s == producer
                || self.stage(s).attach == Attach::Inline
                || self.depends_on(self.stage(producer).tensor, self.stage(s).tensor)
            {
                continue;
            }
            let mut limit = usize::MAX;
            let mut ok = true;
            for &c in &consumers {
                match self.position_in(c, s) {
                    Some(p) => limit = limit.min(p),
                    None => ok = false,
                }
            }
            if !ok {
                continue;
            }
            let st = self.stage(s);
            for (i, &a) in st.leaf.iter().enumerate() {
                if limit == usize::MAX || i <= limit {
                    out.push(format!("{}.{}", st.name, self.axis(a).name));
                }
            }
        }
        out
    }

    /// Checks every rule that depends on the final schedule; returns all errors found.
    pub fn validate(&self) -> Vec<ScheduleError> {
        let mut errors = Vec::new();
        for sid in self.stage_ids() {
            self.validate_attach(sid, &mut errors);
            self.validate_vectorize(sid, &mut errors);
            self.validate_prefetch(sid, &mut errors);
        }
        if self.target.is_gpu() {
            self.validate_gpu(&mut errors);
            for sid in self.stage_ids() {
                self.validate_gpu_storage(sid, &mut errors);
            }
        }
        errors
    }

    /// Storage that threads would race on: a reduction accumulated in shared memory by
    /// every thread at once, and per-thread (`local`) storage whose axes are spread over
    /// the threads. (A `shared` stage computed inside a thread loop is not one: as in
    /// TVM, its region covers the whole block, every thread computes it, writing equal
    /// values, and a barrier follows.)
    fn validate_gpu_storage(&self, sid: StageId, errors: &mut Vec<ScheduleError>) {
        let st = self.stage(sid);
        if st.attach == Attach::Inline || st.attach == Attach::Root {
            return;
        }
        let thread_bound = |a: &AxisId| self.ann(sid, *a).bind.filter(|t| !t.is_block());
        match self.storage_scope(sid) {
            Scope::Shared if !st.reduce_axes.is_empty() && !st.leaf.iter().any(|a| thread_bound(a).is_some()) => {
                errors.push(ScheduleError::new(
                    st.attach_loc,
                    ScheduleErrorKind::SharedReductionNotBound { stage: st.name.clone() },
                ));
            }
            Scope::Local => {
                for a in &st.leaf {
                    if let Some(tag) = thread_bound(a) {
                        let kind = ScheduleErrorKind::LocalStageBoundToThread {
                            stage: st.name.clone(),
                            axis: self.axis(*a).shown().to_string(),
                            tag: tag.dsl_name().to_string(),
                        };
                        errors.push(ScheduleError::new(self.ann(sid, *a).loc, kind));
                    }
                }
            }
            _ => {}
        }
    }

    /// A prefetch's loop is still a loop of the stage, not vectorized, and its tensor is
    /// an input or computed at root (a buffer inside a loop nest has no fixed place).
    fn validate_prefetch(&self, sid: StageId, errors: &mut Vec<ScheduleError>) {
        let st = self.stage(sid);
        for p in &st.prefetches {
            let tensor = self.graph.tensor(p.tensor).name.clone();
            let axis = self.axis(p.axis).shown().to_string();
            if !st.leaf.contains(&p.axis) {
                let kind = ScheduleErrorKind::PrefetchAxisGone { stage: st.name.clone(), axis, tensor };
                errors.push(ScheduleError::new(p.axis_loc, kind));
            } else if self.ann(sid, p.axis).kind == ForKind::Vectorized {
                let kind = ScheduleErrorKind::PrefetchAtVectorized { stage: st.name.clone(), axis, tensor };
                errors.push(ScheduleError::new(p.axis_loc, kind));
            } else if let Some(ps) = self.stage_of(p.tensor) {
                if self.stage(ps).attach != Attach::Root {
                    errors.push(ScheduleError::new(p.loc, ScheduleErrorKind::PrefetchNotRoot { tensor }));
                }
            }
        }
    }

    fn validate_attach(&self, sid: StageId, errors: &mut Vec<ScheduleError>) {
        let st = self.stage(sid);
        let Attach::At { stage: c, axis } = st.attach else { return };
        let cs = self.stage(c);
        let loc = st.attach_loc;
        if !cs.leaf.contains(&axis) || cs.attach == Attach::Inline {
            errors.push(ScheduleError::new(
                loc,
                ScheduleErrorKind::ComputeAtAxisNotInConsumer {
                    consumer: cs.name.clone(),
                    axis: self.axis(axis).shown().to_string(),
                    owner: self.stage(self.axis(axis).stage).name.clone(),
                    legal: self.leaf_names(c),
                },
            ));
            return;
        }
        let pos = cs.leaf.iter().position(|&a| a == axis).expect("checked");
        let consumers = self.effective_consumers(sid);
        let legal = self.legal_attach_points(sid);
        if !consumers.iter().any(|&q| self.position_in(q, c).is_some()) {
            errors.push(ScheduleError::new(
                loc,
                ScheduleErrorKind::ComputeAtNotConsumer { producer: st.name.clone(), consumer: cs.name.clone(), legal },
            ));
            return;
        }
        for &q in &consumers {
            match self.position_in(q, c) {
                Some(p) if p == usize::MAX || p >= pos => {}
                _ => {
                    errors.push(ScheduleError::new(
                        loc,
                        ScheduleErrorKind::ComputeAtSkipsConsumer {
                            producer: st.name.clone(),
                            consumer: cs.name.clone(),
                            skipped: self.stage(q).name.clone(),
                            legal,
                        },
                    ));
                    return;
                }
            }
        }
    }

    fn validate_vectorize(&self, sid: StageId, errors: &mut Vec<ScheduleError>) {
        let st = self.stage(sid);
        for (&a, ann) in &st.ann {
            if ann.kind != ForKind::Vectorized || !st.leaf.contains(&a) {
                continue;
            }
            let name = self.axis(a).shown().to_string();
            let last = *st.leaf.last().expect("a vectorized axis is a leaf");
            let attached_inside = self.stages.iter().any(|o| o.attach == Attach::At { stage: sid, axis: a });
            if last != a || attached_inside {
                let innermost =
                    if last != a { self.axis(last).shown().to_string() } else { "an attached stage".to_string() };
                errors.push(ScheduleError::new(
                    ann.loc,
                    ScheduleErrorKind::VectorizeNotInnermost { stage: st.name.clone(), axis: name, innermost },
                ));
            } else if st.attach == Attach::Root && self.static_extent(a).is_none() {
                errors.push(ScheduleError::new(
                    ann.loc,
                    ScheduleErrorKind::VectorizeUnknownExtent { stage: st.name.clone(), axis: name },
                ));
            }
        }
    }

    /// The root stage whose loop nest `sid` runs in.
    pub fn root_of(&self, sid: StageId) -> StageId {
        let mut cur = sid;
        for _ in 0..self.stages.len() {
            match self.stage(cur).attach {
                Attach::At { stage, .. } => cur = stage,
                _ => return cur,
            }
        }
        cur
    }

    fn validate_gpu(&self, errors: &mut Vec<ScheduleError>) {
        for root in self.stage_ids() {
            let rs = self.stage(root);
            if rs.attach != Attach::Root {
                continue;
            }
            let members: Vec<StageId> = self
                .stage_ids()
                .filter(|&s| self.stage(s).attach != Attach::Inline && self.root_of(s) == root)
                .collect();
            for &m in &members {
                self.validate_nested_threads(m, errors);
            }
            let mut any_bound = false;
            let mut extents: BTreeMap<ThreadTag, (i64, Loc)> = BTreeMap::new();
            for &m in &members {
                for (&a, ann) in &self.stage(m).ann {
                    let Some(tag) = ann.bind else { continue };
                    if !self.stage(m).leaf.contains(&a) {
                        continue;
                    }
                    any_bound = true;
                    if tag.is_block() {
                        continue;
                    }
                    if let Some(e) = self.static_extent(a) {
                        let ent = extents.entry(tag).or_insert((0, ann.loc));
                        if e > ent.0 {
                            *ent = (e, ann.loc);
                        }
                    }
                }
            }
            if !any_bound && !rs.parallel_scan {
                errors.push(ScheduleError::new(
                    self.graph.tensor(rs.tensor).loc,
                    ScheduleErrorKind::NotBound { stage: rs.name.clone() },
                ));
                continue;
            }
            let threads: i64 = extents.values().fold(1i64, |acc, e| acc.saturating_mul(e.0));
            if threads > self.target.max_threads_per_block as i64 {
                let loc = extents.values().max_by_key(|e| e.0).map(|e| e.1).unwrap_or(Loc::NONE);
                errors.push(ScheduleError::new(
                    loc,
                    ScheduleErrorKind::BlockTooLarge {
                        stage: rs.name.clone(),
                        threads: threads as u64,
                        max: self.target.max_threads_per_block,
                    },
                ));
            }
        }
    }

    /// A stage attached inside thread-bound loops binds no thread index to more threads
    /// than the enclosing loop bound to the same index: lowering guards everything under
    /// that loop by its extent, so the extra threads would skip this stage's work (and
    /// the barriers after it could not be placed).
    fn validate_nested_threads(&self, m: StageId, errors: &mut Vec<ScheduleError>) {
        let st = self.stage(m);
        for (&a, ann) in &st.ann {
            let Some(tag) = ann.bind.filter(|t| !t.is_block()) else { continue };
            if !st.leaf.contains(&a) {
                continue;
            }
            let Some(e) = self.static_extent(a) else { continue };
            let mut cur = m;
            for _ in 0..self.stages.len() {
                let Attach::At { stage: p, axis: at } = self.stage(cur).attach else { break };
                let ps = self.stage(p);
                let upto = ps.leaf.iter().position(|&x| x == at).map_or(0, |i| i + 1);
                for &pa in &ps.leaf[..upto] {
                    let outer = self.ann(p, pa);
                    if outer.bind != Some(tag) {
                        continue;
                    }
                    if let Some(pe) = self.static_extent(pa).filter(|&pe| e > pe) {
                        errors.push(ScheduleError::new(
                            ann.loc,
                            ScheduleErrorKind::NestedThreadsExceed {
                                stage: st.name.clone(),
                                axis: self.axis(a).shown().to_string(),
                                tag: tag.dsl_name().to_string(),
                                threads: e,
                                outer_stage: ps.name.clone(),
                                outer_axis: self.axis(pa).shown().to_string(),
                                outer_threads: pe,
                            },
                        ));
                        return;
                    }
                }
                cur = p;
            }
        }
    }
}
