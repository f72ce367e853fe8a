use tvm::compute;

compute! {
    pub fn out_of_order(a: f32[n]) -> c: f32[n] {
        c[i] = t[i] + 1.0;
        let t[i]: f32[n] = a[i] * 2.0;
    }
}

fn main() {}
