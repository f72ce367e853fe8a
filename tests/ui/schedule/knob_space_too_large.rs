use tvm::compute;

compute! {
    pub fn matmul(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
    }

    schedule!(cpu) {
        let (o, i) = c.split(c.j, tune!(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
        let (o2, i2) = c.split(i, tune!(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
        let (o3, i3) = c.split(c.i, tune!(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17));
    }
}

fn main() {}
