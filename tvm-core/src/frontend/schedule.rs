//! Applying `schedule!` blocks (docs/LANGUAGE.md §3) to a [`Schedule`]: name resolution, argument
//! checking, and one call of a schedule primitive per statement.
//!
//! Every independent error is reported: a statement that fails binds its `let` names to
//! a poison value, and statements that use a poisoned name fail silently, so one mistake
//! is reported once. Errors that [`Schedule::validate`] finds about a stage whose own
//! statements failed are dropped for the same reason.

use super::ast::*;
use super::Kernel;
use crate::loc::Loc;
use crate::schedule::{AxisId, Schedule, ScheduleError, ScheduleErrorKind as K, StageId};
use crate::target::{Target, TargetError, TargetKind};
use crate::te::TensorId;
use crate::tir::{Scope, ThreadTag};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// What a name in a schedule block stands for.
#[derive(Clone, Debug)]
enum Value {
    Stage(StageId),
    Axis(AxisId),
    /// An input tensor (only `cache_read` applies to it).
    Input(TensorId),
    /// The result of a failed statement.
    Poison,
}

/// What a primitive returns.
enum Ret {
    Unit,
    Stage(StageId),
    Axis(AxisId),
    /// Several axes: `split`, `tile`, `axes()`, `reduce_axes()`.
    Axes(Vec<AxisId>),
}

/// The error was reported (or an operand was poisoned).
struct Failed;

type R<T> = Result<T, Failed>;

/// The primitives and how many arguments each takes: `(min, max)`.
fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "split" | "split_nparts" | "bind" | "compute_at" | "cache_read" => (2, 2),
        "tile" => (4, 4),
        "prefetch" | "pack" => (3, 3),
        "fuse" => (2, usize::MAX),
        "reorder" => (1, usize::MAX),
        "parallel" | "vectorize" | "unroll" | "cache_write" | "rfactor" => (1, 1),
        "compute_inline" | "compute_root" | "axes" | "reduce_axes" => (0, 0),
        _ => return None,
    })
}

struct Applier {
    s: Schedule,
    /// The tensor names of the algorithm: the only names `find_stage` resolves.
    algo_names: HashSet<String>,
    env: BTreeMap<String, Value>,
    errors: Vec<ScheduleError>,
    /// Stages with a failed statement.
    failed: BTreeSet<StageId>,
}

/// Picks the block that schedules `kind`: a block for that kind, else (for a GPU
/// target) a block borrowed from another GPU kind, CUDA first, then OpenCL, then Metal,
/// then WebGPU.
/// The flag says whether the block was borrowed.
pub(crate) fn select_block(schedules: &[ScheduleBlock], kind: TargetKind) -> Option<(&ScheduleBlock, bool)> {
    let kinds: Vec<Option<TargetKind>> =
        schedules.iter().map(|b| Target::parse(&b.target).ok().map(|t| t.kind)).collect();
    let find = |k: TargetKind| kinds.iter().position(|&x| x == Some(k)).and_then(|i| schedules.get(i));
    if let Some(b) = find(kind) {
        return Some((b, false));
    }
    let gpu = [TargetKind::Cuda, TargetKind::OpenCl, TargetKind::Metal, TargetKind::WebGpu];
    if gpu.contains(&kind) {
        return gpu.iter().find_map(|&k| find(k)).map(|b| (b, true));
    }
    None
}

/// The reason shown for a target string that does not parse.
fn target_reason(e: &TargetError) -> String {
    match e {
        TargetError::UnknownKind { .. } => "expected `cpu`, `llvm`, `cuda`, `opencl`, `webgpu` or `metal`".to_string(),
        other => other.to_string(),
    }
}

pub(crate) fn check_all(kernel: &Kernel) -> Vec<ScheduleError> {
    let mut errors = Vec::new();
    let mut seen: Vec<TargetKind> = Vec::new();
    for (i, b) in kernel.schedules.iter().enumerate() {
        let target = match Target::parse(&b.target) {
            Ok(t) => t,
            Err(e) => {
                errors.push(ScheduleError::new(
                    b.target_loc,
                    K::UnknownTarget { target: b.target.clone(), reason: target_reason(&e) },
                ));
                continue;
            }
        };
        if seen.contains(&target.kind) {
            errors.push(ScheduleError::new(b.target_loc, K::DuplicateSchedule { target: b.target.clone() }));
        }
        seen.push(target.kind);
        // The knobs as written (`b` has their first values): a block whose knobs are
        // malformed is not applied; one whose first values are legal has every value
        // checked against the others.
        let raw = kernel.ast.schedules.get(i).unwrap_or(b);
        let knob_errors = super::knobs::check_syntax(raw);
        if !knob_errors.is_empty() {
            errors.extend(knob_errors);
            continue;
        }
        match apply_block(&kernel.graph, b, target.clone()) {
            Err(es) => errors.extend(es),
            Ok(_) => errors.extend(super::knobs::check_values(&kernel.graph, raw, &target)),
        }
    }
    errors
}

/// Applies one block for `target`, then the defaults for untouched stages, and
/// validates the result.
pub(crate) fn apply_block(
    graph: &crate::te::Graph,
    block: &ScheduleBlock,
    target: Target,
) -> Result<Schedule, Vec<ScheduleError>> {
    let mut a = Applier::new(graph, target);
    a.stmts(&block.stmts);
    a.finish()
}

/// A schedule being built statement by statement: the written block's statements, then
/// (the driver's) the auto-scheduler's for the stages they leave unshaped, then the
/// defaults and validation ([`Application::finish`]).
pub struct Application {
    a: Applier,
}

impl Application {
    /// An empty schedule of `graph` for `target`.
    pub fn new(graph: &crate::te::Graph, target: Target) -> Application {
        Application { a: Applier::new(graph, target) }
    }

    /// Applies `stmts` in order (their errors are kept for [`Application::finish`]).
    pub fn apply(&mut self, stmts: &[SchedStmt]) {
        self.a.stmts(stmts);
    }

    /// Forgets the `let` bindings so far: the statements applied next name stages only.
    pub fn forget_bindings(&mut self) {
        self.a.env.clear();
    }

    /// The names the statements so far bound with `let`.
    pub fn bound_names(&self) -> Vec<String> {
        self.a.env.keys().cloned().collect()
    }

    pub fn has_errors(&self) -> bool {
        !self.a.errors.is_empty()
    }

    /// The schedule as the statements so far left it (no defaults yet).
    pub fn schedule(&self) -> &Schedule {
        &self.a.s
    }

    /// The defaults for the stages no statement touched, then validation: the schedule,
    /// or every error of the statements and of validation.
    pub fn finish(self) -> Result<Schedule, Vec<ScheduleError>> {
        self.a.finish()
    }
}

impl Applier {
    fn new(graph: &crate::te::Graph, target: Target) -> Applier {
        Applier {
            s: Schedule::new(graph.clone(), target),
            algo_names: graph.tensors.iter().map(|t| t.name.clone()).collect(),
            env: BTreeMap::new(),
            errors: Vec::new(),
            failed: BTreeSet::new(),
        }
    }

    /// Applies the statements in order, recording what each one changed.
    fn stmts(&mut self, stmts: &[SchedStmt]) {
        for st in stmts {
            let before = (self.s.axes.len(), self.s.stages.clone());
            self.stmt(st);
            if let SchedStmt::Call { loc, .. } = st {
                let touched = touched_axes(before.0, &before.1, &self.s);
                self.s.origins.push((*loc, touched));
            }
        }
    }

    /// The defaults for untouched stages, then validation: the schedule, or every error.
    fn finish(mut self) -> Result<Schedule, Vec<ScheduleError>> {
        self.s.apply_defaults();
        let failed: HashSet<String> = self.failed.iter().map(|&s| self.s.stage(s).name.clone()).collect();
        for e in self.s.validate() {
            if stages_of(&e.kind).iter().any(|n| failed.contains(*n)) || self.errors.contains(&e) {
                continue;
            }
            self.errors.push(e);
        }
        if self.errors.is_empty() {
            Ok(self.s)
        } else {
            Err(self.errors)
        }
    }
}

/// The axes a statement changed, from the schedule before and after it: new axes,
/// changed annotations, a changed loop order, and every leaf axis of a new stage or of
/// a stage whose attachment or scope changed.
fn touched_axes(axes_before: usize, stages_before: &[crate::schedule::Stage], after: &Schedule) -> Vec<AxisId> {
    let mut out: Vec<AxisId> = (axes_before..after.axes.len()).map(|i| AxisId(i as u32)).collect();
    for (i, st) in after.stages.iter().enumerate() {
        let Some(old) = stages_before.get(i) else {
            out.extend(st.leaf.iter().copied());
            continue;
        };
        if old.attach != st.attach || old.scope != st.scope {
            out.extend(st.leaf.iter().copied());
        }
        if old.leaf != st.leaf {
            out.extend(
                st.leaf
                    .iter()
                    .filter(|a| old.leaf.iter().position(|b| b == *a) != st.leaf.iter().position(|b| b == *a))
                    .copied(),
            );
        }
        for (a, ann) in &st.ann {
            if old.ann.get(a) != Some(ann) {
                out.push(*a);
            }
        }
    }
    out.sort_by_key(|a| a.0);
    out.dedup();
    out
}

/// The stages a validation error is about.
fn stages_of(k: &K) -> Vec<&str> {
    match k {
        K::ComputeAtCycle { producer, consumer }
        | K::ComputeAtNotConsumer { producer, consumer, .. }
        | K::ComputeAtSkipsConsumer { producer, consumer, .. } => vec![producer, consumer],
        K::ComputeAtAxisNotInConsumer { consumer, .. } => vec![consumer],
        K::BlockTooLarge { stage, .. }
        | K::NotBound { stage }
        | K::VectorizeNotInnermost { stage, .. }
        | K::VectorizeUnknownExtent { stage, .. }
        | K::SharedSizeUnknown { stage }
        | K::LocalSizeUnknown { stage }
        | K::SharedOnCpu { stage }
        | K::DuplicateThreadTag { stage, .. }
        | K::PrefetchAxisGone { stage, .. }
        | K::PrefetchAtVectorized { stage, .. } => vec![stage],
        _ => Vec::new(),
    }
}

impl Applier {
    fn error(&mut self, loc: Loc, kind: K) -> Failed {
        self.errors.push(ScheduleError::new(loc, kind));
        Failed
    }

    /// The stages a user may name, for messages: the algorithm's compute tensors, then
    /// the stages bound by `let`.
    fn known_stages(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .s
            .graph
            .tensors
            .iter()
            .filter(|t| !t.is_placeholder() && self.algo_names.contains(&t.name))
            .map(|t| t.name.clone())
            .collect();
        out.extend(self.env.iter().filter(|(_, v)| matches!(v, Value::Stage(_))).map(|(n, _)| n.clone()));
        out
    }

    fn lookup(&mut self, n: &Name) -> R<Value> {
        if let Some(v) = self.env.get(&n.name) {
            return match v {
                Value::Poison => Err(Failed),
                v => Ok(v.clone()),
            };
        }
        if self.algo_names.contains(&n.name) {
            if let Some(sid) = self.s.find_stage(&n.name) {
                return Ok(Value::Stage(sid));
            }
            if let Some(t) = self.s.graph.find(&n.name) {
                return Ok(Value::Input(t));
            }
        }
        let known = self.known_stages();
        Err(self.error(n.loc, K::UnknownStage { name: n.name.clone(), known }))
    }

    /// The stage `e` names.
    fn stage_of(&mut self, e: &SExpr) -> R<StageId> {
        let SExpr::Name(n) = e else {
            return Err(self.error(e.loc(), K::BadStatement { what: format!("`{e}` where a stage was expected") }));
        };
        match self.lookup(n)? {
            Value::Stage(s) => Ok(s),
            Value::Input(_) => Err(self.error(n.loc, K::NotAStage { name: n.name.clone() })),
            Value::Axis(_) => Err(self.error(n.loc, K::WrongKindOfName { name: n.name.clone(), expected: "a stage" })),
            Value::Poison => Err(Failed),
        }
    }

    /// The names an axis of `stage` can be written as, for messages.
    fn known_axes(&self, stage: StageId) -> Vec<String> {
        let mut out: Vec<String> = self
            .env
            .iter()
            .filter_map(|(n, v)| match v {
                Value::Axis(a) if self.s.axis(*a).stage == stage => Some(n.clone()),
                _ => None,
            })
            .collect();
        let st = self.s.stage(stage);
        for &a in st.root_axes.iter().chain(&st.reduce_axes) {
            out.push(format!("{}.{}", st.name, self.s.axis(a).name));
        }
        out
    }

    /// The axis `e` names; `stage` is the stage the primitive applies to (for messages).
    fn axis_of(&mut self, e: &SExpr, stage: StageId) -> R<AxisId> {
        match e {
            SExpr::Name(n) => match self.env.get(&n.name).cloned() {
                Some(Value::Axis(a)) => Ok(a),
                Some(Value::Poison) => Err(Failed),
                Some(_) => Err(self.error(n.loc, K::WrongKindOfName { name: n.name.clone(), expected: "an axis" })),
                None if self.algo_names.contains(&n.name) => {
                    Err(self.error(n.loc, K::WrongKindOfName { name: n.name.clone(), expected: "an axis" }))
                }
                None => {
                    let known = self.known_axes(stage);
                    let sname = self.s.stage(stage).name.clone();
                    Err(self
                        .error(n.loc, K::UnknownAxis { stage: sname, axis: n.name.clone(), known, restarted: false }))
                }
            },
            SExpr::Field { base, field, .. } => {
                let sid = self.stage_of(base)?;
                match self.s.root_axis(sid, &field.name) {
                    Some(a) => Ok(a),
                    None => {
                        let st = self.s.stage(sid);
                        let known =
                            st.root_axes.iter().chain(&st.reduce_axes).map(|&a| self.s.axis(a).name.clone()).collect();
                        let sname = st.name.clone();
                        let restarted = st.replaced.contains(&field.name);
                        let axis = field.name.clone();
                        Err(self.error(field.loc, K::UnknownAxis { stage: sname, axis, known, restarted }))
                    }
                }
            }
            SExpr::Index { base, index, .. } => {
                let SExpr::Method { base: sb, method, args, .. } = &**base else {
                    return Err(self.error(e.loc(), K::BadStatement { what: format!("`{e}`, which is not an axis") }));
                };
                let reduce = match method.name.as_str() {
                    "axes" => false,
                    "reduce_axes" => true,
                    _ if arity(&method.name).is_some() => {
                        return Err(self.error(
                            method.loc,
                            K::BadStatement {
                                what: format!("`{e}`: only `axes()` and `reduce_axes()` can be indexed"),
                            },
                        ))
                    }
                    _ => return Err(self.error(method.loc, K::UnknownPrimitive { name: method.name.clone() })),
                };
                let sid = self.stage_of(sb);
                if !args.is_empty() {
                    self.error(
                        method.loc,
                        K::WrongArity { name: method.name.clone(), expected: "0".into(), got: args.len() },
                    );
                    return Err(Failed);
                }
                let sid = sid?;
                let list = if reduce { self.s.leaf_reduce_axes(sid) } else { self.s.leaf_axes(sid) };
                match &**index {
                    SExpr::Int { value, loc, .. } if *value >= 0 => {
                        let index = usize::try_from(*value).unwrap_or(usize::MAX);
                        match list.get(index) {
                            Some(&a) => Ok(a),
                            None => {
                                let sname = self.s.stage(sid).name.clone();
                                Err(self.error(*loc, K::AxisIndexOutOfRange { stage: sname, index, len: list.len() }))
                            }
                        }
                    }
                    other => Err(self.error(
                        other.loc(),
                        K::BadStatement { what: format!("`{other}` as an axis index; write a non-negative integer") },
                    )),
                }
            }
            other => Err(self.error(other.loc(), K::BadStatement { what: format!("`{other}`, which is not an axis") })),
        }
    }

    /// The tensor `e` names: an input, or a stage's tensor.
    fn tensor_of(&mut self, e: &SExpr) -> R<TensorId> {
        let SExpr::Name(n) = e else {
            return Err(self.error(e.loc(), K::BadStatement { what: format!("`{e}` where a tensor was expected") }));
        };
        match self.lookup(n)? {
            // The tensor of that name: a stage computes several for a `reduce` of several
            // values, each named.
            Value::Stage(s) => Ok(self.s.graph.find(&n.name).unwrap_or(self.s.stage(s).tensor)),
            Value::Input(t) => Ok(t),
            Value::Axis(_) => Err(self.error(n.loc, K::WrongKindOfName { name: n.name.clone(), expected: "a tensor" })),
            Value::Poison => Err(Failed),
        }
    }

    /// A positive integer literal (a split factor, a prefetch distance); anything else
    /// is the error `bad` makes of its text.
    fn positive_int(&mut self, e: &SExpr, bad: fn(String) -> K) -> R<(i64, Loc)> {
        match e {
            SExpr::Int { value, loc, .. } if *value > 0 => Ok((*value, *loc)),
            SExpr::Int { text, loc, .. } | SExpr::Lit { text, loc } => Err(self.error(*loc, bad(text.clone()))),
            other => Err(self.error(other.loc(), bad(other.to_string()))),
        }
    }

    /// A split factor.
    fn factor_of(&mut self, e: &SExpr) -> R<(i64, Loc)> {
        self.positive_int(e, |value| K::BadSplitFactor { value })
    }

    fn tag_of(&mut self, e: &SExpr) -> R<(ThreadTag, Loc)> {
        if let SExpr::Field { base, field, loc } = e {
            if let SExpr::Name(kind) = &**base {
                if let Some(t) = ThreadTag::from_dsl(&kind.name, &field.name) {
                    return Ok((t, *loc));
                }
            }
        }
        Err(self.error(e.loc(), K::UnknownThreadTag { name: e.to_string() }))
    }

    fn scope_of(&mut self, e: &SExpr) -> R<(Scope, Loc)> {
        if let SExpr::Name(n) = e {
            let scope = match n.name.as_str() {
                "shared" => Some(Scope::Shared),
                "local" => Some(Scope::Local),
                "global" => Some(Scope::Global),
                _ => None,
            };
            if let Some(s) = scope {
                return Ok((s, n.loc));
            }
        }
        Err(self.error(e.loc(), K::UnknownScope { name: e.to_string() }))
    }

    /// Runs one primitive; its error is recorded and the stage marked as failed.
    fn prim<T>(&mut self, stage: StageId, r: Result<T, ScheduleError>) -> R<T> {
        r.map_err(|e| {
            self.errors.push(e);
            self.failed.insert(stage);
            Failed
        })
    }

    fn stmt(&mut self, st: &SchedStmt) {
        match st {
            SchedStmt::Bad { what, loc } => {
                self.error(*loc, K::BadStatement { what: what.clone() });
            }
            SchedStmt::Call { pattern, call, .. } => {
                let ret = match call {
                    SExpr::Method { base, method, args, .. } => self.call(base, method, args),
                    other => Err(self.error(
                        other.loc(),
                        K::BadStatement { what: format!("`{other}`, which is not a call of a primitive") },
                    )),
                };
                match ret {
                    Ok(r) => self.bind_pattern(pattern.as_ref(), r),
                    Err(Failed) => self.poison_pattern(pattern.as_ref()),
                }
            }
        }
    }

    fn poison_pattern(&mut self, pattern: Option<&Pattern>) {
        let names: Vec<&PatName> = match pattern {
            None => return,
            Some(Pattern::Single(p)) => vec![p],
            Some(Pattern::Multi { names, .. }) => names.iter().collect(),
        };
        for p in names {
            if let PatName::Name(n) = p {
                self.env.insert(n.name.clone(), Value::Poison);
            }
        }
    }

    fn bind_pattern(&mut self, pattern: Option<&Pattern>, ret: Ret) {
        let Some(pattern) = pattern else { return };
        let values: Vec<Value> = match ret {
            Ret::Unit => Vec::new(),
            Ret::Stage(s) => vec![Value::Stage(s)],
            Ret::Axis(a) => vec![Value::Axis(a)],
            Ret::Axes(v) => v.into_iter().map(Value::Axis).collect(),
        };
        let (names, loc): (Vec<&PatName>, Loc) = match pattern {
            Pattern::Single(p) => (vec![p], p.loc()),
            Pattern::Multi { names, loc } => (names.iter().collect(), *loc),
        };
        if names.len() != values.len() {
            self.error(loc, K::PatternArity { expected: values.len(), got: names.len() });
            self.poison_pattern(Some(pattern));
            return;
        }
        for (p, v) in names.into_iter().zip(values) {
            if let PatName::Name(n) = p {
                if let Value::Axis(a) = v {
                    self.s.set_axis_name(a, &n.name);
                }
                self.env.insert(n.name.clone(), v);
            }
        }
    }

    fn call(&mut self, base: &SExpr, method: &Name, args: &[SExpr]) -> R<Ret> {
        let m = method.name.as_str();
        let Some((min, max)) = arity(m) else {
            // Still resolve the receiver, to report an unknown stage as well.
            let _ = self.receiver(base, m);
            return Err(self.error(method.loc, K::UnknownPrimitive { name: method.name.clone() }));
        };
        let recv = self.receiver(base, m);
        if args.len() < min || args.len() > max {
            let expected = if min == max {
                min.to_string()
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            self.error(method.loc, K::WrongArity { name: method.name.clone(), expected, got: args.len() });
            if let Ok(Recv::Stage(s)) = recv {
                self.failed.insert(s);
            }
            return Err(Failed);
        }
        let recv = recv?;
        let rloc = base.loc();
        let stage = match recv {
            Recv::Stage(s) => s,
            Recv::Input(t) if m == "pack" => return self.pack((t, rloc), args),
            Recv::Input(t) => return self.cache_read((t, rloc), args),
        };
        let out = self.call_on(stage, rloc, m, args);
        if out.is_err() {
            self.failed.insert(stage);
        }
        out
    }

    /// The receiver of `method`: a stage, or an input tensor for `cache_read` and `pack`.
    fn receiver(&mut self, base: &SExpr, method: &str) -> R<Recv> {
        if method == "cache_read" || method == "pack" {
            if let SExpr::Name(n) = base {
                match self.lookup(n)? {
                    Value::Input(t) => return Ok(Recv::Input(t)),
                    // A later component of a `reduce` of several values: that tensor, not
                    // the first one its stage is named after.
                    Value::Stage(_) => {
                        if let Some(t) = self.s.graph.find(&n.name).filter(|&t| self.s.graph.producer(t) != t) {
                            return Ok(Recv::Input(t));
                        }
                    }
                    _ => {}
                }
            }
        }
        self.stage_of(base).map(Recv::Stage)
    }

    fn call_on(&mut self, stage: StageId, rloc: Loc, m: &str, args: &[SExpr]) -> R<Ret> {
        let arg = |k: usize| args.get(k).ok_or(Failed);
        match m {
            "split" | "split_nparts" => {
                let ax = self.axis_of(arg(0)?, stage);
                let f = self.factor_of(arg(1)?);
                let (ax, f) = (ax?, f?);
                let axl = arg(0)?.loc();
                let r = if m == "split" {
                    self.s.split(stage, (ax, axl), f)
                } else {
                    self.s.split_nparts(stage, (ax, axl), f)
                };
                let (o, i) = self.prim(stage, r)?;
                Ok(Ret::Axes(vec![o, i]))
            }
            "tile" => {
                let x = self.axis_of(arg(0)?, stage);
                let y = self.axis_of(arg(1)?, stage);
                let fx = self.factor_of(arg(2)?);
                let fy = self.factor_of(arg(3)?);
                let (x, y, fx, fy) = (x?, y?, fx?, fy?);
                let r = self.s.tile(stage, (x, arg(0)?.loc()), (y, arg(1)?.loc()), fx, fy);
                let (a, b, c, d) = self.prim(stage, r)?;
                Ok(Ret::Axes(vec![a, b, c, d]))
            }
            "fuse" => {
                let axes = self.axes_of(args, stage)?;
                let mut it = axes.into_iter();
                let mut f = it.next().ok_or(Failed)?;
                for next in it {
                    let r = self.s.fuse(stage, f, next);
                    f = (self.prim(stage, r)?, next.1);
                }
                Ok(Ret::Axis(f.0))
            }
            "reorder" => {
                let axes = self.axes_of(args, stage)?;
                let r = self.s.reorder(stage, &axes);
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "bind" => {
                let ax = self.axis_of(arg(0)?, stage);
                let tag = self.tag_of(arg(1)?);
                let (ax, tag) = (ax?, tag?);
                let r = self.s.bind(stage, (ax, arg(0)?.loc()), tag);
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "parallel" | "vectorize" | "unroll" => {
                let ax = (self.axis_of(arg(0)?, stage)?, arg(0)?.loc());
                let r = match m {
                    "parallel" => self.s.parallel(stage, ax),
                    "vectorize" => self.s.vectorize(stage, ax),
                    _ => self.s.unroll(stage, ax),
                };
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "prefetch" => {
                let t = self.tensor_of(arg(0)?);
                let ax = self.axis_of(arg(1)?, stage);
                let off = self.positive_int(arg(2)?, |value| K::BadPrefetchOffset { value });
                let (t, ax, off) = (t?, ax?, off?);
                let r = self.s.prefetch(stage, (t, arg(0)?.loc()), (ax, arg(1)?.loc()), off);
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "compute_at" => {
                let consumer = self.stage_of(arg(0)?);
                let ax = match consumer {
                    Ok(c) => self.axis_of(arg(1)?, c),
                    Err(_) => Err(Failed),
                };
                let (c, ax) = (consumer?, ax?);
                let r = self.s.compute_at((stage, rloc), (c, arg(0)?.loc()), (ax, arg(1)?.loc()));
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "compute_inline" => {
                let r = self.s.compute_inline((stage, rloc));
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "compute_root" => {
                let r = self.s.compute_root((stage, rloc));
                self.prim(stage, r)?;
                Ok(Ret::Unit)
            }
            "cache_read" => {
                let t = self.s.stage(stage).tensor;
                self.cache_read((t, rloc), args)
            }
            "pack" => {
                let t = self.s.stage(stage).tensor;
                self.pack((t, rloc), args)
            }
            "cache_write" => {
                let scope = self.scope_of(arg(0)?)?;
                let r = self.s.cache_write((stage, rloc), scope);
                Ok(Ret::Stage(self.prim(stage, r)?))
            }
            "rfactor" => {
                let ax = (self.axis_of(arg(0)?, stage)?, arg(0)?.loc());
                let r = self.s.rfactor((stage, rloc), ax);
                Ok(Ret::Stage(self.prim(stage, r)?))
            }
            "axes" => Ok(Ret::Axes(self.s.leaf_axes(stage))),
            "reduce_axes" => Ok(Ret::Axes(self.s.leaf_reduce_axes(stage))),
            _ => Err(Failed),
        }
    }

    /// Resolves every argument as an axis (all errors reported).
    fn axes_of(&mut self, args: &[SExpr], stage: StageId) -> R<Vec<(AxisId, Loc)>> {
        let mut out = Vec::new();
        let mut ok = true;
        for a in args {
            match self.axis_of(a, stage) {
                Ok(ax) => out.push((ax, a.loc())),
                Err(_) => ok = false,
            }
        }
        if ok {
            Ok(out)
        } else {
            Err(Failed)
        }
    }

    /// `x.cache_read(scope, [readers])`; `x` is a stage or an input tensor.
    fn cache_read(&mut self, tensor: (TensorId, Loc), args: &[SExpr]) -> R<Ret> {
        let scope = args.first().ok_or(Failed).and_then(|a| self.scope_of(a));
        let readers = self.readers_of(args.get(1));
        let (scope, readers) = (scope?, readers?);
        let r = self.s.cache_read(tensor, scope, &readers);
        self.new_stage(r, &readers)
    }

    /// `x.pack(dim, factor, [readers])`; `x` is a stage or an input tensor.
    fn pack(&mut self, tensor: (TensorId, Loc), args: &[SExpr]) -> R<Ret> {
        let rank = self.s.graph.tensor(tensor.0).shape.len();
        let dim = match args.first() {
            Some(SExpr::Int { value, loc, .. }) => Ok((*value, *loc)),
            Some(other) => {
                let name = self.s.graph.tensor(tensor.0).name.clone();
                let kind = K::PackDim { tensor: name, dim: other.to_string(), rank };
                Err(self.error(other.loc(), kind))
            }
            None => Err(Failed),
        };
        let factor = args.get(1).ok_or(Failed).and_then(|a| self.factor_of(a));
        let readers = self.readers_of(args.get(2));
        let (dim, factor, readers) = (dim?, factor?, readers?);
        let r = self.s.pack(tensor, dim, factor, &readers);
        self.new_stage(r, &readers)
    }

    /// The reader stages of `cache_read` and `pack`: `[s, ...]` or one stage.
    fn readers_of(&mut self, arg: Option<&SExpr>) -> R<Vec<(StageId, Loc)>> {
        let items: Vec<&SExpr> = match arg {
            Some(SExpr::List { items, .. }) => items.iter().collect(),
            Some(other) => vec![other],
            None => Vec::new(),
        };
        let mut readers = Vec::new();
        let mut ok = true;
        for it in items {
            match self.stage_of(it) {
                Ok(s) => readers.push((s, it.loc())),
                Err(_) => ok = false,
            }
        }
        if ok {
            Ok(readers)
        } else {
            Err(Failed)
        }
    }

    /// The stage a `cache_read` or `pack` made, or its error (the first reader marked as
    /// failed).
    fn new_stage(&mut self, r: Result<StageId, ScheduleError>, readers: &[(StageId, Loc)]) -> R<Ret> {
        let stage = readers.first().map(|r| r.0);
        match r {
            Ok(s) => Ok(Ret::Stage(s)),
            Err(e) => {
                self.errors.push(e);
                if let Some(s) = stage {
                    self.failed.insert(s);
                }
                Err(Failed)
            }
        }
    }
}

enum Recv {
    Stage(StageId),
    Input(TensorId),
}
