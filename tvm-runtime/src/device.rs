//! [`Device`]: where a kernel runs, and the process-wide default device (ARCHITECTURE.md,
//! "Dispatch without surprises").
//!
//! The default is decided once per process, by [`decide_default`], for
//! [`Device::default`] and the typed functions of every kernel alike: `TVM_DEVICE` if set
//! (a requested device that is unavailable makes the call on it fail with
//! [`Error::DeviceUnavailable`], never a silent fallback), else CUDA if a CUDA device is
//! present and kernels have CUDA code ([`CUDA_BACKEND`]), else the CPU.
//!
//! The CUDA presence check here uses no CUDA crate and loads nothing: the driver library
//! `libcuda.so.1` must exist (in a directory of `LD_LIBRARY_PATH`, skipping `stubs`
//! directories, whose library is a link-time stub and not a driver, or in a standard
//! library directory) and `/proc/driver/nvidia/gpus` must list the devices (their number
//! is the device count). It is Linux-only; elsewhere no CUDA device is found. When the
//! CUDA runtime lands, the real check (`cuInit` and `cuDeviceGetCount` through cudarc,
//! still only after the library was found) replaces it.

use crate::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

/// A device kernels run on. Displayed and parsed as `cpu`, `cuda:N`, `opencl:N`
/// (`cuda` and `opencl` alone mean index 0).
///
/// `#[non_exhaustive]`: more devices may come (Metal); match with a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU (generated Rust code, parallel loops on rayon).
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
    /// The OpenCL device with this index.
    OpenCl(usize),
}

impl Device {
    /// The target name of the device's code: `"cpu"`, `"cuda"` or `"opencl"` (what a
    /// kernel's `source(target)` takes).
    pub fn kind(&self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::OpenCl(_) => "opencl",
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
                decide_default(env.as_deref(), CUDA_BACKEND && cuda_probe().device_count > 0)
            })
            .clone()
    }

    /// Whether the device can run kernels now (the CPU always can).
    pub fn is_available(&self) -> bool {
        self.check_available().is_ok()
    }

    /// `Ok` if the device can run kernels, else `Err(DeviceUnavailable)` saying why.
    pub fn check_available(&self) -> Result<(), Error> {
        let unavailable = |reason: String| Err(Error::DeviceUnavailable { device: self.to_string(), reason });
        match *self {
            Device::Cpu => Ok(()),
            Device::Cuda(n) => {
                let probe = cuda_probe();
                if probe.library.is_none() {
                    unavailable("no CUDA driver library (libcuda.so.1) was found".to_string())
                } else if probe.device_count == 0 {
                    unavailable("the CUDA driver library is present but reports no device".to_string())
                } else if n >= probe.device_count {
                    let s = if probe.device_count == 1 { "" } else { "s" };
                    unavailable(format!("only {} CUDA device{s} found", probe.device_count))
                } else {
                    Ok(())
                }
            }
            #[cfg(feature = "opencl")]
            Device::OpenCl(n) => crate::gpu::opencl::OpenClRuntime::global().check_device(n),
            #[cfg(not(feature = "opencl"))]
            Device::OpenCl(_) => unavailable("tvm was built without its `opencl` feature".to_string()),
        }
    }

    /// Every device present: the CPU, then each CUDA device found, then each OpenCL
    /// device of every platform (none when libOpenCL is missing or the `opencl` feature is
    /// off). A listed device may still fail [`Device::check_available`] (an OpenCL device
    /// whose context cannot be made).
    pub fn all() -> Vec<Device> {
        let mut v = vec![Device::Cpu];
        v.extend((0..Device::cuda_device_count()).map(Device::Cuda));
        #[cfg(feature = "opencl")]
        v.extend((0..crate::gpu::opencl::OpenClRuntime::global().device_count()).map(Device::OpenCl));
        v
    }

    /// The number of CUDA devices found (0 without a driver); probed once per process.
    pub fn cuda_device_count() -> usize {
        cuda_probe().device_count
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

/// Whether kernels have CUDA code that runs. Not yet: until the CUDA backend exists, a
/// CUDA device that is present does not become the default, so that the typed functions
/// keep running (on the CPU) where a CUDA driver is installed.
pub const CUDA_BACKEND: bool = false;

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
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    /// Parses `cpu`, `cuda`, `cuda:N`, `opencl` or `opencl:N` (ASCII case-insensitive,
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
            _ => Err(invalid()),
        }
    }
}

/// What the CUDA presence check found.
struct CudaProbe {
    /// The driver library's path, if found.
    library: Option<PathBuf>,
    /// The number of devices (0 without the library).
    device_count: usize,
}

/// The CUDA presence check, run once per process.
fn cuda_probe() -> &'static CudaProbe {
    static PROBE: OnceLock<CudaProbe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let library = find_cuda_driver(std::env::var_os("LD_LIBRARY_PATH").as_deref());
        let device_count = if library.is_some() { proc_gpu_count(Path::new("/proc/driver/nvidia/gpus")) } else { 0 };
        CudaProbe { library, device_count }
    })
}

/// The path of `libcuda.so.1` in `ld_library_path`'s directories (except `stubs`
/// directories) or the standard library directories; `None` off Linux.
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

/// The number of entries of `dir` (one per GPU in `/proc/driver/nvidia/gpus`); 0 if it
/// cannot be read.
fn proc_gpu_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|entries| entries.filter(|e| e.is_ok()).count()).unwrap_or(0)
}
