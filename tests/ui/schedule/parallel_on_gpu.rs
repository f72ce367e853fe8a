use tvm::compute;

compute! {
    pub fn scale(a: f32[n]) -> c: f32[n] {
        c[i] = a[i] * 2.0;
    }

    schedule!(cuda) {
        let (o, i) = c.split(c.i, 256);
        c.bind(i, thread.x);
        c.parallel(o);
    }
}

fn main() {}
