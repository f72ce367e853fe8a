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
//! A reduction over several values (a combiner the user wrote) takes the tree, with one
//! shared buffer per component ([`allreduce_tuple`]).
//!
//! Every thread takes part in every barrier and shuffle; only thread 0 of each row writes
//! the result.

use crate::dtype::{DType, ScalarKind};
use crate::tir::{Buffer, Expr, Reduce, ReduceOp, Stmt, ThreadTag, Var};

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
            let combine = |acc: Accumulators, x: Vec<Expr>| combine_one(op, acc, x);
            tree(std::slice::from_ref(acc), std::slice::from_ref(red), tid, extent, row, &combine, |vs| {
                write(vs[0].clone())
            })
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

/// Elements of buffers to combine into, one per component: the buffer and the indices.
pub type Accumulators = Vec<(Buffer, Vec<Expr>)>;

/// `acc = combine(acc, x)` for every component of `red`, each `acc` an element of a
/// buffer: a single store for a built-in combiner; for a combiner over several values,
/// every new value is computed (in `let`s named after `name`) before any is stored, since
/// each may read every old one.
pub fn combine_into(red: &Reduce, name: &str, acc: Accumulators, x: Vec<Expr>) -> Stmt {
    if red.tuple.is_none() {
        return combine_one(red.op, acc, x);
    }
    let mut lets: Vec<(Var, Expr)> = Vec::new();
    let mut bind = |n: String, e: Expr| {
        let v = Var::new(n, e.dtype());
        lets.push((v.clone(), e));
        Expr::var(&v)
    };
    let xs: Vec<Expr> = x.into_iter().enumerate().map(|(c, e)| bind(format!("{name}_x{c}"), e)).collect();
    let olds: Vec<Expr> =
        acc.iter().enumerate().map(|(c, (b, idx))| bind(format!("{name}_a{c}"), Expr::load(b, idx.clone()))).collect();
    let news: Vec<Expr> =
        red.combine(olds, xs).into_iter().enumerate().map(|(c, e)| bind(format!("{name}_n{c}"), e)).collect();
    let mut body = Stmt::seq(acc.iter().zip(news).map(|((b, idx), v)| Stmt::store(b, idx.clone(), v)).collect());
    for (v, e) in lets.into_iter().rev() {
        body = Stmt::Let { var: v, value: e, body: Box::new(body) };
    }
    body
}

/// `acc = op(acc, x)` for one element `acc` of a buffer and a built-in combiner.
fn combine_one(op: ReduceOp, acc: Accumulators, x: Vec<Expr>) -> Stmt {
    let (Some((b, idx)), Some(x)) = (acc.into_iter().next(), x.into_iter().next()) else {
        unreachable!("one component")
    };
    Stmt::store(&b, idx.clone(), op.combine(Expr::load(&b, idx), x))
}

/// [`allreduce`]'s shared-memory tree for a reduction over several values: the partial
/// results of every component in `accs[c][0]`, one shared buffer per component in `reds`
/// (each of [`shared_elements`] elements with no warps), all components combined in each
/// step; `write(results)` runs on thread 0 of each row.
#[allow(clippy::too_many_arguments)]
pub fn allreduce_tuple(
    red: &Reduce,
    name: &str,
    accs: &[Buffer],
    reds: &[Buffer],
    tid: &Expr,
    extent: i64,
    row: &Expr,
    write: impl FnOnce(Vec<Expr>) -> Stmt,
) -> Stmt {
    tree(accs, reds, tid, extent, row, &|acc, x| combine_into(red, name, acc, x), write)
}

/// The shared-memory tree of every component at once: each thread's partial results into
/// `reds`, then at each step the threads of the first half combine (with `combine`, given
/// the elements of `reds` to update and the values to combine in) the other half's, a
/// barrier after each step; `write(results)` on thread 0 of each row.
fn tree(
    accs: &[Buffer],
    reds: &[Buffer],
    tid: &Expr,
    extent: i64,
    row: &Expr,
    combine: &dyn Fn(Accumulators, Vec<Expr>) -> Stmt,
    write: impl FnOnce(Vec<Expr>) -> Stmt,
) -> Stmt {
    let slot = |off: Expr| row.clone() * extent + off;
    let mut body: Vec<Stmt> = accs
        .iter()
        .zip(reds)
        .map(|(a, r)| Stmt::store(r, vec![slot(tid.clone())], Expr::load(a, vec![Expr::int(0)])))
        .collect();
    body.push(Stmt::Barrier);
    let mut step = (extent as u64).next_power_of_two() as i64 / 2;
    while step >= 1 {
        let mine = reds.iter().map(|r| (r.clone(), vec![slot(tid.clone())])).collect();
        let theirs = reds.iter().map(|r| Expr::load(r, vec![slot(tid.clone() + step)])).collect();
        let cond = Expr::and(Expr::lt(tid.clone(), Expr::int(step)), Expr::lt(tid.clone() + step, Expr::int(extent)));
        body.push(Stmt::if_then(cond, combine(mine, theirs)));
        body.push(Stmt::Barrier);
        step /= 2;
    }
    let results = reds.iter().map(|r| Expr::load(r, vec![slot(Expr::int(0))])).collect();
    body.push(Stmt::if_then(Expr::eq(tid.clone(), Expr::int(0)), write(results)));
    // The buffers may be reused by the next iteration of an enclosing loop.
    body.push(Stmt::Barrier);
    Stmt::seq(body)
}
