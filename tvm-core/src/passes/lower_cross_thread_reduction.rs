//! Cross-thread reduction: a reduction axis bound to a thread index is reduced by the
//! threads of a block together. `schedule_ops` calls [`allreduce`] for each such stage.
//!
//! Two lowerings, chosen from the target as TVM's `lower_thread_allreduce` does:
//!
//! * **Warp shuffles** (targets with a warp size above 1, the axis bound to `thread.x`,
//!   a 32- or 64-bit or 16-bit float value): the threads of one reduction are consecutive
//!   lanes (the axis is the fastest-varying thread index and its extent is the block's x
//!   extent). An extent that is a power of two up to the warp size reduces within the
//!   warp ([`Stmt::WarpReduce`], a butterfly of `__shfl_xor_sync`), with no shared memory
//!   and no barrier. An extent that is a multiple of the warp size, up to warp² threads,
//!   reduces each warp, writes one value per warp to shared memory, and the first warp
//!   reduces those: two barriers.
//! * **A shared-memory tree** otherwise (OpenCL, other thread axes, other extents), with
//!   a barrier after every step.
//!
//! Every thread takes part in every barrier and shuffle; only thread 0 of each row writes
//! the result.

use crate::dtype::{DType, ScalarKind};
use crate::tir::{Buffer, Expr, ReduceOp, Stmt, ThreadTag};

/// Whether values of `d` can be reduced with warp shuffles.
fn shuffles(d: DType) -> bool {
    d.lanes == 1
        && match d.kind {
            ScalarKind::Int | ScalarKind::UInt => d.bits == 32 || d.bits == 64,
            ScalarKind::Float | ScalarKind::BFloat => matches!(d.bits, 16 | 32 | 64),
            ScalarKind::Bool => false,
        }
}

/// The warp lowering's plan for `extent` threads on `tag` with values of `d`: `Some(k)`
/// with `k` the number of warps (1: within one warp), `None` for the shared-memory tree.
pub fn warp_plan(tag: ThreadTag, extent: i64, d: DType, warp_size: u32) -> Option<i64> {
    let w = warp_size as i64;
    if w <= 1 || tag != ThreadTag::ThreadX || !shuffles(d) || extent < 2 {
        return None;
    }
    if extent <= w && (extent as u64).is_power_of_two() {
        return Some(1);
    }
    (extent % w == 0 && extent / w <= w).then_some(extent / w)
}

/// The statements that combine the per-thread partial results in `acc[0]` of the
/// `extent` threads of `tid` (one group per `row` of `rows`) and run `write(result)` on
/// thread 0 of each row. With `warps` (from [`warp_plan`]) they use warp shuffles
/// (`warp_size` lanes per warp), else a tree in shared memory. `red` is a shared buffer
/// of [`shared_elements`] elements, realized by the caller when that is not 0.
#[allow(clippy::too_many_arguments)]
pub fn allreduce(
    op: ReduceOp,
    acc: &Buffer,
    red: &Buffer,
    tid: &Expr,
    extent: i64,
    row: &Expr,
    warps: Option<(i64, u32)>,
    write: impl FnOnce(Expr) -> Stmt,
) -> Stmt {
    let zero = || vec![Expr::int(0)];
    match warps {
        Some((1, _)) => Stmt::seq(vec![
            Stmt::WarpReduce { op, buffer: acc.clone(), width: extent as u32 },
            Stmt::if_then(Expr::eq(tid.clone(), Expr::int(0)), write(Expr::load(acc, zero()))),
        ]),
        Some((k, warp_size)) => {
            let w = warp_size as i64;
            let slot = |off: Expr| row.clone() * k + off;
            let identity = op.identity(acc.dtype());
            Stmt::seq(vec![
                Stmt::WarpReduce { op, buffer: acc.clone(), width: warp_size },
                Stmt::if_then(
                    Expr::eq(Expr::binary(crate::tir::BinOp::Mod, tid.clone(), Expr::int(w)), Expr::int(0)),
                    Stmt::store(
                        red,
                        vec![slot(Expr::binary(crate::tir::BinOp::Div, tid.clone(), Expr::int(w)))],
                        Expr::load(acc, zero()),
                    ),
                ),
                Stmt::Barrier,
                Stmt::store(
                    acc,
                    zero(),
                    Expr::select(
                        Expr::lt(tid.clone(), Expr::int(k)),
                        Expr::load(red, vec![slot(tid.clone())]),
                        identity,
                    ),
                ),
                Stmt::WarpReduce { op, buffer: acc.clone(), width: (k as u64).next_power_of_two() as u32 },
                Stmt::if_then(Expr::eq(tid.clone(), Expr::int(0)), write(Expr::load(acc, zero()))),
                // The buffer may be reused by the next iteration of an enclosing loop.
                Stmt::Barrier,
            ])
        }
        None => {
            let slot = |off: Expr| row.clone() * extent + off;
            let mut body = vec![Stmt::store(red, vec![slot(tid.clone())], Expr::load(acc, zero())), Stmt::Barrier];
            let mut step = (extent as u64).next_power_of_two() as i64 / 2;
            while step >= 1 {
                let mine = Expr::load(red, vec![slot(tid.clone())]);
                let theirs = Expr::load(red, vec![slot(tid.clone() + step)]);
                let cond =
                    Expr::and(Expr::lt(tid.clone(), Expr::int(step)), Expr::lt(tid.clone() + step, Expr::int(extent)));
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
    }
}

/// The elements of the shared buffer [`allreduce`] needs for `rows` rows (0: none).
pub fn shared_elements(extent: i64, rows: i64, warps: Option<(i64, u32)>) -> i64 {
    match warps {
        Some((1, _)) => 0,
        Some((k, _)) => rows * k,
        None => rows * extent,
    }
}
