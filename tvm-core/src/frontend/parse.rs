//! Syntax of a `compute!` input (docs/LANGUAGE.md §2–3): the kernel header, its stages and the
//! `schedule!` blocks, parsed with syn's token-level API into the [`ast`](super::ast).
//!
//! The header is not Rust syntax (`fn f(a: f32[n]) -> c: f32[n]`), so it is parsed by
//! hand. Parameters, stages and schedule statements are split at their top-level `,` or
//! `;` first and each piece is parsed on its own, so one syntax error does not hide the
//! errors in the other pieces.

use super::ast::*;
use super::cx::{comma_list, ident, parse_group, parse_inner, split_top, Cx};
use super::error::{from_syn, FrontendError};
use super::expr::parse_expr;
use crate::loc::{Loc, SourceMap};
use crate::tir::ReduceOp;
use proc_macro2::{Delimiter, Group, TokenStream};
use syn::parse::ParseStream;
use syn::Token;

/// Parses a whole `compute!` input.
pub(crate) fn parse_kernel_ast(tokens: TokenStream) -> Result<(KernelAst, SourceMap), Vec<FrontendError>> {
    let mut cx = Cx::new();
    let ast = match parse_inner(tokens, &mut cx, parse_top) {
        Ok(ast) => Some(ast),
        Err(e) => {
            cx.errors.extend(from_syn(e));
            None
        }
    };
    match ast {
        Some(ast) if cx.errors.is_empty() => Ok((ast, cx.sm)),
        _ => Err(cx.errors),
    }
}

/// A group with the given delimiter, or an error naming what was expected.
fn group(input: ParseStream, delim: Delimiter, what: &str) -> syn::Result<Group> {
    if input.peek(syn::token::Paren) && delim == Delimiter::Parenthesis
        || input.peek(syn::token::Bracket) && delim == Delimiter::Bracket
        || input.peek(syn::token::Brace) && delim == Delimiter::Brace
    {
        input.parse::<Group>()
    } else {
        Err(input.error(format!("expected {what}")))
    }
}

fn parse_top(input: ParseStream, cx: &mut Cx) -> syn::Result<KernelAst> {
    let attrs = syn::Attribute::parse_outer(input)?;
    let vis: syn::Visibility = input.parse()?;
    if !input.peek(Token![fn]) {
        return Err(input.error("expected `fn NAME(params) -> outputs { stages }`"));
    }
    input.parse::<Token![fn]>()?;
    let name_ident: syn::Ident = input.parse()?;
    let name = cx.name(&name_ident);
    let params_group = group(input, Delimiter::Parenthesis, "`(` and the parameters")?;
    let mut params = Vec::new();
    for p in split_top(params_group.stream(), ',') {
        if p.tokens.is_empty() {
            if p.terminated {
                let span = p.first.unwrap_or_else(|| params_group.span());
                cx.errors.push(FrontendError::at_span(span, "expected a parameter"));
            }
            continue;
        }
        if let Some(param) = cx.parse_piece(p.tokens, parse_param) {
            params.push(param);
        }
    }
    if !input.peek(Token![->]) {
        return Err(input.error("expected `->` and the outputs, as in `-> c: f32[n]`"));
    }
    input.parse::<Token![->]>()?;
    let mut outputs = Vec::new();
    let tuple_outputs = input.peek(syn::token::Paren);
    if tuple_outputs {
        let g: Group = input.parse()?;
        for p in split_top(g.stream(), ',') {
            if p.tokens.is_empty() {
                continue;
            }
            if let Some(o) = cx.parse_piece(p.tokens, parse_output) {
                outputs.push(o);
            }
        }
        if outputs.is_empty() && cx.errors.is_empty() {
            cx.errors.push(FrontendError::at_span(g.span(), "expected at least one output"));
        }
    } else {
        outputs.push(parse_output(input, cx)?);
    }
    let body = group(input, Delimiter::Brace, "`{` and the stages of the kernel")?;
    let (stages, views) = parse_stages(body, &outputs, cx);
    let mut schedules = Vec::new();
    while !input.is_empty() {
        schedules.push(parse_schedule_block(input, cx)?);
    }
    Ok(KernelAst { attrs, vis, sig: Signature { name, params, outputs, tuple_outputs }, stages, views, schedules })
}

fn parse_tensor_type(input: ParseStream, cx: &mut Cx) -> syn::Result<TensorType> {
    let dt: syn::Ident = input.parse()?;
    let dtype = cx.name(&dt);
    let g = group(input, Delimiter::Bracket, "`[` and the dims of the tensor, as in `f32[M, N]`")?;
    let dims = parse_group(&g, cx, |input, cx| {
        let mut dims = Vec::new();
        loop {
            if input.peek(syn::LitInt) {
                let lit: syn::LitInt = input.parse()?;
                if !lit.suffix().is_empty() {
                    return Err(syn::Error::new(lit.span(), "a dim is an unsuffixed integer or a name"));
                }
                let value = lit.base10_parse::<u128>()?;
                dims.push(Dim::Lit { value, loc: cx.loc(lit.span()) });
            } else if input.peek(syn::Ident) {
                let id: syn::Ident = input.parse()?;
                dims.push(Dim::Name(cx.name(&id)));
            } else {
                return Err(input.error("expected a dim: an integer or a name"));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
        }
        Ok(dims)
    })?;
    Ok(TensorType { dtype, dims })
}

fn parse_param(input: ParseStream, cx: &mut Cx) -> syn::Result<ParamAst> {
    let id: syn::Ident = input.parse()?;
    let name = cx.name(&id);
    input.parse::<Token![:]>()?;
    // `f32[n]` is a tensor, `f32` a scalar.
    if input.peek2(syn::token::Bracket) {
        let ty = parse_tensor_type(input, cx)?;
        return Ok(ParamAst::Tensor { name, ty });
    }
    let ty: syn::Ident = input.parse()?;
    if !input.is_empty() {
        return Err(input.error("expected `,` or `)` after the parameter"));
    }
    Ok(ParamAst::Scalar { name, ty: cx.name(&ty) })
}

fn parse_output(input: ParseStream, cx: &mut Cx) -> syn::Result<OutputAst> {
    let id: syn::Ident = input.parse()?;
    let name = cx.name(&id);
    if !input.peek(Token![:]) {
        return Err(input.error("expected `:` and the output's type, as in `c: f32[n]`"));
    }
    input.parse::<Token![:]>()?;
    let ty = parse_tensor_type(input, cx)?;
    Ok(OutputAst { name, ty })
}

/// One `;`-terminated item of the kernel's body.
enum BodyItem {
    Stage(StageAst),
    View(ViewAst),
    /// `(v[i], k[i]) = argmax(..)` (the value stage, then the index stage), or
    /// `(v[i], w[i]) = reduce(..)` (one stage per component).
    Group(Vec<StageAst>),
}

fn parse_stages(body: Group, outputs: &[OutputAst], cx: &mut Cx) -> (Vec<StageAst>, Vec<ViewAst>) {
    let mut stages = Vec::new();
    let mut views = Vec::new();
    for p in split_top(body.stream(), ';') {
        if p.tokens.is_empty() {
            continue;
        }
        if !p.terminated {
            let span = p.last.unwrap_or_else(|| body.span());
            cx.errors.push(FrontendError::at_span(span, "expected `;` after the stage"));
        }
        match cx.parse_piece(p.tokens, |input, cx| parse_stage(input, cx, outputs)) {
            Some(BodyItem::Stage(s)) => stages.push(s),
            Some(BodyItem::Group(g)) => stages.extend(g),
            Some(BodyItem::View(mut v)) => {
                v.before_stage = stages.len();
                views.push(v);
            }
            None => {}
        }
    }
    if stages.is_empty() && cx.errors.is_empty() {
        cx.errors.push(
            FrontendError::at_span(body.span(), "a kernel needs at least one stage")
                .with_help("write a stage such as `c[i] = a[i] + b[i];`"),
        );
    }
    (stages, views)
}

/// `let xb = repeat_edge(x);`, after `let xb`.
fn parse_view(input: ParseStream, cx: &mut Cx, name: Name) -> syn::Result<ViewAst> {
    input.parse::<Token![=]>()?;
    let names: Vec<&str> = Boundary::ALL.iter().map(|b| b.name()).collect();
    let expected = format!(
        "expected a boundary condition, `{}`, as in `let {} = repeat_edge(x);` (a stage is `let {}[i]: f32[n] = ...;`)",
        names.join("`, `"),
        name.name,
        name.name
    );
    // `let v = x[i] + 1.0;`: a value, not a view.
    let value = format!(
        "expected a boundary condition, as in `let {n} = repeat_edge(x);`: among the stages, `let {n} = ..` declares a \
         boundary view; a value inside a stage's expression is a `let` in a block there \
         (`y[i] = {{ let {n} = x[i] + 1.0; {n} * {n} }};`), and a tensor of its own is a stage \
         (`let {n}[i]: f32[n] = ..;`)",
        n = name.name,
    );
    if !input.peek(syn::Ident) || !input.peek2(syn::token::Paren) {
        return Err(input.error(value));
    }
    let f: syn::Ident = input.parse()?;
    let Some(boundary) = Boundary::from_name(&f.to_string()) else {
        return Err(syn::Error::new(f.span(), expected));
    };
    let func_loc = cx.loc(f.span());
    let g = group(input, Delimiter::Parenthesis, "`(` and the tensor, as in `repeat_edge(x)`")?;
    let (tensor, value) = parse_group(&g, cx, |input, cx| {
        let t = ident(input, "expected the name of a tensor")?;
        let tensor = cx.name(&t);
        let value = if boundary == Boundary::Constant {
            if !input.peek(Token![,]) {
                return Err(input.error("expected `,` and the value outside, as in `constant_exterior(x, 0.0)`"));
            }
            input.parse::<Token![,]>()?;
            Some(crate::frontend::expr::parse_expr(input, cx)?)
        } else {
            None
        };
        if !input.is_empty() {
            return Err(input.error(if boundary == Boundary::Constant {
                "expected `)`: `constant_exterior(x, value)`".to_string()
            } else {
                format!("expected `)`: `{}` takes only the tensor", boundary.name())
            }));
        }
        Ok((tensor, value))
    })?;
    if !input.is_empty() {
        return Err(input.error("expected `;` after the boundary condition"));
    }
    Ok(ViewAst { name, boundary, func_loc, tensor, value, before_stage: 0 })
}

fn parse_stage(input: ParseStream, cx: &mut Cx, outputs: &[OutputAst]) -> syn::Result<BodyItem> {
    let is_let = input.peek(Token![let]);
    if is_let {
        input.parse::<Token![let]>()?;
    }
    if input.peek(syn::token::Paren) {
        return parse_arg_stage(input, cx, is_let, outputs);
    }
    let id = ident(input, "expected a stage: `c[i] = ...;` or `let d[i]: f32[n] = ...;`")?;
    let name = cx.name(&id);
    if is_let && input.peek(Token![=]) && !input.peek(Token![==]) {
        return parse_view(input, cx, name).map(BodyItem::View);
    }
    let g = group(input, Delimiter::Bracket, "`[` and the stage's axes, as in `c[i, j]`")?;
    let axes = parse_group(&g, cx, |input, cx| {
        let mut axes = Vec::new();
        loop {
            let ax = ident(input, "expected an axis name")?;
            axes.push(cx.name(&ax));
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
        }
        Ok(axes)
    })?;
    let ty = if is_let {
        if !input.peek(Token![:]) {
            return Err(input.error(format!(
                "expected `:` and the type of `{}`, as in `let {}[..]: f32[M, N] = ...`",
                name.name, name.name
            )));
        }
        input.parse::<Token![:]>()?;
        Some(parse_tensor_type(input, cx)?)
    } else {
        if input.peek(Token![:]) {
            return Err(input.error(format!(
                "only `let` stages take a type; the type of output `{}` is in the signature",
                name.name
            )));
        }
        None
    };
    if !input.peek(Token![=]) || input.peek(Token![==]) {
        return Err(input.error("expected `=` and the stage's expression"));
    }
    input.parse::<Token![=]>()?;
    let body = parse_expr(input, cx)?;
    if !input.is_empty() {
        return Err(input.error("expected `;` after the stage's expression"));
    }
    Ok(BodyItem::Stage(StageAst { is_let, name, axes, ty, body }))
}

/// `(v[i], k[i]) = argmax(e for j in lo..hi);` (or `argmin`, or `let (..): (T[..], K[..])
/// = ..`): the value of the largest (smallest) `e` of each row and the first `j` where it
/// is, as two ordinary reductions:
///
/// ```text
/// v[i] = max(e for j in lo..hi);
/// k[i] = min(if e == v[i] { j as K } else { hi as K } for j in lo..hi);
/// ```
///
/// each a stage of its own, scheduled as any reduction (`v.compute_at(k, ..)` keeps a
/// row in cache between the two passes).
fn parse_arg_stage(input: ParseStream, cx: &mut Cx, is_let: bool, outputs: &[OutputAst]) -> syn::Result<BodyItem> {
    let usage = "`(v[i], k[i]) = argmax(x[i, j] for j in 0..N);`: the value and the index";
    let g: Group = input.parse()?;
    let targets = parse_group(&g, cx, |input, cx| {
        let mut out = Vec::new();
        while !input.is_empty() {
            let id = ident(input, &format!("expected a stage name, as in {usage}"))?;
            let name = cx.name(&id);
            let ag = group(input, Delimiter::Bracket, "`[` and the stage's axes, as in `v[i]`")?;
            let axes = parse_group(&ag, cx, |input, cx| {
                let mut axes = Vec::new();
                while !input.is_empty() {
                    let ax = ident(input, "expected an axis name")?;
                    axes.push(cx.name(&ax));
                    if input.is_empty() {
                        break;
                    }
                    input.parse::<Token![,]>()?;
                }
                Ok(axes)
            })?;
            out.push((name, axes));
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(out)
    })?;
    let Some((_, axes0)) = targets.first() else {
        return Err(syn::Error::new(g.span(), format!("expected the stages it defines: {usage}")));
    };
    for (k, (name, _)) in targets.iter().enumerate() {
        if targets[..k].iter().any(|(m, _)| m.name == name.name) {
            return Err(syn::Error::new(cx.sm.span(name.loc), format!("`{}` is named twice", name.name)));
        }
    }
    for (name, axes) in &targets[1..] {
        if axes.iter().map(|a| &a.name).ne(axes0.iter().map(|a| &a.name)) {
            let names: Vec<String> = targets.iter().map(|(n, _)| format!("`{}`", n.name)).collect();
            return Err(syn::Error::new(
                cx.sm.span(name.loc),
                if targets.len() == 2 {
                    format!("{} and {} must have the same axes: {usage}", names[0], names[1])
                } else {
                    format!("{} must have the same axes", names.join(", "))
                },
            ));
        }
    }
    let types = if is_let {
        let names: Vec<String> = targets.iter().map(|(n, _)| format!("{}[..]", n.name)).collect();
        if !input.peek(Token![:]) {
            let example = if targets.len() == 2 { "(f32[M], i64[M])".to_string() } else { "(f32[M], ..)".to_string() };
            return Err(input.error(format!(
                "expected `:` and the {} types, as in `let ({}): {example} = ...`",
                if targets.len() == 2 { "two".to_string() } else { targets.len().to_string() },
                names.join(", ")
            )));
        }
        input.parse::<Token![:]>()?;
        let what = if targets.len() == 2 {
            "`(` and the two types, as in `(f32[M], i64[M])`".to_string()
        } else {
            format!("`(` and the {} types", targets.len())
        };
        let tg = group(input, Delimiter::Parenthesis, &what)?;
        let n = targets.len();
        let tys = parse_group(&tg, cx, |input, cx| comma_list(input, cx, parse_tensor_type))?;
        if tys.len() != n {
            return Err(syn::Error::new(tg.span(), format!("expected {n} types, one per stage; found {}", tys.len())));
        }
        tys.into_iter().map(Some).collect()
    } else {
        vec![None; targets.len()]
    };
    if !input.peek(Token![=]) || input.peek(Token![==]) {
        return Err(input.error("expected `=` and `argmax(..)`, `argmin(..)` or `reduce(..)`"));
    }
    input.parse::<Token![=]>()?;
    let f: syn::Ident = ident(input, &format!("expected `argmax`, `argmin` or `reduce`: {usage}"))?;
    if f == "reduce" {
        let fname = cx.name(&f);
        let cg = group(input, Delimiter::Parenthesis, "`(` and the reduction")?;
        let cgl = cx.loc(cg.span());
        let loc = cx.join(fname.loc, cgl);
        let names: Vec<Name> = targets.iter().map(|(n, _)| n.clone()).collect();
        let c = crate::frontend::expr::parse_custom_reduce(&cg, cx, fname.loc, &names)?;
        if !input.is_empty() {
            return Err(input.error("expected `;` after the stage's expression"));
        }
        let stages = targets
            .into_iter()
            .zip(types)
            .map(|((name, axes), ty)| {
                let body = ExprKind::CustomReduce(Box::new(c.clone()));
                StageAst { is_let, name, axes, ty, body: ExprAst { kind: body, loc } }
            })
            .collect();
        return Ok(BodyItem::Group(stages));
    }
    let op = match f.to_string().as_str() {
        "argmax" => ReduceOp::Max,
        "argmin" => ReduceOp::Min,
        _ => {
            return Err(syn::Error::new(
                f.span(),
                format!("several stages are defined together only by `argmax`, `argmin` or `reduce`: {usage}"),
            ))
        }
    };
    let (Ok([(vname, vaxes), (kname, kaxes)]), Ok([vty, kty])) =
        (<[(Name, Vec<Name>); 2]>::try_from(targets), <[Option<TensorType>; 2]>::try_from(types))
    else {
        return Err(syn::Error::new(g.span(), format!("expected two stages, the value and the index: {usage}")));
    };
    let fname = cx.name(&f);
    let cg = group(input, Delimiter::Parenthesis, "`(` and the reduction, as in `argmax(x[i, j] for j in 0..N)`")?;
    let cgl = cx.loc(cg.span());
    let (source, raxes) = parse_group(&cg, cx, |input, cx| {
        let source = parse_expr(input, cx)?;
        if !input.peek(Token![for]) {
            return Err(input.error(format!("expected `for` and the axis to search along, as in `{} in 0..N`", "j")));
        }
        let axes = crate::frontend::expr::parse_reduce_axes(input, cx)?;
        Ok((source, axes))
    })?;
    if !input.is_empty() {
        return Err(input.error("expected `;` after the stage's expression"));
    }
    let [ax] = <[ReduceAxis; 1]>::try_from(raxes).map_err(|axes| {
        let span = cx.sm.span(axes.get(1).map_or(fname.loc, |a| a.name.loc));
        syn::Error::new(span, format!("`{}` searches along one axis; it has {}", fname.name, axes.len()))
    })?;
    let loc = cx.join(fname.loc, cgl);
    let e = |kind: ExprKind, loc: Loc| ExprAst { kind, loc };
    // The index's type: declared, or the output's.
    let ktype = kty
        .as_ref()
        .map(|t| t.dtype.clone())
        .or_else(|| outputs.iter().find(|o| o.name.name == kname.name).map(|o| o.ty.dtype.clone()));
    let ktype = ktype.unwrap_or(Name { name: "i64".into(), loc: kname.loc });
    // 64 bits: a narrower index (and the `hi` of an empty search) could wrap.
    if crate::DType::from_name(&ktype.name).is_some_and(|d| !matches!(d.name(), "i64" | "u64")) {
        return Err(syn::Error::new(
            cx.sm.span(ktype.loc),
            format!(
                "the index `{}` of `{}` is a column number: give it the type `i64` or `u64`, not `{}` (a narrower type could wrap; cast it in a later stage)",
                kname.name, fname.name, ktype.name
            ),
        ));
    }
    let value = StageAst {
        is_let,
        name: vname.clone(),
        axes: vaxes.clone(),
        ty: vty,
        body: e(
            ExprKind::Reduce { op, op_loc: fname.loc, source: Box::new(source.clone()), axes: vec![ax.clone()] },
            loc,
        ),
    };
    let sloc = source.loc;
    let read_v = e(
        ExprKind::Index {
            tensor: vname.clone(),
            indices: vaxes.iter().map(|a| e(ExprKind::Name(a.name.clone()), a.loc)).collect(),
        },
        sloc,
    );
    let is_best =
        e(ExprKind::Binary { op: BinOpAst::Eq, op_loc: fname.loc, lhs: Box::new(source), rhs: Box::new(read_v) }, sloc);
    let cast = |x: ExprAst| {
        let l = x.loc;
        e(ExprKind::Cast { expr: Box::new(e(ExprKind::Paren(Box::new(x)), l)), to: ktype.clone() }, l)
    };
    let found = cast(e(ExprKind::Name(ax.name.name.clone()), ax.name.loc));
    let none = cast(ax.hi.clone());
    let index_source =
        e(ExprKind::If { cond: Box::new(is_best), then: Box::new(found), otherwise: Box::new(none) }, sloc);
    let index = StageAst {
        is_let,
        name: kname,
        axes: kaxes,
        ty: kty,
        body: e(
            ExprKind::Reduce { op: ReduceOp::Min, op_loc: fname.loc, source: Box::new(index_source), axes: vec![ax] },
            loc,
        ),
    };
    Ok(BodyItem::Group(vec![value, index]))
}

fn parse_schedule_block(input: ParseStream, cx: &mut Cx) -> syn::Result<ScheduleBlock> {
    let expected = "expected `schedule!(TARGET) { ... }` after the kernel";
    let id = ident(input, expected)?;
    if id != "schedule" {
        return Err(syn::Error::new(id.span(), expected));
    }
    if !input.peek(Token![!]) {
        return Err(input.error(expected));
    }
    input.parse::<Token![!]>()?;
    let tg = group(input, Delimiter::Parenthesis, "`(` and a target, as in `schedule!(cuda)`")?;
    let (target, target_loc) = cx
        .parse_piece(tg.stream(), |input, cx| {
            if input.peek(syn::LitStr) {
                let s: syn::LitStr = input.parse()?;
                Ok((s.value(), cx.loc(s.span())))
            } else if input.peek(syn::Ident) {
                let id: syn::Ident = input.parse()?;
                Ok((id.to_string(), cx.loc(id.span())))
            } else {
                Err(input.error(
                    "expected a target: `cpu`, `cuda`, `opencl`, `webgpu` or a string such as \"cuda -arch=sm_90\"",
                ))
            }
        })
        .unwrap_or_else(|| (String::new(), Loc::NONE));
    let body = group(input, Delimiter::Brace, "`{` and the schedule's statements")?;
    let stmts = parse_sched_stmts(body, cx);
    Ok(ScheduleBlock { target, target_loc, stmts })
}

fn parse_sched_stmts(body: Group, cx: &mut Cx) -> Vec<SchedStmt> {
    let mut stmts = Vec::new();
    for p in split_top(body.stream(), ';') {
        if p.tokens.is_empty() {
            continue;
        }
        let text = p.tokens.to_string();
        let mut stmt = match parse_inner(p.tokens, cx, parse_sched_stmt) {
            Ok(s) => s,
            Err(e) => {
                let loc = cx.loc(e.span());
                SchedStmt::Bad { what: format!("`{}` ({e})", shorten(&text)), loc }
            }
        };
        if !p.terminated {
            if let SchedStmt::Call { .. } = stmt {
                let loc = cx.loc(p.last.unwrap_or_else(|| body.span()));
                stmt = SchedStmt::Bad { what: format!("`{}` without a `;` after it", shorten(&text)), loc };
            }
        }
        stmts.push(stmt);
    }
    stmts
}

/// The first characters of a statement, for messages, without the spaces that
/// printing tokens puts around punctuation (`c . split (c . i , 4)`).
fn shorten(s: &str) -> String {
    let mut s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (from, to) in [(" . ", "."), (" ,", ","), ("( ", "("), (" )", ")"), ("[ ", "["), (" ]", "]")] {
        s = s.replace(from, to);
    }
    // `f (x)` and `a [0]` after a name, but not `let (a, b)` or `= [x]`.
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let glued = c == ' '
            && matches!(chars.peek(), Some('(' | '['))
            && !word.is_empty()
            && !matches!(word.as_str(), "let" | "in" | "for" | "if");
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if !glued {
            word.clear();
        }
        if !glued {
            out.push(c);
        }
    }
    if out.chars().count() > 60 {
        format!("{} ...", out.chars().take(60).collect::<String>())
    } else {
        out
    }
}

fn parse_sched_stmt(input: ParseStream, cx: &mut Cx) -> syn::Result<SchedStmt> {
    let start = cx.loc(input.span());
    let pattern = if input.peek(Token![let]) {
        input.parse::<Token![let]>()?;
        let p = parse_pattern(input, cx)?;
        input.parse::<Token![=]>()?;
        Some(p)
    } else {
        None
    };
    let call = parse_sexpr(input, cx)?;
    if !input.is_empty() {
        return Err(input.error("expected `;`"));
    }
    let loc = cx.join(start, call.loc());
    Ok(SchedStmt::Call { pattern, call, loc })
}

fn parse_pat_name(input: ParseStream, cx: &mut Cx) -> syn::Result<PatName> {
    if input.peek(Token![_]) {
        let u: Token![_] = input.parse()?;
        Ok(PatName::Wild(cx.loc(u.span)))
    } else {
        let id: syn::Ident = input.parse()?;
        Ok(PatName::Name(cx.name(&id)))
    }
}

fn parse_pattern(input: ParseStream, cx: &mut Cx) -> syn::Result<Pattern> {
    if input.peek(syn::token::Paren) || input.peek(syn::token::Bracket) {
        let g: Group = input.parse()?;
        let loc = cx.loc(g.span());
        let names = parse_group(&g, cx, |input, cx| {
            let mut names = Vec::new();
            while !input.is_empty() {
                names.push(parse_pat_name(input, cx)?);
                if input.is_empty() {
                    break;
                }
                input.parse::<Token![,]>()?;
            }
            Ok(names)
        })?;
        Ok(Pattern::Multi { names, loc })
    } else {
        Ok(Pattern::Single(parse_pat_name(input, cx)?))
    }
}

/// `primary ( "." IDENT ( "(" args ")" )? | "[" sexpr "]" )*`
pub(crate) fn parse_sexpr(input: ParseStream, cx: &mut Cx) -> syn::Result<SExpr> {
    let mut e = parse_sprimary(input, cx)?;
    loop {
        if input.peek(Token![.]) && !input.peek(Token![..]) {
            input.parse::<Token![.]>()?;
            let id: syn::Ident = if input.peek(syn::LitInt) {
                return Err(input.error("expected a name after `.`"));
            } else {
                input.parse()?
            };
            let field = cx.name(&id);
            if input.peek(syn::token::Paren) {
                let g: Group = input.parse()?;
                let gl = cx.loc(g.span());
                let args = sexpr_list(&g, cx)?;
                let loc = cx.join(e.loc(), gl);
                e = SExpr::Method { base: Box::new(e), method: field, args, loc };
            } else {
                let loc = cx.join(e.loc(), field.loc);
                e = SExpr::Field { base: Box::new(e), field, loc };
            }
        } else if input.peek(syn::token::Bracket) {
            let g: Group = input.parse()?;
            let gl = cx.loc(g.span());
            let mut items = sexpr_list(&g, cx)?;
            if items.len() != 1 {
                return Err(syn::Error::new(g.span(), "expected one index"));
            }
            let index = items.remove(0);
            let loc = cx.join(e.loc(), gl);
            e = SExpr::Index { base: Box::new(e), index: Box::new(index), loc };
        } else {
            return Ok(e);
        }
    }
}

fn sexpr_list(g: &Group, cx: &mut Cx) -> syn::Result<Vec<SExpr>> {
    parse_group(g, cx, |input, cx| {
        let mut items = Vec::new();
        while !input.is_empty() {
            items.push(parse_sexpr(input, cx)?);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(items)
    })
}

fn parse_sprimary(input: ParseStream, cx: &mut Cx) -> syn::Result<SExpr> {
    if input.peek(Token![-]) && input.peek2(syn::Lit) {
        let minus: Token![-] = input.parse()?;
        let start = cx.loc(minus.span);
        let lit: syn::Lit = input.parse()?;
        let l = cx.loc(lit.span());
        let loc = cx.join(start, l);
        return Ok(match &lit {
            syn::Lit::Int(i) => match i.base10_parse::<i64>() {
                Ok(v) => SExpr::Int { value: -v, text: format!("-{}", i.base10_digits()), loc },
                Err(_) => SExpr::Lit { text: format!("-{}", i.base10_digits()), loc },
            },
            _ => SExpr::Lit { text: format!("-{}", lit_text(&lit)), loc },
        });
    }
    if input.peek(syn::Lit) {
        let lit: syn::Lit = input.parse()?;
        let loc = cx.loc(lit.span());
        return Ok(match &lit {
            syn::Lit::Int(i) if i.suffix().is_empty() => match i.base10_parse::<i64>() {
                Ok(value) => SExpr::Int { value, text: i.base10_digits().to_string(), loc },
                Err(_) => SExpr::Lit { text: lit_text(&lit), loc },
            },
            _ => SExpr::Lit { text: lit_text(&lit), loc },
        });
    }
    if input.peek(syn::token::Bracket) {
        let g: Group = input.parse()?;
        let loc = cx.loc(g.span());
        let items = sexpr_list(&g, cx)?;
        return Ok(SExpr::List { items, loc });
    }
    if input.peek(syn::token::Paren) {
        let g: Group = input.parse()?;
        let mut items = sexpr_list(&g, cx)?;
        if items.len() != 1 {
            return Err(syn::Error::new(g.span(), "expected one expression in parentheses"));
        }
        return Ok(items.remove(0));
    }
    if input.peek(syn::Ident) && input.peek2(Token![!]) {
        let fork = input.fork();
        let id: syn::Ident = fork.parse()?;
        if id == "tune" {
            return parse_knob(input, cx);
        }
    }
    if input.peek(syn::Ident) {
        let id: syn::Ident = input.parse()?;
        return Ok(SExpr::Name(cx.name(&id)));
    }
    Err(input.error("expected a schedule expression"))
}

/// `tune!(v, ..)` or `tune!(name: v, ..)`: a knob of the search space (`crate::tune`).
fn parse_knob(input: ParseStream, cx: &mut Cx) -> syn::Result<SExpr> {
    let id: syn::Ident = input.parse()?;
    let start = cx.loc(id.span());
    input.parse::<Token![!]>()?;
    if !input.peek(syn::token::Paren) {
        return Err(input.error("expected `(` and the knob's values, as in `tune!(8, 16, 32)`"));
    }
    let g: Group = input.parse()?;
    let end = cx.loc(g.span());
    let loc = cx.join(start, end);
    let (name, values) = parse_group(&g, cx, |input, cx| {
        let name = if input.peek(syn::Ident) && input.peek2(Token![:]) && !input.peek2(Token![::]) {
            let n: syn::Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            Some(cx.name(&n))
        } else {
            None
        };
        let mut values = Vec::new();
        while !input.is_empty() {
            values.push(parse_sexpr(input, cx)?);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok((name, values))
    })?;
    // A knob without values, or with a knob among them, is reported by the knob checks
    // (`tune::check`), at its token.
    Ok(SExpr::Knob { name, values, loc })
}

fn lit_text(lit: &syn::Lit) -> String {
    match lit {
        syn::Lit::Int(i) => i.to_string(),
        syn::Lit::Float(f) => f.to_string(),
        syn::Lit::Bool(b) => b.value.to_string(),
        syn::Lit::Str(s) => format!("{:?}", s.value()),
        other => quote::ToTokens::to_token_stream(other).to_string(),
    }
}
