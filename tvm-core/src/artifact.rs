//! CUDA binaries compiled ahead of time, by content: where a crate's build script puts
//! them, what each is named, and which exist for a given source. The build helper
//! ([`crate::build`]) writes them; the macro's expansion looks them up by the same key
//! and embeds what it finds (`codegen::host::program_tokens`).
//!
//! An output's name is [`cuda_cache_key`]`(source, arch, NVCC_FLAGS)`: a changed kernel,
//! compiler, architecture or flag changes the key, so a stale output can never be
//! embedded.

use std::path::{Path, PathBuf};
use tvm_runtime::gpu::{cuda_cache_key, BinaryFormat};

/// The nvcc flags besides the mode and the architecture, passed as they are: the
/// runtime's [`CUDA_FLAGS`](tvm_runtime::gpu::CUDA_FLAGS), which NVRTC compiles with too.
/// They are part of every output's key, so NVRTC's disk cache and the build agree on names.
pub const NVCC_FLAGS: &str = tvm_runtime::gpu::CUDA_FLAGS;

/// The architectures compiled for when `TVM_CUDA_ARCH` is unset or empty.
pub const DEFAULT_CUDA_ARCH: &str = "sm_80";

/// The architectures (compute capability × 10, ascending, without repeats) of a
/// `TVM_CUDA_ARCH` value (`None` or blank: [`DEFAULT_CUDA_ARCH`]), and the entries that
/// are not one. Entries are separated by commas or whitespace; each is `sm_XY`,
/// `compute_XY` or `XY` (two or three digits: `sm_80`, `sm_90`, `sm_100`). Both the
/// build helper and the macro read the variable through this function.
pub fn parse_cuda_archs(value: Option<&str>) -> (Vec<u32>, Vec<String>) {
    let value = value.filter(|v| !v.trim().is_empty()).unwrap_or(DEFAULT_CUDA_ARCH);
    let (mut archs, mut invalid) = (Vec::new(), Vec::new());
    for entry in value.split(|c: char| c == ',' || c.is_whitespace()).filter(|e| !e.is_empty()) {
        let digits = entry.strip_prefix("sm_").or_else(|| entry.strip_prefix("compute_")).unwrap_or(entry);
        match digits.parse::<u32>() {
            Ok(a) if (2..=3).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) && a >= 10 => {
                archs.push(a)
            }
            _ => invalid.push(entry.to_string()),
        }
    }
    archs.sort_unstable();
    archs.dedup();
    (archs, invalid)
}

/// [`parse_cuda_archs`] of the environment's `TVM_CUDA_ARCH`.
pub fn cuda_archs_from_env() -> (Vec<u32>, Vec<String>) {
    parse_cuda_archs(std::env::var("TVM_CUDA_ARCH").ok().as_deref())
}

/// Where the outputs for a crate whose `OUT_DIR` is `out_dir` go: `<out_dir>/tvm-cuda`.
pub fn artifact_dir(out_dir: &Path) -> PathBuf {
    out_dir.join("tvm-cuda")
}

/// A compiled output of a kernel's CUDA source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub format: BinaryFormat,
    /// Compute capability × 10.
    pub arch: u32,
    /// [`cuda_cache_key`] of the source, `arch` and [`NVCC_FLAGS`].
    pub key: String,
    /// `<dir>/<key>.<ptx|cubin>`.
    pub path: PathBuf,
}

/// The outputs in `dir` of `source` for `archs`, by key: for each architecture its cubin,
/// then its PTX, each when the file exists. This is the macro's lookup.
pub fn prebuilt(dir: &Path, source: &str, archs: &[u32]) -> Vec<Artifact> {
    let mut out = Vec::new();
    for &arch in archs {
        let key = cuda_cache_key(source, arch, NVCC_FLAGS);
        for format in [BinaryFormat::Cubin, BinaryFormat::Ptx] {
            let path = dir.join(format!("{key}.{}", format.extension()));
            if path.is_file() {
                out.push(Artifact { format, arch, key: key.clone(), path });
            }
        }
    }
    out
}

/// What the macro embeds for `source`: [`prebuilt`] in `$OUT_DIR/tvm-cuda` for the
/// architectures of `TVM_CUDA_ARCH` ([`cuda_archs_from_env`]), with absolute paths; nothing
/// when `OUT_DIR` is unset (a crate without a build script) or that directory is absent
/// (a build script that does not call [`crate::build::compile_kernels`]).
pub fn prebuilt_from_env(source: &str) -> Vec<Artifact> {
    let Some(out_dir) = std::env::var_os("OUT_DIR") else { return Vec::new() };
    let dir = artifact_dir(Path::new(&out_dir));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if !dir.is_dir() {
        return Vec::new();
    }
    prebuilt(&dir, source, &cuda_archs_from_env().0)
}
