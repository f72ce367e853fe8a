use tvm::compute;

// rfactor gives the stage new axes: a loop annotation or a compute_at at its old axes
// would silently be lost, so both are errors at the rfactor.
compute! {
    pub fn row_max(x: f32[M, N]) -> m: f32[M] {
        m[i] = max(x[i, j] for j in 0..N);
    }

    schedule!(cpu) {
        m.parallel(m.i);
        let (mo, mi) = m.split(m.j, 16);
        let m_rf = m.rfactor(mi);
    }
}

compute! {
    pub fn row_stats(x: f32[M, N]) -> (m: f32[M], s: f32[M]) {
        m[i] = max(x[i, j] for j in 0..N);
        s[i] = sum(x[i, j] for j in 0..N);
    }

    schedule!(cpu) {
        m.compute_at(s, s.i);
        let (so, si) = s.split(s.j, 16);
        let s_rf = s.rfactor(si);
    }
}

fn main() {}
