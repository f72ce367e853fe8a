use tvm::compute;

compute! {
    pub fn even_lanes(a: f32[n]) -> c: f32[n] {
        let t[i]: f32[n] = a[i] * 2.0;
        c[i] = if i % 2 == 0 { t[i] } else { 0.0 };
    }

    // `t` is written by the function, outside the parallel loop: a vector select would
    // read its lanes in other iterations' part of the row on every lane. (Reads of the
    // inputs and of an iteration's own allocations under such a select are vectorized.)
    schedule!(cpu) {
        t.parallel(t.i);
        let (o, v) = c.split(c.i, 16);
        c.parallel(o);
        c.vectorize(v);
    }
}

fn main() {}
