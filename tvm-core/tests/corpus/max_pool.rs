tvm::compute! {
    pub fn max_pool(data: f32[N, C, H, W]) -> out: f32[N, C, H, W] {
        out[n, c, y, x] = max(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                f32::NEG_INFINITY
            }
            for r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let nc = out.fuse(out.n, out.c);
        out.parallel(nc);
        let (xo, xi) = out.split(out.x, 4);
        out.reorder(xo, out.r, out.s, xi);
        out.vectorize(xi);
    }
    schedule!(cuda) {
        let nc = out.fuse(out.n, out.c);
        out.bind(nc, block.y);
        let (yo, xo, yi, xi) = out.tile(out.y, out.x, 4, 8);
        let b = out.fuse(yo, xo);
        out.bind(b, block.x);
        out.bind(yi, thread.y);
        out.bind(xi, thread.x);
        let d_s = data.cache_read(shared, [out]);
        d_s.compute_at(out, b);
        let [dn, dc, dy, dx] = d_s.axes();
        d_s.bind(dy, thread.y);
        d_s.bind(dx, thread.x);
    }
}
