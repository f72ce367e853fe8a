use tvm::compute;

compute! {
    pub fn phi(x: f32[n]) -> y: f32[n] {
        y[i] = x[i] * f32::consts::PHI;
    }
}

fn main() {}
