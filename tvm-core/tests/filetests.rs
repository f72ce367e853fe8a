//! Pass-level tests, one file each (Cranelift's filetests, TVM's before/after tests): a
//! file under `tests/filetests/<pass>/` holds the pass to run, the input TIR and the
//! expected output. The runner reads the input (`tir::parser`), verifies it, runs the
//! pass, verifies the result and compares its text with the expected output. Blessed
//! with `UPDATE_EXPECT=1 cargo test -p tvm-rs-core --test filetests`, which rewrites what
//! follows each file's `; output:` line. `tests/filetests/README.md` describes the format.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tvm_core::driver::build_schedule;
use tvm_core::frontend::parse_str;
use tvm_core::lower::lower_traced;
use tvm_core::passes;
use tvm_core::tir::parser::parse_func;
use tvm_core::tir::printer::{print_expr, print_func};
use tvm_core::tir::verify::{verify, Phase};
use tvm_core::tir::{Expr, PrimFunc};
use tvm_core::Target;

/// The line after which a file holds its expected output.
const MARKER: &str = "; output:";

/// The passes that must have files (the CPU passes and the GPU passes of the pipeline).
const REQUIRED: [&str; 13] = [
    "partition_loops",
    "unswitch_loops",
    "hoist_tail_guards",
    "vectorize_loops",
    "unroll_loops",
    "fuse_loops",
    "reuse_output",
    "tree_combine",
    "transpose_locals",
    "forward_stores",
    "split_host_device",
    "inject_thread_sync",
    "lower_cross_thread_reduction",
];

/// What a pass made of its input: a function (with notes, as `;` lines, for what it
/// reports besides), or the error it reported.
enum Outcome {
    Func(Box<PrimFunc>, Vec<String>),
    Error(String),
}

/// The phase a function is in: flattened if it verifies as such (one index per access,
/// no `realize`), else scheduled.
fn phase_of(f: &PrimFunc) -> Phase {
    if verify(f, Phase::Flattened).is_ok() {
        Phase::Flattened
    } else {
        Phase::Scheduled
    }
}

/// The phase `pass` takes its input in (and `f`, its input, must verify in).
fn input_phase(pass: &str, f: &PrimFunc) -> Phase {
    match pass {
        "reuse_output" | "flatten_storage" => Phase::Scheduled,
        "simplify" => phase_of(f),
        _ => Phase::Flattened,
    }
}

/// The phase `pass` leaves its output in, given its input's.
fn output_phase(pass: &str, input: Phase) -> Phase {
    match pass {
        "reuse_output" | "simplify" => input,
        _ => Phase::Flattened,
    }
}

/// Runs `pass` on `f`.
fn run_pass(pass: &str, f: PrimFunc) -> Result<Outcome, String> {
    use passes::*;
    let func = |f| Outcome::Func(Box::new(f), Vec::new());
    Ok(match pass {
        "partition_loops" => func(partition_loops::partition_loops(f)),
        "unswitch_loops" => func(unswitch_loops::unswitch_loops(f)),
        "unroll_loops" => func(unroll_loops::unroll_loops(f)),
        "fuse_loops" => func(fuse_loops::fuse_loops(f)),
        "tree_combine" => func(tree_combine::tree_combine(f)),
        "forward_stores" => func(forward_stores::forward_stores(f)),
        "transpose_locals" => func(transpose_locals::transpose_locals(f)),
        "hoist_tail_guards" => func(hoist_tail_guards::hoist_tail_guards(f)),
        "hoist_shared_allocations" => func(hoist_shared_allocations::hoist_shared_allocations(f)),
        "inject_thread_sync" => func(inject_thread_sync::inject_thread_sync(f)),
        "reuse_output" => func(reuse_output::reuse_output(f)),
        "flatten_storage" => func(flatten_storage::flatten_storage(f)),
        "simplify" => func(simplify::simplify(f)),
        "vectorize_loops" => {
            let (f, dropped) = vectorize_loops::vectorize_loops(f);
            let notes = dropped
                .iter()
                .map(|(v, why)| format!("; not vectorized: {}: {}", print_expr(&Expr::var(v)), why.reason()))
                .collect();
            Outcome::Func(Box::new(f), notes)
        }
        "split_host_device" => match split_host_device::split_host_device(f) {
            Ok(f) => func(f),
            Err(tags) => {
                let tags: Vec<&str> = tags.iter().map(|t| t.name()).collect();
                Outcome::Error(format!("the launch extent of {} varies", tags.join(", ")))
            }
        },
        other => return Err(format!("unknown pass `{other}`")),
    })
}

/// The pipeline step after which a pass run inside another shows its work, for passes
/// whose files start from a `compute!` kernel: `lower_cross_thread_reduction` is the
/// part of `schedule_ops` that lowers a reduction bound to a thread axis.
fn dsl_step(pass: &str) -> Option<&'static str> {
    (pass == "lower_cross_thread_reduction").then_some("schedule_ops")
}

/// A file, split into its parts.
struct File {
    /// The header and input, up to and including the marker line.
    head: String,
    pass: String,
    target: Option<String>,
    /// The input, without its comment lines and the blank lines around it.
    input: String,
    /// What follows the marker, if there is one.
    expected: Option<String>,
}

fn read(text: &str) -> Result<File, String> {
    let (head, expected) = match text.find(&format!("\n{MARKER}")) {
        Some(at) => {
            let end = text[at + 1..].find('\n').map_or(text.len(), |n| at + 1 + n + 1);
            (text[..end].to_string(), Some(text[end..].to_string()))
        }
        None => (text.to_string(), None),
    };
    let (mut pass, mut target) = (None, None);
    for line in head.lines().take_while(|l| l.starts_with(';')) {
        let line = line.trim_start_matches(';').trim();
        if let Some(p) = line.strip_prefix("pass:") {
            pass = Some(p.trim().to_string());
        } else if let Some(t) = line.strip_prefix("target:") {
            target = Some(t.trim().to_string());
        }
    }
    let pass = pass.ok_or("no `; pass: NAME` line at the top")?;
    let input: Vec<&str> = head.lines().filter(|l| !l.trim_start().starts_with(';')).collect();
    let input = input.join("\n").trim_matches('\n').to_string() + "\n";
    Ok(File { head, pass, target, input, expected })
}

/// The text the file's pass makes of its input (what should follow the marker).
fn actual(file: &File) -> Result<String, String> {
    let target = file.target.as_deref().map(|t| Target::parse(t).map_err(|e| format!("target: {e}"))).transpose()?;
    if let Some(step) = dsl_step(&file.pass) {
        let target = target.ok_or("a `compute!` input needs a `; target:` line")?;
        return after_step(&file.input, &target, step);
    }
    let mut f = parse_func(&file.input).map_err(|e| format!("input, {e}"))?;
    let canonical = print_func(&f);
    if canonical != file.input {
        return Err(format!("the input is not as the printer writes it; it reads as:\n{canonical}"));
    }
    if let Some(t) = target {
        if t.kind != f.target.kind {
            return Err(format!("`; target: {}` is not a {} target", t.text, f.target.kind.name()));
        }
        f.target = t;
    }
    let phase = input_phase(&file.pass, &f);
    verify(&f, phase).map_err(|e| format!("the input does not verify: {}", e.join("; ")))?;
    let pass = file.pass.clone();
    let outcome = catch_unwind(AssertUnwindSafe(move || run_pass(&pass, f)))
        .map_err(|e| format!("the pass panicked: {}", panic_text(&e)))??;
    Ok(match outcome {
        Outcome::Error(e) => format!("; error: {e}\n"),
        Outcome::Func(g, notes) => {
            let phase = output_phase(&file.pass, phase);
            verify(&g, phase).map_err(|e| format!("the output does not verify: {}", e.join("; ")))?;
            let notes: String = notes.iter().map(|n| format!("{n}\n")).collect();
            let text = print_func(&g);
            if text == canonical {
                format!("{notes}; unchanged\n")
            } else {
                format!("{notes}{text}")
            }
        }
    })
}

/// The function after pipeline step `step` of the `compute!` kernel `src`.
fn after_step(src: &str, target: &Target, step: &str) -> Result<String, String> {
    let k = parse_str(src).map_err(|e| format!("the kernel does not parse: {e:?}"))?;
    let sch = build_schedule(&k, target).map_err(|e| format!("the schedule is rejected: {e:?}"))?;
    let mut out = None;
    lower_traced(&sch, &mut |ev| {
        if ev.pass == step && out.is_none() {
            out = ev.func.map(|f| (print_func(f), verify(f, Phase::Scheduled)));
        }
    })
    .map_err(|e| format!("lowering failed: {e:?}"))?;
    let (text, ok) = out.ok_or(format!("no step `{step}` in the pipeline"))?;
    ok.map_err(|e| format!("the output does not verify: {}", e.join("; ")))?;
    Ok(text)
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// The lines of `expected` and `actual` that differ, marked `-` and `+` (a longest
/// common subsequence of lines; the files are small).
fn diff(expected: &str, actual: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("   {}\n", a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!(" - {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!(" + {}\n", b[j]));
            j += 1;
        }
    }
    out
}

/// Every `.tir` file under `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if p.extension().is_some_and(|x| x == "tir") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn filetests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let bless = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    // `FILETEST=fuse_loops` runs the files whose path contains that text.
    let only = std::env::var("FILETEST").unwrap_or_default();
    let all: Vec<PathBuf> = files(&root).into_iter().filter(|p| p.to_string_lossy().contains(&only)).collect();
    for path in &all {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let result = read(&text).and_then(|file| {
            let dir = path.parent().and_then(|d| d.file_name()).map(|d| d.to_string_lossy().to_string());
            if dir.as_deref() != Some(file.pass.as_str()) {
                return Err(format!("a `{}` test belongs in `{}/`", file.pass, file.pass));
            }
            covered.insert(file.pass.clone());
            let got = actual(&file)?;
            if file.expected.as_deref() == Some(got.as_str()) {
                return Ok(());
            }
            if bless {
                let head = if file.expected.is_some() {
                    file.head.clone()
                } else {
                    format!("{}\n{MARKER}\n", file.head.trim_end())
                };
                std::fs::write(path, format!("{head}{got}")).unwrap();
                return Ok(());
            }
            match &file.expected {
                None => Err(format!("no `{MARKER}` line (UPDATE_EXPECT=1 writes the output):\n{got}")),
                Some(want) => Err(format!("the output differs (- expected, + actual):\n{}", diff(want, &got))),
            }
        });
        if let Err(e) = result {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} filetests failed (bless an intended change with UPDATE_EXPECT=1):\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|p| only.is_empty() && !covered.contains(*p)).collect();
    assert!(missing.is_empty(), "passes without filetests: {missing:?}");
}
