use tvm::compute;

compute! {
    pub fn two_outputs(a: f32[n]) -> (c: f32[n], d: f32[n]) {
        c[i] = a[i] * 2.0;
    }
}

fn main() {}
