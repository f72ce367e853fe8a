use tvm::compute;

compute! {
    pub fn fill(a: f32[n]) -> c: f32[m] {
        c[i] = 1.0;
    }
}

fn main() {}
