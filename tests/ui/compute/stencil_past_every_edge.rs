use tvm::compute;

// A 3x3 stencil read past every edge: an error at each index out of bounds, the
// `repeat_edge` help in full on the first, and the read through the same view, briefly,
// on the others.
compute! {
    pub fn blur(x: f32[H, W]) -> y: f32[H, W] {
        y[i, j] = x[i - 1, j - 1] + x[i - 1, j] + x[i - 1, j + 1]
            + x[i, j - 1] + x[i, j] + x[i, j + 1]
            + x[i + 1, j - 1] + x[i + 1, j] + x[i + 1, j + 1];
    }
}

fn main() {}
