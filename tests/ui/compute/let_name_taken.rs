use tvm::compute;

// A `let` inside a stage's expression needs a name of its own: not an axis, a tensor or a
// scalar of the kernel.
compute! {
    pub fn scaled(x: f32[n], a: f32) -> y: f32[n] {
        y[i] = { let a = x[i] * 2.0; let i = a + 1.0; a * i };
    }
}

fn main() {}
