//! Layer normalization over the rows of an M x N f32 matrix (mean and variance per row,
//! then scale and shift), with a fused CPU schedule: per row, both reductions 16 lanes
//! wide (rfactor) and the output vectorized. Shared by the example of the same name, by
//! `benches/peers.rs` and by the backend suite.

use tvm::compute;

compute! {
    /// y = (x - mean) / sqrt(var + 1e-5) * gamma + beta, per row
    pub fn layernorm(x: f32[M, N], gamma: f32[N], beta: f32[N]) -> y: f32[M, N] {
        let s[i]: f32[M] = sum(x[i, j] for j in 0..N);
        let q[i]: f32[M] = sum((x[i, j] - s[i] / N as f32) * (x[i, j] - s[i] / N as f32) for j in 0..N);
        y[i, j] = (x[i, j] - s[i] / N as f32) * rsqrt(q[i] / N as f32 + 0.00001) * gamma[j] + beta[j];
    }

    schedule!(cpu) {
        y.parallel(y.i);
        // The next row is fetched while this one is normalized, ahead of the hardware
        // prefetcher (`cargo bench --bench peers -- layernorm` measures it).
        y.prefetch(x, y.i, 1);
        let (jo, ji) = y.split(y.j, 16);
        y.vectorize(ji);
        s.compute_at(y, y.i);
        q.compute_at(y, y.i);
        // The row sum and the sum of squares as 64 partial sums each: four registers,
        // four independent chains of additions (16 lanes would be one chain, each add
        // waiting the 4 cycles of the one before; `cargo bench --bench peers --
        // layernorm` measures it).
        let (so, si) = s.split(s.j, 64);
        let s_rf = s.rfactor(si);
        s_rf.compute_at(y, y.i);
        let [sk, sr] = s_rf.axes();
        let [so2] = s_rf.reduce_axes();
        s_rf.reorder(sr, so2, sk);
        s_rf.vectorize(sk);
        let (qo, qi) = q.split(q.j, 64);
        let q_rf = q.rfactor(qi);
        q_rf.compute_at(y, y.i);
        let [qk, qr] = q_rf.axes();
        let [qo2] = q_rf.reduce_axes();
        q_rf.reorder(qr, qo2, qk);
        q_rf.vectorize(qk);
    }

    schedule!(cuda) {
        // A block per row; the two row reductions across its 128 threads.
        y.bind(y.i, block.x);
        let (jo, ji) = y.split(y.j, 128);
        y.bind(ji, thread.x);
        s.compute_at(y, y.i);
        let (so, si) = s.split(s.j, 128);
        s.bind(si, thread.x);
        q.compute_at(y, y.i);
        let (qo, qi) = q.split(q.j, 128);
        q.bind(qi, thread.x);
    }
}
