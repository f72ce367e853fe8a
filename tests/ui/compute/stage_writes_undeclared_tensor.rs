use tvm::compute;

compute! {
    pub fn scaled(a: f32[n]) -> c: f32[n] {
        t[i] = a[i] * 2.0;
        c[i] = a[i] + 1.0;
    }
}

fn main() {}
