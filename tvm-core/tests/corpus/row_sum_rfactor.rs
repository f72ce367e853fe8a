tvm::compute! {
    pub fn row_sum(x: f32[M, N]) -> r: f32[M] {
        r[i] = sum(x[i, j] for j in 0..N);
    }
    schedule!(cuda) {
        let (jo, ji) = r.split(r.j, 16);
        let rf = r.rfactor(ji);
        let [t] = r.reduce_axes();
        r.bind(t, thread.x);
        r.bind(r.i, block.x);
        rf.compute_at(r, t);
    }
}
