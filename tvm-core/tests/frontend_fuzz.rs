//! The frontend never panics: mutated token streams of the test kernels (tokens
//! deleted, duplicated, swapped, replaced or inserted) and random schedule blocks go
//! through `parse_kernel`, `check_schedules` and `build_schedule` for every target,
//! under `catch_unwind`. A tiny deterministic PRNG keeps failures reproducible.

#[path = "support/atoms.rs"]
mod atoms;
use atoms::{atoms, Rng};
use proc_macro2::TokenStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tvm_core::driver::build_schedule;
use tvm_core::frontend::{check_schedules, parse_kernel, parse_str, Kernel};
use tvm_core::Target;

mod frontend_kernels;
use frontend_kernels::ALL;

const VOCAB: &[&str] = &[
    ";",
    ",",
    ".",
    ":",
    "::",
    "..",
    "..=",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "<",
    "<<",
    "&&",
    "||",
    "->",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "let",
    "fn",
    "for",
    "in",
    "if",
    "else",
    "as",
    "_",
    "0",
    "1",
    "-1",
    "2.5",
    "3f32",
    "1e400",
    "99999999999999999999999999",
    "sum",
    "max",
    "min",
    "prod",
    "exp",
    "pow",
    "fma",
    "f32",
    "f64",
    "i32",
    "u8",
    "bool",
    "usize",
    "true",
    "f32::INFINITY",
    "schedule",
    "cuda",
    "cpu",
    "\"cuda -arch=sm_90\"",
    "\"tpu\"",
    "i",
    "j",
    "k",
    "n",
    "N",
    "c",
    "y",
    "x",
    "a",
    "split",
    "tile",
    "fuse",
    "bind",
    "rfactor",
    "cache_read",
    "pack",
    "cache_write",
    "compute_at",
    "compute_inline",
    "axes",
    "reduce_axes",
    "block",
    "thread",
    "shared",
    "local",
];

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut a = Vec::new();
    atoms(src.parse::<TokenStream>().expect("the kernels lex"), &mut a);
    for _ in 0..1 + rng.below(3) {
        if a.is_empty() {
            break;
        }
        let i = rng.below(a.len());
        match rng.below(5) {
            0 => {
                a.remove(i);
            }
            1 => {
                let t = a[i].clone();
                a.insert(i, t);
            }
            2 => {
                let j = rng.below(a.len());
                a.swap(i, j);
            }
            3 => a[i] = rng.pick(VOCAB).to_string(),
            _ => a.insert(i, rng.pick(VOCAB).to_string()),
        }
    }
    a.join(" ")
}

/// Runs the whole frontend on `src`; `Err` with the panic message if anything panics.
fn run(src: &str) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| {
        let Ok(tokens) = src.parse::<TokenStream>() else {
            // Unbalanced delimiters: parse_str reports it.
            assert!(parse_str(src).is_err());
            return;
        };
        if let Ok(k) = parse_kernel(tokens) {
            let _ = check_schedules(&k);
            for t in [Target::cpu(), Target::cuda(), Target::opencl()] {
                let _ = build_schedule(&k, &t);
            }
        }
    }))
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn assert_no_panics(cases: Vec<String>) {
    // Keep the default hook from printing every caught panic.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failures: Vec<(String, String)> =
        cases.into_iter().filter_map(|src| run(&src).err().map(|msg| (msg, src))).collect();
    std::panic::set_hook(hook);
    assert!(
        failures.is_empty(),
        "{} inputs panicked; the first:\n{}\n--- input ---\n{}",
        failures.len(),
        failures[0].0,
        failures[0].1
    );
}

#[test]
fn mutated_kernels_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = Vec::new();
    for src in ALL {
        for _ in 0..60 {
            cases.push(mutate(&mut rng, src));
        }
    }
    assert_no_panics(cases);
}

/// Names a random schedule statement may use for `k`.
struct Names {
    stages: Vec<String>,
    inputs: Vec<String>,
    axes: Vec<String>,
}

fn names_of(k: &Kernel) -> Names {
    let mut n = Names { stages: Vec::new(), inputs: Vec::new(), axes: Vec::new() };
    for t in &k.graph.tensors {
        if t.is_placeholder() {
            n.inputs.push(t.name.clone());
        } else {
            n.stages.push(t.name.clone());
            for ax in t.axes().iter().chain(t.reduce_axes()) {
                n.axes.push(format!("{}.{}", t.name, ax.var.name()));
            }
        }
    }
    n
}

fn random_stmt(rng: &mut Rng, n: &Names, bound: &mut Vec<String>) -> String {
    let stage = |rng: &mut Rng, bound: &[String]| -> String {
        match rng.below(8) {
            0 if !bound.is_empty() => rng.pick(bound).clone(),
            1 => rng.pick(&n.inputs).clone(),
            2 => "nope".into(),
            _ => rng.pick(&n.stages).clone(),
        }
    };
    let axis = |rng: &mut Rng, bound: &[String], s: &str| -> String {
        match rng.below(8) {
            0 | 1 if !bound.is_empty() => rng.pick(bound).clone(),
            2 => format!("{s}.axes()[{}]", rng.below(3)),
            3 => format!("{s}.reduce_axes()[{}]", rng.below(2)),
            4 => format!("{s}.zz"),
            _ => rng.pick(&n.axes).clone(),
        }
    };
    let factor =
        |rng: &mut Rng| -> String { rng.pick(&["1", "2", "4", "16", "32", "256", "4096", "0", "-3", "n"]).to_string() };
    let s = stage(rng, bound);
    let (call, results) = match rng.below(17) {
        0 => (format!("split({}, {})", axis(rng, bound, &s), factor(rng)), 2),
        1 => (format!("split_nparts({}, {})", axis(rng, bound, &s), factor(rng)), 2),
        2 => (format!("tile({}, {}, {}, {})", axis(rng, bound, &s), axis(rng, bound, &s), factor(rng), factor(rng)), 4),
        3 => (format!("fuse({}, {})", axis(rng, bound, &s), axis(rng, bound, &s)), 1),
        4 => (format!("reorder({}, {}, {})", axis(rng, bound, &s), axis(rng, bound, &s), axis(rng, bound, &s)), 0),
        5 => {
            let tag = rng.pick(&["block.x", "block.y", "thread.x", "thread.y", "thread.z", "warp.x"]);
            (format!("bind({}, {tag})", axis(rng, bound, &s)), 0)
        }
        6 => (format!("parallel({})", axis(rng, bound, &s)), 0),
        7 => (format!("vectorize({})", axis(rng, bound, &s)), 0),
        8 => (format!("unroll({})", axis(rng, bound, &s)), 0),
        9 => {
            let c = stage(rng, bound);
            (format!("compute_at({c}, {})", axis(rng, bound, &c)), 0)
        }
        10 => ("compute_inline()".to_string(), 0),
        11 => ("compute_root()".to_string(), 0),
        12 => {
            let scope = rng.pick(&["shared", "local", "global", "texture"]);
            (format!("cache_read({scope}, [{}])", stage(rng, bound)), 1)
        }
        13 => (format!("cache_write({})", rng.pick(&["local", "shared"])), 1),
        14 => (format!("rfactor({})", axis(rng, bound, &s)), 1),
        15 => {
            let dim = rng.pick(&["0", "1", "2", "3", "-1", "x", "n"]);
            (format!("pack({dim}, {}, [{}])", factor(rng), stage(rng, bound)), 1)
        }
        _ => (rng.pick(&["axes()", "reduce_axes()"]).to_string(), rng.below(3)),
    };
    let fresh = |rng: &mut Rng, bound: &mut Vec<String>| -> String {
        let name = format!("v{}", rng.below(12));
        bound.push(name.clone());
        name
    };
    match (results, rng.below(6)) {
        (_, 0) => format!("{s}.{call};"),
        (1, _) => format!("let {} = {s}.{call};", fresh(rng, bound)),
        (r, _) => {
            // Usually the right arity, sometimes not.
            let r = if rng.below(6) == 0 { rng.below(5) } else { r };
            let names: Vec<String> = (0..r).map(|_| fresh(rng, bound)).collect();
            format!("let ({}) = {s}.{call};", names.join(", "))
        }
    }
}

#[test]
fn random_schedules_never_panic() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut cases = Vec::new();
    for src in ALL {
        // The algorithm only: drop the kernel's own schedule blocks.
        let algo = match src.find("schedule!") {
            Some(i) => &src[..i],
            None => src,
        };
        let k = parse_str(algo).unwrap_or_else(|e| panic!("{e:?}"));
        let names = names_of(&k);
        for _ in 0..40 {
            let mut bound = Vec::new();
            let stmts: Vec<String> = (0..1 + rng.below(8)).map(|_| random_stmt(&mut rng, &names, &mut bound)).collect();
            let target = rng.pick(&["cpu", "cuda", "opencl", "\"llvm -mcpu=skylake-avx512\""]);
            cases.push(format!("{algo}\nschedule!({target}) {{\n{}\n}}", stmts.join("\n")));
        }
    }
    assert_no_panics(cases);
}

#[test]
fn random_token_soup_never_panics() {
    let mut rng = Rng(42);
    let cases = (0..200)
        .map(|_| {
            let len = 1 + rng.below(40);
            (0..len).map(|_| *rng.pick(VOCAB)).collect::<Vec<_>>().join(" ")
        })
        .map(|s| format!("fn f(a: f32[n]) -> c: f32[n] {{ c[i] = {s}; }}"))
        .collect();
    assert_no_panics(cases);
}
