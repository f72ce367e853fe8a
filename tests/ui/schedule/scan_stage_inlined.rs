use tvm::compute;

compute! {
    pub fn prefix(x: f32[n]) -> y: f32[n] {
        let c[i]: f32[n] = if i >= 1 { c[i - 1] + x[i] } else { x[i] };
        y[i] = c[i] * 2.0;
    }

    schedule!(cpu) {
        c.compute_inline();
    }

    schedule!(cuda) {
        c.compute_at(y, y.i);
        let (b, t) = y.split(y.i, 64);
        y.bind(b, block.x);
        y.bind(t, thread.x);
    }
}

fn main() {}
