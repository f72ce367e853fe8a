use tvm::compute;

compute! {
    pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
    }

    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, 64);
        y.parallel(jo);
    }
}

fn main() {}
