//! What a tuning run leaves: the record entry (candidates, winner, the default schedule's
//! time, how the candidates were chosen) written to `tvm-tuning/NAME.json`, and the line
//! that says what won by how much.

use crate::kernels::Found;
use crate::measure;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use tvm_core::tune::{self, record, Measured, Record, Status, TargetRecord};

/// The record of `f` at `path`, if it is readable and of this tuner's schema; else a new one.
pub fn load(path: &Path, f: &Found) -> Record {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| Record::parse(&t).ok())
        .filter(|r| r.schema == record::SCHEMA)
        .unwrap_or_else(|| Record::new(&f.kernel.name))
}

/// The outcome of tuning one kernel for one target.
pub struct Tuned {
    pub key: record::Key,
    /// Every candidate measured or rejected; candidate 0 (the schedule as written, or the
    /// derived schedule) first.
    pub candidates: Vec<Measured>,
    /// The median of the kernel's default schedule, where measured.
    pub default_s: Option<f64>,
    /// The head to head's decision: `Some(Some(w))` the candidate with knobs `w` won,
    /// `Some(None)` none beat the schedule it would replace; `None` undecided (nothing new
    /// was measured, or nothing ran correctly).
    pub decided: Option<Option<BTreeMap<String, String>>>,
    /// The record's winner before, when its key matched.
    pub old_winner: Option<BTreeMap<String, String>>,
    pub search: Option<tune::Search>,
}

/// How the winner of a written block compares with the schedule the compiler derives
/// when the block is absent (`d` against the winner's `b`, in seconds): the advice to
/// drop the block when the derived one is faster.
fn default_note(kind: &str, d: f64, b: f64) -> String {
    if d < b {
        format!(
            "; without the block, the derived schedule takes {}, {:.2}x faster than the winner: consider removing \
             the `schedule!({kind})` block, or `tvm-tune --auto` to search the derived space",
            measure::ms(d),
            b / d
        )
    } else {
        format!(
            "; without the block, the derived schedule takes {} (the winner is {:.2}x faster)",
            measure::ms(d),
            d / b
        )
    }
}

/// Writes `t` as the `kind` entry of `rec` (at `path`) and says what won.
pub fn write(f: &Found, kind: &str, path: &Path, mut rec: Record, t: Tuned, started: Instant) -> Result<(), String> {
    let candidates = t.candidates;
    let ok = |a: &BTreeMap<String, String>| candidates.iter().any(|c| &c.knobs == a && c.status == Status::Ok);
    let candidates_ok = candidates.iter().any(|c| c.status == Status::Ok);
    // The head to head's decision; else the record's winner (nothing new was measured);
    // else the fastest correct candidate.
    let winner = match t.decided {
        Some(d) => d.filter(|a| ok(a)),
        None => t.old_winner.filter(|a| ok(a)).or_else(|| {
            candidates
                .iter()
                .filter(|c| c.status == Status::Ok)
                .min_by(|a, b| a.median_s.unwrap_or(f64::INFINITY).total_cmp(&b.median_s.unwrap_or(f64::INFINITY)))
                .map(|c| c.knobs.clone())
        }),
    };
    let time_of = |w: &BTreeMap<String, String>| candidates.iter().find(|c| &c.knobs == w).and_then(|c| c.median_s);
    // A derived space's winner must beat the default schedule it replaces.
    let winner = winner.filter(|w| !f.derived || matches!((time_of(w), t.default_s), (Some(a), Some(d)) if a < d));
    let first = candidates.first().and_then(|c| c.median_s);
    let best = winner.as_ref().and_then(time_of);
    let entry = TargetRecord {
        key: t.key,
        knobs: record::knob_names(&f.knobs),
        candidates: candidates.clone(),
        winner: winner.clone(),
        tuning_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        default_s: t.default_s,
        space: if f.derived { tune::Space::Derived } else { tune::Space::Written },
        search: t.search,
    };
    rec.targets.insert(kind.to_string(), entry);
    std::fs::create_dir_all(path.parent().expect("a record path has a directory")).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, rec.to_json()).and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| e.to_string())?;
    // A record that did not exist before is no input of the crate yet: touching the
    // kernel's file makes cargo expand it again and find the record.
    let _ = std::fs::File::options()
        .append(true)
        .open(&f.file)
        .and_then(|file| file.set_modified(std::time::SystemTime::now()));
    let measured = candidates.iter().filter(|c| c.status != Status::Illegal).count();
    let took = format!("{:.1} s, {measured} candidates measured", started.elapsed().as_secs_f64());
    let first_name = if f.derived { "the derived schedule (candidate 0)" } else { "the schedule as written" };
    match (winner, best, first) {
        (Some(w), Some(b), Some(a)) => {
            let default = t.default_s.filter(|_| !f.derived).map(|d| default_note(kind, d, b));
            println!(
                "{}: {kind} {} in {took}; winner {} {}, {first_name} {} ({:.2}x){}",
                f.name,
                path.display(),
                measure::label(&w),
                measure::ms(b),
                measure::ms(a),
                a / b,
                default.unwrap_or_default()
            );
        }
        (Some(w), _, _) => println!("{}: {kind} winner {}; written to {}", f.name, measure::label(&w), path.display()),
        (None, _, _) if f.derived && candidates_ok => println!(
            "{}: {kind}: no candidate beat {first_name} head to head ({took}); {} keeps no winner, so the \
             derived schedule runs",
            f.name,
            path.display()
        ),
        (None, _, _) => {
            println!("{}: {kind}: no candidate ran correctly ({took}); {} keeps no winner", f.name, path.display())
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::default_note;

    #[test]
    fn a_faster_derived_schedule_is_named_with_the_advice_to_drop_the_block() {
        let slower = default_note("cpu", 0.047e-3, 0.141e-3);
        assert!(slower.contains("3.00x faster than the winner"), "{slower}");
        assert!(slower.contains("removing the `schedule!(cpu)` block"), "{slower}");
        let faster = default_note("cpu", 0.3e-3, 0.1e-3);
        assert!(faster.contains("the winner is 3.00x faster") && !faster.contains("removing"), "{faster}");
    }
}
