use tvm::compute;

compute! {
    pub fn f(x: i64[M, N], p: i64) -> y: i64[M] {
        y[i] = reduce(x[i, j] for j in 0..N, 0, |a, b| (a + b) % p);
    }
}

fn main() {}
