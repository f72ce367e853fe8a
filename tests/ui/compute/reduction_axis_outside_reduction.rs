use tvm::compute;

compute! {
    pub fn row_sum(a: f32[M, K]) -> c: f32[M] {
        let s[i]: f32[M] = sum(a[i, k] for k in 0..K);
        c[i] = s[i] + a[i, k];
    }
}

fn main() {}
