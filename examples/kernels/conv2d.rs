//! A 3x3 convolution with zero padding, NCHW, batch 1, 64 -> 64 channels, 56 x 56. The
//! algorithm pads first (its own stage), as a performance engineer would: then every read
//! of the window is in bounds and contiguous. CPU schedule: blocks of 8 output channels in
//! parallel, each output tile of 8 channels x 2 rows x 8 columns held in 16 registers of 8
//! lanes (`cache_write(local)`) while the 64 x 3 x 3 window is reduced (each row of 3 unrolled).
//! GPU schedule: the padding inlined back into the reads (one `if`, as before), 8 x 8
//! output pixels per block for one filter, the filter's weights staged in shared memory.
//! Shared by the example of the same name, by `benches/peers.rs` and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
        let pad[n, c, y, x]: f32[1, 64, 58, 58] =
            if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
        out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
    }

    schedule!(cpu) {
        let [pn, pc, py, px] = pad.axes();
        pad.parallel(pc);
        // Output tiles of 8 channels x 2 rows x 8 columns, accumulated in registers.
        let ol = out.cache_write(local);
        let (fo, fi) = out.split(out.f, 8);
        let (yo, yi) = out.split(out.y, 2);
        let (xo, xi) = out.split(out.x, 8);
        out.reorder(out.n, fo, yo, xo, fi, yi, xi);
        out.parallel(fo);
        out.vectorize(xi);
        ol.compute_at(out, xo);
        let [on, of, oy, ox] = ol.axes();
        ol.reorder(ol.c, ol.r, ol.s, of, oy, ox);
        ol.unroll(ol.s);
        ol.unroll(of);
        ol.unroll(oy);
        ol.vectorize(ox);
    }

    schedule!(cuda) {
        pad.compute_inline();
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
