//! The interpreter's memory: storages (parameters and allocations, with which elements
//! were written), bounds-checked reads and writes, and the addressing of loads and stores
//! (a flat offset, or one index per dimension through a [`View`]).

use super::compile::CExpr;
use super::error::{err, ErrorKind, InterpError, R};
use super::eval::{active, as_bools};
use super::exec::{internal, Ctx, Machine, S};
use super::race::Layer;
use super::value::{ScalarValue, Value};
use crate::dtype::DType;
use crate::tir::Scope;
use std::rc::Rc;

/// The largest allocation the interpreter makes, in elements.
pub(super) const MAX_ELEMENTS: i128 = 1 << 26;

/// How a multi-index access maps to a flat offset: `base + Σ index_d · stride_d`, each
/// index checked against `dims[d] = (min, extent)`.
pub(super) struct View {
    pub(super) dims: Vec<(i128, i128)>,
    pub(super) strides: Vec<i128>,
    pub(super) base: i128,
}

/// A buffer as a context sees it: its storage and how indices address it.
#[derive(Clone)]
pub(super) struct Binding {
    pub(super) sid: usize,
    pub(super) view: Option<Rc<View>>,
    /// A single index is a flat offset (parameters and `Allocate`; not `Realize`).
    pub(super) flat_ok: bool,
}

/// Who may access a storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// A parameter or a host allocation.
    Host,
    /// Shared by the threads of one block.
    Shared,
    /// Private to one GPU thread.
    Private,
}

/// The elements of one parameter or allocation, and what race detection recorded of them.
pub(super) struct Storage {
    pub(super) buf: usize,
    pub(super) data: Vec<ScalarValue>,
    /// Which elements were written (allocations only; parameters are all initialized).
    pub(super) init: Option<Vec<bool>>,
    pub(super) epoch: u64,
    pub(super) class: Class,
    pub(super) writable: bool,
    pub(super) shared_bytes: u64,
    pub(super) layers: Vec<Layer>,
}

/// The zero of `d`'s element type (`false` for bool): what a fresh allocation holds.
pub(super) fn zero_of(d: DType) -> S {
    S::zero(d.element()).unwrap_or(S::Bool(false))
}

/// Bitwise equality (NaN payloads and the sign of zero count).
fn same_bits(a: S, b: S) -> bool {
    match (a, b) {
        (S::F32(x), S::F32(y)) => x.to_bits() == y.to_bits(),
        (S::F64(x), S::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

impl<'p> Machine<'p> {
    pub(super) fn new_storage(&mut self, st: Storage) -> usize {
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

    pub(super) fn alloc(&mut self, buf: usize, n: i128, class: Class) -> R<usize> {
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

    pub(super) fn release(&mut self, sid: usize) {
        if let Some(st) = self.stores.get_mut(sid).and_then(|s| s.take()) {
            self.shared_bytes -= st.shared_bytes;
            self.free.push(sid);
        }
    }

    pub(super) fn alloc_class(&self, buf: usize) -> Class {
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

    pub(super) fn read(&mut self, sid: usize, off: i128) -> R<S> {
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

    pub(super) fn write(&mut self, sid: usize, off: i128, v: S) -> R<()> {
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

    pub(super) fn binding<'c>(&self, ctx: &'c Ctx, buf: usize) -> R<&'c Binding> {
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
    pub(super) fn scalar_offset(&mut self, ctx: &Ctx, buf: usize, b: &Binding, idx: &[CExpr], store: bool) -> R<i128> {
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

    pub(super) fn load(&mut self, ctx: &Ctx, buf: usize, idx: &[CExpr], lanes: u16, mask: Option<&[bool]>) -> R<Value> {
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

    pub(super) fn store(&mut self, ctx: &Ctx, buf: usize, idx: &[CExpr], value: &CExpr, mask: Option<&CExpr>) -> R<()> {
        if let Some(m) = mask {
            let Value::V(ms) = self.eval(ctx, m, None)? else { return internal("a scalar store mask") };
            let ms = as_bools(&ms)?;
            if !ms.iter().any(|&x| x) {
                return Ok(());
            }
            let Value::V(vs) = self.eval(ctx, value, Some(&ms))? else { return internal("a masked scalar store") };
            let b = self.binding(ctx, buf)?;
            // Every lane's element bounds-checked, as the generated code writes every
            // lane back; only the kept lanes written (the others are not read: they may
            // never have been written).
            let offs = self.lane_offsets(ctx, buf, b, idx, vs.len(), None, true)?;
            for ((o, s), on) in offs.into_iter().zip(vs).zip(ms) {
                match (o, on) {
                    (Some(off), true) => self.write(b.sid, off, s)?,
                    (Some(off), false) => {
                        self.check_offset(b.sid, off, true)?;
                    }
                    (None, _) => {}
                }
            }
            return Ok(());
        }
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
}
