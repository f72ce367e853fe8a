//! The WebGPU backend (feature `webgpu`): kernels as WGSL, run through wgpu on the
//! adapters it finds: Vulkan (Linux, Windows, Android; Mesa's lavapipe on a machine with
//! no GPU), Metal (macOS, iOS), DX12 (Windows). wgpu translates the WGSL for the driver
//! with naga; a machine without an adapter simply has no WebGPU device.
//!
//! * [`WebGpuRuntime`]: the process-wide state, created on first use. `Device::WebGpu(n)`
//!   is adapter `n` of those wgpu enumerates. Each gets one device and queue (created on
//!   first use) with the adapter's own limits and, where it has them, timestamp queries
//!   (the device-side timing of `profile`).
//! * Programs ([`super::Program`]) are built once per device and cached by their address,
//!   a failed build too: one shader module, one compute pipeline per kernel, its block
//!   checked against the device's workgroup limits and its shared memory against its
//!   workgroup storage.
//! * Buffers are pooled per device by size, as for OpenCL. Every size is rounded up to a
//!   multiple of 16 bytes: the code generator may declare a buffer as an array of `vec4`
//!   (see `tvm_core::codegen::wgsl`), and copies move whole 4-byte words.
//! * wgpu reports invalid use through error scopes, a stack the device's threads share:
//!   each sequence that pushes one holds the device's `scopes` lock, so a launch's error
//!   is its own `Err`, never another thread's or a panic.
//!
//! The kernel ABI (what the compiler's WGSL printer emits): group 0; buffer parameter `i`
//! at binding `i`; the scalar parameters as one uniform struct, 4 bytes each (`i32`,
//! `u32`, `f32`, `bool` as a `u32`), at the binding of the first of them; the workgroup
//! size is the kernel's constant block.

use super::{KernelArg, KernelDesc, Program, Scalar};
use crate::error::Error;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// What wgpu itself may panic on (a driver it cannot use): caught, and an `Err`.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("{what} panicked in wgpu: {msg}")
    })
}

/// One adapter, with its device made on first use.
struct AdapterSlot {
    adapter: wgpu::Adapter,
    name: String,
    state: OnceLock<Result<DeviceState, Error>>,
}

/// A device ready to run: its queue, limits, caches and buffer pool. There is one queue
/// per device and it runs submissions in order: buffers go back to the pool while
/// kernels that use them may still be queued, which is safe because whatever their next
/// user submits (a copy, a kernel) runs after them.
pub(crate) struct DeviceState {
    index: usize,
    label: String,
    device: wgpu::Device,
    queue: wgpu::Queue,
    limits: wgpu::Limits,
    timestamps: bool,
    /// Held while an error scope is pushed (see the module docs).
    scopes: Mutex<()>,
    /// Device buffers of dropped [`Buffer`]s, by size in bytes, for the next allocations.
    pool: Mutex<Vec<(u64, wgpu::Buffer)>>,
    /// Loaded programs (see [`super::ModuleCache`]).
    modules: super::ModuleCache<Module>,
}

/// At most this many buffers, and this many bytes, wait in a device's pool.
const POOL_BUFFERS: usize = 16;
const POOL_BYTES: u64 = 1 << 30;

/// The process-wide WebGPU state: the adapters wgpu found, each with its device, program
/// cache and buffer pool. Thread-safe; get it with [`WebGpuRuntime::global`].
pub struct WebGpuRuntime {
    adapters: Vec<AdapterSlot>,
    /// Why no adapter was found, when enumeration itself failed.
    enumeration_error: Option<String>,
}

impl WebGpuRuntime {
    /// The runtime, created (wgpu's instance made, adapters enumerated) on the first call.
    pub fn global() -> &'static WebGpuRuntime {
        static RT: OnceLock<WebGpuRuntime> = OnceLock::new();
        RT.get_or_init(WebGpuRuntime::enumerate)
    }

    fn enumerate() -> WebGpuRuntime {
        let found = guarded("enumerating adapters", || {
            let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
                backends: wgpu::Backends::PRIMARY,
                flags: wgpu::InstanceFlags::empty().with_env(),
                ..Default::default()
            });
            instance.enumerate_adapters(wgpu::Backends::PRIMARY)
        });
        match found {
            Ok(adapters) => WebGpuRuntime {
                adapters: adapters
                    .into_iter()
                    .map(|adapter| {
                        let info = adapter.get_info();
                        let name = format!("{} ({:?})", info.name, info.backend);
                        AdapterSlot { adapter, name, state: OnceLock::new() }
                    })
                    .collect(),
                enumeration_error: None,
            },
            Err(e) => WebGpuRuntime { adapters: Vec::new(), enumeration_error: Some(e) },
        }
    }

    /// The number of adapters wgpu found (0 without a Vulkan, Metal or DX12 driver).
    pub fn device_count(&self) -> usize {
        self.adapters.len()
    }

    /// "name (backend)" of adapter `n`, if it exists.
    pub fn device_name(&self, n: usize) -> Option<String> {
        self.adapters.get(n).map(|a| a.name.clone())
    }

    fn unavailable(n: usize, reason: String) -> Error {
        Error::DeviceUnavailable { device: format!("webgpu:{n}"), reason }
    }

    fn slot(&self, n: usize) -> Result<&AdapterSlot, Error> {
        self.adapters.get(n).ok_or_else(|| {
            Self::unavailable(
                n,
                match (&self.enumeration_error, self.adapters.len()) {
                    (Some(e), _) => e.clone(),
                    (None, 0) => {
                        "wgpu found no adapter (it needs a Vulkan, Metal or DX12 driver; on Linux without a GPU, \
                         Mesa's lavapipe: Debian's mesa-vulkan-drivers)"
                            .to_string()
                    }
                    (None, 1) => "wgpu found only 1 adapter".to_string(),
                    (None, k) => format!("wgpu found only {k} adapters"),
                },
            )
        })
    }

    /// `Ok` if adapter `n` exists and its device can be made.
    pub fn check_device(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|_| ())
    }

    /// Waits until everything submitted to device `n` has finished.
    pub fn synchronize(&self, n: usize) -> Result<(), Error> {
        self.state(n)?.wait()
    }

    /// Whether device `n` times kernels with timestamp queries (`profile`'s device times).
    pub fn has_timestamps(&self, n: usize) -> Result<bool, Error> {
        self.state(n).map(|s| s.timestamps)
    }

    pub(crate) fn state(&self, n: usize) -> Result<&'static DeviceState, Error> {
        let rt: &'static WebGpuRuntime = Self::global();
        let slot = rt.slot(n)?;
        slot.state
            .get_or_init(|| {
                let adapter = &slot.adapter;
                let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
                let limits = adapter.limits();
                let desc = wgpu::DeviceDescriptor {
                    label: Some("tvm"),
                    required_features: features,
                    required_limits: limits.clone(),
                    memory_hints: wgpu::MemoryHints::Performance,
                    ..Default::default()
                };
                let made = guarded("creating the device", || pollster::block_on(adapter.request_device(&desc)))
                    .map_err(|e| Self::unavailable(n, e))?
                    .map_err(|e| Self::unavailable(n, format!("creating a device on `{}` failed: {e}", slot.name)))?;
                let (device, queue) = made;
                // Errors outside a scope (none are expected: every call that can fail
                // pushes one) are not worth a panic.
                device.on_uncaptured_error(Arc::new(|_e: wgpu::Error| {}));
                Ok(DeviceState {
                    index: n,
                    label: format!("webgpu:{n} ({})", slot.name),
                    device,
                    queue,
                    limits,
                    timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
                    scopes: Mutex::new(()),
                    pool: Mutex::new(Vec::new()),
                    modules: super::ModuleCache::new(),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl DeviceState {
    /// `n` of `Device::WebGpu(n)`.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Runs `f` with validation and out-of-memory errors captured: its value, or the
    /// first error wgpu reported during it (`Err` text).
    fn scoped<T>(&self, f: impl FnOnce() -> T) -> Result<T, String> {
        let _held: MutexGuard<'_, ()> = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
        self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = guarded("a device call", f);
        let invalid = pollster::block_on(self.device.pop_error_scope());
        let oom = pollster::block_on(self.device.pop_error_scope());
        let value = value?;
        match invalid.or(oom) {
            Some(e) => Err(e.to_string()),
            None => Ok(value),
        }
    }

    /// Waits for every submission so far.
    fn wait(&self) -> Result<(), Error> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| Error::DeviceUnavailable {
            device: self.label.clone(),
            reason: format!("waiting for the device failed: {e}"),
        })
    }

    /// `program` loaded on this device: from the cache, or built and checked now. What
    /// fails for good (a shader wgpu rejects, a kernel the device cannot run) stays
    /// cached; anything else is tried again by the next load.
    pub(crate) fn load(&'static self, program: &'static Program) -> Result<Arc<Module>, Error> {
        self.modules.load(program, || self.build_module(program))
    }

    /// Whether `program` is in this device's cache (built, failed, or being built).
    pub(crate) fn is_cached(&self, program: &'static Program) -> bool {
        self.modules.contains(program)
    }

    fn unsupported(&self, reason: String) -> Error {
        Error::DeviceUnsupported { device: self.label.clone(), reason }
    }

    /// `Ok` if `k`'s constant block and shared memory fit the device's workgroups.
    fn check_kernel(&self, k: &KernelDesc) -> Result<[u32; 3], Error> {
        let l = &self.limits;
        let Some(block) = k.block else {
            return Err(Error::LaunchFailed {
                kernel: k.name.to_string(),
                reason: "a WebGPU kernel needs a constant block (its WGSL workgroup size)".to_string(),
            });
        };
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        let per_dim = [l.max_compute_workgroup_size_x, l.max_compute_workgroup_size_y, l.max_compute_workgroup_size_z];
        if threads > l.max_compute_invocations_per_workgroup as u64 || block.iter().zip(per_dim).any(|(&b, m)| b > m) {
            return Err(Error::LaunchFailed {
                kernel: k.name.to_string(),
                reason: format!(
                    "block {block:?} is more than the device's workgroups allow ({} invocations, {per_dim:?} per \
                     dimension)",
                    l.max_compute_invocations_per_workgroup
                ),
            });
        }
        if k.shared_bytes > l.max_compute_workgroup_storage_size as u64 {
            return Err(self.unsupported(format!(
                "kernel `{}` uses {} bytes of shared memory, more than the device's {} bytes of workgroup storage",
                k.name, k.shared_bytes, l.max_compute_workgroup_storage_size
            )));
        }
        Ok(block)
    }

    fn build_module(&self, program: &'static Program) -> Result<Module, Error> {
        for k in program.kernels {
            self.check_kernel(k)?;
        }
        let failed = |log: String| Error::CompilationFailed { target: "webgpu".to_string(), log };
        // Which kernels recover a linear workgroup id from a folded dispatch: those whose
        // entry point takes `@builtin(num_workgroups)` (the WGSL generator's ABI). A source
        // naga cannot parse folds nothing, and wgpu reports why below.
        let folds: Vec<bool> = match wgpu::naga::front::wgsl::parse_str(program.source) {
            Ok(m) => program.kernels.iter().map(|k| takes_num_workgroups(&m, k.name)).collect(),
            Err(_) => vec![false; program.kernels.len()],
        };
        let built = self.scoped(|| {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(program.function),
                source: wgpu::ShaderSource::Wgsl(program.source.into()),
            });
            program
                .kernels
                .iter()
                .map(|k| {
                    let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(k.name),
                        layout: None,
                        module: &module,
                        entry_point: Some(k.name),
                        compilation_options: Default::default(),
                        cache: None,
                    });
                    let layout = (!k.params.is_empty()).then(|| pipeline.get_bind_group_layout(0));
                    LoadedKernel { pipeline, layout, folds: false }
                })
                .collect::<Vec<_>>()
        });
        let mut kernels = built.map_err(failed)?;
        for (k, f) in kernels.iter_mut().zip(folds) {
            k.folds = f;
        }
        Ok(Module { kernels })
    }

    /// A device buffer of `bytes` bytes (rounded up to a multiple of 16, at least 16):
    /// one of the pool's if it has that size, else a new one (after emptying the pool, if
    /// the first try fails). Its contents are unspecified. `Err(OutOfMemory)` when the
    /// device has no room for it or cannot bind that much.
    pub(crate) fn alloc(&'static self, bytes: usize) -> Result<Buffer, Error> {
        let size = (bytes as u64).max(1).div_ceil(16) * 16;
        let pooled = {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.iter().position(|(n, _)| *n == size).map(|i| pool.remove(i).1)
        };
        if let Some(buffer) = pooled {
            crate::stats::count(|s| s.pool_reuses += 1);
            return Ok(Buffer { state: self, buffer: Some(buffer), bytes });
        }
        let max = (self.limits.max_storage_buffer_binding_size as u64).min(self.limits.max_buffer_size);
        if size > max {
            return Err(Error::OutOfMemory {
                device: self.label.clone(),
                bytes,
                reason: format!("more than the device binds as one storage buffer ({max} bytes)"),
            });
        }
        let create = || {
            self.scoped(|| {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::UNIFORM
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
        };
        let buffer = create()
            .or_else(|_| {
                // The pool may hold what the device needs: free it and try once more.
                self.pool.lock().unwrap_or_else(|p| p.into_inner()).clear();
                create()
            })
            .map_err(|reason| Error::OutOfMemory { device: self.label.clone(), bytes, reason })?;
        crate::stats::count(|s| s.allocations += 1);
        Ok(Buffer { state: self, buffer: Some(buffer), bytes })
    }

    /// Launches kernel `k` (index `index` of `module`) on `grid` workgroups. The
    /// arguments were checked against `k.params` by the caller, and `block` against its
    /// constant block.
    pub(crate) fn launch(
        &'static self,
        module: &Module,
        index: usize,
        k: &KernelDesc,
        grid: [usize; 3],
        _block: [usize; 3],
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
        let loaded = &module.kernels[index];
        let max = self.limits.max_compute_workgroups_per_dimension as usize;
        let dispatch = dispatch_shape(grid, max, loaded.folds).ok_or_else(|| {
            let folded = if loaded.folds { " (folded into x, y and z)" } else { "" };
            fail(format!("grid {grid:?} has more workgroups than the device's {max} per dimension{folded}"))
        })?;
        // The scalars, packed as the kernel's uniform struct.
        let mut uniform = Vec::new();
        let mut uniform_binding = None;
        for (i, a) in args.iter().enumerate() {
            let KernelArg::Scalar(s) = a else { continue };
            uniform_binding.get_or_insert(i as u32);
            let word: [u8; 4] = match *s {
                Scalar::I32(x) => x.to_le_bytes(),
                Scalar::U32(x) => x.to_le_bytes(),
                Scalar::F32(x) => x.to_le_bytes(),
                Scalar::Bool(b) => (b as u32).to_le_bytes(),
                other => {
                    return Err(Error::Internal {
                        message: format!("launch of `{}`: a WebGPU kernel takes no {} scalar", k.name, other.dtype()),
                    })
                }
            };
            uniform.extend_from_slice(&word);
        }
        let uniform = match uniform_binding {
            Some(_) => {
                let mut b = self.alloc(uniform.len())?;
                b.write(&uniform)?;
                Some(b)
            }
            None => None,
        };
        let timing = (self.timestamps && super::timing_active()).then(|| self.timer());
        let submitted = self.scoped(|| {
            let mut entries = Vec::new();
            for (i, a) in args.iter().enumerate() {
                if let KernelArg::Buffer(b) = a {
                    entries.push(wgpu::BindGroupEntry {
                        binding: i as u32,
                        resource: b.webgpu().raw().as_entire_binding(),
                    });
                }
            }
            if let (Some(binding), Some(u)) = (uniform_binding, &uniform) {
                entries.push(wgpu::BindGroupEntry { binding, resource: u.raw().as_entire_binding() });
            }
            let group = loaded.layout.as_ref().map(|layout| {
                self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout, entries: &entries })
            });
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            {
                let timestamp_writes = timing.as_ref().map(|t| wgpu::ComputePassTimestampWrites {
                    query_set: &t.queries,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                });
                let mut pass =
                    encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
                pass.set_pipeline(&loaded.pipeline);
                if let Some(g) = &group {
                    pass.set_bind_group(0, g, &[]);
                }
                pass.dispatch_workgroups(dispatch[0], dispatch[1], dispatch[2]);
            }
            if let Some(t) = &timing {
                encoder.resolve_query_set(&t.queries, 0..2, &t.resolved, 0);
                encoder.copy_buffer_to_buffer(&t.resolved, 0, &t.read, 0, 16);
            }
            self.queue.submit([encoder.finish()]);
        });
        submitted.map_err(|e| fail(format!("submitting with grid {grid:?}: {e}")))?;
        if let Some(t) = timing {
            let period = self.queue.get_timestamp_period() as f64;
            super::record_timing(Box::new(move || {
                let bytes = self.map_read(&t.read, 16).ok()?;
                let start = u64::from_le_bytes(bytes[0..8].try_into().ok()?);
                let end = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
                Some(end.saturating_sub(start) as f64 * period * 1e-9)
            }));
        }
        Ok(())
    }

    /// A pair of timestamp queries and the buffers their values go through.
    fn timer(&self) -> Timer {
        let queries = self.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: None,
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let buffer = |usage| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        Timer {
            queries,
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            read: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
        }
    }

    /// The first `len` bytes of a mappable buffer, once the submissions so far finished.
    fn map_read(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<u8>, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
        rx.recv().map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        let bytes = buffer.get_mapped_range(..)[..len].to_vec();
        buffer.unmap();
        Ok(bytes)
    }
}

struct Timer {
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    read: wgpu::Buffer,
}

/// A program built on one device: a compute pipeline per kernel.
pub(crate) struct Module {
    kernels: Vec<LoadedKernel>,
}

struct LoadedKernel {
    pipeline: wgpu::ComputePipeline,
    /// The layout of group 0 (none for a kernel without parameters).
    layout: Option<wgpu::BindGroupLayout>,
    /// Whether its 1-D grid may be dispatched folded ([`dispatch_shape`]).
    folds: bool,
}

/// Whether entry point `name` of `m` takes `@builtin(num_workgroups)`: the WGSL
/// generator's mark of a kernel that recovers its linear workgroup id as `x + X * (y + Y
/// * z)` and returns past its grid.
fn takes_num_workgroups(m: &wgpu::naga::Module, name: &str) -> bool {
    use wgpu::naga::{Binding, BuiltIn};
    m.entry_points.iter().find(|e| e.name == name).is_some_and(|e| {
        e.function.arguments.iter().any(|a| matches!(a.binding, Some(Binding::BuiltIn(BuiltIn::NumWorkGroups))))
    })
}

/// The workgroups to dispatch for `grid` on a device with `max` per dimension: the grid
/// itself when it fits; for a kernel that `folds`, a 1-D grid over `max` spread over x, y
/// and z (the fewest rows of x, and x no longer than they need, so fewer than `y * z`
/// workgroups pass the grid); `None` when it cannot fit.
pub(crate) fn dispatch_shape(grid: [usize; 3], max: usize, folds: bool) -> Option<[u32; 3]> {
    let fits = |g: [usize; 3]| g.iter().all(|&d| d <= max).then(|| g.map(|d| d as u32));
    if let Some(d) = fits(grid) {
        return Some(d);
    }
    if !folds || grid[1] != 1 || grid[2] != 1 || max == 0 {
        return None;
    }
    let n = grid[0];
    let rows = n.div_ceil(max);
    let z = rows.div_ceil(max);
    let y = rows.div_ceil(z);
    let x = n.div_ceil(y * z);
    fits([x, y, z])
}

/// Device memory on one WebGPU device; back to the device's pool on drop.
pub(crate) struct Buffer {
    state: &'static DeviceState,
    /// Always `Some` until dropped.
    buffer: Option<wgpu::Buffer>,
    /// The size asked for (the device buffer is rounded up to 16 bytes).
    bytes: usize,
}

impl Buffer {
    fn raw(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("internal: a live buffer has its memory")
    }

    fn io_error(&self, what: &str, e: String) -> Error {
        Error::DeviceUnavailable { device: self.state.label.clone(), reason: format!("{what} failed: {e}") }
    }

    /// Copies `bytes` (at most the buffer's size) to the start of the buffer. wgpu copies
    /// them at once; the copy reaches the device before anything submitted later.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        assert!(bytes.len() <= self.bytes, "internal: a write past the end of a device buffer");
        if bytes.is_empty() {
            return Ok(());
        }
        // Whole 4-byte words (the buffer has room: its size is a multiple of 16).
        let padded;
        let words = if bytes.len() % 4 == 0 {
            bytes
        } else {
            padded = [bytes, &[0u8; 3][..4 - bytes.len() % 4]].concat();
            &padded[..]
        };
        let s = self.state;
        s.scoped(|| s.queue.write_buffer(self.raw(), 0, words)).map_err(|e| self.io_error("copying to the device", e))
    }

    /// Copies the start of the buffer into `out` (at most the buffer's size), after every
    /// kernel submitted before (the queue is in order); blocking.
    pub(crate) fn read(&self, out: &mut [u8]) -> Result<(), Error> {
        assert!(out.len() <= self.bytes, "internal: a read past the end of a device buffer");
        if out.is_empty() {
            return Ok(());
        }
        let s = self.state;
        let size = (out.len() as u64).div_ceil(4) * 4;
        let staging = s
            .scoped(|| {
                let staging = s.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut encoder = s.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                encoder.copy_buffer_to_buffer(self.raw(), 0, &staging, 0, size);
                s.queue.submit([encoder.finish()]);
                staging
            })
            .map_err(|e| self.io_error("copying from the device", e))?;
        let bytes = s.map_read(&staging, out.len()).map_err(|e| self.io_error("copying from the device", e))?;
        out.copy_from_slice(&bytes);
        Ok(())
    }

    /// Sets every byte to zero (submitted: kernels submitted later see zeros).
    pub(crate) fn fill_zero(&mut self) -> Result<(), Error> {
        let s = self.state;
        s.scoped(|| {
            let mut encoder = s.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            encoder.clear_buffer(self.raw(), 0, None);
            s.queue.submit([encoder.finish()]);
        })
        .map_err(|e| self.io_error("clearing device memory", e))
    }
}

impl Drop for Buffer {
    /// Back to the pool (unless it alone is over the pool's byte limit), dropping the
    /// oldest buffers past the pool's limits. Safe before the kernels using it finished:
    /// the queue is in order, and wgpu keeps a buffer alive while submissions use it.
    fn drop(&mut self) {
        let Some(buffer) = self.buffer.take() else { return };
        let size = buffer.size();
        if size > POOL_BYTES {
            return;
        }
        let mut pool = self.state.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.push((size, buffer));
        while pool.len() > POOL_BUFFERS || pool.iter().map(|(n, _)| n).sum::<u64>() > POOL_BYTES {
            pool.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dispatch_shape;

    /// Every folded shape fits the limit and covers the grid with fewer than `y * z`
    /// workgroups to spare.
    #[test]
    fn a_folded_dispatch_covers_the_grid_within_the_limit() {
        let cases = [(65536, 65535), (262144, 65535), (65535 * 65535 + 1, 65535), (300, 7), (50, 7), (343, 7), (8, 7)];
        for (n, max) in cases {
            let [x, y, z] = dispatch_shape([n, 1, 1], max, true).unwrap();
            assert!([x, y, z].iter().all(|&d| d as usize <= max), "{n} on {max}: {x} {y} {z}");
            let (total, rows) = (x as usize * y as usize * z as usize, y as usize * z as usize);
            assert!(total >= n && total - n < rows, "{n} on {max}: {x} {y} {z}");
        }
    }

    #[test]
    fn grids_that_fit_are_dispatched_as_they_are_and_others_are_refused() {
        assert_eq!(dispatch_shape([65535, 3, 2], 65535, false), Some([65535, 3, 2]));
        assert_eq!(dispatch_shape([65536, 1, 1], 65535, false), None);
        // Only a 1-D grid folds.
        assert_eq!(dispatch_shape([65536, 2, 1], 65535, true), None);
        // More than max³ workgroups cannot fit.
        assert_eq!(dispatch_shape([7 * 7 * 7 + 1, 1, 1], 7, true), None);
        assert_eq!(dispatch_shape([7 * 7 * 7, 1, 1], 7, true), Some([7, 7, 7]));
    }
}
