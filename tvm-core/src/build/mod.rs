//! The build-script helper: compiles a crate's CUDA kernels ahead of time with nvcc, so
//! that the runtime loads a cubin or PTX instead of compiling the CUDA source with NVRTC
//! at the first launch (and a machine without NVRTC can run them).
//!
//! ```no_run
//! // In `fn main` of the build.rs of a crate with `compute!` kernels, with
//! // [build-dependencies] tvm = { version = "..", features = ["compiler"] }:
//! tvm_core::build::compile_kernels(); // `tvm::build::compile_kernels()` through the facade
//! ```
//!
//! [`compile_kernels`] finds the crate's `compute!` invocations (module `scan`: the files
//! under `src/` and `examples/`, and those `#[path]` attributes name), checks and lowers
//! each for CUDA exactly as the macro does ([`crate::expand::lower_all`], then
//! [`crate::codegen::emit_cuda`]), and for each architecture of `TVM_CUDA_ARCH` runs
//! `nvcc -ptx -arch=compute_XY` and `nvcc -cubin -arch=sm_XY` with [`NVCC_FLAGS`] into
//! `$OUT_DIR/tvm-cuda/<key>.ptx` and `<key>.cubin`, where `key` is
//! [`cuda_cache_key`]`(source, XY, NVCC_FLAGS)`. An output that exists is not compiled
//! again (its name says what it was compiled from).
//!
//! The macro, expanding the same kernel while the crate compiles, computes the key of the
//! source it generated itself and embeds the files of that key that exist
//! ([`crate::artifact::prebuilt_from_env`]) in the kernel's `gpu::Program` with `include_bytes!`, which
//! also makes rustc rebuild when they change. A stale output can never be embedded: a
//! changed kernel, compiler, architecture or flag changes the key. No output means no
//! binaries, and the runtime compiles the source with NVRTC.
//!
//! Nothing here fails the build: a kernel that does not parse or lower (the macro reports
//! the real error at the kernel), an nvcc that fails, and a missing nvcc are
//! `cargo:warning` lines.

mod nvcc;
pub mod scan;

pub use nvcc::find_nvcc;

use crate::artifact::{artifact_dir, cuda_archs_from_env, prebuilt, Artifact, NVCC_FLAGS};
use proc_macro2::TokenStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tvm_runtime::gpu::{cuda_cache_key, BinaryFormat};

/// What [`compile_kernels_with`] works on: [`compile_kernels`] takes it from the
/// environment of the build script.
#[derive(Clone, Debug)]
pub struct Options {
    /// The crate's directory (`CARGO_MANIFEST_DIR`).
    pub manifest_dir: PathBuf,
    /// The build script's output directory (`OUT_DIR`); outputs go to
    /// [`artifact_dir`]`(out_dir)`.
    pub out_dir: PathBuf,
    /// The architectures to compile for (`TVM_CUDA_ARCH`, [`crate::artifact::parse_cuda_archs`]).
    pub archs: Vec<u32>,
    /// The nvcc to run (`NVCC`, else `PATH`: [`find_nvcc`]); `None`: compile nothing.
    pub nvcc: Option<PathBuf>,
    /// How many nvcc processes to run at once (`NUM_JOBS`, set by cargo).
    pub jobs: usize,
}

/// What [`compile_kernels_with`] found and did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every source file read (each a `cargo:rerun-if-changed`).
    pub files: Vec<PathBuf>,
    /// Every `compute!` invocation found, in the order found.
    pub kernels: Vec<KernelReport>,
    /// Where the outputs are: `$OUT_DIR/tvm-cuda`.
    pub dir: PathBuf,
    pub nvcc: Option<PathBuf>,
    pub archs: Vec<u32>,
    /// One line each, without the `cargo:warning=` (and without newlines).
    pub warnings: Vec<String>,
}

/// One `compute!` invocation and what was built for it.
#[derive(Clone, Debug)]
pub struct KernelReport {
    pub file: PathBuf,
    /// 1-based line of the invocation.
    pub line: usize,
    /// The kernel's function name, when it parses.
    pub name: Option<String>,
    /// The CUDA C the macro generates for it, when it lowers and generates (else a
    /// warning says why).
    pub source: Option<String>,
    /// Its outputs in [`Report::dir`] ([`prebuilt`]): what the macro will embed.
    pub binaries: Vec<Artifact>,
}

impl Report {
    /// How many kernels have a cubin and a PTX for every architecture.
    pub fn compiled(&self) -> usize {
        self.kernels.iter().filter(|k| k.source.is_some() && k.binaries.len() == 2 * self.archs.len()).count()
    }
}

/// The build script's entry point (see the module docs): [`compile_kernels_with`] on the
/// crate cargo is building, printing `cargo:rerun-if-changed` for every file read (and for
/// `src/` and `examples/`, so a new file is seen), `cargo:rerun-if-env-changed` for
/// `TVM_CUDA_ARCH`, `NVCC` and `PATH`, and each warning as `cargo:warning`. Never panics;
/// outside a build script (no `CARGO_MANIFEST_DIR` or `OUT_DIR`) it only warns.
pub fn compile_kernels() -> Report {
    for var in ["TVM_CUDA_ARCH", "NVCC", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let (archs, invalid) = cuda_archs_from_env();
    let mut warnings: Vec<String> = invalid
        .iter()
        .map(|e| format!("TVM_CUDA_ARCH: `{e}` is not an architecture (`sm_80`, `sm_90`, ...); ignored"))
        .collect();
    let dirs = (std::env::var_os("CARGO_MANIFEST_DIR"), std::env::var_os("OUT_DIR"));
    let mut report = match dirs {
        (Some(manifest_dir), Some(out_dir)) => {
            let jobs = std::env::var("NUM_JOBS").ok().and_then(|j| j.parse().ok());
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let nvcc = find_nvcc(std::env::var_os("NVCC").as_deref(), std::env::var_os("PATH").as_deref());
            let manifest_dir = PathBuf::from(manifest_dir);
            let opts = Options { manifest_dir: manifest_dir.clone(), out_dir: out_dir.into(), archs, nvcc, jobs };
            let report = compile_kernels_with(&opts);
            for dir in ["src", "examples"].map(|d| manifest_dir.join(d)).iter().filter(|d| d.is_dir()) {
                println!("cargo:rerun-if-changed={}", dir.display());
            }
            report
        }
        _ => {
            warnings.push("compile_kernels runs in a build script (CARGO_MANIFEST_DIR and OUT_DIR are unset)".into());
            Report::default()
        }
    };
    for f in &report.files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    warnings.append(&mut report.warnings);
    for w in &warnings {
        println!("cargo:warning=tvm: {w}");
    }
    report.warnings = warnings;
    report
}

/// [`compile_kernels`] without the environment and without printing: scans
/// `opts.manifest_dir`, lowers and generates each kernel, and compiles what is not in
/// `artifact_dir(opts.out_dir)` yet. Never panics.
pub fn compile_kernels_with(opts: &Options) -> Report {
    let found = scan::scan(&opts.manifest_dir);
    let dir = artifact_dir(&opts.out_dir);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let mut report = Report {
        files: found.files,
        kernels: Vec::new(),
        dir: dir.clone(),
        nvcc: opts.nvcc.clone(),
        archs: opts.archs.clone(),
        warnings: found.problems.iter().map(|p| p.to_string()).collect(),
    };
    for inv in found.invocations {
        let at = format!("{}:{}", inv.file.display(), inv.line);
        // A generic kernel is one kernel per instance type, each with its own CUDA source.
        let instances = match crate::expand::generic::instances(&inv.tokens) {
            Ok(i) => i,
            Err(e) => {
                report.warnings.push(format!("{at}: a kernel is not compiled for CUDA ahead of time: {e}"));
                continue;
            }
        };
        for (_, tokens) in instances {
            let (name, source) = match cuda_source(tokens) {
                Ok((name, source)) => (Some(name), Some(source)),
                Err((name, why)) => {
                    let what = name.as_deref().map_or(String::new(), |n| format!(" `{n}`"));
                    let why: Vec<&str> = why.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
                    let why = why.join("; ");
                    report.warnings.push(format!(
                    "{at}: kernel{what} is not compiled for CUDA ahead of time: {why} (the compiler reports its errors \
                     at the kernel)"
                ));
                    (name, None)
                }
            };
            report.kernels.push(KernelReport {
                file: inv.file.clone(),
                line: inv.line,
                name,
                source,
                binaries: Vec::new(),
            });
        }
    }
    let sources: Vec<&str> = report.kernels.iter().filter_map(|k| k.source.as_deref()).collect();
    if sources.is_empty() {
        return report;
    }
    let Some(nvcc) = &opts.nvcc else {
        report.warnings.push(format!(
            "nvcc not found (set NVCC to its path, or put it on PATH): the {} CUDA kernel(s) of this crate will be \
             compiled by NVRTC at their first launch on a CUDA device; to compile them here, install the CUDA toolkit \
             (or `pip install nvidia-cuda-nvcc`, whose nvcc is in site-packages/nvidia/cu13/bin)",
            sources.len()
        ));
        return report;
    };
    if opts.archs.is_empty() {
        report.warnings.push("no CUDA architecture to compile for (TVM_CUDA_ARCH names none)".into());
        return report;
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        report.warnings.push(format!("cannot create {}: {e}", dir.display()));
        return report;
    }
    let (jobs, mut warnings) = plan(&dir, &sources, &opts.archs);
    report.warnings.append(&mut warnings);
    report.warnings.extend(run(nvcc, &jobs, opts.jobs));
    for k in &mut report.kernels {
        if let Some(source) = &k.source {
            k.binaries = prebuilt(&dir, source, &opts.archs);
        }
    }
    report
}

/// The name and CUDA source of a kernel, as the macro generates them; else its name (when
/// it parses) and the first error. An internal error of the compiler is an error too.
fn cuda_source(tokens: TokenStream) -> Result<(String, String), (Option<String>, String)> {
    fn first(mut errors: Vec<String>) -> String {
        let n = errors.len();
        let mut s = if n == 0 { "an error".to_string() } else { errors.swap_remove(0) };
        if n > 1 {
            s += &format!(" (and {} more)", n - 1);
        }
        s
    }
    let lowered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let kernel = crate::frontend::parse_kernel(tokens)
            .map_err(|es| (None, first(es.iter().map(|e| e.to_string()).collect())))?;
        let name = kernel.name.clone();
        let lowered = crate::expand::lower_all(&kernel)
            .map_err(|es| (Some(name.clone()), first(es.iter().map(|e| e.to_string()).collect())))?;
        let cuda = lowered.cuda.expect("lower_all lowers for CUDA");
        let source = crate::codegen::emit_cuda(&cuda).map_err(|e| (Some(name.clone()), e.to_string()))?;
        Ok((name, source))
    }));
    lowered.unwrap_or_else(|_| Err((None, "internal error of the compiler (see the panic message above)".into())))
}

/// One nvcc run.
struct Job {
    cu: PathBuf,
    out: PathBuf,
    format: BinaryFormat,
    arch: u32,
}

/// The nvcc runs still needed for `sources` and `archs` (each output once, none that
/// exists), after writing each `<key>.cu` they compile; and the warnings of writes that
/// failed.
fn plan(dir: &Path, sources: &[&str], archs: &[u32]) -> (Vec<Job>, Vec<String>) {
    let (mut jobs, mut warnings) = (Vec::new(), Vec::new());
    let mut planned = std::collections::HashSet::new();
    for source in sources {
        for &arch in archs {
            let key = cuda_cache_key(source, arch, NVCC_FLAGS);
            let cu = dir.join(format!("{key}.cu"));
            let outs: Vec<(BinaryFormat, PathBuf)> = [BinaryFormat::Cubin, BinaryFormat::Ptx]
                .into_iter()
                .map(|f| (f, dir.join(format!("{key}.{}", f.extension()))))
                .filter(|(_, out)| !out.is_file() && planned.insert(out.clone()))
                .collect();
            if outs.is_empty() {
                continue;
            }
            if let Err(e) = nvcc::write_atomic(&cu, source.as_bytes()) {
                warnings.push(format!("cannot write {}: {e}", cu.display()));
                continue;
            }
            jobs.extend(outs.into_iter().map(|(format, out)| Job { cu: cu.clone(), out, format, arch }));
        }
    }
    (jobs, warnings)
}

/// Runs `jobs` on up to `threads` threads; the warnings of those that failed, in job order.
fn run(nvcc: &Path, jobs: &[Job], threads: usize) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(j) = jobs.get(i) else { break };
                if let Err(e) = nvcc::compile(nvcc, &j.cu, &j.out, j.format, j.arch) {
                    failed.lock().unwrap_or_else(|p| p.into_inner()).push((i, e));
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort();
    failed.into_iter().map(|(_, e)| e).collect()
}
