//! The TIR verifier: checks the invariants every pass may rely on (variables defined
//! before use, buffers allocated, operand types agreeing, the node forms legal in the
//! current phase) and collects every violation with a message that locates it.
//!
//! A violation is always a compiler bug, never a user error: [`assert_valid`] runs the
//! verifier between passes in debug builds and tests and panics naming the pass.
//!
//! Device code is a kernel body or, before `split_host_device`, the body of a thread
//! binding in the host body: barriers and shared or local allocations may appear only
//! there (`schedule_ops` emits both for cross-thread reductions). Since
//! `split_host_device` runs after `flatten_storage`, host thread bindings are legal in
//! either phase until the function has kernels, and never on a CPU target.

use super::expr::*;
use super::printer::{print_func, Printer};
use super::stmt::*;
use crate::dtype::DType;
use std::collections::{HashMap, HashSet};

/// Which forms the TIR may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// After `schedule_ops`: multi-dimensional `Load`/`Store` and `Realize` are allowed;
    /// `ProducerLoad` and `Reduce` are gone.
    Scheduled,
    /// After `flatten_storage`: every `Load`/`Store` has exactly one index, storage is
    /// `Allocate`d, no `Realize` is left.
    Flattened,
}

/// Checks `f` against the rules of `phase`; on failure returns every problem found, in
/// the order met, each naming where it is and the statement it is in.
pub fn verify(f: &PrimFunc, phase: Phase) -> Result<(), Vec<String>> {
    let mut v = Verifier::new(f, phase);
    v.run();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// Panics with `internal: TIR invalid after pass `{after_pass}`: ...` (the problems and
/// the printed function) when `f` does not verify. For use between passes in debug
/// builds and tests: a failure is a compiler bug.
pub fn assert_valid(f: &PrimFunc, phase: Phase, after_pass: &str) {
    if let Err(errors) = verify(f, phase) {
        panic!(
            "internal: TIR invalid after pass `{after_pass}`: {}\n({:?} phase) in function:\n{}",
            errors.join("\n  "),
            phase,
            print_func(f)
        );
    }
}

/// The region of the function being walked.
#[derive(Clone, Copy)]
enum Region<'f> {
    Signature,
    Host,
    Kernel(&'f Kernel),
}

struct Verifier<'f> {
    f: &'f PrimFunc,
    phase: Phase,
    errors: Vec<String>,
    /// Made on the first error: it has printed `f`, so names in messages match
    /// `print_func(f)`.
    printer: Option<Printer<'f>>,
    /// Dim variables of the tensor parameters and scalar parameters.
    func_vars: HashSet<Var>,
    param_buffers: HashSet<Buffer>,
    /// Variables in scope, with how many binders hold them (more than one only after a
    /// reported redefinition).
    vars: HashMap<Var, usize>,
    /// Buffers usable here: parameters (host) or kernel arguments, and enclosing
    /// allocations.
    buffers: HashMap<Buffer, usize>,
    region: Region<'f>,
    /// How many host thread bindings enclose the current point (device code before
    /// `split_host_device`).
    thread_bindings: usize,
    /// The statements enclosing the current point, innermost last.
    stmts: Vec<&'f Stmt>,
}

fn scope_add<K: std::hash::Hash + Eq + Clone>(m: &mut HashMap<K, usize>, k: &K) {
    *m.entry(k.clone()).or_insert(0) += 1;
}

fn scope_remove<K: std::hash::Hash + Eq + Clone>(m: &mut HashMap<K, usize>, k: &K) {
    if let Some(n) = m.get_mut(k) {
        *n -= 1;
        if *n == 0 {
            m.remove(k);
        }
    }
}

/// Whether `d` is a boolean of one lane.
fn is_bool_scalar(d: DType) -> bool {
    d.is_bool() && d.is_scalar()
}

/// The lanes an index list addresses (those of the last index, as `Expr::dtype` of a
/// `Load` takes them).
fn index_lanes(indices: &[Expr]) -> u16 {
    indices.last().map_or(1, |i| i.dtype().lanes)
}

impl<'f> Verifier<'f> {
    fn new(f: &'f PrimFunc, phase: Phase) -> Verifier<'f> {
        Verifier {
            f,
            phase,
            errors: Vec::new(),
            printer: None,
            func_vars: HashSet::new(),
            param_buffers: HashSet::new(),
            vars: HashMap::new(),
            buffers: HashMap::new(),
            region: Region::Signature,
            thread_bindings: 0,
            stmts: Vec::new(),
        }
    }

    fn printer(&mut self) -> &mut Printer<'f> {
        let f = self.f;
        self.printer.get_or_insert_with(|| {
            let mut p = Printer::new();
            p.func(f);
            p
        })
    }

    fn var_name(&mut self, v: &Var) -> String {
        self.printer().var(v)
    }

    fn buffer_name(&mut self, b: &Buffer) -> String {
        self.printer().buffer(b)
    }

    fn expr_text(&mut self, e: &Expr) -> String {
        let text = self.printer().expr(e);
        brief(text)
    }

    /// Records a problem, located by region and innermost statement. Identical messages
    /// (the same undefined variable used twice in one statement) are kept once.
    fn error(&mut self, msg: String) {
        let region = match self.region {
            Region::Signature => "signature".to_string(),
            Region::Host if self.f.target.is_gpu() => "host body".to_string(),
            Region::Host => "body".to_string(),
            Region::Kernel(k) => format!("kernel `{}`", k.name),
        };
        let at = match self.stmts.last().copied() {
            Some(s) => format!(", at `{}`", brief(self.printer().stmt_header(s))),
            None => String::new(),
        };
        let full = format!("{region}: {msg}{at}");
        if !self.errors.contains(&full) {
            self.errors.push(full);
        }
    }

    fn in_kernel(&self) -> bool {
        matches!(self.region, Region::Kernel(_))
    }

    /// Whether the current point runs on the device: in a kernel, or (before
    /// `split_host_device`) under a thread binding of the host body.
    fn in_device_code(&self) -> bool {
        self.in_kernel() || self.thread_bindings > 0
    }

    fn run(&mut self) {
        let f = self.f;
        for p in &f.params {
            match p {
                Param::Tensor { buffer, shape, .. } => {
                    self.param_buffers.insert(buffer.clone());
                    for d in shape {
                        super::visit::for_each_expr(d, &mut |e| {
                            if let Expr::Var(v) = e {
                                self.func_vars.insert(v.clone());
                            }
                        });
                        if !d.dtype().is_integer() {
                            let d = self.expr_text(d);
                            self.error(format!("dim `{d}` of a tensor parameter is not an integer"));
                        }
                    }
                }
                Param::Scalar(v) => {
                    self.func_vars.insert(v.clone());
                }
            }
        }
        if !f.target.is_gpu() && !f.kernels.is_empty() {
            self.error(format!("{} kernel(s) on cpu target `{}`", f.kernels.len(), f.target));
        }

        self.region = Region::Host;
        self.vars = self.func_vars.iter().map(|v| (v.clone(), 1)).collect();
        self.buffers = self.param_buffers.iter().map(|b| (b.clone(), 1)).collect();
        self.check_stmt(&f.body);

        let host_defined = host_defined_vars(&f.body);
        for k in &f.kernels {
            self.check_kernel(k, &host_defined);
        }
    }

    fn check_kernel(&mut self, k: &'f Kernel, host_defined: &[Var]) {
        self.region = Region::Kernel(k);
        // The launch extents are evaluated on the host, in terms of the signature and
        // of the host loops and lets around the launch.
        self.vars = self.func_vars.iter().chain(host_defined).map(|v| (v.clone(), 1)).collect();
        for e in k.grid.iter().chain(&k.block) {
            self.check_expr(e);
            if !e.dtype().is_integer() || !e.dtype().is_scalar() {
                let t = self.expr_text(e);
                self.error(format!("launch extent `{t}` is not a scalar integer"));
            }
        }

        self.vars.clear();
        self.buffers.clear();
        for v in &k.scalar_args {
            if !self.func_vars.contains(v) && !host_defined.contains(v) {
                let n = self.var_name(v);
                self.error(format!(
                    "scalar argument `{n}` is not a scalar parameter, a dim or a host variable of the function"
                ));
            }
            scope_add(&mut self.vars, v);
        }
        for b in &k.buffer_args {
            if b.scope() != Scope::Global {
                let n = self.buffer_name(b);
                self.error(format!("buffer argument `{n}` is {}, not global", b.scope().name()));
            }
            scope_add(&mut self.buffers, b);
        }
        for (tag, v) in &k.thread_vars {
            if self.vars.contains_key(v) {
                let n = self.var_name(v);
                self.error(format!("thread variable `{n}` of {} is defined twice", tag.name()));
            }
            if !v.dtype().is_integer() {
                let n = self.var_name(v);
                self.error(format!("thread variable `{n}` has non-integer type {}", v.dtype()));
            }
            scope_add(&mut self.vars, v);
        }
        self.check_stmt(&k.body);
    }

    /// Brings a binder's variable into scope, reporting a redefinition.
    fn bind(&mut self, v: &Var, what: &str) {
        if self.vars.contains_key(v) {
            let n = self.var_name(v);
            self.error(format!("{what} `{n}` redefined while in scope"));
        }
        scope_add(&mut self.vars, v);
    }

    fn check_integer(&mut self, e: &Expr, what: &str) {
        let d = e.dtype();
        if !d.is_integer() || !d.is_scalar() {
            let t = self.expr_text(e);
            self.error(format!("{what} `{t}` has type {d}, expected a scalar integer"));
        }
    }

    fn check_buffer_use(&mut self, b: &Buffer) {
        if self.buffers.contains_key(b) {
            return;
        }
        let n = self.buffer_name(b);
        let msg = match self.region {
            Region::Kernel(_) if self.param_buffers.contains(b) => {
                format!("global buffer `{n}` is used but not in the kernel's buffer_args")
            }
            Region::Kernel(_) => format!("buffer `{n}` is used but neither a kernel argument nor allocated"),
            _ => format!("buffer `{n}` is used but neither a parameter nor allocated in an enclosing scope"),
        };
        self.error(msg);
    }

    fn check_var_use(&mut self, v: &Var) {
        if self.vars.contains_key(v) {
            return;
        }
        let n = self.var_name(v);
        let msg = if self.in_kernel() && self.func_vars.contains(v) {
            format!("`{n}` is used but not in the kernel's scalar_args")
        } else {
            format!("undefined variable `{n}`")
        };
        self.error(msg);
    }

    /// Checks the buffer, the indices and the phase's index count of a load or store.
    fn check_access(&mut self, buffer: &Buffer, indices: &[Expr]) {
        self.check_buffer_use(buffer);
        for i in indices {
            self.check_expr(i);
            if !i.dtype().is_integer() {
                let t = self.expr_text(i);
                self.error(format!("index `{t}` has type {}, expected an integer", i.dtype()));
            }
        }
        if self.phase == Phase::Flattened && indices.len() != 1 {
            let n = self.buffer_name(buffer);
            self.error(format!("access to `{n}` has {} indices in flattened TIR (expected 1)", indices.len()));
        }
    }

    /// Checks where an allocation of `b` may appear and brings it into scope.
    fn allocate(&mut self, b: &Buffer, what: &str) {
        // Names are looked up only on error: the first lookup prints the whole function.
        let gpu = self.f.target.is_gpu();
        match b.scope() {
            Scope::Shared if !gpu => {
                let n = self.buffer_name(b);
                self.error(format!("shared {what} `{n}` on cpu target `{}`", self.f.target))
            }
            Scope::Shared | Scope::Local if gpu && what == "alloc" && !self.in_device_code() => {
                let n = self.buffer_name(b);
                self.error(format!("{} alloc `{n}` outside device code", b.scope().name()))
            }
            _ => {}
        }
        if self.buffers.contains_key(b) && !self.param_buffers.contains(b) {
            let n = self.buffer_name(b);
            self.error(format!("buffer `{n}` allocated again while in scope"));
        }
        scope_add(&mut self.buffers, b);
    }

    fn check_stmt(&mut self, s: &'f Stmt) {
        self.stmts.push(s);
        match s {
            Stmt::Seq(ss) => {
                // A Seq is no place of its own: report at its children.
                self.stmts.pop();
                for s in ss {
                    self.check_stmt(s);
                }
                return;
            }
            Stmt::For { var, min, extent, body, .. } => {
                self.check_expr(min);
                self.check_expr(extent);
                self.check_integer(min, "loop min");
                self.check_integer(extent, "loop extent");
                if !var.dtype().is_integer() {
                    let n = self.var_name(var);
                    self.error(format!("loop variable `{n}` has non-integer type {}", var.dtype()));
                }
                self.bind(var, "loop variable");
                self.check_stmt(body);
                scope_remove(&mut self.vars, var);
            }
            Stmt::ThreadBinding { tag, var, extent, body } => {
                if self.in_kernel() {
                    self.error(format!(
                        "thread binding of {} left inside a kernel after split_host_device",
                        tag.name()
                    ));
                } else if !self.f.target.is_gpu() {
                    self.error(format!("thread binding of {} on cpu target `{}`", tag.name(), self.f.target));
                } else if !self.f.kernels.is_empty() {
                    self.error(format!(
                        "thread binding of {} left in the host body after split_host_device",
                        tag.name()
                    ));
                }
                self.check_expr(extent);
                self.check_integer(extent, "thread extent");
                self.bind(var, "thread variable");
                let host = !self.in_kernel();
                self.thread_bindings += host as usize;
                self.check_stmt(body);
                self.thread_bindings -= host as usize;
                scope_remove(&mut self.vars, var);
            }
            Stmt::If { cond, then, otherwise } => {
                self.check_expr(cond);
                if !is_bool_scalar(cond.dtype()) {
                    let t = self.expr_text(cond);
                    self.error(format!("if condition `{t}` has type {}, expected bool", cond.dtype()));
                }
                self.check_stmt(then);
                if let Some(o) = otherwise {
                    self.check_stmt(o);
                }
            }
            Stmt::Let { var, value, body } => {
                self.check_expr(value);
                if value.dtype() != var.dtype() {
                    let n = self.var_name(var);
                    self.error(format!("let `{n}` of type {} bound to a value of type {}", var.dtype(), value.dtype()));
                }
                self.bind(var, "let variable");
                self.check_stmt(body);
                scope_remove(&mut self.vars, var);
            }
            Stmt::Store { buffer, indices, value } => {
                self.check_access(buffer, indices);
                self.check_expr(value);
                let (vd, lanes) = (value.dtype(), index_lanes(indices));
                if vd.element() != buffer.dtype() {
                    let n = self.buffer_name(buffer);
                    self.error(format!("store of {vd} into `{n}` of type {}", buffer.dtype()));
                }
                if vd.lanes != lanes {
                    self.error(format!("store of {} lane(s) at an index of {lanes} lane(s)", vd.lanes));
                }
            }
            Stmt::Prefetch { buffer, indices } => {
                self.check_access(buffer, indices);
                if index_lanes(indices) != 1 {
                    self.error("prefetch at a vector index".to_string());
                }
                if self.f.target.is_gpu() {
                    self.error("prefetch in a GPU function".to_string());
                }
            }
            Stmt::Realize { buffer, bounds, body } => {
                if self.phase == Phase::Flattened {
                    let n = self.buffer_name(buffer);
                    self.error(format!("realize of `{n}` left in flattened TIR"));
                }
                for r in bounds {
                    self.check_expr(&r.min);
                    self.check_expr(&r.extent);
                    self.check_integer(&r.min, "realize bound");
                    self.check_integer(&r.extent, "realize bound");
                }
                self.allocate(buffer, "realize");
                self.check_stmt(body);
                scope_remove(&mut self.buffers, buffer);
            }
            Stmt::Allocate { buffer, extent, body } => {
                self.check_expr(extent);
                self.check_integer(extent, "allocation extent");
                self.allocate(buffer, "alloc");
                self.check_stmt(body);
                scope_remove(&mut self.buffers, buffer);
            }
            Stmt::Barrier => {
                if !self.in_device_code() {
                    self.error("barrier outside device code".to_string());
                }
            }
            Stmt::WarpReduce { buffer, width, .. } => {
                if !self.in_device_code() {
                    self.error("warp reduction outside device code".to_string());
                }
                if buffer.scope() != crate::tir::Scope::Local {
                    self.error(format!("warp reduction of `{}`, which is not local", buffer.name()));
                }
                if !width.is_power_of_two() {
                    self.error(format!("warp reduction over {width} threads, not a power of two"));
                }
            }
            Stmt::Launch { kernel } => {
                if self.in_kernel() {
                    self.error("launch inside a kernel body".to_string());
                }
                if *kernel >= self.f.kernels.len() {
                    self.error(format!(
                        "launch of kernel {kernel}, but the function has {} kernel(s)",
                        self.f.kernels.len()
                    ));
                }
            }
            Stmt::NoOp => {}
        }
        self.stmts.pop();
    }

    fn check_expr(&mut self, e: &Expr) {
        match e {
            Expr::Int { dtype, .. } => {
                if !dtype.is_integer() {
                    let t = self.expr_text(e);
                    self.error(format!("integer constant `{t}` of type {dtype}"));
                }
            }
            Expr::Float { dtype, .. } => {
                if !dtype.is_float() {
                    let t = self.expr_text(e);
                    self.error(format!("float constant `{t}` of type {dtype}"));
                }
            }
            Expr::Bool(_) => {}
            Expr::Var(v) => self.check_var_use(v),
            Expr::Binary { op, a, b } => {
                self.check_expr(a);
                self.check_expr(b);
                self.check_same(e, op.symbol(), a, b);
            }
            Expr::Cmp { op, a, b } => {
                self.check_expr(a);
                self.check_expr(b);
                self.check_same(e, op.symbol(), a, b);
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                self.check_expr(a);
                self.check_expr(b);
                let op = if matches!(e, Expr::And(..)) { "&&" } else { "||" };
                self.check_bool(e, op, a);
                self.check_bool(e, op, b);
                self.check_same(e, op, a, b);
            }
            Expr::Not(a) => {
                self.check_expr(a);
                self.check_bool(e, "!", a);
            }
            Expr::Neg(a) => self.check_expr(a),
            Expr::Select { cond, then, otherwise } => {
                self.check_expr(cond);
                self.check_expr(then);
                self.check_expr(otherwise);
                let c = cond.dtype();
                if !c.is_bool() || (c.lanes != 1 && c.lanes != then.dtype().lanes) {
                    let t = self.expr_text(e);
                    self.error(format!("select condition of type {c} in `{t}`"));
                }
                self.check_same(e, "select", then, otherwise);
            }
            Expr::Cast { value, .. } => self.check_expr(value),
            Expr::Call { func, args } => {
                args.iter().for_each(|a| self.check_expr(a));
                if args.len() != func.arity() {
                    let t = self.expr_text(e);
                    self.error(format!(
                        "`{}` takes {} argument(s), got {}: `{t}`",
                        func.name(),
                        func.arity(),
                        args.len()
                    ));
                } else if args.iter().any(|a| a.dtype() != args[0].dtype()) {
                    let t = self.expr_text(e);
                    self.error(format!("arguments of `{}` have different types: `{t}`", func.name()));
                } else if !args[0].dtype().is_float() && *func != Intrinsic::Abs {
                    let t = self.expr_text(e);
                    self.error(format!("`{}` of non-float type {}: `{t}`", func.name(), args[0].dtype()));
                }
            }
            Expr::ProducerLoad { indices, .. } => {
                let t = self.expr_text(e);
                self.error(format!("tensor read `{t}` left in TIR (schedule_ops replaces them)"));
                indices.iter().for_each(|i| self.check_expr(i));
            }
            Expr::Load { buffer, indices } => self.check_access(buffer, indices),
            Expr::Ramp { base, stride, .. } => {
                self.check_expr(base);
                self.check_expr(stride);
                self.check_integer(base, "ramp base");
                self.check_same(e, "ramp", base, stride);
            }
            Expr::Broadcast { value, .. } => {
                self.check_expr(value);
                if !value.dtype().is_scalar() {
                    let t = self.expr_text(e);
                    self.error(format!("broadcast of vector type {}: `{t}`", value.dtype()));
                }
            }
            Expr::Reduce(r) => {
                let t = self.expr_text(e);
                self.error(format!("reduction `{t}` left in TIR (schedule_ops replaces them)"));
                for ax in &r.axes {
                    self.check_expr(&ax.dom.min);
                    self.check_expr(&ax.dom.extent);
                }
                for ax in &r.axes {
                    self.bind(&ax.var, "reduction axis");
                }
                self.check_expr(&r.source);
                for ax in &r.axes {
                    scope_remove(&mut self.vars, &ax.var);
                }
            }
            Expr::Check { value, kind, .. } => {
                self.check_expr(value);
                let d = value.dtype();
                match kind {
                    CheckKind::Index { extent } => {
                        self.check_expr(extent);
                        self.check_integer(extent, "checked index extent");
                        if d.element() != DType::I64 {
                            let t = self.expr_text(e);
                            self.error(format!("checked index of type {d}, expected i64: `{t}`"));
                        }
                    }
                    CheckKind::Divisor if !d.is_integer() => {
                        let t = self.expr_text(e);
                        self.error(format!("checked divisor of type {d}, expected an integer: `{t}`"));
                    }
                    CheckKind::Divisor => {}
                }
            }
        }
    }

    /// Reports operands of `op` (in `e`) whose types differ.
    fn check_same(&mut self, e: &Expr, op: &str, a: &Expr, b: &Expr) {
        let (da, db) = (a.dtype(), b.dtype());
        if da != db {
            let t = self.expr_text(e);
            self.error(format!("operands of `{op}` have different types {da} and {db}: `{t}`"));
        }
    }

    fn check_bool(&mut self, e: &Expr, op: &str, a: &Expr) {
        if !a.dtype().is_bool() {
            let t = self.expr_text(e);
            self.error(format!("operand of `{op}` has type {}, expected bool: `{t}`", a.dtype()));
        }
    }
}

/// `text`, cut to at most 100 characters.
fn brief(text: String) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX - 3).collect();
        format!("{cut}...")
    }
}

/// The loop and `let` variables the host body defines (a kernel may take them as
/// arguments when it is launched inside a host loop).
fn host_defined_vars(s: &Stmt) -> Vec<Var> {
    struct D(Vec<Var>);
    impl crate::tir::visit::Visitor for D {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { var, .. } | Stmt::Let { var, .. } = s {
                self.0.push(var.clone());
            }
            crate::tir::visit::walk_stmt(self, s)
        }
    }
    let mut d = D(Vec::new());
    crate::tir::visit::Visitor::visit_stmt(&mut d, s);
    d.0
}
