tvm::compute! {
    pub fn dense_bias_relu(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
        let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }
    schedule!(cpu) {
        let (io, jo, ii, ji) = out.tile(out.i, out.j, 4, 8);
        out.parallel(io);
        out.vectorize(ji);
        d.compute_at(out, jo);
        let (ko, ki) = d.split(d.k, 4);
        d.unroll(ki);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = out.tile(out.i, out.j, 4, 8);
        out.bind(bi, block.y);
        out.bind(bj, block.x);
        out.bind(ti, thread.y);
        out.bind(tj, thread.x);
        d.compute_at(out, tj);
        let (ko, ki) = d.split(d.k, 4);
        let x_s = x.cache_read(shared, [d]);
        x_s.compute_at(d, ko);
        let [xy, xk] = x_s.axes();
        x_s.bind(xy, thread.y);
        x_s.bind(xk, thread.x);
    }
}
