use tvm::compute;

compute! {
    pub fn scale<T: Float>(x: T[B, T], a: T) -> y: T[B, T] {
        y[b, t] = a * x[b, t];
    }
}

fn main() {}
