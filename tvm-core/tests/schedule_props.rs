//! Property: a random *legal* schedule never changes what a kernel computes.
//!
//! Each case picks a small computation from a fixed family of templates (elementwise,
//! injective and reduction intermediates, stencils with `if` guards, transposed reads,
//! one and two reduction axes, `sum` / `min` / `max`, a producer read by two consumers),
//! a dtype (`f32` or `i32`), sizes 1..=9 and, per dim, a literal or a symbolic extent.
//! It then writes a random schedule as DSL text (`schedule!(cpu)` or `schedule!(cuda)`;
//! the OpenCL property writes the CUDA statements once more as `schedule!(opencl)`),
//! so the frontend is exercised too: `cache_write(local)`, `cache_read`, `rfactor`;
//! random `split`, `split_nparts`, `tile`, `fuse` of adjacent axes and `reorder` of any
//! subset of the leaf axes; `compute_inline` / `compute_root` / `compute_at` at any axis
//! of a stage that reads the producer; `parallel` / `unroll` / `vectorize` (innermost
//! axis with a known extent). On CUDA every root stage has a split bound to `block.x` /
//! `thread.x` (maybe another axis on `thread.y`, or a cross-thread reduction: a part of
//! a reduction axis on `thread.x`), shared caches are computed at block level, and
//! block-level stages may bind an axis to `thread.x` (cooperative fetching).
//!
//! The generator models the leaf axes and attachments of every stage, so it writes only
//! well-formed statements. It usually steers clear of schedules that race by
//! construction (a reduction into shared memory computed by every thread at once,
//! `local` storage bound to threads) or do redundant work (a `shared` cache computed
//! inside a thread), and for a fifth of the stages writes them on purpose: validation
//! must reject the first two (the property checks that it did, for some cases), and the
//! third must give the right result. What it does not
//! decide exactly (a compute_at that skips one of two consumers, shared memory of
//! symbolic size, ...) it leaves to `Schedule::validate` and the lowering, and counts
//! those rejections: each property asserts that most cases are accepted and that every
//! primitive shows up in accepted schedules, so it cannot pass vacuously. Any other
//! schedule error means the generator is wrong and fails the test as such.
//!
//! Oracles: a plain Rust reference for each template, and the same kernel under the
//! default schedule. Inputs are small integers (also for `f32`), so every sum and
//! product is exact in either dtype and results must be *equal*, in any evaluation
//! order. Outputs are poisoned (NaN, or `i32::MIN` for `i32`), so an element the kernel
//! never writes shows up. A compiler panic, an interpreter error (out-of-bounds access,
//! race, divergent barrier) or a wrong element fails the case.
//!
//! A failure prints the kernel with its schedule (shrunk by proptest), the sizes, the
//! lowered TIR and the first differing elements. Knobs: `SCHEDULE_PROPS_CASES` (cases
//! per property) and `SCHEDULE_PROPS_SEED` (another deterministic seed).
//!
//! The minimal reproductions at the end of the file are the six bugs this property
//! found (tail splits of derived axes, compute_at inside a symbolic fused axis, unrolled
//! shared allocations, block-dependent thread extents, compute_at at a thread-bound
//! reduction axis, barriers under thread guards); all are fixed, and the tests stay as
//! regression tests (their doc comments describe the failure as it was).

#[path = "common/mod.rs"]
mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;
use tvm_core::driver::build_schedule;
use tvm_core::frontend::parse_str;
use tvm_core::interp::{run, ArgValue, HostTensor};
use tvm_core::schedule::{Schedule, ScheduleError, ScheduleErrorKind};
use tvm_core::tir::printer::print_func;
use tvm_core::Target;

// ---------------------------------------------------------------------------------
// The computations
// ---------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    F32,
    I32,
}

/// One stage of a template, as the schedule sees it.
struct StageDef {
    name: &'static str,
    spatial: &'static [&'static str],
    reduce: &'static [&'static str],
    output: bool,
    /// Tensors (inputs or stages) its body reads.
    reads: &'static [&'static str],
}

/// The sizes of the dims `M`, `N`, `K` (in that order).
type Sizes = [usize; 3];

struct Template {
    name: &'static str,
    /// The kernel: `{D}` is the dtype, `{M}` `{N}` `{K}` the dims (a name or a literal),
    /// `{0}` ... `{3}` integer constants of the dtype.
    text: &'static str,
    /// Inputs in parameter order: name and shape (indices into `Sizes`).
    inputs: &'static [(&'static str, &'static [usize])],
    /// The output's shape.
    output: &'static [usize],
    stages: &'static [StageDef],
    /// The expected output from the inputs (row-major) and the sizes.
    reference: fn(&[Vec<i64>], Sizes) -> Vec<i64>,
}

const M: usize = 0;
const N: usize = 1;
const K: usize = 2;

const fn out(name: &'static str, spatial: &'static [&'static str], reads: &'static [&'static str]) -> StageDef {
    StageDef { name, spatial, reduce: &[], output: true, reads }
}
const fn mid(name: &'static str, spatial: &'static [&'static str], reads: &'static [&'static str]) -> StageDef {
    StageDef { name, spatial, reduce: &[], output: false, reads }
}
const fn red(
    name: &'static str,
    spatial: &'static [&'static str],
    reduce: &'static [&'static str],
    output: bool,
    reads: &'static [&'static str],
) -> StageDef {
    StageDef { name, spatial, reduce, output, reads }
}

const TEMPLATES: &[Template] = &[
    Template {
        name: "elementwise",
        text: "fn elementwise(a: {D}[{M}, {N}], b: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    c[i, j] = a[i, j] * {2} + b[i, j];
}",
        inputs: &[("a", &[M, N]), ("b", &[M, N])],
        output: &[M, N],
        stages: &[out("c", &["i", "j"], &["a", "b"])],
        reference: |x, [m, n, _]| (0..m * n).map(|p| x[0][p] * 2 + x[1][p]).collect(),
    },
    Template {
        name: "chain",
        text: "fn chain(a: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    let t[i, j]: {D}[{M}, {N}] = a[i, j] + {1};
    c[i, j] = t[i, j] * t[i, j] - a[i, j];
}",
        inputs: &[("a", &[M, N])],
        output: &[M, N],
        stages: &[mid("t", &["i", "j"], &["a"]), out("c", &["i", "j"], &["t", "a"])],
        reference: |x, [m, n, _]| (0..m * n).map(|p| (x[0][p] + 1) * (x[0][p] + 1) - x[0][p]).collect(),
    },
    Template {
        name: "transpose",
        text: "fn transpose(a: {D}[{N}, {M}], b: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    let t[i, j]: {D}[{N}, {M}] = a[i, j] * {3};
    c[i, j] = t[j, i] - b[i, j];
}",
        inputs: &[("a", &[N, M]), ("b", &[M, N])],
        output: &[M, N],
        stages: &[mid("t", &["i", "j"], &["a"]), out("c", &["i", "j"], &["t", "b"])],
        reference: |x, [m, n, _]| {
            let mut c = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    c.push(x[0][j * m + i] * 3 - x[1][i * n + j]);
                }
            }
            c
        },
    },
    Template {
        name: "stencil",
        text: "fn stencil(a: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    let t[i, j]: {D}[{M}, {N}] = a[i, j] * {2} + {1};
    let u[i, j]: {D}[{M}, {N}] = t[i, j] + (if j >= 1 { t[i, j - 1] } else { {0} })
        + (if j + 1 < {N} { t[i, j + 1] } else { {0} });
    c[i, j] = u[i, j] - (if i >= 1 { u[i - 1, j] } else { {0} })
        + (if i + 2 < {M} { u[i + 2, j] } else { {1} });
}",
        inputs: &[("a", &[M, N])],
        output: &[M, N],
        stages: &[mid("t", &["i", "j"], &["a"]), mid("u", &["i", "j"], &["t"]), out("c", &["i", "j"], &["u"])],
        reference: |x, [m, n, _]| {
            let t = |i: usize, j: usize| x[0][i * n + j] * 2 + 1;
            let u = |i: usize, j: usize| {
                t(i, j) + if j >= 1 { t(i, j - 1) } else { 0 } + if j + 1 < n { t(i, j + 1) } else { 0 }
            };
            let mut c = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    c.push(u(i, j) - if i >= 1 { u(i - 1, j) } else { 0 } + if i + 2 < m { u(i + 2, j) } else { 1 });
                }
            }
            c
        },
    },
    Template {
        name: "matmul",
        text: "fn matmul(a: {D}[{M}, {K}], b: {D}[{K}, {N}]) -> c: {D}[{M}, {N}] {
    c[i, j] = sum(a[i, k] * b[k, j] for k in 0..{K});
}",
        inputs: &[("a", &[M, K]), ("b", &[K, N])],
        output: &[M, N],
        stages: &[red("c", &["i", "j"], &["k"], true, &["a", "b"])],
        reference: |x, [m, n, k]| {
            let mut c = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    c.push((0..k).map(|p| x[0][i * k + p] * x[1][p * n + j]).sum());
                }
            }
            c
        },
    },
    Template {
        name: "dense_epilogue",
        text: "fn dense_epilogue(a: {D}[{M}, {K}], b: {D}[{N}, {K}], e: {D}[{N}]) -> c: {D}[{M}, {N}] {
    let d[i, j]: {D}[{M}, {N}] = sum(a[i, k] * b[j, k] for k in 0..{K});
    c[i, j] = max(d[i, j] + e[j], {0});
}",
        inputs: &[("a", &[M, K]), ("b", &[N, K]), ("e", &[N])],
        output: &[M, N],
        stages: &[red("d", &["i", "j"], &["k"], false, &["a", "b"]), out("c", &["i", "j"], &["d", "e"])],
        reference: |x, [m, n, k]| {
            let mut c = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    let d: i64 = (0..k).map(|p| x[0][i * k + p] * x[1][j * k + p]).sum();
                    c.push((d + x[2][j]).max(0));
                }
            }
            c
        },
    },
    Template {
        name: "two_consumers",
        text: "fn two_consumers(a: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    let t[i, j]: {D}[{M}, {N}] = a[i, j] - {1};
    let s[i]: {D}[{M}] = sum(t[i, k] for k in 0..{N});
    c[i, j] = t[i, j] * s[i];
}",
        inputs: &[("a", &[M, N])],
        output: &[M, N],
        stages: &[
            mid("t", &["i", "j"], &["a"]),
            red("s", &["i"], &["k"], false, &["t"]),
            out("c", &["i", "j"], &["t", "s"]),
        ],
        reference: |x, [m, n, _]| {
            let mut c = Vec::new();
            for i in 0..m {
                let s: i64 = (0..n).map(|p| x[0][i * n + p] - 1).sum();
                for j in 0..n {
                    c.push((x[0][i * n + j] - 1) * s);
                }
            }
            c
        },
    },
    Template {
        name: "sum_two_axes",
        text: "fn sum_two_axes(a: {D}[{M}, {K}], b: {D}[{K}, {N}]) -> c: {D}[{M}] {
    c[i] = sum(a[i, k] * b[k, l] for k in 0..{K}, l in 0..{N});
}",
        inputs: &[("a", &[M, K]), ("b", &[K, N])],
        output: &[M],
        stages: &[red("c", &["i"], &["k", "l"], true, &["a", "b"])],
        reference: |x, [m, n, k]| {
            (0..m)
                .map(|i| {
                    (0..k)
                        .flat_map(|p| (0..n).map(move |l| (p, l)))
                        .map(|(p, l)| x[0][i * k + p] * x[1][p * n + l])
                        .sum()
                })
                .collect()
        },
    },
    Template {
        name: "row_min",
        text: "fn row_min(a: {D}[{M}, {N}]) -> c: {D}[{M}, {N}] {
    let m[i]: {D}[{M}] = min(a[i, k] for k in 0..{N});
    c[i, j] = a[i, j] - m[i];
}",
        inputs: &[("a", &[M, N])],
        output: &[M, N],
        stages: &[red("m", &["i"], &["k"], false, &["a"]), out("c", &["i", "j"], &["a", "m"])],
        reference: |x, [m, n, _]| {
            let mut c = Vec::new();
            for i in 0..m {
                let mn = (0..n).map(|p| x[0][i * n + p]).min().expect("n >= 1");
                for j in 0..n {
                    c.push(x[0][i * n + j] - mn);
                }
            }
            c
        },
    },
    Template {
        name: "conv1d",
        text: "fn conv1d(a: {D}[{M}, {N}], w: {D}[{K}]) -> c: {D}[{M}, {N}] {
    let p[i, j]: {D}[{M}, {N}] = a[i, j] + {1};
    c[i, j] = sum((if j + k < {N} { p[i, j + k] } else { {0} }) * w[k] for k in 0..{K});
}",
        inputs: &[("a", &[M, N]), ("w", &[K])],
        output: &[M, N],
        stages: &[mid("p", &["i", "j"], &["a"]), red("c", &["i", "j"], &["k"], true, &["p", "w"])],
        reference: |x, [m, n, k]| {
            let mut c = Vec::new();
            for i in 0..m {
                for j in 0..n {
                    c.push((0..k).map(|q| if j + q < n { (x[0][i * n + j + q] + 1) * x[1][q] } else { 0 }).sum());
                }
            }
            c
        },
    },
];

const DIM_NAMES: [&str; 3] = ["M", "N", "K"];

/// The kernel text of `tpl` for a dtype, sizes and literal/symbolic dims.
fn kernel_text(tpl: &Template, ty: Ty, sizes: Sizes, literal: [bool; 3]) -> String {
    let mut s = tpl.text.to_string();
    s = s.replace("{D}", if ty == Ty::F32 { "f32" } else { "i32" });
    for d in 0..3 {
        let v = if literal[d] { sizes[d].to_string() } else { DIM_NAMES[d].to_string() };
        s = s.replace(&format!("{{{}}}", DIM_NAMES[d]), &v);
    }
    for c in 0..4 {
        let v = if ty == Ty::F32 { format!("{c}.0") } else { c.to_string() };
        s = s.replace(&format!("{{{c}}}"), &v);
    }
    s
}

// ---------------------------------------------------------------------------------
// Schedule plans (what proptest generates and shrinks)
// ---------------------------------------------------------------------------------

/// A loop transformation; selectors pick among the stage's current leaf axes (modulo).
#[derive(Clone, Debug)]
enum Transform {
    Split {
        axis: u8,
        factor: i64,
    },
    SplitNParts {
        axis: u8,
        parts: i64,
    },
    Fuse {
        at: u8,
    },
    /// The distinct axes picked, in this order, take the positions they occupy.
    Reorder {
        picks: Vec<u8>,
    },
    Tile {
        x: u8,
        y: u8,
        fx: i64,
        fy: i64,
    },
}

#[derive(Clone, Copy, Debug)]
enum AttachPlan {
    Inline,
    Root,
    At { consumer: u8, axis: u8 },
}

#[derive(Clone, Copy, Debug)]
enum Ann {
    Parallel(u8),
    Unroll(u8),
    Vectorize,
}

/// GPU thread binding of a stage.
#[derive(Clone, Copy, Debug)]
struct Bind {
    /// Root stages: the spatial axis split and bound to `block.x` / `thread.x`.
    axis: u8,
    factor: i64,
    /// Root stages: another spatial axis bound to `thread.y`.
    thread_y: Option<u8>,
    /// Block-level stages: bind the innermost axis to `thread.x` (cooperative fetch).
    cooperative: bool,
    /// Root reduction stages: a cross-thread reduction over a part (this factor) of the
    /// reduction axis picked.
    cross_thread: Option<(u8, i64)>,
    /// Do not steer clear of what races (a reduction into shared memory at block level, a
    /// `local` stage bound to threads; validation must reject those) or of a `shared`
    /// cache computed inside a thread (lowered as TVM does).
    racy: bool,
}

#[derive(Clone, Debug)]
struct StagePlan {
    transforms: Vec<Transform>,
    attach: AttachPlan,
    bind: Bind,
    anns: Vec<Ann>,
}

/// A computation: a template, a dtype, sizes, and which dims are literals.
#[derive(Clone, Copy, Debug)]
struct Spec {
    template: usize,
    ty: Ty,
    sizes: Sizes,
    literal: [bool; 3],
}

/// One test case: a computation and a schedule plan for it.
#[derive(Clone, Debug)]
struct Case {
    spec: Spec,
    /// Stages (of the template) to `cache_write(local)` first.
    cache_writes: Vec<u8>,
    /// `(input, reader)` pairs to `cache_read` (local on CPUs, shared on GPUs).
    cache_reads: Vec<(u8, u8)>,
    /// `rfactor` of a reduction stage (picked), over one of its reduction axes
    /// (picked), or over the outer or inner part of a split of it by a factor.
    rfactor: Option<(u8, u8, Option<(i64, bool)>)>,
    /// One plan per stage (template stages and cache stages, in topological order).
    plans: Vec<StagePlan>,
}

fn transform() -> impl Strategy<Value = Transform> {
    prop_oneof![
        3 => (any::<u8>(), 1..=5i64).prop_map(|(axis, factor)| Transform::Split { axis, factor }),
        1 => (any::<u8>(), 1..=4i64).prop_map(|(axis, parts)| Transform::SplitNParts { axis, parts }),
        2 => any::<u8>().prop_map(|at| Transform::Fuse { at }),
        2 => prop::collection::vec(any::<u8>(), 2..=5).prop_map(|picks| Transform::Reorder { picks }),
        1 => (any::<u8>(), any::<u8>(), 1..=4i64, 1..=4i64).prop_map(|(x, y, fx, fy)| Transform::Tile { x, y, fx, fy }),
    ]
}

fn attach_plan() -> impl Strategy<Value = AttachPlan> {
    prop_oneof![
        1 => Just(AttachPlan::Inline),
        1 => Just(AttachPlan::Root),
        3 => (any::<u8>(), any::<u8>()).prop_map(|(consumer, axis)| AttachPlan::At { consumer, axis }),
    ]
}

fn ann() -> impl Strategy<Value = Ann> {
    prop_oneof![any::<u8>().prop_map(Ann::Parallel), any::<u8>().prop_map(Ann::Unroll), Just(Ann::Vectorize),]
}

fn bind() -> impl Strategy<Value = Bind> {
    (
        any::<u8>(),
        1..=8i64,
        prop::option::of(any::<u8>()),
        any::<bool>(),
        prop::option::of((any::<u8>(), 1..=8i64)),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(axis, factor, thread_y, cooperative, cross_thread, racy)| Bind {
            axis,
            factor,
            thread_y,
            cooperative,
            cross_thread,
            racy,
        })
}

fn stage_plan() -> impl Strategy<Value = StagePlan> {
    (prop::collection::vec(transform(), 0..=4), attach_plan(), bind(), prop::collection::vec(ann(), 0..=2))
        .prop_map(|(transforms, attach, bind, anns)| StagePlan { transforms, attach, bind, anns })
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..TEMPLATES.len(),
        prop_oneof![Just(Ty::I32), Just(Ty::F32)],
        [1..=9usize, 1..=9usize, 1..=9usize],
        any::<[bool; 3]>(),
        prop::collection::vec(any::<u8>(), 0..=1),
        prop::collection::vec((any::<u8>(), any::<u8>()), 0..=2),
        prop::option::weighted(0.25, (any::<u8>(), any::<u8>(), prop::option::of((1..=4i64, any::<bool>())))),
        prop::collection::vec(stage_plan(), MAX_STAGES),
    )
        .prop_map(|(template, ty, sizes, literal, cache_writes, cache_reads, rfactor, plans)| Case {
            spec: Spec { template, ty, sizes, literal },
            cache_writes,
            cache_reads,
            rfactor,
            plans,
        })
}

/// Template stages (3) + cache_write stages (1) + cache_read stages (2) + rfactor (1).
const MAX_STAGES: usize = 7;

// ---------------------------------------------------------------------------------
// The model of the schedule, and the DSL text it writes
// ---------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct MAxis {
    /// How the schedule names it: `c.i` for a root axis, a `let` name otherwise.
    r: String,
    reduce: bool,
    /// The extent when it is a compile-time constant (as `Schedule::static_extent`
    /// computes it for a root stage).
    ext: Option<i64>,
    bound: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum MAttach {
    Root,
    Inline,
    /// At the stage of that index, at the axis of that name.
    At(usize, String),
}

#[derive(Clone, Debug)]
struct MStage {
    /// The name the schedule uses for the stage.
    r: String,
    leaf: Vec<MAxis>,
    reduction: bool,
    output: bool,
    /// An explicit scope (cache stages).
    explicit_local: bool,
    cache: bool,
    /// Names of what its body reads (inputs or stage names).
    reads: Vec<String>,
    attach: MAttach,
    /// Wanted consumer of a planned compute_at (index), decided before the axis.
    at_consumer: Option<usize>,
    /// GPU stages: the leaf position of the (first) thread-bound axis.
    tx_pos: Option<usize>,
    /// Which of the case's plans schedules it (by role, so that shrinking the caches
    /// away keeps the other stages' plans).
    plan: usize,
    /// Must run inside a thread (GPU): a reduction into inferred storage, or a stage
    /// that such a stage is attached to.
    needs_thread: bool,
}

struct Gen<'a> {
    stages: Vec<MStage>,
    stmts: Vec<String>,
    plans: &'a [StagePlan],
    fresh: usize,
}

impl Gen<'_> {
    fn name(&mut self, stage: usize) -> String {
        self.fresh += 1;
        format!("{}_{}", self.stages[stage].r, self.fresh)
    }

    fn plan(&self, stage: usize) -> &StagePlan {
        &self.plans[self.stages[stage].plan % self.plans.len()]
    }

    fn pos(&self, stage: usize, axis: &str) -> usize {
        self.stages[stage].leaf.iter().position(|a| a.r == axis).expect("a leaf axis")
    }

    /// The non-inlined stages that read stage `s`'s tensor, looking through inlined
    /// stages.
    fn effective_consumers(&self, s: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![self.stages[s].r.clone()];
        while let Some(t) = stack.pop() {
            for (q, st) in self.stages.iter().enumerate() {
                if st.reads.contains(&t) {
                    if st.attach == MAttach::Inline {
                        stack.push(st.r.clone());
                    } else if !out.contains(&q) {
                        out.push(q);
                    }
                }
            }
        }
        out.sort();
        out
    }

    fn split(&mut self, s: usize, p: usize, by: i64, nparts: bool) {
        let a = self.stages[s].leaf[p].clone();
        let (o, i) = (self.name(s), self.name(s));
        let prim = if nparts { "split_nparts" } else { "split" };
        self.stmts.push(format!("let ({o}, {i}) = {}.{prim}({}, {by});", self.stages[s].r, a.r));
        let (oe, ie) = if nparts {
            (Some(by), a.ext.map(|e| (e + by - 1) / by))
        } else {
            (a.ext.map(|e| (e + by - 1) / by), Some(by))
        };
        let mk = |r: String, ext| MAxis { r, reduce: a.reduce, ext, bound: false };
        self.stages[s].leaf.splice(p..=p, [mk(o, oe), mk(i, ie)]);
    }

    /// Reorders the axes at `picks` (distinct positions) into that order, as the
    /// primitive does.
    fn reorder(&mut self, s: usize, picks: &[usize]) {
        let names: Vec<String> = picks.iter().map(|&p| self.stages[s].leaf[p].r.clone()).collect();
        self.stmts.push(format!("{}.reorder({});", self.stages[s].r, names.join(", ")));
        let axes: Vec<MAxis> = picks.iter().map(|&p| self.stages[s].leaf[p].clone()).collect();
        let mut sorted = picks.to_vec();
        sorted.sort();
        for (p, a) in sorted.into_iter().zip(axes) {
            self.stages[s].leaf[p] = a;
        }
    }

    fn transform(&mut self, s: usize, t: &Transform) {
        let n = self.stages[s].leaf.len();
        match *t {
            Transform::Split { axis, factor } => self.split(s, axis as usize % n, factor, false),
            Transform::SplitNParts { axis, parts } => self.split(s, axis as usize % n, parts, true),
            Transform::Fuse { at } => {
                if n < 2 {
                    return;
                }
                // The first adjacent pair of the same kind from `at` on.
                let Some(p) = (0..n - 1).map(|k| (at as usize + k) % (n - 1)).find(|&p| {
                    let (a, b) = (&self.stages[s].leaf[p], &self.stages[s].leaf[p + 1]);
                    a.reduce == b.reduce
                }) else {
                    return;
                };
                let f = self.name(s);
                let (a, b) = (self.stages[s].leaf[p].clone(), self.stages[s].leaf[p + 1].clone());
                self.stmts.push(format!("let {f} = {}.fuse({}, {});", self.stages[s].r, a.r, b.r));
                let ext = a.ext.zip(b.ext).map(|(x, y)| x * y);
                self.stages[s].leaf.splice(p..=p + 1, [MAxis { r: f, reduce: a.reduce, ext, bound: false }]);
            }
            Transform::Reorder { ref picks } => {
                let mut ps: Vec<usize> = Vec::new();
                for &k in picks {
                    let p = k as usize % n;
                    if !ps.contains(&p) {
                        ps.push(p);
                    }
                }
                if ps.len() >= 2 {
                    self.reorder(s, &ps);
                }
            }
            Transform::Tile { x, y, fx, fy } => {
                let (px, py) = (x as usize % n, y as usize % n);
                if px == py {
                    return;
                }
                let names = [self.name(s), self.name(s), self.name(s), self.name(s)];
                let (ax, ay) = (self.stages[s].leaf[px].clone(), self.stages[s].leaf[py].clone());
                self.stmts.push(format!(
                    "let ({}, {}, {}, {}) = {}.tile({}, {}, {fx}, {fy});",
                    names[0], names[1], names[2], names[3], self.stages[s].r, ax.r, ay.r
                ));
                // tile = split x, split y, reorder(xo, yo, xi, yi).
                let st = &mut self.stages[s];
                let ceil = |e: Option<i64>, f: i64| e.map(|e| (e + f - 1) / f);
                let mk = |r: &String, a: &MAxis, ext| MAxis { r: r.clone(), reduce: a.reduce, ext, bound: false };
                let xo = mk(&names[0], &ax, ceil(ax.ext, fx));
                let xi = mk(&names[2], &ax, Some(fx));
                let yo = mk(&names[1], &ay, ceil(ay.ext, fy));
                let yi = mk(&names[3], &ay, Some(fy));
                let px = st.leaf.iter().position(|a| a.r == ax.r).expect("leaf");
                st.leaf.splice(px..=px, [xo.clone(), xi.clone()]);
                let py = st.leaf.iter().position(|a| a.r == ay.r).expect("leaf");
                st.leaf.splice(py..=py, [yo.clone(), yi.clone()]);
                let order = [xo, yo, xi, yi];
                let mut ps: Vec<usize> =
                    order.iter().map(|a| st.leaf.iter().position(|b| b.r == a.r).expect("leaf")).collect();
                ps.sort();
                for (p, a) in ps.into_iter().zip(order) {
                    st.leaf[p] = a;
                }
            }
        }
    }

    /// Whether the loop at `pos` of stage `s` (and what is attached there) runs inside
    /// a thread-bound loop.
    fn inside_thread(&self, s: usize, pos: usize) -> bool {
        let st = &self.stages[s];
        if st.tx_pos.is_some_and(|p| pos >= p) {
            return true;
        }
        match &st.attach {
            MAttach::At(c, ax) => self.inside_thread(*c, self.pos(*c, ax)),
            _ => false,
        }
    }
}

/// Writes the schedule of `case` for its template (and the target): DSL statements.
fn schedule_text(case: &Case, gpu: bool) -> Vec<String> {
    let tpl = &TEMPLATES[case.spec.template];
    let ext = |d: usize| case.spec.literal[d].then_some(case.spec.sizes[d] as i64);
    let mut stages: Vec<MStage> = Vec::new();
    for sd in tpl.stages {
        let shape = stage_shape(tpl, sd.name);
        let mut leaf: Vec<MAxis> = sd
            .spatial
            .iter()
            .zip(&shape)
            .map(|(a, &d)| MAxis { r: format!("{}.{a}", sd.name), reduce: false, ext: ext(d), bound: false })
            .collect();
        for (a, d) in sd.reduce.iter().zip(reduce_dims(tpl, sd.name)) {
            leaf.push(MAxis { r: format!("{}.{a}", sd.name), reduce: true, ext: ext(d), bound: false });
        }
        stages.push(MStage {
            r: sd.name.to_string(),
            leaf,
            reduction: !sd.reduce.is_empty(),
            output: sd.output,
            explicit_local: false,
            cache: false,
            reads: sd.reads.iter().map(|s| s.to_string()).collect(),
            attach: MAttach::Root,
            at_consumer: None,
            tx_pos: None,
            needs_thread: false,
            plan: stages.len(),
        });
    }
    let mut g = Gen { stages, stmts: Vec::new(), plans: &case.plans, fresh: 0 };

    // 0. Caches. cache_write(local) first: it must come before any transform.
    let ntpl = g.stages.len();
    let mut written = Vec::new();
    for &sel in &case.cache_writes {
        let s = sel as usize % ntpl;
        if written.contains(&s) {
            continue;
        }
        written.push(s);
        let orig = g.stages[s].clone();
        let cw = format!("{}_cw", orig.r);
        g.stmts.push(format!("let {cw} = {}.cache_write(local);", orig.r));
        let mut leaf = orig.leaf.clone();
        for a in &mut leaf {
            a.r = a.r.replacen(&format!("{}.", orig.r), &format!("{cw}."), 1);
        }
        let cache =
            MStage { r: cw.clone(), leaf, output: false, explicit_local: true, cache: true, plan: 3, ..orig.clone() };
        let st = &mut g.stages[s];
        st.leaf.retain(|a| !a.reduce);
        st.reduction = false;
        st.reads = vec![cw];
        g.stages.insert(s, cache);
    }
    for (k, &(isel, rsel)) in case.cache_reads.iter().enumerate() {
        let (x, shape) = tpl.inputs[isel as usize % tpl.inputs.len()];
        let readers: Vec<usize> = (0..g.stages.len()).filter(|&q| g.stages[q].reads.iter().any(|r| r == x)).collect();
        if readers.is_empty() {
            continue;
        }
        let s = readers[rsel as usize % readers.len()];
        let cr = format!("{x}_cr{k}");
        // On CPUs, half of them a `pack` instead: along a picked dimension, by a picked
        // factor that may or may not divide it; its axes are the outer part, the other
        // dimensions and the inner part.
        let pack = (!gpu && rsel >= 128)
            .then(|| ((isel as usize / 16) % shape.len(), [1, 2, 3, 4, 8][(rsel as usize / 8) % 5]));
        let leaf = match pack {
            Some((d, f)) => {
                g.stmts.push(format!("let {cr} = {x}.pack({d}, {f}, [{}]);", g.stages[s].r));
                let mut leaf = vec![MAxis {
                    r: format!("{cr}.ax{d}_o"),
                    reduce: false,
                    ext: ext(shape[d]).map(|e| (e + f - 1) / f),
                    bound: false,
                }];
                leaf.extend(shape.iter().enumerate().filter(|&(q, _)| q != d).map(|(q, &dim)| MAxis {
                    r: format!("{cr}.ax{q}"),
                    reduce: false,
                    ext: ext(dim),
                    bound: false,
                }));
                leaf.push(MAxis { r: format!("{cr}.ax{d}_i"), reduce: false, ext: Some(f), bound: false });
                leaf
            }
            None => {
                let scope = if gpu { "shared" } else { "local" };
                g.stmts.push(format!("let {cr} = {x}.cache_read({scope}, [{}]);", g.stages[s].r));
                shape
                    .iter()
                    .enumerate()
                    .map(|(d, &dim)| MAxis { r: format!("{cr}.ax{d}"), reduce: false, ext: ext(dim), bound: false })
                    .collect()
            }
        };
        for r in &mut g.stages[s].reads {
            if r == x {
                *r = cr.clone();
            }
        }
        g.stages.insert(
            s,
            MStage {
                r: cr,
                leaf,
                reduction: false,
                output: false,
                explicit_local: !gpu,
                cache: true,
                reads: vec![x.to_string()],
                attach: MAttach::Root,
                at_consumer: None,
                tx_pos: None,
                needs_thread: false,
                plan: 4 + k,
            },
        );
    }
    // rfactor, before any other primitive names the stage.
    if let Some((ssel, asel, split)) = case.rfactor {
        let cands: Vec<usize> = (0..g.stages.len()).filter(|&q| g.stages[q].reduction).collect();
        if !cands.is_empty() {
            rfactor(&mut g, cands[ssel as usize % cands.len()], asel, split);
        }
    }
    let n = g.stages.len();

    // A. Where each stage is computed (consumers first, so inlining is known); the
    // axis of a compute_at is picked once the consumer's loops are final.
    for s in (0..n).rev() {
        let plan = g.plan(s).attach;
        let st = &g.stages[s];
        let kind = if st.output {
            AttachPlan::Root
        } else if gpu && st.cache {
            // A cache stage belongs inside a kernel.
            match plan {
                AttachPlan::Inline if !st.reduction => AttachPlan::Inline,
                AttachPlan::At { .. } => plan,
                _ => AttachPlan::At { consumer: 0, axis: 0 },
            }
        } else {
            plan
        };
        let attach = match kind {
            AttachPlan::Inline if !st.reduction && !st.output => MAttach::Inline,
            AttachPlan::At { consumer, .. } => {
                let cands = g.effective_consumers(s);
                g.stages[s].at_consumer = Some(cands[consumer as usize % cands.len()]);
                MAttach::Root // for now
            }
            _ => MAttach::Root,
        };
        g.stages[s].attach = attach;
    }
    // On GPUs a reduction into inferred storage (shared at block level) would be
    // computed by every thread at once: it must run inside a thread, and so must the
    // stage it is attached to.
    for s in 0..n {
        let st = &g.stages[s];
        let own = gpu && st.reduction && !st.explicit_local && st.at_consumer.is_some() && !g.plan(s).bind.racy;
        let from_producers = (0..n).any(|p| g.stages[p].at_consumer == Some(s) && g.stages[p].needs_thread);
        g.stages[s].needs_thread = own || (from_producers && g.stages[s].at_consumer.is_some());
    }

    // B. Loop transformations, and thread binding of the root stages of a GPU.
    for s in 0..n {
        if g.stages[s].attach == MAttach::Inline {
            continue;
        }
        for t in g.plan(s).transforms.clone() {
            g.transform(s, &t);
        }
        if gpu && g.stages[s].at_consumer.is_none() {
            bind_root(&mut g, s);
        }
    }

    // C. compute_at, consumers first.
    for s in (0..n).rev() {
        let Some(c) = g.stages[s].at_consumer else {
            if g.stages[s].attach == MAttach::Inline {
                g.stmts.push(format!("{}.compute_inline();", g.stages[s].r));
            } else if !g.stages[s].output {
                g.stmts.push(format!("{}.compute_root();", g.stages[s].r));
            }
            continue;
        };
        // (A GPU cache stage whose plan was not a compute_at: the consumer's first
        // possible loop.)
        let axis = match g.plan(s).attach {
            AttachPlan::At { axis, .. } => axis,
            _ => 0,
        };
        let len = g.stages[c].leaf.len();
        // A `shared` cache is filled by the whole block: computed inside a thread, each
        // thread would overwrite what the others read.
        let racy = g.plan(s).bind.racy;
        let shared_cache = gpu && g.stages[s].cache && !g.stages[s].explicit_local && !racy;
        let allowed: Vec<usize> = (0..len)
            .filter(|&p| !(gpu && g.stages[s].needs_thread) || g.inside_thread(c, p))
            .filter(|&p| !shared_cache || !g.inside_thread(c, p))
            .collect();
        if allowed.is_empty() && shared_cache {
            g.stmts.push(format!("{}.compute_inline();", g.stages[s].r));
            g.stages[s].attach = MAttach::Inline;
            g.stages[s].at_consumer = None;
            // Its producers go to its consumers instead.
            for q in 0..s {
                if g.stages[q].at_consumer == Some(s) {
                    g.stages[q].at_consumer = g.effective_consumers(q).first().copied();
                }
            }
            continue;
        }
        assert!(!allowed.is_empty(), "generator: no place inside a thread in `{}`", g.stages[c].r);
        let p = allowed[axis as usize % allowed.len()];
        let ax = g.stages[c].leaf[p].r.clone();
        let note = if gpu && racy && g.stages[s].cache && !g.stages[s].explicit_local && g.inside_thread(c, p) {
            " // shared inside a thread"
        } else {
            ""
        };
        g.stmts.push(format!("{}.compute_at({}, {ax});{note}", g.stages[s].r, g.stages[c].r));
        g.stages[s].attach = MAttach::At(c, ax);
        // Cooperative fetching: a block-level injective stage shares its work among the
        // threads.
        // (Not a `local` stage: its elements are private to the thread that computes
        // them.)
        let shared = !g.stages[s].explicit_local || racy;
        let coop = g.plan(s).bind.cooperative;
        if gpu && !g.stages[s].reduction && shared && coop && !g.inside_thread(c, p) {
            let last = g.stages[s].leaf.len() - 1;
            let a = g.stages[s].leaf[last].r.clone();
            g.stmts.push(format!("{}.bind({a}, thread.x); // cooperative", g.stages[s].r));
            g.stages[s].leaf[last].bound = true;
            g.stages[s].tx_pos = Some(last);
        }
    }

    // D. Annotations.
    for s in 0..n {
        if g.stages[s].attach == MAttach::Inline {
            continue;
        }
        for a in g.plan(s).anns.clone() {
            let st = &g.stages[s];
            let free: Vec<usize> = (0..st.leaf.len()).filter(|&p| !st.leaf[p].bound).collect();
            let spatial: Vec<usize> = free.iter().copied().filter(|&p| !st.leaf[p].reduce).collect();
            match a {
                Ann::Parallel(sel) if !gpu && !spatial.is_empty() => {
                    let ax = st.leaf[spatial[sel as usize % spatial.len()]].r.clone();
                    g.stmts.push(format!("{}.parallel({ax});", st.r));
                }
                Ann::Unroll(sel) if free.iter().any(|&p| st.leaf[p].ext.is_some_and(|e| e <= 256)) => {
                    // Only axes of a known constant extent unroll (others are an error).
                    let known: Vec<usize> =
                        free.iter().copied().filter(|&p| st.leaf[p].ext.is_some_and(|e| e <= 256)).collect();
                    let p = known[sel as usize % known.len()];
                    let ax = st.leaf[p].r.clone();
                    g.stmts.push(format!("{}.unroll({ax});", st.r));
                }
                Ann::Vectorize => {
                    let last = st.leaf.last().expect("a stage has axes").clone();
                    let attached_inside = g.stages.iter().any(|o| o.attach == MAttach::At(s, last.r.clone()));
                    let root = st.attach == MAttach::Root;
                    if !last.reduce && !last.bound && !attached_inside && (last.ext.is_some() || !root) {
                        g.stmts.push(format!("{}.vectorize({});", st.r, last.r));
                    }
                }
                _ => {}
            }
        }
    }
    g.stmts
}

/// `let X_rf = X.rfactor(ax);` (`ax` a root reduction axis of X, or a part of a split
/// of one): X_rf computes partial results over `ax` (its first, spatial, axis) and X
/// reduces them; both get fresh axes.
fn rfactor(g: &mut Gen, s: usize, asel: u8, split: Option<(i64, bool)>) {
    let x = g.stages[s].clone();
    let reduce: Vec<MAxis> = x.leaf.iter().filter(|a| a.reduce).cloned().collect();
    let spatial: Vec<MAxis> = x.leaf.iter().filter(|a| !a.reduce).cloned().collect();
    let k = asel as usize % reduce.len();
    let kname = reduce[k].r.split('.').nth(1).expect("a root axis").to_string();
    let kext = reduce[k].ext;
    // The factored axis: its name, its extent, and the other part of the split.
    let (name, r_ext, other) = match split {
        None => (kname.clone(), kext, None),
        Some((f, outer)) => {
            let p = x.leaf.iter().position(|a| a.r == reduce[k].r).expect("leaf");
            g.split(s, p, f, false);
            let (o, i) = (g.stages[s].leaf[p].r.clone(), g.stages[s].leaf[p + 1].r.clone());
            let oe = kext.map(|e| (e + f - 1) / f);
            if outer {
                (o, oe, Some((format!("{kname}_i"), Some(f))))
            } else {
                (i, Some(f), Some((format!("{kname}_o"), oe)))
            }
        }
    };
    let rf = format!("{}_rf", x.r);
    g.stmts.push(format!(
        "let {rf} = {}.rfactor({});",
        x.r,
        if split.is_some() { name.clone() } else { reduce[k].r.clone() }
    ));
    let rename = |a: &MAxis| MAxis { r: a.r.replacen(&format!("{}.", x.r), &format!("{rf}."), 1), ..a.clone() };
    let mut leaf = vec![MAxis { r: format!("{rf}.{name}"), reduce: false, ext: r_ext, bound: false }];
    leaf.extend(spatial.iter().map(rename));
    if let Some((o, e)) = other {
        leaf.push(MAxis { r: format!("{rf}.{o}"), reduce: true, ext: e, bound: false });
    }
    leaf.extend(reduce.iter().enumerate().filter(|&(q, _)| q != k).map(|(_, a)| rename(a)));
    let rf_stage = MStage {
        r: rf.clone(),
        reduction: leaf.iter().any(|a| a.reduce),
        leaf,
        output: false,
        explicit_local: false,
        cache: false,
        plan: 6,
        ..x.clone()
    };
    let st = &mut g.stages[s];
    st.leaf = spatial;
    st.leaf.push(MAxis { r: format!("{}.{name}", x.r), reduce: true, ext: r_ext, bound: false });
    st.reads = vec![rf];
    g.stages.insert(s, rf_stage);
}

/// Binds a root stage of a GPU: a spatial axis split into `block.x` and `thread.x`
/// (maybe another spatial axis on `thread.y`), or, for a cross-thread reduction, a
/// spatial axis split into `block.x` and `thread.y` and a reduction axis split with its
/// inner part on `thread.x`. Bound axes go outermost (reduction axes innermost).
fn bind_root(g: &mut Gen, s: usize) {
    let b = g.plan(s).bind;
    let r = g.stages[s].r.clone();
    let spatial: Vec<usize> = (0..g.stages[s].leaf.len()).filter(|&p| !g.stages[s].leaf[p].reduce).collect();
    let p = spatial[b.axis as usize % spatial.len()];
    g.split(s, p, b.factor, false);
    let (bx, tx) = (g.stages[s].leaf[p].r.clone(), g.stages[s].leaf[p + 1].r.clone());
    let cross = b.cross_thread.filter(|_| g.stages[s].reduction);
    g.stmts.push(format!("{r}.bind({bx}, block.x);"));
    g.stmts.push(format!("{r}.bind({tx}, {});", if cross.is_some() { "thread.y" } else { "thread.x" }));
    let mut order = vec![p, p + 1];
    if let Some((sel, f)) = cross {
        let reduce: Vec<usize> = (0..g.stages[s].leaf.len()).filter(|&q| g.stages[s].leaf[q].reduce).collect();
        let q = reduce[sel as usize % reduce.len()];
        g.split(s, q, f, false);
        let rx = g.stages[s].leaf[q + 1].r.clone();
        g.stmts.push(format!("{r}.bind({rx}, thread.x); // a cross-thread reduction"));
        g.stages[s].leaf[q + 1].bound = true;
        if p > q {
            // The split of the reduction axis moved the spatial ones.
            order = vec![p + 1, p + 2];
        }
    } else if let Some(y) = b.thread_y {
        let others: Vec<usize> =
            (0..g.stages[s].leaf.len()).filter(|&q| q != p && q != p + 1 && !g.stages[s].leaf[q].reduce).collect();
        if !others.is_empty() {
            let q = others[y as usize % others.len()];
            g.stmts.push(format!("{r}.bind({}, thread.y);", g.stages[s].leaf[q].r));
            order.push(q);
        }
    }
    for &q in &order {
        g.stages[s].leaf[q].bound = true;
    }
    let len = g.stages[s].leaf.len();
    let rest_spatial: Vec<usize> = (0..len).filter(|q| !order.contains(q) && !g.stages[s].leaf[*q].reduce).collect();
    let rest_reduce: Vec<usize> = (0..len).filter(|q| !order.contains(q) && g.stages[s].leaf[*q].reduce).collect();
    order.extend(rest_spatial);
    order.extend(rest_reduce);
    g.reorder(s, &order);
    g.stages[s].tx_pos = Some(1);
}

/// The dims (indices into `Sizes`) of a stage's tensor.
fn stage_shape(tpl: &Template, stage: &str) -> Vec<usize> {
    let sd = tpl.stages.iter().find(|s| s.name == stage).expect("a stage");
    if sd.output {
        return tpl.output.to_vec();
    }
    // Intermediates: as declared in the text.
    let decl = format!("let {stage}[");
    let line = tpl.text.lines().find(|l| l.contains(&decl)).expect("declared");
    let ty = line.split("]: {D}[").nth(1).expect("typed").split(']').next().expect("shape");
    ty.split(", ").map(|d| DIM_NAMES.iter().position(|n| d == format!("{{{n}}}")).expect("a dim")).collect()
}

/// The dims of a stage's reduction ranges (`for k in 0..{K}`), in order.
fn reduce_dims(tpl: &Template, stage: &str) -> Vec<usize> {
    let sd = tpl.stages.iter().find(|s| s.name == stage).expect("a stage");
    let prefix = if sd.output { format!("    {stage}[") } else { format!("let {stage}[") };
    let line = tpl.text.lines().find(|l| l.contains(&prefix)).expect("defined");
    sd.reduce
        .iter()
        .map(|r| {
            let pat = format!("{r} in 0..{{");
            let rest = line.split(&pat).nth(1).expect("a reduction range");
            let d = rest.split('}').next().expect("a dim");
            DIM_NAMES.iter().position(|n| *n == d).expect("a dim")
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------------

/// Small integers, deterministic in the position and the input.
fn input_values(len: usize, which: usize) -> Vec<i64> {
    let mut s = (which as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 7) as i64 - 3
        })
        .collect()
}

fn tensor(ty: Ty, shape: Vec<usize>, v: &[i64]) -> ArgValue {
    ArgValue::Tensor(match ty {
        Ty::F32 => HostTensor::f32(shape, v.iter().map(|&x| x as f32).collect()),
        Ty::I32 => HostTensor::i32(shape, v.iter().map(|&x| x as i32).collect()),
    })
}

/// The output as integers; `None` for a poisoned (unwritten) or non-integer element.
fn output_values(ty: Ty, a: &ArgValue) -> Vec<Option<i64>> {
    let t = a.as_tensor().expect("a tensor output");
    match ty {
        Ty::F32 => {
            t.as_f32().expect("f32").iter().map(|&x| (x.is_finite() && x.fract() == 0.0).then_some(x as i64)).collect()
        }
        Ty::I32 => t.as_i32().expect("i32").iter().map(|&x| (x != POISON_I32).then_some(x as i64)).collect(),
    }
}

const POISON_I32: i32 = i32::MIN;

/// What happened to one case.
enum Outcome {
    Accepted,
    /// The compiler rejected the schedule with a legality error: the kind's name.
    Rejected(String),
}

/// The schedule errors a random schedule may legitimately get: rules that depend on
/// the final schedule, which the generator leaves to the compiler.
fn legit_rejection(k: &ScheduleErrorKind) -> bool {
    use ScheduleErrorKind::*;
    matches!(
        k,
        ComputeAtSkipsConsumer { .. }
            | ComputeAtNotConsumer { .. }
            | VectorizeUnknownExtent { .. }
            | BlockTooLarge { .. }
            | SharedSizeUnknown { .. }
            | LocalSizeUnknown { .. }
            | SharedMemoryExceeded { .. }
            | LaunchExtentVaries { .. }
            | VectorizeDropped { .. }
            | UnrollDropped { .. }
            | ParallelNested { .. }
            | SharedReductionNotBound { .. }
            | LocalStageBoundToThread { .. }
    )
}

fn kind_name(k: &ScheduleErrorKind) -> String {
    format!("{k:?}").split([' ', '{']).next().unwrap_or("?").to_string()
}

fn show(errs: &[ScheduleError]) -> String {
    errs.iter().map(|e| format!("  {} ({:?})", e.message(), e.kind)).collect::<Vec<_>>().join("\n")
}

struct Rendered {
    src: String,
    target: Target,
}

/// The kernel of `spec` with `stmts` as its one schedule block, for `target`.
fn render(spec: &Spec, target: &Target, stmts: &[String]) -> Rendered {
    let tpl = &TEMPLATES[spec.template];
    let mut src = kernel_text(tpl, spec.ty, spec.sizes, spec.literal);
    src.push_str(&format!("\nschedule!({}) {{\n", target.kind.name()));
    for s in stmts {
        src.push_str(&format!("    {s}\n"));
    }
    src.push('}');
    Rendered { src, target: target.clone() }
}

fn describe(spec: &Spec, r: &Rendered) -> String {
    let [m, n, k] = spec.sizes;
    format!(
        "template `{}`, dtype {:?}, M = {m}, N = {n}, K = {k} (literal dims: {:?}), target {}\n{}\n",
        TEMPLATES[spec.template].name,
        spec.ty,
        spec.literal,
        r.target.kind.name(),
        r.src
    )
}

thread_local! {
    /// Set while the compiler or the interpreter runs under `catch_unwind`: their panics
    /// become test failures with the case attached, so the hook stays quiet.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic into its message.
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                default(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|p| panic_text(&p))
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// The output argument of `spec`, poisoned (NaN, or `i32::MIN` for `i32`), so an element
/// the kernel never writes shows up.
fn poisoned_output(spec: &Spec) -> ArgValue {
    let shape: Vec<usize> = TEMPLATES[spec.template].output.iter().map(|&d| spec.sizes[d]).collect();
    let len: usize = shape.iter().product();
    ArgValue::Tensor(match spec.ty {
        Ty::F32 => HostTensor::f32(shape, vec![f32::NAN; len]),
        Ty::I32 => HostTensor::i32(shape, vec![POISON_I32; len]),
    })
}

/// The elements of `out` that differ from `want`, described, and how many elements
/// there are.
fn differences(spec: &Spec, out: &ArgValue, want: &[i64]) -> (Vec<String>, usize) {
    let got = output_values(spec.ty, out);
    assert_eq!(got.len(), want.len(), "test bug: the reference has another length than the output");
    let bad = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| **g != Some(**w))
        .map(|(i, (g, w))| match g {
            Some(g) => format!("element {i}: got {g}, want {w}"),
            None => format!("element {i}: not written (or not an integer), want {w}"),
        })
        .collect();
    (bad, got.len())
}

/// `bad` (from [`differences`]) as a failure message, or `None` when it is empty.
fn wrong_result(bad: &[String], len: usize) -> Option<String> {
    if bad.is_empty() {
        return None;
    }
    let shown = bad.iter().take(8).cloned().collect::<Vec<_>>().join("\n  ");
    Some(format!("wrong result, {} of {len} elements differ:\n  {shown}", bad.len()))
}

/// Lowers and runs `sch`, compares with `want`.
fn run_and_compare(
    spec: &Spec,
    sch: &Schedule,
    inputs: &[ArgValue],
    want: &[i64],
    what: &str,
    desc: &str,
) -> Result<Option<String>, TestCaseError> {
    let lowered = catch(|| tvm_core::driver::lower(sch))
        .map_err(|p| TestCaseError::fail(format!("{what}: the compiler panicked: {p}\n{desc}")))?;
    let f = match lowered {
        Ok(f) => f,
        Err(errs) if errs.iter().all(|e| legit_rejection(&e.kind)) => {
            return Ok(Some(kind_name(&errs[0].kind)));
        }
        Err(errs) => {
            return Err(TestCaseError::fail(format!("{what}: lowering failed:\n{}\n{desc}", show(&errs))));
        }
    };
    let mut args = inputs.to_vec();
    args.push(poisoned_output(spec));
    let ran = catch(|| run(&f, &mut args)).map_err(|p| {
        TestCaseError::fail(format!("{what}: the interpreter panicked: {p}\n{desc}\nlowered:\n{}", print_func(&f)))
    })?;
    if let Err(e) = ran {
        return Err(TestCaseError::fail(format!(
            "{what}: the interpreter failed: {e}\n{desc}\nlowered:\n{}",
            print_func(&f)
        )));
    }
    let (bad, len) = differences(spec, args.last().expect("the output"), want);
    if let Some(wrong) = wrong_result(&bad, len) {
        return Err(TestCaseError::fail(format!("{what}: {wrong}\n{desc}\nlowered:\n{}", print_func(&f))));
    }
    Ok(None)
}

/// One case: its outcome for the target, with `opencl` (GPU only) its outcome on OpenCL
/// when the GPU target accepts it, and the schedule's statements.
fn check_case(case: &Case, gpu: bool, opencl: bool) -> Result<(Outcome, Option<Outcome>, Vec<String>), TestCaseError> {
    let stmts = schedule_text(case, gpu);
    let outcome = check(&case.spec, gpu, &stmts)?;
    let on_opencl = match outcome {
        Outcome::Accepted if opencl => Some(run_on_opencl(&case.spec, &stmts)?),
        _ => None,
    };
    Ok((outcome, on_opencl, stmts))
}

/// What a schedule exercises, by the text of its statements.
const FEATURES: &[(&str, &str)] = &[
    ("split", ".split("),
    ("split_nparts", ".split_nparts("),
    ("tile", ".tile("),
    ("fuse", ".fuse("),
    ("reorder", ".reorder("),
    ("compute_at", ".compute_at("),
    ("compute_inline", ".compute_inline("),
    ("compute_root", ".compute_root("),
    ("cache_read", ".cache_read("),
    ("pack", ".pack("),
    ("cache_write", ".cache_write("),
    ("rfactor", ".rfactor("),
    ("parallel", ".parallel("),
    ("vectorize", ".vectorize("),
    ("unroll", ".unroll("),
    ("bind", ".bind("),
    ("thread.y", "thread.y)"),
    ("cross-thread reduction", "// a cross-thread"),
    ("cooperative fetch", "// cooperative"),
    ("shared cache inside a thread", "// shared inside a thread"),
];

/// The inputs of `spec` and the reference's output for them.
fn inputs_and_reference(spec: &Spec) -> (Vec<ArgValue>, Vec<i64>) {
    let tpl = &TEMPLATES[spec.template];
    let raw: Vec<Vec<i64>> = tpl
        .inputs
        .iter()
        .enumerate()
        .map(|(w, (_, shape))| input_values(shape.iter().map(|&d| spec.sizes[d]).product(), w))
        .collect();
    let inputs: Vec<ArgValue> = tpl
        .inputs
        .iter()
        .zip(&raw)
        .map(|((_, shape), v)| tensor(spec.ty, shape.iter().map(|&d| spec.sizes[d]).collect(), v))
        .collect();
    let want = (tpl.reference)(&raw, spec.sizes);
    (inputs, want)
}

/// `r` parsed (a failure is a test bug).
fn parse_rendered(r: &Rendered, desc: &str) -> Result<tvm_core::frontend::Kernel, TestCaseError> {
    parse_str(&r.src)
        .map_err(|e| TestCaseError::fail(format!("test bug: the generated kernel does not parse: {e:?}\n{desc}")))
}

/// Runs `spec` with the schedule `stmts` for the CPU or (`gpu`) CUDA; compares with the
/// reference, after checking the default schedule against it too.
fn check(spec: &Spec, gpu: bool, stmts: &[String]) -> Result<Outcome, TestCaseError> {
    let r = render(spec, &if gpu { Target::cuda() } else { Target::cpu() }, stmts);
    let desc = describe(spec, &r);
    let kernel = parse_rendered(&r, &desc)?;
    let (inputs, want) = inputs_and_reference(spec);

    // The oracle: the default schedule.
    let default = Schedule::default_for(kernel.graph.clone(), r.target.clone());
    if let Some(k) = run_and_compare(spec, &default, &inputs, &want, "the default schedule", &desc)? {
        return Err(TestCaseError::fail(format!("the default schedule is rejected ({k})\n{desc}")));
    }

    let sch = match build_schedule(&kernel, &r.target) {
        Ok(s) => s,
        Err(errs) if errs.iter().all(|e| legit_rejection(&e.kind)) => {
            return Ok(Outcome::Rejected(kind_name(&errs[0].kind)));
        }
        Err(errs) => {
            return Err(TestCaseError::fail(format!(
                "test bug (or a primitive rejects a legal schedule): schedule errors\n{}\n{desc}",
                show(&errs)
            )));
        }
    };
    match run_and_compare(spec, &sch, &inputs, &want, "the schedule", &desc)? {
        Some(k) => Ok(Outcome::Rejected(k)),
        None => Ok(Outcome::Accepted),
    }
}

/// The GPU schedule `stmts` written as `schedule!(opencl)`, lowered for OpenCL with its
/// own errors (not the CUDA block borrowed, which falls back to the default schedule
/// where it fails), printed as OpenCL C and run on OpenCL device 0 (PoCL in CI) from a
/// poisoned output: every element must equal the reference. OpenCL has its own limits
/// (256 threads per block, less shared memory), so it may reject the schedule
/// legitimately where CUDA accepts it.
fn run_on_opencl(spec: &Spec, stmts: &[String]) -> Result<Outcome, TestCaseError> {
    let target = Target::opencl();
    let r = render(spec, &target, stmts);
    let desc = describe(spec, &r);
    let kernel = parse_rendered(&r, &desc)?;
    let (inputs, want) = inputs_and_reference(spec);
    let fail = |what: String| TestCaseError::fail(format!("opencl: {what}\n{desc}"));
    let sch = match build_schedule(&kernel, &target) {
        Ok(s) => s,
        Err(errs) if errs.iter().all(|e| legit_rejection(&e.kind)) => {
            return Ok(Outcome::Rejected(kind_name(&errs[0].kind)));
        }
        Err(errs) => return Err(fail(format!("schedule errors:\n{}", show(&errs)))),
    };
    let lowered = catch(|| tvm_core::driver::lower(&sch)).map_err(|p| fail(format!("the compiler panicked: {p}")))?;
    let f = match lowered {
        Ok(f) => f,
        Err(errs) if errs.iter().all(|e| legit_rejection(&e.kind)) => {
            return Ok(Outcome::Rejected(kind_name(&errs[0].kind)));
        }
        Err(errs) => return Err(fail(format!("lowering failed:\n{}", show(&errs)))),
    };
    let src = tvm_core::codegen::opencl::emit_opencl(&f).map_err(|e| fail(format!("emit_opencl: {e}")))?;
    let mut args = inputs;
    args.push(poisoned_output(spec));
    tvm_core::launch::run_on_device(&tvm_runtime::Device::OpenCl(0), &f, &mut args)
        .map_err(|e| fail(format!("the run failed: {e}\n{src}")))?;
    let (bad, len) = differences(spec, args.last().expect("the output"), &want);
    match wrong_result(&bad, len) {
        Some(wrong) => Err(fail(format!("{wrong}\n{src}"))),
        None => Ok(Outcome::Accepted),
    }
}

// ---------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------

fn env_usize(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn runner(cases: u32, salt: u64) -> TestRunner {
    let cases = env_usize("SCHEDULE_PROPS_CASES").map_or(cases, |c| c as u32);
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 2048, ..Config::default() };
    let seed = env_usize("SCHEDULE_PROPS_SEED").unwrap_or(0) ^ salt;
    let mut bytes = [0u8; 32];
    for (k, b) in bytes.iter_mut().enumerate() {
        *b = (seed.rotate_left(8 * (k as u32 % 8)) as u8) ^ (k as u8).wrapping_mul(37);
    }
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Runs the property for one target (and, with `opencl`, the accepted GPU schedules on
/// OpenCL too, written as `schedule!(opencl)`); asserts that most cases are accepted,
/// and with `opencl` that most of those also run on OpenCL.
fn property(gpu: bool, cases: u32, opencl: bool) {
    assert!(gpu || !opencl, "OpenCL runs the GPU schedules");
    let stats: RefCell<(usize, BTreeMap<String, usize>)> = RefCell::new((0, BTreeMap::new()));
    // The GPU-accepted cases on OpenCL: accepted there too, and the rejections there.
    let opencl_stats: RefCell<(usize, BTreeMap<String, usize>)> = RefCell::new((0, BTreeMap::new()));
    let features: RefCell<BTreeMap<&str, usize>> = RefCell::new(BTreeMap::new());
    let salt = match (gpu, opencl) {
        (false, _) => 0xc0,
        (true, false) => 0x6770,
        (true, true) => 0x0c1,
    };
    let mut runner = runner(cases, salt);
    let result = runner.run(&case(), |c| {
        let (outcome, on_opencl, stmts) = check_case(&c, gpu, opencl)?;
        match on_opencl {
            Some(Outcome::Accepted) => opencl_stats.borrow_mut().0 += 1,
            Some(Outcome::Rejected(k)) => *opencl_stats.borrow_mut().1.entry(k).or_default() += 1,
            None => {}
        }
        let mut st = stats.borrow_mut();
        match outcome {
            Outcome::Accepted => {
                st.0 += 1;
                let mut f = features.borrow_mut();
                for (name, pat) in FEATURES {
                    if stmts.iter().any(|s| s.contains(pat)) {
                        *f.entry(name).or_default() += 1;
                    }
                }
            }
            Outcome::Rejected(k) => *st.1.entry(k).or_default() += 1,
        }
        Ok(())
    });
    if let Err(e) = result {
        match e {
            TestError::Fail(why, c) => {
                panic!("a random legal schedule broke the kernel (minimal case after shrinking):\n{why}\ncase: {c:?}")
            }
            TestError::Abort(why) => panic!("aborted: {why}"),
        }
    }
    let (accepted, rejected) = stats.into_inner();
    let total = accepted + rejected.values().sum::<usize>();
    assert!(total > 0, "no case ran");
    let label = match (gpu, opencl) {
        (false, _) => "cpu",
        (true, false) => "cuda",
        (true, true) => "cuda (the cases for opencl)",
    };
    println!(
        "{label}: {total} cases, {accepted} accepted ({:.0}%), rejected: {rejected:?}",
        100.0 * accepted as f64 / total as f64
    );
    if opencl {
        let (ran, rejected_there) = opencl_stats.into_inner();
        let tried = ran + rejected_there.values().sum::<usize>();
        assert_eq!(tried, accepted, "every schedule accepted for CUDA is tried on OpenCL");
        println!(
            "opencl: {ran} of the {accepted} schedules accepted for CUDA ran on OpenCL ({:.0}%), \
             rejected for OpenCL: {rejected_there:?}",
            100.0 * ran as f64 / accepted.max(1) as f64
        );
        // OpenCL's limits are tighter (256 threads per block, less shared memory), so it
        // may reject more; most must still run.
        assert!(
            ran * 2 >= accepted && ran > 0,
            "only {ran} of {accepted} schedules accepted for CUDA ran on OpenCL: {rejected_there:?}"
        );
    }
    let features = features.into_inner();
    println!("accepted schedules using each primitive: {features:?}");
    // The racy schedules the generator writes on purpose are generated, and rejected.
    if gpu && !opencl {
        for k in ["SharedReductionNotBound", "LocalStageBoundToThread"] {
            assert!(rejected.get(k).copied().unwrap_or(0) > 0, "no schedule was rejected for {k}: {rejected:?}");
        }
    }
    // GPU buffers (shared, and each thread's local ones) must have constant sizes, and half
    // the cases have symbolic dims: more GPU schedules are rejected for that reason alone.
    // (The racy schedules written on purpose do not count: they must be rejected. The
    // OpenCL property's 128 cases vary more: 45%.)
    let min_percent = match (gpu, opencl) {
        (false, _) => 60,
        (true, false) => 50,
        (true, true) => 45,
    };
    let racy: usize =
        ["SharedReductionNotBound", "LocalStageBoundToThread"].iter().filter_map(|k| rejected.get(*k)).sum();
    assert!(
        accepted * 100 >= (total - racy) * min_percent,
        "only {accepted} of {total} random schedules were accepted: {rejected:?}"
    );
    for (name, _) in FEATURES {
        let expected = match *name {
            "parallel" | "pack" => !gpu,
            "bind" | "thread.y" | "cross-thread reduction" | "cooperative fetch" | "shared cache inside a thread" => {
                gpu
            }
            _ => true,
        };
        let n = features.get(name).copied().unwrap_or(0);
        assert!(!expected || n * 50 >= accepted, "only {n} of {accepted} accepted schedules use {name}");
    }
}

#[test]
fn random_cpu_schedules_preserve_results() {
    property(false, 512, false);
}

#[test]
fn random_cuda_schedules_preserve_results() {
    property(true, 384, false);
}

/// Random legal GPU schedules, written for OpenCL and run for real on it (PoCL in CI),
/// against the same references: the printer and the runtime on schedules no one wrote
/// by hand.
#[test]
fn random_gpu_schedules_run_on_opencl() {
    if common::opencl::device_or_skip("random_gpu_schedules_run_on_opencl") {
        property(true, 128, true);
    }
}

// ---------------------------------------------------------------------------------
// Minimal reproductions of the bugs the properties found
// ---------------------------------------------------------------------------------

/// Runs a template with a hand-written schedule; panics with the details unless the
/// schedule is accepted and computes the reference.
fn reproduce(template: &str, ty: Ty, sizes: Sizes, literal: [bool; 3], gpu: bool, schedule: &str) {
    let t = TEMPLATES.iter().position(|t| t.name == template).expect("a template");
    let spec = Spec { template: t, ty, sizes, literal };
    let stmts: Vec<String> = schedule.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
    match check(&spec, gpu, &stmts) {
        Ok(Outcome::Accepted) => {}
        Ok(Outcome::Rejected(k)) => panic!("the schedule is rejected ({k})"),
        Err(e) => panic!("{e}"),
    }
}

// Each test below is a minimal case the properties found (shrunk by hand), with what
// went wrong (in its doc comment, as it was). All of them are fixed: the tests pass and
// stay as regression tests.

/// Splitting the inner part of a split again, by a factor that does not divide it,
/// makes some iterations map to values of the parent that the next outer iteration
/// computes as well (`k = ko * 4 + kio * 3 + kii` reaches 5 from `ko = 0`): the only
/// guard is on the root axis (`k < K`), none on `ki < 4`. A reduction counts those
/// elements twice.
#[test]
fn nested_split_with_a_tail_double_counts_a_reduction() {
    reproduce(
        "matmul",
        Ty::I32,
        [2, 2, 8],
        [true; 3],
        false,
        "
        let (ko, ki) = c.split(c.k, 4);
        let (kio, kii) = c.split(ki, 3);
    ",
    );
}

/// The same missing guard on a spatial axis: two iterations of a parallel loop write the
/// same element (the interpreter reports the race).
#[test]
fn nested_split_with_a_tail_writes_twice_in_a_parallel_loop() {
    reproduce(
        "elementwise",
        Ty::I32,
        [2, 8, 1],
        [true; 3],
        false,
        "
        let (jo, ji) = c.split(c.j, 4);
        let (jio, jii) = c.split(ji, 3);
        c.parallel(jo);
    ",
    );
}

/// compute_at inside a fused axis whose inner extent is symbolic: bound inference
/// cannot bound `f / N` and `f % N` when `f` is relaxed, gets `i64::MIN` / `i64::MAX`
/// from `symbolic_bounds`, and computes a region of extent 0 at `i64::MIN`: `t` is
/// never computed and is read out of bounds. (The region should fall back to the whole
/// tensor when it cannot be bounded.)
#[test]
fn compute_at_inside_a_fused_axis_of_symbolic_extent() {
    reproduce(
        "chain",
        Ty::I32,
        [3, 5, 1],
        [false; 3],
        false,
        "
        let f = c.fuse(c.i, c.j);
        let (o, v) = c.split(f, 4);
        t.compute_at(c, o);
    ",
    );
}

/// Unrolling a loop that contains a shared allocation (here the shared cache computed at
/// `t.i` of a block-level stage) copies the allocation; hoist_shared_allocations then
/// allocates the buffer twice and the TIR verifier panics.
#[test]
fn unroll_around_a_shared_allocation() {
    reproduce(
        "chain",
        Ty::I32,
        [4, 3, 1],
        [true; 3],
        true,
        "
        let a_s = a.cache_read(shared, [t]);
        let (bx, tx) = c.split(c.i, 2);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        t.compute_at(c, bx);
        a_s.compute_at(t, t.i);
        t.unroll(t.i);
    ",
    );
}

/// The same with the shared buffer of a cross-thread reduction (`c_red`) inside the
/// unrolled loop.
#[test]
fn unroll_around_a_cross_thread_reduction() {
    reproduce(
        "matmul",
        Ty::I32,
        [2, 2, 3],
        [true; 3],
        true,
        "
        let (bx, ty) = c.split(c.j, 1);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        let (ko, kx) = c.split(c.k, 1);
        c.bind(kx, thread.x);
        c.reorder(bx, ty, c.i, ko, kx);
        c.unroll(c.i);
    ",
    );
}

/// A cooperative fetch (an axis of a block-level shared cache bound to `thread.x`)
/// whose extent depends on the block index (the block covers a fused range that
/// straddles rows): the kernel's launch extent `max((bx * 7 + 2) / 4 - bx * 7 / 4 + 2,
/// 7)` names the block variable on the host, and the TIR verifier panics after
/// split_host_device. Expected: an extent bound that holds for every block (or the
/// `SharedSizeUnknown` error this schedule gets without the binding).
#[test]
fn thread_extent_that_depends_on_the_block_index() {
    reproduce(
        "elementwise",
        Ty::I32,
        [4, 7, 1],
        [true; 3],
        true,
        "
        let a_s = a.cache_read(shared, [c]);
        c.reorder(c.j, c.i);
        let f = c.fuse(c.j, c.i);
        let (bx, tx) = c.split(f, 7);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
        a_s.compute_at(c, bx);
        a_s.bind(a_s.ax1, thread.x);
    ",
    );
}

/// compute_at at the thread-bound reduction axis of a cross-thread reduction: the
/// lowering puts the thread binding (`kx`) outside the serial reduction loop `ko`
/// although `ko` precedes it in the loop order, so the attached stage, placed at `kx`,
/// uses `ko` outside its loop (TIR verifier panic after schedule_ops: undefined
/// variable `ko`).
#[test]
fn compute_at_the_thread_axis_of_a_cross_thread_reduction() {
    reproduce(
        "conv1d",
        Ty::I32,
        [2, 3, 3],
        [false; 3],
        true,
        "
        let (bx, ty) = c.split(c.i, 1);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        let (ko, kx) = c.split(c.k, 1);
        c.bind(kx, thread.x);
        c.reorder(bx, ty, c.j, ko, kx);
        p.compute_at(c, kx);
    ",
    );
}

/// A cross-thread reduction over 1 thread in a kernel whose `thread.x` extent is 3
/// (a cooperative fetch of `w`): split_host_device guards the reduction with
/// `if threadIdx_x < 1`, and the reduction's barriers end up inside that divergent
/// `if` (the interpreter reports it; on a GPU it deadlocks or is undefined).
#[test]
fn cross_thread_reduction_barrier_inside_a_thread_guard() {
    reproduce(
        "conv1d",
        Ty::I32,
        [2, 3, 3],
        [true; 3],
        true,
        "
        let w_s = w.cache_read(shared, [c]);
        let (bx, ty) = c.split(c.i, 1);
        c.bind(bx, block.x);
        c.bind(ty, thread.y);
        let (ko, kx) = c.split(c.k, 1);
        c.bind(kx, thread.x);
        c.reorder(bx, ty, c.j, ko, kx);
        w_s.compute_at(c, bx);
        w_s.bind(w_s.ax0, thread.x);
    ",
    );
}
