//! Running the bench: the build, the reference, and each candidate in a process of its
//! own with a timeout, with a progress line on stderr.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tvm_core::tune::{Measured, Status};
use tvm_runtime::Device;

/// Milliseconds, for messages.
pub fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// `cargo build --release` of the bench crate in `dir` into `target_dir`; the executable.
pub fn build(dir: &Path, target_dir: &Path, package: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir)
        // The bench's kernels are expanded once each: no expansion cache entries.
        .env("TVM_EXPANSION_CACHE", "off")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(40).collect();
        return Err(format!(
            "the bench crate in {} does not build:\n{}",
            dir.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    Ok(target_dir.join("release").join(package))
}

/// What a child process did.
struct Outcome {
    stdout: String,
    stderr: String,
    /// `None`: killed at the timeout.
    success: Option<bool>,
}

fn run_child(exe: &Path, args: &[String], timeout: Duration) -> Result<Outcome, String> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    // Readers on threads, so a child that writes much never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let ro = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let re = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let success = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status.success()),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let stdout = ro.join().unwrap_or_default();
    let stderr = re.join().unwrap_or_default();
    Ok(Outcome { stdout, stderr, success })
}

/// Runs the reference (the default schedule, on the CPU) into `dir/reference.bin`.
pub fn reference(exe: &Path, dir: &Path, timeout: Duration) -> Result<(), String> {
    let args = ["reference", "0", "cpu", &dir.to_string_lossy(), "0", "0"].map(String::from);
    let o = run_child(exe, &args, timeout)?;
    match o.success {
        Some(true) => Ok(()),
        Some(false) => Err(format!("the reference (the kernel's default schedule) failed: {}", o.stderr.trim())),
        None => Err(format!("the reference did not finish in {} s", timeout.as_secs())),
    }
}

/// The median time of the default schedule on `device`, timed as the candidates are
/// (`None` when it fails).
pub fn default_time(exe: &Path, dir: &Path, device: &Device, tol: f64, timeout: Duration) -> Option<f64> {
    let args = [
        "default".to_string(),
        "0".into(),
        device.to_string(),
        dir.to_string_lossy().into_owned(),
        "inf".into(),
        format!("{tol:e}"),
    ];
    let o = run_child(exe, &args, timeout).ok()?;
    let m = parse(&BTreeMap::new(), &o, timeout);
    m.median_s.filter(|_| o.success == Some(true) && m.status == Status::Ok)
}

/// What the bench runs: a candidate by number, or the default schedule.
#[derive(Clone, Copy)]
pub enum Run {
    Candidate(usize),
    Default,
}

/// `a` and `b` measured alternately, three processes each; the median of each one's
/// medians (`None` where a run failed).
pub fn confirm(
    exe: &Path,
    dir: &Path,
    device: &Device,
    a: Run,
    b: Run,
    tol: f64,
    timeout: Duration,
) -> (Option<f64>, Option<f64>) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (r, out) in [(a, &mut ta), (b, &mut tb)] {
            let (mode, n) = match r {
                Run::Candidate(n) => ("candidate", n),
                Run::Default => ("default", 0),
            };
            let args = [
                mode.to_string(),
                n.to_string(),
                device.to_string(),
                dir.to_string_lossy().into_owned(),
                "inf".into(),
                format!("{tol:e}"),
            ];
            if let Ok(o) = run_child(exe, &args, timeout) {
                let m = parse(&BTreeMap::new(), &o, timeout);
                if let (Status::Ok, Some(t)) = (m.status, m.median_s) {
                    out.push(t);
                }
            }
        }
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v.len() == 3).then(|| v[1])
    };
    (med(ta), med(tb))
}

/// Measures each of `jobs` (candidate number, knob values) in order; `leader` is the
/// best median known before (infinite for none).
pub fn candidates(
    exe: &Path,
    dir: &Path,
    device: &Device,
    jobs: &[(usize, BTreeMap<String, String>)],
    mut leader: f64,
    tol: f64,
    timeout: Duration,
) -> Vec<(usize, Measured)> {
    let mut out = Vec::new();
    let mut progress = Progress::new(jobs.len(), leader);
    for (n, knobs) in jobs {
        let quick = if leader.is_finite() { leader * 1.5 } else { f64::INFINITY };
        let args = [
            "candidate".to_string(),
            n.to_string(),
            device.to_string(),
            dir.to_string_lossy().into_owned(),
            format!("{quick:e}"),
            format!("{tol:e}"),
        ];
        let m = match run_child(exe, &args, timeout) {
            Err(e) => outcome(knobs, Status::Crashed, Some(e)),
            Ok(o) => parse(knobs, &o, timeout),
        };
        if m.status == Status::Ok {
            if let Some(t) = m.median_s {
                if t < leader {
                    leader = t;
                    progress.best = (t, label(knobs));
                }
            }
        }
        progress.done(&m, knobs);
        out.push((*n, m));
    }
    progress.finish();
    out
}

/// An outcome without timings.
pub fn outcome(knobs: &BTreeMap<String, String>, status: Status, message: Option<String>) -> Measured {
    Measured {
        knobs: knobs.clone(),
        status,
        min_s: None,
        median_s: None,
        p20_s: None,
        p80_s: None,
        max_error: None,
        message,
    }
}

/// A candidate's lines (see the harness) as its outcome.
fn parse(knobs: &BTreeMap<String, String>, o: &Outcome, timeout: Duration) -> Measured {
    let mut m = outcome(knobs, Status::Crashed, None);
    for line in o.stdout.lines() {
        let mut w = line.split_whitespace();
        let nums = |w: std::str::SplitWhitespace<'_>| -> Vec<f64> { w.filter_map(|x| x.parse().ok()).collect() };
        match w.next() {
            Some("error") => m.max_error = nums(w).first().copied(),
            Some("wrong") => m.status = Status::Wrong,
            Some("quick") => m.median_s = nums(w).first().copied(),
            Some("slow") => m.status = Status::Slow,
            Some("times") => {
                let v = nums(w);
                if v.len() == 4 {
                    m.status = Status::Ok;
                    (m.min_s, m.median_s, m.p20_s, m.p80_s) = (Some(v[0]), Some(v[1]), Some(v[2]), Some(v[3]));
                }
            }
            _ => {}
        }
    }
    match o.success {
        None => {
            m.status = Status::TimedOut;
            m.message = Some(format!("killed after {:.1} s", timeout.as_secs_f64()));
        }
        Some(false) => {
            m.status = Status::Crashed;
            let tail: Vec<&str> = o.stderr.lines().rev().take(3).collect();
            let tail = tail.into_iter().rev().collect::<Vec<_>>().join(" | ");
            m.message = Some(if tail.is_empty() { "the process failed".into() } else { tail });
        }
        Some(true) => match m.status {
            Status::Wrong => {
                m.message = Some(format!("max error {:.2e} against the reference", m.max_error.unwrap_or(f64::NAN)))
            }
            Status::Slow => m.message = Some("more than 1.5x slower than the leader after three runs".into()),
            Status::Crashed => m.message = Some("no timing reported".into()),
            _ => {}
        },
    }
    m
}

/// How a status reads in the progress line.
fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Illegal => "illegal",
        Status::Wrong => "wrong output",
        Status::Crashed => "crashed",
        Status::TimedOut => "timed out",
        Status::Slow => "dropped (1.5x slower)",
    }
}

fn label(knobs: &BTreeMap<String, String>) -> String {
    knobs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The progress line: a bar, candidates done, best so far, time left.
struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    best: (f64, String),
    tty: bool,
}

impl Progress {
    fn new(total: usize, leader: f64) -> Progress {
        let best = (leader, if leader.is_finite() { "(from the record)".into() } else { String::new() });
        Progress { total, done: 0, start: Instant::now(), best, tty: std::io::stderr().is_terminal() }
    }

    fn done(&mut self, m: &Measured, knobs: &BTreeMap<String, String>) {
        self.done += 1;
        let elapsed = self.start.elapsed().as_secs_f64();
        let left = elapsed / self.done as f64 * (self.total - self.done) as f64;
        let width = 24;
        let filled = width * self.done / self.total.max(1);
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(width - filled));
        let best =
            if self.best.0.is_finite() { format!("best {} {}", ms(self.best.0), self.best.1) } else { "best -".into() };
        let this = match (m.status, m.median_s) {
            (Status::Ok, Some(t)) => ms(t),
            (s, _) => status_name(s).to_string(),
        };
        let line = format!("[{bar}] {}/{} {best}, ~{left:.0} s left", self.done, self.total);
        let mut e = std::io::stderr();
        if self.tty {
            let _ = write!(e, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(e, "  {}: {this}   {line}", label(knobs));
        }
        let _ = e.flush();
    }

    fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
