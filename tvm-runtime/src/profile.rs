//! Profiling of generated kernels: `NAME::profile(&device, inputs..)` and
//! `TVM_PROFILE=1`.
//!
//! A profile runs the kernel once to warm up (programs built, buffers pooled), then again
//! and again: at least 10 runs and 0.2 s (at least 3 runs when one takes over 0.1 s), then
//! until the median of all runs moves by less than 3% over the last 10, at most 2 s past the
//! minimum or 10 000 runs. Each run is timed by the host's monotonic clock around the whole
//! launch, copies between host and device included on GPU devices (`run` on host tensors).
//! FLOPs and bytes are counted statically from the lowered code at the bound dims: the
//! floating-point operations it executes and the bytes it loads from and stores to global
//! buffers (re-reads included, so on the CPU a figure of cache traffic, not of DRAM).

use crate::Error;
use std::fmt;
use std::time::Instant;

/// The timings of one kernel on one device, and its static cost.
#[derive(Clone, Debug)]
pub struct Profile {
    pub kernel: String,
    pub device: String,
    /// Seconds per run, sorted.
    pub times: Vec<f64>,
    /// Floating-point operations of one run, where the compiler could count them.
    pub flops: Option<f64>,
    /// Bytes of global memory one run loads and stores, where the compiler could count them.
    pub bytes: Option<f64>,
}

impl Profile {
    /// The `q`-quantile of the run times (0.0 the fastest, 1.0 the slowest), in seconds.
    pub fn quantile(&self, q: f64) -> f64 {
        quantile(&self.times, q)
    }
    pub fn min(&self) -> f64 {
        self.quantile(0.0)
    }
    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }
    pub fn p20(&self) -> f64 {
        self.quantile(0.2)
    }
    pub fn p80(&self) -> f64 {
        self.quantile(0.8)
    }
    /// Billions of floating-point operations per second at the median time.
    pub fn gflops(&self) -> Option<f64> {
        self.flops.map(|f| f / self.median() / 1e9)
    }
    /// Gigabytes per second of global memory traffic at the median time.
    pub fn gbps(&self) -> Option<f64> {
        self.bytes.map(|b| b / self.median() / 1e9)
    }

    /// Times `baseline` (one run of what the kernel replaces) by the same rules and
    /// compares medians: `ratio` > 1 means the kernel is faster.
    pub fn against<E>(&self, baseline: impl FnMut() -> Result<(), E>) -> Result<Speedup, E> {
        let times = measure(baseline)?;
        let base = quantile(&times, 0.5);
        Ok(Speedup {
            kernel: self.kernel.clone(),
            device: self.device.clone(),
            kernel_s: self.median(),
            baseline_s: base,
        })
    }
}

/// `Profile::against`'s comparison of medians.
#[derive(Clone, Debug)]
pub struct Speedup {
    pub kernel: String,
    pub device: String,
    pub kernel_s: f64,
    pub baseline_s: f64,
}

impl Speedup {
    /// Baseline time over kernel time.
    pub fn ratio(&self) -> f64 {
        self.baseline_s / self.kernel_s
    }
}

impl fmt::Display for Speedup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "| kernel | device | kernel (median) | baseline (median) | speedup |")?;
        writeln!(f, "|---|---|---|---|---|")?;
        write!(
            f,
            "| {} | {} | {} | {} | {:.2}x |",
            self.kernel,
            self.device,
            duration(self.kernel_s),
            duration(self.baseline_s),
            self.ratio()
        )
    }
}

/// One line: `kernel on device: median (p20-p80, min; N runs), GFLOP/s, GB/s`.
impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {}: {} median ({}-{} p20-p80, {} min; {} runs)",
            self.kernel,
            self.device,
            duration(self.median()),
            duration(self.p20()),
            duration(self.p80()),
            duration(self.min()),
            self.times.len()
        )?;
        if let Some(g) = self.gflops() {
            write!(f, ", {g:.2} GFLOP/s")?;
        }
        if let Some(g) = self.gbps() {
            write!(f, ", {g:.2} GB/s")?;
        }
        Ok(())
    }
}

fn duration(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}

/// The `q`-quantile of sorted `v` by linear interpolation (NaN when empty).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let x = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
}

/// Runs `f` by the rules of the module's documentation; the times, sorted.
pub fn measure<E>(mut f: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
    // A warm-up run; then `times` in run order (the first run decides the minimum count)
    // and `sorted`, kept sorted by insertion for the running median.
    f()?;
    let (mut times, mut sorted): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let (mut total, mut medians) = (0.0f64, Vec::<f64>::new());
    loop {
        let t = Instant::now();
        f()?;
        let dt = t.elapsed().as_secs_f64();
        times.push(dt);
        sorted.insert(sorted.partition_point(|&x| x < dt), dt);
        total += dt;
        let min_runs = if times[0] > 0.1 { 3 } else { 10 };
        medians.push(quantile(&sorted, 0.5));
        if times.len() < min_runs || (total < 0.2 && times[0] <= 0.1) {
            continue;
        }
        let n = medians.len();
        let settled = n > 10 && {
            let (old, new) = (medians[n - 11], medians[n - 1]);
            (new - old).abs() <= 0.03 * old
        };
        if settled || times[0] > 0.1 || total > 2.2 || times.len() >= 10_000 {
            break;
        }
    }
    Ok(sorted)
}

/// Whether `TVM_PROFILE=1` asks every generated call for a line of its profile.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TVM_PROFILE").is_some_and(|v| v == "1"))
}

/// A profile of `f`, one run of kernel `kernel` on `device` (generated code calls this).
pub fn profile(
    kernel: &str,
    device: &crate::Device,
    cost: Option<(f64, f64)>,
    f: impl FnMut() -> Result<(), Error>,
) -> Result<Profile, Error> {
    let times = measure(f)?;
    Ok(Profile {
        kernel: kernel.into(),
        device: device.to_string(),
        times,
        flops: cost.map(|c| c.0),
        bytes: cost.map(|c| c.1),
    })
}

/// One call of a generated function; with `TVM_PROFILE=1`, timed and reported on stderr
/// as one line (a profile of a single run).
pub fn call<R>(
    kernel: &str,
    device: &crate::Device,
    cost: impl FnOnce() -> Option<(f64, f64)>,
    f: impl FnOnce() -> Result<R, Error>,
) -> Result<R, Error> {
    if !enabled() {
        return f();
    }
    let t = Instant::now();
    let r = f();
    let dt = t.elapsed().as_secs_f64();
    if r.is_ok() {
        let c = cost();
        let p = Profile {
            kernel: kernel.into(),
            device: device.to_string(),
            times: vec![dt],
            flops: c.map(|c| c.0),
            bytes: c.map(|c| c.1),
        };
        eprintln!("tvm profile: {p}");
    }
    r
}
