use tvm::compute;

compute! {
    pub fn select(a: f32[n]) -> c: f32[n] {
        c[i] = if a[i] { 1.0 } else { 0.0 };
    }
}

fn main() {}
