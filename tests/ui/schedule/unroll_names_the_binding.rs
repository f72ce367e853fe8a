use tvm::compute;

compute! {
    pub fn row_max(x: f32[M, N]) -> mx: f32[M] {
        mx[i] = max(x[i, j] for j in 0..N);
    }

    schedule!(cpu) {
        let (ko, ki) = mx.split(mx.j, 32);
        let rf = mx.rfactor(ki);
        let [i] = mx.axes();
        rf.compute_at(mx, i);
        let [lane, ri] = rf.axes();
        let [rko] = rf.reduce_axes();
        rf.reorder(ri, rko, lane);
        rf.vectorize(lane);
        // `rko` has `N / 32` iterations: the error names it as bound here.
        rf.unroll(rko);
    }
}

fn main() {}
