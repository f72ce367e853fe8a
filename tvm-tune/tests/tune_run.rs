//! The tuner end to end on a small crate: candidates measured in child processes on the
//! CPU and on OpenCL (PoCL in CI), a wrong, a crashing and a hanging candidate rejected
//! (`TVM_TUNE_FAULTS`), the record written, `--check` reporting it missing, up to date
//! and stale, a value added to a knob measuring only the new candidate, and the macro
//! compiling the winner into the crate.

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

/// A crate holding KERNEL, in a directory of its own.
fn user_crate(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\ntvm = {{ path = {:?} }}\n\n[workspace]\n",
        workspace().to_string_lossy()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), KERNEL).unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn tune(dir: &Path, args: &[&str], faults: &str) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-tune"))
        .args(args)
        .arg(dir)
        .env("TVM_TUNE_FAULTS", faults)
        .output()
        .expect("tvm-tune runs");
    let run = Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!("tvm-tune {args:?}:\n{}{}", run.stdout, run.stderr);
    run
}

fn record(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("tvm-tuning/affine.json")).expect("a record");
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

/// Candidate 0 runs, 1 is wrong, 2 crashes, 3 hangs (killed at the 10 s timeout, which
/// leaves a loaded machine time to measure the others).
fn tune_with_faults(dir: &Path, target: &str, knob: &str, values: [&str; 4]) {
    let r = tune(dir, &["--target", target, "--timeout", "10"], "1=wrong,2=crash,3=hang");
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

    // A kernel without a block, over the derived space: a record of that space, whose
    // winner beats the default schedule it replaces.
    let d = tune(&dir, &["--default-space", "--kernel", "mm"], "");
    assert!(d.ok, "tvm-tune --default-space failed");
    let mm_rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tvm-tuning/mm.json")).unwrap()).unwrap();
    let e = &mm_rec["targets"]["cpu"];
    assert_eq!(e["space"], "derived", "{e}");
    assert_eq!(e["candidates"].as_array().unwrap().len(), 27);
    let mm_winner = e["winner"].as_object().expect("the derived space beats the naive default");
    let mm_label: Vec<String> = mm_winner.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap())).collect();
    let c = tune(&dir, &["--check", "--default-space"], "");
    assert!(c.ok && c.stdout.contains("mm (cpu): up to date (27 candidates"), "{}", c.stdout);

    // Back as it was: the macro compiles the winners into the crate, and they run correctly.
    let winner = record(&dir)["targets"]["cpu"]["winner"]["w"].as_str().unwrap().to_string();
    let out = Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["run", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--")
        .arg("cpu")
        .env("CARGO_TARGET_DIR", workspace().join("target/tvm-tune/target"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("tuned cpu cpu ")) && stdout.contains(&format!("w={winner}")), "{stdout}");
    assert!(stdout.contains(&format!("tuned cpu cpu ")) && stdout.contains(&mm_label.join(",")), "{stdout}");
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
}
