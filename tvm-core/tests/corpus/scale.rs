tvm::compute! {
    pub fn scale(x: f32[n], alpha: f32) -> y: f32[n] {
        y[i] = alpha * x[i];
    }
}
