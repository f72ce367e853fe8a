use tvm::compute;

compute! {
    /// `exp` needs a float: the integer instances fail, each error says for which types.
    pub fn softplus<T: f32 | i32 | i64>(x: T[n]) -> y: T[n] {
        y[i] = (x[i].exp() + 1.0).ln() + q[i];
    }
}

fn main() {}
