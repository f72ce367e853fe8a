use tvm::compute;

compute! {
    pub fn copy(a: f32[n]) -> c: f32[n] {
        c[i] = a[i, i];
    }
}

fn main() {}
