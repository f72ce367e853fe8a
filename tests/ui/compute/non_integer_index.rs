use tvm::compute;

compute! {
    pub fn gather(a: f32[n], idx: f32[n]) -> c: f32[n] {
        c[i] = a[idx[i]];
    }
}

fn main() {}
