use tvm::compute;

compute! {
    pub fn shift(a: f32[n]) -> c: f32[n] {
        c[i] = a[i] + beta;
    }
}

fn main() {}
