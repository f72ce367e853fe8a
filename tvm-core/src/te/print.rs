//! Printing a tensor-expression graph, with the TIR printer's expressions and names.

use super::{Graph, Op, Param};
use crate::tir::printer::{join, Printer};

/// Prints a tensor-expression graph: a `@graph` header naming the parameters and
/// outputs, then one line per tensor. Ends with a newline.
pub fn print_graph(g: &Graph) -> String {
    let names: Vec<String> = g.tensors.iter().map(|t| t.name.clone()).collect();
    let mut p = Printer::with_tensor_names(&names);
    let params: Vec<String> = g
        .params
        .iter()
        .map(|param| match param {
            Param::Tensor(t) => p.tensor(*t),
            Param::Scalar(v) => format!("{}: {}", p.var(v), v.dtype()),
        })
        .collect();
    let outputs: Vec<String> = g.outputs.iter().map(|t| p.tensor(*t)).collect();
    let mut out = format!("@graph {}({}) -> {}\n", g.name, join(params), join(outputs));
    for id in g.ids() {
        let t = g.tensor(id);
        let name = p.tensor(id);
        let line = match &t.op {
            Op::Placeholder => format!("{name}: {}[{}]", t.dtype, p.exprs(&t.shape)),
            Op::Compute { axes, body } => {
                let axes: Vec<String> = axes.iter().map(|a| p.var(&a.var)).collect();
                format!("{name}[{}] = {}", join(axes), p.typed_expr(body, t.dtype))
            }
        };
        out.push_str(&format!("  {line}\n"));
    }
    out
}
