//! Schedules: how each stage of a tensor-expression graph is computed (TVM's
//! te.Schedule). Primitives check their own rules as they are applied; rules that depend
//! on the final state (vectorize innermost, block size, compute_at legality) are checked
//! by [`Schedule::validate`].

mod default;
mod error;
mod primitives;
mod validate;

pub use error::{ScheduleError, ScheduleErrorKind};

use crate::loc::Loc;
use crate::target::Target;
use crate::te::{Graph, TensorId};
use crate::tir::{ForKind, IterKind, Scope, ThreadTag, Var};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AxisId(pub u32);

/// An axis of a stage: a root axis of its tensor, or one made by split or fuse.
#[derive(Clone, Debug)]
pub struct Axis {
    /// The name `stage.NAME` resolves (a root axis keeps its tensor's name) and new axes
    /// are named after.
    pub name: String,
    /// The name a `let` gave a root axis (`let [rko] = rf.reduce_axes();`), which messages
    /// use: the user wrote that one.
    pub alias: Option<String>,
    pub var: Var,
    pub kind: IterKind,
    pub stage: StageId,
}

impl Axis {
    /// The axis as the user knows it: the name of its `let` binding, else its own.
    pub fn shown(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }
}

/// How split divides its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBy {
    /// The inner axis has this extent.
    Factor(i64),
    /// The outer axis has this extent.
    NParts(i64),
}

/// How an axis was derived from others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relation {
    /// `parent = outer * inner_extent + inner`.
    Split { parent: AxisId, outer: AxisId, inner: AxisId, by: SplitBy },
    /// `outer = fused / inner_extent`, `inner = fused % inner_extent`.
    Fuse { outer: AxisId, inner: AxisId, fused: AxisId },
}

/// Where a stage is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Its own loop nest, over its whole shape, before its consumers.
    Root,
    /// Substituted into its consumers.
    Inline,
    /// Inside the loop of `axis` of `stage`, over the region the iteration needs.
    At { stage: StageId, axis: AxisId },
}

/// The most iterations `unroll` replicates: a longer loop stays a loop (annotated for the
/// backend) instead of growing the code without bound, and a user's `unroll` of one is an
/// error (`ScheduleErrorKind::UnrollDropped`).
pub const MAX_UNROLL: i64 = 256;

/// The annotation of one axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisAnn {
    pub kind: ForKind,
    pub bind: Option<ThreadTag>,
    /// The primitive call that set it.
    pub loc: Loc,
}

/// `s.prefetch(x, axis, offset)`: at the top of each iteration `v` of `axis`'s loop, the
/// region of `x` that iteration `v + offset` reads is prefetched (TVM's
/// `Stage.prefetch`, Halide's `Func::prefetch`). CPU targets only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefetch {
    pub tensor: TensorId,
    pub axis: AxisId,
    pub offset: i64,
    /// The tensor argument's token, where errors about the tensor point.
    pub loc: Loc,
    /// The axis argument's token, where errors about the axis point.
    pub axis_loc: Loc,
}

/// The schedule of one compute tensor.
#[derive(Clone, Debug)]
pub struct Stage {
    pub tensor: TensorId,
    pub name: String,
    /// The tensor's spatial axes, in order.
    pub root_axes: Vec<AxisId>,
    /// The tensor's reduction axes, in order.
    pub reduce_axes: Vec<AxisId>,
    /// The current loop nest, outermost first.
    pub leaf: Vec<AxisId>,
    pub relations: Vec<Relation>,
    pub ann: BTreeMap<AxisId, AxisAnn>,
    pub attach: Attach,
    pub attach_loc: Loc,
    /// Memory scope of the tensor; `None` for the default (global, or local/shared when
    /// computed inside thread or block loops).
    pub scope: Option<Scope>,
    /// Software prefetches asked for at loops of this stage, in the order given.
    pub prefetches: Vec<Prefetch>,
    /// Whether any primitive named this stage (untouched stages get the target's default
    /// treatment when a schedule is given).
    pub touched: bool,
    /// Whether a primitive changed the stage's own loops (split, fuse, reorder, an
    /// annotation, bind, prefetch, cache_write, rfactor) or made the stage. A stage that
    /// is only placed (`compute_at`, `compute_inline`, `compute_root`) or has producers
    /// placed at its loops is touched but not shaped: the auto-scheduler still derives its
    /// loops (`crate::autosched`).
    pub shaped: bool,
    /// A recurrence computed as a parallel scan on a GPU target (its whole loop nest is
    /// `schedule_ops`'s own: blocks reduce their chunks, one block scans the chunks'
    /// totals, blocks scan their chunks from there).
    pub parallel_scan: bool,
    /// The names of the root axes an `rfactor` replaced (for the message when one is named
    /// afterwards).
    pub replaced: Vec<String>,
}

/// A schedule of a graph for a target.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub graph: Graph,
    pub target: Target,
    pub stages: Vec<Stage>,
    pub axes: Vec<Axis>,
    /// For each applied `schedule!` statement, in order: its location and the axes it
    /// made, annotated, reordered or moved (a new stage's, or a stage computed
    /// elsewhere: all of its loops). Tools link statements to the loops they produced.
    pub origins: Vec<(crate::loc::Loc, Vec<AxisId>)>,
    /// What the auto-scheduler wrote for the stages no written statement shapes (`None`
    /// when it was not asked).
    pub derived: Option<Box<DerivedSchedule>>,
}

/// The auto-scheduler's part of a schedule (`crate::autosched`), kept for the tools and
/// for `NAME::schedule(target)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DerivedSchedule {
    /// The derived statements as `schedule!` source, one per line, with their comments.
    pub text: String,
    /// The same statements with their sizes as knobs (`tune!(..)`), the tuner's space.
    pub knob_text: String,
    /// Per stage: the rule that scheduled it and why.
    pub notes: Vec<(String, String, String)>,
    /// Set when the derived statements did not apply or lower (a compiler bug): the
    /// reason; the schedule is then the flat default's.
    pub fallback: Option<String>,
}

impl Schedule {
    /// A schedule where every compute tensor is its own root loop nest in its natural
    /// order, with no annotations.
    pub fn new(graph: Graph, target: Target) -> Schedule {
        let mut s =
            Schedule { graph, target, stages: Vec::new(), axes: Vec::new(), origins: Vec::new(), derived: None };
        for id in s.graph.ids().collect::<Vec<_>>() {
            // The components of a reduction over several values share the first one's stage.
            if !s.graph.tensor(id).is_placeholder() && s.graph.producer(id) == id {
                s.add_stage(id);
            }
        }
        s
    }

    /// The default schedule of `graph` for `target`.
    pub fn default_for(graph: Graph, target: Target) -> Schedule {
        let mut s = Schedule::new(graph, target);
        s.apply_defaults();
        s
    }

    pub(crate) fn add_stage(&mut self, tensor: TensorId) -> StageId {
        let sid = StageId(self.stages.len() as u32);
        let t = self.graph.tensor(tensor).clone();
        let mut root = Vec::new();
        for iv in t.axes() {
            root.push(self.new_axis(iv.var.name(), iv.var.clone(), IterKind::DataPar, sid));
        }
        let mut red = Vec::new();
        for iv in t.reduce_axes() {
            red.push(self.new_axis(iv.var.name(), iv.var.clone(), IterKind::Reduce, sid));
        }
        let leaf = root.iter().chain(red.iter()).copied().collect();
        self.stages.push(Stage {
            tensor,
            name: t.name.clone(),
            root_axes: root,
            reduce_axes: red,
            leaf,
            relations: Vec::new(),
            ann: BTreeMap::new(),
            attach: Attach::Root,
            attach_loc: Loc::NONE,
            scope: None,
            prefetches: Vec::new(),
            touched: false,
            shaped: false,
            parallel_scan: false,
            replaced: Vec::new(),
        });
        sid
    }

    pub(crate) fn new_axis(&mut self, name: &str, var: Var, kind: IterKind, stage: StageId) -> AxisId {
        self.axes.push(Axis { name: name.to_string(), alias: None, var, kind, stage });
        AxisId(self.axes.len() as u32 - 1)
    }

    pub fn stage(&self, id: StageId) -> &Stage {
        &self.stages[id.0 as usize]
    }
    pub fn stage_mut(&mut self, id: StageId) -> &mut Stage {
        &mut self.stages[id.0 as usize]
    }
    pub fn axis(&self, id: AxisId) -> &Axis {
        &self.axes[id.0 as usize]
    }
    pub fn stage_ids(&self) -> impl Iterator<Item = StageId> {
        (0..self.stages.len() as u32).map(StageId)
    }
    /// The stage computing `tensor` (none for inputs); the components of a reduction
    /// over several values are computed by one stage.
    pub fn stage_of(&self, tensor: TensorId) -> Option<StageId> {
        let tensor = self.graph.producer(tensor);
        self.stage_ids().find(|&s| self.stage(s).tensor == tensor)
    }
    /// Every stage, producers before consumers (each once: the components of a
    /// reduction of several values are computed by their first one's stage).
    pub fn stages_in_order(&self) -> Vec<StageId> {
        self.graph
            .topo_order()
            .into_iter()
            .filter(|&t| self.graph.producer(t) == t)
            .filter_map(|t| self.stage_of(t))
            .collect()
    }
    /// The stage of that name, or the stage that computes the tensor of that name (the
    /// components of a reduction over several values all name their one stage, as in TVM).
    pub fn find_stage(&self, name: &str) -> Option<StageId> {
        self.stage_ids()
            .find(|&s| self.stage(s).name == name)
            .or_else(|| self.graph.find(name).and_then(|t| self.stage_of(t)))
    }
    /// Names of every stage, for messages.
    pub fn stage_names(&self) -> Vec<String> {
        self.stages.iter().map(|s| s.name.clone()).collect()
    }

    /// A root axis (spatial or reduction) of the stage, by its name in the algorithm.
    pub fn root_axis(&self, stage: StageId, name: &str) -> Option<AxisId> {
        let st = self.stage(stage);
        st.root_axes.iter().chain(st.reduce_axes.iter()).copied().find(|&a| self.axis(a).name == name)
    }
    /// The current spatial axes, outermost first (`s.axes()`).
    pub fn leaf_axes(&self, stage: StageId) -> Vec<AxisId> {
        self.stage(stage).leaf.iter().copied().filter(|&a| self.axis(a).kind == IterKind::DataPar).collect()
    }
    /// The current reduction axes, outermost first (`s.reduce_axes()`).
    pub fn leaf_reduce_axes(&self, stage: StageId) -> Vec<AxisId> {
        self.stage(stage).leaf.iter().copied().filter(|&a| self.axis(a).kind == IterKind::Reduce).collect()
    }
    /// The names of the current axes, for messages.
    pub fn leaf_names(&self, stage: StageId) -> Vec<String> {
        self.stage(stage).leaf.iter().map(|&a| self.axis(a).name.clone()).collect()
    }
    /// The annotation of an axis (serial, unbound when none was set).
    pub fn ann(&self, stage: StageId, axis: AxisId) -> AxisAnn {
        self.stage(stage).ann.get(&axis).cloned().unwrap_or(AxisAnn {
            kind: ForKind::Serial,
            bind: None,
            loc: Loc::NONE,
        })
    }
}

impl Schedule {
    /// The memory scope of a stage's tensor: the explicit one, or inferred from where it
    /// is computed: inside a thread-bound loop → local, inside a block-bound loop →
    /// shared, else global (TVM's rule).
    pub fn storage_scope(&self, sid: StageId) -> Scope {
        let st = self.stage(sid);
        let (mut thread, mut block) = (false, false);
        let mut cur = st.attach;
        let mut hops = 0;
        while let Attach::At { stage, axis } = cur {
            let cs = self.stage(stage);
            let pos = cs.leaf.iter().position(|&a| a == axis).unwrap_or(0);
            for &a in &cs.leaf[..=pos.min(cs.leaf.len().saturating_sub(1))] {
                match self.ann(stage, a).bind {
                    Some(t) if t.is_block() => block = true,
                    Some(_) => thread = true,
                    None => {}
                }
            }
            cur = cs.attach;
            hops += 1;
            if hops > self.stages.len() {
                break;
            }
        }
        let inferred = if thread {
            Scope::Local
        } else if block {
            Scope::Shared
        } else {
            Scope::Global
        };
        match st.scope {
            Some(Scope::Global) | None => inferred,
            Some(s) => s,
        }
    }
}
