use tvm::compute;

compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }

    schedule!(cuda) {
        let (by, bx, ty, tx) = c.tile(c.i, c.j, 16, 16);
        c.bind(by, block.y);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
    }

    schedule!(cpu) {
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 32, 16);
        c.reorder(io, jo, ii, c.k, ji);
        c.parallel(io);
        c.vectorize(ji);
    }
}

fn main() {}
