use tvm::compute;

compute! {
    pub fn row_sum(a: f32[M, 4096]) -> c: f32[M] {
        c[i] = sum(a[i, k] for k in 0..4096);
    }

    schedule!(cuda) {
        let (ko, ki) = c.split(c.k, 256);
        c.bind(c.i, block.x);
        c.bind(ki, thread.x);
    }
}

fn main() {}
