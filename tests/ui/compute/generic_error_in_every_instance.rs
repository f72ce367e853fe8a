use tvm::compute;

compute! {
    /// Every instance fails alike (an integer literal where `T` is a float): one error, in
    /// the parameter's words.
    pub fn scale<T: f32 | f64>(x: T[n], lo: T) -> y: T[n] {
        y[i] = {
            let c = 2;
            x[i].max(lo) * c
        };
    }
}

fn main() {}
