//! A printer of device kernels as C-like source, shared by the GPU dialects (OpenCL C,
//! CUDA C). The [`Dialect`] trait holds what differs between them: qualifiers, thread
//! indices, barriers, vector types and math function names.
//!
//! Semantics kept from TIR: `Select` stays lazy (C's `?:`), float-to-integer casts
//! saturate (NaN to 0) where the dialect can say so, float literals are printed exactly
//! (shortest round-trip decimal), index arithmetic is 64-bit. Integer division by zero
//! and signed overflow are left to C.

use super::CodegenError;
use crate::dtype::{DType, ScalarKind};
use crate::tir::visit::{walk_stmt, Visitor};
use crate::tir::{BinOp, Buffer, Expr, Intrinsic, Kernel, Scope, Stmt, ThreadTag, Var, VarId};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// What differs between C-like GPU dialects.
pub trait Dialect {
    /// Printed before `void` of a kernel (`__kernel`, `extern "C" __global__`).
    fn kernel_qualifier(&self) -> &'static str;
    /// The type of a global buffer parameter with element type `elem` (already spelled).
    fn global_param(&self, elem: &str, name: &str) -> String;
    /// The qualifier of a block-shared array declaration (`__local`, `__shared__`).
    fn shared_qualifier(&self) -> &'static str;
    /// The statement of a block barrier, without `;`.
    fn barrier(&self) -> &'static str;
    /// The expression of a launch index, as a 64-bit signed integer.
    fn thread_index(&self, tag: ThreadTag) -> String;
    /// The attribute stating the block shape when it is constant, placed between the
    /// kernel qualifier and `void`; `None` when the dialect has none.
    fn work_group_size_attr(&self, block: [i64; 3]) -> Option<String>;
    /// The name of a scalar type, or `None` when the dialect lacks it.
    fn scalar_type(&self, d: DType) -> Option<String>;
    /// The name of a vector type of `lanes` lanes of `elem`, or `None` (then vectors
    /// are printed lane by lane).
    fn vector_type(&self, elem: DType, lanes: u16) -> Option<String>;
    /// A contiguous vector load `ptr[base .. base + lanes]`, if the dialect has one.
    fn vector_load(&self, ty: &str, lanes: u16, ptr: &str, base: &str) -> Option<String>;
    /// A contiguous vector store statement (without `;`), if the dialect has one.
    fn vector_store(&self, lanes: u16, value: &str, ptr: &str, base: &str) -> Option<String>;
    /// A vector built from scalar lanes (already printed).
    fn vector_make(&self, ty: &str, lanes: &[String]) -> String;
    /// A vector with `value` in every lane.
    fn vector_splat(&self, ty: &str, value: &str) -> String;
    /// Lane `i` of a vector-typed variable.
    fn vector_lane(&self, var: &str, i: u16) -> String;
    /// The function computing `f` on `d` (floats; `Abs` also on integers), without the
    /// sigmoid (printed as `1 / (1 + exp(-x))`).
    fn math_function(&self, f: Intrinsic, d: DType) -> String;
    /// `fmin`/`fmax` of floats, `min`/`max` of integers.
    fn min_max(&self, is_max: bool, d: DType) -> String;
    /// A saturating float-to-integer conversion of `x` to `to`, if the dialect has one.
    fn saturating_cast(&self, to: &str, x: &str) -> Option<String>;
}

/// Identifiers no variable may take.
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "half",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "kernel",
    "global",
    "local",
    "constant",
    "private",
    "read_only",
    "write_only",
    "read_write",
    "true",
    "false",
    "min",
    "max",
    "exp",
    "log",
    "sqrt",
    "pow",
    "select",
    "abs",
    "sin",
    "cos",
    "tanh",
    "erf",
    "floor",
    "ceil",
    "fma",
    "fmin",
    "fmax",
    "fabs",
    "rsqrt",
    "barrier",
    "vector",
    "image1d_t",
    "image2d_t",
    "image3d_t",
    "sampler_t",
    "event_t",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "this",
    "new",
    "delete",
    "class",
    "template",
    "typename",
    "namespace",
    "using",
    "operator",
    "INFINITY",
    "NAN",
];

/// Unique C identifiers for variables and buffers of one kernel.
#[derive(Default)]
struct Names {
    taken: HashSet<String>,
    vars: HashMap<VarId, String>,
    buffers: HashMap<crate::tir::BufferId, String>,
}

impl Names {
    fn fresh(&mut self, hint: &str) -> String {
        let mut base: String =
            hint.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base = format!("v_{base}");
        }
        if base.starts_with("__") || base.starts_with("get_") || base.starts_with("convert_") {
            base = format!("v{base}");
        }
        if RESERVED.contains(&base.as_str()) {
            base.push('_');
        }
        let mut name = base.clone();
        let mut k = 1;
        while self.taken.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.taken.insert(name.clone());
        name
    }
    fn bind_var(&mut self, v: &Var) -> String {
        let n = self.fresh(v.name());
        self.vars.insert(v.id(), n.clone());
        n
    }
    fn bind_buffer(&mut self, b: &Buffer) -> String {
        let n = self.fresh(b.name());
        self.buffers.insert(b.id(), n.clone());
        n
    }
}

/// Which optional language features the printed code uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    pub f64: bool,
    pub f16: bool,
}

/// Prints kernels in one dialect, recording which features they need.
pub struct CPrinter<'d, D: Dialect + ?Sized> {
    pub dialect: &'d D,
    pub uses: Uses,
    names: Names,
    out: String,
    indent: usize,
}

fn unsupported(what: impl Into<String>) -> CodegenError {
    CodegenError::Unsupported { what: what.into() }
}

type R<T> = Result<T, CodegenError>;

impl<'d, D: Dialect + ?Sized> CPrinter<'d, D> {
    pub fn new(dialect: &'d D) -> Self {
        CPrinter { dialect, uses: Uses::default(), names: Names::default(), out: String::new(), indent: 0 }
    }

    /// The spelling of a scalar type (bool buffers and parameters use `uchar` instead:
    /// see [`CPrinter::storage_type`]).
    pub fn type_name(&mut self, d: DType) -> R<String> {
        let e = d.element();
        if e.kind == ScalarKind::Float && e.bits == 64 {
            self.uses.f64 = true;
        }
        if e.kind == ScalarKind::Float && e.bits == 16 {
            self.uses.f16 = true;
        }
        if d.lanes > 1 {
            return self.dialect.vector_type(e, d.lanes).ok_or_else(|| unsupported(format!("vectors of type {d}")));
        }
        self.dialect.scalar_type(e).ok_or_else(|| unsupported(format!("the type {d}")))
    }

    /// The element type of memory (buffers, parameters): `bool` is stored as one byte.
    pub fn storage_type(&mut self, d: DType) -> R<String> {
        if d.is_bool() {
            self.type_name(DType::U8)
        } else {
            self.type_name(d.element())
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Prints one kernel and returns its text.
    pub fn kernel(&mut self, k: &Kernel) -> R<String> {
        self.names = Names::default();
        self.out.clear();
        self.indent = 0;
        let mut params = Vec::new();
        for b in &k.buffer_args {
            let n = self.names.bind_buffer(b);
            let t = self.storage_type(b.dtype())?;
            params.push(self.dialect.global_param(&t, &n));
        }
        for v in &k.scalar_args {
            let n = self.names.bind_var(v);
            let t = self.storage_type(v.dtype())?;
            params.push(format!("{t} {n}"));
        }
        let attr = match (k.block[0].as_int(), k.block[1].as_int(), k.block[2].as_int()) {
            (Some(x), Some(y), Some(z)) => self.dialect.work_group_size_attr([x, y, z]),
            _ => None,
        };
        let attr = attr.map(|a| format!(" {a}")).unwrap_or_default();
        let head = format!("{}{attr} void {}({}) {{", self.dialect.kernel_qualifier(), k.name, params.join(", "));
        self.line(&head);
        self.indent += 1;
        for (tag, v) in &k.thread_vars {
            let n = self.names.bind_var(v);
            let t = self.type_name(v.dtype())?;
            let idx = self.dialect.thread_index(*tag);
            self.line(&format!("{t} {n} = ({t})({idx});"));
        }
        // Shared arrays live at kernel scope.
        for (b, extent) in collect_shared(&k.body) {
            let n = extent
                .as_int()
                .ok_or_else(|| unsupported(format!("shared allocation `{}` of non-constant size", b.name())))?;
            let name = self.names.bind_buffer(&b);
            let t = self.storage_type(b.dtype())?;
            let q = self.dialect.shared_qualifier();
            self.line(&format!("{q} {t} {name}[{}];", n.max(1)));
        }
        self.stmt(&k.body)?;
        self.indent -= 1;
        self.line("}");
        Ok(std::mem::take(&mut self.out))
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match s {
            Stmt::Seq(v) => {
                for s in v {
                    self.stmt(s)?;
                }
            }
            Stmt::NoOp => {}
            Stmt::For { var, min, extent, body, .. } => {
                let t = self.type_name(var.dtype())?;
                let lo = self.expr(min)?;
                let hi =
                    if min.is_const_int(0) { self.expr(extent)? } else { format!("({lo} + {})", self.expr(extent)?) };
                let n = self.names.bind_var(var);
                self.line(&format!("for ({t} {n} = {lo}; {n} < {hi}; ++{n}) {{"));
                self.block(body)?;
            }
            Stmt::ThreadBinding { tag, .. } => {
                return Err(unsupported(format!("a thread binding ({}) inside a kernel", tag.name())))
            }
            Stmt::If { cond, then, otherwise } => {
                let c = self.expr(cond)?;
                let c = if fully_parenthesized(&c) { c } else { format!("({c})") };
                self.line(&format!("if {c} {{"));
                self.indent += 1;
                self.stmt(then)?;
                self.indent -= 1;
                if let Some(o) = otherwise {
                    self.line("} else {");
                    self.block(o)?;
                } else {
                    self.line("}");
                }
            }
            Stmt::Let { var, value, body } => {
                let t = self.type_name(var.dtype())?;
                let v = self.expr(value)?;
                let n = self.names.bind_var(var);
                self.line(&format!("{t} {n} = {v};"));
                self.stmt(body)?;
            }
            Stmt::Store { buffer, indices, value } => self.store(buffer, indices, value)?,
            Stmt::Allocate { buffer, extent, body } => {
                match buffer.scope() {
                    Scope::Shared => {} // declared at kernel scope
                    Scope::Local => {
                        let n = extent.as_int().ok_or_else(|| {
                            unsupported(format!("local allocation `{}` of non-constant size", buffer.name()))
                        })?;
                        let t = self.storage_type(buffer.dtype())?;
                        let name = self.names.bind_buffer(buffer);
                        self.line(&format!("{t} {name}[{}];", n.max(1)));
                    }
                    Scope::Global => {
                        return Err(unsupported(format!("global allocation `{}` inside a kernel", buffer.name())))
                    }
                }
                self.stmt(body)?;
            }
            Stmt::Realize { .. } => return Err(unsupported("an unflattened `Realize` in a kernel")),
            Stmt::Barrier => {
                let b = self.dialect.barrier();
                self.line(&format!("{b};"));
            }
            Stmt::Launch { .. } => return Err(unsupported("a kernel launch inside a kernel")),
        }
        Ok(())
    }

    /// `body` then `}` at the current indentation.
    fn block(&mut self, body: &Stmt) -> R<()> {
        self.indent += 1;
        self.stmt(body)?;
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    fn buffer_name(&self, b: &Buffer) -> R<String> {
        self.names
            .buffers
            .get(&b.id())
            .cloned()
            .ok_or_else(|| unsupported(format!("buffer `{}` used out of scope", b.name())))
    }

    fn store(&mut self, buffer: &Buffer, indices: &[Expr], value: &Expr) -> R<()> {
        let [index] = indices else {
            return Err(unsupported(format!("a multi-dimensional store to `{}`", buffer.name())));
        };
        let name = self.buffer_name(buffer)?;
        let lanes = index.dtype().lanes;
        if lanes == 1 {
            let i = self.expr(index)?;
            let v = self.expr(value)?;
            self.line(&format!("{name}[{i}] = {v};"));
            return Ok(());
        }
        // A contiguous vector store.
        if let Expr::Ramp { base, stride, .. } = index {
            if stride.is_const_int(1) && !buffer.dtype().is_bool() && self.vector_ok(value.dtype()) {
                let b = self.expr(base)?;
                let v = self.vector_expr(value)?;
                if let Some(s) = self.dialect.vector_store(lanes, &v, &name, &b) {
                    self.line(&format!("{s};"));
                    return Ok(());
                }
            }
        }
        // Lane by lane: every lane is computed before any is written.
        let t = self.storage_type(buffer.dtype())?;
        self.line("{");
        self.indent += 1;
        let mut tmps = Vec::new();
        for l in 0..lanes {
            let v = self.lane(value, l)?;
            let tmp = self.names.fresh(&format!("{}_lane{l}", buffer.name()));
            self.line(&format!("{t} {tmp} = {v};"));
            tmps.push(tmp);
        }
        for (l, tmp) in tmps.iter().enumerate() {
            let i = self.lane(index, l as u16)?;
            self.line(&format!("{name}[{i}] = {tmp};"));
        }
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    fn vector_ok(&self, d: DType) -> bool {
        !d.is_bool() && self.dialect.vector_type(d.element(), d.lanes).is_some()
    }

    /// A scalar expression, or a vector one in the dialect's vector types.
    pub fn expr(&mut self, e: &Expr) -> R<String> {
        if e.dtype().lanes > 1 {
            return self.vector_expr(e);
        }
        self.scalar(e, None)
    }

    /// A vector expression: native vector operations where the dialect has them, else
    /// built lane by lane.
    fn vector_expr(&mut self, e: &Expr) -> R<String> {
        let d = e.dtype();
        if !self.vector_ok(d) {
            return Err(unsupported(format!("a vector of type {d} as a value")));
        }
        let ty = self.type_name(d)?;
        let native = match e {
            Expr::Load { buffer, indices } if indices.len() == 1 => match &indices[0] {
                Expr::Ramp { base, stride, lanes } if stride.is_const_int(1) => {
                    let name = self.buffer_name(buffer)?;
                    let b = self.expr(base)?;
                    self.dialect.vector_load(&ty, *lanes, &name, &b)
                }
                _ => None,
            },
            Expr::Broadcast { value, .. } => {
                let v = self.expr(value)?;
                Some(self.dialect.vector_splat(&ty, &v))
            }
            Expr::Binary { op, a, b } if !(d.is_float() && *op == BinOp::Mod) => {
                let x = self.vector_expr(a)?;
                let y = self.vector_expr(b)?;
                Some(match op {
                    BinOp::Min | BinOp::Max => {
                        format!("{}({x}, {y})", self.dialect.min_max(*op == BinOp::Max, d.element()))
                    }
                    op => format!("({x} {} {y})", op.symbol()),
                })
            }
            Expr::Neg(a) => Some(format!("(-{})", self.vector_expr(a)?)),
            Expr::Call { func, args } if d.is_float() => {
                let mut xs = Vec::new();
                for a in args {
                    xs.push(self.vector_expr(a)?);
                }
                Some(self.call(*func, d.element(), &xs)?)
            }
            Expr::Var(v) => Some(self.var_name(v)?),
            _ => None,
        };
        if let Some(s) = native {
            return Ok(s);
        }
        let mut lanes = Vec::new();
        for l in 0..d.lanes {
            lanes.push(self.lane(e, l)?);
        }
        Ok(self.dialect.vector_make(&ty, &lanes))
    }

    /// Lane `l` of `e` as a scalar expression (scalars are the same in every lane).
    fn lane(&mut self, e: &Expr, l: u16) -> R<String> {
        self.scalar(e, Some(l))
    }

    fn var_name(&self, v: &Var) -> R<String> {
        self.names
            .vars
            .get(&v.id())
            .cloned()
            .ok_or_else(|| unsupported(format!("variable `{}` used out of scope", v.name())))
    }

    fn literal_float(&mut self, value: f64, d: DType) -> R<String> {
        self.type_name(d)?;
        if value.is_nan() {
            return Ok("NAN".into());
        }
        if value.is_infinite() {
            return Ok(if value > 0.0 { "INFINITY".into() } else { "(-INFINITY)".into() });
        }
        let (text, neg) = match d.bits {
            64 => (format!("{:?}", value.abs()), value.is_sign_negative()),
            32 => (format!("{:?}f", (value as f32).abs()), value.is_sign_negative()),
            16 => {
                let t = self.type_name(d)?;
                return Ok(format!("(({t})({:?}f))", value as f32));
            }
            _ => return Err(unsupported(format!("float constants of type {d}"))),
        };
        Ok(if neg { format!("(-{text})") } else { text })
    }

    fn literal_int(&mut self, value: i64, d: DType) -> R<String> {
        let t = self.type_name(d)?;
        Ok(match (d.kind, d.bits) {
            (ScalarKind::UInt, 64) => format!("{}UL", value as u64),
            (ScalarKind::Int, 64) if value == i64::MIN => "(-9223372036854775807L - 1L)".into(),
            (ScalarKind::Int, 64) if value < 0 => format!("({value}L)"),
            (ScalarKind::Int, 64) => format!("{value}L"),
            (ScalarKind::Int, 32) if value == i32::MIN as i64 => "(-2147483647 - 1)".into(),
            (ScalarKind::Int, 32) if value < 0 => format!("({value})"),
            (ScalarKind::Int, 32) => format!("{value}"),
            (ScalarKind::UInt, 32) => format!("{}U", value as u32),
            _ => format!("(({t})({value}))"),
        })
    }

    /// A call of an intrinsic on printed arguments of element type `d`.
    fn call(&mut self, f: Intrinsic, d: DType, args: &[String]) -> R<String> {
        if f == Intrinsic::Sigmoid {
            let one = if d.is_float() { self.literal_float(1.0, d)? } else { "1".into() };
            return Ok(format!("({one} / ({one} + exp(-({}))))", args[0]));
        }
        if !d.is_float() && f != Intrinsic::Abs {
            return Err(unsupported(format!("`{}` of type {d}", f.name())));
        }
        let name = self.dialect.math_function(f, d);
        let call = format!("{name}({})", args.join(", "));
        if f == Intrinsic::Abs && d.is_int() {
            // OpenCL/C `abs` of a signed integer returns the unsigned type.
            let t = self.type_name(d)?;
            return Ok(format!("(({t})({call}))"));
        }
        if f == Intrinsic::Abs && d.is_uint() {
            return Ok(args[0].clone());
        }
        Ok(call)
    }

    /// A scalar expression; with `lane`, vector sub-expressions give that lane.
    fn scalar(&mut self, e: &Expr, lane: Option<u16>) -> R<String> {
        let lanes = e.dtype().lanes;
        let l = if lanes > 1 {
            match lane {
                Some(l) => l,
                None => return self.vector_expr(e),
            }
        } else {
            0
        };
        Ok(match e {
            Expr::Int { value, dtype } => self.literal_int(*value, *dtype)?,
            Expr::Float { value, dtype } => self.literal_float(*value, *dtype)?,
            Expr::Bool(b) => (if *b { "1" } else { "0" }).into(),
            Expr::Var(v) => {
                let n = self.var_name(v)?;
                if lanes > 1 {
                    self.dialect.vector_lane(&n, l)
                } else {
                    n
                }
            }
            Expr::Binary { op, a, b } => {
                let d = a.dtype().element();
                let x = self.scalar(a, lane)?;
                let y = self.scalar(b, lane)?;
                match op {
                    BinOp::Min | BinOp::Max => format!("{}({x}, {y})", self.dialect.min_max(*op == BinOp::Max, d)),
                    BinOp::Mod if d.is_float() => format!("fmod({x}, {y})"),
                    op => format!("({x} {} {y})", op.symbol()),
                }
            }
            Expr::Cmp { op, a, b } => {
                let x = self.scalar(a, lane)?;
                let y = self.scalar(b, lane)?;
                format!("({x} {} {y})", op.symbol())
            }
            Expr::And(a, b) => format!("({} && {})", self.scalar(a, lane)?, self.scalar(b, lane)?),
            Expr::Or(a, b) => format!("({} || {})", self.scalar(a, lane)?, self.scalar(b, lane)?),
            Expr::Not(a) => format!("(!{})", self.scalar(a, lane)?),
            Expr::Neg(a) => format!("(-{})", self.scalar(a, lane)?),
            Expr::Select { cond, then, otherwise } => {
                let c = self.scalar(cond, lane)?;
                let t = self.scalar(then, lane)?;
                let o = self.scalar(otherwise, lane)?;
                format!("({c} ? {t} : {o})")
            }
            Expr::Cast { dtype, value } => {
                let from = value.dtype().element();
                let to = dtype.element();
                let x = self.scalar(value, lane)?;
                if to.is_bool() {
                    let zero = if from.is_float() { self.literal_float(0.0, from)? } else { "0".into() };
                    format!("({x} != {zero})")
                } else {
                    let t = self.type_name(to)?;
                    if from.is_float() && to.is_integer() {
                        match self.dialect.saturating_cast(&t, &x) {
                            Some(s) => s,
                            None => format!("(({t})({x}))"),
                        }
                    } else {
                        format!("(({t})({x}))")
                    }
                }
            }
            Expr::Call { func, args } => {
                let d = args[0].dtype().element();
                let mut xs = Vec::new();
                for a in args {
                    xs.push(self.scalar(a, lane)?);
                }
                self.call(*func, d, &xs)?
            }
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported(format!("a multi-dimensional load of `{}`", buffer.name())));
                };
                let name = self.buffer_name(buffer)?;
                let i = self.scalar(index, lane)?;
                format!("{name}[{i}]")
            }
            Expr::Ramp { base, stride, .. } => {
                let b = self.scalar(base, lane)?;
                if l == 0 {
                    b
                } else if let Some(s) = stride.as_int() {
                    let k = self.literal_int(s * l as i64, base.dtype())?;
                    format!("({b} + {k})")
                } else {
                    let s = self.scalar(stride, lane)?;
                    let k = self.literal_int(l as i64, base.dtype())?;
                    format!("({b} + {s} * {k})")
                }
            }
            Expr::Broadcast { value, .. } => self.scalar(value, lane)?,
            Expr::ProducerLoad { .. } | Expr::Reduce(_) => {
                return Err(unsupported("a tensor-expression node in lowered code"))
            }
        })
    }
}

/// Whether `s` is one parenthesized group, `(..)` whose first `(` closes at the end (so
/// `if` needs no parentheses of its own: C compilers warn about `if ((a == b))`).
fn fully_parenthesized(s: &str) -> bool {
    if !s.starts_with('(') {
        return false;
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i == s.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// The shared allocations of a kernel body, in order, each once.
fn collect_shared(body: &Stmt) -> Vec<(Buffer, Expr)> {
    struct Shared(Vec<(Buffer, Expr)>);
    impl Visitor for Shared {
        fn visit_expr(&mut self, _: &Expr) {} // expressions hold no statements
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Allocate { buffer, extent, .. } = s {
                if buffer.scope() == Scope::Shared && !self.0.iter().any(|(b, _)| b == buffer) {
                    self.0.push((buffer.clone(), extent.clone()));
                }
            }
            walk_stmt(self, s)
        }
    }
    let mut v = Shared(Vec::new());
    v.visit_stmt(body);
    v.0
}

/// Appends `text` to `out` (helper for program assembly).
pub fn push_section(out: &mut String, text: &str) {
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    let _ = write!(out, "{text}");
}
