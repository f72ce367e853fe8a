//! Top-1 of each row of a score matrix: the largest score and the first column holding it
//! (`argmax`, two reductions: the row max, then the first column equal to it). On the CPU
//! each row's two passes run in one iteration of the parallel row loop, 16 lanes wide (the
//! row stays in the cache between them); on GPUs a block per row, both passes cross-thread
//! reductions. Shared by the example of the same name and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn top1(scores: f32[M, N]) -> (best: f32[M], at: i64[M]) {
        (best[i], at[i]) = argmax(scores[i, j] for j in 0..N);
    }
    schedule!(cpu) {
        // Both reductions 16 lanes wide (rfactor: 16 partial results per row, combined
        // after), then everything of a row inside one iteration of the parallel row loop.
        let (bo, bi) = best.split(best.j, 16);
        let best_rf = best.rfactor(bi);
        let (ao, ai) = at.split(at.j, 16);
        let at_rf = at.rfactor(ai);
        let [row] = at.axes();
        at.parallel(row);
        best.compute_at(at, row);
        best_rf.compute_at(at, row);
        at_rf.compute_at(at, row);
        let [bv, bk] = best_rf.axes();
        let [bo2] = best_rf.reduce_axes();
        best_rf.reorder(bk, bo2, bv);
        best_rf.vectorize(bv);
        let [av, ak] = at_rf.axes();
        let [ao2] = at_rf.reduce_axes();
        at_rf.reorder(ak, ao2, av);
        at_rf.vectorize(av);
    }
    schedule!(cuda) {
        at.bind(at.i, block.x);
        let (ao, at_t) = at.split(at.j, 128);
        at.bind(at_t, thread.x);
        best.bind(best.i, block.x);
        let (bo, best_t) = best.split(best.j, 128);
        best.bind(best_t, thread.x);
    }
}
