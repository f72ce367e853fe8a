//! An application in a debug build whose kernels live in a crate of their own
//! (`tvm-example-kernels`), which the workspace compiles with `opt-level = 3` even in debug
//! builds. Prints each kernel's time (median of 5 runs after a warm-up).
//!
//! `cargo run -p tvm-debug-build` (debug: the kernels run at release speed). Compare with
//! `TVM_EXAMPLE_KERNELS_OPT=0`-less builds by editing the profile, or see the README's
//! "Kernels in debug builds" for the measured figures.

use std::time::Instant;
use tvm::{Error, Tensor};
use tvm_example_kernels as k;

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
    Ok(())
}
