use tvm::compute;

compute! {
    pub fn scale(a: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = a[i, j] * 2.0;
    }

    schedule!(cpu) {
        c.reorder(c.j, c.i);
        c.parallel(c.j);
    }
}

fn main() {}
