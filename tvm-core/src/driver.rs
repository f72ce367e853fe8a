//! The entry points from a parsed kernel to a lowered function: which schedule a target
//! gets ([`build_schedule`], [`ScheduleSource`]), lowering it ([`lower_for`],
//! [`lower_explained`], [`lower_exact`]), and the user errors a failed lowering becomes
//! (the pipeline in [`crate::lower`] reports what a pass found; here it gets a location
//! in the user's schedule).
//!
//! Which schedule: the block whose target has the kind of the target (`cpu` and `llvm ..`
//! schedule CPUs; `cuda`, `"cuda -arch=sm_90"` CUDA; `opencl` OpenCL). GPU targets share
//! schedules: with no block of its own kind, a GPU target borrows a block of another GPU
//! kind (CUDA first, then OpenCL), so a `schedule!(cuda)` also schedules OpenCL and the
//! reverse. A borrowed block that does not apply to the target (say, 1024 threads per
//! block on an OpenCL device that allows 256), or applies but does not lower there, gives
//! way to the target's default schedule: the user did not write it for this target, and
//! its own errors are reported by [`crate::frontend::check_schedules`].

use crate::frontend::{schedule_apply, select_schedule_block, Kernel, ScheduleBlock};
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

/// The schedule of `kernel` for `target`: its block for the target (own or borrowed, see
/// the module's summary) applied for `target` itself (its limits, not those of the
/// block's target string), stages no statement names with the target's defaults, then
/// validated. With no usable block, [`Schedule::default_for`]. All errors found are
/// returned.
pub fn build_schedule(kernel: &Kernel, target: &Target) -> Result<Schedule, Vec<ScheduleError>> {
    schedule_in(&kernel.graph, &kernel.schedules, target).0
}

/// [`build_schedule`] of the algorithm `graph` with the blocks `schedules`, and where the
/// schedule came from.
fn schedule_in(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> (Result<Schedule, Vec<ScheduleError>>, ScheduleSource) {
    let index = |b: &ScheduleBlock| schedules.iter().position(|x| std::ptr::eq(x, b)).unwrap_or(0);
    let default = |reason: String| {
        let s = Schedule::default_for(graph.clone(), target.clone());
        let errors = s.validate();
        (if errors.is_empty() { Ok(s) } else { Err(errors) }, ScheduleSource::Default { reason })
    };
    match select_schedule_block(schedules, target.kind) {
        Some((b, borrowed)) => match (schedule_apply(graph, b, target.clone()), borrowed) {
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
/// a block of its own borrows the other GPU kind's; where that does not lower on this
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
    lower_explained_in(graph, schedules, target, trace).2
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
    lower_explained_in(&kernel.graph, &kernel.schedules, target, trace)
}

/// Lowers `graph` for `target` with the block `schedules` give it, and nothing else: no
/// fallback to the default schedule where a borrowed block does not lower. How the
/// tuner judges a candidate, and how the macro lowers a record's winner.
pub fn lower_exact(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
) -> Result<PrimFunc, Vec<ScheduleError>> {
    let (sch, _) = schedule_in(graph, schedules, target);
    lower(&sch?)
}

/// [`lower_explained`] of the algorithm `graph` with the blocks `schedules`.
fn lower_explained_in(
    graph: &Graph,
    schedules: &[ScheduleBlock],
    target: &Target,
    trace: &mut dyn FnMut(PassEvent<'_>),
) -> (Option<Schedule>, ScheduleSource, Result<PrimFunc, Vec<ScheduleError>>) {
    let (sch, source) = schedule_in(graph, schedules, target);
    let result = match &sch {
        Ok(s) => lower_traced(s, trace),
        Err(es) => Err(es.clone()),
    };
    // A borrowed block that does not lower on this target gives way to the default
    // schedule: the errors belong to the other target.
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
