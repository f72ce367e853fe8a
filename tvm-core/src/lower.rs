//! The lowering pipeline: a schedule in, a TIR function out, as straight-line code.
//!
//! Each pass's output is checked by the TIR verifier in debug builds, written to
//! `TVM_DUMP_TIR=DIR` when set, and timed for [`lower_traced`]'s tracer (the
//! expansion prints the times as one table per kernel with `TVM_TIME_PASSES=1`).

use crate::passes::dump::dump;
use crate::passes::verify_gpu_memory::GpuMemoryProblem;
use crate::passes::*;
use crate::schedule::{Schedule, ScheduleError, ScheduleErrorKind};
use crate::tir::verify::Phase;
use crate::tir::PrimFunc;

/// Lowers a checked schedule to a TIR function for its target. User errors that only
/// show once bounds are known (shared memory size) come back as schedule errors.
pub fn lower(sch: &Schedule) -> Result<PrimFunc, Vec<ScheduleError>> {
    lower_traced(sch, &mut |_| {})
}

/// One step of [`lower_traced`]: a pass, its wall time, and the function after it
/// (`None` for the tensor-expression passes that run before there is TIR).
pub struct PassEvent<'a> {
    pub pass: &'static str,
    pub micros: u64,
    pub func: Option<&'a PrimFunc>,
}

/// [`lower`], calling `trace` after every pass in order (the pipeline explorer shows
/// them). The time of a pass is measured from the end of the previous event, so the
/// tracer's own work is not counted.
pub fn lower_traced(sch: &Schedule, trace: &mut dyn FnMut(PassEvent<'_>)) -> Result<PrimFunc, Vec<ScheduleError>> {
    let mut t = Tracer { trace, last: std::time::Instant::now(), step: 0 };
    // TE level: inlined stages disappear before bounds are inferred.
    let sch = inline_stages::inline_stages(sch);
    t.te("inline_stages");
    let bounds = infer_bound::infer_bound(&sch);
    t.te("infer_bound");
    let f = schedule_ops::schedule_ops(&sch, &bounds)?;
    t.tir(&f, "schedule_ops", Phase::Scheduled);
    // Simplify before flattening, so that region extents are constants where possible.
    let mut f = simplify::simplify(f);
    t.tir(&f, "simplify", Phase::Scheduled);
    if !sch.target.is_gpu() {
        f = reuse_output::reuse_output(f);
        t.tir(&f, "reuse_output", Phase::Scheduled);
    }
    let f = flatten_storage::flatten_storage(f);
    t.tir(&f, "flatten_storage", Phase::Flattened);
    let mut f = simplify::simplify(f);
    t.tir(&f, "simplify", Phase::Flattened);
    if !sch.target.is_gpu() {
        f = fuse_loops::fuse_loops(f);
        t.tir(&f, "fuse_loops", Phase::Flattened);
    }
    if sch.target.is_gpu() {
        // Kernels first: vectorization and unrolling then work on kernel bodies too.
        f = split_host_device::split_host_device(f).map_err(|tags| {
            tags.into_iter()
                .map(|t| {
                    ScheduleError::new(
                        crate::loc::Loc::NONE,
                        ScheduleErrorKind::LaunchExtentVaries { tag: t.dsl_name() },
                    )
                })
                .collect::<Vec<_>>()
        })?;
        t.tir(&f, "split_host_device", Phase::Flattened);
        f = simplify::simplify(f);
        t.tir(&f, "simplify", Phase::Flattened);
    }
    // Tails first, so the main path of a vectorized loop has no guard left.
    let f = hoist_tail_guards::hoist_tail_guards(f);
    t.tir(&f, "hoist_tail_guards", Phase::Flattened);
    // Vectorize before unrolling: an unrolled loop may contain a vectorized one.
    let (f, not_vectorized) = vectorize_loops::vectorize_loops(f);
    t.tir(&f, "vectorize_loops", Phase::Flattened);
    let f = unroll_loops::unroll_loops(f);
    t.tir(&f, "unroll_loops", Phase::Flattened);
    let dropped = dropped_requests(&sch, &f, not_vectorized);
    if !dropped.is_empty() {
        return Err(dropped);
    }
    let mut f = simplify::simplify(f);
    t.tir(&f, "simplify", Phase::Flattened);
    if !sch.target.is_gpu() {
        f = partition_loops::partition_loops(f);
        t.tir(&f, "partition_loops", Phase::Flattened);
        // After the tails are peeled: their tests are then invariant in the loops around.
        f = unswitch_loops::unswitch_loops(f);
        t.tir(&f, "unswitch_loops", Phase::Flattened);
        f = simplify::simplify(f);
        t.tir(&f, "simplify", Phase::Flattened);
        f = tree_combine::tree_combine(f);
        t.tir(&f, "tree_combine", Phase::Flattened);
        f = forward_stores::forward_stores(f);
        t.tir(&f, "forward_stores", Phase::Flattened);
    }
    if sch.target.is_gpu() {
        f = hoist_shared_allocations::hoist_shared_allocations(f);
        t.tir(&f, "hoist_shared_allocations", Phase::Flattened);
        // Barriers go in after unrolling, so each unrolled copy gets its own.
        f = inject_thread_sync::inject_thread_sync(f);
        t.tir(&f, "inject_thread_sync", Phase::Flattened);
        let (problems, _) = verify_gpu_memory::verify_gpu_memory(&f);
        if !problems.is_empty() {
            return Err(problems.into_iter().map(|p| gpu_memory_error(&sch, p)).collect());
        }
    }
    Ok(f)
}

/// Verifies (debug builds), dumps (`TVM_DUMP_TIR`) and reports each pass's output.
struct Tracer<'t> {
    trace: &'t mut dyn FnMut(PassEvent<'_>),
    last: std::time::Instant,
    step: usize,
}

impl Tracer<'_> {
    fn event(&mut self, pass: &'static str, func: Option<&PrimFunc>, micros: u64) {
        (self.trace)(PassEvent { pass, micros, func });
        self.last = std::time::Instant::now();
    }

    /// A tensor-expression pass (no TIR yet).
    fn te(&mut self, pass: &'static str) {
        let micros = self.last.elapsed().as_micros() as u64;
        self.event(pass, None, micros);
    }

    fn tir(&mut self, f: &PrimFunc, pass: &'static str, phase: Phase) {
        // The pass's own time: the verifier and the dump below are not counted.
        let micros = self.last.elapsed().as_micros() as u64;
        if cfg!(debug_assertions) {
            crate::tir::verify::assert_valid(f, phase, pass);
        }
        dump(f, self.step, pass);
        self.step += 1;
        self.event(pass, Some(f), micros);
    }
}

/// The user's `vectorize`, `unroll` and `parallel` requests that the lowered code does
/// not honour: a compile error each, at the primitive, never quiet serial code. Requests
/// of the default schedule (no location) may fall back silently: it asks for vectors
/// wherever they might work.
fn dropped_requests(
    sch: &Schedule,
    f: &crate::tir::PrimFunc,
    not_vectorized: Vec<(crate::tir::Var, vectorize_loops::NotVectorized)>,
) -> Vec<ScheduleError> {
    use crate::tir::visit::{walk_stmt, Visitor};
    use crate::tir::{ForKind, Stmt, Var};
    use std::collections::HashMap;
    // Loop variable -> (stage, axis, annotation).
    let mut asked = HashMap::new();
    for st in &sch.stages {
        for (&a, ann) in &st.ann {
            if ann.kind != ForKind::Serial && ann.bind.is_none() && !ann.loc.is_none() {
                let ax = sch.axis(a);
                asked.insert(ax.var.clone(), (st.name.clone(), ax.name.clone(), ann.clone()));
            }
        }
    }
    let mut errors = Vec::new();
    for (var, why) in not_vectorized {
        if let Some((stage, axis, ann)) = asked.get(&var) {
            let (reason, help) = (why.reason(), why.help());
            let kind = ScheduleErrorKind::VectorizeDropped { stage: stage.clone(), axis: axis.clone(), reason, help };
            errors.push(ScheduleError::new(ann.loc, kind));
        }
    }
    struct Walk<'a> {
        asked: &'a HashMap<Var, (String, String, crate::schedule::AxisAnn)>,
        parallel: Vec<String>,
        errors: Vec<ScheduleError>,
        seen: Vec<Var>,
    }
    impl Visitor for Walk<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            let Stmt::For { var, extent, kind, .. } = s else { return walk_stmt(self, s) };
            let request = self.asked.get(var).filter(|_| !self.seen.contains(var));
            let trivial = extent.as_int().is_some_and(|e| e <= 1);
            match (kind, request) {
                (ForKind::Unrolled, Some((stage, axis, ann))) => {
                    self.seen.push(var.clone());
                    let kind = ScheduleErrorKind::UnrollDropped {
                        stage: stage.clone(),
                        axis: axis.clone(),
                        extent: extent.as_int(),
                    };
                    self.errors.push(ScheduleError::new(ann.loc, kind));
                }
                (ForKind::Parallel, Some((stage, axis, ann))) if !self.parallel.is_empty() && !trivial => {
                    self.seen.push(var.clone());
                    let outer = self.parallel[0].clone();
                    let kind = ScheduleErrorKind::ParallelNested { stage: stage.clone(), axis: axis.clone(), outer };
                    self.errors.push(ScheduleError::new(ann.loc, kind));
                }
                _ => {}
            }
            let parallel = *kind == ForKind::Parallel && !trivial;
            if parallel {
                let name = self.asked.get(var).map(|r| r.1.clone()).unwrap_or_else(|| var.name().to_string());
                self.parallel.push(name);
            }
            walk_stmt(self, s);
            if parallel {
                self.parallel.pop();
            }
        }
        fn visit_expr(&mut self, _: &crate::tir::Expr) {}
    }
    let mut w = Walk { asked: &asked, parallel: Vec::new(), errors, seen: Vec::new() };
    w.visit_stmt(&f.body);
    for k in &f.kernels {
        w.visit_stmt(&k.body);
    }
    w.errors
}

fn gpu_memory_error(sch: &Schedule, p: GpuMemoryProblem) -> ScheduleError {
    let loc_of =
        |buffer: &str| sch.graph.find(buffer).map(|t| sch.graph.tensor(t).loc).unwrap_or(crate::loc::Loc::NONE);
    match p {
        GpuMemoryProblem::UnknownSize { buffer } => {
            ScheduleError::new(loc_of(&buffer), ScheduleErrorKind::SharedSizeUnknown { stage: buffer })
        }
        GpuMemoryProblem::LocalUnknownSize { buffer } => {
            ScheduleError::new(loc_of(&buffer), ScheduleErrorKind::LocalSizeUnknown { stage: buffer })
        }
        GpuMemoryProblem::TooLarge { bytes, limit, largest } => {
            ScheduleError::new(loc_of(&largest), ScheduleErrorKind::SharedMemoryExceeded { bytes, limit })
        }
    }
}
