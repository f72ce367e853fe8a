use tvm::compute;

compute! {
    pub fn add(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = a[i, j] + b[i, j];
    }

    schedule!(cpu) {
        let (o, i) = c.split(c.j, tune!(w: 8, 16));
        c.vectorize(tune!(i, o));
    }
}

fn main() {}
