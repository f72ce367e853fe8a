use tvm::compute;

compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.parallel(c.i);
    }
}

fn main() {}
