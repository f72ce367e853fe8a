tvm::compute! {
    pub fn row_sum(x: f32[M, 100]) -> r: f32[M] {
        r[i] = sum(x[i, j] for j in 0..100);
    }
    schedule!(cuda) {
        r.bind(r.i, block.x);
        let (jo, ji) = r.split(r.j, 32);
        r.bind(ji, thread.x);
    }
}
