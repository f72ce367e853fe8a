//! `compute!` never panics: the kernels of tvm-core's test suite, mutated at the token
//! level (tokens deleted, duplicated, swapped, identifiers and integers and dtypes
//! replaced, bracket groups emptied, the input truncated), go through `tvm_core::expand::compute`
//! under `catch_unwind`. Every expansion must return tokens that parse as Rust items:
//! `compile_error!`s (with the stub) or the kernel's code. A tiny deterministic PRNG keeps
//! failures reproducible; `TVM_MACROS_FUZZ_CASES` and `TVM_MACROS_FUZZ_SEED` run more or
//! other cases (`cargo test -p tvm-rs-core --test macro_fuzz -- --nocapture` prints the counts).

use tvm_core::expand::compute as expand_tokens;
#[path = "support/atoms.rs"]
mod atoms;
use atoms::{atoms, Rng};
use proc_macro2::TokenStream;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use std::time::Instant;

// ---------------------------------------------------------------------------------------
// The corpus: the registry's files of one `tvm::compute!` each (tests/corpus/).
// ---------------------------------------------------------------------------------------

#[path = "support/registry.rs"]
mod registry;

/// The macro's input inside a corpus file's `tvm::compute! { .. }`.
fn inner(src: &str) -> &str {
    let open = src.find("compute!").and_then(|i| src[i..].find('{').map(|j| i + j + 1));
    let close = src.rfind('}');
    match (open, close) {
        (Some(a), Some(b)) if a <= b => &src[a..b],
        _ => panic!("a corpus file is not a `compute! {{ .. }}` invocation"),
    }
}

/// `(function name, source)` of every corpus kernel; the sources are whole invocations
/// (see [`inner`]).
fn corpus() -> &'static [(String, &'static str)] {
    static CORPUS: std::sync::OnceLock<Vec<(String, &'static str)>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        registry::FILES
            .iter()
            .filter(|(_, path, _)| path.contains("tvm-core/tests/corpus/"))
            .map(|&(file, _, src)| {
                let k = tvm_core::frontend::parse_str(src).unwrap_or_else(|e| panic!("{file}: {e:?}"));
                (k.name, src)
            })
            .collect()
    })
}

// ---------------------------------------------------------------------------------------
// Running one input.
// ---------------------------------------------------------------------------------------

thread_local! {
    /// Set while this thread expands fuzzed input: the hook records panics silently.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// `file:line:col: message` of the last panic caught on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that records, instead of printing, panics of threads in
/// quiet mode, and defers to the previous hook otherwise (other tests are unaffected).
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let loc =
                    info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
                let payload = info.payload();
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                // The innermost frame in this workspace (an overflow, say, panics inside
                // `core`, but the bug is in the caller).
                let bt = std::backtrace::Backtrace::force_capture().to_string();
                let lines: Vec<&str> = bt.lines().map(str::trim).collect();
                let ours = lines
                    .iter()
                    .position(|l| {
                        let f = l.split_once(": ").map_or("", |x| x.1);
                        f.starts_with("tvm_core::") || f.contains("<impl tvm_core::")
                    })
                    .map(|i| {
                        let f = lines[i].split_once(": ").map_or("", |x| x.1);
                        match lines.get(i + 1).and_then(|l| l.strip_prefix("at ")) {
                            Some(at) => format!(" (in {f} at {at})"),
                            None => format!(" (in {f})"),
                        }
                    })
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{loc}: {msg}{ours}")));
            } else {
                prev(info);
            }
        }));
    });
}

enum Outcome {
    /// The text does not lex: the compiler never hands such input to the macro.
    Lex,
    /// `expand_tokens` panicked: `file:line:col: message`.
    Panic(String),
    Out(TokenStream),
}

fn expand_src(src: &str) -> Outcome {
    let Ok(tokens) = src.parse::<TokenStream>() else { return Outcome::Lex };
    install_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(|| expand_tokens(tokens)));
    QUIET.with(|q| q.set(false));
    match r {
        Ok(out) => Outcome::Out(out),
        Err(_) => Outcome::Panic(LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "<unknown>".into())),
    }
}

/// What is wrong with an expansion that did not panic, if anything: it must be
/// non-empty and parse as Rust items (the `compile_error!`s and stub, or the code).
fn check_output(out: &TokenStream) -> Result<(), String> {
    if out.is_empty() {
        return Err("empty expansion".into());
    }
    syn::parse2::<syn::File>(out.clone()).map(|_| ()).map_err(|e| format!("the expansion is not valid Rust items: {e}"))
}

fn has_compile_error(out: &TokenStream) -> bool {
    out.to_string().contains("compile_error")
}

// ---------------------------------------------------------------------------------------
// Mutations.
// ---------------------------------------------------------------------------------------

fn atoms_of(src: &str) -> Vec<String> {
    let mut a = Vec::new();
    atoms(src.parse::<TokenStream>().expect("the corpus lexes"), &mut a);
    a
}

fn is_open(a: &str) -> bool {
    matches!(a, "(" | "[" | "{")
}

fn is_delim(a: &str) -> bool {
    matches!(a, "(" | "[" | "{" | ")" | "]" | "}")
}

fn is_ident(a: &str) -> bool {
    let mut cs = a.chars();
    cs.next().is_some_and(|c| c.is_alphabetic() || c == '_') && cs.all(|c| c.is_alphanumeric() || c == '_')
}

fn is_int(a: &str) -> bool {
    a.chars().next().is_some_and(|c| c.is_ascii_digit()) && !a.contains('.') && !a.contains('e')
}

const DTYPES: &[&str] = &[
    "f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "i128", "u8", "u16", "u32", "u64", "usize", "isize",
    "bool", "char", "str", "String", "T",
];

const EXTREME_INTS: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "99999999999999999999999999999999999999999",
    "1e30",
    "1e400",
    "-1e30",
    "0.5",
    "0x7fffffffffffffff",
    "0xffffffffffffffff",
    "0b1",
    "1_000_000_000_000",
    "1u8",
    "256u8",
    "1usize",
    "3f32",
    "1i128",
];

const RANDOM_IDENTS: &[&str] = &[
    "zz",
    "q",
    "_",
    "__d",
    "__device",
    "__out0",
    "__tvm_cpu_matmul",
    "self",
    "Self",
    "crate",
    "super",
    "fn",
    "let",
    "for",
    "in",
    "if",
    "else",
    "mod",
    "pub",
    "r#fn",
    "r#x",
    "r#match",
    "async",
    "dyn",
    "Ok",
    "Err",
    "None",
    "core",
    "std",
    "sum",
    "max",
    "min",
    "prod",
    "exp",
    "sqrt",
    "schedule",
    "split",
    "tile",
    "fuse",
    "bind",
    "rfactor",
    "reorder",
    "cache_read",
    "pack",
    "cache_write",
    "compute_at",
    "compute_inline",
    "compute_root",
    "axes",
    "reduce_axes",
    "parallel",
    "vectorize",
    "unroll",
    "block",
    "thread",
    "warp",
    "shared",
    "local",
    "global",
    "cpu",
    "cuda",
    "opencl",
    "NEG_INFINITY",
    "NAN",
    "π",
    "ñame",
    "i",
    "j",
    "k",
    "n",
    "N",
    "M",
];

const VOCAB: &[&str] = &[
    ";", ",", ".", ":", "::", "..", "..=", "=", "==", "+", "-", "*", "/", "%", "!", "<", ">", "<<", ">>", "&&", "||",
    "&", "|", "^", "->", "=>", "#", "?", "@", "$", "'a", "()", "[]", "{}", "[0]", "(1, 2)", "\"cuda\"", "\"tpu\"",
    "'c'", "b\"x\"", "true", "false", "as", "2.5", "0.0", "-0.0",
];

/// A random identifier: letters and digits, sometimes long.
fn random_ident(rng: &mut Rng) -> String {
    if rng.below(2) == 0 {
        return rng.pick(RANDOM_IDENTS).to_string();
    }
    let len = if rng.below(8) == 0 { 100 + rng.below(200) } else { 1 + rng.below(8) };
    let mut s = String::new();
    for k in 0..len {
        let c = rng.below(38);
        s.push(match c {
            0..=25 => (b'a' + c as u8) as char,
            26..=35 if k > 0 => (b'0' + (c - 26) as u8) as char,
            _ => '_',
        });
    }
    s
}

/// A random index of `a` whose atom satisfies `f`, if any.
fn index_where(rng: &mut Rng, a: &[String], f: impl Fn(&str) -> bool) -> Option<usize> {
    let idx: Vec<usize> = (0..a.len()).filter(|&i| f(&a[i])).collect();
    (!idx.is_empty()).then(|| *rng.pick(&idx))
}

/// The index of the delimiter closing the one opened at `open`.
fn matching_close(a: &[String], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in a.iter().enumerate().skip(open) {
        if is_open(t) {
            depth += 1;
        } else if matches!(t.as_str(), ")" | "]" | "}") {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Cuts `a` at a random point; usually then closes the delimiters left open, so the
/// result still lexes.
fn truncate(rng: &mut Rng, a: &mut Vec<String>) {
    a.truncate(rng.below(a.len() + 1));
    if rng.below(4) == 0 {
        return;
    }
    let mut open = Vec::new();
    for t in a.iter() {
        match t.as_str() {
            "(" => open.push(")"),
            "[" => open.push("]"),
            "{" => open.push("}"),
            ")" | "]" | "}" => {
                open.pop();
            }
            _ => {}
        }
    }
    while let Some(c) = open.pop() {
        a.push(c.to_string());
    }
}

/// One to three token-level mutations of `src`; the label names the kinds applied.
fn mutate(rng: &mut Rng, src: &str) -> (String, Vec<&'static str>) {
    let mut a = atoms_of(src);
    let source_idents: Vec<String> = a.iter().filter(|t| is_ident(t)).cloned().collect();
    let mut kinds = Vec::new();
    for _ in 0..*rng.pick(&[1, 1, 2, 3]) {
        if a.is_empty() {
            break;
        }
        let non_delim = |t: &str| !is_delim(t);
        let kind = match rng.below(13) {
            0 => {
                let Some(i) = index_where(rng, &a, non_delim) else { continue };
                a.remove(i);
                "delete"
            }
            1 => {
                let Some(i) = index_where(rng, &a, non_delim) else { continue };
                let t = a[i].clone();
                a.insert(i, t);
                "duplicate"
            }
            2 => {
                let (Some(i), Some(j)) = (index_where(rng, &a, non_delim), index_where(rng, &a, non_delim)) else {
                    continue;
                };
                a.swap(i, j);
                "swap"
            }
            3 => {
                let Some(i) = index_where(rng, &a, is_ident) else { continue };
                a[i] = rng.pick(&source_idents).clone();
                "ident-from-source"
            }
            4 => {
                let Some(i) = index_where(rng, &a, is_ident) else { continue };
                a[i] = random_ident(rng);
                "ident-random"
            }
            5 | 6 => {
                let Some(i) = index_where(rng, &a, is_int) else { continue };
                a[i] = rng.pick(EXTREME_INTS).to_string();
                "int"
            }
            7 => {
                let Some(i) = index_where(rng, &a, |t| DTYPES.contains(&t)) else { continue };
                a[i] = rng.pick(DTYPES).to_string();
                "dtype"
            }
            8 => {
                let Some(i) = index_where(rng, &a, is_open) else { continue };
                let Some(j) = matching_close(&a, i) else { continue };
                a.drain(i + 1..j);
                "empty-group"
            }
            9 => {
                truncate(rng, &mut a);
                "truncate"
            }
            10 => {
                // Every occurrence of a name, so the kernel may stay valid and reach the
                // expansion with odd names: raw identifiers, keywords, the expansion's own.
                let Some(i) = index_where(rng, &a, is_ident) else { continue };
                let old = a[i].clone();
                let new = if rng.below(3) == 0 { format!("r#{old}") } else { random_ident(rng) };
                for t in a.iter_mut().filter(|t| **t == old) {
                    *t = new.clone();
                }
                "rename"
            }
            11 => {
                let i = rng.below(a.len() + 1);
                a.insert(i, rng.pick(VOCAB).to_string());
                "insert"
            }
            _ => {
                let Some(i) = index_where(rng, &a, non_delim) else { continue };
                a[i] = rng.pick(VOCAB).to_string();
                "replace"
            }
        };
        kinds.push(kind);
    }
    (a.join(" "), kinds)
}

/// Deletes atoms of `src` (and groups) while it still panics where `report` says, to report
/// a small reproduction.
fn minimise(src: &str, report: &str) -> String {
    // The same place: `file:line:col` and the innermost workspace function.
    let loc = report.split(": ").next().unwrap_or(report);
    let frame = report.rfind(" (in ").map_or("", |i| &report[i..]);
    let still_panics = |a: &[String]| matches!(expand_src(&a.join(" ")), Outcome::Panic(p) if p.starts_with(loc) && p.ends_with(frame));
    let mut a = atoms_of(src);
    let mut progress = true;
    while progress {
        progress = false;
        // Whole groups first (cheap big steps), then their contents, then single
        // non-delimiter atoms.
        let mut i = 0;
        while i < a.len() {
            if is_open(&a[i]) {
                if let Some(j) = matching_close(&a, i) {
                    let mut b = a.clone();
                    b.drain(i..=j);
                    if still_panics(&b) {
                        a = b;
                        progress = true;
                        continue;
                    }
                    if j > i + 1 {
                        let mut b = a.clone();
                        b.drain(i + 1..j);
                        if still_panics(&b) {
                            a = b;
                            progress = true;
                        }
                    }
                }
            }
            i += 1;
        }
        let mut i = 0;
        while i < a.len() {
            if !is_delim(&a[i]) {
                let mut b = a.clone();
                b.remove(i);
                if still_panics(&b) {
                    a = b;
                    progress = true;
                    continue;
                }
            }
            i += 1;
        }
    }
    a.join(" ")
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------

#[test]
fn corpus_kernels_expand_without_errors() {
    for (name, src) in corpus() {
        match expand_src(inner(src)) {
            Outcome::Out(out) => {
                let text = out.to_string();
                assert!(!has_compile_error(&out), "{name}: the valid kernel expands to errors:\n{text}");
                assert!(text.contains(&format!("fn {name}")), "{name}: the expansion lacks `fn {name}`:\n{text}");
                assert!(text.contains(&format!("mod {name}")), "{name}: the expansion lacks `mod {name}`:\n{text}");
                check_output(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            Outcome::Panic(p) => panic!("{name}: the valid kernel panics: {p}"),
            Outcome::Lex => panic!("{name}: the corpus kernel does not lex"),
        }
    }
}

/// Mutations that must be rejected: the macro reports them as `compile_error!`s (and
/// still emits the stub, so the crate does not cascade into "cannot find function").
#[test]
fn known_bad_mutations_are_compile_errors() {
    // (what, replaced, by, whether the stub of `vector_add` comes with the errors: not
    // where the kernel's syntax does not parse).
    let cases: &[(&str, &str, &str, bool)] = &[
        ("split factor 0", "c.split(c.i, 8)", "c.split(c.i, 0)", true),
        ("split factor -1", "c.split(c.i, 8)", "c.split(c.i, -1)", true),
        ("split factor i64::MAX + 1", "c.split(c.i, 8)", "c.split(c.i, 9223372036854775808)", true),
        ("unknown input", "a[i] + b[i]", "a[i] + zz[i]", true),
        ("unknown axis", "c.split(c.i, 8)", "c.split(c.zz, 8)", true),
        ("unknown primitive", "c.parallel(oo)", "c.frobnicate(oo)", true),
        ("unknown dtype", "a: f32[n]", "a: f31[n]", true),
        ("unknown target", "schedule!(cuda)", "schedule!(tpu)", true),
        ("no stage", "c[i] = a[i] + b[i];", "", false),
    ];
    for (what, from, to, stub) in cases {
        let vector_add = inner(include_str!("corpus/vector_add.rs"));
        assert!(vector_add.contains(from), "{what}: `{from}` not in VECTOR_ADD");
        let src = vector_add.replacen(from, to, 1);
        match expand_src(&src) {
            Outcome::Out(out) => {
                let text = out.to_string();
                assert!(has_compile_error(&out), "{what}: no compile_error in the expansion of\n{src}\n---\n{text}");
                assert!(!stub || text.contains("fn vector_add"), "{what}: no stub `fn vector_add` in\n{text}");
                check_output(&out).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            Outcome::Panic(p) => panic!("{what}: panics: {p}\n{src}"),
            Outcome::Lex => panic!("{what}: does not lex"),
        }
    }
}

#[test]
fn mutated_kernels_never_panic() {
    let n = env_or("TVM_MACROS_FUZZ_CASES", 5000);
    let mut rng = Rng(env_or("TVM_MACROS_FUZZ_SEED", 0x9E37_79B9_7F4A_7C15).max(1));
    let start = Instant::now();
    let (mut lex, mut errors, mut code) = (0u64, 0u64, 0u64);
    // Failures by location: (count, first input, mutation kinds).
    let mut panics: BTreeMap<String, (u64, String, Vec<&str>)> = BTreeMap::new();
    let mut invalid: Vec<(String, String)> = Vec::new();
    for case in 0..n {
        let (name, src) = &corpus()[case as usize % corpus().len()];
        let src = inner(src);
        let (mutated, kinds) = mutate(&mut rng, src);
        match expand_src(&mutated) {
            Outcome::Lex => lex += 1,
            Outcome::Panic(p) => {
                let e = panics.entry(p).or_insert_with(|| (0, mutated.clone(), kinds.clone()));
                e.0 += 1;
            }
            Outcome::Out(out) => {
                if has_compile_error(&out) {
                    errors += 1;
                } else {
                    code += 1;
                }
                if let Err(e) = check_output(&out) {
                    invalid.push((format!("{name} {kinds:?}: {e}"), mutated));
                }
            }
        }
    }
    let panicked: u64 = panics.values().map(|p| p.0).sum();
    eprintln!(
        "compute! fuzz: {n} mutations in {:.1?}: {code} expanded to code, {errors} to compile errors, \
         {lex} did not lex, {panicked} panicked ({} locations), {} invalid expansions",
        start.elapsed(),
        panics.len(),
        invalid.len()
    );
    let mut report = String::new();
    for (p, (count, input, kinds)) in &panics {
        report += &format!(
            "\n=== panic x{count} at {p}\n--- mutations {kinds:?}; minimised input ---\n{}\n",
            minimise(input, p)
        );
    }
    for (what, input) in invalid.iter().take(3) {
        report += &format!("\n=== {what}\n--- input ---\n{input}\n");
    }
    assert!(report.is_empty(), "compute! fuzz failures:{report}");
    // The mutations must exercise the whole pipeline, not only the parser.
    assert!(code >= n / 50, "only {code} of {n} mutations expanded to code: the mutations are too destructive");
    assert!(errors >= n / 4, "only {errors} of {n} mutations were errors: the mutations are too mild");
}

#[test]
fn raw_and_unicode_identifiers_expand() {
    // Once panics in `expand::ident` and `stub::stub` (`Ident::new("r#x")`).
    for (src, errs) in [
        ("fn r#scale(r#x: f32[r#n], r#fn: f32) -> r#y: f32[r#n] { r#y[r#i] = r#fn * r#x[r#i]; }", false),
        ("fn π(x: f32[n], n: usize) -> y: f32[n] { y[i] = x[i]; }", false),
        ("fn f(r#x: f32[n], r#fn: f32) -> y: f32[n] { y[i] = zz * r#x[i]; }", true),
    ] {
        match expand_src(src) {
            Outcome::Out(out) => {
                assert_eq!(has_compile_error(&out), errs, "{src}\n---\n{out}");
                check_output(&out).unwrap_or_else(|e| panic!("{src}: {e}"));
            }
            Outcome::Panic(p) => panic!("{src}: panics: {p}"),
            Outcome::Lex => panic!("{src}: does not lex"),
        }
    }
}

/// The CPU backend has no f16 or bf16 yet: a kernel with such a parameter (read or not)
/// is a compile error, not a panic of the macro.
#[test]
fn half_precision_parameters_are_errors_not_panics() {
    for src in [
        "fn f(a: f32[n], h: f16) -> c: f32[n] { c[i] = a[i]; }",
        "fn f(a: f32[n], b: bf16[n]) -> c: f32[n] { c[i] = a[i]; }",
        "fn f(a: f16[n]) -> c: f16[n] { c[i] = a[i]; }",
    ] {
        match expand_src(src) {
            Outcome::Out(out) => {
                assert!(has_compile_error(&out), "{src}\n---\n{out}");
                assert!(out.to_string().contains("f16") || out.to_string().contains("bf16"), "{out}");
                check_output(&out).unwrap_or_else(|e| panic!("{src}: {e}"));
            }
            Outcome::Panic(p) => panic!("{src}: panics: {p}"),
            Outcome::Lex => panic!("{src}: does not lex"),
        }
    }
}

/// Expands `src`, which must not panic.
fn assert_no_panic(src: &str) {
    if let Outcome::Panic(p) = expand_src(src) {
        panic!("compute! panics: {p}\n--- input ---\n{src}");
    }
}

#[test]
fn huge_thread_extent_product_does_not_overflow() {
    assert_no_panic(
        "fn t(a: f32[M, N]) -> b: f32[M, N] { b[i, j] = a[i, j]; }
         schedule!(cuda) {
             let (io, ii) = b.split(b.i, 4294967296);
             let (jo, ji) = b.split(b.j, 4294967296);
             b.bind(ii, thread.y);
             b.bind(ji, thread.x);
         }",
    );
}

#[test]
fn huge_fused_static_extent_does_not_overflow() {
    // The default GPU schedule fuses the axes: no schedule block needed.
    assert_no_panic("fn f(x: f32[4611686018427387904, 4]) -> y: f32[4611686018427387904, 4] { y[i, j] = x[i, j]; }");
}

#[test]
fn huge_split_static_extent_does_not_overflow() {
    assert_no_panic(
        "fn f(x: f32[9223372036854775807]) -> y: f32[9223372036854775807] { y[i] = x[i]; }
         schedule!(cuda) {
             let (o, t) = y.split(y.i, 32);
             y.bind(o, thread.y);
             y.bind(t, thread.x);
         }",
    );
}

/// Found by the fuzzer: a reduction from `i64::MIN` made the prover scale a fact by
/// `i64::MIN / -1`. An expansion, whatever it holds, never panics.
#[test]
fn a_reduction_from_i64_min_does_not_overflow_the_prover() {
    let src = include_str!("corpus/matmul.rs").replace("for k in 0..K", "for k in -9223372036854775808..K");
    let body = &src[src.find('{').unwrap() + 1..src.rfind('}').unwrap()];
    let out = tvm_core::expand::compute(body.parse().unwrap()).to_string();
    assert!(!out.is_empty());
}
