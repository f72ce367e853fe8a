//! NVRTC, the CUDA runtime compiler, through cudarc's `nvrtc` bindings: found and checked
//! once per process before cudarc is asked for anything (cudarc panics where the library
//! or one of its functions is missing), then used to compile a program's CUDA C to a
//! cubin (or PTX) for one architecture.
//!
//! Where the library comes from: `TVM_NVRTC_LIBRARY` when set (the path of a
//! `libnvrtc.so.12`; it is loaded first, so cudarc's own search, which looks the library
//! up by its soname, finds it), else the names cudarc tries (`libnvrtc.so`,
//! `libnvrtc.so.12`, ...) through the dynamic loader: `LD_LIBRARY_PATH`, then the system's
//! library directories.

use super::{BinaryFormat, CUDA_FLAGS};
use crate::error::Error;
use cudarc::nvrtc::{result, sys};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

/// What this process's NVRTC offers.
pub(crate) struct Nvrtc {
    /// Its version, `(major, minor)`.
    pub(crate) version: (i32, i32),
    /// The architectures it compiles for (`80` for `sm_80`), ascending; empty when it
    /// cannot say (an NVRTC before 11.2).
    pub(crate) archs: Vec<u32>,
    /// Whether it produces cubins (`nvrtcGetCUBIN`, NVRTC 11.1 and later).
    pub(crate) cubin: bool,
}

/// The functions every compilation calls: checked present before any is called.
const REQUIRED: &[&str] = &[
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
];

/// What to install when NVRTC is missing: the text of the error (after the reason).
pub(crate) const INSTALL_ADVICE: &str = "install the CUDA toolkit's NVRTC (libnvrtc.so.12), or \
    `pip install nvidia-cuda-nvrtc-cu12` and put its `nvidia/cuda_nvrtc/lib` directory on \
    LD_LIBRARY_PATH (or name its libnvrtc.so.12 in TVM_NVRTC_LIBRARY), or compile the kernels \
    ahead of time with nvcc through the build.rs helper";

/// The error for a program that cannot be compiled because NVRTC is missing (`why`).
/// `CompilationFailed`: the device itself may be fine; what is missing is the compiler of
/// its code, and installing it is what mends the error.
pub(crate) fn missing(why: &str) -> Error {
    Error::CompilationFailed {
        target: "cuda".to_string(),
        log: format!("NVRTC, the CUDA runtime compiler, is not available: {why}; {INSTALL_ADVICE}"),
    }
}

/// NVRTC, found and checked on the first call; `Err(CompilationFailed)` with what to
/// install when it cannot be used.
pub(crate) fn nvrtc() -> Result<&'static Nvrtc, Error> {
    static NVRTC: OnceLock<Result<Nvrtc, String>> = OnceLock::new();
    NVRTC.get_or_init(probe).as_ref().map_err(|why| missing(why))
}

/// The address of `name` in `lib`, if it exports it.
fn symbol(lib: &libloading::Library, name: &str) -> Option<usize> {
    // SAFETY: the symbol is read as an address and never called through this type.
    unsafe { lib.get::<*mut c_void>(name.as_bytes()) }.ok().map(|s| *s as usize)
}

fn probe() -> Result<Nvrtc, String> {
    // The library TVM_NVRTC_LIBRARY names, kept loaded for the process.
    static PRELOADED: OnceLock<libloading::Library> = OnceLock::new();
    let explicit = std::env::var_os("TVM_NVRTC_LIBRARY").filter(|p| !p.is_empty());
    if let Some(path) = &explicit {
        // SAFETY: loading a library runs its initialisers; libnvrtc's set up its own state
        // only. This is what cudarc's loader does too.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("TVM_NVRTC_LIBRARY={} could not be loaded ({e})", path.to_string_lossy()))?;
        let _ = PRELOADED.set(lib);
    }
    // SAFETY: as above; this tries to load each name cudarc would, and unloads them again.
    if !unsafe { sys::is_culib_present() } {
        return Err("no libnvrtc was found (tried libnvrtc.so and libnvrtc.so.12 through the dynamic loader: \
                    LD_LIBRARY_PATH, then the system's library directories)"
            .to_string());
    }
    // SAFETY: `is_culib_present` just loaded one of these names, so `culib` (which panics
    // where none loads) finds it.
    let lib = unsafe { sys::culib() };
    if let Some(name) = REQUIRED.iter().find(|name| symbol(lib, name).is_none()) {
        return Err(format!("the libnvrtc found lacks `{name}`"));
    }
    if let Some(pre) = PRELOADED.get() {
        if symbol(pre, "nvrtcVersion") != symbol(lib, "nvrtcVersion") {
            return Err(format!(
                "the library TVM_NVRTC_LIBRARY names is not the one the loader finds by name (another \
                 libnvrtc comes first); name a libnvrtc.so.12, or remove the other from LD_LIBRARY_PATH ({})",
                explicit.as_deref().unwrap_or_default().to_string_lossy()
            ));
        }
    }
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: the symbol is present (checked above); both pointers are valid for a write.
    let ok = unsafe { sys::nvrtcVersion(&mut major, &mut minor) }.result();
    ok.map_err(|e| format!("nvrtcVersion failed ({e:?})"))?;
    let mut archs = Vec::new();
    if symbol(lib, "nvrtcGetNumSupportedArchs").is_some() && symbol(lib, "nvrtcGetSupportedArchs").is_some() {
        let mut n: c_int = 0;
        // SAFETY: both symbols are present; `n` is valid for a write, and `list` holds the
        // `n` entries the second call writes.
        unsafe {
            if sys::nvrtcGetNumSupportedArchs(&mut n).result().is_ok() && n > 0 {
                let mut list: Vec<c_int> = vec![0; n as usize];
                if sys::nvrtcGetSupportedArchs(list.as_mut_ptr()).result().is_ok() {
                    archs = list.into_iter().filter_map(|a| u32::try_from(a).ok()).collect();
                    archs.sort_unstable();
                }
            }
        }
    }
    let cubin = symbol(lib, "nvrtcGetCUBINSize").is_some() && symbol(lib, "nvrtcGetCUBIN").is_some();
    Ok(Nvrtc { version: (major, minor), archs, cubin })
}

/// Destroys the program on drop.
struct ProgramGuard(sys::nvrtcProgram);

impl Drop for ProgramGuard {
    fn drop(&mut self) {
        // SAFETY: the program was created by `create_program` and is destroyed once.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// The NVRTC options for `arch` and `format`: the architecture (`sm_XY` for a cubin,
/// `compute_XY` for PTX), then [`CUDA_FLAGS`].
pub(crate) fn options(arch: u32, format: BinaryFormat) -> Vec<String> {
    let target = match format {
        BinaryFormat::Cubin => format!("--gpu-architecture=sm_{arch}"),
        BinaryFormat::Ptx => format!("--gpu-architecture=compute_{arch}"),
    };
    std::iter::once(target).chain(CUDA_FLAGS.split_whitespace().map(str::to_string)).collect()
}

/// `source` compiled by NVRTC for `arch` into `format` (PTX without its final NUL).
/// `Err(CompilationFailed)` with NVRTC's log when it does not compile, or when NVRTC is
/// missing, cannot compile for `arch`, or produces no cubin.
pub(crate) fn compile(source: &str, arch: u32, format: BinaryFormat) -> Result<Vec<u8>, Error> {
    let failed = |log: String| Error::CompilationFailed { target: "cuda".to_string(), log };
    let nvrtc = nvrtc()?;
    if format == BinaryFormat::Cubin && !nvrtc.cubin {
        return Err(failed(format!("NVRTC {}.{} produces no cubin (nvrtcGetCUBIN)", nvrtc.version.0, nvrtc.version.1)));
    }
    if !nvrtc.archs.is_empty() && !nvrtc.archs.contains(&arch) {
        let (lo, hi) = (nvrtc.archs[0], nvrtc.archs[nvrtc.archs.len() - 1]);
        return Err(failed(format!(
            "NVRTC {}.{} does not compile for sm_{arch} (it supports sm_{lo} to sm_{hi})",
            nvrtc.version.0, nvrtc.version.1
        )));
    }
    let Ok(src) = CString::new(source) else {
        return Err(failed("the source contains a NUL character".to_string()));
    };
    let prog = result::create_program(&src, Some(c"kernels.cu"))
        .map_err(|e| failed(format!("creating the NVRTC program failed ({e:?})")))?;
    let prog = ProgramGuard(prog);
    let options = options(arch, format);
    // SAFETY: `prog` is a live program; the options contain no NUL.
    let compiled = unsafe { result::compile_program(prog.0, &options) };
    // SAFETY: `prog` is a live program.
    let log = unsafe { result::get_program_log(prog.0) }.map(c_text).unwrap_or_default();
    if let Err(e) = compiled {
        let log = log.trim();
        return Err(failed(if log.is_empty() { format!("NVRTC: {e:?}") } else { log.to_string() }));
    }
    let bytes = match format {
        BinaryFormat::Cubin => {
            let mut size = 0usize;
            // SAFETY: the symbols are present (`nvrtc.cubin`); `size` is valid for a write
            // and `out` holds the `size` bytes NVRTC then writes.
            unsafe {
                sys::nvrtcGetCUBINSize(prog.0, &mut size)
                    .result()
                    .map_err(|e| failed(format!("nvrtcGetCUBINSize: {e:?}")))?;
                let mut out = vec![0u8; size];
                sys::nvrtcGetCUBIN(prog.0, out.as_mut_ptr() as *mut c_char)
                    .result()
                    .map_err(|e| failed(format!("nvrtcGetCUBIN: {e:?}")))?;
                out
            }
        }
        BinaryFormat::Ptx => {
            // SAFETY: `prog` is a live, compiled program.
            let ptx = unsafe { result::get_ptx(prog.0) }.map_err(|e| failed(format!("nvrtcGetPTX: {e:?}")))?;
            c_text(ptx).into_bytes()
        }
    };
    if bytes.is_empty() {
        return Err(failed(format!("NVRTC produced an empty {}", format.extension())));
    }
    Ok(bytes)
}

/// The text of a NUL-terminated buffer NVRTC filled (up to its first NUL).
fn c_text(buf: Vec<c_char>) -> String {
    let bytes: Vec<u8> = buf.into_iter().map(|c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
