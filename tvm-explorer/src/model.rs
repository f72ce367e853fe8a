//! What the page shows, built by running the real pipeline: the shared parser finds every
//! `compute!` of a file, then for each kernel and each target the schedule is built and
//! explained, lowered pass by pass ([`tvm_core::driver::lower_explained`]), and the
//! generated code printed with the line range of every loop and store recorded by the
//! printers themselves.
//!
//! Every text (source, TIR after each pass, generated code) is stored once in a table
//! and referred to by index, so a pass that changes nothing costs one number.

use crate::cost;
use crate::diff;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Instant;
use tvm_core::build::scan::Invocation;
use tvm_core::driver::ScheduleSource;
use tvm_core::frontend::Kernel;
use tvm_core::schedule::{Attach, Schedule};
use tvm_core::tir::printer::{LineSpan, NodeRef};
use tvm_core::tir::{PrimFunc, Stmt};
use tvm_core::Target;

/// What the explorer was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Values of named dims (`--dim M=1024`) for the cost view.
    pub dims: HashMap<String, i64>,
    /// Only these kernels (`--kernel NAME`); every kernel when empty.
    pub kernels: Vec<String>,
}

/// The name of the function a `compute!` invocation defines: the identifier after its
/// first `fn`.
fn kernel_name(tokens: &proc_macro2::TokenStream) -> Option<String> {
    let mut it = tokens.clone().into_iter();
    while let Some(t) = it.next() {
        if matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "fn") {
            return match it.next() {
                Some(proc_macro2::TokenTree::Ident(name)) => Some(name.to_string()),
                _ => None,
            };
        }
    }
    None
}

/// The texts of the page, each stored once.
#[derive(Default)]
pub struct Texts {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Texts {
    /// The index of `s`, stored if new.
    pub fn id(&mut self, s: &str) -> usize {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
    pub fn try_get(&self, i: usize) -> Option<&str> {
        self.list.get(i).map(|s| s.as_str())
    }
}

/// The page data for the files named: every kernel of every file, and of the files their
/// `#[path = ".."] mod` items name (examples keep their kernels in such files), found by
/// the build script's scan (`tvm_core::build::scan::scan_files`). A file that cannot be
/// read is an error; one that does not parse is shown on the page.
pub fn build(names: &[String], opts: &Options) -> Result<(Value, Texts), String> {
    use std::path::{Path, PathBuf};
    let found = tvm_core::build::scan::scan_files(names.iter().map(PathBuf::from).collect());
    // Files as the user would name them: relative to the working directory where inside it.
    let cwd = std::env::current_dir().ok().and_then(|d| std::fs::canonicalize(d).ok());
    let shown = |p: &Path| cwd.as_ref().and_then(|c| p.strip_prefix(c).ok()).unwrap_or(p).display().to_string();
    let mut file_errors = Vec::new();
    for p in &found.problems {
        match p.line {
            None => return Err(format!("cannot read `{}`: {}", shown(&p.file), p.error)),
            Some(line) => file_errors.push(
                json!({"file": shown(&p.file), "message": format!("cannot parse the file: line {line}: {}", p.error)}),
            ),
        }
    }
    let mut texts = Texts::default();
    let mut kernels = Vec::new();
    let mut sources: HashMap<PathBuf, String> = HashMap::new();
    let names: Vec<Option<String>> = found.invocations.iter().map(|i| kernel_name(&i.tokens)).collect();
    let known: Vec<&str> = names.iter().flatten().map(String::as_str).collect();
    if let Some(k) = opts.kernels.iter().find(|k| !known.contains(&k.as_str())) {
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        return Err(format!("no kernel `{k}` in the files given (their kernels: {known})"));
    }
    let wanted = |n: &Option<String>| opts.kernels.is_empty() || n.as_ref().is_some_and(|n| opts.kernels.contains(n));
    for (inv, _) in found.invocations.iter().zip(&names).filter(|(_, n)| wanted(n)) {
        if !sources.contains_key(&inv.file) {
            let text =
                std::fs::read_to_string(&inv.file).map_err(|e| format!("cannot read `{}`: {e}", shown(&inv.file)))?;
            sources.insert(inv.file.clone(), text);
        }
        kernels.push(kernel(&shown(&inv.file), &sources[&inv.file], inv, opts, &mut texts));
    }
    // A file whose kernels are in the files its `#[path]` mods name is no news.
    let notes: Vec<Value> = found
        .files
        .iter()
        .filter(|f| !found.with_path_mods.contains(f) && !found.invocations.iter().any(|i| &i.file == *f))
        .map(|f| json!({"file": shown(f), "message": "no `compute!` in this file"}))
        .collect();
    Ok((json!({"kernels": kernels, "file_errors": file_errors, "notes": notes}), texts))
}

/// The lines `first..=last` (1-based) of `src`.
fn lines_of(src: &str, first: usize, last: usize) -> String {
    let mut out = String::new();
    for l in src.lines().skip(first.saturating_sub(1)).take((last + 1).saturating_sub(first)) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn kernel(file: &str, src: &str, inv: &Invocation, opts: &Options, texts: &mut Texts) -> Value {
    let source = texts.id(&lines_of(src, inv.line, inv.last_line));
    let mut out = json!({
        "file": file,
        "first_line": inv.line,
        "source": source,
    });
    let start = Instant::now();
    // A kernel generic over its element type is shown as its first instance.
    let (tokens, instance) = match tvm_core::expand::generic::instances(&inv.tokens) {
        Ok(mut v) if !v.is_empty() => {
            let (ty, t) = v.swap_remove(0);
            (t, ty)
        }
        _ => (inv.tokens.clone(), None),
    };
    let k = match tvm_core::frontend::parse_kernel(tokens.clone()) {
        Ok(k) => k,
        Err(errs) => {
            let name = tvm_core::frontend::parse_syntax(tokens)
                .map(|(ast, _)| ast.sig.name.name.clone())
                .unwrap_or_else(|_| format!("kernel at line {}", inv.line));
            out["name"] = json!(name);
            out["error"] = json!(errs
                .iter()
                .map(|e| json!({"message": e.to_string(), "line": e.line_col().0}))
                .collect::<Vec<_>>());
            return out;
        }
    };
    let parse_us = start.elapsed().as_micros() as u64;
    out["name"] = json!(match &instance {
        Some(ty) => format!("{}::<{ty}>", k.name),
        None => k.name.clone(),
    });
    out["parse_us"] = json!(parse_us);
    out["te"] = json!(texts.id(&tvm_core::te::print_graph(&k.graph)));
    out["schedule_blocks"] = json!(k
        .schedules
        .iter()
        .map(|b| json!({"target": b.target, "line": k.source_map.line_col(b.target_loc).map(|p| p.0)}))
        .collect::<Vec<_>>());
    let mut targets = Map::new();
    for t in [Target::cpu(), Target::cuda(), Target::opencl(), Target::webgpu()] {
        targets.insert(t.kind.name().to_string(), target(&k, &t, opts, texts));
    }
    out["targets"] = Value::Object(targets);
    out
}

/// A line-span list as `{node key: [[first, last], ..]}`.
fn spans_json(spans: &[LineSpan]) -> Value {
    let mut m: Map<String, Value> = Map::new();
    for s in spans {
        let e = m.entry(node_key(s.node)).or_insert_with(|| json!([]));
        if let Some(a) = e.as_array_mut() {
            a.push(json!([s.first, s.last]));
        }
    }
    Value::Object(m)
}

/// The key of a node on the page: `L<var id>`, `S<buffer id>`, `B<tag>`.
pub fn node_key(n: NodeRef) -> String {
    match n {
        NodeRef::Loop(v) => format!("L{}", v.0),
        NodeRef::Store(b) => format!("S{}", b.0),
        NodeRef::Bind(t) => format!("B{}", t.name()),
    }
}

fn target(k: &Kernel, t: &Target, opts: &Options, texts: &mut Texts) -> Value {
    let mut passes = Vec::new();
    let mut prev: Option<String> = None;
    let (sch, source, result) = tvm_core::driver::lower_explained(k, t, &mut |e| {
        // A fallback to the default schedule lowers again from the first pass: the page
        // shows the lowering that produced the result.
        if e.pass == "inline_stages" {
            passes.clear();
            prev = None;
        }
        let text = e.func.map(tvm_core::tir::printer::print_func);
        let (changed, plus, minus) = match (&text, &prev) {
            (Some(now), Some(before)) => {
                let (p, m) = diff::counts(before, now);
                (p + m > 0, p, m)
            }
            (Some(now), None) => (true, now.lines().count(), 0),
            (None, _) => (false, 0, 0),
        };
        let id = text.as_ref().map(|s| texts.id(s));
        passes.push(
            json!({"name": e.pass, "us": e.micros, "text": id, "changed": changed, "plus": plus, "minus": minus}),
        );
        if text.is_some() {
            prev = text;
        }
    });
    let mut out = json!({ "passes": passes, "options": options(t) });
    out["schedule"] = schedule_json(k, sch.as_ref(), &source, texts);
    let f = match result {
        Ok(f) => f,
        Err(errs) => {
            out["error"] = json!(errs
                .iter()
                .map(|e| json!({"message": e.to_string(), "line": k.source_map.line_col(e.loc).map(|p| p.0)}))
                .collect::<Vec<_>>());
            return out;
        }
    };
    let (tir, tir_spans) = tvm_core::tir::printer::print_func_spans(&f);
    out["tir"] = json!(texts.id(&tir));
    out["tir_spans"] = spans_json(&tir_spans);
    let start = Instant::now();
    match generated(&f) {
        Ok(g) => {
            out["code"] = json!({
                "lang": g.lang,
                "text": texts.id(&g.text),
                "spans": spans_json(&g.spans),
                "emit_us": start.elapsed().as_micros() as u64,
            });
            if let Some(h) = g.host {
                out["host"] = json!(texts.id(&h));
            }
            match g.metal {
                Some(Ok(m)) => out["metal"] = json!(texts.id(&m)),
                Some(Err(e)) => out["metal_error"] = json!(e),
                None => {}
            }
        }
        Err(e) => out["code_error"] = json!(e),
    }
    out["launch"] = launch_json(&f);
    out["cpu"] = cpu_json(&f);
    out["cost"] = json!(cost::tree(&f, &opts.dims));
    if let Some(s) = &sch {
        out["links"] = links_json(k, s, &f);
    }
    out
}

/// Everything that decides the code for `t`, spelled out (the target string and the
/// limits and switches it implies).
fn options(t: &Target) -> Vec<String> {
    let mut o = vec![format!("target \"{t}\"")];
    if t.is_cpu() {
        o.push(if t.features.is_empty() {
            "feature levels detected at run time: AVX-512 (avx512f, avx512vl), AVX2 + FMA, portable".into()
        } else {
            format!("features exactly: {}", t.features.join(", "))
        });
        o.push("unchecked loads and stores where their bounds are proved (EmitOptions::unchecked)".into());
    } else {
        o.push(format!(
            "limits: {} threads per block, {} bytes of shared memory per block, warp {}",
            t.max_threads_per_block, t.max_shared_memory_per_block, t.warp_size
        ));
        if t.kind == tvm_core::TargetKind::Cuda {
            o.push(format!("sm_{} (NVRTC or nvcc at build time)", t.sm));
        }
    }
    o.push(format!(
        "a * b + c contracted to FMA: {}",
        if t.fp_contract { "yes (-fp-contract=off to stop)" } else { "no" }
    ));
    o.push(format!("fast math: {}", if t.fast_math { "yes" } else { "no" }));
    o
}

/// Which schedule the target got, why, and its loop nests as the primitives left them.
fn schedule_json(k: &Kernel, sch: Option<&Schedule>, source: &ScheduleSource, texts: &mut Texts) -> Value {
    let block_lines = |i: usize| {
        let b = &k.schedules[i];
        let first = k.source_map.line_col(b.target_loc).map(|p| p.0);
        let last = b.stmts.iter().filter_map(stmt_loc).filter_map(|l| k.source_map.line_col(l)).map(|p| p.0).max();
        json!([first, last.or(first)])
    };
    let (kind, reason, lines) = match source {
        ScheduleSource::Own { block } => {
            ("own", format!("the kernel's `schedule!({})` block", k.schedules[*block].target), block_lines(*block))
        }
        ScheduleSource::Borrowed { block } => (
            "borrowed",
            format!(
                "no block of its own: the `schedule!({})` block, shared by the GPU targets",
                k.schedules[*block].target
            ),
            block_lines(*block),
        ),
        ScheduleSource::Default { reason } => {
            let derived = sch.and_then(|s| s.derived.as_ref()).is_some_and(|d| d.fallback.is_none());
            let what = if derived { "derived by the auto-scheduler" } else { "the flat default schedule" };
            ("default", format!("{what}: {reason}"), Value::Null)
        }
    };
    let derived = sch.and_then(|s| s.derived.as_deref());
    json!({
        "kind": kind,
        "reason": reason,
        "lines": lines,
        "stages": sch.map(|s| texts.id(&stages_text(s))),
        // The schedule as `schedule!` source (what `NAME::schedule(target)` returns), and
        // per stage the auto-scheduler's rule and reason.
        "source": sch.map(|s| texts.id(&tvm_core::driver::schedule_source(&k.schedules, &s.target, s, source))),
        "derived": derived.map(|d| d.notes.iter().map(|(stage, rule, why)| json!({"stage": stage, "rule": rule, "why": why})).collect::<Vec<_>>()),
        "fallback": derived.and_then(|d| d.fallback.clone()),
    })
}

fn stmt_loc(s: &tvm_core::frontend::ast::SchedStmt) -> Option<tvm_core::Loc> {
    match s {
        tvm_core::frontend::ast::SchedStmt::Call { loc, .. } => Some(*loc),
        _ => None,
    }
}

/// Each stage's placement, scope and loop nest (outermost first, with annotations).
pub fn stages_text(s: &Schedule) -> String {
    let mut out = String::new();
    for st in &s.stages {
        let attach = match &st.attach {
            Attach::Root => "root".to_string(),
            Attach::Inline => "inlined into its consumers".to_string(),
            Attach::At { stage, axis } => {
                format!("at {}.{}", s.stage(*stage).name, s.axis(*axis).name)
            }
        };
        let scope = st.scope.map(|sc| format!(", {}", sc.name())).unwrap_or_default();
        out.push_str(&format!("{}: {attach}{scope}\n", st.name));
        if matches!(st.attach, Attach::Inline) {
            continue;
        }
        let loops: Vec<String> = st
            .leaf
            .iter()
            .map(|a| {
                let ax = s.axis(*a);
                match st.ann.get(a) {
                    Some(ann) if ann.bind.is_some() => format!("{} bound to {}", ax.name, ann.bind.unwrap().name()),
                    Some(ann) if ann.kind != tvm_core::tir::ForKind::Serial => {
                        format!("{} {}", ax.name, ann.kind.name())
                    }
                    _ => ax.name.clone(),
                }
            })
            .collect();
        out.push_str(&format!("  for {}\n", loops.join(" › ")));
    }
    out
}

/// Generated code of a lowered function.
struct Generated {
    lang: &'static str,
    text: String,
    spans: Vec<LineSpan>,
    host: Option<String>,
    /// WebGPU: the MSL naga makes of the WGSL (as wgpu does on macOS), or why none.
    metal: Option<Result<String, String>>,
}

/// Rust tokens as formatted source.
fn pretty(ts: proc_macro2::TokenStream) -> Result<String, String> {
    syn::parse2::<syn::File>(ts).map(|f| prettyplease::unparse(&f)).map_err(|e| format!("cannot format: {e}"))
}

fn generated(f: &PrimFunc) -> Result<Generated, String> {
    use tvm_core::codegen;
    if f.target.is_cpu() {
        let opts = codegen::rust::EmitOptions { markers: true, ..Default::default() };
        let ts = codegen::rust::emit_rust_with(f, &opts).map_err(|e| e.to_string())?;
        let (text, spans) = codegen::rust::resolve_marks(&pretty(ts)?);
        return Ok(Generated { lang: "rust", text, spans, host: None, metal: None });
    }
    let (lang, (text, spans)) = match f.target.kind {
        tvm_core::TargetKind::Cuda => ("cuda", codegen::cuda::emit_cuda_spans(f).map_err(|e| e.to_string())?),
        tvm_core::TargetKind::WebGpu => ("wgsl", codegen::wgsl::emit_wgsl_spans(f).map_err(|e| e.to_string())?),
        _ => ("opencl", codegen::opencl::emit_opencl_spans(f).map_err(|e| e.to_string())?),
    };
    let metal = (f.target.kind == tvm_core::TargetKind::WebGpu)
        .then(|| codegen::wgsl::naga_check::to_msl(&text).map_err(|e| e.to_string()));
    let name = proc_macro2::Ident::new(&format!("__host_{}", f.name), proc_macro2::Span::call_site());
    let rt: proc_macro2::TokenStream = "::tvm::__rt".parse().expect("a path");
    let host = codegen::host::emit_host(f, &name, &rt).map_err(|e| e.to_string()).and_then(pretty).ok();
    Ok(Generated { lang, text, spans, host, metal })
}

/// The GPU launch configuration of every kernel: grid, block, shared memory.
fn launch_json(f: &PrimFunc) -> Value {
    if f.kernels.is_empty() {
        return Value::Null;
    }
    let infos = tvm_core::codegen::host::kernel_infos(f);
    let show = |es: &[tvm_core::tir::Expr; 3]| es.iter().map(tvm_core::tir::printer::print_expr).collect::<Vec<_>>();
    json!(f
        .kernels
        .iter()
        .zip(&infos)
        .map(|(k, i)| json!({
            "kernel": k.name,
            "grid": show(&k.grid),
            "block": show(&k.block),
            "shared_bytes": i.shared_bytes,
            "threads": k.thread_vars.iter().map(|(t, _)| t.name()).collect::<Vec<_>>(),
        }))
        .collect::<Vec<_>>())
}

/// On the CPU: the parallel loops (the runtime's thread pool) and the widest vector the code uses.
fn cpu_json(f: &PrimFunc) -> Value {
    if !f.target.is_cpu() {
        return Value::Null;
    }
    use tvm_core::tir::visit::{walk_expr, walk_stmt, Visitor};
    #[derive(Default)]
    struct S {
        parallel: Vec<String>,
        lanes: u16,
        vector_loops: usize,
    }
    impl Visitor for S {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { var, extent, kind, .. } = s {
                if *kind == tvm_core::tir::ForKind::Parallel {
                    self.parallel.push(format!("{} over {}", var.name(), tvm_core::tir::printer::print_expr(extent)));
                }
            }
            if let Stmt::Store { indices, .. } = s {
                let l = indices.iter().map(|i| i.dtype().lanes).max().unwrap_or(1);
                self.lanes = self.lanes.max(l);
                self.vector_loops += (l > 1) as usize;
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, e: &tvm_core::tir::Expr) {
            self.lanes = self.lanes.max(e.dtype().lanes);
            walk_expr(self, e)
        }
    }
    let mut s = S::default();
    s.visit_stmt(&f.body);
    json!({
        "parallel": s.parallel,
        "lanes": s.lanes.max(1),
        "vector_stores": s.vector_loops,
        "levels": if f.target.features.is_empty() { "AVX-512, AVX2+FMA (detected at run time), portable" } else { "the target's features" },
    })
}

/// For each source line: the TIR nodes it produced. A `schedule!` statement produced the
/// loops of the axes it made, annotated, reordered or moved (its `Schedule::origins`
/// entry), a bound axis its thread index, an axis whose loop vanished (vectorized,
/// unrolled) the stores of its stage; a statement of the algorithm produced its stage's
/// loops and stores.
fn links_json(k: &Kernel, s: &Schedule, f: &PrimFunc) -> Value {
    let present = present_nodes(f);
    let mut by_line: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    let stage_stores = |stage: tvm_core::schedule::StageId| -> Vec<String> {
        let name = &s.stage(stage).name;
        present
            .iter()
            .filter_map(|(n, bname)| match n {
                NodeRef::Store(_) if bname == name => Some(node_key(*n)),
                _ => None,
            })
            .collect()
    };
    let axis_nodes = |a: tvm_core::schedule::AxisId| -> Vec<String> {
        let ax = s.axis(a);
        let st = s.stage(ax.stage);
        if let Some(tag) = st.ann.get(&a).and_then(|x| x.bind) {
            return vec![node_key(NodeRef::Bind(tag))];
        }
        let l = NodeRef::Loop(ax.var.id());
        if present.iter().any(|(n, _)| *n == l) {
            vec![node_key(l)]
        } else {
            stage_stores(ax.stage)
        }
    };
    for (loc, axes) in &s.origins {
        let Some((line, _)) = k.source_map.line_col(*loc) else { continue };
        let e = by_line.entry(line).or_default();
        for a in axes {
            e.extend(axis_nodes(*a));
        }
    }
    // A stage's declaration (in the signature, for an output) and its statement in the
    // body both produced its loops and stores.
    let stage_lines = s.stages.iter().enumerate().flat_map(|(i, st)| {
        let decl = k.source_map.line_col(s.graph.tensor(st.tensor).loc).map(|p| p.0);
        let stmt = k
            .ast
            .stages
            .iter()
            .find(|a| a.name.name == st.name)
            .and_then(|a| k.source_map.line_col(a.name.loc))
            .map(|p| p.0);
        [decl, stmt].into_iter().flatten().map(move |l| (l, i))
    });
    for (line, i) in stage_lines.collect::<Vec<_>>() {
        let st = &s.stages[i];
        let mut nodes: Vec<String> = st.leaf.iter().flat_map(|a| axis_nodes(*a)).collect();
        nodes.extend(stage_stores(tvm_core::schedule::StageId(i as u32)));
        by_line.entry(line).or_default().extend(nodes);
    }
    for v in by_line.values_mut() {
        v.sort();
        v.dedup();
    }
    by_line.retain(|_, v| !v.is_empty());
    json!(by_line)
}

/// The loops, thread indices and stores of `f` (with each store's buffer name).
fn present_nodes(f: &PrimFunc) -> Vec<(NodeRef, String)> {
    use tvm_core::tir::visit::{walk_stmt, Visitor};
    struct P(Vec<(NodeRef, String)>);
    impl Visitor for P {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { var, .. } => self.0.push((NodeRef::Loop(var.id()), String::new())),
                Stmt::Store { buffer, .. } => self.0.push((NodeRef::Store(buffer.id()), buffer.name().to_string())),
                _ => {}
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &tvm_core::tir::Expr) {}
    }
    let mut p = P(Vec::new());
    p.visit_stmt(&f.body);
    for k in &f.kernels {
        p.visit_stmt(&k.body);
        p.0.extend(k.thread_vars.iter().map(|(t, _)| (NodeRef::Bind(*t), String::new())));
    }
    p.0
}
