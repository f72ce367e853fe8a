use tvm::compute;

compute! {
    pub fn axpy<T: Real>(x: T[n], y: T[n], a: T) -> z: T[n] {
        z[i] = a * x[i] + y[i];
    }
}

fn main() {}
