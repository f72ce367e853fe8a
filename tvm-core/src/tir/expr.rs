//! Expressions shared by tensor expressions (TE) and TIR.
//!
//! One expression type serves both levels: `ProducerLoad` and `Reduce` only appear in TE
//! (and in TIR before `schedule_ops` replaces them), `Load` with one index, `Ramp` and
//! `Broadcast` only after `flatten_storage`. The verifier checks which forms are legal
//! where.

use crate::dtype::DType;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

static NEXT_VAR: AtomicU32 = AtomicU32::new(0);
static NEXT_BUFFER: AtomicU32 = AtomicU32::new(0);

/// The index of a tensor in its tensor-expression graph (`te::Graph`), which
/// `ProducerLoad` reads. Defined here, below `te`, so that TIR does not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u32);

/// The identity of a variable. Printers never show it (names are made unique by order
/// of appearance), so output does not depend on how many variables were made before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

#[derive(Debug)]
pub struct VarNode {
    pub id: VarId,
    pub name: String,
    pub dtype: DType,
}

/// A variable: loop indices, symbolic dims, scalar parameters, thread indices.
/// Cloning shares the node; equality is identity.
#[derive(Clone)]
pub struct Var(pub Arc<VarNode>);

impl Var {
    pub fn new(name: impl Into<String>, dtype: DType) -> Var {
        let id = VarId(NEXT_VAR.fetch_add(1, Ordering::Relaxed));
        Var(Arc::new(VarNode { id, name: name.into(), dtype }))
    }
    /// A fresh `i64` index variable.
    pub fn index(name: impl Into<String>) -> Var {
        Var::new(name, DType::I64)
    }
    pub fn id(&self) -> VarId {
        self.0.id
    }
    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// A fresh variable with the same name and type.
    pub fn copy_fresh(&self) -> Var {
        Var::new(self.name(), self.dtype())
    }
}

impl PartialEq for Var {
    fn eq(&self, o: &Var) -> bool {
        self.0.id == o.0.id
    }
}
impl Eq for Var {}
impl std::hash::Hash for Var {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl PartialOrd for Var {
    fn partial_cmp(&self, o: &Var) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Var {
    fn cmp(&self, o: &Var) -> std::cmp::Ordering {
        self.0.id.cmp(&o.0.id)
    }
}
impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.0.name, self.0.id.0)
    }
}

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Device (or host) memory visible to every thread.
    Global,
    /// Memory shared by the threads of one block (`__shared__`, `__local`).
    Shared,
    /// Memory private to one thread (registers).
    Local,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Shared => "shared",
            Scope::Local => "local",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

#[derive(Debug)]
pub struct BufferNode {
    pub id: BufferId,
    pub name: String,
    /// Element type (one lane).
    pub dtype: DType,
    pub scope: Scope,
}

/// A buffer: a tensor's storage. Cloning shares the node; equality is identity.
#[derive(Clone)]
pub struct Buffer(pub Arc<BufferNode>);

impl Buffer {
    pub fn new(name: impl Into<String>, dtype: DType, scope: Scope) -> Buffer {
        let id = BufferId(NEXT_BUFFER.fetch_add(1, Ordering::Relaxed));
        Buffer(Arc::new(BufferNode { id, name: name.into(), dtype: dtype.element(), scope }))
    }
    pub fn id(&self) -> BufferId {
        self.0.id
    }
    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn scope(&self) -> Scope {
        self.0.scope
    }
}
impl PartialEq for Buffer {
    fn eq(&self, o: &Buffer) -> bool {
        self.0.id == o.0.id
    }
}
impl Eq for Buffer {}
impl std::hash::Hash for Buffer {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl PartialOrd for Buffer {
    fn partial_cmp(&self, o: &Buffer) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Buffer {
    fn cmp(&self, o: &Buffer) -> std::cmp::Ordering {
        self.0.id.cmp(&o.0.id)
    }
}
impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}#{}", self.0.name, self.0.scope.name(), self.0.id.0)
    }
}

/// A half-open interval `[min, min + extent)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub min: Expr,
    pub extent: Expr,
}

impl Range {
    pub fn new(min: Expr, extent: Expr) -> Range {
        Range { min, extent }
    }
    /// `[0, extent)`.
    pub fn from_extent(extent: Expr) -> Range {
        Range { min: Expr::int(0), extent }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IterKind {
    /// A spatial (data-parallel) axis.
    DataPar,
    /// A reduction axis.
    Reduce,
}

/// An iteration variable with its domain.
#[derive(Clone, Debug, PartialEq)]
pub struct IterVar {
    pub var: Var,
    pub dom: Range,
    pub kind: IterKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Rust semantics: integer division truncates toward zero.
    Div,
    /// Rust semantics: the remainder has the sign of the dividend.
    Mod,
    Min,
    Max,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
    /// The operator with its operands swapped: `a < b` is `b > a`.
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        }
    }
}

/// Math intrinsics on floats (`abs` also on integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Abs,
    Floor,
    Ceil,
    Erf,
    Sin,
    Cos,
    Pow,
    Fma,
}

impl Intrinsic {
    pub fn from_name(name: &str) -> Option<Intrinsic> {
        Some(match name {
            "exp" => Intrinsic::Exp,
            "log" => Intrinsic::Log,
            "sqrt" => Intrinsic::Sqrt,
            "rsqrt" => Intrinsic::Rsqrt,
            "tanh" => Intrinsic::Tanh,
            "sigmoid" => Intrinsic::Sigmoid,
            "abs" => Intrinsic::Abs,
            "floor" => Intrinsic::Floor,
            "ceil" => Intrinsic::Ceil,
            "erf" => Intrinsic::Erf,
            "sin" => Intrinsic::Sin,
            "cos" => Intrinsic::Cos,
            "pow" => Intrinsic::Pow,
            "fma" => Intrinsic::Fma,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Rsqrt => "rsqrt",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Erf => "erf",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Pow => "pow",
            Intrinsic::Fma => "fma",
        }
    }
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow => 2,
            Intrinsic::Fma => 3,
            _ => 1,
        }
    }
}

/// The combiner of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    Prod,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }
    /// The identity element for `dtype` (−∞ for a float max, the type's minimum for an
    /// integer max, and so on).
    pub fn identity(self, dtype: DType) -> Expr {
        let d = dtype.element();
        match (self, d.is_float()) {
            (ReduceOp::Sum, true) => Expr::float(0.0, d),
            (ReduceOp::Prod, true) => Expr::float(1.0, d),
            (ReduceOp::Max, true) => Expr::float(f64::NEG_INFINITY, d),
            (ReduceOp::Min, true) => Expr::float(f64::INFINITY, d),
            (ReduceOp::Sum, false) => Expr::typed_int(0, d),
            (ReduceOp::Prod, false) => Expr::typed_int(1, d),
            (ReduceOp::Max, false) => Expr::typed_int(int_min(d), d),
            (ReduceOp::Min, false) => Expr::typed_int(int_max(d), d),
        }
    }
    /// `combine(acc, x)`.
    pub fn combine(self, acc: Expr, x: Expr) -> Expr {
        let op = match self {
            ReduceOp::Sum => BinOp::Add,
            ReduceOp::Prod => BinOp::Mul,
            ReduceOp::Max => BinOp::Max,
            ReduceOp::Min => BinOp::Min,
        };
        Expr::binary(op, acc, x)
    }
}

fn int_min(d: DType) -> i64 {
    match (d.is_uint(), d.bits) {
        (true, _) => 0,
        (false, 64) => i64::MIN,
        (false, b) => -(1i64 << (b - 1)),
    }
}
fn int_max(d: DType) -> i64 {
    match (d.is_uint(), d.bits) {
        (_, 64) => i64::MAX, // u64::MAX does not fit; the printer reinterprets bits for u64
        (true, b) => (1i64 << b) - 1,
        (false, b) => (1i64 << (b - 1)) - 1,
        #[allow(unreachable_patterns)]
        _ => i64::MAX,
    }
}

/// A reduction: `op(source for axes)`. Only the whole right-hand side of a stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduce {
    pub op: ReduceOp,
    /// The value reduced (for a [`TupleReduce`], its component `index`'s source).
    pub source: Expr,
    pub axes: Vec<IterVar>,
    /// A reduction of several values at once with a combiner the user wrote (TVM's
    /// `comm_reducer`); `op` is then unused.
    pub tuple: Option<Box<TupleReduce>>,
}

/// `reduce((e0, e1) for k in .., (id0, id1), |(a0, a1), (b0, b1)| (c0, c1))`: every
/// component tensor of the stage has this same reduction, with its own `index`. The
/// combiner must be associative and commutative (the user's promise, as in TVM), since
/// rfactor and cross-thread reductions combine partial results in any order.
#[derive(Clone, Debug, PartialEq)]
pub struct TupleReduce {
    /// Every component's source, in order (`Reduce::source` is `sources[index]`).
    pub sources: Vec<Expr>,
    /// Every component's identity, a constant.
    pub identity: Vec<Expr>,
    /// The combiner's parameters: the accumulated value and the new one.
    pub lhs: Vec<Var>,
    pub rhs: Vec<Var>,
    /// The combined value of every component, in the parameters only.
    pub combine: Vec<Expr>,
    /// The component this tensor holds.
    pub index: usize,
    /// The tensors of every component, in order; the first is the one whose stage
    /// computes them all.
    pub outputs: Vec<TensorId>,
}

impl Reduce {
    /// A reduction with a built-in combiner.
    pub fn new(op: ReduceOp, source: Expr, axes: Vec<IterVar>) -> Reduce {
        Reduce { op, source, axes, tuple: None }
    }
    /// The value of every component (one for a built-in combiner).
    pub fn sources(&self) -> Vec<&Expr> {
        match &self.tuple {
            Some(t) => t.sources.iter().collect(),
            None => vec![&self.source],
        }
    }
    /// The reduction with every source mapped by `f` once (`source` follows).
    pub fn map_sources(self, mut f: impl FnMut(Expr) -> Expr) -> Reduce {
        self.map_components(|_, s| f(s))
    }
    /// [`Reduce::map_sources`], `f` also given each source's component number.
    pub fn map_components(self, mut f: impl FnMut(usize, Expr) -> Expr) -> Reduce {
        let Reduce { op, source, axes, tuple } = self;
        match tuple {
            Some(mut t) => {
                t.sources = std::mem::take(&mut t.sources).into_iter().enumerate().map(|(c, s)| f(c, s)).collect();
                let source = t.sources[t.index].clone();
                Reduce { op, source, axes, tuple: Some(t) }
            }
            None => Reduce { op, source: f(0, source), axes, tuple: None },
        }
    }
    /// This reduction as component `index` of the tensors `outputs` (itself for a
    /// built-in combiner).
    pub fn component(&self, index: usize, outputs: &[TensorId]) -> Reduce {
        let mut r = self.clone();
        if let Some(t) = r.tuple.as_mut() {
            t.index = index;
            t.outputs = outputs.to_vec();
            r.source = t.sources[index].clone();
        }
        r
    }
    /// The identity of every component.
    pub fn identities(&self, dtype: DType) -> Vec<Expr> {
        match &self.tuple {
            Some(t) => t.identity.clone(),
            None => vec![self.op.identity(dtype)],
        }
    }
    /// `combine(acc, x)` of every component, given every component's accumulated value
    /// and new value. Each may be used several times: pass variables or loads.
    pub fn combine(&self, acc: Vec<Expr>, x: Vec<Expr>) -> Vec<Expr> {
        match &self.tuple {
            Some(t) => {
                let map: std::collections::HashMap<Var, Expr> =
                    t.lhs.iter().cloned().zip(acc).chain(t.rhs.iter().cloned().zip(x)).collect();
                t.combine.iter().map(|c| crate::tir::mutate::substitute(c.clone(), &map)).collect()
            }
            None => {
                let (a, b) = (acc.into_iter().next(), x.into_iter().next());
                vec![self.op.combine(a.expect("one component"), b.expect("one component"))]
            }
        }
    }
}

/// An expression node.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer constant of an integer type (the bits of a `u64` are stored as `i64`).
    Int {
        value: i64,
        dtype: DType,
    },
    Float {
        value: f64,
        dtype: DType,
    },
    Bool(bool),
    Var(Var),
    Binary {
        op: BinOp,
        a: Box<Expr>,
        b: Box<Expr>,
    },
    Cmp {
        op: CmpOp,
        a: Box<Expr>,
        b: Box<Expr>,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    /// `if cond { then } else { otherwise }`: only the taken side is evaluated.
    Select {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Cast {
        dtype: DType,
        value: Box<Expr>,
    },
    Call {
        func: Intrinsic,
        args: Vec<Expr>,
    },
    /// A TE read of a tensor at multi-dimensional indices.
    ProducerLoad {
        tensor: TensorId,
        indices: Vec<Expr>,
        dtype: DType,
    },
    /// A read of a buffer: one index per dim before `flatten_storage`, one after.
    /// A vector index (a `Ramp`) reads several lanes.
    Load {
        buffer: Buffer,
        indices: Vec<Expr>,
    },
    /// `[base, base + stride, ..., base + (lanes-1)·stride]`.
    Ramp {
        base: Box<Expr>,
        stride: Box<Expr>,
        lanes: u16,
    },
    /// `value` in every lane.
    Broadcast {
        value: Box<Expr>,
        lanes: u16,
    },
    /// TE only.
    Reduce(Box<Reduce>),
    /// A value the compiler could not prove valid, checked where it is computed (docs/LANGUAGE.md
    /// §4: bad input is an `Err`): an index read from memory, an integer divisor. When
    /// the check fails (in any lane), the run records check `site` of the function (the
    /// first failure of a run wins; see [`crate::tir::CheckSite`]) and the expression
    /// takes a safe value instead, so that nothing outside a buffer is touched and no
    /// division traps; the run then returns the site's error.
    Check {
        value: Box<Expr>,
        kind: CheckKind,
        site: u32,
    },
}

/// What an [`Expr::Check`] requires of its value.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckKind {
    /// `0 <= value < extent`: an `i64` index into one dim (of size `extent`, a scalar) of
    /// a tensor read. A failed check gives 0.
    Index { extent: Box<Expr> },
    /// `value != 0`: the divisor of an integer `/` or `%`. A failed check gives 1.
    Divisor,
}

impl Expr {
    /// An `i64` constant (the type of index arithmetic).
    pub fn int(v: i64) -> Expr {
        Expr::Int { value: v, dtype: DType::I64 }
    }
    pub fn typed_int(v: i64, dtype: DType) -> Expr {
        assert!(dtype.is_integer(), "internal: integer constant of type {dtype}");
        Expr::Int { value: v, dtype }
    }
    pub fn float(v: f64, dtype: DType) -> Expr {
        assert!(dtype.is_float(), "internal: float constant of type {dtype}");
        Expr::Float { value: v, dtype }
    }
    pub fn var(v: &Var) -> Expr {
        Expr::Var(v.clone())
    }

    /// A binary arithmetic node; both sides must have the same type.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        debug_assert_eq!(a.dtype(), b.dtype(), "internal: {op:?} of mismatched types: {a:?} and {b:?}");
        Expr::Binary { op, a: Box::new(a), b: Box::new(b) }
    }
    pub fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
        debug_assert_eq!(a.dtype(), b.dtype(), "internal: {op:?} of mismatched types: {a:?} and {b:?}");
        Expr::Cmp { op, a: Box::new(a), b: Box::new(b) }
    }
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }
    pub fn or(a: Expr, b: Expr) -> Expr {
        Expr::Or(Box::new(a), Box::new(b))
    }
    pub fn not(a: Expr) -> Expr {
        Expr::Not(Box::new(a))
    }
    pub fn select(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        Expr::Select { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) }
    }
    pub fn cast(dtype: DType, value: Expr) -> Expr {
        Expr::Cast { dtype, value: Box::new(value) }
    }
    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Min, a, b)
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Max, a, b)
    }
    pub fn lt(a: Expr, b: Expr) -> Expr {
        Expr::cmp(CmpOp::Lt, a, b)
    }
    pub fn le(a: Expr, b: Expr) -> Expr {
        Expr::cmp(CmpOp::Le, a, b)
    }
    pub fn ge(a: Expr, b: Expr) -> Expr {
        Expr::cmp(CmpOp::Ge, a, b)
    }
    pub fn eq(a: Expr, b: Expr) -> Expr {
        Expr::cmp(CmpOp::Eq, a, b)
    }
    pub fn load(buffer: &Buffer, indices: Vec<Expr>) -> Expr {
        Expr::Load { buffer: buffer.clone(), indices }
    }

    /// The constant value of an integer constant.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int { value, .. } => Some(*value),
            _ => None,
        }
    }
    pub fn is_const_int(&self, v: i64) -> bool {
        self.as_int() == Some(v)
    }
    pub fn as_var(&self) -> Option<&Var> {
        match self {
            Expr::Var(v) => Some(v),
            _ => None,
        }
    }

    /// The expression a bounds or divisor check guards (itself when unchecked).
    pub fn unchecked(&self) -> &Expr {
        match self {
            Expr::Check { value, .. } => value,
            e => e,
        }
    }
    /// The type of the value the expression produces.
    pub fn dtype(&self) -> DType {
        match self {
            Expr::Int { dtype, .. } | Expr::Float { dtype, .. } => *dtype,
            Expr::Bool(_) => DType::BOOL,
            Expr::Var(v) => v.dtype(),
            Expr::Binary { a, .. } => a.dtype(),
            Expr::Cmp { a, .. } => DType::BOOL.with_lanes(a.dtype().lanes),
            Expr::And(a, _) | Expr::Or(a, _) | Expr::Not(a) => a.dtype(),
            Expr::Neg(a) => a.dtype(),
            Expr::Select { then, .. } => then.dtype(),
            Expr::Cast { dtype, value } => dtype.with_lanes(value.dtype().lanes),
            Expr::Call { args, .. } => args[0].dtype(),
            Expr::ProducerLoad { dtype, .. } => *dtype,
            Expr::Load { buffer, indices } => {
                let lanes = indices.last().map_or(1, |i| i.dtype().lanes);
                buffer.dtype().with_lanes(lanes)
            }
            Expr::Ramp { base, lanes, .. } => base.dtype().with_lanes(*lanes),
            Expr::Broadcast { value, lanes } => value.dtype().with_lanes(*lanes),
            Expr::Reduce(r) => r.source.dtype(),
            Expr::Check { value, .. } => value.dtype(),
        }
    }
}

macro_rules! arith_op {
    ($tr:ident, $m:ident, $op:expr) => {
        impl std::ops::$tr for Expr {
            type Output = Expr;
            fn $m(self, o: Expr) -> Expr {
                Expr::binary($op, self, o)
            }
        }
        impl std::ops::$tr<i64> for Expr {
            type Output = Expr;
            fn $m(self, o: i64) -> Expr {
                let d = self.dtype();
                Expr::binary($op, self, Expr::typed_int(o, d))
            }
        }
    };
}
arith_op!(Add, add, BinOp::Add);
arith_op!(Sub, sub, BinOp::Sub);
arith_op!(Mul, mul, BinOp::Mul);
arith_op!(Div, div, BinOp::Div);
arith_op!(Rem, rem, BinOp::Mod);

impl From<&Var> for Expr {
    fn from(v: &Var) -> Expr {
        Expr::Var(v.clone())
    }
}
impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}
