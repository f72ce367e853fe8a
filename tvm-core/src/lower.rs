//! The lowering pipeline: a schedule in, a TIR function out, as straight-line code.
//!
//! Each pass's output is checked by the TIR verifier in debug builds, written to
//! `TVM_DUMP_TIR=DIR` when set, and timed with `TVM_TIME_PASSES=1`.

use crate::passes::dump::{dump, time_pass};
use crate::passes::verify_gpu_memory::GpuMemoryProblem;
use crate::passes::*;
use crate::schedule::{Schedule, ScheduleError, ScheduleErrorKind};
use crate::tir::verify::Phase;
use crate::tir::PrimFunc;

/// Lowers a checked schedule to a TIR function for its target. User errors that only
/// show once bounds are known (shared memory size) come back as schedule errors.
pub fn lower(sch: &Schedule) -> Result<PrimFunc, Vec<ScheduleError>> {
    let mut step = 0;
    let mut check = |f: &PrimFunc, pass: &str, phase: Phase| {
        if cfg!(debug_assertions) {
            crate::tir::verify::assert_valid(f, phase, pass);
        }
        dump(f, step, pass);
        step += 1;
    };
    // TE level: inlined stages disappear before bounds are inferred.
    let sch = time_pass("inline_stages", || inline_stages::inline_stages(sch));
    let bounds = time_pass("infer_bound", || infer_bound::infer_bound(&sch));
    let f = time_pass("schedule_ops", || schedule_ops::schedule_ops(&sch, &bounds))?;
    check(&f, "schedule_ops", Phase::Scheduled);
    // Simplify before flattening, so that region extents are constants where possible.
    let f = time_pass("simplify", || simplify::simplify(f));
    check(&f, "simplify", Phase::Scheduled);
    let f = time_pass("flatten_storage", || flatten_storage::flatten_storage(f));
    check(&f, "flatten_storage", Phase::Flattened);
    let mut f = time_pass("simplify", || simplify::simplify(f));
    check(&f, "simplify", Phase::Flattened);
    if sch.target.is_gpu() {
        // Kernels first: vectorization and unrolling then work on kernel bodies too.
        f = time_pass("split_host_device", || split_host_device::split_host_device(f)).map_err(|tags| {
            tags.into_iter()
                .map(|t| {
                    ScheduleError::new(
                        crate::loc::Loc::NONE,
                        ScheduleErrorKind::LaunchExtentVaries { tag: t.dsl_name() },
                    )
                })
                .collect::<Vec<_>>()
        })?;
        check(&f, "split_host_device", Phase::Flattened);
        f = time_pass("simplify", || simplify::simplify(f));
        check(&f, "simplify", Phase::Flattened);
    }
    // Tails first, so the main path of a vectorized loop has no guard left.
    let f = time_pass("hoist_tail_guards", || hoist_tail_guards::hoist_tail_guards(f));
    check(&f, "hoist_tail_guards", Phase::Flattened);
    // Vectorize before unrolling: an unrolled loop may contain a vectorized one.
    let f = time_pass("vectorize_loops", || vectorize_loops::vectorize_loops(f));
    check(&f, "vectorize_loops", Phase::Flattened);
    let f = time_pass("unroll_loops", || unroll_loops::unroll_loops(f));
    check(&f, "unroll_loops", Phase::Flattened);
    let mut f = time_pass("simplify", || simplify::simplify(f));
    check(&f, "simplify", Phase::Flattened);
    if sch.target.is_gpu() {
        f = time_pass("hoist_shared_allocations", || hoist_shared_allocations::hoist_shared_allocations(f));
        check(&f, "hoist_shared_allocations", Phase::Flattened);
        // Barriers go in after unrolling, so each unrolled copy gets its own.
        f = time_pass("inject_thread_sync", || inject_thread_sync::inject_thread_sync(f));
        check(&f, "inject_thread_sync", Phase::Flattened);
        let (problems, _) = verify_gpu_memory::verify_gpu_memory(&f);
        if !problems.is_empty() {
            return Err(problems.into_iter().map(|p| gpu_memory_error(&sch, p)).collect());
        }
    }
    Ok(f)
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
