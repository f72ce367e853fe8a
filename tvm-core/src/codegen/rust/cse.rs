//! Common subexpressions of a stored value, computed once: `let v = x[i, j] + b[j];`
//! written in a stage's block is one subexpression in the TIR, repeated wherever `v` is
//! used, and the emitter would print (and an unoptimized build run) each copy.
//!
//! Only what the value evaluates whatever happens is shared: a repeat inside a select's
//! branch, or on the right of `&&` / `||`, stays where it is (it may read where the
//! condition says not to), and a subexpression with a checked value (`Expr::Check`,
//! whose error must come in the order the interpreter raises it) or a reduction is never
//! moved. The value is computed before the store in either case, so a load reads what
//! it read before.

use crate::tir::{BinOp, Expr, Var};

/// The repeated subexpressions of `value` to bind first (in order: a later one may use
/// an earlier one's variable) and `value` reading them, or `None` when nothing repeats.
pub(super) fn common(value: &Expr) -> Option<(Vec<(Var, Expr)>, Expr)> {
    let mut lets = Vec::new();
    let mut value = value.clone();
    // The largest repeat first: its copies hold the smaller ones.
    while let Some(repeat) = largest_repeat(&value) {
        let var = Var::new(format!("cse{}", lets.len()), repeat.dtype());
        value = replace(&value, &repeat, &Expr::var(&var));
        lets.push((var, repeat));
    }
    (!lets.is_empty()).then_some((lets, value))
}

/// Whether `e` is worth a variable of its own: it computes or reads something, and holds
/// nothing that must stay in place.
fn movable(e: &Expr) -> bool {
    if matches!(e, Expr::Var(_) | Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_) | Expr::Ramp { .. }) {
        return false;
    }
    if matches!(e, Expr::Broadcast { value, .. } if !movable(value)) {
        return false;
    }
    // A float product stays where a sum around it can contract it to an FMA.
    if matches!(e, Expr::Binary { op: BinOp::Mul, .. }) && e.dtype().is_float() {
        return false;
    }
    // Only what reads memory or calls a function: index arithmetic stays in the
    // accesses, where the emitter proves their bounds.
    let (mut fixed, mut costly) = (false, false);
    crate::tir::visit::for_each_expr(e, &mut |x| {
        fixed |= matches!(x, Expr::Check { .. } | Expr::Reduce(_));
        costly |= matches!(x, Expr::Load { .. } | Expr::ProducerLoad { .. } | Expr::Call { .. });
    });
    costly && !fixed
}

/// The subexpressions `e` always evaluates (itself included), each once.
fn strict_parts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    out.push(e);
    match e {
        Expr::Select { cond, .. } => strict_parts(cond, out),
        Expr::And(a, _) | Expr::Or(a, _) => strict_parts(a, out),
        Expr::Check { .. } | Expr::Reduce(_) => {}
        Expr::Binary { a, b, .. } | Expr::Cmp { a, b, .. } => {
            strict_parts(a, out);
            strict_parts(b, out);
        }
        Expr::Not(x) | Expr::Neg(x) | Expr::Cast { value: x, .. } | Expr::Broadcast { value: x, .. } => {
            strict_parts(x, out)
        }
        Expr::Call { args, .. } => args.iter().for_each(|a| strict_parts(a, out)),
        // An access's index is the access's own (a load read at an index is a load).
        Expr::Load { .. } | Expr::ProducerLoad { .. } | Expr::Ramp { .. } => {}
        Expr::Var(_) | Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_) => {}
    }
}

/// The number of nodes of `e`.
fn size(e: &Expr) -> usize {
    let mut n = 0;
    crate::tir::visit::for_each_expr(e, &mut |_| n += 1);
    n
}

/// The largest movable subexpression that `value` evaluates at least twice.
fn largest_repeat(value: &Expr) -> Option<Expr> {
    let mut parts = Vec::new();
    strict_parts(value, &mut parts);
    // Structural equality (`Expr`'s, variables by identity), each part against the
    // distinct ones before it.
    let mut seen: Vec<(usize, &Expr)> = Vec::new();
    for p in parts.into_iter().filter(|p| movable(p)) {
        match seen.iter_mut().find(|(_, e)| *e == p) {
            Some((n, _)) => *n += 1,
            None => seen.push((1, p)),
        }
    }
    seen.into_iter().filter(|(n, _)| *n >= 2).max_by_key(|(_, e)| size(e)).map(|(_, e)| e.clone())
}

/// `e` with every strictly evaluated copy of `target` (a movable subexpression) replaced
/// by `by`.
fn replace(e: &Expr, target: &Expr, by: &Expr) -> Expr {
    if e == target {
        return by.clone();
    }
    let r = |x: &Expr| Box::new(replace(x, target, by));
    match e {
        Expr::Select { cond, then, otherwise } => {
            Expr::Select { cond: r(cond), then: then.clone(), otherwise: otherwise.clone() }
        }
        Expr::And(a, b) => Expr::And(r(a), b.clone()),
        Expr::Or(a, b) => Expr::Or(r(a), b.clone()),
        Expr::Binary { op, a, b } => Expr::Binary { op: *op, a: r(a), b: r(b) },
        Expr::Cmp { op, a, b } => Expr::Cmp { op: *op, a: r(a), b: r(b) },
        Expr::Not(x) => Expr::Not(r(x)),
        Expr::Neg(x) => Expr::Neg(r(x)),
        Expr::Cast { dtype, value } => Expr::Cast { dtype: *dtype, value: r(value) },
        Expr::Broadcast { value, lanes } => Expr::Broadcast { value: r(value), lanes: *lanes },
        Expr::Call { func, args } => {
            Expr::Call { func: func.clone(), args: args.iter().map(|a| replace(a, target, by)).collect() }
        }
        Expr::Load { .. }
        | Expr::ProducerLoad { .. }
        | Expr::Ramp { .. }
        | Expr::Check { .. }
        | Expr::Reduce(_)
        | Expr::Var(_)
        | Expr::Int { .. }
        | Expr::Float { .. }
        | Expr::Bool(_) => e.clone(),
    }
}
