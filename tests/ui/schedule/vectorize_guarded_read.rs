use tvm::compute;

compute! {
    pub fn even_lanes(a: f32[n]) -> c: f32[n] {
        c[i] = if i % 2 == 0 { a[i] } else { 0.0 };
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.vectorize(v);
    }
}

fn main() {}
