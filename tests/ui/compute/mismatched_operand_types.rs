use tvm::compute;

compute! {
    pub fn offset(a: i32[n], k: i64) -> c: i32[n] {
        c[i] = a[i] + k;
    }
}

fn main() {}
