//! The CPU rules: register tiles for reductions with reuse, rows computed inside their
//! consumer's parallel loop, vectorized partial results, tiled transposes, and parallel
//! vector loops for the rest. Sizes come from the target's facts: vector lanes and
//! registers decide the register tile, FMA units and latency how many accumulators keep
//! the FMA pipes busy, the L2 size whether a packed panel stays in cache, and the core
//! count how many parallel tasks a loop needs.

use super::analysis::{Access, Kind, StageInfo, Step};
use super::Cx;
use crate::schedule::Attach;
use crate::te::TensorId;

/// How many parallel tasks per core a loop should offer (the pool hands out blocks of
/// iterations, so a few per core balance uneven tasks).
const TASKS_PER_CORE: i64 = 2;

/// The register tile of a reduction with reuse, and the loops around it.
#[derive(Clone, Debug)]
struct Tile {
    /// The stage whose loops are tiled (the reduction, or its element-wise consumer).
    owner: TensorId,
    /// The stage that accumulates (the reduction's local cache, or the reduction itself
    /// when it is computed inside its consumer's tile).
    fused_consumer: bool,
    /// Positions (in the reduction's spatial axes) of the row axis `u` (none: one row)
    /// and the vector axis `v`.
    u: Option<usize>,
    v: usize,
    mr: i64,
    nr: i64,
    /// Rows of a block that share a packed panel (a multiple of `mr`); `None`: no packing.
    mb: Option<i64>,
    /// The operand packed per block and panel.
    pack: Option<TensorId>,
    /// The operand is packed once, at the root, into panels of the tile's columns (`pack`
    /// along its last dimension), rather than copied per block of rows and panel: its
    /// last index is the vector axis itself, so a panel of `nr` columns is contiguous.
    pack_once: bool,
    /// The packed operand's dimension that the vector axis indexes (a tile across the
    /// rows; the last dimension otherwise).
    pack_dim: Option<usize>,
    /// The split of the innermost reduction axis that is unrolled (`None`: unrolled whole
    /// when short, else not split).
    ku: Option<i64>,
    /// The stage reads through a boundary view (a stencil with clamped or wrapped edges):
    /// its short reduction axes are all unrolled.
    stencil: bool,
}

impl Cx<'_> {
    pub(super) fn cpu(&mut self) {
        for t in self.consumers_first() {
            if self.free(t) {
                let _ = self.tile_with_reuse(t)
                    || self.rows(t)
                    || self.row_reduction(t)
                    || self.transpose(t)
                    || self.window(t);
            }
        }
        for t in self.consumers_first() {
            if self.placed(t) {
                self.placed_stage(t);
            } else if self.free(t) {
                self.elementwise(t);
                self.parallel_reduction(t);
            }
        }
    }

    fn lanes(&self, t: TensorId) -> i64 {
        self.target.vector_lanes(self.graph.tensor(t).dtype) as i64
    }

    fn cores(&self) -> i64 {
        self.target.facts.cores.max(1) as i64
    }

    /// Multi-level tiling of a reduction with reuse (`SSRSRS`: outer spatial loops in
    /// parallel, a panel loop, the register tile's rows and vector columns, with the
    /// reduction between them in the accumulator's loops).
    fn tile_with_reuse(&mut self, s: TensorId) -> bool {
        if let Some(plan) = self.plan_across_tile(s) {
            self.emit_across_tile(s, &plan);
            return true;
        }
        let Some(plan) = self.plan_tile(s) else { return false };
        self.emit_tile(s, &plan);
        true
    }

    /// A register tile vectorized across the output's rows rather than along them: a
    /// convolution whose rows (56 columns) are not whole vectors, over a count of filters
    /// that is (64). The filters are the vector axis, the columns the tile's rows; the
    /// weights, strided along the filters, are packed so a panel of filters is contiguous,
    /// and the input, which the filters do not change, is one broadcast per column. Every
    /// FMA is a whole vector; the stores to the output step across its rows (a scatter
    /// per tile row, once per tile), and `transpose_locals` keeps the accumulators, which
    /// the cache lays out in the output's order, in registers.
    fn plan_across_tile(&self, s: TensorId) -> Option<Tile> {
        let info = self.info.get(&s)?;
        if info.kind != Kind::Reduction || !matches!(self.attach(s), Attach::Root) || info.axes.len() < 2 {
            return None;
        }
        let lanes = self.lanes(s);
        let last = info.axes.len() - 1;
        let ex = info.axes[last].extent?;
        if ex % lanes == 0 || !info.has_reuse() {
            return None;
        }
        // The vector axis: a spatial one before the last, of whole vectors, that every
        // read either ignores or names alone as one of its indices (a packed operand).
        let v = (0..last).rev().find(|&k| {
            let var = &info.axes[k].var;
            let whole = info.axes[k].extent.is_some_and(|e| e % lanes == 0);
            let mut packed = 0;
            let reads_ok = info.reads.iter().all(|a| {
                if StageInfo::step(a, var) == Step::Invariant {
                    return true;
                }
                let alone = a.indices.iter().filter(|i| crate::tir::visit::uses_var(i, var)).count() == 1
                    && a.indices.iter().any(|i| i.unchecked().as_var() == Some(var));
                let direct = (self.graph.tensor(a.tensor).is_placeholder() || !self.inlined.contains(&a.tensor))
                    && reads_directly(self, s, a)
                    && a.unless.is_empty();
                packed += 1;
                alone && direct
            });
            whole && reads_ok && packed == 1
        })?;
        let ev = info.axes[v].extent?;
        let pack = info.reads.iter().find(|a| StageInfo::step(a, &info.axes[v].var) != Step::Invariant)?.tensor;
        // The packed operand read once (every read of it is packed alike), and the axes
        // after the vector axis of known extent: the output's vectors step by their product.
        if info.reads.iter().filter(|a| a.tensor == pack).count() != 1
            || info.axes[v + 1..].iter().any(|a| a.extent.is_none())
        {
            return None;
        }
        let vvar = &info.axes[v].var;
        let pack_dim = info
            .reads
            .iter()
            .filter(|a| a.tensor == pack)
            .find_map(|a| a.indices.iter().position(|i| i.unchecked().as_var() == Some(vvar)))?;
        // The tasks: the spatial axes before the vector axis, times its panels.
        let outer = info.axes[..v].iter().fold(1i64, |p, a| p.saturating_mul(a.extent.unwrap_or(64)));
        let regs = self.target.facts.vector_registers.max(8) as i64;
        let fma = (self.target.facts.fma_units.max(1) * self.target.facts.fma_latency.max(1)) as i64;
        // About 16 accumulators (two FMA units of latency 4 need 8 in flight), as many as
        // the registers hold besides a row of the packed operand and two more; the rows a
        // divisor of the row when one comes close (14 of 56), else that many with a tail.
        let rows_of = |nr: i64| {
            let per_row = nr / lanes;
            let cap = ((regs - per_row - 2) / per_row).min(16 / per_row).max(1).min(ex);
            (1..=cap).rev().find(|d| ex % d == 0).filter(|&d| 2 * d > cap).unwrap_or(cap)
        };
        // Two vectors of filters when that leaves the cores a panel each, or when a short
        // row (7 columns) would leave one vector too few accumulators to hide the FMA
        // latency; never fewer than that.
        let two = ev % (2 * lanes) == 0;
        let nr = if two && (outer.saturating_mul(ev / (2 * lanes)) >= self.cores() || rows_of(lanes) < fma) {
            2 * lanes
        } else {
            lanes
        };
        let mr = rows_of(nr);
        if mr * (nr / lanes) < fma {
            return None;
        }
        let fused = if info.is_output { None } else { self.elementwise_consumer(s) };
        let last_reduce = info.reduce.last()?;
        let ku = match last_reduce.extent {
            Some(e) if e <= 8 => None,
            Some(e) if e % 4 == 0 => Some(4),
            _ => None,
        };
        Some(Tile {
            owner: fused.unwrap_or(s),
            fused_consumer: fused.is_some(),
            u: Some(last),
            v,
            mr,
            nr,
            mb: None,
            pack: Some(pack),
            pack_once: true,
            pack_dim: Some(pack_dim),
            ku,
            stencil: false,
        })
    }

    fn emit_across_tile(&mut self, s: TensorId, p: &Tile) {
        let info = self.info[&s].clone();
        let sname = info.name.clone();
        let owner = self.graph.tensor(p.owner).name.clone();
        let oaxes: Vec<String> =
            self.graph.tensor(p.owner).axes().iter().map(|a| format!("{owner}.{}", a.var.name())).collect();
        let lanes = self.lanes(s);
        let u = p.u.expect("a row axis");
        let pack = p.pack.expect("a packed operand");
        let pname = self.graph.tensor(pack).name.clone();
        let acc = if p.fused_consumer { sname.clone() } else { self.b.fresh(&format!("{sname}_l")) };
        let why = format!(
            "`{sname}` reduces with reuse along rows of {} `{}` that are not whole vectors: a register tile of {} x {} \
             by {} `{}` lanes ({} accumulators of {lanes}), vectorized across the rows, accumulated in {}; `{pname}` \
             packed into panels of {} `{}`",
            info.axes[u].extent.unwrap_or(0),
            info.axes[u].name,
            p.mr,
            info.axes[u].name,
            p.nr,
            info.axes[p.v].name,
            p.mr * (p.nr / lanes),
            if p.fused_consumer { format!("`{sname}` inside `{owner}`'s tile") } else { "a local cache".into() },
            p.nr,
            info.axes[p.v].name,
        );
        self.b.comment(why.clone());
        if !p.fused_consumer {
            self.b.stmt(format!("let {acc} = {sname}.cache_write(local)"));
        }
        let (vo, vi) = (self.b.fresh(&format!("{owner}_vo")), self.b.fresh(&format!("{owner}_vi")));
        let (uo, ui) = (self.b.fresh(&format!("{owner}_uo")), self.b.fresh(&format!("{owner}_ui")));
        let cols =
            self.b.int_knob(&format!("{owner}_cols"), [p.nr, p.nr / 2, p.nr * 2].into_iter().filter(|&c| c >= lanes));
        self.b.stmt(format!("let ({vo}, {vi}) = {owner}.split({}, {cols})", oaxes[p.v]));
        let rows = self.b.int_knob(&format!("{owner}_rows"), rows_knob(p.mr, info.axes[u].extent));
        self.b.stmt(format!("let ({uo}, {ui}) = {owner}.split({}, {rows})", oaxes[u]));
        // The packed operand: its dimension that the vector axis indexes, in panels.
        let dim = p.pack_dim.expect("the plan found the packed dimension");
        self.pack_once(pack, dim, &acc, &cols, "lanes", false);
        // The owner's loops: [before v] vo [between v and u] uo ui vi; the parallel loop
        // is the axes before `v` and its panels, whose outputs are one block of memory.
        let before: Vec<String> = oaxes[..p.v].to_vec();
        let between: Vec<String> = oaxes[p.v + 1..u].to_vec();
        let mut order = before.clone();
        order.push(vo.clone());
        order.extend(between);
        order.extend([uo.clone(), ui.clone(), vi.clone()]);
        self.b.stmt(format!("{owner}.reorder({})", order.join(", ")));
        let par = if before.is_empty() {
            vo.clone()
        } else {
            let f = self.b.fresh(&format!("{owner}_par"));
            self.b.stmt(format!("let {f} = {owner}.fuse({}, {vo})", before.join(", ")));
            f
        };
        self.b.stmt(format!("{owner}.parallel({par})"));
        self.b.stmt(format!("{owner}.vectorize({vi})"));
        self.b.comment(format!("the tile's accumulators, {} reduced between the tile's loops", reduce_names(&info)));
        self.b.stmt(format!("{acc}.compute_at({owner}, {uo})"));
        self.acc_loops(&info, &acc, p);
        self.handled.insert(s);
        self.handled.insert(p.owner);
        self.note(s, "tile_with_reuse", why);
    }

    fn plan_tile(&self, s: TensorId) -> Option<Tile> {
        let info = self.info.get(&s)?;
        if info.kind != Kind::Reduction || info.axes.is_empty() || !matches!(self.attach(s), Attach::Root) {
            return None;
        }
        let v = info.axes.len() - 1;
        let vvar = &info.axes[v].var;
        if !info.vectorizable_along(vvar) || info.axes[v].extent.is_some_and(|e| e < 2) {
            return None;
        }
        // Reads contiguous along the reduction's innermost axis are better reduced as
        // partial results (a row sum), unless a tile of outputs reuses its loads.
        let reuse = info.has_reuse();
        let last_reduce = info.reduce.last()?;
        let along_reduce = info.reads.iter().any(|a| StageInfo::step(a, &last_reduce.var) == Step::Contiguous);
        if !reuse && along_reduce {
            return None;
        }
        let lanes = self.lanes(s);
        let regs = self.target.facts.vector_registers.max(8) as i64;
        let ev = info.axes[v].extent;
        // The row axis: one along which a read that the vector loads is reused; the
        // longest, the inner one of equals. An axis of unknown extent counts as one of 8:
        // a batch of crops may be a handful at run time, and tiled by 8 its blocks would
        // be the parallel loop's only tasks, one or two for the cores, where a known axis
        // inside it (a crop's columns) leaves the batch and the rows to the parallel loop.
        // A known axis whose tiles would leave over a quarter of the last one empty (9
        // columns as 8 and 1) counts as shorter than that.
        let row_key = |e: Option<i64>| match e {
            None => 8,
            Some(e) => {
                let d = pick_divisor(Some(e), 8).max(1);
                let padded = (e + d - 1) / d * d;
                if 4 * (padded - e) > d {
                    e.min(7)
                } else {
                    e
                }
            }
        };
        let u = (0..v)
            .filter(|&k| {
                info.reads.iter().any(|a| {
                    StageInfo::step(a, vvar) == Step::Contiguous
                        && StageInfo::step(a, &info.axes[k].var) == Step::Invariant
                })
            })
            .max_by_key(|&k| (row_key(info.axes[k].extent), k));
        // A stencil read through a boundary view (`repeat_edge`) takes its edge's slower
        // reads in every vector block that reaches past an edge: blocks of one vector
        // leave the most of its rows in the fast interior.
        let stencil = info.reads.iter().any(|a| !a.unless.is_empty());
        let one_vector = stencil && u.is_none();
        let nr = match ev {
            Some(e) if e <= if one_vector { lanes } else { 4 * lanes } => e,
            _ if one_vector => lanes,
            _ if u.is_some() => 2 * lanes,
            _ => 4 * lanes,
        };
        let per_row = (nr + lanes - 1) / lanes;
        // Accumulators: every register but a row of the vector operand and two more.
        let mr_max = ((regs - per_row - 2) / per_row).max(1);
        let eu = u.and_then(|k| info.axes[k].extent);
        // The tasks of the parallel loop: the spatial axes before the row axis (those
        // after it are inside the blocks of rows; with no row axis, all but the vector
        // axis), times the blocks of rows.
        let outer: i64 = info
            .axes
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != v && u.is_none_or(|u| *k < u))
            .map(|(_, a)| a.extent.unwrap_or(64))
            .product();
        let want = TASKS_PER_CORE * self.cores();
        let mut mr = match u {
            Some(k) => pick_divisor(info.axes[k].extent, mr_max.min(8)),
            None => 1,
        };
        // Far too few blocks of rows for the cores (a convolution with few filters and no
        // batch, whose parallel loop is its filter blocks): shorter register tiles, down
        // to the accumulators that still hide the FMA latency, make more blocks. Only
        // while the cores outnumber the blocks more than twice: a tile of half the rows
        // loads its vector operand and broadcasts its other one for half the FMAs, and ran
        // at about half the speed (P-Net's second layer, 16 filters: tiles of 4 rows took
        // 1.8x the time of tiles of 8 on 2 cores), so doubling the tasks gains nothing
        // until the cores are idle otherwise. The cores are the target's (`-num-cores=`),
        // not the build machine's.
        let fma = (self.target.facts.fma_units.max(1) * self.target.facts.fma_latency.max(1)) as i64;
        let min_rows = ((fma + per_row - 1) / per_row).max(1);
        if let Some(e) = eu {
            while 2 * outer * ((e + mr - 1) / mr) < self.cores() {
                let fewer = pick_divisor(Some(e), mr / 2);
                // `fewer` stays at `mr` once that is 1 (a target whose FMA units and
                // latency ask for a single row).
                if fewer < min_rows || fewer >= mr {
                    break;
                }
                mr = fewer;
            }
        }
        // Pack an operand whose tile rows are short slices (nr of a longer row) of a read
        // that steps through the reduction, when enough register tiles share the panel.
        let pack = if u.is_some() && ev.is_none_or(|e| e > nr) {
            info.reads
                .iter()
                .filter(|a| self.graph.tensor(a.tensor).is_placeholder() || !self.inlined.contains(&a.tensor))
                .filter(|a| reads_directly(self, s, a))
                .find(|a| {
                    StageInfo::step(a, vvar) == Step::Contiguous
                        && info
                            .axes
                            .iter()
                            .enumerate()
                            .all(|(k, ax)| k == v || Some(k) != u || StageInfo::step(a, &ax.var) == Step::Invariant)
                        && info.reduce.iter().any(|r| StageInfo::step(a, &r.var) == Step::Strided)
                })
                .filter(|_| eu.is_none_or(|e| e >= 4 * mr))
        } else {
            None
        };
        let pack_once = pack.is_some_and(|a| a.indices.last().is_some_and(|i| i.unchecked().as_var() == Some(vvar)));
        let pack = pack.map(|a| a.tensor);
        let pack_bytes = pack.and_then(|t| {
            let t = self.graph.tensor(t);
            t.shape.iter().try_fold(t.dtype.bits as i64 / 8, |n, d| d.as_int().and_then(|d| n.checked_mul(d)))
        });
        // Blocks with enough tasks for the cores, else of four register tiles while that
        // leaves a task per core; else no packing (a block as large as the rows would
        // leave the cores idle).
        let mb = pack.and_then(|_| {
            let eu = eu.unwrap_or(1 << 20);
            let tasks = |b: i64| outer * ((eu + b - 1) / b);
            [256, 128, 64, 32]
                .into_iter()
                .map(|b: i64| (b / mr).max(1) * mr)
                .find(|&b| b <= eu && tasks(b) >= want)
                .or(Some(4 * mr).filter(|&b| tasks(b) >= self.cores()))
        });
        let pack = pack.filter(|_| mb.is_some());
        // Packed once, at the root, where the copies per block would repeat (more than one
        // block of rows shares each panel) and read the operand from beyond the L2 each time
        // (it is larger, or of unknown size). A small operand's copies come from the L2,
        // and cost less than a parallel loop of their own.
        let l2 = self.target.facts.l2_bytes.max(1) as i64;
        let pack_once = pack_once && mb.is_some_and(|b| eu.is_none_or(|e| e > b)) && pack_bytes.is_none_or(|n| n > l2);
        let ku = match last_reduce.extent {
            Some(e) if e <= 8 => None,
            Some(e) if e % 4 == 0 => Some(4),
            Some(e) if e % 2 == 0 => Some(2),
            Some(_) => None,
            None => Some(4),
        };
        // The owner: an element-wise consumer reading this stage at its own index, which
        // then computes in the tile (bias, activation), else the stage itself.
        let fused = if info.is_output { None } else { self.elementwise_consumer(s) };
        Some(Tile {
            owner: fused.unwrap_or(s),
            fused_consumer: fused.is_some(),
            u,
            v,
            mr,
            nr,
            mb,
            pack,
            pack_once,
            pack_dim: None,
            ku,
            stencil,
        })
    }

    /// The one consumer of `s` that is free, injective, of the same rank, and reads `s`
    /// only at its own axes in order.
    pub(super) fn elementwise_consumer(&self, s: TensorId) -> Option<TensorId> {
        let info = self.info.get(&s)?;
        let [c] = info.consumers.as_slice() else { return None };
        let ci = self.info.get(c)?;
        if ci.kind != Kind::Injective || ci.axes.len() != info.axes.len() || !self.free(*c) {
            return None;
        }
        let own: Vec<_> = ci.axes.iter().map(|a| crate::tir::Expr::var(&a.var)).collect();
        let mut ok = true;
        let mut any = false;
        crate::tir::visit::for_each_expr(self.graph.tensor(*c).body()?, &mut |e| {
            if let crate::tir::Expr::ProducerLoad { tensor, indices, .. } = e {
                if *tensor == s {
                    any = true;
                    ok &= indices.iter().map(|i| i.unchecked().clone()).collect::<Vec<_>>() == own;
                }
            }
        });
        (ok && any).then_some(*c)
    }

    fn emit_tile(&mut self, s: TensorId, p: &Tile) {
        let info = self.info[&s].clone();
        let sname = info.name.clone();
        let owner = self.graph.tensor(p.owner).name.clone();
        let oaxes: Vec<String> =
            self.graph.tensor(p.owner).axes().iter().map(|a| format!("{owner}.{}", a.var.name())).collect();
        let lanes = self.lanes(s);
        let acc = if p.fused_consumer { sname.clone() } else { self.b.fresh(&format!("{sname}_l")) };
        let rows = match p.u {
            Some(u) => format!("{} x {}", p.mr, info.axes[u].name),
            None => "one row".into(),
        };
        let why = format!(
            "`{sname}` reduces with reuse: a register tile of {rows} by {} `{}` lanes ({} accumulators of {lanes}), \
             accumulated in {}{}",
            p.nr,
            info.axes[p.v].name,
            p.mr * ((p.nr + lanes - 1) / lanes),
            if p.fused_consumer { format!("`{sname}` inside `{owner}`'s tile") } else { "a local cache".into() },
            match (p.pack, p.mb) {
                (Some(t), Some(mb)) if p.pack_once => format!(
                    "; `{}` packed once into panels of {} columns, each read by the {} register tiles of a block of {mb} rows",
                    self.graph.tensor(t).name,
                    p.nr,
                    mb / p.mr
                ),
                (Some(t), Some(mb)) => format!(
                    "; `{}` packed into a panel per {mb} rows, read by {} register tiles",
                    self.graph.tensor(t).name,
                    mb / p.mr
                ),
                _ => String::new(),
            }
        );
        self.b.comment(why.clone());
        if !p.fused_consumer {
            self.b.stmt(format!("let {acc} = {sname}.cache_write(local)"));
        }
        let pack_stage = p.pack.filter(|_| !p.pack_once).map(|t| {
            let tname = self.graph.tensor(t).name.clone();
            let l = self.b.fresh(&format!("{tname}_l"));
            self.b.stmt(format!("let {l} = {tname}.cache_read(local, [{acc}])"));
            l
        });
        // The owner's loops: [outer spatial] uo vo [inner spatial] (uio) uii vi.
        let n = oaxes.len();
        let (uo, ui) = match p.u {
            Some(u) => {
                let (o, i) = (self.b.fresh(&format!("{owner}_uo")), self.b.fresh(&format!("{owner}_ui")));
                let first = match p.mb {
                    Some(mb) => {
                        let ks: Vec<i64> =
                            [mb, mb / 2, mb * 2].into_iter().filter(|&k| k >= p.mr && k % p.mr == 0).collect();
                        self.b.int_knob(&format!("{owner}_block"), ks)
                    }
                    None => self.b.int_knob(&format!("{owner}_rows"), rows_knob(p.mr, info.axes[u].extent)),
                };
                self.b.stmt(format!("let ({o}, {i}) = {owner}.split({}, {first})", oaxes[u]));
                (Some(o), Some(i))
            }
            None => (None, None),
        };
        let ev = info.axes[p.v].extent;
        let (vo, vi) = if ev.is_none_or(|e| e > p.nr) {
            let (o, i) = (self.b.fresh(&format!("{owner}_vo")), self.b.fresh(&format!("{owner}_vi")));
            let cols = self
                .b
                .int_knob(&format!("{owner}_cols"), [p.nr, p.nr / 2, p.nr * 2].into_iter().filter(|&c| c >= lanes / 2));
            self.b.stmt(format!("let ({o}, {i}) = {owner}.split({}, {cols})", oaxes[p.v]));
            if let (Some(t), true) = (p.pack, p.pack_once) {
                let last = self.graph.tensor(t).shape.len() - 1;
                self.pack_once(t, last, &acc, &cols, "columns", true);
            }
            (Some(o), i)
        } else {
            (None, oaxes[p.v].clone())
        };
        let (uio, uii) = match (p.mb, &ui) {
            (Some(_), Some(ui)) => {
                let (o, i) = (self.b.fresh(&format!("{owner}_uio")), self.b.fresh(&format!("{owner}_uii")));
                let r = self.b.int_knob(&format!("{owner}_rows"), rows_knob(p.mr, None));
                self.b.stmt(format!("let ({o}, {i}) = {owner}.split({ui}, {r})"));
                (Some(o), Some(i))
            }
            (None, Some(ui)) => (None, Some(ui.clone())),
            _ => (None, None),
        };
        let split_u = p.u.unwrap_or(usize::MAX);
        let outer: Vec<String> = (0..n).filter(|&k| k != p.v && k < split_u).map(|k| oaxes[k].clone()).collect();
        let inner: Vec<String> =
            (0..n).filter(|&k| k != p.v && k > split_u && k != split_u).map(|k| oaxes[k].clone()).collect();
        let mut order: Vec<String> = outer.clone();
        order.extend(uo.clone());
        order.extend(vo.clone());
        order.extend(inner.clone());
        order.extend(uio.clone());
        order.extend(uii.clone());
        order.push(vi.clone());
        self.b.stmt(format!("{owner}.reorder({})", order.join(", ")));
        // The parallel loop: the outer spatial loops and the row blocks, fused. The
        // blocks join the fusion only when they divide their axis: otherwise the fused
        // index is not a linear walk through the output, and each parallel iteration
        // could not be given its own chunk of it.
        let eu = p.u.and_then(|u| info.axes[u].extent);
        let exact_blocks = eu.is_some_and(|e| e % p.mb.unwrap_or(p.mr) == 0);
        let mut par: Vec<String> = outer.clone();
        if par.is_empty() || exact_blocks {
            par.extend(uo.clone());
        }
        if par.is_empty() {
            par.extend(vo.clone());
        }
        let par_axis = match par.len() {
            0 => None,
            1 => Some(par[0].clone()),
            _ => {
                let f = self.b.fresh(&format!("{owner}_par"));
                self.b.stmt(format!("let {f} = {owner}.fuse({})", par.join(", ")));
                Some(f)
            }
        };
        if let Some(a) = &par_axis {
            self.b.stmt(format!("{owner}.parallel({a})"));
        }
        self.b.stmt(format!("{owner}.vectorize({vi})"));
        // The accumulator, inside the loop just outside the register tile.
        let attach = uio
            .clone()
            .or_else(|| inner.last().cloned())
            .or_else(|| vo.clone().filter(|v| !par.contains(v)))
            .or_else(|| uo.clone().filter(|u| !par.contains(u)))
            .or_else(|| par_axis.clone());
        let Some(attach) = attach else {
            // A tile that is the whole output: nothing to attach to; the reduction stays
            // at the root with its own loops.
            self.finish_acc_at_root(s, &acc, p);
            return;
        };
        // The panel loop: `vo`, or the parallel loop it was fused into.
        let panel = vo.clone().filter(|v| !par.contains(v)).or_else(|| par_axis.clone());
        if let (Some(l), Some(vo)) = (&pack_stage, panel.as_ref()) {
            self.b
                .comment(format!("the panel of `{}` one block of rows reads", self.graph.tensor(p.pack.unwrap()).name));
            self.b.stmt(format!("{l}.compute_at({owner}, {vo})"));
            let rank = self.graph.tensor(p.pack.unwrap()).shape.len();
            let names: Vec<String> = (0..rank).map(|k| self.b.fresh(&format!("{l}_{k}"))).collect();
            self.b.stmt(format!("let [{}] = {l}.axes()", names.join(", ")));
            self.b.stmt(format!("{l}.vectorize({})", names[rank - 1]));
        }
        self.b.comment(format!("the tile's accumulators, {} reduced between the tile's loops", reduce_names(&info)));
        self.b.stmt(format!("{acc}.compute_at({owner}, {attach})"));
        self.acc_loops(&info, &acc, p);
        self.handled.insert(s);
        self.handled.insert(p.owner);
        self.note(s, "tile_with_reuse", why);
    }

    /// `t` packed along `dim` into panels of `cols` for `acc`, once, at the root: the
    /// panels in parallel (with the dimension after them, a batch, when `with_batch` and
    /// there is one besides the packed operand's reduction), each row of one a vector.
    /// `what` names the panels' elements in the comment (the tile's columns or lanes).
    fn pack_once(&mut self, t: TensorId, dim: usize, acc: &str, cols: &str, what: &str, with_batch: bool) {
        let tname = self.graph.tensor(t).name.clone();
        let rank = self.graph.tensor(t).shape.len();
        let l = self.b.fresh(&format!("{tname}_p"));
        self.b.comment(format!("`{tname}` packed into panels of the tile's {what}, once, the panels in parallel"));
        self.b.stmt(format!("let {l} = {tname}.pack({dim}, {cols}, [{acc}])"));
        let names: Vec<String> = (0..=rank).map(|k| self.b.fresh(&format!("{l}_{k}"))).collect();
        self.b.stmt(format!("let [{}] = {l}.axes()", names.join(", ")));
        let par = if with_batch && rank > 2 {
            let f = self.b.fresh(&format!("{l}_par"));
            self.b.stmt(format!("let {f} = {l}.fuse({}, {})", names[0], names[1]));
            f
        } else {
            names[0].clone()
        };
        self.b.stmt(format!("{l}.parallel({par})"));
        self.b.stmt(format!("{l}.vectorize({})", names[rank]));
    }

    /// The accumulator's own loops: the reduction outside, the register tile's rows
    /// unrolled and its columns vectorized inside; the innermost reduction axis unrolled.
    fn acc_loops(&mut self, info: &StageInfo, acc: &str, p: &Tile) {
        let n = info.axes.len();
        let names: Vec<String> = (0..n).map(|k| self.b.fresh(&format!("{acc}_{}", info.axes[k].name))).collect();
        self.b.stmt(format!("let [{}] = {acc}.axes()", names.join(", ")));
        let mut reduce: Vec<String> = info.reduce.iter().map(|r| format!("{acc}.{}", r.name)).collect();
        let last = info.reduce.last().expect("a reduction");
        let unrolled = match p.ku {
            Some(ku) => {
                let (o, i) = (self.b.fresh(&format!("{acc}_ko")), self.b.fresh(&format!("{acc}_ki")));
                let k = self.b.int_knob(
                    &format!("{acc}_unroll"),
                    [ku, 2 * ku, ku / 2].into_iter().filter(|&x| x >= 1 && last.extent.is_none_or(|e| e % x == 0)),
                );
                self.b.stmt(format!("let ({o}, {i}) = {acc}.split({acc}.{}, {k})", last.name));
                reduce.pop();
                reduce.push(o);
                reduce.push(i.clone());
                Some(i)
            }
            None if last.extent.is_some_and(|e| e <= 8) => Some(format!("{acc}.{}", last.name)),
            None => None,
        };
        let mut order: Vec<String> = (0..n).filter(|&k| k != p.v && Some(k) != p.u).map(|k| names[k].clone()).collect();
        order.extend(reduce);
        order.extend(p.u.map(|u| names[u].clone()));
        order.push(names[p.v].clone());
        self.b.stmt(format!("{acc}.reorder({})", order.join(", ")));
        if let Some(k) = unrolled {
            self.b.stmt(format!("{acc}.unroll({k})"));
        }
        // A stencil's other short reduction axes too (the rows of a 3x3 window): its
        // taps then read at constant offsets, in one straight run.
        if p.stencil {
            for r in &info.reduce[..info.reduce.len() - 1] {
                if r.extent.is_some_and(|e| e <= 4) {
                    self.b.stmt(format!("{acc}.unroll({acc}.{})", r.name));
                }
            }
        }
        if let (Some(u), true) = (p.u, p.mr > 1) {
            self.b.stmt(format!("{acc}.unroll({})", names[u]));
        }
        self.b.stmt(format!("{acc}.vectorize({})", names[p.v]));
    }

    fn finish_acc_at_root(&mut self, s: TensorId, acc: &str, p: &Tile) {
        let info = self.info[&s].clone();
        self.acc_loops(&info, acc, p);
        self.handled.insert(s);
        self.handled.insert(p.owner);
        self.note(s, "tile_with_reuse", "a tile as large as the output");
    }

    /// A row-wise consumer and the row reductions (and expensive row-wise stages) it
    /// reads, all computed per row inside its parallel row loop: each pass over a row is
    /// a vector pass, the reductions as partial results (softmax, layer norm).
    fn rows(&mut self, y: TensorId) -> bool {
        let Some(info) = self.info.get(&y).cloned() else { return false };
        if info.kind != Kind::Injective || info.axes.len() < 2 || !matches!(self.attach(y), Attach::Root) {
            return false;
        }
        let rank = info.axes.len();
        let prefix = rank - 1;
        // The row stages upstream of y: reached through inlined stages and other row
        // stages; any other computed stage is a producer of its own (its rule schedules it).
        let row_stage = |cx: &Self, t: TensorId| {
            cx.info.get(&t).is_some_and(|g| match g.kind {
                Kind::Reduction => g.axes.len() == prefix && cx.row_reduction_plan(t).is_some(),
                Kind::Injective => g.axes.len() == rank && g.expensive,
                _ => false,
            })
        };
        let mut group: Vec<TensorId> = Vec::new();
        let mut stack: Vec<TensorId> = self.graph.inputs_of(y);
        let mut seen: Vec<TensorId> = Vec::new();
        while let Some(t) = stack.pop() {
            if self.graph.tensor(t).is_placeholder() || seen.contains(&t) {
                continue;
            }
            seen.push(t);
            if self.inlined.contains(&t) {
                stack.extend(self.graph.inputs_of(t));
            } else if row_stage(self, t) {
                group.push(t);
                stack.extend(self.graph.inputs_of(t));
            }
        }
        if group.is_empty() {
            return false;
        }
        let mut rows_of_reductions = false;
        for &t in &group {
            let Some(g) = self.info.get(&t) else { return false };
            if !self.free(t) || g.is_output {
                return false;
            }
            // Every consumer inside the group or y.
            if !g.consumers.iter().all(|c| *c == y || group.contains(c) || self.inlined.contains(c)) {
                return false;
            }
            rows_of_reductions |= g.kind == Kind::Reduction;
            // Read at y's leading axes only (a row of a reduction is y's row).
            if !self.reads_at_prefix(y, t, g.axes.len()) {
                return false;
            }
        }
        if !rows_of_reductions {
            return false;
        }
        let lanes = self.lanes(y);
        let yname = info.name.clone();
        let row = if prefix == 1 {
            format!("{yname}.{}", info.axes[0].name)
        } else {
            let f = self.b.fresh(&format!("{yname}_rows"));
            let axes: Vec<String> = info.axes[..prefix].iter().map(|a| format!("{yname}.{}", a.name)).collect();
            self.b.stmt(format!("let {f} = {yname}.fuse({})", axes.join(", ")));
            f
        };
        let members: Vec<String> = group.iter().map(|&t| format!("`{}`", self.graph.tensor(t).name)).collect();
        let why = format!(
            "`{yname}` reads the row reductions {}: one row per iteration of a parallel loop, every pass over the row a \
             vector pass, the reductions as partial results",
            members.join(", ")
        );
        self.b.comment(why.clone());
        self.b.stmt(format!("{yname}.parallel({row})"));
        // No software prefetch of the next row: the passes sweep rows that follow one
        // another in memory, which the hardware prefetcher streams, and a `prefetch` of a
        // row costs an instruction and a bounds test per 64-byte line of it, as many as one
        // pass's 16-lane loads over the row (docs/PERFORMANCE.md measures both).
        let w = self.b.int_knob(&format!("{yname}_w"), [2 * lanes, lanes, 4 * lanes]);
        let (jo, ji) = (self.b.fresh(&format!("{yname}_jo")), self.b.fresh(&format!("{yname}_ji")));
        self.b.stmt(format!("let ({jo}, {ji}) = {yname}.split({yname}.{}, {w})", info.axes[rank - 1].name));
        self.b.stmt(format!("{yname}.vectorize({ji})"));
        // Producers before consumers, as the loop body computes them.
        let order: Vec<TensorId> = self.graph.topo_order().into_iter().filter(|t| group.contains(t)).collect();
        for t in order {
            let g = self.info[&t].clone();
            self.b.stmt(format!("{}.compute_at({yname}, {row})", g.name));
            if g.kind == Kind::Injective {
                let (o, i) = (self.b.fresh(&format!("{}_jo", g.name)), self.b.fresh(&format!("{}_ji", g.name)));
                self.b.stmt(format!("let ({o}, {i}) = {}.split({}.{}, {w})", g.name, g.name, g.axes[rank - 1].name));
                self.b.stmt(format!("{}.vectorize({i})", g.name));
                self.note(t, "rows", format!("computed once per row of `{yname}` (expensive, read twice)"));
            } else {
                self.partial_results(t, Some((&yname, &row)), false, None);
                self.note(t, "rows", format!("a row reduction computed per row of `{yname}`"));
            }
            self.handled.insert(t);
        }
        self.handled.insert(y);
        self.note(y, "rows", why);
        true
    }

    /// Whether every read of `t` by `y` (directly, or through inlined stages) indexes
    /// `t`'s `rank` dims by `y`'s first `rank` axes.
    fn reads_at_prefix(&self, y: TensorId, t: TensorId, rank: usize) -> bool {
        let yaxes: Vec<_> = self.graph.tensor(y).axes().iter().map(|a| a.var.clone()).collect();
        let mut ok = true;
        // Reads as seen from y, through inlined stages (`StageInfo::reads`), and from
        // the other members (which are computed at y's row too, so they index rows by
        // their own axes).
        for a in self.info[&y].reads.iter().filter(|a| a.tensor == t) {
            ok &= a.indices.len() == rank && a.indices.iter().zip(&yaxes).all(|(i, v)| i.as_var() == Some(v));
        }
        ok
    }

    /// How a reduction along a contiguous axis splits into vector partial results: the
    /// axis name and the number of partial results.
    fn row_reduction_plan(&self, t: TensorId) -> Option<(String, i64)> {
        let info = self.info.get(&t)?;
        if info.kind != Kind::Reduction {
            return None;
        }
        let [k] = info.reduce.as_slice() else { return None };
        let contiguous = info.reads.iter().all(|a| StageInfo::step(a, &k.var) != Step::Strided);
        let any = info.reads.iter().any(|a| StageInfo::step(a, &k.var) == Step::Contiguous);
        let lanes = self.lanes(t);
        if !(contiguous && any) || k.extent.is_some_and(|e| e < 2 * lanes) {
            return None;
        }
        // Four vector chains of partial results, fewer for a short axis.
        let p = match k.extent {
            Some(e) if e < 8 * lanes => lanes,
            _ => 4 * lanes,
        };
        Some((k.name.clone(), p))
    }

    /// The reduction `t` as `p` vector partial results per output element (rfactor),
    /// computed at `at` (stage, axis) or, when `None`, inside `t`'s own innermost loop,
    /// with `t`'s leading axes in parallel when `parallel`.
    /// With `block = (rows, cols)`, the last two spatial axes of a root stage are cut into
    /// blocks, the blocks of rows in parallel.
    fn partial_results(&mut self, t: TensorId, at: Option<(&str, &str)>, parallel: bool, block: Option<(i64, i64)>) {
        let Some((k, p)) = self.row_reduction_plan(t) else { return };
        let info = self.info[&t].clone();
        let name = info.name.clone();
        let lanes = self.lanes(t);
        let rank = info.axes.len();
        let pk = self.b.int_knob(&format!("{name}_partials"), [p, lanes, 2 * lanes]);
        let (ko, ki) = (self.b.fresh(&format!("{name}_ko")), self.b.fresh(&format!("{name}_ki")));
        self.b.stmt(format!("let ({ko}, {ki}) = {name}.split({name}.{k}, {pk})"));
        let rf = self.b.fresh(&format!("{name}_rf"));
        // rfactor first: it gives the stage fresh axes, which are then scheduled.
        self.b.stmt(format!("let {rf} = {name}.rfactor({ki})"));
        match at {
            Some((stage, axis)) => self.b.stmt(format!("{rf}.compute_at({stage}, {axis})")),
            None if rank > 0 => {
                let axes: Vec<String> =
                    (0..rank).map(|k| self.b.fresh(&format!("{name}_{}", info.axes[k].name))).collect();
                self.b.stmt(format!("let [{}] = {name}.axes()", axes.join(", ")));
                // The innermost loop of the stage, which the parallel loop may have fused.
                let mut inner = axes[rank - 1].clone();
                if let (true, Some((bi, bj))) = (parallel && rank >= 2, block) {
                    let f = |cx: &mut Self, base: &str| cx.b.fresh(&format!("{name}_{base}"));
                    let (io, ii, jo, jj) = (f(self, "io"), f(self, "ii"), f(self, "jo"), f(self, "jj"));
                    let bik = self.b.int_knob(&format!("{name}_block_rows"), [bi, bi / 2, bi * 2]);
                    let bjk = self.b.int_knob(&format!("{name}_block_cols"), [bj, bj * 2, (bj / 2).max(1)]);
                    self.b.stmt(format!("let ({io}, {ii}) = {name}.split({}, {bik})", axes[rank - 2]));
                    self.b.stmt(format!("let ({jo}, {jj}) = {name}.split({}, {bjk})", axes[rank - 1]));
                    let mut order: Vec<String> = axes[..rank - 2].to_vec();
                    order.extend([io.clone(), jo, ii, jj.clone()]);
                    self.b.stmt(format!("{name}.reorder({})", order.join(", ")));
                    let p = if rank == 2 {
                        io
                    } else {
                        let fz = self.b.fresh(&format!("{name}_par"));
                        let mut outer: Vec<String> = axes[..rank - 2].to_vec();
                        outer.push(io);
                        self.b.stmt(format!("let {fz} = {name}.fuse({})", outer.join(", ")));
                        fz
                    };
                    self.b.stmt(format!("{name}.parallel({p})"));
                    inner = jj;
                } else if parallel {
                    let (p, fused) = self.parallel_of(&name, &axes, &info);
                    self.b.stmt(format!("{name}.parallel({p})"));
                    if fused == rank {
                        inner = p;
                    }
                }
                self.b.stmt(format!("{rf}.compute_at({name}, {inner})"));
            }
            None => {}
        }
        // rf's axes: the factored lanes first, then the stage's spatial axes.
        let lanes_axis = self.b.fresh(&format!("{rf}_lane"));
        let spatial: Vec<String> = (0..rank).map(|k| self.b.fresh(&format!("{rf}_{k}"))).collect();
        let mut pat = vec![lanes_axis.clone()];
        pat.extend(spatial.iter().cloned());
        self.b.stmt(format!("let [{}] = {rf}.axes()", pat.join(", ")));
        let ko2 = self.b.fresh(&format!("{rf}_ko"));
        self.b.stmt(format!("let [{ko2}] = {rf}.reduce_axes()"));
        let mut order = spatial;
        order.push(ko2);
        order.push(lanes_axis.clone());
        self.b.stmt(format!("{rf}.reorder({})", order.join(", ")));
        self.b.stmt(format!("{rf}.vectorize({lanes_axis})"));
    }

    /// The leading axes of `axes` (a stage's current axes, by their bound names) fused
    /// until they offer enough parallel tasks: the fused axis (or the first), and how
    /// many axes it covers.
    fn parallel_of(&mut self, name: &str, axes: &[String], info: &StageInfo) -> (String, usize) {
        let want = TASKS_PER_CORE * self.cores() * 4;
        let mut k = 1;
        let mut tasks = info.axes[0].extent.unwrap_or(i64::MAX);
        while k < axes.len() && tasks < want {
            tasks = tasks.saturating_mul(info.axes[k].extent.unwrap_or(i64::MAX));
            k += 1;
        }
        if k == 1 {
            return (axes[0].clone(), 1);
        }
        let f = self.b.fresh(&format!("{name}_par"));
        self.b.stmt(format!("let {f} = {name}.fuse({})", axes[..k].join(", ")));
        (f, k)
    }

    /// Blocks of the last two spatial axes `(u, v)` of a row reduction whose operands
    /// are each reused along the other's axis (`d[i, j] = sum(x[i, k] * w[j, k])`, a
    /// dense layer with its weights stored `[out, in]`): without them every row of the
    /// result streams all of `w` from memory. `v`'s rows of its operand fill L1 (they are
    /// read again for every row of the block), `u`'s fill half of L2, and the blocks of
    /// rows leave every core a few tasks. `None` where the extents are not known or one
    /// block would cover the axis anyway.
    fn reduction_blocks(&self, info: &StageInfo) -> Option<(i64, i64)> {
        let n = info.axes.len();
        let [k] = info.reduce.as_slice() else { return None };
        if n < 2 {
            return None;
        }
        let (u, v) = (&info.axes[n - 2], &info.axes[n - 1]);
        let (eu, ev, ek) = (u.extent?, v.extent?, k.extent?);
        // A read reused along `v` (it moves with `u` and `k`) and one reused along `u`.
        let along = |a: &super::analysis::AxisInfo, b: &super::analysis::AxisInfo| {
            info.reads.iter().any(|r| {
                StageInfo::step(r, &a.var) == Step::Invariant
                    && StageInfo::step(r, &b.var) != Step::Invariant
                    && StageInfo::step(r, &k.var) == Step::Contiguous
            })
        };
        if !along(v, u) || !along(u, v) {
            return None;
        }
        let row = ek.saturating_mul(self.graph.tensor(info.tensor).dtype.bytes() as i64).max(1);
        let pow2_floor = |x: i64| 1i64 << x.max(1).ilog2();
        let bj = pow2_floor(self.target.facts.l1_bytes as i64 / row).clamp(1, ev);
        let mut bi = pow2_floor(self.target.facts.l2_bytes as i64 / 2 / row).clamp(1, eu);
        let outer: i64 = info.axes[..n - 2].iter().map(|a| a.extent.unwrap_or(64)).product();
        while bi > 8 && outer * ((eu + bi - 1) / bi) < TASKS_PER_CORE * self.cores() {
            bi /= 2;
        }
        // A few rows (a matrix-vector product) reuse nothing, and the blocks must still
        // give every core a task.
        let tasks = outer * ((eu + bi - 1) / bi);
        (bj < ev && eu >= 8 && tasks >= self.cores()).then_some((bi, bj))
    }

    /// A reduction along a contiguous axis that no other rule took (a row sum, a row
    /// max): its rows in parallel, each as vector partial results.
    fn row_reduction(&mut self, t: TensorId) -> bool {
        if self.row_reduction_plan(t).is_none() || !matches!(self.attach(t), Attach::Root) {
            return false;
        }
        let info = self.info[&t].clone();
        if info.axes.is_empty() {
            return false;
        }
        let block = self.reduction_blocks(&info);
        let why = match block {
            Some((bi, bj)) => format!(
                "`{}` reduces along contiguous elements, and each of two operands is reused along the other's \
                 axis: blocks of {bi} x {bj} outputs (the {bj} rows of the one stay in L1 while the block's {bi} \
                 rows of the other go by), the blocks of rows in parallel, each output reduced as vector \
                 partial results",
                info.name
            ),
            None => format!(
                "`{}` reduces along contiguous elements: its rows in parallel, each reduced as vector partial results",
                info.name
            ),
        };
        self.b.comment(why.clone());
        self.partial_results(t, None, true, block);
        self.handled.insert(t);
        self.note(t, "row_reduction", why);
        true
    }

    /// The leading axes among the first `upto` of `info`'s stage (by their root names)
    /// fused until they offer enough parallel tasks.
    fn parallel_prefix(&mut self, info: &StageInfo, upto: usize) -> String {
        let axes: Vec<String> = info.axes[..upto].iter().map(|a| format!("{}.{}", info.name, a.name)).collect();
        self.parallel_of(&info.name.clone(), &axes, info).0
    }

    /// An injective stage that reads another tensor transposed: square tiles of a vector
    /// width, so that both the reads and the writes of a tile stay within a few lines.
    fn transpose(&mut self, y: TensorId) -> bool {
        let Some(info) = self.info.get(&y).cloned() else { return false };
        if info.kind != Kind::Injective || info.axes.len() < 2 || !matches!(self.attach(y), Attach::Root) {
            return false;
        }
        let n = info.axes.len();
        let v = &info.axes[n - 1];
        // A read that advances along `v` by a stride (not a gather, nor a wrap's `%`).
        let Some(strided) = info
            .reads
            .iter()
            .find(|a| StageInfo::step(a, &v.var) == Step::Strided && StageInfo::last_index_along(a, &v.var).is_some())
        else {
            return false;
        };
        let lanes = self.lanes(y);
        // The axis along which that read advances least: the one of its latest index
        // (contiguous where that is the last). An axis shorter than a vector (an image's
        // three channels) makes no tile side.
        let Some((_, u)) = (0..n - 1)
            .filter(|&k| info.axes[k].extent.is_none_or(|e| e >= lanes))
            .filter_map(|k| StageInfo::last_index_along(strided, &info.axes[k].var).map(|(p, _)| (p, k)))
            .max()
        else {
            return false;
        };
        // The strided operand is staged through a local tile when its rows run along the
        // tile's columns (a plain transpose: `y[j, i] = x[i, j]`) and `y` reads it once,
        // unguarded: each row of the tile is then one vector load of `x` and the
        // transposition happens in the tile. Such a tile has 8 rows of `x`, as many as a
        // set of a typical L1 cache holds (8 ways): rows a power of two apart (4096 floats)
        // fall in one set, and a tile of more rows evicted its own lines before their next
        // element was read. Its columns are 32 bytes of `x` (8 floats).
        let xt = strided.tensor;
        let staged = self.graph.tensor(xt).is_placeholder()
            && strided.unless.is_empty()
            && info.reads.iter().filter(|a| a.tensor == xt).count() == 1
            && StageInfo::last_index_along(strided, &info.axes[u].var) == Some((strided.indices.len() - 1, 1));
        // Otherwise tiles of two vectors a side: each tile row read and written is two
        // whole vectors (two cache lines of f32 with AVX-512), and a tile touches half as
        // many pages per element as one of a vector a side.
        let (cols, rows_of_x) = if staged {
            (32 / (self.graph.tensor(xt).dtype.bits as i64 / 8).max(1), 8)
        } else {
            (2 * lanes, 2 * lanes)
        };
        let name = info.name.clone();
        let xname = self.graph.tensor(xt).name.clone();
        let why = if staged {
            format!(
                "`{name}` reads `{xname}` across its rows: tiles of {cols} x {rows_of_x}, the tile rows in parallel, \
                 `{xname}`'s part of a tile copied to a local tile by vector loads of its rows"
            )
        } else {
            format!("`{name}` reads `{xname}` across its rows: tiles of {cols} x {cols}, the tile rows in parallel")
        };
        self.b.comment(why.clone());
        let (tu, tv) = if staged {
            (self.b.int_knob(&format!("{name}_tile"), [cols, 2 * cols, 4 * cols]), rows_of_x.to_string())
        } else {
            let t = self.b.int_knob(&format!("{name}_tile"), [cols, lanes, 4 * lanes]);
            (t.clone(), t)
        };
        let names: Vec<String> =
            ["uo", "vo", "ui", "vi"].iter().map(|s| self.b.fresh(&format!("{name}_{s}"))).collect();
        let mut outer: Vec<String> = (0..u).map(|k| format!("{name}.{}", info.axes[k].name)).collect();
        // The tile rows join the fused parallel loop only when the tile divides their axis
        // (see `emit_tile`).
        let exact = info.axes[u].extent.is_some_and(|e| e % cols == 0);
        // Where the leading axes are too few tasks for the cores (an image's channels)
        // and the tile rows cannot join them, they are fused with the tile rows' axis
        // first: the tiles then run over that one axis, a tail where it is not whole.
        let few = (0..u)
            .map(|k| info.axes[k].extent)
            .product::<Option<i64>>()
            .is_some_and(|t| t < self.cores() * TASKS_PER_CORE);
        let mut rows = format!("{name}.{}", info.axes[u].name);
        if !outer.is_empty() && !exact && few {
            outer.push(rows);
            rows = self.b.fresh(&format!("{name}_rows"));
            self.b.stmt(format!("let {rows} = {name}.fuse({})", outer.join(", ")));
            outer.clear();
        }
        self.b.stmt(format!(
            "let ({}, {}, {}, {}) = {name}.tile({rows}, {name}.{}, {tu}, {tv})",
            names[0], names[1], names[2], names[3], v.name
        ));
        let mut par = outer;
        if par.is_empty() || exact {
            par.push(names[0].clone());
        }
        let p = if par.len() == 1 {
            par[0].clone()
        } else {
            let f = self.b.fresh(&format!("{name}_par"));
            self.b.stmt(format!("let {f} = {name}.fuse({})", par.join(", ")));
            f
        };
        // The tile's rows stay a loop: unrolled, each of them would cost the macro a
        // bounds proof per access.
        self.b.stmt(format!("{name}.parallel({p})"));
        if staged {
            let c = self.b.fresh(&format!("{xname}_l"));
            self.b.stmt(format!("let {c} = {xname}.cache_read(local, [{name}])"));
            self.b.stmt(format!("{c}.compute_at({name}, {})", names[1]));
            let axes: Vec<String> = (0..strided.indices.len()).map(|k| self.b.fresh(&format!("{c}_{k}"))).collect();
            self.b.stmt(format!("let [{}] = {c}.axes()", axes.join(", ")));
            self.b.stmt(format!("{c}.vectorize({})", axes[axes.len() - 1]));
        }
        self.handled.insert(y);
        self.note(y, "transpose", why);
        true
    }

    /// A window reduction (a pooling) that no other rule took: a reduction at the root
    /// over a few constant taps whose reads advance along its last axis by one element,
    /// or by a constant stride of at most 4 (the windows of a stride-2 pooling start two
    /// elements apart), their other indices independent of it. Its leading axes fused in
    /// parallel (a row of outputs an iteration), the last in vectors, the taps unrolled around the vector in a local
    /// accumulator: a tap is then one vector operation on one (strided) vector load.
    /// Without the rule, each output reduced its taps one by one, with the window's
    /// border test in every tap.
    fn window(&mut self, t: TensorId) -> bool {
        let Some(info) = self.info.get(&t).cloned() else { return false };
        if info.kind != Kind::Reduction || info.axes.is_empty() || !matches!(self.attach(t), Attach::Root) {
            return false;
        }
        if info.reduce.is_empty() || !info.reduce_size().is_some_and(|n| n <= 16) {
            return false;
        }
        let n = info.axes.len();
        let v = info.axes[n - 1].clone();
        let lanes = self.lanes(t);
        if v.extent.is_some_and(|e| e < lanes) {
            return false;
        }
        let steps_by_a_few = |a: &Access| match StageInfo::step(a, &v.var) {
            Step::Invariant | Step::Contiguous => true,
            Step::Strided => a.indices.split_last().is_some_and(|(last, front)| {
                !front.iter().any(|i| crate::tir::visit::uses_var(i, &v.var))
                    && super::analysis::stride(last, &v.var).is_some_and(|s| (2..=4).contains(&s))
            }),
        };
        if !info.reads.iter().all(steps_by_a_few) {
            return false;
        }
        let name = info.name.clone();
        let why = format!(
            "`{name}` reduces a window of {} taps: its leading axes in parallel, `{}` in vectors of {lanes}, the \
             taps unrolled around each vector in a local accumulator",
            info.reduce_size().unwrap_or(0),
            v.name
        );
        self.b.comment(why.clone());
        let l = self.b.fresh(&format!("{name}_l"));
        self.b.stmt(format!("let {l} = {name}.cache_write(local)"));
        let (o, i) = (self.b.fresh(&format!("{name}_vo")), self.b.fresh(&format!("{name}_vi")));
        self.b.stmt(format!("let ({o}, {i}) = {name}.split({name}.{}, {lanes})", v.name));
        // Every leading axis in the parallel loop: an iteration is one row of outputs, a
        // chunk the parallel-chunk prover bounds by the row alone.
        let p = match n {
            1 => o.clone(),
            2 => format!("{name}.{}", info.axes[0].name),
            _ => {
                let f = self.b.fresh(&format!("{name}_par"));
                let lead: Vec<String> = info.axes[..n - 1].iter().map(|a| format!("{name}.{}", a.name)).collect();
                self.b.stmt(format!("let {f} = {name}.fuse({})", lead.join(", ")));
                f
            }
        };
        self.b.stmt(format!("{name}.parallel({p})"));
        self.b.stmt(format!("{name}.vectorize({i})"));
        self.b.stmt(format!("{l}.compute_at({name}, {o})"));
        let axes: Vec<String> = info.axes.iter().map(|a| self.b.fresh(&format!("{l}_{}", a.name))).collect();
        self.b.stmt(format!("let [{}] = {l}.axes()", axes.join(", ")));
        let taps: Vec<String> = info.reduce.iter().map(|r| format!("{l}.{}", r.name)).collect();
        self.b.stmt(format!("{l}.reorder({}, {})", taps.join(", "), axes[n - 1]));
        for r in &taps {
            self.b.stmt(format!("{l}.unroll({r})"));
        }
        self.b.stmt(format!("{l}.vectorize({})", axes[n - 1]));
        self.handled.insert(t);
        self.note(t, "window", why);
        true
    }

    /// An injective stage computed at the root (an output, or an expensive stage read
    /// several times): its leading axes in parallel, the last one in vectors.
    fn elementwise(&mut self, t: TensorId) {
        let Some(info) = self.info.get(&t).cloned() else { return };
        if info.kind != Kind::Injective || info.axes.is_empty() || !matches!(self.attach(t), Attach::Root) {
            return;
        }
        let n = info.axes.len();
        let v = &info.axes[n - 1];
        let lanes = self.lanes(t);
        let name = info.name.clone();
        let contiguous = info.vectorizable_along(&v.var);
        // A short row with a border (a padding of a few dozen columns): vectors from its
        // first column put the border inside two or three of its few vectors, where each
        // lane is selected; serial, the loop is cut at the border's columns exactly
        // (`partition_loops`), and its interior is a plain loop LLVM vectorizes (a cheap
        // one: a call of `exp` would stay a call per element).
        let fits = contiguous && v.extent.is_none_or(|e| e >= lanes);
        let short_border =
            fits && !info.expensive && v.extent.is_some_and(|e| e < 8 * lanes) && info.has_border_on(&v.var);
        let vector = fits && !short_border;
        let why = if vector {
            format!("`{name}`: the leading axes in parallel, `{}` in vectors of {lanes}", v.name)
        } else if short_border {
            format!(
                "`{name}`: the leading axes in parallel (`{}`, a row of {} with a border, is cut at the border, \
                 its interior a plain loop)",
                v.name,
                v.extent.unwrap_or(0)
            )
        } else if contiguous {
            format!("`{name}`: the leading axes in parallel (`{}` is shorter than a vector)", v.name)
        } else {
            format!("`{name}`: the leading axes in parallel (`{}` is not read contiguously)", v.name)
        };
        self.b.comment(why.clone());
        if n == 1 {
            if vector {
                let (o, i) = (self.b.fresh(&format!("{name}_o")), self.b.fresh(&format!("{name}_v")));
                let w = self.b.int_knob(&format!("{name}_w"), [lanes, 2 * lanes, 4 * lanes]);
                self.b.stmt(format!("let ({o}, {i}) = {name}.split({name}.{}, {w})", v.name));
                self.b.stmt(format!("{name}.parallel({o})"));
                self.b.stmt(format!("{name}.vectorize({i})"));
            } else {
                self.b.stmt(format!("{name}.parallel({name}.{})", v.name));
            }
        } else {
            let p = self.parallel_prefix(&info, n - 1);
            self.b.stmt(format!("{name}.parallel({p})"));
            if vector {
                let (o, i) = (self.b.fresh(&format!("{name}_o")), self.b.fresh(&format!("{name}_v")));
                let w = self.b.int_knob(&format!("{name}_w"), [lanes, 2 * lanes]);
                self.b.stmt(format!("let ({o}, {i}) = {name}.split({name}.{}, {w})", v.name));
                self.b.stmt(format!("{name}.vectorize({i})"));
            }
        }
        self.handled.insert(t);
        self.note(t, "elementwise", why);
    }

    /// A reduction at the root that gathers through indices it reads (an area resize's
    /// taps) and that no rule shaped: its leading axes fused until every core has tasks,
    /// each output reduced where it is stored. Alone, only the first axis would be
    /// parallel, and an image's three channels leave one of two cores idle a third of
    /// the time.
    fn parallel_reduction(&mut self, t: TensorId) {
        let Some(info) = self.info.get(&t).cloned() else { return };
        let gathers = info.reads.iter().any(|a| a.indices.iter().any(crate::arith::reads_memory));
        if !matches!(info.kind, Kind::Reduction | Kind::TupleReduction)
            || !gathers
            || info.axes.is_empty()
            || !self.free(t)
            || !matches!(self.attach(t), Attach::Root)
        {
            return;
        }
        let name = info.name.clone();
        let why = format!("`{name}`: the leading axes in parallel, each output reduced in place");
        self.b.comment(why.clone());
        let p = self.parallel_prefix(&info, info.axes.len());
        self.b.stmt(format!("{name}.parallel({p})"));
        self.handled.insert(t);
        self.note(t, "parallel_reduction", why);
    }

    /// A stage a written block placed without shaping its loops: its reduction still
    /// becomes vector partial results, its innermost axis vectors; nothing is made
    /// parallel inside another stage's loops.
    fn placed_stage(&mut self, t: TensorId) {
        let Some(info) = self.info.get(&t).cloned() else { return };
        let at_root = matches!(self.attach(t), Attach::Root);
        // Producers placed at this stage's axes: none of them may be split away.
        let attached_here = self
            .base
            .stages
            .iter()
            .any(|s| matches!(s.attach, Attach::At { stage, .. } if self.base.stage(stage).tensor == t));
        match info.kind {
            Kind::Reduction if self.row_reduction_plan(t).is_some() && !attached_here => {
                let why = format!("`{}` is placed by the schedule; its reduction as vector partial results", info.name);
                self.b.comment(why.clone());
                self.partial_results(t, None, at_root, None);
                self.note(t, "placed", why);
            }
            Kind::Injective if !info.axes.is_empty() && self.attach(t) != Attach::Inline => {
                let n = info.axes.len();
                let v = &info.axes[n - 1];
                let lanes = self.lanes(t);
                // The innermost axis may be split only when no producer is placed at it.
                let at_v = self.base.stages.iter().any(|s| {
                    matches!(s.attach, Attach::At { stage, axis } if self.base.stage(stage).tensor == t
                        && self.base.axis(axis).var == v.var)
                });
                let why = format!("`{}` is placed by the schedule; its innermost axis in vectors", info.name);
                self.b.comment(why.clone());
                if at_root && n > 1 {
                    self.b.stmt(format!("{}.parallel({}.{})", info.name, info.name, info.axes[0].name));
                }
                if !at_v && info.vectorizable_along(&v.var) && v.extent.is_none_or(|e| e >= lanes) {
                    let (o, i) = (self.b.fresh(&format!("{}_o", info.name)), self.b.fresh(&format!("{}_v", info.name)));
                    self.b.stmt(format!(
                        "let ({o}, {i}) = {}.split({}.{}, {})",
                        info.name,
                        info.name,
                        v.name,
                        2 * lanes
                    ));
                    self.b.stmt(format!("{}.vectorize({i})", info.name));
                }
                self.note(t, "placed", why);
            }
            _ => return,
        }
        self.handled.insert(t);
    }
}

/// Whether `s`'s own body reads `a.tensor` (not only through an inlined stage).
fn reads_directly(cx: &Cx<'_>, s: TensorId, a: &Access) -> bool {
    cx.graph.inputs_of(s).contains(&a.tensor)
}

/// The largest power of two that divides `extent` and is at most `max`; where that is
/// under `max / 2`, the largest divisor at most `max`; where that is under `max / 2` too
/// (a prime such as 127), `max` itself, and the tile has a tail: a tile of one or two
/// rows could not keep the FMA units busy. `max` for an unknown extent.
fn pick_divisor(extent: Option<i64>, max: i64) -> i64 {
    let Some(e) = extent else { return max };
    let mut d = 1;
    while d * 2 <= max && e % (d * 2) == 0 {
        d *= 2;
    }
    if d * 2 <= max && d < max / 2 {
        let best = (1..=max.min(e)).rev().find(|x| e % x == 0).unwrap_or(1);
        if best < max / 2 && e > max {
            max
        } else {
            best
        }
    } else {
        d.min(e)
    }
}

/// Row counts of a register tile to offer the tuner: the derived one first.
fn rows_knob(mr: i64, extent: Option<i64>) -> Vec<i64> {
    let mut v = vec![mr];
    for c in [mr / 2, mr * 2, 4, 8] {
        if c >= 1 && extent.is_none_or(|e| c <= e) {
            v.push(c);
        }
    }
    v
}

fn reduce_names(info: &StageInfo) -> String {
    let names: Vec<String> = info.reduce.iter().map(|r| format!("`{}`", r.name)).collect();
    names.join(", ")
}
