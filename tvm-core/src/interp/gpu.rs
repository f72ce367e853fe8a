//! GPU launches: grid and block evaluated on the host, the blocks run one by one. Within
//! a block, a statement without a barrier (or shared allocation) runs to completion for
//! thread 0, then thread 1, and so on; a statement with one runs in lock step, every
//! thread agreeing on the control flow around the barrier. Shared memory is allocated
//! once per block, local memory per thread; a warp reduction combines each group's
//! values in lane order.

use super::compile::{CExpr, CKernel, CStmt, CS};
use super::error::{err, ErrorKind, InterpError, R};
use super::exec::{internal, Ctx, Machine};
use super::memory::{Binding, Class};
use super::race::{Agent, FrameKind};
use super::value::Value;
use crate::tir::{Scope, ThreadTag};

/// The most threads one launch may run in total.
const MAX_LAUNCH_THREADS: i128 = 1 << 24;

/// The index of `t` in a context's `idx` (and the launch's extents): blocks x, y, z, then
/// threads x, y, z.
pub(super) fn tag_index(t: ThreadTag) -> usize {
    if t.is_block() {
        t.dim()
    } else {
        3 + t.dim()
    }
}

impl<'p> Machine<'p> {
    pub(super) fn check_binding_extent(&self, tag: ThreadTag, var: usize, ext: i128) -> R<()> {
        let launched = self.launch[tag_index(tag)] as i128;
        if ext > launched {
            return err(
                ErrorKind::InvalidProgram,
                format!(
                    "`{}` is bound to {} with extent {ext}, but the launch has only {launched}: iterations {launched}..{ext} would never run",
                    self.var_name(var),
                    tag.name()
                ),
            );
        }
        Ok(())
    }

    pub(super) fn launch(&mut self, host: &Ctx, k: usize) -> R<()> {
        let prog = self.prog;
        let Some(kern) = prog.kernels.get(k) else { return internal("missing kernel") };
        let kctx = format!("kernel `{}`", kern.name);
        self.launch_kernel(host, kern).map_err(|e| e.context(kctx))
    }

    fn launch_kernel(&mut self, host: &Ctx, kern: &'p CKernel) -> R<()> {
        const NAMES: [&str; 6] = ["grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z"];
        let mut dims = [0i64; 6];
        for (i, e) in kern.grid.iter().chain(kern.block.iter()).enumerate() {
            let v = self.eval_int(host, e)?;
            // An empty grid (a zero-sized tensor) launches nothing.
            if v == 0 && i < 3 {
                return Ok(());
            }
            if v < 1 || v > i32::MAX as i128 {
                return err(ErrorKind::InvalidProgram, format!("launch dimension {} is {v}", NAMES[i]));
            }
            dims[i] = v as i64;
        }
        let nthreads = dims[3] as i128 * dims[4] as i128 * dims[5] as i128;
        let nblocks = dims[0] as i128 * dims[1] as i128 * dims[2] as i128;
        if self.target.is_gpu() && nthreads > self.target.max_threads_per_block as i128 {
            return err(
                ErrorKind::InvalidProgram,
                format!(
                    "launch with {nthreads} threads per block; target `{}` allows {}",
                    self.target, self.target.max_threads_per_block
                ),
            );
        }
        if nthreads.saturating_mul(nblocks) > MAX_LAUNCH_THREADS {
            return err(
                ErrorKind::InvalidProgram,
                format!("launch of {nblocks} blocks × {nthreads} threads is larger than the interpreter runs ({MAX_LAUNCH_THREADS} threads)"),
            );
        }
        // What the kernel sees: its arguments only.
        let mut base = Ctx::new(self.prog);
        for &v in &kern.scalar_args {
            match &host.env[v] {
                Some(x) => base.env[v] = Some(x.clone()),
                None => {
                    return err(
                        ErrorKind::UndefinedVariable,
                        format!("scalar argument `{}` of the kernel is undefined on the host", self.var_name(v)),
                    )
                }
            }
        }
        for &b in &kern.buffer_args {
            match &host.bufs[b] {
                Some(x) => base.bufs[b] = Some(x.clone()),
                None => {
                    return err(
                        ErrorKind::UnboundBuffer,
                        format!("buffer argument `{}` of the kernel is not allocated on the host", self.buf_name(b)),
                    )
                }
            }
        }
        let kf = self.push_frame(FrameKind::Kernel { grid: [dims[0], dims[1], dims[2]] });
        let (saved_kf, saved_launch) = (self.kernel_frame, self.launch);
        self.kernel_frame = kf;
        self.launch = dims;
        self.in_kernel = true;
        let (bx, by) = (dims[3], dims[4]);
        let all: Vec<usize> = (0..nthreads as usize).collect();
        for blk in 0..nblocks as i64 {
            let b = [blk % dims[0], (blk / dims[0]) % dims[1], blk / (dims[0] * dims[1])];
            let phase = self.next_phase()?;
            self.frames[kf].agent = Agent { group: blk, thread: 0, phase };
            let mut threads = Vec::with_capacity(all.len());
            for t in 0..nthreads as i64 {
                let mut c = base.clone();
                c.idx = [b[0], b[1], b[2], t % bx, (t / bx) % by, t / (bx * by)];
                for &(tag, v) in &kern.thread_vars {
                    c.env[v] = Some(self.int_value(v, c.idx[tag_index(tag)] as i128)?);
                }
                threads.push(c);
            }
            let r = self.exec_block(&kern.body, &mut threads, &all).and_then(|()| match self.pending_uninit.take() {
                Some(e) => Err(e),
                None => Ok(()),
            });
            if let Err(e) = r {
                let e = match self.pending_uninit.take() {
                    Some(p) if e.kind != ErrorKind::Race => {
                        InterpError { message: format!("{} (then: {})", p.message, e.message), ..p }
                    }
                    _ => e,
                };
                return Err(e.context(format!("block ({},{},{})", b[0], b[1], b[2])));
            }
        }
        self.pop_frame();
        self.in_kernel = false;
        self.kernel_frame = saved_kf;
        self.launch = saved_launch;
        Ok(())
    }

    fn thread_name(&self, t: usize) -> String {
        let (bx, by) = (self.launch[3].max(1) as usize, self.launch[4].max(1) as usize);
        format!("thread {t} = ({},{},{})", t % bx, (t / bx) % by, t / (bx * by))
    }

    fn set_thread(&mut self, t: usize) {
        let kf = self.kernel_frame;
        if let Some(f) = self.frames.get_mut(kf) {
            f.agent.thread = t as u32;
        }
    }

    /// Per active thread, in order: `f` evaluated in that thread.
    fn per_thread<T>(&mut self, th: &[Ctx], active: &[usize], mut f: impl FnMut(&mut Self, &Ctx) -> R<T>) -> R<Vec<T>> {
        let mut out = Vec::with_capacity(active.len());
        for &t in active {
            self.set_thread(t);
            out.push(f(self, &th[t]).map_err(|e| e.context(self.thread_name(t)))?);
        }
        Ok(out)
    }

    /// The first pair of active threads whose values differ.
    fn first_difference<T: PartialEq>(vals: &[T], active: &[usize]) -> Option<(usize, usize, usize)> {
        (1..vals.len()).find(|&j| vals[j] != vals[0]).map(|j| (active[0], active[j], j))
    }

    /// Runs `s` for the `active` threads of a block. Statements without barriers and shared
    /// allocations run to completion thread by thread; the others in lock step.
    fn exec_block(&mut self, s: &CStmt, th: &mut [Ctx], active: &[usize]) -> R<()> {
        if !s.lockstep {
            for &t in active {
                self.set_thread(t);
                self.exec(&mut th[t], s).map_err(|e| e.context(self.thread_name(t)))?;
            }
            return Ok(());
        }
        match &s.kind {
            CS::Seq(v) => {
                for c in v {
                    self.exec_block(c, th, active)?;
                }
                Ok(())
            }
            CS::For { var, min, extent, body, .. } => {
                let bounds =
                    self.per_thread(th, active, |m, c| Ok((m.eval_int(c, min)?, m.eval_int(c, extent)?.max(0))))?;
                let diff = Self::first_difference(&bounds, active);
                if let (true, Some((a, b, j))) = (s.barrier, diff) {
                    let (la, ea) = bounds[0];
                    let (lb, eb) = bounds[j];
                    return err(
                        ErrorKind::Divergence,
                        format!(
                            "barrier inside a loop whose bounds differ between threads: `{}` runs over {la}..{} in thread {a} but over {lb}..{} in thread {b}",
                            self.var_name(*var),
                            la + ea,
                            lb + eb
                        ),
                    );
                }
                let olds: Vec<Option<Value>> = active.iter().map(|&t| th[t].env[*var].take()).collect();
                let max_ext = bounds.iter().map(|b| b.1).max().unwrap_or(0);
                for k in 0..max_ext {
                    let mut sub = Vec::with_capacity(active.len());
                    for (j, &t) in active.iter().enumerate() {
                        if k < bounds[j].1 {
                            th[t].env[*var] = Some(self.int_value(*var, bounds[j].0 + k)?);
                            sub.push(t);
                        }
                    }
                    self.exec_block(body, th, &sub)?;
                }
                for (&t, old) in active.iter().zip(olds) {
                    th[t].env[*var] = old;
                }
                Ok(())
            }
            CS::If { cond, then, otherwise } => {
                let cs = self.per_thread(th, active, |m, c| m.eval_bool(c, cond))?;
                if let (true, Some((a, b, j))) = (s.barrier, Self::first_difference(&cs, active)) {
                    return err(
                        ErrorKind::Divergence,
                        format!(
                            "barrier inside divergent control flow: the `if` condition is {} in thread {a} but {} in thread {b}",
                            cs[0], cs[j]
                        ),
                    );
                }
                let tset: Vec<usize> = active.iter().zip(&cs).filter(|(_, &c)| c).map(|(&t, _)| t).collect();
                let oset: Vec<usize> = active.iter().zip(&cs).filter(|(_, &c)| !c).map(|(&t, _)| t).collect();
                if !tset.is_empty() {
                    self.exec_block(then, th, &tset)?;
                }
                if let (Some(o), false) = (otherwise, oset.is_empty()) {
                    self.exec_block(o, th, &oset)?;
                }
                Ok(())
            }
            CS::Let { var, value, body } => {
                let vals = self.per_thread(th, active, |m, c| m.eval(c, value, None))?;
                let mut olds = Vec::with_capacity(active.len());
                for (&t, v) in active.iter().zip(vals) {
                    olds.push(th[t].env[*var].replace(v));
                }
                self.exec_block(body, th, active)?;
                for (&t, old) in active.iter().zip(olds) {
                    th[t].env[*var] = old;
                }
                Ok(())
            }
            CS::ThreadBinding { tag, var, extent, body } => {
                let exts = self.per_thread(th, active, |m, c| m.eval_int(c, extent))?;
                let ti = tag_index(*tag);
                let inside: Vec<bool> = active.iter().zip(&exts).map(|(&t, &e)| (th[t].idx[ti] as i128) < e).collect();
                for &e in &exts {
                    self.check_binding_extent(*tag, *var, e)?;
                }
                if let (true, Some((a, b, _))) = (s.barrier, Self::first_difference(&inside, active)) {
                    let (ta, tb) = if inside[0] { (a, b) } else { (b, a) };
                    return err(
                        ErrorKind::Divergence,
                        format!(
                            "barrier inside divergent control flow: thread {ta} runs the body bound to {} (`{}` < {}) but thread {tb} does not",
                            tag.name(),
                            self.var_name(*var),
                            exts[0]
                        ),
                    );
                }
                let sub: Vec<usize> = active.iter().zip(&inside).filter(|(_, &i)| i).map(|(&t, _)| t).collect();
                let mut olds = Vec::with_capacity(sub.len());
                for &t in &sub {
                    let v = self.int_value(*var, th[t].idx[ti] as i128)?;
                    olds.push(th[t].env[*var].replace(v));
                }
                if !sub.is_empty() {
                    self.exec_block(body, th, &sub)?;
                }
                for (&t, old) in sub.iter().zip(olds) {
                    th[t].env[*var] = old;
                }
                Ok(())
            }
            CS::Allocate { buf, extent, body } => {
                let keys = self.per_thread(th, active, |m, c| m.eval_int(c, extent))?;
                let make = |m: &mut Self, c: &Ctx, class: Class| {
                    let n = m.eval_int(c, extent)?;
                    let sid = m.alloc(*buf, n, class)?;
                    Ok((Binding { sid, view: None, flat_ok: true }, Some(sid)))
                };
                self.block_alloc(th, active, *buf, body, keys, make)
            }
            CS::Realize { buf, bounds, body } => {
                let keys = self.per_thread(th, active, |m, c| {
                    bounds.iter().map(|(a, b)| Ok((m.eval_int(c, a)?, m.eval_int(c, b)?))).collect::<R<Vec<_>>>()
                })?;
                let make = |m: &mut Self, c: &Ctx, class: Class| m.realize(c, *buf, bounds, class);
                self.block_alloc(th, active, *buf, body, keys, make)
            }
            CS::Barrier => {
                if active.len() != th.len() {
                    return err(
                        ErrorKind::Divergence,
                        format!(
                            "barrier reached by {} of the block's {} threads (divergent control flow)",
                            active.len(),
                            th.len()
                        ),
                    );
                }
                if let Some(e) = self.pending_uninit.take() {
                    return Err(e);
                }
                let phase = self.next_phase()?;
                let kf = self.kernel_frame;
                self.frames[kf].agent.phase = phase;
                Ok(())
            }
            CS::WarpReduce { width, load, combine, a, b, store } => {
                self.warp_reduce(th, active, *width, load, combine, *a, *b, store)
            }
            _ => internal("lock-step execution of a statement without a barrier"),
        }
    }

    /// A warp reduction: the threads of each aligned group of `width` (by linear index,
    /// which is a thread's position in `th`) must all be active, and must lie in one warp
    /// of the target; each gets the group's values combined in lane order.
    #[allow(clippy::too_many_arguments)]
    fn warp_reduce(
        &mut self,
        th: &mut [Ctx],
        active: &[usize],
        width: u32,
        load: &CExpr,
        combine: &CExpr,
        a: usize,
        b: usize,
        store: &CStmt,
    ) -> R<()> {
        let warp = self.target.warp_size.max(1);
        if width == 0 || !width.is_power_of_two() || width > warp {
            return err(
                ErrorKind::InvalidProgram,
                format!("warp reduction over {width} threads on a target whose warp has {warp}"),
            );
        }
        let w = width as usize;
        let vals = self.per_thread(th, active, |m, c| m.eval(c, load, None))?;
        let mut i = 0;
        while i < active.len() {
            let first = active[i] - active[i] % w;
            let group: Vec<usize> = (first..first + w).collect();
            if active.get(i..i + w) != Some(&group[..]) {
                return err(
                    ErrorKind::Divergence,
                    format!(
                        "warp reduction over groups of {w} threads reached by only some threads of the group of thread {} (divergent control flow)",
                        active[i]
                    ),
                );
            }
            let t0 = group[0];
            let mut acc = vals[i].clone();
            for j in 1..w {
                th[t0].env[a] = Some(acc);
                th[t0].env[b] = Some(vals[i + j].clone());
                self.set_thread(t0);
                acc = self.eval(&th[t0], combine, None)?;
            }
            for &t in &group {
                th[t].env[a] = Some(acc.clone());
                self.set_thread(t);
                self.exec(&mut th[t], store).map_err(|e| e.context(self.thread_name(t)))?;
                th[t].env[a] = None;
                th[t].env[b] = None;
            }
            i += w;
        }
        Ok(())
    }

    /// An `Allocate` or `Realize` in lock step: shared memory once for the block (every
    /// thread must agree on its size, `keys`), local memory once per thread.
    fn block_alloc<K: PartialEq + std::fmt::Debug>(
        &mut self,
        th: &mut [Ctx],
        active: &[usize],
        buf: usize,
        body: &CStmt,
        keys: Vec<K>,
        mut make: impl FnMut(&mut Self, &Ctx, Class) -> R<(Binding, Option<usize>)>,
    ) -> R<()> {
        let shared = self.prog.buffers[buf].scope() == Scope::Shared;
        let mut owned = Vec::new();
        let mut bindings: Vec<Binding> = Vec::with_capacity(active.len());
        if shared {
            if let Some((a, b, j)) = Self::first_difference(&keys, active) {
                return err(
                    ErrorKind::Divergence,
                    format!(
                        "shared allocation `{}` has size {:?} in thread {a} but {:?} in thread {b}",
                        self.buf_name(buf),
                        keys[0],
                        keys[j]
                    ),
                );
            }
            let Some(&t0) = active.first() else { return Ok(()) };
            self.set_thread(t0);
            let (binding, o) = make(self, &th[t0], Class::Shared).map_err(|e| e.context(self.thread_name(t0)))?;
            owned.extend(o);
            bindings.resize(active.len(), binding);
        } else {
            for &t in active {
                self.set_thread(t);
                let (binding, o) = make(self, &th[t], Class::Private).map_err(|e| e.context(self.thread_name(t)))?;
                owned.extend(o);
                bindings.push(binding);
            }
        }
        let mut olds = Vec::with_capacity(active.len());
        for (&t, b) in active.iter().zip(bindings) {
            olds.push(th[t].bufs[buf].replace(b));
        }
        self.exec_block(body, th, active)?;
        for (&t, old) in active.iter().zip(olds) {
            th[t].bufs[buf] = old;
        }
        for sid in owned {
            self.release(sid);
        }
        Ok(())
    }
}
