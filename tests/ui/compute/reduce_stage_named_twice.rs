use tvm::compute;

compute! {
    pub fn f(x: f32[M, N]) -> y: f32[M] {
        (y[i], y[i]) = reduce((x[i, j], 1.0) for j in 0..N, (0.0, 0.0), |(a0, a1), (b0, b1)| (a0 + b0, a1 + b1));
    }
}

fn main() {}
