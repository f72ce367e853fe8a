//! Matmul 1024³ f32 with a TVM-tutorial CPU schedule (packed B, blocks of rows, an 8 x 32
//! register tile), a GPU schedule (128 x 128 tiles per block of 256 threads, 8 x 8 per
//! thread in registers, both operands staged through shared memory with float4 loads) and
//! a WebGPU one (64 x 64 tiles, 4 x 4 per invocation, within WebGPU's default limits).
//! Shared by the example of the same name, by `benches/cpu.rs` and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    /// c = a · b, with b packed into 32-column panels first
    pub fn matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[32, 1024, 32] = b[k, x * 32 + y];
        c[i, j] = sum(a[i, k] * bp[j / 32, k, j % 32] for k in 0..1024);
    }

    schedule!(cpu) {
        // Pack b into 32-column panels, in parallel.
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        // Blocks of rows in parallel (128 as written, 8 tasks; a host with more cores
        // tunes 64 for 16 tasks); in each, for every 32-column panel of bp, an 8 x 32
        // register tile per 8 rows (iio): 16 accumulators of 16 lanes (two per row), k
        // unrolled by 4, rows unrolled, columns vectorized. Per step of k: two loads of
        // the panel and 8 broadcasts of a for 16 FMAs (an 8 x 16 tile has 9 loads for 8
        // FMAs). The panel (128 KB) is read by the 16 register tiles of a block in turn,
        // from L2; with a block of 8 rows it would come from L3 (bp is 4 MB) for every 8
        // rows. `cargo bench --bench peers -- matmul` measures the schedule as written,
        // `tvm-tune` the knobs' other values.
        let cl = c.cache_write(local);
        // Knobs (`tune!`): the block's rows, the tile's rows and columns, and the k
        // unrolling; the first values are the schedule as written, `tvm-tune` measures
        // the rest.
        let (io, jo, ii, ji) = c.tile(c.i, c.j, tune!(block: 128, 64, 256), tune!(cols: 32, 16));
        let (iio, iii) = c.split(ii, tune!(rows: 8, 4));
        c.parallel(io);
        c.vectorize(ji);
        cl.compute_at(c, iio);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, tune!(kc: 4, 8));
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.vectorize(cj);
    }

    schedule!(cuda) {
        // Warptiling-style SGEMM: a block of 16 x 16 threads computes a 128 x 128 tile of
        // c, each thread an 8 x 8 register tile (cache_write local at the thread axis).
        // Per 8-wide slice of k, both operands are staged through shared memory, loaded
        // by all 256 threads with one float4 each; the thread tile reads its rows of a
        // and columns of b from shared memory as float4 too (ptxas merges them: LDS.128).
        bp.compute_inline();
        let cl = c.cache_write(local);
        let (bi, bj, ii, jj) = c.tile(c.i, c.j, 128, 128);
        let (ty, yi) = c.split(ii, 8);
        let (tx, xi) = c.split(jj, 8);
        c.reorder(bi, bj, ty, tx, yi, xi);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        let (xo, xv) = c.split(xi, 4);
        c.vectorize(xv);
        cl.compute_at(c, tx);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 8);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(tune!(unrolled: ki, ko));
        cl.unroll(ci);
        cl.unroll(cj);
        // The 128 x 8 slice of a and the 8 x 128 slice of b (as packed panels), 4 floats
        // per thread.
        let a_s = a.cache_read(shared, [cl]);
        let b_s = bp.cache_read(shared, [cl]);
        a_s.compute_at(cl, ko);
        b_s.compute_at(cl, ko);
        let [ay, ax] = a_s.axes();
        let af = a_s.fuse(ay, ax);
        let (at, av) = a_s.split(af, 4);
        let (aty, atx) = a_s.split(at, 16);
        a_s.bind(aty, thread.y);
        a_s.bind(atx, thread.x);
        a_s.vectorize(av);
        let [bx, bk, by] = b_s.axes();
        let bf0 = b_s.fuse(bx, bk);
        let bf = b_s.fuse(bf0, by);
        let (bt, bv) = b_s.split(bf, 4);
        let (bty, btx) = b_s.split(bt, 16);
        b_s.bind(bty, thread.y);
        b_s.bind(btx, thread.x);
        b_s.vectorize(bv);
    }

    schedule!(webgpu) {
        // Within WebGPU's default limits (256 invocations, 16 KiB of workgroup memory):
        // a workgroup of 16 x 16 invocations computes a 64 x 64 tile of c, each
        // invocation a 4 x 4 register tile stored as one vec4 a row. Per 16-wide slice of
        // k, both operands are staged through workgroup memory (4 KiB each), one vec4 per
        // invocation, and the 256 multiply-adds of the slice are unrolled.
        bp.compute_inline();
        let cl = c.cache_write(local);
        let (bi, bj, ii, jj) = c.tile(c.i, c.j, 64, 64);
        let (ty, yi) = c.split(ii, 4);
        let (tx, xi) = c.split(jj, 4);
        c.reorder(bi, bj, ty, tx, yi, xi);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        c.vectorize(xi);
        cl.compute_at(c, tx);
        let [ci, cj] = cl.axes();
        let (ko, ki) = cl.split(cl.k, 16);
        cl.reorder(ko, ki, ci, cj);
        cl.unroll(ki);
        cl.unroll(ci);
        cl.unroll(cj);
        // The 64 x 16 slice of a and the 16 x 64 slice of b (two packed panels).
        let a_s = a.cache_read(shared, [cl]);
        let b_s = bp.cache_read(shared, [cl]);
        a_s.compute_at(cl, ko);
        b_s.compute_at(cl, ko);
        let [ay, ax] = a_s.axes();
        let af = a_s.fuse(ay, ax);
        let (at, av) = a_s.split(af, 4);
        let (aty, atx) = a_s.split(at, 16);
        a_s.bind(aty, thread.y);
        a_s.bind(atx, thread.x);
        a_s.vectorize(av);
        let [bx, bk, by] = b_s.axes();
        let bf0 = b_s.fuse(bx, bk);
        let bf = b_s.fuse(bf0, by);
        let (bt, bv) = b_s.split(bf, 4);
        let (bty, btx) = b_s.split(bt, 16);
        b_s.bind(bty, thread.y);
        b_s.bind(btx, thread.x);
        b_s.vectorize(bv);
    }
}
