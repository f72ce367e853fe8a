//! Top-1 (the largest score and its first column) of each row of a 4096 x 1024 f32 score
//! matrix, as embedding retrieval or greedy decoding computes it, checked against a plain
//! loop and timed against what a Rust user would write instead: rayon over the rows, one
//! pass each keeping the best so far.
//!
//! Run: `cargo run --release --example argmax`

use rayon::prelude::*;
use tvm::Tensor;

mod support;

#[path = "kernels/argmax.rs"]
mod kernel;
use kernel::top1;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (rows, cols) = (4096, 1024);
    // Scores on a grid of 2001 values: rows have ties, and the first column must win.
    let x =
        Tensor::from_vec((0..rows * cols).map(|i| ((i * 7919) % 2001) as f32 / 100.0 - 10.0).collect(), [rows, cols])?;
    let mut best = Tensor::<f32, 1>::zeros([rows]);
    let mut at = Tensor::<i64, 1>::zeros([rows]);
    top1::run(&device, &x, &mut best, &mut at)?;
    let baseline = |out: &mut [(f32, i64)]| {
        out.par_iter_mut().zip(x.as_slice().par_chunks(cols)).for_each(|(o, row)| {
            let mut b = (row[0], 0i64);
            for (j, &v) in row.iter().enumerate().skip(1) {
                if v > b.0 {
                    b = (v, j as i64);
                }
            }
            *o = b;
        });
    };
    let mut want = vec![(0f32, 0i64); rows];
    baseline(&mut want);
    for (r, &(v, k)) in want.iter().enumerate() {
        assert_eq!((best.as_slice()[r], at.as_slice()[r]), (v, k), "row {r}");
    }
    let speedup = top1::profile(&device, &x)?.against(|| {
        baseline(&mut want);
        Ok::<(), tvm::Error>(())
    })?;
    println!("top1 {rows}x{cols} f32 on {device}: every row's value and first index equal the plain loop's; baseline: rayon over the rows, one pass each");
    println!("{speedup}");
    Ok(())
}
