//! The combine of an rfactor's partial results as a tree (CPU targets): a loop that folds
//! a local buffer's `L` partial results into one element,
//!
//! ```text
//!                                         t[ramp(0, 1, 16)] = r[ramp(0, 1, 16)]
//! for k in serial(0, 16):                 t[ramp(0, 1, 8)] = t[ramp(0, 1, 8)] + t[ramp(8, 1, 8)]
//!   s[0] = s[0] + r[k]           ->       t[ramp(0, 1, 4)] = t[ramp(0, 1, 4)] + t[ramp(4, 1, 4)]
//!                                         ...
//!                                         s[0] = s[0] + t[0]
//! ```
//!
//! becomes `log2 L` vector steps that halve a copy of the buffer, then one fold into the
//! element, when `L` is a power of two from 2 to 64 and the operation is `+` or `*`.
//!
//! Why: the loop is `L` dependent operations, 4 cycles each (64 for a 16-lane sum, 128
//! for 32), in every row of a softmax or a layer norm; the tree is `log2 L` short steps,
//! what `_mm512_reduce_add_ps` does. The sum's order changes (floating-point `+` is
//! not associative): the lowered TIR states the tree's order, so the interpreter and the
//! generated code compute the same values, as TVM's and Halide's horizontal reductions
//! fix theirs.

use super::fuse_loops::{flatten, rebuild, Entry};
use crate::tir::mutate::{super_stmt, Mutator};
use crate::tir::{BinOp, Buffer, Expr, ForKind, PrimFunc, Stmt};

/// Rewrites the qualifying combine loops of `f` (host code; CPU targets).
pub fn tree_combine(mut f: PrimFunc) -> PrimFunc {
    let body = std::mem::replace(&mut f.body, Stmt::NoOp);
    f.body = Tree.mutate_stmt(body);
    f
}

struct Tree;

impl Mutator for Tree {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match super_stmt(self, s) {
            Stmt::Allocate { buffer, extent, body } => {
                let body = rewrite_in_scope(&buffer, &extent, *body);
                Stmt::Allocate { buffer, extent, body: Box::new(body) }
            }
            s => s,
        }
    }
}

/// In the scope of `r` (`body`: a sequence, allocations opened in it followed in line),
/// the combine loop over `r`.
fn rewrite_in_scope(r: &Buffer, extent: &Expr, body: Stmt) -> Stmt {
    let mut entries = Vec::new();
    flatten(body, &mut entries);
    let found = entries.iter().position(|e| matches!(e, Entry::Stmt(s) if combine_of(s, r, extent).is_some()));
    let Some(at) = found else { return rebuild(entries) };
    let Entry::Stmt(s) = &entries[at] else { unreachable!("a statement") };
    let (op, target, index, lanes) = combine_of(s, r, extent).expect("found above");
    // The steps halve a copy: `r` itself is read only whole, so LLVM keeps a loop's
    // accumulator in `r` as whole registers (halved in place, it split a 16-lane sum
    // into two 8-lane halves, re-joined every iteration of the loop that accumulates).
    let t = Buffer::new(format!("{}_tree", r.name()), r.dtype(), r.0.scope);
    let ramp = |base: i64, lanes: i64| Expr::Ramp {
        base: Box::new(Expr::int(base)),
        stride: Box::new(Expr::int(1)),
        lanes: lanes as u16,
    };
    let mut steps = vec![Stmt::Store {
        buffer: t.clone(),
        indices: vec![ramp(0, lanes)],
        value: Expr::load(r, vec![ramp(0, lanes)]),
    }];
    let mut half = lanes / 2;
    while half >= 1 {
        let (lo, hi) = if half == 1 { (Expr::int(0), Expr::int(1)) } else { (ramp(0, half), ramp(half, half)) };
        let value = Expr::binary(op, Expr::load(&t, vec![lo.clone()]), Expr::load(&t, vec![hi]));
        steps.push(Stmt::store(&t, vec![lo], value));
        half /= 2;
    }
    let fold = Expr::binary(op, Expr::load(&target, vec![index.clone()]), Expr::load(&t, vec![Expr::int(0)]));
    steps.push(Stmt::Store { buffer: target, indices: vec![index], value: fold });
    entries[at] = Entry::Stmt(Stmt::Allocate { buffer: t, extent: Expr::int(lanes), body: Box::new(Stmt::seq(steps)) });
    rebuild(entries)
}

/// `(op, s, index, L)` when `s` is `for k in serial(0, L): s[index] = op(s[index], r[k])`
/// with `L` a power of two in `2..=64` within `r`'s `extent`, and `index` free of `k`.
fn combine_of(s: &Stmt, r: &Buffer, extent: &Expr) -> Option<(BinOp, Buffer, Expr, i64)> {
    let Stmt::For { var, min, extent: l, kind: ForKind::Serial, body } = s else { return None };
    let (lanes, have) = (l.as_int()?, extent.as_int()?);
    if !min.is_const_int(0) || !(2..=64).contains(&lanes) || lanes.count_ones() != 1 || lanes > have {
        return None;
    }
    let Stmt::Store { buffer: target, indices, value } = &**body else { return None };
    let [index] = indices.as_slice() else { return None };
    // An index that reads memory (`s[s[0]]`) would be evaluated once instead of `L` times.
    if target == r
        || crate::tir::visit::reads_memory(index)
        || crate::tir::visit::uses_var(index, var)
        || index.dtype().lanes != 1
    {
        return None;
    }
    let Expr::Binary { op, a, b } = value else { return None };
    // `min` and `max` are left to LLVM, which may reorder them and combines them as a
    // tree itself (a tree here made the 8-, 4- and 2-lane steps masked 512-bit
    // operations through memory on the AVX-512 level).
    if !matches!(op, BinOp::Add | BinOp::Mul) || value.dtype().lanes != 1 {
        return None;
    }
    let own = Expr::load(target, vec![index.clone()]);
    let part = Expr::load(r, vec![Expr::var(var)]);
    let ok = (**a == own && **b == part) || (**a == part && **b == own);
    ok.then(|| (*op, target.clone(), index.clone(), lanes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::tir::{Scope, Var};

    fn combine(r: &Buffer, s: &Buffer, op: BinOp, lanes: i64) -> Stmt {
        let k = Var::index("k");
        let own = Expr::load(s, vec![Expr::int(0)]);
        let body = Stmt::Store {
            buffer: s.clone(),
            indices: vec![Expr::int(0)],
            value: Expr::binary(op, own, Expr::load(r, vec![Expr::var(&k)])),
        };
        Stmt::for_loop(k, Expr::int(lanes), ForKind::Serial, body)
    }

    #[test]
    fn a_sum_of_sixteen_partials_becomes_four_halving_steps_and_a_fold() {
        let (r, s) = (Buffer::new("r", DType::F32, Scope::Local), Buffer::new("s", DType::F32, Scope::Local));
        let alloc = Stmt::Allocate {
            buffer: r.clone(),
            extent: Expr::int(16),
            body: Box::new(combine(&r, &s, BinOp::Add, 16)),
        };
        let out = Tree.mutate_stmt(alloc);
        let text = crate::tir::printer::print_stmt(&out);
        for want in [
            "r_tree[ramp(0, 1, 16)] = r[ramp(0, 1, 16)]",
            "r_tree[ramp(0, 1, 8)] = r_tree[ramp(0, 1, 8)] + r_tree[ramp(8, 1, 8)]",
            "r_tree[0] = r_tree[0] + r_tree[1]",
            "s[0] = s[0] + r_tree[0]",
        ] {
            assert!(text.contains(want), "no `{want}` in\n{text}");
        }
        assert!(!text.contains("for "), "{text}");
    }

    #[test]
    fn odd_counts_and_other_operations_keep_the_loop() {
        let (r, s) = (Buffer::new("r", DType::F32, Scope::Local), Buffer::new("s", DType::F32, Scope::Local));
        let alloc = |body| Stmt::Allocate { buffer: r.clone(), extent: Expr::int(16), body: Box::new(body) };
        let odd = alloc(combine(&r, &s, BinOp::Add, 12));
        assert_eq!(Tree.mutate_stmt(odd.clone()), odd);
        let sub = alloc(combine(&r, &s, BinOp::Sub, 16));
        assert_eq!(Tree.mutate_stmt(sub.clone()), sub);
        let max = alloc(combine(&r, &s, BinOp::Max, 16));
        assert_eq!(Tree.mutate_stmt(max.clone()), max);
    }
}
