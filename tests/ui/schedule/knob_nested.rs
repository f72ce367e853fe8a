use tvm::compute;

compute! {
    pub fn matmul(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
    }

    schedule!(cpu) {
        let (o, i) = c.split(c.j, tune!(8, tune!(16, 32)));
    }
}

fn main() {}
