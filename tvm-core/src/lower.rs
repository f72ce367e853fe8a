//! The lowering pipeline: a schedule in, a TIR function out, as straight-line code. The
//! passes every target runs come first (`lower_common`: from the schedule to loop nests),
//! then one function per target family lists all of its passes in order (`lower_cpu`,
//! `lower_gpu`), each with the reason for its place. The same pass may appear in both
//! lists: each reads top to bottom on its own, as TVM keeps its host and device pass
//! lists apart.
//!
//! Each pass's output is checked by the TIR verifier in debug builds, written to
//! `TVM_DUMP_TIR=DIR` when set, and timed for [`lower_traced`]'s tracer (the
//! expansion prints the times as one table per kernel with `TVM_TIME_PASSES=1`).
//!
//! A user error that shows only once loops exist (a `vectorize` the code cannot honour,
//! shared memory over the limit) stops the pipeline where it is found, as a
//! [`LowerError`] that says what the pass found; [`crate::driver`] turns it into the
//! schedule errors, with locations, that the user sees.

use crate::passes::dump::dump;
use crate::passes::verify_gpu_memory::GpuMemoryProblem;
use crate::passes::verify_loop_annotations::DroppedAnnotation;
use crate::passes::*;
use crate::schedule::{Schedule, ScheduleError};
use crate::tir::verify::Phase;
use crate::tir::{PrimFunc, ThreadTag};

/// Why lowering stopped: what the pass that found the problem reports.
#[derive(Clone, Debug)]
pub enum LowerError {
    /// `schedule_ops`: errors of the schedule found while building its loop nests.
    Schedule(Vec<ScheduleError>),
    /// `split_host_device`: launch dimensions whose bound extent varies from block to
    /// block.
    LaunchExtentVaries(Vec<ThreadTag>),
    /// `verify_loop_annotations`: the user's `vectorize`, `unroll` and `parallel`
    /// requests the lowered loops do not honour.
    AnnotationsDropped(Vec<DroppedAnnotation>),
    /// `verify_gpu_memory`: shared or local memory a kernel cannot have.
    GpuMemory(Vec<GpuMemoryProblem>),
}

/// One step of [`lower_traced`]: a pass, its wall time, and the function after it
/// (`None` for the tensor-expression passes that run before there is TIR).
pub struct PassEvent<'a> {
    pub pass: &'static str,
    pub micros: u64,
    pub func: Option<&'a PrimFunc>,
}

/// Lowers a checked schedule to a TIR function for its target, calling `trace` after
/// every pass in order (the pipeline explorer shows them). The time of a pass is measured
/// from the end of the previous event, so the tracer's own work is not counted.
pub fn lower_traced(sch: &Schedule, trace: &mut dyn FnMut(PassEvent<'_>)) -> Result<PrimFunc, LowerError> {
    let mut t = Tracer { trace, last: std::time::Instant::now(), step: 0 };
    let (sch, f) = lower_common(sch, &mut t)?;
    if sch.target.is_gpu() {
        lower_gpu(&sch, f, &mut t)
    } else {
        lower_cpu(&sch, f, &mut t)
    }
}

/// The passes every target runs: from the schedule to one loop nest per stage, still in
/// the stages' own dims. Returns the schedule with inlined stages substituted (what the
/// later checks read) and the function.
fn lower_common(sch: &Schedule, t: &mut Tracer<'_>) -> Result<(Schedule, PrimFunc), LowerError> {
    // Tensor-expression level: inlined stages disappear before bounds are inferred.
    let sch = inline_stages::inline_stages(sch);
    t.te("inline_stages");
    let bounds = infer_bound::infer_bound(&sch);
    // The second inference only where a split may shift (never on GPUs).
    let shifted = (!bounds.shifted.is_empty()).then(|| infer_bound::infer_bound_shifted(&sch));
    t.te("infer_bound");
    let f = schedule_ops::schedule_ops(&sch, &bounds, shifted.as_ref()).map_err(LowerError::Schedule)?;
    t.tir(&f, "schedule_ops", Phase::Scheduled);
    // Simplify before flattening, so that region extents are constants where possible.
    let f = t.run(f, "simplify", Phase::Scheduled, simplify::simplify);
    Ok((sch, f))
}

/// The CPU's passes after [`lower_common`].
fn lower_cpu(sch: &Schedule, f: PrimFunc, t: &mut Tracer<'_>) -> Result<PrimFunc, LowerError> {
    // Before flattening: it replaces an intermediate's `Realize` by its output's row while
    // every access still names a region in the stages' own dims.
    let f = t.run(f, "reuse_output", Phase::Scheduled, reuse_output::reuse_output);
    let f = t.run(f, "flatten_storage", Phase::Flattened, flatten_storage::flatten_storage);
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // After flattening (one index per access, which its slice proofs read) and before the
    // loop passes, so the tails of both fused bodies are peeled and vectorized as one.
    let f = t.run(f, "fuse_loops", Phase::Flattened, fuse_loops::fuse_loops);
    // Tails first, so the main path of a vectorized loop has no guard left.
    let f = t.run(f, "hoist_tail_guards", Phase::Flattened, hoist_tail_guards::hoist_tail_guards);
    // Vectorize before unrolling: an unrolled loop may contain a vectorized one.
    let (f, not_vectorized) = vectorize_loops::vectorize_loops(f);
    t.tir(&f, "vectorize_loops", Phase::Flattened);
    let f = t.run(f, "unroll_loops", Phase::Flattened, unroll_loops::unroll_loops);
    // Every `vectorize`, `unroll` and `parallel` of the user's is now honoured or never
    // will be: one that is not stops lowering (a compile error, never quiet serial code).
    verify_annotations(sch, &f, not_vectorized)?;
    // Unrolled copies carry constant indices to fold.
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // After unrolling and folding, which leave a register tile's accesses as ramps at
    // constant offsets: one vectorized across its buffer's rows is stored transposed.
    let f = t.run(f, "transpose_locals", Phase::Flattened, transpose_locals::transpose_locals);
    // After unrolling, so the unrolled taps of a window are sibling loops that can share
    // one interior, and after hoist_tail_guards, whose `if whole` it peels off the loop
    // around a vector loop.
    let f = t.run(f, "partition_loops", Phase::Flattened, partition_loops::partition_loops);
    // After partitioning, which peels the borders: the tests left in front of a register
    // tile's statements (a split's tail) are then invariant in the loops around them.
    let f = t.run(f, "unswitch_loops", Phase::Flattened, unswitch_loops::unswitch_loops);
    // The cut points and the interiors' dropped conjuncts fold.
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // After the loop passes: the fold loop of an rfactor's combine becomes straight-line
    // vector steps, which no loop pass has to see.
    let f = t.run(f, "tree_combine", Phase::Flattened, tree_combine::tree_combine);
    // Last: the runs of updates it forwards are straight-line only once unrolling has
    // copied a register tile's reduction step into one row of accumulators.
    let f = t.run(f, "forward_stores", Phase::Flattened, forward_stores::forward_stores);
    Ok(f)
}

/// The GPU's passes after [`lower_common`] (CUDA and OpenCL alike).
fn lower_gpu(sch: &Schedule, f: PrimFunc, t: &mut Tracer<'_>) -> Result<PrimFunc, LowerError> {
    let f = t.run(f, "flatten_storage", Phase::Flattened, flatten_storage::flatten_storage);
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // Kernels first: vectorization and unrolling then work on kernel bodies too.
    let f = split_host_device::split_host_device(f).map_err(LowerError::LaunchExtentVaries)?;
    t.tir(&f, "split_host_device", Phase::Flattened);
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // Tails first, so the main path of a vectorized loop has no guard left.
    let f = t.run(f, "hoist_tail_guards", Phase::Flattened, hoist_tail_guards::hoist_tail_guards);
    // Vectorize before unrolling: an unrolled loop may contain a vectorized one.
    let (f, not_vectorized) = vectorize_loops::vectorize_loops(f);
    t.tir(&f, "vectorize_loops", Phase::Flattened);
    let f = t.run(f, "unroll_loops", Phase::Flattened, unroll_loops::unroll_loops);
    // Every `vectorize` and `unroll` of the user's is now honoured or never will be.
    verify_annotations(sch, &f, not_vectorized)?;
    // Unrolled copies carry constant indices to fold.
    let f = t.run(f, "simplify", Phase::Flattened, simplify::simplify);
    // Shared allocations to the top of each kernel, so barrier insertion sees one flat
    // sequence of shared-memory accesses.
    let f = t.run(f, "hoist_shared_allocations", Phase::Flattened, hoist_shared_allocations::hoist_shared_allocations);
    // Barriers go in after unrolling, so each unrolled copy gets its own.
    let f = t.run(f, "inject_thread_sync", Phase::Flattened, inject_thread_sync::inject_thread_sync);
    // Last: every shared allocation is final, at the top of its kernel.
    let (problems, _) = verify_gpu_memory::verify_gpu_memory(&f);
    if !problems.is_empty() {
        return Err(LowerError::GpuMemory(problems));
    }
    Ok(f)
}

/// Stops lowering at the user's annotations `f` does not honour (see
/// [`verify_loop_annotations`](crate::passes::verify_loop_annotations)).
fn verify_annotations(
    sch: &Schedule,
    f: &PrimFunc,
    not_vectorized: Vec<(crate::tir::Var, vectorize_loops::NotVectorized)>,
) -> Result<(), LowerError> {
    let dropped = verify_loop_annotations::verify_loop_annotations(sch, f, not_vectorized);
    if dropped.is_empty() {
        Ok(())
    } else {
        Err(LowerError::AnnotationsDropped(dropped))
    }
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

    /// Runs the TIR pass `run` on `f` and reports its output as `pass`.
    fn run(&mut self, f: PrimFunc, pass: &'static str, phase: Phase, run: fn(PrimFunc) -> PrimFunc) -> PrimFunc {
        let f = run(f);
        self.tir(&f, pass, phase);
        f
    }
}
