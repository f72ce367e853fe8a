use tvm::compute;

compute! {
    pub fn scale<T: Float + Signed>(x: T[n], a: T) -> y: T[n] {
        y[i] = a * x[i];
    }
}

fn main() {}
