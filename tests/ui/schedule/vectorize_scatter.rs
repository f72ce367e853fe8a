use tvm::compute;

compute! {
    pub fn scale(a: f32[n, m]) -> c: f32[n, m] {
        c[i, j] = a[i, j] * 2.0;
    }

    schedule!(cpu) {
        let f = c.fuse(c.i, c.j);
        let (o, v) = c.split(f, 8);
        c.vectorize(v);
    }
}

fn main() {}
