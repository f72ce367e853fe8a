//! A 3x3 convolution with zero padding, NCHW, batch 1, 64 -> 64 channels, 56 x 56,
//! written as a performance engineer would for wide vectors. The input is padded first
//! (its own stage, with one more zero row than the window needs). The convolution is
//! then computed over "extended rows": position `p` of a channel's output plane stands
//! for row `p / 58`, column `p % 58` of the padded width, so the window's reads
//! `pad[c, p / 58 + r, p % 58 + s]` are `pad` at the flat offset `p + 58 r + s`:
//! contiguous in `p`, whatever row they cross. 16-lane vectors need no tail (3264
//! positions = 68 x 48; 2 of every 58 columns, and the rows past 56, are computed and
//! dropped: 7% more arithmetic), and `out` copies the 56 real columns of each row.
//!
//! CPU schedule: blocks of 8 output channels in parallel; per block, tiles of 8 channels
//! x 48 positions (three 16-lane registers per channel: 24 accumulators,
//! `cache_write(local)`) while the 64 x 3 x 3 window is reduced (each row of 3 unrolled).
//! GPU schedule: the padding inlined back into the reads (one `if`), a block per filter
//! and 64 positions, a sum in a register per thread, the filter's weights staged in
//! shared memory; then the copy.
//! Shared by the example of the same name, by `benches/peers.rs` and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
        let pad[n, c, y, x]: f32[1, 64, 59, 58] =
            if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
        let ext[n, f, p]: f32[1, 64, 3264] = sum(
            pad[n, c, (p + r * 58 + s) / 58, (p + r * 58 + s) % 58] * w[f, c, r, s]
            for c in 0..64, r in 0..3, s in 0..3);
        out[n, f, y, x] = ext[n, f, y * 58 + x];
    }

    schedule!(cpu) {
        let [pn, pc, py, px] = pad.axes();
        pad.parallel(pc);
        // Tiles of 8 channels x 48 positions, accumulated in registers.
        let el = ext.cache_write(local);
        // Knobs: the tile's channels and positions (3264 = 68 x 48 positions).
        let (fo, fi) = ext.split(ext.f, tune!(channels: 8, 4, 16));
        let (po, pi) = ext.split(ext.p, tune!(positions: 48, 24, 32, 96));
        ext.reorder(ext.n, fo, po, fi, pi);
        ext.parallel(fo);
        ext.vectorize(pi);
        el.compute_at(ext, po);
        let [en, ef, ep] = el.axes();
        el.reorder(el.c, el.r, el.s, ef, ep);
        el.unroll(el.s);
        el.unroll(ef);
        el.vectorize(ep);
        // The 56 real columns of each extended row.
        out.parallel(out.f);
        let (xo, xi) = out.split(out.x, 8);
        out.vectorize(xi);
    }

    schedule!(cuda) {
        pad.compute_inline();
        // Each thread's sum in a register.
        let el = ext.cache_write(local);
        ext.bind(ext.f, block.y);
        let (pb, pt) = ext.split(ext.p, tune!(tx: 64, 32, 128));
        ext.bind(pb, block.x);
        ext.bind(pt, thread.x);
        el.compute_at(ext, pt);
        // The 576 weights of the block's filter, loaded 64 at a time by the 64 threads.
        let w_s = w.cache_read(shared, [el]);
        w_s.compute_at(ext, pb);
        let [wf, wc, wr, ws] = w_s.axes();
        let wcrs = w_s.fuse(wc, wr, ws);
        let (wo, wi) = w_s.split(wcrs, tune!(tx));
        w_s.bind(wi, thread.x);
        out.bind(out.f, block.y);
        out.bind(out.y, block.x);
        out.bind(out.x, thread.x);
    }
}
