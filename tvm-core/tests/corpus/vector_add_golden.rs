tvm::compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }
    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.parallel(o);
        c.vectorize(v);
    }
    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }
}
