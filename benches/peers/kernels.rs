//! The kernels of the peer comparison (`benches/peers/run.py`), each with the schedule
//! that `benches/peers/peers.py` gives TVM and Halide. The examples' own kernels
//! (`examples/kernels/`) are compared too; they are included by `benches/peers.rs`.

use tvm::compute;

compute! {
    /// The TVM tutorial's `opt_gemm` schedule: b packed into 32-column panels, a 32 x 32
    /// block of c per (mo, no) accumulated in a local write cache, k split by 4 and
    /// unrolled, the 32 columns one 32-lane vector.
    pub fn sgemm_bn32(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[32, 1024, 32] = b[k, x * 32 + y];
        c[i, j] = sum(a[i, k] * bp[j / 32, k, j % 32] for k in 0..1024);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let cc = c.cache_write(local);
        let (mo, no, mi, ni) = c.tile(c.i, c.j, 32, 32);
        c.parallel(mo);
        cc.compute_at(c, no);
        let [mc, nc] = cc.axes();
        let (ko, ki) = cc.split(cc.k, 4);
        cc.reorder(ko, mc, ki, nc);
        cc.vectorize(nc);
        cc.unroll(ki);
    }
}

compute! {
    /// `opt_gemm` with 16-column panels and 16-lane vectors.
    pub fn sgemm_bn16(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[64, 1024, 16] = b[k, x * 16 + y];
        c[i, j] = sum(a[i, k] * bp[j / 16, k, j % 16] for k in 0..1024);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let cc = c.cache_write(local);
        let (mo, no, mi, ni) = c.tile(c.i, c.j, 16, 16);
        c.parallel(mo);
        cc.compute_at(c, no);
        let [mc, nc] = cc.axes();
        let (ko, ki) = cc.split(cc.k, 4);
        cc.reorder(ko, mc, ki, nc);
        cc.vectorize(nc);
        cc.unroll(ki);
    }
}

compute! {
    /// `opt_gemm` with 64-column panels and 64-lane vectors (four registers per vector
    /// with AVX-512).
    pub fn sgemm_bn64(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[16, 1024, 64] = b[k, x * 64 + y];
        c[i, j] = sum(a[i, k] * bp[j / 64, k, j % 64] for k in 0..1024);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let cc = c.cache_write(local);
        let (mo, no, mi, ni) = c.tile(c.i, c.j, 64, 64);
        c.parallel(mo);
        cc.compute_at(c, no);
        let [mc, nc] = cc.axes();
        let (ko, ki) = cc.split(cc.k, 4);
        cc.reorder(ko, mc, ki, nc);
        cc.vectorize(nc);
        cc.unroll(ki);
    }
}

compute! {
    /// `opt_gemm` without a write cache (the tutorial's "array packing" step): c is
    /// accumulated in place, 32 x 32 blocks, k split by 4 and unrolled, 32-lane vectors.
    pub fn sgemm_bn32_nocache(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        let bp[x, k, y]: f32[32, 1024, 32] = b[k, x * 32 + y];
        c[i, j] = sum(a[i, k] * bp[j / 32, k, j % 32] for k in 0..1024);
    }
    schedule!(cpu) {
        let [px, pk, py] = bp.axes();
        bp.parallel(px);
        bp.vectorize(py);
        let (mo, no, mi, ni) = c.tile(c.i, c.j, 32, 32);
        let (ko, ki) = c.split(c.k, 4);
        c.reorder(mo, no, ko, mi, ki, ni);
        c.parallel(mo);
        c.vectorize(ni);
        c.unroll(ki);
    }
}

compute! {
    /// conv2d 3 x 3, 64 -> 64 channels, 56 x 56, with the zero padding as its own stage
    /// (computed first) and x split by 8 and vectorized inside the reduction.
    pub fn conv2d_padded(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
        let pad[n, c, y, x]: f32[1, 64, 58, 58] =
            if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
        out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let [pn, pc, py, px] = pad.axes();
        pad.parallel(pc);
        let ol = out.cache_write(local);
        let fy = out.fuse(out.f, out.y);
        out.parallel(fy);
        ol.compute_at(out, fy);
        let [on, of, oy, ox] = ol.axes();
        let (xo, xi) = ol.split(ox, 8);
        ol.reorder(xo, ol.c, ol.r, ol.s, xi);
        ol.unroll(ol.s);
        ol.vectorize(xi);
    }
}

compute! {
    /// conv2d with the zero padding as an `if` inside the reduction (the schedule the
    /// conv2d example had before it padded first): output rows in parallel into a local
    /// accumulator, the 3x3 window unrolled, no vectors.
    pub fn conv2d_if(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
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
}
