use tvm::compute;

// An output's stage written with `let`: the help is the same stage without it.
compute! {
    pub fn scaled(x: f32[n]) -> y: f32[n] {
        let y[i]: f32[n] = x[i] * 2.0;
    }
}

fn main() {}
