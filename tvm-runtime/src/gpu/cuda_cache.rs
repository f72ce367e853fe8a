//! The disk cache of compiled CUDA code (ARCHITECTURE.md, "Build-time artifacts,
//! content-addressed"): what NVRTC compiled, kept across processes under the name
//! [`cuda_cache_key`](super::cuda_cache_key) gives it, so a program is compiled once per
//! machine rather than once per process.
//!
//! * The directory: `TVM_CUDA_CACHE` if set (a path; empty, `0` or `off` disables the
//!   cache), else `$XDG_CACHE_HOME/tvm-rs/cuda`, else `$HOME/.cache/tvm-rs/cuda`
//!   ([`dir_from`] is that rule as a pure function).
//! * An entry is the file `<key>.cubin` or `<key>.ptx`: a header line
//!   `tvm-rs-cuda v1 <payload bytes> <sha-256 of the payload, hex>\n`, then the payload.
//!   [`read`] returns the payload only when the header and the digest match, so a
//!   truncated or altered entry is a miss (and the caller rewrites it).
//! * [`write`] writes a temporary file in the same directory and renames it over the
//!   entry: a rename within a directory is atomic, so a concurrent reader sees the old
//!   entry, the new one, or none, never half of one.
//!
//! Nothing here fails a launch: the callers ignore its I/O errors (a read-only or full
//! disk only means compiling again).

use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first word of every entry, with the format's version.
const MAGIC: &str = "tvm-rs-cuda v1";

/// The lowercase hex of the SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The cache directory this process uses: [`dir_from`] of the environment.
pub fn dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("TVM_CUDA_CACHE").as_deref(),
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// The cache directory given the values of `TVM_CUDA_CACHE`, `XDG_CACHE_HOME` and `HOME`
/// (`None` where unset): `TVM_CUDA_CACHE` when set (`None`, no cache, when it is empty,
/// `0` or `off`), else `<XDG_CACHE_HOME>/tvm-rs/cuda` for an absolute `XDG_CACHE_HOME`,
/// else `<HOME>/.cache/tvm-rs/cuda` for a non-empty `HOME`, else `None`.
pub fn dir_from(
    tvm_cuda_cache: Option<&OsStr>,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    if let Some(v) = tvm_cuda_cache {
        let text = v.to_string_lossy();
        let t = text.trim();
        if t.is_empty() || t == "0" || t.eq_ignore_ascii_case("off") {
            return None;
        }
        return Some(PathBuf::from(v));
    }
    // The XDG base directory rules ignore a relative XDG_CACHE_HOME.
    if let Some(x) = xdg_cache_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Some(x.join("tvm-rs").join("cuda"));
    }
    home.filter(|h| !h.is_empty()).map(|h| Path::new(h).join(".cache").join("tvm-rs").join("cuda"))
}

/// The path of the entry `key` with extension `ext` (`cubin`, `ptx`) in `dir`.
pub fn entry_path(dir: &Path, key: &str, ext: &str) -> PathBuf {
    dir.join(format!("{key}.{ext}"))
}

/// The file content of an entry holding `payload`: the header line, then the payload.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let header = format!("{MAGIC} {} {}\n", payload.len(), sha256_hex(payload));
    let mut out = Vec::with_capacity(header.len() + payload.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry's file content, if its header is well formed and its length
/// and digest match the payload.
pub fn decode(content: &[u8]) -> Option<&[u8]> {
    let newline = content.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&content[..newline]).ok()?;
    let payload = &content[newline + 1..];
    let rest = header.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (len, digest) = rest.split_once(' ')?;
    let ok = len.parse::<usize>().ok() == Some(payload.len()) && digest == sha256_hex(payload);
    ok.then_some(payload)
}

/// The payload of entry `key`.`ext` in `dir`, if it exists and is intact.
pub fn read(dir: &Path, key: &str, ext: &str) -> Option<Vec<u8>> {
    let content = std::fs::read(entry_path(dir, key, ext)).ok()?;
    decode(&content).map(<[u8]>::to_vec)
}

/// Writes entry `key`.`ext` holding `payload` into `dir` (created if missing), atomically:
/// a temporary file of this process in `dir`, renamed over the entry. On failure the
/// temporary file is removed and the entry is as before.
pub fn write(dir: &Path, key: &str, ext: &str, payload: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{key}.{ext}.{}.{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&encode(payload))?;
        drop(f);
        std::fs::rename(&tmp, entry_path(dir, key, ext))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
