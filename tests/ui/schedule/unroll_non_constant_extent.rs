use tvm::compute;

compute! {
    pub fn scale(a: f32[n]) -> c: f32[n] {
        c[i] = a[i] * 2.0;
    }

    schedule!(cpu) {
        let (o, i) = c.split(c.i, 4);
        c.unroll(o);
    }
}

fn main() {}
