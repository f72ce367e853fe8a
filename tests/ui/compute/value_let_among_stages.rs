use tvm::compute;

// Among the stages, `let v = ..;` declares a boundary view; a value for one stage's
// expression is a `let` in a block inside it.
compute! {
    pub fn bias_square(x: f32[M, N], b: f32[N]) -> y: f32[M, N] {
        let v = x[i, j] + b[j];
        y[i, j] = v * v;
    }
}

fn main() {}
