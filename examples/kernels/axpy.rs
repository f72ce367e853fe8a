//! `z = a·x + y` for `f32` and `f64`: one kernel generic over its element type, each
//! instance vectorized over parallel chunks. Shared by the example of the same name and by
//! the backend suite (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn axpy<T: Float>(x: T[n], y: T[n], a: T) -> z: T[n] {
        z[i] = a * x[i] + y[i];
    }
    schedule!(cpu) {
        let (o, v) = z.split(z.i, 4096);
        z.parallel(o);
        let (vo, vi) = z.split(v, 16);
        z.vectorize(vi);
    }
}
