use tvm::compute;

compute! {
    pub fn f(x: f32[n]) -> y: f32[n] {
        y[i, j] = if j >= 1 { y[i, j - 1] } else { x[i] };
    }
}

fn main() {}
