//! Schedule errors: one variant per rule of the language, each carrying what its message
//! needs. The `loc` of a [`ScheduleError`] points at the offending token.

use crate::loc::Loc;
use std::fmt;

/// A user error in a schedule, at a source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    pub loc: Loc,
    pub kind: ScheduleErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleErrorKind {
    /// No stage or tensor of that name.
    UnknownStage { name: String, known: Vec<String> },
    /// The stage has no axis of that name; `restarted`: it had one before an `rfactor`
    /// gave the stage new axes.
    UnknownAxis { stage: String, axis: String, known: Vec<String>, restarted: bool },
    /// The axis belongs to another stage.
    AxisOfOtherStage { axis: String, owner: String, stage: String },
    /// The axis was already split or fused.
    AxisConsumed { stage: String, axis: String, by: &'static str },
    /// A split factor or part count that is not a positive integer.
    BadSplitFactor { value: String },
    /// `fuse(outer, inner)` where inner does not directly follow outer.
    FuseNotAdjacent { stage: String, outer: String, inner: String, order: Vec<String> },
    /// `fuse` of a spatial and a reduction axis.
    FuseMixedKinds { stage: String, outer: String, inner: String },
    /// `reorder` names an axis twice.
    ReorderDuplicate { stage: String, axis: String },
    /// A reduction axis bound to `block.*`.
    ReduceAxisBoundToBlock { stage: String, axis: String, tag: &'static str },
    /// Two axes of a stage bound to the same tag.
    DuplicateThreadTag { stage: String, tag: &'static str, first: String, second: String },
    /// An axis bound twice.
    AxisAlreadyBound { stage: String, axis: String, tag: &'static str },
    /// `compute_at` of a stage into itself or into one of its producers.
    ComputeAtCycle { producer: String, consumer: String },
    /// `compute_at` to a place that does not enclose every consumer of the producer.
    ComputeAtSkipsConsumer { producer: String, consumer: String, skipped: String, legal: Vec<String> },
    /// `compute_at` to a stage that does not read the producer (directly or through
    /// stages attached inside it).
    ComputeAtNotConsumer { producer: String, consumer: String, legal: Vec<String> },
    /// `compute_at` to an axis that is not a current axis of the consumer.
    ComputeAtAxisNotInConsumer { consumer: String, axis: String, owner: String, legal: Vec<String> },
    /// The product of thread extents of one kernel is over the target's limit.
    BlockTooLarge { stage: String, threads: u64, max: u32 },
    /// `bind` on a CPU target.
    BindOnCpu { axis: String },
    /// A GPU stage computed at root with no axis bound to a block or thread index.
    NotBound { stage: String },
    /// A reduction computed at block level in shared memory with no axis bound to a
    /// thread: every thread of the block would accumulate into the same elements.
    SharedReductionNotBound { stage: String },
    /// An axis of a stage in `local` (per-thread) storage bound to a thread index: each
    /// thread would hold only its own elements, which the other threads read.
    LocalStageBoundToThread { stage: String, axis: String, tag: String },
    /// A stage attached inside a loop bound to a thread index binds the same index to
    /// more threads than that loop has: the threads past the loop's extent never run it.
    NestedThreadsExceed {
        stage: String,
        axis: String,
        tag: String,
        threads: i64,
        outer_stage: String,
        outer_axis: String,
        outer_threads: i64,
    },
    /// `parallel` on a reduction axis.
    ParallelOnReduce { stage: String, axis: String },
    /// `vectorize` on a reduction axis.
    VectorizeOnReduce { stage: String, axis: String },
    /// `vectorize` on an axis that is not the innermost.
    VectorizeNotInnermost { stage: String, axis: String, innermost: String },
    /// `vectorize` on an axis whose extent is not a compile-time constant.
    VectorizeUnknownExtent { stage: String, axis: String },
    /// A `vectorize` the lowering could not honour (found once bounds are known).
    VectorizeDropped { stage: String, axis: String, reason: String, help: String },
    /// An `unroll` of a loop whose extent is not a constant of at most 256.
    UnrollDropped { stage: String, axis: String, extent: Option<i64> },
    /// A `parallel` loop inside another parallel loop.
    ParallelNested { stage: String, axis: String, outer: String },
    /// `parallel` on a GPU target.
    ParallelOnGpu { axis: String },
    /// `prefetch` on a GPU target.
    PrefetchOnGpu { tensor: String },
    /// A prefetch distance that is not a positive integer.
    BadPrefetchOffset { value: String },
    /// A prefetch at an axis that was split or fused afterwards.
    PrefetchAxisGone { stage: String, axis: String, tensor: String },
    /// A prefetch at a vectorized axis.
    PrefetchAtVectorized { stage: String, axis: String, tensor: String },
    /// A prefetch of a stage computed inside another stage's loops (or inlined).
    PrefetchNotRoot { tensor: String },
    /// A prefetch of a tensor that the loop's body does not read.
    PrefetchNotRead { stage: String, axis: String, tensor: String },
    /// A prefetch at a parallel loop of a tensor the loop writes (each iteration owns
    /// only its part of it).
    PrefetchWrittenInParallel { stage: String, axis: String, tensor: String },
    /// A prefetch whose region the analysis cannot bound (an index read from memory).
    PrefetchUnbounded { stage: String, axis: String, tensor: String },
    /// `compute_inline` of an output.
    InlineOutput { stage: String },
    /// `compute_inline` of a reduction.
    InlineReduction { stage: String },
    /// The shared memory of one kernel is over the target's limit.
    SharedMemoryExceeded { bytes: u64, limit: u32 },
    /// The extent bound to a launch dimension varies from block to block.
    LaunchExtentVaries { tag: &'static str },
    /// A shared buffer whose size is not a compile-time constant.
    SharedSizeUnknown { stage: String },
    /// A per-thread (`local`) buffer inside a GPU kernel whose size is not a
    /// compile-time constant: each thread's registers and local memory are fixed.
    LocalSizeUnknown { stage: String },
    /// `shared` scope on a CPU target.
    SharedOnCpu { stage: String },
    /// A scope name other than `shared`, `local`, `global`.
    UnknownScope { name: String },
    /// `schedule!("...")` with a target string that does not parse.
    UnknownTarget { target: String, reason: String },
    /// Two schedules for the same target kind.
    DuplicateSchedule { target: String },
    /// An unknown primitive name.
    UnknownPrimitive { name: String },
    /// A primitive called with the wrong number of arguments.
    WrongArity { name: String, expected: String, got: usize },
    /// An unknown thread tag (`block.w`).
    UnknownThreadTag { name: String },
    /// `cache_write` on a stage that has already been transformed.
    CacheWriteAfterTransform { stage: String },
    /// `cache_write` of a stage that computes several tensors (a `reduce` of several
    /// values).
    CacheWriteSeveralOutputs { stage: String, outputs: Vec<String> },
    /// `cache_read` for a stage that does not read the tensor.
    CacheReadNotReader { tensor: String, reader: String },
    /// `pack` along a dimension the tensor does not have.
    PackDim { tensor: String, dim: String, rank: usize },
    /// `rfactor` of an axis that is not a reduction axis, or is not a root reduction
    /// axis or a part of one split.
    RfactorUnsupported { stage: String, axis: String, why: &'static str },
    /// A primitive applied to an input tensor, which has no stage.
    NotAStage { name: String },
    /// A statement that is not a schedule statement.
    BadStatement { what: String },
    /// An index into `axes()` past its end.
    AxisIndexOutOfRange { stage: String, index: usize, len: usize },
    /// A `let` pattern whose arity does not match what the primitive returns.
    PatternArity { expected: usize, got: usize },
    /// A name that is bound to something else (a stage where an axis is needed).
    WrongKindOfName { name: String, expected: &'static str },
    /// `tune!()`.
    KnobWithoutValues,
    /// `tune!(8, tune!(16, 32))`.
    KnobInKnob,
    /// Two knobs of one block with the same name.
    KnobNameTaken { name: String },
    /// A value written twice in one knob.
    KnobValueRepeated { knob: String, value: String },
    /// A block whose knobs make more candidates than the tuner measures.
    KnobSpaceTooLarge { count: u128, limit: usize },
    /// A knob value with which no candidate of the block is a legal schedule.
    KnobValueNeverLegal { knob: String, value: String, why: String },
    /// A knob in a block for a target that cannot be tuned (one not parsed).
    KnobOutsideSchedule,
    /// `rfactor` of a stage whose axes were annotated or used by `compute_at` before: it
    /// starts the stage afresh, which would drop them.
    RfactorAfterSchedule { stage: String, what: String },
    /// `parallel`, `vectorize` or `bind` on (a part of) a recurrence's scan axis.
    ScanAxisAnnotated { stage: String, axis: String, scan: String, what: &'static str },
    /// `compute_inline`, `compute_at` or `cache_write` of a recurrence.
    ScanStageMoved { stage: String, what: &'static str },
    /// The parts of a recurrence's scan axis reordered out of their order.
    ScanAxisReordered { stage: String, outer: String, inner: String, scan: String },
}

impl ScheduleError {
    pub fn new(loc: Loc, kind: ScheduleErrorKind) -> ScheduleError {
        ScheduleError { loc, kind }
    }

    /// The message: lowercase, no trailing period, quoting the user's names.
    pub fn message(&self) -> String {
        use ScheduleErrorKind::*;
        match &self.kind {
            UnknownStage { name, .. } => format!("unknown stage `{name}`"),
            ScanAxisAnnotated { stage, axis, scan, what } => format!(
                "cannot {what} `{axis}`: it is part of `{scan}`, the axis along which the recurrence `{stage}` reads its earlier elements, which runs in order"
            ),
            RfactorAfterSchedule { stage, what } => format!(
                "`rfactor` of `{stage}` comes after {what}: it gives `{stage}` new axes, so that would be lost"
            ),
            ScanStageMoved { stage, what } => {
                format!("cannot {what} `{stage}`: a recurrence is computed whole, at the root, before its consumers")
            }
            ScanAxisReordered { stage, outer, inner, scan } => format!(
                "`{inner}` runs outside `{outer}`: the parts of `{scan}`, the axis along which the recurrence `{stage}` reads its earlier elements, must keep their order"
            ),
            UnknownAxis { stage, axis, restarted: false, .. } => format!("stage `{stage}` has no axis `{axis}`"),
            UnknownAxis { stage, axis, restarted: true, .. } => {
                format!("stage `{stage}` has no axis `{axis}` any more: its `rfactor` gave it new axes")
            }
            AxisOfOtherStage { axis, owner, stage } => {
                format!("axis `{axis}` belongs to stage `{owner}`, not to `{stage}`")
            }
            AxisConsumed { stage, axis, by } => {
                format!("axis `{axis}` of stage `{stage}` was already consumed by an earlier {by}")
            }
            BadSplitFactor { value } => format!("split factor `{value}` is not a positive integer"),
            FuseNotAdjacent { outer, inner, .. } => {
                format!("cannot fuse `{outer}` and `{inner}`: they are not adjacent, outer before inner")
            }
            FuseMixedKinds { outer, inner, .. } => {
                format!("cannot fuse `{outer}` and `{inner}`: one is a reduction axis and the other is not")
            }
            ReorderDuplicate { axis, .. } => format!("reorder names axis `{axis}` twice"),
            ReduceAxisBoundToBlock { axis, tag, .. } => {
                format!("reduction axis `{axis}` cannot be bound to `{tag}`")
            }
            DuplicateThreadTag { stage, tag, first, second } => {
                format!("axes `{first}` and `{second}` of stage `{stage}` are both bound to `{tag}`")
            }
            AxisAlreadyBound { axis, tag, .. } => format!("axis `{axis}` is already bound to `{tag}`"),
            ComputeAtCycle { producer, consumer } => {
                format!("compute_at of `{producer}` at `{consumer}` creates a cycle")
            }
            ComputeAtSkipsConsumer { producer, consumer, skipped, .. } => {
                format!("compute_at of `{producer}` at `{consumer}` skips `{skipped}`, which also needs `{producer}`")
            }
            ComputeAtNotConsumer { producer, consumer, .. } => {
                format!("stage `{consumer}` does not read `{producer}`")
            }
            ComputeAtAxisNotInConsumer { consumer, axis, owner, .. } => {
                format!("`{owner}.{axis}` is not a current axis of stage `{consumer}`")
            }
            BlockTooLarge { stage, threads, max } => {
                format!("stage `{stage}` launches {threads} threads per block; the target allows at most {max}")
            }
            BindOnCpu { axis } => format!("cannot bind `{axis}` on a CPU target"),
            NotBound { stage } => format!("stage `{stage}` runs on a GPU but no axis is bound to a block or thread"),
            SharedReductionNotBound { stage } => format!(
                "reduction `{stage}` is computed in shared memory by every thread of the block at once (a race): no \
                 axis of it is bound to a thread"
            ),
            LocalStageBoundToThread { stage, axis, tag } => format!(
                "`{stage}` is in `local` (per-thread) storage, but its axis `{axis}` is bound to `{tag}`: each thread \
                 would hold only its own elements while the others read them"
            ),
            NestedThreadsExceed { stage, axis, tag, threads, outer_stage, outer_axis, outer_threads } => format!(
                "`{stage}` binds `{axis}` to {threads} threads of `{tag}`, but it runs inside `{outer_stage}`'s \
                 `{outer_axis}`, bound to `{tag}` with {outer_threads}: the threads past {outer_threads} never reach it"
            ),
            ParallelOnReduce { axis, .. } => format!("cannot parallelize reduction axis `{axis}`"),
            VectorizeOnReduce { axis, .. } => format!("cannot vectorize reduction axis `{axis}`"),
            VectorizeNotInnermost { axis, innermost, .. } => {
                format!("cannot vectorize `{axis}`: it is not the innermost axis (`{innermost}` is)")
            }
            VectorizeUnknownExtent { axis, .. } => {
                format!("cannot vectorize `{axis}`: its extent is not a compile-time constant")
            }
            VectorizeDropped { axis, reason, .. } => format!("cannot vectorize `{axis}`: {reason}"),
            UnrollDropped { axis, extent: Some(n), .. } => {
                format!(
                    "cannot unroll `{axis}`: its extent is {n}; at most {} iterations are unrolled",
                    super::MAX_UNROLL
                )
            }
            UnrollDropped { axis, extent: None, .. } => {
                format!("cannot unroll `{axis}`: its extent is not a compile-time constant")
            }
            ParallelNested { axis, outer, .. } => {
                format!("`{axis}` is inside parallel loop `{outer}`; only the outermost parallel loop runs in parallel")
            }
            ParallelOnGpu { axis } => format!("cannot parallelize `{axis}` on a GPU target"),
            PrefetchOnGpu { tensor } => format!("cannot prefetch `{tensor}` on a GPU target"),
            BadPrefetchOffset { value } => {
                format!("prefetch distance must be a positive integer literal (iterations ahead), got `{value}`")
            }
            PrefetchAxisGone { stage, axis, tensor } => {
                format!("the prefetch of `{tensor}` is at `{stage}.{axis}`, which was split or fused afterwards")
            }
            PrefetchAtVectorized { stage, axis, tensor } => {
                format!("cannot prefetch `{tensor}` at `{stage}.{axis}`: the axis is vectorized")
            }
            PrefetchNotRoot { tensor } => {
                format!("cannot prefetch `{tensor}`: it is not computed at root, so its buffer has no fixed place")
            }
            PrefetchNotRead { stage, axis, tensor } => {
                format!("the loop of `{stage}.{axis}` does not read `{tensor}`, so there is nothing to prefetch")
            }
            PrefetchWrittenInParallel { stage, axis, tensor } => format!(
                "cannot prefetch `{tensor}` at parallel loop `{stage}.{axis}`: its iterations write `{tensor}`, each only its own part"
            ),
            PrefetchUnbounded { stage, axis, tensor } => format!(
                "cannot prefetch `{tensor}` at `{stage}.{axis}`: the part of it one iteration reads has no bound the compiler can find"
            ),
            InlineOutput { stage } => format!("cannot inline `{stage}`: it is an output"),
            InlineReduction { stage } => format!("cannot inline `{stage}`: it is a reduction"),
            SharedMemoryExceeded { bytes, limit } => {
                format!("kernel uses {bytes} bytes of shared memory; the target allows {limit}")
            }
            SharedSizeUnknown { stage } => {
                format!("the shared buffer of `{stage}` has no compile-time constant size")
            }
            LaunchExtentVaries { tag } => format!("the extent bound to `{tag}` varies from block to block"),
            LocalSizeUnknown { stage } => {
                format!("each GPU thread would need a buffer of `{stage}` with no compile-time constant size")
            }
            SharedOnCpu { stage } => format!("`shared` scope for `{stage}` on a CPU target"),
            UnknownScope { name } => format!("unknown memory scope `{name}`"),
            UnknownTarget { target, reason } => format!("unknown target `{target}`: {reason}"),
            DuplicateSchedule { target } => format!("a second schedule for target `{target}`"),
            UnknownPrimitive { name } => format!("unknown schedule primitive `{name}`"),
            WrongArity { name, expected, got } => {
                let args = if expected == "1" { "argument" } else { "arguments" };
                let were = if *got == 1 { "was" } else { "were" };
                format!("`{name}` takes {expected} {args}, but {got} {were} given")
            }
            UnknownThreadTag { name } => format!("unknown thread tag `{name}`"),
            CacheWriteAfterTransform { stage } => {
                format!("cache_write of `{stage}` after its axes were transformed")
            }
            CacheWriteSeveralOutputs { stage, outputs } => {
                let names: Vec<String> = outputs.iter().map(|o| format!("`{o}`")).collect();
                format!("cache_write of `{stage}`, which computes {} together", names.join(", "))
            }
            CacheReadNotReader { tensor, reader } => format!("stage `{reader}` does not read `{tensor}`"),
            PackDim { tensor, dim, rank } => format!("`{tensor}` has no dimension `{dim}`: it has {rank}, numbered from 0"),
            RfactorUnsupported { axis, why, .. } => format!("cannot rfactor `{axis}`: {why}"),
            NotAStage { name } => format!("`{name}` is an input tensor, not a stage"),
            BadStatement { what } => format!("expected a schedule statement, found {what}"),
            AxisIndexOutOfRange { stage, index, len } => {
                format!("axis index {index} is out of range: stage `{stage}` has {len} axes here")
            }
            PatternArity { expected, got } => {
                format!("this primitive returns {expected} value(s), but the pattern binds {got}")
            }
            WrongKindOfName { name, expected } => format!("`{name}` is not {expected}"),
            KnobWithoutValues => "a knob needs at least one value".into(),
            KnobInKnob => "a knob's value cannot be another knob".into(),
            KnobNameTaken { name } => format!("a knob named `{name}` is already in this schedule"),
            KnobValueRepeated { knob, value } => format!("knob `{knob}` has the value `{value}` twice"),
            KnobSpaceTooLarge { count, limit } => {
                format!("the knobs of this schedule make {count} candidates, more than the {limit} a tuner measures")
            }
            KnobValueNeverLegal { knob, value, why } => {
                format!("value `{value}` of knob `{knob}` is illegal in every candidate: {why}")
            }
            KnobOutsideSchedule => "`tune!` is a knob of a schedule block, not an expression".into(),
        }
    }

    /// The `help:` line: what would be legal.
    pub fn help(&self) -> Option<String> {
        use ScheduleErrorKind::*;
        let list = |v: &[String]| v.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
        Some(match &self.kind {
            UnknownStage { known, .. } => format!("the stages are {}", list(known)),
            UnknownAxis { known, .. } => format!("its axes are {}", list(known)),
            AxisOfOtherStage { stage, .. } => format!("use an axis of `{stage}`"),
            AxisConsumed { .. } => "use the axes the split or fuse returned".into(),
            BadSplitFactor { .. } => "write a positive integer literal such as `32`".into(),
            FuseNotAdjacent { order, .. } => format!("the current order is {}", list(order)),
            FuseMixedKinds { .. } => "fuse spatial axes with spatial axes, reduction axes with reduction axes".into(),
            ReorderDuplicate { .. } => "name each axis once".into(),
            ReduceAxisBoundToBlock { .. } => {
                "bind it to `thread.x` for a cross-thread reduction, or rfactor it first".into()
            }
            DuplicateThreadTag { .. } => "bind each tag to one axis per stage; fuse the axes first".into(),
            AxisAlreadyBound { .. } => "bind each axis once".into(),
            ComputeAtCycle { .. } => "compute a producer at one of its consumers".into(),
            ComputeAtSkipsConsumer { legal, .. } | ComputeAtNotConsumer { legal, .. } => {
                if legal.is_empty() {
                    "the only legal place is `compute_root()`".into()
                } else {
                    format!("legal places: {}, or `compute_root()`", list(legal))
                }
            }
            ComputeAtAxisNotInConsumer { legal, consumer, .. } => {
                let q: Vec<String> = legal.iter().map(|a| format!("{consumer}.{a}")).collect();
                format!("the axes of `{consumer}` are {}", list(&q))
            }
            BlockTooLarge { .. } => "split the thread axes with a smaller factor".into(),
            BindOnCpu { .. } => "use `parallel` on a CPU target".into(),
            NotBound { .. } => "bind its outer axis to `block.x` and an inner one to `thread.x`".into(),
            SharedReductionNotBound { stage } => format!(
                "bind a part of its reduction axis to `thread.x` (a cross-thread reduction), bind a spatial axis to a \
                 thread, or compute `{stage}` inside the consumer's thread loop"
            ),
            LocalStageBoundToThread { .. } => {
                "stage it in shared memory (`cache_read(shared, ..)`), or drop the binding and compute it inside the \
                 thread loop"
                    .into()
            }
            NestedThreadsExceed { tag, outer_threads, outer_axis, .. } => format!(
                "split so that `{tag}` spans at most {outer_threads} threads here, or split `{outer_axis}` into as many \
                 threads as this stage needs"
            ),
            ParallelOnReduce { .. } => "parallelize a spatial axis, or rfactor the reduction first".into(),
            ScanAxisAnnotated { .. } => {
                "annotate another axis of the stage (each of its iterations runs a whole scan); keep the scan axis a serial loop".into()
            }
            ScanStageMoved { .. } => "leave it at the root (`compute_root()`), where it is by default".into(),
            RfactorAfterSchedule { stage, .. } => format!(
                "call `rfactor` first, then schedule the new axes of `{stage}` (`let [i] = {stage}.axes();`)"
            ),
            ScanAxisReordered { outer, .. } => format!("keep `{outer}` outside"),
            VectorizeOnReduce { .. } => "vectorize a spatial axis, or rfactor the reduction first".into(),
            VectorizeNotInnermost { .. } => "reorder the axis innermost first".into(),
            VectorizeUnknownExtent { .. } => "split the axis by a constant and vectorize the inner part".into(),
            VectorizeDropped { help, .. } => help.clone(),
            UnrollDropped { .. } => "split the axis by a constant factor and unroll the inner part".into(),
            ParallelNested { .. } => "fuse the two axes and parallelize the fused axis, or parallelize only one of them".into(),
            ParallelOnGpu { .. } => "bind the axis to `block.x` (or `thread.x`) instead".into(),
            PrefetchOnGpu { .. } => {
                "on a GPU, stage the tile in shared memory with `cache_read(shared, [...])` instead".into()
            }
            BadPrefetchOffset { .. } => "the distance is a positive integer literal: `1` fetches the next iteration's data".into(),
            PrefetchAxisGone { .. } => "prefetch at one of the axes the split or fuse made".into(),
            PrefetchAtVectorized { .. } => "prefetch at an outer loop; its iterations cover many vectors".into(),
            PrefetchNotRoot { .. } => "prefetch the inputs it reads, or compute it at root".into(),
            PrefetchNotRead { .. } => "prefetch at a loop whose body (or a stage computed inside it) reads it".into(),
            PrefetchWrittenInParallel { .. } => {
                "prefetch the tensors the loop only reads, or prefetch at a serial loop inside it".into()
            }
            PrefetchUnbounded { .. } => {
                "prefetch tensors read at indices computed from the loop variables, not read from memory".into()
            }
            InlineOutput { .. } | InlineReduction { .. } => "use `compute_at` or `compute_root()`".into(),
            SharedMemoryExceeded { .. } => "use smaller tiles".into(),
            SharedSizeUnknown { .. } => "compute the shared stage at an axis whose tile has a constant size".into(),
            LocalSizeUnknown { .. } => {
                "compute the stage at an inner axis, so each thread holds a constant-size part of it".into()
            }
            LaunchExtentVaries { .. } => {
                "bind axes whose extents are compile-time constants, e.g. split by a constant and bind the inner part".into()
            }
            SharedOnCpu { .. } => "use `local` on a CPU target".into(),
            UnknownScope { .. } => "the scopes are `shared`, `local` and `global`".into(),
            UnknownTarget { .. } => "targets: `cpu`, `cuda`, `opencl`, `webgpu`, or a string such as \"cuda -arch=sm_90\"".into(),
            DuplicateSchedule { .. } => "merge the two schedules into one".into(),
            UnknownPrimitive { name } => {
                let all = PRIMITIVES.join(", ");
                match closest(name, PRIMITIVES) {
                    Some(p) => format!("did you mean `{p}`? The primitives are {all}"),
                    None => format!("the primitives are {all}"),
                }
            }
            WrongArity { name, .. } => format!("write `{}`", usage(name)?),
            UnknownThreadTag { .. } => "the tags are `block.x|y|z` and `thread.x|y|z`".into(),
            CacheWriteAfterTransform { .. } => "call cache_write before any other primitive on the stage".into(),
            CacheWriteSeveralOutputs { .. } => {
                "compute the stage where it is read (`compute_at`), so its results are allocated there; or cache_read each tensor".into()
            }
            CacheReadNotReader { .. } => "list the stages that read the tensor".into(),
            PackDim { rank: 0, .. } => "a tensor of no dimensions has none to pack along".into(),
            PackDim { rank, .. } => format!("pack along a dimension's number, 0 to {}", rank - 1),
            RfactorUnsupported { .. } => "rfactor a reduction axis or one part of a single split of one".into(),
            NotAStage { .. } => "schedule the stages that read it, or use cache_read".into(),
            BadStatement { .. } => {
                "a statement calls a primitive on a stage, `STAGE.PRIMITIVE(ARGS);`, or names what it returns with `let`".into()
            }
            KnobWithoutValues => "list the values to try, the first being the default: `tune!(8, 16, 32)`".into(),
            KnobInKnob => "list every value in one knob: `tune!(8, 16, 32)`".into(),
            KnobNameTaken { .. } => "give each knob its own name, `tune!(NAME: v1, v2, ..)`".into(),
            KnobValueRepeated { .. } => "list each value once".into(),
            KnobSpaceTooLarge { .. } => "fewer values per knob, or fewer knobs".into(),
            KnobValueNeverLegal { .. } => "remove the value, or change the schedule so it is legal".into(),
            AxisIndexOutOfRange { .. } | PatternArity { .. } | WrongKindOfName { .. } | KnobOutsideSchedule => {
                return None
            }
        })
    }
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())?;
        if let Some(h) = self.help() {
            write!(f, "\nhelp: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScheduleError {}

/// Every primitive of `schedule!`, in the order the language reference lists them.
pub const PRIMITIVES: &[&str] = &[
    "split",
    "split_nparts",
    "tile",
    "fuse",
    "reorder",
    "bind",
    "parallel",
    "vectorize",
    "unroll",
    "prefetch",
    "compute_at",
    "compute_inline",
    "compute_root",
    "cache_read",
    "pack",
    "cache_write",
    "rfactor",
    "axes",
    "reduce_axes",
];

/// The name of `names` closest to `name` (a misspelling: `vectorise`, `paralel`), if one
/// is close enough to be what was meant.
pub(crate) fn closest<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(name, n), *n))
        .filter(|&(d, n)| d <= 2.max(n.len() / 4) && d < n.len())
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

/// How a primitive is called, for arity errors.
fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "split" => "let (o, i) = s.split(axis, FACTOR);",
        "split_nparts" => "let (o, i) = s.split_nparts(axis, NPARTS);",
        "tile" => "let (xo, yo, xi, yi) = s.tile(x, y, FX, FY);",
        "fuse" => "let f = s.fuse(outer, inner);",
        "reorder" => "s.reorder(a, b, ...);",
        "bind" => "s.bind(axis, thread.x);",
        "parallel" => "s.parallel(axis);",
        "vectorize" => "s.vectorize(axis);",
        "unroll" => "s.unroll(axis);",
        "prefetch" => "s.prefetch(x, axis, 1);",
        "compute_at" => "p.compute_at(stage, axis);",
        "compute_inline" => "p.compute_inline();",
        "compute_root" => "p.compute_root();",
        "cache_read" => "let t = x.cache_read(shared, [stage, ...]);",
        "pack" => "let t = x.pack(DIM, FACTOR, [stage, ...]);",
        "cache_write" => "let t = s.cache_write(local);",
        "rfactor" => "let rf = s.rfactor(axis);",
        "axes" => "let [a, b] = s.axes();",
        "reduce_axes" => "let [k] = s.reduce_axes();",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{closest, PRIMITIVES};

    #[test]
    fn a_misspelt_primitive_finds_the_one_meant() {
        assert_eq!(closest("vectorise", PRIMITIVES), Some("vectorize"));
        assert_eq!(closest("paralel", PRIMITIVES), Some("parallel"));
        assert_eq!(closest("compute_inlined", PRIMITIVES), Some("compute_inline"));
        assert_eq!(closest("reduceaxes", PRIMITIVES), Some("reduce_axes"));
        // Nothing close: no guess.
        assert_eq!(closest("transpose", PRIMITIVES), None);
        assert_eq!(closest("gather", PRIMITIVES), None);
    }
}
