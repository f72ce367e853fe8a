//! The expression parser: precedence climbing over syn tokens, with Rust's precedence
//! (`||` < `&&` < comparisons < `+ -` < `* / %` < `as` < unary `- !` < indexing).
//! As in Rust, unary operators bind tighter than `as` (`-x as f64` is `(-x) as f64`),
//! and comparisons do not chain.

use super::ast::*;
use super::cx::{comma_list, ident, parse_group, Cx};
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
    let mut e = parse_primary(input, cx)?;
    // Method calls, as Rust writes the intrinsics: `x.exp()`, `x.max(0.0)`, `x.mul_add(a, b)`.
    while input.peek(Token![.]) && !input.peek(Token![..]) {
        input.parse::<Token![.]>()?;
        if input.peek(syn::LitInt) || input.peek(syn::LitFloat) {
            return Err(input.error("fields are not supported in kernel expressions (values are scalars)"));
        }
        let id = ident(input, "expected a method name after `.`")?;
        let method = cx.name(&id);
        if !input.peek(syn::token::Paren) {
            return Err(syn::Error::new(
                id.span(),
                format!("fields are not supported in kernel expressions; `.{id}` is not a method call"),
            ));
        }
        let g: Group = input.parse()?;
        let args = expr_list(&g, cx)?;
        let gl = cx.loc(g.span());
        let loc = cx.join(e.loc, gl);
        e = method_call(e, method, id.span(), args, loc, g.span())?;
    }
    if input.peek(syn::token::Bracket) {
        let msg = match &e.kind {
            ExprKind::Index { tensor, .. } => {
                format!("index a tensor with one pair of brackets: `{}[i, j]`", tensor.name)
            }
            _ => "only tensors can be indexed".to_string(),
        };
        return Err(input.error(msg));
    }
    if input.peek(Token![?]) {
        return Err(input.error("`?` is not supported in kernel expressions"));
    }
    Ok(e)
}

/// The methods of the float (and integer) types that the kernel language has, by their
/// Rust names: each is one of the language's functions with the receiver as its first
/// argument (`x.ln()` is `log(x)`, `x.mul_add(a, b)` is `fma(x, a, b)`), or `clamp`.
const METHODS: &[(&str, &str, usize)] = &[
    ("exp", "exp", 0),
    ("ln", "log", 0),
    ("sqrt", "sqrt", 0),
    ("tanh", "tanh", 0),
    ("abs", "abs", 0),
    ("floor", "floor", 0),
    ("ceil", "ceil", 0),
    ("sin", "sin", 0),
    ("cos", "cos", 0),
    ("powf", "pow", 1),
    ("powi", "powi", 1),
    ("mul_add", "fma", 2),
    ("max", "max", 1),
    ("min", "min", 1),
    ("clamp", "clamp", 2),
    ("recip", "recip", 0),
    // Not Rust's, but the language's own functions read the same way.
    ("rsqrt", "rsqrt", 0),
    ("sigmoid", "sigmoid", 0),
    ("erf", "erf", 0),
];

/// `recv.method(args)` as the call of a language function (`recv` first).
fn method_call(
    recv: ExprAst,
    method: Name,
    method_span: Span,
    mut args: Vec<ExprAst>,
    loc: Loc,
    span: Span,
) -> syn::Result<ExprAst> {
    let m = method.name.as_str();
    let Some(&(_, func, arity)) = METHODS.iter().find(|(name, ..)| *name == m) else {
        let hint = match m {
            "log" => "; Rust's `log` takes a base: write `x.ln()` for the natural logarithm".to_string(),
            _ => String::new(),
        };
        let names: Vec<&str> = METHODS.iter().map(|(n, ..)| *n).collect();
        return Err(syn::Error::new(
            method_span,
            format!("`.{m}()` is not a method of the kernel language{hint}; the methods are `{}`", names.join("`, `")),
        ));
    };
    if args.len() != arity {
        let usage = match arity {
            0 => format!("x.{m}()"),
            1 => format!("x.{m}(y)"),
            _ => format!("x.{m}(a, b)"),
        };
        return Err(syn::Error::new(
            span,
            format!(
                "`.{m}` takes {arity} argument{} besides its receiver; write `{usage}`",
                if arity == 1 { "" } else { "s" }
            ),
        ));
    }
    let call = |func: &str, args: Vec<ExprAst>, loc: Loc| ExprAst {
        kind: ExprKind::Call { func: Name { name: func.to_string(), loc: method.loc }, args },
        loc,
    };
    Ok(match func {
        // `x.clamp(lo, hi)` is `min(max(x, lo), hi)`.
        "clamp" => match <[ExprAst; 2]>::try_from(args) {
            Ok([lo, hi]) => call("min", vec![call("max", vec![recv, lo], loc), hi], loc),
            Err(_) => return Err(syn::Error::new(span, "`.clamp` takes two arguments")),
        },
        // `x.recip()` is `1.0 / x` (the literal takes `x`'s float type).
        "recip" => {
            let one =
                ExprAst { kind: ExprKind::Float { value: 1.0, text: "1.0".into(), suffix: None }, loc: method.loc };
            ExprAst {
                kind: ExprKind::Binary {
                    op: BinOpAst::Div,
                    op_loc: method.loc,
                    lhs: Box::new(one),
                    rhs: Box::new(recv),
                },
                loc,
            }
        }
        _ => {
            args.insert(0, recv);
            call(func, args, loc)
        }
    })
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
            // `std::f32::consts::PI` and `core::..` name the same constants as `f32::..`.
            if id == "std" || id == "core" {
                input.parse::<Token![::]>()?;
                let ty: syn::Ident = ident(input, "expected a type name, as in `std::f32::consts::PI`")?;
                let ty = cx.name(&ty);
                if !input.peek(Token![::]) {
                    return Err(input.error("expected `::` and a constant, as in `std::f32::consts::PI`"));
                }
                return parse_constant(input, cx, ty);
            }
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
        let g: Group = input.parse()?;
        return parse_group(&g, cx, |input, cx| parse_block_body(input, cx, "value of the block"));
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
    let mut c: syn::Ident = input.parse()?;
    // `f32::max(a, b)`, `f64::exp(x)`: the method called with its receiver first.
    if input.peek(syn::token::Paren) {
        if crate::DType::from_name(&ty.name).is_none() {
            return Err(syn::Error::new(
                c.span(),
                format!("`{}::{c}`: a function is called on a number type, as in `f32::{c}(..)`", ty.name),
            ));
        }
        let g: Group = input.parse()?;
        let mut args = expr_list(&g, cx)?;
        let method = cx.name(&c);
        let gl = cx.loc(g.span());
        let loc = cx.join(ty.loc, gl);
        if args.is_empty() {
            return Err(syn::Error::new(
                g.span(),
                format!("`{}::{c}` needs its receiver as the first argument", ty.name),
            ));
        }
        let recv = args.remove(0);
        return method_call(recv, method, c.span(), args, loc, g.span());
    }
    let mut text = format!("{}::{c}", ty.name);
    if c == "consts" && input.peek(Token![::]) {
        input.parse::<Token![::]>()?;
        c = ident(input, "expected a constant name, as in `f32::consts::PI`")?;
        text = format!("{}::consts::{c}", ty.name);
        let cl = cx.loc(c.span());
        let loc = cx.join(ty.loc, cl);
        let cname = c.to_string();
        let value = |v32: f32, v64: f64| match ty.name.as_str() {
            "f32" => Some(v32 as f64),
            "f64" => Some(v64),
            _ => None,
        };
        use std::{f32::consts as c32, f64::consts as c64};
        let v = match cname.as_str() {
            "PI" => value(c32::PI, c64::PI),
            "TAU" => value(c32::TAU, c64::TAU),
            "E" => value(c32::E, c64::E),
            "SQRT_2" => value(c32::SQRT_2, c64::SQRT_2),
            "FRAC_1_SQRT_2" => value(c32::FRAC_1_SQRT_2, c64::FRAC_1_SQRT_2),
            "LN_2" => value(c32::LN_2, c64::LN_2),
            "LN_10" => value(c32::LN_10, c64::LN_10),
            "LOG2_E" => value(c32::LOG2_E, c64::LOG2_E),
            "LOG10_E" => value(c32::LOG10_E, c64::LOG10_E),
            "LOG2_10" => value(c32::LOG2_10, c64::LOG2_10),
            "LOG10_2" => value(c32::LOG10_2, c64::LOG10_2),
            "FRAC_PI_2" => value(c32::FRAC_PI_2, c64::FRAC_PI_2),
            "FRAC_PI_3" => value(c32::FRAC_PI_3, c64::FRAC_PI_3),
            "FRAC_PI_4" => value(c32::FRAC_PI_4, c64::FRAC_PI_4),
            "FRAC_PI_6" => value(c32::FRAC_PI_6, c64::FRAC_PI_6),
            "FRAC_PI_8" => value(c32::FRAC_PI_8, c64::FRAC_PI_8),
            "FRAC_1_PI" => value(c32::FRAC_1_PI, c64::FRAC_1_PI),
            "FRAC_2_PI" => value(c32::FRAC_2_PI, c64::FRAC_2_PI),
            "FRAC_2_SQRT_PI" => value(c32::FRAC_2_SQRT_PI, c64::FRAC_2_SQRT_PI),
            _ => None,
        };
        return match v {
            Some(value) => Ok(ExprAst { kind: ExprKind::Float { value, text, suffix: Some(ty) }, loc }),
            None => Err(syn::Error::new(
                c.span(),
                format!("unknown constant `{text}`; the constants of `f32::consts` and `f64::consts` are `PI`, `TAU`, `E`, `SQRT_2`, `FRAC_1_SQRT_2`, `LN_2`, `LN_10`, `LOG2_E`, `LOG10_E`, `LOG2_10`, `LOG10_2`, `FRAC_PI_2`, `FRAC_PI_3`, `FRAC_PI_4`, `FRAC_PI_6`, `FRAC_PI_8`, `FRAC_1_PI`, `FRAC_2_PI`, `FRAC_2_SQRT_PI`"),
            )),
        };
    }
    let cl = cx.loc(c.span());
    let loc = cx.join(ty.loc, cl);
    let cname = c.to_string();
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
    if func.name == "reduce" {
        let c = parse_custom_reduce(&g, cx, func.loc, &[])?;
        return Ok(ExprAst { kind: ExprKind::CustomReduce(Box::new(c)), loc });
    }
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
                if fname == "argmax" || fname == "argmin" {
                    return Err(input.error(format!(
                        "`{fname}` gives the value and the index: define both, `(v[i], k[i]) = {fname}(.. for j in 0..N);`"
                    )));
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

/// The inside of `reduce(..)`: `values for k in lo..hi, identity, |acc, x| combined`,
/// each of `values`, `identity`, `acc`, `x` and `combined` one value, or a tuple of one
/// per stage in `targets` (the names of the stages a tuple reduction defines; empty for
/// a reduction that is a stage's right-hand side).
pub(crate) fn parse_custom_reduce(
    g: &Group,
    cx: &mut Cx,
    op_loc: Loc,
    targets: &[Name],
) -> syn::Result<CustomReduceAst> {
    let usage = "`reduce(x[i, k] for k in 0..N, 0.0, |a, b| a + b)`: the values, the identity, and the combiner";
    let arity = targets.len().max(1);
    let comma = |input: ParseStream, what: &str| -> syn::Result<()> {
        if !input.peek(Token![,]) {
            return Err(input.error(what));
        }
        input.parse::<Token![,]>().map(drop)
    };
    // The reduction, and where each part is (its values, identities, the two parameters
    // and the combined values), for the count errors.
    let (c, locs) = parse_group(g, cx, |input, cx| {
        let (sources, sources_loc) = parse_values(input, cx)?;
        if !input.peek(Token![for]) {
            return Err(input.error(format!("expected `for` and the reduction's axes: {usage}")));
        }
        let axes = reduce_axes(input, cx, true)?;
        comma(
            input,
            &format!("expected `,` and the identity (the result of reducing nothing), then the combiner: {usage}"),
        )?;
        let (identity, identity_loc) = parse_values(input, cx)?;
        comma(input, &format!("expected `,` and the combiner, a closure: {usage}"))?;
        if !input.peek(Token![|]) || input.peek(Token![||]) {
            return Err(input.error(format!(
                "expected the combiner, a closure of the accumulated value and the next one: {usage}"
            )));
        }
        input.parse::<Token![|]>()?;
        let lhs = parse_params(input, cx)?;
        comma(input, "expected `,` and the combiner's second parameter: `|a, b| ..`")?;
        let rhs = parse_params(input, cx)?;
        if !input.peek(Token![|]) {
            return Err(input.error("expected `|` after the combiner's two parameters: `|a, b| ..`"));
        }
        input.parse::<Token![|]>()?;
        let (combine, combine_loc) = parse_values(input, cx)?;
        if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("expected `)` after the combiner"));
        }
        let span = |cx: &mut Cx, ns: &[Name]| cx.join(ns[0].loc, ns[ns.len() - 1].loc);
        let locs = [sources_loc, identity_loc, span(cx, &lhs), span(cx, &rhs), combine_loc];
        Ok((CustomReduceAst { op_loc, sources, axes, identity, lhs, rhs, combine }, locs))
    })?;
    let counts = [c.sources.len(), c.identity.len(), c.lhs.len(), c.rhs.len(), c.combine.len()];
    let whats = [
        "values",
        "identities",
        "accumulated values in the combiner's first parameter",
        "new values in its second parameter",
        "combined values",
    ];
    for ((what, n), loc) in whats.into_iter().zip(counts).zip(locs) {
        if n == arity {
            continue;
        }
        let msg = if targets.is_empty() && what == "values" {
            format!(
                "a reduction of {n} values defines {n} stages: write them together, as in `(v[i], w[i]) = reduce((e, f) for k in 0..N, (0.0, 0.0), |(a0, a1), (b0, b1)| (a0 + b0, a1 + b1));`"
            )
        } else if targets.is_empty() {
            format!("the reduction has one value, but {n} {what}")
        } else {
            let names: Vec<String> = targets.iter().map(|t| format!("`{}`", t.name)).collect();
            format!("the reduction defines {arity} stages ({}), but it has {n} {what}", names.join(", "))
        };
        return Err(syn::Error::new(cx.sm.span(loc), msg));
    }
    Ok(c)
}

/// One value, or a tuple of values `(e0, e1, ..)` (a parenthesized expression with a
/// comma at its top level), with where it is.
fn parse_values(input: ParseStream, cx: &mut Cx) -> syn::Result<(Vec<ExprAst>, Loc)> {
    if input.peek(syn::token::Paren) {
        let fork = input.fork();
        let g: Group = fork.parse()?;
        let whole = fork.is_empty() || fork.peek(Token![for]) || fork.peek(Token![,]);
        let comma = g.stream().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','));
        if whole && comma {
            input.parse::<Group>()?;
            let loc = cx.loc(g.span());
            let items = parse_group(&g, cx, |input, cx| comma_list(input, cx, parse_expr))?;
            return Ok((items, loc));
        }
    }
    let e = parse_expr(input, cx)?;
    let loc = e.loc;
    Ok((vec![e], loc))
}

/// A parameter of the combiner: a name, or a tuple of names `(a0, a1)`.
fn parse_params(input: ParseStream, cx: &mut Cx) -> syn::Result<Vec<Name>> {
    let what = "expected the combiner's parameter: a name, or a tuple of names such as `(a0, a1)`";
    if input.peek(syn::token::Paren) {
        let g: Group = input.parse()?;
        let names =
            parse_group(&g, cx, |input, cx| comma_list(input, cx, |input, cx| Ok(cx.name(&ident(input, what)?))))?;
        if names.is_empty() {
            return Err(syn::Error::new(g.span(), what));
        }
        return Ok(names);
    }
    let id = ident(input, what)?;
    Ok(vec![cx.name(&id)])
}

/// `for k in lo..hi, r in lo..hi`
pub(crate) fn parse_reduce_axes(input: ParseStream, cx: &mut Cx) -> syn::Result<Vec<ReduceAxis>> {
    reduce_axes(input, cx, false)
}

/// [`parse_reduce_axes`]; with `then_more`, a comma not followed by `name in` ends the
/// axes and is left to the caller (`reduce(e for k in 0..N, identity, ..)`).
fn reduce_axes(input: ParseStream, cx: &mut Cx, then_more: bool) -> syn::Result<Vec<ReduceAxis>> {
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
        if then_more && input.peek(Token![,]) && !(input.peek2(syn::Ident) && input.peek3(Token![in])) {
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
    parse_group(&g, cx, |input, cx| parse_block_body(input, cx, what))
}

/// The inside of a block: `let NAME = expr;` statements, then the block's value (an
/// expression without `;`). A block without `let`s is its value.
fn parse_block_body(input: ParseStream, cx: &mut Cx, what: &str) -> syn::Result<ExprAst> {
    let mut lets = Vec::new();
    while input.peek(Token![let]) {
        input.parse::<Token![let]>()?;
        let id = ident(input, "expected a name after `let`, as in `let v = x[i] * 2.0;`")?;
        let name = cx.name(&id);
        if input.peek(Token![:]) {
            return Err(input.error(format!(
                "a `let` in an expression takes the type of its value: write `let {id} = ..;` (cast the value with `as` for another type)"
            )));
        }
        if !input.peek(Token![=]) || input.peek(Token![==]) {
            return Err(input.error(format!("expected `=` and a value, as in `let {id} = x[i] * 2.0;`")));
        }
        input.parse::<Token![=]>()?;
        let value = parse_expr(input, cx)?;
        if !input.peek(Token![;]) {
            return Err(input.error(format!("expected `;` after the value of `{id}`")));
        }
        input.parse::<Token![;]>()?;
        lets.push(LetAst { name, value });
    }
    if input.is_empty() {
        return Err(input.error(match lets.last() {
            Some(l) => {
                format!("expected the {what} after the `let`s, as in `{{ let {n} = ..; {n} * {n} }}`", n = l.name.name)
            }
            None => format!("expected the {what}"),
        }));
    }
    let value = parse_expr(input, cx)?;
    if input.peek(Token![;]) {
        return Err(input.error("a block's value has no `;` after it: `{ let v = ..; v * v }`"));
    }
    if !input.is_empty() {
        return Err(input.error("expected `}`: a block is `let`s, then one expression"));
    }
    if lets.is_empty() {
        return Ok(value);
    }
    let loc = cx.join(lets[0].name.loc, value.loc);
    Ok(ExprAst { kind: ExprKind::Block { lets, value: Box::new(value) }, loc })
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
