use tvm::compute;

compute! {
    pub fn cumsum(x: f32[M, N]) -> y: f32[M, N] {
        y[i, j] = if j >= 1 { y[i, j - 1] + x[i, j] } else { x[i, j] };
    }

    schedule!(cuda) {
        let f = y.fuse(y.i, y.j);
        let (b, t) = y.split(f, 256);
        y.bind(b, block.x);
        y.bind(t, thread.x);
    }
}

fn main() {}
