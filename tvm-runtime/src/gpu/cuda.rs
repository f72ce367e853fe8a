//! The CUDA backend (feature `cuda`, on by default), through cudarc with its
//! `dynamic-loading`: libcuda and libnvrtc are loaded when first used, so nothing links
//! against CUDA and a machine without it simply has no CUDA device.
//!
//! * [`CudaRuntime`]: the process-wide state, created on first use. cudarc panics where a
//!   library or one of its functions is missing, so it is called only after the driver
//!   library `libcuda.so.1` was found on disk (the probe of [`crate::Device`]), the
//!   dynamic loader finds it by the names cudarc tries, and it exports every function this
//!   backend calls; then `cuInit` and `cuDeviceGetCount` give the devices.
//!   `Device::Cuda(n)` is device ordinal `n`; each gets its primary context, one stream
//!   (created on first use), a buffer pool and a module cache.
//! * Programs ([`super::Program`]) are loaded once per device and cached by their address;
//!   a failed load is cached too. A device of compute capability `cc` loads the first of:
//!   a prebuilt cubin of its major version (minor ≤ its own), prebuilt PTX for an
//!   architecture ≤ `cc` (the driver may refuse PTX newer than itself: the next is
//!   tried), the source compiled by NVRTC ([`compile_cuda`]: a cubin for `cc`, kept in the
//!   disk cache of [`super::cuda_cache`]).
//! * Buffers are pooled per device by size, as for OpenCL.
//! * Every driver call is made with the device's context bound to the calling thread
//!   (`CudaContext::bind_to_thread`, which costs a `cuCtxGetCurrent` when it is bound
//!   already), so generated functions may run on any thread, several at once: the driver
//!   API is thread-safe, and the state here is behind locks or immutable.
//!
//! One stream per device orders everything: buffers go back to the pool while kernels
//! that use them may still be queued, which is safe because whatever their next user
//! enqueues on the stream runs after those kernels. Copies from the host wait for their
//! completion (as OpenCL's blocking writes), so the host memory is free when they return.
//!
//! The kernel ABI (what the compiler's CUDA printer emits): `extern "C" __global__ void
//! <name>(<one T* per buffer parameter>, <one scalar per scalar parameter: bool →
//! unsigned char, i64 → long long, f16/bf16 → their 2-byte types, the rest their C type>)`,
//! launched with `cuLaunchKernel` on `grid` blocks of `block` threads and no dynamic
//! shared memory (shared arrays are static `__shared__`).

use super::{
    cuda_binary_candidates, cuda_cache, cuda_cache_key, nvrtc, nvrtc_target, BinaryFormat, CompiledCuda, CudaCaps,
    KernelArg, KernelDesc, Program, Scalar, CUDA_FLAGS,
};
use crate::error::Error;
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUfunction_attribute as FnAttr, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use std::ffi::c_void;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// The libcuda functions this backend (and the cudarc code it calls) uses: checked
/// present before the first call, since cudarc panics on a missing one.
const REQUIRED: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamSynchronize",
    "cuStreamDestroy_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemsetD8Async",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuLaunchKernel",
];

/// At most this many buffers, and this many bytes, wait in a device's pool.
const POOL_BUFFERS: usize = 16;
const POOL_BYTES: usize = 1 << 30;

/// `CUDA_ERROR_NAME: description` of a driver error.
fn describe(e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(text) => format!("{name}: {}", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// The process-wide CUDA state: the devices, each with its context, stream, module cache
/// and buffer pool made on first use. Thread-safe; get it with [`CudaRuntime::global`].
pub struct CudaRuntime {
    devices: Vec<OnceLock<Result<DeviceState, Error>>>,
    /// `cuDriverGetVersion` (`12020` for 12.2), 0 without a driver.
    driver_version: i32,
    /// Why there is no device, when the driver could not be used.
    unavailable: Option<String>,
}

impl CudaRuntime {
    /// The runtime, created (the driver found, loaded and initialised, its devices
    /// counted) on the first call.
    pub fn global() -> &'static CudaRuntime {
        static RT: OnceLock<CudaRuntime> = OnceLock::new();
        RT.get_or_init(CudaRuntime::init)
    }

    fn init() -> CudaRuntime {
        match Self::open_driver() {
            Ok((driver_version, count)) => CudaRuntime {
                devices: (0..count).map(|_| OnceLock::new()).collect(),
                driver_version,
                unavailable: (count == 0).then(|| "the CUDA driver reports no device".to_string()),
            },
            Err(why) => CudaRuntime { devices: Vec::new(), driver_version: 0, unavailable: Some(why) },
        }
    }

    /// The driver's version and device count, or why the driver cannot be used.
    fn open_driver() -> Result<(i32, usize), String> {
        let Some(path) = crate::device::cuda_driver_library() else {
            return Err("no CUDA driver library (libcuda.so.1) was found".to_string());
        };
        // SAFETY: loading a library runs its initialisers, which for libcuda set up its own
        // state only; this tries the names cudarc loads, and unloads them again.
        if !unsafe { sys::is_culib_present() } {
            return Err(format!(
                "{} exists, but the dynamic loader does not find libcuda by name (add its directory to LD_LIBRARY_PATH)",
                path.display()
            ));
        }
        // SAFETY: `is_culib_present` just loaded one of the names, so `culib` (which
        // panics where none loads) finds it.
        let lib = unsafe { sys::culib() };
        // SAFETY: each symbol is only looked up, as an address.
        let missing = REQUIRED.iter().find(|name| unsafe { lib.get::<*mut c_void>(name.as_bytes()) }.is_err());
        if let Some(name) = missing {
            return Err(format!("the CUDA driver library lacks `{name}` (the driver is too old)"));
        }
        match cu::init() {
            Ok(()) => {}
            Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => return Ok((Self::version(), 0)),
            Err(e) => return Err(format!("the CUDA driver failed to initialise ({})", describe(e))),
        }
        let count = cu::device::get_count().map_err(|e| format!("counting CUDA devices failed ({})", describe(e)))?;
        Ok((Self::version(), usize::try_from(count).unwrap_or(0)))
    }

    fn version() -> i32 {
        let mut v = 0;
        // SAFETY: the symbol is present (checked); `v` is valid for a write.
        let _ = unsafe { sys::cuDriverGetVersion(&mut v) };
        v
    }

    /// The number of CUDA devices (0 without a driver).
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The driver's CUDA version, `(major, minor)`, if a driver was loaded.
    pub fn driver_version(&self) -> Option<(u32, u32)> {
        let v = u32::try_from(self.driver_version).ok().filter(|&v| v > 0)?;
        Some((v / 1000, v % 1000 / 10))
    }

    /// The name of device `n`, if it exists.
    pub fn device_name(&self, n: usize) -> Option<String> {
        if n >= self.devices.len() {
            return None;
        }
        let dev = cu::device::get(n as i32).ok()?;
        cu::device::get_name(dev).ok()
    }

    fn unavailable(n: usize, reason: String) -> Error {
        Error::DeviceUnavailable { device: format!("cuda:{n}"), reason }
    }

    /// `Ok` if device `n` exists and its context and stream can be made; else
    /// `Err(DeviceUnavailable)` saying why.
    /// Waits until everything queued on device `n`'s stream has finished.
    pub fn synchronize(&self, n: usize) -> Result<(), Error> {
        let s = self.state(n)?;
        s.stream
            .synchronize()
            .map_err(|e| Error::LaunchFailed { kernel: "(synchronize)".into(), reason: e.to_string() })
    }

    pub fn check_device(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|_| ())
    }

    /// What device `n` supports.
    pub fn caps(&self, n: usize) -> Result<CudaCaps, Error> {
        self.state(n).map(|s| s.caps.clone())
    }

    pub(crate) fn state(&self, n: usize) -> Result<&DeviceState, Error> {
        let Some(slot) = self.devices.get(n) else {
            return Err(Self::unavailable(
                n,
                match (&self.unavailable, self.devices.len()) {
                    (Some(why), _) => why.clone(),
                    (None, 1) => "only 1 CUDA device found".to_string(),
                    (None, k) => format!("only {k} CUDA devices found"),
                },
            ));
        };
        slot.get_or_init(|| DeviceState::open(n)).as_ref().map_err(Clone::clone)
    }
}

/// `source` compiled for architecture `arch` (× 10) with [`CUDA_FLAGS`]: a cubin (PTX from
/// an NVRTC that makes no cubins), from the disk cache of [`super::cuda_cache`] when it
/// holds an intact entry, else by NVRTC (and then written to the cache; a cache that
/// cannot be written is skipped). `Err(CompilationFailed)` with NVRTC's log, or, when
/// NVRTC cannot be loaded, saying what to install.
pub fn compile_cuda(source: &str, arch: u32) -> Result<CompiledCuda, Error> {
    let format = match nvrtc::nvrtc() {
        Ok(n) if !n.cubin => BinaryFormat::Ptx,
        _ => BinaryFormat::Cubin,
    };
    compile_cuda_with(source, arch, format, cuda_cache::dir().as_deref())
}

/// [`compile_cuda`] into `format`, with the cache in `cache` (`None`: no cache).
#[doc(hidden)]
pub fn compile_cuda_with(
    source: &str,
    arch: u32,
    format: BinaryFormat,
    cache: Option<&Path>,
) -> Result<CompiledCuda, Error> {
    compile_cached(source, arch, format, cache, true)
}

/// The version of the NVRTC this process loads, `(major, minor)`; `Err(CompilationFailed)`
/// saying what to install when there is none.
pub fn nvrtc_version() -> Result<(i32, i32), Error> {
    nvrtc::nvrtc().map(|n| n.version)
}

/// [`compile_cuda_with`]; `reuse: false` skips reading the cache (its entry was refused by
/// the driver), and rewrites it.
fn compile_cached(
    source: &str,
    arch: u32,
    format: BinaryFormat,
    cache: Option<&Path>,
    reuse: bool,
) -> Result<CompiledCuda, Error> {
    let key = cuda_cache_key(source, arch, CUDA_FLAGS);
    let ext = format.extension();
    if let Some(bytes) = cache.filter(|_| reuse).and_then(|dir| cuda_cache::read(dir, &key, ext)) {
        return Ok(CompiledCuda { format, arch, key, bytes, cache_hit: true });
    }
    let bytes = nvrtc::compile(source, arch, format)?;
    if let Some(dir) = cache {
        // A cache that cannot be written only means compiling again next time.
        let _ = cuda_cache::write(dir, &key, ext, &bytes);
    }
    Ok(CompiledCuda { format, arch, key, bytes, cache_hit: false })
}

/// A device ready to run: its context, stream, limits, module cache and buffer pool.
pub(crate) struct DeviceState {
    index: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    caps: CudaCaps,
    /// Device memory of dropped buffers, by size in bytes, for the next allocations.
    pool: Mutex<Vec<(usize, sys::CUdeviceptr)>>,
    /// Loaded programs by the address of their static description, each loaded (or
    /// failed) once; the lock is held only to find or insert a program's cell.
    modules: super::ModuleCache<Module>,
}

impl DeviceState {
    fn open(n: usize) -> Result<DeviceState, Error> {
        let fail = |what: &str, e: DriverError| CudaRuntime::unavailable(n, format!("{what} failed ({})", describe(e)));
        let ctx = CudaContext::new(n).map_err(|e| fail("creating the context", e))?;
        let stream = ctx.new_stream().map_err(|e| fail("creating a stream", e))?;
        let attr = |a: Attr| {
            ctx.attribute(a).map(|v| u32::try_from(v).unwrap_or(0)).map_err(|e| fail("querying the device", e))
        };
        let (major, minor) = (
            attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let name = ctx.name().unwrap_or_else(|_| "unknown device".to_string());
        let caps = CudaCaps {
            label: format!("cuda:{n} ({name}, sm_{major}{minor})"),
            compute_capability: major * 10 + minor,
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block: [
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid: [
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_bytes_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?.into(),
            multiprocessors: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0),
            memory_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0),
            memory_bus_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0),
        };
        Ok(DeviceState {
            index: n,
            ctx,
            stream,
            caps,
            pool: Mutex::new(Vec::new()),
            modules: super::ModuleCache::new(),
        })
    }

    /// `n` of `Device::Cuda(n)`.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    fn label(&self) -> &str {
        &self.caps.label
    }

    /// Binds the device's context to the calling thread: every driver call needs it.
    fn bind(&self) -> Result<(), Error> {
        self.ctx.bind_to_thread().map_err(|e| Error::DeviceUnavailable {
            device: self.label().to_string(),
            reason: format!("binding its context to this thread failed ({})", describe(e)),
        })
    }

    /// `program` loaded on this device: from the cache, or loaded and checked now. What
    /// fails for good (a compile error, a program the device cannot run) stays cached;
    /// anything else (a driver or resource failure) is tried again by the next load.
    pub(crate) fn load(&'static self, program: &'static Program) -> Result<Arc<Module>, Error> {
        self.modules.load(program, || self.build_module(program))
    }

    /// Whether `program` is in this device's cache (loaded, failed, or being loaded).
    pub(crate) fn is_cached(&self, program: &'static Program) -> bool {
        self.modules.contains(program)
    }

    /// A module of `image` (a cubin, or PTX text), or the driver's refusal.
    fn load_image(&self, format: BinaryFormat, image: &[u8]) -> Result<Arc<CudaModule>, DriverError> {
        let mut bytes = image.to_vec();
        // The driver reads PTX up to its NUL.
        if format == BinaryFormat::Ptx && bytes.last() != Some(&0) {
            bytes.push(0);
        }
        self.ctx.load_module(Ptx::from_binary(bytes))
    }

    /// The error of a module the driver would not load.
    fn refused(&self, program: &Program, what: &str, e: DriverError) -> Error {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return Error::OutOfMemory { device: self.label().to_string(), bytes: 0, reason: describe(e) };
        }
        let driver = match CudaRuntime::global().driver_version() {
            Some((major, minor)) => format!("CUDA {major}.{minor}"),
            None => "unknown".to_string(),
        };
        Error::DeviceUnsupported {
            device: self.label().to_string(),
            reason: format!(
                "the driver ({driver}) cannot load {what} of `{}` ({}); a driver at least as new as the \
                 compiler that made it is needed",
                program.function,
                describe(e)
            ),
        }
    }

    fn build_module(&self, program: &'static Program) -> Result<Module, Error> {
        if let Some(k) = program.kernels.iter().find(|k| k.name.contains('\0')) {
            return Err(Error::CompilationFailed {
                target: "cuda".to_string(),
                log: format!("the kernel name {:?} contains a NUL character", k.name),
            });
        }
        for k in program.kernels {
            self.caps.check_shared_memory(k.name, k.shared_bytes)?;
        }
        self.bind()?;
        let cc = self.caps.compute_capability;
        let mut refusals = Vec::new();
        for b in cuda_binary_candidates(program.binaries, cc) {
            let what = format!("the prebuilt {} for sm_{}", b.format.extension(), b.arch);
            match self.load_image(b.format, b.bytes) {
                Ok(m) => return self.finish(program, m, what),
                Err(e) => refusals.push(format!("{what}: {}", describe(e))),
            }
        }
        let with_refusals = |e: Error| match e {
            Error::CompilationFailed { target, log } if !refusals.is_empty() => Error::CompilationFailed {
                target,
                log: format!("{log}\n(the driver refused the prebuilt binaries: {})", refusals.join("; ")),
            },
            e => e,
        };
        let nvrtc = nvrtc::nvrtc().map_err(with_refusals)?;
        let Some((arch, format)) = nvrtc_target(cc, &nvrtc.archs, nvrtc.cubin) else {
            return Err(Error::DeviceUnsupported {
                device: self.label().to_string(),
                reason: format!(
                    "NVRTC {}.{} compiles for no architecture as old as sm_{cc}",
                    nvrtc.version.0, nvrtc.version.1
                ),
            });
        };
        let dir = cuda_cache::dir();
        let compiled = compile_cached(program.source, arch, format, dir.as_deref(), true)?;
        let what = |c: &CompiledCuda| {
            let from = if c.cache_hit { "read from the disk cache" } else { "compiled by NVRTC" };
            format!("the {} for sm_{} {from}", c.format.extension(), c.arch)
        };
        match self.load_image(format, &compiled.bytes) {
            Ok(m) => self.finish(program, m, what(&compiled)),
            Err(_) if compiled.cache_hit => {
                // An entry of another NVRTC (a newer one's PTX, say): compile it again.
                let fresh = compile_cached(program.source, arch, format, dir.as_deref(), false)?;
                match self.load_image(format, &fresh.bytes) {
                    Ok(m) => self.finish(program, m, what(&fresh)),
                    Err(e) => Err(self.refused(program, &what(&fresh), e)),
                }
            }
            Err(e) => Err(self.refused(program, &what(&compiled), e)),
        }
    }

    /// The module of `program` from its loaded `image`, its kernels found and checked.
    fn finish(&self, program: &'static Program, image: Arc<CudaModule>, origin: String) -> Result<Module, Error> {
        let mut kernels = Vec::with_capacity(program.kernels.len());
        for k in program.kernels {
            let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
            let func = image
                .load_function(k.name)
                .map_err(|e| fail(format!("the program has no kernel `{}` ({})", k.name, describe(e))))?;
            let limit = func
                .get_attribute(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
                .map_err(|e| fail(format!("querying the kernel failed ({})", describe(e))))?;
            let limit = u32::try_from(limit).unwrap_or(0);
            if let Some(block) = k.block {
                self.caps.check_block(k.name, block.map(|b| b as usize), Some(limit))?;
            }
            kernels.push(LoadedKernel { func, limit });
        }
        Ok(Module { _image: image, kernels, origin })
    }

    /// Device memory of `bytes` bytes (at least 1: the driver allocates no empty memory):
    /// the pool's if it has that size, else new (after emptying the pool, if the first try
    /// fails). Contents unspecified. `Err(OutOfMemory)` when the device has no room.
    pub(crate) fn alloc(&'static self, bytes: usize) -> Result<Buffer, Error> {
        let size = bytes.max(1);
        let pooled = {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.iter().position(|(n, _)| *n == size).map(|i| pool.remove(i).1)
        };
        if let Some(ptr) = pooled {
            crate::stats::count(|s| s.pool_reuses += 1);
            return Ok(Buffer { state: self, ptr, bytes });
        }
        self.bind()?;
        // SAFETY: the device's context is bound to this thread.
        let alloc = || unsafe { cu::malloc_sync(size) };
        let ptr = alloc()
            .or_else(|_| {
                // The pool may hold what the device needs: free it and try once more.
                let freed = std::mem::take(&mut *self.pool.lock().unwrap_or_else(|p| p.into_inner()));
                self.free(freed.into_iter().map(|(_, p)| p));
                alloc()
            })
            .map_err(|e| Error::OutOfMemory { device: self.label().to_string(), bytes, reason: describe(e) })?;
        crate::stats::count(|s| s.allocations += 1);
        Ok(Buffer { state: self, ptr, bytes })
    }

    /// Frees device memory that queued kernels may still use: after the stream drained.
    /// Errors are dropped (the memory is lost at worst, and the next call reports a
    /// broken context).
    fn free(&self, ptrs: impl IntoIterator<Item = sys::CUdeviceptr>) {
        let mut ptrs = ptrs.into_iter().peekable();
        if ptrs.peek().is_none() || self.bind().is_err() || self.stream.synchronize().is_err() {
            return;
        }
        for p in ptrs {
            // SAFETY: `p` came from `cuMemAlloc` in this context, is owned by no buffer,
            // and no queued work uses it any more (the stream is drained).
            let _ = unsafe { cu::free_sync(p) };
        }
    }

    /// Launches kernel `k` (index `index` of `module`) on `grid` blocks of `block`
    /// threads. The arguments were checked against `k.params` by the caller.
    pub(crate) fn launch(
        &self,
        module: &Module,
        index: usize,
        k: &KernelDesc,
        grid: [usize; 3],
        block: [usize; 3],
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        let loaded = &module.kernels[index];
        if k.block.is_none() {
            self.caps.check_block(k.name, block, Some(loaded.limit))?;
        }
        self.caps.check_grid(k.name, grid)?;
        // Both fit in u32: the checks above bound them by the device's u32 limits.
        let dim = |v: [usize; 3]| (v[0] as u32, v[1] as u32, v[2] as u32);
        // One 8-byte slot per parameter, holding its value in its C type's size at the
        // start (the driver reads that many bytes through the slot's address).
        let mut slots: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                KernelArg::Buffer(b) => b.cuda().ptr,
                KernelArg::Scalar(s) => scalar_slot(s),
            })
            .collect();
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        self.bind()?;
        // Events with timing around the launch while `profile` collects device times.
        let timed = super::timing_active();
        let event = || self.stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).ok();
        let start = if timed { event() } else { None };
        // SAFETY: the function belongs to a module of this context, which is bound; each
        // parameter points to a live slot holding a value of the size of the kernel's
        // parameter (device pointers for buffers, which are on this device; the kinds and
        // types were checked against the description, which the compiler wrote from the
        // same function as the kernel's text); the slots outlive the call, which copies
        // them. What the kernel touches is the caller's contract (`Module::launch`).
        let launched = unsafe {
            cu::launch_kernel(loaded.func.cu_function(), dim(grid), dim(block), 0, self.stream.cu_stream(), &mut params)
        };
        launched.map_err(|e| Error::LaunchFailed {
            kernel: k.name.to_string(),
            reason: format!("cuLaunchKernel with grid {grid:?} and block {block:?} failed ({})", describe(e)),
        })?;
        if let (Some(start), Some(end)) = (start, if timed { event() } else { None }) {
            super::record_timing(Box::new(move || start.elapsed_ms(&end).ok().map(|ms| f64::from(ms) * 1e-3)));
        }
        Ok(())
    }
}

/// A scalar argument's bytes in its C type (bool as one byte 0/1, f16/bf16 as their bits)
/// at the start of an 8-byte slot.
fn scalar_slot(s: Scalar) -> u64 {
    let mut slot = [0u8; 8];
    let mut put = |bytes: &[u8]| slot[..bytes.len()].copy_from_slice(bytes);
    match s {
        Scalar::Bool(b) => put(&[b as u8]),
        Scalar::I8(x) => put(&x.to_ne_bytes()),
        Scalar::I16(x) => put(&x.to_ne_bytes()),
        Scalar::I32(x) => put(&x.to_ne_bytes()),
        Scalar::I64(x) => put(&x.to_ne_bytes()),
        Scalar::U8(x) => put(&x.to_ne_bytes()),
        Scalar::U16(x) => put(&x.to_ne_bytes()),
        Scalar::U32(x) => put(&x.to_ne_bytes()),
        Scalar::U64(x) => put(&x.to_ne_bytes()),
        Scalar::F16(x) => put(&x.to_bits().to_ne_bytes()),
        Scalar::BF16(x) => put(&x.to_bits().to_ne_bytes()),
        Scalar::F32(x) => put(&x.to_ne_bytes()),
        Scalar::F64(x) => put(&x.to_ne_bytes()),
    }
    u64::from_ne_bytes(slot)
}

/// A program loaded on one device.
pub(crate) struct Module {
    /// Keeps the module loaded while its functions are used.
    _image: Arc<CudaModule>,
    kernels: Vec<LoadedKernel>,
    /// Which binary was loaded (for diagnostics).
    origin: String,
}

impl Module {
    /// Which binary was loaded: a prebuilt one, or what NVRTC compiled (or the disk
    /// cache held).
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }
}

struct LoadedKernel {
    func: CudaFunction,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` on the device.
    limit: u32,
}

/// Device memory on one CUDA device; back to the device's pool on drop.
pub(crate) struct Buffer {
    state: &'static DeviceState,
    ptr: sys::CUdeviceptr,
    /// The size asked for (the allocation has at least one byte).
    bytes: usize,
}

impl Buffer {
    fn io_error(&self, what: &str, e: DriverError) -> Error {
        Error::DeviceUnavailable {
            device: self.state.label().to_string(),
            reason: format!("{what} failed ({}); an earlier kernel may have failed", describe(e)),
        }
    }

    /// Copies `bytes` (at most the buffer's size) to the start of the buffer, in stream
    /// order; returns when the copy is done.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        assert!(bytes.len() <= self.bytes, "internal: a write past the end of a device buffer");
        if bytes.is_empty() {
            return Ok(());
        }
        self.state.bind()?;
        // SAFETY: the context is bound; the buffer holds at least `bytes.len()` bytes; the
        // stream is synchronized below before `bytes` can be released.
        unsafe { cu::memcpy_htod_async(self.ptr, bytes, self.state.stream.cu_stream()) }
            .map_err(|e| self.io_error("copying to the device", e))?;
        self.state.stream.synchronize().map_err(|e| self.io_error("copying to the device", e))
    }

    /// Copies the start of the buffer into `out` (at most the buffer's size), after every
    /// kernel enqueued before; returns when the copy is done.
    pub(crate) fn read(&self, out: &mut [u8]) -> Result<(), Error> {
        assert!(out.len() <= self.bytes, "internal: a read past the end of a device buffer");
        if out.is_empty() {
            return Ok(());
        }
        self.state.bind()?;
        // SAFETY: the context is bound; the buffer holds at least `out.len()` bytes; the
        // stream is synchronized below, before `out` is released.
        unsafe { cu::memcpy_dtoh_async(out, self.ptr, self.state.stream.cu_stream()) }
            .map_err(|e| self.io_error("copying from the device", e))?;
        self.state.stream.synchronize().map_err(|e| self.io_error("copying from the device", e))
    }

    /// Sets every byte to zero (in stream order: kernels enqueued later see zeros).
    pub(crate) fn fill_zero(&mut self) -> Result<(), Error> {
        self.state.bind()?;
        // SAFETY: the context is bound; the range is the whole allocation.
        unsafe { cu::memset_d8_async(self.ptr, 0, self.bytes.max(1), self.state.stream.cu_stream()) }
            .map_err(|e| self.io_error("clearing device memory", e))
    }
}

impl Drop for Buffer {
    /// Back to the pool (unless it alone is over the pool's byte limit), freeing the
    /// oldest buffers past the pool's limits (after the stream drained: queued kernels
    /// may use them).
    fn drop(&mut self) {
        let size = self.bytes.max(1);
        let state = self.state;
        if size > POOL_BYTES {
            state.free([self.ptr]);
            return;
        }
        let evicted: Vec<sys::CUdeviceptr> = {
            let mut pool = state.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.push((size, self.ptr));
            let mut evicted = Vec::new();
            while pool.len() > POOL_BUFFERS || pool.iter().map(|(n, _)| n).sum::<usize>() > POOL_BYTES {
                evicted.push(pool.remove(0).1);
            }
            evicted
        };
        state.free(evicted);
    }
}
