//! What tuning bought, in one run: each tuned example (matmul, dense+bias+relu, conv2d,
//! softmax) with the compiler's default schedule (the same algorithm without a
//! `schedule!` block, `tvm::tuning` off), with the winner of that kernel's derived space
//! (`tvm-tune --default-space`, tuning on), with its hand-written schedule (off), with the
//! winner of its record in `tvm-tuning/` (on; where the winner is the schedule as
//! written the two are the same code, so their ratio shows the noise), and against the
//! alternative its bench
//! uses on the CPU (`matrixmultiply`; plain loops for softmax); on the CPU, and on the
//! first OpenCL device when there is one. Medians of `tvm::Profile`-style adaptive
//! repeats, tensors already on the device, the device synchronized after each run.
//!
//! Run: `cargo bench --bench tuning` (the README's tuning table comes from it).

use tvm::{Device, DeviceTensor, Error, Tensor};

#[path = "../examples/kernels/matmul.rs"]
mod matmul_kernel;
use matmul_kernel::matmul;

#[path = "../examples/kernels/dense_bias_relu.rs"]
mod dense_kernel;
use dense_kernel::dense_bias_relu;

#[path = "../examples/kernels/conv2d.rs"]
mod conv2d_kernel;
use conv2d_kernel::conv2d;

#[path = "../examples/kernels/softmax.rs"]
mod softmax_kernel;
use softmax_kernel::softmax;

/// The four algorithms again, without schedules: what the compiler does by default, and
/// (their records in `tvm-tuning/`, from `tvm-tune benches/tuning.rs --crate .
/// --default-space`) the winners of the space it derives for them.
mod defaults {
    tvm::compute! {
        pub fn matmul_default(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
            c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024);
        }
    }
    tvm::compute! {
        pub fn dense_default(x: f32[256, 1024], w: f32[1024, 1024], bias: f32[1024]) -> out: f32[256, 1024] {
            let d[i, j]: f32[256, 1024] = sum(x[i, k] * w[j, k] for k in 0..1024);
            out[i, j] = max(d[i, j] + bias[j], 0.0);
        }
    }
    tvm::compute! {
        pub fn conv2d_default(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
            let pad[n, c, y, x]: f32[1, 64, 58, 58] =
                if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
            out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
        }
    }
    tvm::compute! {
        pub fn softmax_default(x: f32[M, N]) -> y: f32[M, N] {
            let m[i]: f32[M] = max(x[i, j] for j in 0..N);
            let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
            let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
            y[i, j] = e[i, j] * (1.0 / s[i]);
        }
    }
}
use defaults::*;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104729) % 1000) as f32 / 1000.0 - 0.5).collect()
}

/// The median seconds of `f` (adaptive repeats: `tvm::Profile`'s rule).
fn median(device: &Device, mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    let p = tvm::__rt::profile("bench", device, None, || {
        f()?;
        device.synchronize()
    })?;
    Ok(p.median())
}

/// One row: default, derived space tuned, hand-written, tuned (seconds) and the
/// alternative's, if any.
struct Row {
    kernel: &'static str,
    device: String,
    default: f64,
    derived: f64,
    derived_winner: String,
    written: f64,
    tuned: f64,
    winner: String,
    alternative: Option<(&'static str, f64)>,
}

fn ms(s: f64) -> String {
    format!("{:.2} ms", s * 1e3)
}

/// The winner compiled in for `device`'s kind, if the record applies there.
fn winner(tuned: &[(&str, &str, &str, &str)], device: &Device) -> String {
    let id = tvm::tuning::device_identity(device).unwrap_or_default();
    tuned
        .iter()
        .find(|(t, d, _, _)| *t == device.kind() && *d == id)
        .map(|t| t.3.to_string())
        .unwrap_or_else(|| "no winner".into())
}

/// Times `run` with the schedule as written and with the winner, alternately, three
/// times each (the order of two measurements moves a median by more than a good winner
/// gains here); the median of each one's medians.
fn both(device: &Device, mut run: impl FnMut() -> Result<(), Error>) -> Result<(f64, f64), Error> {
    let (mut written, mut tuned) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        tvm::tuning::set_tuning_enabled(false);
        written.push(median(device, &mut run)?);
        tvm::tuning::set_tuning_enabled(true);
        tuned.push(median(device, &mut run)?);
    }
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[1]
    };
    Ok((mid(written), mid(tuned)))
}

fn on(t: &Tensor<f32, 1>, d: &Device) -> DeviceTensor<f32, 1> {
    t.to_device(d).unwrap()
}

fn rows(device: &Device) -> Result<Vec<Row>, Error> {
    let cpu = *device == Device::Cpu;
    let mut out = Vec::new();
    let dev = device.to_string();

    // matmul 1024³
    let n = 1024;
    let (a, b) = (Tensor::from_vec(values(n * n, 1), [n, n])?, Tensor::from_vec(values(n * n, 2), [n, n])?);
    let (da, db) = (a.to_device(device)?, b.to_device(device)?);
    let mut dc = matmul::call_on(device, &da, &db)?;
    let (written, tuned) = both(device, || matmul::run_on(device, &da, &db, &mut dc))?;
    let mut dd = matmul_default::call_on(device, &da, &db)?;
    let (default, derived) = both(device, || matmul_default::run_on(device, &da, &db, &mut dd))?;
    let derived_winner = winner(matmul_default::TUNED, device);
    let alternative = if cpu {
        let mut c = vec![0f32; n * n];
        let t = median(device, || {
            // SAFETY: the slices hold n x n row-major matrices (strides n, 1).
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    n,
                    n,
                    1.0,
                    a.as_slice().as_ptr(),
                    n as isize,
                    1,
                    b.as_slice().as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            Ok(())
        })?;
        Some(("matrixmultiply", t))
    } else {
        None
    };
    out.push(Row {
        kernel: "matmul 1024³",
        device: dev.clone(),
        default,
        derived,
        derived_winner,
        written,
        tuned,
        winner: winner(matmul::TUNED, device),
        alternative,
    });

    // dense + bias + relu 256 x 1024 x 1024
    let (m, k) = (256, 1024);
    let x = Tensor::from_vec(values(m * k, 3), [m, k])?;
    let w = Tensor::from_vec(values(k * k, 4), [k, k])?;
    let bias = Tensor::from_vec(values(k, 5), [k])?;
    let (dx, dw, dbias) = (x.to_device(device)?, w.to_device(device)?, on(&bias, device));
    let mut dout = dense_bias_relu::call_on(device, &dx, &dw, &dbias)?;
    let (written, tuned) = both(device, || dense_bias_relu::run_on(device, &dx, &dw, &dbias, &mut dout))?;
    let mut ddef = dense_default::call_on(device, &dx, &dw, &dbias)?;
    let (default, derived) = both(device, || dense_default::run_on(device, &dx, &dw, &dbias, &mut ddef))?;
    let derived_winner = winner(dense_default::TUNED, device);
    let alternative = if cpu {
        let mut o = vec![0f32; m * k];
        let t = median(device, || {
            // SAFETY: x is m x k row-major, w is k x k row-major read as its transpose
            // (strides 1, k), o is m x k row-major.
            unsafe {
                matrixmultiply::sgemm(
                    m,
                    k,
                    k,
                    1.0,
                    x.as_slice().as_ptr(),
                    k as isize,
                    1,
                    w.as_slice().as_ptr(),
                    1,
                    k as isize,
                    0.0,
                    o.as_mut_ptr(),
                    k as isize,
                    1,
                );
            }
            for row in o.chunks_mut(k) {
                for (v, b) in row.iter_mut().zip(bias.as_slice()) {
                    *v = (*v + b).max(0.0);
                }
            }
            Ok(())
        })?;
        Some(("matrixmultiply + loop", t))
    } else {
        None
    };
    out.push(Row {
        kernel: "dense+bias+relu 256×1024×1024",
        device: dev.clone(),
        default,
        derived,
        derived_winner,
        written,
        tuned,
        winner: winner(dense_bias_relu::TUNED, device),
        alternative,
    });

    // conv2d 3x3, 64 -> 64 channels, 56 x 56
    let data = Tensor::from_vec(values(64 * 56 * 56, 6), [1, 64, 56, 56])?;
    let wc = Tensor::from_vec(values(64 * 64 * 9, 7), [64, 64, 3, 3])?;
    let (ddata, dwc) = (data.to_device(device)?, wc.to_device(device)?);
    let mut dconv = conv2d::call_on(device, &ddata, &dwc)?;
    let (written, tuned) = both(device, || conv2d::run_on(device, &ddata, &dwc, &mut dconv))?;
    let mut dcdef = conv2d_default::call_on(device, &ddata, &dwc)?;
    let (default, derived) = both(device, || conv2d_default::run_on(device, &ddata, &dwc, &mut dcdef))?;
    let derived_winner = winner(conv2d_default::TUNED, device);
    let alternative = if cpu {
        // im2col (9 x 64 rows of 56 x 56) then one sgemm: 64 x 576 by 576 x 3136.
        let (mut cols, mut o) = (vec![0f32; 576 * 3136], vec![0f32; 64 * 3136]);
        let t = median(device, || {
            let d = data.as_slice();
            for c in 0..64 {
                for r in 0..3 {
                    for s in 0..3 {
                        let row = &mut cols[((c * 3 + r) * 3 + s) * 3136..][..3136];
                        for y in 0..56 {
                            for xx in 0..56 {
                                let (iy, ix) = (y + r, xx + s);
                                row[y * 56 + xx] = if (1..=56).contains(&iy) && (1..=56).contains(&ix) {
                                    d[(c * 56 + iy - 1) * 56 + ix - 1]
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
            }
            // SAFETY: w is 64 x 576 row-major, cols 576 x 3136 row-major, o 64 x 3136.
            unsafe {
                matrixmultiply::sgemm(
                    64,
                    576,
                    3136,
                    1.0,
                    wc.as_slice().as_ptr(),
                    576,
                    1,
                    cols.as_ptr(),
                    3136,
                    1,
                    0.0,
                    o.as_mut_ptr(),
                    3136,
                    1,
                );
            }
            Ok(())
        })?;
        Some(("im2col + matrixmultiply", t))
    } else {
        None
    };
    out.push(Row {
        kernel: "conv2d 3×3 64→64 56×56",
        device: dev.clone(),
        default,
        derived,
        derived_winner,
        written,
        tuned,
        winner: winner(conv2d::TUNED, device),
        alternative,
    });

    // softmax 4096 x 1024 (the dims its record was tuned with)
    let (rows_, cols_) = (4096, 1024);
    let xs = Tensor::from_vec(values(rows_ * cols_, 8), [rows_, cols_])?;
    let dxs = xs.to_device(device)?;
    let mut dy = softmax::call_on(device, &dxs)?;
    let (written, tuned) = both(device, || softmax::run_on(device, &dxs, &mut dy))?;
    let mut dydef = softmax_default::call_on(device, &dxs)?;
    let (default, derived) = both(device, || softmax_default::run_on(device, &dxs, &mut dydef))?;
    let derived_winner = winner(softmax_default::TUNED, device);
    let alternative = if cpu {
        let mut y = vec![0f32; rows_ * cols_];
        let t = median(device, || {
            for (xr, yr) in xs.as_slice().chunks(cols_).zip(y.chunks_mut(cols_)) {
                let m = xr.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
                let mut s = 0.0;
                for (o, &v) in yr.iter_mut().zip(xr) {
                    *o = (v - m).exp();
                    s += *o;
                }
                let inv = 1.0 / s;
                yr.iter_mut().for_each(|o| *o *= inv);
            }
            Ok(())
        })?;
        Some(("plain loops, one thread", t))
    } else {
        None
    };
    out.push(Row {
        kernel: "softmax 4096×1024",
        device: dev,
        default,
        derived,
        derived_winner,
        written,
        tuned,
        winner: winner(softmax::TUNED, device),
        alternative,
    });
    Ok(out)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this without it,
    // in a debug build, where the default schedules alone would take many minutes.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benches/tuning.rs: run it with `cargo bench --bench tuning`");
        return;
    }
    let mut devices = vec![Device::Cpu];
    if Device::OpenCl(0).is_available() {
        devices.push(Device::OpenCl(0));
    }
    println!("| kernel | device | default schedule | default space, tuned (winner) | hand-written | hand-written, tuned (winner) | tuned vs default | alternative |");
    println!("|---|---|---|---|---|---|---|---|");
    for d in devices {
        match rows(&d) {
            Ok(rs) => {
                for r in rs {
                    let alt = r
                        .alternative
                        .map(|(n, t)| format!("{n}: {} ({:.2}x)", ms(t), t / r.tuned.min(r.derived)))
                        .unwrap_or("—".into());
                    println!(
                        "| {} | {} | {} | {} ({}) | {} | {} ({}) | {:.1}x |  {} |",
                        r.kernel,
                        r.device,
                        ms(r.default),
                        ms(r.derived),
                        r.derived_winner,
                        ms(r.written),
                        ms(r.tuned),
                        r.winner,
                        r.default / r.tuned.min(r.derived),
                        alt
                    );
                }
            }
            Err(e) => eprintln!("tuning bench on {d}: {e}"),
        }
    }
}
