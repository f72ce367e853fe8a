//! The cost view: per loop of a lowered function, its trip count and the floating-point
//! operations and global-memory bytes of all its iterations (the body's, times the trip
//! count), as expressions in the kernel's dims, or numbers when the dims are given. A
//! conditional counts its costlier branch. Vector operations count one per lane; a fused
//! multiply-add counts two.

use serde_json::{json, Value};
use std::collections::HashMap;
use tvm_core::arith::Analyzer;
use tvm_core::tir::printer::Printer;
use tvm_core::tir::visit::{walk_expr, Visitor};
use tvm_core::tir::{Expr, Intrinsic, PrimFunc, Scope, Stmt};

/// The loop tree of `f` with costs; `dims` gives values to dims by name.
pub fn tree(f: &PrimFunc, dims: &HashMap<String, i64>) -> Vec<Value> {
    let mut c = Cost { f, dims, an: Analyzer::new(), printer: Printer::new() };
    c.stmt(&f.body).0
}

struct Cost<'a> {
    f: &'a PrimFunc,
    dims: &'a HashMap<String, i64>,
    an: Analyzer,
    printer: Printer<'a>,
}

/// Children, floating-point operations, bytes.
type Part = (Vec<Value>, Expr, Expr);

fn zero() -> Expr {
    Expr::int(0)
}

impl Cost<'_> {
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

    fn node(&mut self, label: String, trips: &Expr, part: Part) -> Part {
        let (children, flops, bytes) = part;
        let (flops, bytes) = (trips.clone() * flops, trips.clone() * bytes);
        let v = json!({
            "label": label,
            "trips": self.show(trips),
            "flops": self.show(&flops),
            "bytes": self.show(&bytes),
            "children": children,
        });
        (vec![v], flops, bytes)
    }

    fn stmt(&mut self, s: &Stmt) -> Part {
        match s {
            Stmt::Seq(ss) => {
                let mut out = (Vec::new(), zero(), zero());
                for s in ss {
                    let (c, f, b) = self.stmt(s);
                    out.0.extend(c);
                    out.1 = out.1 + f;
                    out.2 = out.2 + b;
                }
                out
            }
            Stmt::For { extent, body, .. } => {
                let label = self.printer.stmt_header(s);
                let part = self.stmt(body);
                self.node(label, &extent.clone(), part)
            }
            Stmt::ThreadBinding { extent, body, .. } => {
                let label = self.printer.stmt_header(s);
                let part = self.stmt(body);
                self.node(label, &extent.clone(), part)
            }
            Stmt::If { then, otherwise, .. } => {
                let (mut c, f, b) = self.stmt(then);
                match otherwise {
                    Some(o) => {
                        let (c2, f2, b2) = self.stmt(o);
                        c.extend(c2);
                        (c, Expr::max(f, f2), Expr::max(b, b2))
                    }
                    None => (c, f, b),
                }
            }
            Stmt::Let { value, body, .. } => {
                let (c, f, b) = self.stmt(body);
                let (f0, b0) = expr_cost(value);
                (c, f + f0, b + b0)
            }
            Stmt::Allocate { body, .. } | Stmt::Realize { body, .. } => self.stmt(body),
            Stmt::Store { buffer, indices, value } => {
                let (mut f, mut b) = expr_cost(value);
                for i in indices {
                    let (f1, b1) = expr_cost(i);
                    f = f + f1;
                    b = b + b1;
                }
                if buffer.scope() == Scope::Global {
                    let lanes = indices.iter().map(|i| i.dtype().lanes as i64).max().unwrap_or(1);
                    b = b + Expr::int(lanes * buffer.dtype().bytes() as i64);
                }
                (Vec::new(), f, b)
            }
            Stmt::Launch { kernel } => {
                let Some(k) = self.f.kernels.get(*kernel) else { return (Vec::new(), zero(), zero()) };
                let threads = k.grid.iter().chain(&k.block).fold(Expr::int(1), |a, e| a * e.clone());
                let label = format!("launch {} (one work-item per grid × block point)", k.name);
                let part = self.stmt(&k.body);
                self.node(label, &threads, part)
            }
            _ => (Vec::new(), zero(), zero()),
        }
    }
}

/// Floating-point operations and global-memory bytes read by one evaluation of `e`.
fn expr_cost(e: &Expr) -> (Expr, Expr) {
    struct C(i64, i64);
    impl Visitor for C {
        fn visit_expr(&mut self, e: &Expr) {
            let d = e.dtype();
            let lanes = d.lanes as i64;
            match e {
                Expr::Binary { .. } if d.is_float() => self.0 += lanes,
                Expr::Call { func: Intrinsic::Fma, .. } => self.0 += 2 * lanes,
                Expr::Call { .. } if d.is_float() => self.0 += lanes,
                Expr::Load { buffer, .. } if buffer.scope() == Scope::Global => {
                    self.1 += lanes * d.element().bytes() as i64
                }
                _ => {}
            }
            walk_expr(self, e)
        }
    }
    let mut c = C(0, 0);
    c.visit_expr(e);
    (Expr::int(c.0), Expr::int(c.1))
}
