use tvm::compute;

compute! {
    pub fn add(a: f32[n], a: f32[n]) -> c: f32[n] {
        c[i] = a[i] + 1.0;
    }
}

fn main() {}
