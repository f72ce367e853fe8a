//! The execution engine: expressions, statements, host loops with race detection, and GPU
//! launches run block by block with threads in lock step across barriers.

use super::compile::{CExpr, CKernel, CParam, CStmt, Program, CE, CS};
use super::error::{err, ErrorKind, InterpError, R};
use super::value::{binary, cast, compare, intrinsic, neg, not, ArgValue, ScalarValue, Value};
use super::RunOptions;
use crate::dtype::DType;
use crate::target::Target;
use crate::tir::{ForKind, Scope, ThreadTag};
use std::rc::Rc;

type S = ScalarValue;

/// The largest allocation the interpreter makes, in elements.
const MAX_ELEMENTS: i128 = 1 << 26;
/// The most threads one launch may run in total.
const MAX_LAUNCH_THREADS: i128 = 1 << 24;

/// How a multi-index access maps to a flat offset: `base + Σ index_d · stride_d`, each
/// index checked against `dims[d] = (min, extent)`.
struct View {
    dims: Vec<(i128, i128)>,
    strides: Vec<i128>,
    base: i128,
}

#[derive(Clone)]
struct Binding {
    sid: usize,
    view: Option<Rc<View>>,
    /// A single index is a flat offset (parameters and `Allocate`; not `Realize`).
    flat_ok: bool,
}

/// What one thread (or the host) sees: variables, buffers, its GPU indices.
#[derive(Clone)]
pub(crate) struct Ctx {
    env: Vec<Option<Value>>,
    bufs: Vec<Option<Binding>>,
    /// blockIdx.xyz, threadIdx.xyz.
    idx: [i64; 6],
}

impl Ctx {
    fn new(prog: &Program) -> Ctx {
        Ctx { env: vec![None; prog.var_names.len()], bufs: vec![None; prog.buffers.len()], idx: [0; 6] }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// A parameter or a host allocation.
    Host,
    /// Shared by the threads of one block.
    Shared,
    /// Private to one GPU thread.
    Private,
}

struct Storage {
    buf: usize,
    data: Vec<ScalarValue>,
    /// Which elements were written (allocations only; parameters are all initialized).
    init: Option<Vec<bool>>,
    epoch: u64,
    class: Class,
    writable: bool,
    shared_bytes: u64,
    layers: Vec<Layer>,
}

/// Who accesses memory: an iteration of a parallel loop (group) or a GPU thread (group =
/// block, thread, phase = the barrier interval).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Agent {
    group: i64,
    thread: u32,
    phase: u32,
}

/// Accesses by `a` and `b` (a first) are unordered: different groups never synchronize;
/// different threads of one group are ordered only by a barrier between them.
fn conflict(a: Agent, b: Agent) -> bool {
    a.group != b.group || (a.thread != b.thread && a.phase == b.phase)
}

/// The accesses to one element within one frame, summarized. Groups and, within a group,
/// phases only advance, so the last writer and at most three readers decide every future
/// conflict: `old`, a reader from an earlier group (it conflicts with everyone after), and
/// up to two readers of the latest phase of the current group.
#[derive(Clone, Copy, Default)]
struct Entry {
    w: Option<Agent>,
    old: Option<Agent>,
    cur: [Option<Agent>; 2],
}

impl Entry {
    /// Records a read; on a conflict, the earlier access and whether it was a write.
    fn read(&mut self, a: Agent) -> Result<(), (Agent, bool)> {
        if let Some(w) = self.w {
            if conflict(w, a) {
                return Err((w, true));
            }
        }
        match self.cur[0] {
            None => self.cur[0] = Some(a),
            Some(r0) => {
                if r0.group != a.group {
                    if self.old.is_none() {
                        self.old = Some(r0);
                    }
                    self.cur = [Some(a), None];
                } else if r0.phase != a.phase {
                    self.cur = [Some(a), None];
                } else if r0.thread != a.thread && self.cur[1].is_none() {
                    self.cur[1] = Some(a);
                }
            }
        }
        Ok(())
    }
    fn write(&mut self, a: Agent) -> Result<(), (Agent, bool)> {
        if let Some(w) = self.w {
            if conflict(w, a) {
                return Err((w, true));
            }
        }
        let check = |r: Option<Agent>| match r {
            Some(r) if conflict(r, a) => Err((r, false)),
            _ => Ok(()),
        };
        check(self.old)?;
        check(self.cur[0])?;
        check(self.cur[1])?;
        self.w = Some(a);
        Ok(())
    }
}

struct Layer {
    frame: u64,
    entries: Vec<Entry>,
}

enum FrameKind {
    Parallel { var: String, min: i128 },
    Kernel { grid: [i64; 3] },
}

/// A region whose agents run concurrently: a parallel loop or a kernel launch.
struct Frame {
    serial: u64,
    kind: FrameKind,
    agent: Agent,
    /// Storages that got a layer for this frame.
    touched: Vec<usize>,
}

pub(crate) struct Machine<'p> {
    prog: &'p Program,
    target: &'p Target,
    opts: RunOptions,
    stores: Vec<Option<Storage>>,
    free: Vec<usize>,
    frames: Vec<Frame>,
    epoch: u64,
    phase_counter: u32,
    in_kernel: bool,
    /// The kernel frame's index in `frames` while in a kernel.
    kernel_frame: usize,
    /// Grid and block extents of the running launch.
    launch: [i64; 6],
    /// A read of an uninitialized element of memory other threads may write: reported at
    /// the end of the phase unless a race (the likely cause) is found first.
    pending_uninit: Option<InterpError>,
    shared_bytes: u64,
}

fn tag_index(t: ThreadTag) -> usize {
    if t.is_block() {
        t.dim()
    } else {
        3 + t.dim()
    }
}

fn active(mask: Option<&[bool]>, i: usize) -> bool {
    mask.is_none_or(|m| m.get(i).copied().unwrap_or(true))
}

fn zero_of(d: DType) -> S {
    S::zero(d.element()).unwrap_or(S::Bool(false))
}

fn zero_value(d: DType) -> Value {
    if d.lanes > 1 {
        Value::V(vec![zero_of(d); d.lanes as usize])
    } else {
        Value::S(zero_of(d))
    }
}

fn internal<T>(msg: &str) -> R<T> {
    err(ErrorKind::Internal, format!("internal interpreter error: {msg}"))
}

/// The integer `v` as a value of `dtype`, wrapping like Rust's `as`.
fn wrap_int(dtype: DType, v: i128) -> R<S> {
    // `cast` from an i64 wraps; reduce the i128 to its low 64 bits first (every integer type
    // has at most 64 bits, so this keeps the value modulo 2^bits).
    cast(dtype.element(), S::I64(v as i64))
}

/// Bitwise equality (NaN payloads and the sign of zero count).
fn same_bits(a: S, b: S) -> bool {
    match (a, b) {
        (S::F32(x), S::F32(y)) => x.to_bits() == y.to_bits(),
        (S::F64(x), S::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
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

fn as_bools(v: &[S]) -> R<Vec<bool>> {
    v.iter().map(|s| if let S::Bool(b) = s { Ok(*b) } else { internal("non-bool condition lane") }).collect()
}

fn race_message(
    kind: &FrameKind,
    scope: &str,
    name: &str,
    i: usize,
    prev: (Agent, bool),
    now: (Agent, bool),
) -> String {
    let verb = |w: bool| if w { "wrote" } else { "read" };
    let ((p, pw), (n, nw)) = (prev, now);
    match kind {
        FrameKind::Parallel { var, min } => format!(
            "data race in parallel loop over `{var}`: buffer `{name}` element {i} is {} by iteration {var} = {} and {} by iteration {var} = {} (iterations must touch disjoint data)",
            if pw { "written" } else { "read" },
            min + p.group as i128,
            if nw { "written" } else { "read" },
            min + n.group as i128
        ),
        FrameKind::Kernel { grid } => {
            let block = |g: i64| {
                let (gx, gy) = (grid[0].max(1), grid[1].max(1));
                format!("({},{},{})", g % gx, (g / gx) % gy, g / (gx * gy))
            };
            if p.group == n.group {
                let of_block = if scope == "shared" { String::new() } else { format!(" of block {}", block(n.group)) };
                format!(
                    "race on {scope} buffer `{name}` element {i} between threads {} and {}{of_block}: missing barrier (thread {} {} it, then thread {} {} it in the same phase)",
                    p.thread,
                    n.thread,
                    p.thread,
                    verb(pw),
                    n.thread,
                    verb(nw)
                )
            } else {
                format!(
                    "race on {scope} buffer `{name}` element {i} between block {} (thread {}) and block {} (thread {}): the blocks of one launch cannot synchronize (block {} {} it, block {} {} it)",
                    block(p.group),
                    p.thread,
                    block(n.group),
                    n.thread,
                    block(p.group),
                    verb(pw),
                    block(n.group),
                    verb(nw)
                )
            }
        }
    }
}

impl<'p> Machine<'p> {
    fn new(prog: &'p Program, target: &'p Target, opts: RunOptions) -> Machine<'p> {
        Machine {
            prog,
            target,
            opts,
            stores: Vec::new(),
            free: Vec::new(),
            frames: Vec::new(),
            epoch: 0,
            phase_counter: 0,
            in_kernel: false,
            kernel_frame: 0,
            launch: [1; 6],
            pending_uninit: None,
            shared_bytes: 0,
        }
    }

    fn buf_name(&self, buf: usize) -> &'p str {
        let prog = self.prog;
        prog.buffers.get(buf).map_or("?", |b| b.name())
    }

    fn var_name(&self, var: usize) -> &'p str {
        let prog = self.prog;
        prog.var_names.get(var).map_or("?", |s| s.as_str())
    }

    // -----------------------------------------------------------------------------------
    // Memory.

    fn new_storage(&mut self, st: Storage) -> usize {
        match self.free.pop() {
            Some(sid) => {
                self.stores[sid] = Some(st);
                sid
            }
            None => {
                self.stores.push(Some(st));
                self.stores.len() - 1
            }
        }
    }

    fn alloc(&mut self, buf: usize, n: i128, class: Class) -> R<usize> {
        let name = self.buf_name(buf);
        let dtype = self.prog.buffers[buf].dtype();
        if n < 0 {
            return err(ErrorKind::InvalidProgram, format!("allocation of `{name}` with negative size {n}"));
        }
        if n > MAX_ELEMENTS {
            return err(
                ErrorKind::InvalidProgram,
                format!(
                    "allocation of `{name}` with {n} elements is larger than the interpreter allows ({MAX_ELEMENTS})"
                ),
            );
        }
        let n = n as usize;
        let mut shared_bytes = 0;
        if class == Class::Shared && self.target.is_gpu() {
            shared_bytes = (n * dtype.bytes()) as u64;
            let max = self.target.max_shared_memory_per_block as u64;
            if self.shared_bytes + shared_bytes > max {
                return err(
                    ErrorKind::InvalidProgram,
                    format!(
                        "shared allocation `{name}` of {shared_bytes} bytes brings the block to {} bytes of shared memory; the target allows {max}",
                        self.shared_bytes + shared_bytes
                    ),
                );
            }
            self.shared_bytes += shared_bytes;
        }
        self.epoch += 1;
        let st = Storage {
            buf,
            data: vec![zero_of(dtype); n],
            init: Some(vec![false; n]),
            epoch: self.epoch,
            class,
            writable: true,
            shared_bytes,
            layers: Vec::new(),
        };
        Ok(self.new_storage(st))
    }

    fn release(&mut self, sid: usize) {
        if let Some(st) = self.stores.get_mut(sid).and_then(|s| s.take()) {
            self.shared_bytes -= st.shared_bytes;
            self.free.push(sid);
        }
    }

    fn alloc_class(&self, buf: usize) -> Class {
        if !self.in_kernel {
            return Class::Host;
        }
        match self.prog.buffers[buf].scope() {
            Scope::Shared => Class::Shared,
            _ => Class::Private,
        }
    }

    fn check_offset(&self, sid: usize, off: i128, store: bool) -> R<usize> {
        let Some(Some(st)) = self.stores.get(sid) else { return internal("access to a freed storage") };
        if off < 0 || off >= st.data.len() as i128 {
            return err(
                ErrorKind::OutOfBounds,
                format!(
                    "out-of-bounds {} `{}` at index {off}: the buffer has {} elements",
                    if store { "store to" } else { "load from" },
                    self.buf_name(st.buf),
                    st.data.len()
                ),
            );
        }
        Ok(off as usize)
    }

    fn read(&mut self, sid: usize, off: i128) -> R<S> {
        let i = self.check_offset(sid, off, false)?;
        let Some(Some(st)) = self.stores.get(sid) else { return internal("access to a freed storage") };
        if let Some(init) = &st.init {
            if !init[i] {
                let e = InterpError::new(
                    ErrorKind::Uninitialized,
                    format!(
                        "read of uninitialized element {i} of `{}` (an allocation of {} elements; nothing wrote it before)",
                        self.buf_name(st.buf),
                        st.data.len()
                    ),
                );
                if self.in_kernel && st.class != Class::Private {
                    if self.pending_uninit.is_none() {
                        self.pending_uninit = Some(e);
                    }
                } else {
                    return Err(e);
                }
            }
        }
        let v = st.data[i];
        if !self.frames.is_empty() && st.writable {
            self.track(sid, i, None)?;
        }
        Ok(v)
    }

    fn write(&mut self, sid: usize, off: i128, v: S) -> R<()> {
        let i = self.check_offset(sid, off, true)?;
        let Some(Some(st)) = self.stores.get(sid) else { return internal("access to a freed storage") };
        if !st.writable {
            return err(ErrorKind::WriteToInput, format!("store to input `{}` (element {i})", self.buf_name(st.buf)));
        }
        if !self.frames.is_empty() {
            // A GPU write that leaves the value as it is (a redundant copy of the same value,
            // which cooperative fetching relies on) races with nothing.
            let silent = st.init.as_ref().is_none_or(|b| b[i]) && same_bits(st.data[i], v);
            self.track(sid, i, Some(silent))?;
        }
        let Some(Some(st)) = self.stores.get_mut(sid) else { return internal("access to a freed storage") };
        if v.dtype() != st.data[i].dtype() {
            return internal("stored value of the wrong type");
        }
        st.data[i] = v;
        if let Some(init) = &mut st.init {
            init[i] = true;
        }
        Ok(())
    }

    /// Race detection: records the access in every concurrent region that shares `sid`.
    /// `write`: `None` for a read, else whether the write is silent (stores the value the
    /// element already holds).
    fn track(&mut self, sid: usize, i: usize, write: Option<bool>) -> R<()> {
        let prog = self.prog;
        let global_races = self.opts.check_global_races;
        let Some(Some(st)) = self.stores.get_mut(sid) else { return Ok(()) };
        for f in self.frames.iter_mut() {
            let tracked = match f.kind {
                FrameKind::Parallel { .. } => st.epoch < f.serial,
                FrameKind::Kernel { .. } => {
                    write != Some(true) && (st.class == Class::Shared || (global_races && st.epoch < f.serial))
                }
            };
            if !tracked {
                continue;
            }
            let li = match st.layers.iter().position(|l| l.frame == f.serial) {
                Some(p) => p,
                None => {
                    st.layers.push(Layer { frame: f.serial, entries: vec![Entry::default(); st.data.len()] });
                    f.touched.push(sid);
                    st.layers.len() - 1
                }
            };
            let e = &mut st.layers[li].entries[i];
            let r = if write.is_some() { e.write(f.agent) } else { e.read(f.agent) };
            if let Err(prev) = r {
                let b = &prog.buffers[st.buf];
                let scope = if st.class == Class::Shared { "shared" } else { b.scope().name() };
                return err(
                    ErrorKind::Race,
                    race_message(&f.kind, scope, b.name(), i, prev, (f.agent, write.is_some())),
                );
            }
        }
        Ok(())
    }

    fn push_frame(&mut self, kind: FrameKind) -> usize {
        self.epoch += 1;
        self.frames.push(Frame {
            serial: self.epoch,
            kind,
            agent: Agent { group: 0, thread: 0, phase: 0 },
            touched: Vec::new(),
        });
        self.frames.len() - 1
    }

    fn pop_frame(&mut self) {
        if let Some(f) = self.frames.pop() {
            for sid in f.touched {
                if let Some(Some(st)) = self.stores.get_mut(sid) {
                    st.layers.retain(|l| l.frame != f.serial);
                }
            }
        }
    }

    fn next_phase(&mut self) -> R<u32> {
        self.phase_counter = match self.phase_counter.checked_add(1) {
            Some(p) => p,
            None => return err(ErrorKind::InvalidProgram, "more than 2^32 barrier phases"),
        };
        Ok(self.phase_counter)
    }

    // -----------------------------------------------------------------------------------
    // Expressions.

    fn eval_int(&mut self, ctx: &Ctx, e: &CExpr) -> R<i128> {
        if e.dtype.lanes != 1 {
            return internal("vector where a scalar integer was expected");
        }
        match self.eval_scalar(ctx, e)?.as_i128() {
            Some(i) => Ok(i),
            None => internal("integer expression with a non-integer value"),
        }
    }

    fn eval_bool(&mut self, ctx: &Ctx, e: &CExpr) -> R<bool> {
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
    fn eval(&mut self, ctx: &Ctx, e: &CExpr, mask: Option<&[bool]>) -> R<Value> {
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

    fn binding<'c>(&self, ctx: &'c Ctx, buf: usize) -> R<&'c Binding> {
        match ctx.bufs.get(buf) {
            Some(Some(b)) => Ok(b),
            _ => {
                let hint = if self.in_kernel { " (missing from the kernel's buffer_args?)" } else { "" };
                err(
                    ErrorKind::UnboundBuffer,
                    format!(
                        "access to buffer `{}`, which is neither a parameter nor allocated here{hint}",
                        self.buf_name(buf)
                    ),
                )
            }
        }
    }

    fn wrong_arity<T>(&self, buf: usize, b: &Binding, n: usize) -> R<T> {
        let want = match &b.view {
            Some(v) if b.flat_ok => format!("1 (a flat offset) or {}", v.dims.len()),
            Some(v) => v.dims.len().to_string(),
            None => "1".to_string(),
        };
        err(ErrorKind::InvalidProgram, format!("access to `{}` with {n} indices; it takes {want}", self.buf_name(buf)))
    }

    fn dim_oob<T>(&self, buf: usize, d: usize, i: i128, (min, ext): (i128, i128), store: bool) -> R<T> {
        err(
            ErrorKind::OutOfBounds,
            format!(
                "out-of-bounds {} `{}`: index {i} of dimension {d} is outside {min}..{}",
                if store { "store to" } else { "load from" },
                self.buf_name(buf),
                min + ext
            ),
        )
    }

    /// The flat offset of a scalar access.
    fn scalar_offset(&mut self, ctx: &Ctx, buf: usize, b: &Binding, idx: &[CExpr], store: bool) -> R<i128> {
        if idx.len() == 1 && b.flat_ok {
            return self.eval_int(ctx, &idx[0]);
        }
        let view = match &b.view {
            Some(v) if v.dims.len() == idx.len() => v,
            _ => return self.wrong_arity(buf, b, idx.len()),
        };
        let mut off = view.base;
        for (d, e) in idx.iter().enumerate() {
            let i = self.eval_int(ctx, e)?;
            let (min, ext) = view.dims[d];
            if i < min || i >= min + ext {
                return self.dim_oob(buf, d, i, view.dims[d], store);
            }
            off += i * view.strides[d];
        }
        Ok(off)
    }

    /// The flat offsets of a vector access, `None` for lanes masked off.
    #[allow(clippy::too_many_arguments)]
    fn lane_offsets(
        &mut self,
        ctx: &Ctx,
        buf: usize,
        b: &Binding,
        idx: &[CExpr],
        lanes: usize,
        mask: Option<&[bool]>,
        store: bool,
    ) -> R<Vec<Option<i128>>> {
        let mut vals = Vec::with_capacity(idx.len());
        for e in idx {
            vals.push(self.eval(ctx, e, mask)?);
        }
        let lane = |v: &Value, l: usize| -> R<i128> {
            let s = match v {
                Value::S(s) => *s,
                Value::V(x) => match x.get(l) {
                    Some(s) => *s,
                    None => return internal("lane count of an index"),
                },
            };
            match s.as_i128() {
                Some(i) => Ok(i),
                None => internal("non-integer index"),
            }
        };
        let flat = idx.len() == 1 && b.flat_ok;
        let view = match &b.view {
            _ if flat => None,
            Some(v) if v.dims.len() == idx.len() => Some(v),
            _ => return self.wrong_arity(buf, b, idx.len()),
        };
        let mut out = Vec::with_capacity(lanes);
        for l in 0..lanes {
            if !active(mask, l) {
                out.push(None);
                continue;
            }
            let off = match view {
                None => lane(&vals[0], l)?,
                Some(view) => {
                    let mut off = view.base;
                    for (d, v) in vals.iter().enumerate() {
                        let i = lane(v, l)?;
                        let (min, ext) = view.dims[d];
                        if i < min || i >= min + ext {
                            return self.dim_oob(buf, d, i, view.dims[d], store);
                        }
                        off += i * view.strides[d];
                    }
                    off
                }
            };
            out.push(Some(off));
        }
        Ok(out)
    }

    fn load(&mut self, ctx: &Ctx, buf: usize, idx: &[CExpr], lanes: u16, mask: Option<&[bool]>) -> R<Value> {
        let b = self.binding(ctx, buf)?;
        if lanes == 1 {
            let off = self.scalar_offset(ctx, buf, b, idx, false)?;
            return Ok(Value::S(self.read(b.sid, off)?));
        }
        let offs = self.lane_offsets(ctx, buf, b, idx, lanes as usize, mask, false)?;
        let zero = zero_of(self.prog.buffers[buf].dtype());
        let mut out = Vec::with_capacity(offs.len());
        for o in offs {
            out.push(match o {
                Some(off) => self.read(b.sid, off)?,
                None => zero,
            });
        }
        Ok(Value::V(out))
    }

    // -----------------------------------------------------------------------------------
    // Statements, sequentially (the host, or one GPU thread).

    fn store(&mut self, ctx: &Ctx, buf: usize, idx: &[CExpr], value: &CExpr) -> R<()> {
        let v = self.eval(ctx, value, None)?;
        let b = self.binding(ctx, buf)?;
        match v {
            Value::S(s) => {
                let off = self.scalar_offset(ctx, buf, b, idx, true)?;
                self.write(b.sid, off, s)
            }
            Value::V(vs) => {
                let offs = self.lane_offsets(ctx, buf, b, idx, vs.len(), None, true)?;
                for (o, s) in offs.into_iter().zip(vs) {
                    if let Some(off) = o {
                        self.write(b.sid, off, s)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn int_value(&self, var: usize, v: i128) -> R<Value> {
        let dt = self.prog.var_dtypes[var];
        match S::int_checked(dt, v) {
            Some(s) => Ok(Value::S(s)),
            None => {
                err(ErrorKind::Overflow, format!("value {v} of `{}` does not fit its type {dt}", self.var_name(var)))
            }
        }
    }

    /// The storage and binding of a `Realize`: a view of the parameter when the buffer is
    /// one, else a fresh allocation of the region.
    fn realize(
        &mut self,
        ctx: &Ctx,
        buf: usize,
        bounds: &[(CExpr, CExpr)],
        class: Class,
    ) -> R<(Binding, Option<usize>)> {
        let mut dims = Vec::with_capacity(bounds.len());
        for (min, ext) in bounds {
            let m = self.eval_int(ctx, min)?;
            let e = self.eval_int(ctx, ext)?;
            if e < 0 {
                return err(
                    ErrorKind::InvalidProgram,
                    format!("realize of `{}` with negative extent {e}", self.buf_name(buf)),
                );
            }
            dims.push((m, e));
        }
        if self.prog.is_param[buf] {
            if let Some(Some(pb)) = ctx.bufs.get(buf) {
                let Some(pv) = &pb.view else { return internal("parameter without a shape") };
                if pv.dims.len() != dims.len() {
                    return err(
                        ErrorKind::InvalidProgram,
                        format!(
                            "realize of `{}` with {} dims; the parameter has {}",
                            self.buf_name(buf),
                            dims.len(),
                            pv.dims.len()
                        ),
                    );
                }
                for (d, (&(m, e), &(_, n))) in dims.iter().zip(&pv.dims).enumerate() {
                    if e > 0 && (m < 0 || m + e > n) {
                        return err(
                            ErrorKind::OutOfBounds,
                            format!(
                                "realize of `{}` over {m}..{} in dimension {d}, beyond its size {n}",
                                self.buf_name(buf),
                                m + e
                            ),
                        );
                    }
                }
                let view = View { dims, strides: pv.strides.clone(), base: pv.base };
                return Ok((Binding { sid: pb.sid, view: Some(Rc::new(view)), flat_ok: false }, None));
            }
        }
        let mut strides = vec![0i128; dims.len()];
        let mut n: i128 = 1;
        for d in (0..dims.len()).rev() {
            strides[d] = n;
            n = n.saturating_mul(dims[d].1).min(MAX_ELEMENTS + 1);
        }
        let base = -dims.iter().zip(&strides).map(|(&(m, _), &s)| m * s).sum::<i128>();
        let sid = self.alloc(buf, n, class)?;
        Ok((Binding { sid, view: Some(Rc::new(View { dims, strides, base })), flat_ok: false }, Some(sid)))
    }

    pub(crate) fn exec(&mut self, ctx: &mut Ctx, s: &CStmt) -> R<()> {
        match &s.kind {
            CS::Seq(v) => {
                for c in v {
                    self.exec(ctx, c)?;
                }
                Ok(())
            }
            CS::For { var, min, extent, kind, body } => {
                let lo = self.eval_int(ctx, min)?;
                let ext = self.eval_int(ctx, extent)?;
                let par = *kind == ForKind::Parallel && ext > 1;
                let fi = if par {
                    Some(self.push_frame(FrameKind::Parallel { var: self.var_name(*var).to_string(), min: lo }))
                } else {
                    None
                };
                let old = ctx.env[*var].take();
                let mut k = 0;
                while k < ext {
                    ctx.env[*var] = Some(self.int_value(*var, lo + k)?);
                    if let Some(fi) = fi {
                        self.frames[fi].agent.group = k as i64;
                    }
                    self.exec(ctx, body)?;
                    k += 1;
                }
                ctx.env[*var] = old;
                if par {
                    self.pop_frame();
                }
                Ok(())
            }
            CS::ThreadBinding { tag, var, extent, body } => {
                let ext = self.eval_int(ctx, extent)?;
                if self.in_kernel {
                    let ti = tag_index(*tag);
                    self.check_binding_extent(*tag, *var, ext)?;
                    let i = ctx.idx[ti] as i128;
                    if i < ext {
                        let old = ctx.env[*var].replace(self.int_value(*var, i)?);
                        self.exec(ctx, body)?;
                        ctx.env[*var] = old;
                    }
                    return Ok(());
                }
                // On the host (before split_host_device): the iterations run concurrently,
                // like a parallel loop.
                let fi = (ext > 1)
                    .then(|| self.push_frame(FrameKind::Parallel { var: self.var_name(*var).to_string(), min: 0 }));
                let old = ctx.env[*var].take();
                for k in 0..ext.max(0) {
                    ctx.env[*var] = Some(self.int_value(*var, k)?);
                    if let Some(fi) = fi {
                        self.frames[fi].agent.group = k as i64;
                    }
                    self.exec(ctx, body)?;
                }
                ctx.env[*var] = old;
                if fi.is_some() {
                    self.pop_frame();
                }
                Ok(())
            }
            CS::If { cond, then, otherwise } => {
                if self.eval_bool(ctx, cond)? {
                    self.exec(ctx, then)
                } else if let Some(o) = otherwise {
                    self.exec(ctx, o)
                } else {
                    Ok(())
                }
            }
            CS::Let { var, value, body } => {
                let v = self.eval(ctx, value, None)?;
                let old = ctx.env[*var].replace(v);
                self.exec(ctx, body)?;
                ctx.env[*var] = old;
                Ok(())
            }
            CS::Store { buf, indices, value } => self.store(ctx, *buf, indices, value),
            CS::Realize { buf, bounds, body } => {
                let class = self.alloc_class(*buf);
                let (binding, owned) = self.realize(ctx, *buf, bounds, class)?;
                let old = ctx.bufs[*buf].replace(binding);
                self.exec(ctx, body)?;
                ctx.bufs[*buf] = old;
                if let Some(sid) = owned {
                    self.release(sid);
                }
                Ok(())
            }
            CS::Allocate { buf, extent, body } => {
                let n = self.eval_int(ctx, extent)?;
                let sid = self.alloc(*buf, n, self.alloc_class(*buf))?;
                let old = ctx.bufs[*buf].replace(Binding { sid, view: None, flat_ok: true });
                self.exec(ctx, body)?;
                ctx.bufs[*buf] = old;
                self.release(sid);
                Ok(())
            }
            CS::Barrier => err(ErrorKind::InvalidProgram, "barrier outside a kernel"),
            CS::WarpReduce { .. } => err(ErrorKind::InvalidProgram, "warp reduction outside a kernel"),
            CS::Launch(k) => self.launch(ctx, *k),
            CS::NoOp => Ok(()),
        }
    }

    fn check_binding_extent(&self, tag: ThreadTag, var: usize, ext: i128) -> R<()> {
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

    // -----------------------------------------------------------------------------------
    // GPU launches.

    fn launch(&mut self, host: &Ctx, k: usize) -> R<()> {
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

/// Binds the arguments, runs the host body, copies the outputs back.
pub(crate) fn run_program(
    prog: &Program,
    fname: &str,
    target: &Target,
    args: &mut [ArgValue],
    opts: RunOptions,
) -> R<()> {
    if args.len() != prog.params.len() {
        return err(
            ErrorKind::Argument,
            format!("the function takes {} arguments, got {}", prog.params.len(), args.len()),
        );
    }
    let mut m = Machine::new(prog, target, opts);
    let mut ctx = Ctx::new(prog);
    let arg_err = |i: usize, name: &str, msg: String| {
        InterpError::new(ErrorKind::Argument, format!("argument {i} (`{name}`): {msg}"))
    };
    // Scalars first: they may also name dims.
    for (i, p) in prog.params.iter().enumerate() {
        if let CParam::Scalar { var } = p {
            let (name, want) = (m.var_name(*var), prog.var_dtypes[*var]);
            match &args[i] {
                ArgValue::Scalar(s) if s.dtype() == want => ctx.env[*var] = Some(Value::S(*s)),
                ArgValue::Scalar(s) => {
                    return Err(arg_err(
                        i,
                        name,
                        format!("expected a scalar of type {want}, got one of type {}", s.dtype()),
                    ))
                }
                ArgValue::Tensor(_) => {
                    return Err(arg_err(i, name, format!("expected a scalar of type {want}, got a tensor")))
                }
            }
        }
    }
    // Tensors: kinds, types, ranks; dims that are variables bind them, through the
    // runtime's shape binder (the messages generated code gives). A dim that a scalar
    // parameter names is bound by it.
    let mut slots: Vec<tvm_runtime::shape::DimSlot<'_>> = vec![None; prog.var_names.len()];
    for (i, p) in prog.params.iter().enumerate() {
        if let (CParam::Scalar { var }, ArgValue::Scalar(s)) = (p, &args[i]) {
            if let Some(v) = s.as_i128().and_then(|v| i64::try_from(v).ok()) {
                slots[*var] = Some((v, m.var_name(*var)));
            }
        }
    }
    for (i, p) in prog.params.iter().enumerate() {
        let CParam::Tensor { buf, shape, .. } = p else { continue };
        let b = &prog.buffers[*buf];
        let t = match &args[i] {
            ArgValue::Tensor(t) => t,
            ArgValue::Scalar(_) => {
                return Err(arg_err(i, b.name(), format!("expected a tensor of {}, got a scalar", b.dtype())))
            }
        };
        if t.dtype() != b.dtype() {
            return Err(arg_err(
                i,
                b.name(),
                format!("expected a tensor of {}, got a tensor of {}", b.dtype(), t.dtype()),
            ));
        }
        if t.shape.len() != shape.len() {
            return Err(arg_err(i, b.name(), format!("expected {} dims, got shape {:?}", shape.len(), t.shape)));
        }
        let n = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(t.numel()) {
            return Err(arg_err(i, b.name(), format!("shape {:?} but {} elements", t.shape, t.numel())));
        }
        for (d, e) in shape.iter().enumerate() {
            if let CE::Var(v) = e.kind {
                tvm_runtime::shape::bind_dim(&mut slots[v], t.shape[d], fname, b.name(), d, m.var_name(v))
                    .map_err(|e| arg_err(i, b.name(), e.to_string()))?;
                if ctx.env[v].is_none() {
                    ctx.env[v] = Some(m.int_value(v, t.shape[d] as i128).map_err(|e| arg_err(i, b.name(), e.message))?);
                }
            }
        }
    }
    // Every dim (constants and expressions) against the actual shape; storages.
    let mut sids = vec![usize::MAX; prog.params.len()];
    for (i, p) in prog.params.iter().enumerate() {
        let CParam::Tensor { buf, shape, is_output } = p else { continue };
        let Some(t) = args[i].as_tensor() else { return internal("tensor argument changed") };
        let name = prog.buffers[*buf].name();
        let mut strides = vec![0i128; shape.len()];
        let mut acc = 1i128;
        for d in (0..shape.len()).rev() {
            let want = m.eval_int(&ctx, &shape[d]).map_err(|e| arg_err(i, name, e.message))?;
            let want64 = i64::try_from(want).unwrap_or(-1);
            tvm_runtime::shape::check_dim(t.shape[d], want64, fname, name, d)
                .map_err(|e| arg_err(i, name, e.to_string()))?;
            strides[d] = acc;
            acc = acc.saturating_mul(want);
        }
        let dims = t.shape.iter().map(|&n| (0i128, n as i128)).collect();
        m.epoch += 1;
        let sid = m.new_storage(Storage {
            buf: *buf,
            data: t.data.to_scalars(),
            init: None,
            epoch: m.epoch,
            class: Class::Host,
            writable: *is_output,
            shared_bytes: 0,
            layers: Vec::new(),
        });
        sids[i] = sid;
        ctx.bufs[*buf] = Some(Binding { sid, view: Some(Rc::new(View { dims, strides, base: 0 })), flat_ok: true });
    }
    m.exec(&mut ctx, &prog.host)?;
    for (i, p) in prog.params.iter().enumerate() {
        if let (CParam::Tensor { is_output: true, .. }, ArgValue::Tensor(t)) = (p, &mut args[i]) {
            let Some(Some(st)) = m.stores.get(sids[i]) else { return internal("output storage vanished") };
            t.data.copy_from_scalars(&st.data)?;
        }
    }
    Ok(())
}
