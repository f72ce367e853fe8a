//! Knobs, candidates and tuning records (`tvm_core::tune`): the space a block declares,
//! the candidate the tuner compiles against the one the macro applies, the record's JSON
//! round trip, and what makes a record stale.

use proc_macro2::TokenStream;
use std::collections::BTreeMap;
use tvm_core::frontend::{parse_kernel, unwrap_invocation};
use tvm_core::tune::{self, record, space, Measured, Record, Status, TargetRecord};
use tvm_core::TargetKind;

const MATMUL: &str = r#"
    /// c = a · b
    pub fn mm(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64);
    }
    schedule!(cpu) {
        let (io, jo, ii, ji) = c.tile(c.i, c.j, tune!(ti: 4, 8, 16), tune!(16, 32));
        c.reorder(io, jo, c.k, ii, ji);
        c.parallel(io);
        c.unroll(tune!(ii, c.k));
        c.vectorize(ji);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = c.tile(c.i, c.j, 16, 16);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ti, thread.y);
        c.bind(tj, thread.x);
    }
"#;

fn tokens(src: &str) -> TokenStream {
    unwrap_invocation(src.parse().expect("tokens"))
}

#[test]
fn knobs_are_named_and_numbered_in_order() {
    let k = parse_kernel(tokens(MATMUL)).unwrap_or_else(|_| panic!("compiles"));
    let ks = tune::knobs(&k.ast.schedules[0]);
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["ti", "k0", "k1"]);
    assert_eq!(ks[0].values, ["4", "8", "16"]);
    assert_eq!(ks[2].values, ["ii", "c.k"]);
    assert_eq!(space::space_size(&ks), 12);
    // Candidate 0 is the schedule as written; the last knob turns fastest.
    assert_eq!(space::choice_of(&ks, 0), [0, 0, 0]);
    assert_eq!(space::choice_of(&ks, 1), [0, 0, 1]);
    assert_eq!(space::choice_of(&ks, 11), [2, 1, 1]);
    let a = space::assignment(&ks, &[1, 0, 1]);
    assert_eq!(a.get("ti").map(String::as_str), Some("8"));
    assert_eq!(space::choice_from(&ks, &a), Some(vec![1, 0, 1]));
    let mut gone = a.clone();
    gone.insert("ti".into(), "64".into());
    assert_eq!(space::choice_from(&ks, &gone), None, "a value the knob no longer has");
    // The kernel as compiled has every knob at its first value.
    let written = tune::resolve(&k.ast.schedules[0], &[]);
    assert_eq!(k.schedules[0], written);
    assert!(tune::knobs(&written).is_empty());
}

/// The candidate the tuner compiles (the tokens with the values put in) is the schedule
/// the macro gets by resolving the knobs, for every candidate.
#[test]
fn substituted_tokens_parse_to_the_resolved_schedule() {
    let ts = tokens(MATMUL);
    let k = parse_kernel(ts.clone()).unwrap_or_else(|_| panic!("compiles"));
    let ks = tune::knobs(&k.ast.schedules[0]);
    for n in 0..space::space_size(&ks) as usize {
        let choice = space::choice_of(&ks, n);
        let cand = space::substitute(&ts, Some(0), &choice, "mm_c");
        let ck = parse_kernel(cand).unwrap_or_else(|_| panic!("candidate {n} parses"));
        assert_eq!(ck.name, "mm_c");
        let want = tune::resolve(&k.ast.schedules[0], &choice);
        assert_eq!(ck.schedules[0].stmts.len(), want.stmts.len());
        let shown = |b: &tvm_core::frontend::ast::ScheduleBlock| -> Vec<String> {
            b.stmts
                .iter()
                .map(|s| match s {
                    tvm_core::frontend::ast::SchedStmt::Call { call, .. } => call.to_string(),
                    other => format!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(shown(&ck.schedules[0]), shown(&want), "candidate {n}");
    }
}

#[test]
fn the_hash_ignores_knob_values_docs_and_other_blocks() {
    let base = record::kernel_hash(&tokens(MATMUL), Some(0));
    // A value added to a knob: same key (only the new candidates are measured).
    let more = MATMUL.replace("tune!(16, 32)", "tune!(16, 32, 64)");
    assert_eq!(record::kernel_hash(&tokens(&more), Some(0)), base);
    // Another target's block, and the doc comment: same key.
    let other = MATMUL.replace("16, 16);", "8, 32);").replace("/// c = a · b", "/// the product");
    assert_eq!(record::kernel_hash(&tokens(&other), Some(0)), base);
    // The algorithm, a statement of the tuned block, or a knob's name: a new key.
    let algo = MATMUL.replace("a[i, k] * b[k, j]", "a[i, k] * b[k, j] * 2.0");
    assert_ne!(record::kernel_hash(&tokens(&algo), Some(0)), base);
    let stmt = MATMUL.replace("c.parallel(io);", "c.parallel(jo);");
    assert_ne!(stmt, MATMUL);
    assert_ne!(record::kernel_hash(&tokens(&stmt), Some(0)), base);
    let renamed = MATMUL.replace("tune!(ti:", "tune!(rows:");
    assert_ne!(record::kernel_hash(&tokens(&renamed), Some(0)), base);
    // The CUDA block's key is its own.
    assert_ne!(record::kernel_hash(&tokens(MATMUL), Some(1)), base);
}

fn entry(kernel: &tvm_core::frontend::Kernel, ts: &TokenStream, winner: &[(&str, &str)]) -> TargetRecord {
    let block = record::block_index(&kernel.ast.schedules, TargetKind::Cpu);
    let key = record::key(kernel, ts, block, BTreeMap::new(), "cpu test");
    let knobs: BTreeMap<String, String> = winner.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let m = Measured {
        knobs: knobs.clone(),
        status: Status::Ok,
        min_s: Some(1e-3),
        median_s: Some(1.5e-3),
        p20_s: Some(1.2e-3),
        p80_s: Some(1.8e-3),
        max_error: Some(0.0),
        message: None,
    };
    TargetRecord {
        key,
        knobs: vec!["ti".into(), "k0".into(), "k1".into()],
        candidates: vec![m],
        winner: Some(knobs),
        tuning_seconds: 1.0,
        default_s: None,
        space: tune::Space::Written,
        search: None,
    }
}

#[test]
fn a_record_round_trips_and_applies_only_while_its_key_matches() {
    let ts = tokens(MATMUL);
    let k = parse_kernel(ts.clone()).unwrap_or_else(|_| panic!("compiles"));
    let mut rec = Record::new("mm");
    rec.targets.insert("cpu".into(), entry(&k, &ts, &[("ti", "8"), ("k0", "32"), ("k1", "c.k")]));
    let json = rec.to_json();
    assert!(json.contains("\"schema\": 1") && json.contains("\"status\": \"ok\""), "{json}");
    let back = Record::parse(&json).expect("parses");
    assert_eq!(back, rec);
    assert!(!json.contains("\"search\""), "an exhaustive record says nothing of a search");
    // A searched entry (`tvm-tune --auto`) round-trips with its search.
    let mut searched = rec.clone();
    searched.targets.get_mut("cpu").unwrap().search =
        Some(tune::Search { seed: 7, budget_s: 120.0, rounds: 3, space_size: 1 << 40 });
    assert_eq!(Record::parse(&searched.to_json()).expect("parses"), searched);
    // A generic kernel's instances have records of their own, named as their modules.
    assert_eq!(tune::record_name("roll", Some("f32")), "roll_f32");
    assert_eq!(tune::record_name("mm", None), "mm");

    let t = tune::applied(&k, &ts, &back, TargetKind::Cpu).expect("applies");
    assert_eq!(t.device, "cpu test");
    let shown = t.schedules[0].stmts.iter().map(|s| format!("{s:?}")).collect::<String>();
    assert!(shown.contains("value: 8") && shown.contains("value: 32"), "{shown}");
    // No entry for OpenCL: nothing applies there.
    assert!(tune::applied(&k, &ts, &back, TargetKind::OpenCl).is_none());

    // A changed algorithm, compiler or schema, or a winner no longer in the space: stale.
    let algo = tokens(&MATMUL.replace("a[i, k] * b[k, j]", "a[i, k] * b[k, j] * 2.0"));
    let k2 = parse_kernel(algo.clone()).unwrap_or_else(|_| panic!("compiles"));
    assert!(tune::applied(&k2, &algo, &back, TargetKind::Cpu).is_none());
    let mut old = back.clone();
    old.targets.get_mut("cpu").unwrap().key.compiler = "0.0.1".into();
    assert!(tune::applied(&k, &ts, &old, TargetKind::Cpu).is_none());
    let mut schema = back.clone();
    schema.schema = 0;
    assert!(tune::applied(&k, &ts, &schema, TargetKind::Cpu).is_none());
    let fewer = tokens(&MATMUL.replace("tune!(ti: 4, 8, 16)", "tune!(ti: 4, 16)"));
    let k3 = parse_kernel(fewer.clone()).unwrap_or_else(|_| panic!("compiles"));
    assert!(tune::applied(&k3, &fewer, &back, TargetKind::Cpu).is_none(), "winner ti=8 is gone");
    // A value added to a knob keeps the record and its winner.
    let more = tokens(&MATMUL.replace("tune!(ti: 4, 8, 16)", "tune!(ti: 4, 8, 16, 32)"));
    let k4 = parse_kernel(more.clone()).unwrap_or_else(|_| panic!("compiles"));
    assert!(tune::applied(&k4, &more, &back, TargetKind::Cpu).is_some());

    // The device and dims are compared where they are known.
    let e = &back.targets["cpu"];
    let mut other = e.key.clone();
    other.device = "cpu elsewhere".into();
    assert!(record::mismatch(&e.key, &other, false).is_none());
    assert!(record::mismatch(&e.key, &other, true).unwrap().contains("tuned on `cpu test`"));
}

#[test]
fn knob_errors_point_at_their_tokens() {
    let cases = [
        ("tune!(16, 32)", "tune!(16, 16)", "knob `k0` has the value `16` twice"),
        ("tune!(ti: 4, 8, 16)", "tune!(ti: 4, 0)", "value `0` of knob `ti` is illegal in every candidate"),
        ("tune!(16, 32)", "tune!(ti: 16, 32)", "a knob named `ti` is already in this schedule"),
    ];
    for (from, to, want) in cases {
        let src = MATMUL.replace(from, to);
        let k = parse_kernel(tokens(&src)).unwrap_or_else(|_| panic!("parses"));
        let errs = tvm_core::frontend::check_schedules(&k);
        let msgs: Vec<String> = errs.iter().map(|e| e.message()).collect();
        assert!(msgs.iter().any(|m| m.contains(want)), "{to}: {msgs:?}");
    }
    let ok = parse_kernel(tokens(MATMUL)).unwrap_or_else(|_| panic!("parses"));
    assert!(tvm_core::frontend::check_schedules(&ok).is_empty());
}

/// `tune!(NAME)` takes the value of the knob named NAME before it: one knob, whose value
/// goes to every place (the threads of several splits that must agree).
#[test]
fn a_named_knob_is_reused_by_name() {
    let src = r#"
        pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
            let m[i]: f32[M] = max(x[i, j] for j in 0..N);
            y[i, j] = x[i, j] - m[i];
        }
        schedule!(cuda) {
            y.bind(y.i, block.x);
            let (jo, ji) = y.split(y.j, tune!(tx: 128, 64, 256));
            y.bind(ji, thread.x);
            m.compute_at(y, y.i);
            let (mo, mi) = m.split(m.j, tune!(tx));
            m.bind(mi, thread.x);
        }
    "#;
    let ts = tokens(src);
    let k = parse_kernel(ts.clone()).unwrap_or_else(|_| panic!("compiles"));
    let ks = tune::knobs(&k.ast.schedules[0]);
    assert_eq!(ks.len(), 1, "{ks:?}");
    assert_eq!(space::space_size(&ks), 3);
    assert!(tvm_core::frontend::check_schedules(&k).is_empty(), "every candidate agrees on the threads");
    let resolved = tune::resolve(&k.ast.schedules[0], &[2]);
    let text: Vec<String> = resolved
        .stmts
        .iter()
        .map(|s| match s {
            tvm_core::frontend::ast::SchedStmt::Call { call, .. } => call.to_string(),
            _ => String::new(),
        })
        .collect();
    assert!(
        text.contains(&"y.split(y.j, 256)".to_string()) && text.contains(&"m.split(m.j, 256)".to_string()),
        "{text:?}"
    );
    let cand = parse_kernel(space::substitute(&ts, Some(0), &[2], "s2")).unwrap_or_else(|_| panic!("parses"));
    let shown: Vec<String> = cand.schedules[0]
        .stmts
        .iter()
        .map(|s| match s {
            tvm_core::frontend::ast::SchedStmt::Call { call, .. } => call.to_string(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(shown, text);
    // The reference is part of the key like any knob: renaming it is a new key.
    let base = record::kernel_hash(&ts, Some(0));
    assert_eq!(record::kernel_hash(&tokens(&src.replace("128, 64, 256", "128, 64")), Some(0)), base);
    assert_ne!(record::kernel_hash(&tokens(&src.replace("tune!(tx)", "64")), Some(0)), base);
}

/// The space the compiler derives for kernels without a block (the auto-scheduler's
/// statements with their sizes as knobs): every form it covers checks (no value is
/// illegal everywhere), every knob offers alternatives, and candidate 0 is the schedule
/// the kernel gets without tuning.
#[test]
fn the_default_space_checks_for_each_form() {
    let kernels = [
        // A reduction at the output: cache_write, tile, unrolled reduction.
        "pub fn mm(a: f32[64, 64], b: f32[64, 64]) -> c: f32[64, 64] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64); }",
        // An epilogue over a reduction stage: the stage computed per tile.
        "pub fn dense(x: f32[16, 64], w: f32[64, 64], bias: f32[64]) -> out: f32[16, 64] {
            let d[i, j]: f32[16, 64] = sum(x[i, k] * w[k, j] for k in 0..64);
            out[i, j] = max(d[i, j] + bias[j], 0.0); }",
        // The same with the weights transposed (the reduction along contiguous elements).
        "pub fn dense_t(x: f32[16, 64], w: f32[64, 64], bias: f32[64]) -> out: f32[16, 64] {
            let d[i, j]: f32[16, 64] = sum(x[i, k] * w[j, k] for k in 0..64);
            out[i, j] = max(d[i, j] + bias[j], 0.0); }",
        // Elementwise, rank 1 and rank 3.
        "pub fn axpy(x: f32[4096], y: f32[4096]) -> z: f32[4096] { z[i] = 2.0 * x[i] + y[i]; }",
        "pub fn scale(x: f32[8, 16, 64]) -> y: f32[8, 16, 64] { y[a, b, c] = x[a, b, c] * 0.5; }",
        // A row reduction (rank 1 output).
        "pub fn rows(x: f32[64, 256]) -> s: f32[64] { s[i] = sum(x[i, j] for j in 0..256); }",
        // A softmax: the stages of a row share one width, a knob used more than once.
        "pub fn softmax(x: f32[64, 256]) -> y: f32[64, 256] {
            let m[i]: f32[64] = max(x[i, j] for j in 0..256);
            let e[i, j]: f32[64, 256] = exp(x[i, j] - m[i]);
            let s[i]: f32[64] = sum(e[i, j] for j in 0..256);
            y[i, j] = e[i, j] * (1.0 / s[i]); }",
    ];
    for src in kernels {
        let ts = tokens(src);
        let k = parse_kernel(ts.clone()).unwrap_or_else(|_| panic!("compiles: {src}"));
        for kind in [TargetKind::Cpu, TargetKind::OpenCl] {
            let (aug, dk) = space::with_default_space(&ts, &k, kind).unwrap_or_else(|| panic!("a space for {src}"));
            let errs: Vec<String> = tvm_core::frontend::check_schedules(&dk).iter().map(|e| e.message()).collect();
            assert!(errs.is_empty(), "{kind:?} {src}: {errs:?}\n{aug}");
            let b = record::block_index(&dk.ast.schedules, kind).expect("the derived block");
            let ks = tune::knobs(&dk.ast.schedules[b]);
            assert!(!ks.is_empty() && ks.iter().all(|k| k.values.len() >= 2), "{kind:?} {src}: {ks:?}");
            assert!(space::space_size(&ks) >= 2);
            // A record names each knob's value: no two knobs share a name.
            let names: std::collections::BTreeSet<&str> = ks.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names.len(), ks.len(), "{kind:?} {src}: {ks:?}\n{aug}");
            // Candidate 0 lowers to what the kernel gets without a block.
            let target = tvm_core::Target::parse(kind.name()).unwrap();
            let want = tvm_core::driver::lower_for(&k, &target).expect("lowers");
            let got = tvm_core::driver::lower_for(&dk, &target).expect("candidate 0 lowers");
            assert_eq!(
                tvm_core::tir::printer::print_func(&got),
                tvm_core::tir::printer::print_func(&want),
                "{kind:?} {src}"
            );
        }
    }
}

/// The interpreter's output (race-checked, as it runs every GPU launch) of `f` on
/// deterministic inputs of `shapes`, the output last.
fn interpret(f: &tvm_core::tir::PrimFunc, shapes: &[Vec<usize>]) -> Result<Vec<f32>, String> {
    use tvm_core::interp::{run, ArgValue, HostTensor};
    let last = shapes.len() - 1;
    let mut args: Vec<ArgValue> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let len: usize = s.iter().product();
            let v = (0..len)
                .map(|i| if k == last { f32::NAN } else { ((i * 37 + k * 101) % 29) as f32 / 29.0 - 0.5 })
                .collect();
            ArgValue::Tensor(HostTensor::f32(s.clone(), v))
        })
        .collect();
    run(f, &mut args).map_err(|e| e.to_string())?;
    Ok(args.last().and_then(|a| a.as_tensor()).and_then(|t| t.as_f32()).expect("an f32 output").to_vec())
}

/// Every candidate of the space derived for the GPU targets, not only the first, is a
/// schedule that validates, lowers, and computes what the flat default computes, with
/// no race. A register-tile knob once changed the compute's thread count but not the
/// shared-memory copies': those alternatives copied half a tile, with no barriers.
#[test]
fn every_candidate_of_a_derived_gpu_space_computes_what_the_default_computes() {
    let kernels: [(&str, Vec<Vec<usize>>); 3] = [
        (
            "pub fn mm(a: f32[48, 64], b: f32[64, 72]) -> c: f32[48, 72] {
                c[i, j] = sum(a[i, k] * b[k, j] for k in 0..64); }",
            vec![vec![48, 64], vec![64, 72], vec![48, 72]],
        ),
        (
            "pub fn dense(x: f32[16, 64], w: f32[64, 40], bias: f32[40]) -> out: f32[16, 40] {
                let d[i, j]: f32[16, 40] = sum(x[i, k] * w[k, j] for k in 0..64);
                out[i, j] = max(d[i, j] + bias[j], 0.0); }",
            vec![vec![16, 64], vec![64, 40], vec![40], vec![16, 40]],
        ),
        (
            "pub fn conv(data: f32[1, 16, 10, 10], w: f32[24, 16, 3, 3]) -> out: f32[1, 24, 8, 8] {
                out[n, f, y, x] = sum(data[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..16, r in 0..3, s in 0..3); }",
            vec![vec![1, 16, 10, 10], vec![24, 16, 3, 3], vec![1, 24, 8, 8]],
        ),
    ];
    for (src, shapes) in kernels {
        let ts = tokens(src);
        let k = parse_kernel(ts.clone()).unwrap_or_else(|_| panic!("compiles: {src}"));
        for kind in [TargetKind::Cuda, TargetKind::OpenCl] {
            let target = tvm_core::Target::parse(kind.name()).unwrap();
            let flat = tvm_core::schedule::Schedule::default_for(k.graph.clone(), target.clone());
            let want = interpret(&tvm_core::driver::lower(&flat).expect("the flat default lowers"), &shapes)
                .expect("the flat default runs");
            let (aug, dk) = space::with_default_space(&ts, &k, kind).unwrap_or_else(|| panic!("a space for {src}"));
            let b = record::block_index(&dk.ast.schedules, kind).expect("the derived block");
            let ks = tune::knobs(&dk.ast.schedules[b]);
            let n = space::space_size(&ks) as usize;
            assert!((2..=64).contains(&n), "{kind:?} {src}: {ks:?}");
            for c in 0..n {
                let choice = space::choice_of(&ks, c);
                let cand = parse_kernel(space::substitute(&aug, Some(b), &choice, "cand"))
                    .unwrap_or_else(|_| panic!("{kind:?} candidate {choice:?} parses\n{aug}"));
                let f = tvm_core::driver::lower_for(&cand, &target).unwrap_or_else(|e| {
                    let msgs: Vec<String> = e.iter().map(|e| e.message()).collect();
                    panic!("{kind:?} {src} candidate {:?}: {msgs:?}", space::assignment(&ks, &choice))
                });
                let got = interpret(&f, &shapes)
                    .unwrap_or_else(|e| panic!("{kind:?} {src} candidate {:?}: {e}", space::assignment(&ks, &choice)));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                        "{kind:?} {src} candidate {:?}: element {i} is {g}, the flat default's {w}",
                        space::assignment(&ks, &choice)
                    );
                }
            }
        }
    }
}
