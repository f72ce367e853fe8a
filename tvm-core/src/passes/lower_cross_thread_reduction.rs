//! Cross-thread reduction: a reduction axis bound to a thread index is reduced by the
//! threads of a block together, through a shared-memory tree with a barrier after every
//! step. Every thread takes part in every barrier; only thread 0 of each row writes the
//! result. `schedule_ops` calls [`allreduce`] for each such stage.

use crate::tir::{Buffer, Expr, ReduceOp, Stmt};

/// The statements that combine the per-thread partial results in `acc[0]` of the
/// `extent` threads of `tid` (one group per `row` of `rows`) and run `write(result)` on
/// thread 0 of each row. `red` is a shared buffer of `rows * extent` elements, realized
/// by the caller.
pub fn allreduce(
    op: ReduceOp,
    acc: &Buffer,
    red: &Buffer,
    tid: &Expr,
    extent: i64,
    row: &Expr,
    write: impl FnOnce(Expr) -> Stmt,
) -> Stmt {
    let slot = |off: Expr| row.clone() * extent + off;
    let mut body = vec![Stmt::store(red, vec![slot(tid.clone())], Expr::load(acc, vec![Expr::int(0)])), Stmt::Barrier];
    let mut step = (extent as u64).next_power_of_two() as i64 / 2;
    while step >= 1 {
        let mine = Expr::load(red, vec![slot(tid.clone())]);
        let theirs = Expr::load(red, vec![slot(tid.clone() + step)]);
        let cond = Expr::and(Expr::lt(tid.clone(), Expr::int(step)), Expr::lt(tid.clone() + step, Expr::int(extent)));
        body.push(Stmt::if_then(cond, Stmt::store(red, vec![slot(tid.clone())], op.combine(mine, theirs))));
        body.push(Stmt::Barrier);
        step /= 2;
    }
    let result = Expr::load(red, vec![slot(Expr::int(0))]);
    body.push(Stmt::if_then(Expr::eq(tid.clone(), Expr::int(0)), write(result)));
    // The buffer may be reused by the next iteration of an enclosing loop.
    body.push(Stmt::Barrier);
    Stmt::seq(body)
}
