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
        y[i, j] = e[i, j] / s[i];
    }
    schedule!(cpu) {
        y.parallel(y.i);
        let (jo, ji) = y.split(y.j, 16);
        y.vectorize(ji);
        m.compute_at(y, y.i);
        e.compute_at(y, y.i);
        s.compute_at(y, y.i);
    }
    schedule!(cuda) {
        y.bind(y.i, block.x);
        let (jo, ji) = y.split(y.j, 128);
        y.bind(ji, thread.x);
        e.compute_inline();
        m.compute_at(y, y.i);
        let (mo, mi) = m.split(m.j, 128);
        m.bind(mi, thread.x);
        s.compute_at(y, y.i);
        let (so, si) = s.split(s.j, 128);
        s.bind(si, thread.x);
    }
}
