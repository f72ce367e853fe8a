use tvm::compute;

compute! {
    pub fn top1(x: f32[M, N]) -> k: i64[M] {
        k[i] = argmax(x[i, j] for j in 0..N);
    }
}

fn main() {}
