use tvm::compute;

compute! {
    pub fn logs(x: f32[n]) -> y: f32[n] {
        y[i] = x[i].log(2.0);
    }
}

fn main() {}
