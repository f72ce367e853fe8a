use tvm::compute;

compute! {
    pub fn add3d(a: f32[X, Y, Z], b: f32[X, Y, Z]) -> c: f32[X, Y, Z] {
        c[i, j, k] = a[i, j, k] + b[i, j, k];
    }

    schedule!(cpu) {
        let f = c.fuse(c.i, c.k);
    }
}

fn main() {}
