//! A softmax's statistics, the row max `m` and the sum of `exp(x - m)`: in one pass over
//! the row as one reduction of two values (the online softmax's combiner), and in two
//! passes (the max, then the sum). Default schedules on the CPU (each row's partial
//! results 16 lanes wide, the rows in parallel); on GPUs a block per row, combined across
//! its threads. Shared by the example of the same name and by the backend suite
//! (`tests/backends/`).

use tvm::compute;

compute! {
    pub fn stats_online(x: f32[M, N]) -> (m: f32[M], s: f32[M]) {
        // One exponential per combine: the smaller max's sum is scaled by
        // exp(-|m0 - m1|) (1 for equal maxima, so -inf meeting -inf is not NaN).
        (m[i], s[i]) = reduce((x[i, j], 1.0) for j in 0..N, (f32::NEG_INFINITY, 0.0),
            |(m0, s0), (m1, s1)| (
                m0.max(m1),
                if m0 >= m1 {
                    s0 + s1 * (if m0 == m1 { 1.0 } else { (-(m0 - m1).abs()).exp() })
                } else {
                    s0 * (-(m0 - m1).abs()).exp() + s1
                },
            ));
    }
    schedule!(cuda) {
        m.bind(m.i, block.x);
        let (jo, jt) = m.split(m.j, 128);
        m.bind(jt, thread.x);
    }
}

compute! {
    pub fn stats_two_pass(x: f32[M, N]) -> (m: f32[M], s: f32[M]) {
        m[i] = max(x[i, j] for j in 0..N);
        s[i] = sum((x[i, j] - m[i]).exp() for j in 0..N);
    }
    schedule!(cuda) {
        m.bind(m.i, block.x);
        let (mo, mt) = m.split(m.j, 128);
        m.bind(mt, thread.x);
        s.bind(s.i, block.x);
        let (so, st) = s.split(s.j, 128);
        s.bind(st, thread.x);
    }
}
