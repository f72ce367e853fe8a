//! Compile cost: the time `compute!` spends in tvm-core for each example kernel (parse,
//! check every schedule, lower for cpu, cuda and opencl, emit the CPU Rust). Printed,
//! not asserted (timings are not test results); see the README for the figures:
//! `cargo test --release -p tvm-core --test compile_cost -- --nocapture`.

use std::time::Instant;
use tvm_core::frontend::{check_schedules, lower_for, parse_str};
use tvm_core::Target;

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

#[test]
fn expansion_time_per_example_kernel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.extend(std::fs::read_dir(dir.join("kernels")).unwrap().map(|e| e.unwrap().path()));
    names.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    names.sort();
    let mut kernels = 0;
    for path in names {
        let src = std::fs::read_to_string(&path).unwrap();
        for block in compute_blocks(&src) {
            let t = Instant::now();
            let k = parse_str(&block).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            assert!(check_schedules(&k).is_empty(), "{}", path.display());
            let mut cpu = None;
            for target in [Target::cpu(), Target::cuda(), Target::opencl()] {
                // As `compute!` lowers it (a borrowed GPU block that does not fit this
                // target falls back to the default schedule).
                let f =
                    lower_for(&k, &target).unwrap_or_else(|e| panic!("{}: {:?}: {e:?}", path.display(), target.kind));
                if target.is_cpu() {
                    cpu = Some(f);
                }
            }
            let code = tvm_core::codegen::rust::emit_rust(&cpu.unwrap()).expect("the CPU code is emitted");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            println!(
                "{:<40} {:>8.1} ms  ({} bytes of Rust)",
                format!("{} ({})", k.name, path.file_name().unwrap().to_string_lossy()),
                ms,
                code.to_string().len()
            );
            kernels += 1;
        }
    }
    assert!(kernels >= 5, "the examples define the kernels of the README");
}
