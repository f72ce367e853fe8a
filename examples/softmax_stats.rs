//! A softmax's statistics (each row's max and sum of `exp(x - max)`) of a 4096 x 1024 f32
//! matrix in one pass, one `reduce` of two values with the online softmax's combiner,
//! checked against a plain loop in f64 and timed against the same statistics in two
//! passes (a `max`, then a `sum`, both compiled here too) and against what a Rust user
//! would write instead: rayon over the rows, two passes each.
//!
//! Run: `cargo run --release --example softmax_stats`

use rayon::prelude::*;
use tvm::Tensor;

mod support;

#[path = "kernels/softmax_stats.rs"]
mod kernel;
use kernel::{stats_online, stats_two_pass};

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (rows, cols) = (4096, 1024);
    let x =
        Tensor::from_vec((0..rows * cols).map(|i| ((i * 7919) % 2001) as f32 / 200.0 - 5.0).collect(), [rows, cols])?;
    let (mut m, mut s) = (Tensor::<f32, 1>::zeros([rows]), Tensor::<f32, 1>::zeros([rows]));
    stats_online::run(&device, &x, &mut m, &mut s)?;
    let (mut m2, mut s2) = (Tensor::<f32, 1>::zeros([rows]), Tensor::<f32, 1>::zeros([rows]));
    stats_two_pass::run(&device, &x, &mut m2, &mut s2)?;
    let baseline = |out: &mut [(f32, f32)]| {
        out.par_iter_mut().zip(x.as_slice().par_chunks(cols)).for_each(|(o, row)| {
            let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            *o = (m, row.iter().map(|&v| (v - m).exp()).sum());
        });
    };
    let mut plain = vec![(0f32, 0f32); rows];
    baseline(&mut plain);
    // The reference in f64.
    let want: Vec<(f32, f64)> = x
        .as_slice()
        .chunks(cols)
        .map(|row| {
            let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            (m, row.iter().map(|&v| ((v - m) as f64).exp()).sum())
        })
        .collect();
    let err = |got: &Tensor<f32, 1>| {
        got.as_slice().iter().zip(&want).map(|(&g, &(_, w))| ((g as f64 - w) / w).abs()).fold(0f64, f64::max)
    };
    for (r, &(wm, _)) in want.iter().enumerate() {
        assert_eq!((m.as_slice()[r], m2.as_slice()[r]), (wm, wm), "row {r}: max");
    }
    let (e1, e2) = (err(&s), err(&s2));
    assert!(e1 < 1e-5 && e2 < 1e-5, "sum of exponentials: relative errors {e1:e} (one pass), {e2:e} (two)");
    let profile = stats_online::profile(&device, &x)?;
    let two_pass = profile.against(|| stats_two_pass::run(&device, &x, &mut m2, &mut s2))?;
    let rayon = profile.against(|| {
        baseline(&mut plain);
        Ok::<(), tvm::Error>(())
    })?;
    println!(
        "softmax statistics {rows}x{cols} f32 on {device}: maxima equal the plain loop's, sums within {:.1e} (one pass) and {:.1e} (two) of an f64 sum",
        e1, e2
    );
    println!("baseline: the same statistics in two passes (max, then sum), compiled here");
    println!("{two_pass}");
    println!("baseline: rayon over the rows, two passes each");
    println!("{rayon}");
    Ok(())
}
