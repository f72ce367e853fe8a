//! Discharging the checks the checker puts on every tensor read's indices and every
//! integer divisor (docs/LANGUAGE.md §2 and §4): a check the compiler proves (for every
//! shape, over the stage's whole domain, under the conditions that guard it) is removed; a
//! read it proves out of bounds for every shape, or a divisor it proves zero, is a compile
//! error at the index or the divisor; every other check stays, and runs with the kernel.
//!
//! "Proves out of bounds" is only claimed where it is exact: the read is not under a
//! condition, and its index is a sum of terms that each mention at most one axis, linearly
//! with a constant coefficient, each axis once (so the bounds computed over the axes'
//! ranges are reached, whenever the domain is not empty).

use super::*;
use crate::arith::Analyzer;
use crate::tir::mutate::{super_expr, Mutator};
use crate::tir::printer::print_expr;
use crate::tir::visit::uses_var;

/// A read of another tensor written through a `repeat_edge` view of it, which reads the
/// nearest element outside the tensor: the help of a read out of bounds near an edge.
#[derive(Clone, Debug)]
pub(super) struct EdgeRead {
    /// The view's name: a name the kernel does not use.
    pub view: String,
    pub tensor: String,
    /// The read with the view for the tensor: `xe[i, j - 1]`.
    pub read: String,
}

/// A check proved to fail: the site and the reason (message, help).
pub(super) struct Failure {
    pub site: u32,
    pub message: String,
    pub help: String,
    /// For a help that shows a `repeat_edge` view: the tensor it views, and the short
    /// help of a later read of that tensor past an edge, once the first has shown the
    /// whole of it (every such read is an error at its own span).
    pub again: Option<(String, String)>,
}

struct Discharge<'a> {
    az: Analyzer,
    /// The axes of the stage and of its reduction (bound in `az`).
    axes: Vec<Var>,
    /// The reduction's axes of constant extent, with it: a stencil's window.
    window: Vec<(Var, i64)>,
    /// How many conditions guard the expression being visited.
    guarded: usize,
    /// How many of them are proved false (the expression never runs).
    dead: usize,
    sites: &'a [(CheckSite, Loc)],
    edge_reads: &'a HashMap<u32, EdgeRead>,
    failures: Vec<Failure>,
}

/// `body` of a stage over `axes`, without the checks proved to hold, and the checks
/// proved to fail. `dims` are the kernel's symbolic dims (non-negative).
pub(super) fn discharge(
    body: Expr,
    axes: &[IterVar],
    dims: &[Var],
    sites: &[(CheckSite, Loc)],
    edge_reads: &HashMap<u32, EdgeRead>,
) -> (Expr, Vec<Failure>) {
    let mut az = Analyzer::new();
    for d in dims {
        az.assume_nonneg(d);
    }
    for ax in axes {
        az.bind(&ax.var, ax.dom.min.clone(), ax.dom.extent.clone());
    }
    let mut d = Discharge {
        az,
        axes: axes.iter().map(|a| a.var.clone()).collect(),
        window: Vec::new(),
        guarded: 0,
        dead: 0,
        sites,
        edge_reads,
        failures: Vec::new(),
    };
    let body = d.mutate_expr(body);
    (body, d.failures)
}

impl Discharge<'_> {
    /// Runs `f` knowing `cond` (a guard of what `f` visits).
    fn guarded<T>(&mut self, cond: &Expr, f: impl FnOnce(&mut Self) -> T) -> T {
        let dead = usize::from(self.az.simplify(cond) == Expr::Bool(false));
        let snap = self.az.snapshot();
        self.az.assume(cond);
        self.guarded += 1;
        self.dead += dead;
        let r = f(self);
        self.dead -= dead;
        self.guarded -= 1;
        self.az.restore(snap);
        r
    }

    fn check(&mut self, value: Expr, kind: CheckKind, site: u32) -> Expr {
        if self.dead > 0 {
            return value; // never runs
        }
        let (holds, fails) = match &kind {
            CheckKind::Index { extent } => {
                let zero = Expr::int(0);
                let holds = self.az.can_prove(&Expr::ge(value.clone(), zero.clone()))
                    && self.az.can_prove(&Expr::lt(value.clone(), (**extent).clone()));
                (holds, if holds { None } else { self.out_of_bounds(&value, extent, site) })
            }
            CheckKind::Divisor => {
                let zero = Expr::typed_int(0, value.dtype());
                let holds = self.az.can_prove(&Expr::cmp(CmpOp::Ne, value.clone(), zero.clone()));
                let fails = !holds && self.guarded == 0 && self.az.can_prove(&Expr::eq(value.clone(), zero));
                let failure = fails.then(|| Failure {
                    site,
                    message: match &self.sites[site as usize].0 {
                        CheckSite::Divisor { divisor } => {
                            format!("division by zero: the divisor `{divisor}` is always 0")
                        }
                        _ => "division by zero: the divisor is always 0".to_string(),
                    },
                    help: "divide by a value that cannot be zero".to_string(),
                    again: None,
                });
                (holds, failure)
            }
        };
        if holds {
            return value;
        }
        self.failures.extend(fails);
        Expr::Check { value: Box::new(value), kind, site }
    }

    /// The failure of an index check that fails for every shape, where that is exact.
    fn out_of_bounds(&self, value: &Expr, extent: &Expr, site: u32) -> Option<Failure> {
        if self.guarded > 0 || !self.az.is_separable_linear(value, &self.axes) {
            return None;
        }
        let (lo, hi) = self.az.try_symbolic_bounds(value, &self.axes);
        let (CheckSite::Index { tensor, dim, index }, _) = &self.sites[site as usize] else { return None };
        let n = print_expr(extent);
        // A window no wider than the tensor and not wholly outside it, shifted past an
        // edge by a constant (a stencil's `j - 1`, `j + 2`): a `repeat_edge` view reads
        // the nearest element there. Not for a read that spreads wider (`x[2 * i]`), lies
        // wholly outside (`x[i + 8]` of 8 elements) or drifts with the shape
        // (`x[i + N]`), where the nearest element is not what the kernel means.
        // A stencil's window (the constant-extent reduction axes the index reads) widens
        // the read by as many elements as it has, past both edges (`x[i + r - 1]` for
        // `r in 0..3` spans `-1..=N`): no wider than that, it fits too.
        let window: i64 = self.window.iter().filter(|(v, _)| uses_var(value, v)).map(|(_, e)| e - 1).sum();
        let fits = match (&lo, &hi) {
            (Some(lo), Some(hi)) => {
                self.az.can_prove(&Expr::le(hi.clone() - lo.clone(), extent.clone() - Expr::int(1 - window)))
                    && !self.az.can_prove(&Expr::ge(lo.clone(), extent.clone()))
                    && !self.az.can_prove(&Expr::lt(hi.clone(), Expr::int(0)))
            }
            _ => false,
        };
        let near_edge = |over: Expr| fits && matches!(self.az.simplify(&over), Expr::Int { .. });
        let help = |edge: bool| match self.edge_reads.get(&site).filter(|_| edge) {
            Some(e) => (
                format!(
                    "an index must stay in `0..{n}` wherever the read happens: read `{t}` through a boundary view, \
                     `let {v} = repeat_edge({t});` before this stage and `{r}` here (outside `{t}` it reads the \
                     nearest element), shrink the axis' range, or guard the read with `if`",
                    t = e.tensor,
                    v = e.view,
                    r = e.read
                ),
                Some((
                    e.tensor.clone(),
                    format!("`{r}` here, through the view of `{t}` an error above shows", t = e.tensor, r = e.read),
                )),
            ),
            None => (
                format!(
                    "an index must stay in `0..{n}` wherever the read happens: shrink the axis' range, or guard the \
                     read with `if`"
                ),
                None,
            ),
        };
        let below = lo.clone().filter(|lo| self.az.can_prove(&Expr::lt(lo.clone(), Expr::int(0))));
        if let Some(hi) = hi.filter(|hi| self.az.can_prove(&Expr::ge(hi.clone(), extent.clone()))) {
            let message = match &below {
                Some(lo) => format!(
                    "index `{index}` of `{tensor}` is out of bounds at both ends: it goes down to {} and reaches \
                     {}, but dimension {dim} of `{tensor}` has size {n}",
                    print_expr(lo),
                    print_expr(&hi)
                ),
                None => format!(
                    "index `{index}` of `{tensor}` is out of bounds: it reaches {}, but dimension {dim} of \
                     `{tensor}` has size {n}",
                    print_expr(&hi)
                ),
            };
            let (help, again) = help(near_edge(hi - extent.clone()) && below.is_none_or(|lo| near_edge(lo)));
            return Some(Failure { site, message, help, again });
        }
        if let Some(lo) = below {
            let message =
                format!("index `{index}` of `{tensor}` is out of bounds: it goes down to {}, below 0", print_expr(&lo));
            let (help, again) = help(near_edge(lo));
            return Some(Failure { site, message, help, again });
        }
        None
    }
}

impl Mutator for Discharge<'_> {
    fn mutate_expr(&mut self, e: Expr) -> Expr {
        match e {
            Expr::Select { cond, then, otherwise } => {
                let cond = self.mutate_expr(*cond);
                let then = self.guarded(&cond, |d| d.mutate_expr(*then));
                let otherwise = self.guarded(&Expr::not(cond.clone()), |d| d.mutate_expr(*otherwise));
                Expr::select(cond, then, otherwise)
            }
            // The right side runs only where the left does not decide.
            Expr::And(a, b) => {
                let a = self.mutate_expr(*a);
                let b = self.guarded(&a, |d| d.mutate_expr(*b));
                Expr::and(a, b)
            }
            Expr::Or(a, b) => {
                let a = self.mutate_expr(*a);
                let b = self.guarded(&Expr::not(a.clone()), |d| d.mutate_expr(*b));
                Expr::or(a, b)
            }
            Expr::Reduce(r) => {
                let snap = self.az.snapshot();
                let (n, w) = (self.axes.len(), self.window.len());
                for ax in &r.axes {
                    self.az.bind(&ax.var, ax.dom.min.clone(), ax.dom.extent.clone());
                    self.axes.push(ax.var.clone());
                    if let Some(e) = ax.dom.extent.as_int() {
                        self.window.push((ax.var.clone(), e));
                    }
                }
                let r = r.map_sources(|s| self.mutate_expr(s));
                self.axes.truncate(n);
                self.window.truncate(w);
                self.az.restore(snap);
                Expr::Reduce(Box::new(r))
            }
            // A read whose index wraps around its dim once (`wrap`): the range without
            // the remainder, tested, then the read as written.
            e @ Expr::ProducerLoad { .. } => match super::wrap::unwrapped(&self.az, &self.axes, &e) {
                Some((cond, inside)) => {
                    let then = self.guarded(&cond, |d| d.mutate_expr(inside));
                    let otherwise = self.guarded(&Expr::not(cond.clone()), |d| super_expr(d, e));
                    Expr::select(cond, then, otherwise)
                }
                None => super_expr(self, e),
            },
            Expr::Check { value, kind, site } => {
                let value = self.mutate_expr(*value);
                let kind = match kind {
                    CheckKind::Index { extent } => CheckKind::Index { extent: Box::new(self.mutate_expr(*extent)) },
                    CheckKind::Divisor => CheckKind::Divisor,
                };
                self.check(value, kind, site)
            }
            e => super_expr(self, e),
        }
    }
}

/// Numbers the sites left in the graph's stages from 0, in order of first appearance,
/// and returns their table.
pub(super) fn renumber(graph: &mut Graph, sites: &[(CheckSite, Loc)]) -> Vec<CheckSite> {
    struct Renumber<'a> {
        map: HashMap<u32, u32>,
        table: Vec<CheckSite>,
        sites: &'a [(CheckSite, Loc)],
    }
    impl Mutator for Renumber<'_> {
        fn mutate_expr(&mut self, e: Expr) -> Expr {
            match super_expr(self, e) {
                Expr::Check { value, kind, site } => {
                    let next = self.table.len() as u32;
                    let n = *self.map.entry(site).or_insert(next);
                    if n == next {
                        self.table.push(self.sites[site as usize].0.clone());
                    }
                    Expr::Check { value, kind, site: n }
                }
                e => e,
            }
        }
    }
    let mut r = Renumber { map: HashMap::new(), table: Vec::new(), sites };
    for t in &mut graph.tensors {
        if let Op::Compute { body, .. } = &mut t.op {
            *body = r.mutate_expr(std::mem::replace(body, Expr::Bool(false)));
        }
    }
    r.table
}
