use tvm::compute;

compute! {
    pub fn copy(a: f32[n]) -> c: f32[n] {
        c[i, j] = a[i];
    }
}

fn main() {}
