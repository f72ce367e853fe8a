use tvm::compute;

compute! {
    pub fn scale(a: f32[n]) -> c: f32[n] {
        c[i] = a[i] * tune!(2.0, 3.0);
    }
}

fn main() {}
