use tvm::compute;

compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }

    schedule!(cpu) {
        let a_s = a.cache_read(shared, [c]);
    }
}

fn main() {}
