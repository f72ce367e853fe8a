//! Checks a `PrimFunc` and translates it into the interpreter's own tree: every variable
//! and buffer resolved to a dense slot, every expression annotated with its (checked)
//! type, every statement with whether it needs lock-step execution on a GPU block.

use super::error::{err, ErrorKind, InterpError, R};
use super::value::{cast, ScalarValue, Value};
use crate::dtype::DType;
use crate::tir::{
    BinOp, Buffer, BufferId, CheckKind, CmpOp, Expr, ForKind, Intrinsic, Param, PrimFunc, Scope, Stmt, ThreadTag, Var,
    VarId,
};
use std::collections::HashMap;

pub(crate) struct CExpr {
    pub dtype: DType,
    pub kind: CE,
}

pub(crate) enum CE {
    Const(Value),
    Var(usize),
    Binary(BinOp, Box<CExpr>, Box<CExpr>),
    Cmp(CmpOp, Box<CExpr>, Box<CExpr>),
    And(Box<CExpr>, Box<CExpr>),
    Or(Box<CExpr>, Box<CExpr>),
    Not(Box<CExpr>),
    Neg(Box<CExpr>),
    Select(Box<CExpr>, Box<CExpr>, Box<CExpr>),
    /// To `CExpr::dtype`.
    Cast(Box<CExpr>),
    Call(Intrinsic, Vec<CExpr>),
    Load(usize, Vec<CExpr>),
    Ramp(Box<CExpr>, Box<CExpr>),
    Broadcast(Box<CExpr>),
    /// An `Expr::Check`: the value, the extent of an index check (`None`: a divisor
    /// check), the site.
    Check(Box<CExpr>, Option<Box<CExpr>>, u32),
}

pub(crate) struct CStmt {
    /// Contains a barrier.
    pub barrier: bool,
    /// Contains a barrier or a shared allocation: a GPU block runs it in lock step.
    pub lockstep: bool,
    pub kind: CS,
}

pub(crate) enum CS {
    Seq(Vec<CStmt>),
    For {
        var: usize,
        min: CExpr,
        extent: CExpr,
        kind: ForKind,
        body: Box<CStmt>,
    },
    ThreadBinding {
        tag: ThreadTag,
        var: usize,
        extent: CExpr,
        body: Box<CStmt>,
    },
    If {
        cond: CExpr,
        then: Box<CStmt>,
        otherwise: Option<Box<CStmt>>,
    },
    Let {
        var: usize,
        value: CExpr,
        body: Box<CStmt>,
    },
    Store {
        buf: usize,
        indices: Vec<CExpr>,
        value: CExpr,
        /// A store of `select(mask, value, itself)` (`hoist_tail_guards`'s masked
        /// borders): only the lanes where `mask` holds are evaluated and written; the
        /// others keep their element, which is not read (it may never have been written).
        mask: Option<CExpr>,
    },
    Realize {
        buf: usize,
        bounds: Vec<(CExpr, CExpr)>,
        body: Box<CStmt>,
    },
    Allocate {
        buf: usize,
        extent: CExpr,
        body: Box<CStmt>,
    },
    Barrier,
    /// `Stmt::WarpReduce`: `load` reads element 0 of the buffer in a thread, `combine`
    /// combines the values of variables `a` and `b`, `store` writes variable `a` back.
    WarpReduce {
        width: u32,
        load: CExpr,
        combine: CExpr,
        a: usize,
        b: usize,
        store: Box<CStmt>,
    },
    Launch(usize),
    NoOp,
}

pub(crate) enum CParam {
    Tensor { buf: usize, shape: Vec<CExpr>, is_output: bool },
    Scalar { var: usize },
}

pub(crate) struct CKernel {
    pub name: String,
    pub thread_vars: Vec<(ThreadTag, usize)>,
    pub grid: [CExpr; 3],
    pub block: [CExpr; 3],
    pub buffer_args: Vec<usize>,
    pub scalar_args: Vec<usize>,
    pub body: CStmt,
}

pub(crate) struct Program {
    pub var_names: Vec<String>,
    pub var_dtypes: Vec<DType>,
    pub buffers: Vec<Buffer>,
    /// Per buffer slot: whether it is a tensor parameter.
    pub is_param: Vec<bool>,
    pub params: Vec<CParam>,
    pub host: CStmt,
    pub kernels: Vec<CKernel>,
}

struct Compiler {
    vars: HashMap<VarId, usize>,
    var_names: Vec<String>,
    var_dtypes: Vec<DType>,
    bufs: HashMap<BufferId, usize>,
    buffers: Vec<Buffer>,
    n_kernels: usize,
    /// Compiling a kernel body (else the host body).
    in_kernel: bool,
}

fn type_err<T>(msg: impl Into<String>) -> R<T> {
    err(ErrorKind::Type, msg)
}

fn const_value(dtype: DType, s: ScalarValue) -> Value {
    if dtype.lanes > 1 {
        Value::V(vec![s; dtype.lanes as usize])
    } else {
        Value::S(s)
    }
}

impl Compiler {
    fn var(&mut self, v: &Var) -> usize {
        if let Some(&s) = self.vars.get(&v.id()) {
            return s;
        }
        let s = self.var_names.len();
        self.vars.insert(v.id(), s);
        self.var_names.push(v.name().to_string());
        self.var_dtypes.push(v.dtype());
        s
    }

    fn buf(&mut self, b: &Buffer) -> R<usize> {
        if let Some(&s) = self.bufs.get(&b.id()) {
            return Ok(s);
        }
        if ScalarValue::zero(b.dtype()).is_none() {
            return type_err(format!("buffer `{}` has unsupported element type {}", b.name(), b.dtype()));
        }
        let s = self.buffers.len();
        self.bufs.insert(b.id(), s);
        self.buffers.push(b.clone());
        Ok(s)
    }

    fn boxed(&mut self, e: &Expr) -> R<Box<CExpr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn int_scalar(&mut self, e: &Expr, what: &str) -> R<CExpr> {
        let c = self.expr(e)?;
        if !c.dtype.is_integer() || c.dtype.lanes != 1 {
            return type_err(format!("{what} must be a scalar integer, got {}", c.dtype));
        }
        Ok(c)
    }

    fn expr(&mut self, e: &Expr) -> R<CExpr> {
        let (dtype, kind) = match e {
            Expr::Int { value, dtype } => {
                if !dtype.is_integer() {
                    return type_err(format!("integer constant {value} of type {dtype}"));
                }
                // The bits of the i64, as the integer type (u64 constants store their bits).
                let s = cast(dtype.element(), ScalarValue::I64(*value))?;
                (*dtype, CE::Const(const_value(*dtype, s)))
            }
            Expr::Float { value, dtype } => {
                if !dtype.is_float() {
                    return type_err(format!("float constant {value} of type {dtype}"));
                }
                let s = cast(dtype.element(), ScalarValue::F64(*value))?;
                (*dtype, CE::Const(const_value(*dtype, s)))
            }
            Expr::Bool(b) => (DType::BOOL, CE::Const(Value::S(ScalarValue::Bool(*b)))),
            Expr::Var(v) => {
                if ScalarValue::zero(v.dtype()).is_none() {
                    return type_err(format!("variable `{}` has unsupported type {}", v.name(), v.dtype()));
                }
                (v.dtype(), CE::Var(self.var(v)))
            }
            Expr::Binary { op, a, b } => {
                let (a, b) = (self.boxed(a)?, self.boxed(b)?);
                if a.dtype != b.dtype {
                    return type_err(format!("operands of `{}` have types {} and {}", op.symbol(), a.dtype, b.dtype));
                }
                if a.dtype.is_bool() {
                    return type_err(format!("`{}` of bool operands", op.symbol()));
                }
                (a.dtype, CE::Binary(*op, a, b))
            }
            Expr::Cmp { op, a, b } => {
                let (a, b) = (self.boxed(a)?, self.boxed(b)?);
                if a.dtype != b.dtype {
                    return type_err(format!("operands of `{}` have types {} and {}", op.symbol(), a.dtype, b.dtype));
                }
                (DType::BOOL.with_lanes(a.dtype.lanes), CE::Cmp(*op, a, b))
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let (ca, cb) = (self.boxed(a)?, self.boxed(b)?);
                let name = if matches!(e, Expr::And(..)) { "&&" } else { "||" };
                if !ca.dtype.is_bool() || ca.dtype != cb.dtype {
                    return type_err(format!(
                        "operands of `{name}` must be bools of one width, got {} and {}",
                        ca.dtype, cb.dtype
                    ));
                }
                let d = ca.dtype;
                (d, if matches!(e, Expr::And(..)) { CE::And(ca, cb) } else { CE::Or(ca, cb) })
            }
            Expr::Not(a) => {
                let a = self.boxed(a)?;
                if !a.dtype.is_bool() && !a.dtype.is_integer() {
                    return type_err(format!("`!` of a value of type {}", a.dtype));
                }
                (a.dtype, CE::Not(a))
            }
            Expr::Neg(a) => {
                let a = self.boxed(a)?;
                if !a.dtype.is_int() && !a.dtype.is_float() {
                    return type_err(format!("negation of a value of type {}", a.dtype));
                }
                (a.dtype, CE::Neg(a))
            }
            Expr::Select { cond, then, otherwise } => {
                let c = self.boxed(cond)?;
                let (t, o) = (self.boxed(then)?, self.boxed(otherwise)?);
                if t.dtype != o.dtype {
                    return type_err(format!("the branches of a select have types {} and {}", t.dtype, o.dtype));
                }
                if !c.dtype.is_bool() || (c.dtype.lanes != 1 && c.dtype.lanes != t.dtype.lanes) {
                    return type_err(format!("select condition of type {} for {} branches", c.dtype, t.dtype));
                }
                (t.dtype, CE::Select(c, t, o))
            }
            Expr::Cast { dtype, value } => {
                let v = self.boxed(value)?;
                if dtype.lanes != 1 && dtype.lanes != v.dtype.lanes {
                    return type_err(format!("cast of a value of type {} to {dtype}", v.dtype));
                }
                if ScalarValue::zero(*dtype).is_none() {
                    return type_err(format!("cast to unsupported type {dtype}"));
                }
                if dtype.is_bool() && !v.dtype.is_bool() {
                    return type_err(format!("cast from {} to bool (not a Rust `as` cast)", v.dtype));
                }
                (dtype.with_lanes(v.dtype.lanes), CE::Cast(v))
            }
            Expr::Call { func, args } => {
                if args.len() != func.arity() {
                    return type_err(format!("`{}` takes {} arguments, got {}", func.name(), func.arity(), args.len()));
                }
                let args = args.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                let d = args[0].dtype;
                if let Some(b) = args.iter().find(|a| a.dtype != d) {
                    return type_err(format!("arguments of `{}` have types {d} and {}", func.name(), b.dtype));
                }
                if !(d.is_float() || (*func == Intrinsic::Abs && d.is_integer())) {
                    return type_err(format!("`{}` of a value of type {d}", func.name()));
                }
                (d, CE::Call(*func, args))
            }
            Expr::ProducerLoad { .. } => {
                return err(
                    ErrorKind::NotLowered,
                    "ProducerLoad in TIR: the function was not lowered (run schedule_ops)",
                )
            }
            Expr::Reduce(_) => {
                return err(ErrorKind::NotLowered, "Reduce in TIR: the function was not lowered (run schedule_ops)")
            }
            Expr::Load { buffer, indices } => {
                let slot = self.buf(buffer)?;
                let (idx, lanes) = self.indices(buffer, indices)?;
                (buffer.dtype().with_lanes(lanes), CE::Load(slot, idx))
            }
            Expr::Ramp { base, stride, lanes } => {
                let (b, s) = (self.boxed(base)?, self.boxed(stride)?);
                if !b.dtype.is_integer() || b.dtype.lanes != 1 || b.dtype != s.dtype {
                    return type_err(format!("ramp of base type {} and stride type {}", b.dtype, s.dtype));
                }
                if *lanes == 0 {
                    return type_err("ramp with 0 lanes");
                }
                (b.dtype.with_lanes(*lanes), CE::Ramp(b, s))
            }
            Expr::Broadcast { value, lanes } => {
                let v = self.boxed(value)?;
                if v.dtype.lanes != 1 {
                    return type_err(format!("broadcast of a vector ({})", v.dtype));
                }
                if *lanes == 0 {
                    return type_err("broadcast to 0 lanes");
                }
                (v.dtype.with_lanes(*lanes), CE::Broadcast(v))
            }
            Expr::Check { value, kind, site } => {
                let v = self.boxed(value)?;
                if !v.dtype.is_integer() {
                    return type_err(format!("checked value of type {}", v.dtype));
                }
                let extent = match kind {
                    CheckKind::Index { extent } => Some(Box::new(self.int_scalar(extent, "a checked index's extent")?)),
                    CheckKind::Divisor => None,
                };
                (v.dtype, CE::Check(v, extent, *site))
            }
        };
        Ok(CExpr { dtype, kind })
    }

    /// The indices of an access and its lane count.
    fn indices(&mut self, buffer: &Buffer, indices: &[Expr]) -> R<(Vec<CExpr>, u16)> {
        let idx = indices.iter().map(|i| self.expr(i)).collect::<R<Vec<_>>>()?;
        let mut lanes = 1u16;
        for i in &idx {
            if !i.dtype.is_integer() {
                return type_err(format!("index of `{}` has type {}", buffer.name(), i.dtype));
            }
            if i.dtype.lanes != 1 {
                if lanes != 1 && lanes != i.dtype.lanes {
                    return type_err(format!(
                        "indices of `{}` have {lanes} and {} lanes",
                        buffer.name(),
                        i.dtype.lanes
                    ));
                }
                lanes = i.dtype.lanes;
            }
        }
        Ok((idx, lanes))
    }

    fn sub(&mut self, s: &Stmt) -> R<Box<CStmt>> {
        Ok(Box::new(self.stmt(s)?))
    }

    fn loop_bound(&mut self, e: &Expr, var: &Var, what: &str) -> R<CExpr> {
        let c = self.expr(e)?;
        if c.dtype != var.dtype() {
            return type_err(format!(
                "{what} of loop `{}` has type {} but the variable has type {}",
                var.name(),
                c.dtype,
                var.dtype()
            ));
        }
        Ok(c)
    }

    fn stmt(&mut self, s: &Stmt) -> R<CStmt> {
        let kind = match s {
            Stmt::Seq(v) => CS::Seq(v.iter().map(|s| self.stmt(s)).collect::<R<Vec<_>>>()?),
            Stmt::For { var, min, extent, kind, body } => {
                if !var.dtype().is_integer() || var.dtype().lanes != 1 {
                    return type_err(format!("loop variable `{}` has type {}", var.name(), var.dtype()));
                }
                let min = self.loop_bound(min, var, "the start")?;
                let extent = self.loop_bound(extent, var, "the extent")?;
                CS::For { var: self.var(var), min, extent, kind: *kind, body: self.sub(body)? }
            }
            Stmt::ThreadBinding { tag, var, extent, body } => {
                if !var.dtype().is_integer() || var.dtype().lanes != 1 {
                    return type_err(format!("thread variable `{}` has type {}", var.name(), var.dtype()));
                }
                let extent = self.loop_bound(extent, var, "the extent")?;
                CS::ThreadBinding { tag: *tag, var: self.var(var), extent, body: self.sub(body)? }
            }
            Stmt::If { cond, then, otherwise } => {
                let cond = self.expr(cond)?;
                if cond.dtype != DType::BOOL {
                    return type_err(format!("`if` condition of type {}", cond.dtype));
                }
                let otherwise = match otherwise {
                    Some(o) => Some(self.sub(o)?),
                    None => None,
                };
                CS::If { cond, then: self.sub(then)?, otherwise }
            }
            Stmt::Let { var, value, body } => {
                let value = self.expr(value)?;
                if value.dtype != var.dtype() {
                    return type_err(format!(
                        "`let {}: {}` bound to a value of type {}",
                        var.name(),
                        var.dtype(),
                        value.dtype
                    ));
                }
                CS::Let { var: self.var(var), value, body: self.sub(body)? }
            }
            Stmt::Store { buffer, indices, value } => {
                let buf = self.buf(buffer)?;
                let (idx, lanes) = self.indices(buffer, indices)?;
                let (mask, value) = match value {
                    Expr::Select { cond, then, .. }
                        if crate::passes::hoist_tail_guards::is_masked_store(buffer, indices, value) =>
                    {
                        (Some(self.expr(cond)?), self.expr(then)?)
                    }
                    _ => (None, self.expr(value)?),
                };
                let want = buffer.dtype().with_lanes(lanes);
                if value.dtype != want {
                    return type_err(format!(
                        "store of a value of type {} into `{}`, which holds {want}",
                        value.dtype,
                        buffer.name()
                    ));
                }
                CS::Store { buf, indices: idx, value, mask }
            }
            Stmt::Realize { buffer, bounds, body } => {
                self.check_scope(buffer)?;
                let buf = self.buf(buffer)?;
                let mut bs = Vec::new();
                for r in bounds {
                    let min = self.int_scalar(&r.min, "a realize bound")?;
                    let ext = self.int_scalar(&r.extent, "a realize bound")?;
                    bs.push((min, ext));
                }
                CS::Realize { buf, bounds: bs, body: self.sub(body)? }
            }
            Stmt::Allocate { buffer, extent, body } => {
                self.check_scope(buffer)?;
                let buf = self.buf(buffer)?;
                let extent = self.int_scalar(extent, "an allocation extent")?;
                CS::Allocate { buf, extent, body: self.sub(body)? }
            }
            Stmt::Barrier => {
                if !self.in_kernel {
                    return err(ErrorKind::InvalidProgram, "barrier outside a kernel (in the host body)");
                }
                CS::Barrier
            }
            Stmt::WarpReduce { op, buffer, width } => {
                if !self.in_kernel {
                    return err(ErrorKind::InvalidProgram, "warp reduction outside a kernel (in the host body)");
                }
                let d = buffer.dtype().element();
                let (a, b) = (Var::new("warp_a", d), Var::new("warp_b", d));
                let zero = || vec![Expr::int(0)];
                let load = self.expr(&Expr::load(buffer, zero()))?;
                let combine = self.expr(&op.combine(Expr::var(&a), Expr::var(&b)))?;
                let store = Box::new(self.stmt(&Stmt::store(buffer, zero(), Expr::var(&a)))?);
                CS::WarpReduce { width: *width, load, combine, a: self.var(&a), b: self.var(&b), store }
            }
            Stmt::Launch { kernel } => {
                if self.in_kernel {
                    return err(ErrorKind::InvalidProgram, "launch inside a kernel");
                }
                if *kernel >= self.n_kernels {
                    return err(
                        ErrorKind::InvalidProgram,
                        format!("launch of kernel {kernel}, but the function has {} kernels", self.n_kernels),
                    );
                }
                CS::Launch(*kernel)
            }
            // A cache hint: nothing to do (an index outside the buffer is allowed).
            Stmt::NoOp | Stmt::Prefetch { .. } => CS::NoOp,
        };
        let children: Vec<&CStmt> = match &kind {
            CS::Seq(v) => v.iter().collect(),
            CS::For { body, .. }
            | CS::ThreadBinding { body, .. }
            | CS::Let { body, .. }
            | CS::Realize { body, .. }
            | CS::Allocate { body, .. } => vec![body],
            CS::If { then, otherwise, .. } => std::iter::once(&**then).chain(otherwise.as_deref()).collect(),
            _ => Vec::new(),
        };
        let barrier = matches!(kind, CS::Barrier | CS::WarpReduce { .. }) || children.iter().any(|c| c.barrier);
        let shared_alloc = match &kind {
            CS::Realize { buf, .. } | CS::Allocate { buf, .. } => self.buffers[*buf].scope() == Scope::Shared,
            _ => false,
        };
        let lockstep = barrier || shared_alloc || children.iter().any(|c| c.lockstep);
        Ok(CStmt { barrier, lockstep, kind })
    }

    fn check_scope(&self, buffer: &Buffer) -> R<()> {
        if self.in_kernel && buffer.scope() == Scope::Global {
            return err(
                ErrorKind::InvalidProgram,
                format!("allocation of global buffer `{}` inside a kernel (only shared or local)", buffer.name()),
            );
        }
        Ok(())
    }
}

/// Checks and translates `f`.
pub(crate) fn compile(f: &PrimFunc) -> R<Program> {
    let mut c = Compiler {
        vars: HashMap::new(),
        var_names: Vec::new(),
        var_dtypes: Vec::new(),
        bufs: HashMap::new(),
        buffers: Vec::new(),
        n_kernels: f.kernels.len(),
        in_kernel: false,
    };
    let mut params = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        let ctx = |e: InterpError| e.context(format!("parameter {i}"));
        match p {
            Param::Tensor { buffer, shape, is_output } => {
                let buf = c.buf(buffer).map_err(ctx)?;
                if params.iter().any(|q| matches!(q, CParam::Tensor { buf: b, .. } if *b == buf)) {
                    return err(ErrorKind::InvalidProgram, format!("buffer `{}` is two parameters", buffer.name()));
                }
                let shape = shape.iter().map(|d| c.int_scalar(d, "a dimension")).collect::<R<Vec<_>>>().map_err(ctx)?;
                params.push(CParam::Tensor { buf, shape, is_output: *is_output });
            }
            Param::Scalar(v) => {
                if v.dtype().lanes != 1 || ScalarValue::zero(v.dtype()).is_none() {
                    return type_err(format!("scalar parameter `{}` has type {}", v.name(), v.dtype()));
                }
                params.push(CParam::Scalar { var: c.var(v) });
            }
        }
    }
    let host = c.stmt(&f.body).map_err(|e| e.context("host body"))?;
    let mut kernels = Vec::new();
    for k in &f.kernels {
        let ctx = |e: InterpError| e.context(format!("kernel `{}`", k.name));
        let mut dims = Vec::new();
        for e in k.grid.iter().chain(k.block.iter()) {
            dims.push(c.int_scalar(e, "a launch dimension").map_err(ctx)?);
        }
        let mut it = dims.into_iter();
        let mut three = || -> [CExpr; 3] { [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()] };
        let (grid, block) = (three(), three());
        let mut thread_vars = Vec::new();
        for (tag, v) in &k.thread_vars {
            if !v.dtype().is_integer() || v.dtype().lanes != 1 {
                return Err(ctx(InterpError::new(
                    ErrorKind::Type,
                    format!("thread variable `{}` has type {}", v.name(), v.dtype()),
                )));
            }
            thread_vars.push((*tag, c.var(v)));
        }
        let buffer_args = k.buffer_args.iter().map(|b| c.buf(b)).collect::<R<Vec<_>>>().map_err(ctx)?;
        let scalar_args = k.scalar_args.iter().map(|v| c.var(v)).collect();
        c.in_kernel = true;
        let body = c.stmt(&k.body).map_err(ctx)?;
        c.in_kernel = false;
        kernels.push(CKernel { name: k.name.clone(), thread_vars, grid, block, buffer_args, scalar_args, body });
    }
    let mut is_param = vec![false; c.buffers.len()];
    for p in &params {
        if let CParam::Tensor { buf, .. } = p {
            is_param[*buf] = true;
        }
    }
    Ok(Program {
        var_names: c.var_names,
        var_dtypes: c.var_dtypes,
        buffers: c.buffers,
        is_param,
        params,
        host,
        kernels,
    })
}
