//! Bound inference: the range of every axis of every stage. A root stage covers its
//! whole shape; a stage computed at a consumer's axis covers the region its consumers
//! read during one iteration of that axis (relaxing the loops inside it), as in TVM's
//! InferBound. Derived axes (split, fuse) start at 0.
//!
//! [`infer_bound_shifted`] also shifts the last iteration of some splits inwards
//! (Halide's `TailStrategy::ShiftInwards`): a split whose inner loop is a vector and whose
//! factor may not divide a symbolic extent `e` gives its parent the value
//! `min(o * f, e - f) + i` rather than `o * f + i`, so the last block recomputes a few
//! elements of the one before it and every block is a whole vector. Those bounds hold only
//! where `e >= f`: `schedule_ops` emits such a stage's nest twice, under that test and
//! with the plain bounds in its `else`. Only where recomputing an element is harmless:
//! see `shifts_inwards`.
use crate::arith::Analyzer;
use crate::schedule::{Attach, AxisId, Relation, Schedule, SplitBy, StageId};
use crate::te::TensorId;
use crate::tir::mutate::substitute;
use crate::tir::visit::for_each_expr;
use crate::tir::{Expr, ForKind, Range, Scope, Var};
use std::collections::{HashMap, HashSet};

/// The inferred ranges. Root axes have a `min` (possibly symbolic in the loop variables
/// of the stages they are computed in); every axis has an extent.
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    pub root: HashMap<AxisId, Range>,
    pub extent: HashMap<AxisId, Expr>,
    /// The outer axes of the splits whose last iteration may shift inwards (found by
    /// either inference; only the bounds of [`infer_bound_shifted`] shift them).
    pub shifted: HashSet<AxisId>,
    /// Whether these bounds shift the splits of `shifted` (those of [`infer_bound_shifted`]).
    shift: bool,
}

impl Bounds {
    pub fn extent(&self, a: AxisId) -> &Expr {
        &self.extent[&a]
    }

    /// The value of every axis of `sid` (root axes absolute, i.e. including their
    /// `min`), given the values of the leaf axes.
    pub fn axis_values(&self, sch: &Schedule, sid: StageId, leaf: &HashMap<AxisId, Expr>) -> HashMap<AxisId, Expr> {
        let st = sch.stage(sid);
        let mut v = leaf.clone();
        for r in st.relations.iter().rev() {
            match *r {
                Relation::Split { parent, outer, inner, .. } => {
                    if let (Some(o), Some(i)) = (v.get(&outer), v.get(&inner)) {
                        let f = self.extent(inner).clone();
                        let base = o.clone() * f.clone();
                        let base =
                            if self.shifts(outer) { Expr::min(base, self.extent(parent).clone() - f) } else { base };
                        v.insert(parent, base + i.clone());
                    }
                }
                Relation::Fuse { outer, inner, fused } => {
                    if let Some(f) = v.get(&fused).cloned() {
                        let ie = self.extent(inner).clone();
                        v.insert(outer, f.clone() / ie.clone());
                        v.insert(inner, f % ie);
                    }
                }
            }
        }
        for a in st.root_axes.iter().chain(&st.reduce_axes) {
            if let Some(val) = v.get(a).cloned() {
                let min = self.root[a].min.clone();
                v.insert(*a, if min.is_const_int(0) { val } else { min + val });
            }
        }
        v
    }

    /// Whether these bounds shift the last iteration of the split whose outer axis is
    /// `outer`.
    pub fn shifts(&self, outer: AxisId) -> bool {
        self.shift && self.shifted.contains(&outer)
    }

    /// The conditions under which the shifted splits of `sid` are valid: each one's
    /// parent extent at least its factor. Empty when none of its splits shifts.
    pub fn shift_conditions(&self, sch: &Schedule, sid: StageId) -> Vec<Expr> {
        let mut out = Vec::new();
        for r in &sch.stage(sid).relations {
            if let Relation::Split { parent, outer, inner, .. } = *r {
                if self.shifts(outer) {
                    out.push(Expr::ge(self.extent(parent).clone(), self.extent(inner).clone()));
                }
            }
        }
        out
    }

    /// The root variables of `sid` mapped to their values as functions of the leaf loop
    /// variables (each leaf axis' own `var`).
    pub fn root_var_map(&self, sch: &Schedule, sid: StageId) -> HashMap<Var, Expr> {
        let st = sch.stage(sid);
        let leaf: HashMap<AxisId, Expr> = st.leaf.iter().map(|&a| (a, Expr::var(&sch.axis(a).var))).collect();
        let vals = self.axis_values(sch, sid, &leaf);
        st.root_axes.iter().chain(&st.reduce_axes).map(|a| (sch.axis(*a).var.clone(), vals[a].clone())).collect()
    }
}

/// Infers the bounds of every stage of `sch`, which must have its inlined stages
/// substituted already (`inline_stages`).
pub fn infer_bound(sch: &Schedule) -> Bounds {
    infer(sch, false)
}

/// The bounds of [`infer_bound`] with the last iteration of every split that
/// `shifts_inwards` shifted inwards; valid where each such split's parent extent is at
/// least its factor ([`Bounds::shift_conditions`]).
pub fn infer_bound_shifted(sch: &Schedule) -> Bounds {
    infer(sch, true)
}

fn infer(sch: &Schedule, shift: bool) -> Bounds {
    let mut b = Bounds { shift, ..Bounds::default() };
    let mut state = vec![0u8; sch.stages.len()];
    for sid in sch.stage_ids() {
        if sch.stage(sid).attach != Attach::Inline {
            infer_stage(sch, sid, &mut b, &mut state);
        }
    }
    b
}

fn infer_stage(sch: &Schedule, sid: StageId, b: &mut Bounds, state: &mut [u8]) {
    match state[sid.0 as usize] {
        2 => return,
        1 => panic!("internal: infer_bound: cyclic attachment at stage `{}`", sch.stage(sid).name),
        _ => {}
    }
    state[sid.0 as usize] = 1;
    let st = sch.stage(sid).clone();
    let t = sch.graph.tensor(st.tensor).clone();
    let analyzer = Analyzer::new();
    let spatial: Vec<Range> = match st.attach {
        Attach::At { stage: c, axis } => region_at(sch, sid, c, axis, b, state),
        _ => t.shape.iter().map(|e| Range::from_extent(e.clone())).collect(),
    };
    for (a, r) in st.root_axes.iter().zip(spatial) {
        b.extent.insert(*a, r.extent.clone());
        b.root.insert(*a, r);
    }
    for (a, iv) in st.reduce_axes.iter().zip(t.reduce_axes()) {
        b.extent.insert(*a, iv.dom.extent.clone());
        b.root.insert(*a, iv.dom.clone());
    }
    for r in &st.relations {
        match *r {
            Relation::Split { parent, outer, inner, by } => {
                let pe = b.extent[&parent].clone();
                let (oe, ie) = match by {
                    SplitBy::Factor(f) => ((pe + (f - 1)) / f, Expr::int(f)),
                    SplitBy::NParts(n) => (Expr::int(n), (pe + (n - 1)) / n),
                };
                b.extent.insert(outer, analyzer.simplify(&oe));
                b.extent.insert(inner, analyzer.simplify(&ie));
                if shifts_inwards(sch, sid, (parent, outer, inner), &b.extent[&parent], by) {
                    b.shifted.insert(outer);
                }
            }
            Relation::Fuse { outer, inner, fused } => {
                let e = b.extent[&outer].clone() * b.extent[&inner].clone();
                b.extent.insert(fused, analyzer.simplify(&e));
            }
        }
    }
    state[sid.0 as usize] = 2;
}

/// Whether the split of `sid` into `outer` and `inner` (of a parent of extent `pe`)
/// shifts its last iteration inwards: on CPUs, in a stage at the root, a factor that may
/// not divide a symbolic extent, a vector inner loop, and an outer loop that is a serial leaf (no other thread
/// writes the block it recomputes) with every reduction loop of the stage inside it (an
/// element recomputed is initialized again, never accumulated twice), and no stage
/// computed at a loop outside it, and no test of the split axis in the stage's body. Constant extents
/// keep their tail: `hoist_tail_guards` turns it into a shorter vector.
fn shifts_inwards(sch: &Schedule, sid: StageId, split: (AxisId, AxisId, AxisId), pe: &Expr, by: SplitBy) -> bool {
    let (parent, outer, inner) = split;
    let st = sch.stage(sid);
    let SplitBy::Factor(f) = by else { return false };
    // At the root, the parent's extent is fixed by the shape, so the test that the shift
    // needs can stand in front of the stage's whole nest.
    if sch.target.is_gpu() || f < 2 || pe.as_int().is_some() || st.parallel_scan || st.attach != Attach::Root {
        return false;
    }
    let ann = |a: AxisId| sch.ann(sid, a);
    let Some(pos) = st.leaf.iter().position(|&a| a == outer) else { return false };
    let serial = ann(outer).kind == ForKind::Serial && ann(outer).bind.is_none();
    let vector = ann(inner).kind == ForKind::Vectorized && st.leaf.contains(&inner);
    // A reduction axis (root or derived) left of the outer loop would update the
    // recomputed elements twice.
    let reduce_leaf = |a: AxisId| sch.axis(a).kind == crate::tir::IterKind::Reduce;
    let reductions_inside = st.leaf[..pos].iter().all(|&a| !reduce_leaf(a));
    // A stage computed outside the outer loop (a softmax's row sums at the row) covers
    // the whole row whatever the shift; its loops are left as they were.
    let outside = |a: AxisId| st.leaf.iter().position(|&b| b == a).is_some_and(|p| p < pos);
    let nothing_outside = sch
        .stage_ids()
        .all(|q| !matches!(sch.stage(q).attach, Attach::At { stage, axis } if stage == sid && outside(axis)));
    // A test of the split axis in the stage's own body (a stencil's border) would stay in
    // the shifted last block, which then is the border itself: its lanes stay scalar (or
    // become masked gathers) either way, and the tail is left as it was.
    let vars: Vec<crate::tir::Var> = match st.root_axes.iter().find(|&&a| a == parent) {
        Some(&a) => vec![sch.axis(a).var.clone()],
        None => st.root_axes.iter().map(|&a| sch.axis(a).var.clone()).collect(),
    };
    let mut tests_axis = false;
    if let Some(body) = sch.graph.tensor(st.tensor).body() {
        for_each_expr(body, &mut |e| {
            if let Expr::Select { cond, .. } = e {
                tests_axis |= vars.iter().any(|v| crate::tir::visit::uses_var(cond, v));
            }
        });
    }
    serial && vector && reductions_inside && nothing_outside && !tests_axis
}

/// The stages between `q` and `c` on `q`'s attachment chain, `q` included, `c` not.
fn chain(sch: &Schedule, q: StageId, c: StageId) -> Vec<StageId> {
    let mut out = Vec::new();
    let mut cur = q;
    while cur != c {
        out.push(cur);
        match sch.stage(cur).attach {
            Attach::At { stage, .. } => cur = stage,
            _ => break,
        }
        if out.len() > sch.stages.len() {
            break;
        }
    }
    out
}

/// The region of `p`'s tensor read by its consumers during one iteration of `axis` of
/// `c`, one range per dim.
fn region_at(sch: &Schedule, p: StageId, c: StageId, axis: AxisId, b: &mut Bounds, state: &mut [u8]) -> Vec<Range> {
    let ptensor = sch.stage(p).tensor;
    let rank = sch.graph.tensor(ptensor).shape.len();
    let consumers = sch.effective_consumers(p);
    // Every stage whose loop variables appear: the consumers' chains and c.
    let mut involved: Vec<StageId> = vec![c];
    for &q in &consumers {
        for s in chain(sch, q, c) {
            if !involved.contains(&s) {
                involved.push(s);
            }
        }
    }
    for &s in &involved {
        infer_stage(sch, s, b, state);
    }
    // The stages C is computed in, with the position of the loop it sits in.
    let mut ancestors: Vec<(StageId, usize)> = Vec::new();
    let mut cur = c;
    while let Attach::At { stage, axis } = sch.stage(cur).attach {
        if ancestors.len() > sch.stages.len() {
            break;
        }
        let pos = sch.stage(stage).leaf.iter().position(|&a| a == axis).unwrap_or(0);
        infer_stage(sch, stage, b, state);
        ancestors.push((stage, pos));
        cur = stage;
    }
    // A shared buffer serves every thread of the block, and a global one every block:
    // their regions cover every value of those indices (TVM's NeedRelax).
    let scope = sch.storage_scope(p);
    let shared_by = |sid: StageId, a: AxisId| match sch.ann(sid, a).bind {
        Some(t) if t.is_block() => scope == Scope::Global,
        Some(_) => scope != Scope::Local,
        None => false,
    };
    let mut analyzer = Analyzer::new();
    for d in &sch.graph.dims {
        analyzer.assume_nonneg(d);
    }
    let mut relax: Vec<Var> = Vec::new();
    let c_pos = sch.stage(c).leaf.iter().position(|&a| a == axis).unwrap_or(0);
    let mut levels: Vec<(StageId, Option<usize>)> =
        involved.iter().map(|&s| (s, if s == c { Some(c_pos) } else { None })).collect();
    levels.extend(ancestors.iter().map(|&(s, pos)| (s, Some(pos))));
    for (s, outer_pos) in levels {
        let st = sch.stage(s);
        for (i, &a) in st.leaf.iter().enumerate() {
            let v = sch.axis(a).var.clone();
            analyzer.bind(&v, Expr::int(0), b.extent(a).clone());
            let inside = outer_pos.is_none_or(|pos| i > pos);
            if inside || shared_by(s, a) {
                relax.push(v);
            }
        }
    }
    let mut lo: Vec<Option<Expr>> = vec![None; rank];
    let mut hi: Vec<Option<Expr>> = vec![None; rank];
    // A dim whose bounds cannot be expressed (e.g. `f / N` of a fused axis) covers the
    // whole tensor.
    let mut whole = vec![false; rank];
    for &q in &consumers {
        if !involved.contains(&q) {
            continue; // not inside c: validate() reported it
        }
        let map = b.root_var_map(sch, q);
        let body = sch.graph.tensor(sch.stage(q).tensor).body().cloned().expect("a stage computes");
        let reads = sch.graph.tuple_outputs(ptensor).into_iter().flat_map(|t| reads_of(&body, t));
        for indices in reads {
            for (d, idx) in indices.into_iter().enumerate().take(rank) {
                // A checked index (read from memory, say) may be anywhere in the dim; its
                // check must not end up in the region's bounds, which run before it.
                if crate::tir::visit::expr_has_check(&idx) {
                    whole[d] = true;
                    continue;
                }
                let e = substitute(idx, &map);
                let (Some(l), Some(h)) = analyzer.try_symbolic_bounds(&e, &relax) else {
                    whole[d] = true;
                    continue;
                };
                lo[d] = Some(match lo[d].take() {
                    None => l,
                    Some(o) => analyzer.simplify(&Expr::min(o, l)),
                });
                hi[d] = Some(match hi[d].take() {
                    None => h,
                    Some(o) => analyzer.simplify(&Expr::max(o, h)),
                });
            }
        }
    }
    let shape = sch.graph.tensor(ptensor).shape.clone();
    (0..rank)
        .map(|d| match (lo[d].clone(), hi[d].clone()) {
            _ if whole[d] => Range::from_extent(shape[d].clone()),
            (Some(l), Some(h)) => {
                // Clip constant regions to the tensor: nothing outside it is computed.
                if let (Some(lc), Some(hc), Some(dim)) =
                    (analyzer.simplify(&l).as_int(), analyzer.simplify(&h).as_int(), shape[d].as_int())
                {
                    let (lo, hi) = (lc.max(0), hc.min(dim - 1));
                    return Range::new(Expr::int(lo), Expr::int((hi - lo + 1).max(0)));
                }
                let mut extent = analyzer.simplify(&(h - l.clone() + 1));
                // An extent that varies with the outer loops (e.g. with the block index)
                // is over-approximated by its largest value, so the buffer has a constant
                // size; the extra elements are clipped to the tensor or never read.
                if extent.as_int().is_none() {
                    if let Some((_, max)) = analyzer.const_bounds(&extent) {
                        extent = Expr::int(max.max(0));
                    }
                }
                Range::new(l, extent)
            }
            _ => Range::from_extent(shape[d].clone()),
        })
        .collect()
}

/// The index lists of every read of `t` in `e`.
pub fn reads_of(e: &Expr, t: TensorId) -> Vec<Vec<Expr>> {
    let mut out = Vec::new();
    for_each_expr(e, &mut |x| {
        if let Expr::ProducerLoad { tensor, indices, .. } = x {
            if *tensor == t {
                out.push(indices.clone());
            }
        }
    });
    out
}
