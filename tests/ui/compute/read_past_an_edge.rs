use tvm::compute;

// A stencil's read past an edge of an input by a constant: the help names the
// `repeat_edge` view that reads the nearest element there. A read past an edge by a
// distance that grows with the shape gets no such help.
compute! {
    pub fn diff(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = x[i, j] - x[i, j - 1];
    }
}

compute! {
    pub fn shifted_by_n(x: f32[N]) -> y: f32[N] {
        y[i] = x[i + N];
    }
}

fn main() {}
