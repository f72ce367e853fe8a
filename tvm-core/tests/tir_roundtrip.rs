//! The TIR text reads back exactly: every corpus and example kernel, lowered for the CPU,
//! CUDA and OpenCL with its own schedule and with the default one, after every pass of the
//! pipeline: `print_func(parse_func(print_func(f)))` is `print_func(f)`, and the function
//! read back verifies. The final function read back also computes what the original
//! computes (the interpreter on both, same inputs, every tensor bit for bit), for every
//! kernel small enough to interpret. Where the text and the parser disagree, the first
//! differing line is shown.

#[path = "support/registry.rs"]
mod registry;

use std::path::Path;
use tvm_core::driver::build_schedule;
use tvm_core::dtype::DType;
use tvm_core::frontend::parse_str;
use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::lower::lower_traced;
use tvm_core::schedule::Schedule;
use tvm_core::tir::parser::{parse_expr, parse_func};
use tvm_core::tir::printer::{print_expr, print_func};
use tvm_core::tir::verify::{verify, Phase};
use tvm_core::tir::{Expr, Param, PrimFunc};
use tvm_core::Target;

/// Every kernel: the corpus, and every `compute!` of every file of `examples/kernels/`
/// (read when the test runs, so a new example is covered without an edit here).
fn kernels() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = corpus().into_iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("examples/kernels").map(|e| e.unwrap().path()).collect();
    files.sort();
    for p in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let text = std::fs::read_to_string(&p).unwrap();
        for (k, block) in invocations(&text).into_iter().enumerate() {
            let stem = p.file_stem().unwrap().to_string_lossy();
            let name = if k == 0 { format!("example {stem}") } else { format!("example {stem} #{}", k + 1) };
            out.push((name, instance_f64(block)));
        }
    }
    out
}

/// The corpus files of the kernel registry: (key, text).
fn corpus() -> Vec<(&'static str, &'static str)> {
    registry::FILES.iter().filter(|(_, path, _)| path.contains("/corpus/")).map(|(k, _, t)| (*k, *t)).collect()
}

/// A kernel generic over its element type (`fn axpy<T: Float>`) as its `f64` instance
/// (literals of a type other than the default `f32`); any other kernel as it is.
fn instance_f64(src: &str) -> String {
    let Some(open) = src.find("<T:") else { return src.to_string() };
    let close = open + src[open..].find('>').expect("closing `>`");
    let src = format!("{}{}", &src[..open], &src[close + 1..]);
    let mut out = String::new();
    let mut word = String::new();
    for c in src.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        out.push_str(if word == "T" { "f64" } else { &word });
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// The `compute! { .. }` invocations of a Rust file (each starts a line).
fn invocations(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("compute!") || line.starts_with("tvm::compute!") {
            let rest = &text[at..];
            let mut depth = 0;
            for (i, c) in rest.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => {
                        out.push(&rest[..=i]);
                        break;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        }
        at += line.len();
    }
    out
}

/// The schedules of `src` for `target`: its own (or borrowed) one and the default.
fn schedules(src: &str, target: &Target) -> Vec<(&'static str, Schedule)> {
    let k = parse_str(src).unwrap_or_else(|e| panic!("kernel does not parse: {e:#?}\n{src}"));
    let mut out = vec![("default", Schedule::default_for(k.graph.clone(), target.clone()))];
    if let Ok(s) = build_schedule(&k, target) {
        out.push(("own", s));
    }
    out
}

/// `a` and `b` (texts) are equal, or the first line where they differ.
fn first_difference(a: &str, b: &str) -> Option<String> {
    if a == b {
        return None;
    }
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let k = (0..la.len().max(lb.len())).find(|&k| la.get(k) != lb.get(k)).unwrap_or(0);
    Some(format!("line {}:\n  printed:   {:?}\n  read back: {:?}", k + 1, la.get(k), lb.get(k)))
}

/// The problem with reading `f`'s text back, if any.
fn round_trip(f: &PrimFunc, phase: Phase) -> Result<PrimFunc, String> {
    let text = print_func(f);
    let g = parse_func(&text).map_err(|e| {
        let line = text.lines().nth(e.line.saturating_sub(1)).unwrap_or("");
        format!("{e}\n  {line}")
    })?;
    if let Some(d) = first_difference(&text, &print_func(&g)) {
        return Err(format!("prints differently: {d}"));
    }
    verify(&g, phase).map_err(|e| format!("does not verify: {}", e.join("; ")))?;
    Ok(g)
}

const TARGETS: [&str; 3] = ["cpu", "cuda", "opencl"];

#[test]
fn every_pass_output_of_every_kernel_reads_back() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, src) in kernels() {
        for t in TARGETS {
            let target = Target::parse(t).unwrap();
            for (which, sch) in schedules(&src, &target) {
                let mut flattened = false;
                let lowered = lower_traced(&sch, &mut |ev| {
                    flattened |= ev.pass == "flatten_storage";
                    let Some(f) = ev.func else { return };
                    let phase = if flattened { Phase::Flattened } else { Phase::Scheduled };
                    checked += 1;
                    if let Err(e) = round_trip(f, phase) {
                        failures.push(format!("{name} ({t}, {which} schedule), after `{}`: {e}", ev.pass));
                    }
                });
                if let Err(e) = lowered {
                    panic!("{name} ({t}, {which} schedule) does not lower: {e:?}");
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} functions do not read back:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 28 kernels, 3 targets, one or two schedules, more than ten passes each.
    assert!(checked > 27 * 3 * 10, "only {checked} functions checked");
}

/// Inputs for `f`: every dim 7 (a tail for any vector or tile), floats in [-2, 2),
/// integers in 1..4 (valid rows of a table, non-zero divisors), outputs zero.
fn arguments(f: &PrimFunc) -> Vec<ArgValue> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    let dim = |e: &Expr| e.as_int().unwrap_or(7) as usize;
    f.params
        .iter()
        .map(|p| match p {
            Param::Tensor { buffer, shape, is_output } => {
                let shape: Vec<usize> = shape.iter().map(dim).collect();
                let n = shape.iter().product::<usize>();
                let d = buffer.dtype();
                let values: Vec<f64> = (0..n)
                    .map(|_| match (is_output, d.is_float()) {
                        (true, _) => 0.0,
                        (false, true) => next() * 4.0 - 2.0,
                        (false, false) => 1.0 + (next() * 3.0).floor(),
                    })
                    .collect();
                ArgValue::Tensor(HostTensor::from_f64(d, shape, &values).unwrap())
            }
            Param::Scalar(v) => ArgValue::Scalar(ScalarValue::from_f64(v.dtype(), 1.5).unwrap()),
        })
        .collect()
}

/// What `f` computes on [`arguments`]: every tensor after the run (as bits), or the error.
fn outcome(f: &PrimFunc) -> Result<Vec<Vec<u64>>, String> {
    let mut args = arguments(f);
    run(f, &mut args).map_err(|e| e.to_string())?;
    Ok(args
        .iter()
        .filter_map(|a| a.as_tensor())
        .map(|t| t.to_f64_vec().iter().map(|x| x.to_bits()).collect())
        .collect())
}

#[test]
fn functions_read_back_compute_the_same() {
    // Every kernel small enough for the interpreter (every dim 7 where it is symbolic),
    // with its own schedule, on every target: CPU loops, vectors, lets and prefetches,
    // GPU kernels with shared memory, barriers and warp shuffles, checked reads.
    let mut ran = 0;
    for (name, src) in kernels() {
        for t in TARGETS {
            let target = Target::parse(t).unwrap();
            let (_, sch) = schedules(&src, &target).pop().unwrap();
            let f = tvm_core::driver::lower(&sch).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let elements: usize = arguments(&f).iter().filter_map(|a| a.as_tensor()).map(|t| t.numel()).sum();
            // Up to 30 000 elements in all: the interpreter runs GPU kernels thread by
            // thread, and the larger kernels took minutes of the test run. Every kernel's
            // text is still read back after every pass by the test above.
            if elements > 30_000 {
                continue;
            }
            let g = round_trip(&f, Phase::Flattened).unwrap_or_else(|e| panic!("{name} ({t}): {e}"));
            let (a, b) = (outcome(&f), outcome(&g));
            assert!(a.is_ok(), "{name} ({t}) does not run: {a:?}");
            assert!(a == b, "{name} ({t}): the function read back computes something else");
            ran += 1;
        }
    }
    assert!(ran >= 60, "only {ran} functions ran");
}

#[test]
fn embedding_checks_read_back_with_their_sites() {
    let src = corpus().into_iter().find(|(n, _)| *n == "embedding").unwrap().1;
    let (_, sch) = schedules(src, &Target::cpu()).pop().unwrap();
    let f = tvm_core::driver::lower(&sch).unwrap();
    assert!(!f.checks.is_empty(), "the embedding has checks");
    let g = parse_func(&print_func(&f)).unwrap();
    assert_eq!(g.checks, f.checks);
}

#[test]
fn literals_keep_their_types() {
    // Alone, a literal is an `i64` or an `f32` unless its suffix says otherwise.
    let alone = [
        (Expr::typed_int(7, DType::I32), "7i32"),
        (Expr::typed_int(-1, DType::U64), "18446744073709551615u64"),
        (Expr::typed_int(i64::MIN, DType::I64), "-9223372036854775808"),
        (Expr::float(0.1, DType::F64), "0.1f64"),
        (Expr::float(f64::NEG_INFINITY, DType::F16), "-inff16"),
        (Expr::float(1e-5, DType::F32), "1e-5"),
        (Expr::cast(DType::F32, Expr::typed_int(3, DType::U8)), "f32(3u8)"),
        (Expr::cast(DType::F64, Expr::float(0.5, DType::F32)), "f64(0.5)"),
        // A negated literal reads back as a negative literal, where the type has one.
        (Expr::Neg(Box::new(Expr::float(-0.0, DType::F64))), "-(-0.0f64)"),
        (Expr::Neg(Box::new(Expr::typed_int(-1, DType::U64))), "-18446744073709551615u64"),
    ];
    for (e, text) in alone {
        assert_eq!(print_expr(&e), text);
        let back = parse_expr(text).unwrap_or_else(|err| panic!("{text}: {err}"));
        assert_eq!(back.dtype(), e.dtype(), "{text}");
        assert_eq!(print_expr(&back), text);
    }
    // In a function, the other operand and the stored buffer say the literal's type.
    let text = "@func cpu f(a: i32[4] global out, b: f64[4] global out, x: i32)\n  a[0] = x + 1\n  a[1] = 2 - x\n  b[0] = 0.5\n  b[1] = f64(x) * 0.25\n";
    let f = parse_func(text).unwrap();
    assert_eq!(print_func(&f), text);
    let types: Vec<String> = (0..4)
        .map(|k| match &f.body {
            tvm_core::tir::Stmt::Seq(v) => match &v[k] {
                tvm_core::tir::Stmt::Store { value, .. } => value.dtype().to_string(),
                s => panic!("{s}"),
            },
            s => panic!("{s}"),
        })
        .collect();
    assert_eq!(types, ["i32", "i32", "f64", "f64"]);
}

#[test]
fn errors_name_line_and_column() {
    let bad = [
        ("@func cpu f(a: f32[4] global)\n  a[0] = b[0]\n", "2:10: unknown buffer `b`"),
        ("@func cpu f(a: f32[4] global)\n  for i in sideways(0, 4):\n    a[i] = 0.0\n", "2:12: unknown loop kind"),
        ("@func cpu f(a: f32[4] global)\n  a[0] = 1\n", "2:10: store of i64 into `a` of f32"),
        (
            "@func cpu f(a: f32[4] global)\n  if 1 < 2:\n  a[0] = 1.0\n",
            "3:3: expected a statement indented by 4 spaces",
        ),
        ("@func cpu f(a: f32[4] global, n: i32)\n  a[n + 1i64] = 0.0\n", "2:7: operands of `+` have different types"),
    ];
    for (text, want) in bad {
        let e = parse_func(text).expect_err(text);
        assert!(e.to_string().starts_with(want), "{text}: got `{e}`, want `{want}...`");
    }
}
