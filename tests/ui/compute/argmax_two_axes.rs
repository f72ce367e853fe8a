use tvm::compute;

compute! {
    pub fn top1(x: f32[M, N, K]) -> (v: f32[M], k: i64[M]) {
        (v[i], k[i]) = argmax(x[i, j, l] for j in 0..N, l in 0..K);
    }
}

fn main() {}
