//! Row-wise cumulative sum, a recurrence along each row: the rows in parallel on the CPU,
//! one row per GPU thread. Shared by the example of the same name and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
    }
    schedule!(cpu) {
        y.parallel(y.i);
    }
    schedule!(cuda) {
        let (b, t) = y.split(y.i, 64);
        y.bind(b, block.x);
        y.bind(t, thread.x);
    }
}
