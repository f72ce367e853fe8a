use tvm::compute;

compute! {
    pub fn cast<T: Float, U: Float>(x: T[n]) -> y: U[n] {
        y[i] = x[i] as U;
    }
}

fn main() {}
