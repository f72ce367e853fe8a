tvm::compute! {
    pub fn conv2d(data: f32[N, 3, H, W], w: f32[F, 3, 3, 3]) -> out: f32[N, F, H, W] {
        out[n, f, y, x] = sum(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..3, r in 0..3, s in 0..3);
    }
    schedule!(cpu) {
        let (xo, xi) = out.split(out.x, 4);
        out.reorder(xo, out.c, out.r, out.s, xi);
        out.parallel(out.f);
        out.unroll(out.s);
        out.vectorize(xi);
    }
    schedule!(cuda) {
        let (yo, xo, yi, xi) = out.tile(out.y, out.x, 4, 4);
        let b = out.fuse(yo, xo);
        out.bind(out.f, block.y);
        out.bind(b, block.x);
        out.bind(yi, thread.y);
        out.bind(xi, thread.x);
        let w_s = w.cache_read(shared, [out]);
        w_s.compute_at(out, b);
        let [wf, wc, wr, ws] = w_s.axes();
        let wcr = w_s.fuse(wc, wr);
        w_s.bind(wcr, thread.y);
        w_s.bind(ws, thread.x);
    }
}
