//! A 3x3 convolution with zero padding (through `if`), NCHW, batch 1, 64 -> 64 channels,
//! 56 x 56, with a CPU schedule (output rows in parallel into a local accumulator, the
//! channel reduction and the 3x3 window innermost-unrolled) and a GPU schedule (8 x 8
//! output pixels per block for one filter, the filter's weights staged in shared memory).
//! Shared by the example of the same name and by the backend suite (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
        out[n, f, y, x] = sum(
            if y + r >= 1 && y + r <= 56 && x + s >= 1 && x + s <= 56 {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..64, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let ol = out.cache_write(local);
        let fy = out.fuse(out.f, out.y);
        out.parallel(fy);
        ol.compute_at(out, fy);
        let [on, of, oy, ox] = ol.axes();
        ol.reorder(ol.c, ol.r, ol.s, ox);
        ol.unroll(ol.s);
    }
    schedule!(cuda) {
        let (yo, xo, yi, xi) = out.tile(out.y, out.x, 8, 8);
        let b = out.fuse(yo, xo);
        out.bind(out.f, block.y);
        out.bind(b, block.x);
        out.bind(yi, thread.y);
        out.bind(xi, thread.x);
        let w_s = w.cache_read(shared, [out]);
        w_s.compute_at(out, b);
        // The 576 weights of the block's filter, loaded 64 at a time by the 8 x 8 threads.
        let [wf, wc, wr, ws] = w_s.axes();
        let wcrs = w_s.fuse(wc, wr, ws);
        let (wo, wi) = w_s.split(wcrs, 64);
        let (wy, wx) = w_s.split(wi, 8);
        w_s.bind(wy, thread.y);
        w_s.bind(wx, thread.x);
    }
}
