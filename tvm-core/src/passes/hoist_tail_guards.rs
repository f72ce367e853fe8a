//! Loop partitioning for vectorized loops: a guard inside a `vectorize` loop that
//! depends on the loop variable (the tail of a split that does not divide) is hoisted
//! into a check that the whole vector is inside, so the main path runs without the
//! guard and becomes vector code, and only the tail keeps the guarded scalar loop.
//! Afterwards every such loop is `if whole { loop without guard } else { original }`.

use crate::arith::Analyzer;
use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::visit::{conjuncts, uses_var};
use crate::tir::{CmpOp, Expr, ForKind, PrimFunc, Stmt, Var};

/// Hoists the tail guards of the vectorized loops of `f`.
pub fn hoist_tail_guards(mut f: PrimFunc) -> PrimFunc {
    f.body = Hoist.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = Hoist.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    f
}

struct Hoist;

impl Mutator for Hoist {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Vectorized, body } => {
                let original = Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: ForKind::Vectorized,
                    body: body.clone(),
                };
                let Stmt::If { cond, then, otherwise: None } = *body else { return original };
                let mut analyzer = Analyzer::new();
                analyzer.bind(&var, min.clone(), extent.clone());
                let mut kept = Vec::new();
                let mut whole = Vec::new();
                for c in conjuncts(cond) {
                    if !uses_var(&c, &var) {
                        kept.push(c);
                        continue;
                    }
                    match tile_condition(&analyzer, &c, &var) {
                        Some(w) => whole.push(w),
                        None => return original,
                    }
                }
                if whole.is_empty() {
                    return original;
                }
                let inner = match kept.into_iter().reduce(Expr::and) {
                    Some(k) => Stmt::if_then(k, *then),
                    None => *then,
                };
                let fast = Stmt::For { var, min, extent, kind: ForKind::Vectorized, body: Box::new(inner) };
                let cond = whole.into_iter().reduce(Expr::and).expect("non-empty");
                Stmt::If { cond, then: Box::new(fast), otherwise: Some(Box::new(original)) }
            }
            s => s,
        }
    }
}

/// A condition free of `var` that implies `c` for every value of `var` in its range.
fn tile_condition(analyzer: &Analyzer, c: &Expr, var: &Var) -> Option<Expr> {
    let Expr::Cmp { op, a, b } = c else { return None };
    if !a.dtype().is_integer() || !a.dtype().is_scalar() {
        return None;
    }
    let diff = (**a).clone() - (**b).clone();
    let (lo, hi) = analyzer.symbolic_bounds(&diff, std::slice::from_ref(var));
    if uses_var(&lo, var) || uses_var(&hi, var) {
        return None;
    }
    let zero = Expr::typed_int(0, diff.dtype());
    Some(match op {
        CmpOp::Lt => Expr::cmp(CmpOp::Lt, hi, zero),
        CmpOp::Le => Expr::cmp(CmpOp::Le, hi, zero),
        CmpOp::Gt => Expr::cmp(CmpOp::Gt, lo, zero),
        CmpOp::Ge => Expr::cmp(CmpOp::Ge, lo, zero),
        CmpOp::Eq | CmpOp::Ne => return None,
    })
}
