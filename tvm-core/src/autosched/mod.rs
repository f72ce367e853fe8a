//! The auto-scheduler: a schedule for every stage that no `schedule!` statement shapes,
//! derived while the macro expands from the algorithm and the target's facts, with no
//! measurement.
//!
//! It writes `schedule!` statements, so a derived schedule is an ordinary one: applied
//! and validated by the same code as a written block, printable as source a user can
//! paste and edit (`NAME::schedule(target)`), and searchable by the tuner, whose space
//! is the same statements with their sizes as knobs (`tune!(..)`, the derived choice
//! first; `tvm-tune --auto`).
//!
//! The rules, in the spirit of Ansor's sketches, each sized by an analytical model of
//! the target ([`crate::target::Facts`]) as BLIS sizes its blocks:
//! - cheap injective stages are inlined into their readers; an expensive one read twice
//!   is computed once per row of its consumer, or at the root;
//! - a reduction with data reuse (matmul, convolution, batched matmul) is tiled: on CPUs
//!   a register tile of `mr` rows by `nr` vector lanes accumulated in a local cache
//!   (the element-wise consumer itself when there is one: bias, activation), the
//!   innermost reduction unrolled, and an operand whose tile rows are short slices of long
//!   rows packed into a local panel per block of rows; on GPUs (`gpu.rs`) blocks, threads
//!   and a register tile per thread with the operands staged through shared memory;
//! - row reductions read by a row-wise consumer (softmax, layer norm) are computed per
//!   row inside the consumer's parallel loop, each as vectorized partial results;
//! - reductions along a contiguous axis become vectorized partial results (rfactor), on
//!   GPUs cross-thread reductions; reductions along another axis vectorize the spatial
//!   axis instead;
//! - transposes go through tiles.
//!
//! What no rule covers keeps the target's flat default ([`crate::schedule::Schedule::
//! apply_defaults`]).

pub mod analysis;
mod cpu;
mod gpu;
pub mod parse;
pub mod text;

use crate::schedule::{Attach, Schedule};
use crate::target::Target;
use crate::te::{Graph, TensorId};
use analysis::{Kind, StageInfo, Step};
use std::collections::{BTreeSet, HashMap};
use text::Builder;

/// Why a stage got the schedule it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub stage: String,
    /// The rule's name (`inline`, `tile_with_reuse`, `rows`, ..).
    pub rule: &'static str,
    pub why: String,
}

/// A derived schedule: statements for the stages a written block (if any) leaves
/// unshaped.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The target kind's name, as a `schedule!` block names it.
    pub target: String,
    pub builder: Builder,
    pub notes: Vec<Note>,
}

impl Derived {
    pub fn is_empty(&self) -> bool {
        self.builder.lines.is_empty()
    }

    /// The statements, one per line with their comments, knobs as `tune!` (`knobs`) or
    /// as the derived values.
    pub fn statements(&self, knobs: bool) -> String {
        self.builder.render(knobs).join("\n")
    }

    /// The whole block: `schedule!(TARGET) { .. }`.
    pub fn block_text(&self, knobs: bool) -> String {
        if self.is_empty() {
            return format!("schedule!({}) {{}}", self.target);
        }
        format!("schedule!({}) {{\n{}\n}}", self.target, self.statements(knobs))
    }

    pub fn knobs(&self) -> &[text::KnobSpec] {
        &self.builder.knobs
    }
}

/// The statements that schedule every stage `base` leaves unshaped, for `target`. `base`
/// is the graph's schedule with a written block's statements applied (no defaults), or
/// [`Schedule::new`] when there is no block. `taken` are names the derived statements
/// must not bind (the written block's `let` names).
pub fn derive(base: &Schedule, taken: &[String]) -> Derived {
    let graph = &base.graph;
    let target = &base.target;
    let mut names: Vec<String> = graph.tensors.iter().map(|t| t.name.clone()).collect();
    names.extend(graph.dims.iter().map(|d| d.name().to_string()));
    names.extend(graph.scalar_params().iter().map(|v| v.name().to_string()));
    names.extend(taken.iter().cloned());
    names.extend(base.stages.iter().map(|s| s.name.clone()));
    let inlined = inline_set(base);
    let info = analysis::analyze(graph, &|t| inlined.contains(&t));
    let mut cx =
        Cx { graph, target, base, info, inlined, handled: BTreeSet::new(), b: Builder::new(names), notes: Vec::new() };
    cx.inline_stages();
    if target.is_gpu() {
        gpu::derive(&mut cx);
    } else {
        cx.cpu();
    }
    Derived { target: target.kind.name().to_string(), builder: cx.b, notes: cx.notes }
}

/// The stages that end up inlined: those a block inlines, and every unshaped, unplaced
/// injective intermediate that is cheap (on GPUs, any) or read once without reuse (an
/// expensive one read by several stages, or by a stage that would recompute it for every
/// element of a tile or every row, is computed once on CPUs; a boundary read by a tiled
/// reduction is computed once everywhere).
fn inline_set(base: &Schedule) -> BTreeSet<TensorId> {
    let graph = &base.graph;
    let all = analysis::analyze(graph, &|_| false);
    let between = between_placed(base);
    let mut out = BTreeSet::new();
    for st in &base.stages {
        let t = st.tensor;
        if st.attach == Attach::Inline {
            out.insert(t);
            continue;
        }
        if st.touched || graph.is_output(t) {
            continue;
        }
        let Some(i) = all.get(&t) else { continue };
        if i.kind != Kind::Injective {
            continue;
        }
        // A written `p.compute_at(c, ..)` was written against the flat defaults, which
        // inline what lies between `p` and `c`: computed anywhere else, `c` would no longer
        // read `p` where the block places it.
        if between.contains(&t) {
            out.insert(t);
            continue;
        }
        let reused = i.consumers.iter().filter_map(|c| all.get(c)).any(|c| c.has_reuse() && c.kind != Kind::Injective);
        // A boundary (padding) read by a tiled reduction is computed once: inlined, its
        // test would split every vector row of the tile at the borders. On CPUs only where
        // the reduction reuses each of its elements across an output axis its read ignores
        // (a convolution's filters): a depthwise convolution's window reads each element a
        // few times in one output channel, and copying the padded input costs more than
        // the borders' tests, which loop partitioning moves off the interior.
        let boundary = graph.tensor(t).body().is_some_and(analysis::has_select);
        let spread = base.target.is_gpu()
            || i.consumers.iter().filter_map(|c| all.get(c)).any(|c| {
                c.has_reuse()
                    && c.kind != Kind::Injective
                    && c.axes.iter().any(|a| {
                        c.reads.iter().filter(|r| r.tensor == t).all(|r| StageInfo::step(r, &a.var) == Step::Invariant)
                    })
            });
        // A GPU recomputes rather than round-trips through memory.
        let cheap = !i.expensive || base.target.is_gpu();
        // An expensive stage that a consumer reads along its innermost axis but not along
        // an outer one (`rstd[j]` in `y[i, j]`) would be recomputed for every row: LLVM
        // hoists a value out of the inner loop (`rstd[i]` in `y[i, j]`), not out of the
        // rows. Computed once, it is a load.
        let broadcast = !cheap
            && i.consumers.iter().filter_map(|c| all.get(c)).any(|c| {
                let Some((inner, outer)) = c.axes.split_last() else { return false };
                c.reads.iter().filter(|a| a.tensor == t).any(|a| {
                    StageInfo::step(a, &inner.var) != Step::Invariant
                        && outer.iter().any(|o| StageInfo::step(a, &o.var) == Step::Invariant)
                })
            });
        if (cheap && !(boundary && reused && spread)) || (i.consumers.len() <= 1 && !reused && !broadcast) {
            out.insert(t);
        }
    }
    out
}

/// The stages on a path from a stage the written block computes at another stage's axis
/// to that stage (both ends excluded).
fn between_placed(base: &Schedule) -> BTreeSet<TensorId> {
    let graph = &base.graph;
    // The stages reached from `t` by `next`, repeatedly (`t` itself not included).
    let reach = |t: TensorId, next: &dyn Fn(TensorId) -> Vec<TensorId>| {
        let mut seen = BTreeSet::new();
        let mut stack = next(t);
        while let Some(u) = stack.pop() {
            if seen.insert(u) {
                stack.extend(next(u));
            }
        }
        seen
    };
    let mut out = BTreeSet::new();
    for st in &base.stages {
        let Attach::At { stage, .. } = st.attach else { continue };
        let upstream = reach(base.stage(stage).tensor, &|t| graph.inputs_of(t));
        let downstream = reach(st.tensor, &|t| graph.consumers_of(t));
        out.extend(upstream.intersection(&downstream));
    }
    out
}

/// The state of one derivation.
pub(crate) struct Cx<'a> {
    pub graph: &'a Graph,
    pub target: &'a Target,
    pub base: &'a Schedule,
    pub info: HashMap<TensorId, StageInfo>,
    pub inlined: BTreeSet<TensorId>,
    /// Stages a rule has written statements for.
    pub handled: BTreeSet<TensorId>,
    pub b: Builder,
    pub notes: Vec<Note>,
}

impl Cx<'_> {
    /// The base schedule's stage of `t`.
    fn stage(&self, t: TensorId) -> Option<&crate::schedule::Stage> {
        self.base.stage_of(t).map(|s| self.base.stage(s))
    }

    /// A stage no written statement shapes or places, and no rule has taken yet.
    pub fn free(&self, t: TensorId) -> bool {
        !self.handled.contains(&t) && self.stage(t).is_some_and(|s| !s.touched)
    }

    /// A stage the written block placed (`compute_at`, `compute_inline`, `compute_root`,
    /// or a producer placed at its loops) without shaping its loops.
    pub fn placed(&self, t: TensorId) -> bool {
        !self.handled.contains(&t) && self.stage(t).is_some_and(|s| s.touched && !s.shaped)
    }

    /// Where the written block computes `t` (root for a stage it does not place).
    pub fn attach(&self, t: TensorId) -> Attach {
        self.stage(t).map_or(Attach::Root, |s| s.attach)
    }

    pub fn note(&mut self, t: TensorId, rule: &'static str, why: impl Into<String>) {
        let stage = self.graph.tensor(t).name.clone();
        self.notes.push(Note { stage, rule, why: why.into() });
    }

    /// The stages in an order where consumers come before their producers.
    pub fn consumers_first(&self) -> Vec<TensorId> {
        let mut order: Vec<TensorId> =
            self.graph.topo_order().into_iter().filter(|&t| self.graph.producer(t) == t).collect();
        order.reverse();
        order
    }

    /// Inlines the cheap injective intermediates (explicitly, so the printed schedule
    /// says so).
    fn inline_stages(&mut self) {
        let free: Vec<TensorId> = self.inlined.iter().copied().filter(|&t| self.free(t)).collect();
        for t in free {
            let name = self.graph.tensor(t).name.clone();
            self.b.stmt(format!("{name}.compute_inline()"));
            self.note(t, "inline", "an injective stage that is cheap to recompute where it is read");
            self.handled.insert(t);
        }
    }
}

/// Whether `TVM_SCHEDULES=derived` asks every kernel to ignore its written `schedule!`
/// blocks (they are still checked) and run the derived schedule: the test mode that runs
/// the suites on what the auto-scheduler alone produces.
pub fn written_blocks_ignored() -> bool {
    std::env::var_os("TVM_SCHEDULES").is_some_and(|v| v == "derived")
}
