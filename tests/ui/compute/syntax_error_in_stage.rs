use tvm::compute;

compute! {
    pub fn add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + ;
    }
}

fn main() {}
