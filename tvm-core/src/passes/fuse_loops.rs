//! Sibling loop fusion (CPU targets): two serial loops over the same range, the second
//! reading what the first wrote only in the part of the buffer the same iteration wrote,
//! become one loop (Halide's `compute_with`, done where it is provably exact).
//!
//! ```text
//! for j in 0..n: y[o + j*16 + k] = exp(..)      s_rf[k] = 0            (moved up)
//! s_rf[k] = 0                                ->  for j in 0..n:
//! for j in 0..n: s_rf[k] += y[o + j*16 + k]        y[o + j*16 + k] = exp(..)
//!                                                  s_rf[k] += y[o + j*16 + k]
//! ```
//!
//! Why: a softmax's exponentials and their sum then take one pass over the row, each
//! vector summed while it is still in a register, as ONNX Runtime's softmax does, instead
//! of a second pass that reads the row back.
//!
//! When, exactly (anything else is left alone), for loops `A` and `C` of one sequence
//! (statements and the allocations that open later in it), `A` first:
//! - both are `serial` with the same `min` and `extent` (which read no memory), and
//!   neither contains a parallel loop, a `let`, a bounds check, a barrier or a launch,
//!   nor binds a loop variable twice;
//! - every statement between them neither reads a buffer `A` writes nor writes one `A`
//!   reads or writes (it moves up, before the fused loop; an allocation between them
//!   opens before it: `A` cannot name the buffer it opens);
//! - `C` writes no buffer that `A` reads or writes;
//! - for every buffer `b` that `A` writes and `C` reads, every store of `A` to `b` and
//!   every load of `C` from `b` is at a scalar index `o + v * S + r`, with `o` and `S`
//!   the same for all of them and free of the loops inside, and `0 <= r - o < S` proved
//!   for every value of those loops (`v`: the loop's variable). Iteration `v` of either
//!   loop touches only the slice `[o + v*S, o + (v+1)*S)` of `b`, so iteration `v` of `C`
//!   sees in its slice what it saw after all of `A`: no other iteration of `A` writes it.
//!
//! Runs after `flatten_storage` (one index per access) and before the loop passes, so the
//! tails of both bodies are peeled and vectorized as one loop's.

use crate::arith::Analyzer;
use crate::tir::mutate::{substitute_stmt, super_stmt, Mutator};
use crate::tir::visit::{reads_memory, vars_of, walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, ForKind, PrimFunc, Stmt, Var};
use std::collections::{BTreeSet, HashMap};

/// Fuses the qualifying sibling loops of `f` (host code; CPU targets).
pub fn fuse_loops(mut f: PrimFunc) -> PrimFunc {
    let body = std::mem::replace(&mut f.body, Stmt::NoOp);
    f.body = Fuse.mutate_stmt(body);
    f
}

struct Fuse;

/// One entry of a sequence whose last statement's allocations are opened in line.
pub(super) enum Entry {
    Stmt(Stmt),
    /// `Allocate { buffer, extent }` over the rest of the sequence.
    Open(Buffer, Expr),
}

impl Mutator for Fuse {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Seq(_) | Stmt::Allocate { .. } => {
                let mut entries = Vec::new();
                flatten(s, &mut entries);
                fuse_entries(&mut entries);
                let entries = entries
                    .into_iter()
                    .map(|e| match e {
                        Entry::Stmt(s) => Entry::Stmt(super_stmt(self, s)),
                        open => open,
                    })
                    .collect();
                rebuild(entries)
            }
            s => super_stmt(self, s),
        }
    }
}

/// `s` as entries: a sequence's statements, the allocations of its last statement opened
/// in line (their bodies continue the sequence).
pub(super) fn flatten(s: Stmt, out: &mut Vec<Entry>) {
    match s {
        Stmt::Seq(items) => {
            let n = items.len();
            for (k, item) in items.into_iter().enumerate() {
                if k + 1 == n {
                    flatten(item, out);
                } else {
                    out.push(Entry::Stmt(item));
                }
            }
        }
        Stmt::Allocate { buffer, extent, body } => {
            out.push(Entry::Open(buffer, extent));
            flatten(*body, out);
        }
        s => out.push(Entry::Stmt(s)),
    }
}

pub(super) fn rebuild(entries: Vec<Entry>) -> Stmt {
    let mut rest: Vec<Stmt> = Vec::new();
    for e in entries.into_iter().rev() {
        match e {
            Entry::Stmt(s) => rest.push(s),
            Entry::Open(buffer, extent) => {
                rest.reverse();
                let body = Stmt::seq(std::mem::take(&mut rest));
                rest.push(Stmt::Allocate { buffer, extent, body: Box::new(body) });
            }
        }
    }
    rest.reverse();
    Stmt::seq(rest)
}

/// Fuses loops of `entries` while any pair qualifies.
fn fuse_entries(entries: &mut Vec<Entry>) {
    let mut a = 0;
    while a < entries.len() {
        match find_partner(entries, a) {
            Some(c) => {
                let Entry::Stmt(sc) = entries.remove(c) else { unreachable!("a loop entry") };
                let Entry::Stmt(sa) = entries.remove(a) else { unreachable!("a loop entry") };
                let fused = fuse(sa, sc);
                // The entries between them moved up by one; the fused loop goes after them.
                entries.insert(c - 1, Entry::Stmt(fused));
                a = c - 1;
            }
            None => a += 1,
        }
    }
}

/// The index of the loop that the loop at `a` fuses with, if any.
fn find_partner(entries: &[Entry], a: usize) -> Option<usize> {
    let Entry::Stmt(sa @ Stmt::For { kind: ForKind::Serial, .. }) = &entries[a] else { return None };
    let acc_a = Access::of(sa)?;
    for c in a + 1..entries.len() {
        let Entry::Stmt(s) = &entries[c] else { continue };
        if let Some(body) = renamed_body(sa, s) {
            if let Some(acc_c) = Access::of_body(&body) {
                if legal(sa, &acc_a, &acc_c) {
                    return Some(c);
                }
            }
        }
        // Otherwise `s` stays between: it must be free to move above `A`.
        let between = Access::shallow(s);
        let touches_written = between.reads.iter().chain(&between.writes).any(|b| acc_a.writes.contains(b));
        let writes_read = between.writes.iter().any(|b| acc_a.reads.contains(b));
        if touches_written || writes_read || between.unfusable {
            return None;
        }
    }
    None
}

/// The body of `c` with its variable renamed to `a`'s, when both are serial loops over
/// the same range.
fn renamed_body(a: &Stmt, c: &Stmt) -> Option<Stmt> {
    let (
        Stmt::For { var: va, min: ma, extent: ea, kind: ForKind::Serial, .. },
        Stmt::For { var: vc, min: mc, extent: ec, kind: ForKind::Serial, body },
    ) = (a, c)
    else {
        return None;
    };
    if ma != mc || ea != ec {
        return None;
    }
    let map: HashMap<Var, Expr> = [(vc.clone(), Expr::var(va))].into();
    Some(substitute_stmt((**body).clone(), &map))
}

/// `a` with `c`'s body (renamed) after its own.
fn fuse(a: Stmt, c: Stmt) -> Stmt {
    let cbody = renamed_body(&a, &c).expect("checked by find_partner");
    let Stmt::For { var, min, extent, kind, body } = a else { unreachable!("a loop") };
    Stmt::For { var, min, extent, kind, body: Box::new(Stmt::seq(vec![*body, cbody])) }
}

/// What a statement reads and writes (buffers allocated inside it excluded), the loops
/// inside it, and the indices of its accesses.
#[derive(Default)]
struct Access {
    reads: BTreeSet<Buffer>,
    writes: BTreeSet<Buffer>,
    /// `(buffer, index, is_store)` of every access to a buffer not allocated inside.
    accesses: Vec<(Buffer, Expr, bool)>,
    /// Loops inside: variable, min, extent.
    loops: Vec<(Var, Expr, Expr)>,
    allocated: BTreeSet<Buffer>,
    /// A parallel loop, `let`, barrier or launch inside.
    unfusable: bool,
}

impl Access {
    /// The accesses of the loop `s` (its own variable excluded from `loops`), or `None`
    /// when it cannot be fused. A range that reads memory could change with a statement
    /// moved above the loop.
    fn of(s: &Stmt) -> Option<Access> {
        let Stmt::For { min, extent, body, .. } = s else { return None };
        if reads_memory(min) || reads_memory(extent) {
            return None;
        }
        Access::of_body(body)
    }

    /// The accesses of a loop's body (the partner's range is the first loop's), or `None`
    /// when it cannot be fused.
    fn of_body(body: &Stmt) -> Option<Access> {
        let acc = Access::shallow(body);
        (!acc.unfusable).then_some(acc)
    }

    /// The accesses of any statement.
    fn shallow(s: &Stmt) -> Access {
        let mut acc = Access::default();
        acc.visit_stmt(s);
        acc.finish();
        acc
    }

    fn finish(&mut self) {
        let allocated = &self.allocated;
        self.accesses.retain(|(b, _, _)| !allocated.contains(b));
        self.reads.retain(|b| !allocated.contains(b));
        self.writes.retain(|b| !allocated.contains(b));
    }
}

impl Visitor for Access {
    fn visit_expr(&mut self, e: &Expr) {
        // A bounds or divisor check: fusing would change which failure is reported first.
        if matches!(e, Expr::Check { .. }) {
            self.unfusable = true;
        }
        if let Expr::Load { buffer, indices } = e {
            self.reads.insert(buffer.clone());
            match indices.as_slice() {
                [i] => self.accesses.push((buffer.clone(), i.clone(), false)),
                _ => self.unfusable = true,
            }
        }
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Store { buffer, indices, .. } => {
                self.writes.insert(buffer.clone());
                match indices.as_slice() {
                    [i] => self.accesses.push((buffer.clone(), i.clone(), true)),
                    _ => self.unfusable = true,
                }
            }
            Stmt::Prefetch { buffer, .. } => {
                self.reads.insert(buffer.clone());
            }
            Stmt::Allocate { buffer, .. } | Stmt::Realize { buffer, .. } => {
                self.allocated.insert(buffer.clone());
            }
            Stmt::For { var, min, extent, kind, .. } => {
                // A variable bound twice would have one range in the analyzer for both.
                if *kind == ForKind::Parallel || self.loops.iter().any(|(v, _, _)| v == var) {
                    self.unfusable = true;
                }
                self.loops.push((var.clone(), min.clone(), extent.clone()));
            }
            Stmt::Let { .. }
            | Stmt::ThreadBinding { .. }
            | Stmt::Barrier
            | Stmt::WarpReduce { .. }
            | Stmt::Launch { .. } => self.unfusable = true,
            _ => {}
        }
        walk_stmt(self, s)
    }
}

/// Whether loop `a` (accesses `acc_a`) and the loop with accesses `acc_c` (its variable
/// renamed to `a`'s) fuse exactly.
fn legal(a: &Stmt, acc_a: &Access, acc_c: &Access) -> bool {
    let Stmt::For { var, .. } = a else { return false };
    if acc_a.loops.iter().any(|(v, _, _)| acc_c.loops.iter().any(|(w, _, _)| v == w)) {
        return false;
    }
    if acc_c.writes.iter().any(|b| acc_a.writes.contains(b) || acc_a.reads.contains(b)) {
        return false;
    }
    let mut an = Analyzer::new();
    let mut inner = Vec::new();
    for (v, min, extent) in acc_a.loops.iter().chain(&acc_c.loops) {
        an.bind(v, min.clone(), extent.clone());
        inner.push(v.clone());
    }
    for b in acc_a.writes.iter().filter(|b| acc_c.reads.contains(*b)) {
        let stores = acc_a.accesses.iter().filter(|(x, _, st)| x == b && *st);
        let loads = acc_c.accesses.iter().filter(|(x, _, st)| x == b && !*st);
        let mut slab: Option<(Expr, Expr)> = None;
        for (_, index, _) in stores.chain(loads) {
            if !in_slab(&an, index, var, &inner, &mut slab) {
                return false;
            }
        }
    }
    true
}

/// Whether `index` is `o + v * S + r` with `0 <= r - o < S` over the `inner` loops, with
/// the same `(o, S)` as `slab` (set by the first access).
fn in_slab(an: &Analyzer, index: &Expr, v: &Var, inner: &[Var], slab: &mut Option<(Expr, Expr)>) -> bool {
    if index.dtype().lanes != 1 {
        return false;
    }
    let vx = Expr::var(v);
    let step = an.simplify(&(crate::tir::mutate::substitute_one(index.clone(), v, vx.clone() + 1) - index.clone()));
    let free = |e: &Expr| vars_of(e).iter().all(|x| x != v && !inner.contains(x));
    if !free(&step) || !an.can_prove(&Expr::ge(step.clone(), Expr::int(1))) {
        return false;
    }
    let rest = an.simplify(&(index.clone() - vx * step.clone()));
    if vars_of(&rest).contains(v) {
        return false;
    }
    let (Some(lo), Some(hi)) = an.try_symbolic_bounds(&rest, inner) else { return false };
    if !free(&lo) || !free(&hi) {
        return false;
    }
    let (o, s) = slab.get_or_insert_with(|| (lo.clone(), step.clone()));
    an.can_prove(&Expr::eq(an.simplify(&(s.clone() - step)), Expr::int(0)))
        && an.can_prove(&Expr::ge(lo - o.clone(), Expr::int(0)))
        && an.can_prove(&Expr::lt(hi - o.clone(), s.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::tir::Scope;

    fn ld(b: &Buffer, i: Expr) -> Expr {
        Expr::load(b, vec![i])
    }
    fn st(b: &Buffer, i: Expr, v: Expr) -> Stmt {
        Stmt::store(b, vec![i], v)
    }
    fn buf(name: &str) -> Buffer {
        Buffer::new(name, DType::F32, Scope::Global)
    }
    /// `for v in 0..n { for k in 0..4 { body(v * 4 + k, k) } }`
    fn rows(n: &Expr, body: impl Fn(Expr, Expr) -> Stmt) -> Stmt {
        let (v, k) = (Var::index("v"), Var::index("k"));
        let at = Expr::var(&v) * 4 + Expr::var(&k);
        let inner = Stmt::for_loop(k.clone(), Expr::int(4), ForKind::Vectorized, body(at, Expr::var(&k)));
        Stmt::for_loop(v, n.clone(), ForKind::Serial, inner)
    }
    /// The number of outermost loops of `s` (its sequence, allocations opened in line).
    fn loops(s: &Stmt) -> usize {
        match s {
            Stmt::Seq(v) => v.iter().map(loops).sum(),
            Stmt::Allocate { body, .. } => loops(body),
            Stmt::For { .. } => 1,
            _ => 0,
        }
    }

    #[test]
    fn a_loop_reading_back_its_own_slice_fuses_past_an_allocation_and_an_independent_store() {
        let (x, e, acc) = (buf("x"), buf("e"), Buffer::new("acc", DType::F32, Scope::Local));
        let n = Expr::var(&Var::index("n"));
        let a = rows(&n, |i, _| st(&e, i.clone(), ld(&x, i) * Expr::float(2.0, DType::F32)));
        let init = st(&acc, Expr::int(0), Expr::float(0.0, DType::F32));
        let c = rows(&n, |i, k| st(&acc, k.clone(), ld(&acc, k) + ld(&e, i)));
        let s = Stmt::seq(vec![
            a,
            Stmt::Allocate { buffer: acc.clone(), extent: Expr::int(4), body: Box::new(Stmt::seq(vec![init, c])) },
        ]);
        let out = Fuse.mutate_stmt(s);
        assert_eq!(loops(&out), 1, "{}", crate::tir::printer::print_stmt(&out));
        // The allocation opens first, the store to `acc` runs before the fused loop.
        let Stmt::Allocate { body, .. } = &out else { panic!("{}", crate::tir::printer::print_stmt(&out)) };
        let Stmt::Seq(v) = &**body else { panic!("a sequence") };
        assert!(matches!(v[0], Stmt::Store { .. }) && matches!(v[1], Stmt::For { .. }));
    }

    #[test]
    fn loops_that_depend_across_iterations_or_on_what_lies_between_stay_apart() {
        let (x, e, o) = (buf("x"), buf("e"), buf("o"));
        let n = Expr::var(&Var::index("n"));
        let a = || rows(&n, |i, _| st(&e, i.clone(), ld(&x, i)));
        // A read of the next slice (written by a later iteration of the first loop).
        let next = rows(&n, |i, _| st(&o, i.clone(), ld(&e, i + 1)));
        assert_eq!(loops(&Fuse.mutate_stmt(Stmt::seq(vec![a(), next]))), 2);
        // The second loop writes what the first reads.
        let back = rows(&n, |i, _| st(&x, i.clone(), ld(&e, i)));
        assert_eq!(loops(&Fuse.mutate_stmt(Stmt::seq(vec![a(), back]))), 2);
        // A statement between them reads what the first loop wrote.
        let between = st(&o, Expr::int(0), ld(&e, Expr::int(3)));
        let c = rows(&n, |i, _| st(&o, i.clone(), ld(&e, i)));
        assert_eq!(loops(&Fuse.mutate_stmt(Stmt::seq(vec![a(), between, c.clone()]))), 2);
        // Different ranges.
        let other = rows(&(n.clone() + 1), |i, _| st(&o, i.clone(), ld(&e, i)));
        assert_eq!(loops(&Fuse.mutate_stmt(Stmt::seq(vec![a(), other]))), 2);
        // And the legal pair does fuse.
        assert_eq!(loops(&Fuse.mutate_stmt(Stmt::seq(vec![a(), c]))), 1);
    }
}
