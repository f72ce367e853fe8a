//! Profiling of generated kernels: `NAME::profile(&device, inputs..)` and
//! `TVM_PROFILE=1`.
//!
//! A profile runs the kernel once to warm up (programs built, buffers pooled), then again
//! and again: at least 10 runs and 0.2 s (at least 3 runs when one takes over 0.1 s), then
//! until the median of all runs moves by less than 3% over the last 10, at most 2 s past the
//! minimum or 10 000 runs. On the CPU each run is timed by the host's monotonic clock; on
//! OpenCL and CUDA devices by the device: the execution of the run's kernels between their
//! start and end timestamps (OpenCL events of a profiling queue, CUDA events), added up, so
//! the copies between host and device of `run` on host tensors are not in it. `clock`
//! says which (the host clock where a device's timestamps could not be read).
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
    /// What timed the runs.
    pub clock: Clock,
    /// The device's peak GFLOP/s and GB/s, where it is known (CUDA devices, from the
    /// driver's figures; not the CPU or OpenCL devices).
    pub peak: Option<(f64, f64)>,
}

/// What timed a profile's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The host's monotonic clock around each run (the CPU; a GPU whose timestamps could
    /// not be read; `TVM_PROFILE=1`'s single runs, copies included).
    Host,
    /// The device's timestamps of the run's kernels (OpenCL events, CUDA events).
    Device,
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

    /// The fractions of the device's peak FLOP/s and bandwidth the median run reached,
    /// where the peak is known (`None` otherwise).
    pub fn peak_fraction(&self) -> Option<(Option<f64>, Option<f64>)> {
        let (pf, pb) = self.peak?;
        Some((self.gflops().map(|g| g / pf), self.gbps().map(|g| g / pb)))
    }

    /// Times `baseline` (one run of what the kernel replaces) by the same rules and
    /// compares medians: `ratio` > 1 means the kernel is faster. The closure returns
    /// `Result<(), E>`; its first error stops the timing and is returned.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), tvm_runtime::Error> {
    /// # let p: tvm_runtime::Profile = unimplemented!();
    /// let x = vec![1.0f32; 1 << 20];
    /// let speedup = p.against(|| {
    ///     std::hint::black_box(x.iter().map(|v| v * 2.0).collect::<Vec<f32>>());
    ///     Ok::<_, tvm_runtime::Error>(())
    /// })?;
    /// println!("{speedup}");
    /// # Ok(())
    /// # }
    /// ```
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
            "{} on {}: {} median ({}-{} p20-p80, {} min; {} runs{})",
            self.kernel,
            self.device,
            duration(self.median()),
            duration(self.p20()),
            duration(self.p80()),
            duration(self.min()),
            self.times.len(),
            if self.clock == Clock::Device { ", device timestamps" } else { "" }
        )?;
        // A kernel with no floating-point arithmetic (an integer GEMV, a copy) has no
        // FLOP rate to show.
        if let Some(g) = self.gflops().filter(|_| self.flops.is_some_and(|n| n > 0.0)) {
            write!(f, ", {} GFLOP/s", significant(g))?;
        }
        if let Some(g) = self.gbps() {
            write!(f, ", {} GB/s", significant(g))?;
        }
        if let Some((flops, bytes)) = self.peak_fraction() {
            let pct = |x: Option<f64>| x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or("-".into());
            write!(f, "; {} of peak FLOP/s, {} of peak bandwidth", pct(flops), pct(bytes))?;
        }
        Ok(())
    }
}

/// `x` with three significant digits (at least none after the point, at most six):
/// `1234`, `12.3`, `0.0123`.
fn significant(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
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

/// The peak of `device` where its backend knows it (CUDA).
fn peak_of(device: &crate::Device) -> Option<(f64, f64)> {
    match *device {
        crate::Device::Cuda(n) => crate::gpu::cuda::CudaRuntime::global().caps(n).ok()?.peak(),
        _ => None,
    }
}

/// Runs `f` by the rules of the module's documentation; the times, sorted.
pub fn measure<E>(mut f: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
    measure_timed(|| {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64())
    })
}

/// [`measure`] of `f`, which runs once and returns how long that took (seconds).
pub fn measure_timed<E>(mut f: impl FnMut() -> Result<f64, E>) -> Result<Vec<f64>, E> {
    // A warm-up run; then `times` in run order (the first run decides the minimum count)
    // and `sorted`, kept sorted by insertion for the running median.
    f()?;
    let (mut times, mut sorted): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let (mut total, mut medians) = (0.0f64, Vec::<f64>::new());
    loop {
        let dt = f()?;
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
    mut f: impl FnMut() -> Result<(), Error>,
) -> Result<Profile, Error> {
    let gpu = *device != crate::Device::Cpu;
    let (mut device_runs, mut runs) = (0usize, 0usize);
    let times = measure_timed(|| {
        if gpu {
            crate::gpu::begin_timing();
        }
        let t = Instant::now();
        let r = f();
        let host = t.elapsed().as_secs_f64();
        let on_device = if gpu { crate::gpu::end_timing() } else { None };
        r?;
        runs += 1;
        Ok(match on_device {
            Some(d) => {
                device_runs += 1;
                d
            }
            None => host,
        })
    })?;
    Ok(Profile {
        kernel: kernel.into(),
        device: device.to_string(),
        times,
        flops: cost.map(|c| c.0),
        bytes: cost.map(|c| c.1),
        clock: if gpu && device_runs == runs { Clock::Device } else { Clock::Host },
        peak: peak_of(device),
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
            clock: Clock::Host,
            peak: None,
        };
        eprintln!("tvm profile: {p}");
    }
    r
}

#[cfg(test)]
mod tests {
    use super::{Clock, Profile};

    fn profile(flops: f64) -> Profile {
        let times = vec![1e-3, 2e-3, 3e-3];
        Profile {
            kernel: "k".into(),
            device: "cpu".into(),
            times,
            flops: Some(flops),
            bytes: Some(4e6),
            clock: Clock::Host,
            peak: None,
        }
    }

    #[test]
    fn a_line_shows_a_flop_rate_only_for_floating_point_work() {
        let line = profile(2e6).to_string();
        assert!(line.contains("1.00 GFLOP/s") && line.contains("2.00 GB/s"), "{line}");
        let line = profile(0.0).to_string();
        assert!(!line.contains("GFLOP/s") && line.contains("2.00 GB/s"), "{line}");
    }
}
