//! A program that uses `tvm` links the runtime alone: the normal dependencies of the
//! facade (what a user's binary links; the proc macro is a build-time dependency) hold
//! no parser and no compiler, unless the program asks for the compiler (feature
//! `compiler`, for build scripts and tools).

use std::process::Command;

/// The crates of `cargo tree -e normal,no-proc-macro -p tvm-rs` with `features`.
fn linked_crates(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["tree", "-e", "normal,no-proc-macro", "-p", "tvm-rs", "--prefix", "none", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if !features.is_empty() {
        c.args(["--features", &features.join(",")]);
    }
    let out = c.output().expect("cargo runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

const COMPILER_CRATES: [&str; 4] = ["syn", "quote", "proc-macro2", "tvm-rs-core"];

#[test]
fn the_default_build_links_no_compiler() {
    let crates = linked_crates(&[]);
    assert!(crates.iter().any(|c| c == "tvm-rs-runtime"), "{crates:?}");
    assert!(crates.iter().any(|c| c == "opencl3"), "the OpenCL backend is a default feature: {crates:?}");
    for banned in COMPILER_CRATES {
        assert!(!crates.iter().any(|c| c == banned), "a program using tvm links `{banned}`: {crates:?}");
    }
}

#[test]
fn the_compiler_feature_brings_the_compiler() {
    // The control: the same query sees the compiler when it is asked for.
    let crates = linked_crates(&["compiler"]);
    for wanted in COMPILER_CRATES {
        assert!(crates.iter().any(|c| c == wanted), "`{wanted}` missing: {crates:?}");
    }
}

#[test]
fn webgpu_is_opt_in_and_links_no_compiler() {
    assert!(!linked_crates(&[]).iter().any(|c| c == "wgpu"), "wgpu is in the default build");
    let crates = linked_crates(&["webgpu"]);
    assert!(crates.iter().any(|c| c == "wgpu"), "the feature brings wgpu: {crates:?}");
    for banned in COMPILER_CRATES {
        assert!(!crates.iter().any(|c| c == banned), "a program using WebGPU links `{banned}`: {crates:?}");
    }
}
