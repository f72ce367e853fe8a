tvm::compute! {
    /// Rows of `table` picked by `ids`, times an integer ratio: the row index and the
    /// divisor are read from memory, so both are checked where the kernel runs.
    pub fn embedding(table: f32[V, D], ids: i32[N], num: i32[N], den: i32[N]) -> y: f32[N, D] {
        y[i, j] = table[ids[i] as i64, j] * ((num[i] / den[i]) as f32);
    }
    schedule!(cpu) {
        y.parallel(y.i);
        let (jo, ji) = y.split(y.j, 8);
        y.vectorize(ji);
    }
}
