tvm::compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }
    schedule!(cpu) {
        let (o, v) = c.split(c.i, 8);
        let (oo, oi) = c.split(o, 4);
        c.parallel(oo);
        c.unroll(oi);
        c.vectorize(v);
    }
    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 32);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        let a_s = a.cache_read(shared, [c]);
        a_s.compute_at(c, bx);
        let [ax] = a_s.axes();
        a_s.bind(ax, thread.x);
    }
}
