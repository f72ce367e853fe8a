use tvm::compute;

compute! {
    pub fn matmul_shared(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024);
    }

    schedule!(cuda) {
        let a_s = a.cache_read(shared, [c]);
        let b_s = b.cache_read(shared, [c]);
        let (by, bx, ty, tx) = c.tile(c.i, c.j, 16, 16);
        let (ko, ki) = c.split(c.k, 16);
        c.reorder(by, bx, ko, ty, tx, ki);
        c.bind(by, block.y);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        c.bind(tx, thread.x);
        a_s.compute_at(c, ko);
        b_s.compute_at(c, ko);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
        let [by2, bx2] = b_s.axes();
        b_s.bind(by2, thread.y);
        b_s.bind(bx2, thread.x);
    }
}

fn main() {}
