use tvm::compute;

compute! {
    pub fn add2d(a: f32[M, N], b: f32[M, N]) -> c: f32[M, N] {
        c[i, j] = a[i, j] + b[i, j];
    }

    schedule!(cuda) {
        let (by, ty) = c.split(c.i, 16);
        let (bx, tx) = c.split(c.j, 16);
        c.reorder(by, bx, ty, tx);
        c.bind(by, block.y);
        c.bind(bx, block.x);
        c.bind(ty, thread.x);
        c.bind(tx, thread.x);
    }
}

fn main() {}
