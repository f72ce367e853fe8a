use tvm::compute;

compute! {
    pub fn scale(x: f32[n], alpha: f32) -> y: f32[n] {
        y[i] = alpha * x[i];
    }

    schedule!("llvm -mcpu=skylake-avx512") {
        let (o, v) = y.split(y.i, 16);
        y.parallel(o);
        y.vectorize(v);
    }
}

fn main() {}
