//! The tuner end to end on small crates: candidates measured in child processes on the
//! CPU and on OpenCL (PoCL in CI), a wrong, a crashing and a hanging candidate rejected
//! (`TVM_TUNE_FAULTS`), the record written, `--check` reporting it missing, up to date
//! and stale, a value added to a knob measuring only the new candidate, and the macro
//! compiling the winner into the crate; the search (`--auto`) within its budget, over a
//! kernel's knobs and over the derived space; a generic kernel tuned per instance; the
//! messages that say what to do (no knobs, symbolic dims, bad flags).

use std::path::{Path, PathBuf};
use std::process::Command;

const KERNEL: &str = r#"use tvm::compute;

compute! {
    /// y = 2x + 1 in rows of 256
    pub fn affine(x: f32[64, 256]) -> y: f32[64, 256] {
        y[i, j] = x[i, j] * 2.0 + 1.0;
    }

    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, tune!(w: 8, 16, 32, 64));
        y.parallel(y.i);
        y.vectorize(ji);
    }

    schedule!(opencl) {
        let (jo, ji) = y.split(y.j, tune!(t: 32, 64, 128, 256));
        y.bind(y.i, block.x);
        y.bind(ji, thread.x);
    }
}

compute! {
    /// No schedule block: `tvm-tune --default-space` tunes the space the compiler derives.
    pub fn mm(a: f32[128, 128], b: f32[128, 128]) -> c: f32[128, 128] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..128);
    }
}

fn main() {
    let x = tvm::Tensor::from_vec((0..64 * 256).map(|i| (i % 13) as f32).collect(), [64, 256]).unwrap();
    let device: tvm::Device = std::env::args().nth(1).unwrap_or("cpu".into()).parse().unwrap();
    let mut y = tvm::Tensor::zeros([64, 256]);
    affine::run(&device, &x, &mut y).unwrap();
    let ok = y.as_slice().iter().zip(x.as_slice()).all(|(y, x)| *y == x * 2.0 + 1.0);
    for (target, dev, _, knobs) in affine::TUNED.iter().chain(mm::TUNED) {
        println!("tuned {target} {dev} {knobs}");
    }
    let a = tvm::Tensor::from_vec((0..128 * 128).map(|i| (i % 5) as f32 - 2.0).collect(), [128, 128]).unwrap();
    let mut c = tvm::Tensor::zeros([128, 128]);
    mm::run(&device, &a, &a, &mut c).unwrap();
    let (a, c) = (a.as_slice(), c.as_slice());
    let mm_ok = (0..128 * 128).all(|ij| {
        let (i, j) = (ij / 128, ij % 128);
        c[ij] == (0..128).map(|k| a[i * 128 + k] * a[k * 128 + j]).sum::<f32>()
    });
    println!("correct {ok} {mm_ok}");
}
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The target directory the tests give `tvm-tune` (`CARGO_TARGET_DIR`): the tests' own,
/// so that the benches of every test crate share one build of `tvm`, under `tvm-tune/`.
fn target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

/// A crate holding KERNEL, in a directory of its own.
fn user_crate(name: &str) -> PathBuf {
    crate_with(name, KERNEL)
}

/// A crate whose `src/main.rs` is `source`, in a directory of its own. It runs its kernels
/// on the CPU, so it depends on `tvm` without the GPU features, as `tvm-tune`'s CPU benches
/// do: built into the benches' target directory, it reuses their build of `tvm`.
fn crate_with(name: &str, source: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\ntvm = {{ package = \"tvm-rs\", path = {:?}, default-features = false }}\n\n[workspace]\n",
        workspace().to_string_lossy()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), source).unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

struct Run {
    ok: bool,
    code: i32,
    stdout: String,
    stderr: String,
}

fn tune(dir: &Path, args: &[&str], faults: &str) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-tune"))
        .args(args)
        .arg(dir)
        .env("TVM_TUNE_FAULTS", faults)
        .env("CARGO_TARGET_DIR", target())
        .output()
        .expect("tvm-tune runs");
    let run = Run {
        ok: out.status.success(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!("tvm-tune {args:?}:\n{}{}", run.stdout, run.stderr);
    run
}

fn record(dir: &Path) -> serde_json::Value {
    record_of(dir, "affine")
}

fn record_of(dir: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(format!("tvm-tuning/{name}.json"))).expect("a record");
    serde_json::from_str(&text).expect("JSON")
}

fn status_of(rec: &serde_json::Value, target: &str, knob: &str, value: &str) -> String {
    let cands = rec["targets"][target]["candidates"].as_array().expect("candidates");
    let c = cands.iter().find(|c| c["knobs"][knob] == value).unwrap_or_else(|| panic!("candidate {knob}={value}"));
    c["status"].as_str().unwrap().to_string()
}

fn opencl_present() -> bool {
    if tvm_runtime::Device::OpenCl(0).is_available() {
        return true;
    }
    assert!(
        std::env::var("TVM_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "TVM_REQUIRE_TOOLS=1 but no OpenCL device (PoCL) is present"
    );
    eprintln!("skipped: no OpenCL device");
    false
}

/// Candidate 0 runs, 1 is wrong, 2 crashes, 3 hangs (killed at the 5 s timeout, which
/// leaves a loaded machine time to measure the others).
fn tune_with_faults(dir: &Path, target: &str, knob: &str, values: [&str; 4]) {
    let r = tune(dir, &["--target", target, "--timeout", "5"], "1=wrong,2=crash,3=hang");
    assert!(r.ok, "tvm-tune failed");
    let rec = record(dir);
    assert_eq!(rec["schema"], 1);
    assert_eq!(status_of(&rec, target, knob, values[0]), "ok");
    assert_eq!(status_of(&rec, target, knob, values[1]), "wrong");
    assert_eq!(status_of(&rec, target, knob, values[2]), "crashed");
    assert_eq!(status_of(&rec, target, knob, values[3]), "timed_out");
    // The only correct candidate wins, whatever the others' times.
    assert_eq!(rec["targets"][target]["winner"][knob], values[0]);
    let key = &rec["targets"][target]["key"];
    assert!(key["device"].as_str().unwrap().starts_with(target), "{key}");
    assert!(r.stderr.contains("4/4"), "the progress line counts candidates");
}

#[test]
fn tunes_on_the_cpu_rejects_bad_candidates_and_detects_stale_records() {
    let dir = user_crate("tune_cpu");
    // No record yet: --check fails.
    let c = tune(&dir, &["--check"], "");
    assert!(!c.ok && c.stdout.contains("affine (cpu): missing"), "{}", c.stdout);

    tune_with_faults(&dir, "cpu", "w", ["8", "16", "32", "64"]);
    // The bench crate is under `tvm-tune/` in the target directory given, none in the
    // crate's own `target/`.
    let benches: Vec<String> = std::fs::read_dir(target().join("tvm-tune"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(benches.iter().any(|b| b.starts_with("tvm-tune-bench-affine-cpu-")), "{benches:?}");
    assert!(!dir.join("target").exists());
    let c = tune(&dir, &["--check"], "");
    assert!(c.ok && c.stdout.contains("up to date (4 candidates"), "{}", c.stdout);

    // Tuned again without faults: the record's candidates are kept, nothing is measured.
    let again = tune(&dir, &[], "");
    assert!(again.stderr.contains("4 measured before, 0 to measure"), "{}", again.stderr);

    // A value added to the knob: stale, and only the new candidate is measured.
    let src = dir.join("src/main.rs");
    let text =
        std::fs::read_to_string(&src).unwrap().replace("tune!(w: 8, 16, 32, 64)", "tune!(w: 8, 16, 32, 64, 128)");
    std::fs::write(&src, text).unwrap();
    let c = tune(&dir, &["--check"], "");
    assert!(!c.ok && c.stdout.contains("stale: 1 of 5 candidates not measured"), "{}", c.stdout);
    let more = tune(&dir, &[], "");
    assert!(more.stderr.contains("4 measured before, 1 to measure"), "{}", more.stderr);
    let rec = record(&dir);
    // Measured (kept, or dropped as 1.5x slower than the leader: timing decides).
    let new = status_of(&rec, "cpu", "w", "128");
    assert!(new == "ok" || new == "slow", "{new}");
    assert_eq!(status_of(&rec, "cpu", "w", "16"), "wrong", "kept from the first run");

    // A changed algorithm: stale.
    let text = std::fs::read_to_string(&src).unwrap().replace("* 2.0 + 1.0;\n    }", "* 2.0 + 1.5;\n    }");
    std::fs::write(&src, &text).unwrap();
    let c = tune(&dir, &["--check"], "");
    assert!(!c.ok && c.stdout.contains("stale: the kernel or its tuned schedule changed"), "{}", c.stdout);
    std::fs::write(&src, text.replace("* 2.0 + 1.5;\n    }", "* 2.0 + 1.0;\n    }")).unwrap();

    // A kernel without a block, over the derived space (the auto-scheduler's statements
    // with their sizes as knobs): every candidate measured, and a winner only if it beat
    // candidate 0, the derived schedule the kernel gets untuned, head to head.
    let d = tune(&dir, &["--default-space", "--kernel", "mm"], "");
    assert!(d.ok, "tvm-tune --default-space failed");
    let mm_rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tvm-tuning/mm.json")).unwrap()).unwrap();
    let e = &mm_rec["targets"]["cpu"];
    assert_eq!(e["space"], "derived", "{e}");
    assert_eq!(e["candidates"][0]["status"], "ok", "candidate 0, the derived schedule: {e}");
    let c = tune(&dir, &["--check", "--default-space", "--kernel", "mm"], "");
    let size: usize = c
        .stdout
        .split("mm (cpu): up to date (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", c.stdout));
    assert!(c.ok && size >= 2, "{}", c.stdout);
    assert_eq!(e["candidates"].as_array().unwrap().len(), size, "every candidate of the space: {e}");
    // A plain --check checks the derived space's record too, and finds it stale when the
    // kernel changes.
    let c = tune(&dir, &["--check"], "");
    assert!(c.ok && c.stdout.contains(&format!("mm (cpu): up to date ({size} candidates")), "{}", c.stdout);
    let text = std::fs::read_to_string(&src).unwrap();
    std::fs::write(&src, text.replace("a[i, k] * b[k, j] for", "a[i, k] * b[k, j] * 2.0 for")).unwrap();
    let c = tune(&dir, &["--check"], "");
    assert!(
        !c.ok && c.stdout.contains("mm (cpu): stale: the kernel or the statements the compiler derives"),
        "{}",
        c.stdout
    );
    std::fs::write(&src, text).unwrap();
    let mm_label: Option<Vec<String>> = match e["winner"].as_object() {
        Some(w) => {
            no_worse_than_candidate_0(e);
            Some(w.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap())).collect())
        }
        None => {
            assert!(d.stdout.contains("no candidate beat the derived schedule"), "{}", d.stdout);
            None
        }
    };

    // Back as it was: the macro compiles the winners into the crate, and they run correctly.
    let winner = record(&dir)["targets"]["cpu"]["winner"]["w"].as_str().unwrap().to_string();
    let out = Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["run", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--")
        .arg("cpu")
        .env("CARGO_TARGET_DIR", target().join("tvm-tune/target"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("tuned cpu cpu ")) && stdout.contains(&format!("w={winner}")), "{stdout}");
    if let Some(l) = mm_label {
        assert!(stdout.contains(&l.join(",")), "the derived space's winner is compiled in: {stdout}");
    }
    assert!(stdout.contains("correct true true"), "{stdout}");
}

#[test]
fn tunes_on_opencl_and_rejects_bad_candidates() {
    if !opencl_present() {
        return;
    }
    let dir = user_crate("tune_opencl");
    tune_with_faults(&dir, "opencl", "t", ["32", "64", "128", "256"]);
    let c = tune(&dir, &["--check", "--target", "opencl"], "");
    assert!(c.ok && c.stdout.contains("affine (opencl): up to date"), "{}", c.stdout);
    // The CPU entry is another target's: missing there.
    let c = tune(&dir, &["--check"], "");
    assert!(!c.ok && c.stdout.contains("has no `cpu` entry"), "{}", c.stdout);

    // The search on OpenCL: a space of 4 is measured whole in the first round.
    let a = tune(&dir, &["--target", "opencl", "--auto", "--budget", "60s", "--kernel", "affine", "--retune"], "");
    assert!(a.ok, "tvm-tune --auto failed");
    assert!(a.stderr.contains("every candidate of the space is measured"), "{}", a.stderr);
    let e = &record(&dir)["targets"]["opencl"];
    assert_eq!(e["search"]["rounds"], 1, "{e}");
    assert_eq!(e["candidates"].as_array().unwrap().len(), 4);
    assert!(e["winner"]["t"].is_string(), "{e}");
    let c = tune(&dir, &["--check", "--target", "opencl", "--kernel", "affine"], "");
    assert!(c.ok && c.stdout.contains("affine (opencl): up to date (searched: 4 of 4"), "{}", c.stdout);
}

/// A kernel whose written space (7 × 7 candidates) is larger than a short budget
/// measures, a kernel without a block (the derived space), and a generic kernel.
const SEARCHED: &str = r#"use tvm::compute;

compute! {
    pub fn affine(x: f32[64, 256]) -> y: f32[64, 256] {
        y[i, j] = x[i, j] * 2.0 + 1.0;
    }

    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, tune!(w: 8, 4, 16, 32, 64, 128, 256));
        let (io, ii) = y.split(y.i, tune!(r: 1, 2, 4, 8, 16, 32, 64));
        y.parallel(io);
        y.vectorize(ji);
    }
}

compute! {
    pub fn mm(a: f32[128, 128], b: f32[128, 128]) -> c: f32[128, 128] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..128);
    }
}

compute! {
    pub fn scale<T: f32 | f64>(x: T[64, 256]) -> y: T[64, 256] {
        y[i, j] = x[i, j] * 3.0;
    }

    schedule!(cpu) {
        let (jo, ji) = y.split(y.j, tune!(w: 8, 16));
        y.vectorize(ji);
    }
}

fn main() {
    let tuned = affine::TUNED.iter().chain(mm::TUNED).chain(__scale_f32::scale::TUNED).chain(__scale_f64::scale::TUNED);
    for (target, dev, _, knobs) in tuned {
        println!("tuned {target} {dev} {knobs}");
    }
    let x = tvm::Tensor::from_vec((0..64 * 256).map(|i| (i % 13) as f32).collect(), [64, 256]).unwrap();
    let mut y = tvm::Tensor::zeros([64, 256]);
    affine::run(&tvm::Device::Cpu, &x, &mut y).unwrap();
    let ok = y.as_slice().iter().zip(x.as_slice()).all(|(y, x)| *y == x * 2.0 + 1.0);
    let mut z = tvm::Tensor::zeros([64, 256]);
    scale::run(&tvm::Device::Cpu, &x, &mut z).unwrap();
    let scaled = z.as_slice().iter().zip(x.as_slice()).all(|(z, x)| *z == x * 3.0);
    let a = tvm::Tensor::from_vec((0..128 * 128).map(|i| (i % 5) as f32 - 2.0).collect(), [128, 128]).unwrap();
    let mut c = tvm::Tensor::zeros([128, 128]);
    mm::run(&tvm::Device::Cpu, &a, &a, &mut c).unwrap();
    let (a, c) = (a.as_slice(), c.as_slice());
    let mm_ok = (0..128 * 128).all(|ij| {
        let (i, j) = (ij / 128, ij % 128);
        c[ij] == (0..128).map(|k| a[i * 128 + k] * a[k * 128 + j]).sum::<f32>()
    });
    println!("correct {ok} {scaled} {mm_ok}");
}
"#;

fn statuses(e: &serde_json::Value) -> Vec<String> {
    e["candidates"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap().to_string()).collect()
}

/// The record's winner is no slower than candidate 0 (the schedule as written, or the
/// derived one) in the figures of the same run: the winner is the fastest of a set that
/// holds candidate 0, and the head to head measures both again alternately.
fn no_worse_than_candidate_0(e: &serde_json::Value) {
    let cs = e["candidates"].as_array().unwrap();
    let w = e["winner"].as_object().expect("a winner");
    let t0 = cs[0]["median_s"].as_f64().expect("candidate 0 measured");
    let tw = cs.iter().find(|c| c["knobs"].as_object() == Some(w)).unwrap()["median_s"].as_f64().unwrap();
    assert!(tw <= t0, "the winner {tw} s, candidate 0 {t0} s: {e}");
}

#[test]
fn the_search_finds_a_winner_within_its_budget_and_generics_are_tuned_per_instance() {
    let dir = crate_with("tune_auto", SEARCHED);
    // The first round: candidate 0 and seven random ones, of which the bench's numbers 1,
    // 2 and 3 are made wrong, crashing and hanging.
    let r = tune(
        &dir,
        &["--auto", "--budget", "10s", "--seed", "3", "--kernel", "affine", "--timeout", "5"],
        "1=wrong,2=crash,3=hang",
    );
    assert!(r.ok, "tvm-tune --auto failed");
    let e = record(&dir)["targets"]["cpu"].clone();
    assert_eq!(e["search"]["seed"], 3, "{e}");
    assert_eq!(e["search"]["space_size"], 49);
    let st = statuses(&e);
    for s in ["wrong", "crashed", "timed_out"] {
        assert_eq!(st.iter().filter(|x| *x == s).count(), 1, "one {s} candidate: {st:?}");
    }
    assert_eq!(st[0], "ok", "candidate 0, the schedule as written, comes first: {st:?}");
    assert_eq!(e["candidates"][0]["knobs"]["w"], "8");
    // The budget: fewer than the 49 candidates, and no round started after it was spent
    // (the first always runs; the slack is that round and the head to head).
    assert!(st.len() < 49, "{st:?}");
    assert!(r.stderr.contains("search ended (the budget"), "{}", r.stderr);
    let first = e["tuning_seconds"].as_f64().unwrap();
    // A correct winner, which beat the schedule as written head to head or is it.
    let w = e["winner"].as_object().expect("a winner");
    let winner = e["candidates"].as_array().unwrap().iter().find(|c| c["knobs"].as_object() == Some(w)).unwrap();
    assert_eq!(winner["status"], "ok", "{winner}");
    no_worse_than_candidate_0(&e);

    // Again with the same key: the record's candidates are known, the model learns from
    // them, and the search goes on with new ones.
    let r2 = tune(&dir, &["--auto", "--budget", "15s", "--seed", "3", "--kernel", "affine"], "");
    assert!(r2.ok && r2.stderr.contains(&format!("{} candidates measured before", st.len())), "{}", r2.stderr);
    let e2 = record(&dir)["targets"]["cpu"].clone();
    let st2 = statuses(&e2);
    assert!(st2.len() > st.len(), "the search measured more: {st2:?}");
    assert_eq!(st2.iter().filter(|x| *x == "crashed").count(), 1, "the record's outcomes are kept");
    let second = e2["tuning_seconds"].as_f64().unwrap();
    assert!(second < 15.0 + first, "a round starts only when it fits: {second} s, a first round of {first} s");
    let w = e2["winner"].as_object().expect("a winner");
    let winner = e2["candidates"].as_array().unwrap().iter().find(|c| c["knobs"].as_object() == Some(w)).unwrap();
    assert_eq!(winner["status"], "ok", "{winner}");
    no_worse_than_candidate_0(&e2);
    let c = tune(&dir, &["--check", "--kernel", "affine"], "");
    assert!(c.ok && c.stdout.contains("affine (cpu): up to date (searched:"), "{}", c.stdout);

    // The derived space of a kernel without a block: its record's winner, if any, beat
    // the derived schedule head to head.
    let d = tune(&dir, &["--auto", "--budget", "15s", "--kernel", "mm"], "");
    assert!(d.ok, "tvm-tune --auto on the derived space failed");
    let m = record_of(&dir, "mm")["targets"]["cpu"].clone();
    assert_eq!(m["space"], "derived", "{m}");
    assert_eq!(m["candidates"][0]["status"], "ok", "candidate 0, the derived schedule: {m}");
    let mm_label = match m["winner"].as_object() {
        Some(w) => {
            let t = m["candidates"].as_array().unwrap().iter().find(|c| c["knobs"].as_object() == Some(w)).unwrap()
                ["median_s"]
                .as_f64()
                .unwrap();
            assert!(t < m["default_s"].as_f64().unwrap(), "{m}");
            no_worse_than_candidate_0(&m);
            Some(w.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap())).collect::<Vec<_>>().join(","))
        }
        None => {
            assert!(d.stdout.contains("no candidate beat the derived schedule"), "{}", d.stdout);
            None
        }
    };

    // A generic kernel: one record per instance, named as the instance's module.
    let g = tune(&dir, &["--kernel", "scale"], "");
    assert!(g.ok, "tvm-tune on a generic kernel failed");
    for (name, ty) in [("scale_f32", "f32"), ("scale_f64", "f64")] {
        let r = record_of(&dir, name);
        assert_eq!(r["kernel"], "scale");
        assert_eq!(r["targets"]["cpu"]["key"]["dtypes"][0], ty, "{r}");
        assert!(r["targets"]["cpu"]["winner"]["w"].is_string(), "{r}");
    }
    let c = tune(&dir, &["--check", "--kernel", "scale_f64"], "");
    assert!(c.ok && c.stdout.contains("scale_f64 (cpu): up to date (2 candidates"), "{}", c.stdout);

    // The macro applies every record: the winners are compiled in, and they run correctly.
    let out = Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["run", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target().join("tvm-tune/target"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let label: Vec<String> = w.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap())).collect();
    assert!(stdout.contains(&format!("tuned cpu cpu ")) && stdout.contains(&label.join(",")), "{stdout}");
    if let Some(l) = mm_label {
        assert!(stdout.contains(&l), "{stdout}");
    }
    for ty in ["f32", "f64"] {
        let w = record_of(&dir, &format!("scale_{ty}"))["targets"]["cpu"]["winner"]["w"].as_str().unwrap().to_string();
        assert!(stdout.lines().filter(|l| l.ends_with(&format!(" w={w}"))).count() >= 1, "{stdout}");
    }
    assert_eq!(stdout.lines().filter(|l| l.starts_with("tuned cpu")).count(), 3 + usize::from(m["winner"].is_object()));
    assert!(stdout.contains("correct true true true"), "{stdout}");
}

/// Kernels with nothing to tune, or without the dims to measure with.
const UNTUNABLE: &str = r#"use tvm::compute;

compute! {
    pub fn plain(x: f32[64]) -> y: f32[64] {
        y[i] = x[i] + 1.0;
    }
}

compute! {
    pub fn fixed(x: f32[64]) -> y: f32[64] {
        y[i] = x[i] * 2.0;
    }

    schedule!(cpu) {
        y.vectorize(y.i);
    }
}

compute! {
    pub fn sym<T: f32 | f64>(x: T[N]) -> y: T[N] {
        y[i] = x[i] * 3.0;
    }

    schedule!(cpu) {
        let (o, v) = y.split(y.i, tune!(w: 8, 16));
        y.vectorize(v);
    }
}

fn main() {}
"#;

#[test]
fn the_tuner_says_what_to_do() {
    let dir = crate_with("tune_messages", UNTUNABLE);
    // Symbolic dims are asked for before anything is built.
    let r = tune(&dir, &[], "");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("`sym_f32` (N), `sym_f64` (N); give them with --dims N=.."), "{}", r.stderr);
    assert!(!r.stderr.contains("building"), "{}", r.stderr);
    // A kernel without a block, or without knobs: what would tune it.
    let r = tune(&dir, &["--kernel", "plain"], "");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`plain` has no `schedule!(cpu)` block") && r.stderr.contains("--default-space"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("`--auto` searches it"), "{}", r.stderr);
    let r = tune(&dir, &["--kernel", "fixed"], "");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("`fixed` has no knobs") && r.stderr.contains("tune!(..)"), "{}", r.stderr);
    // The example is written in the kernel's own stage and axis.
    assert!(r.stderr.contains("`y.split(y.i, tune!(w: 8, 16, 32))`"), "{}", r.stderr);
    let r = tune(&dir, &["--kernel", "nosuch"], "");
    assert!(r.code == 2 && r.stderr.contains("no kernel `nosuch` in the sources given"), "{}", r.stderr);
    // The kernels that --kernel accepts, instances by their own names too, in source order.
    assert!(r.stderr.contains("(their kernels: plain, fixed, sym, sym_f32, sym_f64)"), "{}", r.stderr);
    // Nothing for OpenCL: a run that tunes nothing fails as a named kernel does, with the
    // way to tune them; a check finds nothing stale.
    let r = tune(&dir, &["--target", "opencl"], "");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no kernel with knobs for opencl") && r.stderr.contains("--auto"), "{}", r.stderr);
    let r = tune(&dir, &["--target", "opencl", "--check"], "");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("no record to check"), "{}", r.stderr);
    // A generic kernel's instance by its name, and the generated help and flag errors.
    let r = tune(&dir, &["--kernel", "sym_f64", "--check"], "");
    assert!(
        r.code == 1 && r.stdout.contains("sym_f64 (cpu): missing") && !r.stdout.contains("sym_f32"),
        "{}",
        r.stdout
    );
    let r = tune(&dir, &["--help"], "");
    assert_eq!(r.code, 0);
    for flag in
        ["--auto", "--budget <TIME>", "--seed <N>", "--dims <N=V,..>", "--default-space", "--check", "Exit status"]
    {
        assert!(r.stdout.contains(flag), "--help lists {flag}: {}", r.stdout);
    }
    for (args, flag) in [
        (&["--budget", "soon"][..], "--budget"),
        (&["--target", "tpu"][..], "--target"),
        (&["--dims", "N"][..], "--dims"),
    ] {
        let r = tune(&dir, args, "");
        assert!(r.code == 2 && r.stderr.contains(flag), "{args:?}: {}", r.stderr);
    }
}
