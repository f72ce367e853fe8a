//! Type checking of a parsed kernel and its translation to tensor expressions (the
//! rules of docs/LANGUAGE.md §2). Every rule reports a [`FrontendError`] at the offending token
//! and checking goes on: a failed subexpression is "poisoned" (`Err(Poisoned)`) and
//! its parents report nothing more about it, so each mistake is reported once.
//!
//! Scalars keep their declared type, as in Rust: `lo: i32` is an `i32` value, `lo: T` a
//! `T`. Index arithmetic is `i64`: axes and dims are `i64` values, so are `usize`
//! scalars (they are sizes, like dims), and so is every integer scalar inside a tensor
//! index or a reduction range; elsewhere an integer scalar meeting index arithmetic (an
//! `i64` operand that reads no tensor, such as `i + 1`) is widened to `i64` (`i < lo`
//! compares in `i64`). Unsuffixed literals take the type of the other operand, or the
//! type the context expects (the stage's element type, `i64` for indices); with neither,
//! an integer literal is `i64` and a float literal `f64`.

use super::ast::*;
use super::error::FrontendError;
use crate::dtype::DType;
use crate::loc::{Loc, SourceMap};
use crate::te::{Graph, Op, Param, Tensor, TensorId};
use crate::tir::{
    BinOp, CheckKind, CheckSite, CmpOp, Expr, Intrinsic, IterKind, IterVar, Range, Reduce, ReduceOp, TupleReduce, Var,
};
use std::collections::{HashMap, HashSet};

mod bounds;
mod expr;
mod wrap;

/// A dim whose value is given by a `usize` scalar parameter of the same name
/// (`fn f(a: f32[n], n: usize)` or `fn f(n: usize) -> c: f32[n]`): when the kernel is
/// called, `dim` takes the value of `scalar` (and, where an input also has the dim, the
/// two must agree).
#[derive(Clone, Debug, PartialEq)]
pub struct DimBinding {
    /// The `i64` dim variable, in [`Graph::dims`].
    pub dim: Var,
    /// The `u64` scalar parameter, in [`Graph::params`].
    pub scalar: Var,
}

/// The result of checking: the tensor-expression graph and the dims bound by scalars.
pub(crate) struct Checked {
    pub graph: Graph,
    pub dim_bindings: Vec<DimBinding>,
}

/// A subexpression whose error has been reported.
#[derive(Clone, Copy, Debug)]
struct Poisoned;

type R<T> = Result<T, Poisoned>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Input,
    Output,
    Intermediate,
}

impl Role {
    fn noun(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
            Role::Intermediate => "intermediate",
        }
    }
}

#[derive(Clone, Debug)]
struct TensorSym {
    dtype: DType,
    shape: Vec<Expr>,
    role: Role,
    /// Set once the tensor's stage has been checked (inputs: at once).
    id: Option<TensorId>,
    /// Its declaration had an error: reads of it report nothing more.
    poisoned: bool,
}

#[derive(Clone, Debug)]
enum Sym {
    Tensor(TensorSym),
    Scalar(Var),
    Dim(Var),
    /// A boundary view of a tensor (`let xb = repeat_edge(x);`).
    View(ViewSym),
}

#[derive(Clone, Debug)]
struct ViewSym {
    tensor: String,
    boundary: Boundary,
    /// The value outside (`constant_exterior`), of the tensor's type.
    value: Option<Expr>,
}

const TYPES: &str =
    "the types are `bool`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, `f16`, `bf16`, `f32`, `f64`";

struct Checker<'a> {
    sm: &'a SourceMap,
    errors: Vec<FrontendError>,
    graph: Graph,
    syms: HashMap<String, Sym>,
    usize_scalars: HashSet<String>,
    dim_bindings: Vec<DimBinding>,
    /// Every reduction axis name in the kernel, to explain a use outside its reduction.
    all_reduce_axes: HashSet<String>,
    /// The names the stages define, to explain a read before the definition.
    stage_names: HashSet<String>,
    /// The current stage's name and spatial axes.
    stage: String,
    stage_axes: Vec<(String, Var)>,
    /// The dim a stage that reads itself (a recurrence) steps back along, where its
    /// first such read is.
    scan_dim: Option<(usize, Loc)>,
    /// The axes of the reduction being checked.
    reduce_axes: Vec<(String, Var)>,
    /// Checking the bounds of a reduction range: spatial axes are not allowed.
    in_bounds: bool,
    /// Checking the combiner of a `reduce`: its parameters, the only names it sees
    /// besides the kernel's scalars and dims.
    combiner: Option<Vec<(String, Var)>>,
    /// Every check site made so far, by number, with its place in the source.
    sites: Vec<(CheckSite, Loc)>,
    /// For the index sites of a read of another tensor (`x[i, j - 1]`), the same read
    /// through a `repeat_edge` view, for the help of a read out of bounds.
    edge_reads: HashMap<u32, bounds::EdgeRead>,
    /// The tensors whose `repeat_edge` help an error has shown in full: later reads of
    /// them past an edge get the short help.
    edge_help_shown: HashSet<String>,
    /// Checking a tensor index or the bounds of a reduction range: integer scalars are
    /// `i64` values there.
    in_index: bool,
    /// The `let`s of the blocks being checked, innermost last.
    locals: Vec<(String, Local)>,
}

/// The value a block's `let` names.
#[derive(Clone, Debug)]
enum Local {
    /// Checked once; each use is a copy (expressions are pure, so a use computes what
    /// the `let` would have: the generated code's compilers share the copies).
    Value(Expr),
    /// An unsuffixed literal (`let c = 0.5;`), checked at each use so that it takes the
    /// type around it there, as Rust infers it.
    Literal(ExprAst),
    /// Its value had an error (reported): uses report nothing more.
    Poisoned,
}

/// Checks a parsed kernel and builds its graph.
pub(crate) fn check_kernel(ast: &KernelAst, sm: &SourceMap) -> Result<Checked, Vec<FrontendError>> {
    let mut c = Checker {
        sm,
        errors: Vec::new(),
        graph: Graph {
            name: ast.sig.name.name.clone(),
            tensors: Vec::new(),
            params: Vec::new(),
            outputs: Vec::new(),
            dims: Vec::new(),
            checks: Vec::new(),
        },
        syms: HashMap::new(),
        usize_scalars: HashSet::new(),
        dim_bindings: Vec::new(),
        all_reduce_axes: HashSet::new(),
        stage_names: ast.stages.iter().map(|s| s.name.name.clone()).collect(),
        stage: String::new(),
        stage_axes: Vec::new(),
        scan_dim: None,
        reduce_axes: Vec::new(),
        in_bounds: false,
        combiner: None,
        sites: Vec::new(),
        edge_reads: HashMap::new(),
        edge_help_shown: HashSet::new(),
        in_index: false,
        locals: Vec::new(),
    };
    for st in &ast.stages {
        collect_reduce_axes(&st.body, &mut c.all_reduce_axes);
    }
    c.params(&ast.sig.params);
    c.outputs(&ast.sig.outputs);
    let mut k = 0;
    while k < ast.stages.len() {
        for v in ast.views.iter().filter(|v| v.before_stage == k) {
            c.view(v);
        }
        // The stages one `reduce` defines are checked together.
        let group = match &ast.stages[k].body.strip_parens().kind {
            ExprKind::CustomReduce(r) => ast.stages[k..]
                .iter()
                .take_while(
                    |st| matches!(&st.body.strip_parens().kind, ExprKind::CustomReduce(o) if o.op_loc == r.op_loc),
                )
                .count(),
            _ => 0,
        };
        if group > 0 {
            c.custom_reduce_stages(&ast.stages[k..k + group]);
            k += group;
        } else {
            c.stage(&ast.stages[k]);
            k += 1;
        }
    }
    for v in ast.views.iter().filter(|v| v.before_stage >= ast.stages.len()) {
        c.error_help(
            v.name.loc,
            format!("`{}` is declared after the last stage, so nothing reads it", v.name.name),
            "declare it before the stages that read it",
        );
    }
    c.finish(&ast.sig.outputs)
}

fn collect_reduce_axes(e: &ExprAst, out: &mut HashSet<String>) {
    visit_ast(e, &mut |x| match &x.kind {
        ExprKind::Reduce { axes, .. } => out.extend(axes.iter().map(|a| a.name.name.clone())),
        ExprKind::CustomReduce(c) => out.extend(c.axes.iter().map(|a| a.name.name.clone())),
        _ => {}
    });
}

/// The first read of a tensor in `e`.
fn first_read(e: &ExprAst) -> Option<&ExprAst> {
    let mut found = None;
    visit_ast(e, &mut |x| {
        if found.is_none() && matches!(x.kind, ExprKind::Index { .. }) {
            found = Some(x);
        }
    });
    found
}

/// Calls `f` on `e` and every expression inside it.
fn visit_ast<'a>(e: &'a ExprAst, f: &mut impl FnMut(&'a ExprAst)) {
    f(e);
    match &e.kind {
        ExprKind::Index { indices, .. } => indices.iter().for_each(|i| visit_ast(i, f)),
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Paren(expr) => visit_ast(expr, f),
        ExprKind::Binary { lhs, rhs, .. } => {
            visit_ast(lhs, f);
            visit_ast(rhs, f);
        }
        ExprKind::If { cond, then, otherwise } => {
            visit_ast(cond, f);
            visit_ast(then, f);
            visit_ast(otherwise, f);
        }
        ExprKind::Call { args, .. } => args.iter().for_each(|a| visit_ast(a, f)),
        ExprKind::Reduce { source, .. } => visit_ast(source, f),
        ExprKind::CustomReduce(c) => c.sources.iter().for_each(|x| visit_ast(x, f)),
        ExprKind::Block { lets, value } => {
            lets.iter().for_each(|l| visit_ast(&l.value, f));
            visit_ast(value, f)
        }
        ExprKind::Int { .. } | ExprKind::Float { .. } | ExprKind::Bool(_) | ExprKind::Name(_) => {}
    }
}

/// The help for a value `e` of type `from` where `to` is wanted: `e as to`, except that
/// arithmetic widened by a cast (`i8` to `i32`, an integer to a float, `f32` to `f64`) has
/// its operands cast instead: `(w[i, k] * x[k]) as i32` would multiply in `i8` and wrap,
/// `w[i, k] as i32 * x[k] as i32` multiplies in `i32`.
pub(super) fn cast_help(e: &ExprAst, from: DType, to: DType) -> String {
    let same_kind = from.is_integer() == to.is_integer() && from.is_float() == to.is_float();
    let widens = (from.is_integer() && to.is_float()) || (same_kind && to.bits > from.bits);
    if widens && arithmetic(e) {
        format!("cast the operands, so the arithmetic is done in `{to}`: `{}`", operands_cast(e, to))
    } else {
        format!("cast it: `{} as {to}`", castable(e))
    }
}

/// Whether `e` is `+`, `-`, `*` or a negation (whose result a later cast cannot unwrap).
fn arithmetic(e: &ExprAst) -> bool {
    match &e.kind {
        ExprKind::Binary { op, .. } => matches!(op, BinOpAst::Add | BinOpAst::Sub | BinOpAst::Mul),
        ExprKind::Unary { op, .. } => *op == UnOp::Neg,
        ExprKind::Paren(inner) => arithmetic(inner),
        _ => false,
    }
}

/// `e` with each operand of its arithmetic cast to `to`.
fn operands_cast(e: &ExprAst, to: DType) -> String {
    match &e.kind {
        ExprKind::Binary { op, lhs, rhs, .. } if arithmetic(e) => {
            let side = |x: &ExprAst| {
                if arithmetic(x) {
                    format!("({})", operands_cast(x, to))
                } else {
                    format!("{} as {to}", castable(x))
                }
            };
            format!("{} {} {}", side(lhs), op.symbol(), side(rhs))
        }
        ExprKind::Unary { expr, .. } if arithmetic(e) => format!("-({})", operands_cast(expr, to)),
        ExprKind::Paren(inner) => operands_cast(inner, to),
        _ => format!("{} as {to}", castable(e)),
    }
}

/// `e` as it would be written as the operand of `as`.
fn castable(e: &ExprAst) -> String {
    match e.kind {
        ExprKind::Binary { .. } | ExprKind::Cast { .. } | ExprKind::If { .. } | ExprKind::Unary { .. } => {
            format!("({e})")
        }
        ExprKind::Block { .. } => format!("({e})"),
        _ => e.to_string(),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn quoted_list<'s>(items: impl IntoIterator<Item = &'s str>) -> String {
    items.into_iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
}

/// Whether `v` is a value of the integer type `t`.
fn int_fits(v: i128, t: DType) -> bool {
    let bits = u32::from(t.bits.clamp(1, 64));
    if t.is_uint() {
        v >= 0 && v < (1i128 << bits)
    } else {
        v >= -(1i128 << (bits - 1)) && v < (1i128 << (bits - 1))
    }
}

impl<'a> Checker<'a> {
    fn error(&mut self, loc: Loc, message: impl Into<String>) {
        self.errors.push(FrontendError::new(self.sm, loc, message));
    }
    fn error_help(&mut self, loc: Loc, message: impl Into<String>, help: impl Into<String>) {
        self.errors.push(FrontendError::new(self.sm, loc, message).with_help(help));
    }

    // ---- Declarations -------------------------------------------------------------

    /// The element type named `n`.
    fn elem_type(&mut self, n: &Name) -> R<DType> {
        match DType::from_name(&n.name) {
            Some(d) => Ok(d),
            None if n.name == "usize" => {
                self.error_help(n.loc, "`usize` is not a tensor element type", "use `u64` or `i64`");
                Err(Poisoned)
            }
            None => {
                self.error_help(n.loc, format!("unknown type `{}`", n.name), TYPES);
                Err(Poisoned)
            }
        }
    }

    /// What `name` is, with its article: "an input", "a dim".
    fn what_is(&self, name: &str) -> &'static str {
        match self.syms.get(name) {
            Some(Sym::Tensor(t)) => match t.role {
                Role::Input => "an input",
                Role::Output => "an output",
                Role::Intermediate => "an intermediate",
            },
            Some(Sym::Scalar(_)) => "a scalar parameter",
            Some(Sym::Dim(_)) => "a dim",
            Some(Sym::View(_)) => "a boundary view",
            None => "a name",
        }
    }

    /// Whether `name` is a value without indices (a dim or a scalar), which an axis
    /// may not shadow. Axes may share a tensor's name: `x[i]` is always a read.
    fn is_value_name(&self, name: &str) -> bool {
        matches!(self.syms.get(name), Some(Sym::Scalar(_) | Sym::Dim(_)))
    }

    /// Reports `name` if it starts with `__`: such names are the generated code's (its
    /// locals and items live beside the parameters and outputs). True if reserved.
    fn reserved(&mut self, name: &Name) -> bool {
        let bare = name.name.strip_prefix("r#").unwrap_or(&name.name);
        if !bare.starts_with("__") {
            return false;
        }
        self.error_help(
            name.loc,
            format!("`{}` is reserved: names starting with `__` belong to the code `compute!` generates", name.name),
            format!("rename it, for example `{}`", bare.trim_start_matches('_')),
        );
        true
    }

    /// Reports `name` if it is already declared; true if it is new.
    fn check_new_name(&mut self, name: &Name) -> bool {
        if self.syms.contains_key(&name.name) {
            let what = self.what_is(&name.name);
            self.error_help(
                name.loc,
                format!("duplicate name `{}`", name.name),
                format!("`{}` is already the name of {what}; choose another name", name.name),
            );
            return false;
        }
        true
    }

    /// The dim variable for a `usize` scalar used as a dim.
    fn bound_dim(&mut self, scalar: &Var) -> Var {
        if let Some(b) = self.dim_bindings.iter().find(|b| b.scalar == *scalar) {
            return b.dim.clone();
        }
        let dim = Var::index(scalar.name());
        self.graph.dims.push(dim.clone());
        self.dim_bindings.push(DimBinding { dim: dim.clone(), scalar: scalar.clone() });
        dim
    }

    /// One dim of a declared shape. Only inputs introduce new dim names.
    fn dim(&mut self, d: &Dim, owner: &str, role: Role) -> R<Expr> {
        match d {
            Dim::Lit { value, loc } => match i64::try_from(*value) {
                Ok(v) => Ok(Expr::int(v)),
                Err(_) => {
                    self.error(*loc, format!("dim `{value}` is too large"));
                    Err(Poisoned)
                }
            },
            Dim::Name(n) => match self.syms.get(&n.name).cloned() {
                Some(Sym::Dim(v)) => Ok(Expr::var(&v)),
                Some(Sym::Scalar(v)) if self.usize_scalars.contains(&n.name) => Ok(Expr::var(&self.bound_dim(&v))),
                Some(Sym::Scalar(v)) => {
                    self.error_help(
                        n.loc,
                        format!("`{}` is a `{}` parameter, not a dim", n.name, v.dtype()),
                        format!("a dim is bound by an input's shape or by a parameter `{}: usize`", n.name),
                    );
                    Err(Poisoned)
                }
                Some(Sym::Tensor(_) | Sym::View(_)) => {
                    self.error(n.loc, format!("`{}` is a tensor, not a dim", n.name));
                    Err(Poisoned)
                }
                None if role == Role::Input => {
                    let v = Var::index(&n.name);
                    self.graph.dims.push(v.clone());
                    self.syms.insert(n.name.clone(), Sym::Dim(v.clone()));
                    Ok(Expr::var(&v))
                }
                None => {
                    self.error_help(
                        n.loc,
                        format!("dim `{}` of {} `{owner}` is not bound by any input", n.name, role.noun()),
                        format!(
                            "use `{}` in the shape of an input tensor, or add a parameter `{}: usize`",
                            n.name, n.name
                        ),
                    );
                    Err(Poisoned)
                }
            },
        }
    }

    /// The dtype and shape of a declared tensor type.
    fn tensor_type(&mut self, ty: &TensorType, owner: &str, role: Role) -> R<(DType, Vec<Expr>)> {
        let dtype = self.elem_type(&ty.dtype);
        let mut shape = Vec::new();
        let mut ok = true;
        for d in &ty.dims {
            match self.dim(d, owner, role) {
                Ok(e) => shape.push(e),
                Err(_) => ok = false,
            }
        }
        match (dtype, ok) {
            (Ok(d), true) => Ok((d, shape)),
            _ => Err(Poisoned),
        }
    }

    fn params(&mut self, params: &[ParamAst]) {
        // Scalars first, so that a `usize` scalar declared after a tensor still binds
        // the tensor's dim of the same name.
        let mut seen: HashSet<&str> = HashSet::new();
        let mut skip = vec![false; params.len()];
        for (k, p) in params.iter().enumerate() {
            let name = p.name();
            // A reserved name is reported and otherwise checked as any other.
            self.reserved(name);
            if !seen.insert(&name.name) {
                self.error_help(
                    name.loc,
                    format!("duplicate parameter `{}`", name.name),
                    "each parameter needs its own name",
                );
                skip[k] = true;
            }
        }
        let mut scalar_vars: Vec<Option<Var>> = vec![None; params.len()];
        for (k, p) in params.iter().enumerate() {
            if let (ParamAst::Scalar { name, ty }, false) = (p, skip[k]) {
                let dtype = if ty.name == "usize" {
                    self.usize_scalars.insert(name.name.clone());
                    Ok(DType::USIZE)
                } else {
                    self.elem_type(ty)
                };
                if let Ok(dtype) = dtype {
                    let v = Var::new(&name.name, dtype);
                    self.syms.insert(name.name.clone(), Sym::Scalar(v.clone()));
                    scalar_vars[k] = Some(v);
                }
            }
        }
        for (k, p) in params.iter().enumerate() {
            match p {
                ParamAst::Scalar { .. } => {
                    if let Some(v) = scalar_vars[k].take() {
                        self.graph.params.push(Param::Scalar(v));
                    }
                }
                ParamAst::Tensor { name, ty } => {
                    if skip[k] || !self.check_new_name(name) {
                        continue;
                    }
                    let Ok((dtype, shape)) = self.tensor_type(ty, &name.name, Role::Input) else {
                        self.poison_tensor(name, Role::Input);
                        continue;
                    };
                    let rank = shape.len();
                    let id = self.graph.add(Tensor {
                        name: name.name.clone(),
                        dtype,
                        shape: shape.clone(),
                        op: Op::Placeholder,
                        loc: name.loc,
                    });
                    self.graph.params.push(Param::Tensor(id));
                    debug_assert_eq!(rank, self.graph.tensor(id).shape.len());
                    self.syms.insert(
                        name.name.clone(),
                        Sym::Tensor(TensorSym { dtype, shape, role: Role::Input, id: Some(id), poisoned: false }),
                    );
                }
            }
        }
    }

    /// Declares a tensor whose declaration failed, so uses of it report nothing more.
    fn poison_tensor(&mut self, name: &Name, role: Role) {
        self.syms.insert(
            name.name.clone(),
            Sym::Tensor(TensorSym { dtype: DType::F32, shape: Vec::new(), role, id: None, poisoned: true }),
        );
    }

    fn outputs(&mut self, outputs: &[OutputAst]) {
        for o in outputs {
            self.reserved(&o.name);
            if !self.check_new_name(&o.name) {
                continue;
            }
            match self.tensor_type(&o.ty, &o.name.name, Role::Output) {
                Ok((dtype, shape)) => {
                    self.syms.insert(
                        o.name.name.clone(),
                        Sym::Tensor(TensorSym { dtype, shape, role: Role::Output, id: None, poisoned: false }),
                    );
                }
                Err(_) => self.poison_tensor(&o.name, Role::Output),
            }
        }
    }

    // ---- Stages -------------------------------------------------------------------

    /// The tensor a stage defines: its type and shape, or `None` (reported) when the
    /// stage cannot define it.
    fn stage_target(&mut self, st: &StageAst) -> Option<TensorSym> {
        let name = &st.name;
        if st.is_let {
            if let Some(Sym::Tensor(TensorSym { role: Role::Output, .. })) = self.syms.get(&name.name) {
                self.error_help(
                    name.loc,
                    format!("`{}` is an output, not an intermediate", name.name),
                    format!(
                        "write the output's stage without `let`: `{}[{}] = {};`",
                        name.name,
                        st.axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                        st.body
                    ),
                );
                // Reported: not "never written" as well.
                if let Some(Sym::Tensor(t)) = self.syms.get_mut(&name.name) {
                    t.poisoned = true;
                }
                return None;
            }
            if !self.check_new_name(name) {
                return None;
            }
            let ty = st.ty.as_ref()?;
            match self.tensor_type(ty, &name.name, Role::Intermediate) {
                Ok((dtype, shape)) => {
                    let sym = TensorSym { dtype, shape, role: Role::Intermediate, id: None, poisoned: false };
                    self.syms.insert(name.name.clone(), Sym::Tensor(sym.clone()));
                    Some(sym)
                }
                Err(_) => {
                    self.poison_tensor(name, Role::Intermediate);
                    None
                }
            }
        } else {
            match self.syms.get(&name.name).cloned() {
                Some(Sym::Tensor(t)) if t.role == Role::Output && t.id.is_none() => (!t.poisoned).then_some(t),
                Some(Sym::Tensor(t)) if t.role == Role::Output => {
                    self.error_help(
                        name.loc,
                        format!("output `{}` is written twice", name.name),
                        "each tensor is defined by one stage; compute the parts in intermediates and combine them with `if`",
                    );
                    None
                }
                Some(Sym::Tensor(t)) if t.role == Role::Input => {
                    self.error(name.loc, format!("cannot write to input `{}`", name.name));
                    None
                }
                Some(Sym::Tensor(_)) => {
                    self.error(name.loc, format!("intermediate `{}` is already defined", name.name));
                    None
                }
                Some(Sym::Scalar(_)) | Some(Sym::Dim(_)) | Some(Sym::View(_)) => {
                    let what = self.what_is(&name.name);
                    self.error(name.loc, format!("cannot write to `{}`: it is {what}", name.name));
                    None
                }
                None => {
                    // The type and shape of the first tensor of the same rank the stage
                    // reads: a declaration that compiles when the stage computes that type.
                    let axes: Vec<&str> = st.axes.iter().map(|a| a.name.as_str()).collect();
                    let mut reads = Vec::new();
                    tensors_read(&st.body, &mut reads);
                    let like = reads.iter().find_map(|r| match self.syms.get(*r) {
                        Some(Sym::Tensor(t)) if t.shape.len() == axes.len() => Some(t),
                        _ => None,
                    });
                    let help = match like {
                        Some(t) => format!(
                            "declare it as an intermediate: `let {}[{}]: {}[{}] = {};`",
                            name.name,
                            axes.join(", "),
                            t.dtype,
                            t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
                            st.body
                        ),
                        None => format!(
                            "declare it as an intermediate with `let`, its type and its shape, or add `{}` to the outputs",
                            name.name
                        ),
                    };
                    self.error_help(
                        name.loc,
                        format!("`{}` is neither an output nor declared with `let`", name.name),
                        help,
                    );
                    None
                }
            }
        }
    }

    /// `let xb = repeat_edge(x);`: `xb` reads `x` anywhere.
    fn view(&mut self, v: &ViewAst) {
        if self.reserved(&v.name) || !self.check_new_name(&v.name) {
            return;
        }
        match self.view_sym(v) {
            Some(sym) => {
                self.syms.insert(v.name.name.clone(), Sym::View(sym));
            }
            // Reads of a view that had an error report nothing more.
            None => self.poison_tensor(&v.name, Role::Intermediate),
        }
    }

    fn view_sym(&mut self, v: &ViewAst) -> Option<ViewSym> {
        let t = match self.syms.get(&v.tensor.name).cloned() {
            Some(Sym::Tensor(t)) => t,
            Some(Sym::View(_)) => {
                self.error_help(
                    v.tensor.loc,
                    format!("`{}` is already a boundary view", v.tensor.name),
                    "a view takes a tensor: give the boundary condition the tensor itself",
                );
                return None;
            }
            Some(_) => {
                let what = self.what_is(&v.tensor.name);
                self.error(v.tensor.loc, format!("`{}` is {what}, not a tensor", v.tensor.name));
                return None;
            }
            None if self.stage_names.contains(&v.tensor.name) => {
                self.error_help(
                    v.tensor.loc,
                    format!("`{}` is used before it is defined", v.tensor.name),
                    format!("declare the view after the stage that defines `{}`", v.tensor.name),
                );
                return None;
            }
            None => {
                self.error(v.tensor.loc, format!("unknown tensor `{}`", v.tensor.name));
                return None;
            }
        };
        if t.poisoned {
            return None;
        }
        if t.id.is_none() {
            self.error_help(
                v.tensor.loc,
                format!("`{}` is used before it is defined", v.tensor.name),
                format!("declare the view after the stage that defines `{}`", v.tensor.name),
            );
            return None;
        }
        let value = match &v.value {
            Some(e) => match self.expr(e, Some(t.dtype)) {
                Ok(x) if x.dtype() == t.dtype => Some(x),
                Ok(x) => {
                    self.error_help(
                        e.loc,
                        format!(
                            "mismatched types: `{}` is `{}`, but the value outside it, `{e}`, is `{}`",
                            v.tensor.name,
                            t.dtype,
                            x.dtype()
                        ),
                        cast_help(e, x.dtype(), t.dtype),
                    );
                    return None;
                }
                Err(_) => return None,
            },
            None => None,
        };
        Some(ViewSym { tensor: v.tensor.name.clone(), boundary: v.boundary, value })
    }

    fn stage(&mut self, st: &StageAst) {
        let Some(target) = self.stage_target(st) else {
            return;
        };
        let (axes, axes_ok) = self.enter_stage(st, &target);
        let name = &st.name;
        let body = match &st.body.strip_parens().kind {
            ExprKind::Reduce { op, source, axes: raxes, .. } => self.reduce(*op, source, raxes, target.dtype),
            _ => self.expr_of_type(&st.body, target.dtype, |t| {
                format!("`{}` is `{}`, but its right-hand side `{}` is `{t}`", name.name, target.dtype, st.body)
            }),
        };
        self.stage_axes.clear();
        self.scan_dim = None;
        let body = self.discharged(body, axes_ok && st.axes.len() == target.shape.len(), &axes);
        self.add_tensor(name, &target, axes, body);
    }

    /// Makes `st` the current stage: its name, and its axes in scope (each an `IterVar`
    /// over its dim), with whether they are all well named.
    fn enter_stage(&mut self, st: &StageAst, target: &TensorSym) -> (Vec<IterVar>, bool) {
        let name = &st.name;
        self.stage = name.name.clone();
        if st.axes.len() != target.shape.len() {
            let example: Vec<&str> =
                ["i", "j", "k", "l", "m", "n", "o", "p"].into_iter().cycle().take(target.shape.len()).collect();
            self.error_help(
                name.loc,
                format!(
                    "`{}` has {}, but the stage names {}",
                    name.name,
                    plural(target.shape.len(), "dim", "dims"),
                    plural(st.axes.len(), "axis", "axes")
                ),
                format!("name one axis per dim: `{}[{}] = ...`", name.name, example.join(", ")),
            );
        }
        let mut axes: Vec<IterVar> = Vec::new();
        self.stage_axes.clear();
        let mut axes_ok = true;
        for (d, ax) in st.axes.iter().enumerate() {
            // Axes past the rank (already reported) stay in scope, to avoid more errors.
            let extent = target.shape.get(d).cloned().unwrap_or_else(|| Expr::int(1));
            if self.stage_axes.iter().any(|(n, _)| *n == ax.name) {
                self.error(ax.loc, format!("axis `{}` is named twice", ax.name));
                axes_ok = false;
                continue;
            }
            if self.is_value_name(&ax.name) {
                let what = self.what_is(&ax.name);
                self.error_help(
                    ax.loc,
                    format!("axis `{}` has the name of {what}", ax.name),
                    "give the axis a name of its own",
                );
                axes_ok = false;
                continue;
            }
            let v = Var::index(&ax.name);
            self.stage_axes.push((ax.name.clone(), v.clone()));
            axes.push(IterVar { var: v, dom: Range::from_extent(extent), kind: IterKind::DataPar });
        }
        (axes, axes_ok)
    }

    /// The stage's body with the checks the bounds prove removed (their failures
    /// reported); `false` when it has errors: the graph is not returned then, and the
    /// tensor is still added so that later stages can read it without more errors.
    fn discharged(&mut self, body: R<Expr>, ok: bool, axes: &[IterVar]) -> Expr {
        match (body, ok) {
            (Ok(b), true) => {
                let (b, mut failures) = bounds::discharge(b, axes, &self.graph.dims, &self.sites, &self.edge_reads);
                // A read under a `let` used twice is checked twice: reported once.
                let mut seen = HashSet::new();
                failures.retain(|f| seen.insert(f.site));
                for f in failures {
                    let loc = self.sites[f.site as usize].1;
                    let help = match f.again {
                        Some((t, short)) if !self.edge_help_shown.insert(t.clone()) => short,
                        _ => f.help,
                    };
                    self.error_help(loc, f.message, help);
                }
                b
            }
            _ => Expr::Bool(false),
        }
    }

    fn add_tensor(&mut self, name: &Name, target: &TensorSym, axes: Vec<IterVar>, body: Expr) {
        let id = self.graph.add(Tensor {
            name: name.name.clone(),
            dtype: target.dtype,
            shape: target.shape.clone(),
            op: Op::Compute { axes, body },
            loc: name.loc,
        });
        if let Some(Sym::Tensor(t)) = self.syms.get_mut(&name.name) {
            t.id = Some(id);
        }
    }

    /// The stages of one `reduce` (one per component; one for a single value): checked
    /// together, each a tensor with the same reduction and its own component.
    fn custom_reduce_stages(&mut self, sts: &[StageAst]) {
        let ExprKind::CustomReduce(c) = &sts[0].body.strip_parens().kind else { unreachable!("a custom reduction") };
        let targets: Vec<Option<TensorSym>> = sts.iter().map(|st| self.stage_target(st)).collect();
        let mut ok = targets.iter().all(Option::is_some);
        let tys: Vec<TensorSym> = targets.into_iter().flatten().collect();
        if ok {
            for (st, t) in sts.iter().zip(&tys).skip(1) {
                if t.shape != tys[0].shape {
                    let dims = |t: &TensorSym| t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
                    self.error_help(
                        st.name.loc,
                        format!(
                            "`{}` has the shape [{}], but `{}` has [{}]",
                            st.name.name,
                            dims(t),
                            sts[0].name.name,
                            dims(&tys[0])
                        ),
                        "the stages one reduction defines have one shape",
                    );
                    ok = false;
                }
            }
        }
        if !ok {
            // Reported; reads of the stages that were fine report nothing more.
            for st in sts {
                if let Some(Sym::Tensor(t)) = self.syms.get_mut(&st.name.name) {
                    t.poisoned = true;
                }
            }
            return;
        }
        let (axes, axes_ok) = self.enter_stage(&sts[0], &tys[0]);
        let names: Vec<&str> = sts.iter().map(|st| st.name.name.as_str()).collect();
        let dtypes: Vec<DType> = tys.iter().map(|t| t.dtype).collect();
        let red = self.custom_reduce(c, &names, &dtypes);
        self.stage_axes.clear();
        self.scan_dim = None;
        let ok = axes_ok && sts[0].axes.len() == tys[0].shape.len();
        let body = self.discharged(red.map(|r| Expr::Reduce(Box::new(r))), ok, &axes);
        let base = self.graph.tensors.len() as u32;
        let outputs: Vec<TensorId> = (0..sts.len() as u32).map(|k| TensorId(base + k)).collect();
        for (index, (st, t)) in sts.iter().zip(&tys).enumerate() {
            let body = match &body {
                Expr::Reduce(r) => Expr::Reduce(Box::new(r.component(index, &outputs))),
                b => b.clone(),
            };
            self.add_tensor(&st.name, t, axes.clone(), body);
        }
    }

    /// `reduce(values for axes, identity, |acc, x| combined)` with one component per
    /// stage in `names` of type `dtypes`: the values are checked in the reduction's
    /// scope, the identity must be constant, and the combiner sees only its parameters
    /// (and the kernel's scalars and dims).
    fn custom_reduce(&mut self, c: &CustomReduceAst, names: &[&str], dtypes: &[DType]) -> R<Reduce> {
        let ivs = self.enter_reduce(&c.axes);
        let mut ok = ivs.is_some();
        let mut sources = Vec::new();
        for ((x, &d), name) in c.sources.iter().zip(dtypes).zip(names) {
            match self.expr_of_type(x, d, |t| format!("`{name}` is `{d}`, but the reduced expression `{x}` is `{t}`")) {
                Ok(e) => sources.push(e),
                Err(_) => ok = false,
            }
        }
        self.reduce_axes.clear();
        let mut identity = Vec::new();
        for ((x, &d), name) in c.identity.iter().zip(dtypes).zip(names) {
            match self.expr_of_type(x, d, |t| format!("`{name}` is `{d}`, but its identity `{x}` is `{t}`")) {
                Ok(e) => {
                    let e = crate::arith::Analyzer::new().simplify(&e);
                    if matches!(e, Expr::Int { .. } | Expr::Float { .. } | Expr::Bool(_)) {
                        identity.push(e);
                    } else {
                        self.error_help(
                            x.loc,
                            format!("the identity of a reduction is a constant, but `{x}` is not"),
                            "the identity is what reducing nothing gives: `0.0` for a sum, `f32::NEG_INFINITY` for a max",
                        );
                        ok = false;
                    }
                }
                Err(_) => ok = false,
            }
        }
        for (&d, name) in dtypes.iter().zip(names) {
            if d.is_bool() {
                self.error(c.op_loc, format!("cannot `reduce` `bool` values (`{name}`)"));
                ok = false;
            }
        }
        let (lhs, rhs, combine) = self.combiner(c, names, dtypes)?;
        let (Some(ivs), true) = (ivs, ok) else {
            return Err(Poisoned);
        };
        let tuple = TupleReduce { sources, identity, lhs, rhs, combine, index: 0, outputs: Vec::new() };
        Ok(Reduce { op: ReduceOp::Sum, source: tuple.sources[0].clone(), axes: ivs, tuple: Some(Box::new(tuple)) })
    }

    /// `x` checked as a value of type `d`; another type is reported as "mismatched
    /// types: " and `what(its type)`, with a cast as the help.
    fn expr_of_type(&mut self, x: &ExprAst, d: DType, what: impl FnOnce(DType) -> String) -> R<Expr> {
        let e = self.expr(x, Some(d))?;
        self.of_type(x, e, d, what)
    }

    /// [`Self::expr_of_type`] of `e`, already checked from `x`.
    fn of_type(&mut self, x: &ExprAst, e: Expr, d: DType, what: impl FnOnce(DType) -> String) -> R<Expr> {
        if e.dtype() != d {
            self.error_help(x.loc, format!("mismatched types: {}", what(e.dtype())), cast_help(x, e.dtype(), d));
            return Err(Poisoned);
        }
        Ok(e)
    }

    /// The combiner of a `reduce`: its parameters (one variable per component for the
    /// accumulated value and for the new one) and each component's combined value.
    #[allow(clippy::type_complexity)]
    fn combiner(
        &mut self,
        c: &CustomReduceAst,
        names: &[&str],
        dtypes: &[DType],
    ) -> R<(Vec<Var>, Vec<Var>, Vec<Expr>)> {
        let mut ok = true;
        if let Some(read) = c.combine.iter().find_map(first_read) {
            self.error_help(
                read.loc,
                format!("the combiner sees only its parameters, but `{read}` reads a tensor"),
                "the values to reduce go before `for`, as in `reduce((x[i, k], 1.0) for k in 0..N, ..)`",
            );
            return Err(Poisoned);
        }
        let mut params: Vec<(String, Var)> = Vec::new();
        let mut vars = (Vec::new(), Vec::new());
        for (side, list) in [(0, &c.lhs), (1, &c.rhs)] {
            for (n, &d) in list.iter().zip(dtypes) {
                if params.iter().any(|(m, _)| *m == n.name) {
                    self.error(n.loc, format!("the combiner's parameter `{}` is named twice", n.name));
                    ok = false;
                }
                let v = Var::new(&n.name, d);
                params.push((n.name.clone(), v.clone()));
                if side == 0 {
                    vars.0.push(v)
                } else {
                    vars.1.push(v)
                }
            }
        }
        let saved = (std::mem::take(&mut self.stage_axes), std::mem::take(&mut self.reduce_axes));
        self.combiner = Some(params);
        let mut combine = Vec::new();
        for ((x, &d), name) in c.combine.iter().zip(dtypes).zip(names) {
            match self.expr_of_type(x, d, |t| format!("`{name}` is `{d}`, but its combined value `{x}` is `{t}`")) {
                Ok(e) => combine.push(e),
                Err(_) => ok = false,
            }
        }
        self.combiner = None;
        (self.stage_axes, self.reduce_axes) = saved;
        if !ok {
            return Err(Poisoned);
        }
        Ok((vars.0, vars.1, combine))
    }

    /// Puts a reduction's axes in scope (`self.reduce_axes`, cleared by the caller):
    /// their `IterVar`s, `None` when a range or a name is wrong (reported; the names are
    /// in scope anyway, to avoid more errors).
    fn enter_reduce(&mut self, axes: &[ReduceAxis]) -> Option<Vec<IterVar>> {
        let mut ivs = Vec::new();
        let mut ok = true;
        let mut names: Vec<(String, Var)> = Vec::new();
        for ax in axes {
            let n = &ax.name;
            let clash = if names.iter().any(|(m, _)| *m == n.name) {
                Some(format!("reduction axis `{}` is named twice", n.name))
            } else if self.stage_axes.iter().any(|(m, _)| *m == n.name) {
                Some(format!("reduction axis `{}` has the name of an axis of `{}`", n.name, self.stage))
            } else if self.is_value_name(&n.name) {
                Some(format!("reduction axis `{}` has the name of {}", n.name, self.what_is(&n.name)))
            } else {
                None
            };
            if let Some(msg) = clash {
                self.error_help(n.loc, msg, "give the reduction axis a name of its own");
                ok = false;
            }
            self.in_bounds = true;
            let lo = self.index_value(&ax.lo, "the start of a reduction range");
            let hi = self.index_value(&ax.hi, "the end of a reduction range");
            self.in_bounds = false;
            // The axis is in scope in the source even when its range is wrong.
            let v = Var::index(&n.name);
            names.push((n.name.clone(), v.clone()));
            let (Ok(lo), Ok(hi)) = (lo, hi) else {
                ok = false;
                continue;
            };
            let extent = match (lo.as_int(), hi.as_int()) {
                (Some(l), Some(h)) => match h.checked_sub(l) {
                    Some(e) if e >= 0 => Expr::int(e),
                    _ => {
                        self.error(ax.lo.loc, format!("the range `{}..{}` is empty or reversed", ax.lo, ax.hi));
                        ok = false;
                        continue;
                    }
                },
                (Some(0), None) => hi,
                _ => Expr::binary(BinOp::Sub, hi, lo.clone()),
            };
            ivs.push(IterVar { var: v, dom: Range { min: lo, extent }, kind: IterKind::Reduce });
        }
        self.reduce_axes = names;
        ok.then_some(ivs)
    }

    fn reduce(&mut self, op: ReduceOp, source: &ExprAst, axes: &[ReduceAxis], dtype: DType) -> R<Expr> {
        let ivs = self.enter_reduce(axes);
        let src = self.expr(source, Some(dtype));
        self.reduce_axes.clear();
        let (src, Some(ivs)) = (src?, ivs) else {
            return Err(Poisoned);
        };
        let stage = self.stage.clone();
        let src = self.of_type(source, src, dtype, |t| {
            format!("`{stage}` is `{dtype}`, but the reduced expression `{source}` is `{t}`")
        })?;
        if dtype.is_bool() {
            self.error(source.loc, format!("cannot `{}` `bool` values", op.name()));
            return Err(Poisoned);
        }
        Ok(Expr::Reduce(Box::new(Reduce::new(op, src, ivs))))
    }

    fn finish(mut self, outputs: &[OutputAst]) -> Result<Checked, Vec<FrontendError>> {
        for o in outputs {
            match self.syms.get(&o.name.name).cloned() {
                Some(Sym::Tensor(t)) if t.role == Role::Output && !t.poisoned => match t.id {
                    Some(id) => {
                        if !self.graph.outputs.contains(&id) {
                            self.graph.outputs.push(id);
                            // An output's location is its declaration in the signature.
                            self.graph.tensor_mut(id).loc = o.name.loc;
                        }
                    }
                    None => {
                        // A stage that compiles as written: fresh axis names (not a name of
                        // this kernel) and a zero of the output's type.
                        let axes: Vec<&str> = ["i", "j", "k", "l", "p", "q", "r", "s", "u", "v", "w", "x", "y", "z"]
                            .into_iter()
                            .filter(|a| !self.syms.contains_key(*a))
                            .take(t.shape.len())
                            .collect();
                        let zero = if t.dtype.is_float() {
                            "0.0"
                        } else if t.dtype.is_bool() {
                            "false"
                        } else {
                            "0"
                        };
                        let help = if axes.len() == t.shape.len() {
                            format!("add a stage that writes it, e.g. `{}[{}] = {zero};`", o.name.name, axes.join(", "))
                        } else {
                            format!("add a stage that writes `{}`", o.name.name)
                        };
                        self.error_help(o.name.loc, format!("output `{}` is never written", o.name.name), help)
                    }
                },
                _ => {}
            }
        }
        if self.errors.is_empty() {
            self.graph.checks = bounds::renumber(&mut self.graph, &self.sites);
            Ok(Checked { graph: self.graph, dim_bindings: self.dim_bindings })
        } else {
            Err(self.errors)
        }
    }
}

/// The names of the tensors `e` reads, in order.
fn tensors_read<'e>(e: &'e ExprAst, out: &mut Vec<&'e str>) {
    visit_ast(e, &mut |x| {
        if let ExprKind::Index { tensor, .. } = &x.kind {
            out.push(&tensor.name);
        }
    });
}
