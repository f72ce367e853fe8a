//! Vector add with a CUDA and a CPU schedule (parallel chunks, 16-lane vectors).
//! Shared by the example of the same name and by `benches/cpu.rs`.

use tvm::compute;

compute! {
    /// c[i] = a[i] + b[i]
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        let (oo, oi) = c.split(o, 1024);
        c.parallel(oo);
        c.vectorize(v);
    }
}
