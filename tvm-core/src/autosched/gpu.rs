//! The GPU rules (CUDA, OpenCL): a block of threads per tile of a reduction with reuse,
//! each thread a register tile, the operands staged through shared memory per slice of
//! the reduction with vector loads (`SSSRRSRS`); a block per row for row reductions and
//! the row-wise stages that read them, reduced across the block's threads; vector loads
//! and stores for element-wise stages. Sizes come from the target: the threads a block
//! may have, the shared memory it may use, and the number of SMs a launch should fill.

use super::analysis::{Kind, StageInfo, Step};
use super::Cx;
use crate::schedule::Attach;
use crate::te::TensorId;

/// The threads of a block the rules aim for (a multiple of the warp, under every
/// target's limit here), and the tile's slice of the reduction staged at once.
const THREADS: i64 = 256;
const K_SLICE: i64 = 8;

pub(super) fn derive(cx: &mut Cx<'_>) {
    for t in cx.consumers_first() {
        if cx.free(t) {
            let _ = tile_with_reuse(cx, t) || rows(cx, t) || row_reduction(cx, t);
        }
    }
    for t in cx.consumers_first() {
        if cx.free(t) {
            elementwise(cx, t);
        }
    }
}

fn threads(cx: &Cx<'_>) -> i64 {
    THREADS.min(cx.target.max_threads_per_block as i64)
}

/// A reduction with reuse: each block computes a `bm x bn` tile of the stage (or of its
/// element-wise consumer), `(bm/tm) x (bn/tn)` threads each a `tm x tn` register tile;
/// for every slice of `K_SLICE` of the outer reduction axis, the operands the tile reads
/// are copied to shared memory by all the block's threads, 4 consecutive elements each.
fn tile_with_reuse(cx: &mut Cx<'_>, s: TensorId) -> bool {
    let Some(info) = cx.info.get(&s).cloned() else { return false };
    if info.kind != Kind::Reduction || info.axes.len() < 2 || !matches!(cx.attach(s), Attach::Root) {
        return false;
    }
    let n = info.axes.len();
    let v = n - 1;
    let vvar = &info.axes[v].var;
    if !info.has_reuse() || !info.vectorizable_along(vvar) {
        return false;
    }
    // The row axis: one along which a read that varies along `v` is reused.
    let Some(u) = (0..v)
        .filter(|&k| {
            info.reads.iter().any(|a| {
                StageInfo::step(a, vvar) != Step::Invariant && StageInfo::step(a, &info.axes[k].var) == Step::Invariant
            })
        })
        .max_by_key(|&k| (info.axes[k].extent.unwrap_or(i64::MAX), k))
    else {
        return false;
    };
    let (eu, ev) = (info.axes[u].extent.unwrap_or(1 << 20), info.axes[v].extent.unwrap_or(1 << 20));
    // Big tiles when the grid still has a few blocks per SM with them.
    let sms = cx.target.facts.sm_count.max(1) as i64;
    let big = (eu / 128) * (ev / 128) >= 2 * sms;
    let (tm, tn) = if big { (8, 8) } else { (4, 4) };
    let side = (threads(cx) as f64).sqrt() as i64;
    // A side of the block's tile no longer than its axis needs (rounded up to 8, which
    // every register tile here divides), and along `v` (the threads' x, consecutive in a
    // warp) no fewer than 8 threads with the derived register tile (the knobs' larger
    // tile may halve that): PoCL, which runs these schedules on the CPU, compiles a
    // kernel whose work-groups are 2 items wide for minutes. A convolution of
    // 48 filters over rows of 9 outputs is a block of 48 x 32, 96 threads, not 64 x 64
    // with 220 of 256 threads idle behind their guards.
    let clamp = |full: i64, e: i64, least: i64| full.min(((e + 7) / 8 * 8).max(least));
    let (mut bm, mut bn) = (clamp(side * tm, eu, 8), clamp(side * tn, ev, 8 * tn));
    let outer = info.reduce.first().expect("a reduction");
    if outer.extent.is_some_and(|e| e < K_SLICE) || info.reduce_size().is_some_and(|r| r < 32) {
        return false;
    }
    // Operands staged in shared memory: reads of placeholders or computed stages that
    // this stage reads directly, reused along u or v.
    // Each with whether its copy is in vectors of 4: its tile rows are consecutive
    // elements along `v` or along the staged slice of the reduction, 4 dividing both.
    let mut staged: Vec<(super::analysis::Access, bool)> = Vec::new();
    for a in info.reads.iter().filter(|a| cx.graph.inputs_of(s).contains(&a.tensor)) {
        let reused =
            StageInfo::step(a, vvar) == Step::Invariant || StageInfo::step(a, &info.axes[u].var) == Step::Invariant;
        if !reused || staged.iter().any(|(s, _)| s.tensor == a.tensor) {
            continue;
        }
        // The last index moves with one of them alone, so the region's rows are whole
        // tiles (no halo of a window).
        let last = a.indices.last();
        let only = |var: &crate::tir::Var| {
            last.is_some_and(|l| {
                crate::tir::visit::vars_of(l)
                    .iter()
                    .all(|x| x == var || !info.axes.iter().chain(&info.reduce).any(|ax| &ax.var == x))
            })
        };
        let along_v = StageInfo::step(a, vvar) == Step::Contiguous && only(vvar);
        let k0 = &info.reduce[0].var;
        let along_k = StageInfo::step(a, k0) == Step::Contiguous && only(k0);
        staged.push((a.clone(), along_v || along_k));
    }
    // The bytes the staged slices take for a block of `bm x bn`: each operand's region
    // over the block's rows and columns, a slice of the outer reduction axis and the
    // whole of the others (a window's taps: a convolution's input region has its halo).
    // Too many for the target: fewer rows, down to 8, then fewer columns while the block
    // stays over 4 register tiles wide.
    let limit = cx.target.max_shared_memory_per_block as i64;
    let bytes = |bm: i64, bn: i64| -> Option<i64> {
        let extent = |var: &crate::tir::Var| {
            if *var == info.axes[u].var {
                bm
            } else if *var == info.axes[v].var {
                bn
            } else if *var == outer.var {
                K_SLICE
            } else {
                info.reduce.iter().find(|r| r.var == *var).map_or(1, |r| r.extent.unwrap_or(i64::MAX / 4))
            }
        };
        staged.iter().try_fold(0i64, |sum, (a, _)| {
            let tensor = cx.graph.tensor(a.tensor);
            let region = super::analysis::region(a, &tensor.shape, &extent)?;
            Some(sum + region * tensor.dtype.bytes() as i64)
        })
    };
    loop {
        match bytes(bm, bn) {
            Some(b) if b <= limit => break,
            None => return false,
            Some(_) if bm > 8 && (bm / 2) % tm == 0 => bm /= 2,
            Some(_) if bn > 4 * tn && (bn / 2) % tn == 0 => bn /= 2,
            Some(_) => return false,
        }
    }
    let fused = if info.is_output { None } else { cx.elementwise_consumer(s) };
    let owner_t = fused.unwrap_or(s);
    let owner = cx.graph.tensor(owner_t).name.clone();
    let sname = info.name.clone();
    let oaxes: Vec<String> =
        cx.graph.tensor(owner_t).axes().iter().map(|a| format!("{owner}.{}", a.var.name())).collect();
    let why = format!(
        "`{sname}` reduces with reuse: blocks of {bm} x {bn} outputs, {} threads of {tm} x {tn} in registers, \
         {} staged in shared memory {K_SLICE} `{}` at a time",
        (bm / tm) * (bn / tn),
        staged.iter().map(|(a, _)| format!("`{}`", cx.graph.tensor(a.tensor).name)).collect::<Vec<_>>().join(" and "),
        outer.name
    );
    cx.b.comment(why.clone());
    let acc = if fused.is_some() {
        sname.clone()
    } else {
        let l = cx.b.fresh(&format!("{sname}_l"));
        cx.b.stmt(format!("let {l} = {sname}.cache_write(local)"));
        l
    };
    let f = |cx: &mut Cx<'_>, base: &str| cx.b.fresh(&format!("{owner}_{base}"));
    let (bi, ii, bj, jj) = (f(cx, "bi"), f(cx, "ii"), f(cx, "bj"), f(cx, "jj"));
    // The alternatives of the per-thread tile: every combination keeps the block within
    // the target's thread limit (a smaller tile is more threads).
    let max = cx.target.max_threads_per_block as i64;
    let alt = |t: i64| if t == 8 { 4 } else { 8 };
    let fits = |m: i64, n: i64| (bm / m) * (bn / n) <= max;
    let mut ms = vec![tm];
    if fits(alt(tm), tn) {
        ms.push(alt(tm));
    }
    let mut ns = vec![tn];
    if ms.iter().all(|&m| fits(m, alt(tn))) {
        ns.push(alt(tn));
    }
    // The knobs are the block's thread counts (the register tile is the block's side
    // over them): the shared-memory copies spread over the same threads, so every
    // alternative launches exactly the threads that both the copies and the compute use.
    let thyk = cx.b.int_knob(&format!("{owner}_threads_y"), ms.iter().map(|m| bm / m));
    let thxk = cx.b.int_knob(&format!("{owner}_threads_x"), ns.iter().map(|n| bn / n));
    cx.b.stmt(format!("let ({bi}, {ii}) = {owner}.split({}, {bm})", oaxes[u]));
    cx.b.stmt(format!("let ({bj}, {jj}) = {owner}.split({}, {bn})", oaxes[v]));
    let (ty, yi, tx, xi) = (f(cx, "ty"), f(cx, "yi"), f(cx, "tx"), f(cx, "xi"));
    cx.b.stmt(format!("let ({ty}, {yi}) = {owner}.split_nparts({ii}, {thyk})"));
    cx.b.stmt(format!("let ({tx}, {xi}) = {owner}.split_nparts({jj}, {thxk})"));
    let others: Vec<String> = (0..n).filter(|&k| k != u && k != v).map(|k| oaxes[k].clone()).collect();
    let mut order = others.clone();
    order.extend([bi.clone(), bj.clone(), ty.clone(), tx.clone(), yi.clone(), xi.clone()]);
    cx.b.stmt(format!("{owner}.reorder({})", order.join(", ")));
    if !others.is_empty() {
        let z = if others.len() == 1 {
            others[0].clone()
        } else {
            let z = f(cx, "bz");
            cx.b.stmt(format!("let {z} = {owner}.fuse({})", others.join(", ")));
            z
        };
        cx.b.stmt(format!("{owner}.bind({z}, block.z)"));
    }
    cx.b.stmt(format!("{owner}.bind({bi}, block.y)"));
    cx.b.stmt(format!("{owner}.bind({bj}, block.x)"));
    cx.b.stmt(format!("{owner}.bind({ty}, thread.y)"));
    cx.b.stmt(format!("{owner}.bind({tx}, thread.x)"));
    if ev % 4 == 0 && tn % 4 == 0 {
        let (xo, xv) = (f(cx, "xo"), f(cx, "xv"));
        cx.b.stmt(format!("let ({xo}, {xv}) = {owner}.split({xi}, 4)"));
        cx.b.stmt(format!("{owner}.vectorize({xv})"));
    }
    cx.b.stmt(format!("{acc}.compute_at({owner}, {tx})"));
    let names: Vec<String> = (0..n).map(|k| cx.b.fresh(&format!("{acc}_{}", info.axes[k].name))).collect();
    cx.b.stmt(format!("let [{}] = {acc}.axes()", names.join(", ")));
    let (ko, ki) = (cx.b.fresh(&format!("{acc}_ko")), cx.b.fresh(&format!("{acc}_ki")));
    cx.b.stmt(format!("let ({ko}, {ki}) = {acc}.split({acc}.{}, {K_SLICE})", outer.name));
    let mut aorder: Vec<String> = (0..n).filter(|&k| k != u && k != v).map(|k| names[k].clone()).collect();
    aorder.extend([ko.clone(), ki.clone()]);
    aorder.extend(info.reduce[1..].iter().map(|r| format!("{acc}.{}", r.name)));
    aorder.extend([names[u].clone(), names[v].clone()]);
    cx.b.stmt(format!("{acc}.reorder({})", aorder.join(", ")));
    cx.b.stmt(format!("{acc}.unroll({ki})"));
    cx.b.stmt(format!("{acc}.unroll({})", names[u]));
    cx.b.stmt(format!("{acc}.unroll({})", names[v]));
    for (a, vector) in staged {
        let t = a.tensor;
        let tname = cx.graph.tensor(t).name.clone();
        let sh = cx.b.fresh(&format!("{tname}_s"));
        cx.b.comment(format!("`{tname}`'s slice of the tile, copied by all the threads"));
        cx.b.stmt(format!("let {sh} = {tname}.cache_read(shared, [{acc}])"));
        cx.b.stmt(format!("{sh}.compute_at({acc}, {ko})"));
        let rank = cx.graph.tensor(t).shape.len();
        let ax: Vec<String> = (0..rank).map(|k| cx.b.fresh(&format!("{sh}_{k}"))).collect();
        cx.b.stmt(format!("let [{}] = {sh}.axes()", ax.join(", ")));
        let all = if rank == 1 {
            ax[0].clone()
        } else {
            let fa = cx.b.fresh(&format!("{sh}_f"));
            cx.b.stmt(format!("let {fa} = {sh}.fuse({})", ax.join(", ")));
            fa
        };
        let all = if vector {
            let (e, v4) = (cx.b.fresh(&format!("{sh}_e")), cx.b.fresh(&format!("{sh}_v")));
            cx.b.stmt(format!("let ({e}, {v4}) = {sh}.split({all}, 4)"));
            cx.b.stmt(format!("{sh}.vectorize({v4})"));
            e
        } else {
            all
        };
        // Consecutive elements to consecutive threads along x, then rows of them along y.
        let (o, rest) = (cx.b.fresh(&format!("{sh}_o")), cx.b.fresh(&format!("{sh}_r")));
        let (sy, sx) = (cx.b.fresh(&format!("{sh}_ty")), cx.b.fresh(&format!("{sh}_tx")));
        cx.b.stmt(format!("let ({rest}, {sx}) = {sh}.split({all}, {thxk})"));
        cx.b.stmt(format!("let ({o}, {sy}) = {sh}.split({rest}, {thyk})"));
        cx.b.stmt(format!("{sh}.bind({sy}, thread.y)"));
        cx.b.stmt(format!("{sh}.bind({sx}, thread.x)"));
    }
    cx.handled.insert(s);
    cx.handled.insert(owner_t);
    cx.note(s, "tile_with_reuse", why);
    true
}

/// A row-wise stage and the row reductions it reads: a block per row, the row's
/// elements spread over the block's threads, each reduction combined across them.
fn rows(cx: &mut Cx<'_>, y: TensorId) -> bool {
    let Some(info) = cx.info.get(&y).cloned() else { return false };
    if info.kind != Kind::Injective || info.axes.len() < 2 || !matches!(cx.attach(y), Attach::Root) {
        return false;
    }
    let rank = info.axes.len();
    let group: Vec<TensorId> = cx
        .graph
        .topo_order()
        .into_iter()
        .filter(|&t| t != y && cx.graph.producer(t) == t && !cx.inlined.contains(&t) && cx.base.depends_on(y, t))
        .collect();
    if group.is_empty() {
        return false;
    }
    for &t in &group {
        let Some(g) = cx.info.get(&t) else { return false };
        let row_len = g.reduce.first().and_then(|k| k.extent);
        if !cx.free(t) || g.is_output || g.kind != Kind::Reduction || g.axes.len() != rank - 1 || g.reduce.len() != 1 {
            return false;
        }
        let inside = |c: &TensorId| *c == y || group.contains(c) || cx.inlined.contains(c);
        if row_len.is_some_and(|e| e < 64) || !g.consumers.iter().all(inside) {
            return false;
        }
    }
    let yname = info.name.clone();
    let tx = cx.b.int_knob(&format!("{yname}_tx"), [threads(cx) / 2, threads(cx), threads(cx) / 4]);
    let why = format!(
        "`{yname}` reads the row reductions {}: a block per row, its elements spread over the block's threads, each \
         reduction combined across them",
        group.iter().map(|t| format!("`{}`", cx.graph.tensor(*t).name)).collect::<Vec<_>>().join(", ")
    );
    cx.b.comment(why.clone());
    let row = if rank == 2 {
        format!("{yname}.{}", info.axes[0].name)
    } else {
        let r = cx.b.fresh(&format!("{yname}_row"));
        let axes: Vec<String> = info.axes[..rank - 1].iter().map(|a| format!("{yname}.{}", a.name)).collect();
        cx.b.stmt(format!("let {r} = {yname}.fuse({})", axes.join(", ")));
        r
    };
    cx.b.stmt(format!("{yname}.bind({row}, block.x)"));
    let (jo, ji) = (cx.b.fresh(&format!("{yname}_jo")), cx.b.fresh(&format!("{yname}_ji")));
    cx.b.stmt(format!("let ({jo}, {ji}) = {yname}.split({yname}.{}, {tx})", info.axes[rank - 1].name));
    cx.b.stmt(format!("{yname}.bind({ji}, thread.x)"));
    for t in group {
        let g = cx.info[&t].clone();
        let (o, i) = (cx.b.fresh(&format!("{}_ko", g.name)), cx.b.fresh(&format!("{}_ki", g.name)));
        cx.b.stmt(format!("{}.compute_at({yname}, {row})", g.name));
        cx.b.stmt(format!("let ({o}, {i}) = {}.split({}.{}, {tx})", g.name, g.name, g.reduce[0].name));
        cx.b.stmt(format!("{}.bind({i}, thread.x)", g.name));
        cx.handled.insert(t);
        cx.note(t, "rows", format!("a row reduction across the threads of `{yname}`'s block"));
    }
    cx.handled.insert(y);
    cx.note(y, "rows", why);
    true
}

/// A reduction along a contiguous axis with long rows: a block per output element, the
/// row spread over its threads and combined across them.
fn row_reduction(cx: &mut Cx<'_>, t: TensorId) -> bool {
    let Some(info) = cx.info.get(&t).cloned() else { return false };
    if info.kind != Kind::Reduction || info.axes.is_empty() || !matches!(cx.attach(t), Attach::Root) {
        return false;
    }
    let [k] = info.reduce.as_slice() else { return false };
    let contiguous = info.reads.iter().all(|a| StageInfo::step(a, &k.var) != Step::Strided)
        && info.reads.iter().any(|a| StageInfo::step(a, &k.var) == Step::Contiguous);
    if !contiguous || k.extent.is_some_and(|e| e < 128) {
        return false;
    }
    let name = info.name.clone();
    let why = format!("`{name}` reduces rows of contiguous elements: a block per row, combined across its threads");
    cx.b.comment(why.clone());
    let row = if info.axes.len() == 1 {
        format!("{name}.{}", info.axes[0].name)
    } else {
        let r = cx.b.fresh(&format!("{name}_row"));
        let axes: Vec<String> = info.axes.iter().map(|a| format!("{name}.{}", a.name)).collect();
        cx.b.stmt(format!("let {r} = {name}.fuse({})", axes.join(", ")));
        r
    };
    let tx = cx.b.int_knob(&format!("{name}_tx"), [threads(cx) / 2, threads(cx), threads(cx) / 4]);
    let (o, i) = (cx.b.fresh(&format!("{name}_ko")), cx.b.fresh(&format!("{name}_ki")));
    cx.b.stmt(format!("{name}.bind({row}, block.x)"));
    cx.b.stmt(format!("let ({o}, {i}) = {name}.split({name}.{}, {tx})", k.name));
    cx.b.stmt(format!("{name}.bind({i}, thread.x)"));
    cx.handled.insert(t);
    cx.note(t, "row_reduction", why);
    true
}

/// An element-wise stage whose last extent 4 divides and whose reads are contiguous or
/// invariant along it: 4 consecutive elements a thread (128-bit loads and stores), the
/// rest fused over blocks of threads.
fn elementwise(cx: &mut Cx<'_>, t: TensorId) {
    let Some(info) = cx.info.get(&t).cloned() else { return };
    if info.kind != Kind::Injective || info.axes.is_empty() || !matches!(cx.attach(t), Attach::Root) {
        return;
    }
    let n = info.axes.len();
    let last = &info.axes[n - 1];
    let dtype = cx.graph.tensor(t).dtype;
    if !last.extent.is_some_and(|e| e % 4 == 0 && e >= 4) || !info.vectorizable_along(&last.var) || dtype.bits > 32 {
        return;
    }
    let name = info.name.clone();
    let why = format!("`{name}`: 4 consecutive elements a thread (vector loads and stores), the rest over blocks");
    cx.b.comment(why.clone());
    let (o, v) = (cx.b.fresh(&format!("{name}_o")), cx.b.fresh(&format!("{name}_v")));
    cx.b.stmt(format!("let ({o}, {v}) = {name}.split({name}.{}, 4)", last.name));
    let mut lead: Vec<String> = info.axes[..n - 1].iter().map(|a| format!("{name}.{}", a.name)).collect();
    lead.push(o);
    let f = if lead.len() == 1 {
        lead[0].clone()
    } else {
        let f = cx.b.fresh(&format!("{name}_f"));
        cx.b.stmt(format!("let {f} = {name}.fuse({})", lead.join(", ")));
        f
    };
    let (b, th) = (cx.b.fresh(&format!("{name}_b")), cx.b.fresh(&format!("{name}_t")));
    let max = cx.target.max_threads_per_block as i64;
    let tx = cx.b.int_knob(
        &format!("{name}_tx"),
        [threads(cx), threads(cx) / 2, threads(cx) * 2].into_iter().filter(|&x| x <= max),
    );
    cx.b.stmt(format!("let ({b}, {th}) = {name}.split({f}, {tx})"));
    cx.b.stmt(format!("{name}.bind({b}, block.x)"));
    cx.b.stmt(format!("{name}.bind({th}, thread.x)"));
    cx.b.stmt(format!("{name}.vectorize({v})"));
    cx.handled.insert(t);
    cx.note(t, "elementwise", why);
}
