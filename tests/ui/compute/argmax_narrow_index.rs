use tvm::compute;

compute! {
    pub fn top1(x: f32[M, N]) -> (v: f32[M], k: u8[M]) {
        (v[i], k[i]) = argmax(x[i, j] for j in 0..N);
    }
}

fn main() {}
