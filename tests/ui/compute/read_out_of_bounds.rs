use tvm::compute;

// Reads the compiler proves out of bounds for every shape, and a divisor it proves zero:
// compile errors at the index (the reads it cannot decide are checked at run time).
compute! {
    pub fn shift(x: f32[N]) -> y: f32[N] {
        y[i] = x[i + 1] + x[i - 1];
    }
}

compute! {
    pub fn window(x: f32[N, 8]) -> y: f32[N] {
        y[i] = sum(x[i, k + 2] for k in 0..8);
    }
}

compute! {
    pub fn halve(a: i32[N]) -> b: i32[N] {
        b[i] = a[i] / (2 - 2);
    }
}

fn main() {}
