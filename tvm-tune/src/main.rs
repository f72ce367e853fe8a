//! `tvm-tune`: measures every candidate of the knobs (`tune!(..)`) in a kernel's schedule
//! on a device and writes `tvm-tuning/NAME.json` into the kernel's crate, which the macro
//! applies at the next build (`tvm_core::tune`).
//!
//! ```text
//! cargo run --release -p tvm-tune -- [OPTIONS] PATH..
//!   PATH              a crate directory (its src/ and examples/ are read) or .rs files
//!   --target KIND     cpu (default), opencl or cuda
//!   --device DEVICE   where to measure (default: cpu, opencl:0, cuda:0 for the target)
//!   --kernel NAME     only this kernel (repeatable)
//!   --dims N=V,..     values of symbolic dims (a kernel with others is skipped)
//!   --crate DIR       the crate whose tvm-tuning/ gets the records (default: the
//!                     nearest directory above PATH with a Cargo.toml)
//!   --timeout SECS    per candidate (default 60): a hang costs that candidate only
//!   --tolerance X     largest error against the reference (default 1e-3, 2e-2 for f16/bf16)
//!   --retune          measure again what the record already has
//!   --default-space   also tune the kernels without a schedule block for the target,
//!                     over the space the compiler derives (`tvm_core::tune::space::
//!                     default_space`: tile sizes, threads, reduction unrolling)
//!   --check           measure nothing: report kernels whose records are missing or
//!                     stale, and exit with 1 if there are any (for CI)
//! ```
//!
//! Each candidate runs in a process of its own with a timeout; a crash, an error or a
//! hang is that candidate's outcome. Its outputs must match the kernel's default schedule
//! (the reference, on the CPU) before it may win; after three runs, a candidate 1.5×
//! slower than the leader is dropped. Candidates the record already has, with the same
//! key, are not measured again, so adding a value to a knob measures only the new
//! candidates.

mod harness;
mod measure;

use measure::Run;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tvm_core::build::scan::Invocation;
use tvm_core::frontend::Kernel;
use tvm_core::tune::{self, record, space, Measured, Record, Status, TargetRecord};
use tvm_core::{Target, TargetKind};
use tvm_runtime::Device;

const USAGE: &str = "usage: tvm-tune [--target cpu|opencl|cuda] [--device DEVICE] [--kernel NAME].. [--dims N=V,..] \
                     [--crate DIR] [--timeout SECS] [--tolerance X] [--retune] [--default-space] [--check] PATH..";

/// The command line.
pub struct Options {
    paths: Vec<PathBuf>,
    crate_dir: Option<PathBuf>,
    kernels: Vec<String>,
    target: Target,
    device: Device,
    dims: BTreeMap<String, i64>,
    timeout: Duration,
    tolerance: Option<f64>,
    retune: bool,
    check: bool,
    default_space: bool,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        paths: Vec::new(),
        crate_dir: None,
        kernels: Vec::new(),
        target: Target::cpu(),
        device: Device::Cpu,
        dims: BTreeMap::new(),
        timeout: Duration::from_secs(60),
        tolerance: None,
        retune: false,
        check: false,
        default_space: false,
    };
    let mut device = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--target" => {
                let v = value("--target")?;
                o.target = match v.as_str() {
                    "cpu" => Target::cpu(),
                    "opencl" => Target::opencl(),
                    "cuda" => Target::cuda(),
                    _ => return Err(format!("unknown target `{v}`: cpu, opencl or cuda")),
                }
            }
            "--device" => device = Some(value("--device")?.parse::<Device>().map_err(|e| e.to_string())?),
            "--kernel" => o.kernels.push(value("--kernel")?),
            "--crate" => o.crate_dir = Some(PathBuf::from(value("--crate")?)),
            "--dims" => {
                for kv in value("--dims")?.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = kv.split_once('=').ok_or(format!("`{kv}`: write NAME=VALUE"))?;
                    let v: i64 = v.trim().parse().map_err(|_| format!("`{kv}`: the value is not an integer"))?;
                    o.dims.insert(k.trim().to_string(), v);
                }
            }
            "--timeout" => {
                let v: f64 = value("--timeout")?.parse().map_err(|_| "--timeout takes seconds".to_string())?;
                o.timeout = Duration::from_secs_f64(v.max(0.1));
            }
            "--tolerance" => {
                o.tolerance = Some(value("--tolerance")?.parse().map_err(|_| "--tolerance takes a number".to_string())?)
            }
            "--retune" => o.retune = true,
            "--check" => o.check = true,
            "--default-space" => o.default_space = true,
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with("--") => return Err(format!("unknown option `{s}`")),
            p => o.paths.push(PathBuf::from(p)),
        }
    }
    if o.paths.is_empty() {
        return Err("no PATH given".into());
    }
    o.device = device.unwrap_or(match o.target.kind {
        TargetKind::OpenCl => Device::OpenCl(0),
        TargetKind::Cuda => Device::Cuda(0),
        _ => Device::Cpu,
    });
    if o.device.kind() != o.target.kind.name() {
        return Err(format!("device `{}` does not run {} code", o.device, o.target.kind.name()));
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("tvm-tune: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
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

/// A kernel found in the sources, with its tuned block and knobs.
struct Found {
    inv: Invocation,
    kernel: Kernel,
    block: Option<usize>,
    knobs: Vec<space::Knob>,
    /// The block is the derived default space (`--default-space`), not the user's.
    derived: bool,
}

fn run(o: &Options) -> Result<bool, String> {
    let crate_dir = match &o.crate_dir {
        Some(d) => d.clone(),
        None => crate_of(&o.paths[0]).ok_or("no Cargo.toml above the first PATH; give --crate DIR")?,
    };
    let mut files = Vec::new();
    for p in &o.paths {
        if p.is_dir() {
            for sub in ["src", "examples"] {
                tvm_core::build::scan::rust_files(&p.join(sub), &mut files);
            }
        } else {
            files.push(p.clone());
        }
    }
    let scan = tvm_core::build::scan::scan_files(files);
    for p in &scan.problems {
        eprintln!("tvm-tune: {p}");
    }
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for inv in scan.invocations {
        let tokens = inv.tokens.clone();
        if matches!(tvm_core::expand::generic::split(&tokens), Ok(Some(_))) {
            eprintln!(
                "tvm-tune: {}:{}: a kernel generic over its element type is not tuned (yet); skipped",
                inv.file.display(),
                inv.line
            );
            continue;
        }
        let Ok(kernel) = tvm_core::frontend::parse_kernel(tokens.clone()) else {
            eprintln!("tvm-tune: {}:{}: the kernel does not compile; skipped", inv.file.display(), inv.line);
            continue;
        };
        if !o.kernels.is_empty() && !o.kernels.contains(&kernel.name) {
            continue;
        }
        // The same kernel shared by several files (`#[path]`) is tuned once.
        if !seen.insert(kernel.name.clone()) {
            continue;
        }
        let block = record::block_index(&kernel.ast.schedules, o.target.kind);
        if block.is_none() && o.default_space {
            // No block for the target: the space the compiler derives from the compute.
            match space::with_default_space(&tokens, &kernel, o.target.kind) {
                Some((aug, k)) => {
                    let block = record::block_index(&k.ast.schedules, o.target.kind);
                    let knobs = block.map(|b| tune::knobs(&k.ast.schedules[b])).unwrap_or_default();
                    found.push(Found {
                        inv: Invocation { tokens: aug, ..inv },
                        kernel: k,
                        block,
                        knobs,
                        derived: true,
                    });
                }
                None => eprintln!("tvm-tune: `{}`: no default space for its form; skipped", kernel.name),
            }
            continue;
        }
        let knobs = block.map(|b| tune::knobs(&kernel.ast.schedules[b])).unwrap_or_default();
        if knobs.is_empty() {
            if !o.kernels.is_empty() {
                eprintln!(
                    "tvm-tune: `{}` has no knobs in the schedule its {} target uses",
                    kernel.name,
                    o.target.kind.name()
                );
            }
            continue;
        }
        found.push(Found { inv: Invocation { tokens, ..inv }, kernel, block, knobs, derived: false });
    }
    for k in &o.kernels {
        if !found.iter().any(|f| &f.kernel.name == k) && !seen.contains(k) {
            return Err(format!("no kernel `{k}` in the sources given"));
        }
    }
    if found.is_empty() {
        eprintln!("tvm-tune: no kernel with knobs for {}", o.target.kind.name());
        return Ok(true);
    }
    if o.check {
        return Ok(check(o, &crate_dir, &found));
    }
    let identity = tvm_runtime::tune::device_identity(&o.device)
        .ok_or_else(|| format!("device `{}` is not available here", o.device))?;
    for f in &found {
        tune_one(o, &crate_dir, &identity, f)?;
    }
    Ok(true)
}

/// The dims of `kernel` from `--dims` (every symbolic dim must have one).
fn dims_of(o: &Options, kernel: &Kernel) -> Result<BTreeMap<String, i64>, String> {
    let names: Vec<String> = kernel.graph.dims.iter().map(|d| d.name().to_string()).collect();
    let missing: Vec<&String> = names.iter().filter(|n| !o.dims.contains_key(*n)).collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|n| format!("{n}=..")).collect();
        return Err(format!("`{}` has symbolic dims: give --dims {}", kernel.name, list.join(",")));
    }
    Ok(names.into_iter().map(|n| (n.clone(), o.dims[&n])).collect())
}

/// `--check`: every kernel with knobs needs a record entry for the target whose key
/// matches the kernel now and which has measured every candidate of its space.
fn check(o: &Options, crate_dir: &Path, found: &[Found]) -> bool {
    let mut ok = true;
    let kind = o.target.kind.name();
    for f in found {
        let name = &f.kernel.name;
        let path = record::path(crate_dir, name);
        let status =
            match std::fs::read_to_string(&path).map_err(|_| ()).and_then(|t| Record::parse(&t).map_err(|_| ())) {
                Err(()) => Err(format!("missing: no readable {}", path.display())),
                Ok(r) => match r.targets.get(kind) {
                    None => Err(format!("missing: {} has no `{kind}` entry", path.display())),
                    Some(e) => {
                        let want = record::key(&f.kernel, &f.inv.tokens, f.block, e.key.dims.clone(), &e.key.device);
                        if r.schema != record::SCHEMA {
                            Err(format!("stale: record schema {}, this tuner writes {}", r.schema, record::SCHEMA))
                        } else if let Some(why) = record::mismatch(&e.key, &want, false) {
                            Err(format!("stale: {why}"))
                        } else {
                            let size = space::space_size(&f.knobs) as usize;
                            let missing = (0..size)
                                .filter(|&n| {
                                    let a = space::assignment(&f.knobs, &space::choice_of(&f.knobs, n));
                                    !e.candidates.iter().any(|c| c.knobs == a)
                                })
                                .count();
                            if missing > 0 {
                                Err(format!("stale: {missing} of {size} candidates not measured"))
                            } else {
                                Ok(format!("up to date ({} candidates, measured on `{}`)", size, e.key.device))
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

fn tune_one(o: &Options, crate_dir: &Path, identity: &str, f: &Found) -> Result<(), String> {
    let started = Instant::now();
    let (kernel, kind) = (&f.kernel, o.target.kind.name());
    let dims = match dims_of(o, kernel) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tvm-tune: {e}; skipped");
            return Ok(());
        }
    };
    let key = record::key(kernel, &f.inv.tokens, f.block, dims.clone(), identity);
    let path = record::path(crate_dir, &kernel.name);
    let mut rec = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| Record::parse(&t).ok())
        .filter(|r| r.schema == record::SCHEMA)
        .unwrap_or_else(|| Record::new(&kernel.name));
    // What the record has measured under this very key.
    let old: Vec<Measured> = match rec.targets.get(kind) {
        Some(e) if !o.retune && record::mismatch(&e.key, &key, true).is_none() => e.candidates.clone(),
        _ => Vec::new(),
    };
    let size = space::space_size(&f.knobs) as usize;
    let raw = &kernel.ast.schedules[f.block.expect("knobs are in a block")];
    let mut results: Vec<(usize, Measured)> = Vec::new();
    let mut to_measure: Vec<(usize, proc_macro2::TokenStream)> = Vec::new();
    let mut illegal = 0;
    for n in 0..size {
        let choice = space::choice_of(&f.knobs, n);
        let a = space::assignment(&f.knobs, &choice);
        if let Some(m) = old.iter().find(|m| m.knobs == a) {
            results.push((n, m.clone()));
            continue;
        }
        let mut schedules = kernel.schedules.clone();
        schedules[f.block.expect("a block")] = tune::resolve(raw, &choice);
        match tvm_core::driver::lower_exact(&kernel.graph, &schedules, &o.target) {
            Ok(_) => {
                let name = format!("__tvm_c{n}");
                to_measure.push((n, space::substitute(&f.inv.tokens, f.block, &choice, &name)));
            }
            Err(es) => {
                illegal += 1;
                let why = es.first().map(|e| e.message()).unwrap_or_default();
                results.push((n, measure::outcome(&a, Status::Illegal, Some(why))));
            }
        }
    }
    eprintln!(
        "tvm-tune: `{}` on {} ({identity}): {size} candidates, {illegal} illegal, {} measured before, {} to measure",
        kernel.name,
        o.device,
        results.len() - illegal,
        to_measure.len()
    );
    let old_default = rec.targets.get(kind).filter(|_| !old.is_empty()).and_then(|e| e.default_s);
    let mut default_s = old_default;
    let mut decided = None;
    if !to_measure.is_empty() {
        let (fresh, d, w) = measure_all(o, f, &dims, &to_measure, &results)?;
        decided = w;
        // Fresh outcomes, and the confirmation's medians, replace what was known.
        for (n, m) in fresh {
            results.retain(|r| r.0 != n);
            results.push((n, m));
        }
        default_s = d.or(default_s);
    }
    results.sort_by_key(|r| r.0);
    let candidates: Vec<Measured> = results.into_iter().map(|r| r.1).collect();
    // The head-to-head's decision; else the record's winner (nothing new was measured);
    // else the fastest correct candidate.
    let old_winner = rec.targets.get(kind).filter(|_| !old.is_empty()).and_then(|e| e.winner.clone());
    let ok = |a: &BTreeMap<String, String>| candidates.iter().any(|c| &c.knobs == a && c.status == Status::Ok);
    let candidates_ok = candidates.iter().any(|c| c.status == Status::Ok);
    let winner = match decided {
        Some(d) => d.map(|n| space::assignment(&f.knobs, &space::choice_of(&f.knobs, n))).filter(|a| ok(a)),
        None => old_winner.filter(|a| ok(a)).or_else(|| {
            candidates
                .iter()
                .filter(|c| c.status == Status::Ok)
                .min_by(|a, b| a.median_s.unwrap_or(f64::INFINITY).total_cmp(&b.median_s.unwrap_or(f64::INFINITY)))
                .map(|c| c.knobs.clone())
        }),
    };
    // A derived space's winner must beat the default schedule it replaces.
    let winner = winner.filter(|w| {
        let t = candidates.iter().find(|c| &c.knobs == w).and_then(|c| c.median_s);
        !f.derived || matches!((t, default_s), (Some(t), Some(d)) if t < d)
    });
    let written = candidates.first().and_then(|c| c.median_s);
    let best = winner.as_ref().and_then(|w| candidates.iter().find(|c| &c.knobs == w)).and_then(|c| c.median_s);
    let entry = TargetRecord {
        key,
        knobs: record::knob_names(&f.knobs),
        candidates,
        winner: winner.clone(),
        tuning_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        default_s,
        space: if f.derived { tune::Space::Derived } else { tune::Space::Written },
    };
    rec.targets.insert(kind.to_string(), entry);
    std::fs::create_dir_all(path.parent().expect("a record path has a directory")).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, rec.to_json()).and_then(|_| std::fs::rename(&tmp, &path)).map_err(|e| e.to_string())?;
    // A record that did not exist before is no input of the crate yet: touching the
    // kernel's file makes cargo expand it again and find the record.
    let _ = std::fs::File::options()
        .append(true)
        .open(&f.inv.file)
        .and_then(|file| file.set_modified(std::time::SystemTime::now()));
    match (winner, best, written) {
        (Some(w), Some(b), Some(a)) => {
            let knobs: Vec<String> = w.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let default = default_s.map(|d| format!("; default schedule {} ({:.2}x)", measure::ms(d), d / b));
            println!(
                "{}: {} {} in {:.1} s; winner {} {}, {} {} ({:.2}x){}",
                kernel.name,
                kind,
                path.display(),
                started.elapsed().as_secs_f64(),
                knobs.join(", "),
                measure::ms(b),
                if f.derived { "the space's first candidate" } else { "as written" },
                measure::ms(a),
                a / b,
                default.unwrap_or_default()
            );
        }
        (Some(w), _, _) => println!("{}: {kind} winner {w:?}; written to {}", kernel.name, path.display()),
        (None, _, _) if f.derived && candidates_ok => println!(
            "{}: {kind}: no candidate of the derived space beat the default schedule; {} keeps no winner",
            kernel.name,
            path.display()
        ),
        (None, _, _) => {
            println!("{}: {kind}: no candidate ran correctly; {} keeps no winner", kernel.name, path.display())
        }
    }
    Ok(())
}

/// Builds the bench of the candidates in `to_measure` (and of the schedule as written and
/// the best known candidate, for the confirmation), runs the reference, then every
/// candidate to measure (in order: the schedule as written first, when it is one, which
/// sets the first leader). When the fastest correct candidate is not the schedule as
/// written, the two are measured again, alternately, three times each, and the medians
/// of those runs replace theirs: a winner must beat the schedule as written in a
/// head-to-head, not by one run's noise. Returns the outcomes (fresh and confirmed) and
/// the default schedule's time.
fn measure_all(
    o: &Options,
    f: &Found,
    dims: &BTreeMap<String, i64>,
    to_measure: &[(usize, proc_macro2::TokenStream)],
    known: &[(usize, Measured)],
) -> Result<Measurements, String> {
    let kernel = &f.kernel;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tvm-tune is in the workspace").to_path_buf();
    let crate_tag = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        o.paths.hash(&mut h);
        format!("{:08x}", h.finish() as u32)
    };
    let kind = o.target.kind.name();
    let package = format!("tvm-tune-bench-{}-{kind}-{crate_tag}", kernel.name.replace('_', "-"));
    let dir = root.join("target/tvm-tune").join(&package);
    let features: &[&str] = match o.target.kind {
        TargetKind::OpenCl => &["opencl"],
        TargetKind::Cuda => &["cuda"],
        _ => &[],
    };
    let best_known = best(known);
    let mut compiled: Vec<(usize, proc_macro2::TokenStream)> = to_measure.to_vec();
    for n in [Some(0), best_known].into_iter().flatten() {
        if !compiled.iter().any(|c| c.0 == n) {
            let choice = space::choice_of(&f.knobs, n);
            compiled.push((n, space::substitute(&f.inv.tokens, f.block, &choice, &format!("__tvm_c{n}"))));
        }
    }
    compiled.sort_by_key(|c| c.0);
    let reference = harness::reference_tokens(&f.inv.tokens, "__tvm_reference");
    harness::write(&dir, &package, &root, features, &root.join("Cargo.lock"), kernel, &reference, &compiled, dims)?;
    let t = Instant::now();
    eprintln!("tvm-tune: building {} candidates (cargo build --release)", compiled.len());
    let exe = measure::build(&dir, &root.join("target/tvm-tune/target"), &package)?;
    eprintln!("tvm-tune: built in {:.1} s", t.elapsed().as_secs_f64());
    let tol = o.tolerance.unwrap_or_else(|| {
        let low = kernel.graph.outputs.iter().any(|t| {
            let d = kernel.graph.tensor(*t).dtype.name();
            d == "f16" || d == "bf16"
        });
        if low {
            2e-2
        } else {
            1e-3
        }
    });
    measure::reference(&exe, &dir, o.timeout.max(Duration::from_secs(300)))?;
    let leader = known
        .iter()
        .filter(|(_, m)| m.status == Status::Ok)
        .filter_map(|(_, m)| m.median_s)
        .fold(f64::INFINITY, f64::min);
    let jobs: Vec<(usize, BTreeMap<String, String>)> =
        to_measure.iter().map(|(n, _)| (*n, space::assignment(&f.knobs, &space::choice_of(&f.knobs, *n)))).collect();
    let mut out = measure::candidates(&exe, &dir, &o.device, &jobs, leader, tol, o.timeout);
    let mut default = measure::default_time(&exe, &dir, &o.device, tol, o.timeout);

    // The confirmation: the best against the schedule as written, head to head; in a
    // derived space, against the default schedule it would replace.
    let all: Vec<(usize, Measured)> =
        known.iter().filter(|k| !out.iter().any(|x| x.0 == k.0)).cloned().chain(out.iter().cloned()).collect();
    let first_ok = all.iter().any(|(n, m)| *n == 0 && m.status == Status::Ok);
    let mut winner = best(&all).map(Some);
    if f.derived {
        if let Some(Some(b)) = winner {
            let (td, tb) = measure::confirm(&exe, &dir, &o.device, Run::Default, Run::Candidate(b), tol, o.timeout);
            if let Some(t) = tb {
                let mut m = all.iter().find(|x| x.0 == b).expect("measured").1.clone();
                m.median_s = Some(t);
                out.retain(|x| x.0 != b);
                out.push((b, m));
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
        }
        return Ok((out, default, winner));
    }
    if let (Some(Some(b)), true) = (winner, first_ok) {
        if b != 0 {
            let (t0, tb) =
                measure::confirm(&exe, &dir, &o.device, Run::Candidate(0), Run::Candidate(b), tol, o.timeout);
            for (n, t) in [(0, t0), (b, tb)] {
                let Some(t) = t else { continue };
                let mut m = all.iter().find(|x| x.0 == n).expect("measured").1.clone();
                m.median_s = Some(t);
                out.retain(|x| x.0 != n);
                out.push((n, m));
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
                    Some(Some(if w < 0.98 * a { b } else { 0 }))
                }
                _ => Some(Some(0)),
            };
        }
    }
    Ok((out, default, winner))
}

/// Fresh outcomes, the default schedule's time, and the decision: `Some(Some(n))`
/// candidate `n` wins, `Some(None)` none does (a derived space that does not beat the
/// default schedule), `None` undecided (nothing ran correctly).
type Measurements = (Vec<(usize, Measured)>, Option<f64>, Option<Option<usize>>);

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
