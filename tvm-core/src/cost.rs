//! The static cost of a lowered function: per loop, its trip count and the floating-point
//! operations and global-memory bytes of all its iterations (the body's, times the trip
//! count), as expressions in the function's dims. A conditional counts its costlier
//! branch. Vector operations count one per lane; a fused multiply-add counts two; bytes are
//! what the code loads from and stores to global buffers (re-reads included: traffic the
//! caches may absorb). The pipeline explorer shows the tree; `NAME::profile` divides the
//! totals by the measured time.

use crate::tir::printer::Printer;
use crate::tir::visit::{walk_expr, Visitor};
use crate::tir::{Expr, Intrinsic, PrimFunc, Scope, Stmt};

/// One loop (or launch) and its cost over all its iterations.
#[derive(Clone, Debug)]
pub struct CostNode {
    /// The loop's header as the TIR printer writes it.
    pub label: String,
    pub trips: Expr,
    pub flops: Expr,
    pub bytes: Expr,
    pub children: Vec<CostNode>,
}

/// The loop tree of `f` with costs, and the whole function's FLOPs and bytes.
pub fn cost(f: &PrimFunc) -> (Vec<CostNode>, Expr, Expr) {
    let mut c = Cost { f, printer: Printer::new(), in_kernel: false };
    c.stmt(&f.body)
}

struct Cost<'a> {
    f: &'a PrimFunc,
    printer: Printer<'a>,
    /// Inside a kernel's body, where a launch is not followed (a malformed function).
    in_kernel: bool,
}

/// Children, floating-point operations, bytes.
type Part = (Vec<CostNode>, Expr, Expr);

fn zero() -> Expr {
    Expr::int(0)
}

/// `a + b`, folded where a side is a constant (the sums stay small for the simplifier);
/// a sum that would overflow `i64` stays symbolic (the generated code adds in `f64`).
fn add(a: Expr, b: Expr) -> Expr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) if x.checked_add(y).is_some() => Expr::int(x + y),
        (Some(0), _) => b,
        (_, Some(0)) => a,
        _ => a + b,
    }
}

/// `a * b`, folded likewise.
fn mul(a: Expr, b: Expr) -> Expr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) if x.checked_mul(y).is_some() => Expr::int(x * y),
        (Some(0), _) | (_, Some(0)) => Expr::int(0),
        (Some(1), _) => b,
        (_, Some(1)) => a,
        _ => a * b,
    }
}

/// `max(a, b)`, folded likewise.
fn max(a: Expr, b: Expr) -> Expr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => Expr::int(x.max(y)),
        _ if a == b => a,
        _ => Expr::max(a, b),
    }
}

impl Cost<'_> {
    fn node(&mut self, label: String, trips: &Expr, part: Part) -> Part {
        let (children, flops, bytes) = part;
        let (flops, bytes) = (mul(trips.clone(), flops), mul(trips.clone(), bytes));
        let n = CostNode { label, trips: trips.clone(), flops: flops.clone(), bytes: bytes.clone(), children };
        (vec![n], flops, bytes)
    }

    fn stmt(&mut self, s: &Stmt) -> Part {
        match s {
            Stmt::Seq(ss) => {
                let mut out = (Vec::new(), zero(), zero());
                for s in ss {
                    let (c, f, b) = self.stmt(s);
                    out.0.extend(c);
                    out.1 = add(out.1, f);
                    out.2 = add(out.2, b);
                }
                out
            }
            Stmt::For { extent, body, .. } | Stmt::ThreadBinding { extent, body, .. } => {
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
                        (c, max(f, f2), max(b, b2))
                    }
                    None => (c, f, b),
                }
            }
            Stmt::Let { value, body, .. } => {
                let (c, f, b) = self.stmt(body);
                let (f0, b0) = expr_cost(value);
                (c, add(f, f0), add(b, b0))
            }
            Stmt::Allocate { body, .. } | Stmt::Realize { body, .. } => self.stmt(body),
            Stmt::Store { buffer, indices, value } => {
                let (mut f, mut b) = expr_cost(value);
                for i in indices {
                    let (f1, b1) = expr_cost(i);
                    f = add(f, f1);
                    b = add(b, b1);
                }
                if buffer.scope() == Scope::Global {
                    let lanes = indices.iter().map(|i| i.dtype().lanes as i64).max().unwrap_or(1);
                    b = add(b, Expr::int(lanes * buffer.dtype().bytes() as i64));
                }
                (Vec::new(), f, b)
            }
            Stmt::Launch { kernel } => {
                let Some(k) = self.f.kernels.get(*kernel).filter(|_| !self.in_kernel) else {
                    return (Vec::new(), zero(), zero());
                };
                let threads = k.grid.iter().chain(&k.block).fold(Expr::int(1), |a, e| mul(a, e.clone()));
                let label = format!("launch {} (one work-item per grid × block point)", k.name);
                self.in_kernel = true;
                let part = self.stmt(&k.body);
                self.in_kernel = false;
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
