//! The records the pipeline explorer reads from the compiler: the pass trace of
//! `lower_traced`, the schedule's per-statement origins, and the line spans the TIR and
//! C printers keep. Each is checked against the text or structure it describes.

use tvm_core::driver::{lower_explained, ScheduleSource};
use tvm_core::frontend::parse_str;
use tvm_core::tir::printer::{print_func, print_func_spans, LineSpan, NodeRef};
use tvm_core::tir::visit::{walk_stmt, Visitor};
use tvm_core::tir::{PrimFunc, Stmt};
use tvm_core::Target;

const MATMUL: &str = include_str!("corpus/matmul_tiled.rs");
const VECTOR_ADD: &str = include_str!("corpus/vector_add.rs");

/// The loop variable names and store buffer names of `f`, by node.
fn names(f: &PrimFunc) -> Vec<(NodeRef, String)> {
    struct N(Vec<(NodeRef, String)>);
    impl Visitor for N {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { var, .. } => self.0.push((NodeRef::Loop(var.id()), var.name().to_string())),
                Stmt::Store { buffer, .. } => self.0.push((NodeRef::Store(buffer.id()), buffer.name().to_string())),
                _ => {}
            }
            walk_stmt(self, s)
        }
    }
    let mut n = N(Vec::new());
    n.visit_stmt(&f.body);
    for k in &f.kernels {
        n.visit_stmt(&k.body);
    }
    n.0
}

/// Every span's first line is the node it names: a loop header over that variable (`for
/// i` in TIR, `for (.. i` in C, where the printer may suffix the name), a store to that
/// buffer; its last line is within the text and not before the first. With
/// `loop_word` empty (Rust, where a parallel loop is a block around a rayon call and a
/// store may be a block of `let`s), a span need only mention its variable or buffer.
fn check_spans(text: &str, spans: &[LineSpan], f: &PrimFunc, loop_word: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let names = names(f);
    assert!(!spans.is_empty());
    for s in spans {
        assert!(s.first <= s.last && s.last < lines.len(), "{s:?} in {} lines", lines.len());
        let first = lines[s.first].trim_start();
        match s.node {
            NodeRef::Loop(_) | NodeRef::Store(_) => {
                let name = &names.iter().find(|(n, _)| *n == s.node).expect("a node of the function").1;
                let named = if loop_word.is_empty() {
                    lines[s.first..=s.last].iter().any(|l| l.contains(name.as_str()))
                } else if matches!(s.node, NodeRef::Loop(_)) {
                    first.starts_with(loop_word) && first.contains(name.as_str())
                } else {
                    first.contains(name.as_str()) && first.contains('=')
                };
                assert!(
                    named,
                    "{s:?}: lines {}..={} are not {name}:\n{}",
                    s.first,
                    s.last,
                    lines[s.first..=s.last].join("\n")
                );
            }
            NodeRef::Bind(tag) => {
                let t = tag.name().replace('.', "");
                assert!(
                    first.replace(['.', '_'], "").contains(&t),
                    "{s:?}: `{first}` is not thread index {}",
                    tag.name()
                );
            }
        }
    }
    // A loop's span covers the spans of what it contains that start inside it.
    for a in spans.iter().filter(|s| matches!(s.node, NodeRef::Loop(_))) {
        for b in spans.iter().filter(|b| b.first > a.first && b.first <= a.last) {
            assert!(b.last <= a.last, "{b:?} starts inside {a:?} but ends after it");
        }
    }
}

fn lowered(src: &str, target: &str) -> PrimFunc {
    let k = parse_str(src).expect("the kernel parses");
    tvm_core::driver::lower_for(&k, &Target::parse(target).unwrap()).expect("it lowers")
}

#[test]
fn tir_spans_name_their_lines() {
    for (src, target) in [(MATMUL, "cpu"), (MATMUL, "cuda"), (VECTOR_ADD, "cpu"), (VECTOR_ADD, "opencl")] {
        let f = lowered(src, target);
        let (text, spans) = print_func_spans(&f);
        assert_eq!(text, print_func(&f), "recording spans does not change the text");
        check_spans(&text, &spans, &f, "for ");
        // Every loop and store of the function has a span.
        for (n, name) in names(&f) {
            assert!(spans.iter().any(|s| s.node == n), "{target}: no span for {name}");
        }
    }
}

#[test]
fn c_spans_name_their_lines() {
    for src in [MATMUL, VECTOR_ADD] {
        let f = lowered(src, "cuda");
        let (text, spans) = tvm_core::codegen::cuda::emit_cuda_spans(&f).unwrap();
        assert_eq!(text, tvm_core::codegen::cuda::emit_cuda(&f).unwrap());
        check_spans(&text, &spans, &f, "for (");
        assert!(spans.iter().any(|s| matches!(s.node, NodeRef::Bind(_))), "thread indices recorded");
        let f = lowered(src, "opencl");
        let (text, spans) = tvm_core::codegen::opencl::emit_opencl_spans(&f).unwrap();
        assert_eq!(text, tvm_core::codegen::opencl::emit_opencl(&f).unwrap());
        check_spans(&text, &spans, &f, "for (");
    }
}

#[test]
fn rust_markers_resolve_to_the_marked_lines() {
    use tvm_core::codegen::rust::{emit_rust_with, resolve_marks, EmitOptions};
    let f = lowered(MATMUL, "cpu");
    let opts = EmitOptions { markers: true, ..EmitOptions::default() };
    let ts = emit_rust_with(&f, &opts).unwrap();
    // One statement per line, as a printer would lay them out (the explorer uses
    // prettyplease; here a line break after every `;`, `{` and `}` is enough).
    let printed: String = ts
        .to_string()
        .replace(';', ";\n")
        .replace('{', "{\n")
        .replace('}', "}\n")
        .lines()
        .map(|l| l.trim().to_string() + "\n")
        .collect();
    assert!(printed.contains("__tvm_mark ! (loop"), "markers are emitted: the token printer spaces them");
    let printed = printed.replace("__tvm_mark ! (", "__tvm_mark!(").replace(") ;", ");");
    let (text, spans) = resolve_marks(&printed);
    assert!(!text.contains("__tvm_mark"), "every marker line removed");
    check_spans(&text, &spans, &f, "");
    // Without markers the code is the same code, marker lines aside.
    let plain = emit_rust_with(&f, &EmitOptions::default()).unwrap().to_string();
    assert_eq!(ts.to_string().matches("for ").count(), plain.matches("for ").count());
}

#[test]
fn lower_traced_reports_every_pass_and_the_result() {
    let k = parse_str(MATMUL).unwrap();
    for target in ["cpu", "cuda"] {
        let t = Target::parse(target).unwrap();
        let mut events: Vec<(&'static str, Option<String>)> = Vec::new();
        let (sch, source, result) = lower_explained(&k, &t, &mut |e| events.push((e.pass, e.func.map(print_func))));
        let f = result.expect("lowers");
        assert_eq!(source, ScheduleSource::Own { block: if target == "cpu" { 0 } else { 1 } });
        assert!(sch.is_some());
        let passes: Vec<&str> = events.iter().map(|e| e.0).collect();
        assert_eq!(&passes[..3], ["inline_stages", "infer_bound", "schedule_ops"], "{passes:?}");
        assert!(events[0].1.is_none() && events[1].1.is_none() && events[2].1.is_some());
        assert!(passes.contains(&"vectorize_loops") && passes.contains(&"unroll_loops"));
        assert_eq!(passes.contains(&"split_host_device"), target == "cuda");
        assert_eq!(events.last().unwrap().1.as_deref(), Some(print_func(&f).as_str()), "the last event is the result");
        assert_eq!(print_func(&f), print_func(&lowered(MATMUL, target)), "tracing changes nothing");
    }
    // OpenCL borrows the CUDA block; a kernel without blocks gets the default, with why.
    let (_, source, _) = lower_explained(&k, &Target::opencl(), &mut |_| {});
    assert_eq!(source, ScheduleSource::Borrowed { block: 1 });
    let plain = parse_str("pub fn twice(x: f32[n]) -> y: f32[n] { y[i] = x[i] * 2.0; }").unwrap();
    let (_, source, r) = lower_explained(&plain, &Target::cpu(), &mut |_| {});
    assert!(r.is_ok());
    assert!(
        matches!(source, ScheduleSource::Default { ref reason } if reason.contains("no `schedule!` block")),
        "{source:?}"
    );
}

#[test]
fn schedule_origins_name_what_each_statement_touched() {
    let k = parse_str(MATMUL).unwrap();
    let s = tvm_core::driver::build_schedule(&k, &Target::cpu()).unwrap();
    let line_of = |needle: &str| MATMUL.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let axes_at = |line: usize| -> Vec<String> {
        s.origins
            .iter()
            .filter(|(loc, _)| k.source_map.line_col(*loc).map(|p| p.0) == Some(line))
            .flat_map(|(_, axes)| axes.iter().map(|a| s.axis(*a).name.clone()))
            .collect()
    };
    let tile = axes_at(line_of("c.tile(c.i, c.j, 32, 16)"));
    for a in ["io", "jo", "ii", "ji"] {
        assert!(tile.contains(&a.to_string()), "tile made {a}: {tile:?}");
    }
    assert_eq!(axes_at(line_of("c.parallel(io)")), ["io"]);
    assert_eq!(axes_at(line_of("cl.unroll(ki)")), ["ki"]);
    let moved = axes_at(line_of("cl.compute_at(c, jo)"));
    assert!(!moved.is_empty(), "compute_at moves the stage's loops");
    // [i, j, ko, ki] became [ko, i, ki, j]: every axis moved.
    let mut reordered = axes_at(line_of("cl.reorder(ko, ci, ki, cj)"));
    reordered.sort();
    assert_eq!(reordered, ["i", "j", "ki", "ko"]);
    // A statement that moves nothing touches nothing.
    assert_eq!(axes_at(line_of("let [ci, cj] = cl.axes()")), Vec::<String>::new());
}

#[test]
fn pass_times_print_as_one_labelled_table_per_kernel() {
    let k = parse_str(MATMUL).unwrap();
    let mut rows: Vec<Vec<(&'static str, u64)>> = Vec::new();
    for t in [Target::cpu(), Target::cuda(), Target::opencl()] {
        let mut times = Vec::new();
        let (_, _, r) = lower_explained(&k, &t, &mut |e| times.push((e.pass, e.micros)));
        r.unwrap();
        rows.push(times);
    }
    let named: Vec<(&str, &[(&'static str, u64)])> =
        ["cpu", "cuda", "opencl"].into_iter().zip(rows.iter().map(|r| r.as_slice())).collect();
    let table = tvm_core::expand::pass_table("matmul", &named);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "a title and a row per target:\n{table}");
    assert!(lines[0].contains("`matmul`") && lines[0].contains("microseconds"), "{table}");
    for (line, (target, row)) in lines[1..].iter().zip(["cpu", "cuda", "opencl"].iter().zip(&rows)) {
        assert!(line.trim_start().starts_with(target), "{line}");
        let total: u64 = row.iter().map(|p| p.1).sum();
        assert!(line.contains(&format!("total {total:>7}:")), "{line}");
        assert!(line.contains("schedule_ops ") && line.contains("unroll_loops "), "{line}");
    }
    // The expansion reads the variable with `option_env!`, so rustc tracks it.
    let tokens: proc_macro2::TokenStream = MATMUL.parse().unwrap();
    let out = tvm_core::expand::compute(tvm_core::frontend::unwrap_invocation(tokens)).to_string();
    assert!(out.contains("option_env ! (\"TVM_TIME_PASSES\")"), "the expansion tracks TVM_TIME_PASSES");
}

#[test]
fn a_borrowed_block_that_does_not_lower_gives_way_to_the_default_and_says_why() {
    // 8448 f32 of shared memory per block: legal on CUDA (48 KB), not on OpenCL (32 KB).
    let src = r#"
        pub fn big_tile(a: f32[n]) -> c: f32[n] { c[i] = a[i] * 2.0; }
        schedule!(cuda) {
            let (bo, bi) = c.split(c.i, 8448);
            let (to, ti) = c.split(bi, 256);
            c.bind(bo, block.x);
            c.bind(ti, thread.x);
            let s = a.cache_read(shared, [c]);
            s.compute_at(c, bo);
            let [sx] = s.axes();
            let (sxo, sxi) = s.split(sx, 256);
            s.bind(sxi, thread.x);
        }
    "#;
    let k = parse_str(src).unwrap();
    let (_, source, r) = lower_explained(&k, &Target::cuda(), &mut |_| {});
    assert!(r.is_ok());
    assert_eq!(source, ScheduleSource::Own { block: 0 });
    let mut passes = Vec::new();
    let (sch, source, r) = lower_explained(&k, &Target::opencl(), &mut |e| passes.push(e.pass));
    let f = r.expect("the default schedule lowers");
    assert!(
        matches!(&source, ScheduleSource::Default { reason } if reason.contains("does not lower for opencl") && reason.contains("shared memory")),
        "{source:?}"
    );
    assert!(sch.is_some());
    assert_eq!(
        passes.iter().filter(|p| **p == "inline_stages").count(),
        2,
        "the failed lowering, then the fallback: {passes:?}"
    );
    assert_eq!(print_func(&f), print_func(&lowered(src, "opencl")), "the same function as lower_for");
}
