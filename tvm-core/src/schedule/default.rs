//! Default schedules: what a stage gets when no primitive names it.
//!
//! Injective intermediates are inlined into their consumers. On CPUs, the outermost
//! spatial axis runs in parallel and the innermost spatial axis of a non-reduction stage
//! is split by the target's vector lanes and vectorized; a reduction over the contiguous
//! last dimension of what it reads (a row sum, a row max) reduces `lanes` partial results
//! at once (rfactor, as a Halide or TVM schedule would write it). On GPUs, the spatial axes are
//! fused and split by the target's preferred block size, bound to `block.x`/`thread.x`.
//! A recurrence's scan axis is neither parallel, vectorized nor bound: on GPUs the other
//! axes are moved outside it and bound; an inclusive scan with `+ * max min`
//! ([`Graph::scan_monoid`](crate::te::Graph::scan_monoid)) along the last dim, not known
//! to be shorter than [`PARALLEL_SCAN_MIN`], alone or in at most
//! [`PARALLEL_SCAN_MAX_ROWS`] rows known at compile time, is a parallel scan.

use super::primitives::Arg;
use super::*;
use crate::tir::Expr;

/// The shortest scan axis the default GPU schedule computes as a parallel scan (a shorter
/// one runs in one thread: the three launches would cost more).
pub const PARALLEL_SCAN_MIN: i64 = 4096;

/// The most rows (the product of the other dims, all known at compile time) whose scans
/// the default GPU schedule spreads over the threads; more rows (or an unknown number)
/// run one per thread.
pub const PARALLEL_SCAN_MAX_ROWS: i64 = 256;

impl Schedule {
    /// Gives every stage that no primitive named the target's default treatment.
    pub fn apply_defaults(&mut self) {
        for sid in self.stage_ids().collect::<Vec<_>>() {
            if self.stage(sid).touched {
                continue;
            }
            let st = self.stage(sid).clone();
            let t = self.graph.tensor(st.tensor).clone();
            let scan = self.scan_axis(sid);
            if !self.graph.is_output(st.tensor) && !t.is_reduction() && scan.is_none() {
                self.stage_mut(sid).attach = Attach::Inline;
                continue;
            }
            let n = Loc::NONE;
            let spatial = self.leaf_axes(sid);
            if spatial.is_empty() {
                continue;
            }
            if self.target.is_gpu() {
                // A recurrence's scan axis stays a loop inside each thread: the other axes
                // go outside it and are the ones bound; a scan alone runs in one thread.
                let bound: Vec<AxisId> = spatial.iter().copied().filter(|&a| Some(a) != scan).collect();
                // A long scan along the last dim, alone or in few rows (too few to fill
                // the GPU one row per thread): each spread over the GPU's threads.
                let rows: Option<i64> =
                    bound.iter().try_fold(1i64, |r, &a| self.static_extent(a).and_then(|e| r.checked_mul(e)));
                let last = spatial.last() == scan.as_ref();
                match scan {
                    Some(scan)
                        if last
                            && rows.is_some_and(|r| r <= PARALLEL_SCAN_MAX_ROWS)
                            && self.graph.scan_monoid(st.tensor).is_some()
                            && self.static_extent(scan).is_none_or(|e| e >= PARALLEL_SCAN_MIN) =>
                    {
                        self.stage_mut(sid).parallel_scan = true;
                    }
                    Some(scan) if bound.is_empty() => {
                        let (one, _) =
                            self.split_nparts(sid, (scan, n), (1, n)).expect("default: split of a leaf axis");
                        self.bind(sid, (one, n), (ThreadTag::BlockX, n)).expect("default: bind on a GPU target");
                    }
                    Some(scan) => {
                        let order: Vec<Arg<AxisId>> = bound.iter().chain([&scan]).map(|&a| (a, n)).collect();
                        self.reorder(sid, &order).expect("default: reorder of the leaf axes");
                        self.bind_fused(sid, &bound);
                    }
                    None => self.bind_fused(sid, &bound),
                }
            } else {
                // Neither parallel nor vectorized: a recurrence's scan axis.
                let lanes = self.target.vector_lanes(t.dtype) as i64;
                let last = *spatial.last().expect("non-empty");
                let mut spatial = spatial;
                if t.is_reduction() && lanes > 1 {
                    self.default_row_reduction(sid, lanes);
                    // The stage's axes are fresh after an rfactor.
                    spatial = self.leaf_axes(sid);
                }
                let mut outer = spatial[0];
                if !t.is_reduction() && lanes > 1 && Some(last) != scan {
                    let (o, v) = self.split(sid, (last, n), (lanes, n)).expect("default: split of a leaf axis");
                    self.vectorize(sid, (v, n)).expect("default: vectorize of a spatial axis");
                    if spatial.len() == 1 {
                        outer = o;
                    }
                }
                if Some(outer) != scan {
                    self.parallel(sid, (outer, n)).expect("default: parallel of a spatial axis");
                }
            }
            self.stage_mut(sid).touched = false;
        }
    }

    /// `axes` (adjacent leaf axes) fused, split by the target's preferred block size and
    /// bound to `block.x` and `thread.x`.
    fn bind_fused(&mut self, sid: StageId, axes: &[AxisId]) {
        let n = Loc::NONE;
        let mut f = axes[0];
        for &a in &axes[1..] {
            f = self.fuse(sid, (f, n), (a, n)).expect("default: the axes are adjacent");
        }
        let bs = self.target.preferred_block_size() as i64;
        let (bx, tx) = self.split(sid, (f, n), (bs, n)).expect("default: split of a leaf axis");
        self.set_axis_name(bx, "bx");
        self.set_axis_name(tx, "tx");
        self.bind(sid, (bx, n), (ThreadTag::BlockX, n)).expect("default: bind on a GPU target");
        self.bind(sid, (tx, n), (ThreadTag::ThreadX, n)).expect("default: bind on a GPU target");
    }

    /// A row reduction on a CPU: its one reduction axis split by `lanes`, the inner part
    /// factored out into `lanes` partial results computed per row (inside the stage's
    /// innermost spatial loop) by vector code, which the stage then combines. Only when
    /// every read that depends on the axis reads consecutive elements of the last
    /// dimension as it advances (otherwise the lanes would be gathers) and the axis has
    /// more than `lanes` iterations (or an unknown extent). The stage's own spatial axes
    /// keep their default treatment.
    fn default_row_reduction(&mut self, sid: StageId, lanes: i64) {
        let n = Loc::NONE;
        let reduce = self.leaf_reduce_axes(sid);
        let [k] = reduce.as_slice() else { return };
        let k = *k;
        if self.static_extent(k).is_some_and(|e| e < 2 * lanes) {
            return;
        }
        let t = self.graph.tensor(self.stage(sid).tensor).clone();
        let Some(Expr::Reduce(red)) = t.body() else { return };
        let [iv] = red.axes.as_slice() else { return };
        // Every component's reads (a reduction of several values has one source each).
        let (ok, any) = red
            .sources()
            .into_iter()
            .map(|s| contiguous_reads(s, &iv.var))
            .fold((true, false), |a, b| (a.0 && b.0, a.1 || b.1));
        if !(ok && any) {
            return;
        }
        let Ok((_, ki)) = self.split(sid, (k, n), (lanes, n)) else { return };
        let Ok(rf) = self.rfactor((sid, n), (ki, n)) else { return };
        let (s_spatial, rf_axes, rf_reduce) = (self.leaf_axes(sid), self.leaf_axes(rf), self.leaf_reduce_axes(rf));
        let (Some(&at), [r, rest @ ..], [ko]) = (s_spatial.last(), rf_axes.as_slice(), rf_reduce.as_slice()) else {
            return;
        };
        let mut order: Vec<Arg<AxisId>> = rest.iter().map(|&a| (a, n)).collect();
        order.push((*ko, n));
        order.push((*r, n));
        let r = *r;
        let ok = self.compute_at((rf, n), (sid, n), (at, n)).is_ok()
            && self.reorder(rf, &order).is_ok()
            && self.vectorize(rf, (r, n)).is_ok();
        debug_assert!(ok, "default: the row reduction schedule is legal");
        self.stage_mut(rf).touched = false;
    }
}

/// Whether every load in `e` that depends on `k` has `k` only in its last index, with
/// coefficient 1 (the index grows by one as `k` does), and whether there is one.
fn contiguous_reads(e: &Expr, k: &crate::tir::Var) -> (bool, bool) {
    use crate::tir::mutate::substitute_one;
    use crate::tir::visit::{for_each_expr, uses_var};
    let mut ok = true;
    let mut any = false;
    for_each_expr(e, &mut |x| {
        if let Expr::ProducerLoad { indices, .. } | Expr::Load { indices, .. } = x {
            let Some((last, front)) = indices.split_last() else { return };
            if front.iter().any(|i| uses_var(i, k)) {
                ok = false;
            }
            if uses_var(last, k) {
                any = true;
                let next = substitute_one(last.clone(), k, Expr::var(k) + Expr::int(1));
                let step = crate::arith::Analyzer::new().simplify(&(next - last.clone()));
                ok &= step.is_const_int(1);
            }
        }
    });
    (ok, any)
}
