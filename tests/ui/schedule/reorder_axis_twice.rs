use tvm::compute;

compute! {
    pub fn add2d(a: f32[M, N], b: f32[M, N]) -> c: f32[M, N] {
        c[i, j] = a[i, j] + b[i, j];
    }

    schedule!(cpu) {
        c.reorder(c.j, c.i, c.j);
    }
}

fn main() {}
