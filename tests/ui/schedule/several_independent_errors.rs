use tvm::compute;

compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        let p[i, j]: f32[M, K] = a[i, j] * 2.0;
        c[i, j] = sum(p[i, k] * b[k, j] for k in 0..K);
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 0);
        q.compute_inline();
        p.compute_at(c, c.zz);
        c.frobnicate();
        c.reorder(c.k, nope);
    }

    schedule!("vulkan") {}
}

fn main() {}
