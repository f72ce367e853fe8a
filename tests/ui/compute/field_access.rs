use tvm::compute;

compute! {
    pub fn re(x: f32[n]) -> y: f32[n] {
        y[i] = x[i].re + 1.0;
    }
}

fn main() {}
