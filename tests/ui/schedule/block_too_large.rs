use tvm::compute;

compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 2048);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }
}

fn main() {}
