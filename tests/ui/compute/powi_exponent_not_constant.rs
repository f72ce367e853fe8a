use tvm::compute;

// `powi` is expanded into multiplications: its exponent is a constant `i32`.
compute! {
    pub fn power(x: f32[n], k: i32) -> y: f32[n] {
        y[i] = x[i].powi(k) + x[i].powi(100);
    }
}

fn main() {}
