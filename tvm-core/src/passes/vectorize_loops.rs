//! Turns every `vectorize` loop with a constant extent into vector operations: the loop
//! variable becomes `ramp(min, 1, lanes)`, loads and stores at contiguous or strided
//! indices become vector loads and stores, loads at other indices gathers, and
//! loop-invariant values are broadcast. A loop whose body cannot be vectorized exactly
//! (inner loops, guards that depend on the loop variable, scatters, reads under a select
//! that depends on it, except on the CPU of the inputs and of a parallel iteration's own
//! buffers) stays a serial loop, so results never change, and is reported with the
//! reason: the lowering turns a report about a loop the user asked to vectorize into a
//! compile error at the `vectorize` (see `verify_loop_annotations`).

use crate::tir::mutate::{substitute_stmt, super_stmt, Mutator};
use crate::tir::visit::{for_each_expr, uses_var};
use crate::tir::{BinOp, BufferId, CheckKind, Expr, ForKind, PrimFunc, Stmt, Var};
use std::collections::HashSet;

/// The largest vector the pass creates; a longer `vectorize` loop is strip-mined into
/// vectors of this many lanes and one of the rest.
pub const MAX_LANES: i64 = 64;

/// Why a `vectorize` loop stayed serial.
#[derive(Clone, Debug, PartialEq)]
pub enum NotVectorized {
    /// The extent is not a constant of at least 2 (longer than [`MAX_LANES`] is
    /// strip-mined, not refused).
    Lanes(Option<i64>),
    /// A loop inside the body.
    InnerLoop,
    /// An `if` whose condition depends on the loop variable.
    Guard(Expr),
    /// A store whose index is not linear in the loop variable.
    Scatter(String),
    /// A read of memory under a condition that depends on the loop variable.
    GuardedRead(String),
    /// Another statement the pass does not vectorize (named).
    Statement(&'static str),
}

impl NotVectorized {
    /// The reason, completing "cannot vectorize `x`: ...".
    pub fn reason(&self) -> String {
        use crate::tir::printer::print_expr;
        match self {
            NotVectorized::Lanes(Some(n)) => format!("its extent is {n}; a vector has at least 2 lanes"),
            NotVectorized::Lanes(None) => "its extent is not a compile-time constant here".into(),
            NotVectorized::InnerLoop => "the loop body contains another loop".into(),
            NotVectorized::Guard(c) => format!("the body is guarded by `{}`, which depends on the axis", print_expr(c)),
            NotVectorized::Scatter(b) => format!("the store to `{b}` is not at consecutive or evenly spaced elements"),
            NotVectorized::GuardedRead(b) => {
                format!(
                    "`{b}` is read only where a condition on the axis holds, and vector lanes would read it \
                     everywhere (on the CPU, only the inputs and a parallel iteration's own buffers may be)"
                )
            }
            NotVectorized::Statement(what) => format!("the body contains {what}"),
        }
    }

    /// What would work instead.
    pub fn help(&self) -> String {
        match self {
            NotVectorized::Lanes(_) => "vectorize an axis of constant extent 2 or more".into(),
            NotVectorized::InnerLoop => "vectorize the innermost loop".into(),
            NotVectorized::Guard(_) | NotVectorized::GuardedRead(_) => format!(
                "only conditions made of `<`, `<=`, `>`, `>=` comparisons linear in the axis are peeled off the \
                 vector loop (borders, padding); {}",
                if matches!(self, NotVectorized::Guard(_)) {
                    "make the condition independent of the axis, or vectorize another axis"
                } else {
                    "compute the guarded value as its own stage (e.g. the padded input), or vectorize another axis"
                }
            ),
            NotVectorized::Scatter(_) => {
                "vectorize the axis that indexes the last dimension of the stored tensor".into()
            }
            NotVectorized::Statement(_) => "vectorize a loop whose body only loads, computes and stores".into(),
        }
    }
}

/// Vectorizes the `vectorize` loops of `f`; returns the loops that stayed serial, with
/// the reason.
pub fn vectorize_loops(mut f: PrimFunc) -> (PrimFunc, Vec<(Var, NotVectorized)>) {
    let written = written_buffers(&f);
    let mut v = Vectorize {
        dropped: Vec::new(),
        guarded_reads: f.target.is_cpu(),
        written,
        private: Vec::new(),
        in_parallel: false,
    };
    f.body = v.mutate_stmt(f.body);
    for k in &mut f.kernels {
        k.body = v.mutate_stmt(std::mem::replace(&mut k.body, Stmt::NoOp));
    }
    (f, v.dropped)
}

struct Vectorize {
    dropped: Vec<(Var, NotVectorized)>,
    guarded_reads: bool,
    /// The buffers the function stores into.
    written: HashSet<BufferId>,
    /// The allocations around the statement inside the innermost parallel loop around it
    /// (its iteration's own).
    private: Vec<BufferId>,
    in_parallel: bool,
}

impl Mutator for Vectorize {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        // Scopes first: what a select in a vector loop may read on every lane.
        let s = match s {
            Stmt::Allocate { buffer, extent, body } => {
                self.private.push(buffer.id());
                let body = Box::new(self.mutate_stmt(*body));
                self.private.pop();
                return Stmt::Allocate { buffer, extent, body };
            }
            Stmt::For { var, min, extent, kind: ForKind::Parallel, body } => {
                let outer = (std::mem::take(&mut self.private), std::mem::replace(&mut self.in_parallel, true));
                let body = Box::new(self.mutate_stmt(*body));
                (self.private, self.in_parallel) = outer;
                return Stmt::For { var, min, extent, kind: ForKind::Parallel, body };
            }
            s => s,
        };
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Vectorized, body }
                if extent.as_int().is_some_and(|e| e > MAX_LANES) =>
            {
                // Strip-mined: vectors of MAX_LANES, then one vector of the rest.
                let e = extent.as_int().expect("checked");
                let (n, rest) = (e / MAX_LANES, e % MAX_LANES);
                let part = |var: &Var, start: Expr, lanes: i64| {
                    let v = Var::index(var.name());
                    let mut m = std::collections::HashMap::new();
                    m.insert(var.clone(), start + Expr::Var(v.clone()));
                    let body = substitute_stmt((*body).clone(), &m);
                    let kind = if lanes >= 2 { ForKind::Vectorized } else { ForKind::Serial };
                    Stmt::For { var: v, min: Expr::int(0), extent: Expr::int(lanes), kind, body: Box::new(body) }
                };
                let o = Var::index(format!("{}_o", var.name()));
                let main = part(&var, min.clone() + Expr::Var(o.clone()) * Expr::int(MAX_LANES), MAX_LANES);
                let mut parts = vec![Stmt::For {
                    var: o,
                    min: Expr::int(0),
                    extent: Expr::int(n),
                    kind: ForKind::Serial,
                    body: Box::new(main),
                }];
                if rest > 0 {
                    parts.push(part(&var, min.clone() + Expr::int(n * MAX_LANES), rest));
                }
                self.mutate_stmt(Stmt::seq(parts))
            }
            Stmt::For { var, min, extent, kind: ForKind::Vectorized, body } => {
                let lanes = extent.as_int().filter(|&l| (2..=MAX_LANES).contains(&l));
                let done = match lanes {
                    Some(l) => {
                        // Outside parallel loops every buffer; inside, the inputs and the
                        // iteration's own allocations (other elements of a buffer that
                        // the loop writes are other iterations', written meanwhile).
                        let readable = self.guarded_reads.then(|| Readable {
                            any: !self.in_parallel,
                            written: self.written.clone(),
                            private: self.private.clone(),
                        });
                        Cx { var: var.clone(), min: min.clone(), lanes: l as u16, vectors: Vec::new(), readable }
                            .stmt(&body)
                    }
                    None => Err(NotVectorized::Lanes(extent.as_int())),
                };
                match done {
                    Ok(v) => v,
                    // One lane (or none) is the loop itself: nothing to report.
                    Err(NotVectorized::Lanes(Some(n))) if n <= 1 => {
                        Stmt::For { var, min, extent, kind: ForKind::Serial, body }
                    }
                    Err(why) => {
                        if !self.dropped.iter().any(|(v, _)| *v == var) {
                            self.dropped.push((var.clone(), why));
                        }
                        Stmt::For { var, min, extent, kind: ForKind::Serial, body }
                    }
                }
            }
            s => s,
        }
    }
}

#[derive(Clone)]
struct Cx {
    var: Var,
    min: Expr,
    lanes: u16,
    /// The variables of the `let`s inside the loop whose values vary with it, each now
    /// of the vector type.
    vectors: Vec<Var>,
    /// What a select whose condition varies may read on every lane (the CPU; see `expr`).
    readable: Option<Readable>,
}

/// The buffers a vector select may read on lanes it does not take: any outside parallel
/// loops (`any`); inside one, those the function never writes and the iteration's own
/// allocations (`private`).
#[derive(Clone)]
pub(crate) struct Readable {
    pub any: bool,
    pub written: HashSet<BufferId>,
    pub private: Vec<BufferId>,
}

/// Whether the `vectorize` loop `var` (`lanes` from `min`) with this body becomes vector
/// code, its selects reading `readable` on every lane.
pub(crate) fn vectorizes(var: &Var, min: &Expr, lanes: i64, body: &Stmt, readable: Option<Readable>) -> bool {
    (2..=MAX_LANES).contains(&lanes)
        && Cx { var: var.clone(), min: min.clone(), lanes: lanes as u16, vectors: Vec::new(), readable }
            .stmt(body)
            .is_ok()
}

impl Readable {
    fn allows(&self, e: &Expr) -> bool {
        let mut ok = true;
        for_each_expr(e, &mut |x| {
            if let Expr::Load { buffer, .. } = x {
                let id = buffer.id();
                ok &= self.any || !self.written.contains(&id) || self.private.contains(&id);
            }
        });
        ok
    }
}

/// The buffers `f` stores into.
pub(crate) fn written_buffers(f: &PrimFunc) -> HashSet<BufferId> {
    struct W(HashSet<BufferId>);
    impl crate::tir::visit::Visitor for W {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { buffer, .. } = s {
                self.0.insert(buffer.id());
            }
            crate::tir::visit::walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut w = W(HashSet::new());
    crate::tir::visit::Visitor::visit_stmt(&mut w, &f.body);
    for k in &f.kernels {
        crate::tir::visit::Visitor::visit_stmt(&mut w, &k.body);
    }
    w.0
}

fn lanes_of(e: &Expr) -> u16 {
    e.dtype().lanes
}

impl Cx {
    fn stmt(&self, s: &Stmt) -> Result<Stmt, NotVectorized> {
        match s {
            Stmt::Store { buffer, indices, value } => {
                let scatter = || NotVectorized::Scatter(buffer.name().to_string());
                let [index] = indices.as_slice() else { return Err(scatter()) };
                let index = self.expr(index)?;
                if !matches!(index, Expr::Ramp { .. }) {
                    return Err(scatter());
                }
                let value = self.broadcast(self.expr(value)?);
                Ok(Stmt::Store { buffer: buffer.clone(), indices: vec![index], value })
            }
            Stmt::Seq(ss) => Ok(Stmt::Seq(ss.iter().map(|s| self.stmt(s)).collect::<Result<Vec<_>, _>>()?)),
            Stmt::If { cond, .. } if self.varies(cond) => Err(NotVectorized::Guard(cond.clone())),
            Stmt::If { cond, then, otherwise } => Ok(Stmt::If {
                cond: cond.clone(),
                then: Box::new(self.stmt(then)?),
                otherwise: match otherwise {
                    Some(o) => Some(Box::new(self.stmt(o)?)),
                    None => None,
                },
            }),
            Stmt::NoOp => Ok(Stmt::NoOp),
            Stmt::For { .. } => Err(NotVectorized::InnerLoop),
            // A value that varies with the loop is bound to a vector variable.
            Stmt::Let { var, value, body } => {
                let value = self.expr(value)?;
                if lanes_of(&value) == 1 {
                    return Ok(Stmt::Let { var: var.clone(), value, body: Box::new(self.stmt(body)?) });
                }
                let v = Var::new(var.name(), var.dtype().with_lanes(self.lanes));
                let map = std::collections::HashMap::from([(var.clone(), Expr::var(&v))]);
                let body = substitute_stmt((**body).clone(), &map);
                let mut inner = self.clone();
                inner.vectors.push(v.clone());
                Ok(Stmt::Let { var: v, value, body: Box::new(inner.stmt(&body)?) })
            }
            Stmt::Allocate { .. } => Err(NotVectorized::Statement("an allocation")),
            Stmt::Prefetch { .. } => Err(NotVectorized::Statement("a prefetch")),
            _ => Err(NotVectorized::Statement("a GPU statement")),
        }
    }

    /// Whether `e` varies with the loop: it uses its variable or a vector `let`.
    fn varies(&self, e: &Expr) -> bool {
        uses_var(e, &self.var) || self.vectors.iter().any(|v| uses_var(e, v))
    }

    fn broadcast(&self, e: Expr) -> Expr {
        if lanes_of(&e) == 1 {
            Expr::Broadcast { value: Box::new(e), lanes: self.lanes }
        } else {
            e
        }
    }

    /// The vector form of `e`; scalar when `e` does not depend on the loop variable.
    fn expr(&self, e: &Expr) -> Result<Expr, NotVectorized> {
        if !self.varies(e) {
            return Ok(e.clone());
        }
        let l = self.lanes;
        Ok(match e {
            Expr::Var(v) if *v != self.var => e.clone(),
            Expr::Var(_) => Expr::Ramp { base: Box::new(self.min.clone()), stride: Box::new(Expr::int(1)), lanes: l },
            Expr::Binary { op, a, b } => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match (op, &a, &b) {
                    (BinOp::Add | BinOp::Sub, Expr::Ramp { base, stride, .. }, s) if lanes_of(s) == 1 => Expr::Ramp {
                        base: Box::new(Expr::binary(*op, (**base).clone(), s.clone())),
                        stride: stride.clone(),
                        lanes: l,
                    },
                    (BinOp::Add, s, Expr::Ramp { base, stride, .. }) if lanes_of(s) == 1 => {
                        Expr::Ramp { base: Box::new(s.clone() + (**base).clone()), stride: stride.clone(), lanes: l }
                    }
                    (
                        BinOp::Add | BinOp::Sub,
                        Expr::Ramp { base: b1, stride: s1, .. },
                        Expr::Ramp { base: b2, stride: s2, .. },
                    ) => Expr::Ramp {
                        base: Box::new(Expr::binary(*op, (**b1).clone(), (**b2).clone())),
                        stride: Box::new(Expr::binary(*op, (**s1).clone(), (**s2).clone())),
                        lanes: l,
                    },
                    (BinOp::Mul, Expr::Ramp { base, stride, .. }, s)
                    | (BinOp::Mul, s, Expr::Ramp { base, stride, .. })
                        if lanes_of(s) == 1 =>
                    {
                        Expr::Ramp {
                            base: Box::new((**base).clone() * s.clone()),
                            stride: Box::new((**stride).clone() * s.clone()),
                            lanes: l,
                        }
                    }
                    _ => Expr::binary(*op, self.broadcast(a), self.broadcast(b)),
                }
            }
            Expr::Cmp { op, a, b } => Expr::cmp(*op, self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::And(a, b) => Expr::and(self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::Or(a, b) => Expr::or(self.broadcast(self.expr(a)?), self.broadcast(self.expr(b)?)),
            Expr::Not(a) => Expr::not(self.expr(a)?),
            Expr::Neg(a) => Expr::Neg(Box::new(self.expr(a)?)),
            Expr::Select { cond, then, otherwise } => {
                // Only the taken side may be evaluated: a lane-wise select evaluates both,
                // which is exact only when neither side reads memory. The CPU's code
                // generator keeps it exact: its vector select reads each side's buffers
                // so that a lane outside one gives zero (and evaluates checks and integer
                // divisions lane by lane, only where taken), where no other thread
                // writes the lanes it does not take (see `Readable`).
                let lenient = self.readable.as_ref().is_some_and(|r| r.allows(then) && r.allows(otherwise));
                if self.varies(cond) && !lenient {
                    if let Some(b) = loaded(then).or_else(|| loaded(otherwise)) {
                        return Err(NotVectorized::GuardedRead(b));
                    }
                }
                let c = self.expr(cond)?;
                let (t, o) = (self.broadcast(self.expr(then)?), self.broadcast(self.expr(otherwise)?));
                Expr::select(c, t, o)
            }
            Expr::Cast { dtype, value } => Expr::cast(*dtype, self.expr(value)?),
            Expr::Call { func, args } => Expr::Call {
                func: *func,
                args: args.iter().map(|a| self.expr(a).map(|a| self.broadcast(a))).collect::<Result<_, _>>()?,
            },
            Expr::Load { buffer, indices } => {
                let [index] = indices.as_slice() else {
                    return Err(NotVectorized::Statement("a multi-dimensional load"));
                };
                // A ramp is a vector load; any other vector index a gather.
                let index = self.broadcast(self.expr(index)?);
                Expr::Load { buffer: buffer.clone(), indices: vec![index] }
            }
            // Lane by lane: each lane's value is checked (a checked index makes a gather).
            Expr::Check { value, kind, site } => {
                if let CheckKind::Index { extent } = kind {
                    if self.varies(extent) {
                        return Err(NotVectorized::Statement("a check against an extent that varies"));
                    }
                }
                Expr::Check { value: Box::new(self.expr(value)?), kind: kind.clone(), site: *site }
            }
            _ => return Err(NotVectorized::Statement("an expression the pass does not vectorize")),
        })
    }
}

/// The name of the first buffer `e` loads from.
fn loaded(e: &Expr) -> Option<String> {
    let mut found = None;
    for_each_expr(e, &mut |x| {
        if let (None, Expr::Load { buffer, .. }) = (&found, x) {
            found = Some(buffer.name().to_string());
        }
    });
    found
}
