tvm::compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
    schedule!(cpu) {
        let cl = c.cache_write(local);
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 32, 16);
        c.parallel(io);
        c.vectorize(ji);
        cl.compute_at(c, jo);
        let (ko, ki) = cl.split(cl.k, 4);
        let [ci, cj] = cl.axes();
        cl.reorder(ko, ci, ki, cj);
        cl.unroll(ki);
        cl.vectorize(cj);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = c.tile(c.i, c.j, 16, 16);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ti, thread.y);
        c.bind(tj, thread.x);
        let (ko, ki) = c.split(c.k, 16);
        let a_s = a.cache_read(shared, [c]);
        let b_s = b.cache_read(shared, [c]);
        a_s.compute_at(c, ko);
        b_s.compute_at(c, ko);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
        let [by, bx] = b_s.axes();
        b_s.bind(by, thread.y);
        b_s.bind(bx, thread.x);
    }
}
