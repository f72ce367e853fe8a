use tvm::compute;

compute! {
    pub fn double(a: f32[n]) -> c: f32[n] {
        c[i] = a[i] * 2;
    }
}

fn main() {}
