use tvm::compute;

compute! {
    pub fn scale_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        let p[i]: f32[n] = a[i] * 2.0;
        c[i] = p[i] + b[i];
    }

    schedule!(cpu) {
        c.compute_inline();
    }
}

fn main() {}
