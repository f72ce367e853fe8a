use tvm::compute;

compute! {
    pub fn double(x: f32[1024]) -> y: f32[1024] {
        y[i] = x[i] * 2.0;
    }

    schedule!(cpu) {
        let (o, v) = y.split(y.i, 16);
        y.vectorise(v);
    }
}

fn main() {}
