//! The explorer's command line: `--text` prints what the page shows; bad arguments are
//! an error that names the flag, with the usage, never a panic.

use std::path::Path;
use std::process::Command;

fn explorer(args: &[&str]) -> (i32, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-explorer")).current_dir(root).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn text_mode_shows_every_stage_for_every_target() {
    let (code, out, err) = explorer(&["tvm-core/tests/corpus/matmul_tiled.rs", "--text"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "════ kernel matmul",
        "── tensor expressions",
        "@graph matmul",
        "── target cpu",
        "── target cuda",
        "── target opencl",
        "── target webgpu",
        "schedule: the kernel's `schedule!(cpu)` block",
        "schedule: no block of its own: the `schedule!(cuda)` block",
        "option: target \"cuda -arch=sm_80\"",
        "schedule_ops",
        "vectorize_loops",
        "@func cpu matmul",
        "fn __tvm_cpu_matmul",
        "__global__",
        "__kernel",
        "@compute @workgroup_size",
        "metal (MSL from the WGSL):",
        "kernel void matmul_kernel0",
        "launch matmul_kernel0: grid",
        "threads: the thread pool over io",
        "trips",
    ] {
        assert!(out.contains(want), "`{want}` missing from the text output");
    }
    assert!(!out.contains("__tvm_mark"), "the Rust printed without its markers");
    // The header says how a loop's range reads, and the TIR prints loops that way.
    assert!(out.starts_with("note: TIR loops print `for v in serial(min, extent)`"), "{:?}", out.lines().next());
    assert!(out.contains(" in serial(0, "), "a loop from 0");
    // Passes marked changed or unchanged, with their ±lines.
    assert!(out.lines().any(|l| l.contains("simplify") && l.contains("* +")), "a changed pass");
}

#[test]
fn dims_make_the_cost_view_numeric() {
    let (code, out, err) = explorer(&[
        "tvm-core/tests/corpus/matmul_tiled.rs",
        "--text",
        "--dim",
        "M=64",
        "--dim",
        "N=64",
        "--dim",
        "K=64",
    ]);
    assert_eq!(code, 0, "{err}");
    // The CPU loop nest of a 64³ matmul: 2 * 64³ = 524288 FLOPs at the root loop.
    let root = out
        .lines()
        .find(|l| l.trim_start().starts_with("for io in parallel") && l.contains("[trips"))
        .expect("the root loop");
    assert!(root.contains("trips 2,") && root.contains("FLOPs 524288,"), "{root}");
}

#[test]
fn bad_arguments_are_errors_with_the_usage() {
    for (args, flag) in [
        (&[][..], "<FILE.rs>"),
        (&["x.rs"][..], "--out"),
        (&["--bogus"][..], "--bogus"),
        (&["x.rs", "--dim", "M"][..], "--dim"),
        (&["x.rs", "--dim", "M=x", "--text"][..], "--dim"),
    ] {
        let (code, _, err) = explorer(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("Usage: tvm-explorer") || err.contains("try '--help'"), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: the error names `{flag}`: {err}");
    }
    let (code, out, _) = explorer(&["--help"]);
    assert_eq!(code, 0);
    for flag in ["--out <PAGE.html>", "--text", "--dim <NAME=VALUE>"] {
        assert!(out.contains(flag), "--help lists `{flag}`: {out}");
    }
    let (code, _, err) = explorer(&["no/such/file.rs", "--text"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read `no/such/file.rs`"), "{err}");
    // A file that is not Rust: reported on the page, not a crash.
    let (code, out, err) = explorer(&["README.md", "--text"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("error: README.md: cannot parse the file"), "{out}");
}

#[test]
fn a_kernel_without_a_schedule_shows_what_was_derived_and_why() {
    let (code, out, err) = explorer(&["tvm-core/tests/corpus/softmax_default.rs", "--text"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "schedule: derived by the auto-scheduler: the kernel has no `schedule!` block",
        // The rule per stage, with its reason.
        "derived: y (rows): `y` reads the row reductions",
        "derived: m (rows): a row reduction computed per row of `y`",
        // The schedule as source, as `softmax::schedule("cpu")` returns it.
        "schedule!(cpu) {",
        "y.parallel(y.i);",
        // On GPUs: a block per row.
        "y.bind(y.i, block.x);",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
    assert!(!out.contains("warning: the derived schedule fell back"), "{out}");
}

#[test]
fn kernel_selects_the_kernels_to_run() {
    let file = "examples/kernels/softmax_stats.rs";
    let (code, out, err) = explorer(&[file, "--text", "--kernel", "stats_online"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("════ kernel stats_online") && !out.contains("════ kernel stats_two_pass"), "{out}");
    // A name no file defines is an error that lists the ones they do.
    let (code, out, err) = explorer(&[file, "--text", "--kernel", "stats_online", "--kernel", "stats"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("no kernel `stats`") && err.contains("stats_two_pass"), "{err}");
}

/// A reader that stops early (`| head`) ends the text output, not with a panic.
#[test]
fn a_closed_pipe_ends_the_text_quietly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tvm-explorer"))
        .current_dir(root)
        .args(["tvm-core/tests/corpus/matmul_tiled.rs", "--text"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    // Closed before the explorer has built anything to print.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}
