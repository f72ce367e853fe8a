use tvm::compute;

// `!` is not bitwise not: the help compares this very value with 0.
compute! {
    pub fn flags(x: i32[n]) -> y: bool[n] {
        y[i] = !x[i];
    }
}

fn main() {}
