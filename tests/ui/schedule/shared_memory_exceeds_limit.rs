use tvm::compute;

compute! {
    pub fn matmul(a: f32[4096, 4096], b: f32[4096, 4096]) -> c: f32[4096, 4096] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..4096);
    }

    schedule!(cuda) {
        let a_s = a.cache_read(shared, [c]);
        let (by, bx, ty, tx) = c.tile(c.i, c.j, 16, 16);
        c.bind(by, block.y);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        a_s.compute_at(c, bx);
    }
}

fn main() {}
