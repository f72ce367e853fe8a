//! Every candidate of a space measured (spaces of at most `tune::MAX_CANDIDATES`), the
//! candidates the record already has under the same key excepted; then the fastest
//! against the schedule it would replace, head to head.

use crate::bench::{Bench, BuildError};
use crate::cli::Options;
use crate::kernels::Found;
use crate::measure::{self, Progress};
use crate::report::{self, Tuned};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use tvm_core::tune::{self, record, space, Measured, Status};

pub fn tune_one(o: &Options, crate_dir: &Path, benches: &Path, identity: &str, f: &Found) -> Result<(), String> {
    let started = Instant::now();
    let kind = o.target.kind.name();
    let dims = crate::dims_of(o, f);
    let key = f.key(dims.clone(), identity);
    let path = record::path(crate_dir, &f.name);
    let rec = report::load(&path, f);
    // What the record has measured under this very key.
    let old: Vec<Measured> = match rec.targets.get(kind) {
        Some(e) if !o.retune && record::mismatch(&e.key, &key, true).is_none() => e.candidates.clone(),
        _ => Vec::new(),
    };
    let size = space::space_size(&f.knobs);
    if size > tune::MAX_CANDIDATES as u128 {
        return Err(format!(
            "`{}` has {size} candidates for {kind}, more than the {} measured one by one: search them with --auto",
            f.name,
            tune::MAX_CANDIDATES
        ));
    }
    let raw = &f.kernel.ast.schedules[f.block.expect("knobs are in a block")];
    let mut results: Vec<(usize, Measured)> = Vec::new();
    let mut to_measure: Vec<(usize, proc_macro2::TokenStream)> = Vec::new();
    let mut illegal = 0;
    for n in 0..size as usize {
        let choice = space::choice_of(&f.knobs, n);
        let a = space::assignment(&f.knobs, &choice);
        if let Some(m) = old.iter().find(|m| m.knobs == a) {
            results.push((n, m.clone()));
            continue;
        }
        let mut schedules = f.kernel.schedules.clone();
        schedules[f.block.expect("a block")] = tune::resolve(raw, &choice);
        match tvm_core::driver::lower_exact(&f.kernel.graph, &schedules, &o.target) {
            Ok(_) => to_measure.push((n, space::substitute(&f.tokens, f.block, &choice, &format!("__tvm_c{n}")))),
            Err(es) => {
                illegal += 1;
                let why = es.first().map(|e| e.message()).unwrap_or_default();
                results.push((n, measure::outcome(&a, Status::Illegal, Some(why))));
            }
        }
    }
    eprintln!(
        "tvm-tune: `{}` on {} ({identity}): {size} candidates, {illegal} illegal, {} measured before, {} to measure",
        f.name,
        o.device,
        results.len() - illegal,
        to_measure.len()
    );
    let entry = rec.targets.get(kind).filter(|_| !old.is_empty());
    let mut default_s = entry.and_then(|e| e.default_s);
    let old_winner = entry.and_then(|e| e.winner.clone());
    let mut decided = None;
    if !to_measure.is_empty() {
        let (fresh, d, w) = measure_all(o, f, benches, &dims, &to_measure, &results)?;
        decided = w.map(|w| w.map(|n| space::assignment(&f.knobs, &space::choice_of(&f.knobs, n))));
        // Fresh outcomes, and the confirmation's medians, replace what was known.
        for (n, m) in fresh {
            results.retain(|r| r.0 != n);
            results.push((n, m));
        }
        default_s = d.or(default_s);
    }
    results.sort_by_key(|r| r.0);
    let candidates: Vec<Measured> = results.into_iter().map(|r| r.1).collect();
    let t = Tuned { key, candidates, default_s, decided, old_winner, search: None };
    report::write(f, kind, &path, rec, t, started)
}

/// Builds the bench of the candidates in `to_measure` (and of the schedule as written and
/// the best known candidate, for the confirmation), runs the reference, then every
/// candidate to measure (in order: the schedule as written first, when it is one, which
/// sets the first leader), then the head to head ([`crate::head_to_head`]). Returns the
/// outcomes (fresh and confirmed), the default schedule's time and the decision.
fn measure_all(
    o: &Options,
    f: &Found,
    benches: &Path,
    dims: &BTreeMap<String, i64>,
    to_measure: &[(usize, proc_macro2::TokenStream)],
    known: &[(usize, Measured)],
) -> Result<crate::Measurements, String> {
    let mut bench = Bench::new(o, f, benches);
    let best_known = crate::best(known);
    let mut compiled: Vec<(usize, proc_macro2::TokenStream)> = to_measure.to_vec();
    for n in [Some(0), best_known].into_iter().flatten() {
        if !compiled.iter().any(|c| c.0 == n) {
            let choice = space::choice_of(&f.knobs, n);
            compiled.push((n, space::substitute(&f.tokens, f.block, &choice, &format!("__tvm_c{n}"))));
        }
    }
    compiled.sort_by_key(|c| c.0);
    let t = Instant::now();
    eprintln!("tvm-tune: building {} candidates (cargo build --release)", compiled.len());
    let mut rejected: Vec<(usize, Measured)> = Vec::new();
    let exe = loop {
        match bench.build(f, &compiled, dims) {
            Ok(exe) => break exe,
            // A candidate the compiler rejects is that candidate's outcome.
            Err(BuildError::Candidates(bad)) if bad.len() < compiled.len() => {
                for (n, why) in bad {
                    eprintln!("tvm-tune: candidate {n} {why}");
                    compiled.retain(|c| c.0 != n);
                    let a = space::assignment(&f.knobs, &space::choice_of(&f.knobs, n));
                    rejected.push((n, measure::outcome(&a, Status::Crashed, Some(why))));
                }
            }
            Err(BuildError::Candidates(bad)) => {
                return Err(format!("no candidate compiles: {}", bad.first().map(|b| b.1.as_str()).unwrap_or("")))
            }
            Err(BuildError::Other(e)) => return Err(e),
        }
    };
    eprintln!("tvm-tune: built in {:.1} s", t.elapsed().as_secs_f64());
    let tol = crate::tolerance(o, f);
    measure::reference(&exe, &bench.dir, o.timeout.max(std::time::Duration::from_secs(300)))?;
    let leader = known
        .iter()
        .filter(|(_, m)| m.status == Status::Ok)
        .filter_map(|(_, m)| m.median_s)
        .fold(f64::INFINITY, f64::min);
    let jobs: Vec<(usize, BTreeMap<String, String>)> = to_measure
        .iter()
        .filter(|(n, _)| compiled.iter().any(|c| c.0 == *n))
        .map(|(n, _)| (*n, space::assignment(&f.knobs, &space::choice_of(&f.knobs, *n))))
        .collect();
    let mut progress = Progress::count(jobs.len(), leader);
    let mut out = measure::candidates(&exe, &bench.dir, &o.device, &jobs, leader, tol, o.timeout, &mut progress);
    progress.finish();
    out.extend(rejected);
    let default = measure::default_time(&exe, &bench.dir, &o.device, tol, o.timeout);
    let all: Vec<(usize, Measured)> =
        known.iter().filter(|k| !out.iter().any(|x| x.0 == k.0)).cloned().chain(out.iter().cloned()).collect();
    let exes = |_: usize| exe.clone();
    crate::head_to_head(o, f, &bench.dir, &exes, tol, out, &all, default, 0)
}
