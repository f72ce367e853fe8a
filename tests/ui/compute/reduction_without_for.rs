use tvm::compute;

// `sum` without its `for` clause: the help adds one for the name the read leaves free.
compute! {
    pub fn row_sum(a: f32[M, K]) -> c: f32[M] {
        c[i] = sum(a[i, k]);
    }
}

// `max` of one value: the same, over the dim `j` indexes.
compute! {
    pub fn row_max(a: f32[M, N]) -> c: f32[M] {
        c[i] = max(a[i, j]);
    }
}

// `max` of three values: nested pairs.
compute! {
    pub fn max3(a: f32[n], b: f32[n], d: f32[n]) -> c: f32[n] {
        c[i] = max(a[i], b[i], d[i]);
    }
}

fn main() {}
