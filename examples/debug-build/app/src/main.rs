//! An application in a debug build whose kernels live in a crate of their own
//! (`tvm-example-kernels`), which the workspace compiles with `opt-level = 3` even in debug
//! builds. Prints each kernel's time (median of 5 runs after a warm-up) and, with `--loops`,
//! that of the plain Rust loop it replaces, compiled with the application's profile
//! (median of 3).
//!
//! `cargo run -p tvm-debug-build`; `benches/debug_build.sh` runs it in every profile the
//! kernels can be built with, in one run (docs/PERFORMANCE.md has the figures).

use std::time::Instant;
use tvm::{Error, Tensor};
use tvm_example_kernels as k;

mod loops;

fn median_ms(mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    f()?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[2])
}

/// The median of 3 runs of a plain loop (no warm-up: the slowest take seconds in debug).
fn loop_ms(mut f: impl FnMut() -> Vec<f32>) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[1]
}

fn filled<const R: usize>(shape: [usize; R]) -> Result<Tensor<f32, R>, Error> {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect(), shape)
}

fn main() -> Result<(), Error> {
    let (a, b) = (filled([1024, 1024])?, filled([1024, 1024])?);
    let (x, w, bias) = (filled([256, 1024])?, filled([1024, 1024])?, filled([1024])?);
    let (data, cw) = (filled([1, 64, 56, 56])?, filled([64, 64, 3, 3])?);
    let (rows, g, be) = (filled([4096, 1024])?, filled([1024])?, filled([1024])?);
    let (va, vb) = (filled([1 << 24])?, filled([1 << 24])?);
    let rows_out = [
        ("matmul 1024³", median_ms(|| k::matmul(&a, &b).map(drop))?),
        ("dense+bias+relu 256×1024×1024", median_ms(|| k::dense_bias_relu(&x, &w, &bias).map(drop))?),
        ("conv2d 64→64 56²", median_ms(|| k::conv2d(&data, &cw).map(drop))?),
        ("softmax 4096×1024", median_ms(|| k::softmax(&rows).map(drop))?),
        ("layernorm 4096×1024", median_ms(|| k::layernorm(&rows, &g, &be).map(drop))?),
        ("vector add 2^24", median_ms(|| k::vector_add(&va, &vb).map(drop))?),
    ];
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    println!("{profile} build of the application; kernels from tvm-example-kernels:");
    for (name, ms) in rows_out {
        println!("  {name:<32} {ms:>9.2} ms");
    }
    if std::env::args().any(|a| a == "--loops") {
        let (av, bv, xv, wv) = (a.as_slice(), b.as_slice(), x.as_slice(), w.as_slice());
        let loops = [
            ("matmul 1024³", loop_ms(|| loops::matmul(av, bv, 1024))),
            (
                "dense+bias+relu 256×1024×1024",
                loop_ms(|| loops::dense_bias_relu(xv, wv, bias.as_slice(), 256, 1024, 1024)),
            ),
            ("conv2d 64→64 56²", loop_ms(|| loops::conv2d(data.as_slice(), cw.as_slice(), 64, 56, 56))),
            ("softmax 4096×1024", loop_ms(|| loops::softmax(rows.as_slice(), 1024))),
            ("layernorm 4096×1024", loop_ms(|| loops::layernorm(rows.as_slice(), g.as_slice(), be.as_slice(), 1024))),
            ("vector add 2^24", loop_ms(|| loops::vector_add(va.as_slice(), vb.as_slice()))),
        ];
        println!("the plain loops, built with the application's profile:");
        for (name, ms) in loops {
            println!("  {name:<32} {ms:>9.2} ms");
        }
    }
    Ok(())
}
