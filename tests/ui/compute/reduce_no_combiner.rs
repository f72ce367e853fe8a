use tvm::compute;

compute! {
    pub fn norm(x: f32[M, N]) -> y: f32[M] {
        y[i] = reduce(x[i, j] for j in 0..N, 0.0);
    }
}

fn main() {}
