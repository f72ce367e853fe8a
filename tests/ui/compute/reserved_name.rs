use tvm::compute;

compute! {
    pub fn shift(__x: f32[n], k: f32) -> y: f32[n] {
        y[i] = __x[i] + k;
    }
}

fn main() {}
