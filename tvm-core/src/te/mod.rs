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
                        let ix = match ix {
                            Expr::Check { value, .. } => value,
                            ix => ix,
                        };
                        if ix.as_var() != Some(&ax.var) {
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
