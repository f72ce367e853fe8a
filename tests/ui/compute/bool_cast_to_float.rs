use tvm::compute;

// The help names this expression: `(i > 0) as i32 as f32`, or an `if`.
compute! {
    pub fn positive(x: f32[n]) -> y: f32[n] {
        y[i] = x[i] * ((i > 0) as f32);
    }
}

fn main() {}
