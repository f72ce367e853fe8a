//! Programs that must fail: one test per rule of docs/LANGUAGE.md §2 (type errors) and §3
//! (schedule errors), asserting the message names the right thing, the location points
//! at the offending token, and independent errors are all reported in one call.

use tvm_core::driver::build_schedule;
use tvm_core::frontend::{check_schedules, parse_str, FrontendError, Kernel};
use tvm_core::schedule::{ScheduleError, ScheduleErrorKind as K};
use tvm_core::Target;

fn errors(src: &str) -> Vec<FrontendError> {
    match parse_str(src) {
        Ok(k) => panic!("`{}` should not check", k.name),
        Err(es) => es,
    }
}

/// The single error of `src`; its message contains every one of `needles`.
fn one_error(src: &str, needles: &[&str]) -> FrontendError {
    let es = errors(src);
    assert_eq!(es.len(), 1, "{}", es.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
    let e = es.into_iter().next().unwrap();
    for n in needles {
        assert!(e.message.contains(n), "`{}` does not mention `{n}`", e.message);
    }
    assert!(!e.message.ends_with('.'), "{}", e.message);
    e
}

/// The source text an error points at (the first `len` bytes).
fn pointed(src: &str, e: &FrontendError, len: usize) -> String {
    let (line, col) = e.line_col();
    src.lines().nth(line - 1).unwrap().chars().skip(col).take(len).collect()
}

fn kernel(body: &str) -> String {
    format!("fn f(x: f32[n], y: i32[n], k: i64, u: usize, alpha: f32) -> out: f32[n] {{ {body} }}")
}

// ---- Syntax -------------------------------------------------------------------------

#[test]
fn syntax_errors_in_several_stages_are_all_reported() {
    let src = "fn f(x: f32[n]) -> out: f32[n] {
        let a[i]: f32[n] = x[i] +;
        let b[i]: f32[n] = x[i] x[i];
        out[i] = x[i] * * 2.0;
    }";
    let es = errors(src);
    assert_eq!(es.len(), 3, "{es:?}");
    assert_eq!(es[0].line_col().0, 2);
    assert_eq!(es[2].line_col().0, 4);
}

#[test]
fn missing_arrow() {
    one_error("fn f(x: f32[n]) out: f32[n] { out[i] = x[i]; }", &["`->`"]);
}

#[test]
fn missing_semicolon() {
    one_error("fn f(x: f32[n]) -> out: f32[n] { out[i] = x[i] }", &["`;`"]);
}

#[test]
fn shift_is_not_supported() {
    let src = kernel("out[i] = x[i] << 2;");
    let e = one_error(&src, &["`<<`", "not supported"]);
    assert_eq!(pointed(&src, &e, 2), "<<");
}

#[test]
fn bitwise_and_is_not_supported() {
    one_error(&kernel("out[i] = (y[i] & 1) as f32;"), &["`&`"]);
}

#[test]
fn chained_comparison() {
    one_error(&kernel("out[i] = if 0 < i < 4 { 1.0 } else { 0.0 };"), &["chained"]);
}

#[test]
fn lexer_error_is_one_error() {
    let es = errors("fn f(x: f32[n]) -> out: f32[n] { out[i] = x[i]; ");
    assert_eq!(es.len(), 1);
    assert!(es[0].message.contains("tokenize"), "{}", es[0].message);
}

#[test]
fn string_literals_are_rejected() {
    one_error(&kernel("out[i] = \"x\";"), &["literals"]);
}

#[test]
fn if_without_else() {
    one_error(&kernel("out[i] = if x[i] > 0.0 { x[i] };"), &["`else`"]);
}

#[test]
fn non_reduction_with_for() {
    one_error(&kernel("out[i] = exp(x[j] for j in 0..n);"), &["`exp` is not a reduction"]);
}

// ---- Types --------------------------------------------------------------------------

#[test]
fn integer_literal_on_a_float() {
    let src = kernel("out[i] = x[i] * 2;");
    let e = one_error(&src, &["mismatched types", "`f32`", "`2`"]);
    assert!(e.help.as_deref().unwrap().contains("2.0"), "{e}");
    assert_eq!(pointed(&src, &e, 1), "2");
}

#[test]
fn float_literal_on_an_integer() {
    one_error(&kernel("out[i] = (y[i] + 1.5) as f32;"), &["mismatched types", "`i32`", "`1.5`"]);
}

#[test]
fn mismatched_operands() {
    // Integer scalars are i64 values: `y[i] + k` adds an i32 and an i64.
    let src = kernel("out[i] = (y[i] + k) as f32;");
    let e = one_error(&src, &["mismatched types", "`y[i]`", "`k`", "`i32`", "`i64`"]);
    assert_eq!(pointed(&src, &e, 1), "k");
    assert!(e.help.as_deref().unwrap().contains("k as i32"), "{e}");
    // With a cast it checks.
    assert!(parse_str(&kernel("out[i] = (y[i] + k as i32) as f32;")).is_ok());
}

#[test]
fn stage_type_mismatch() {
    one_error(&kernel("out[i] = y[i];"), &["`out` is `f32`", "`y[i]` is `i32`"]);
}

#[test]
fn unknown_name() {
    let src = kernel("out[i] = x[i] + beta;");
    let e = one_error(&src, &["unknown name `beta`"]);
    assert_eq!(pointed(&src, &e, 4), "beta");
}

#[test]
fn unknown_tensor() {
    one_error(&kernel("out[i] = z[i];"), &["unknown tensor `z`"]);
}

#[test]
fn tensor_without_indices() {
    one_error(&kernel("out[i] = x;"), &["`x` is a tensor"]);
}

#[test]
fn wrong_index_count() {
    one_error(&kernel("out[i] = x[i, i];"), &["`x` has 1 dim", "2 indices"]);
}

#[test]
fn wrong_axis_count() {
    one_error(&kernel("out[i, j] = x[i] + j as f32;"), &["`out` has 1 dim", "2 axes"]);
}

#[test]
fn reduction_inside_an_expression() {
    let src = kernel("out[i] = x[i] + sum(x[j] for j in 0..n);");
    let e = one_error(&src, &["whole right-hand side"]);
    assert_eq!(pointed(&src, &e, 3), "sum");
}

#[test]
fn reduction_axis_outside_its_reduction() {
    one_error(
        "fn f(x: f32[n, m]) -> out: f32[n] {
            let s[i]: f32[n] = sum(x[i, k] for k in 0..m);
            out[i] = s[i] + k as f32;
        }",
        &["reduction axis `k`", "outside"],
    );
}

#[test]
fn reduction_range_depends_on_an_axis() {
    one_error(
        "fn f(x: f32[n, n]) -> out: f32[n] { out[i] = sum(x[i, k] for k in 0..i); }",
        &["cannot depend on the axis `i`"],
    );
}

#[test]
fn duplicate_parameter() {
    one_error("fn f(x: f32[n], x: f32[n]) -> out: f32[n] { out[i] = x[i]; }", &["duplicate parameter `x`"]);
}

#[test]
fn duplicate_intermediate() {
    one_error("fn f(x: f32[n]) -> out: f32[n] { let x[i]: f32[n] = 1.0; out[i] = x[i]; }", &["duplicate name `x`"]);
}

#[test]
fn duplicate_axis() {
    one_error("fn f(x: f32[n, n]) -> out: f32[n, n] { out[i, i] = x[i, i]; }", &["axis `i` is named twice"]);
}

#[test]
fn axis_named_like_a_dim() {
    one_error("fn f(x: f32[n]) -> out: f32[n] { out[n] = x[n]; }", &["axis `n`", "dim"]);
}

#[test]
fn axis_may_share_a_tensor_name() {
    // `x[..]` is always a read of the tensor, a bare `x` the axis.
    let k = parse_str("fn pool(x: f32[N, C, H, W]) -> out: f32[N, C, H, W] { out[n, c, y, x] = x[n, c, y, x] * 2.0; }")
        .unwrap();
    assert_eq!(k.graph.tensors.len(), 2);
}

#[test]
fn stage_writes_an_undeclared_tensor() {
    let e = one_error(
        "fn f(x: f32[n]) -> out: f32[n] { t[i] = x[i]; out[i] = x[i]; }",
        &["`t` is neither an output nor declared with `let`"],
    );
    assert!(e.help.unwrap().contains("let t"));
}

#[test]
fn output_never_written() {
    one_error(
        "fn f(x: f32[n]) -> (out: f32[n], other: f32[n]) { out[i] = x[i]; }",
        &["output `other` is never written"],
    );
}

#[test]
fn output_written_twice() {
    one_error("fn f(x: f32[n]) -> out: f32[n] { out[i] = x[i]; out[i] = x[i]; }", &["`out` is written twice"]);
}

#[test]
fn write_to_an_input() {
    one_error("fn f(x: f32[n]) -> out: f32[n] { x[i] = 1.0; out[i] = x[i]; }", &["cannot write to input `x`"]);
}

#[test]
fn unbound_output_dim() {
    let src = "fn f(x: f32[n]) -> out: f32[m] { out[i] = 1.0; }";
    let e = one_error(src, &["dim `m`", "`out`", "not bound"]);
    assert!(e.help.as_deref().unwrap().contains("m: usize"));
    assert_eq!(pointed(src, &e, 1), "m");
}

#[test]
fn unbound_intermediate_dim() {
    one_error(
        "fn f(x: f32[n]) -> out: f32[n] { let t[i, j]: f32[n, q] = x[i]; out[i] = t[i, 0]; }",
        &["dim `q`", "`t`"],
    );
}

#[test]
fn usize_scalar_binds_a_dim() {
    let k = parse_str("fn f(x: f32[n], m: usize) -> out: f32[m] { out[i] = x[i % n] + m as f32; }").unwrap();
    assert_eq!(k.dim_bindings.len(), 1);
    assert_eq!(k.dim_bindings[0].scalar.name(), "m");
    // A scalar of another type cannot be a dim.
    one_error("fn f(x: f32[n], m: i64) -> out: f32[m] { out[i] = 1.0; }", &["`m` is a `i64` parameter, not a dim"]);
}

#[test]
fn read_before_defined() {
    one_error(
        "fn f(x: f32[n]) -> out: f32[n] { out[i] = t[i]; let t[i]: f32[n] = x[i]; }",
        &["`t` is read before it is defined"],
    );
}

#[test]
fn stage_reads_itself() {
    // A recurrence reads earlier elements along one axis; these reads are not that.
    let e =
        one_error("fn f(x: f32[n]) -> out: f32[n] { out[i] = out[i] + 1.0; }", &["`out` reads the element it defines"]);
    assert!(e.help.unwrap().contains("`out[i - 1]`"));
    one_error(
        "fn f(x: f32[n]) -> out: f32[n] { out[i] = if i + 1 < n { out[i + 1] } else { x[i] }; }",
        &["`out` reads itself at `i + 1`, which is not an earlier element along its own axis `i`"],
    );
    one_error(
        "fn f(x: f32[n, m]) -> out: f32[n, m] { out[i, j] = if i >= 1 && j >= 1 { out[i - 1, j - 1] } else { x[i, j] }; }",
        &["`out` steps back along two axes"],
    );
    one_error(
        "fn f(x: f32[n, m]) -> out: f32[n, m] { out[i, j] = if i >= 1 && j >= 1 { out[i - 1, j] + out[i, j - 1] } else { x[i, j] }; }",
        &["`out` steps back along `j` here and along `i` in another read"],
    );
    one_error(
        "fn f(x: f32[n, m]) -> out: f32[n] { out[i] = sum(if i >= 1 { out[i - 1] } else { x[i, k] } for k in 0..m); }",
        &["`out` reads itself inside a reduction"],
    );
    // Unguarded, the first element's read is outside the tensor: proved, so an error.
    one_error(
        "fn f(x: f32[n]) -> out: f32[n] { out[i] = out[i - 1] + x[i]; }",
        &["index `i - 1` of `out` is out of bounds: it goes down to -1"],
    );
}

/// A stencil's read of another tensor past an edge by a constant: the help names the
/// `repeat_edge` view that reads it, with a name the kernel does not use. Not for the
/// stage's own tensor (a recurrence has no view of itself), nor for a read that spreads
/// wider than the tensor or drifts with its shape.
#[test]
fn read_past_an_edge_suggests_repeat_edge() {
    let help = |src: &str, needle: &str| {
        let e = one_error(src, &[needle]);
        e.help.unwrap_or_default()
    };
    let h = help("fn f(x: f32[M, N]) -> y: f32[M, N] { y[i, j] = x[i, j] - x[i, j - 1]; }", "goes down to -1");
    assert!(h.contains("`let xe = repeat_edge(x);`") && h.contains("`xe[i, j - 1]`"), "{h}");
    let h = help("fn f(x: f32[N], xe: f32) -> y: f32[N] { y[i] = x[i + 2] * xe; }", "reaches N + 1");
    assert!(h.contains("`let x_edge = repeat_edge(x);`") && h.contains("`x_edge[i + 2]`"), "{h}");
    let h = help("fn f(x: f32[N, 8]) -> y: f32[N] { y[i] = sum(x[i, k + 2] for k in 0..8); }", "reaches 9");
    assert!(h.contains("`xe[i, k + 2]`"), "{h}");
    // A 3x3 window past both edges: both ends named, and the view offered.
    let e = one_error(
        "fn f(x: f32[C, H, W], w: f32[C, 3, 3]) -> y: f32[C, H, W] {
            y[c, i, j] = sum(x[c, i + r - 1, j] * w[c, r, 0] for r in 0..3);
        }",
        &["out of bounds at both ends: it goes down to -1 and reaches H"],
    );
    let h = e.help.unwrap_or_default();
    assert!(h.contains("`let xe = repeat_edge(x);`") && h.contains("`xe[c, i + r - 1, j]`"), "{h}");
    for (src, needle) in [
        ("fn f(x: f32[n]) -> out: f32[n] { out[i] = out[i - 1] + x[i]; }", "goes down to -1"),
        ("fn f(x: f32[8]) -> y: f32[8] { y[i] = x[2 * i]; }", "reaches 14"),
        ("fn f(x: f32[8]) -> y: f32[8] { y[i] = x[i + 8]; }", "reaches 15"),
    ] {
        let h = help(src, needle);
        assert!(!h.contains("repeat_edge") && h.contains("guard the read with `if`"), "{src}: {h}");
    }
}

/// A 3x3 stencil read past every edge: an error at each index out of bounds (twelve: the
/// corner taps are out along both axes), the `repeat_edge` help in full on the first
/// only, and on the others the read through the same view, in a short help.
#[test]
fn a_stencil_past_every_edge_shows_the_view_once() {
    let src = "fn f(x: f32[H, W]) -> y: f32[H, W] {
        y[i, j] = x[i - 1, j - 1] + x[i - 1, j] + x[i - 1, j + 1]
            + x[i, j - 1] + x[i, j] + x[i, j + 1]
            + x[i + 1, j - 1] + x[i + 1, j] + x[i + 1, j + 1];
    }";
    let es = errors(src);
    assert_eq!(es.len(), 12, "{}", es.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
    let mut places: Vec<(usize, usize)> = es.iter().map(|e| e.line_col()).collect();
    places.dedup();
    assert_eq!(places.len(), 12, "each error at its own index: {places:?}");
    let helps: Vec<String> = es.iter().map(|e| e.help.clone().unwrap_or_default()).collect();
    let full = helps.iter().filter(|h| h.contains("`let xe = repeat_edge(x);`")).count();
    assert_eq!(full, 1, "{helps:#?}");
    assert!(helps[0].contains("`let xe = repeat_edge(x);`"), "the first error shows the view: {}", helps[0]);
    for (e, h) in es.iter().zip(&helps).skip(1) {
        let read = pointed(src, e, 5);
        assert!(h.starts_with("`xe[") && h.contains("the view of `x` an error above shows"), "{h}");
        assert!(h.len() < helps[0].len() / 2, "{h}");
        // The read the help shows is the one the error points into.
        assert!(h.contains(&read), "`{read}` in {h}");
    }
}

#[test]
fn float_index() {
    one_error(&kernel("out[i] = x[x[i]];"), &["index must be an integer", "`x[i]` is `f32`"]);
}

#[test]
fn integer_tensor_as_index_is_cast() {
    assert!(parse_str(&kernel("out[i] = x[y[i]];")).is_ok());
}

#[test]
fn condition_must_be_bool() {
    one_error(&kernel("out[i] = if x[i] { 1.0 } else { 0.0 };"), &["condition of `if`", "`f32`"]);
}

#[test]
fn logical_operands_must_be_bool() {
    one_error(&kernel("out[i] = if i && k > 0 { 1.0 } else { 0.0 };"), &["`&&` needs `bool`", "`i`"]);
}

#[test]
fn branches_must_agree() {
    one_error(&kernel("out[i] = if i > 0 { x[i] } else { k };"), &["different types"]);
}

#[test]
fn cast_to_bool() {
    one_error(&kernel("out[i] = if x[i] as bool { 1.0 } else { 0.0 };"), &["cannot cast `f32` to `bool`"]);
}

#[test]
fn cast_bool_to_float() {
    one_error(&kernel("out[i] = (i > 0) as f32;"), &["cannot cast `bool` to `f32`"]);
}

#[test]
fn cast_to_unknown_type() {
    one_error(&kernel("out[i] = x[i] as f31;"), &["unknown type `f31`"]);
}

#[test]
fn intrinsic_on_an_integer() {
    one_error(&kernel("out[i] = exp(i) as f32;"), &["`exp` needs a float argument", "`i`"]);
}

#[test]
fn intrinsic_arity() {
    one_error(&kernel("out[i] = pow(x[i]);"), &["`pow` takes 2 arguments", "1 was given"]);
}

#[test]
fn binary_max_arity() {
    one_error(&kernel("out[i] = max(x[i]);"), &["`max` takes 2 arguments"]);
}

#[test]
fn sum_without_for() {
    one_error(&kernel("out[i] = sum(x[i], x[i]);"), &["`sum` is a reduction"]);
}

#[test]
fn unknown_function() {
    one_error(&kernel("out[i] = relu(x[i]);"), &["unknown function `relu`"]);
}

#[test]
fn negate_unsigned_and_bool() {
    one_error("fn f(z: u32[n]) -> out: f32[n] { out[i] = (-z[i]) as f32; }", &["cannot negate `z[i]`", "unsigned"]);
    one_error(&kernel("out[i] = if -(i > 0) { 1.0 } else { 0.0 };"), &["cannot negate"]);
}

#[test]
fn literal_out_of_range() {
    one_error("fn f(x: u8[n]) -> out: u8[n] { out[i] = x[i] + 256; }", &["`256` does not fit in `u8`"]);
}

#[test]
fn unknown_element_type() {
    one_error("fn f(x: f33[n]) -> out: f32[n] { out[i] = 1.0; }", &["unknown type `f33`"]);
}

#[test]
fn arithmetic_on_bool() {
    one_error("fn f(x: bool[n]) -> out: bool[n] { out[i] = x[i] + x[i]; }", &["`+`", "`bool`"]);
}

#[test]
fn independent_type_errors_are_all_reported() {
    let es = errors(
        "fn f(x: f32[n]) -> (out: f32[n], o2: f32[n]) {
            let a[i]: f32[n] = x[i] * 2;
            let b[i]: f32[n] = a[i] + q;
            out[i] = a[i] + b[i, i];
        }",
    );
    let msgs: Vec<&str> = es.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(es.len(), 4, "{msgs:#?}");
    assert!(msgs[0].contains("`2`"));
    assert!(msgs[1].contains("`q`"));
    assert!(msgs[2].contains("`b` has 1 dim"));
    assert!(msgs[3].contains("`o2` is never written"));
}

#[test]
fn a_poisoned_subexpression_is_reported_once() {
    // `q` is unknown: neither the sum nor the stage type reports more.
    let es = errors(&kernel("out[i] = (q + 1.0) * x[i] + sqrt(q);"));
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(es.iter().all(|e| e.message.contains("`q`")));
}

#[test]
fn frontend_errors_display_with_help() {
    let e = one_error(&kernel("out[i] = x[i] * 2;"), &[]);
    let shown = e.to_string();
    assert!(shown.contains("\nhelp: "), "{shown}");
    assert_eq!(e.to_syn_error().span().start().line, 1);
}

// ---- Schedules ----------------------------------------------------------------------

const ALGO: &str = "fn f(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
    let p[i, j]: f32[M, K] = a[i, j] * 2.0;
    c[i, j] = sum(p[i, k] * b[k, j] for k in 0..K);
}";

fn sched(target: &str, body: &str) -> (Kernel, String) {
    let src = format!("{ALGO}\nschedule!({target}) {{\n{body}\n}}");
    match parse_str(&src) {
        Ok(k) => (k, src),
        Err(es) => panic!("{es:?}"),
    }
}

fn sched_errors(target: &str, body: &str) -> (Vec<ScheduleError>, Kernel, String) {
    let (k, src) = sched(target, body);
    let t = Target::parse(target.trim_matches('"')).unwrap();
    let es = build_schedule(&k, &t).expect_err("the schedule should fail");
    // check_schedules finds the same errors.
    assert_eq!(check_schedules(&k), es);
    (es, k, src)
}

fn at<'s>(k: &Kernel, src: &'s str, e: &ScheduleError) -> &'s str {
    let (line, col) = k.source_map.line_col(e.loc).expect("the error has a location");
    &src.lines().nth(line - 1).unwrap()[col..]
}

#[test]
fn unknown_stage() {
    let (es, k, src) = sched_errors("cpu", "d.parallel(d.i);");
    assert_eq!(es.len(), 1, "{es:?}");
    match &es[0].kind {
        K::UnknownStage { name, known } => {
            assert_eq!(name, "d");
            assert_eq!(known, &["p", "c"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(at(&k, &src, &es[0]).starts_with("d.parallel"));
}

#[test]
fn unknown_axis() {
    let (es, k, src) = sched_errors("cpu", "let (o, i) = c.split(c.q, 8);");
    assert!(
        matches!(&es[0].kind, K::UnknownAxis { axis, stage, known, restarted: false } if axis == "q" && stage == "c" && known.contains(&"k".to_string()))
    );
    assert!(at(&k, &src, &es[0]).starts_with("q, 8"));
    let (es, _, _) = sched_errors("cpu", "c.parallel(zz);");
    assert!(matches!(&es[0].kind, K::UnknownAxis { axis, .. } if axis == "zz"));
}

#[test]
fn unknown_primitive() {
    let (es, k, src) = sched_errors("cpu", "c.paralel(c.i);");
    assert!(matches!(&es[0].kind, K::UnknownPrimitive { name } if name == "paralel"));
    assert!(at(&k, &src, &es[0]).starts_with("paralel"));
}

#[test]
fn wrong_arity() {
    let (es, k, src) = sched_errors("cpu", "let (o, i) = c.split(c.i);");
    assert!(matches!(&es[0].kind, K::WrongArity { name, expected, got: 1 } if name == "split" && expected == "2"));
    assert!(at(&k, &src, &es[0]).starts_with("split"));
    // The pattern's names are poisoned: using them reports nothing more.
    let (es, _, _) = sched_errors("cpu", "let (o, i) = c.split(c.i);\nc.parallel(o);\nc.vectorize(i);");
    assert_eq!(es.len(), 1, "{es:?}");
}

#[test]
fn bad_split_factors() {
    for (factor, shown) in [("0", "0"), ("-4", "-4"), ("2.5", "2.5"), ("N", "N")] {
        let (es, k, src) = sched_errors("cpu", &format!("let (o, i) = c.split(c.i, {factor});"));
        assert_eq!(es.len(), 1, "{es:?}");
        assert!(matches!(&es[0].kind, K::BadSplitFactor { value } if value == shown), "{es:?}");
        assert!(at(&k, &src, &es[0]).starts_with(factor));
    }
}

#[test]
fn bad_thread_tag() {
    let (es, k, src) = sched_errors(
        "cuda",
        "let (bx, tx) = c.split(c.i, 64);\nc.bind(bx, block.w);\nc.bind(tx, warp.x);\np.compute_inline();",
    );
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(matches!(&es[0].kind, K::UnknownThreadTag { name } if name == "block.w"));
    assert!(matches!(&es[1].kind, K::UnknownThreadTag { name } if name == "warp.x"));
    assert!(at(&k, &src, &es[0]).starts_with("block.w"));
}

#[test]
fn bind_on_cpu() {
    let (es, k, src) = sched_errors("cpu", "let (bx, tx) = c.split(c.i, 64);\nc.bind(bx, block.x);");
    assert!(matches!(&es[0].kind, K::BindOnCpu { .. }), "{es:?}");
    assert!(at(&k, &src, &es[0]).starts_with("block.x"));
}

#[test]
fn primitive_on_an_input() {
    let (es, _, _) = sched_errors("cpu", "a.parallel(a.i);");
    assert!(matches!(&es[0].kind, K::NotAStage { name } if name == "a"), "{es:?}");
    // cache_read of an input is fine.
    let (k, _) = sched("cpu", "let a_l = a.cache_read(local, [p]);");
    assert!(build_schedule(&k, &Target::cpu()).is_ok());
}

#[test]
fn pack_along_a_dimension_the_tensor_lacks() {
    // `a` has two dimensions: 2 is past them, `a.i` is not a dimension's number.
    let (es, k, src) = sched_errors("cpu", "let ap = a.pack(2, 8, [p]);");
    assert!(matches!(&es[0].kind, K::PackDim { tensor, dim, rank: 2 } if tensor == "a" && dim == "2"), "{es:?}");
    assert!(at(&k, &src, &es[0]).starts_with("2, 8"));
    assert!(es[0].to_string().contains("`a` has no dimension `2`"), "{}", es[0]);
    let (es, k, src) = sched_errors("cpu", "let ap = a.pack(x, 8, [p]);");
    assert!(matches!(&es[0].kind, K::PackDim { .. }), "{es:?}");
    assert!(at(&k, &src, &es[0]).starts_with("x, 8"));
    // A factor that is not a positive integer, and a reader that does not read `a`.
    let (es, _, _) = sched_errors("cpu", "let ap = a.pack(1, 0, [p]);");
    assert!(matches!(&es[0].kind, K::BadSplitFactor { .. }), "{es:?}");
    let (es, _, _) = sched_errors("cpu", "let ap = a.pack(1, 8, [c]);");
    assert!(matches!(&es[0].kind, K::CacheReadNotReader { reader, .. } if reader == "c"), "{es:?}");
    // A factor past the dimension's extent (any positive integer) packs into one panel.
    let (k, _) = sched("cpu", "let ap = a.pack(1, 9223372036854775807, [p]);");
    assert!(build_schedule(&k, &Target::cpu()).is_ok());
    // Packing an input along either dimension is fine, and so is a stage.
    for body in ["let ap = a.pack(1, 8, [p]);", "let ap = a.pack(0, 3, [p]);", "let pp = p.pack(0, 4, [c]);"] {
        let (k, _) = sched("cpu", body);
        assert!(build_schedule(&k, &Target::cpu()).is_ok(), "{body}");
    }
}

#[test]
fn axis_index_out_of_range() {
    let (es, _, _) = sched_errors("cpu", "c.parallel(c.axes()[2]);");
    assert!(matches!(&es[0].kind, K::AxisIndexOutOfRange { index: 2, len: 2, .. }), "{es:?}");
}

#[test]
fn pattern_arity() {
    let (es, _, _) = sched_errors("cpu", "let (a, b, x) = c.split(c.i, 4);\nc.parallel(a);");
    assert_eq!(es.len(), 1, "{es:?}");
    assert!(matches!(&es[0].kind, K::PatternArity { expected: 2, got: 3 }));
    let (es, _, _) = sched_errors("cpu", "let [y] = c.axes();");
    assert!(matches!(&es[0].kind, K::PatternArity { expected: 2, got: 1 }));
}

#[test]
fn wrong_kind_of_name() {
    let (es, _, _) = sched_errors("cpu", "let (o, i) = c.split(c.i, 4);\no.parallel(i);\nc.parallel(p);");
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(matches!(&es[0].kind, K::WrongKindOfName { name, expected: "a stage" } if name == "o"));
    assert!(matches!(&es[1].kind, K::WrongKindOfName { name, expected: "an axis" } if name == "p"));
}

#[test]
fn bad_statements() {
    let (es, _, _) = sched_errors("cpu", "let x = 5;\nc.parallel(c.i) + 1;\nc.parallel(c.i)");
    assert_eq!(es.len(), 3, "{es:?}");
    assert!(es.iter().all(|e| matches!(e.kind, K::BadStatement { .. })), "{es:?}");
}

#[test]
fn unknown_scope() {
    let (es, k, src) = sched_errors("cuda", "let t = a.cache_read(texture, [p]);");
    assert!(matches!(&es[0].kind, K::UnknownScope { name } if name == "texture"), "{es:?}");
    assert!(at(&k, &src, &es[0]).starts_with("texture"));
}

#[test]
fn shared_on_cpu() {
    let (es, _, _) = sched_errors("cpu", "let t = a.cache_read(shared, [p]);");
    assert!(matches!(&es[0].kind, K::SharedOnCpu { .. }), "{es:?}");
}

#[test]
fn unknown_target_and_duplicate_schedules() {
    let src = format!(
        "{ALGO}
        schedule!(tpu) {{ c.parallel(c.i); }}
        schedule!(cuda) {{ }}
        schedule!(\"cuda -arch=sm_90\") {{ }}
        schedule!(\"cuda -arch=sm_12\") {{ }}"
    );
    let k = parse_str(&src).unwrap();
    let es = check_schedules(&k);
    assert_eq!(es.len(), 3, "{es:?}");
    assert!(matches!(&es[0].kind, K::UnknownTarget { target, .. } if target == "tpu"));
    assert!(matches!(&es[1].kind, K::DuplicateSchedule { target } if target == "cuda -arch=sm_90"));
    assert!(matches!(&es[2].kind, K::UnknownTarget { reason, .. } if reason.contains("sm_12")));
    assert!(at(&k, &src, &es[1]).starts_with("\"cuda -arch=sm_90\""));
}

#[test]
fn validation_errors_are_reported() {
    // vectorize of an axis that is not innermost is found by Schedule::validate.
    let (es, _, _) = sched_errors("cpu", "let (o, i) = c.split(c.i, 4);\nc.vectorize(o);");
    assert!(es.iter().any(|e| matches!(e.kind, K::VectorizeNotInnermost { .. })), "{es:?}");
}

#[test]
fn independent_schedule_errors_are_all_reported() {
    let (es, _, _) = sched_errors(
        "cuda",
        "let (bx, tx) = c.split(c.i, 0);
         c.bind(bx, block.x);
         c.bind(tx, thread.x);
         q.compute_inline();
         p.compute_at(c, c.zz);
         c.frobnicate();
         let (a, b) = c.split(c.j, 4);
         c.bind(a, block.q);
         c.vectorize(b, 4);
         c.reorder(c.k, nope);",
    );
    let kinds: Vec<&K> = es.iter().map(|e| &e.kind).collect();
    assert_eq!(es.len(), 7, "{kinds:#?}");
    assert!(matches!(kinds[0], K::BadSplitFactor { .. }));
    assert!(matches!(kinds[1], K::UnknownStage { .. }));
    assert!(matches!(kinds[2], K::UnknownAxis { .. }));
    assert!(matches!(kinds[3], K::UnknownPrimitive { .. }));
    assert!(matches!(kinds[4], K::UnknownThreadTag { .. }));
    assert!(matches!(kinds[5], K::WrongArity { .. }));
    assert!(matches!(kinds[6], K::UnknownAxis { axis, .. } if axis == "nope"));
}

#[test]
fn errors_of_every_block_are_checked() {
    let src = format!("{ALGO}\nschedule!(cuda) {{ c.parallel(c.q); }}\nschedule!(cpu) {{ c.bind(c.i, block.x); }}");
    let k = parse_str(&src).unwrap();
    let es = check_schedules(&k);
    assert_eq!(es.len(), 2, "{es:?}");
    assert!(matches!(es[0].kind, K::UnknownAxis { .. }));
    assert!(matches!(es[1].kind, K::BindOnCpu { .. }));
}

#[test]
fn a_widening_cast_of_arithmetic_casts_the_operands() {
    // `(w[i, k] * x[k]) as i32` would multiply in `i8` and wrap: the help casts each operand.
    let e = one_error(
        "fn gemv(w: i8[m, n], x: i8[n]) -> y: i32[m] { y[i] = sum(w[i, k] * x[k] for k in 0..n); }",
        &["mismatched types"],
    );
    let help = e.help.as_deref().unwrap_or("");
    assert!(help.contains("`w[i, k] as i32 * x[k] as i32`"), "{help}");
    // A narrowing cast of arithmetic, or a cast of a plain read, stays one cast.
    let e = one_error("fn f(x: i32[n]) -> y: i8[n] { y[i] = x[i] * 2; }", &["mismatched types"]);
    assert!(e.help.as_deref().unwrap_or("").contains("`(x[i] * 2) as i8`"), "{:?}", e.help);
    let e = one_error("fn f(x: i8[n]) -> y: i32[n] { y[i] = x[i]; }", &["mismatched types"]);
    assert!(e.help.as_deref().unwrap_or("").contains("`x[i] as i32`"), "{:?}", e.help);
    // Nested arithmetic: every leaf is cast, the grouping kept.
    let e =
        one_error("fn f(a: i16[n], b: i16[n]) -> y: f32[n] { y[i] = (a[i] + b[i]) * a[i]; }", &["mismatched types"]);
    assert!(e.help.as_deref().unwrap_or("").contains("`(a[i] as f32 + b[i] as f32) * a[i] as f32`"), "{:?}", e.help);
}
