//! `tvm-tune`: measures the candidates of the knobs (`tune!(..)`) in a kernel's schedule
//! on a device and writes `tvm-tuning/NAME.json` into the kernel's crate, which the macro
//! applies at the next build (`tvm_core::tune`). `tvm-tune --help` lists the flags.
//!
//! Two ways through a space: every candidate ([`exhaustive`], spaces of at most
//! `tune::MAX_CANDIDATES`), or `--auto` ([`search`]): an evolutionary search guided by a
//! cost model learned from the measurements as they come in, within a time budget. Both
//! tune a kernel's own knobs, and (`--default-space`, implied by `--auto`) the space the
//! compiler derives for a kernel without a block for the target. A generic kernel is
//! tuned per instance, each with a record of its own (`NAME_TYPE`).
//!
//! Each candidate runs in a process of its own with a timeout; a crash, an error or a
//! hang is that candidate's outcome. Its outputs must match the kernel's default schedule
//! (the reference, on the CPU) before it may win; after three runs, a candidate 1.5×
//! slower than the leader is dropped. The fastest must then beat the schedule it would
//! replace head to head (three alternate runs each), or that schedule stays. Candidates
//! the record already has, with the same key, are not measured again.

mod bench;
mod cli;
mod exhaustive;
mod harness;
mod kernels;
mod measure;
mod model;
mod report;
mod search;

use clap::Parser;
use kernels::Found;
use measure::Run;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tvm_core::tune::{self, record, space, Measured, Record, Status};

fn main() -> ExitCode {
    let o = match cli::Args::parse().options() {
        Ok(o) => o,
        Err(e) => e.exit(),
    };
    match run(&o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("tvm-tune: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(o: &cli::Options) -> Result<bool, String> {
    let crate_dir = match &o.crate_dir {
        Some(d) => d.clone(),
        None => crate_of(&o.paths[0]).ok_or("no Cargo.toml at or above the first PATH; give --crate DIR")?,
    };
    let kind = o.target.kind.name();
    let ks = kernels::find(o, &crate_dir)?;
    let advice = kernels::advice(&ks.untuned, kind);
    if ks.found.is_empty() {
        let hint: String = advice.iter().map(|a| format!("\n  {a}")).collect();
        // A check of a crate without knobs finds nothing stale; a tuning run that tunes
        // nothing did not do what it was asked, whether the kernels were named or not.
        if o.check {
            eprintln!("tvm-tune: no kernel with knobs for {kind}: no record to check{hint}");
            return Ok(true);
        }
        return Err(format!("no kernel with knobs for {kind}:{hint}"));
    }
    if !o.kernels.is_empty() {
        for a in &advice {
            eprintln!("tvm-tune: {a}");
        }
    }
    if o.check {
        return Ok(check(o, &crate_dir, &ks.found));
    }
    // Every symbolic dim needs a value to measure with: asked for before anything is built.
    let missing: Vec<(&str, Vec<String>)> =
        ks.found.iter().map(|f| (f.name.as_str(), f.missing_dims(&o.dims))).filter(|(_, m)| !m.is_empty()).collect();
    if !missing.is_empty() {
        let which: Vec<String> = missing.iter().map(|(k, m)| format!("`{k}` ({})", m.join(", "))).collect();
        let all: BTreeSet<&String> = missing.iter().flat_map(|(_, m)| m).collect();
        let example: Vec<String> = all.iter().map(|n| format!("{n}=..")).collect();
        return Err(format!(
            "symbolic dims need the values to measure with: {}; give them with --dims {} (a record applies \
             to calls with those values), or leave the kernel out with --kernel",
            which.join(", "),
            example.join(",")
        ));
    }
    let probe = std::time::Instant::now();
    let benches = bench::root(&crate_dir);
    let identity = bench::identity(o, &benches)?;
    // The first build of a run compiles tvm-rs for the candidates' crates: minutes that
    // belong to no kernel's --budget, said so the wall time adds up.
    let setup = probe.elapsed().as_secs_f64();
    if setup >= 5.0 {
        eprintln!("tvm-tune: built tvm-rs for the candidates in {setup:.1} s (once per target and tvm-rs version; no kernel's --budget counts it)");
    }
    for f in &ks.found {
        match o.auto {
            Some(s) => search::tune_one(o, &crate_dir, &benches, &identity, f, s)?,
            None => exhaustive::tune_one(o, &crate_dir, &benches, &identity, f)?,
        }
    }
    Ok(true)
}

/// The dims of `f` from `--dims` (every one is there: [`run`] asked for them up front).
fn dims_of(o: &cli::Options, f: &Found) -> BTreeMap<String, i64> {
    let names = f.kernel.graph.dims.iter().map(|d| d.name().to_string());
    names.filter_map(|n| o.dims.get(&n).map(|v| (n, *v))).collect()
}

/// The largest error a candidate may have against the reference.
fn tolerance(o: &cli::Options, f: &Found) -> f64 {
    o.tolerance.unwrap_or_else(|| {
        let low = f.kernel.graph.outputs.iter().any(|t| {
            let d = f.kernel.graph.tensor(*t).dtype.name();
            d == "f16" || d == "bf16"
        });
        if low {
            2e-2
        } else {
            1e-3
        }
    })
}

/// `--check`: every kernel with knobs (and every kernel without a block whose record has
/// an entry for the target, or all of them with `--default-space`) needs a record entry
/// for the target whose key matches the kernel now and which has measured every
/// candidate of its space, or (a searched space) whose winner is still a candidate of it.
fn check(o: &cli::Options, crate_dir: &Path, found: &[Found]) -> bool {
    let mut ok = true;
    let kind = o.target.kind.name();
    for f in found {
        let name = &f.name;
        let path = record::path(crate_dir, name);
        let status =
            match std::fs::read_to_string(&path).map_err(|_| ()).and_then(|t| Record::parse(&t).map_err(|_| ())) {
                Err(()) => Err(format!("missing: no readable {}", path.display())),
                Ok(r) => match r.targets.get(kind) {
                    None => Err(format!("missing: {} has no `{kind}` entry", path.display())),
                    Some(e) => {
                        let want = f.key(e.key.dims.clone(), &e.key.device);
                        let size = space::space_size(&f.knobs);
                        if r.schema != record::SCHEMA {
                            Err(format!("stale: record schema {}, this tuner writes {}", r.schema, record::SCHEMA))
                        } else if let Some(why) = record::mismatch(&e.key, &want, false) {
                            Err(format!("stale: {}; {}", changed_space(f, &e.knobs).unwrap_or(why), retune_hint(o, f)))
                        } else if let Some(s) = &e.search {
                            let gone = e.winner.as_ref().is_some_and(|w| space::choice_from(&f.knobs, w).is_none());
                            if gone {
                                Err(format!(
                                    "stale: the winner is no longer a candidate of the space; {}",
                                    retune_hint(o, f)
                                ))
                            } else {
                                Ok(format!(
                                    "up to date (searched: {} of {size} candidates in {} rounds, measured on `{}`)",
                                    e.candidates.len(),
                                    s.rounds,
                                    e.key.device
                                ))
                            }
                        } else {
                            let missing = (0..size.min(tune::MAX_CANDIDATES as u128) as usize)
                                .filter(|&n| {
                                    let a = space::assignment(&f.knobs, &space::choice_of(&f.knobs, n));
                                    !e.candidates.iter().any(|c| c.knobs == a)
                                })
                                .count();
                            if size > tune::MAX_CANDIDATES as u128 {
                                Err(format!("stale: {size} candidates, too many to measure every one: use --auto"))
                            } else if missing > 0 {
                                Err(format!("stale: {missing} of {size} candidates not measured"))
                            } else {
                                Ok(format!("up to date ({size} candidates, measured on `{}`)", e.key.device))
                            }
                        }
                    }
                },
            };
        match status {
            Ok(s) => println!("{name} ({kind}): {s}"),
            Err(s) => {
                ok = false;
                println!("{name} ({kind}): {s}");
            }
        }
    }
    ok
}

/// What changed in the space of `f` since its record was written with the knobs `had`,
/// where the knobs themselves did: a derived space follows the statements the compiler
/// derives, so a new auto-scheduler rule changes it under an unchanged kernel.
fn changed_space(f: &Found, had: &[String]) -> Option<String> {
    let now = record::knob_names(&f.knobs);
    if now == had && f.derived {
        return Some("the kernel or the statements the compiler derives for it changed".into());
    }
    (now != had).then(|| {
        format!(
            "the {} space changed: the record has the knobs [{}], the space now [{}]",
            if f.derived { "derived" } else { "written" },
            had.join(", "),
            now.join(", ")
        )
    })
}

/// The command that writes `f`'s record again (`--auto` for a derived space or one too
/// large to measure every candidate of).
fn retune_hint(o: &cli::Options, f: &Found) -> String {
    let large = space::space_size(&f.knobs) > tune::MAX_CANDIDATES as u128;
    let how = if f.derived || large { " --auto --budget 2m" } else { "" };
    let dims: Vec<String> = f.kernel.graph.dims.iter().map(|d| format!("{}=..", d.name())).collect();
    let dims = if dims.is_empty() { String::new() } else { format!(" --dims {}", dims.join(",")) };
    let mut paths: Vec<String> = o.paths.iter().map(|p| p.display().to_string()).collect();
    if let Some(d) = &o.crate_dir {
        paths.push(format!("--crate {}", d.display()));
    }
    format!(
        "tune it again with `tvm-tune {} --target {} --kernel {}{how}{dims}`",
        paths.join(" "),
        o.target.kind.name(),
        f.name
    )
}

/// Fresh outcomes, the default schedule's time, and the decision: `Some(Some(n))`
/// candidate `n` wins, `Some(None)` none does (a derived space that does not beat the
/// default schedule), `None` undecided (nothing ran correctly).
pub type Measurements = (Vec<(usize, Measured)>, Option<f64>, Option<Option<usize>>);

/// The head to head: the fastest correct candidate of `all` against the schedule it would
/// replace (the schedule as written, candidate 0; in a derived space, the default
/// schedule), measured alternately, three times each; the medians of those runs replace
/// theirs in `out`. A winner must beat it by 2%: not by one run's noise. `exe_of` is the
/// executable that holds a candidate; `first` is the number of candidate 0 (every knob at
/// its first value).
#[allow(clippy::too_many_arguments)]
fn head_to_head(
    o: &cli::Options,
    f: &Found,
    dir: &Path,
    exe_of: &dyn Fn(usize) -> PathBuf,
    tol: f64,
    mut out: Vec<(usize, Measured)>,
    all: &[(usize, Measured)],
    mut default: Option<f64>,
    first: usize,
) -> Result<Measurements, String> {
    let first_ok = all.iter().any(|(n, m)| *n == first && m.status == Status::Ok);
    let mut winner = best(all).map(Some);
    let set = |out: &mut Vec<(usize, Measured)>, n: usize, t: f64| {
        let mut m = all.iter().find(|x| x.0 == n).expect("measured").1.clone();
        m.median_s = Some(t);
        out.retain(|x| x.0 != n);
        out.push((n, m));
    };
    let Some(Some(b)) = winner else { return Ok((out, default, winner)) };
    if f.derived {
        // Candidate 0 is the default schedule: it cannot beat itself.
        if b == first {
            return Ok((out, default, Some(None)));
        }
        let exe = exe_of(b);
        let (td, tb) =
            measure::confirm(dir, &o.device, (&exe, Run::Default), (&exe, Run::Candidate(b)), tol, o.timeout);
        if let Some(t) = tb {
            set(&mut out, b, t);
        }
        // Candidate 0 is the default schedule's statements: the head to head's figure of
        // the one is the other's, so the record compares the winner with candidate 0 on
        // the same runs.
        if let (Some(t), true) = (td, first_ok) {
            set(&mut out, first, t);
        }
        default = td.or(default);
        winner = Some(match (td, tb) {
            (Some(d), Some(w)) => {
                eprintln!(
                    "tvm-tune: head to head: default schedule {}, best {} ({:.2}x)",
                    measure::ms(d),
                    measure::ms(w),
                    d / w
                );
                (w < 0.98 * d).then_some(b)
            }
            _ => None,
        });
        return Ok((out, default, winner));
    }
    if first_ok && b != first {
        let (e0, eb) = (exe_of(first), exe_of(b));
        let (t0, tb) =
            measure::confirm(dir, &o.device, (&e0, Run::Candidate(first)), (&eb, Run::Candidate(b)), tol, o.timeout);
        for (n, t) in [(first, t0), (b, tb)] {
            if let Some(t) = t {
                set(&mut out, n, t);
            }
        }
        // The schedule as written stays unless the other is 2% faster head to head.
        winner = match (t0, tb) {
            (Some(a), Some(w)) => {
                eprintln!(
                    "tvm-tune: head to head: as written {}, best {} ({:.2}x)",
                    measure::ms(a),
                    measure::ms(w),
                    a / w
                );
                Some(Some(if w < 0.98 * a { b } else { first }))
            }
            _ => Some(Some(first)),
        };
    }
    Ok((out, default, winner))
}

/// The fastest correct candidate of `ms`.
fn best(ms: &[(usize, Measured)]) -> Option<usize> {
    ms.iter()
        .filter(|(_, m)| m.status == Status::Ok && m.median_s.is_some())
        .min_by(|a, b| a.1.median_s.unwrap_or(f64::INFINITY).total_cmp(&b.1.median_s.unwrap_or(f64::INFINITY)))
        .map(|(n, _)| *n)
}

/// The nearest directory at or above `p` with a `Cargo.toml`.
fn crate_of(p: &Path) -> Option<PathBuf> {
    let abs = std::fs::canonicalize(p).ok()?;
    let mut d = if abs.is_dir() { Some(abs.as_path()) } else { abs.parent() };
    while let Some(dir) = d {
        if dir.join("Cargo.toml").exists() {
            return Some(dir.to_path_buf());
        }
        d = dir.parent();
    }
    None
}
