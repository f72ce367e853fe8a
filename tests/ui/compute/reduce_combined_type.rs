use tvm::compute;

compute! {
    pub fn best(x: f32[M, N]) -> (v: f32[M], k: i64[M]) {
        (v[i], k[i]) = reduce((x[i, j], j) for j in 0..N, (f32::NEG_INFINITY, 0), |(v0, k0), (v1, k1)| (v0.max(v1), v0));
    }
}

fn main() {}
