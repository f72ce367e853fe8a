use tvm::compute;

compute! {
    pub fn scale(x: f64[n], a: f64) -> y: f64[n] {
        y[i] = a * x[i];
    }

    schedule!(webgpu) {
        let (bx, tx) = y.split(y.i, 64);
        y.bind(bx, block.x);
        y.bind(tx, thread.x);
    }
}

fn main() {}
