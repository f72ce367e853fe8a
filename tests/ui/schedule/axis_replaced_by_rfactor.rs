use tvm::compute;

compute! {
    pub fn row_max(x: f32[M, N]) -> mx: f32[M] {
        mx[i] = max(x[i, j] for j in 0..N);
    }

    schedule!(cpu) {
        let (ko, ki) = mx.split(mx.j, 32);
        let rf = mx.rfactor(ki);
        mx.vectorize(mx.j);
    }
}

fn main() {}
