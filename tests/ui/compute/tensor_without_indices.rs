use tvm::compute;

// A tensor used as a value: the help reads an element with this stage's axes.
compute! {
    pub fn add_bias(x: f32[M, N], bias: f32[N]) -> y: f32[M, N] {
        y[i, j] = x[i, j] + bias;
    }
}

fn main() {}
