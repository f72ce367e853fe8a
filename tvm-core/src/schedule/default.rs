//! Default schedules: what a stage gets when no primitive names it.
//!
//! Injective intermediates are inlined into their consumers. On CPUs, the outermost
//! spatial axis runs in parallel and the innermost spatial axis of a non-reduction stage
//! is split by the target's vector lanes and vectorized. On GPUs, the spatial axes are
//! fused and split by the target's preferred block size, bound to `block.x`/`thread.x`.

use super::*;

impl Schedule {
    /// Gives every stage that no primitive named the target's default treatment.
    pub fn apply_defaults(&mut self) {
        for sid in self.stage_ids().collect::<Vec<_>>() {
            if self.stage(sid).touched {
                continue;
            }
            let st = self.stage(sid).clone();
            let t = self.graph.tensor(st.tensor).clone();
            if !self.graph.is_output(st.tensor) && !t.is_reduction() {
                self.stage_mut(sid).attach = Attach::Inline;
                continue;
            }
            let n = Loc::NONE;
            let spatial = self.leaf_axes(sid);
            if spatial.is_empty() {
                continue;
            }
            if self.target.is_gpu() {
                let mut f = spatial[0];
                for &a in &spatial[1..] {
                    f = self.fuse(sid, (f, n), (a, n)).expect("default: spatial axes are adjacent");
                }
                let bs = self.target.preferred_block_size() as i64;
                let (bx, tx) = self.split(sid, (f, n), (bs, n)).expect("default: split of a leaf axis");
                self.set_axis_name(bx, "bx");
                self.set_axis_name(tx, "tx");
                self.bind(sid, (bx, n), (ThreadTag::BlockX, n)).expect("default: bind on a GPU target");
                self.bind(sid, (tx, n), (ThreadTag::ThreadX, n)).expect("default: bind on a GPU target");
            } else {
                let lanes = self.target.vector_lanes(t.dtype) as i64;
                let last = *spatial.last().expect("non-empty");
                let mut outer = spatial[0];
                if !t.is_reduction() && lanes > 1 {
                    let (o, v) = self.split(sid, (last, n), (lanes, n)).expect("default: split of a leaf axis");
                    self.vectorize(sid, (v, n)).expect("default: vectorize of a spatial axis");
                    if spatial.len() == 1 {
                        outer = o;
                    }
                }
                self.parallel(sid, (outer, n)).expect("default: parallel of a spatial axis");
            }
            self.stage_mut(sid).touched = false;
        }
    }
}
