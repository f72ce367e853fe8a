use tvm::compute;

compute! {
    pub fn activation(a: f32[n]) -> c: f32[n] {
        c[i] = relu(a[i]);
    }
}

fn main() {}
