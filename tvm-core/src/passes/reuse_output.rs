//! An intermediate computed inside a row-parallel loop, and read by the output only at
//! the element the output writes, is stored in that row of the output itself (CPU
//! targets; ONNX Runtime's softmax writes its exponentials into the output and scales
//! them in place the same way).
//!
//! ```text
//! for i in parallel(0, M):                 for i in parallel(0, M):
//!   realize e[i:1, 0:N']:                    for j ..: if j < N: y[i, j] = exp(..)
//!     for j ..: if j < N: e[i, j] = exp(..)  for j ..: s[i] += select(j < N, y[i, j], 0)
//!     for j ..: s[i] += select(j < N, e[i, j], 0)
//!     for j ..: if j < N: y[i, j] = e[i, j] * r[i]   for j ..: if j < N: y[i, j] = y[i, j] * r[i]
//! ```
//!
//! Why: the last pass over a row then writes lines that the first pass already brought
//! into the cache for writing, while it was computing; as a pure stream of stores into
//! lines not in the cache, it stalls on each line it writes. `cargo bench --bench peers
//! -- softmax` measures the softmax example (against ONNX Runtime through
//! `benches/peers/run.py`).
//!
//! When, exactly (anything else is left alone):
//! - the loop is `parallel` and the output `y` (rank 2 or more) is stored once in its
//!   body, at `y[v, ...]` with `v` the loop's variable (so the iteration owns that row:
//!   the code generator's chunk is the row), inside loops whose variables all index it
//!   (no element written twice), and `y` is not read there;
//! - the intermediate `e` has `y`'s element type, is realized inside the loop, and every
//!   access to it is at `e[v, ...]` with every other index proved inside `y`'s shape
//!   under the loops and conditions around it (a padded split's tail reads stay guarded);
//! - in the order the body runs, every write of `e` and every read of it other than the
//!   output's comes before the statement that stores `y`, and that store reads `e` only
//!   at its own indices. Each element of `e` is then read for `y` right before `y`'s
//!   value overwrites it, and never again.

use crate::arith::Analyzer;
use crate::tir::mutate::{super_expr, super_stmt, Mutator};
use crate::tir::visit::{uses_var, walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, CmpOp, Expr, ForKind, Param, PrimFunc, Stmt, Var};

/// Stores qualifying intermediates of the parallel loops of `f` (CPU code) in the rows
/// of the output.
pub fn reuse_output(mut f: PrimFunc) -> PrimFunc {
    let mut outputs = Vec::new();
    let mut an = Analyzer::new();
    for p in &f.params {
        if let Param::Tensor { buffer, shape, is_output } = p {
            for d in shape {
                if let Expr::Var(v) = d {
                    if v.dtype().is_integer() {
                        an.assume_nonneg(v);
                    }
                }
            }
            if *is_output && shape.len() >= 2 {
                outputs.push((buffer.clone(), shape.clone()));
            }
        }
    }
    if outputs.is_empty() {
        return f;
    }
    let body = std::mem::replace(&mut f.body, Stmt::NoOp);
    f.body = Reuse { outputs, an }.mutate_stmt(body);
    f
}

struct Reuse {
    outputs: Vec<(Buffer, Vec<Expr>)>,
    an: Analyzer,
}

impl Mutator for Reuse {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::For { var, min, extent, kind: ForKind::Parallel, body } => {
                let mut body = *body;
                let snap = self.an.snapshot();
                self.an.bind(&var, min.clone(), extent.clone());
                for (y, shape) in &self.outputs {
                    if let Some(e) = candidate(&var, &body, y, shape, &mut self.an) {
                        body = Replace { from: e, to: y.clone() }.mutate_stmt(body);
                    }
                }
                self.an.restore(snap);
                Stmt::For { var, min, extent, kind: ForKind::Parallel, body: Box::new(body) }
            }
            s => super_stmt(self, s),
        }
    }
}

/// The intermediate of the parallel loop over `v` with body `body` that can live in the
/// rows of output `y`, if there is one (see the module's conditions).
fn candidate(v: &Var, body: &Stmt, y: &Buffer, shape: &[Expr], an: &mut Analyzer) -> Option<Buffer> {
    // The one store of `y`, at `y[v, ...]`, and no read of `y`.
    let mut acc = Accesses::of(y);
    acc.visit_stmt(body);
    if acc.stores.len() != 1 || acc.loads != 0 {
        return None;
    }
    let (y_idx, y_value) = acc.stores.pop()?;
    if y_idx.len() != shape.len() || y_idx[0] != Expr::Var(v.clone()) {
        return None;
    }
    // Every loop around that store indexes `y`: no element is written twice, so none is
    // read as `e` after `y`'s value replaced it.
    if !loops_around_store(body, y).iter().all(|l| y_idx.iter().any(|i| uses_var(i, l))) {
        return None;
    }
    // The buffers the output's value reads at the output's own indices, realized here.
    let mut realized = Vec::new();
    realized_buffers(body, &mut realized);
    let mut reads = Vec::new();
    loads_in(&y_value, &mut reads);
    let mut leaves = Vec::new();
    leaves_of(body, &mut leaves);
    let y_leaf = leaves.iter().position(|l| {
        let mut a = Accesses::of(y);
        a.visit_stmt(l);
        !a.stores.is_empty()
    })?;
    'candidates: for (e, e_idx) in &reads {
        if e == y || e.dtype() != y.dtype() || *e_idx != y_idx || !realized.contains(e) {
            continue;
        }
        // Every read of `e` in the output's value is at the output's indices.
        let at_y = reads.iter().filter(|(b, _)| b == e).count();
        if reads.iter().any(|(b, i)| b == e && *i != y_idx) {
            continue;
        }
        // Order: nothing touches `e` after the output's statement, and in it only the
        // output's value reads it.
        for (k, leaf) in leaves.iter().enumerate() {
            let mut a = Accesses::of(e);
            a.visit_stmt(leaf);
            if (k > y_leaf && (a.loads > 0 || !a.stores.is_empty()))
                || (k == y_leaf && (!a.stores.is_empty() || a.loads != at_y))
            {
                continue 'candidates;
            }
        }
        // Every access of `e` inside the row of `y` that iteration `v` owns.
        let mut check = InRow { e: e.clone(), v: v.clone(), shape: shape.to_vec(), an, ok: true };
        check.visit_stmt(body);
        if check.ok {
            return Some(e.clone());
        }
    }
    None
}

/// The variables of the loops (inside `s`) around the stores of `y`.
fn loops_around_store(s: &Stmt, y: &Buffer) -> Vec<Var> {
    struct L<'a> {
        y: &'a Buffer,
        stack: Vec<Var>,
        found: Vec<Var>,
    }
    impl Visitor for L<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            match s {
                Stmt::For { var, body, .. } => {
                    self.stack.push(var.clone());
                    self.visit_stmt(body);
                    self.stack.pop();
                }
                Stmt::Store { buffer, .. } if buffer == self.y => self.found.extend(self.stack.iter().cloned()),
                s => walk_stmt(self, s),
            }
        }
    }
    let mut l = L { y, stack: Vec::new(), found: Vec::new() };
    l.visit_stmt(s);
    l.found
}

/// The statements of `s` in the order they run, looking through sequences and
/// realizations (a loop, a condition or a binding is one statement).
fn leaves_of<'s>(s: &'s Stmt, out: &mut Vec<&'s Stmt>) {
    match s {
        Stmt::Seq(ss) => ss.iter().for_each(|s| leaves_of(s, out)),
        Stmt::Realize { body, .. } => leaves_of(body, out),
        s => out.push(s),
    }
}

/// The buffers realized anywhere in `s`.
fn realized_buffers(s: &Stmt, out: &mut Vec<Buffer>) {
    struct R<'a>(&'a mut Vec<Buffer>);
    impl Visitor for R<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Realize { buffer, .. } = s {
                self.0.push(buffer.clone());
            }
            walk_stmt(self, s)
        }
    }
    R(out).visit_stmt(s);
}

/// Every load in `e`: its buffer and indices.
fn loads_in(e: &Expr, out: &mut Vec<(Buffer, Vec<Expr>)>) {
    struct L<'a>(&'a mut Vec<(Buffer, Vec<Expr>)>);
    impl Visitor for L<'_> {
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Load { buffer, indices } = e {
                self.0.push((buffer.clone(), indices.clone()));
            }
            walk_expr(self, e)
        }
    }
    L(out).visit_expr(e);
}

/// The stores (indices and value) and the number of loads of one buffer.
struct Accesses {
    buffer: Buffer,
    stores: Vec<(Vec<Expr>, Expr)>,
    loads: usize,
}

impl Accesses {
    fn of(buffer: &Buffer) -> Accesses {
        Accesses { buffer: buffer.clone(), stores: Vec::new(), loads: 0 }
    }
}

impl Visitor for Accesses {
    fn visit_expr(&mut self, e: &Expr) {
        if let Expr::Load { buffer, .. } = e {
            if *buffer == self.buffer {
                self.loads += 1;
            }
        }
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        if let Stmt::Store { buffer, indices, value } = s {
            if *buffer == self.buffer {
                self.stores.push((indices.clone(), value.clone()));
            }
        }
        walk_stmt(self, s)
    }
}

/// Whether every access of `e` is at `e[v, ...]` with the other indices proved inside
/// `shape`, under the loops, conditions and selects around it.
struct InRow<'a> {
    e: Buffer,
    v: Var,
    shape: Vec<Expr>,
    an: &'a mut Analyzer,
    ok: bool,
}

impl InRow<'_> {
    fn check(&mut self, indices: &[Expr]) {
        if indices.len() != self.shape.len() || indices[0] != Expr::Var(self.v.clone()) {
            self.ok = false;
            return;
        }
        for (i, d) in indices.iter().zip(&self.shape).skip(1) {
            if !i.dtype().is_integer() || i.dtype() != d.dtype() {
                self.ok = false;
                return;
            }
            let zero = Expr::typed_int(0, i.dtype());
            let lo = Expr::Cmp { op: CmpOp::Ge, a: Box::new(i.clone()), b: Box::new(zero) };
            let hi = Expr::Cmp { op: CmpOp::Lt, a: Box::new(i.clone()), b: Box::new(d.clone()) };
            if !self.an.can_prove(&lo) || !self.an.can_prove(&hi) {
                self.ok = false;
                return;
            }
        }
    }
}

impl Visitor for InRow<'_> {
    fn visit_expr(&mut self, e: &Expr) {
        if !self.ok {
            return;
        }
        match e {
            Expr::Load { buffer, indices } if *buffer == self.e => {
                self.check(indices);
                walk_expr(self, e)
            }
            Expr::Select { cond, then, otherwise } => {
                self.visit_expr(cond);
                let snap = self.an.snapshot();
                self.an.assume(cond);
                self.visit_expr(then);
                self.an.restore(snap);
                let snap = self.an.snapshot();
                self.an.assume(&Expr::Not(cond.clone()));
                self.visit_expr(otherwise);
                self.an.restore(snap);
            }
            e => walk_expr(self, e),
        }
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        if !self.ok {
            return;
        }
        match s {
            Stmt::Store { buffer, indices, value } => {
                if *buffer == self.e {
                    self.check(indices);
                }
                indices.iter().for_each(|i| self.visit_expr(i));
                self.visit_expr(value);
            }
            Stmt::For { var, min, extent, body, .. } => {
                self.visit_expr(min);
                self.visit_expr(extent);
                let snap = self.an.snapshot();
                self.an.bind(var, min.clone(), extent.clone());
                self.visit_stmt(body);
                self.an.restore(snap);
            }
            Stmt::If { cond, then, otherwise } => {
                self.visit_expr(cond);
                let snap = self.an.snapshot();
                self.an.assume(cond);
                self.visit_stmt(then);
                self.an.restore(snap);
                if let Some(o) = otherwise {
                    let snap = self.an.snapshot();
                    self.an.assume(&Expr::Not(Box::new(cond.clone())));
                    self.visit_stmt(o);
                    self.an.restore(snap);
                }
            }
            Stmt::Let { value, body, .. } => {
                // A binding's variable is unknown to the analyzer: accesses indexed by it
                // are not proved (and so not rewritten).
                self.visit_expr(value);
                self.visit_stmt(body);
            }
            s => walk_stmt(self, s),
        }
    }
}

/// Loads and stores of `from` become loads and stores of `to` at the same indices, and
/// the realization of `from` goes.
struct Replace {
    from: Buffer,
    to: Buffer,
}

impl Mutator for Replace {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match super_expr(self, e) {
            Expr::Load { buffer, indices } if buffer == self.from => Expr::Load { buffer: self.to.clone(), indices },
            e => e,
        }
    }
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::Realize { buffer, body, .. } if buffer == self.from => self.mutate_stmt(*body),
            s => match super_stmt(self, s) {
                Stmt::Store { buffer, indices, value } if buffer == self.from => {
                    Stmt::Store { buffer: self.to.clone(), indices, value }
                }
                s => s,
            },
        }
    }
}
