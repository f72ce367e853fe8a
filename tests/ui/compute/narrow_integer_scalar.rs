use tvm::compute;

// `s` is declared `i32` but is an `i64` value in expressions: the message says why.
compute! {
    pub fn add_scalar(x: i32[n], s: i32) -> y: i32[n] {
        y[i] = x[i] + s;
    }
}

fn main() {}
