use tvm::compute;

compute! {
    pub fn two_readers(a: f32[n]) -> c: f32[n] {
        let p[i]: f32[n] = a[i] * 2.0;
        let q[i]: f32[n] = p[i] + 1.0;
        c[i] = p[i] + q[i];
    }

    schedule!(cpu) {
        q.compute_at(c, c.i);
        p.compute_at(q, q.i);
    }
}

fn main() {}
