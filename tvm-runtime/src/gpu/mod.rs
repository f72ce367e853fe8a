//! The GPU backends behind one interface: what the host code `compute!` generates for a
//! GPU target calls.
//!
//! The compiler knows everything about a kernel function while the macro expands: its
//! device code ([`Program::source`]), each kernel's name, parameters, shared memory and
//! block shape ([`KernelDesc`]), and the host side that binds dims, allocates
//! intermediates and computes each launch's grid and block. The host side becomes plain
//! Rust in the user's crate; the runtime only checks the device's limits and launches:
//!
//! ```text
//! let m = gpu::load(device, &PROGRAM)?;              // built once per device, cached
//! let tmp = m.alloc(n, 4)?;                           // an intermediate (pooled)
//! m.launch(0, [(n + 255) / 256, 1, 1], [256, 1, 1], &[KernelArg::Buffer(&c), .., KernelArg::Scalar(Scalar::I64(n))])?;
//! ```
//!
//! Nothing is parsed or lowered at run time. Three backends exist, each behind a feature:
//! OpenCL ([`opencl`], feature `opencl`) and CUDA ([`cuda`], feature `cuda`), both on by
//! default and loaded at run time, and WebGPU ([`webgpu`], feature `webgpu`, off by
//! default: wgpu, built in); [`load`] picks the one of the device.
//!
//! CUDA code is compiled once per machine: a program's prebuilt [`Binary`]s (nvcc, through
//! the build.rs helper) are tried first, else NVRTC compiles its source, and the result
//! is kept on disk ([`cuda_cache`]) under [`cuda_cache_key`], the name the build.rs helper
//! gives its nvcc outputs too.

#[cfg(feature = "opencl")]
pub mod opencl;
/// Without the `opencl` feature: the same interface, and no device.
#[cfg(not(feature = "opencl"))]
#[path = "opencl_off.rs"]
pub mod opencl;

#[cfg(feature = "cuda")]
pub mod cuda;
/// Without the `cuda` feature: the same interface, and no device.
#[cfg(not(feature = "cuda"))]
#[path = "cuda_off.rs"]
pub mod cuda;
#[doc(hidden)]
pub mod cuda_cache;
#[cfg(feature = "cuda")]
mod nvrtc;
#[cfg(any(not(feature = "opencl"), not(feature = "cuda"), not(feature = "webgpu")))]
mod off;

#[cfg(feature = "webgpu")]
pub mod webgpu;
/// Without the `webgpu` feature: the same interface, and no device.
#[cfg(not(feature = "webgpu"))]
#[path = "webgpu_off.rs"]
pub mod webgpu;

use crate::device::Device;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Error;
use half::{bf16, f16};
use std::sync::Arc;

/// A GPU programming interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    OpenCl,
    Cuda,
    /// WGSL run through wgpu.
    WebGpu,
}

impl Backend {
    /// The target name of the backend's code (`"opencl"`, `"cuda"`, `"webgpu"`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
            Backend::WebGpu => "webgpu",
        }
    }
}

/// A kernel parameter, in the order the kernel takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A pointer to global memory holding elements of this type.
    Buffer(DType),
    /// A scalar of this type.
    Scalar(DType),
}

/// One kernel of a [`Program`], as the compiler describes it.
#[derive(Debug)]
pub struct KernelDesc {
    /// The kernel's name in the program.
    pub name: &'static str,
    /// Its parameters, in order.
    pub params: &'static [ParamKind],
    /// Bytes of shared (`__local`, `__shared__`) memory it declares.
    pub shared_bytes: u64,
    /// Its block shape when it is a constant (the kernel's text then requires it:
    /// `reqd_work_group_size`, `__launch_bounds__`), checked against the device when the
    /// program is loaded.
    pub block: Option<[u32; 3]>,
}

/// The device code of one kernel function for one backend: a `static` the compiler
/// generates. The runtime builds it once per device, keyed by the static's address.
#[derive(Debug)]
pub struct Program {
    pub backend: Backend,
    /// The kernel function's name (for messages).
    pub function: &'static str,
    /// The program's text (OpenCL C, CUDA C, WGSL).
    pub source: &'static str,
    /// Its kernels, in the order host code launches them by index.
    pub kernels: &'static [KernelDesc],
    /// Binaries of `source` built ahead of time (CUDA: PTX and cubin that a `build.rs`
    /// compiled with nvcc), tried before the source is compiled at run time. Empty for
    /// OpenCL, and for CUDA without a build step.
    pub binaries: &'static [Binary],
}

/// The format of a prebuilt [`Binary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryFormat {
    /// PTX text, JIT-compiled by the driver for any device of at least `arch`.
    Ptx,
    /// A cubin, loadable by devices of `arch`'s major version and a minor at least as high.
    Cubin,
}

impl BinaryFormat {
    /// The file extension of the format: `"ptx"`, `"cubin"` (build.rs outputs and disk
    /// cache entries are `<key>.<extension>`).
    pub fn extension(self) -> &'static str {
        match self {
            BinaryFormat::Ptx => "ptx",
            BinaryFormat::Cubin => "cubin",
        }
    }
}

/// The compiler flags, besides the architecture, that CUDA code is compiled with: by
/// NVRTC at run time and by the build.rs helper's nvcc, and so the `flags` of their
/// [`cuda_cache_key`].
pub const CUDA_FLAGS: &str = "--std=c++17";

/// The name of what `source` compiles to for architecture `arch` (compute capability × 10,
/// `80` for `sm_80`) with compiler `flags` (say [`CUDA_FLAGS`]): 64 lowercase hex digits.
///
/// This is a contract between the build.rs helper, which names nvcc's outputs
/// `<key>.ptx` and `<key>.cubin`, the macro, which embeds an output only under its
/// source's key, and the runtime, whose NVRTC disk cache uses the same names: the
/// SHA-256 of the UTF-8 text
///
/// ```text
/// tvm-rs-cuda-key v1\n
/// <len(source)>\n<source>\n
/// <arch>\n
/// <len(flags)>\n<flags>\n
/// ```
///
/// where `len` is the length in bytes and numbers are decimal. The lengths make the
/// framing unambiguous (no two different triples hash the same text). A changed source,
/// architecture or flag changes the name, so a stale binary never loads.
pub fn cuda_cache_key(source: &str, arch: u32, flags: &str) -> String {
    let text = format!("tvm-rs-cuda-key v1\n{}\n{source}\n{arch}\n{}\n{flags}\n", source.len(), flags.len());
    cuda_cache::sha256_hex(text.as_bytes())
}

/// The prebuilt binaries of `binaries` a CUDA device of compute capability `cc` (× 10)
/// can load, in the order to try them: cubins of its major version and a minor no higher
/// than its own (the newest first), then PTX for an architecture no newer than it (the
/// newest first), which the driver compiles for the device.
#[doc(hidden)]
pub fn cuda_binary_candidates(binaries: &[Binary], cc: u32) -> Vec<&Binary> {
    let mut cubins: Vec<&Binary> =
        binaries.iter().filter(|b| b.format == BinaryFormat::Cubin && b.arch / 10 == cc / 10 && b.arch <= cc).collect();
    cubins.sort_by_key(|b| std::cmp::Reverse(b.arch));
    let mut ptx: Vec<&Binary> = binaries.iter().filter(|b| b.format == BinaryFormat::Ptx && b.arch <= cc).collect();
    ptx.sort_by_key(|b| std::cmp::Reverse(b.arch));
    cubins.extend(ptx);
    cubins
}

/// What NVRTC compiles a program to for a device of compute capability `cc`, given the
/// architectures it `supported` (ascending; empty when it cannot say) and whether it
/// produces `cubin`s: a cubin for `cc` itself where it can; PTX for `cc` from an NVRTC
/// without cubins; PTX for the newest architecture it supports below `cc` for a device
/// newer than it knows (the driver compiles the PTX for the device); `None` for a device
/// older than every architecture it supports.
#[doc(hidden)]
pub fn nvrtc_target(cc: u32, supported: &[u32], cubin: bool) -> Option<(u32, BinaryFormat)> {
    let native = if cubin { BinaryFormat::Cubin } else { BinaryFormat::Ptx };
    if supported.is_empty() || supported.contains(&cc) {
        return Some((cc, native));
    }
    supported.iter().copied().filter(|&a| a < cc).max().map(|a| (a, BinaryFormat::Ptx))
}

/// CUDA code compiled for one architecture (by NVRTC, or read from the disk cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledCuda {
    pub format: BinaryFormat,
    /// The architecture it was compiled for (× 10).
    pub arch: u32,
    /// Its [`cuda_cache_key`] (with [`CUDA_FLAGS`]).
    pub key: String,
    /// The cubin, or the PTX text (without a final NUL).
    pub bytes: Vec<u8>,
    /// Whether it came from the disk cache rather than from NVRTC.
    pub cache_hit: bool,
}

/// What a CUDA device supports, as its driver reports it (the checks are plain functions
/// of these numbers, so they are tested without a device).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaCaps {
    /// `cuda:N (name, sm_XY)`, for messages.
    pub label: String,
    /// Compute capability × 10 (`90` for 9.0).
    pub compute_capability: u32,
    /// Threads per block, all dimensions together.
    pub max_threads_per_block: u32,
    /// Block extents per dimension.
    pub max_block: [u32; 3],
    /// Grid extents per dimension.
    pub max_grid: [u32; 3],
    /// Static shared memory per block, in bytes.
    pub max_shared_bytes_per_block: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Peak SM clock, kHz.
    pub clock_khz: u32,
    /// Peak memory clock, kHz, and the memory bus width in bits.
    pub memory_clock_khz: u32,
    pub memory_bus_bits: u32,
}

impl CudaCaps {
    /// The device's peak f32 GFLOP/s (FMA as two operations: SMs × FP32 lanes per SM of
    /// its architecture × 2 × clock) and peak DRAM GB/s (double data rate × bus width × memory
    /// clock), from what the driver reports; `None` where a figure is 0 or the
    /// architecture's FP32 lanes per SM are not in the table.
    pub fn peak(&self) -> Option<(f64, f64)> {
        let lanes = match self.compute_capability {
            60 => 64,
            61 | 62 => 128,
            70 | 72 | 75 => 64,
            80 => 64,
            86 | 87 | 89 => 128,
            90 => 128,
            100 | 101 | 103 | 110 | 120 | 121 => 128,
            _ => return None,
        };
        let flops = f64::from(self.multiprocessors) * f64::from(lanes) * 2.0 * f64::from(self.clock_khz) * 1e3;
        let bytes = 2.0 * f64::from(self.memory_clock_khz) * 1e3 * f64::from(self.memory_bus_bits) / 8.0;
        (flops > 0.0 && bytes > 0.0).then_some((flops / 1e9, bytes / 1e9))
    }

    /// `Ok` if a kernel declaring `bytes` of shared memory fits a block of the device;
    /// else `Err(DeviceUnsupported)`.
    pub fn check_shared_memory(&self, kernel: &str, bytes: u64) -> Result<(), Error> {
        if bytes > self.max_shared_bytes_per_block {
            return Err(Error::DeviceUnsupported {
                device: self.label.clone(),
                reason: format!(
                    "kernel `{kernel}` uses {bytes} bytes of shared memory, more than the device's {} bytes per block",
                    self.max_shared_bytes_per_block
                ),
            });
        }
        Ok(())
    }

    /// `Ok` if `block` fits the device's limits and `kernel_limit`, the kernel's own
    /// maximum threads per block on the device (its registers may lower it); else
    /// `Err(LaunchFailed)`.
    pub fn check_block(&self, kernel: &str, block: [usize; 3], kernel_limit: Option<u32>) -> Result<(), Error> {
        let fail = |reason: String| Err(Error::LaunchFailed { kernel: kernel.to_string(), reason });
        let threads = block.iter().try_fold(1usize, |a, &b| a.checked_mul(b)).unwrap_or(usize::MAX);
        if threads > self.max_threads_per_block as usize {
            return fail(format!(
                "block {block:?} has {threads} threads, more than the device's maximum of {} per block",
                self.max_threads_per_block
            ));
        }
        for (d, (&b, &m)) in block.iter().zip(&self.max_block).enumerate() {
            if b > m as usize {
                return fail(format!("block extent {d} is {b}, more than the device's maximum {m} in that dimension"));
            }
        }
        if let Some(limit) = kernel_limit {
            if threads > limit as usize {
                return fail(format!(
                    "block {block:?} has {threads} threads, more than the kernel's limit of {limit} on this device \
                     (device maximum {})",
                    self.max_threads_per_block
                ));
            }
        }
        Ok(())
    }

    /// `Ok` if `grid` fits the device's grid limits; else `Err(LaunchFailed)`.
    pub fn check_grid(&self, kernel: &str, grid: [usize; 3]) -> Result<(), Error> {
        for (d, (&g, &m)) in grid.iter().zip(&self.max_grid).enumerate() {
            if g > m as usize {
                return Err(Error::LaunchFailed {
                    kernel: kernel.to_string(),
                    reason: format!("grid extent {d} is {g}, more than the device's maximum {m} in that dimension"),
                });
            }
        }
        Ok(())
    }
}

/// A prebuilt binary of a [`Program`]'s source.
#[derive(Debug)]
pub struct Binary {
    pub format: BinaryFormat,
    /// The compute capability it was built for, × 10 (`80` for `sm_80`).
    pub arch: u32,
    /// The cache key of the source, architecture and flags it was built from (the file
    /// name build.rs gave it); the macro embeds a binary only when the key of its own
    /// generated source matches.
    pub key: &'static str,
    pub bytes: &'static [u8],
}

/// What a device supports of what generated programs may use (with or without the
/// `opencl` feature: the checks are plain functions of the device's answers).
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

/// A scalar kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F16(f16),
    BF16(bf16),
    F32(f32),
    F64(f64),
}

impl Scalar {
    /// The argument's type.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Bool(_) => DType::BOOL,
            Scalar::I8(_) => DType::I8,
            Scalar::I16(_) => DType::I16,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::U8(_) => DType::U8,
            Scalar::U16(_) => DType::U16,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
            Scalar::F16(_) => DType::F16,
            Scalar::BF16(_) => DType::BF16,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }
}

/// A kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum KernelArg<'a> {
    Buffer(&'a Buffer),
    Scalar(Scalar),
}

/// Memory on a GPU device. Dropping it gives it back to the device's pool, for the next
/// allocation of the same size.
pub struct Buffer {
    device: Device,
    /// The size asked for.
    bytes: usize,
    inner: BufferInner,
}

enum BufferInner {
    OpenCl(opencl::Buffer),
    Cuda(cuda::Buffer),
    WebGpu(webgpu::Buffer),
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({} bytes on {})", self.bytes, self.device)
    }
}

impl Buffer {
    /// The device the memory is on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The size in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// `Err(LengthMismatch)` unless `len` bytes of elements of `elem` bytes fill the
    /// buffer exactly.
    fn check_len(&self, len: usize, elem: usize) -> Result<(), Error> {
        if len == self.bytes {
            return Ok(());
        }
        let elem = elem.max(1);
        Err(Error::LengthMismatch { len: len / elem, shape: vec![self.bytes / elem] })
    }

    /// Copies `bytes`, as long as the buffer, into it (counted as an upload).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.check_len(bytes.len(), 1)?;
        match &mut self.inner {
            BufferInner::OpenCl(b) => b.write(bytes)?,
            BufferInner::Cuda(b) => b.write(bytes)?,
            BufferInner::WebGpu(b) => b.write(bytes)?,
        }
        crate::stats::count(|s| {
            s.uploads += 1;
            s.bytes_uploaded += bytes.len() as u64;
        });
        Ok(())
    }

    /// Copies the buffer into `out`, as long as it (counted as a download).
    pub(crate) fn read(&self, out: &mut [u8]) -> Result<(), Error> {
        self.check_len(out.len(), 1)?;
        match &self.inner {
            BufferInner::OpenCl(b) => b.read(out)?,
            BufferInner::Cuda(b) => b.read(out)?,
            BufferInner::WebGpu(b) => b.read(out)?,
        }
        crate::stats::count(|s| {
            s.downloads += 1;
            s.bytes_downloaded += out.len() as u64;
        });
        Ok(())
    }

    /// Sets every byte to zero.
    pub(crate) fn fill_zero(&mut self) -> Result<(), Error> {
        match &mut self.inner {
            BufferInner::OpenCl(b) => b.fill_zero(),
            BufferInner::Cuda(b) => b.fill_zero(),
            BufferInner::WebGpu(b) => b.fill_zero(),
        }
    }

    /// The elements of `out` from the buffer (a plain copy, or through bytes for `bool`);
    /// `Err(LengthMismatch)` unless `out` is exactly as long as the buffer.
    pub(crate) fn read_elements<T: Element>(&self, out: &mut [T]) -> Result<(), Error> {
        self.check_len(std::mem::size_of_val(out), std::mem::size_of::<T>())?;
        match T::as_bytes_mut(out) {
            Some(bytes) => self.read(bytes),
            None => {
                let mut staging = vec![0u8; std::mem::size_of_val(out)];
                self.read(&mut staging)?;
                T::copy_from_device_bytes(out, &staging);
                Ok(())
            }
        }
    }

    /// The OpenCL memory of a buffer on an OpenCL device. A launch checks that its buffers
    /// are on its device ([`check_args`]) before it asks.
    #[cfg_attr(not(feature = "opencl"), allow(dead_code))]
    fn opencl(&self) -> &opencl::Buffer {
        match &self.inner {
            BufferInner::OpenCl(b) => b,
            _ => unreachable!(
                "internal: an OpenCL launch was given a buffer of {} (check_args compares devices)",
                self.device
            ),
        }
    }

    /// The WebGPU memory of a buffer on a WebGPU device (as [`Buffer::opencl`]).
    #[cfg_attr(not(feature = "webgpu"), allow(dead_code))]
    fn webgpu(&self) -> &webgpu::Buffer {
        match &self.inner {
            BufferInner::WebGpu(b) => b,
            _ => unreachable!(
                "internal: a WebGPU launch was given a buffer of {} (check_args compares devices)",
                self.device
            ),
        }
    }

    /// The CUDA memory of a buffer on a CUDA device (as [`Buffer::opencl`]).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn cuda(&self) -> &cuda::Buffer {
        match &self.inner {
            BufferInner::Cuda(b) => b,
            _ => unreachable!(
                "internal: a CUDA launch was given a buffer of {} (check_args compares devices)",
                self.device
            ),
        }
    }
}

/// A GPU device ready to run.
#[derive(Clone, Copy)]
pub(crate) enum Gpu {
    OpenCl(&'static opencl::DeviceState),
    Cuda(&'static cuda::DeviceState),
    WebGpu(&'static webgpu::DeviceState),
}

impl Gpu {
    /// `device` when it is a GPU that can run now; else `DeviceUnavailable` saying why.
    pub(crate) fn of(device: &Device) -> Result<Gpu, Error> {
        match *device {
            Device::OpenCl(n) => opencl::OpenClRuntime::global().state(n).map(Gpu::OpenCl),
            Device::Cuda(n) => cuda::CudaRuntime::global().state(n).map(Gpu::Cuda),
            Device::WebGpu(n) => webgpu::WebGpuRuntime::global().state(n).map(Gpu::WebGpu),
            Device::Cpu => Err(Error::DeviceUnavailable {
                device: "cpu".to_string(),
                reason: "the cpu runs no GPU programs (its kernels are Rust)".to_string(),
            }),
        }
    }

    fn device(self) -> Device {
        match self {
            Gpu::OpenCl(s) => Device::OpenCl(s.index()),
            Gpu::Cuda(s) => Device::Cuda(s.index()),
            Gpu::WebGpu(s) => Device::WebGpu(s.index()),
        }
    }

    /// Device memory for `bytes` bytes, contents unspecified.
    pub(crate) fn alloc(self, bytes: usize) -> Result<Buffer, Error> {
        let device = self.device();
        match self {
            Gpu::OpenCl(s) => Ok(Buffer { device, bytes, inner: BufferInner::OpenCl(s.alloc(bytes)?) }),
            Gpu::Cuda(s) => Ok(Buffer { device, bytes, inner: BufferInner::Cuda(s.alloc(bytes)?) }),
            Gpu::WebGpu(s) => Ok(Buffer { device, bytes, inner: BufferInner::WebGpu(s.alloc(bytes)?) }),
        }
    }

    /// Device memory holding a copy of `data` (one upload).
    pub(crate) fn upload<T: Element>(self, data: &[T]) -> Result<Buffer, Error> {
        let bytes = T::as_bytes(data);
        let mut b = self.alloc(bytes.len())?;
        b.write(bytes)?;
        Ok(b)
    }
}

/// A [`Program`] loaded on a GPU device: what generated host code allocates intermediates
/// and launches kernels through. Cheap to clone.
#[derive(Clone)]
pub struct Module {
    gpu: Gpu,
    program: &'static Program,
    inner: ModuleInner,
}

#[derive(Clone)]
enum ModuleInner {
    OpenCl(Arc<opencl::Module>),
    Cuda(Arc<cuda::Module>),
    WebGpu(Arc<webgpu::Module>),
}

/// `program` loaded on `device`: built on first use (once per process and device, a failed
/// build included), its kernels checked against the device's limits. Errors:
/// `DeviceUnavailable` (no such device, no backend for it), `DeviceUnsupported` (f64 or
/// f16 it lacks, too much shared memory, a CUDA program the driver cannot load),
/// `CompilationFailed` (with the log; for CUDA also where NVRTC is missing, saying what to
/// install), `LaunchFailed` (a constant block shape over the limits), `Internal` (a
/// program of another backend than the device's).
pub fn load(device: &Device, program: &'static Program) -> Result<Module, Error> {
    let gpu = Gpu::of(device)?;
    let want = match gpu {
        Gpu::OpenCl(_) => Backend::OpenCl,
        Gpu::Cuda(_) => Backend::Cuda,
        Gpu::WebGpu(_) => Backend::WebGpu,
    };
    if program.backend != want {
        return Err(Error::Internal {
            message: format!("a {} program of `{}` given to {device}", program.backend.name(), program.function),
        });
    }
    let inner = match gpu {
        Gpu::OpenCl(s) => ModuleInner::OpenCl(s.load(program)?),
        Gpu::Cuda(s) => ModuleInner::Cuda(s.load(program)?),
        Gpu::WebGpu(s) => ModuleInner::WebGpu(s.load(program)?),
    };
    Ok(Module { gpu, program, inner })
}

impl Module {
    /// The device the module is loaded on.
    pub fn device(&self) -> Device {
        self.gpu.device()
    }

    /// Whether two modules are the same build (the cache returns one per program and
    /// device). For tests of the cache.
    #[doc(hidden)]
    pub fn same_build(&self, other: &Module) -> bool {
        match (&self.inner, &other.inner) {
            (ModuleInner::OpenCl(a), ModuleInner::OpenCl(b)) => Arc::ptr_eq(a, b),
            (ModuleInner::Cuda(a), ModuleInner::Cuda(b)) => Arc::ptr_eq(a, b),
            (ModuleInner::WebGpu(a), ModuleInner::WebGpu(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Which binary of the program was loaded (CUDA: a prebuilt cubin or PTX, or what NVRTC
    /// compiled, or the disk cache held; OpenCL: the source, built by its driver). For
    /// diagnostics and tests.
    #[doc(hidden)]
    pub fn build_origin(&self) -> String {
        match &self.inner {
            ModuleInner::OpenCl(_) => "the OpenCL source, built by the driver".to_string(),
            ModuleInner::Cuda(m) => m.origin().to_string(),
            ModuleInner::WebGpu(_) => "the WGSL source, translated by wgpu".to_string(),
        }
    }

    /// Device memory for intermediate `name` of `elements` elements of `elem_bytes` bytes
    /// each, contents unspecified; `elements` comes from the host code's checked
    /// arithmetic on the dims, and is `None` where that overflowed. `Err(OutOfMemory)`
    /// naming the intermediate and its byte count when the size does not fit in memory
    /// (an intermediate sized by dims of different inputs, say) or the device has no room
    /// for it.
    pub fn alloc(&self, name: &str, elements: Option<i64>, elem_bytes: usize) -> Result<Buffer, Error> {
        let function = self.program.function;
        let bytes = elements
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| n.checked_mul(elem_bytes))
            .filter(|&b| b <= isize::MAX as usize);
        match bytes {
            Some(bytes) => self.gpu.alloc(bytes).map_err(|e| match e {
                Error::OutOfMemory { device, bytes, reason } => Error::OutOfMemory {
                    device,
                    bytes,
                    reason: format!("intermediate `{name}` of `{function}` needs {bytes} bytes: {reason}"),
                },
                other => other,
            }),
            None => {
                let exact = elements.map(|n| n as i128 * elem_bytes as i128);
                Err(Error::OutOfMemory {
                    device: self.device().to_string(),
                    bytes: exact.and_then(|b| usize::try_from(b).ok()).unwrap_or(usize::MAX),
                    reason: match exact {
                        Some(b) => format!(
                            "intermediate `{name}` of `{function}` needs {b} bytes, more than the address space holds"
                        ),
                        None => format!("the size of intermediate `{name}` of `{function}` overflows"),
                    },
                })
            }
        }
    }

    /// An input tensor's elements on the device (one upload).
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<Buffer, Error> {
        self.gpu.upload(data)
    }

    /// Device memory for an output tensor holding `data`'s elements. In debug builds it
    /// starts as `data` (one upload), so an element the kernels never write keeps its
    /// value as on the CPU, and a test that poisons outputs sees it instead of stale bytes
    /// of a pooled buffer; release builds skip that copy.
    pub fn output<T: Element>(&self, data: &[T]) -> Result<Buffer, Error> {
        if cfg!(debug_assertions) {
            self.gpu.upload(data)
        } else {
            self.gpu.alloc(std::mem::size_of_val(data))
        }
    }

    /// Copies an output back into `out` (one download), after every kernel launched
    /// before; `Err(LengthMismatch)` unless `out` is exactly as long as the buffer.
    pub fn download<T: Element>(&self, b: &Buffer, out: &mut [T]) -> Result<(), Error> {
        b.read_elements(out)
    }

    /// A zeroed fault buffer (six `i32`s), which the kernels of a program that check
    /// values (an index read from memory, an integer divisor) take as their last
    /// argument: the first failing check of any of them stores its site plus one in
    /// element 0, then the failing value and the extent as two little-endian `i64`s from
    /// element 2.
    pub fn fault_buffer(&self) -> Result<Buffer, Error> {
        self.gpu.upload(&[0i32; 6])
    }

    /// The first failed check recorded in fault buffer `b` by the kernels launched before
    /// (one download): `(site, value, extent)`, for [`check_failed`](crate::__rt::check_failed).
    pub fn read_fault(&self, b: &Buffer) -> Result<Option<(u32, i64, i64)>, Error> {
        let mut w = [0i32; 6];
        b.read_elements(&mut w)?;
        let wide = |lo: i32, hi: i32| (lo as u32 as i64) | ((hi as i64) << 32);
        Ok(match w[0] {
            0 => None,
            s => Some(((s as u32).wrapping_sub(1), wide(w[2], w[3]), wide(w[4], w[5]))),
        })
    }

    /// Launches kernel `kernel` of the program on `grid` blocks of `block` threads with
    /// `args` (in the kernel's parameter order). A grid or block with a zero extent
    /// launches nothing. Errors: `Internal` for arguments that do not match the kernel's
    /// description, or a block other than its constant one (a bug of the generated code);
    /// `LaunchFailed` for a negative extent, a block over the device's or the kernel's
    /// limits, or a driver failure.
    ///
    /// # Safety
    /// The kernel runs device code that reads and writes the buffers it is given, and
    /// only the compiler knows where: the program's text must be what its description
    /// says (each kernel's parameters of those kinds and types), and every buffer must
    /// hold every element the kernel touches for this grid, block and these scalars. The
    /// host code `compute!` generates guarantees both (it launches its own program, with
    /// buffers of the shapes it checked); other callers must too. On an OpenCL device
    /// that is the CPU (PoCL), a kernel that breaks this corrupts the process's memory.
    pub unsafe fn launch(
        &self,
        kernel: usize,
        grid: [i64; 3],
        block: [i64; 3],
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        let Some(k) = self.program.kernels.get(kernel) else {
            return Err(Error::Internal { message: format!("`{}` has no kernel {kernel}", self.program.function) });
        };
        let fail = |reason: String| Error::LaunchFailed { kernel: k.name.to_string(), reason };
        let mut g = [0usize; 3];
        let mut b = [0usize; 3];
        for d in 0..3 {
            for (out, v, what) in [(&mut g[d], grid[d], "grid"), (&mut b[d], block[d], "block")] {
                *out = usize::try_from(v).map_err(|_| fail(format!("{what} extent {d} is {v}")))?;
            }
        }
        check_args(self, k, args)?;
        if let Some(want) = k.block {
            if b.iter().zip(want).any(|(&x, w)| x != w as usize) {
                return Err(Error::Internal {
                    message: format!("launch of `{}` with block {b:?}, which requires {want:?}", k.name),
                });
            }
        }
        if g.contains(&0) || b.contains(&0) {
            return Ok(());
        }
        match (&self.inner, self.gpu) {
            (ModuleInner::OpenCl(m), Gpu::OpenCl(s)) => s.launch(m, kernel, k, g, b, args),
            (ModuleInner::Cuda(m), Gpu::Cuda(s)) => s.launch(m, kernel, k, g, b, args),
            (ModuleInner::WebGpu(m), Gpu::WebGpu(s)) => s.launch(m, kernel, k, g, b, args),
            _ => Err(Error::Internal { message: format!("`{}`: a module of one backend on another's device", k.name) }),
        }
    }
}

/// `Ok` if `args` match `k.params` in number, kinds and types, and every buffer is on the
/// module's device.
fn check_args(m: &Module, k: &KernelDesc, args: &[KernelArg<'_>]) -> Result<(), Error> {
    let bad = |what: String| Err(Error::Internal { message: format!("launch of `{}`: {what}", k.name) });
    if args.len() != k.params.len() {
        return bad(format!("{} arguments for {} parameters", args.len(), k.params.len()));
    }
    for (i, (a, p)) in args.iter().zip(k.params).enumerate() {
        match (a, p) {
            (KernelArg::Buffer(b), ParamKind::Buffer(_)) => {
                if b.device != m.device() {
                    return bad(format!("argument {i} is a buffer on {}, the kernel runs on {}", b.device, m.device()));
                }
            }
            (KernelArg::Scalar(s), ParamKind::Scalar(t)) if s.dtype() == *t => {}
            _ => return bad(format!("argument {i} is {a:?}, the kernel takes {p:?}")),
        }
    }
    Ok(())
}

/// Whether `program` is in `device`'s cache (built, failed, or being built). For the
/// runtime's tests.
#[doc(hidden)]
pub fn is_cached(device: &Device, program: &'static Program) -> bool {
    match Gpu::of(device) {
        Ok(Gpu::OpenCl(s)) => s.is_cached(program),
        Ok(Gpu::Cuda(s)) => s.is_cached(program),
        Ok(Gpu::WebGpu(s)) => s.is_cached(program),
        Err(_) => false,
    }
}

/// The error for a device kernels have no code for (generated host code without a CUDA
/// path, until the compiler generates one): why the device is unavailable, or that the
/// kernel has no code for it.
pub(crate) fn no_backend(device: &Device) -> Error {
    match device.check_available() {
        Err(e) => e,
        Ok(()) => Error::DeviceUnavailable {
            device: device.to_string(),
            reason: format!("this kernel has no {} code (tvm-rs does not generate it yet)", device.kind()),
        },
    }
}

/// The programs loaded on one device, by the address of their static description, each
/// built (or failed for good) once per process. The map's lock is held only to find or
/// insert a program's cell; the build runs outside it, so launches of other programs do
/// not wait for it, while loaders of the same program wait on its cell. What fails for
/// good (a compile error, a program the device cannot run: `CompilationFailed`,
/// `DeviceUnsupported`) stays cached; anything else (a driver or resource failure) is
/// tried again by the next load. Shared by the backends.
pub(crate) struct ModuleCache<M> {
    cells: std::sync::Mutex<std::collections::HashMap<usize, ModuleCell<M>>>,
}

type ModuleCell<M> = Arc<std::sync::OnceLock<Result<Arc<M>, Error>>>;

#[cfg_attr(not(any(feature = "opencl", feature = "cuda", feature = "webgpu")), allow(dead_code))]
impl<M> ModuleCache<M> {
    pub(crate) fn new() -> Self {
        ModuleCache { cells: std::sync::Mutex::new(std::collections::HashMap::new()) }
    }

    fn key(program: &'static Program) -> usize {
        program as *const Program as usize
    }

    /// `program`'s module: from the cache, or `build()` now (once, whoever asks first).
    pub(crate) fn load(
        &self,
        program: &'static Program,
        build: impl FnOnce() -> Result<M, Error>,
    ) -> Result<Arc<M>, Error> {
        let key = Self::key(program);
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells.entry(key).or_default().clone()
        };
        let result = cell.get_or_init(|| build().map(Arc::new)).clone();
        if let Err(e) = &result {
            if !matches!(e, Error::CompilationFailed { .. } | Error::DeviceUnsupported { .. }) {
                let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
                if cells.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                    cells.remove(&key);
                }
            }
        }
        result
    }

    /// Whether `program` is in the cache (built, failed, or being built).
    pub(crate) fn contains(&self, program: &'static Program) -> bool {
        self.cells.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&Self::key(program))
    }
}

/// Device-side timing of kernel launches, for `profile`: while [`begin_timing`] is active
/// on this thread, every launch records its execution on the device (an OpenCL event's
/// start and end timestamps; a pair of CUDA events around it), and [`end_timing`] adds
/// them up.
mod timing {
    use std::cell::RefCell;

    /// A launch's device time in seconds, once it has finished (waits for it).
    pub(crate) type Pending = Box<dyn FnOnce() -> Option<f64>>;

    thread_local! {
        static TIMED: RefCell<Option<Vec<Pending>>> = const { RefCell::new(None) };
    }

    /// Starts collecting the launches of this thread.
    pub fn begin_timing() {
        TIMED.with(|t| *t.borrow_mut() = Some(Vec::new()));
    }

    /// Whether launches are being collected (launch code asks before it records events).
    #[cfg_attr(not(any(feature = "opencl", feature = "cuda", feature = "webgpu")), allow(dead_code))]
    pub(crate) fn active() -> bool {
        TIMED.with(|t| t.borrow().is_some())
    }

    /// Records one launch's timing.
    #[cfg_attr(not(any(feature = "opencl", feature = "cuda", feature = "webgpu")), allow(dead_code))]
    pub(crate) fn record(p: Pending) {
        TIMED.with(|t| {
            if let Some(v) = t.borrow_mut().as_mut() {
                v.push(p);
            }
        });
    }

    /// Stops collecting; the device time of the launches since [`begin_timing`], in
    /// seconds, once they finished: `None` when there was none or one could not be read.
    pub fn end_timing() -> Option<f64> {
        let pending = TIMED.with(|t| t.borrow_mut().take())?;
        if pending.is_empty() {
            return None;
        }
        pending.into_iter().map(|p| p()).sum()
    }
}
#[cfg_attr(not(any(feature = "opencl", feature = "cuda", feature = "webgpu")), allow(unused_imports))]
pub(crate) use timing::{active as timing_active, record as record_timing};
pub use timing::{begin_timing, end_timing};
