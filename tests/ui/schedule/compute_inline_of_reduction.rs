use tvm::compute;

compute! {
    pub fn dense_bias_relu(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
        let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }

    schedule!(cpu) {
        d.compute_inline();
    }
}

fn main() {}
