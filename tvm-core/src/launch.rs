//! Runs a lowered GPU function on a device, for the compiler's tests and tools (the
//! property tests run random GPU schedules on OpenCL this way, without compiling Rust).
//!
//! Generated code does not come here: `compute!` emits the host half of a GPU function as
//! Rust ([`codegen::host`](crate::codegen::host)). This launcher walks the same host body
//! on the host instead, with the interpreter's scalar operations, and drives the same
//! runtime interface: the program description comes from the same
//! [`kernel_infos`], shapes bind through the same `tvm_runtime::shape`, and every launch
//! goes through `gpu::Module::launch`.

use crate::codegen::host::{kernel_infos, KernelInfo};
use crate::dtype::ScalarKind;
use crate::interp::{self, ArgValue, HostData, ScalarValue};
use crate::tir::{Expr, Param, PrimFunc, Scope, Stmt, VarId};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tvm_runtime::gpu::{self, Backend, KernelArg, KernelDesc, Module, Program, Scalar};
use tvm_runtime::{Device, Error};

/// Runs `f` (a lowered GPU function) on `device`, its kernels printed for the device's
/// backend by the compiler (OpenCL C). `args` are in the order of `f.params`, as for
/// [`interp::run`]; outputs are host tensors of the right shape, overwritten only when the
/// whole run succeeds. The outputs' device memory starts as their given contents (poison
/// them to see elements a kernel never writes).
///
/// Errors are the runtime's: `ShapeMismatch` (and the rest of shape binding),
/// `DeviceUnavailable`, `CompilationFailed` (also where the code generator fails),
/// `LaunchFailed`; a malformed argument list or host body is `Internal`.
pub fn run_on_device(device: &Device, f: &PrimFunc, args: &mut [ArgValue]) -> Result<(), Error> {
    let source = match device {
        Device::OpenCl(_) => crate::codegen::opencl::emit_opencl(f)
            .map_err(|e| Error::CompilationFailed { target: "opencl".to_string(), log: e.to_string() })?,
        other => return Err(tvm_runtime::__rt::no_backend(other)),
    };
    // SAFETY: the program is `f`'s kernels, printed by the compiler.
    unsafe { run_source_on_device(device, f, &source, args) }
}

/// [`run_on_device`] with the program's text given: `source`, hand-written or edited, for
/// tests of the runtime's checks.
///
/// # Safety
/// `source` must hold `f`'s kernels as the compiler prints them: each named as in
/// `f.kernels`, taking its buffers and scalars in that order and touching no element of a
/// buffer outside what `f`'s shapes give it (see `gpu::Module::launch`). A kernel that
/// breaks this may corrupt memory (on a CPU device such as PoCL, the process's).
pub unsafe fn run_source_on_device(
    device: &Device,
    f: &PrimFunc,
    source: &str,
    args: &mut [ArgValue],
) -> Result<(), Error> {
    let backend = match device {
        Device::OpenCl(_) => Backend::OpenCl,
        Device::Cuda(_) => Backend::Cuda,
        Device::WebGpu(_) => Backend::WebGpu,
        _ => return Err(internal(format!("`{}` is not a GPU device", device))),
    };
    let env = bind(f, args)?;
    let program = program(f, backend, source);
    let m = gpu::load(device, program)?;
    let mut bufs: HashMap<u32, gpu::Buffer> = HashMap::new();
    for (p, a) in f.params.iter().zip(args.iter()) {
        if let (Param::Tensor { buffer, .. }, ArgValue::Tensor(t)) = (p, a) {
            bufs.insert(buffer.id().0, upload(&m, &t.data)?);
        }
    }
    let fault = m.fault_buffer()?;
    let mut host = Host { f, m: &m, env, bufs, fault: &fault };
    host.stmt(&f.body)?;
    if let Some(x) = m.read_fault(&fault)? {
        return Err(check_failed(f, x));
    }
    let mut results = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        if let (Param::Tensor { buffer, is_output: true, .. }, ArgValue::Tensor(t)) = (p, &args[i]) {
            let mut data = t.data.clone();
            download(&m, &host.bufs[&buffer.id().0], &mut data)?;
            results.push((i, data));
        }
    }
    for (i, data) in results {
        if let ArgValue::Tensor(t) = &mut args[i] {
            t.data = data;
        }
    }
    Ok(())
}

fn internal(message: String) -> Error {
    Error::Internal { message }
}

/// The program of `f` for `backend` with text `source`, as a static description. Programs
/// are interned by content (leaked once each), so running the same function again finds
/// the runtime's cached build.
fn program(f: &PrimFunc, backend: Backend, source: &str) -> &'static Program {
    type Key = (Backend, String, String, Vec<KernelInfo>);
    static PROGRAMS: OnceLock<Mutex<HashMap<Key, &'static Program>>> = OnceLock::new();
    let infos = kernel_infos(f);
    let key: Key = (backend, f.name.clone(), source.to_string(), infos.clone());
    let mut programs = PROGRAMS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    programs.entry(key).or_insert_with(|| {
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        let kernels: Vec<KernelDesc> = infos
            .iter()
            .map(|k| KernelDesc {
                name: leak(&k.name),
                params: Box::leak(k.params.clone().into_boxed_slice()),
                shared_bytes: k.shared_bytes,
                block: k.block,
            })
            .collect();
        Box::leak(Box::new(Program {
            backend,
            function: leak(&f.name),
            source: leak(source),
            kernels: Box::leak(kernels.into_boxed_slice()),
            binaries: &[],
        }))
    })
}

/// Binds the scalar parameters, and the dims from the shapes of the tensor arguments
/// (outputs included: a dim a `usize` scalar binds in generated code is bound by the
/// output's shape here) through the runtime's shape binder, checking every dimension.
fn bind(f: &PrimFunc, args: &[ArgValue]) -> Result<HashMap<VarId, ScalarValue>, Error> {
    if args.len() != f.params.len() {
        return Err(internal(format!("`{}` takes {} arguments, got {}", f.name, f.params.len(), args.len())));
    }
    let mut env = HashMap::new();
    let dims = crate::codegen::dim_vars(f);
    // Dims bound so far: the slot of each dim variable.
    let mut slots: HashMap<VarId, tvm_runtime::shape::DimSlot<'_>> = HashMap::new();
    for (p, a) in f.params.iter().zip(args) {
        if let Param::Scalar(v) = p {
            match a {
                ArgValue::Scalar(s) if s.dtype() == v.dtype() => {
                    env.insert(v.id(), *s);
                }
                _ => return Err(internal(format!("argument `{}`: expected a scalar of type {}", v.name(), v.dtype()))),
            }
        }
    }
    for (p, a) in f.params.iter().zip(args) {
        let Param::Tensor { buffer, shape, .. } = p else { continue };
        let ArgValue::Tensor(t) = a else {
            return Err(internal(format!("argument `{}`: expected a tensor", buffer.name())));
        };
        if t.dtype() != buffer.dtype() || t.shape.len() != shape.len() {
            return Err(internal(format!(
                "argument `{}`: expected a tensor of {} with {} dims, got {} {:?}",
                buffer.name(),
                buffer.dtype(),
                shape.len(),
                t.dtype(),
                t.shape
            )));
        }
        for (d, e) in shape.iter().enumerate() {
            match e {
                Expr::Var(v) => {
                    let slot = slots.entry(v.id()).or_default();
                    tvm_runtime::shape::bind_dim(slot, t.shape[d], &f.name, buffer.name(), d, v.name())?;
                }
                _ => {
                    let want = e.as_int().ok_or_else(|| internal(format!("dim {d} of `{}`", buffer.name())))?;
                    tvm_runtime::shape::check_dim(t.shape[d], want, &f.name, buffer.name(), d)?;
                }
            }
        }
    }
    for v in dims {
        if let Some(Some((value, _))) = slots.get(&v.id()) {
            let s = ScalarValue::int_checked(v.dtype(), *value as i128)
                .ok_or_else(|| internal(format!("dim `{}` = {value} does not fit {}", v.name(), v.dtype())))?;
            env.entry(v.id()).or_insert(s);
        }
    }
    Ok(env)
}

/// Host data on the device (one upload).
fn upload(m: &Module, d: &HostData) -> Result<gpu::Buffer, Error> {
    interp::each_data!(d, v => m.upload(v))
}

/// `b` read back into `d` (one download).
fn download(m: &Module, b: &gpu::Buffer, d: &mut HostData) -> Result<(), Error> {
    interp::each_data!(d, v => m.download(b, v))
}

/// The host body, walked on the host.
struct Host<'a> {
    f: &'a PrimFunc,
    m: &'a Module,
    env: HashMap<VarId, ScalarValue>,
    /// Device memory of the parameters and of the live intermediates, by buffer id.
    bufs: HashMap<u32, gpu::Buffer>,
    /// The fault buffer of the kernels that check values.
    fault: &'a gpu::Buffer,
}

/// The error of failed check `site` of `f` (as generated host code makes it).
fn check_failed(f: &PrimFunc, (site, value, extent): (u32, i64, i64)) -> Error {
    let kernel = f.name.clone();
    match f.checks.get(site as usize) {
        Some(crate::tir::CheckSite::Index { tensor, dim, index }) => {
            Error::IndexOutOfBounds { kernel, tensor: tensor.clone(), dim: *dim, index: index.clone(), value, extent }
        }
        Some(crate::tir::CheckSite::Divisor { divisor }) => Error::DivisionByZero { kernel, divisor: divisor.clone() },
        None => internal(format!("`{kernel}` reported check {site}, but it has {} checks", f.checks.len())),
    }
}

impl Host<'_> {
    fn fail(&self, reason: String) -> Error {
        Error::LaunchFailed { kernel: self.f.name.clone(), reason }
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Error> {
        match s {
            Stmt::Seq(v) => v.iter().try_for_each(|s| self.stmt(s)),
            Stmt::NoOp => Ok(()),
            Stmt::For { var, min, extent, body, .. } => {
                let lo = self.int(min)?;
                let n = self.int(extent)?;
                let saved = self.env.get(&var.id()).copied();
                let mut k = 0i128;
                while k < n {
                    // `lo + k` wrapping at the variable's width, as in TIR and the
                    // generated host code.
                    let v = wrap(var.dtype(), lo + k)
                        .ok_or_else(|| internal(format!("loop variable `{}` of type {}", var.name(), var.dtype())))?;
                    self.env.insert(var.id(), v);
                    self.stmt(body)?;
                    k += 1;
                }
                restore(&mut self.env, var.id(), saved);
                Ok(())
            }
            Stmt::Let { var, value, body } => {
                let v = self.eval(value)?;
                // A dim a shape bound and the host body binds again (a dim bound by a
                // `usize` scalar in the kernel, bound here by an output's shape too):
                // they must agree, or the kernels would index past the buffers.
                if let Some(bound) = self.env.get(&var.id()) {
                    if *bound != v {
                        return Err(self.fail(format!(
                            "`{}` is {} by the shapes and {} by the scalars",
                            var.name(),
                            show(bound),
                            show(&v)
                        )));
                    }
                }
                let saved = self.env.insert(var.id(), v);
                let r = self.stmt(body);
                restore(&mut self.env, var.id(), saved);
                r
            }
            Stmt::If { cond, then, otherwise } => match self.eval(cond)? {
                ScalarValue::Bool(true) => self.stmt(then),
                ScalarValue::Bool(false) => otherwise.as_ref().map_or(Ok(()), |o| self.stmt(o)),
                other => Err(internal(format!("a host condition of type {}", other.dtype()))),
            },
            Stmt::Allocate { buffer, extent, body } if buffer.scope() == Scope::Global => {
                let n = checked_extent(&self.env, extent).map_err(|m| self.fail(m))?;
                let b = self.m.alloc(buffer.name(), n, buffer.dtype().bytes())?;
                self.bufs.insert(buffer.id().0, b);
                let r = self.stmt(body);
                self.bufs.remove(&buffer.id().0);
                r
            }
            Stmt::Launch { kernel } => self.launch(*kernel),
            other => Err(internal(format!(
                "`{}` in the host body of `{}`",
                crate::tir::printer::print_stmt(other).trim(),
                self.f.name
            ))),
        }
    }

    fn launch(&mut self, index: usize) -> Result<(), Error> {
        let k = self.f.kernels.get(index).ok_or_else(|| internal(format!("a launch of missing kernel {index}")))?;
        let mut grid = [0i64; 3];
        let mut block = [0i64; 3];
        for d in 0..3 {
            grid[d] = self.i64(&k.grid[d])?;
            block[d] = self.i64(&k.block[d])?;
        }
        let mut args = Vec::with_capacity(k.buffer_args.len() + k.scalar_args.len());
        for b in &k.buffer_args {
            let buf =
                self.bufs.get(&b.id().0).ok_or_else(|| internal(format!("`{}` has no device memory", b.name())))?;
            args.push(KernelArg::Buffer(buf));
        }
        for v in &k.scalar_args {
            let s = self.env.get(&v.id()).ok_or_else(|| internal(format!("`{}` is unbound on the host", v.name())))?;
            if self.f.target.kind == crate::TargetKind::WebGpu && crate::arith::narrow::wide(v.dtype()) {
                if grid.contains(&0) {
                    return Ok(()); // nothing runs, whatever the scalars (as generated code)
                }
                // As the generated host code passes it (`codegen::host`): the `i32` the
                // WGSL computes with, within the bound its arithmetic is exact for.
                let limit =
                    crate::codegen::wgsl::kernel_scalar_limit(self.f, k).map_err(|e| internal(e.to_string()))?;
                let x = s.as_i128().ok_or_else(|| internal(format!("`{}` is not an integer", v.name())))?;
                let n = tvm_runtime::__rt::narrow_scalar(x, limit, &k.name, v.name())?;
                args.push(KernelArg::Scalar(tvm_runtime::gpu::Scalar::I32(n)));
                continue;
            }
            args.push(KernelArg::Scalar(scalar(*s)));
        }
        if crate::tir::visit::contains_check(&k.body) {
            args.push(KernelArg::Buffer(self.fault));
        }
        // SAFETY: the caller of `run_source_on_device` promised that the program is `f`'s,
        // and the buffers are the parameters (their shapes bound `f`'s dims) and the
        // intermediates allocated at the sizes the lowering gave them.
        unsafe { self.m.launch(index, grid, block, &args) }
    }

    fn eval(&self, e: &Expr) -> Result<ScalarValue, Error> {
        eval(&self.env, e).map_err(|m| self.fail(m))
    }

    fn int(&self, e: &Expr) -> Result<i128, Error> {
        self.eval(e)?.as_i128().ok_or_else(|| internal(format!("a host expression of type {}", e.dtype())))
    }

    fn i64(&self, e: &Expr) -> Result<i64, Error> {
        let v = self.int(e)?;
        i64::try_from(v).map_err(|_| self.fail(format!("a launch extent is {v}")))
    }
}

/// `v` wrapped to the width of the integer type `dtype`.
fn wrap(dtype: crate::DType, v: i128) -> Option<ScalarValue> {
    let bits = dtype.bits as u32;
    let wrapped = match dtype.kind {
        ScalarKind::Int => (v << (128 - bits)) >> (128 - bits),
        ScalarKind::UInt => v & ((1i128 << bits) - 1),
        _ => return None,
    };
    ScalarValue::int_checked(dtype, wrapped)
}

fn show(s: &ScalarValue) -> String {
    s.as_i128().map_or_else(|| format!("{s:?}"), |v| v.to_string())
}

/// An allocation's element count with sums, differences and products checked, as the
/// generated host code computes it: `None` where it overflows `i64`.
fn checked_extent(env: &HashMap<VarId, ScalarValue>, e: &Expr) -> Result<Option<i64>, String> {
    use crate::tir::BinOp;
    if let Expr::Binary { op: op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b } = e {
        if e.dtype() == crate::DType::I64 {
            let (x, y) = (checked_extent(env, a)?, checked_extent(env, b)?);
            return Ok(x.zip(y).and_then(|(x, y)| match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                _ => x.checked_mul(y),
            }));
        }
    }
    let v = eval(env, e)?.as_i128().ok_or_else(|| format!("an allocation size of type {}", e.dtype()))?;
    Ok(i64::try_from(v).ok())
}

fn restore(env: &mut HashMap<VarId, ScalarValue>, id: VarId, saved: Option<ScalarValue>) {
    match saved {
        Some(v) => env.insert(id, v),
        None => env.remove(&id),
    };
}

/// The kernel argument of a scalar value (f16/bf16 from their bits).
fn scalar(s: ScalarValue) -> Scalar {
    use tvm_runtime::half::{bf16, f16};
    match s {
        ScalarValue::Bool(b) => Scalar::Bool(b),
        ScalarValue::I8(x) => Scalar::I8(x),
        ScalarValue::I16(x) => Scalar::I16(x),
        ScalarValue::I32(x) => Scalar::I32(x),
        ScalarValue::I64(x) => Scalar::I64(x),
        ScalarValue::U8(x) => Scalar::U8(x),
        ScalarValue::U16(x) => Scalar::U16(x),
        ScalarValue::U32(x) => Scalar::U32(x),
        ScalarValue::U64(x) => Scalar::U64(x),
        ScalarValue::F16(x) => Scalar::F16(f16::from_bits(x)),
        ScalarValue::BF16(x) => Scalar::BF16(bf16::from_bits(x)),
        ScalarValue::F32(x) => Scalar::F32(x),
        ScalarValue::F64(x) => Scalar::F64(x),
    }
}

/// A host expression's value, with the interpreter's scalar operations (division by zero
/// and an overflowing `MIN / -1` are errors).
fn eval(env: &HashMap<VarId, ScalarValue>, e: &Expr) -> Result<ScalarValue, String> {
    let bool_of = |e: &Expr| match eval(env, e)? {
        ScalarValue::Bool(b) => Ok(b),
        other => Err(format!("expected a bool host expression, got {}", other.dtype())),
    };
    Ok(match e {
        Expr::Int { value, dtype } => match dtype.kind {
            ScalarKind::UInt if dtype.bits == 64 => ScalarValue::U64(*value as u64),
            _ => ScalarValue::int_checked(*dtype, *value as i128)
                .ok_or_else(|| format!("constant {value} does not fit {dtype}"))?,
        },
        Expr::Float { value, dtype } => {
            ScalarValue::from_f64(*dtype, *value).ok_or_else(|| format!("float constant of type {dtype}"))?
        }
        Expr::Bool(b) => ScalarValue::Bool(*b),
        Expr::Var(v) => *env.get(&v.id()).ok_or_else(|| format!("unbound variable `{}` on the host", v.name()))?,
        Expr::Binary { op, a, b } => interp::binary(*op, eval(env, a)?, eval(env, b)?).map_err(|e| e.to_string())?,
        Expr::Neg(a) => interp::neg(eval(env, a)?).map_err(|e| e.to_string())?,
        Expr::Cmp { op, a, b } => {
            ScalarValue::Bool(interp::compare(*op, eval(env, a)?, eval(env, b)?).map_err(|e| e.to_string())?)
        }
        Expr::And(a, b) => ScalarValue::Bool(bool_of(a)? && bool_of(b)?),
        Expr::Or(a, b) => ScalarValue::Bool(bool_of(a)? || bool_of(b)?),
        Expr::Not(a) => ScalarValue::Bool(!bool_of(a)?),
        Expr::Select { cond, then, otherwise } => {
            if bool_of(cond)? {
                eval(env, then)?
            } else {
                eval(env, otherwise)?
            }
        }
        Expr::Cast { dtype, value } => interp::cast(*dtype, eval(env, value)?).map_err(|e| e.to_string())?,
        other => return Err(format!("unsupported host expression `{}`", crate::tir::printer::print_expr(other))),
    })
}
