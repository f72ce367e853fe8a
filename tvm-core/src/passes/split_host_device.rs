//! Splits a GPU function into host code and device kernels. Each outermost thread
//! binding of the host body starts a kernel; the kernel's launch extent for a tag is the
//! largest extent bound to it, and every binding becomes the kernel's own index variable
//! for its tag, guarded when its extent is smaller. Afterwards kernel bodies hold no
//! `ThreadBinding`, and the host body runs them with `Launch`.

use crate::arith::Analyzer;
use crate::tir::mutate::{substitute_stmt, super_stmt, Mutator};
use crate::tir::visit::{walk_expr, walk_stmt, Visitor};
use crate::tir::{Buffer, Expr, Kernel, Param, PrimFunc, Scope, Stmt, ThreadTag, Var};
use std::collections::{BTreeMap, HashMap};

/// Extracts the kernels of `f`. Fails with the tags whose launch extent cannot be
/// computed on the host (an extent that varies from block to block).
pub fn split_host_device(mut f: PrimFunc) -> Result<PrimFunc, Vec<ThreadTag>> {
    let mut host_vars: Vec<Var> = Vec::new();
    for p in &f.params {
        match p {
            Param::Tensor { shape, .. } => {
                for e in shape {
                    host_vars.extend(crate::tir::visit::vars_of(e));
                }
            }
            Param::Scalar(v) => host_vars.push(v.clone()),
        }
    }
    let mut s = Split { name: f.name.clone(), kernels: Vec::new(), host_vars, bad: Vec::new() };
    f.body = s.mutate_stmt(f.body);
    f.kernels = s.kernels;
    if !s.bad.is_empty() {
        return Err(s.bad);
    }
    Ok(f)
}

struct Split {
    name: String,
    kernels: Vec<Kernel>,
    /// Variables the host defines where a launch may be (parameters, dims, host loops).
    host_vars: Vec<Var>,
    bad: Vec<ThreadTag>,
}

impl Mutator for Split {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::ThreadBinding { .. } => {
                let k = make_kernel(format!("{}_kernel{}", c_name(&self.name), self.kernels.len()), s);
                for (tag, e) in k.grid.iter().zip(GRID).chain(k.block.iter().zip(BLOCK)).map(|(e, t)| (t, e)) {
                    if crate::tir::visit::vars_of(e).iter().any(|v| !self.host_vars.contains(v))
                        && !self.bad.contains(&tag)
                    {
                        self.bad.push(tag);
                    }
                }
                self.kernels.push(k);
                Stmt::Launch { kernel: self.kernels.len() - 1 }
            }
            Stmt::For { ref var, .. } | Stmt::Let { ref var, .. } => {
                self.host_vars.push(var.clone());
                super_stmt(self, s)
            }
            s => super_stmt(self, s),
        }
    }
}

/// `name` as a C identifier: a raw identifier's `r#` dropped, and every character a C
/// identifier cannot hold (a non-ASCII letter) as `_`.
fn c_name(name: &str) -> String {
    let bare = name.strip_prefix("r#").unwrap_or(name);
    bare.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

const GRID: [ThreadTag; 3] = [ThreadTag::BlockX, ThreadTag::BlockY, ThreadTag::BlockZ];
const BLOCK: [ThreadTag; 3] = [ThreadTag::ThreadX, ThreadTag::ThreadY, ThreadTag::ThreadZ];

fn make_kernel(name: String, body: Stmt) -> Kernel {
    // Launch extents: the largest extent bound to each tag.
    let mut extents: BTreeMap<ThreadTag, Vec<Expr>> = BTreeMap::new();
    collect_extents(&body, &mut extents);
    let analyzer = Analyzer::new();
    let mut launch: BTreeMap<ThreadTag, Expr> = BTreeMap::new();
    for (tag, es) in &extents {
        let mut uniq: Vec<Expr> = Vec::new();
        for e in es {
            if !uniq.contains(e) {
                uniq.push(e.clone());
            }
        }
        let m = uniq.into_iter().reduce(Expr::max).expect("at least one extent");
        launch.insert(*tag, analyzer.simplify(&m));
    }
    let thread_vars: Vec<(ThreadTag, Var)> =
        launch.keys().map(|&t| (t, Var::index(t.name().replace('.', "_")))).collect();
    let tag_var: HashMap<ThreadTag, Var> = thread_vars.iter().cloned().collect();
    let mut u = Unify { tag_var: &tag_var, launch: &launch, analyzer };
    let body = u.mutate_stmt(body);
    let mut grid = [Expr::int(1), Expr::int(1), Expr::int(1)];
    let mut block = [Expr::int(1), Expr::int(1), Expr::int(1)];
    for (tag, e) in &launch {
        if tag.is_block() {
            grid[tag.dim()] = e.clone();
        } else {
            block[tag.dim()] = e.clone();
        }
    }
    // Arguments: global buffers used and variables defined outside the kernel.
    let mut fv = FreeVars::default();
    for (_, v) in &thread_vars {
        fv.defined.push(v.clone());
    }
    fv.visit_stmt(&body);
    Kernel { name, thread_vars, grid, block, buffer_args: fv.buffers, scalar_args: fv.free, body }
}

fn collect_extents(s: &Stmt, out: &mut BTreeMap<ThreadTag, Vec<Expr>>) {
    struct C<'a>(&'a mut BTreeMap<ThreadTag, Vec<Expr>>);
    impl Visitor for C<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::ThreadBinding { tag, extent, .. } = s {
                self.0.entry(*tag).or_default().push(extent.clone());
            }
            walk_stmt(self, s)
        }
    }
    C(out).visit_stmt(s)
}

struct Unify<'a> {
    tag_var: &'a HashMap<ThreadTag, Var>,
    launch: &'a BTreeMap<ThreadTag, Expr>,
    analyzer: Analyzer,
}

impl Mutator for Unify<'_> {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        match s {
            Stmt::ThreadBinding { tag, var, extent, body } => {
                let tv = self.tag_var[&tag].clone();
                let mut m = HashMap::new();
                m.insert(var, Expr::var(&tv));
                let body = self.mutate_stmt(substitute_stmt(*body, &m));
                let full = &self.launch[&tag];
                let same = *full == extent || self.analyzer.can_prove(&Expr::eq(full.clone(), extent.clone()));
                if same {
                    body
                } else {
                    guard_outside_barriers(Expr::lt(Expr::var(&tv), extent), body)
                }
            }
            s => super_stmt(self, s),
        }
    }
}

/// Variables used but not defined inside a statement, and the global buffers it uses.
#[derive(Default)]
struct FreeVars {
    defined: Vec<Var>,
    free: Vec<Var>,
    allocated: Vec<Buffer>,
    buffers: Vec<Buffer>,
}

impl FreeVars {
    fn use_buffer(&mut self, b: &Buffer) {
        if b.scope() == Scope::Global && !self.allocated.contains(b) && !self.buffers.contains(b) {
            self.buffers.push(b.clone());
        }
    }
}

impl Visitor for FreeVars {
    fn visit_expr(&mut self, e: &Expr) {
        match e {
            Expr::Var(v) if !self.defined.contains(v) && !self.free.contains(v) => self.free.push(v.clone()),
            Expr::Load { buffer, .. } => self.use_buffer(buffer),
            _ => {}
        }
        walk_expr(self, e)
    }
    fn visit_stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::For { var, .. } | Stmt::Let { var, .. } => self.defined.push(var.clone()),
            Stmt::Allocate { buffer, .. } | Stmt::Realize { buffer, .. } => self.allocated.push(buffer.clone()),
            Stmt::Store { buffer, .. } => self.use_buffer(buffer),
            _ => {}
        }
        walk_stmt(self, s)
    }
}

/// `if cond { s }`, except that every thread must still reach every barrier of `s`: the
/// guard goes around each barrier-free part, and statements that contain barriers
/// (whose control flow is uniform) are entered by every thread.
fn guard_outside_barriers(cond: Expr, s: Stmt) -> Stmt {
    if !crate::tir::visit::contains_barrier(&s) {
        return Stmt::if_then(cond, s);
    }
    match s {
        s @ (Stmt::Barrier | Stmt::WarpReduce { .. }) => s,
        Stmt::Seq(ss) => Stmt::seq(ss.into_iter().map(|c| guard_outside_barriers(cond.clone(), c)).collect()),
        Stmt::For { var, min, extent, kind, body } => {
            Stmt::For { var, min, extent, kind, body: Box::new(guard_outside_barriers(cond, *body)) }
        }
        Stmt::If { cond: c, then, otherwise } => Stmt::If {
            cond: c,
            then: Box::new(guard_outside_barriers(cond.clone(), *then)),
            otherwise: otherwise.map(|o| Box::new(guard_outside_barriers(cond, *o))),
        },
        Stmt::Let { var, value, body } => Stmt::Let { var, value, body: Box::new(guard_outside_barriers(cond, *body)) },
        Stmt::Allocate { buffer, extent, body } => {
            Stmt::Allocate { buffer, extent, body: Box::new(guard_outside_barriers(cond, *body)) }
        }
        Stmt::Realize { buffer, bounds, body } => {
            Stmt::Realize { buffer, bounds, body: Box::new(guard_outside_barriers(cond, *body)) }
        }
        Stmt::ThreadBinding { tag, var, extent, body } => {
            Stmt::ThreadBinding { tag, var, extent, body: Box::new(guard_outside_barriers(cond, *body)) }
        }
        s => Stmt::if_then(cond, s),
    }
}
