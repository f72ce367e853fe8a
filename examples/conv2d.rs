//! A 3x3 convolution with zero padding, NCHW, batch 1, 64 -> 64 channels, 56 x 56: the
//! input padded first, then register tiles of 8 channels x 48 positions of the extended
//! rows (see `kernels/conv2d.rs`), checked
//! against a plain reference; prints the max error, the time and GFLOP/s.
//!
//! Run: `cargo run --release --example conv2d` (on the CPU), or
//! `TVM_DEVICE=opencl cargo run --release --features opencl --example conv2d` (on the
//! first OpenCL device; the time includes the copies to and from the device)

use std::time::Instant;
use tvm::Tensor;

mod support;

#[path = "kernels/conv2d.rs"]
mod kernel;
use kernel::conv2d;

fn main() -> Result<(), tvm::Error> {
    let device = support::device()?;
    let (ch, h, wd) = (64, 56, 56);
    let data =
        Tensor::from_vec((0..ch * h * wd).map(|i| ((i * 31) % 97) as f32 / 97.0 - 0.5).collect(), [1, ch, h, wd])?;
    let w = Tensor::from_vec((0..ch * ch * 9).map(|i| ((i * 17) % 23) as f32 / 23.0 - 0.5).collect(), [ch, ch, 3, 3])?;
    let mut out = Tensor::<f32, 4>::zeros([1, ch, h, wd]);
    conv2d::run(&device, &data, &w, &mut out)?;
    let runs = 5;
    let t = Instant::now();
    for _ in 0..runs {
        conv2d::run(&device, &data, &w, &mut out)?;
    }
    let secs = t.elapsed().as_secs_f64() / runs as f64;
    let want = support::reference::conv2d_3x3(data.as_slice(), w.as_slice(), 1, ch, ch, h, wd);
    let max_err = support::max_relative_error(out.as_slice(), &want);
    let flops = 2.0 * (ch * ch * 9 * h * wd) as f64;
    println!("conv2d 1x{ch}x{h}x{wd}, {ch} filters 3x3, f32 on {device}: max relative error {max_err:.2e}, {:.2} ms, {:.1} GFLOP/s", secs * 1e3, flops / secs / 1e9);
    assert!(max_err < 1e-4);
    Ok(())
}
