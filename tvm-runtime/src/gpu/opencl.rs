//! The OpenCL backend (feature `opencl`, on by default): libOpenCL is loaded when first
//! used (opencl3's `dynamic` feature), so nothing links against it and a machine without it
//! simply has no OpenCL device.
//!
//! * [`OpenClRuntime`]: the process-wide state, created on first use. `Device::OpenCl(n)`
//!   is device `n` of every OpenCL device of every platform, in platform order. Each device
//!   gets one context and one in-order command queue (created on first use).
//! * Programs ([`super::Program`], static descriptions the compiler generated) are built
//!   once per device and cached by their address; a failed build is cached too. Loading
//!   checks what the compiler could not: f64/f16 support, each kernel's local memory, its
//!   constant block shape against the device's and the kernel's work-group limits.
//! * Kernel objects are pooled per kernel: a launch takes one, sets its arguments,
//!   enqueues it and puts it back (OpenCL captures the arguments at enqueue time), so
//!   concurrent launches never share an object whose arguments another thread is setting.
//! * Device buffers are pooled per device by size (allocating and first touching device
//!   memory costs more than the copies); a buffer goes back to the pool on drop.
//!
//! The kernel ABI (what the compiler's OpenCL printer emits): `__kernel void <name>(<one
//! __global T* per buffer parameter>, <one scalar per scalar parameter: bool → uchar, the
//! rest their OpenCL C type>)`, launched with local size = block and global size = grid ×
//! block per dim.

pub use super::Caps;
use super::{KernelArg, KernelDesc, Program, Scalar};
use crate::error::Error;
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::{ClError, DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::memory::{Buffer as ClBuffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::program::Program as ClProgram;
use opencl3::types::CL_BLOCKING;
use std::sync::{Arc, Mutex, OnceLock};

/// One OpenCL device, with its context and queue made on first use.
struct DeviceSlot {
    device: ClDevice,
    platform_name: String,
    name: String,
    state: OnceLock<Result<DeviceState, Error>>,
}

/// A device ready to run: its context, queue, limits, caches and buffer pool. There is
/// one in-order queue per device: buffers go back to the pool while kernels that use them
/// may still be queued, which is safe only because whatever their next user enqueues
/// runs after those kernels.
pub(crate) struct DeviceState {
    index: usize,
    device: ClDevice,
    context: Context,
    queue: CommandQueue,
    max_work_group_size: usize,
    max_work_item_sizes: Vec<usize>,
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`: larger buffers are refused before the driver is
    /// asked (the specification makes them `CL_INVALID_BUFFER_SIZE`, but a CPU driver on a
    /// machine that overcommits memory may hand them out).
    max_alloc_bytes: Option<u64>,
    caps: Caps,
    /// Device buffers of dropped [`Buffer`]s, by size in bytes, for the next allocations.
    pool: Mutex<Vec<(usize, ClBuffer<u8>)>>,
    /// Loaded programs (see [`super::ModuleCache`]).
    modules: super::ModuleCache<Module>,
}

/// At most this many buffers, and this many bytes, wait in a device's pool.
const POOL_BUFFERS: usize = 16;
const POOL_BYTES: usize = 1 << 30;

/// The process-wide OpenCL state: the devices of every platform, each with one context,
/// queue, program cache and buffer pool. Thread-safe; get it with
/// [`OpenClRuntime::global`].
pub struct OpenClRuntime {
    devices: Vec<DeviceSlot>,
    /// Why no device was found, when enumeration itself failed.
    enumeration_error: Option<String>,
}

impl OpenClRuntime {
    /// The runtime, created (libOpenCL loaded, platforms and devices enumerated) on the
    /// first call.
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
                        let device = ClDevice::new(id);
                        let name = device.name().unwrap_or_else(|_| "unknown device".to_string());
                        devices.push(DeviceSlot {
                            device,
                            platform_name: platform_name.clone(),
                            name,
                            state: OnceLock::new(),
                        });
                    }
                }
            }
            Err(ClError(DLOPEN_RUNTIME_LOAD_FAILED | DLOPEN_FUNCTION_NOT_AVAILABLE)) => {
                enumeration_error = Some("the OpenCL library (libOpenCL.so.1) could not be loaded".to_string())
            }
            Err(e) => enumeration_error = Some(format!("no OpenCL platform found ({e})")),
        }
        OpenClRuntime { devices, enumeration_error }
    }

    /// The number of OpenCL devices, over all platforms (0 without libOpenCL).
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// "platform: device" of device `n`, if it exists.
    pub fn device_name(&self, n: usize) -> Option<String> {
        self.devices.get(n).map(|d| format!("{}: {}", d.platform_name, d.name))
    }

    fn unavailable(n: usize, reason: String) -> Error {
        Error::DeviceUnavailable { device: format!("opencl:{n}"), reason }
    }

    fn slot(&self, n: usize) -> Result<&DeviceSlot, Error> {
        self.devices.get(n).ok_or_else(|| {
            Self::unavailable(
                n,
                match (&self.enumeration_error, self.devices.len()) {
                    (Some(e), _) => e.clone(),
                    (None, 0) => "no OpenCL device found".to_string(),
                    (None, 1) => "only 1 OpenCL device found".to_string(),
                    (None, k) => format!("only {k} OpenCL devices found"),
                },
            )
        })
    }

    /// `Ok` if device `n` exists and its context and queue can be made.
    /// Waits until everything queued on device `n` has finished.
    pub fn synchronize(&self, n: usize) -> Result<(), Error> {
        let s = self.state(n)?;
        s.queue.finish().map_err(|e| Error::LaunchFailed { kernel: "(synchronize)".into(), reason: e.to_string() })
    }

    pub fn check_device(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|_| ())
    }

    pub(crate) fn state(&self, n: usize) -> Result<&DeviceState, Error> {
        let slot = self.slot(n)?;
        slot.state
            .get_or_init(|| {
                let dev = slot.device;
                let fail =
                    |what: &str, e: ClError| Self::unavailable(n, format!("{what} failed on `{}`: {e}", slot.name));
                let context = Context::from_device(&dev).map_err(|e| fail("creating a context", e))?;
                #[allow(deprecated)]
                let queue = CommandQueue::create_default(&context, opencl3::command_queue::CL_QUEUE_PROFILING_ENABLE)
                    .map_err(|e| fail("creating a command queue", e))?;
                let max_work_group_size = dev.max_work_group_size().map_err(|e| fail("querying the device", e))?;
                let max_work_item_sizes = dev.max_work_item_sizes().unwrap_or_default();
                let max_alloc_bytes = dev.max_mem_alloc_size().ok();
                let extensions = dev.extensions().unwrap_or_default();
                let has = |ext: &str| extensions.split_whitespace().any(|e| e == ext);
                let caps = Caps {
                    label: format!("opencl:{n} ({}: {})", slot.platform_name, slot.name),
                    fp64: has("cl_khr_fp64") || dev.double_fp_config().unwrap_or(0) != 0,
                    fp16: has("cl_khr_fp16"),
                    local_mem_bytes: dev.local_mem_size().map_err(|e| fail("querying the device", e))?,
                };
                Ok(DeviceState {
                    index: n,
                    device: slot.device,
                    context,
                    queue,
                    max_work_group_size,
                    max_work_item_sizes,
                    max_alloc_bytes,
                    caps,
                    pool: Mutex::new(Vec::new()),
                    modules: super::ModuleCache::new(),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// What device `n` supports (f64, f16, local memory).
    pub fn caps(&self, n: usize) -> Result<Caps, Error> {
        self.state(n).map(|s| s.caps.clone())
    }

    /// Builds `source` for device `n` with the OpenCL compiler `options` (say `-Werror`),
    /// outside the cache, and returns the build log (empty when the compiler said
    /// nothing); `Err(CompilationFailed)` with the log when it does not build, or
    /// `Err(DeviceUnsupported)` when it needs f64 or f16 the device lacks.
    pub fn build_uncached(&self, n: usize, source: &str, options: &str) -> Result<String, Error> {
        self.state(n)?.compile(source, options).map(|(_, log)| log)
    }
}

impl DeviceState {
    /// `n` of `Device::OpenCl(n)`.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    fn label(&self) -> &str {
        &self.caps.label
    }

    /// Builds `source` with `options`, after checking that the device supports what it
    /// uses ([`Caps::check_program`]): the program and its build log (trimmed).
    fn compile(&self, source: &str, options: &str) -> Result<(ClProgram, String), Error> {
        self.caps.check_program(source)?;
        let failed = |log: String| Error::CompilationFailed { target: "opencl".to_string(), log };
        if source.contains('\0') || options.contains('\0') {
            return Err(failed("the source or the options contain a NUL character".to_string()));
        }
        let mut program = ClProgram::create_from_source(&self.context, source)
            .map_err(|e| failed(format!("creating the program failed: {e}")))?;
        let built = program.build(&[self.device.id()], options);
        let log = program.get_build_log(self.device.id()).unwrap_or_default();
        match built {
            Ok(()) => Ok((program, log.trim().to_string())),
            Err(e) => Err(failed(format!("{e}\n{log}"))),
        }
    }

    /// `program` loaded on this device: from the cache, or built and checked now. What
    /// fails for good (a compile error, a kernel the device cannot run) stays cached;
    /// anything else (a driver or resource failure) is tried again by the next load.
    pub(crate) fn load(&'static self, program: &'static Program) -> Result<Arc<Module>, Error> {
        self.modules.load(program, || self.build_module(program))
    }

    /// Whether `program` is in this device's cache (built, failed, or being built).
    pub(crate) fn is_cached(&self, program: &'static Program) -> bool {
        self.modules.contains(program)
    }

    fn build_module(&self, program: &'static Program) -> Result<Module, Error> {
        if let Some(k) = program.kernels.iter().find(|k| k.name.contains('\0')) {
            return Err(Error::CompilationFailed {
                target: "opencl".to_string(),
                log: format!("the kernel name {:?} contains a NUL character", k.name),
            });
        }
        let (built, _log) = self.compile(program.source, "")?;
        let mut kernels = Vec::with_capacity(program.kernels.len());
        for k in program.kernels {
            self.caps.check_local_memory(k.name, k.shared_bytes)?;
            let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
            let object = ClKernel::create(&built, k.name)
                .map_err(|e| fail(format!("the program has no kernel `{}` ({e})", k.name)))?;
            let limit =
                object.get_work_group_size(self.device.id()).map_err(|e| fail(format!("querying the kernel: {e}")))?;
            let kernel = LoadedKernel { objects: Mutex::new(vec![object]), limit };
            if let Some(block) = k.block {
                self.check_block(k, &kernel, block.map(|b| b as usize))?;
            }
            kernels.push(kernel);
        }
        Ok(Module { _program: built, kernels })
    }

    /// `Ok` if `block` fits the device's and the kernel's work-group limits.
    fn check_block(&self, k: &KernelDesc, loaded: &LoadedKernel, block: [usize; 3]) -> Result<(), Error> {
        let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
        let group = block.iter().try_fold(1usize, |a, &b| a.checked_mul(b)).unwrap_or(usize::MAX);
        if group > self.max_work_group_size {
            return Err(fail(format!(
                "block {block:?} has {group} threads, more than the device's maximum work-group size {}",
                self.max_work_group_size
            )));
        }
        for (d, (&b, &m)) in block.iter().zip(&self.max_work_item_sizes).enumerate() {
            if b > m {
                return Err(fail(format!(
                    "block extent {d} is {b}, more than the device's maximum work-item size {m} in that dimension"
                )));
            }
        }
        if group > loaded.limit {
            return Err(fail(format!(
                "block {block:?} has {group} threads, more than the kernel's work-group limit {} on this device \
                 (device maximum {})",
                loaded.limit, self.max_work_group_size
            )));
        }
        Ok(())
    }

    /// A device buffer of `bytes` bytes (at least 1: OpenCL rejects empty buffers): one
    /// of the pool's if it has that size, else a new one (after emptying the pool, if the
    /// first try fails). Its contents are unspecified. `Err(OutOfMemory)` when the device
    /// has no room for it.
    pub(crate) fn alloc(&'static self, bytes: usize) -> Result<Buffer, Error> {
        let size = bytes.max(1);
        let pooled = {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.iter().position(|(n, _)| *n == size).map(|i| pool.remove(i).1)
        };
        if let Some(mem) = pooled {
            crate::stats::count(|s| s.pool_reuses += 1);
            return Ok(Buffer { state: self, mem: Some(mem), bytes });
        }
        if let Some(max) = self.max_alloc_bytes.filter(|&m| size as u128 > m as u128) {
            return Err(Error::OutOfMemory {
                device: self.label().to_string(),
                bytes,
                reason: format!("more than the device's largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE, {max} bytes)"),
            });
        }
        // SAFETY: no host pointer is passed.
        let create = || unsafe { ClBuffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, size, std::ptr::null_mut()) };
        let mem = create()
            .or_else(|_| {
                // The pool may hold what the device needs: free it and try once more.
                self.pool.lock().unwrap_or_else(|p| p.into_inner()).clear();
                create()
            })
            .map_err(|e| Error::OutOfMemory { device: self.label().to_string(), bytes, reason: e.to_string() })?;
        crate::stats::count(|s| s.allocations += 1);
        Ok(Buffer { state: self, mem: Some(mem), bytes })
    }

    /// Launches kernel `k` (index `index` of `module`) with `grid` × `block` work-items.
    /// The arguments were checked against `k.params` by the caller.
    pub(crate) fn launch(
        &self,
        module: &Module,
        index: usize,
        k: &KernelDesc,
        grid: [usize; 3],
        block: [usize; 3],
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
        let loaded = &module.kernels[index];
        if k.block.is_none() {
            self.check_block(k, loaded, block)?;
        }
        let mut global = [0usize; 3];
        for d in 0..3 {
            global[d] = grid[d]
                .checked_mul(block[d])
                .ok_or_else(|| fail(format!("grid {grid:?} times block {block:?} overflows")))?;
        }
        let object = {
            let mut objects = loaded.objects.lock().unwrap_or_else(|p| p.into_inner());
            objects.pop()
        };
        let object = match object {
            Some(o) => o,
            None => {
                ClKernel::create(&module._program, k.name).map_err(|e| fail(format!("creating the kernel: {e}")))?
            }
        };
        let set = |i: usize, r: Result<(), ClError>| r.map_err(|e| fail(format!("setting argument {i}: {e}")));
        for (i, a) in args.iter().enumerate() {
            let idx = i as u32;
            // SAFETY: each value has the size of the OpenCL C type of the kernel's parameter
            // `i` (buffers are `cl_mem`; the kinds were checked against the description,
            // which the compiler wrote from the same function as the kernel's text).
            let r = unsafe {
                match *a {
                    KernelArg::Buffer(b) => object.set_arg(idx, &b.opencl().get()),
                    KernelArg::Scalar(s) => match s {
                        Scalar::Bool(b) => object.set_arg(idx, &(b as u8)),
                        Scalar::I8(x) => object.set_arg(idx, &x),
                        Scalar::I16(x) => object.set_arg(idx, &x),
                        Scalar::I32(x) => object.set_arg(idx, &x),
                        Scalar::I64(x) => object.set_arg(idx, &x),
                        Scalar::U8(x) => object.set_arg(idx, &x),
                        Scalar::U16(x) => object.set_arg(idx, &x),
                        Scalar::U32(x) => object.set_arg(idx, &x),
                        Scalar::U64(x) => object.set_arg(idx, &x),
                        Scalar::F16(x) => object.set_arg(idx, &x.to_bits()),
                        Scalar::BF16(x) => object.set_arg(idx, &x.to_bits()),
                        Scalar::F32(x) => object.set_arg(idx, &x),
                        Scalar::F64(x) => object.set_arg(idx, &x),
                    },
                }
            };
            set(i, r)?;
        }
        // SAFETY: every argument is set; the sizes are arrays of 3.
        let enqueued = unsafe {
            self.queue.enqueue_nd_range_kernel(object.get(), 3, std::ptr::null(), global.as_ptr(), block.as_ptr(), &[])
        };
        // The enqueued launch keeps its own copy of the arguments: the object can serve
        // the next launch now.
        loaded.objects.lock().unwrap_or_else(|p| p.into_inner()).push(object);
        let event = enqueued.map_err(|e| fail(format!("enqueueing with grid {grid:?} and block {block:?}: {e}")))?;
        if super::timing_active() {
            // The queue profiles every command: the kernel's start and end on the device.
            super::record_timing(Box::new(move || {
                event.wait().ok()?;
                let (start, end) = (event.profiling_command_start().ok()?, event.profiling_command_end().ok()?);
                Some(end.saturating_sub(start) as f64 * 1e-9)
            }));
        }
        Ok(())
    }
}

/// A program built on one device, with a pool of kernel objects per kernel.
pub(crate) struct Module {
    _program: ClProgram,
    kernels: Vec<LoadedKernel>,
}

struct LoadedKernel {
    /// Kernel objects not in use by a launch right now.
    objects: Mutex<Vec<ClKernel>>,
    /// `CL_KERNEL_WORK_GROUP_SIZE` on the device.
    limit: usize,
}

/// Device memory on one OpenCL device; back to the device's pool on drop.
pub(crate) struct Buffer {
    state: &'static DeviceState,
    /// Always `Some` until dropped.
    mem: Option<ClBuffer<u8>>,
    /// The size asked for (the device buffer has at least one byte).
    bytes: usize,
}

impl Buffer {
    fn mem(&self) -> &ClBuffer<u8> {
        self.mem.as_ref().expect("internal: a live buffer has its memory")
    }

    pub(crate) fn get(&self) -> opencl3::types::cl_mem {
        self.mem().get()
    }

    fn io_error(state: &DeviceState, what: &str, e: ClError) -> Error {
        Error::DeviceUnavailable { device: state.label().to_string(), reason: format!("{what} failed: {e}") }
    }

    /// Copies `bytes` (at most the buffer's size) to the start of the buffer; blocking.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        assert!(bytes.len() <= self.bytes, "internal: a write past the end of a device buffer");
        if bytes.is_empty() {
            return Ok(());
        }
        let queue = &self.state.queue;
        let mem = self.mem.as_mut().expect("internal: a live buffer has its memory");
        // SAFETY: the buffer holds at least `bytes.len()` bytes; the write is blocking, so
        // `bytes` is not used after the call returns.
        unsafe { queue.enqueue_write_buffer(mem, CL_BLOCKING, 0, bytes, &[]) }
            .map_err(|e| Self::io_error(self.state, "copying to the device", e))?;
        Ok(())
    }

    /// Copies the start of the buffer into `out` (at most the buffer's size), after every
    /// kernel enqueued before (the queue is in order); blocking.
    pub(crate) fn read(&self, out: &mut [u8]) -> Result<(), Error> {
        assert!(out.len() <= self.bytes, "internal: a read past the end of a device buffer");
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds at least `out.len()` bytes; the read is blocking.
        unsafe { self.state.queue.enqueue_read_buffer(self.mem(), CL_BLOCKING, 0, out, &[]) }
            .map_err(|e| Self::io_error(self.state, "copying from the device", e))?;
        Ok(())
    }

    /// Sets every byte to zero (enqueued: kernels enqueued later see zeros).
    pub(crate) fn fill_zero(&mut self) -> Result<(), Error> {
        let size = self.bytes.max(1);
        let queue = &self.state.queue;
        let mem = self.mem.as_mut().expect("internal: a live buffer has its memory");
        // SAFETY: the pattern is one byte and the range is the whole buffer.
        unsafe { queue.enqueue_fill_buffer(mem, &[0u8], 0, size, &[]) }
            .map_err(|e| Self::io_error(self.state, "clearing device memory", e))?;
        Ok(())
    }
}

impl Drop for Buffer {
    /// Back to the pool (unless it alone is over the pool's byte limit), dropping the
    /// oldest buffers past the pool's limits. Safe before the kernels using it finished:
    /// the queue is in order, so whatever the buffer's next user enqueues runs after them
    /// (and a buffer the pool drops is released by OpenCL once those kernels are done).
    fn drop(&mut self) {
        let Some(mem) = self.mem.take() else { return };
        let size = self.bytes.max(1);
        if size > POOL_BYTES {
            return;
        }
        let mut pool = self.state.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.push((size, mem));
        while pool.len() > POOL_BUFFERS || pool.iter().map(|(n, _)| n).sum::<usize>() > POOL_BYTES {
            pool.remove(0);
        }
    }
}
