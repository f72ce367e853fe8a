//! The expression parser: precedence climbing over syn tokens, with Rust's precedence
//! (`||` < `&&` < comparisons < `+ -` < `* / %` < `as` < unary `- !` < indexing).
//! As in Rust, unary operators bind tighter than `as` (`-x as f64` is `(-x) as f64`),
//! and comparisons do not chain.

use super::ast::*;
use super::cx::{ident, parse_group, Cx};
use crate::loc::Loc;
use crate::tir::ReduceOp;
use proc_macro2::{Group, Punct, Span};
use syn::parse::ParseStream;
use syn::Token;

/// Parses one expression; stops before a token that cannot continue it (`;`, `,`,
/// `..`, `for`, `{`).
pub(crate) fn parse_expr(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    parse_binary(input, cx, 0)
}

fn unsupported(span: Span, op: &str) -> syn::Error {
    syn::Error::new(span, format!("operator `{op}` is not supported in kernel expressions"))
}

/// The binary operator at the front of `input`, with its length in characters.
fn peek_binop(input: ParseStream) -> syn::Result<Option<(BinOpAst, usize)>> {
    // Longer operators first: `Token![<]` also matches the start of `<=` and `<<`.
    for (op, peeked) in [
        ("<<=", input.peek(Token![<<=])),
        (">>=", input.peek(Token![>>=])),
        ("<<", input.peek(Token![<<])),
        (">>", input.peek(Token![>>])),
        ("+=", input.peek(Token![+=])),
        ("-=", input.peek(Token![-=])),
        ("*=", input.peek(Token![*=])),
        ("/=", input.peek(Token![/=])),
        ("%=", input.peek(Token![%=])),
        ("&=", input.peek(Token![&=])),
        ("|=", input.peek(Token![|=])),
        ("^=", input.peek(Token![^=])),
    ] {
        if peeked {
            return Err(unsupported(input.span(), op));
        }
    }
    let op = if input.peek(Token![||]) {
        (BinOpAst::Or, 2)
    } else if input.peek(Token![&&]) {
        (BinOpAst::And, 2)
    } else if input.peek(Token![==]) {
        (BinOpAst::Eq, 2)
    } else if input.peek(Token![!=]) {
        (BinOpAst::Ne, 2)
    } else if input.peek(Token![<=]) {
        (BinOpAst::Le, 2)
    } else if input.peek(Token![>=]) {
        (BinOpAst::Ge, 2)
    } else if input.peek(Token![<]) {
        (BinOpAst::Lt, 1)
    } else if input.peek(Token![>]) {
        (BinOpAst::Gt, 1)
    } else if input.peek(Token![+]) {
        (BinOpAst::Add, 1)
    } else if input.peek(Token![-]) && !input.peek(Token![->]) {
        (BinOpAst::Sub, 1)
    } else if input.peek(Token![*]) {
        (BinOpAst::Mul, 1)
    } else if input.peek(Token![/]) {
        (BinOpAst::Div, 1)
    } else if input.peek(Token![%]) {
        (BinOpAst::Rem, 1)
    } else if input.peek(Token![&]) {
        return Err(unsupported(input.span(), "&"));
    } else if input.peek(Token![|]) {
        return Err(unsupported(input.span(), "|"));
    } else if input.peek(Token![^]) {
        return Err(unsupported(input.span(), "^"));
    } else {
        return Ok(None);
    };
    Ok(Some(op))
}

/// Consumes an operator of `len` punctuation characters; returns its first span.
fn eat_punct(input: ParseStream, len: usize) -> syn::Result<Span> {
    let first: Punct = input.parse()?;
    for _ in 1..len {
        input.parse::<Punct>()?;
    }
    Ok(first.span())
}

fn parse_binary(input: ParseStream, cx: &mut Cx, min_prec: u8) -> syn::Result<ExprAst> {
    let mut lhs = parse_cast(input, cx)?;
    while let Some((op, len)) = peek_binop(input)? {
        let prec = op.precedence();
        if prec < min_prec {
            break;
        }
        let op_span = eat_punct(input, len)?;
        let op_loc = cx.loc(op_span);
        if input.is_empty() {
            return Err(syn::Error::new(op_span, format!("expected an expression after `{}`", op.symbol())));
        }
        let rhs = parse_binary(input, cx, prec + 1)?;
        if op.is_comparison() {
            if let Some((next, _)) = peek_binop(input)? {
                if next.is_comparison() {
                    return Err(input.error("comparison operators cannot be chained; use `&&`"));
                }
            }
        }
        let loc = cx.join(lhs.loc, rhs.loc);
        lhs = ExprAst { kind: ExprKind::Binary { op, op_loc, lhs: Box::new(lhs), rhs: Box::new(rhs) }, loc };
    }
    Ok(lhs)
}

fn parse_cast(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    let mut e = parse_unary(input, cx)?;
    while input.peek(Token![as]) {
        input.parse::<Token![as]>()?;
        let ty = ident(input, "expected a type name after `as`")?;
        let to = cx.name(&ty);
        let loc = cx.join(e.loc, to.loc);
        e = ExprAst { kind: ExprKind::Cast { expr: Box::new(e), to }, loc };
    }
    Ok(e)
}

fn parse_unary(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    let op = if input.peek(Token![-]) {
        UnOp::Neg
    } else if input.peek(Token![!]) {
        UnOp::Not
    } else {
        return parse_postfix(input, cx);
    };
    let span = eat_punct(input, 1)?;
    let start = cx.loc(span);
    let expr = parse_unary(input, cx)?;
    let loc = cx.join(start, expr.loc);
    Ok(ExprAst { kind: ExprKind::Unary { op, expr: Box::new(expr) }, loc })
}

fn parse_postfix(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    let e = parse_primary(input, cx)?;
    if input.peek(syn::token::Bracket) {
        let msg = match &e.kind {
            ExprKind::Index { tensor, .. } => {
                format!("index a tensor with one pair of brackets: `{}[i, j]`", tensor.name)
            }
            _ => "only tensors can be indexed".to_string(),
        };
        return Err(input.error(msg));
    }
    if input.peek(Token![.]) && !input.peek(Token![..]) {
        return Err(
            input.error("methods and fields are not supported in kernel expressions; call `exp(x)`, not `x.exp()`")
        );
    }
    if input.peek(Token![?]) {
        return Err(input.error("`?` is not supported in kernel expressions"));
    }
    Ok(e)
}

/// A comma-separated list of expressions inside a group.
fn expr_list(g: &Group, cx: &mut Cx) -> syn::Result<Vec<ExprAst>> {
    parse_group(g, cx, |input, cx| {
        let mut items = Vec::new();
        while !input.is_empty() {
            items.push(parse_expr(input, cx)?);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(items)
    })
}

fn parse_primary(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    if input.peek(syn::Lit) {
        return parse_literal(input, cx);
    }
    if input.peek(syn::token::Paren) {
        let g: Group = input.parse()?;
        let loc = cx.loc(g.span());
        let inner = parse_group(&g, cx, |input, cx| {
            if input.is_empty() {
                return Err(input.error("expected an expression; `()` is not a value"));
            }
            let e = parse_expr(input, cx)?;
            if input.peek(Token![,]) {
                return Err(input.error("tuples are not supported in kernel expressions"));
            }
            if !input.is_empty() {
                return Err(input.error("expected `)`"));
            }
            Ok(e)
        })?;
        return Ok(ExprAst { kind: ExprKind::Paren(Box::new(inner)), loc });
    }
    if input.peek(Token![if]) {
        return parse_if(input, cx);
    }
    if input.peek(syn::Ident) {
        let id: syn::Ident = input.parse()?;
        let name = cx.name(&id);
        if input.peek(Token![!]) && !input.peek(Token![!=]) {
            let what = if id == "tune" {
                "`tune!` is a knob of a `schedule!` block (`c.split(c.i, tune!(8, 16))`), not a value of the algorithm"
                    .to_string()
            } else {
                format!("`{id}!`: macros are not part of the kernel language")
            };
            return Err(syn::Error::new(id.span(), what));
        }
        if input.peek(Token![::]) {
            return parse_constant(input, cx, name);
        }
        if input.peek(syn::token::Paren) {
            return parse_call(input, cx, name);
        }
        if input.peek(syn::token::Bracket) {
            let g: Group = input.parse()?;
            let gl = cx.loc(g.span());
            let indices = expr_list(&g, cx)?;
            if indices.is_empty() {
                return Err(syn::Error::new(g.span(), format!("expected the indices of `{}`", name.name)));
            }
            let loc = cx.join(name.loc, gl);
            return Ok(ExprAst { kind: ExprKind::Index { tensor: name, indices }, loc });
        }
        let loc = name.loc;
        return Ok(ExprAst { kind: ExprKind::Name(name.name), loc });
    }
    if input.peek(syn::token::Brace) {
        return Err(input.error("expected an expression; blocks are only allowed as `if` branches"));
    }
    Err(input.error("expected an expression"))
}

fn parse_literal(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    let lit: syn::Lit = input.parse()?;
    let loc = cx.loc(lit.span());
    let kind = match &lit {
        syn::Lit::Int(i) => {
            let suffix = i.suffix();
            if suffix.starts_with('f') || suffix.starts_with("bf") {
                let value = i.base10_parse::<f64>()?;
                ExprKind::Float { value, text: i.to_string(), suffix: Some(Name { name: suffix.to_string(), loc }) }
            } else {
                let value = i.base10_parse::<u128>()?;
                let value =
                    i128::try_from(value).map_err(|_| syn::Error::new(i.span(), "integer literal is too large"))?;
                let suffix = (!suffix.is_empty()).then(|| Name { name: suffix.to_string(), loc });
                ExprKind::Int { value, suffix }
            }
        }
        syn::Lit::Float(f) => {
            let value = f.base10_parse::<f64>()?;
            let suffix = (!f.suffix().is_empty()).then(|| Name { name: f.suffix().to_string(), loc });
            ExprKind::Float { value, text: f.to_string(), suffix }
        }
        syn::Lit::Bool(b) => ExprKind::Bool(b.value),
        _ => return Err(syn::Error::new(lit.span(), "only number and `bool` literals are supported")),
    };
    Ok(ExprAst { kind, loc })
}

/// `f32::INFINITY`, `f64::MAX`, `i32::MIN`, ...
fn parse_constant(input: ParseStream, cx: &mut Cx, ty: Name) -> syn::Result<ExprAst> {
    input.parse::<Token![::]>()?;
    let c: syn::Ident = input.parse()?;
    let cl = cx.loc(c.span());
    let loc = cx.join(ty.loc, cl);
    let cname = c.to_string();
    let text = format!("{}::{cname}", ty.name);
    let float = |v32: f32, v64: f64| match ty.name.as_str() {
        "f32" => Some(v32 as f64),
        "f64" => Some(v64),
        _ => None,
    };
    let fvalue = match cname.as_str() {
        "INFINITY" => float(f32::INFINITY, f64::INFINITY),
        "NEG_INFINITY" => float(f32::NEG_INFINITY, f64::NEG_INFINITY),
        "MAX" => float(f32::MAX, f64::MAX),
        "MIN" => float(f32::MIN, f64::MIN),
        "MIN_POSITIVE" => float(f32::MIN_POSITIVE, f64::MIN_POSITIVE),
        "EPSILON" => float(f32::EPSILON, f64::EPSILON),
        "NAN" => float(f32::NAN, f64::NAN),
        _ => None,
    };
    if let Some(value) = fvalue {
        return Ok(ExprAst { kind: ExprKind::Float { value, text, suffix: Some(ty) }, loc });
    }
    let ivalue: Option<i128> = match (ty.name.as_str(), cname.as_str()) {
        ("i8", "MAX") => Some(i8::MAX.into()),
        ("i8", "MIN") => Some(i8::MIN.into()),
        ("i16", "MAX") => Some(i16::MAX.into()),
        ("i16", "MIN") => Some(i16::MIN.into()),
        ("i32", "MAX") => Some(i32::MAX.into()),
        ("i32", "MIN") => Some(i32::MIN.into()),
        ("i64", "MAX") => Some(i64::MAX.into()),
        ("i64", "MIN") => Some(i64::MIN.into()),
        ("u8", "MAX") => Some(u8::MAX.into()),
        ("u16", "MAX") => Some(u16::MAX.into()),
        ("u32", "MAX") => Some(u32::MAX.into()),
        ("u64", "MAX") => Some(u64::MAX.into()),
        ("u8" | "u16" | "u32" | "u64", "MIN") => Some(0),
        _ => None,
    };
    match ivalue {
        Some(value) => Ok(ExprAst { kind: ExprKind::Int { value, suffix: Some(ty) }, loc }),
        None => Err(syn::Error::new(
            c.span(),
            format!("unknown constant `{text}`; the constants are `f32::INFINITY`, `f32::NEG_INFINITY`, `f32::MAX`, `f32::MIN` (and `f64::..`), and `MAX`/`MIN` of the integer types"),
        )),
    }
}

fn parse_call(input: ParseStream, cx: &mut Cx, func: Name) -> syn::Result<ExprAst> {
    let g: Group = input.parse()?;
    let gl = cx.loc(g.span());
    let loc = cx.join(func.loc, gl);
    let reduce_op = match func.name.as_str() {
        "sum" => Some(ReduceOp::Sum),
        "prod" => Some(ReduceOp::Prod),
        "max" => Some(ReduceOp::Max),
        "min" => Some(ReduceOp::Min),
        _ => None,
    };
    let fname = func.name.clone();
    let parsed = parse_group(&g, cx, |input, cx| {
        let mut args = Vec::new();
        while !input.is_empty() {
            args.push(parse_expr(input, cx)?);
            if input.peek(Token![for]) {
                if args.len() != 1 {
                    return Err(input.error("a reduction has one expression before `for`"));
                }
                if reduce_op.is_none() {
                    return Err(input.error(format!(
                        "`{fname}` is not a reduction; the reductions are `sum`, `prod`, `max` and `min`"
                    )));
                }
                let axes = parse_reduce_axes(input, cx)?;
                return Ok((args, Some(axes)));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok((args, None))
    })?;
    Ok(match parsed {
        (mut args, Some(axes)) => {
            let source = Box::new(args.remove(0));
            let op = reduce_op.unwrap_or(ReduceOp::Sum);
            ExprAst { kind: ExprKind::Reduce { op, op_loc: func.loc, source, axes }, loc }
        }
        (args, None) => ExprAst { kind: ExprKind::Call { func, args }, loc },
    })
}

/// `for k in lo..hi, r in lo..hi`
fn parse_reduce_axes(input: ParseStream, cx: &mut Cx) -> syn::Result<Vec<ReduceAxis>> {
    input.parse::<Token![for]>()?;
    let mut axes = Vec::new();
    loop {
        let id = ident(input, "expected a reduction axis name after `for`")?;
        let name = cx.name(&id);
        if !input.peek(Token![in]) {
            return Err(input.error(format!("expected `in` and a range, as in `{} in 0..K`", name.name)));
        }
        input.parse::<Token![in]>()?;
        let lo = parse_expr(input, cx)?;
        if input.peek(Token![..=]) {
            return Err(input.error("write an exclusive range `lo..hi`"));
        }
        if !input.peek(Token![..]) {
            return Err(input.error("expected `..` and the end of the range"));
        }
        input.parse::<Token![..]>()?;
        let hi = parse_expr(input, cx)?;
        axes.push(ReduceAxis { name, lo, hi });
        if input.is_empty() {
            return Ok(axes);
        }
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            return Ok(axes);
        }
    }
}

fn parse_block_expr(input: ParseStream, cx: &mut Cx, what: &str) -> syn::Result<ExprAst> {
    if !input.peek(syn::token::Brace) {
        return Err(input.error(format!("expected `{{` and the {what}")));
    }
    let g: Group = input.parse()?;
    parse_group(&g, cx, |input, cx| {
        if input.is_empty() {
            return Err(input.error(format!("expected the {what}")));
        }
        let e = parse_expr(input, cx)?;
        if !input.is_empty() {
            return Err(input.error("expected `}`: a branch is one expression"));
        }
        Ok(e)
    })
}

fn parse_if(input: ParseStream, cx: &mut Cx) -> syn::Result<ExprAst> {
    let kw: Token![if] = input.parse()?;
    let start = cx.loc(kw.span);
    let cond = parse_expr(input, cx)?;
    let then = parse_block_expr(input, cx, "value of the `if` branch")?;
    if !input.peek(Token![else]) {
        return Err(input.error("`if` needs an `else` branch: the expression needs a value in every case"));
    }
    input.parse::<Token![else]>()?;
    let otherwise = if input.peek(Token![if]) {
        parse_if(input, cx)?
    } else {
        parse_block_expr(input, cx, "value of the `else` branch")?
    };
    let loc: Loc = cx.join(start, otherwise.loc);
    Ok(ExprAst {
        kind: ExprKind::If { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) },
        loc,
    })
}
