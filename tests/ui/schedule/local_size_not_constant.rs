use tvm::compute;

compute! {
    pub fn two_stage(a: f32[M, N]) -> c: f32[M, N] {
        let t[i, j]: f32[M, N] = a[i, j] * 2.0;
        c[i, j] = t[i, j] + 1.0;
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 32);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        // Each thread computes its whole row of t first: N values, N unknown.
        t.compute_at(c, tx);
    }
}

fn main() {}
