//! Row softmax with a fused CPU schedule (per-row max, exponentials and sum inside the parallel row loop).
//! Shared by the example of the same name and by `benches/cpu.rs`.

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
}
