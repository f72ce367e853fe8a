//! What the rules need to know of each stage of a graph: its kind, its axes and their
//! extents, the tensors it reads (looking through the producers that will be inlined into
//! it) and how each read moves as an axis advances.

use crate::te::{Graph, Op, TensorId};
use crate::tir::mutate::{substitute, substitute_one};
use crate::tir::visit::{for_each_expr, uses_var};
use crate::tir::{Expr, Intrinsic, Var};
use std::collections::HashMap;

/// The kinds of stage the rules tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No reduction, not reading itself: element-wise maps, broadcasts, transposes,
    /// padding, gathers.
    Injective,
    /// A reduction of one value with a built-in combiner.
    Reduction,
    /// A reduction of several values, or with a combiner of its own (`reduce`, `argmax`).
    TupleReduction,
    /// A recurrence: a stage that reads its own earlier elements.
    Scan,
}

/// An axis of a stage, as the algorithm writes it.
#[derive(Clone, Debug)]
pub struct AxisInfo {
    pub name: String,
    pub var: Var,
    /// The extent, when it is a compile-time constant.
    pub extent: Option<i64>,
}

/// How a read moves when one axis advances by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The read does not depend on the axis.
    Invariant,
    /// Only the last index depends on it, advancing by one: consecutive elements.
    Contiguous,
    /// Anything else.
    Strided,
}

/// One read of a tensor that is not inlined: an input, or a stage with loops of its own.
#[derive(Clone, Debug)]
pub struct Access {
    pub tensor: TensorId,
    pub indices: Vec<Expr>,
    /// The conditions under which the read is not made, when it is only made in the
    /// `else` branch of selects (a boundary view's clamped read, a roll's wrapped one):
    /// `i - k >= 0 && i - k < N` for `select(.., x[i - k], x[(i - k) % N ..])`.
    pub unless: Vec<Expr>,
}

/// What the rules know of one compute stage.
#[derive(Clone, Debug)]
pub struct StageInfo {
    pub tensor: TensorId,
    pub name: String,
    pub kind: Kind,
    pub axes: Vec<AxisInfo>,
    pub reduce: Vec<AxisInfo>,
    /// The reads of the stage's body, through the producers that are inlined into it.
    pub reads: Vec<Access>,
    /// The body calls a transcendental function or divides (worth computing once).
    pub expensive: bool,
    /// The conditions of the body's selects, through the producers inlined into it (a
    /// padding's or a boundary's test).
    pub conditions: Vec<Expr>,
    pub is_output: bool,
    /// The compute stages that read this one.
    pub consumers: Vec<TensorId>,
}

impl StageInfo {
    /// The last index of `access` that depends on `var`, and how much it advances when
    /// `var` does; `None` where the read does not depend on `var`, or not linearly there.
    pub fn last_index_along(access: &Access, var: &Var) -> Option<(usize, i64)> {
        let p = access.indices.iter().rposition(|i| uses_var(i, var))?;
        Some((p, stride(&access.indices[p], var)?))
    }

    /// How `access` moves as `var` advances.
    pub fn step(access: &Access, var: &Var) -> Step {
        let Some((last, front)) = access.indices.split_last() else { return Step::Invariant };
        if front.iter().any(|i| uses_var(i, var)) {
            return Step::Strided;
        }
        if !uses_var(last, var) {
            return Step::Invariant;
        }
        if stride(last, var) == Some(1) {
            Step::Contiguous
        } else {
            Step::Strided
        }
    }

    /// Whether every read is invariant in, or contiguous along, `var`, leaving out the
    /// reads of a border: those made only where a condition linear in `var` fails (the
    /// `else` of a boundary's or a wrap's select). Loop partitioning splits the border's
    /// iterations off (`partition_loops`), so the interior is the contiguous branch alone;
    /// the border's reads are vectorized lane by lane, as the schedule would have them.
    pub fn vectorizable_along(&self, var: &Var) -> bool {
        self.reads
            .iter()
            .all(|a| Self::step(a, var) != Step::Strided || a.unless.iter().any(|c| bounds_linearly(c, var)))
    }

    /// Whether the body selects by a test with a border on `var` (a padding, a
    /// boundary: a range of `var` that loop partitioning splits the loop at).
    pub fn has_border_on(&self, var: &Var) -> bool {
        self.conditions.iter().any(|c| bounds_linearly(c, var))
    }

    /// Whether some read does not depend on some spatial axis: the same data is used for
    /// several outputs, so a tile of outputs can reuse what it loads (Ansor's rule for
    /// multi-level tiling).
    pub fn has_reuse(&self) -> bool {
        self.reads.iter().any(|a| self.axes.iter().any(|ax| Self::step(a, &ax.var) == Step::Invariant))
    }

    /// The product of the constant spatial extents (`None` when one is symbolic).
    pub fn spatial_size(&self) -> Option<i64> {
        self.axes.iter().try_fold(1i64, |p, a| a.extent.and_then(|e| p.checked_mul(e)))
    }

    /// The product of the constant reduction extents (`None` when one is symbolic).
    pub fn reduce_size(&self) -> Option<i64> {
        self.reduce.iter().try_fold(1i64, |p, a| a.extent.and_then(|e| p.checked_mul(e)))
    }

    pub fn axis(&self, name: &str) -> Option<&AxisInfo> {
        self.axes.iter().chain(&self.reduce).find(|a| a.name == name)
    }
}

/// Every compute stage of `graph` (the first component of a reduction of several values
/// stands for its stage), by tensor, with its reads taken through the stages of
/// `inlined`.
pub fn analyze(graph: &Graph, inlined: &dyn Fn(TensorId) -> bool) -> HashMap<TensorId, StageInfo> {
    let mut out = HashMap::new();
    for t in graph.topo_order() {
        if graph.producer(t) != t {
            continue;
        }
        let tensor = graph.tensor(t);
        let Op::Compute { axes, body } = &tensor.op else { continue };
        let kind = if graph.scan_dim(t).is_some() {
            Kind::Scan
        } else if tensor.tuple_reduce().is_some() {
            Kind::TupleReduction
        } else if tensor.is_reduction() {
            Kind::Reduction
        } else {
            Kind::Injective
        };
        let info = |iv: &crate::tir::IterVar| AxisInfo {
            name: iv.var.name().to_string(),
            var: iv.var.clone(),
            extent: iv.dom.extent.as_int(),
        };
        let mut reads = Vec::new();
        let mut expensive = false;
        let mut conditions = Vec::new();
        collect_reads(graph, t, body, inlined, &mut reads, &mut expensive, &mut conditions, 0);
        out.insert(
            t,
            StageInfo {
                tensor: t,
                name: tensor.name.clone(),
                kind,
                axes: axes.iter().map(info).collect(),
                reduce: tensor.reduce_axes().iter().map(info).collect(),
                reads,
                expensive,
                conditions,
                is_output: graph.is_output(t),
                consumers: graph.consumers_of(t).into_iter().filter(|&c| graph.producer(c) == c).collect(),
            },
        );
    }
    out
}

/// Whether evaluating `e` costs more than a few instructions an element: a
/// transcendental function, a square root, a power, or a division of floats.
pub fn is_expensive(e: &Expr) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| match x {
        Expr::Call { func, .. } => {
            found |= !matches!(func, Intrinsic::Abs | Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Fma)
        }
        Expr::Binary { op: crate::tir::BinOp::Div, a, .. } => found |= a.dtype().is_float(),
        _ => {}
    });
    found
}

/// Whether `e` chooses between values by a condition (a boundary, a padding).
pub fn has_select(e: &Expr) -> bool {
    let mut found = false;
    for_each_expr(e, &mut |x| found |= matches!(x, Expr::Select { .. }));
    found
}

/// Whether `c` is a conjunction of comparisons, each linear in `var` or free of it, with
/// at least one mentioning `var`: a range of `var` that loop partitioning can split at.
fn bounds_linearly(c: &Expr, var: &Var) -> bool {
    let parts = crate::tir::visit::conjuncts(c.clone());
    let linear = |p: &Expr| match p {
        Expr::Cmp { a, b, .. } if a.dtype().is_integer() => stride(&((**a).clone() - (**b).clone()), var).is_some(),
        p => !uses_var(p, var),
    };
    parts.iter().all(linear) && parts.iter().any(|p| uses_var(p, var))
}

/// The loads of `e` made only in the `else` branch of selects, each with the conditions
/// of those selects.
fn border_loads(e: &Expr) -> Vec<(Expr, Vec<Expr>)> {
    let mut out: Vec<(Expr, Vec<Expr>)> = Vec::new();
    for_each_expr(e, &mut |x| {
        let Expr::Select { cond, otherwise, .. } = x else { return };
        for_each_expr(otherwise, &mut |l| {
            if matches!(l, Expr::ProducerLoad { .. }) {
                match out.iter_mut().find(|(x, _)| x == l) {
                    Some((_, conds)) => conds.push((**cond).clone()),
                    None => out.push((l.clone(), vec![(**cond).clone()])),
                }
            }
        });
    });
    // A load that also occurs outside every such branch is made there too.
    let mut all: Vec<(Expr, usize)> = Vec::new();
    for_each_expr(e, &mut |l| {
        if matches!(l, Expr::ProducerLoad { .. }) {
            match all.iter_mut().find(|(x, _)| x == l) {
                Some((_, n)) => *n += 1,
                None => all.push((l.clone(), 1)),
            }
        }
    });
    out.retain(|(l, conds)| all.iter().any(|(x, n)| x == l && *n == conds.len()));
    out
}

fn collect_reads(
    graph: &Graph,
    this: TensorId,
    e: &Expr,
    inlined: &dyn Fn(TensorId) -> bool,
    reads: &mut Vec<Access>,
    expensive: &mut bool,
    conditions: &mut Vec<Expr>,
    depth: usize,
) {
    *expensive |= is_expensive(e);
    for_each_expr(e, &mut |x| {
        if let Expr::Select { cond, .. } = x {
            conditions.push((**cond).clone());
        }
    });
    let border = border_loads(e);
    for_each_expr(e, &mut |x| {
        let Expr::ProducerLoad { tensor, indices, .. } = x else { return };
        let unless = border.iter().find(|(l, _)| l == x).map_or_else(Vec::new, |(_, c)| c.clone());
        let indices: Vec<Expr> = indices.iter().map(|i| i.unchecked().clone()).collect();
        let src = graph.tensor(*tensor);
        match &src.op {
            Op::Compute { axes, body } if *tensor != this && depth < 16 && inlined(*tensor) => {
                let map: HashMap<Var, Expr> = axes.iter().map(|a| a.var.clone()).zip(indices).collect();
                let body = substitute(body.clone(), &map);
                collect_reads(graph, this, &body, inlined, reads, expensive, conditions, depth + 1);
            }
            _ => reads.push(Access { tensor: *tensor, indices, unless }),
        }
    });
}

/// The number of elements of a tensor of `shape` that `access` reads while each variable
/// runs over `extent(var)` values from its start: per index, its span (one more than the
/// sum of each variable's coefficient times its extent less one, for an index linear in
/// them with constant coefficients), at most the dim where that is known. `None` for an
/// index that is not such a sum.
pub fn region(access: &Access, shape: &[Expr], extent: &dyn Fn(&Var) -> i64) -> Option<i64> {
    let mut total: i64 = 1;
    for (k, index) in access.indices.iter().enumerate() {
        let mut span: i64 = 1;
        for var in crate::tir::visit::vars_of(index) {
            let e = extent(&var);
            if e <= 1 {
                continue;
            }
            span = span.checked_add(stride(index, &var)?.checked_abs()?.checked_mul(e - 1)?)?;
        }
        if let Some(d) = shape.get(k).and_then(Expr::as_int) {
            span = span.min(d);
        }
        total = total.checked_mul(span)?;
    }
    Some(total)
}

/// How much `e` changes when `var` grows by one, where that is a constant (`e` linear in
/// `var` with a constant coefficient, or free of it: 0).
pub(super) fn stride(e: &Expr, var: &Var) -> Option<i64> {
    let next = substitute_one(e.clone(), var, Expr::var(var) + Expr::int(1));
    crate::arith::Analyzer::new().simplify(&(next - e.clone())).as_int()
}
