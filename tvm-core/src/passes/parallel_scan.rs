//! A recurrence that is an inclusive scan (`te::Graph::scan_monoid`), computed by all of a
//! GPU's threads: the work-efficient reduce-then-scan of CUB and of Merrill and Garland's
//! single-pass scan, in three launches.
//!
//! The scan of `n` elements is cut into chunks of `C = T * V` (`T` threads per block, `V`
//! elements per thread), one block per chunk:
//!
//! 1. **Reduce.** Each block combines its chunk (each thread `V` elements, read
//!    coalesced, then the block's threads together, as a cross-thread reduction does) into
//!    `part[b]`.
//! 2. **Scan the totals.** One block: each thread combines a run of consecutive totals,
//!    the threads scan their sums in shared memory (Hillis and Steele: `log2 T` steps),
//!    and each thread writes the exclusive prefix of each of its totals to `carry[b]`.
//! 3. **Scan the chunks.** Each block loads its chunk into shared memory (coalesced),
//!    each thread combines its `V` consecutive elements (the tile padded so they fall in
//!    different banks), the block scans those sums, and
//!    each thread writes its elements' inclusive prefixes, starting from `carry[b]` and
//!    its threads' prefix; the block stores the chunk coalesced.
//!
//! Memory traffic: the input is read twice and the output written once (a single-pass
//! scan with decoupled look-back reads it once; not done). Work: `O(n)` combines.
//! Float sums group differently from the serial loop, so they round differently (as any
//! parallel sum).

use super::lower_cross_thread_reduction::{allreduce, shared_elements, warp_plan};
use crate::target::Target;
use crate::te::ScanMonoid;
use crate::tir::{Buffer, Expr, ForKind, ReduceOp, Scope, Stmt, ThreadTag, Var};

/// Elements each thread scans serially.
const PER_THREAD: i64 = 8;

/// The three launches computing `out[.., j]` for `j < n` as the inclusive scan along the
/// last dim of `element(lead, j)` (an expression of loads, given the indices) with
/// `m.op`, for every index `lead` of the leading dims of extents `lead` (none for a scan
/// alone; each row is then a `block.y` of every launch). `part` and `carry` (global, one
/// element per chunk of each row) are realized here.
pub fn parallel_scan(
    name: &str,
    m: &ScanMonoid,
    out: &Buffer,
    lead: &[Expr],
    n: Expr,
    element: &dyn Fn(&[Expr], Expr) -> Expr,
    target: &Target,
) -> Stmt {
    let op = m.op;
    let dt = out.dtype();
    // Threads per block: 256, or the largest power of two the target allows.
    let t = (256u32.min(target.max_threads_per_block.max(1))).next_power_of_two();
    let t = if t > target.max_threads_per_block.max(1) { t / 2 } else { t } as i64;
    let v = PER_THREAD;
    let c = t * v;
    let blocks = (n.clone() + (c - 1)) / c;
    let rows = lead.iter().cloned().reduce(|a, b| a * b).unwrap_or(Expr::int(1));
    // The leading indices of row `r` (row-major).
    let lead_of = |r: &Expr| -> Vec<Expr> {
        (0..lead.len())
            .map(|d| {
                let q = match lead[d + 1..].iter().cloned().reduce(|a, b| a * b) {
                    Some(inner) => r.clone() / inner,
                    None => r.clone(),
                };
                if d == 0 {
                    q
                } else {
                    q % lead[d].clone()
                }
            })
            .collect()
    };
    // Chunk `b` of row `r` in `part` and `carry`.
    let chunk = |r: &Expr, b: Expr| if lead.is_empty() { b } else { r.clone() * blocks.clone() + b };
    let part = Buffer::new(format!("{name}_part"), dt, Scope::Global);
    let carry = Buffer::new(format!("{name}_carry"), dt, Scope::Global);
    let local = |what: &str| Buffer::new(format!("{name}_{what}"), dt, Scope::Local);
    let shared = |what: &str| Buffer::new(format!("{name}_{what}"), dt, Scope::Shared);
    let id = || op.identity(dt);
    let z = || vec![Expr::int(0)];
    let at = |b: &Buffer, i: Expr| Expr::load(b, vec![i]);
    // `acc[0] = acc[0] ⊕ x`.
    let fold = |acc: &Buffer, x: Expr| Stmt::store(acc, z(), op.combine(Expr::load(acc, z()), x));
    let lp = |var: &Var, extent: Expr, kind: ForKind, body: Stmt| Stmt::for_loop(var.clone(), extent, kind, body);
    let launch = |k: u32, grid: Expr, body: &dyn Fn(Expr, Expr, Expr) -> Stmt| {
        let (bx, tx) = (Var::index(format!("{name}_b{k}")), Var::index(format!("{name}_t{k}")));
        let ry = Var::index(format!("{name}_r{k}"));
        let row = if lead.is_empty() { Expr::int(0) } else { Expr::var(&ry) };
        let body = body(row, Expr::var(&bx), Expr::var(&tx));
        let s = Stmt::ThreadBinding {
            tag: ThreadTag::BlockX,
            var: bx,
            extent: grid,
            body: Box::new(Stmt::ThreadBinding {
                tag: ThreadTag::ThreadX,
                var: tx,
                extent: Expr::int(t),
                body: Box::new(body),
            }),
        };
        if lead.is_empty() {
            s
        } else {
            Stmt::ThreadBinding { tag: ThreadTag::BlockY, var: ry, extent: rows.clone(), body: Box::new(s) }
        }
    };
    // The element at `j` of the chunk of block `bx` read by thread `tx` in round `k`:
    // consecutive threads read consecutive elements.
    let striped = |bx: &Expr, k: &Var, tx: &Expr| bx.clone() * c + Expr::var(k) * t + tx.clone();

    // 1. Each block's total.
    let reduce = launch(1, blocks.clone(), &|row, bx, tx| {
        let (acc, red) = (local("acc1"), shared("red1"));
        let k = Var::index("k");
        let j = striped(&bx, &k, &tx);
        let load = Stmt::if_then(Expr::lt(j.clone(), n.clone()), fold(&acc, element(&lead_of(&row), j)));
        let warps = warp_plan(ThreadTag::ThreadX, t, dt, target.warp_size).map(|w| (w, target.warp_size));
        let write = |x: Expr| Stmt::store(&part, vec![chunk(&row, bx.clone())], x);
        let body = Stmt::seq(vec![
            Stmt::store(&acc, z(), id()),
            lp(&k, Expr::int(v), ForKind::Unrolled, load),
            allreduce(op, &acc, &red, &tx, t, &Expr::int(0), warps, write),
        ]);
        let body = Stmt::realize(&acc, Expr::int(1), body);
        match shared_elements(t, 1, warps) {
            0 => body,
            e => Stmt::realize(&red, Expr::int(e), body),
        }
    });

    // 2. The exclusive prefix of every block's total, in one block.
    let runs = (blocks.clone() + (t - 1)) / t;
    let totals = launch(2, Expr::int(1), &|row, _, tx| {
        let (acc, pre, tmp, sh) = (local("acc2"), local("pre2"), local("tmp2"), shared("sh2"));
        let (k, k2) = (Var::index("k"), Var::index("k"));
        let b = |k: &Var| tx.clone() * runs.clone() + Expr::var(k);
        let mut body = vec![
            Stmt::store(&acc, z(), id()),
            lp(
                &k,
                runs.clone(),
                ForKind::Serial,
                Stmt::if_then(Expr::lt(b(&k), blocks.clone()), fold(&acc, at(&part, chunk(&row, b(&k))))),
            ),
        ];
        body.extend(block_exclusive_scan(op, dt, &acc, &pre, &tmp, &sh, &tx, t));
        let write = Stmt::seq(vec![
            Stmt::store(&carry, vec![chunk(&row, b(&k2))], Expr::load(&pre, z())),
            fold(&pre, at(&part, chunk(&row, b(&k2)))),
        ]);
        body.push(lp(&k2, runs.clone(), ForKind::Serial, Stmt::if_then(Expr::lt(b(&k2), blocks.clone()), write)));
        let body = Stmt::seq(body);
        [acc, pre, tmp].iter().fold(Stmt::realize(&sh, Expr::int(t), body), |s, b| Stmt::realize(b, Expr::int(1), s))
    });

    // 3. Each chunk's inclusive scan, from its block's prefix.
    let scan = launch(3, blocks.clone(), &|row, bx, tx| {
        let lead_ix = lead_of(&row);
        let (acc, pre, tmp, sh, tile) = (local("acc3"), local("pre3"), local("tmp3"), shared("sh3"), shared("tile"));
        let (k1, k2, k3, k4) = (Var::index("k"), Var::index("k"), Var::index("k"), Var::index("k"));
        let j = |k: &Var| striped(&bx, k, &tx);
        // One padding element per 32: a thread's `V` consecutive elements (at a stride
        // of `V` from its neighbour's) fall in different banks.
        let pad = |i: Expr| i.clone() + i / 32;
        let slot = |k: &Var| pad(Expr::var(k) * t + tx.clone());
        let mine = |k: &Var| pad(tx.clone() * v + Expr::var(k));
        let load = Stmt::If {
            cond: Expr::lt(j(&k1), n.clone()),
            then: Box::new(Stmt::store(&tile, vec![slot(&k1)], element(&lead_ix, j(&k1)))),
            otherwise: Some(Box::new(Stmt::store(&tile, vec![slot(&k1)], id()))),
        };
        let mut body = vec![
            lp(&k1, Expr::int(v), ForKind::Unrolled, load),
            Stmt::Barrier,
            Stmt::store(&acc, z(), id()),
            lp(&k2, Expr::int(v), ForKind::Unrolled, fold(&acc, at(&tile, mine(&k2)))),
        ];
        body.extend(block_exclusive_scan(op, dt, &acc, &pre, &tmp, &sh, &tx, t));
        body.push(Stmt::store(&pre, z(), op.combine(at(&carry, chunk(&row, bx.clone())), Expr::load(&pre, z()))));
        let step = Stmt::seq(vec![
            fold(&pre, at(&tile, mine(&k3))),
            Stmt::store(&tile, vec![mine(&k3)], Expr::load(&pre, z())),
        ]);
        body.push(lp(&k3, Expr::int(v), ForKind::Unrolled, step));
        body.push(Stmt::Barrier);
        let mut ix = lead_ix.clone();
        ix.push(j(&k4));
        let store = Stmt::if_then(Expr::lt(j(&k4), n.clone()), Stmt::store(out, ix, at(&tile, slot(&k4))));
        body.push(lp(&k4, Expr::int(v), ForKind::Unrolled, store));
        let body = Stmt::seq(body);
        let body = Stmt::realize(&tile, Expr::int(c + c / 32), Stmt::realize(&sh, Expr::int(t), body));
        [acc, pre, tmp].iter().fold(body, |s, b| Stmt::realize(b, Expr::int(1), s))
    });

    let body = Stmt::seq(vec![reduce, totals, scan]);
    let size = if lead.is_empty() { blocks } else { blocks * rows };
    Stmt::realize(&part, size.clone(), Stmt::realize(&carry, size, body))
}

/// The statements that leave in `pre[0]` the `op` of the `acc[0]` of the threads before
/// `tx` (the identity for thread 0), for `t` threads (a power of two): Hillis and Steele's
/// scan in the shared buffer `sh` of `t` elements, `tmp` a local element. Every thread
/// runs every barrier.
#[allow(clippy::too_many_arguments)]
fn block_exclusive_scan(
    op: ReduceOp,
    dt: crate::DType,
    acc: &Buffer,
    pre: &Buffer,
    tmp: &Buffer,
    sh: &Buffer,
    tx: &Expr,
    t: i64,
) -> Vec<Stmt> {
    let z = || vec![Expr::int(0)];
    let mine = || vec![tx.clone()];
    let mut out = vec![Stmt::store(sh, mine(), Expr::load(acc, z())), Stmt::Barrier];
    let mut step = 1;
    while step < t {
        let theirs = Expr::load(sh, vec![tx.clone() - step]);
        let ready = Expr::ge(tx.clone(), Expr::int(step));
        out.push(Stmt::store(tmp, z(), Expr::select(ready, theirs, op.identity(dt))));
        out.push(Stmt::Barrier);
        out.push(Stmt::store(sh, mine(), op.combine(Expr::load(sh, mine()), Expr::load(tmp, z()))));
        out.push(Stmt::Barrier);
        step *= 2;
    }
    let before = Expr::load(sh, vec![tx.clone() - 1]);
    out.push(Stmt::store(pre, z(), Expr::select(Expr::ge(tx.clone(), Expr::int(1)), before, op.identity(dt))));
    // `sh` may be written again (by the next scan) only after every thread read it.
    out.push(Stmt::Barrier);
    out
}
