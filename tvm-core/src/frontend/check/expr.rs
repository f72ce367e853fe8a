//! Type checking of expressions: literals take their type from context, names and
//! tensor reads resolve to axes, dims, scalars and tensors, and every operator, cast and
//! intrinsic checks its operand types (docs/LANGUAGE.md §2).

use super::*;

impl Checker<'_> {
    /// `x` under a new check of site `site` (at `loc` in the source).
    fn check(&mut self, x: Expr, kind: CheckKind, site: CheckSite, loc: Loc) -> Expr {
        let n = self.sites.len() as u32;
        self.sites.push((site, loc));
        Expr::Check { value: Box::new(x), kind, site: n }
    }

    /// An integer value for an index or a range bound: `i64` (other integer types are
    /// cast to it; integer scalars are `i64` values inside it).
    pub(super) fn index_value(&mut self, e: &ExprAst, what: &str) -> R<Expr> {
        let outer = std::mem::replace(&mut self.in_index, true);
        let x = self.expr(e, Some(DType::I64));
        self.in_index = outer;
        let x = x?;
        let t = x.dtype();
        if t == DType::I64 {
            Ok(x)
        } else if t.is_integer() {
            Ok(Expr::cast(DType::I64, x))
        } else {
            self.error_help(
                e.loc,
                format!("{what} must be an integer, but `{e}` is `{t}`"),
                format!("cast it: `{} as i64`", castable(e)),
            );
            Err(Poisoned)
        }
    }

    /// Checks several operands that must have one type: the operands that are not
    /// unsuffixed literals first, then the literals with the type of the first of them.
    fn unify(&mut self, args: &[&ExprAst], expect: Option<DType>) -> Vec<R<Expr>> {
        let mut out: Vec<R<Expr>> = vec![Err(Poisoned); args.len()];
        let mut ty = None;
        let mut failed = false;
        for (k, a) in args.iter().enumerate() {
            if !a.is_flexible_literal() {
                out[k] = self.expr(a, expect);
                match &out[k] {
                    Ok(x) => {
                        ty.get_or_insert(x.dtype());
                    }
                    Err(_) => failed = true,
                }
            }
        }
        if ty.is_none() && failed {
            return out;
        }
        let lit_ty = ty.or(expect);
        for (k, a) in args.iter().enumerate() {
            if a.is_flexible_literal() {
                out[k] = self.expr(a, lit_ty);
            }
        }
        out
    }

    /// Indices for a read of a tensor of `rank` dims that a help line can suggest: the
    /// indices `written`, then the axes in scope that none of them is, then `0`. Only names
    /// of this kernel, so the suggestion compiles as written.
    /// A missing index prefers the stage's axis over a dim of the same name (`bias[j]` for
    /// `bias: f32[N]` in a stage `y[i, j]` of shape `[M, N]`).
    fn index_example(&self, shape: &[Expr], written: &[String]) -> Vec<String> {
        let stage_shape = match self.syms.get(&self.stage) {
            Some(Sym::Tensor(t)) => t.shape.clone(),
            _ => Vec::new(),
        };
        let mut used: Vec<String> = written.to_vec();
        let mut out = Vec::new();
        for (d, dim) in shape.iter().enumerate() {
            if let Some(w) = written.get(d) {
                out.push(w.clone());
                continue;
            }
            let same_dim = self
                .stage_axes
                .iter()
                .zip(&stage_shape)
                .find(|((m, _), e)| *e == dim && !used.contains(m))
                .map(|((m, _), _)| m.clone());
            let any =
                || self.stage_axes.iter().chain(&self.reduce_axes).map(|(m, _)| m.clone()).find(|m| !used.contains(m));
            let pick = same_dim.or_else(any).unwrap_or_else(|| "0".to_string());
            if pick != "0" {
                used.push(pick.clone());
            }
            out.push(pick);
        }
        out
    }

    /// `f(arg for k in 0..K, ..)` for a reduction written without its `for` clause: each
    /// name the argument uses as an index that is not in scope becomes a reduction axis
    /// over the dim it indexes. `None` when there is no such name, or one has no dim.
    fn reduction_example(&self, f: &str, args: &[ExprAst]) -> Option<String> {
        let [arg] = args else { return None };
        let mut axes: Vec<(String, String)> = Vec::new();
        let mut ok = true;
        self.free_indices(arg, &mut axes, &mut ok);
        if !ok || axes.is_empty() {
            return None;
        }
        let fors: Vec<String> = axes.iter().map(|(n, d)| format!("{n} in 0..{d}")).collect();
        Some(format!("{f}({arg} for {})", fors.join(", ")))
    }

    /// The names `e` uses as bare indices that are not in scope, each with the dim it
    /// indexes (`ok` false when a name indexes something without a known dim).
    fn free_indices(&self, e: &ExprAst, out: &mut Vec<(String, String)>, ok: &mut bool) {
        match &e.kind {
            ExprKind::Index { tensor, indices } => {
                for (d, ix) in indices.iter().enumerate() {
                    if let ExprKind::Name(n) = &ix.strip_parens().kind {
                        let in_scope = self.syms.contains_key(n)
                            || self.stage_axes.iter().chain(&self.reduce_axes).any(|(m, _)| m == n);
                        if !in_scope && !out.iter().any(|(m, _)| m == n) {
                            match self.syms.get(&tensor.name) {
                                Some(Sym::Tensor(t)) if d < t.shape.len() => {
                                    out.push((n.clone(), t.shape[d].to_string()))
                                }
                                _ => *ok = false,
                            }
                        }
                    } else {
                        self.free_indices(ix, out, ok);
                    }
                }
            }
            ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Paren(expr) => {
                self.free_indices(expr, out, ok)
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.free_indices(lhs, out, ok);
                self.free_indices(rhs, out, ok);
            }
            ExprKind::If { cond, then, otherwise } => {
                for x in [cond, then, otherwise] {
                    self.free_indices(x, out, ok);
                }
            }
            ExprKind::Call { args, .. } => {
                for x in args {
                    self.free_indices(x, out, ok);
                }
            }
            ExprKind::Block { lets, value } => {
                for l in lets {
                    self.free_indices(&l.value, out, ok);
                }
                self.free_indices(value, out, ok);
            }
            _ => {}
        }
    }

    fn mismatch(&mut self, a: &ExprAst, ta: DType, b: &ExprAst, tb: DType) {
        // Inside an index an integer scalar is an `i64` value (as axes and dims are),
        // whatever its declaration says: say so.
        let widened = [a, b].into_iter().find_map(|e| match &e.strip_parens().kind {
            ExprKind::Name(n) if self.in_index => match self.syms.get(n) {
                Some(Sym::Scalar(v)) if v.dtype().is_integer() && v.dtype() != DType::I64 => Some(format!(
                    " (`{n}` is declared `{}`, but inside an index an integer scalar is an `i64` value, as axes and dims are)",
                    v.dtype()
                )),
                _ => None,
            },
            _ => None,
        });
        self.error_help(
            b.loc,
            format!("mismatched types: `{a}` is `{ta}`, but `{b}` is `{tb}`{}", widened.unwrap_or_default()),
            format!("cast one side, e.g. `{} as {ta}`", castable(b)),
        );
    }

    pub(super) fn expr(&mut self, e: &ExprAst, expect: Option<DType>) -> R<Expr> {
        match &e.kind {
            ExprKind::Int { value, suffix } => self.int_lit(*value, suffix.as_ref(), expect, e),
            ExprKind::Float { value, suffix, .. } => self.float_lit(*value, suffix.as_ref(), expect, e),
            ExprKind::Bool(b) => Ok(Expr::Bool(*b)),
            ExprKind::Name(n) => self.name_value(n, e.loc, expect),
            ExprKind::Index { tensor, indices } => self.read(tensor, indices, e.loc),
            ExprKind::Unary { op: UnOp::Neg, expr } => {
                match &expr.strip_parens().kind {
                    ExprKind::Int { value, suffix: None } => return self.int_lit(-*value, None, expect, e),
                    ExprKind::Float { value, suffix: None, .. } => return self.float_lit(-*value, None, expect, e),
                    _ => {}
                }
                let x = self.expr(expr, expect)?;
                let t = x.dtype();
                if t.is_bool() {
                    self.error_help(
                        e.loc,
                        format!("cannot negate `{expr}`: it is a `bool`"),
                        "use `!` for logical not",
                    );
                    return Err(Poisoned);
                }
                if t.is_uint() {
                    self.error(e.loc, format!("cannot negate `{expr}`: `{t}` is unsigned"));
                    return Err(Poisoned);
                }
                Ok(Expr::Neg(Box::new(x)))
            }
            ExprKind::Unary { op: UnOp::Not, expr } => {
                let x = self.expr(expr, Some(DType::BOOL))?;
                if !x.dtype().is_bool() {
                    self.error_help(
                        e.loc,
                        format!("`!` needs a `bool`, but `{expr}` is `{}`", x.dtype()),
                        format!(
                            "bitwise operators are not supported; compare instead: `{} == {}`",
                            castable(expr),
                            if x.dtype().is_float() { "0.0" } else { "0" }
                        ),
                    );
                    return Err(Poisoned);
                }
                Ok(Expr::not(x))
            }
            ExprKind::Binary { op, op_loc, lhs, rhs } => self.binary(*op, *op_loc, lhs, rhs, expect),
            ExprKind::Cast { expr, to } => self.cast(expr, to),
            ExprKind::If { cond, then, otherwise } => {
                let c = self.expr(cond, Some(DType::BOOL));
                let c = match c {
                    Ok(c) if !c.dtype().is_bool() => {
                        self.error_help(
                            cond.loc,
                            format!("the condition of `if` must be a `bool`, but `{cond}` is `{}`", c.dtype()),
                            format!(
                                "compare it, e.g. `{} != {}`",
                                castable(cond),
                                if c.dtype().is_float() { "0.0" } else { "0" }
                            ),
                        );
                        Err(Poisoned)
                    }
                    c => c,
                };
                let mut v = self.unify(&[then, otherwise], expect).into_iter();
                let (t, o) = (v.next().unwrap_or(Err(Poisoned)), v.next().unwrap_or(Err(Poisoned)));
                let (c, t, o) = (c?, t?, o?);
                if t.dtype() != o.dtype() {
                    self.error(
                        otherwise.loc,
                        format!(
                            "`if` and `else` have different types: `{then}` is `{}`, but `{otherwise}` is `{}`",
                            t.dtype(),
                            o.dtype()
                        ),
                    );
                    return Err(Poisoned);
                }
                Ok(Expr::select(c, t, o))
            }
            ExprKind::Paren(x) => self.expr(x, expect),
            ExprKind::Block { lets, value } => self.block(lets, value, expect),
            ExprKind::Call { func, args } => self.call(func, args, expect),
            ExprKind::CustomReduce(c) => {
                self.error_help(
                    c.op_loc,
                    format!(
                        "a reduction must be the whole right-hand side of its stage, but `reduce(..)` is part of `{}`'s",
                        self.stage
                    ),
                    "compute it in a stage of its own before this one, and read that stage here",
                );
                Err(Poisoned)
            }
            ExprKind::Reduce { op, op_loc, .. } => {
                // The suggestion: a stage of its own with this stage's axes, type and shape
                // (named after both), read where the reduction was.
                let help = match self.syms.get(&self.stage) {
                    Some(Sym::Tensor(t)) => {
                        let name = format!("{}_{}", self.stage, op.name());
                        let axes: Vec<&str> = self.stage_axes.iter().map(|(m, _)| m.as_str()).collect();
                        let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
                        format!(
                            "compute it in a stage of its own before this one, e.g. `let {name}[{axes}]: {}[{}] = {e};`, and read `{name}[{axes}]` here",
                            t.dtype,
                            dims.join(", "),
                            axes = axes.join(", ")
                        )
                    }
                    _ => "compute it in a stage of its own before this one, and read that stage here".to_string(),
                };
                self.error_help(
                    *op_loc,
                    format!(
                        "a reduction must be the whole right-hand side of its stage, but `{}(..)` is part of `{}`'s",
                        op.name(),
                        self.stage
                    ),
                    help,
                );
                Err(Poisoned)
            }
        }
    }

    /// `{ let v = e; .. value }`: each `let` checked once, in order, its name in scope in
    /// the later `let`s and in the value, which is the block's.
    fn block(&mut self, lets: &[LetAst], value: &ExprAst, expect: Option<DType>) -> R<Expr> {
        let depth = self.locals.len();
        let mut ok = true;
        for l in lets {
            let n = &l.name;
            let what = if self.syms.contains_key(&n.name) {
                Some(self.what_is(&n.name).to_string())
            } else if self.stage_axes.iter().chain(&self.reduce_axes).any(|(m, _)| *m == n.name) {
                Some("an axis".to_string())
            } else if self.combiner.as_ref().is_some_and(|ps| ps.iter().any(|(m, _)| *m == n.name)) {
                Some("a parameter of the combiner".to_string())
            } else {
                None
            };
            if let Some(what) = what {
                self.error_help(
                    n.loc,
                    format!("`let {}`: `{}` is already the name of {what}", n.name, n.name),
                    "give the `let` a name of its own",
                );
                ok = false;
            }
            let local = if l.value.is_flexible_literal() {
                Local::Literal(l.value.clone())
            } else {
                match self.expr(&l.value, None) {
                    Ok(x) => Local::Value(x),
                    Err(_) => Local::Poisoned,
                }
            };
            self.locals.push((n.name.clone(), local));
        }
        let v = self.expr(value, expect);
        self.locals.truncate(depth);
        if !ok {
            return Err(Poisoned);
        }
        v
    }

    fn int_lit(&mut self, value: i128, suffix: Option<&Name>, expect: Option<DType>, e: &ExprAst) -> R<Expr> {
        let ty = match suffix {
            Some(s) => {
                let t = self.elem_type(s)?;
                if !t.is_integer() {
                    self.error(s.loc, format!("`{}` is not an integer type", s.name));
                    return Err(Poisoned);
                }
                t
            }
            None => match expect {
                None => DType::I64,
                Some(t) if t.is_integer() => t,
                Some(t) if t.is_float() => {
                    self.error_help(
                        e.loc,
                        format!("mismatched types: expected `{t}`, found integer literal `{e}`"),
                        format!("write a float literal: `{e}.0`, or cast: `{} as {t}`", castable(e)),
                    );
                    return Err(Poisoned);
                }
                Some(t) => {
                    self.error(e.loc, format!("mismatched types: expected `{t}`, found integer literal `{e}`"));
                    return Err(Poisoned);
                }
            },
        };
        if !int_fits(value, ty) {
            self.error(e.loc, format!("literal `{e}` does not fit in `{ty}`"));
            return Err(Poisoned);
        }
        // The bits of a u64 above i64::MAX are stored as an i64.
        Ok(Expr::typed_int(value as i64, ty))
    }

    fn float_lit(&mut self, value: f64, suffix: Option<&Name>, expect: Option<DType>, e: &ExprAst) -> R<Expr> {
        let ty = match suffix {
            Some(s) => {
                let t = self.elem_type(s)?;
                if !t.is_float() {
                    self.error(s.loc, format!("`{}` is not a float type", s.name));
                    return Err(Poisoned);
                }
                t
            }
            None => match expect {
                None => DType::F64,
                Some(t) if t.is_float() => t,
                Some(t) => {
                    self.error_help(
                        e.loc,
                        format!("mismatched types: expected `{t}`, found float literal `{e}`"),
                        format!("cast it: `{} as {t}`", castable(e)),
                    );
                    return Err(Poisoned);
                }
            },
        };
        Ok(Expr::float(value, ty))
    }

    fn name_value(&mut self, n: &str, loc: Loc, expect: Option<DType>) -> R<Expr> {
        if let Some(params) = &self.combiner {
            if let Some((_, v)) = params.iter().find(|(m, _)| m == n) {
                return Ok(Expr::var(v));
            }
            if !matches!(self.syms.get(n), Some(Sym::Scalar(_) | Sym::Dim(_))) {
                let names: Vec<&str> = params.iter().map(|(m, _)| m.as_str()).collect();
                self.error_help(
                    loc,
                    format!("unknown name `{n}` in the combiner"),
                    format!("the combiner sees only its parameters ({}) and the kernel's scalars", quoted_list(names)),
                );
                return Err(Poisoned);
            }
        }
        if let Some((_, local)) = self.locals.iter().rev().find(|(m, _)| m == n) {
            return match local.clone() {
                Local::Value(x) => Ok(x),
                Local::Literal(x) => self.expr(&x, expect),
                Local::Poisoned => Err(Poisoned),
            };
        }
        if let Some((_, v)) = self.reduce_axes.iter().find(|(m, _)| m == n) {
            return Ok(Expr::var(v));
        }
        if let Some((_, v)) = self.stage_axes.iter().find(|(m, _)| m == n) {
            let v = v.clone();
            if self.in_bounds {
                self.error_help(
                    loc,
                    format!("the range of a reduction cannot depend on the axis `{n}`"),
                    "a reduction range is bounded by constants, dims and integer scalars",
                );
                return Err(Poisoned);
            }
            return Ok(Expr::var(&v));
        }
        match self.syms.get(n).cloned() {
            Some(Sym::Scalar(v)) => {
                // Its declared type, except where index arithmetic needs an `i64`: a
                // `usize` (a size, as dims are) anywhere, any integer inside an index.
                let t = v.dtype();
                let index = self.usize_scalars.contains(n) || (self.in_index && t.is_integer());
                if index && t != DType::I64 {
                    Ok(Expr::cast(DType::I64, Expr::var(&v)))
                } else {
                    Ok(Expr::var(&v))
                }
            }
            Some(Sym::Dim(v)) => Ok(Expr::var(&v)),
            Some(Sym::Tensor(t)) => {
                if !t.poisoned {
                    self.error_help(
                        loc,
                        format!("`{n}` is a tensor; it has no value without indices"),
                        format!("read an element, e.g. `{n}[{}]`", self.index_example(&t.shape, &[]).join(", ")),
                    );
                }
                Err(Poisoned)
            }
            Some(Sym::View(v)) => {
                self.error_help(
                    loc,
                    format!("`{n}` is a boundary view of `{}`; it has no value without indices", v.tensor),
                    format!("read an element, e.g. `{n}[i - 1]`"),
                );
                Err(Poisoned)
            }
            None if self.all_reduce_axes.contains(n) => {
                self.error_help(
                    loc,
                    format!("reduction axis `{n}` is used outside its reduction"),
                    format!("`{n}` is only defined inside its `sum(.. for {n} in ..)`"),
                );
                Err(Poisoned)
            }
            None => {
                let mut names: Vec<&str> = self.stage_axes.iter().map(|(m, _)| m.as_str()).collect();
                names.extend(self.reduce_axes.iter().map(|(m, _)| m.as_str()));
                if names.is_empty() {
                    self.error(loc, format!("unknown name `{n}`"));
                } else {
                    self.error_help(
                        loc,
                        format!("unknown name `{n}`"),
                        format!("the axes here are {}", quoted_list(names)),
                    );
                }
                Err(Poisoned)
            }
        }
    }

    /// A read of a boundary view: `if (every index inside) { x[idx] } else { outside }`,
    /// where outside is the constant or a read of `x` at the index the rule maps into
    /// it. The inside read's checks are discharged by its guard, and loop partitioning
    /// later cuts the test out of the interior of a loop.
    fn view_read(&mut self, view: &Name, v: &ViewSym, indices: &[ExprAst], loc: Loc) -> R<Expr> {
        let base = Name { name: v.tensor.clone(), loc: view.loc };
        let inside = self.read(&base, indices, loc)?;
        let Expr::ProducerLoad { tensor, indices: checked, dtype } = &inside else {
            return Err(Poisoned);
        };
        let Some(Sym::Tensor(t)) = self.syms.get(&v.tensor).cloned() else {
            return Err(Poisoned);
        };
        let raw: Vec<Expr> = checked
            .iter()
            .map(|x| match x {
                Expr::Check { value, .. } => (**value).clone(),
                x => x.clone(),
            })
            .collect();
        let mut cond: Option<Expr> = None;
        for (x, n) in raw.iter().zip(&t.shape) {
            let c = Expr::and(Expr::ge(x.clone(), Expr::int(0)), Expr::lt(x.clone(), n.clone()));
            cond = Some(match cond {
                None => c,
                Some(p) => Expr::and(p, c),
            });
        }
        let Some(cond) = cond else {
            return Ok(inside);
        };
        let outside = match v.boundary {
            Boundary::Constant => v.value.clone().ok_or(Poisoned)?,
            rule => {
                // `((x % p) + p) % p` is `x` modulo `p` in `0..p`; `p` is at least 1, so
                // nothing divides by zero (an empty dim is caught by the read's check).
                let modulo = |x: Expr, p: Expr| ((x % p.clone()) + p.clone()) % p;
                let mapped: Vec<Expr> = raw
                    .iter()
                    .zip(&t.shape)
                    .map(|(x, n)| {
                        let (x, n) = (x.clone(), n.clone());
                        match rule {
                            Boundary::RepeatEdge => Expr::min(Expr::max(x, Expr::int(0)), n - 1),
                            Boundary::RepeatImage => modulo(x, Expr::max(n, Expr::int(1))),
                            Boundary::MirrorImage => {
                                let p = Expr::max(n.clone() * 2, Expr::int(1));
                                let m = modulo(x, p.clone());
                                Expr::select(Expr::lt(m.clone(), n), m.clone(), p - 1 - m)
                            }
                            Boundary::MirrorInterior => {
                                let p = Expr::max(n.clone() * 2 - 2, Expr::int(1));
                                let m = modulo(x, p.clone());
                                Expr::select(Expr::lt(m.clone(), n), m.clone(), p - m)
                            }
                            Boundary::Constant => x,
                        }
                    })
                    .collect();
                self.checked_read(&v.tensor, *dtype, &t.shape, *tensor, mapped, indices)
            }
        };
        Ok(Expr::select(cond, inside, outside))
    }

    /// A stage's read of itself, a recurrence (a scan): `y[i, j - 1]` in the stage of
    /// `y[i, j]`. Every index is the stage's own axis of that dim, except along one dim,
    /// the same in every such read, where it is the axis minus a positive constant: an
    /// element computed before, since that axis runs in order (the schedule keeps it so).
    /// The read is bounds-checked as any read, so `y[i, j - 1]` needs a guard such as
    /// `if j >= 1 { .. } else { .. }`.
    fn scan_read(
        &mut self,
        tensor: &Name,
        t: &TensorSym,
        indices: &[ExprAst],
        idx: Vec<Expr>,
        ok: bool,
        loc: Loc,
    ) -> R<Expr> {
        let n = &tensor.name;
        let example = || {
            let axes: Vec<&str> = self.stage_axes.iter().map(|(a, _)| a.as_str()).collect();
            let mut parts: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
            if let Some(last) = parts.last_mut() {
                *last = format!("{last} - 1");
            }
            format!("`{n}[{}]`, under a guard such as `if {} >= 1`", parts.join(", "), axes.last().unwrap_or(&"i"))
        };
        if !self.reduce_axes.is_empty() {
            self.error_help(
                tensor.loc,
                format!("`{n}` reads itself inside a reduction"),
                "a recurrence reads earlier elements outside any reduction: compute the reduction in a stage of its own",
            );
            return Err(Poisoned);
        }
        if self.stage_axes.len() != t.shape.len() {
            return Err(Poisoned); // the stage's axes are already reported
        }
        if indices.len() != self.stage_axes.len() || !ok {
            if ok {
                self.error_help(
                    loc,
                    format!("`{n}` has {} dims", self.stage_axes.len()),
                    format!("write {}", example()),
                );
            }
            return Err(Poisoned);
        }
        let mut scan = None;
        for (d, ast) in indices.iter().enumerate() {
            let axis = &self.stage_axes[d].0;
            let step = match &ast.strip_parens().kind {
                ExprKind::Name(a) if a == axis => Some(0),
                ExprKind::Binary { op: BinOpAst::Sub, lhs, rhs, .. } => {
                    match (&lhs.strip_parens().kind, &rhs.strip_parens().kind) {
                        (ExprKind::Name(a), ExprKind::Int { value, .. }) if a == axis && *value >= 1 => Some(*value),
                        _ => None,
                    }
                }
                _ => None,
            };
            match step {
                Some(0) => {}
                Some(_) if scan.is_some() => {
                    self.error_help(
                        ast.loc,
                        format!("`{n}` steps back along two axes"),
                        format!("a recurrence steps back along one axis: {}", example()),
                    );
                    return Err(Poisoned);
                }
                Some(_) => scan = Some(d),
                None => {
                    self.error_help(
                        ast.loc,
                        format!("`{n}` reads itself at `{ast}`, which is not an earlier element along its own axis `{axis}`"),
                        format!("a stage reads itself only at its own axes, one of them minus a constant: {}", example()),
                    );
                    return Err(Poisoned);
                }
            }
        }
        let Some(d) = scan else {
            self.error_help(
                loc,
                format!("`{n}` reads the element it defines"),
                format!("a recurrence reads an earlier element: {}", example()),
            );
            return Err(Poisoned);
        };
        match self.scan_dim {
            Some((d0, _)) if d0 != d => {
                let (a0, a) = (self.stage_axes[d0].0.clone(), self.stage_axes[d].0.clone());
                self.error_help(
                    indices[d].loc,
                    format!("`{n}` steps back along `{a}` here and along `{a0}` in another read"),
                    "a recurrence runs along one axis",
                );
                return Err(Poisoned);
            }
            Some(_) => {}
            None => self.scan_dim = Some((d, indices[d].loc)),
        }
        // The stage's tensor is added to the graph when its body is checked: next.
        let id = TensorId(self.graph.tensors.len() as u32);
        Ok(self.checked_read(n, t.dtype, &t.shape, id, idx, indices))
    }

    /// `tensor[idx]`, every index checked against its dim; `discharge_checks` removes
    /// the checks it proves, and reports the reads it proves out of bounds.
    fn checked_read(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[Expr],
        tensor: TensorId,
        idx: Vec<Expr>,
        indices: &[ExprAst],
    ) -> Expr {
        // The read through a `repeat_edge` view, for the help of a read out of bounds (not
        // of the stage's own tensor: a recurrence has no view of itself).
        let edge = (name != self.stage).then(|| {
            let view = [format!("{name}e"), format!("{name}_edge")]
                .into_iter()
                .find(|v| !self.syms.contains_key(v))
                .unwrap_or_else(|| format!("{name}_edge"));
            let written: Vec<String> = indices.iter().map(|x| x.to_string()).collect();
            bounds::EdgeRead {
                view: view.clone(),
                tensor: name.to_string(),
                read: format!("{view}[{}]", written.join(", ")),
            }
        });
        let idx = idx
            .into_iter()
            .zip(indices)
            .enumerate()
            .map(|(dim, (x, ast))| {
                let site = CheckSite::Index { tensor: name.to_string(), dim, index: ast.to_string() };
                let extent = Box::new(shape[dim].clone());
                let checked = self.check(x, CheckKind::Index { extent }, site, ast.loc);
                if let (Some(e), Expr::Check { site, .. }) = (&edge, &checked) {
                    self.edge_reads.insert(*site, e.clone());
                }
                checked
            })
            .collect();
        Expr::ProducerLoad { tensor, indices: idx, dtype }
    }

    fn read(&mut self, tensor: &Name, indices: &[ExprAst], loc: Loc) -> R<Expr> {
        if let Some(Sym::View(v)) = self.syms.get(&tensor.name).cloned() {
            return self.view_read(tensor, &v, indices, loc);
        }
        let mut idx = Vec::new();
        let mut ok = true;
        for i in indices {
            match self.index_value(i, "a tensor index") {
                Ok(x) => idx.push(x),
                Err(_) => ok = false,
            }
        }
        let n = &tensor.name;
        let t = match self.syms.get(n).cloned() {
            Some(Sym::Tensor(t)) => t,
            Some(_) => {
                let what = self.what_is(n);
                self.error(tensor.loc, format!("`{n}` is {what}, not a tensor"));
                return Err(Poisoned);
            }
            None if self.stage_axes.iter().chain(&self.reduce_axes).any(|(m, _)| m == n) => {
                self.error(tensor.loc, format!("`{n}` is an axis, not a tensor"));
                return Err(Poisoned);
            }
            None if self.stage_names.contains(n) => {
                self.error_help(
                    tensor.loc,
                    format!("`{n}` is read before it is defined"),
                    format!("stages run in order, producers first: define `{n}` in an earlier stage"),
                );
                return Err(Poisoned);
            }
            None => {
                self.error(tensor.loc, format!("unknown tensor `{n}`"));
                return Err(Poisoned);
            }
        };
        if t.poisoned {
            return Err(Poisoned);
        }
        if *n == self.stage && t.id.is_none() {
            return self.scan_read(tensor, &t, indices, idx, ok, loc);
        }
        let Some(id) = t.id else {
            let help = if *n == self.stage {
                "a stage cannot read the tensor it defines".to_string()
            } else {
                format!("stages run in order, producers first: define `{n}` in an earlier stage")
            };
            self.error_help(tensor.loc, format!("`{n}` is read before it is defined"), help);
            return Err(Poisoned);
        };
        if indices.len() != t.shape.len() {
            let written: Vec<String> = indices.iter().map(|x| x.to_string()).collect();
            let example = self.index_example(&t.shape, &written);
            self.error_help(
                loc,
                format!(
                    "`{n}` has {}, but {} given",
                    plural(t.shape.len(), "dim", "dims"),
                    if indices.len() == 1 {
                        "1 index is".to_string()
                    } else {
                        format!("{} indices are", indices.len())
                    }
                ),
                format!("write one index per dim, e.g. `{n}[{}]`", example.join(", ")),
            );
            return Err(Poisoned);
        }
        if !ok {
            return Err(Poisoned);
        }
        Ok(self.checked_read(n, t.dtype, &t.shape, id, idx, indices))
    }

    fn binary(&mut self, op: BinOpAst, op_loc: Loc, lhs: &ExprAst, rhs: &ExprAst, expect: Option<DType>) -> R<Expr> {
        let sym = op.symbol();
        if matches!(op, BinOpAst::And | BinOpAst::Or) {
            let l = self.expr(lhs, Some(DType::BOOL));
            let r = self.expr(rhs, Some(DType::BOOL));
            let mut ok = true;
            for (side, x) in [(lhs, &l), (rhs, &r)] {
                if let Ok(x) = x {
                    if !x.dtype().is_bool() {
                        self.error(side.loc, format!("`{sym}` needs `bool` operands, but `{side}` is `{}`", x.dtype()));
                        ok = false;
                    }
                }
            }
            let (l, r) = (l?, r?);
            if !ok {
                return Err(Poisoned);
            }
            return Ok(if op == BinOpAst::And { Expr::and(l, r) } else { Expr::or(l, r) });
        }
        let operand_expect = if op.is_comparison() { None } else { expect };
        let mut v = self.unify(&[lhs, rhs], operand_expect).into_iter();
        let (l, r) = (v.next().unwrap_or(Err(Poisoned))?, v.next().unwrap_or(Err(Poisoned))?);
        let (l, r) = widen_to_index(l, r);
        let (tl, tr) = (l.dtype(), r.dtype());
        if tl != tr {
            self.mismatch(lhs, tl, rhs, tr);
            return Err(Poisoned);
        }
        if tl.is_bool() && !matches!(op, BinOpAst::Eq | BinOpAst::Ne) {
            self.error_help(
                op_loc,
                format!("cannot apply `{sym}` to `bool` values"),
                "use `&&`, `||`, `!`, `==` or `!=` on `bool`s",
            );
            return Err(Poisoned);
        }
        // An integer divisor is checked (in kernel bodies; bounds of reduction ranges are
        // computed before the kernel runs).
        let divides = matches!(op, BinOpAst::Div | BinOpAst::Rem) && tl.is_integer();
        // A combiner's integer divisor is a nonzero constant: it runs where no check is
        // reported from (in every lowering of the reduction, on partial results).
        if divides && self.combiner.is_some() && r.as_int().is_none_or(|d| d == 0) {
            self.error_help(
                rhs.loc,
                format!("the combiner divides by `{rhs}`, which is not a nonzero constant"),
                "divide the values before the reduction (before `for`), or by a constant",
            );
            return Err(Poisoned);
        }
        let r = if divides && !self.in_bounds && self.combiner.is_none() {
            let site = CheckSite::Divisor { divisor: rhs.to_string() };
            self.check(r, CheckKind::Divisor, site, rhs.loc)
        } else {
            r
        };
        let bin = |b: BinOp| Ok(Expr::binary(b, l.clone(), r.clone()));
        let cmp = |c: CmpOp| Ok(Expr::cmp(c, l.clone(), r.clone()));
        match op {
            BinOpAst::Add => bin(BinOp::Add),
            BinOpAst::Sub => bin(BinOp::Sub),
            BinOpAst::Mul => bin(BinOp::Mul),
            BinOpAst::Div => bin(BinOp::Div),
            BinOpAst::Rem => bin(BinOp::Mod),
            BinOpAst::Lt => cmp(CmpOp::Lt),
            BinOpAst::Le => cmp(CmpOp::Le),
            BinOpAst::Gt => cmp(CmpOp::Gt),
            BinOpAst::Ge => cmp(CmpOp::Ge),
            BinOpAst::Eq => cmp(CmpOp::Eq),
            BinOpAst::Ne => cmp(CmpOp::Ne),
            BinOpAst::And | BinOpAst::Or => Err(Poisoned),
        }
    }

    fn cast(&mut self, expr: &ExprAst, to: &Name) -> R<Expr> {
        let x = self.expr(expr, None);
        let to_ty = if to.name == "usize" {
            self.error_help(to.loc, "cannot cast to `usize`", "index arithmetic is `i64`: cast to `i64`");
            Err(Poisoned)
        } else {
            self.elem_type(to)
        };
        let (x, to_ty) = (x?, to_ty?);
        let from = x.dtype();
        if from == to_ty {
            return Ok(x);
        }
        if from.is_bool() && !to_ty.is_integer() {
            self.error_help(
                to.loc,
                format!("cannot cast `bool` to `{to_ty}`"),
                format!(
                    "cast to an integer first: `{b} as i32 as {to_ty}`, or write `if {expr} {{ {one} }} else {{ {zero} }}`",
                    b = castable(expr),
                    one = if to_ty.is_float() { "1.0" } else { "1" },
                    zero = if to_ty.is_float() { "0.0" } else { "0" },
                ),
            );
            return Err(Poisoned);
        }
        if to_ty.is_bool() {
            self.error_help(
                to.loc,
                format!("cannot cast `{from}` to `bool`"),
                format!("compare instead: `{} != 0`", castable(expr)),
            );
            return Err(Poisoned);
        }
        Ok(Expr::cast(to_ty, x))
    }

    fn call(&mut self, func: &Name, args: &[ExprAst], expect: Option<DType>) -> R<Expr> {
        let f = func.name.as_str();
        let refs: Vec<&ExprAst> = args.iter().collect();
        match f {
            "max" | "min" => {
                if args.len() != 2 {
                    self.error_help(
                        func.loc,
                        format!("`{f}` takes 2 arguments, but {} given", given(args.len())),
                        match self.reduction_example(f, args) {
                            Some(ex) => format!("for a reduction write `{ex}`"),
                            // Several values: nested pairs.
                            None if args.len() > 2 => {
                                let mut nested = args[args.len() - 1].to_string();
                                for a in args[..args.len() - 1].iter().rev() {
                                    nested = format!("{f}({a}, {nested})");
                                }
                                format!("`{f}` of several values nests: `{nested}`")
                            }
                            None => format!(
                                "`{f}(a, b)` is the larger of two values; `{f}(e for AXIS in 0..DIM)` reduces over an axis"
                            ),
                        },
                    );
                    return Err(Poisoned);
                }
                let mut vals = self.unify(&refs, expect);
                if let [Ok(a), Ok(b)] = &mut vals[..] {
                    (*a, *b) = widen_to_index(a.clone(), b.clone());
                }
                let vals = self.same_type(&refs, vals)?;
                let t = vals[0].dtype();
                if t.is_bool() {
                    self.error(func.loc, format!("`{f}` of `bool` values is not supported"));
                    return Err(Poisoned);
                }
                let mut it = vals.into_iter();
                let (a, b) = (it.next().ok_or(Poisoned)?, it.next().ok_or(Poisoned)?);
                Ok(Expr::binary(if f == "max" { BinOp::Max } else { BinOp::Min }, a, b))
            }
            "powi" => self.powi(func, args, expect),
            "sum" | "prod" => {
                self.error_help(
                    func.loc,
                    format!("`{f}` is a reduction and needs a `for` clause"),
                    match self.reduction_example(f, args) {
                        Some(ex) => format!("write `{ex}`"),
                        None => {
                            "add `for AXIS in 0..DIM` after its expression, naming the axis it reduces over".to_string()
                        }
                    },
                );
                Err(Poisoned)
            }
            _ => {
                let Some(intr) = Intrinsic::from_name(f) else {
                    self.error_help(
                        func.loc,
                        format!("unknown function `{f}`"),
                        "the functions are `exp`, `log`, `sqrt`, `rsqrt`, `tanh`, `sigmoid`, `abs`, `floor`, `ceil`, `erf`, `sin`, `cos`, `pow`, `fma`, `max`, `min`, and the reductions `sum`, `prod`, `max`, `min`",
                    );
                    return Err(Poisoned);
                };
                if args.len() != intr.arity() {
                    let usage = match intr.arity() {
                        1 => format!("{f}(x)"),
                        2 => format!("{f}(x, y)"),
                        _ => format!("{f}(a, b, c)"),
                    };
                    self.error_help(
                        func.loc,
                        format!(
                            "`{f}` takes {}, but {} given",
                            plural(intr.arity(), "argument", "arguments"),
                            given(args.len())
                        ),
                        format!("write `{usage}`"),
                    );
                    return Err(Poisoned);
                }
                let vals = self.unify(&refs, expect);
                let vals = self.same_type(&refs, vals)?;
                let t = vals[0].dtype();
                let ok =
                    t.is_float() || (intr == Intrinsic::Abs && t.is_int()) || (intr == Intrinsic::Abs && t.is_uint());
                if !ok {
                    let a = &args[0];
                    if intr == Intrinsic::Abs {
                        self.error(a.loc, format!("`abs` needs a number, but `{a}` is `{t}`"));
                    } else {
                        self.error_help(
                            a.loc,
                            format!("`{f}` needs a float argument, but `{a}` is `{t}`"),
                            format!("cast it: `{} as f32`", castable(a)),
                        );
                    }
                    return Err(Poisoned);
                }
                Ok(Expr::Call { func: intr, args: vals })
            }
        }
    }

    /// `x.powi(n)`: `x` to an integer power, as Rust's `f32::powi` with a constant
    /// exponent compiles (LLVM's expansion of `powi`, in the order of compiler-rt's
    /// `__powisf2`): the product of the squares `x`, `x²`, `x⁴`, .. that the bits of `|n|`
    /// select, lowest first; `1 / product` for a negative `n`; `1` for `n = 0`.
    fn powi(&mut self, func: &Name, args: &[ExprAst], expect: Option<DType>) -> R<Expr> {
        /// The largest `|n|`: the product has `|n|` copies of `x` in the expression tree
        /// (the generated code's compilers share them).
        const MAX_EXPONENT: i64 = 64;
        let [base, exponent] = args else {
            self.error_help(
                func.loc,
                format!("`powi` takes 2 arguments, but {} given", given(args.len())),
                "write `x.powi(3)`",
            );
            return Err(Poisoned);
        };
        let x = self.expr(base, expect);
        let n = self.expr(exponent, Some(DType::I32));
        let (x, n) = (x?, n?);
        let t = x.dtype();
        if !t.is_float() {
            self.error_help(
                base.loc,
                format!("`powi` needs a float, but `{base}` is `{t}`"),
                format!(
                    "cast it: `({} as f32).powi({exponent})`, or multiply: `{b} * {b}`",
                    castable(base),
                    b = castable(base)
                ),
            );
            return Err(Poisoned);
        }
        if n.dtype() != DType::I32 {
            self.error_help(
                exponent.loc,
                format!("the exponent of `powi` is an `i32`, but `{exponent}` is `{}`", n.dtype()),
                "write an integer literal: `x.powi(3)`",
            );
            return Err(Poisoned);
        }
        let k = match crate::arith::Analyzer::new().simplify(&n) {
            Expr::Int { value, .. } if value.abs() <= MAX_EXPONENT => value,
            Expr::Int { value, .. } => {
                self.error_help(
                    exponent.loc,
                    format!("the exponent of `powi` is at most {MAX_EXPONENT} in magnitude, but it is {value}"),
                    format!(
                        "`powi` becomes multiplications; for a large power write `{}.powf({value}.0)`",
                        castable(base)
                    ),
                );
                return Err(Poisoned);
            }
            _ => {
                self.error_help(
                    exponent.loc,
                    format!("the exponent of `powi` must be a constant, but `{exponent}` is not"),
                    format!(
                        "`powi` becomes multiplications; for a computed power write `{}.powf({} as {t})`",
                        castable(base),
                        castable(exponent)
                    ),
                );
                return Err(Poisoned);
            }
        };
        let one = Expr::float(1.0, t);
        let (mut product, mut square, mut bits) = (None::<Expr>, x, k.unsigned_abs());
        while bits > 0 {
            if bits & 1 == 1 {
                product = Some(match product {
                    Some(p) => Expr::binary(BinOp::Mul, p, square.clone()),
                    None => square.clone(),
                });
            }
            bits >>= 1;
            if bits > 0 {
                square = Expr::binary(BinOp::Mul, square.clone(), square);
            }
        }
        Ok(match product {
            None => one,
            Some(p) if k < 0 => Expr::binary(BinOp::Div, one, p),
            Some(p) => p,
        })
    }

    /// All `vals` checked and of one type (the first mismatch is reported).
    fn same_type(&mut self, args: &[&ExprAst], vals: Vec<R<Expr>>) -> R<Vec<Expr>> {
        let vals: Vec<Expr> = vals.into_iter().collect::<R<Vec<_>>>()?;
        let Some(first) = vals.first() else {
            return Err(Poisoned);
        };
        let t0 = first.dtype();
        for (k, v) in vals.iter().enumerate().skip(1) {
            if v.dtype() != t0 {
                if let (Some(a), Some(b)) = (args.first(), args.get(k)) {
                    self.mismatch(a, t0, b, v.dtype());
                }
                return Err(Poisoned);
            }
        }
        Ok(vals)
    }
}

/// `(a, b)` with an integer operand widened to `i64` where it meets index arithmetic: the
/// other operand is an `i64` that reads no tensor (an axis, a dim, `i + 1`), and it reads
/// none either (a scalar, a `let` of scalars). So `i < lo` with `lo: i32` compares in
/// `i64`, while `x[i] + lo` with `x: i64[n]` stays a mismatch, as in Rust.
fn widen_to_index(a: Expr, b: Expr) -> (Expr, Expr) {
    let (ta, tb) = (a.dtype(), b.dtype());
    if ta == tb || !ta.is_integer() || !tb.is_integer() || reads_tensor(&a) || reads_tensor(&b) {
        return (a, b);
    }
    match (ta == DType::I64, tb == DType::I64) {
        (true, false) => (a, Expr::cast(DType::I64, b)),
        (false, true) => (Expr::cast(DType::I64, a), b),
        _ => (a, b),
    }
}

/// Whether `e` reads a tensor (or reduces over one).
fn reads_tensor(e: &Expr) -> bool {
    let mut found = false;
    crate::tir::visit::for_each_expr(e, &mut |x| found |= matches!(x, Expr::ProducerLoad { .. } | Expr::Reduce(_)));
    found
}

fn given(n: usize) -> String {
    if n == 1 {
        "1 was".into()
    } else {
        format!("{n} were")
    }
}
