use tvm::compute;

compute! {
    pub fn copy(a: f31[n]) -> c: f32[n] {
        c[i] = 1.0;
    }
}

fn main() {}
