tvm::compute! {
    pub fn softmax(x: f32[M, 40]) -> y: f32[M, 40] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..40);
        let e[i, j]: f32[M, 40] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..40);
        y[i, j] = e[i, j] / s[i];
    }
    schedule!(cpu) {
        y.parallel(y.i);
        let (jo, ji) = y.split(y.j, 8);
        y.vectorize(ji);
        m.compute_at(y, y.i);
        e.compute_at(y, y.i);
        s.compute_at(y, y.i);
    }
    schedule!(cuda) {
        y.bind(y.i, block.x);
        let (jo, ji) = y.split(y.j, 16);
        y.bind(ji, thread.x);
        let x_s = x.cache_read(shared, [m, e]);
        x_s.compute_at(y, y.i);
        let [xr, xc] = x_s.axes();
        let (xo, xi) = x_s.split(xc, 16);
        x_s.bind(xi, thread.x);
        m.compute_at(y, y.i);
        let (mo, mi) = m.split(m.j, 16);
        m.bind(mi, thread.x);
        s.compute_at(y, y.i);
        let (so, si) = s.split(s.j, 16);
        s.bind(si, thread.x);
    }
}
