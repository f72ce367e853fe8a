//! The execution engine's core: the [`Machine`] (its memory, concurrent regions and
//! launch state), statements run one after another (the host, or one GPU thread), and a
//! whole run from arguments to outputs ([`run_program`]).
//!
//! The machine's other parts, each in its own file: storage and addressing (`memory`),
//! race detection (`race`), expressions (`eval`), `Realize` regions (`realize`), and GPU
//! launches with threads in lock step across barriers (`gpu`).

use super::compile::{CParam, CStmt, Program, CE, CS};
use super::error::{err, ErrorKind, InterpError, R};
use super::gpu::tag_index;
use super::memory::{Binding, Class, Storage, View};
use super::race::{Frame, FrameKind};
use super::value::{ArgValue, ScalarValue, Value};
use super::RunOptions;
use crate::target::Target;
use crate::tir::ForKind;
use std::rc::Rc;

pub(super) type S = ScalarValue;

/// What one thread (or the host) sees: variables, buffers, its GPU indices.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(super) env: Vec<Option<Value>>,
    pub(super) bufs: Vec<Option<Binding>>,
    /// blockIdx.xyz, threadIdx.xyz.
    pub(super) idx: [i64; 6],
}

impl Ctx {
    pub(super) fn new(prog: &Program) -> Ctx {
        Ctx { env: vec![None; prog.var_names.len()], bufs: vec![None; prog.buffers.len()], idx: [0; 6] }
    }
}

/// The state of one run: the program, its storages, the concurrent regions (frames) open
/// around the statement running, and the launch it is in.
pub(crate) struct Machine<'p> {
    pub(super) prog: &'p Program,
    pub(super) target: &'p Target,
    pub(super) opts: RunOptions,
    pub(super) stores: Vec<Option<Storage>>,
    pub(super) free: Vec<usize>,
    pub(super) frames: Vec<Frame>,
    pub(super) epoch: u64,
    pub(super) phase_counter: u32,
    pub(super) in_kernel: bool,
    /// The kernel frame's index in `frames` while in a kernel.
    pub(super) kernel_frame: usize,
    /// Grid and block extents of the running launch.
    pub(super) launch: [i64; 6],
    /// A read of an uninitialized element of memory other threads may write: reported at
    /// the end of the phase unless a race (the likely cause) is found first.
    pub(super) pending_uninit: Option<InterpError>,
    pub(super) shared_bytes: u64,
}

pub(super) fn internal<T>(msg: &str) -> R<T> {
    err(ErrorKind::Internal, format!("internal interpreter error: {msg}"))
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

    pub(super) fn buf_name(&self, buf: usize) -> &'p str {
        let prog = self.prog;
        prog.buffers.get(buf).map_or("?", |b| b.name())
    }

    pub(super) fn var_name(&self, var: usize) -> &'p str {
        let prog = self.prog;
        prog.var_names.get(var).map_or("?", |s| s.as_str())
    }

    pub(super) fn int_value(&self, var: usize, v: i128) -> R<Value> {
        let dt = self.prog.var_dtypes[var];
        match S::int_checked(dt, v) {
            Some(s) => Ok(Value::S(s)),
            None => {
                err(ErrorKind::Overflow, format!("value {v} of `{}` does not fit its type {dt}", self.var_name(var)))
            }
        }
    }

    /// Runs `s` sequentially: on the host, or in one GPU thread (`ctx`).
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
            CS::Store { buf, indices, value, mask } => self.store(ctx, *buf, indices, value, mask.as_ref()),
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
