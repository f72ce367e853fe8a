//! Substitutes every `compute_inline` stage into its readers. Afterwards no compute body
//! reads an inlined tensor, so bound inference and loop building ignore inlined stages.

use crate::schedule::{Attach, Schedule};
use crate::te::{Op, TensorId};
use crate::tir::mutate::{substitute, super_expr, Mutator};
use crate::tir::{Expr, Var};
use std::collections::HashMap;

/// Returns `sch` with the bodies of inlined stages substituted into their readers.
pub fn inline_stages(sch: &Schedule) -> Schedule {
    let mut out = sch.clone();
    let inlined: Vec<TensorId> = sch.stages.iter().filter(|s| s.attach == Attach::Inline).map(|s| s.tensor).collect();
    if inlined.is_empty() {
        return out;
    }
    // Producers first, so each inlined body is already free of inlined reads.
    for id in sch.graph.topo_order() {
        let t = out.graph.tensor(id).clone();
        let Op::Compute { axes, body } = t.op else { continue };
        let mut m = InlineReads { sch: &out, inlined: &inlined };
        let body = m.mutate_expr(body);
        out.graph.tensor_mut(id).op = Op::Compute { axes, body };
    }
    out
}

struct InlineReads<'a> {
    sch: &'a Schedule,
    inlined: &'a [TensorId],
}

impl Mutator for InlineReads<'_> {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match super_expr(self, e) {
            Expr::ProducerLoad { tensor, indices, .. } if self.inlined.contains(&tensor) => {
                let t = self.sch.graph.tensor(tensor);
                let Op::Compute { axes, body } = &t.op else { unreachable!("inlined tensors are compute tensors") };
                let map: HashMap<Var, Expr> = axes.iter().map(|a| a.var.clone()).zip(indices).collect();
                substitute(body.clone(), &map)
            }
            e => e,
        }
    }
}
