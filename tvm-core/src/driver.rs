//! The entry points from a parsed kernel to a lowered function: which schedule a target
//! gets ([`build_schedule`], [`ScheduleSource`]), lowering it ([`lower_for`],
//! [`lower_explained`], [`lower_exact`]), and the user errors a failed lowering becomes
//! (the pipeline in [`crate::lower`] reports what a pass found; here it gets a location
//! in the user's schedule).
//!
//! Which schedule: the block whose target has the kind of the target (`cpu` and `llvm ..`
//! schedule CPUs; `cuda`, `"cuda -arch=sm_90"` CUDA; `opencl` OpenCL; `webgpu` WebGPU).
//! GPU targets share schedules: with no block of its own kind, a GPU target borrows a
//! block of another GPU kind (CUDA first, then OpenCL, then Metal, then WebGPU), so a
//! `schedule!(cuda)` also schedules OpenCL and WebGPU, and the reverse. With no block to
//! use, the auto-scheduler derives the schedule (else the flat default). A borrowed block that does not apply to the target (say, 1024 threads per
//! block on an OpenCL device that allows 256), or applies but does not lower there, gives
//! way to the target's default schedule: the user did not write it for this target, and
//! its own errors are reported by [`crate::frontend::check_schedules`].

use crate::frontend::ast::{PatName, Pattern, SchedStmt};
use crate::frontend::{schedule_apply, select_schedule_block, Application, Kernel, ScheduleBlock};
use crate::lower::{LowerError, PassEvent};
use crate::passes::verify_gpu_memory::GpuMemoryProblem;
use crate::passes::verify_loop_annotations::{Dropped, DroppedAnnotation};
use crate::schedule::{Schedule, ScheduleError, ScheduleErrorKind};
use crate::target::Target;
use crate::te::Graph;
use crate::tir::PrimFunc;

/// Where the schedule a target gets came from (tools explain it; see [`build_schedule`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleSource {
    /// The kernel's own `schedule!` block for the target (its index in `schedules`).
    Own { block: usize },
    /// A block written for another GPU target (its index), borrowed.
    Borrowed { block: usize },
    /// The target's default schedule, and why no block was used.
    Default { reason: String },
}

/// Whether the auto-scheduler runs: on (the normal case), or off, with the reason (the
/// macro's retry when code generation refuses a derived schedule, which it can only tell
/// on the macro's own thread, after lowering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Derivation {
    On,
    Off { reason: String },
}

/// The schedule of `kernel` for `target`: its block for the target (own or borrowed, see
/// the module's summary) applied for `target` itself (its limits, not those of the
/// block's target string), stages no statement names with the target's defaults, then
/// validated. With no usable block, [`Schedule::default_for`]. All errors found are
/// returned.
pub fn build_schedule(kernel: &Kernel, target: &Target) -> Result<Schedule, Vec<ScheduleError>> {
    schedule_in(&kernel.graph, &kernel.schedules, target, &Derivation::On).0
}

/// [`build_schedule`] of the algorithm `graph` with the blocks `schedules`, and where the
/// schedule came from.
fn schedule_in(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    derivation: &Derivation,
) -> (Result<Schedule, Vec<ScheduleError>>, ScheduleSource) {
    let index = |b: &ScheduleBlock| schedules.iter().position(|x| std::ptr::eq(x, b)).unwrap_or(0);
    let default = |reason: String| {
        let s = match apply_derived(graph, None, target.clone(), derivation) {
            Ok(s) => Ok(s),
            Err(_) => {
                let s = Schedule::default_for(graph.clone(), target.clone());
                let errors = s.validate();
                if errors.is_empty() {
                    Ok(s)
                } else {
                    Err(errors)
                }
            }
        };
        (s, ScheduleSource::Default { reason })
    };
    if crate::autosched::written_blocks_ignored() {
        return default("`TVM_SCHEDULES=derived` ignores the written blocks".into());
    }
    match select_schedule_block(schedules, target.kind) {
        Some((b, borrowed)) => match (apply_derived(graph, Some(b), target.clone(), derivation), borrowed) {
            (Err(es), true) => default(format!(
                "the `schedule!({})` block does not apply to {}: {}",
                b.target,
                target.kind.name(),
                es.first().map(|e| e.to_string()).unwrap_or_default()
            )),
            (r, true) => (r, ScheduleSource::Borrowed { block: index(b) }),
            (r, false) => (r, ScheduleSource::Own { block: index(b) }),
        },
        None if schedules.iter().all(|b| Target::parse(&b.target).is_err()) => {
            default("the kernel has no `schedule!` block".into())
        }
        None => default(format!("no `schedule!` block is for {}", target.kind.name())),
    }
}

/// Applies `block` (if any) for `target`, then the auto-scheduler's statements for the
/// stages it leaves unshaped ([`crate::autosched`]), then the flat defaults for what no
/// rule covers, and validates the result. The written block's errors are returned as
/// [`schedule_apply`] returns them. Derived statements that fail (a compiler bug, never
/// the user's error) give way to [`schedule_apply`]'s schedule, the reason kept in
/// [`Schedule::derived`].
fn apply_derived(
    graph: &Graph,
    block: Option<&ScheduleBlock>,
    target: Target,
    derivation: &Derivation,
) -> Result<Schedule, Vec<ScheduleError>> {
    let empty =
        ScheduleBlock { target: target.kind.name().to_string(), target_loc: crate::Loc::NONE, stmts: Vec::new() };
    let block = block.unwrap_or(&empty);
    let mut a = Application::new(graph, target.clone());
    a.apply(&block.stmts);
    if a.has_errors() {
        return schedule_apply(graph, block, target);
    }
    let derived = crate::autosched::derive(a.schedule(), &a.bound_names());
    if derived.is_empty() {
        return a.finish();
    }
    if let Derivation::Off { reason } = derivation {
        let mut s = schedule_apply(graph, block, target)?;
        s.derived = Some(Box::new(crate::schedule::DerivedSchedule {
            text: derived.statements(false),
            knob_text: derived.statements(true),
            notes: Vec::new(),
            fallback: Some(reason.clone()),
        }));
        return Ok(s);
    }
    let mut summary = crate::schedule::DerivedSchedule {
        text: derived.statements(false),
        knob_text: derived.statements(true),
        notes: derived.notes.iter().map(|n| (n.stage.clone(), n.rule.to_string(), n.why.clone())).collect(),
        fallback: None,
    };
    let fallback = |why: String, mut summary: crate::schedule::DerivedSchedule| {
        let mut s = schedule_apply(graph, block, target.clone())?;
        summary.fallback = Some(why);
        s.derived = Some(Box::new(summary));
        Ok(s)
    };
    let Some(parsed) = crate::autosched::parse::parse_statements(&derived.statements(false), &derived.target) else {
        return fallback("the derived statements do not parse".into(), summary);
    };
    // The derived statements name stages and their own bindings only.
    a.forget_bindings();
    a.apply(&parsed.stmts);
    match a.finish() {
        Ok(mut s) => {
            s.derived = Some(Box::new(std::mem::take(&mut summary)));
            Ok(s)
        }
        Err(es) => {
            let first = es.first().map(|e| e.to_string()).unwrap_or_default();
            fallback(format!("the derived schedule is not valid: {first}"), summary)
        }
    }
}

/// Lowers a checked schedule to a TIR function for its target (the pipeline of
/// [`crate::lower`]). User errors that only show once loops exist (a request the loops
/// cannot honour, shared memory over the limit) come back as schedule errors.
pub fn lower(sch: &Schedule) -> Result<PrimFunc, Vec<ScheduleError>> {
    lower_traced(sch, &mut |_| {})
}

/// [`lower`], calling `trace` after every pass (see [`crate::lower::lower_traced`]).
pub fn lower_traced(sch: &Schedule, trace: &mut dyn FnMut(PassEvent<'_>)) -> Result<PrimFunc, Vec<ScheduleError>> {
    crate::lower::lower_traced(sch, trace).map_err(|e| user_errors(sch, e))
}

/// Lowers `kernel` for `target` with the block that applies to it. A GPU target without
/// a block of its own borrows another GPU kind's; where that does not lower on this
/// target, it gets its default schedule (the errors belong to the other target).
pub fn lower_for(kernel: &Kernel, target: &Target) -> Result<PrimFunc, Vec<ScheduleError>> {
    lower_for_in_traced(&kernel.graph, &kernel.schedules, target, &mut |_| {})
}

/// [`lower_for`] of the algorithm `graph` with the blocks `schedules` (plain data, so
/// the expansion can lower for several targets on several threads), with a pass tracer.
pub(crate) fn lower_for_in_traced(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
) -> Result<PrimFunc, Vec<ScheduleError>> {
    lower_explained_in(graph, schedules, target, trace, &Derivation::On).2
}

/// [`lower_for`], also saying which schedule was used and calling `trace` after every
/// pass (see [`crate::lower::lower_traced`]). Where a target without a block of its own
/// falls back to its default schedule, the tracer sees the failed lowering, then the
/// fallback's from its first pass (`inline_stages`) again. The schedule is returned
/// when one was built, also when lowering it failed.
pub fn lower_explained(
    kernel: &Kernel,
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
) -> (Option<Schedule>, ScheduleSource, Result<PrimFunc, Vec<ScheduleError>>) {
    lower_explained_in(&kernel.graph, &kernel.schedules, target, trace, &Derivation::On)
}

/// Lowers `graph` for `target` with the block `schedules` give it, and nothing else: no
/// fallback to the default schedule where a borrowed block does not lower. How the
/// tuner judges a candidate, and how the macro lowers a record's winner.
pub fn lower_exact(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> Result<PrimFunc, Vec<ScheduleError>> {
    let (sch, _) = schedule_in(graph, schedules, target, &Derivation::On);
    lower(&sch?)
}

/// [`lower_explained`] of the algorithm `graph` with the blocks `schedules`.
fn lower_explained_in(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
    derivation: &Derivation,
) -> (Option<Schedule>, ScheduleSource, Result<PrimFunc, Vec<ScheduleError>>) {
    let (sch, source) = schedule_in(graph, schedules, target, derivation);
    let result = match &sch {
        Ok(s) => lower_traced(s, trace),
        Err(es) => Err(es.clone()),
    };
    // Derived statements that do not lower are a compiler bug, never the user's: the
    // same schedule without them (the written block and the flat defaults) is lowered.
    if let (Ok(s), Err(es)) = (&sch, &result) {
        if let Some(d) = s.derived.as_ref().filter(|d| d.fallback.is_none()) {
            let block = match &source {
                ScheduleSource::Own { block } | ScheduleSource::Borrowed { block } => schedules.get(*block),
                ScheduleSource::Default { .. } => None,
            };
            let flat = match block {
                Some(b) => schedule_apply(graph, b, target.clone()),
                None => Ok(Schedule::default_for(graph.clone(), target.clone())),
            };
            if let Ok(mut flat) = flat {
                let first = es.first().map(|e| e.to_string()).unwrap_or_default();
                let mut d = (**d).clone();
                d.fallback = Some(format!("the derived schedule does not lower: {first}"));
                flat.derived = Some(Box::new(d));
                let result = lower_traced(&flat, trace);
                return fall_back_to_default(graph, schedules, target, trace, Ok(flat), source, result);
            }
        }
    }
    fall_back_to_default(graph, schedules, target, trace, sch, source, result)
}

/// A borrowed block that does not lower on this target gives way to the default
/// schedule: the errors belong to the other target.
fn fall_back_to_default(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
    sch: Result<Schedule, Vec<ScheduleError>>,
    source: ScheduleSource,
    result: Result<PrimFunc, Vec<ScheduleError>>,
) -> (Option<Schedule>, ScheduleSource, Result<PrimFunc, Vec<ScheduleError>>) {
    if result.is_err() && !matches!(source, ScheduleSource::Own { .. }) {
        let reason = match (&source, &result) {
            (ScheduleSource::Borrowed { block }, Err(es)) => format!(
                "the `schedule!({})` block does not lower for {}: {}",
                schedules[*block].target,
                target.kind.name(),
                es.first().map(|e| e.to_string()).unwrap_or_default()
            ),
            (ScheduleSource::Default { reason }, _) => reason.clone(),
            _ => String::new(),
        };
        let s = Schedule::default_for(graph.clone(), target.clone());
        let result = lower_traced(&s, trace);
        return (Some(s), ScheduleSource::Default { reason }, result);
    }
    (sch.ok(), source, result)
}

/// What the macro lowers per target: the function, the schedule as `schedule!` source
/// ([`schedule_source`]; empty when no schedule was built), and whether derived
/// statements are part of it.
pub(crate) struct Lowering {
    pub func: Result<PrimFunc, Vec<ScheduleError>>,
    pub source: String,
    pub derived: bool,
}

/// [`lower_for_in_traced`] with `derivation`, and the schedule that was lowered.
pub(crate) fn lower_with_source(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
    derivation: &Derivation,
) -> Lowering {
    let (sch, source, func) = lower_explained_in(graph, schedules, target, trace, derivation);
    let text = sch.as_ref().map(|s| schedule_source(schedules, target, s, &source)).unwrap_or_default();
    let derived = sch.and_then(|s| s.derived).is_some_and(|d| d.fallback.is_none());
    Lowering { func, source: text, derived }
}

/// The schedule `sch` (built for `target` from `source`) as `schedule!` source a user can
/// paste into the kernel: the written block's statements (knobs at the values that run),
/// then the statements the auto-scheduler derived for the stages the block leaves
/// unshaped, with their reasons as comments. Stages neither covers keep the flat
/// defaults, as they would in the pasted block.
pub fn schedule_source(
    schedules: &[ScheduleBlock],
    target: &Target,
    sch: &Schedule,
    source: &ScheduleSource,
) -> String {
    let kind = target.kind.name();
    let written = match source {
        ScheduleSource::Own { block } | ScheduleSource::Borrowed { block } => schedules.get(*block),
        ScheduleSource::Default { .. } => None,
    };
    let header = match source {
        ScheduleSource::Own { .. } => format!("the `schedule!({kind})` block as written"),
        ScheduleSource::Borrowed { block } => {
            format!("the `schedule!({})` block, borrowed", schedules.get(*block).map_or("", |b| b.target.as_str()))
        }
        ScheduleSource::Default { reason } => format!("derived by the auto-scheduler: {reason}"),
    };
    let mut out = format!("// The schedule of {kind}: {header}.\nschedule!({kind}) {{\n");
    for st in written.iter().flat_map(|b| &b.stmts) {
        if let SchedStmt::Call { pattern, call, .. } = st {
            match pattern {
                Some(p) => out.push_str(&format!("    let {} = {call};\n", print_pattern(p))),
                None => out.push_str(&format!("    {call};\n")),
            }
        }
    }
    match &sch.derived {
        Some(d) if d.fallback.is_none() && !d.text.is_empty() => {
            if written.is_some() {
                out.push_str("    // Derived for the stages the block leaves unshaped:\n");
            }
            out.push_str(&d.text);
            out.push('\n');
        }
        Some(d) => {
            if let Some(why) = &d.fallback {
                out.push_str(&format!("    // The derived statements were dropped ({why}); the flat defaults run.\n"));
            }
        }
        None => {}
    }
    out.push_str("}\n");
    out
}

fn print_pattern(p: &Pattern) -> String {
    let name = |n: &PatName| match n {
        PatName::Name(n) => n.name.clone(),
        PatName::Wild(_) => "_".to_string(),
    };
    match p {
        Pattern::Single(n) => name(n),
        Pattern::Multi { names, .. } => format!("({})", names.iter().map(name).collect::<Vec<_>>().join(", ")),
    }
}

/// The schedule errors, with locations in `sch`, of a lowering that stopped.
fn user_errors(sch: &Schedule, e: LowerError) -> Vec<ScheduleError> {
    match e {
        LowerError::Schedule(errors) => errors,
        LowerError::LaunchExtentVaries(tags) => tags
            .into_iter()
            .map(|t| {
                ScheduleError::new(crate::loc::Loc::NONE, ScheduleErrorKind::LaunchExtentVaries { tag: t.dsl_name() })
            })
            .collect(),
        LowerError::AnnotationsDropped(dropped) => dropped.into_iter().map(dropped_annotation_error).collect(),
        LowerError::GpuMemory(problems) => problems.into_iter().map(|p| gpu_memory_error(sch, p)).collect(),
    }
}

/// An annotation the lowered code does not honour, as the error at its primitive.
fn dropped_annotation_error(d: DroppedAnnotation) -> ScheduleError {
    let DroppedAnnotation { stage, axis, loc, why } = d;
    let kind = match why {
        Dropped::NotVectorized(why) => {
            ScheduleErrorKind::VectorizeDropped { stage, axis, reason: why.reason(), help: why.help() }
        }
        Dropped::NotUnrolled { extent } => ScheduleErrorKind::UnrollDropped { stage, axis, extent },
        Dropped::NestedParallel { outer } => ScheduleErrorKind::ParallelNested { stage, axis, outer },
    };
    ScheduleError::new(loc, kind)
}

/// A kernel's memory problem, as the error at the stage whose buffer it is.
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
