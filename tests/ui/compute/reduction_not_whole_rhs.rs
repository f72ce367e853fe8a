use tvm::compute;

compute! {
    pub fn row_sum_plus_one(a: f32[M, K]) -> c: f32[M] {
        c[i] = 1.0 + sum(a[i, k] for k in 0..K);
    }
}

fn main() {}
