//! The interpreter never panics: thousands of random, mostly ill-formed functions (mixed
//! types, wrong arities, out-of-bounds indices, undefined variables, barriers anywhere,
//! vectors of odd widths) either run or return an error.

use tvm_core::dtype::DType;
use tvm_core::interp::{run, ArgValue, HostTensor, ScalarValue};
use tvm_core::target::Target;
use tvm_core::te::TensorId;
use tvm_core::tir::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize].clone()
    }
}

const DTYPES: [DType; 13] = [
    DType::BOOL,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

const INTRINSICS: [Intrinsic; 14] = [
    Intrinsic::Exp,
    Intrinsic::Log,
    Intrinsic::Sqrt,
    Intrinsic::Rsqrt,
    Intrinsic::Tanh,
    Intrinsic::Sigmoid,
    Intrinsic::Abs,
    Intrinsic::Floor,
    Intrinsic::Ceil,
    Intrinsic::Erf,
    Intrinsic::Sin,
    Intrinsic::Cos,
    Intrinsic::Pow,
    Intrinsic::Fma,
];

struct World {
    vars: Vec<Var>,
    bufs: Vec<Buffer>,
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

/// An expression of type `want` (a scalar or vector dtype), ill-typed now and then.
fn gen_expr(r: &mut Rng, w: &World, depth: u32, want: DType) -> Expr {
    if r.below(40) == 0 {
        // A random, probably ill-typed, expression.
        let other = r.pick(&DTYPES).with_lanes(r.pick(&[1u16, 1, 2, 4]));
        return gen_expr(r, w, depth.saturating_sub(1), other);
    }
    let lanes = want.lanes;
    let elem = want.element();
    if lanes > 1 && r.below(3) == 0 {
        // Built from a scalar.
        return Expr::Broadcast { value: bx(gen_expr(r, w, depth.saturating_sub(1), elem)), lanes };
    }
    let leaf = depth == 0 || r.below(4) == 0;
    let d = depth.saturating_sub(1);
    if leaf {
        if lanes > 1 {
            if elem.is_integer() {
                return Expr::Ramp { base: bx(gen_expr(r, w, d, elem)), stride: bx(gen_expr(r, w, d, elem)), lanes };
            }
            return Expr::Broadcast { value: bx(gen_expr(r, w, d, elem)), lanes };
        }
        let vars: Vec<Var> = w.vars.iter().filter(|v| v.dtype() == want).cloned().collect();
        if !vars.is_empty() && r.below(2) == 0 {
            return Expr::Var(r.pick(&vars));
        }
        if want.is_bool() {
            return Expr::Bool(r.below(2) == 0);
        }
        if want.is_integer() {
            let v = match r.below(6) {
                0 => i64::MAX - r.below(3) as i64,
                1 => i64::MIN + r.below(3) as i64,
                _ => r.below(24) as i64 - 12,
            };
            return Expr::Int { value: v, dtype: want };
        }
        let v = match r.below(8) {
            0 => f64::INFINITY,
            1 => f64::NAN,
            2 => 1e300,
            _ => (r.below(1000) as f64 - 500.0) / 7.0,
        };
        return Expr::Float { value: v, dtype: want };
    }
    let num = !want.is_bool();
    match r.below(12) {
        0..=2 if num => Expr::Binary {
            op: r.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod, BinOp::Min, BinOp::Max]),
            a: bx(gen_expr(r, w, d, want)),
            b: bx(gen_expr(r, w, d, want)),
        },
        0..=2 => {
            let t = r.pick(&DTYPES).with_lanes(lanes);
            Expr::Cmp {
                op: r.pick(&[CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne]),
                a: bx(gen_expr(r, w, d, t)),
                b: bx(gen_expr(r, w, d, t)),
            }
        }
        3 if want.is_bool() => {
            let (a, b) = (bx(gen_expr(r, w, d, want)), bx(gen_expr(r, w, d, want)));
            if r.below(2) == 0 {
                Expr::And(a, b)
            } else {
                Expr::Or(a, b)
            }
        }
        3 if want.is_int() || want.is_float() => Expr::Neg(bx(gen_expr(r, w, d, want))),
        4 if want.is_bool() || want.is_integer() => Expr::Not(bx(gen_expr(r, w, d, want))),
        5 => {
            let c = DType::BOOL.with_lanes(if r.below(2) == 0 { 1 } else { lanes });
            Expr::Select {
                cond: bx(gen_expr(r, w, d, c)),
                then: bx(gen_expr(r, w, d, want)),
                otherwise: bx(gen_expr(r, w, d, want)),
            }
        }
        6 if !want.is_bool() => {
            let from = r.pick(&DTYPES).with_lanes(lanes);
            Expr::Cast { dtype: elem, value: bx(gen_expr(r, w, d, from)) }
        }
        7 if want.is_float() || (want.is_integer() && r.below(2) == 0) => {
            let f = if want.is_float() { r.pick(&INTRINSICS) } else { Intrinsic::Abs };
            Expr::Call { func: f, args: (0..f.arity()).map(|_| gen_expr(r, w, d, want)).collect() }
        }
        8..=10 => {
            let bufs: Vec<Buffer> = w.bufs.iter().filter(|b| b.dtype() == elem).cloned().collect();
            if bufs.is_empty() {
                return gen_expr(r, w, 0, want);
            }
            let n = if r.below(10) == 0 { r.below(3) as usize } else { 1 };
            let mut indices: Vec<Expr> = (0..n).map(|_| gen_index(r, w, d, 1)).collect();
            if let Some(last) = indices.last_mut() {
                if lanes > 1 {
                    *last = gen_index(r, w, d, lanes);
                }
            }
            Expr::Load { buffer: r.pick(&bufs), indices }
        }
        11 if r.below(4) == 0 => Expr::ProducerLoad { tensor: TensorId(0), indices: vec![], dtype: want },
        _ => gen_expr(r, w, 0, want),
    }
}

/// An i64 index (of `lanes` lanes) near the buffers' sizes.
fn gen_index(r: &mut Rng, w: &World, depth: u32, lanes: u16) -> Expr {
    if lanes > 1 {
        return match r.below(3) {
            0 => Expr::Broadcast { value: bx(gen_index(r, w, depth, 1)), lanes },
            _ => Expr::Ramp { base: bx(gen_index(r, w, depth, 1)), stride: bx(Expr::int(r.below(3) as i64)), lanes },
        };
    }
    match r.below(6) {
        0 => Expr::int(r.below(12) as i64 - 2),
        1 | 2 => Expr::Var(w.vars[r.below(2) as usize].clone()),
        3 if depth > 0 => Expr::Binary {
            op: r.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Mod, BinOp::Div]),
            a: bx(gen_index(r, w, depth - 1, 1)),
            b: bx(gen_index(r, w, depth - 1, 1)),
        },
        4 => Expr::Var(w.vars[5].clone()),
        _ => gen_expr(r, w, depth, DType::I64),
    }
}

fn gen_stmt(r: &mut Rng, w: &World, depth: u32, kernels: usize) -> Stmt {
    let d = depth.saturating_sub(1);
    let leaf = depth == 0 || r.below(3) == 0;
    if leaf {
        return match r.below(12) {
            // `kernels == usize::MAX`: a kernel body.
            0 if kernels == usize::MAX || r.below(20) == 0 => Stmt::Barrier,
            1 if kernels != usize::MAX || r.below(20) == 0 => {
                let n = if r.below(10) == 0 { 3 } else { kernels.clamp(1, 3) as u64 };
                Stmt::Launch { kernel: r.below(n) as usize }
            }
            2 => Stmt::NoOp,
            _ => {
                let n = if r.below(8) == 0 { r.below(3) as usize } else { 1 };
                let buffer = r.pick(&w.bufs);
                let lanes = r.pick(&[1u16, 1, 1, 2, 4]);
                let mut indices: Vec<Expr> = (0..n).map(|_| gen_index(r, w, 2, 1)).collect();
                if let Some(last) = indices.last_mut() {
                    *last = gen_index(r, w, 2, lanes);
                }
                Stmt::Store { value: gen_expr(r, w, 3, buffer.dtype().with_lanes(lanes)), buffer, indices }
            }
        };
    }
    match r.below(8) {
        0 | 1 => Stmt::Seq((0..r.below(4)).map(|_| gen_stmt(r, w, d, kernels)).collect()),
        2 => Stmt::For {
            var: r.pick(&w.vars[..2]),
            min: Expr::int(r.below(3) as i64 - 1),
            extent: if r.below(4) == 0 { gen_index(r, w, 1, 1) } else { Expr::int(r.below(6) as i64) },
            kind: r.pick(&[ForKind::Serial, ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled]),
            body: Box::new(gen_stmt(r, w, d, kernels)),
        },
        3 => Stmt::If {
            cond: gen_expr(r, w, 2, DType::BOOL),
            then: Box::new(gen_stmt(r, w, d, kernels)),
            otherwise: (r.below(2) == 0).then(|| Box::new(gen_stmt(r, w, d, kernels))),
        },
        4 => {
            let var = r.pick(&w.vars[2..]);
            Stmt::Let { value: gen_expr(r, w, 2, var.dtype()), var, body: Box::new(gen_stmt(r, w, d, kernels)) }
        }
        5 => Stmt::Allocate {
            buffer: r.pick(&w.bufs[2..]),
            extent: if r.below(4) == 0 { gen_index(r, w, 1, 1) } else { Expr::int(r.below(10) as i64) },
            body: Box::new(gen_stmt(r, w, d, kernels)),
        },
        6 => Stmt::ThreadBinding {
            tag: r.pick(&ThreadTag::ALL),
            var: r.pick(&w.vars[..2]),
            extent: Expr::int(r.below(5) as i64),
            body: Box::new(gen_stmt(r, w, d, kernels)),
        },
        _ => Stmt::Realize {
            buffer: r.pick(&w.bufs),
            bounds: (0..r.below(3))
                .map(|_| Range::new(Expr::int(r.below(3) as i64), Expr::int(r.below(4) as i64)))
                .collect(),
            body: Box::new(gen_stmt(r, w, d, kernels)),
        },
    }
}

/// Usually inside loops over `i` and `j` and allocations of `C` and `H`.
fn wrap(r: &mut Rng, w: &World, mut body: Stmt) -> Stmt {
    for b in [&w.bufs[2], &w.bufs[4]] {
        if r.below(3) != 0 {
            body = Stmt::Allocate { buffer: b.clone(), extent: Expr::int(r.below(12) as i64), body: Box::new(body) };
        }
    }
    for v in &w.vars[..2] {
        if r.below(3) != 0 {
            let kind = r.pick(&[ForKind::Serial, ForKind::Parallel]);
            body = Stmt::For {
                var: v.clone(),
                min: Expr::int(0),
                extent: Expr::int(r.below(5) as i64),
                kind,
                body: Box::new(body),
            };
        }
    }
    body
}

#[test]
fn random_programs_never_panic() {
    let mut r = Rng(7);
    let (mut ok, mut failed) = (0, 0);
    for case in 0..4000 {
        let i = Var::index("i");
        let j = Var::index("j");
        let x = Var::new("x", DType::I32);
        let y = Var::new("y", DType::F32);
        let v4 = Var::new("v4", DType::F32.with_lanes(4));
        let tx = Var::index("tx");
        let a = Buffer::new("A", DType::F32, Scope::Global);
        let b = Buffer::new("B", DType::I32, Scope::Global);
        let c = Buffer::new("C", DType::F32, Scope::Local);
        let s = Buffer::new("S", DType::F32, Scope::Shared);
        let h = Buffer::new("H", DType::F16, Scope::Global);
        let w =
            World { vars: vec![i, j, x.clone(), y.clone(), v4, tx.clone()], bufs: vec![a.clone(), b.clone(), c, s, h] };
        let n_kernels = r.below(2) as usize;
        let kernels = (0..n_kernels)
            .map(|_| Kernel {
                name: "k".into(),
                thread_vars: vec![(ThreadTag::ThreadX, tx.clone())],
                grid: [Expr::int(r.below(3) as i64), Expr::int(1), Expr::int(1)],
                block: [Expr::int(r.below(5) as i64), Expr::int(1), Expr::int(1)],
                buffer_args: vec![a.clone(), b.clone()],
                scalar_args: vec![x.clone()],
                body: {
                    let body = gen_stmt(&mut r, &w, 4, usize::MAX);
                    if r.below(2) == 0 {
                        Stmt::Allocate {
                            buffer: w.bufs[3].clone(),
                            extent: Expr::int(r.below(12) as i64),
                            body: Box::new(body),
                        }
                    } else {
                        body
                    }
                },
            })
            .collect();
        let f = PrimFunc {
            checks: vec![],
            name: format!("case{case}"),
            target: if r.below(2) == 0 { Target::cpu() } else { Target::cuda() },
            params: vec![
                Param::Tensor { buffer: a, shape: vec![Expr::int(8)], is_output: false },
                Param::Tensor { buffer: b, shape: vec![Expr::int(2), Expr::int(4)], is_output: true },
                Param::Scalar(x),
                Param::Scalar(y),
            ],
            body: {
                let body = gen_stmt(&mut r, &w, 5, n_kernels);
                wrap(&mut r, &w, body)
            },
            kernels,
        };
        let mut args = vec![
            ArgValue::Tensor(HostTensor::f32(vec![8], (0..8).map(|k| k as f32 - 3.5).collect())),
            ArgValue::Tensor(HostTensor::i32(vec![2, 4], (0..8).collect())),
            ArgValue::Scalar(ScalarValue::I32(r.below(10) as i32 - 3)),
            ArgValue::Scalar(ScalarValue::F32(1.5)),
        ];
        match run(&f, &mut args) {
            Ok(()) => ok += 1,
            Err(e) => {
                assert!(!e.message.contains("internal interpreter error"), "case {case}: {e}\n{f:#?}");
                failed += 1;
            }
        }
    }
    // Both outcomes occur, so the generator exercises execution, not only the checker.
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}
