//! The cost view: the loop tree of a lowered function with each loop's trip count, FLOPs
//! and global-memory bytes (`tvm_core::cost`), as expressions in the kernel's dims, or
//! numbers when the dims are given.

use serde_json::{json, Value};
use std::collections::HashMap;
use tvm_core::arith::Analyzer;
use tvm_core::cost::CostNode;
use tvm_core::tir::printer::Printer;
use tvm_core::tir::{Expr, PrimFunc};

/// The loop tree of `f` with costs; `dims` gives values to dims by name.
pub fn tree(f: &PrimFunc, dims: &HashMap<String, i64>) -> Vec<Value> {
    let (nodes, _, _) = tvm_core::cost::cost(f);
    let mut s = Show { dims, an: Analyzer::new(), printer: Printer::new() };
    nodes.iter().map(|n| s.node(n)).collect()
}

struct Show<'a> {
    dims: &'a HashMap<String, i64>,
    an: Analyzer,
    printer: Printer<'a>,
}

impl Show<'_> {
    fn node(&mut self, n: &CostNode) -> Value {
        let children: Vec<Value> = n.children.iter().map(|c| self.node(c)).collect();
        json!({
            "label": n.label,
            "trips": self.show(&n.trips),
            "flops": self.show(&n.flops),
            "bytes": self.show(&n.bytes),
            "children": children,
        })
    }

    /// `e` with the given dims, simplified: a number when constant, else its text.
    fn show(&mut self, e: &Expr) -> Value {
        let mut map = HashMap::new();
        for v in tvm_core::tir::visit::vars_of(e) {
            if let Some(&x) = self.dims.get(v.name()) {
                map.insert(v.clone(), Expr::int(x));
            }
        }
        let e = self.an.simplify(&tvm_core::tir::mutate::substitute(e.clone(), &map));
        match e.as_int() {
            Some(n) => json!(n),
            None => json!(self.printer.expr(&e)),
        }
    }
}
