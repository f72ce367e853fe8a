use tvm::compute;

// A scalar is a value of its declared type, as in Rust: an `i64` scalar does not add to
// an `i32` element without a cast.
compute! {
    pub fn add_scalar(x: i32[n], s: i64) -> y: i32[n] {
        y[i] = x[i] + s;
    }
}

// Inside an index an integer scalar is an `i64` (as axes and dims are): the message says
// so, since the declaration says `i32`.
compute! {
    pub fn gather(x: f32[n], idx: i32[n], k: i32) -> y: f32[n] {
        y[i] = x[idx[i] + k];
    }
}

fn main() {}
