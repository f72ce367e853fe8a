tvm::compute! {
    pub fn vector_add(a: f32[1024], b: f32[1024]) -> c: f32[1024] { c[i] = a[i] + b[i]; }
    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        let (oo, oi) = c.split(o, 4);
        c.parallel(oo);
        c.unroll(oi);
        c.vectorize(v);
    }
}
