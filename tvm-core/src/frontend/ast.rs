//! The syntax tree of one `compute!` kernel and its `schedule!` blocks, before any
//! checking. Every node an error may point at carries a [`Loc`] into the kernel's
//! [`SourceMap`](crate::loc::SourceMap); type names are kept as written and resolved by
//! the checker, so the parser itself reports only syntax errors.

use crate::loc::Loc;
use crate::tir::ReduceOp;
use std::fmt;

/// An identifier as written, with its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    pub name: String,
    pub loc: Loc,
}

/// One dim of a tensor type: `1024` or `N`.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Lit { value: u128, loc: Loc },
    Name(Name),
}

impl Dim {
    pub fn loc(&self) -> Loc {
        match self {
            Dim::Lit { loc, .. } => *loc,
            Dim::Name(n) => n.loc,
        }
    }
}

/// `f32[M, K]`: the element type name (resolved by the checker) and the dims.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorType {
    pub dtype: Name,
    pub dims: Vec<Dim>,
}

/// A parameter of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamAst {
    /// `a: f32[n]`
    Tensor { name: Name, ty: TensorType },
    /// `alpha: f32`, `n: usize`
    Scalar { name: Name, ty: Name },
}

impl ParamAst {
    pub fn name(&self) -> &Name {
        match self {
            ParamAst::Tensor { name, .. } | ParamAst::Scalar { name, .. } => name,
        }
    }
}

/// One output of the kernel: `c: f32[n]`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputAst {
    pub name: Name,
    pub ty: TensorType,
}

/// The function header: `fn NAME(params) -> outputs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub name: Name,
    pub params: Vec<ParamAst>,
    pub outputs: Vec<OutputAst>,
    /// Whether the outputs were written as a tuple `(c: .., d: ..)`.
    pub tuple_outputs: bool,
}

/// One stage: `c[i, j] = body;` or `let d[i, j]: f32[M, N] = body;`.
#[derive(Clone, Debug, PartialEq)]
pub struct StageAst {
    pub is_let: bool,
    pub name: Name,
    /// The spatial axes, in order.
    pub axes: Vec<Name>,
    /// The declared type (`let` stages only).
    pub ty: Option<TensorType>,
    pub body: ExprAst,
}

/// What a boundary view reads outside its tensor (Halide's `BoundaryConditions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// `constant_exterior(x, v)`: `v`.
    Constant,
    /// `repeat_edge(x)`: the nearest element (the index clamped into the tensor).
    RepeatEdge,
    /// `repeat_image(x)`: the tensor tiled (the index modulo the dim).
    RepeatImage,
    /// `mirror_image(x)`: the tensor reflected, edge included (`-1` reads `0`).
    MirrorImage,
    /// `mirror_interior(x)`: the tensor reflected about its edge (`-1` reads `1`).
    MirrorInterior,
}

impl Boundary {
    pub const ALL: [Boundary; 5] = [
        Boundary::Constant,
        Boundary::RepeatEdge,
        Boundary::RepeatImage,
        Boundary::MirrorImage,
        Boundary::MirrorInterior,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Constant => "constant_exterior",
            Boundary::RepeatEdge => "repeat_edge",
            Boundary::RepeatImage => "repeat_image",
            Boundary::MirrorImage => "mirror_image",
            Boundary::MirrorInterior => "mirror_interior",
        }
    }
    pub fn from_name(name: &str) -> Option<Boundary> {
        Boundary::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// `let xb = repeat_edge(x);`: a name that reads `x` at any index, the boundary rule
/// deciding what lies outside it.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewAst {
    pub name: Name,
    pub boundary: Boundary,
    /// Where the boundary function is named.
    pub func_loc: Loc,
    pub tensor: Name,
    /// The value outside (`constant_exterior` only).
    pub value: Option<ExprAst>,
    /// How many stages come before it: it may be read from the next stage on.
    pub before_stage: usize,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// Binary operators of the expression language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOpAst {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOpAst {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOpAst::Add => "+",
            BinOpAst::Sub => "-",
            BinOpAst::Mul => "*",
            BinOpAst::Div => "/",
            BinOpAst::Rem => "%",
            BinOpAst::Lt => "<",
            BinOpAst::Le => "<=",
            BinOpAst::Gt => ">",
            BinOpAst::Ge => ">=",
            BinOpAst::Eq => "==",
            BinOpAst::Ne => "!=",
            BinOpAst::And => "&&",
            BinOpAst::Or => "||",
        }
    }
    /// Binding strength, as in Rust: `||` < `&&` < comparisons < `+ -` < `* / %`.
    pub fn precedence(self) -> u8 {
        match self {
            BinOpAst::Or => 1,
            BinOpAst::And => 2,
            BinOpAst::Lt | BinOpAst::Le | BinOpAst::Gt | BinOpAst::Ge | BinOpAst::Eq | BinOpAst::Ne => 3,
            BinOpAst::Add | BinOpAst::Sub => 4,
            BinOpAst::Mul | BinOpAst::Div | BinOpAst::Rem => 5,
        }
    }
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }
    pub fn is_arithmetic(self) -> bool {
        self.precedence() >= 4
    }
}

/// An expression with its location (the whole expression where spans can be joined,
/// else its first token).
#[derive(Clone, Debug, PartialEq)]
pub struct ExprAst {
    pub kind: ExprKind,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal; `suffix` is the type name of `2i32` (or of `i32::MAX`).
    Int {
        value: i128,
        suffix: Option<Name>,
    },
    /// A float literal (`1.5`, `2.0f32`) or a float constant (`f32::INFINITY`).
    Float {
        value: f64,
        text: String,
        suffix: Option<Name>,
    },
    Bool(bool),
    /// An axis, a dim or a scalar parameter.
    Name(String),
    /// `a[i, k]`
    Index {
        tensor: Name,
        indices: Vec<ExprAst>,
    },
    Unary {
        op: UnOp,
        expr: Box<ExprAst>,
    },
    Binary {
        op: BinOpAst,
        op_loc: Loc,
        lhs: Box<ExprAst>,
        rhs: Box<ExprAst>,
    },
    /// `x as f64`
    Cast {
        expr: Box<ExprAst>,
        to: Name,
    },
    /// `if cond { then } else { otherwise }`
    If {
        cond: Box<ExprAst>,
        then: Box<ExprAst>,
        otherwise: Box<ExprAst>,
    },
    /// `(e)`, kept so messages show the user's parentheses.
    Paren(Box<ExprAst>),
    /// `exp(x)`, `max(x, y)`, `fma(a, b, c)`
    Call {
        func: Name,
        args: Vec<ExprAst>,
    },
    /// `sum(e for k in 0..K, r in lo..hi)`
    Reduce {
        op: ReduceOp,
        op_loc: Loc,
        source: Box<ExprAst>,
        axes: Vec<ReduceAxis>,
    },
    /// `reduce(e for k in .., identity, |a, b| combined)`
    CustomReduce(Box<CustomReduceAst>),
    /// `{ let v = e; let w = f; value }`: names for values, in scope in the later lets and
    /// in `value`.
    Block {
        lets: Vec<LetAst>,
        value: Box<ExprAst>,
    },
}

/// `let NAME = value;` inside a block.
#[derive(Clone, Debug, PartialEq)]
pub struct LetAst {
    pub name: Name,
    pub value: ExprAst,
}

/// `reduce(e for k in lo..hi, identity, |a, b| combined)`, or over several values at
/// once, `(v[i], w[i]) = reduce((e, f) for k in .., (id_e, id_f), |(a0, a1), (b0, b1)|
/// (c0, c1))`: a reduction with a combiner the user writes. Every stage the reduction
/// defines has this same node (the checker takes the stages of one `op_loc` together).
#[derive(Clone, Debug, PartialEq)]
pub struct CustomReduceAst {
    /// The `reduce` token.
    pub op_loc: Loc,
    /// Every component's value (one for a single value).
    pub sources: Vec<ExprAst>,
    pub axes: Vec<ReduceAxis>,
    pub identity: Vec<ExprAst>,
    /// The combiner's parameters: the accumulated value and the new one.
    pub lhs: Vec<Name>,
    pub rhs: Vec<Name>,
    pub combine: Vec<ExprAst>,
}

/// One `k in lo..hi` of a reduction.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceAxis {
    pub name: Name,
    pub lo: ExprAst,
    pub hi: ExprAst,
}

impl ExprAst {
    /// The expression without enclosing parentheses.
    pub fn strip_parens(&self) -> &ExprAst {
        match &self.kind {
            ExprKind::Paren(e) => e.strip_parens(),
            _ => self,
        }
    }

    /// Whether the expression is built only from unsuffixed literals, so that its type
    /// comes from its context (`2` in `a[i] * 2`, `-1.0` in `max(x, -1.0)`).
    pub fn is_flexible_literal(&self) -> bool {
        match &self.kind {
            ExprKind::Int { suffix: None, .. } | ExprKind::Float { suffix: None, .. } => true,
            ExprKind::Unary { op: UnOp::Neg, expr } | ExprKind::Paren(expr) => expr.is_flexible_literal(),
            ExprKind::Binary { op, lhs, rhs, .. } => {
                op.is_arithmetic() && lhs.is_flexible_literal() && rhs.is_flexible_literal()
            }
            _ => false,
        }
    }
}

/// `e` as the block of an `if` branch: `{ e }`, or the block itself.
fn braced(f: &mut fmt::Formatter<'_>, e: &ExprAst) -> fmt::Result {
    match e.kind {
        ExprKind::Block { .. } => write!(f, "{e}"),
        _ => write!(f, "{{ {e} }}"),
    }
}

fn comma_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (k, it) in items.iter().enumerate() {
        if k > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{it}")?;
    }
    Ok(())
}

/// Prints the expression as the user wrote it (up to spacing), for messages.
impl fmt::Display for ExprAst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Int { value, suffix } => {
                write!(f, "{value}")?;
                if let Some(s) = suffix {
                    f.write_str(&s.name)?;
                }
                Ok(())
            }
            ExprKind::Float { text, .. } => f.write_str(text),
            ExprKind::Bool(b) => write!(f, "{b}"),
            ExprKind::Name(n) => f.write_str(n),
            ExprKind::Index { tensor, indices } => {
                write!(f, "{}[", tensor.name)?;
                comma_list(f, indices)?;
                f.write_str("]")
            }
            ExprKind::Unary { op, expr } => {
                f.write_str(if *op == UnOp::Neg { "-" } else { "!" })?;
                write!(f, "{expr}")
            }
            ExprKind::Binary { op, lhs, rhs, .. } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            ExprKind::Cast { expr, to } => write!(f, "{expr} as {}", to.name),
            ExprKind::If { cond, then, otherwise } => {
                write!(f, "if {cond} ")?;
                braced(f, then)?;
                f.write_str(" else ")?;
                if matches!(otherwise.kind, ExprKind::If { .. }) {
                    write!(f, "{otherwise}")
                } else {
                    braced(f, otherwise)
                }
            }
            ExprKind::Block { lets, value } => {
                f.write_str("{ ")?;
                for l in lets {
                    write!(f, "let {} = {}; ", l.name.name, l.value)?;
                }
                write!(f, "{value} }}")
            }
            ExprKind::Paren(e) => write!(f, "({e})"),
            ExprKind::Call { func, args } => {
                write!(f, "{}(", func.name)?;
                comma_list(f, args)?;
                f.write_str(")")
            }
            ExprKind::Reduce { op, source, axes, .. } => {
                write!(f, "{}({source} for ", op.name())?;
                for (k, a) in axes.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{} in {}..{}", a.name.name, a.lo, a.hi)?;
                }
                f.write_str(")")
            }
            ExprKind::CustomReduce(c) => {
                let tuple = |f: &mut fmt::Formatter<'_>, xs: &[ExprAst]| -> fmt::Result {
                    if xs.len() == 1 {
                        return write!(f, "{}", xs[0]);
                    }
                    f.write_str("(")?;
                    comma_list(f, xs)?;
                    f.write_str(")")
                };
                let names = |xs: &[Name]| {
                    let n: Vec<&str> = xs.iter().map(|x| x.name.as_str()).collect();
                    if n.len() == 1 {
                        n[0].to_string()
                    } else {
                        format!("({})", n.join(", "))
                    }
                };
                f.write_str("reduce(")?;
                tuple(f, &c.sources)?;
                f.write_str(" for ")?;
                for (k, a) in c.axes.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{} in {}..{}", a.name.name, a.lo, a.hi)?;
                }
                f.write_str(", ")?;
                tuple(f, &c.identity)?;
                write!(f, ", |{}, {}| ", names(&c.lhs), names(&c.rhs))?;
                tuple(f, &c.combine)?;
                f.write_str(")")
            }
        }
    }
}

/// A `schedule!(TARGET) { ... }` block.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleBlock {
    /// The target as written: `cuda` for an identifier, the string's value for
    /// `"cuda -arch=sm_90"`.
    pub target: String,
    /// The target token.
    pub target_loc: Loc,
    pub stmts: Vec<SchedStmt>,
}

/// One statement of a schedule block.
#[derive(Clone, Debug, PartialEq)]
pub enum SchedStmt {
    /// `let PATTERN = CALL;` or `CALL;`; what the call means is decided when the
    /// schedule is applied.
    Call { pattern: Option<Pattern>, call: SExpr, loc: Loc },
    /// A statement that is not of that form (reported as a `BadStatement` schedule error).
    Bad { what: String, loc: Loc },
}

/// The left-hand side of a `let` in a schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// `let f = ...`
    Single(PatName),
    /// `let (o, i) = ...` or `let [y, x] = ...` (either form destructures any
    /// primitive that returns several values).
    Multi { names: Vec<PatName>, loc: Loc },
}

/// A name in a pattern, or `_`.
#[derive(Clone, Debug, PartialEq)]
pub enum PatName {
    Name(Name),
    Wild(Loc),
}

impl PatName {
    pub fn loc(&self) -> Loc {
        match self {
            PatName::Name(n) => n.loc,
            PatName::Wild(l) => *l,
        }
    }
}

/// An expression of the schedule language: names, `s.i`, `block.x`, calls, indexing,
/// literals and lists.
#[derive(Clone, Debug, PartialEq)]
pub enum SExpr {
    Name(Name),
    /// An integer literal, possibly negated (`32`, `-4`).
    Int {
        value: i64,
        text: String,
        loc: Loc,
    },
    /// Any other literal (`2.5`, `"x"`, an integer too large for `i64`).
    Lit {
        text: String,
        loc: Loc,
    },
    /// `base.field`: `c.i`, `block.x`.
    Field {
        base: Box<SExpr>,
        field: Name,
        loc: Loc,
    },
    /// `base.method(args)`.
    Method {
        base: Box<SExpr>,
        method: Name,
        args: Vec<SExpr>,
        loc: Loc,
    },
    /// `base[index]`: `s.axes()[0]`.
    Index {
        base: Box<SExpr>,
        index: Box<SExpr>,
        loc: Loc,
    },
    /// `[a, b, ...]`
    List {
        items: Vec<SExpr>,
        loc: Loc,
    },
    /// A knob of the search space, `tune!(8, 16, 32)` or `tune!(tile: 8, 16, 32)`: one
    /// of `values`, the first unless a tuning record picks another ([`crate::tune`]).
    Knob {
        /// The name written before `:`, if any (else the knob is named by its place).
        name: Option<Name>,
        values: Vec<SExpr>,
        loc: Loc,
    },
}

impl SExpr {
    pub fn loc(&self) -> Loc {
        match self {
            SExpr::Name(n) => n.loc,
            SExpr::Int { loc, .. }
            | SExpr::Lit { loc, .. }
            | SExpr::Field { loc, .. }
            | SExpr::Method { loc, .. }
            | SExpr::Index { loc, .. }
            | SExpr::List { loc, .. }
            | SExpr::Knob { loc, .. } => *loc,
        }
    }
}

impl fmt::Display for SExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SExpr::Name(n) => f.write_str(&n.name),
            SExpr::Int { text, .. } | SExpr::Lit { text, .. } => f.write_str(text),
            SExpr::Field { base, field, .. } => write!(f, "{base}.{}", field.name),
            SExpr::Method { base, method, args, .. } => {
                write!(f, "{base}.{}(", method.name)?;
                comma_list(f, args)?;
                f.write_str(")")
            }
            SExpr::Index { base, index, .. } => write!(f, "{base}[{index}]"),
            SExpr::List { items, .. } => {
                f.write_str("[")?;
                comma_list(f, items)?;
                f.write_str("]")
            }
            SExpr::Knob { name, values, .. } => {
                f.write_str("tune!(")?;
                if let Some(n) = name {
                    write!(f, "{}: ", n.name)?;
                }
                comma_list(f, values)?;
                f.write_str(")")
            }
        }
    }
}

/// A whole `compute!` input: the kernel and its schedule blocks.
#[derive(Clone, Debug)]
pub struct KernelAst {
    /// Outer attributes, doc comments included.
    pub attrs: Vec<syn::Attribute>,
    pub vis: syn::Visibility,
    pub sig: Signature,
    pub stages: Vec<StageAst>,
    /// Boundary views (`let xb = repeat_edge(x);`), in order.
    pub views: Vec<ViewAst>,
    pub schedules: Vec<ScheduleBlock>,
}
