//! Row softmax with a fused CPU schedule (per-row max, exponentials and sum inside the
//! parallel row loop) and a GPU schedule (a block per row; the max and the sum are
//! cross-thread reductions over 128 threads). Shared by the example of the same name, by
//! `benches/cpu.rs` and by the backend suite (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..N);
        let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
        // One division per row, a multiplication per element (as ONNX Runtime does).
        y[i, j] = e[i, j] * (1.0 / s[i]);
    }
    schedule!(cpu) {
        // One row per iteration of the parallel loop; every pass over the row is a
        // vector pass: the row max and the row sum as partial results (rfactor) that
        // are then combined, the exponentials into a row buffer, the output.
        y.parallel(y.i);
        // The next row is fetched while this one is worked on, one row ahead (`cargo
        // bench --bench peers -- softmax` measures it).
        y.prefetch(x, y.i, 1);
        // Knobs: the vector width of the element passes, and of each reduction.
        let (jo, ji) = y.split(y.j, tune!(w: 32, 16, 8));
        y.vectorize(ji);
        m.compute_at(y, y.i);
        e.compute_at(y, y.i);
        s.compute_at(y, y.i);
        let (eo, ei) = e.split(e.j, tune!(w));
        e.vectorize(ei);
        // The max as 64 partial results (four registers, four independent chains; LLVM
        // combines them as a tree), the sum as 64 too (combined as a tree of halving
        // vector steps, `passes::tree_combine`). The first values are the schedule as
        // written; `tvm-tune` measures the knobs' 27 choices (`cargo run --release -p
        // tvm-tune -- .`).
        let (mo, mi) = m.split(m.j, tune!(wm: 64, 16, 32));
        let m_rf = m.rfactor(mi);
        m_rf.compute_at(y, y.i);
        let [mk, mr] = m_rf.axes();
        let [mo2] = m_rf.reduce_axes();
        m_rf.reorder(mr, mo2, mk);
        m_rf.vectorize(mk);
        let (so, si) = s.split(s.j, tune!(ws: 64, 16, 32));
        let s_rf = s.rfactor(si);
        s_rf.compute_at(y, y.i);
        let [sk, sr] = s_rf.axes();
        let [so2] = s_rf.reduce_axes();
        s_rf.reorder(sr, so2, sk);
        s_rf.vectorize(sk);
    }

    schedule!(cuda) {
        y.bind(y.i, block.x);
        let (jo, ji) = y.split(y.j, tune!(tx: 128, 64, 256));
        y.bind(ji, thread.x);
        e.compute_inline();
        m.compute_at(y, y.i);
        let (mo, mi) = m.split(m.j, tune!(tx));
        m.bind(mi, thread.x);
        s.compute_at(y, y.i);
        let (so, si) = s.split(s.j, tune!(tx));
        s.bind(si, thread.x);
    }
}
