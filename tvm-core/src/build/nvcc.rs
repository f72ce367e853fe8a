//! Finding nvcc and running it: one CUDA source to one PTX or cubin file, written
//! atomically (a temporary file in the same directory, renamed over the output), so a
//! concurrent build or the macro never sees half a file.

use crate::artifact::NVCC_FLAGS;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use tvm_runtime::gpu::BinaryFormat;

/// The nvcc to use, given the values of `NVCC` and `PATH` (`None` where unset): `NVCC` when
/// set and non-empty (whether or not the file exists: running it then reports what is
/// wrong), else the first `nvcc` file in a directory of `PATH`, else `None`.
pub fn find_nvcc(nvcc: Option<&OsStr>, path: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(n) = nvcc.filter(|n| !n.is_empty()) {
        return Some(PathBuf::from(n));
    }
    let exe = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    std::env::split_paths(path?).map(|d| d.join(exe)).find(|p| p.is_file())
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, renamed over it).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(dir, &path.file_name().unwrap_or_default().to_string_lossy());
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Compiles `cu` (a CUDA source file) with `nvcc` to `out` in `format` for `arch`
/// (compute capability × 10): `nvcc -ptx -arch=compute_XY` or `nvcc -cubin -arch=sm_XY`,
/// then [`NVCC_FLAGS`]. Nvcc writes a temporary file that is renamed to `out` when it
/// succeeded. The error is what to tell the user: the command and nvcc's messages.
pub(super) fn compile(nvcc: &Path, cu: &Path, out: &Path, format: BinaryFormat, arch: u32) -> Result<(), String> {
    let dir = out.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(dir, &out.file_name().unwrap_or_default().to_string_lossy());
    let (mode, arch_flag) = match format {
        BinaryFormat::Ptx => ("-ptx", format!("-arch=compute_{arch}")),
        BinaryFormat::Cubin => ("-cubin", format!("-arch=sm_{arch}")),
    };
    let mut cmd = Command::new(nvcc);
    cmd.arg(mode).arg(&arch_flag).args(NVCC_FLAGS.split_whitespace()).arg("-o").arg(&tmp).arg(cu);
    let shown = format!("{} {mode} {arch_flag} {NVCC_FLAGS} -o {} {}", nvcc.display(), out.display(), cu.display());
    let result = match cmd.output() {
        Err(e) => Err(format!("cannot run `{shown}`: {e}")),
        Ok(o) if !o.status.success() => {
            let log = String::from_utf8_lossy(&o.stderr);
            let log: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).take(8).collect();
            Err(format!("`{shown}` failed ({}): {}", o.status, log.join(" | ")))
        }
        Ok(_) => std::fs::rename(&tmp, out).map_err(|e| format!("cannot write {}: {e}", out.display())),
    };
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
