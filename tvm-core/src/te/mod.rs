//! Tensor expressions: the algorithm of a kernel, before any schedule.
//!
//! A [`Graph`] holds every tensor of one `compute!` kernel: placeholders (inputs) and
//! compute tensors (intermediates and outputs), producers before consumers.

use crate::dtype::DType;
use crate::loc::Loc;
use crate::tir::{Expr, IterVar, Var};

pub use crate::tir::TensorId;
pub use print::print_graph;

mod print;

/// How a tensor is produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// An input tensor.
    Placeholder,
    /// `t[axes] = body`; `body` is an `Expr::Reduce` for a reduction stage, and a
    /// reduction only ever appears as the whole body.
    Compute { axes: Vec<IterVar>, body: Expr },
}

/// One tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub dtype: DType,
    /// Each dim an `i64` constant or a symbolic dim variable.
    pub shape: Vec<Expr>,
    pub op: Op,
    /// Where the tensor was declared.
    pub loc: Loc,
}

impl Tensor {
    pub fn is_placeholder(&self) -> bool {
        matches!(self.op, Op::Placeholder)
    }
    pub fn axes(&self) -> &[IterVar] {
        match &self.op {
            Op::Compute { axes, .. } => axes,
            Op::Placeholder => &[],
        }
    }
    pub fn body(&self) -> Option<&Expr> {
        match &self.op {
            Op::Compute { body, .. } => Some(body),
            Op::Placeholder => None,
        }
    }
    /// The reduction axes, if the stage is a reduction.
    pub fn reduce_axes(&self) -> &[IterVar] {
        match self.body() {
            Some(Expr::Reduce(r)) => &r.axes,
            _ => &[],
        }
    }
    pub fn is_reduction(&self) -> bool {
        matches!(self.body(), Some(Expr::Reduce(_)))
    }
    /// The reduction over several values this tensor is a component of.
    pub fn tuple_reduce(&self) -> Option<&crate::tir::TupleReduce> {
        match self.body() {
            Some(Expr::Reduce(r)) => r.tuple.as_deref(),
            _ => None,
        }
    }
}

/// A recurrence that is an inclusive scan ([`Graph::scan_monoid`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ScanMonoid {
    pub op: crate::tir::ReduceOp,
    /// The scan dim.
    pub dim: usize,
    /// The element at each index, in the stage's axes: `y[j]` is the `op` of the elements
    /// at `0..=j`.
    pub element: Expr,
}

/// A parameter of the kernel function, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Tensor(TensorId),
    /// A scalar (`alpha: f32`, `n: usize`); `usize` scalars are `u64` vars that may
    /// also be used as dims.
    Scalar(Var),
}

/// The tensor-expression program of one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub name: String,
    pub tensors: Vec<Tensor>,
    pub params: Vec<Param>,
    pub outputs: Vec<TensorId>,
    /// Symbolic dims (`i64` vars), in order of first appearance in the signature.
    pub dims: Vec<Var>,
    /// The check sites of the kernel's `Expr::Check`s (the reads and divisions the
    /// frontend could not prove valid), by site number.
    pub checks: Vec<crate::tir::CheckSite>,
}

impl Graph {
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.0 as usize]
    }
    pub fn tensor_mut(&mut self, id: TensorId) -> &mut Tensor {
        &mut self.tensors[id.0 as usize]
    }
    pub fn ids(&self) -> impl Iterator<Item = TensorId> {
        (0..self.tensors.len() as u32).map(TensorId)
    }
    pub fn find(&self, name: &str) -> Option<TensorId> {
        self.ids().find(|&id| self.tensor(id).name == name)
    }
    pub fn is_output(&self, id: TensorId) -> bool {
        self.outputs.contains(&id)
    }
    pub fn add(&mut self, t: Tensor) -> TensorId {
        self.tensors.push(t);
        TensorId(self.tensors.len() as u32 - 1)
    }
    /// The tensors one stage computes together with `id`, in order: every component of
    /// a reduction over several values, else `id` alone.
    pub fn tuple_outputs(&self, id: TensorId) -> Vec<TensorId> {
        match self.tensor(id).tuple_reduce() {
            Some(t) => t.outputs.clone(),
            None => vec![id],
        }
    }
    /// The tensor whose stage computes `id`: the first component of a reduction over
    /// several values, else `id`.
    pub fn producer(&self, id: TensorId) -> TensorId {
        self.tensor(id).tuple_reduce().map_or(id, |t| t.outputs[0])
    }
    /// The tensors `id` reads, in first-read order (not itself: see [`Graph::scan_dim`]).
    pub fn inputs_of(&self, id: TensorId) -> Vec<TensorId> {
        let mut out = Vec::new();
        if let Some(body) = self.tensor(id).body() {
            crate::tir::visit::for_each_expr(body, &mut |e| {
                if let Expr::ProducerLoad { tensor, .. } = e {
                    if *tensor != id && !out.contains(tensor) {
                        out.push(*tensor);
                    }
                }
            });
        }
        out
    }
    /// A recurrence that is an inclusive scan with an associative and commutative
    /// operator: `y[j] = if j >= 1 { y[j - 1] ⊕ e } else { e0 }` (or `if j == 0 { e0 }
    /// else { .. }`, `j > 0`, `j != 0`; `⊕` one of `+ * max min`, either side; `e` and
    /// `e0` not reading `y`). Its elements are `if j >= 1 { e } else { e0 }`, which a
    /// parallel scan may combine in any grouping (float results then round differently
    /// from the serial loop, as any parallel sum does).
    pub fn scan_monoid(&self, id: TensorId) -> Option<ScanMonoid> {
        use crate::tir::{BinOp, CmpOp, ReduceOp};
        let d = self.scan_dim(id)?;
        let t = self.tensor(id);
        let j = &t.axes()[d].var;
        let Some(Expr::Select { cond, then, otherwise }) = t.body() else { return None };
        // Whether `cond` holds exactly for `j >= 1` (true) or exactly for `j == 0` (false).
        let Expr::Cmp { op, a, b } = &**cond else { return None };
        let (op, c) = match (a.as_var(), b.as_int(), b.as_var(), a.as_int()) {
            (Some(v), Some(c), _, _) if v == j => (*op, c),
            (_, _, Some(v), Some(c)) if v == j => (op.flip(), c),
            _ => return None,
        };
        let rest_when_true = match (op, c) {
            (CmpOp::Ge, 1) | (CmpOp::Gt, 0) | (CmpOp::Ne, 0) => true,
            (CmpOp::Eq, 0) | (CmpOp::Lt, 1) | (CmpOp::Le, 0) => false,
            _ => return None,
        };
        let (rest, first) = if rest_when_true { (then, otherwise) } else { (otherwise, then) };
        let Expr::Binary { op, a, b } = &**rest else { return None };
        let op = match op {
            BinOp::Add => ReduceOp::Sum,
            BinOp::Mul => ReduceOp::Prod,
            BinOp::Max => ReduceOp::Max,
            BinOp::Min => ReduceOp::Min,
            _ => return None,
        };
        let analyzer = crate::arith::Analyzer::new();
        let is_prev = |e: &Expr| match e {
            Expr::ProducerLoad { tensor, indices, .. } if *tensor == id => {
                indices.iter().zip(t.axes()).enumerate().all(|(k, (ix, ax))| {
                    let want = if k == d { Expr::var(&ax.var) - 1 } else { Expr::var(&ax.var) };
                    analyzer.simplify(&(ix.unchecked().clone() - want)).is_const_int(0)
                })
            }
            _ => false,
        };
        let reads_self = |e: &Expr| {
            let mut found = false;
            crate::tir::visit::for_each_expr(e, &mut |x| {
                found |= matches!(x, Expr::ProducerLoad { tensor, .. } if *tensor == id);
            });
            found
        };
        let e = match (is_prev(a), is_prev(b)) {
            (true, false) => b,
            (false, true) => a,
            _ => return None,
        };
        if reads_self(e) || reads_self(first) {
            return None;
        }
        let rest_cond = Expr::ge(Expr::var(j), Expr::int(1));
        Some(ScanMonoid { op, dim: d, element: Expr::select(rest_cond, (**e).clone(), (**first).clone()) })
    }
    /// The dim along which a stage that reads itself (a recurrence, `y[i, j]` reading
    /// `y[i, j - 1]`) steps back: its scan axis, which must run in order.
    pub fn scan_dim(&self, id: TensorId) -> Option<usize> {
        let t = self.tensor(id);
        let body = t.body()?;
        let mut dim = None;
        crate::tir::visit::for_each_expr(body, &mut |e| {
            if let Expr::ProducerLoad { tensor, indices, .. } = e {
                if *tensor == id {
                    for (d, (ix, ax)) in indices.iter().zip(t.axes()).enumerate() {
                        if ix.unchecked().as_var() != Some(&ax.var) {
                            dim = Some(d);
                        }
                    }
                }
            }
        });
        dim
    }

    /// The compute tensors that read `id`.
    pub fn consumers_of(&self, id: TensorId) -> Vec<TensorId> {
        self.ids().filter(|&c| self.inputs_of(c).contains(&id)).collect()
    }
    /// Compute tensors, producers before consumers.
    pub fn topo_order(&self) -> Vec<TensorId> {
        let mut order = Vec::new();
        let mut state = vec![0u8; self.tensors.len()];
        fn go(g: &Graph, id: TensorId, state: &mut [u8], order: &mut Vec<TensorId>) {
            if state[id.0 as usize] != 0 {
                return;
            }
            state[id.0 as usize] = 1;
            for p in g.inputs_of(id) {
                go(g, p, state, order);
            }
            state[id.0 as usize] = 2;
            if !g.tensor(id).is_placeholder() {
                order.push(id);
            }
        }
        for id in self.ids() {
            go(self, id, &mut state, &mut order);
        }
        order
    }
    /// The tensors of the `Param::Tensor` parameters.
    pub fn input_tensors(&self) -> Vec<TensorId> {
        self.params
            .iter()
            .filter_map(|p| match p {
                Param::Tensor(t) => Some(*t),
                Param::Scalar(_) => None,
            })
            .collect()
    }
    pub fn scalar_params(&self) -> Vec<Var> {
        self.params
            .iter()
            .filter_map(|p| match p {
                Param::Scalar(v) => Some(v.clone()),
                Param::Tensor(_) => None,
            })
            .collect()
    }
}
