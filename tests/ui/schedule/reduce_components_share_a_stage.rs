use tvm::compute;

// The components of one reduction are one stage: scheduling `s` schedules `m`, so the
// axis `m.i` is split already when `s.split(s.i, 4)` names it again.
compute! {
    pub fn stats(x: f32[M, N]) -> (m: f32[M], s: f32[M]) {
        (m[i], s[i]) = reduce((x[i, j], x[i, j] * x[i, j]) for j in 0..N, (f32::NEG_INFINITY, 0.0),
            |(m0, s0), (m1, s1)| (m0.max(m1), s0 + s1));
    }

    schedule!(cpu) {
        let (io, ii) = m.split(m.i, 4);
        let (jo, ji) = s.split(s.i, 4);
    }
}

fn main() {}
