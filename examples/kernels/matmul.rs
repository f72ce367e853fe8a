//! Matmul 1024³ f32 with a TVM-tutorial CPU schedule (packed B, an 8 x 16 register tile)
//! and a GPU schedule (16 x 16 output tiles per block, a staged through shared memory 16
//! columns of k at a time). Shared by the example of the same name, by
//! `benches/cpu.rs` and by the backend suite (`tests/backends/`).

use tvm::compute;

compute! {
    /// c = a · b, with b packed into 16-column panels first
    pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[64, 1024, 16] = b[k, x * 16 + y];
        c[i, j] = sum(a[i, k] * bp[j / 16, k, j % 16] for k in 0..1024);
    }

    schedule!(cpu) {
        // Pack b into 16-column panels, in parallel.
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        // An 8 x 16 register tile per (io, jo): 8 accumulators of 16 lanes, k unrolled
        // by 4, rows unrolled, columns vectorized.
        let cl = c.cache_write(local);
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 8, 16);
        c.parallel(io);
        c.vectorize(ji);
        cl.compute_at(c, jo);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 4);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.vectorize(cj);
    }

    schedule!(cuda) {
        // The packing is for CPU registers: on the GPU c reads b directly, coalesced
        // along j, and a's rows go through shared memory 16 columns of k at a time.
        bp.compute_inline();
        let (bi, bj, ti, tj) = c.tile(c.i, c.j, 16, 16);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ti, thread.y);
        c.bind(tj, thread.x);
        let (ko, ki) = c.split(c.k, 16);
        let a_s = a.cache_read(shared, [c]);
        a_s.compute_at(c, ko);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
    }
}
