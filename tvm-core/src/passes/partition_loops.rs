//! Loop partitioning and unswitching of serial loops (CPU targets; TVM's
//! `partition_const_loop`, Halide's boundary splitting, LLVM's loop unswitching).
//!
//! **Partitioning.** A condition inside a serial loop whose conjuncts are comparisons
//! linear in the loop variable (a padded read's border test, the tail test of a split
//! that does not divide, the `if whole { vector } else { scalar tail }` that
//! `hoist_tail_guards` leaves in the loop around a vector loop) holds on one interval of
//! the loop's range. The loop is cut in three:
//!
//! ```text
//! for v in min .. min + lo                  { body }   // the border before
//! for v in min + lo .. min + hi             { body with those conjuncts `true` }
//! for v in min + max(lo, hi) .. min + ext   { body }   // the border after
//! ```
//!
//! `lo` and `hi` are clamped to `[0, ext]`; when the conjuncts hold nowhere, `hi < lo`
//! and the interior is a loop of no iterations (a negative extent), which keeps its
//! variable bounded by `hi` for the analyzers that prove its accesses in bounds. A border
//! that one conjunct alone decides (the only lower one before, the only upper one after)
//! has that conjunct false on every iteration: the conditions containing it become
//! `false` there (unless a conjunct before it checks a value).
//!
//! **Unswitching.** In an innermost loop (the interior of a partitioned one included),
//! the conjuncts that do not change inside it (a padded row's test, inside the loop over
//! its columns) are tested once: `if c { loop with c true } else { loop }`.
//!
//! **Parallel bodies.** The tests of a parallel loop's own variable alone (a register
//! tile's row guards along a symbolic axis) are tested once at the top of its body: `if
//! they hold { body without them } else { body }` (see `version_parallel`).
//!
//! **Versioning.** A loop whose body tests a window's border on its variable and the
//! window's taps (`select(i + r < H, x[i + r], 0)` under `for r in 0..3`) tests it once
//! per iteration, at the worst tap: `if i + 2 < H { body without the test } else { body
//! }` (see `version` for why not a partition).
//!
//! Together they let LLVM keep the register row of a vector reduction in vector
//! registers (a scalar tail inside the loop made it split the row into scalars on every
//! iteration), and vectorize an unvectorized padded loop itself (the reads of the
//! interior are proven in bounds, no longer checked). `cargo bench --bench peers --
//! softmax` and `cargo bench --bench peers -- conv2d_if` (the padded conv2d, against TVM
//! with the same `if` through `benches/peers/run.py`) measure the two.
//!
//! What is left alone: loops of at most `MIN_EXTENT` known iterations (a window's taps,
//! a vector's scalar tail) and the scalar path of a vector loop; bodies larger than
//! `MAX_BODY_NODES` (three copies per level); and, in serial loops, conjuncts on the
//! variable of an enclosing parallel loop, whose border is at most one parallel iteration
//! and whose bounds the parallel-chunk prover of the code generator could no longer follow.
//! Loops are handled inside out.

use crate::arith::Analyzer;
use crate::tir::mutate::{rewrite_conditions, super_stmt, Mutator};
use crate::tir::visit::{conjuncts, has_vector_code, uses_var, walk_expr, walk_stmt, Visitor};
use crate::tir::{CmpOp, Expr, ForKind, PrimFunc, Stmt, Var};

/// Loops of at most this many iterations (known) are not partitioned: a window's taps,
/// a vector's scalar tail. Their borders cost little and their bounds would not.
const MIN_EXTENT: i64 = 16;

/// A body with more nodes than this is not copied.
const MAX_BODY_NODES: usize = 4000;

/// A parallel loop's body is copied once (its two versions), where a partition makes
/// three copies per level: the larger bound admits a convolution computed inside its
/// consumer's tile, with both in the body.
const MAX_PARALLEL_BODY_NODES: usize = 4 * MAX_BODY_NODES;

/// Partitions the serial loops of the host body of `f` (CPU code).
pub fn partition_loops(mut f: PrimFunc) -> PrimFunc {
    f.body = Partition { parallel: Vec::new(), common: Vec::new() }.mutate_stmt(f.body);
    // After partitioning: a loop versioned first would be too large to partition.
    f.body = Version { parallel: Vec::new() }.mutate_stmt(f.body);
    f
}

/// Versions the serial loops whose body tests a window's border (see [`version`]).
struct Version {
    /// The variables of the enclosing parallel loops.
    parallel: Vec<Var>,
}

impl Mutator for Version {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        if let Stmt::For { var, kind: ForKind::Parallel, .. } = &s {
            self.parallel.push(var.clone());
            let s = super_stmt(self, s);
            self.parallel.pop();
            return s;
        }
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Serial, body } => {
                let body = Box::new(version(&var, *body, &self.parallel));
                Stmt::For { var, min, extent, kind: ForKind::Serial, body }
            }
            s => s,
        }
    }
}

/// The body of a serial loop over `var`, versioned on the border tests of the windows
/// inside it: a conjunct linear in `var` and in the variables of inner loops of constant
/// range (a window's taps), `select(i + r < H, x[i + r], 0)` under `for r in 0..3`, is
/// tested once per iteration at its worst tap,
///
/// ```text
/// if i + 2 < H { body with `i + r < H` replaced by `true` } else { body }
/// ```
///
/// Partitioning `i` would do the same without the per-iteration test, but its interior
/// would end at `min(oh, H - 2)`, a bound the parallel-chunk prover of the code
/// generator cannot multiply through (`ow * i < ow * oh`), and a loop inside a parallel
/// one keeps its range. The test costs one comparison per iteration of a loop whose body
/// holds loops. Conjuncts on a parallel variable are left alone, as in `partition`.
fn version(var: &Var, body: Stmt, parallel: &[Var]) -> Stmt {
    if !has_loop(&body) || node_count(&body) > MAX_BODY_NODES {
        return body;
    }
    let inner = super::hoist_tail_guards::bound_inside(&body);
    let taps = constant_loops(&body);
    let mut peeled: Vec<Expr> = Vec::new();
    let mut tests: Vec<Expr> = Vec::new();
    for cond in conditions(&body) {
        for c in conjuncts(cond) {
            let skip = !uses_var(&c, var)
                || !inner.iter().any(|v| uses_var(&c, v))
                || parallel.iter().any(|v| uses_var(&c, v))
                || crate::arith::reads_memory(&c)
                || peeled.contains(&c);
            if skip {
                continue;
            }
            let Some(worst) = worst_case(&c, &inner, &taps) else { continue };
            peeled.push(c);
            if !tests.contains(&worst) {
                tests.push(worst);
            }
        }
    }
    let Some(test) = tests.into_iter().reduce(Expr::and) else { return body };
    let fast = rewrite_conditions(body.clone(), &mut |c| strip(c, &peeled));
    Stmt::If { cond: test, then: Box::new(fast), otherwise: Some(Box::new(body)) }
}

/// The body of a parallel loop over `var`, versioned on the tests of `var` alone: the
/// conjuncts that mention `var` and nothing bound inside the body (a register tile's
/// row guards `o * 8 + k < N` along a symbolic axis, one per row, inside the tile's
/// reduction) hold or fail for a whole parallel iteration, so they are tested once:
///
/// ```text
/// if o * 8 + 1 < N && .. && o * 8 + 7 < N { body without them } else { body }
/// ```
///
/// A conjunct that also mentions short loops of the body of constant range (a window's
/// taps: `i + r < H` under `for r in 0..3`, where the window's stage is computed at the
/// parallel row `i` of its consumer) is tested at its worst taps (`i + 2 < H`), as
/// [`version`] does for serial loops; so is one on the row `var / k` of a parallel loop
/// fused from rows and blocks (`y_par / 2 + r < H`). A vector select's condition counts
/// too: its uniform conjuncts (`broadcast(i + r < H)`, in the masked tiles of a narrow
/// output) are tested as the scalars they broadcast.
///
/// Only where they are tested more than once (under a loop of the body, or in several
/// conditions), and only comparisons that read no memory and check nothing (evaluated
/// first, a division's check could fail a call that never reached it). The ranges of the
/// loops inside stay as they are, so the parallel-chunk prover bounds them as before.
/// Returns the test, the body without them and the body as it was; or the body, where
/// there is nothing to version.
fn version_parallel(var: &Var, body: Stmt) -> Result<(Expr, Stmt, Stmt), Stmt> {
    if node_count(&body) > MAX_PARALLEL_BODY_NODES {
        return Err(body);
    }
    // Each variable once: a body partitioned or versioned already binds a tap in each
    // of its copies.
    let mut inner: Vec<Var> = Vec::new();
    for v in super::hoist_tail_guards::bound_inside(&body) {
        if !inner.contains(&v) {
            inner.push(v);
        }
    }
    // A window's taps: short loops of constant range (a loop over a tile's vectors, whose
    // tail tests the vector loop handles, is not one).
    let taps: Vec<_> =
        constant_loops(&body).into_iter().filter(|(t, lo, hi)| hi - lo < MIN_EXTENT && t != var).collect();
    // The conjuncts taken out of the fast body, and the tests that decide it.
    let mut peeled: Vec<Expr> = Vec::new();
    let mut tests: Vec<Expr> = Vec::new();
    let mut uses = 0;
    for cond in conditions_of(&body, true) {
        let mut used = false;
        for whole in conjuncts(cond) {
            // A vector condition's uniform part, `broadcast(i + r < H)`, is tested as the
            // scalar it broadcasts; the conjunct goes out of the fast body whole.
            let c = match &whole {
                Expr::Broadcast { value, .. } => &**value,
                c => c,
            };
            let candidate = matches!(c, Expr::Cmp { .. })
                && c.dtype().lanes == 1
                && uses_var(c, var)
                && !crate::arith::reads_memory(c)
                && !crate::tir::visit::expr_has_check(c);
            if !candidate {
                continue;
            }
            let test = if inner.iter().any(|v| uses_var(c, v)) {
                // Only a window's border on the parallel row itself, `i + r < H` (or
                // `y_par / 2 + r < H`): a test on a fused index (`fy % 10 + r >= 1`) is
                // left to the partitions and unswitching inside the body, which prove its
                // reads in bounds in every iteration, and a register tile's tail
                // (`o * 128 + k * 8 < M`) to the guards as they are (its versioned copy
                // ran a 1000^3 matmul slower).
                if !unit_step(c, var) {
                    continue;
                }
                match worst_case(c, &inner, &taps) {
                    Some(worst) => worst,
                    None => continue,
                }
            } else {
                c.clone()
            };
            used = true;
            if !peeled.contains(&whole) {
                peeled.push(whole);
            }
            if !tests.contains(&test) {
                tests.push(test);
            }
        }
        uses += usize::from(used);
    }
    if peeled.is_empty() || (uses < 2 && !tested_in_loop(&body, &peeled)) {
        return Err(body);
    }
    let fast = rewrite_conditions(body.clone(), &mut |c| strip(c, &peeled));
    let cond = tests.into_iter().reduce(Expr::and).expect("non-empty");
    Ok((cond, fast, body))
}

/// Whether the comparison `c` is linear in `var` with a coefficient of ±1: its two sides'
/// difference grows by a constant ±1 from any `var` to `var + 1` (so not through a `%`).
/// Or in the row `var / k` of a parallel loop that fused rows with the blocks of another
/// axis (`y_par = fuse(i, f_o)`: `i + r < H` is `y_par / 2 + r < H`), where `var` appears
/// only so.
fn unit_step(c: &Expr, var: &Var) -> bool {
    if step_is_one(c, var) {
        return true;
    }
    // `var / k` by one fresh variable, for one `k` throughout.
    struct Rows<'a> {
        var: &'a Var,
        row: Var,
        divisor: Option<i64>,
        mixed: bool,
    }
    impl Mutator for Rows<'_> {
        fn mutate_expr(&mut self, e: Expr) -> Expr {
            let k = match &e {
                Expr::Binary { op: crate::tir::BinOp::Div, a, b } if matches!(&**a, Expr::Var(v) if v == self.var) => {
                    b.as_int().filter(|k| *k > 0)
                }
                _ => None,
            };
            let Some(k) = k else { return crate::tir::mutate::super_expr(self, e) };
            self.mixed |= self.divisor.is_some_and(|d| d != k);
            self.divisor = Some(k);
            Expr::var(&self.row)
        }
    }
    let row = Var::new(format!("{}_row", var.name()), var.dtype());
    let mut rows = Rows { var, row, divisor: None, mixed: false };
    let by_row = rows.mutate_expr(c.clone());
    rows.divisor.is_some() && !rows.mixed && !uses_var(&by_row, var) && step_is_one(&by_row, &rows.row)
}

/// Whether the comparison `c`'s two sides' difference changes by exactly ±1 from `var`
/// to `var + 1`.
fn step_is_one(c: &Expr, var: &Var) -> bool {
    let Expr::Cmp { a, b, .. } = c else { return false };
    if !a.dtype().is_integer() || !a.dtype().is_scalar() || a.dtype() != var.dtype() {
        return false;
    }
    let an = Analyzer::new();
    let d = (**a).clone() - (**b).clone();
    let next = crate::tir::mutate::substitute_one(d.clone(), var, Expr::var(var) + Expr::typed_int(1, var.dtype()));
    matches!(an.simplify(&(next - d)), Expr::Int { value, .. } if value.abs() == 1)
}

/// Whether a condition inside a loop of `s` has one of `tests` among its conjuncts.
fn tested_in_loop(s: &Stmt, tests: &[Expr]) -> bool {
    struct T<'a>(&'a [Expr], bool);
    impl Visitor for T<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::For { body, .. } = s {
                self.1 |=
                    conditions_of(body, true).into_iter().any(|c| conjuncts(c).iter().any(|x| self.0.contains(x)));
                return;
            }
            walk_stmt(self, s);
        }
    }
    let mut t = T(tests, false);
    t.visit_stmt(s);
    t.1
}

struct Partition {
    /// The variables of the enclosing parallel loops.
    parallel: Vec<Var>,
    /// The interior chosen for sibling loops (see `common_interiors`), by variable.
    common: Vec<(Var, (i64, i64))>,
}

impl Mutator for Partition {
    fn mutate_stmt(&mut self, s: Stmt) -> Stmt {
        // The scalar path of a vector loop (`hoist_tail_guards`' `if whole { vector }
        // else { scalar }`) is a border of a few iterations already; partitioned, it
        // is a clean scalar loop that LLVM's loop vectorizer turns into gathers.
        if let Stmt::If { cond, then, otherwise: Some(tail) } = s {
            if has_vector_code(&then) && !has_vector_code(&tail) {
                return Stmt::If { cond, then: Box::new(self.mutate_stmt(*then)), otherwise: Some(tail) };
            }
            return super_stmt(self, Stmt::If { cond, then, otherwise: Some(tail) });
        }
        if let Stmt::For { var, min, extent, kind: ForKind::Parallel, body } = s {
            self.parallel.push(var.clone());
            // The versioned body's slow path (the iterations where a test fails) keeps
            // its tests as they are: partitioned on its own, it would test them again.
            let body = match version_parallel(&var, *body) {
                Ok((cond, fast, slow)) => {
                    Stmt::If { cond, then: Box::new(self.mutate_stmt(fast)), otherwise: Some(Box::new(slow)) }
                }
                Err(body) => self.mutate_stmt(body),
            };
            self.parallel.pop();
            return Stmt::For { var, min, extent, kind: ForKind::Parallel, body: Box::new(body) };
        }
        if let Stmt::Seq(items) = &s {
            let pushed = self.common_interiors(items);
            let s = super_stmt(self, s);
            self.common.truncate(self.common.len() - pushed);
            return s;
        }
        match super_stmt(self, s) {
            Stmt::For { var, min, extent, kind: ForKind::Serial, body } => {
                let common = self.common.iter().rev().find(|(v, _)| *v == var).map(|(_, c)| *c);
                partition(var, min, extent, *body, &self.parallel, common)
            }
            s => s,
        }
    }
}

/// How many iterations a loop's interior may give up to share its siblings' interior.
const MAX_NARROWING: i64 = 16;

impl Partition {
    /// Sibling innermost loops over one constant range without vector code (the taps of
    /// an unrolled window, each sweeping the same accumulator row) get one interior: the
    /// intersection of their own, when that costs each at most `MAX_NARROWING`
    /// iterations. Each loop's interior otherwise starts and ends where its own test
    /// does (`1..56`, `0..56`, `0..55` for the three horizontal taps of a padded 3x3
    /// window), LLVM vectorizes each with other widths at other offsets, and a vector
    /// load of the row then overlaps stores of the sweep before it that it cannot be
    /// forwarded from, and stalls (in a profile of the conv2d with its padding `if` in
    /// the reduction, most samples fall just after such loads; `cargo bench --bench peers
    /// -- conv2d_if` measures that kernel). Returns how many entries it pushed on
    /// `self.common`.
    fn common_interiors(&mut self, items: &[Stmt]) -> usize {
        let mut found: Vec<(Var, (i64, i64), (i64, i64))> = Vec::new();
        for item in items {
            let Stmt::For { var, min, extent, kind: ForKind::Serial, body } = item else { continue };
            let (Some(m), Some(e)) = (min.as_int(), extent.as_int()) else { continue };
            if has_loop(body) || has_vector_code(body) {
                continue;
            }
            if let Some((lo, hi)) = const_interior(var, min, extent, body, &self.parallel) {
                found.push((var.clone(), (m, e), (lo, hi)));
            }
        }
        if found.len() < 2 || found.iter().any(|f| f.1 != found[0].1) {
            return 0;
        }
        let lo = found.iter().map(|f| f.2 .0).max().unwrap_or(0);
        let hi = found.iter().map(|f| f.2 .1).min().unwrap_or(0);
        let cheap = found.iter().all(|f| (lo - f.2 .0) + (f.2 .1 - hi) <= MAX_NARROWING);
        if lo >= hi || !cheap || found.iter().all(|f| f.2 == (lo, hi)) {
            return 0;
        }
        for (var, _, _) in &found {
            self.common.push((var.clone(), (lo, hi)));
        }
        found.len()
    }
}

/// One conjunct linear in the loop variable: it holds exactly for `u` (the offset from
/// the loop's start) in `[lo, ∞)` or `(-∞, hi)`, with the bound already clamped to
/// `[0, extent]`.
struct Bound {
    conjunct: Expr,
    lower: bool,
    /// Where the conjunct starts (`lower`) or stops holding, clamped to the loop's range.
    at: Expr,
    /// The same, clamped only below (at 0).
    raw: Expr,
    /// The conjunct itself was solved (not its worst case over the loops inside): it is
    /// false exactly outside the interval, so a border where it alone decides can drop
    /// the code it guards.
    exact: bool,
}

/// Conjuncts that mention a variable of `parallel` are not used: the border of a
/// parallel dimension stays a guard, so the ranges inside each parallel iteration stay
/// those the parallel-chunk prover of the CPU code generator can bound (and the border
/// is at most one iteration of the parallel loop).
fn partition(var: Var, min: Expr, extent: Expr, body: Stmt, parallel: &[Var], common: Option<(i64, i64)>) -> Stmt {
    let unchanged = |body: Stmt| Stmt::For {
        var: var.clone(),
        min: min.clone(),
        extent: extent.clone(),
        kind: ForKind::Serial,
        body: Box::new(body),
    };
    let Some((bounds, lo_e, hi_e, lo_interior)) = interior(&var, &min, &extent, &body, parallel) else {
        return unchanged(body);
    };
    let dt = var.dtype();
    // A narrower interior shared with sibling loops (`common_interiors`): the conjuncts
    // hold on all of it, and the iterations given up run the body with its tests. A
    // loop with no test on `var` is cut at the same points (the same loop shapes).
    let (lo_e, hi_e, lo_interior, narrowed) = match (common, lo_e.as_int(), hi_e.as_int(), lo_interior.as_int()) {
        (Some((l, h)), Some(lo), Some(hi), Some(li)) if l >= lo.max(li) && h <= hi && l < h => {
            (Expr::typed_int(l, dt), Expr::typed_int(h, dt), Expr::typed_int(l, dt), true)
        }
        _ if bounds.is_empty() => return unswitch(unchanged(body)),
        _ => (lo_e, hi_e, lo_interior, false),
    };
    // A border decided by one exact conjunct: before `lo` the only lower conjunct is
    // false, from `max(lo, hi)` on the only upper one (each border ends where its bound
    // is, or the loop does). The code it guards never runs there, so the border keeps
    // only what its conditions' other branches do: a split's tail loop whose every
    // iteration is past the end, kept by a bound of `min(M - o * 32, 32)`, is empty.
    let border = |lower: bool| {
        let mut side = bounds.iter().filter(|b| b.lower == lower);
        match (side.next(), side.next()) {
            (Some(b), None) if b.exact && !narrowed => {
                let c = b.conjunct.clone();
                rewrite_conditions(body.clone(), &mut |cond| {
                    let cs = conjuncts(cond.clone());
                    let at = cs.iter().position(|x| *x == c)?;
                    // `&&` evaluates left to right: a conjunct before `c` that checks a
                    // value (an index, a divisor) still runs there, and a bad value must
                    // still fail the call, so such a condition stays as it is.
                    (!cs[..at].iter().any(crate::tir::visit::expr_has_check)).then_some(Expr::Bool(false))
                })
            }
            _ => body.clone(),
        }
    };
    let (before, after) = (border(true), border(false));
    let simplify = Analyzer::new();
    let peeled: Vec<Expr> = bounds.into_iter().map(|b| b.conjunct).collect();
    let interior = rewrite_conditions(body.clone(), &mut |c| strip(c, &peeled));
    // The bounds are written out in each loop, not bound by `let`s: the analyzers of
    // later stages (the parallel-chunk prover among them) bound a loop variable through
    // its range's expressions, not through a `let` bound in between.
    let part = |from: Expr, to: Expr, body: Stmt| Stmt::For {
        var: var.clone(),
        min: simplify.simplify(&(min.clone() + from.clone())),
        extent: simplify.simplify(&(to - from)),
        kind: ForKind::Serial,
        body: Box::new(body),
    };
    Stmt::Seq(vec![
        part(Expr::typed_int(0, dt), lo_e.clone(), before),
        // The interior's extent `hi - lo` is negative when the conjuncts hold nowhere
        // (a loop of no iterations): its variable is then bounded by `hi` itself, which
        // is what proves its accesses in bounds without the peeled test.
        unswitch(part(lo_interior, hi_e.clone(), interior)),
        part(simplify.simplify(&Expr::max(lo_e, hi_e)), extent.clone(), after),
    ])
}

/// The interior of `for var in min..min+extent { body }` as constant offsets from `min`
/// (`[lo, hi)`, where every linear conjunct holds), if it has one and it is known.
fn const_interior(var: &Var, min: &Expr, extent: &Expr, body: &Stmt, parallel: &[Var]) -> Option<(i64, i64)> {
    let (_, lo_e, hi_e, lo_interior) = interior(var, min, extent, body, parallel)?;
    let (lo, hi, li) = (lo_e.as_int()?, hi_e.as_int()?, lo_interior.as_int()?);
    Some((lo.max(li), hi))
}

/// The conjuncts linear in `var` that a partition peels, with the interior's start and
/// end offsets (`lo`, `hi`) and the start that keeps the lower conjuncts known
/// (`lo_interior`); `None` where the loop is left alone (short, large, not integer).
fn interior(
    var: &Var,
    min: &Expr,
    extent: &Expr,
    body: &Stmt,
    parallel: &[Var],
) -> Option<(Vec<Bound>, Expr, Expr, Expr)> {
    let short = extent.as_int().is_some_and(|e| e <= MIN_EXTENT);
    if !extent.dtype().is_integer() || short || node_count(body) > MAX_BODY_NODES {
        return None;
    }
    let inner = super::hoist_tail_guards::bound_inside(body);
    let taps = constant_loops(body);
    let mut bounds: Vec<Bound> = Vec::new();
    for cond in conditions(body) {
        for c in conjuncts(cond) {
            if !uses_var(&c, var) || parallel.iter().any(|v| uses_var(&c, v)) || bounds.iter().any(|b| b.conjunct == c)
            {
                continue;
            }
            // A conjunct on the loops inside too: only a symbolic split's tail test.
            let exact = !inner.iter().any(|v| uses_var(&c, v));
            let test = if !exact {
                if !parallel.is_empty() && !constant_strides(body, var) {
                    continue;
                }
                let Some(t) = split_tail_test(&c, var, &inner, &taps) else { continue };
                t
            } else {
                c.clone()
            };
            if let Some((lower, at, raw)) = linear_bound(&test, var, min, extent) {
                bounds.push(Bound { conjunct: c, lower, at, raw, exact });
            }
        }
    }
    if bounds.is_empty() {
        // The whole range is interior.
        let zero = Expr::typed_int(0, var.dtype());
        return Some((bounds, zero.clone(), extent.clone(), zero));
    }
    let dt = var.dtype();
    let lo_e =
        bounds.iter().filter(|b| b.lower).map(|b| b.at.clone()).reduce(Expr::max).unwrap_or(Expr::typed_int(0, dt));
    let hi_e = bounds.iter().filter(|b| !b.lower).map(|b| b.at.clone()).reduce(Expr::min).unwrap_or(extent.clone());
    let simplify = Analyzer::new();
    let lo_e = simplify.simplify(&lo_e);
    let hi_e = simplify.simplify(&hi_e);
    // The interior starts where the lower conjuncts start to hold, not clamped to the
    // extent: the same start when it is inside the loop, and an interior of no
    // iterations otherwise. So its variable is known to satisfy them (`j >= 1` in a
    // recurrence that reads `y[j - 1]` under `if j >= 1`, even where the extent is
    // symbolic), which a start of `min(1, N)` would not tell the analyzers.
    let lo_interior = bounds
        .iter()
        .filter(|b| b.lower)
        .map(|b| b.raw.clone())
        .reduce(Expr::max)
        .map_or(lo_e.clone(), |e| simplify.simplify(&e));
    Some((bounds, lo_e, hi_e, lo_interior))
}

/// `c` at the worst values of the variables bound inside the loop that it mentions
/// (the end of each one's range where `c` is hardest to satisfy); `None` when one of
/// them is not a loop of constant range (a `let`, a symbolic extent) or `c` is not
/// linear in it. A conjunct linear in a variable holds over the variable's whole range
/// exactly when it holds at the end where it is tightest: `i + r < H` for every `r` in
/// `0..3` exactly when `i + 2 < H`.
fn worst_case(c: &Expr, inner: &[Var], taps: &[(Var, i64, i64)]) -> Option<Expr> {
    let mut out = c.clone();
    for v in inner.iter().filter(|v| uses_var(c, v)) {
        let &(_, lo, hi) = taps.iter().find(|(t, _, _)| t == v)?;
        let range = Expr::typed_int(hi - lo + 1, v.dtype());
        // `lower`: `c` holds from some value of `v` on, so its worst value is the first.
        let (lower, _, _) = linear_bound(&out, v, &Expr::typed_int(lo, v.dtype()), &range)?;
        out = crate::tir::mutate::substitute_one(out, v, Expr::typed_int(if lower { lo } else { hi }, v.dtype()));
    }
    Some(out)
}

/// The tail test of a split of a symbolic extent, `o * c + i < M` under `for i in 0..c`
/// (the guard `schedule_ops` puts on every element of a tile when `c` may not divide
/// `M`), at its worst inner values: `o * c + c - 1 < M`, which holds for every `i` of the
/// tile exactly when the conjunct does. Partitioned on it, the loop over the tiles `o`
/// runs `0..M / c` with no test and the last tile with its tests:
///
/// ```text
/// for o in 0..M / c              { for i in 0..c { body } }
/// for o in M / c..(M + c - 1) / c { for i in 0..c { if o * c + i < M { body } } }
/// ```
///
/// Only a conjunct in which `var` has a coefficient other than ±1 (the outer loop of a
/// split) and that keeps a symbolic term (`M`) once its inner variables are at their
/// worst: a window's border `i + r < H` (coefficient 1) is versioned instead (see
/// [`version`]), and a split of a constant extent keeps its per-tile guards, whose
/// borders LLVM already sees as constants. Inside a parallel loop, only where the stores
/// index with `o` times a constant (see [`constant_strides`]).
fn split_tail_test(c: &Expr, var: &Var, inner: &[Var], taps: &[(Var, i64, i64)]) -> Option<Expr> {
    let mut unique: Vec<Var> = Vec::new();
    for v in inner {
        if !unique.contains(v) {
            unique.push(v.clone());
        }
    }
    let worst = worst_case(c, &unique, taps)?;
    if crate::tir::visit::vars_of(&worst).iter().all(|v| v == var) {
        return None;
    }
    // The coefficient of `var`: the difference of the two sides from one tile to the next.
    let Expr::Cmp { a, b, .. } = &worst else { return None };
    let (d, dt, an) = ((**a).clone() - (**b).clone(), var.dtype(), Analyzer::new());
    let at = |o: i64| crate::tir::mutate::substitute_one(d.clone(), var, Expr::typed_int(o, dt));
    let Expr::Int { value: k, .. } = an.simplify(&(at(1) - at(0))) else { return None };
    (k.abs() > 1).then_some(worst)
}

/// Whether every store of `s` indexes its buffer with `var` times a constant (or not at
/// all). Inside a parallel loop, the parallel-chunk prover of the code generator bounds
/// such an index through the interior's end (`16 * (M / 16) <= M`), but not a symbolic
/// stride times it: the pooled rows of a strided pooling, `y[pw * i + j]` under `if i * 2
/// + p < H - 2`, partitioned at `(H - 3) / 2`, would leave it unable to prove `pw * i <
/// pw * ph`, and the kernel would not compile.
fn constant_strides(s: &Stmt, var: &Var) -> bool {
    struct C<'a>(&'a Var, bool);
    impl Visitor for C<'_> {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::Store { indices, .. } = s {
                for i in indices {
                    let base = match i {
                        Expr::Ramp { base, .. } => (**base).clone(),
                        i => i.clone(),
                    };
                    if !uses_var(&base, self.0) {
                        continue;
                    }
                    let dt = self.0.dtype();
                    let at = |o: i64| crate::tir::mutate::substitute_one(base.clone(), self.0, Expr::typed_int(o, dt));
                    let slope = Analyzer::new().simplify(&(at(1) - at(0)));
                    self.1 &= matches!(slope, Expr::Int { .. });
                }
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut c = C(var, true);
    c.visit_stmt(s);
    c.1
}

/// The loops inside `s` whose range is constant, as `(var, first, last)`: the hull of
/// every loop binding the variable (a partitioned loop binds it in each part); a
/// variable with a loop of symbolic range, or also bound by a `let`, is left out.
fn constant_loops(s: &Stmt) -> Vec<(Var, i64, i64)> {
    struct L(Vec<(Var, Option<(i64, i64)>)>);
    impl Visitor for L {
        fn visit_stmt(&mut self, s: &Stmt) {
            let bound = match s {
                Stmt::For { var, min, extent, .. } => Some((
                    var,
                    match (min.as_int(), extent.as_int()) {
                        (Some(m), Some(e)) if e >= 1 => Some((m, m + e - 1)),
                        _ => None,
                    },
                )),
                Stmt::Let { var, .. } => Some((var, None)),
                _ => None,
            };
            if let Some((var, range)) = bound {
                match self.0.iter_mut().find(|(v, _)| v == var) {
                    Some((_, r)) => {
                        *r = r.zip(range).map(|(a, b)| (a.0.min(b.0), a.1.max(b.1)));
                    }
                    None => self.0.push((var.clone(), range)),
                }
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut l = L(Vec::new());
    l.visit_stmt(s);
    l.0.into_iter().filter_map(|(v, r)| r.map(|(a, b)| (v, a, b))).collect()
}

/// Loop unswitching of an innermost loop: the conjuncts of its conditions that do not
/// change inside it (no loop variable of it, no memory read) are tested once,
///
/// ```text
/// if invariant { loop with them replaced by `true` } else { loop }
/// ```
///
/// so the interior of a padded loop (`select(y + r >= 1 && y + r <= H, x[..], 0)` once
/// its own border is partitioned off) reads without a test, and the code generator,
/// which knows the test held, can prove the read in bounds.
fn unswitch(s: Stmt) -> Stmt {
    let Stmt::For { var, body, .. } = &s else { return s };
    if has_loop(body) || node_count(body) > MAX_BODY_NODES {
        return s;
    }
    let mut hoisted: Vec<Expr> = Vec::new();
    // Variables bound inside the body (its `let`s) vary too.
    let inner = super::hoist_tail_guards::bound_inside(body);
    for cond in conditions(body) {
        for c in conjuncts(cond) {
            let varies = uses_var(&c, var) || inner.iter().any(|v| uses_var(&c, v)) || crate::arith::reads_memory(&c);
            if !varies && !matches!(c, Expr::Bool(_)) && !hoisted.contains(&c) {
                hoisted.push(c);
            }
        }
    }
    if hoisted.is_empty() {
        return s;
    }
    let Stmt::For { var, min, extent, kind, body } = s else { unreachable!() };
    let fast = rewrite_conditions((*body).clone(), &mut |c| strip(c, &hoisted));
    let cond = hoisted.into_iter().reduce(Expr::and).expect("non-empty");
    Stmt::If {
        cond,
        then: Box::new(Stmt::For {
            var: var.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind,
            body: Box::new(fast),
        }),
        otherwise: Some(Box::new(Stmt::For { var, min, extent, kind, body })),
    }
}

fn has_loop(s: &Stmt) -> bool {
    struct L(bool);
    impl Visitor for L {
        fn visit_stmt(&mut self, s: &Stmt) {
            self.0 |= matches!(s, Stmt::For { .. });
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, _: &Expr) {}
    }
    let mut l = L(false);
    l.visit_stmt(s);
    l.0
}

/// Where the conjunct `c` holds, if it is a comparison linear in `var` with a constant
/// coefficient: `(true, lo)` for `u >= lo`, `(false, hi)` for `u < hi`, where
/// `u = var - min` and the bound is clamped to `[0, extent]`.
fn linear_bound(c: &Expr, var: &Var, min: &Expr, extent: &Expr) -> Option<(bool, Expr, Expr)> {
    let Expr::Cmp { op, a, b } = c else { return None };
    if !a.dtype().is_integer() || !a.dtype().is_scalar() || a.dtype() != var.dtype() {
        return None;
    }
    let dt = var.dtype();
    let an = Analyzer::new();
    // Normalized to `d < 0` (integers: `x <= 0` is `x - 1 < 0`).
    let diff = (**a).clone() - (**b).clone();
    let d = match op {
        CmpOp::Lt => diff,
        CmpOp::Le => diff - Expr::typed_int(1, dt),
        CmpOp::Gt => Expr::typed_int(0, dt) - diff,
        CmpOp::Ge => Expr::typed_int(0, dt) - diff - Expr::typed_int(1, dt),
        CmpOp::Eq | CmpOp::Ne => return None,
    };
    // `d = k * u + r` with `u = var - min`.
    let u = Var::new("u", dt);
    let d = crate::tir::mutate::substitute_one(d, var, min.clone() + Expr::var(&u));
    let r = an.simplify(&crate::tir::mutate::substitute_one(d.clone(), &u, Expr::typed_int(0, dt)));
    let r1 = an.simplify(&crate::tir::mutate::substitute_one(d.clone(), &u, Expr::typed_int(1, dt)));
    let Expr::Int { value: k, .. } = an.simplify(&(r1 - r.clone())) else { return None };
    if k == 0 || k.unsigned_abs() > (1 << 20) {
        return None;
    }
    let rest = an.simplify(&(d - Expr::typed_int(k, dt) * Expr::var(&u) - r.clone()));
    if !matches!(rest, Expr::Int { value: 0, .. }) {
        return None;
    }
    // `ceil(t / |k|)` clamped to `[0, extent]`. The division truncates: for `t + |k| - 1
    // >= 0` that is the floor, so the ceiling of `t / |k|`; for a negative numerator the
    // true ceiling is at most -1 and the truncated quotient is at most 0, so both clamp
    // to 0.
    // Also the bound clamped only below, at 0.
    let ceil_clamped = |t: Expr| {
        let q = (t + Expr::typed_int(k.abs() - 1, dt)) / Expr::typed_int(k.abs(), dt);
        let at_least_0 = Expr::max(Expr::typed_int(0, dt), q);
        (Expr::min(extent.clone(), at_least_0.clone()), at_least_0)
    };
    if k > 0 {
        // k*u + r < 0  <=>  k*u <= -r - 1  <=>  u < ceil(-r / k).
        let (at, raw) = ceil_clamped(Expr::typed_int(0, dt) - r);
        Some((false, at, raw))
    } else {
        // -|k|*u + r < 0  <=>  |k|*u >= r + 1  <=>  u >= ceil((r + 1) / |k|).
        let (at, raw) = ceil_clamped(r + Expr::typed_int(1, dt));
        Some((true, at, raw))
    }
}

/// The conditions of the `if`s and selects of `s`; not those of vector selects, whose
/// lanes may differ (`hoist_tail_guards`'s masked borders): no one test decides them.
fn conditions(s: &Stmt) -> Vec<Expr> {
    conditions_of(s, false)
}

/// The conditions of the `if`s and `select`s of `s`: the scalar ones, and with `vectors`
/// the uniform conjuncts of the vector selects' (`broadcast(i + r < H)` of a masked tile's
/// `broadcast(i + r < H) && ramp(..) < W`), each on its own; their lane-wise ones, which
/// no one test decides, are left out (and not copied: a masked tile has hundreds).
fn conditions_of(s: &Stmt, vectors: bool) -> Vec<Expr> {
    struct C(Vec<Expr>, bool);
    impl Visitor for C {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let Stmt::If { cond, .. } = s {
                self.0.push(cond.clone());
            }
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, e: &Expr) {
            if let Expr::Select { cond, .. } = e {
                if cond.dtype().lanes == 1 {
                    self.0.push((**cond).clone());
                } else if self.1 {
                    uniform_conjuncts(cond, &mut self.0);
                }
            }
            walk_expr(self, e)
        }
    }
    let mut c = C(Vec::new(), vectors);
    c.visit_stmt(s);
    c.0
}

fn node_count(s: &Stmt) -> usize {
    struct N(usize);
    impl Visitor for N {
        fn visit_stmt(&mut self, s: &Stmt) {
            self.0 += 1;
            walk_stmt(self, s)
        }
        fn visit_expr(&mut self, e: &Expr) {
            self.0 += 1;
            walk_expr(self, e)
        }
    }
    let mut n = N(0);
    n.visit_stmt(s);
    n.0
}

/// The `broadcast(..)` conjuncts of the vector condition `c`, pushed to `out`.
fn uniform_conjuncts(c: &Expr, out: &mut Vec<Expr>) {
    match c {
        Expr::And(a, b) => {
            uniform_conjuncts(a, out);
            uniform_conjuncts(b, out);
        }
        Expr::Broadcast { .. } => out.push(c.clone()),
        _ => {}
    }
}

/// `cond` without the conjuncts of `peeled` (they hold in the interior); `None` when it
/// has none of them.
fn strip(cond: &Expr, peeled: &[Expr]) -> Option<Expr> {
    let cs = conjuncts(cond.clone());
    if !cs.iter().any(|c| peeled.contains(c)) {
        return None;
    }
    Some(cs.into_iter().filter(|c| !peeled.contains(c)).reduce(Expr::and).unwrap_or(Expr::Bool(true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::tir::{
        printer::{print_expr, print_stmt},
        Buffer, Scope,
    };

    fn ld(b: &Buffer, i: Expr) -> Expr {
        Expr::Load { buffer: b.clone(), indices: vec![i] }
    }

    /// `out[x] = select(1 <= x && x < n - 1, a[x - 1] + a[x + 1], 0)` over `x < n`.
    fn padded(n: &Var) -> (Var, Stmt) {
        let (a, out) = (Buffer::new("a", DType::F32, Scope::Global), Buffer::new("out", DType::F32, Scope::Global));
        let x = Var::index("x");
        let (xe, ne) = (Expr::var(&x), Expr::var(n));
        let cond = Expr::and(Expr::ge(xe.clone(), Expr::int(1)), Expr::lt(xe.clone(), ne.clone() - 1));
        let value = Expr::select(cond, ld(&a, xe.clone() - 1) + ld(&a, xe.clone() + 1), Expr::float(0.0, DType::F32));
        let body = Stmt::store(&out, vec![xe], value);
        let s =
            Stmt::For { var: x.clone(), min: Expr::int(0), extent: ne, kind: ForKind::Serial, body: Box::new(body) };
        (x, s)
    }

    fn loops(s: &Stmt) -> Vec<Stmt> {
        match s {
            Stmt::For { .. } => vec![s.clone()],
            Stmt::Seq(ss) => ss.iter().flat_map(loops).collect(),
            Stmt::Let { body, .. } => loops(body),
            _ => Vec::new(),
        }
    }

    /// Which tests on a parallel variable count as a window's border on its row: linear
    /// in the variable with a step of ±1, or in one row `var / k` of a fused loop for a
    /// positive constant `k`; not through a symbolic or zero divisor, two divisors, or `%`.
    #[test]
    fn a_border_on_the_row_is_a_unit_step_and_nothing_else() {
        let (i, r, h, n) = (Var::index("i"), Var::index("r"), Var::index("H"), Var::index("n"));
        let (ie, re, he, ne) = (Expr::var(&i), Expr::var(&r), Expr::var(&h), Expr::var(&n));
        let lt = |a: Expr| Expr::lt(a + re.clone(), he.clone());
        let yes = [
            lt(ie.clone()),
            lt(ie.clone() / Expr::int(2)),
            Expr::ge(ie.clone() / Expr::int(3) + re.clone(), Expr::int(1)),
        ];
        for c in &yes {
            assert!(unit_step(c, &i), "{}", print_expr(c));
        }
        let no = [
            lt(ie.clone() / ne.clone()),
            lt(ie.clone() / Expr::int(0)),
            lt(ie.clone() / Expr::int(-2)),
            lt(ie.clone() / Expr::int(2) + ie.clone() / Expr::int(3)),
            lt(ie.clone() / Expr::int(2) + ie.clone()),
            lt(Expr::binary(crate::tir::BinOp::Mod, ie.clone(), Expr::int(4))),
            lt(ie.clone() * Expr::int(2)),
        ];
        for c in &no {
            assert!(!unit_step(c, &i), "{}", print_expr(c));
        }
    }

    #[test]
    fn a_border_test_is_peeled_off_the_interior() {
        let n = Var::index("n");
        let (_, s) = padded(&n);
        let out = Partition { parallel: Vec::new(), common: Vec::new() }.mutate_stmt(s);
        let text = print_stmt(&out);
        let parts = loops(&out);
        assert_eq!(parts.len(), 3, "border, interior, border:\n{text}");
        assert!(conditions(&parts[0]).len() == 1 && conditions(&parts[2]).len() == 1, "{text}");
        assert!(conditions(&parts[1]).is_empty(), "the interior keeps no test:\n{text}");
    }

    #[test]
    fn a_condition_on_a_parallel_variable_is_left_alone() {
        let n = Var::index("n");
        let (x, s) = padded(&n);
        let out = Partition { parallel: vec![x], common: Vec::new() }.mutate_stmt(s.clone());
        assert_eq!(out, s);
    }

    /// `for i in 0..m { for r in 0..3 { out[i] = out[i] + select(test(i, r), a[i + r], 0) } }`:
    /// a window of three taps whose border test mentions the tap.
    fn window(m: &Var, test: impl Fn(Expr, Expr) -> Expr) -> Stmt {
        let (a, out) = (Buffer::new("a", DType::F32, Scope::Global), Buffer::new("out", DType::F32, Scope::Global));
        let (i, r) = (Var::index("i"), Var::index("r"));
        let (ie, re) = (Expr::var(&i), Expr::var(&r));
        let cond = test(ie.clone(), re.clone());
        let value = ld(&out, ie.clone()) + Expr::select(cond, ld(&a, ie.clone() + re), Expr::float(0.0, DType::F32));
        let tap = Stmt::For {
            var: r,
            min: Expr::int(0),
            extent: Expr::int(3),
            kind: ForKind::Serial,
            body: Box::new(Stmt::store(&out, vec![ie], value)),
        };
        Stmt::For { var: i, min: Expr::int(0), extent: Expr::var(m), kind: ForKind::Serial, body: Box::new(tap) }
    }

    #[test]
    fn a_border_test_on_a_window_is_tested_once_per_iteration_at_its_last_tap() {
        let (m, n) = (Var::index("m"), Var::index("n"));
        let s = window(&m, |i, r| Expr::lt(i + r, Expr::var(&n)));
        let out = Version { parallel: Vec::new() }.mutate_stmt(s);
        let text = print_stmt(&out);
        let Stmt::For { extent, body, .. } = &out else { panic!("one loop:\n{text}") };
        assert_eq!(*extent, Expr::var(&m), "the range is kept:\n{text}");
        let Stmt::If { cond, then, otherwise: Some(slow) } = &**body else { panic!("a versioned body:\n{text}") };
        assert_eq!(print_expr(cond), "i + 2 < n", "{text}");
        assert!(conditions(then).is_empty(), "the fast version keeps no test:\n{text}");
        assert_eq!(conditions(slow).len(), 1, "{text}");
    }

    #[test]
    fn a_test_not_linear_in_a_tap_is_left_in_place() {
        let (m, n) = (Var::index("m"), Var::index("n"));
        let s = window(&m, |i, r| Expr::lt(i + r.clone() * r, Expr::var(&n)));
        assert_eq!(Version { parallel: Vec::new() }.mutate_stmt(s.clone()), s);
    }

    #[test]
    fn a_window_test_on_a_parallel_variable_is_left_alone() {
        let (m, n) = (Var::index("m"), Var::index("n"));
        let s = window(&m, |i, r| Expr::lt(i + r, Expr::var(&n)));
        let Stmt::For { var, .. } = &s else { unreachable!() };
        assert_eq!(Version { parallel: vec![var.clone()] }.mutate_stmt(s.clone()), s);
    }

    /// The window made the body of a parallel loop over its rows (a convolution computed
    /// at the parallel row of its consumer), with the tap loop under a loop of columns.
    fn parallel_window(m: &Var, n: &Var) -> Stmt {
        parallel_window_testing(m, |i, r| Expr::lt(i + r, Expr::var(n)))
    }

    /// [`window`] in a column loop, the rows in parallel.
    fn parallel_window_testing(m: &Var, test: impl Fn(Expr, Expr) -> Expr) -> Stmt {
        let Stmt::For { var, min, extent, body, .. } = window(m, test) else { unreachable!() };
        let cols =
            Stmt::For { var: Var::index("j"), min: Expr::int(0), extent: Expr::var(m), kind: ForKind::Serial, body };
        Stmt::For { var, min, extent, kind: ForKind::Parallel, body: Box::new(cols) }
    }

    /// The parallel loop `s` after the pass: its body, and the whole as text.
    fn partitioned_parallel(s: Stmt) -> (Stmt, String) {
        let out = Partition { parallel: Vec::new(), common: Vec::new() }.mutate_stmt(s);
        let text = print_stmt(&out);
        let Stmt::For { kind: ForKind::Parallel, body, .. } = out else { panic!("one parallel loop:\n{text}") };
        (*body, text)
    }

    /// A versioned parallel body: its test as text, its fast and its slow copy.
    fn versions<'a>(body: &'a Stmt, text: &str) -> (String, &'a Stmt, &'a Stmt) {
        let Stmt::If { cond, then, otherwise: Some(slow) } = body else { panic!("a versioned body:\n{text}") };
        (print_expr(cond), then, slow)
    }

    /// `s`'s body versioned on `test`: the fast copy keeps no test, the slow one its one.
    fn assert_versioned_once(s: Stmt, test: &str) {
        let (body, text) = partitioned_parallel(s);
        let (cond, fast, slow) = versions(&body, &text);
        assert_eq!(cond, test, "{text}");
        assert!(conditions(fast).is_empty(), "the fast version keeps no test:\n{text}");
        assert_eq!(conditions(slow).len(), 1, "the slow version keeps its test:\n{text}");
    }

    #[test]
    fn a_window_test_on_a_parallel_row_is_tested_once_per_row_at_its_last_tap() {
        let (m, n) = (Var::index("m"), Var::index("n"));
        assert_versioned_once(parallel_window(&m, &n), "i + 2 < n");
    }

    #[test]
    fn a_window_test_on_the_row_of_a_fused_parallel_loop_is_tested_once_per_iteration() {
        // Rows fused with two blocks of another axis: the row is `i / 2`.
        let (m, n) = (Var::index("m"), Var::index("n"));
        let s = parallel_window_testing(&m, |i, r| Expr::lt(i / Expr::int(2) + r, Expr::var(&n)));
        assert_versioned_once(s, "i / 2 + 2 < n");
    }

    #[test]
    fn a_window_test_through_the_remainder_of_a_parallel_variable_is_left_alone() {
        // `i % 2` does not step with the row: such a test stays where it is.
        let (m, n) = (Var::index("m"), Var::index("n"));
        let s = parallel_window_testing(&m, |i, r| Expr::lt(i % Expr::int(2) + r, Expr::var(&n)));
        let (body, text) = partitioned_parallel(s);
        assert!(!matches!(body, Stmt::If { .. }), "not versioned:\n{text}");
    }

    #[test]
    fn the_uniform_part_of_a_vector_select_on_a_parallel_row_is_versioned() {
        // `out[ramp(j, 1, 4)] += select(broadcast(i + r < n) && ramp(j + r, 1, 4) < m,
        // a[ramp(i + j + r, 1, 4)], 0)` over taps `r`, columns `j`, rows `i` in parallel:
        // a masked tile's window, as vectorized.
        let (m, n) = (Var::index("m"), Var::index("n"));
        let (a, out) = (Buffer::new("a", DType::F32, Scope::Global), Buffer::new("out", DType::F32, Scope::Global));
        let (i, j, r) = (Var::index("i"), Var::index("j"), Var::index("r"));
        let (ie, je, re) = (Expr::var(&i), Expr::var(&j), Expr::var(&r));
        let ramp = |base: Expr| Expr::Ramp { base: Box::new(base), stride: Box::new(Expr::int(1)), lanes: 4 };
        let bc = |value: Expr| Expr::Broadcast { value: Box::new(value), lanes: 4 };
        let row = bc(Expr::lt(ie.clone() + re.clone(), Expr::var(&n)));
        let cols = Expr::lt(ramp(je.clone() + re.clone()), bc(Expr::var(&m)));
        let zero = bc(Expr::float(0.0, DType::F32));
        let value = ld(&out, ramp(je.clone()))
            + Expr::select(Expr::and(row, cols), ld(&a, ramp(ie.clone() + je.clone() + re.clone())), zero);
        let store = Stmt::store(&out, vec![ramp(je)], value);
        let lp = |var: &Var, extent: Expr, kind: ForKind, body: Stmt| Stmt::For {
            var: var.clone(),
            min: Expr::int(0),
            extent,
            kind,
            body: Box::new(body),
        };
        let taps = lp(&r, Expr::int(3), ForKind::Serial, store);
        let s = lp(&i, Expr::var(&m), ForKind::Parallel, lp(&j, Expr::var(&m), ForKind::Serial, taps));
        let (body, text) = partitioned_parallel(s);
        let (cond, then, slow) = versions(&body, &text);
        assert_eq!(cond, "i + 2 < n", "{text}");
        let slow_tests: Vec<String> = conditions_of(slow, true).iter().map(print_expr).collect();
        assert!(slow_tests.iter().any(|c| c.contains("broadcast(i + r < n")), "the slow copy lost its test:\n{text}");
        // The fast body keeps the lanes' own test, without the row's (the whole selects'
        // conditions: `conditions_of` gives only their uniform parts).
        struct Selects(Vec<String>);
        impl Visitor for Selects {
            fn visit_expr(&mut self, e: &Expr) {
                if let Expr::Select { cond, .. } = e {
                    self.0.push(print_expr(cond));
                }
                walk_expr(self, e)
            }
        }
        let mut selects = Selects(Vec::new());
        selects.visit_stmt(then);
        let kept = selects.0;
        assert!(!kept.is_empty(), "{text}");
        assert!(kept.iter().all(|c| !c.contains("< broadcast(n") && !c.contains(" < n")), "{text}");
        assert!(kept.iter().any(|c| c.contains("broadcast(m")), "{text}");
    }

    #[test]
    fn a_window_test_on_a_parallel_row_whose_tap_loop_is_copied_is_versioned() {
        // The tap loop twice in the body (as in the two versions of a column tile): the
        // tap variable is bound by both.
        let (m, n) = (Var::index("m"), Var::index("n"));
        let Stmt::For { var, min, extent, kind, body } = parallel_window(&m, &n) else { unreachable!() };
        let twice = Stmt::For { var, min, extent, kind, body: Box::new(Stmt::Seq(vec![(*body).clone(), *body])) };
        let (body, text) = partitioned_parallel(twice);
        let (cond, then, _) = versions(&body, &text);
        assert_eq!(cond, "i + 2 < n", "{text}");
        assert!(conditions(then).is_empty(), "{text}");
    }

    #[test]
    fn a_tap_variable_also_bound_by_a_let_is_not_a_tap() {
        // After the window, `let r = 10` binds the tap's variable again and a read tests
        // `i + r < n` with it: tested at `r = 2`, that read would lose its guard.
        let (m, n) = (Var::index("m"), Var::index("n"));
        let Stmt::For { var, min, extent, kind, body } = parallel_window(&m, &n) else { unreachable!() };
        let Stmt::For { body: tap, .. } = &*body else { unreachable!() };
        let Stmt::For { var: r, body: store, .. } = &**tap else { unreachable!() };
        let rebound = Stmt::Let { var: r.clone(), value: Expr::int(10), body: store.clone() };
        let body = Box::new(Stmt::Seq(vec![*body, rebound]));
        let (body, text) = partitioned_parallel(Stmt::For { var, min, extent, kind, body });
        assert!(!matches!(body, Stmt::If { .. }), "versioned on a rebound tap:\n{text}");
    }

    #[test]
    fn a_short_loop_is_left_alone() {
        let n = Var::index("n");
        let (_, s) = padded(&n);
        let Stmt::For { var, body, .. } = s else { unreachable!() };
        let short = Stmt::For { var, min: Expr::int(0), extent: Expr::int(MIN_EXTENT), kind: ForKind::Serial, body };
        assert_eq!(Partition { parallel: Vec::new(), common: Vec::new() }.mutate_stmt(short.clone()), short);
    }
}
