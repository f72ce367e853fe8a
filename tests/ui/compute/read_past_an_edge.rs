use tvm::compute;

// A stencil's read past an edge of an input by a constant: the help names the
// `repeat_edge` view that reads the nearest element there. A read that spreads wider
// than the tensor gets no such help.
compute! {
    pub fn diff(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = x[i, j] - x[i, j - 1];
    }
}

compute! {
    pub fn stride(x: f32[8]) -> y: f32[8] {
        y[i] = x[2 * i];
    }
}

fn main() {}
