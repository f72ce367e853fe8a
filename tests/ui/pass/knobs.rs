//! Knobs (`tune!`) compile to the schedule as written, every knob at its first value:
//! named and unnamed, a number and a choice of axis, in a CPU and a GPU block.
use tvm::compute;

compute! {
    pub fn matmul(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
    }

    schedule!(cpu) {
        let (io, jo, ii, ji) = c.tile(c.i, c.j, tune!(ti: 4, 8), tune!(8, 16));
        c.reorder(io, jo, c.k, ii, ji);
        c.parallel(tune!(io, jo));
        c.vectorize(ji);
    }

    schedule!(opencl) {
        let (bi, bj, ti, tj) = c.tile(c.i, c.j, tune!(8, 16), tune!(8, 16));
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ti, thread.y);
        c.bind(tj, thread.x);
    }
}

fn main() {
    let a = tvm::Tensor::from_vec((0..64 * 64).map(|i| (i % 5) as f32).collect(), [64, 64]).unwrap();
    let c = matmul::run(&tvm::Device::Cpu, &a, &a, &mut tvm::Tensor::zeros([64, 64]));
    assert!(c.is_ok());
    assert!(matmul::TUNED.is_empty(), "no record in this crate");
}
