//! [`Device`]: where a kernel runs, and the process-wide default device (ARCHITECTURE.md,
//! "Dispatch without surprises").
//!
//! The default is decided once per process, by [`decide_default`], for
//! [`Device::default`] and the typed functions of every kernel alike: `TVM_DEVICE` if set
//! (a requested device that is unavailable makes the call on it fail with
//! [`Error::DeviceUnavailable`], never a silent fallback), else CUDA if a CUDA device is
//! present and kernels have CUDA code ([`CUDA_BACKEND`]), else the CPU.
//!
//! The CUDA presence check first looks for the driver library `libcuda.so.1` on disk,
//! loading nothing (in a directory of `LD_LIBRARY_PATH`, skipping `stubs` directories,
//! whose library is a link-time stub and not a driver, or in a standard library
//! directory; Linux only, elsewhere no CUDA device is found). Only when it exists does the
//! CUDA backend (feature `cuda`) load it through cudarc and ask the driver: `cuInit` and
//! `cuDeviceGetCount` give the devices ([`crate::gpu::cuda::CudaRuntime`]). Without the
//! feature there is no CUDA device.

use crate::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

/// A device kernels run on. Displayed and parsed as `cpu`, `cuda:N`, `opencl:N`,
/// `webgpu:N` (`cuda`, `opencl` and `webgpu` alone mean index 0).
///
/// `#[non_exhaustive]`: more devices may come; match with a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU (generated Rust code, parallel loops on rayon).
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
    /// The OpenCL device with this index.
    OpenCl(usize),
    /// The WebGPU adapter with this index (wgpu on Vulkan, Metal or DX12; feature
    /// `webgpu`).
    WebGpu(usize),
}

impl Device {
    /// The target name of the device's code: `"cpu"`, `"cuda"`, `"opencl"` or `"webgpu"`
    /// (what a kernel's `source(target)` takes).
    pub fn kind(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::OpenCl(_) => "opencl",
            Device::WebGpu(_) => "webgpu",
        }
    }

    /// The process-wide default device (decided on the first call, then fixed):
    /// `TVM_DEVICE` if set and not empty, else `Cuda(0)` if a CUDA device is present and
    /// kernels have CUDA code ([`CUDA_BACKEND`]), else `Cpu`. An unparseable `TVM_DEVICE`
    /// is `Err(InvalidDevice)`, on every call. A valid but unavailable `TVM_DEVICE` is
    /// returned as is: running on it then fails with `Err(DeviceUnavailable)`. The typed
    /// functions `compute!` generates run on this device.
    pub fn try_default() -> Result<Device, Error> {
        static DEFAULT: OnceLock<Result<Device, Error>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                let env = std::env::var_os("TVM_DEVICE");
                let env = env.as_ref().map(|v| v.to_string_lossy());
                decide_default(env.as_deref(), CUDA_BACKEND && Device::cuda_device_count() > 0)
            })
            .clone()
    }

    /// Waits until every kernel launched on the device has finished (`run_on` and
    /// `call_on` return once a GPU kernel is queued; a timing of them ends here). On the
    /// CPU kernels finish before they return.
    pub fn synchronize(&self) -> Result<(), Error> {
        match *self {
            Device::Cpu => Ok(()),
            Device::Cuda(n) => crate::gpu::cuda::CudaRuntime::global().synchronize(n),
            Device::OpenCl(n) => crate::gpu::opencl::OpenClRuntime::global().synchronize(n),
            Device::WebGpu(n) => crate::gpu::webgpu::WebGpuRuntime::global().synchronize(n),
        }
    }

    /// Whether the device can run kernels now (the CPU always can).
    pub fn is_available(&self) -> bool {
        self.check_available().is_ok()
    }

    /// `Ok` if the device can run kernels, else `Err(DeviceUnavailable)` saying why.
    pub fn check_available(&self) -> Result<(), Error> {
        // Without its feature, a backend's runtime has no device and says why.
        match *self {
            Device::Cpu => Ok(()),
            Device::Cuda(n) => crate::gpu::cuda::CudaRuntime::global().check_device(n),
            Device::OpenCl(n) => crate::gpu::opencl::OpenClRuntime::global().check_device(n),
            Device::WebGpu(n) => crate::gpu::webgpu::WebGpuRuntime::global().check_device(n),
        }
    }

    /// Every device present: the CPU, then each CUDA device the driver reports (none
    /// without a driver or the `cuda` feature), then each OpenCL device of every platform
    /// (none when libOpenCL is missing or the `opencl` feature is off), then each adapter
    /// wgpu finds (none without a Vulkan, Metal or DX12 driver, or the `webgpu` feature).
    /// A listed device may still fail [`Device::check_available`] (a device whose context
    /// cannot be made).
    pub fn all() -> Vec<Device> {
        let mut v = vec![Device::Cpu];
        v.extend((0..Device::cuda_device_count()).map(Device::Cuda));
        v.extend((0..crate::gpu::opencl::OpenClRuntime::global().device_count()).map(Device::OpenCl));
        v.extend((0..crate::gpu::webgpu::WebGpuRuntime::global().device_count()).map(Device::WebGpu));
        v
    }

    /// The number of CUDA devices the driver reports (0 without a driver or the `cuda`
    /// feature); asked once per process.
    pub fn cuda_device_count() -> usize {
        crate::gpu::cuda::CudaRuntime::global().device_count()
    }
}

impl Default for Device {
    /// The process-wide default device, as [`Device::try_default`] decides it.
    ///
    /// With `TVM_DEVICE` unset (or empty) this is `Cuda(0)` when a CUDA device is present
    /// and kernels have CUDA code, and `Cpu` otherwise. With `TVM_DEVICE` set to a device, it is that device, available
    /// or not. Only when `TVM_DEVICE` does not parse, which `Default` cannot report, does it
    /// fall back to `Cpu`, after printing the error to stderr once; generated code calls
    /// [`Device::try_default`], which returns the error instead.
    fn default() -> Device {
        match Device::try_default() {
            Ok(d) => d,
            Err(e) => {
                static WARNED: OnceLock<()> = OnceLock::new();
                WARNED.get_or_init(|| eprintln!("warning: {e}; using the cpu"));
                Device::Cpu
            }
        }
    }
}

/// Whether this build runs CUDA code: the `cuda` feature (on by default). With it, a CUDA
/// device that is present is the default device; without it, no CUDA device exists.
pub const CUDA_BACKEND: bool = cfg!(feature = "cuda");

/// The default-device decision as a pure function: `env` is the value of `TVM_DEVICE`
/// (`None` if unset; empty or blank counts as unset), `cuda_usable` whether a CUDA device
/// was found and kernels can run on it. Returns the parsed `TVM_DEVICE` (availability is
/// not checked here: the run on it reports that), else `Cuda(0)` or `Cpu`.
pub fn decide_default(env: Option<&str>, cuda_usable: bool) -> Result<Device, Error> {
    match env {
        Some(text) if !text.trim().is_empty() => text.parse(),
        _ if cuda_usable => Ok(Device::Cuda(0)),
        _ => Ok(Device::Cpu),
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
            Device::OpenCl(n) => write!(f, "opencl:{n}"),
            Device::WebGpu(n) => write!(f, "webgpu:{n}"),
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    /// Parses `cpu`, `cuda`, `cuda:N`, `opencl`, `opencl:N`, `webgpu` or `webgpu:N` (ASCII
    /// case-insensitive,
    /// surrounding whitespace ignored, `N` decimal digits); anything else is
    /// `Err(InvalidDevice)`.
    fn from_str(text: &str) -> Result<Device, Error> {
        let invalid = || Error::InvalidDevice { text: text.to_string() };
        let lower = text.trim().to_ascii_lowercase();
        let (kind, index) = match lower.split_once(':') {
            Some((kind, index)) => {
                if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid());
                }
                (kind, Some(index.parse::<usize>().map_err(|_| invalid())?))
            }
            None => (lower.as_str(), None),
        };
        match (kind, index) {
            ("cpu", None) => Ok(Device::Cpu),
            ("cuda", n) => Ok(Device::Cuda(n.unwrap_or(0))),
            ("opencl", n) => Ok(Device::OpenCl(n.unwrap_or(0))),
            ("webgpu", n) => Ok(Device::WebGpu(n.unwrap_or(0))),
            _ => Err(invalid()),
        }
    }
}

/// The path of the CUDA driver library (`find_cuda_driver` of this process's
/// `LD_LIBRARY_PATH`), looked up once per process. The CUDA backend loads nothing of
/// CUDA unless this found it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn cuda_driver_library() -> Option<&'static Path> {
    static LIBRARY: OnceLock<Option<PathBuf>> = OnceLock::new();
    LIBRARY.get_or_init(|| find_cuda_driver(std::env::var_os("LD_LIBRARY_PATH").as_deref())).as_deref()
}

/// The path of `libcuda.so.1` in `ld_library_path`'s directories (except `stubs`
/// directories) or the standard library directories; `None` off Linux.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn find_cuda_driver(ld_library_path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    const STANDARD: &[&str] = &[
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib/wsl/lib",
    ];
    let from_env: Vec<PathBuf> = ld_library_path.map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    from_env
        .into_iter()
        .filter(|dir| !dir.as_os_str().is_empty() && !dir.components().any(|c| c.as_os_str() == "stubs"))
        .chain(STANDARD.iter().map(PathBuf::from))
        .map(|dir| dir.join("libcuda.so.1"))
        .find(|lib| lib.is_file())
}
