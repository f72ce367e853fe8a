//! A deterministic, TVMScript-like printer for TIR functions, statements and expressions
//! (tensor-expression graphs print through it too: `te::print_graph`).
//!
//! The output never shows `VarId`s, `BufferId`s or addresses. A variable prints as its
//! name; when two different variables with the same name appear in one printed unit, the
//! second to appear becomes `name_1`, the third `name_2`, and so on (buffers and tensors
//! likewise, each in their own namespace). Names are given in the order the printer meets
//! them, so the same structure always prints byte for byte the same, however many
//! variables were made before it.
//!
//! ```text
//! @func cpu vector_add(a: f32[n] global, b: f32[n] global, c: f32[n] global out)
//!   for i_o in parallel(0, (n + 15) / 16):
//!     for i_i in vectorized(0, 16):
//!       if i_o * 16 + i_i < n:
//!         c[i_o * 16 + i_i] = a[i_o * 16 + i_i] + b[i_o * 16 + i_i]
//! ```
//!
//! `let` and `alloc` scope over the statements printed after them at the same
//! indentation. Where that would be ambiguous (a `let` or `alloc` followed by statements
//! outside its body), the printer ends its line with `:` and indents the body instead.
//!
//! The text says everything `tir::parser` needs to read the function back (printing the
//! parsed function gives the same text), without repeating what the context says:
//! - A literal's type is the one its place implies: the other operand's (`x + 1` with
//!   `x: i32`), the stored buffer's, else `i64` for an integer and `f32` for a float. A
//!   literal of another type carries it as a suffix (`1i32`, `0.5f64`, `inff64`); see
//!   [`Printer::typed_expr`].
//! - A loop, thread or kernel index variable of a type other than `i64` is declared with
//!   it (`for i: i32 in serial(0, n):`); a `let` variable has its value's type.
//! - `realize` and `alloc` name the element type; a function with bounds or divisor
//!   checks ends with one `@check` line per site (what the site's error names).

use super::expr::*;
use super::stmt::*;
use crate::dtype::DType;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;

const INDENT: &str = "  ";

/// Prints a whole function: the signature, the (host) body and, on GPU targets, every
/// kernel. Ends with a newline.
pub fn print_func(f: &PrimFunc) -> String {
    Printer::new().func(f)
}

/// Prints a statement, one line per nested statement, without a trailing newline.
pub fn print_stmt(s: &Stmt) -> String {
    Printer::new().stmt(s)
}

/// Prints an expression on one line. Tensor reads print as `t{id}[...]` (there is no
/// graph to take names from).
pub fn print_expr(e: &Expr) -> String {
    Printer::new().expr(e)
}

impl fmt::Display for PrimFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_func(self))
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_stmt(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_expr(self))
    }
}

/// Gives each key (a variable, buffer or tensor identity) a printed name that no other
/// key of the unit has, in order of first request.
struct Namer<K> {
    names: HashMap<K, String>,
    taken: HashSet<String>,
    /// The last suffix tried for each base name.
    suffixes: HashMap<String, usize>,
    /// The base name of keys whose name is empty.
    fallback: &'static str,
}

impl<K: Hash + Eq + Copy> Namer<K> {
    fn new(fallback: &'static str) -> Namer<K> {
        Namer { names: HashMap::new(), taken: HashSet::new(), suffixes: HashMap::new(), fallback }
    }

    fn name(&mut self, key: K, base: &str) -> String {
        if let Some(n) = self.names.get(&key) {
            return n.clone();
        }
        let base = if base.is_empty() { self.fallback } else { base };
        let mut name = base.to_string();
        if self.taken.contains(&name) {
            let n = self.suffixes.entry(base.to_string()).or_insert(0);
            loop {
                *n += 1;
                let candidate = format!("{base}_{n}");
                if !self.taken.contains(&candidate) {
                    name = candidate;
                    break;
                }
            }
        }
        self.taken.insert(name.clone());
        self.names.insert(key, name.clone());
        name
    }
}

/// The printer behind the `print_*` functions, for callers that print several pieces of
/// one unit and want the names to agree (the verifier prints the whole function first,
/// then single statements of it in its messages).
pub struct Printer<'a> {
    /// The names of tensors, by `TensorId` (a graph's), for tensor reads.
    tensor_names: Option<&'a [String]>,
    /// The kernels `Stmt::Launch` refers to.
    kernels: &'a [Kernel],
    vars: Namer<VarId>,
    buffers: Namer<BufferId>,
    tensors: Namer<TensorId>,
    /// Lines written by `func` so far (the line the next one gets).
    line_no: usize,
    /// The line ranges of loops, thread bindings and stores, in print order.
    spans: Vec<LineSpan>,
}

/// The TIR node a range of printed lines came from: printers record these as they write
/// (TIR, C and Rust alike), so tools link source, TIR and generated code without
/// matching text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeRef {
    /// A `for` loop, by its variable.
    Loop(VarId),
    /// A thread binding (`bind v = threadIdx.x`), by its launch dimension.
    Bind(ThreadTag),
    /// A store to a buffer.
    Store(BufferId),
}

/// Lines `first..=last` (0-based) of a printed text are `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    pub node: NodeRef,
    pub first: usize,
    pub last: usize,
}

/// [`print_func`] and the line range of every loop, thread binding and store in it.
pub fn print_func_spans(f: &PrimFunc) -> (String, Vec<LineSpan>) {
    let mut p = Printer::new();
    let text = p.func(f);
    (text, p.spans)
}

impl Default for Printer<'_> {
    fn default() -> Self {
        Printer::new()
    }
}

/// Binding strength of an expression's outermost operator; an operand whose strength is
/// below what its position needs is parenthesized.
mod prec {
    pub const OR: u8 = 1;
    pub const AND: u8 = 2;
    pub const CMP: u8 = 3;
    pub const ADD: u8 = 4;
    pub const MUL: u8 = 5;
    /// `-x`, `!x` and negative literals.
    pub const UNARY: u8 = 6;
    /// Names, literals, calls, loads.
    pub const ATOM: u8 = 7;
}

fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Or(..) => prec::OR,
        Expr::And(..) => prec::AND,
        Expr::Cmp { .. } => prec::CMP,
        Expr::Binary { op: BinOp::Add | BinOp::Sub, .. } => prec::ADD,
        Expr::Binary { op: BinOp::Mul | BinOp::Div | BinOp::Mod, .. } => prec::MUL,
        Expr::Neg(_) | Expr::Not(_) => prec::UNARY,
        Expr::Int { value, dtype } if *value < 0 && !(dtype.is_uint() && dtype.bits == 64) => prec::UNARY,
        Expr::Float { value, .. } if value.is_sign_negative() && !value.is_nan() => prec::UNARY,
        _ => prec::ATOM,
    }
}

/// The type a literal without a suffix has where the context says `want` (the parser's
/// rule): `want` itself when it is a scalar of the literal's kind, else `i64` for an
/// integer and `f32` for a float.
pub fn literal_type(want: Option<DType>, float: bool) -> DType {
    match want {
        Some(w) if w.is_scalar() && (if float { w.is_float() } else { w.is_integer() }) => w,
        _ if float => DType::F32,
        _ => DType::I64,
    }
}

/// The text of an integer or float constant (empty for anything else), with its type as
/// a suffix when that is not the type the context `want` gives it.
fn literal_text(e: &Expr, want: Option<DType>) -> String {
    let (text, dtype) = match e {
        Expr::Int { value, dtype } => (int_text(*value, *dtype), *dtype),
        Expr::Float { value, dtype } => (float_text(*value, *dtype), *dtype),
        _ => return String::new(),
    };
    if dtype == literal_type(want, dtype.is_float()) {
        text
    } else {
        format!("{text}{dtype}")
    }
}

/// Whether the parser knows the type of `e` from `e` alone (from its variables, buffers,
/// casts and comparisons), not only from where it stands: everything but a literal and
/// the nodes built of nothing else.
fn synthesized(e: &Expr) -> bool {
    match e {
        Expr::Int { .. } | Expr::Float { .. } => false,
        Expr::Neg(a) | Expr::Not(a) => synthesized(a),
        Expr::Binary { a, b, .. } | Expr::And(a, b) | Expr::Or(a, b) => synthesized(a) || synthesized(b),
        Expr::Select { then, otherwise, .. } => synthesized(then) || synthesized(otherwise),
        Expr::Call { args, .. } => args.iter().any(synthesized),
        Expr::Ramp { base, stride, .. } => synthesized(base) || synthesized(stride),
        Expr::Broadcast { value, .. } | Expr::Check { value, .. } => synthesized(value),
        Expr::Bool(_)
        | Expr::Var(_)
        | Expr::Cmp { .. }
        | Expr::Cast { .. }
        | Expr::Load { .. }
        | Expr::ProducerLoad { .. }
        | Expr::Reduce(_) => true,
    }
}

/// The type the operands of a node whose operands share one type (`a` and `b`) are
/// known by where the node stands (`want`) or from either operand.
fn shared_want(a: &Expr, b: &Expr, want: Option<DType>) -> Option<DType> {
    (want.is_some() || synthesized(a) || synthesized(b)).then(|| a.dtype())
}

fn int_text(value: i64, dtype: DType) -> String {
    if dtype.is_uint() && dtype.bits == 64 {
        // The bits of a u64 are stored as an i64.
        (value as u64).to_string()
    } else {
        value.to_string()
    }
}

/// The shortest decimal text that reads back as the same value of `dtype` (`1.0`,
/// `1e-5`, `inf`). f16 and bf16 values print as their f32 text, which also reads back.
fn float_text(value: f64, dtype: DType) -> String {
    if value.is_nan() {
        "nan".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if dtype.bits == 64 {
        format!("{value:?}")
    } else {
        format!("{:?}", value as f32)
    }
}

/// `parts` comma-separated.
pub fn join(parts: Vec<String>) -> String {
    parts.join(", ")
}

impl<'a> Printer<'a> {
    pub fn new() -> Printer<'a> {
        Printer {
            tensor_names: None,
            kernels: &[],
            vars: Namer::new("v"),
            buffers: Namer::new("buf"),
            tensors: Namer::new("t"),
            line_no: 0,
            spans: Vec::new(),
        }
    }

    /// A printer that names tensor reads after `names` (indexed by `TensorId`).
    pub fn with_tensor_names(names: &'a [String]) -> Printer<'a> {
        Printer { tensor_names: Some(names), ..Printer::new() }
    }

    /// The printed name of `v` in this unit.
    pub fn var(&mut self, v: &Var) -> String {
        self.vars.name(v.id(), v.name())
    }

    /// The printed name of `b` in this unit.
    pub fn buffer(&mut self, b: &Buffer) -> String {
        self.buffers.name(b.id(), b.name())
    }

    /// The printed name of tensor `t`: its given name, or `t{id}` without names.
    pub fn tensor(&mut self, t: TensorId) -> String {
        match self.tensor_names.and_then(|n| n.get(t.0 as usize)) {
            Some(name) => self.tensors.name(t, name),
            None => format!("t{}", t.0),
        }
    }

    /// Prints an expression on one line.
    pub fn expr(&mut self, e: &Expr) -> String {
        let mut out = String::new();
        self.write_expr(e, None, &mut out);
        out
    }

    /// Prints an expression where the reader expects a value of type `ty` (a store's
    /// value, a tensor's body): a literal of that type needs no suffix.
    pub fn typed_expr(&mut self, e: &Expr, ty: DType) -> String {
        let mut out = String::new();
        self.write_expr(e, Some(ty), &mut out);
        out
    }

    /// A binder's variable: its name, with its type unless that is `i64`.
    fn binder(&mut self, v: &Var) -> String {
        let name = self.var(v);
        if v.dtype() == DType::I64 {
            name
        } else {
            format!("{name}: {}", v.dtype())
        }
    }

    /// Prints a statement, one line per nested statement, without a trailing newline.
    pub fn stmt(&mut self, s: &Stmt) -> String {
        let mut out = String::new();
        self.block(s, 0, false, &mut out);
        out.truncate(out.trim_end_matches('\n').len());
        out
    }

    /// The first line of a statement's printed form: the whole statement for a store or a
    /// barrier, the header (`for i in serial(0, n):`) for a statement with a body.
    pub fn stmt_header(&mut self, s: &Stmt) -> String {
        match s {
            Stmt::Seq(ss) if ss.is_empty() => "noop".to_string(),
            Stmt::Seq(ss) => format!("{} (and {} more)", self.stmt_header(&ss[0]), ss.len() - 1),
            Stmt::For { var, min, extent, kind, .. } => {
                let v = self.binder(var);
                format!("for {v} in {}({}, {}):", kind.name(), self.expr(min), self.expr(extent))
            }
            Stmt::ThreadBinding { tag, var, extent, .. } => {
                let v = self.binder(var);
                format!("bind {v} = {} in 0..{}:", tag.name(), self.expr(extent))
            }
            Stmt::If { cond, .. } => format!("if {}:", self.expr(cond)),
            Stmt::Let { var, value, .. } => {
                let v = self.var(var);
                format!("let {v} = {}", self.expr(value))
            }
            Stmt::Store { buffer, indices, value } => {
                let b = self.buffer(buffer);
                let idx = self.exprs(indices);
                let lanes = indices.last().map_or(1, |i| i.dtype().lanes);
                format!("{b}[{idx}] = {}", self.typed_expr(value, buffer.dtype().with_lanes(lanes)))
            }
            Stmt::Prefetch { buffer, indices } => {
                let b = self.buffer(buffer);
                format!("prefetch {b}[{}]", self.exprs(indices))
            }
            Stmt::Realize { buffer, bounds, .. } => {
                let b = self.buffer(buffer);
                let bounds: Vec<String> =
                    bounds.iter().map(|r| format!("{}:{}", self.expr(&r.min), self.expr(&r.extent))).collect();
                format!("realize {b}: {}[{}] {}:", buffer.dtype(), join(bounds), buffer.scope().name())
            }
            Stmt::Allocate { buffer, extent, .. } => {
                let b = self.buffer(buffer);
                format!("alloc {b}: {}[{}] {}", buffer.dtype(), self.expr(extent), buffer.scope().name())
            }
            Stmt::Barrier => "barrier()".to_string(),
            Stmt::WarpReduce { op, buffer, width } => {
                format!("warp_reduce({}, {}, width={width})", op.name(), self.buffer(buffer))
            }
            Stmt::Launch { kernel } => self.launch(*kernel),
            Stmt::NoOp => "noop".to_string(),
        }
    }

    /// Prints a whole function: the signature, the (host) body and each kernel.
    pub fn func(&mut self, f: &'a PrimFunc) -> String {
        self.kernels = &f.kernels;
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| match p {
                Param::Tensor { buffer, shape, is_output } => {
                    let b = self.buffer(buffer);
                    let shape = self.exprs(shape);
                    let out = if *is_output { " out" } else { "" };
                    format!("{b}: {}[{shape}] {}{out}", buffer.dtype(), buffer.scope().name())
                }
                Param::Scalar(v) => format!("{}: {}", self.var(v), v.dtype()),
            })
            .collect();
        let mut out = format!("@func {} {}({})\n", f.target.kind.name(), f.name, join(params));
        self.line_no = 1;
        self.block(&f.body, 1, false, &mut out);
        for k in &f.kernels {
            let mut args: Vec<String> = k.buffer_args.iter().map(|b| self.buffer(b)).collect();
            args.extend(k.scalar_args.iter().map(|v| self.var(v)));
            out.push_str(&format!("\n@kernel {}({})\n", k.name, join(args)));
            self.line_no += 2;
            for (tag, v) in &k.thread_vars {
                let v = self.binder(v);
                out.push_str(&format!("{INDENT}{}: {v}\n", tag.name()));
                self.spans.push(LineSpan { node: NodeRef::Bind(*tag), first: self.line_no, last: self.line_no });
                self.line_no += 1;
            }
            self.block(&k.body, 1, false, &mut out);
        }
        if !f.checks.is_empty() {
            out.push('\n');
            for (site, c) in f.checks.iter().enumerate() {
                let what = match c {
                    CheckSite::Index { tensor, dim, index } => format!("index({tensor:?}, {dim}, {index:?})"),
                    CheckSite::Divisor { divisor } => format!("divisor({divisor:?})"),
                };
                out.push_str(&format!("@check {site} {what}\n"));
            }
        }
        out
    }

    /// Expressions, comma-separated.
    pub fn exprs(&mut self, es: &[Expr]) -> String {
        let parts: Vec<String> = es.iter().map(|e| self.expr(e)).collect();
        join(parts)
    }

    fn launch(&mut self, index: usize) -> String {
        let kernels = self.kernels;
        let Some(k) = kernels.get(index) else { return format!("launch kernel {index}") };
        let grid = self.exprs(&k.grid);
        let block = self.exprs(&k.block);
        let mut args: Vec<String> = k.buffer_args.iter().map(|b| self.buffer(b)).collect();
        args.extend(k.scalar_args.iter().map(|v| self.var(v)));
        format!("launch {}<<<grid({grid}), block({block})>>>({})", k.name, join(args))
    }

    fn line(&mut self, depth: usize, text: &str, out: &mut String) {
        for _ in 0..depth {
            out.push_str(INDENT);
        }
        out.push_str(text);
        out.push('\n');
        self.line_no += 1;
    }

    /// Prints `s` at `depth`. `followed` says whether statements outside `s` are printed
    /// after it at the same depth, in which case a `let` or `alloc` indents its body.
    fn block(&mut self, s: &Stmt, depth: usize, followed: bool, out: &mut String) {
        match s {
            Stmt::Seq(ss) if ss.is_empty() => self.line(depth, "noop", out),
            Stmt::Seq(ss) => {
                for (i, s) in ss.iter().enumerate() {
                    self.block(s, depth, followed || i + 1 < ss.len(), out);
                }
            }
            Stmt::For { body, .. } | Stmt::ThreadBinding { body, .. } | Stmt::Realize { body, .. } => {
                let h = self.stmt_header(s);
                let first = self.line_no;
                self.line(depth, &h, out);
                self.block(body, depth + 1, false, out);
                let node = match s {
                    Stmt::For { var, .. } => Some(NodeRef::Loop(var.id())),
                    Stmt::ThreadBinding { tag, .. } => Some(NodeRef::Bind(*tag)),
                    _ => None,
                };
                if let Some(node) = node {
                    self.spans.push(LineSpan { node, first, last: self.line_no - 1 });
                }
            }
            Stmt::If { then, otherwise, .. } => {
                let h = self.stmt_header(s);
                self.line(depth, &h, out);
                self.block(then, depth + 1, false, out);
                if let Some(o) = otherwise {
                    self.line(depth, "else:", out);
                    self.block(o, depth + 1, false, out);
                }
            }
            Stmt::Let { body, .. } | Stmt::Allocate { body, .. } => {
                let h = self.stmt_header(s);
                if followed {
                    self.line(depth, &format!("{h}:"), out);
                    self.block(body, depth + 1, false, out);
                } else {
                    self.line(depth, &h, out);
                    self.block(body, depth, false, out);
                }
            }
            Stmt::Store { .. }
            | Stmt::Prefetch { .. }
            | Stmt::Barrier
            | Stmt::WarpReduce { .. }
            | Stmt::Launch { .. }
            | Stmt::NoOp => {
                let h = self.stmt_header(s);
                if let Stmt::Store { buffer, .. } = s {
                    self.spans.push(LineSpan {
                        node: NodeRef::Store(buffer.id()),
                        first: self.line_no,
                        last: self.line_no,
                    });
                }
                self.line(depth, &h, out);
            }
        }
    }

    /// Writes `e` (of the type `want` where the context says so), in parentheses if it
    /// binds less tightly than `min`.
    fn operand(&mut self, e: &Expr, want: Option<DType>, min: u8, out: &mut String) {
        if precedence(e) < min {
            out.push('(');
            self.write_expr(e, want, out);
            out.push(')');
        } else {
            self.write_expr(e, want, out);
        }
    }

    /// Writes `a op b` for a left-associative operator of precedence `p`.
    fn infix(&mut self, a: &Expr, op: &str, b: &Expr, want: Option<DType>, p: u8, out: &mut String) {
        self.operand(a, want, p, out);
        out.push_str(&format!(" {op} "));
        self.operand(b, want, p + 1, out);
    }

    /// Writes `name(args...)`, each argument with the type its context gives it.
    fn call(&mut self, name: &str, args: &[(&Expr, Option<DType>)], out: &mut String) {
        out.push_str(name);
        out.push('(');
        for (i, (a, want)) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.write_expr(a, *want, out);
        }
        out.push(')');
    }

    /// Writes `e`; `want` is its type where the reader knows it from the context (see
    /// [`literal_type`]), `None` where it does not.
    fn write_expr(&mut self, e: &Expr, want: Option<DType>, out: &mut String) {
        match e {
            Expr::Int { .. } | Expr::Float { .. } => out.push_str(&literal_text(e, want)),
            Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Expr::Var(v) => {
                let n = self.var(v);
                out.push_str(&n)
            }
            Expr::Binary { op: op @ (BinOp::Min | BinOp::Max), a, b } => {
                let w = shared_want(a, b, want);
                self.call(op.symbol(), &[(a, w), (b, w)], out)
            }
            Expr::Binary { op, a, b } => {
                let p = if matches!(op, BinOp::Add | BinOp::Sub) { prec::ADD } else { prec::MUL };
                self.infix(a, op.symbol(), b, shared_want(a, b, want), p, out)
            }
            Expr::Cmp { op, a, b } => {
                // Comparisons do not chain: both sides bind more tightly.
                let w = shared_want(a, b, None);
                self.operand(a, w, prec::CMP + 1, out);
                out.push_str(&format!(" {} ", op.symbol()));
                self.operand(b, w, prec::CMP + 1, out);
            }
            Expr::And(a, b) => self.infix(a, "&&", b, shared_want(a, b, want), prec::AND, out),
            Expr::Or(a, b) => self.infix(a, "||", b, shared_want(a, b, want), prec::OR, out),
            Expr::Not(a) => {
                out.push('!');
                self.operand(a, want, prec::ATOM, out)
            }
            Expr::Neg(a) => {
                out.push('-');
                self.operand(a, want, prec::ATOM, out)
            }
            Expr::Select { cond, then, otherwise } => {
                let w = shared_want(then, otherwise, want);
                self.call("select", &[(cond, None), (then, w), (otherwise, w)], out)
            }
            Expr::Cast { dtype, value } => self.call(&dtype.to_string(), &[(value, None)], out),
            Expr::Call { func, args } => {
                let known = want.is_some() || args.iter().any(synthesized);
                let w = known.then(|| e.dtype());
                let args: Vec<(&Expr, Option<DType>)> = args.iter().map(|a| (a, w)).collect();
                self.call(func.name(), &args, out)
            }
            Expr::ProducerLoad { tensor, indices, .. } => {
                let t = self.tensor(*tensor);
                out.push_str(&format!("{t}[{}]", self.exprs(indices)))
            }
            Expr::Load { buffer, indices } => {
                let b = self.buffer(buffer);
                out.push_str(&format!("{b}[{}]", self.exprs(indices)))
            }
            Expr::Ramp { base, stride, lanes } => {
                let lanes = Expr::int(*lanes as i64);
                let w = shared_want(base, stride, want);
                self.call("ramp", &[(base, w), (stride, w), (&lanes, None)], out)
            }
            Expr::Broadcast { value, lanes } => {
                let lanes = Expr::int(*lanes as i64);
                let w = want.map(|_| value.dtype());
                self.call("broadcast", &[(value, w), (&lanes, None)], out)
            }
            Expr::Reduce(r) => {
                // `reduce((e, f) for k in .., (id0, id1), |(a0, a1), (b0, b1)| (c0, c1))[index]`
                // for a combiner of the kernel's own.
                let list = |p: &mut Self, xs: &[Expr], out: &mut String| {
                    if xs.len() != 1 {
                        out.push('(');
                    }
                    for (i, x) in xs.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        p.write_expr(x, None, out);
                    }
                    if xs.len() != 1 {
                        out.push(')');
                    }
                };
                match &r.tuple {
                    Some(t) => {
                        out.push_str("reduce(");
                        list(self, &t.sources, out);
                    }
                    None => {
                        out.push_str(r.op.name());
                        out.push('(');
                        self.write_expr(&r.source, want, out);
                    }
                }
                for (i, ax) in r.axes.iter().enumerate() {
                    out.push_str(if i == 0 { " for " } else { ", " });
                    let v = self.var(&ax.var);
                    out.push_str(&format!("{v} in {}", self.range(&ax.dom)));
                }
                if let Some(t) = &r.tuple {
                    out.push_str(", ");
                    list(self, &t.identity, out);
                    let params = |p: &mut Self, vs: &[Var]| {
                        let names: Vec<String> = vs.iter().map(|v| p.var(v)).collect();
                        if names.len() == 1 {
                            names[0].clone()
                        } else {
                            format!("({})", names.join(", "))
                        }
                    };
                    let (a, b) = (params(self, &t.lhs), params(self, &t.rhs));
                    out.push_str(&format!(", |{a}, {b}| "));
                    list(self, &t.combine, out);
                    out.push(')');
                    if t.sources.len() > 1 {
                        out.push_str(&format!("[{}]", t.index));
                    }
                } else {
                    out.push(')');
                }
            }
            // `check_index(v, extent, #site)`, `check_divisor(v, #site)`.
            Expr::Check { value, kind, site } => {
                let site = Expr::int(*site as i64);
                match kind {
                    CheckKind::Index { extent } => {
                        self.call("check_index", &[(value, None), (extent, None), (&site, None)], out)
                    }
                    CheckKind::Divisor => self.call("check_divisor", &[(value, want), (&site, None)], out),
                }
            }
        }
    }

    /// `min..end` for a domain: `0..K`, `2..10`, `m..m + K`.
    fn range(&mut self, r: &Range) -> String {
        let min = self.expr(&r.min);
        let end = match (r.min.as_int(), r.extent.as_int()) {
            (Some(0), _) => self.expr(&r.extent),
            (Some(m), Some(e)) => m.wrapping_add(e).to_string(),
            _ => {
                let end = Expr::Binary { op: BinOp::Add, a: Box::new(r.min.clone()), b: Box::new(r.extent.clone()) };
                self.expr(&end)
            }
        };
        format!("{min}..{end}")
    }
}
