use tvm::compute;

compute! {
    pub fn add_half(a: i32[n]) -> c: i32[n] {
        c[i] = a[i] + 1.5;
    }
}

fn main() {}
