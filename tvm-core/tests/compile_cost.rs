//! Compile cost: the time `compute!` spends in tvm-core for each example kernel, the whole
//! expansion (`tvm_core::expand::compute`: parse, check every schedule, lower for cpu,
//! cuda and opencl, emit the CPU Rust, the OpenCL C and its host code, put the module
//! together), with the expansion cache off, and answered by the cache; and the part of it
//! the auto-scheduler's analysis takes (`autosched::derive` for cpu, cuda and opencl).
//! The kernels are the examples' and the no-schedule bench's. Printed, not
//! asserted (timings are not test results); see the README for the figures:
//! `cargo test --release -p tvm-rs-core --test compile_cost -- --nocapture`.
//! A debug build (the workspace's tests) times each step once: its figures are not the
//! compiler's, and what it checks is that every kernel expands without an error and
//! without dropping a derived schedule. `TVM_COST_BACKENDS=default` times the backends of
//! the `tvm` crate's default features instead (cpu, cuda, opencl: no WebGPU), what a
//! user's build expands.

use std::time::Instant;

/// The bodies of the `compute! { ... }` invocations of a Rust source file.
fn compute_blocks(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(p) = rest.find("compute! {") {
        let body = &rest[p + "compute! {".len()..];
        let mut depth = 1;
        let mut end = None;
        for (i, ch) in body.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end.expect("balanced braces");
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

/// Runs per median: 5 in a release build, where the figures mean something; 1 in a
/// debug build.
const RUNS: usize = if cfg!(debug_assertions) { 1 } else { 5 };

/// The median over `RUNS` runs of the auto-scheduler's analysis of `kernel` with no statement
/// written, for cpu, cuda and opencl together (milliseconds).
fn derive_ms(kernel: &tvm_core::frontend::Kernel) -> f64 {
    let targets: Vec<_> = ["cpu", "cuda", "opencl"].iter().map(|t| tvm_core::Target::parse(t).unwrap()).collect();
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            for target in &targets {
                let a = tvm_core::frontend::Application::new(&kernel.graph, target.clone());
                std::hint::black_box(tvm_core::autosched::derive(a.schedule(), &[]));
            }
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

/// The backends expanded: all of them, or those of the default features.
fn backends() -> tvm_core::expand::Backends {
    match std::env::var("TVM_COST_BACKENDS").as_deref() {
        Ok("default") => tvm_core::expand::Backends { cuda: true, opencl: true, webgpu: false },
        _ => tvm_core::expand::Backends::ALL,
    }
}

#[test]
fn expansion_time_per_example_kernel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.extend(std::fs::read_dir(dir.join("kernels")).unwrap().map(|e| e.unwrap().path()));
    names.push(dir.join("../benches/peers/noschedule.rs"));
    names.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    names.sort();
    if cfg!(debug_assertions) {
        println!("a debug build: one run each, not the compiler's figures (run it with --release)");
    }
    let mut kernels = 0;
    for path in names {
        let src = std::fs::read_to_string(&path).unwrap();
        for block in compute_blocks(&src) {
            let tokens: proc_macro2::TokenStream = block.parse().unwrap();
            // The median of `RUNS` expansions without the expansion cache; then of `RUNS`
            // that the cache answers (after one that fills it).
            let median = |cache: bool, out: &mut proc_macro2::TokenStream| {
                if cache {
                    std::env::remove_var("TVM_EXPANSION_CACHE");
                    tvm_core::expand::compute_for(tokens.clone(), backends());
                } else {
                    std::env::set_var("TVM_EXPANSION_CACHE", "off");
                }
                let mut times = Vec::new();
                for _ in 0..RUNS {
                    // Each run as the first: no proof of an earlier one remembered.
                    tvm_core::arith::forget_proofs();
                    let t = Instant::now();
                    *out = tvm_core::expand::compute_for(tokens.clone(), backends());
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(f64::total_cmp);
                times[RUNS / 2]
            };
            let mut out = proc_macro2::TokenStream::new();
            let ms = median(false, &mut out);
            let cached = median(true, &mut out);
            let text = out.to_string();
            assert!(!text.contains("compile_error"), "{}: {text}", path.display());
            // A derived schedule that code generation refuses falls back to the flat
            // defaults (a compiler bug, never the user's error): none of these may.
            assert!(
                !text.contains("The derived statements were dropped"),
                "{}: a derived schedule fell back: {text}",
                path.display()
            );
            // A generic kernel is named by its first instance (each expands like a kernel).
            let first = tvm_core::expand::generic::instances(&tokens).unwrap().swap_remove(0).1;
            let kernel = tvm_core::frontend::parse_kernel(first).unwrap();
            let derive = derive_ms(&kernel);
            println!(
                "{:<40} {:>8.1} ms, from the cache {:>6.1} ms, deriving {:>5.1} ms  ({} bytes of expansion)",
                format!("{} ({})", kernel.name, path.file_name().unwrap().to_string_lossy()),
                ms,
                cached,
                derive,
                text.len()
            );
            kernels += 1;
        }
    }
    assert!(kernels >= 5, "the examples define the kernels of the README");
}
