use tvm::compute;

compute! {
    pub fn relu(x: f32[n]) -> y: f32[n] {
        y[i] = x[i].max();
    }
}

fn main() {}
