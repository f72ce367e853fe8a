//! Expressions: a scalar becomes a Rust value of its type, a vector a `[T; L]` array.
//!
//! Semantics follow the interpreter: integers wrap (`wrapping_*`; `/` and `%` panic on a
//! zero divisor), floats are Rust's `f32`/`f64` operations, `select` and `&&`/`||`
//! evaluate only what is needed (per lane for vectors whose other side could read memory
//! or divide). Vector operations are lane maps over arrays (`__map2(a, b, |x, y| ..)`),
//! which LLVM turns into SIMD instructions of the level being compiled.
//!
//! Every emitted expression is either an atom (a name, literal, call, method call,
//! block or array) or wrapped in parentheses, so it can be an operand or a receiver.

use super::{scalar_ty, unsupported, Emitter, R};
use crate::dtype::DType;
use crate::tir::{BinOp, CheckKind, CmpOp, Expr, Intrinsic};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, ToTokens};

impl Emitter<'_> {
    /// The value of `e`.
    /// `a * b + c` (either operand of the sum a float product) as `(a, b, c)`, when the
    /// function contracts (see [`Emitter::fma`]).
    fn contractible(&self, e: &'_ Expr) -> Option<(Expr, Expr, Expr)> {
        if !self.contract {
            return None;
        }
        let Expr::Binary { op: BinOp::Add, a, b } = e else { return None };
        if !e.dtype().is_float() || e.dtype().element().bits < 32 {
            return None;
        }
        match (&**a, &**b) {
            (Expr::Binary { op: BinOp::Mul, a: x, b: y }, c) | (c, Expr::Binary { op: BinOp::Mul, a: x, b: y }) => {
                Some(((**x).clone(), (**y).clone(), c.clone()))
            }
            _ => None,
        }
    }

    /// `x * y + z` as one fused multiply-add on the feature levels that have FMA (the
    /// condition is a constant of each level's instance), as two operations elsewhere.
    fn fma(&self, x: TokenStream, y: TokenStream, z: TokenStream) -> TokenStream {
        let cond = self.fma_levels();
        quote!((if #cond { #x.mul_add(#y, #z) } else { #x * #y + #z }))
    }

    pub(super) fn expr(&mut self, e: &Expr) -> R<TokenStream> {
        let d = e.dtype();
        if d.lanes > 1 {
            return self.vector(e);
        }
        if let Some((x, y, z)) = self.contractible(e) {
            let (x, y, z) = (self.expr(&x)?, self.expr(&y)?, self.expr(&z)?);
            return Ok(self.fma(x, y, z));
        }
        Ok(match e {
            Expr::Var(v) => {
                let id = self.names.var(v);
                quote!(#id)
            }
            Expr::Call { func, args } => {
                let xs = args.iter().map(|a| self.expr(a)).collect::<R<Vec<_>>>()?;
                self.call(*func, d, xs)?
            }
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported("multi-dimensional loads (the function was not flattened)"));
                };
                self.load(buffer, index)?
            }
            Expr::Check { value, kind, site } => {
                let x = self.expr(value)?;
                self.check(x, kind, *site)?
            }
            Expr::Ramp { .. } | Expr::Broadcast { .. } => unreachable!("internal: one-lane vector node"),
            Expr::ProducerLoad { .. } | Expr::Reduce(_) => {
                return Err(unsupported("tensor-expression nodes (the function was not lowered)"))
            }
            // Only the taken side is evaluated, knowing the condition (a recurrence's
            // `if j == 0 { .. } else { y[j - 1] }` reads inside its parallel chunk).
            Expr::Select { cond, then, otherwise } => {
                let c = self.expr(cond)?;
                let (t, o) = self.sides(cond, then, otherwise, Self::expr)?;
                quote!((if #c { #t } else { #o }))
            }
            Expr::Binary { op: op @ (BinOp::Div | BinOp::Mod), a, b } if self.proved_divisions.contains(e) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                let q = if *op == BinOp::Div { quote!(/) } else { quote!(%) };
                // A division `parallel::hoist_divisions` moved, proved `a >= 0` and `b >= 1`
                // for the values computed: the unsigned operation by a `NonZeroU64` is the
                // same value and cannot panic where the source would not have evaluated it.
                // (Others stay `wrapping_div`: proving each would cost the macro two proofs
                // a division, and LLVM hoists those not under a condition itself.)
                quote!((((#x as u64) #q ::core::num::NonZeroU64::new(#y as u64).unwrap_or(::core::num::NonZeroU64::MIN)) as i64))
            }
            // Constants and operators.
            _ => {
                let xs = operands(e).into_iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                scalar_operator(e, xs)?
            }
        })
    }

    /// Whether `a / b` (and `a % b`) of `i64` values is proved to divide a non-negative
    /// value by a positive symbolic one, for the values the generated code computes.
    pub(super) fn nonnegative_division(&self, a: &Expr, b: &Expr) -> bool {
        let f = &self.facts;
        // A constant divisor is left to `wrapping_div`, which cannot panic then either.
        a.dtype() == DType::I64
            && b.dtype() == DType::I64
            && !matches!(b, Expr::Int { .. })
            && f.exact(a)
            && f.exact(b)
            && f.prove(&Expr::ge(a.clone(), Expr::int(0)))
            && f.prove(&Expr::ge(b.clone(), Expr::int(1)))
    }

    /// `tvm_runtime::cpu::<helper>(args..)` in the instances of the AVX-512 levels,
    /// `portable` (given the argument names) in the others; the arguments are evaluated
    /// once, before the choice, in order.
    fn avx512_or(
        &mut self,
        helper: TokenStream,
        args: Vec<TokenStream>,
        portable: impl FnOnce(&mut Self, &[TokenStream]) -> TokenStream,
    ) -> TokenStream {
        let Some(cond) = self.avx512_levels() else { return portable(self, &args) };
        let names: Vec<TokenStream> = (0..args.len()).map(|i| format_ident!("__a{}", i).into_token_stream()).collect();
        let lanes = portable(self, &names);
        let (rt, h) = (&self.opts.rt_path, helper);
        quote!({
            let (#(#names,)*) = (#(#args,)*);
            if #cond {
                // SAFETY: this is the instance for the AVX-512 level, run only where the
                // CPU has it.
                unsafe { #rt::cpu::#h(#(#names),*) }
            } else {
                #lanes
            }
        })
    }

    /// The two sides of a select on the scalar `cond`, each emitted by `emit` knowing
    /// whether `cond` holds there (only the taken side runs: a recurrence's `if j == 0 {
    /// .. } else { y[j - 1] }` then reads inside its parallel chunk).
    fn sides(
        &mut self,
        cond: &Expr,
        then: &Expr,
        otherwise: &Expr,
        emit: fn(&mut Self, &Expr) -> R<TokenStream>,
    ) -> R<(TokenStream, TokenStream)> {
        let mut side = |e: &Expr, holds: bool| {
            let snap = self.facts.snapshot();
            self.facts.assume(cond, holds);
            let r = emit(self, e);
            self.facts.restore(snap);
            r
        };
        let t = side(then, true);
        let o = side(otherwise, false);
        Ok((t?, o?))
    }

    /// Whether a select reads a parallel loop's chunk of a buffer: its lanes outside the
    /// chunk are other iterations' elements, written meanwhile, so they are read only
    /// where the select takes them (lane by lane).
    fn reads_chunk(&self, cond: &Expr, then: &Expr, otherwise: &Expr) -> bool {
        let mut chunk = false;
        for e in [cond, then, otherwise] {
            crate::tir::visit::for_each_expr(e, &mut |x| {
                if let Expr::Load { buffer, .. } = x {
                    chunk |= matches!(self.bufs.get(buffer).map(|b| &b.kind), Some(super::BufKind::Chunk(_)));
                }
            });
        }
        chunk
    }

    /// The value of a vector expression, as `[T; L]`.
    fn vector(&mut self, e: &Expr) -> R<TokenStream> {
        let d = e.dtype();
        let lanes = Literal::usize_unsuffixed(d.lanes as usize);
        if let Some((x, y, z)) = self.contractible(e) {
            let (x, y, z) = (self.vector(&x)?, self.vector(&y)?, self.vector(&z)?);
            let f = self.fma(quote!(__x), quote!(__y), quote!(__z));
            self.helpers.insert("__map3");
            if d.element() == DType::F32 && d.lanes > 16 && d.lanes % 16 != 0 {
                // 512-bit registers and a narrower rest on the AVX-512 level (see
                // `tvm_runtime::cpu::fma_f32_avx512`): LLVM would split every row at 8.
                let h = quote!(fma_f32_avx512::<#lanes>);
                return Ok(self.avx512_or(h, vec![x, y, z], |_, a| {
                    let (a0, a1, a2) = (&a[0], &a[1], &a[2]);
                    quote!(__map3(#a0, #a1, #a2, |__x, __y, __z| #f))
                }));
            }
            return Ok(quote!(__map3(#x, #y, #z, |__x, __y, __z| #f)));
        }
        Ok(match e {
            Expr::Var(v) => {
                let id = self.names.var(v);
                quote!(#id)
            }
            Expr::Broadcast { value, .. } => {
                let x = self.expr(value)?;
                quote!([#x; #lanes])
            }
            Expr::Ramp { base, stride, .. } => {
                let (b, s, t) = (self.expr(base)?, self.expr(stride)?, scalar_ty(d)?);
                quote!({
                    let (__b, __s) = (#b, #s);
                    ::core::array::from_fn::<#t, #lanes, _>(|__l| __b.wrapping_add(__s.wrapping_mul(__l as #t)))
                })
            }
            Expr::Binary { op, a, b } => {
                let (x, y) = (self.vector(a)?, self.vector(b)?);
                let f = binop(*op, d.element(), quote!(__x), quote!(__y));
                if matches!(op, BinOp::Max | BinOp::Min) && d.element() == DType::F32 {
                    // f32 `max`/`min` on the AVX-512 level: in 512-bit registers (see
                    // `tvm_runtime::cpu::max_f32_avx512`).
                    let h = if *op == BinOp::Max { quote!(max_f32_avx512) } else { quote!(min_f32_avx512) };
                    self.avx512_or(h, vec![x, y], |e, a| e.map2(a[0].clone(), a[1].clone(), f))
                } else if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
                    && d.element() == DType::F32
                    && d.lanes >= 16
                {
                    // Whole 512-bit registers on the AVX-512 level, the rest of a width
                    // that 16 does not divide narrower (see
                    // `tvm_runtime::cpu::arith_f32_avx512`).
                    let k = match op {
                        BinOp::Add => 0u8,
                        BinOp::Sub => 1,
                        _ => 2,
                    };
                    let k = Literal::u8_unsuffixed(k);
                    let h = quote!(arith_f32_avx512::<#lanes, #k>);
                    self.avx512_or(h, vec![x, y], |e, a| e.map2(a[0].clone(), a[1].clone(), f))
                } else {
                    self.map2(x, y, f)
                }
            }
            Expr::Cmp { op, a, b } => {
                let (x, y) = (self.vector(a)?, self.vector(b)?);
                let f = cmpop(*op, quote!(__x), quote!(__y));
                self.map2(x, y, f)
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let and = matches!(e, Expr::And(..));
                let x = self.vector(a)?;
                if may_trap(b) {
                    // `b` only where `a` does not decide.
                    let y = self.lane(b)?;
                    let body = if and { quote!(__a[__l] && #y) } else { quote!(__a[__l] || #y) };
                    quote!({
                        let __a = #x;
                        ::core::array::from_fn::<bool, #lanes, _>(|__l| #body)
                    })
                } else {
                    let y = self.vector(b)?;
                    let f = if and { quote!((__x & __y)) } else { quote!((__x | __y)) };
                    self.map2(x, y, f)
                }
            }
            Expr::Not(a) => {
                let x = self.vector(a)?;
                self.map1(x, quote!((!__x)))
            }
            Expr::Neg(a) => {
                let x = self.vector(a)?;
                let f = neg(d.element(), quote!(__x))?;
                self.map1(x, f)
            }
            Expr::Select { cond, then, otherwise } if cond.dtype().lanes == 1 => {
                // One condition for all lanes (a border test the loop partitioning kept):
                // only the taken side is evaluated, knowing the condition.
                let c = self.expr(cond)?;
                let (t, o) = self.sides(cond, then, otherwise, Self::vector)?;
                quote!((if #c { #t } else { #o }))
            }
            Expr::Select { cond, then, otherwise } => {
                let c = self.vector(cond)?;
                let lenient =
                    only_loads_trap(then) && only_loads_trap(otherwise) && !self.reads_chunk(cond, then, otherwise);
                if (may_trap(then) || may_trap(otherwise)) && lenient {
                    // Both sides in vectors, their loads lenient: a lane the select does
                    // not take may lie outside the buffer (the border of a padded read,
                    // the masked lanes of a tile's border), and reads zero there, in a
                    // vector load, a gather or a lane of its index alike (`load_lane`).
                    let was = std::mem::replace(&mut self.lenient, true);
                    let sides = (self.vector(then), self.vector(otherwise));
                    self.lenient = was;
                    let (t, o) = (sides.0?, sides.1?);
                    self.helpers.insert("__map3");
                    quote!(__map3(#c, #t, #o, |__c, __t, __o| if __c { __t } else { __o }))
                } else if may_trap(then) || may_trap(otherwise) {
                    let (t, o, ty) = (self.lane(then)?, self.lane(otherwise)?, scalar_ty(d)?);
                    quote!({
                        let __c = #c;
                        ::core::array::from_fn::<#ty, #lanes, _>(|__l| if __c[__l] { #t } else { #o })
                    })
                } else {
                    let (t, o) = (self.vector(then)?, self.vector(otherwise)?);
                    self.helpers.insert("__map3");
                    quote!(__map3(#c, #t, #o, |__c, __t, __o| if __c { __t } else { __o }))
                }
            }
            Expr::Cast { dtype, value } => {
                let x = self.vector(value)?;
                let f = cast(value.dtype().element(), dtype.element(), quote!(__x))?;
                self.map1(x, f)
            }
            Expr::Call { func, args } => {
                let xs = args.iter().map(|a| self.vector(a)).collect::<R<Vec<_>>>()?;
                let names = [quote!(__x), quote!(__y), quote!(__z)];
                let f = self.call(*func, d.element(), names[..xs.len()].to_vec())?;
                match xs.as_slice() {
                    // `exp` of f32 lanes on the AVX-512 level:
                    [x] if *func == Intrinsic::Exp && d.element() == DType::F32 && self.contract => {
                        // `vscalefps` does the scaling (see
                        // `tvm_runtime::cpu::exp_f32_avx512`).
                        self.avx512_or(quote!(exp_f32_avx512), vec![x.clone()], |e, a| e.map1(a[0].clone(), f))
                    }
                    [x] => self.map1(x.clone(), f),
                    [x, y] => self.map2(x.clone(), y.clone(), f),
                    [x, y, z] => {
                        self.helpers.insert("__map3");
                        quote!(__map3(#x, #y, #z, |__x, __y, __z| #f))
                    }
                    _ => return Err(unsupported(format!("`{}` with {} arguments", func.name(), xs.len()))),
                }
            }
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported("multi-dimensional loads (the function was not flattened)"));
                };
                self.load(buffer, index)?
            }
            Expr::Check { value, kind, site } => {
                let x = self.vector(value)?;
                let f = self.check(quote!(__x), kind, *site)?;
                self.map1(x, f)
            }
            _ => return Err(unsupported(format!("vector expression `{}`", crate::tir::printer::print_expr(e)))),
        })
    }

    /// `x` (emitted) under the check of `kind` at `site`: the runtime's `check_index` or
    /// `check_divisor`, which record a failure in the run's `__fault`.
    fn check(&mut self, x: TokenStream, kind: &CheckKind, site: u32) -> R<TokenStream> {
        let rt = &self.opts.rt_path;
        let s = Literal::u32_suffixed(site);
        Ok(match kind {
            CheckKind::Index { extent } => {
                let n = self.expr(extent)?;
                quote!(#rt::cpu::check_index(#x, #n, #s, __fault))
            }
            CheckKind::Divisor => quote!(#rt::cpu::check_divisor(#x, #s, __fault)),
        })
    }

    /// Lane `__l` (a `usize` in scope) of `e`, as a scalar; a scalar `e` is its own lane.
    pub(super) fn lane(&mut self, e: &Expr) -> R<TokenStream> {
        let d = e.dtype();
        if d.lanes == 1 {
            return self.expr(e);
        }
        let s = d.element();
        if let Some((x, y, z)) = self.contractible(e) {
            let (x, y, z) = (self.lane(&x)?, self.lane(&y)?, self.lane(&z)?);
            return Ok(self.fma(x, y, z));
        }
        Ok(match e {
            Expr::Var(v) => {
                let id = self.names.var(v);
                quote!(#id[__l])
            }
            Expr::Broadcast { value, .. } => self.expr(value)?,
            Expr::Ramp { base, stride, .. } => {
                let (b, st, t) = (self.expr(base)?, self.expr(stride)?, scalar_ty(d)?);
                quote!(#b.wrapping_add(#st.wrapping_mul(__l as #t)))
            }
            Expr::Binary { op, a, b } => {
                let (x, y) = (self.lane(a)?, self.lane(b)?);
                binop(*op, s, x, y)
            }
            Expr::Cmp { op, a, b } => {
                let (x, y) = (self.lane(a)?, self.lane(b)?);
                cmpop(*op, x, y)
            }
            Expr::And(a, b) => {
                let (x, y) = (self.lane(a)?, self.lane(b)?);
                quote!((#x && #y))
            }
            Expr::Or(a, b) => {
                let (x, y) = (self.lane(a)?, self.lane(b)?);
                quote!((#x || #y))
            }
            Expr::Not(a) => {
                let x = self.lane(a)?;
                quote!((!#x))
            }
            Expr::Neg(a) => {
                let x = self.lane(a)?;
                neg(s, x)?
            }
            Expr::Select { cond, then, otherwise } => {
                // Per lane; a condition of one lane is known on each side.
                let c = self.lane(cond)?;
                let (t, o) = if cond.dtype().lanes == 1 {
                    self.sides(cond, then, otherwise, Self::lane)?
                } else {
                    (self.lane(then)?, self.lane(otherwise)?)
                };
                quote!((if #c { #t } else { #o }))
            }
            Expr::Cast { dtype, value } => {
                let x = self.lane(value)?;
                cast(value.dtype().element(), dtype.element(), x)?
            }
            Expr::Call { func, args } => {
                let xs = args.iter().map(|a| self.lane(a)).collect::<R<Vec<_>>>()?;
                self.call(*func, s, xs)?
            }
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(unsupported("multi-dimensional loads (the function was not flattened)"));
                };
                self.load_lane(buffer, index)?
            }
            Expr::Check { value, kind, site } => {
                let x = self.lane(value)?;
                self.check(x, kind, *site)?
            }
            _ => return Err(unsupported(format!("vector expression `{}`", crate::tir::printer::print_expr(e)))),
        })
    }

    fn map1(&mut self, x: TokenStream, f: TokenStream) -> TokenStream {
        self.helpers.insert("__map1");
        quote!(__map1(#x, |__x| #f))
    }

    fn map2(&mut self, x: TokenStream, y: TokenStream, f: TokenStream) -> TokenStream {
        self.helpers.insert("__map2");
        quote!(__map2(#x, #y, |__x, __y| #f))
    }

    /// A math intrinsic on scalars of type `d`.
    fn call(&mut self, func: Intrinsic, d: DType, args: Vec<TokenStream>) -> R<TokenStream> {
        let a = &args[0];
        if !d.is_float() {
            return match func {
                Intrinsic::Abs if d.is_uint() => Ok(a.clone()),
                Intrinsic::Abs if d.is_int() => Ok(quote!(#a.wrapping_abs())),
                _ => Err(unsupported(format!("`{}` of a value of type {d}", func.name()))),
            };
        }
        let one = float_lit(1.0, d)?;
        let rt = &self.opts.rt_path;
        // Branch-free, so that lanes of it become SIMD code (≤ 1 ulp; see the runtime);
        // the polynomials fused on the levels with FMA, unless contraction is off (then
        // every level computes the same bits).
        let poly = |name: &str, x: TokenStream| {
            let plain = format_ident!("{name}");
            if !self.contract {
                return quote!(#rt::#plain(#x));
            }
            let fused = format_ident!("{name}_fma");
            let cond = self.fma_levels();
            quote!((if #cond { #rt::#fused(#x) } else { #rt::#plain(#x) }))
        };
        Ok(match func {
            Intrinsic::Exp if d.bits == 32 => poly("exp_f32", a.clone()),
            Intrinsic::Exp => quote!(#a.exp()),
            Intrinsic::Log if d.bits == 32 => poly("log_f32", a.clone()),
            Intrinsic::Log => quote!(#a.ln()),
            Intrinsic::Sqrt => quote!(#a.sqrt()),
            Intrinsic::Rsqrt => quote!((#one / #a.sqrt())),
            Intrinsic::Tanh if d.bits == 32 => poly("tanh_f32", a.clone()),
            Intrinsic::Tanh => quote!(#a.tanh()),
            Intrinsic::Sigmoid if d.bits == 32 => {
                let e = poly("exp_f32", quote!(-#a));
                quote!((#one / (#one + #e)))
            }
            Intrinsic::Sigmoid => quote!((#one / (#one + (-#a).exp()))),
            Intrinsic::Abs => quote!(#a.abs()),
            Intrinsic::Floor => quote!(#a.floor()),
            Intrinsic::Ceil => quote!(#a.ceil()),
            Intrinsic::Erf if d.bits == 32 => poly("erf_f32", a.clone()),
            Intrinsic::Erf => quote!(#rt::erf_f64(#a)),
            Intrinsic::Sin => quote!(#a.sin()),
            Intrinsic::Cos => quote!(#a.cos()),
            // Branch-free too (≤ 1 ulp, special cases as C's `powf`).
            Intrinsic::Pow if d.bits == 32 => {
                let b = &args[1];
                quote!(#rt::pow_f32(#a, #b))
            }
            Intrinsic::Pow => {
                let b = &args[1];
                quote!(#a.powf(#b))
            }
            Intrinsic::Fma => {
                let (b, c) = (&args[1], &args[2]);
                quote!(#a.mul_add(#b, #c))
            }
        })
    }
}

/// Whether `e` is a constant or an operator [`scalar_operator`] emits.
pub(crate) fn is_scalar_operator(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Int { .. }
            | Expr::Float { .. }
            | Expr::Bool(_)
            | Expr::Binary { .. }
            | Expr::Cmp { .. }
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Not(_)
            | Expr::Neg(_)
            | Expr::Select { .. }
            | Expr::Cast { .. }
    )
}

/// The operands of an operator, in the order [`scalar_operator`] takes them.
pub(crate) fn operands(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Binary { a, b, .. } | Expr::Cmp { a, b, .. } | Expr::And(a, b) | Expr::Or(a, b) => vec![a, b],
        Expr::Not(a) | Expr::Neg(a) => vec![a],
        Expr::Select { cond, then, otherwise } => vec![cond, then, otherwise],
        Expr::Cast { value, .. } => vec![value],
        _ => vec![],
    }
}

/// The scalar constant or operator `e` (see [`is_scalar_operator`]) as Rust, with the
/// interpreter's semantics, its operands already emitted as `xs`. Shared by the CPU
/// backend and the host code of GPU functions.
pub(crate) fn scalar_operator(e: &Expr, xs: Vec<TokenStream>) -> R<TokenStream> {
    let d = e.dtype();
    let x = |i: usize| xs[i].clone();
    Ok(match e {
        Expr::Int { value, dtype } => int_lit(*value, *dtype)?,
        Expr::Float { value, dtype } => float_lit(*value, *dtype)?,
        Expr::Bool(b) => quote!(#b),
        Expr::Binary { op, .. } => binop(*op, d, x(0), x(1)),
        Expr::Cmp { op, .. } => cmpop(*op, x(0), x(1)),
        Expr::And(..) => {
            let (a, b) = (x(0), x(1));
            quote!((#a && #b))
        }
        Expr::Or(..) => {
            let (a, b) = (x(0), x(1));
            quote!((#a || #b))
        }
        Expr::Not(_) => {
            let a = x(0);
            quote!((!#a))
        }
        Expr::Neg(_) => neg(d, x(0))?,
        Expr::Select { .. } => {
            let (c, t, o) = (x(0), x(1), x(2));
            quote!((if #c { #t } else { #o }))
        }
        Expr::Cast { dtype, value } => cast(value.dtype(), *dtype, x(0))?,
        _ => return Err(unsupported(format!("`{}` as a scalar operator", crate::tir::printer::print_expr(e)))),
    })
}

/// Whether evaluating `e` where the interpreter would not could fail or touch memory (a
/// load, or an integer division by a possible zero).
pub(super) fn may_trap(e: &Expr) -> bool {
    let mut trap = false;
    crate::tir::visit::for_each_expr(e, &mut |x| {
        trap |= match x {
            Expr::Load { .. } | Expr::Check { .. } => true,
            Expr::Binary { op: BinOp::Div | BinOp::Mod, a, b } => a.dtype().is_integer() && !positive_constant(b),
            _ => false,
        };
    });
    trap
}

/// Whether the only things in `e` that [`may_trap`] are loads (no check, no integer
/// division but by a positive constant): evaluated where the interpreter would not, such
/// an `e` is harmless when its loads are lenient.
fn only_loads_trap(e: &Expr) -> bool {
    let mut ok = true;
    crate::tir::visit::for_each_expr(e, &mut |x| {
        ok &= match x {
            Expr::Check { .. } => false,
            Expr::Binary { op: BinOp::Div | BinOp::Mod, a, b } => !a.dtype().is_integer() || positive_constant(b),
            _ => true,
        };
    });
    ok
}

/// An integer divisor that cannot fail a division: a positive constant that its type
/// holds (the row `y_par / 2` of a parallel loop fused from rows and blocks); written as
/// a literal of that type, a larger one would wrap, to zero for one.
fn positive_constant(b: &Expr) -> bool {
    let Expr::Int { value, dtype } = b else { return false };
    let bits = u32::from(dtype.bits) - u32::from(dtype.is_int());
    *value > 0 && (bits >= 63 || *value < 1i64 << bits)
}

/// `a op b` on scalars of type `d`.
pub(crate) fn binop(op: BinOp, d: DType, a: TokenStream, b: TokenStream) -> TokenStream {
    if d.is_float() {
        return match op {
            BinOp::Add => quote!((#a + #b)),
            BinOp::Sub => quote!((#a - #b)),
            BinOp::Mul => quote!((#a * #b)),
            BinOp::Div => quote!((#a / #b)),
            BinOp::Mod => quote!((#a % #b)),
            BinOp::Min => quote!(#a.min(#b)),
            BinOp::Max => quote!(#a.max(#b)),
        };
    }
    match op {
        BinOp::Add => quote!(#a.wrapping_add(#b)),
        BinOp::Sub => quote!(#a.wrapping_sub(#b)),
        BinOp::Mul => quote!(#a.wrapping_mul(#b)),
        BinOp::Div => quote!(#a.wrapping_div(#b)),
        BinOp::Mod => quote!(#a.wrapping_rem(#b)),
        BinOp::Min => quote!(::core::cmp::Ord::min(#a, #b)),
        BinOp::Max => quote!(::core::cmp::Ord::max(#a, #b)),
    }
}

pub(crate) fn cmpop(op: CmpOp, a: TokenStream, b: TokenStream) -> TokenStream {
    match op {
        CmpOp::Lt => quote!((#a < #b)),
        CmpOp::Le => quote!((#a <= #b)),
        CmpOp::Gt => quote!((#a > #b)),
        CmpOp::Ge => quote!((#a >= #b)),
        CmpOp::Eq => quote!((#a == #b)),
        CmpOp::Ne => quote!((#a != #b)),
    }
}

pub(crate) fn neg(d: DType, a: TokenStream) -> R<TokenStream> {
    if d.is_float() {
        Ok(quote!((-#a)))
    } else if d.is_int() {
        Ok(quote!(#a.wrapping_neg()))
    } else {
        Err(unsupported(format!("negation of a value of type {d}")))
    }
}

/// `a as to` with the interpreter's semantics (Rust's `as`; bool to number is 0 or 1).
pub(crate) fn cast(from: DType, to: DType, a: TokenStream) -> R<TokenStream> {
    if from == to {
        return Ok(a);
    }
    if to.is_bool() {
        return Err(unsupported(format!("a cast from {from} to bool")));
    }
    let t = scalar_ty(to)?;
    if from.is_bool() && to.is_float() {
        return Ok(quote!(((#a as u8) as #t)));
    }
    Ok(quote!((#a as #t)))
}

/// An integer constant of type `d`.
pub(crate) fn int_lit(value: i64, d: DType) -> R<TokenStream> {
    let t = scalar_ty(d)?;
    let lit = |v: u64| -> Literal {
        match (d.is_uint(), d.bits) {
            (true, 8) => Literal::u8_suffixed(v as u8),
            (true, 16) => Literal::u16_suffixed(v as u16),
            (true, 32) => Literal::u32_suffixed(v as u32),
            (true, _) => Literal::u64_suffixed(v),
            (false, 8) => Literal::i8_suffixed(v as i8),
            (false, 16) => Literal::i16_suffixed(v as i16),
            (false, 32) => Literal::i32_suffixed(v as i32),
            (false, _) => Literal::i64_suffixed(v as i64),
        }
    };
    if d.is_uint() || value >= 0 {
        let l = lit(value as u64);
        return Ok(quote!(#l));
    }
    let min = match d.bits {
        8 => i8::MIN as i64,
        16 => i16::MIN as i64,
        32 => i32::MIN as i64,
        _ => i64::MIN,
    };
    if value == min {
        return Ok(quote!(#t::MIN));
    }
    let l = lit(value.unsigned_abs());
    Ok(quote!((-#l)))
}

/// A float constant of type `d`, exactly.
pub(crate) fn float_lit(value: f64, d: DType) -> R<TokenStream> {
    let t = scalar_ty(d)?;
    if value.is_nan() {
        return Ok(quote!(#t::NAN));
    }
    if value.is_infinite() {
        return Ok(if value > 0.0 { quote!(#t::INFINITY) } else { quote!(#t::NEG_INFINITY) });
    }
    let l = if d.bits == 32 { Literal::f32_suffixed((value as f32).abs()) } else { Literal::f64_suffixed(value.abs()) };
    Ok(if value.is_sign_negative() { quote!((-#l)) } else { quote!(#l) })
}
