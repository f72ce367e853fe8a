//! The OpenCL runtime (feature `opencl`): runs a lowered GPU [`PrimFunc`] whose kernels
//! were printed as OpenCL C.
//!
//! * [`OpenClRuntime`]: the process-wide state, created on first use. `Device::OpenCl(n)`
//!   is device `n` of every OpenCL device of every platform, in platform order. Each device
//!   gets one context and one in-order command queue (created on first use); built programs
//!   are cached per (device, source), so each program is built once per process (a failed
//!   build included: its error is cached too).
//! * [`run_primfunc`]: binds the dims from the argument shapes (as the interpreter does),
//!   uploads inputs, allocates outputs and the host body's global intermediates on the
//!   device, walks the host body (`Seq`, `For`, `Let`, `If`, `Allocate`, `Launch`)
//!   evaluating its integer expressions on the host, launches the kernels and reads the
//!   outputs back.
//!
//! The kernel ABI (what the OpenCL C printer emits): `__kernel void <Kernel.name>(<one
//! __global T* per buffer_args, in order>, <one scalar per scalar_args, in order: i64 →
//! long, u64 → ulong, i32 → int, f32 → float, f64 → double, bool → uchar>)`, launched with
//! local size = block and global size = grid × block per dim. A grid or block with a zero
//! extent launches nothing.

use super::error::Error;
use super::DeviceArg;
use crate::dtype::{DType, ScalarKind};
use crate::interp::{self, ArgValue, HostData, ScalarValue};
use crate::tir::{Expr, Kernel, Param, PrimFunc, Scope, Stmt, VarId};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::memory::{Buffer as ClBuffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_bool, cl_device_id};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const BLOCKING: cl_bool = 1;

/// One OpenCL device, with its context and queue made on first use.
struct DeviceSlot {
    id: cl_device_id,
    platform_name: String,
    name: String,
    state: OnceLock<Result<DeviceState, Error>>,
}

// SAFETY: a `cl_device_id` is an opaque handle the OpenCL API allows using from any thread.
unsafe impl Send for DeviceSlot {}
unsafe impl Sync for DeviceSlot {}

struct DeviceState {
    context: Context,
    queue: CommandQueue,
    max_work_group_size: usize,
    max_work_item_sizes: Vec<usize>,
    caps: Caps,
    /// Device buffers of finished runs, by size in bytes, for the next runs to reuse
    /// (allocating and first touching device memory costs more than the copies).
    pool: Mutex<Vec<(usize, ClBuffer<u8>)>>,
    /// Programs by source, each built (or failed) once. The map's lock is held only to
    /// find or insert a source's cell; the build runs outside it, so runs of other
    /// programs do not wait for it, while callers of the same source wait on its cell.
    programs: Mutex<HashMap<String, ProgramCell>>,
}

type ProgramCell = Arc<OnceLock<Result<Arc<Program>, Error>>>;

/// At most this many buffers, and this many bytes, wait in a device's pool.
const POOL_BUFFERS: usize = 16;
const POOL_BYTES: usize = 1 << 30;

impl DeviceState {
    /// A device buffer of `bytes` (at least 1) bytes: one of the pool's if it has that
    /// size, else a new one. Its contents are unspecified.
    fn alloc(&self, bytes: usize) -> Result<ClBuffer<u8>, opencl3::error_codes::ClError> {
        let size = bytes.max(1); // OpenCL rejects empty buffers
        {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = pool.iter().position(|(n, _)| *n == size) {
                return Ok(pool.swap_remove(i).1);
            }
        }
        // SAFETY: no host pointer is passed.
        unsafe { ClBuffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, size, std::ptr::null_mut()) }
    }

    /// Gives a buffer of `bytes` bytes (as passed to `alloc`) back to the pool, dropping
    /// the oldest ones past the pool's limits.
    fn release(&self, bytes: usize, b: ClBuffer<u8>) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.push((bytes.max(1), b));
        while pool.len() > POOL_BUFFERS || pool.iter().map(|(n, _)| n).sum::<usize>() > POOL_BYTES {
            pool.remove(0);
        }
    }
}

/// What a device supports of what generated programs may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caps {
    /// `opencl:N (platform: device)`, for messages.
    pub label: String,
    /// Double precision (`cl_khr_fp64`, or a non-zero `CL_DEVICE_DOUBLE_FP_CONFIG`).
    pub fp64: bool,
    /// Half precision arithmetic (`cl_khr_fp16`).
    pub fp16: bool,
    /// `CL_DEVICE_LOCAL_MEM_SIZE` in bytes.
    pub local_mem_bytes: u64,
}

impl Caps {
    /// `Ok` if the device can build `source`, judged by the extension pragmas the OpenCL
    /// printer puts first in a program that uses f64 or f16; else
    /// `Err(DeviceUnsupported)` naming the type and the extension.
    pub fn check_program(&self, source: &str) -> Result<(), Error> {
        let pragma = |ext: &str| {
            source.lines().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() >= 4 && w[0] == "#pragma" && w[1] == "OPENCL" && w[2] == "EXTENSION" && w[3] == ext
            })
        };
        for (used, have, ty, ext) in [
            (pragma("cl_khr_fp64"), self.fp64, "f64", "cl_khr_fp64"),
            (pragma("cl_khr_fp16"), self.fp16, "f16", "cl_khr_fp16"),
        ] {
            if used && !have {
                return Err(Error::DeviceUnsupported {
                    device: self.label.clone(),
                    reason: format!("the kernel computes in {ty}, and the device does not report {ext}"),
                });
            }
        }
        Ok(())
    }

    /// `Ok` if a kernel using `bytes` of local (shared) memory fits the device.
    pub fn check_local_memory(&self, kernel: &str, bytes: u64) -> Result<(), Error> {
        if bytes > self.local_mem_bytes {
            return Err(Error::DeviceUnsupported {
                device: self.label.clone(),
                reason: format!(
                    "kernel `{kernel}` uses {bytes} bytes of local memory, more than the device's {} bytes",
                    self.local_mem_bytes
                ),
            });
        }
        Ok(())
    }
}

/// The process-wide OpenCL state: the devices of every platform, with one context, queue
/// and cache of built programs per device. Thread-safe; get it with
/// [`OpenClRuntime::global`].
pub struct OpenClRuntime {
    devices: Vec<DeviceSlot>,
    /// Why no device was found, when enumeration itself failed.
    enumeration_error: Option<String>,
}

impl OpenClRuntime {
    /// The runtime, created (platforms and devices enumerated) on the first call.
    pub fn global() -> &'static OpenClRuntime {
        static RT: OnceLock<OpenClRuntime> = OnceLock::new();
        RT.get_or_init(OpenClRuntime::enumerate)
    }

    fn enumerate() -> OpenClRuntime {
        let mut devices = Vec::new();
        let mut enumeration_error = None;
        match opencl3::platform::get_platforms() {
            Ok(platforms) => {
                for p in platforms {
                    let platform_name = p.name().unwrap_or_else(|_| "unknown platform".to_string());
                    // A platform with no device reports CL_DEVICE_NOT_FOUND: skip it.
                    let ids = p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
                    for id in ids {
                        let name = ClDevice::new(id).name().unwrap_or_else(|_| "unknown device".to_string());
                        devices.push(DeviceSlot {
                            id,
                            platform_name: platform_name.clone(),
                            name,
                            state: OnceLock::new(),
                        });
                    }
                }
            }
            Err(e) => enumeration_error = Some(format!("no OpenCL platform found ({e})")),
        }
        OpenClRuntime { devices, enumeration_error }
    }

    /// The number of OpenCL devices, over all platforms.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// "platform: device" of device `n`, if it exists.
    pub fn device_name(&self, n: usize) -> Option<String> {
        self.devices.get(n).map(|d| format!("{}: {}", d.platform_name, d.name))
    }

    fn unavailable(&self, n: usize, reason: String) -> Error {
        Error::DeviceUnavailable { device: format!("opencl:{n}"), reason }
    }

    fn slot(&self, n: usize) -> Result<&DeviceSlot, Error> {
        match self.devices.get(n) {
            Some(s) => Ok(s),
            None => Err(self.unavailable(
                n,
                match (&self.enumeration_error, self.devices.len()) {
                    (Some(e), _) => e.clone(),
                    (None, 0) => "no OpenCL device found".to_string(),
                    (None, 1) => "only 1 OpenCL device found".to_string(),
                    (None, k) => format!("only {k} OpenCL devices found"),
                },
            )),
        }
    }

    /// `Ok` if device `n` exists and its context and queue can be made.
    pub fn check_device(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|_| ())
    }

    fn state(&self, n: usize) -> Result<&DeviceState, Error> {
        let slot = self.slot(n)?;
        slot.state
            .get_or_init(|| {
                let dev = ClDevice::new(slot.id);
                let fail = |what: &str, e: opencl3::error_codes::ClError| {
                    self.unavailable(n, format!("{what} failed on `{}`: {e}", slot.name))
                };
                let context = Context::from_device(&dev).map_err(|e| fail("creating a context", e))?;
                #[allow(deprecated)]
                let queue =
                    CommandQueue::create_default(&context, 0).map_err(|e| fail("creating a command queue", e))?;
                let max_work_group_size = dev.max_work_group_size().map_err(|e| fail("querying the device", e))?;
                let max_work_item_sizes = dev.max_work_item_sizes().unwrap_or_default();
                let extensions = dev.extensions().unwrap_or_default();
                let has = |ext: &str| extensions.split_whitespace().any(|e| e == ext);
                let caps = Caps {
                    label: format!("opencl:{n} ({}: {})", slot.platform_name, slot.name),
                    fp64: has("cl_khr_fp64") || dev.double_fp_config().unwrap_or(0) != 0,
                    fp16: has("cl_khr_fp16"),
                    local_mem_bytes: dev.local_mem_size().map_err(|e| fail("querying the device", e))?,
                };
                Ok(DeviceState {
                    context,
                    queue,
                    max_work_group_size,
                    max_work_item_sizes,
                    caps,
                    pool: Mutex::new(Vec::new()),
                    programs: Mutex::new(HashMap::new()),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// What device `n` supports (f64, f16, local memory).
    pub fn caps(&self, n: usize) -> Result<Caps, Error> {
        self.state(n).map(|s| s.caps.clone())
    }

    /// Builds `source` for device `n` with the OpenCL compiler `options` (say
    /// `-Werror`), without the cache, and returns the build log (empty when the compiler
    /// said nothing); `Err(CompilationFailed)` with the log when it does not build.
    pub fn build_uncached(&self, n: usize, source: &str, options: &str) -> Result<String, Error> {
        self.compile(n, source, options).map(|(_, log)| log)
    }

    /// Builds `source` for device `n` (or returns the outcome of the build before);
    /// `Err(CompilationFailed)` with the build log when it does not compile.
    pub fn build(&self, n: usize, source: &str) -> Result<(), Error> {
        self.program(n, source).map(|_| ())
    }

    /// The program of `source` on device `n` from the cache, built on first use: every
    /// call for one (device, source) returns the same `Arc`, or the same error. Public for
    /// the runtime's tests only.
    #[doc(hidden)]
    pub fn program(&self, n: usize, source: &str) -> Result<Arc<Program>, Error> {
        let state = self.state(n)?;
        let cell = {
            let mut programs = state.programs.lock().unwrap_or_else(|p| p.into_inner());
            match programs.get(source) {
                Some(c) => c.clone(),
                None => programs.entry(source.to_string()).or_default().clone(),
            }
        };
        cell.get_or_init(|| self.compile(n, source, "").map(|(p, _)| Arc::new(p))).clone()
    }

    /// Whether device `n`'s cache holds `source` (built, failed, or being built). Public
    /// for the runtime's tests only.
    #[doc(hidden)]
    pub fn is_cached(&self, n: usize, source: &str) -> bool {
        self.state(n).is_ok_and(|s| s.programs.lock().unwrap_or_else(|p| p.into_inner()).contains_key(source))
    }

    /// Builds `source` for device `n` with `options`, after checking that the device
    /// supports what it uses ([`Caps::check_program`]): the program and its build log
    /// (trimmed); `Err(CompilationFailed)` with the log when it does not build.
    fn compile(&self, n: usize, source: &str, options: &str) -> Result<(Program, String), Error> {
        let state = self.state(n)?;
        let slot = self.slot(n)?;
        state.caps.check_program(source)?;
        let failed = |log: String| Error::CompilationFailed { target: "opencl".to_string(), log };
        if source.contains('\0') || options.contains('\0') {
            return Err(failed("the source or the options contain a NUL character".to_string()));
        }
        let mut program = Program::create_from_source(&state.context, source)
            .map_err(|e| failed(format!("creating the program failed: {e}")))?;
        let built = program.build(&[slot.id], options);
        let log = program.get_build_log(slot.id).unwrap_or_default();
        match built {
            Ok(()) => Ok((program, log.trim().to_string())),
            Err(e) => Err(failed(format!("{e}\n{log}"))),
        }
    }
}

/// Runs `f` (a lowered function with kernels) on OpenCL device `device`, the kernels taken
/// from `source` (the OpenCL C of `f`'s kernels). `args` are in the order of `f.params`,
/// as for [`crate::interp::run`], with the outputs as host tensors of the right shape,
/// overwritten only when the whole run succeeds. The outputs' device memory starts as
/// their given contents (poison them to see elements a kernel never writes). Copies each tensor once more than
/// [`run`]; tests and tools use it, generated code calls [`run`].
pub fn run_primfunc(device: usize, f: &PrimFunc, source: &str, args: &mut [ArgValue]) -> Result<(), Error> {
    let is_output = |i: usize| matches!(f.params.get(i), Some(Param::Tensor { is_output: true, .. }));
    // The outputs' bytes (empty for the other arguments): the host tensors change only
    // once the run succeeded.
    let mut staged: Vec<Vec<u8>> = args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            ArgValue::Tensor(t) if is_output(i) => host_bytes(&t.data).to_vec(),
            _ => Vec::new(),
        })
        .collect();
    let mut dargs: Vec<DeviceArg<'_>> = args
        .iter()
        .zip(staged.iter_mut())
        .enumerate()
        .map(|(i, (a, bytes))| match a {
            ArgValue::Scalar(s) => DeviceArg::Scalar(*s),
            ArgValue::Tensor(t) if is_output(i) => {
                DeviceArg::Output { dtype: t.dtype(), shape: t.shape.clone(), bytes, upload: true }
            }
            ArgValue::Tensor(t) => {
                DeviceArg::Input { dtype: t.dtype(), shape: t.shape.clone(), bytes: host_bytes(&t.data) }
            }
        })
        .collect();
    run(device, f, source, &mut dargs)?;
    drop(dargs);
    let mut results = Vec::new();
    for (i, (a, bytes)) in args.iter().zip(&staged).enumerate() {
        if let ArgValue::Tensor(t) = a {
            if is_output(i) {
                results.push((i, from_bytes(t.dtype(), bytes)?));
            }
        }
    }
    for (i, data) in results {
        if let ArgValue::Tensor(t) = &mut args[i] {
            t.data = data;
        }
    }
    Ok(())
}

/// Runs `f` on OpenCL device `device` with the kernels of `source` (its OpenCL C), on
/// borrowed arguments in the order of `f.params`: binds the dims from the shapes as the
/// interpreter does (a mismatch is an [`Error::ShapeMismatch`], a dim that does not fit
/// its variable's type an [`Error::ScalarOutOfRange`], a wrong argument an
/// [`Error::LaunchFailed`]), builds the program (or takes it from the cache), uploads the
/// inputs, allocates the outputs and the host body's global intermediates on the device,
/// walks the host body launching the kernels, and reads the outputs back into their
/// `bytes`. When it fails after the
/// kernels ran (a failed read back), the outputs' contents are unspecified.
pub fn run(device: usize, f: &PrimFunc, source: &str, args: &mut [DeviceArg<'_>]) -> Result<(), Error> {
    let rt = OpenClRuntime::global();
    let state = rt.state(device)?;
    let fail = |reason: String| Error::LaunchFailed { kernel: f.name.clone(), reason };

    // Bind the scalars and dims.
    if args.len() != f.params.len() {
        return Err(fail(format!("the function takes {} arguments, got {}", f.params.len(), args.len())));
    }
    let mut env: HashMap<VarId, ScalarValue> = HashMap::new();
    let mut bound_by: HashMap<VarId, String> = HashMap::new();
    for (i, p) in f.params.iter().enumerate() {
        if let Param::Scalar(v) = p {
            match &args[i] {
                DeviceArg::Scalar(s) if s.dtype() == v.dtype() => {
                    env.insert(v.id(), *s);
                    bound_by.insert(v.id(), v.name().to_string());
                }
                other => {
                    let got = match other {
                        DeviceArg::Scalar(s) => format!("a scalar of type {}", s.dtype()),
                        _ => "a tensor".to_string(),
                    };
                    return Err(fail(format!(
                        "argument {i} (`{}`): expected a scalar of type {}, got {got}",
                        v.name(),
                        v.dtype()
                    )));
                }
            }
        }
    }
    for (i, p) in f.params.iter().enumerate() {
        let Param::Tensor { buffer, shape, is_output } = p else { continue };
        let Some((dtype, tshape, nbytes)) = args[i].tensor() else {
            return Err(fail(format!("argument {i} (`{}`): expected a tensor, got a scalar", buffer.name())));
        };
        if matches!(args[i], DeviceArg::Output { .. }) != *is_output {
            let want = if *is_output { "an output" } else { "an input" };
            return Err(fail(format!("argument {i} (`{}`): expected {want} tensor", buffer.name())));
        }
        if dtype != buffer.dtype() {
            return Err(fail(format!(
                "argument {i} (`{}`): expected a tensor of {}, got a tensor of {dtype}",
                buffer.name(),
                buffer.dtype()
            )));
        }
        if tshape.len() != shape.len() {
            return Err(Error::RankMismatch { expected: shape.len(), got: tshape.len() });
        }
        let numel = tshape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if numel.and_then(|n| n.checked_mul(dtype.bytes())) != Some(nbytes) {
            return Err(Error::LengthMismatch { len: nbytes / dtype.bytes().max(1), shape: tshape.to_vec() });
        }
        for (d, e) in shape.iter().enumerate() {
            let Expr::Var(v) = e else { continue };
            let size = tshape[d];
            match env.get(&v.id()).and_then(|s| s.as_i128()) {
                Some(have) if have == size as i128 => {}
                Some(have) => {
                    return Err(Error::ShapeMismatch {
                        kernel: f.name.clone(),
                        param: buffer.name().to_string(),
                        dim: d,
                        got: size,
                        expected: usize::try_from(have).unwrap_or(0),
                        symbol: Some(v.name().to_string()),
                        bound_by: bound_by.get(&v.id()).cloned(),
                    })
                }
                None => {
                    let Some(s) = ScalarValue::int_checked(v.dtype(), size as i128) else {
                        return Err(Error::ScalarOutOfRange {
                            kernel: f.name.clone(),
                            param: v.name().to_string(),
                            value: size.to_string(),
                            reason: format!("dimension {d} of `{}` does not fit in {}", buffer.name(), v.dtype()),
                        });
                    };
                    env.insert(v.id(), s);
                    bound_by.insert(v.id(), buffer.name().to_string());
                }
            }
        }
    }
    // Every other dim (an expression of the dims) against the actual shape; variable dims
    // were checked above.
    for (i, p) in f.params.iter().enumerate() {
        let (Param::Tensor { buffer, shape, .. }, Some((_, tshape, _))) = (p, args[i].tensor()) else { continue };
        for (d, e) in shape.iter().enumerate() {
            if matches!(e, Expr::Var(_)) {
                continue;
            }
            let want = eval_int(&env, e).map_err(&fail)?;
            if want != tshape[d] as i128 {
                return Err(Error::ShapeMismatch {
                    kernel: f.name.clone(),
                    param: buffer.name().to_string(),
                    dim: d,
                    got: tshape[d],
                    expected: usize::try_from(want).unwrap_or(0),
                    symbol: None,
                    bound_by: None,
                });
            }
        }
    }

    // The program first: a build failure allocates nothing.
    let program = rt.program(device, source)?;

    // Device buffers of the parameters; inputs uploaded.
    let mut bufs: HashMap<u32, (usize, ClBuffer<u8>)> = HashMap::new();
    for (i, p) in f.params.iter().enumerate() {
        let Param::Tensor { buffer, .. } = p else { continue };
        let Some((_, _, nbytes)) = args[i].tensor() else { continue };
        let mut b = state.alloc(nbytes).map_err(|e| fail(format!("allocating `{}`: {e}", buffer.name())))?;
        let upload: Option<&[u8]> = match &args[i] {
            DeviceArg::Input { bytes, .. } => Some(bytes),
            DeviceArg::Output { bytes, upload: true, .. } => Some(bytes),
            _ => None,
        };
        if let Some(bytes) = upload {
            if !bytes.is_empty() {
                // SAFETY: `b` holds at least `bytes.len()` bytes; the write is blocking, so
                // `bytes` is not used after the call returns.
                unsafe { state.queue.enqueue_write_buffer(&mut b, BLOCKING, 0, bytes, &[]) }
                    .map_err(|e| fail(format!("uploading `{}`: {e}", buffer.name())))?;
            }
        }
        bufs.insert(buffer.id().0, (nbytes, b));
    }

    let shared_bytes = crate::passes::verify_gpu_memory::verify_gpu_memory(f).1;
    let mut exec = Exec {
        f,
        state,
        program: &program,
        device_id: rt.slot(device)?.id,
        env,
        bufs,
        shared_bytes,
        kernels: (0..f.kernels.len()).map(|_| None).collect(),
    };
    exec.stmt(&f.body)?;
    state.queue.finish().map_err(|e| fail(format!("waiting for the kernels: {e}")))?;

    // Read the outputs back.
    for (i, p) in f.params.iter().enumerate() {
        let (Param::Tensor { buffer, .. }, DeviceArg::Output { bytes, .. }) = (p, &mut args[i]) else { continue };
        if bytes.is_empty() {
            continue;
        }
        let Some((_, b)) = exec.bufs.get(&buffer.id().0) else {
            return Err(Error::Internal { message: format!("output `{}` has no device buffer", buffer.name()) });
        };
        // SAFETY: the device buffer holds `bytes.len()` bytes; the read is blocking.
        unsafe { state.queue.enqueue_read_buffer(b, BLOCKING, 0, bytes, &[]) }
            .map_err(|e| fail(format!("reading back `{}`: {e}", buffer.name())))?;
    }
    for (_, (n, b)) in exec.bufs.drain() {
        state.release(n, b);
    }
    Ok(())
}

struct Exec<'a> {
    f: &'a PrimFunc,
    state: &'a DeviceState,
    program: &'a Program,
    device_id: cl_device_id,
    env: HashMap<VarId, ScalarValue>,
    /// Device buffers by buffer id, with their sizes in bytes.
    bufs: HashMap<u32, (usize, ClBuffer<u8>)>,
    /// The local memory of each kernel, in bytes.
    shared_bytes: Vec<u64>,
    /// The kernel objects of this run with their work-group limits, by kernel index,
    /// made at the kernel's first launch. Per run, not shared: arguments are set on the
    /// object before each launch, which would race between concurrent runs.
    kernels: Vec<Option<(ClKernel, usize)>>,
}

impl Exec<'_> {
    fn fail(&self, reason: String) -> Error {
        Error::LaunchFailed { kernel: self.f.name.clone(), reason }
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Error> {
        match s {
            Stmt::Seq(v) => v.iter().try_for_each(|s| self.stmt(s)),
            Stmt::NoOp => Ok(()),
            Stmt::For { var, min, extent, body, .. } => {
                let lo = eval_int(&self.env, min).map_err(|m| self.fail(m))?;
                let n = eval_int(&self.env, extent).map_err(|m| self.fail(m))?;
                let saved = self.env.get(&var.id()).copied();
                let mut k = 0i128;
                while k < n {
                    let v = int_value(var.dtype(), lo + k).map_err(|m| self.fail(m))?;
                    self.env.insert(var.id(), v);
                    self.stmt(body)?;
                    k += 1;
                }
                restore(&mut self.env, var.id(), saved);
                Ok(())
            }
            Stmt::Let { var, value, body } => {
                let v = eval(&self.env, value).map_err(|m| self.fail(m))?;
                let saved = self.env.insert(var.id(), v);
                let r = self.stmt(body);
                restore(&mut self.env, var.id(), saved);
                r
            }
            Stmt::If { cond, then, otherwise } => {
                let c = eval_bool(&self.env, cond).map_err(|m| self.fail(m))?;
                if c {
                    self.stmt(then)
                } else if let Some(o) = otherwise {
                    self.stmt(o)
                } else {
                    Ok(())
                }
            }
            Stmt::Allocate { buffer, extent, body } => {
                if buffer.scope() != Scope::Global {
                    return Err(self.fail(format!(
                        "host body allocates `{}` in {} memory; only global allocations run on the host",
                        buffer.name(),
                        buffer.scope().name()
                    )));
                }
                let n = eval_int(&self.env, extent).map_err(|m| self.fail(m))?;
                let bytes = usize::try_from(n)
                    .ok()
                    .and_then(|n| n.checked_mul(buffer.dtype().bytes()))
                    .ok_or_else(|| self.fail(format!("allocation `{}` of {n} elements is invalid", buffer.name())))?;
                let b =
                    self.state.alloc(bytes).map_err(|e| self.fail(format!("allocating `{}`: {e}", buffer.name())))?;
                self.bufs.insert(buffer.id().0, (bytes, b));
                let r = self.stmt(body);
                // Back to the pool before the kernels using it finished: safe, as the queue
                // is in-order, so whatever the buffer's next user enqueues runs after them.
                if let Some((n, b)) = self.bufs.remove(&buffer.id().0) {
                    self.state.release(n, b);
                }
                r
            }
            Stmt::Launch { kernel } => {
                let Some(k) = self.f.kernels.get(*kernel) else {
                    return Err(Error::Internal {
                        message: format!("launch of kernel {kernel}, which does not exist"),
                    });
                };
                self.launch(*kernel, k)
            }
            other => Err(Error::Internal {
                message: format!("unsupported statement in the host body of `{}`: {other:?}", self.f.name),
            }),
        }
    }

    fn launch(&mut self, index: usize, k: &Kernel) -> Result<(), Error> {
        let fail = |reason: String| Error::LaunchFailed { kernel: k.name.clone(), reason };
        let mut grid = [0usize; 3];
        let mut block = [0usize; 3];
        for d in 0..3 {
            for (out, e, what) in [(&mut grid[d], &k.grid[d], "grid"), (&mut block[d], &k.block[d], "block")] {
                let v = eval_int(&self.env, e).map_err(&fail)?;
                *out = usize::try_from(v).map_err(|_| fail(format!("{what} extent {d} is {v}")))?;
            }
        }
        if grid.contains(&0) || block.contains(&0) {
            return Ok(());
        }
        let group: usize = block.iter().try_fold(1usize, |a, &b| a.checked_mul(b)).unwrap_or(usize::MAX);
        if group > self.state.max_work_group_size {
            return Err(fail(format!(
                "block {block:?} has {group} threads, more than the device's maximum work-group size {}",
                self.state.max_work_group_size
            )));
        }
        for (d, (&b, &m)) in block.iter().zip(&self.state.max_work_item_sizes).enumerate() {
            if b > m {
                return Err(fail(format!(
                    "block extent {d} is {b}, more than the device's maximum work-item size {m} in that dimension"
                )));
            }
        }
        let mut global = [0usize; 3];
        for d in 0..3 {
            global[d] = grid[d]
                .checked_mul(block[d])
                .ok_or_else(|| fail(format!("grid {grid:?} times block {block:?} overflows")))?;
        }
        let (kern, limit) = match &mut self.kernels[index] {
            Some((kern, limit)) => (&*kern, *limit),
            slot @ None => {
                let bytes = self.shared_bytes.get(index).copied().unwrap_or(0);
                self.state.caps.check_local_memory(&k.name, bytes)?;
                let kern = ClKernel::create(self.program, &k.name)
                    .map_err(|e| fail(format!("the program has no kernel `{}` ({e})", k.name)))?;
                let limit =
                    kern.get_work_group_size(self.device_id).map_err(|e| fail(format!("querying the kernel: {e}")))?;
                let (kern, limit) = slot.insert((kern, limit));
                (&*kern, *limit)
            }
        };
        if group > limit {
            return Err(fail(format!(
                "block {block:?} has {group} threads, more than the kernel's work-group limit {limit} on this device \
                 (device maximum {})",
                self.state.max_work_group_size
            )));
        }
        let mut idx = 0u32;
        for b in &k.buffer_args {
            let Some((_, buf)) = self.bufs.get(&b.id().0) else {
                return Err(Error::Internal {
                    message: format!("kernel `{}` reads `{}`, which has no device buffer", k.name, b.name()),
                });
            };
            let mem = buf.get();
            // SAFETY: a buffer argument is a `cl_mem`.
            unsafe { kern.set_arg(idx, &mem) }.map_err(|e| fail(format!("setting argument `{}`: {e}", b.name())))?;
            idx += 1;
        }
        for v in &k.scalar_args {
            let Some(s) = self.env.get(&v.id()).copied() else {
                return Err(Error::Internal {
                    message: format!("kernel `{}` takes `{}`, which is unbound", k.name, v.name()),
                });
            };
            // SAFETY: each value has the size of the matching OpenCL C scalar type.
            let r = unsafe {
                match s {
                    ScalarValue::Bool(b) => kern.set_arg(idx, &(b as u8)),
                    ScalarValue::I8(x) => kern.set_arg(idx, &x),
                    ScalarValue::I16(x) => kern.set_arg(idx, &x),
                    ScalarValue::I32(x) => kern.set_arg(idx, &x),
                    ScalarValue::I64(x) => kern.set_arg(idx, &x),
                    ScalarValue::U8(x) => kern.set_arg(idx, &x),
                    ScalarValue::U16(x) => kern.set_arg(idx, &x),
                    ScalarValue::U32(x) => kern.set_arg(idx, &x),
                    ScalarValue::U64(x) => kern.set_arg(idx, &x),
                    ScalarValue::F16(x) | ScalarValue::BF16(x) => kern.set_arg(idx, &x),
                    ScalarValue::F32(x) => kern.set_arg(idx, &x),
                    ScalarValue::F64(x) => kern.set_arg(idx, &x),
                }
            };
            r.map_err(|e| fail(format!("setting argument `{}`: {e}", v.name())))?;
            idx += 1;
        }
        // SAFETY: every argument is set; the sizes are arrays of 3.
        unsafe {
            self.state.queue.enqueue_nd_range_kernel(
                kern.get(),
                3,
                std::ptr::null(),
                global.as_ptr(),
                block.as_ptr(),
                &[],
            )
        }
        .map_err(|e| fail(format!("enqueueing with grid {grid:?} and block {block:?}: {e}")))?;
        Ok(())
    }
}

fn restore(env: &mut HashMap<VarId, ScalarValue>, id: VarId, saved: Option<ScalarValue>) {
    match saved {
        Some(v) => {
            env.insert(id, v);
        }
        None => {
            env.remove(&id);
        }
    }
}

// ---- Host expressions: integers and bools (floats only pass through). ----

fn int_value(dtype: DType, v: i128) -> Result<ScalarValue, String> {
    let bits = dtype.bits as u32;
    let wrapped = match dtype.kind {
        ScalarKind::Int if bits < 128 => (v << (128 - bits)) >> (128 - bits),
        ScalarKind::UInt if bits < 128 => v & ((1i128 << bits) - 1),
        _ => return Err(format!("host expression of type {dtype} is not an integer")),
    };
    ScalarValue::int_checked(dtype, wrapped).ok_or_else(|| format!("value {v} does not fit in {dtype}"))
}

fn eval_int(env: &HashMap<VarId, ScalarValue>, e: &Expr) -> Result<i128, String> {
    match eval(env, e)? {
        ScalarValue::Bool(_) => Err(format!("expected an integer host expression, got a bool: {e:?}")),
        s => s.as_i128().ok_or_else(|| format!("expected an integer host expression: {e:?}")),
    }
}

fn eval_bool(env: &HashMap<VarId, ScalarValue>, e: &Expr) -> Result<bool, String> {
    match eval(env, e)? {
        ScalarValue::Bool(b) => Ok(b),
        _ => Err(format!("expected a bool host expression: {e:?}")),
    }
}

fn eval(env: &HashMap<VarId, ScalarValue>, e: &Expr) -> Result<ScalarValue, String> {
    Ok(match e {
        Expr::Int { value, dtype } => match dtype.kind {
            ScalarKind::UInt if dtype.bits == 64 => ScalarValue::U64(*value as u64),
            _ => int_value(*dtype, *value as i128)?,
        },
        Expr::Float { value, dtype } => {
            ScalarValue::from_f64(*dtype, *value).ok_or_else(|| format!("float constant of type {dtype}"))?
        }
        Expr::Bool(b) => ScalarValue::Bool(*b),
        Expr::Var(v) => *env.get(&v.id()).ok_or_else(|| format!("unbound variable `{}` on the host", v.name()))?,
        // The interpreter's scalar operations: the host side computes what the interpreter
        // would (division by zero and overflowing `MIN / -1` are errors).
        Expr::Binary { op, a, b } => interp::binary(*op, eval(env, a)?, eval(env, b)?).map_err(|e| e.to_string())?,
        Expr::Neg(a) => interp::neg(eval(env, a)?).map_err(|e| e.to_string())?,
        Expr::Cmp { op, a, b } => {
            ScalarValue::Bool(interp::compare(*op, eval(env, a)?, eval(env, b)?).map_err(|e| e.to_string())?)
        }
        Expr::And(a, b) => ScalarValue::Bool(eval_bool(env, a)? && eval_bool(env, b)?),
        Expr::Or(a, b) => ScalarValue::Bool(eval_bool(env, a)? || eval_bool(env, b)?),
        Expr::Not(a) => ScalarValue::Bool(!eval_bool(env, a)?),
        Expr::Select { cond, then, otherwise } => {
            if eval_bool(env, cond)? {
                eval(env, then)?
            } else {
                eval(env, otherwise)?
            }
        }
        Expr::Cast { dtype, value } => interp::cast(*dtype, eval(env, value)?).map_err(|e| e.to_string())?,
        other => return Err(format!("unsupported host expression: {other:?}")),
    })
}

// ---- Host data <-> device bytes (native endianness; bool as one byte 0/1). ----

/// The bytes of host data, borrowed (native endianness; bool as one byte 0/1).
fn host_bytes(d: &HostData) -> &[u8] {
    use bytemuck::cast_slice as b;
    match d {
        HostData::Bool(v) => b(v),
        HostData::I8(v) => b(v),
        HostData::I16(v) => b(v),
        HostData::I32(v) => b(v),
        HostData::I64(v) => b(v),
        HostData::U8(v) => v,
        HostData::U16(v) | HostData::F16(v) | HostData::BF16(v) => b(v),
        HostData::U32(v) => b(v),
        HostData::U64(v) => b(v),
        HostData::F32(v) => b(v),
        HostData::F64(v) => b(v),
    }
}

fn from_bytes(dtype: DType, bytes: &[u8]) -> Result<HostData, Error> {
    macro_rules! ne {
        ($t:ty, $var:ident) => {
            HostData::$var(
                bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| <$t>::from_ne_bytes(c.try_into().expect("chunk of the element size")))
                    .collect(),
            )
        };
    }
    let d = dtype.element();
    Ok(match (d.kind, d.bits) {
        (ScalarKind::Bool, _) => HostData::Bool(bytes.iter().map(|&b| b != 0).collect()),
        (ScalarKind::Int, 8) => ne!(i8, I8),
        (ScalarKind::Int, 16) => ne!(i16, I16),
        (ScalarKind::Int, 32) => ne!(i32, I32),
        (ScalarKind::Int, 64) => ne!(i64, I64),
        (ScalarKind::UInt, 8) => HostData::U8(bytes.to_vec()),
        (ScalarKind::UInt, 16) => ne!(u16, U16),
        (ScalarKind::UInt, 32) => ne!(u32, U32),
        (ScalarKind::UInt, 64) => ne!(u64, U64),
        (ScalarKind::Float, 16) => ne!(u16, F16),
        (ScalarKind::BFloat, 16) => ne!(u16, BF16),
        (ScalarKind::Float, 32) => ne!(f32, F32),
        (ScalarKind::Float, 64) => ne!(f64, F64),
        _ => return Err(Error::Internal { message: format!("no host representation for {dtype}") }),
    })
}
