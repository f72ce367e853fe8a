use tvm::compute;

compute! {
    pub fn rows(x: f32[m, n]) -> y: f32[m, n] {
        y[i, j] = x[i, j] * 2.0;
    }

    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, 16);
        y.vectorize(ji);
        y.prefetch(x, ji, 1);
    }
}

fn main() {}
