use tvm::compute;

compute! {
    pub fn power(a: f32[n]) -> c: f32[n] {
        c[i] = pow(a[i]);
    }
}

fn main() {}
