//! Running the bench: the reference, and each candidate in a process of its own with a
//! timeout, with the progress on stderr.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tvm_core::tune::{Measured, Status};
use tvm_runtime::Device;

/// Milliseconds, for messages.
pub fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// What a child process did.
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    /// `None`: killed at the timeout.
    pub success: Option<bool>,
}

pub fn run_child(exe: &Path, args: &[String], timeout: Duration) -> Result<Outcome, String> {
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

/// `a` and `b` (each a run of a bench executable) measured alternately, three processes
/// each; the median of each one's medians (`None` where a run failed).
pub fn confirm(
    dir: &Path,
    device: &Device,
    a: (&Path, Run),
    b: (&Path, Run),
    tol: f64,
    timeout: Duration,
) -> (Option<f64>, Option<f64>) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for ((exe, r), out) in [(a, &mut ta), (b, &mut tb)] {
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
/// best median known before (infinite for none). Each outcome is shown on `progress`.
#[allow(clippy::too_many_arguments)]
pub fn candidates(
    exe: &Path,
    dir: &Path,
    device: &Device,
    jobs: &[(usize, BTreeMap<String, String>)],
    mut leader: f64,
    tol: f64,
    timeout: Duration,
    progress: &mut Progress,
) -> Vec<(usize, Measured)> {
    let mut out = Vec::new();
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
        if let (Status::Ok, Some(t)) = (m.status, m.median_s) {
            leader = leader.min(t);
        }
        progress.done(&m, knobs);
        out.push((*n, m));
    }
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

pub fn label(knobs: &BTreeMap<String, String>) -> String {
    knobs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The progress of a tuning run (indicatif): a bar over the candidates, or over the
/// time budget of a search, with the best time so far. Where stderr is no terminal (a
/// log, a test) the bar is hidden and each candidate is a line instead.
pub struct Progress {
    bar: ProgressBar,
    /// Candidates done, and how many there are (`None`: a search, whose bar is time).
    done: usize,
    total: Option<usize>,
    budget: Option<Duration>,
    start: Instant,
    pub best: (f64, String),
}

impl Progress {
    /// A bar over `total` candidates; `leader` is the best time known before.
    pub fn count(total: usize, leader: f64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("[{bar:24}] {pos}/{len} {msg} ({eta} left)")
                .expect("a valid template")
                .progress_chars("#>-"),
        );
        Progress::with(bar, Some(total), None, leader)
    }

    /// A bar over the time `budget` of a search.
    pub fn timed(budget: Duration, leader: f64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(budget.as_secs().max(1)), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("[{bar:24}] {elapsed}/{len}s {msg}")
                .expect("a valid template")
                .progress_chars("#>-"),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress::with(bar, None, Some(budget), leader)
    }

    fn with(bar: ProgressBar, total: Option<usize>, budget: Option<Duration>, leader: f64) -> Progress {
        let best = (leader, if leader.is_finite() { "(from the record)".into() } else { String::new() });
        let p = Progress { bar, done: 0, total, budget, start: Instant::now(), best };
        p.bar.set_message(p.best_text());
        p
    }

    fn best_text(&self) -> String {
        if self.best.0.is_finite() {
            format!("best {} {}", ms(self.best.0), self.best.1)
        } else {
            "best -".into()
        }
    }

    /// A line above the bar (or on its own where the bar is hidden).
    pub fn say(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Candidate `knobs` measured as `m`.
    pub fn done(&mut self, m: &Measured, knobs: &BTreeMap<String, String>) {
        self.done += 1;
        if let (Status::Ok, Some(t)) = (m.status, m.median_s) {
            if t < self.best.0 {
                self.best = (t, label(knobs));
            }
        }
        let this = match (m.status, m.median_s) {
            (Status::Ok, Some(t)) => ms(t),
            (s, _) => status_name(s).to_string(),
        };
        let elapsed = self.start.elapsed().as_secs_f64();
        let count = match (self.total, self.budget) {
            (Some(total), _) => {
                let left = elapsed / self.done as f64 * (total - self.done.min(total)) as f64;
                self.bar.set_position(self.done as u64);
                format!("{}/{total}, ~{left:.0} s left", self.done)
            }
            (None, Some(b)) => {
                self.bar.set_position((elapsed as u64).min(b.as_secs()));
                format!("{} measured, {elapsed:.0}/{:.0} s", self.done, b.as_secs_f64())
            }
            (None, None) => format!("{} measured", self.done),
        };
        self.bar.set_message(self.best_text());
        if self.bar.is_hidden() {
            let mut e = std::io::stderr();
            let _ = writeln!(e, "  {}: {this}   [{count}] {}", label(knobs), self.best_text());
            let _ = e.flush();
        }
    }

    /// The bar's message, for a search between rounds.
    pub fn status(&self, text: &str) {
        if let Some(b) = self.budget {
            let elapsed = self.start.elapsed().as_secs();
            self.bar.set_position(elapsed.min(b.as_secs()));
        }
        self.bar.set_message(format!("{} - {text}", self.best_text()));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
