//! A dense layer with bias and ReLU, `out = relu(x · wᵀ + bias)`, 256 x 1024 x 1024, with
//! a CPU schedule (w packed into 32-row panels, blocks of rows of 8 x 32 register tiles
//! with the epilogue fused) and a GPU schedule (16 x 16 output tiles per block, x staged through shared
//! memory 16 columns of k at a time). Shared by the example of the same name and
//! by the backend suite (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn dense_bias_relu(x: f32[256, 1024], w: f32[1024, 1024], bias: f32[1024]) -> out: f32[256, 1024] {
        let wp[p, k, q]: f32[32, 1024, 32] = w[p * 32 + q, k];
        let d[i, j]: f32[256, 1024] = sum(x[i, k] * wp[j / 32, k, j % 32] for k in 0..1024);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }
    schedule!(cpu) {
        let [pp, pk, pq] = wp.axes();
        wp.parallel(pp);
        // As the matmul example: blocks of rows in parallel; in each, for every 32-row
        // panel of w (128 KB, read from L2 by the block's tiles in turn), an 8 x 32
        // register tile (16 accumulators; per step of k two panel loads and 8 broadcasts
        // for 16 FMAs). Smaller blocks of rows would stream the 4 MB of packed w from L3
        // once per block, and 16-row panels with 8 x 16 tiles load more per FMA. Blocks of
        // 32 rows as written (8 tasks); the record of a 2-core host holds 128. `cargo
        // bench --bench tuning` measures the schedule as written and the record's winner.
        let (io, jo, ii, ji) = out.tile(out.i, out.j, tune!(block: 32, 64, 128), 32);
        let (iio, iii) = out.split(ii, tune!(rows: 8, 4, 16));
        out.parallel(io);
        out.vectorize(ji);
        d.compute_at(out, iio);
        let [di, dj] = d.axes();
        let (ko, ki) = d.split(d.k, tune!(kc: 4, 2, 8));
        d.reorder(ko, ki, di, dj);
        d.unroll(ki);
        d.unroll(di);
        d.vectorize(dj);
    }
    schedule!(cuda) {
        // The packing is for CPU registers: on the GPU d reads w directly.
        wp.compute_inline();
        // Knobs: the block's shape; a slice of k as wide as the block stages x.
        let (bi, bj, ti, tj) = out.tile(out.i, out.j, tune!(ty: 16, 8, 32), tune!(tx: 16, 32, 8));
        out.bind(bi, block.y);
        out.bind(bj, block.x);
        out.bind(ti, thread.y);
        out.bind(tj, thread.x);
        d.compute_at(out, tj);
        let (ko, ki) = d.split(d.k, tune!(tx));
        let x_s = x.cache_read(shared, [d]);
        x_s.compute_at(d, ko);
        let [xy, xk] = x_s.axes();
        x_s.bind(xy, thread.y);
        x_s.bind(xk, thread.x);
    }
}
