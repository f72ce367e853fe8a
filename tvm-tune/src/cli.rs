//! The command line (clap): the flags, their parsing into [`Options`], and the errors that
//! name the flag at fault.

use clap::Parser;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tvm_core::{Target, TargetKind};
use tvm_runtime::Device;

/// Measures the candidates of the knobs (`tune!(..)`) in a kernel's schedule on a device
/// and writes `tvm-tuning/NAME.json` into the kernel's crate, which the macro applies at
/// the next build. Every candidate runs in a process of its own; its outputs must match
/// the kernel's default schedule before it may win.
#[derive(Parser, Debug)]
#[command(name = "tvm-tune", version)]
#[command(after_help = "Examples:\n  \
    tvm-tune .                                  every kernel with knobs in this crate, on the CPU\n  \
    tvm-tune . --target opencl --kernel matmul  one kernel, on the first OpenCL device\n  \
    tvm-tune . --auto --budget 2m               also kernels without a schedule block: a search\n                                              \
    of the space the compiler derives, 2 minutes per kernel\n  \
    tvm-tune . --check                          which records are missing or stale (for CI)\n\n\
    Exit status: 0 when every kernel asked for was tuned (or, with --check, every record is up\n\
    to date); 1 when --check found a missing or stale record; 2 on an error, a bad flag, or\n\
    nothing to tune (the message says what would tune it).\n\n\
    In your own crate: `cargo install --path tvm-tune` in a checkout of tvm-rs, then\n\
    `tvm-tune .` in the crate's directory. The candidates are built in crates under\n\
    `tvm-tune/` in the crate's target directory: $CARGO_TARGET_DIR when set, else where\n\
    cargo builds the crate (its workspace's `target/`).")]
pub struct Args {
    /// A crate directory (its src/ and examples/ are read) or .rs files
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// The target whose schedule is tuned
    #[arg(long, value_name = "KIND", default_value = "cpu", value_parser = ["cpu", "opencl", "cuda"])]
    pub target: String,

    /// Where to measure [default: cpu, opencl:0 or cuda:0, after the target]
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    pub device: Option<Device>,

    /// Only this kernel (repeatable); a generic kernel's instances are NAME_TYPE
    /// (`roll_f32`), and NAME selects them all
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,

    /// Values of symbolic dims, as N=V,.. (every kernel measured needs its dims)
    #[arg(long, value_name = "N=V,..", value_parser = parse_dims)]
    pub dims: Vec<BTreeMap<String, i64>>,

    /// The crate whose tvm-tuning/ gets the records [default: the nearest directory at or
    /// above the first PATH with a Cargo.toml]
    #[arg(long = "crate", value_name = "DIR")]
    pub crate_dir: Option<PathBuf>,

    /// Seconds per candidate: a hang costs that candidate only
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_seconds)]
    pub timeout: f64,

    /// Largest error against the reference [default: 1e-3; 2e-2 for f16/bf16 outputs]
    #[arg(long, value_name = "X")]
    pub tolerance: Option<f64>,

    /// Measure again what the record already has
    #[arg(long)]
    pub retune: bool,

    /// Also tune the kernels without a schedule block for the target, over the space the
    /// compiler derives (its statements with their sizes as knobs), exhaustively
    #[arg(long)]
    pub default_space: bool,

    /// Search instead of measuring every candidate: an evolutionary search guided by a
    /// cost model learned from the measurements, within --budget; tunes the kernels
    /// without a block too (as --default-space)
    #[arg(long)]
    pub auto: bool,

    /// With --auto: the time for each kernel and target (30s, 90s, 2m, 1h)
    #[arg(long, value_name = "TIME", default_value = "2m", value_parser = parse_budget)]
    pub budget: Duration,

    /// With --auto: the seed of the search's random choices
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,

    /// Measure nothing: report kernels whose records are missing or stale, and exit
    /// with 1 if there are any (for CI); a kernel without a block is checked when it has a
    /// record for the target (written by --default-space or --auto), or always with
    /// --default-space
    #[arg(long)]
    pub check: bool,
}

/// The command line, parsed and checked.
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub crate_dir: Option<PathBuf>,
    pub kernels: Vec<String>,
    pub target: Target,
    pub device: Device,
    pub dims: BTreeMap<String, i64>,
    pub timeout: Duration,
    pub tolerance: Option<f64>,
    pub retune: bool,
    pub check: bool,
    pub default_space: bool,
    pub auto: Option<Search>,
}

/// How `--auto` searches.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub budget: Duration,
    pub seed: u64,
}

impl Args {
    /// The options, or an error as clap reports it (naming the flag at fault).
    pub fn options(self) -> Result<Options, clap::Error> {
        let target = match self.target.as_str() {
            "opencl" => Target::opencl(),
            "cuda" => Target::cuda(),
            _ => Target::cpu(),
        };
        let device = self.device.unwrap_or(match target.kind {
            TargetKind::OpenCl => Device::OpenCl(0),
            TargetKind::Cuda => Device::Cuda(0),
            _ => Device::Cpu,
        });
        if device.kind() != target.kind.name() {
            let msg = format!(
                "invalid value '{device}' for '--device <DEVICE>': it does not run {} code (--target {})",
                target.kind.name(),
                target.kind.name()
            );
            return Err(clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, msg));
        }
        let mut dims = BTreeMap::new();
        for d in self.dims {
            dims.extend(d);
        }
        Ok(Options {
            paths: self.paths,
            crate_dir: self.crate_dir,
            kernels: self.kernels,
            target,
            device,
            dims,
            timeout: Duration::from_secs_f64(self.timeout.max(0.1)),
            tolerance: self.tolerance,
            retune: self.retune,
            check: self.check,
            default_space: self.default_space || self.auto,
            auto: self.auto.then_some(Search { budget: self.budget, seed: self.seed }),
        })
    }
}

fn parse_device(s: &str) -> Result<Device, String> {
    s.parse::<Device>().map_err(|_| "expected cpu, opencl, opencl:N, cuda or cuda:N".to_string())
}

fn parse_dims(s: &str) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for kv in s.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or(format!("`{kv}`: write NAME=VALUE"))?;
        let v: i64 = v.trim().parse().map_err(|_| format!("`{kv}`: the value is not an integer"))?;
        out.insert(k.trim().to_string(), v);
    }
    Ok(out)
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    s.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).ok_or_else(|| "expected seconds, as in 60".into())
}

/// `30s`, `90s`, `2m`, `1.5m`, `1h`, or seconds without a unit.
pub fn parse_budget(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown unit `{unit}`: write a time as 30s, 2m or 1h")),
    };
    let v: f64 = num.trim().parse().map_err(|_| "write a time as 30s, 2m or 1h".to_string())?;
    if !(v.is_finite() && v > 0.0) {
        return Err("the time must be positive".into());
    }
    Ok(Duration::from_secs_f64(v * scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn budgets_read_as_times() {
        assert_eq!(parse_budget("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_budget("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_budget("45"), Ok(Duration::from_secs(45)));
        assert!(parse_budget("2d").unwrap_err().contains("unknown unit `d`"));
        assert!(parse_budget("-1m").is_err());
    }

    #[test]
    fn errors_name_the_flag() {
        let e = Args::try_parse_from(["tvm-tune", ".", "--target", "tpu"]).unwrap_err().to_string();
        assert!(e.contains("--target") && e.contains("tpu"), "{e}");
        let e = Args::try_parse_from(["tvm-tune", ".", "--budget", "soon"]).unwrap_err().to_string();
        assert!(e.contains("--budget"), "{e}");
        let e = Args::try_parse_from(["tvm-tune", ".", "--dims", "M"]).unwrap_err().to_string();
        assert!(e.contains("--dims") && e.contains("NAME=VALUE"), "{e}");
        let e = Args::try_parse_from(["tvm-tune", ".", "--target", "opencl", "--device", "cpu"])
            .unwrap()
            .options()
            .err()
            .expect("a cpu device does not run opencl code")
            .to_string();
        assert!(e.contains("--device"), "{e}");
        let o = Args::try_parse_from(["tvm-tune", "a.rs", "--dims", "M=4,N=8", "--dims", "K=2", "--auto"])
            .unwrap()
            .options()
            .ok()
            .unwrap();
        assert_eq!(o.dims.len(), 3);
        assert!(o.default_space && o.auto.is_some());
    }
}
