//! Expressions: scalar ones on a fast path, vectors lane by lane. Under a vector
//! `select`, a mask says which lanes are used: the others read no memory and raise no
//! errors.

use super::compile::{CExpr, CE};
use super::error::{err, ErrorKind, R};
use super::exec::{internal, Ctx, Machine, S};
use super::memory::zero_of;
use super::value::{binary, cast, compare, intrinsic, neg, not, Value};
use crate::dtype::DType;

pub(super) fn active(mask: Option<&[bool]>, i: usize) -> bool {
    mask.is_none_or(|m| m.get(i).copied().unwrap_or(true))
}

fn zero_value(d: DType) -> Value {
    if d.lanes > 1 {
        Value::V(vec![zero_of(d); d.lanes as usize])
    } else {
        Value::S(zero_of(d))
    }
}

/// The integer `v` as a value of `dtype`, wrapping like Rust's `as`.
fn wrap_int(dtype: DType, v: i128) -> R<S> {
    // `cast` from an i64 wraps; reduce the i128 to its low 64 bits first (every integer type
    // has at most 64 bits, so this keeps the value modulo 2^bits).
    cast(dtype.element(), S::I64(v as i64))
}

fn lanewise1(x: Value, f: impl Fn(S) -> R<S>) -> R<Value> {
    Ok(match x {
        Value::S(a) => Value::S(f(a)?),
        Value::V(v) => Value::V(v.into_iter().map(f).collect::<R<Vec<_>>>()?),
    })
}

fn lanewise2(x: Value, y: Value, mask: Option<&[bool]>, fallback: S, f: impl Fn(S, S) -> R<S>) -> R<Value> {
    match (x, y) {
        (Value::S(a), Value::S(b)) => Ok(Value::S(f(a, b)?)),
        (Value::V(a), Value::V(b)) if a.len() == b.len() => {
            let mut out = Vec::with_capacity(a.len());
            for i in 0..a.len() {
                match f(a[i], b[i]) {
                    Ok(v) => out.push(v),
                    // A lane the enclosing vector select discards: its error does not happen.
                    Err(_) if !active(mask, i) => out.push(fallback),
                    Err(e) => return Err(e),
                }
            }
            Ok(Value::V(out))
        }
        _ => internal("operands with different lane counts"),
    }
}

pub(super) fn as_bools(v: &[S]) -> R<Vec<bool>> {
    v.iter().map(|s| if let S::Bool(b) = s { Ok(*b) } else { internal("non-bool condition lane") }).collect()
}

impl<'p> Machine<'p> {
    pub(super) fn eval_int(&mut self, ctx: &Ctx, e: &CExpr) -> R<i128> {
        if e.dtype.lanes != 1 {
            return internal("vector where a scalar integer was expected");
        }
        match self.eval_scalar(ctx, e)?.as_i128() {
            Some(i) => Ok(i),
            None => internal("integer expression with a non-integer value"),
        }
    }

    pub(super) fn eval_bool(&mut self, ctx: &Ctx, e: &CExpr) -> R<bool> {
        if e.dtype.lanes != 1 {
            return internal("vector where a scalar condition was expected");
        }
        match self.eval_scalar(ctx, e)? {
            S::Bool(b) => Ok(b),
            _ => internal("condition with a non-bool value"),
        }
    }

    fn undefined<T>(&self, var: usize) -> R<T> {
        let hint = if self.in_kernel {
            " (a kernel sees only its thread variables, its scalar_args and variables it binds itself)"
        } else {
            ""
        };
        err(ErrorKind::UndefinedVariable, format!("use of undefined variable `{}`{hint}", self.var_name(var)))
    }

    /// Evaluates `e`. `mask`, for vector expressions under a vector `select`, says which
    /// lanes are used: the others read no memory and raise no errors.
    pub(super) fn eval(&mut self, ctx: &Ctx, e: &CExpr, mask: Option<&[bool]>) -> R<Value> {
        if e.dtype.lanes == 1 {
            return self.eval_scalar(ctx, e).map(Value::S);
        }
        self.eval_general(ctx, e, mask)
    }

    /// Evaluates a scalar expression (the fast path: no vectors, no masks).
    fn eval_scalar(&mut self, ctx: &Ctx, e: &CExpr) -> R<S> {
        match &e.kind {
            CE::Const(Value::S(s)) => Ok(*s),
            CE::Var(slot) => match ctx.env.get(*slot) {
                Some(Some(Value::S(s))) => Ok(*s),
                Some(Some(Value::V(_))) => internal("vector value of a scalar variable"),
                _ => self.undefined(*slot),
            },
            CE::Binary(op, a, b) => {
                let x = self.eval_scalar(ctx, a)?;
                let y = self.eval_scalar(ctx, b)?;
                binary(*op, x, y)
            }
            CE::Cmp(op, a, b) if a.dtype.lanes == 1 => {
                let x = self.eval_scalar(ctx, a)?;
                let y = self.eval_scalar(ctx, b)?;
                compare(*op, x, y).map(S::Bool)
            }
            CE::Cast(a) if a.dtype.lanes == 1 => cast(e.dtype, self.eval_scalar(ctx, a)?),
            CE::Load(buf, idx) => {
                let b = self.binding(ctx, *buf)?;
                let off = self.scalar_offset(ctx, *buf, b, idx, false)?;
                self.read(b.sid, off)
            }
            _ => match self.eval_general(ctx, e, None)? {
                Value::S(s) => Ok(s),
                Value::V(_) => internal("vector value of a scalar expression"),
            },
        }
    }

    /// Evaluates any expression, vector or scalar.
    fn eval_general(&mut self, ctx: &Ctx, e: &CExpr, mask: Option<&[bool]>) -> R<Value> {
        let mask = if e.dtype.lanes > 1 { mask } else { None };
        match &e.kind {
            CE::Const(v) => Ok(v.clone()),
            CE::Var(s) => match ctx.env.get(*s) {
                Some(Some(v)) => Ok(v.clone()),
                _ => self.undefined(*s),
            },
            CE::Binary(op, a, b) => {
                let x = self.eval(ctx, a, mask)?;
                let y = self.eval(ctx, b, mask)?;
                if let (Value::S(p), Value::S(q)) = (&x, &y) {
                    return Ok(Value::S(binary(*op, *p, *q)?));
                }
                lanewise2(x, y, mask, zero_of(e.dtype), |p, q| binary(*op, p, q))
            }
            CE::Cmp(op, a, b) => {
                let x = self.eval(ctx, a, mask)?;
                let y = self.eval(ctx, b, mask)?;
                if let (Value::S(p), Value::S(q)) = (&x, &y) {
                    return Ok(Value::S(S::Bool(compare(*op, *p, *q)?)));
                }
                lanewise2(x, y, mask, S::Bool(false), |p, q| compare(*op, p, q).map(S::Bool))
            }
            CE::And(a, b) | CE::Or(a, b) => {
                let is_and = matches!(e.kind, CE::And(..));
                match self.eval(ctx, a, mask)? {
                    Value::S(S::Bool(x)) => {
                        if x == is_and {
                            self.eval(ctx, b, None)
                        } else {
                            Ok(Value::S(S::Bool(x)))
                        }
                    }
                    Value::V(xs) => {
                        let xs = as_bools(&xs)?;
                        // `b` matters only in the lanes `a` does not decide.
                        let m: Vec<bool> = (0..xs.len()).map(|i| active(mask, i) && xs[i] == is_and).collect();
                        let ys = if m.iter().any(|&x| x) {
                            match self.eval(ctx, b, Some(&m))? {
                                Value::V(v) => as_bools(&v)?,
                                _ => return internal("lane count of `&&`"),
                            }
                        } else {
                            vec![false; xs.len()]
                        };
                        let out = xs.iter().zip(&ys).map(|(&x, &y)| S::Bool(if is_and { x && y } else { x || y }));
                        Ok(Value::V(out.collect()))
                    }
                    _ => internal("non-bool operand of `&&`/`||`"),
                }
            }
            CE::Not(a) => lanewise1(self.eval(ctx, a, mask)?, not),
            CE::Neg(a) => lanewise1(self.eval(ctx, a, mask)?, neg),
            CE::Select(c, t, o) => match self.eval(ctx, c, mask)? {
                Value::S(S::Bool(b)) => self.eval(ctx, if b { t } else { o }, mask),
                Value::V(cs) => {
                    let cs = as_bools(&cs)?;
                    let tm: Vec<bool> = (0..cs.len()).map(|i| active(mask, i) && cs[i]).collect();
                    let om: Vec<bool> = (0..cs.len()).map(|i| active(mask, i) && !cs[i]).collect();
                    let tv = if tm.iter().any(|&x| x) { self.eval(ctx, t, Some(&tm))? } else { zero_value(t.dtype) };
                    let ov = if om.iter().any(|&x| x) { self.eval(ctx, o, Some(&om))? } else { zero_value(o.dtype) };
                    match (tv, ov) {
                        (Value::V(tv), Value::V(ov)) if tv.len() == cs.len() && ov.len() == cs.len() => {
                            Ok(Value::V((0..cs.len()).map(|i| if cs[i] { tv[i] } else { ov[i] }).collect()))
                        }
                        _ => internal("lane count of a select"),
                    }
                }
                _ => internal("non-bool select condition"),
            },
            CE::Cast(a) => {
                let to = e.dtype;
                lanewise1(self.eval(ctx, a, mask)?, |s| cast(to, s))
            }
            CE::Call(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(ctx, a, mask)?);
                }
                if e.dtype.lanes == 1 {
                    let mut s = Vec::with_capacity(vals.len());
                    for v in vals {
                        match v {
                            Value::S(x) => s.push(x),
                            Value::V(_) => return internal("vector argument of a scalar call"),
                        }
                    }
                    Ok(Value::S(intrinsic(*f, &s)?))
                } else {
                    let n = e.dtype.lanes as usize;
                    let mut out = Vec::with_capacity(n);
                    for i in 0..n {
                        let mut s = Vec::with_capacity(vals.len());
                        for v in &vals {
                            match v {
                                Value::V(x) if x.len() == n => s.push(x[i]),
                                _ => return internal("lane count of a call"),
                            }
                        }
                        out.push(intrinsic(*f, &s)?);
                    }
                    Ok(Value::V(out))
                }
            }
            CE::Load(buf, idx) => self.load(ctx, *buf, idx, e.dtype.lanes, mask),
            CE::Ramp(b, s) => {
                let base = self.eval_int(ctx, b)?;
                let stride = self.eval_int(ctx, s)?;
                let lanes =
                    (0..e.dtype.lanes as i128).map(|i| wrap_int(e.dtype, base + i * stride)).collect::<R<Vec<_>>>()?;
                Ok(if lanes.len() == 1 { Value::S(lanes[0]) } else { Value::V(lanes) })
            }
            CE::Broadcast(v) => match self.eval(ctx, v, None)? {
                Value::S(s) => {
                    Ok(if e.dtype.lanes == 1 { Value::S(s) } else { Value::V(vec![s; e.dtype.lanes as usize]) })
                }
                Value::V(_) => internal("broadcast of a vector"),
            },
            CE::Check(v, extent, site) => {
                let val = self.eval(ctx, v, mask)?;
                let ext = match extent {
                    Some(x) => Some(self.eval_int(ctx, x)?),
                    None => None,
                };
                let lanes: Vec<S> = match &val {
                    Value::S(s) => vec![*s],
                    Value::V(xs) => xs.clone(),
                };
                for (i, x) in lanes.iter().enumerate() {
                    if !(lanes.len() == 1 || active(mask, i)) {
                        continue;
                    }
                    let Some(x) = x.as_i128() else { return internal("checked value that is not an integer") };
                    match ext {
                        Some(n) if x < 0 || x >= n => {
                            return err(
                                ErrorKind::CheckFailed,
                                format!("check #{site} failed: index {x} is outside 0..{n}"),
                            )
                        }
                        None if x == 0 => {
                            return err(ErrorKind::CheckFailed, format!("check #{site} failed: division by zero"))
                        }
                        _ => {}
                    }
                }
                Ok(val)
            }
        }
    }
}
