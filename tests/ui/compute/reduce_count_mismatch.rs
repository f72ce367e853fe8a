use tvm::compute;

compute! {
    pub fn stats(x: f32[M, N]) -> (m: f32[M], s: f32[M]) {
        (m[i], s[i]) = reduce((x[i, j], 1.0, 2.0) for j in 0..N, (f32::NEG_INFINITY, 0.0), |(a0, a1), (b0, b1)| (a0.max(b0), a1 + b1));
    }
}

fn main() {}
