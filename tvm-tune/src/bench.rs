//! The bench of one kernel on one target: its crate under `tvm-tune/` in the target
//! directory of the kernel's crate ([`root`]), built with the candidates to measure
//! (`cargo build --release`), the reference outputs, and the device's identity (from a small probe crate built against the same `tvm`, so the
//! tuner itself links no GPU runtime).

use crate::cli::Options;
use crate::harness;
use crate::kernels::Found;
use proc_macro2::TokenStream;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tvm_core::TargetKind;

/// The workspace that holds `tvm-tune` (the bench crates depend on its `tvm`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tvm-tune is in the workspace").to_path_buf()
}

/// The `tvm` features a bench for `kind` needs.
fn features(kind: TargetKind) -> &'static [&'static str] {
    match kind {
        TargetKind::OpenCl => &["opencl"],
        TargetKind::Cuda => &["cuda"],
        _ => &[],
    }
}

/// Where the benches of the kernels of `crate_dir` live: `tvm-tune/` in the crate's
/// target directory as cargo resolves it (`cargo metadata`: `CARGO_TARGET_DIR`, a
/// `build.target-dir` setting, the workspace's `target/`), else `crate_dir/target`.
pub fn root(crate_dir: &Path) -> PathBuf {
    let env = std::env::var_os("CARGO_TARGET_DIR").map(|v| std::path::absolute(&v).unwrap_or(v.into()));
    target_directory(crate_dir, env.as_deref()).join("tvm-tune")
}

/// The target directory of the crate at `crate_dir` with `CARGO_TARGET_DIR` set to the
/// absolute path `env` (or unset). Cargo runs in `crate_dir`, where a build of the crate
/// finds its `.cargo/config.toml`.
fn target_directory(crate_dir: &Path, env: Option<&Path>) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        .current_dir(crate_dir)
        .stdin(Stdio::null());
    match env {
        Some(v) => cmd.env("CARGO_TARGET_DIR", v),
        None => cmd.env_remove("CARGO_TARGET_DIR"),
    };
    let from_cargo = cmd.output().ok().filter(|o| o.status.success()).and_then(|o| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
        v["target_directory"].as_str().map(PathBuf::from)
    });
    let dir = from_cargo.unwrap_or_else(|| match env {
        Some(v) => PathBuf::from(v),
        None => crate_dir.join("target"),
    });
    std::path::absolute(&dir).unwrap_or(dir)
}

/// Where every bench of a run is built (one target directory: `tvm` is compiled once).
fn target_dir(root: &Path) -> PathBuf {
    root.join("target")
}

/// A bench crate of one kernel, target and source set.
pub struct Bench {
    pub dir: PathBuf,
    /// [`root`]: the benches' directory.
    root: PathBuf,
    package: String,
    kind: TargetKind,
    /// Builds so far; each build's executable is kept as `dir/bench-N`.
    builds: usize,
}

/// Why a build failed.
pub enum BuildError {
    /// These candidates do not compile (the message of each); the others may.
    Candidates(Vec<(usize, String)>),
    /// The bench does not build, for a reason no candidate's line shows.
    Other(String),
}

impl Bench {
    pub fn new(o: &Options, f: &Found, root: &Path) -> Bench {
        let crate_tag = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            o.paths.hash(&mut h);
            format!("{:08x}", h.finish() as u32)
        };
        let kind = o.target.kind;
        let package = format!("tvm-tune-bench-{}-{}-{crate_tag}", f.name.replace('_', "-"), kind.name());
        let dir = root.join(&package);
        Bench { dir, root: root.to_path_buf(), package, kind, builds: 0 }
    }

    /// Builds the bench with `candidates` (number, tokens) and the reference; the
    /// executable, which stays valid after later builds.
    pub fn build(
        &mut self,
        f: &Found,
        candidates: &[(usize, TokenStream)],
        dims: &BTreeMap<String, i64>,
    ) -> Result<PathBuf, BuildError> {
        let reference = harness::reference_tokens(&f.tokens, "__tvm_reference");
        let tvm = workspace();
        let lines = harness::write(
            &self.dir,
            &self.package,
            &tvm,
            features(self.kind),
            &tvm.join("Cargo.lock"),
            &f.kernel,
            &reference,
            candidates,
            dims,
        )
        .map_err(BuildError::Other)?;
        let out = cargo_build(&self.dir.join("Cargo.toml"), &self.root).map_err(BuildError::Other)?;
        if !out.0 {
            return Err(blame(&out.1, &lines, &self.dir));
        }
        let built = target_dir(&self.root).join("release").join(&self.package);
        let kept = self.dir.join(format!("bench-{}", self.builds));
        self.builds += 1;
        std::fs::copy(&built, &kept).map_err(|e| BuildError::Other(format!("cannot copy the bench: {e}")))?;
        Ok(kept)
    }
}

/// `cargo build --release` of the crate at `manifest` into the target directory of the
/// benches under `root`: whether it succeeded, and its stderr.
fn cargo_build(manifest: &Path, root: &Path) -> Result<(bool, String), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TARGET_DIR", target_dir(root))
        // The bench's kernels are expanded once each: no expansion cache entries.
        .env("TVM_EXPANSION_CACHE", "off")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok((out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// The candidates whose lines (`lines`: line, candidate) rustc's errors in `stderr` point
/// at, each with its first error; else the whole failure.
fn blame(stderr: &str, lines: &[(usize, usize)], dir: &Path) -> BuildError {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut last_error = String::new();
    for l in stderr.lines() {
        if l.starts_with("error") {
            last_error = l.trim().to_string();
        }
        let Some(at) = l.trim_start().strip_prefix("--> src/main.rs:") else { continue };
        let line: usize = at.split(':').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        if let Some(&(_, n)) = lines.iter().find(|(l, _)| *l == line) {
            if !out.iter().any(|(m, _)| *m == n) {
                out.push((n, format!("does not compile: {last_error}")));
            }
        }
    }
    if out.is_empty() {
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        return BuildError::Other(format!(
            "the bench crate in {} does not build:\n{}",
            dir.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    BuildError::Candidates(out)
}

/// The identity of `device` as records name it (`tvm::tuning::device_identity`), from a
/// probe crate built against `tvm` with the target's features; `Err` when the device is
/// not available here. The probe is built under `root` ([`root`]) with the benches.
pub fn identity(o: &Options, root: &Path) -> Result<String, String> {
    let kind = o.target.kind;
    let dir = root.join(format!("tvm-tune-probe-{}", kind.name()));
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    let feats: Vec<String> = features(kind).iter().map(|f| format!("{f:?}")).collect();
    let manifest = format!(
        "[package]\nname = \"tvm-tune-probe-{kind}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ntvm = {{ package = \"tvm-rs\", path = {root:?}, default-features = false, features = [{feats}] }}\n\n\
         [workspace]\n",
        kind = kind.name(),
        root = workspace().to_string_lossy(),
        feats = feats.join(", "),
    );
    let main = "fn main() {\n    let d: tvm::Device = std::env::args().nth(1).unwrap_or_default().parse().expect(\"a device\");\n    \
                match tvm::tuning::device_identity(&d) {\n        Some(id) => println!(\"{id}\"),\n        \
                None => std::process::exit(1),\n    }\n}\n";
    for (path, text) in [(dir.join("Cargo.toml"), manifest.as_str()), (dir.join("src/main.rs"), main)] {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
        }
    }
    if !dir.join("Cargo.lock").exists() {
        let _ = std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock"));
    }
    let (ok, err) = cargo_build(&dir.join("Cargo.toml"), root)?;
    if !ok {
        return Err(format!("the device probe in {} does not build:\n{err}", dir.display()));
    }
    let exe = target_dir(root).join("release").join(format!("tvm-tune-probe-{}", kind.name()));
    let o2 = crate::measure::run_child(&exe, &[o.device.to_string()], Duration::from_secs(60))?;
    match (o2.success, o2.stdout.trim()) {
        (Some(true), id) if !id.is_empty() => Ok(id.to_string()),
        _ => Err(format!("device `{}` is not available here", o.device)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benches go where cargo builds the kernel's crate: its workspace's `target/`,
    /// the directory its `.cargo/config.toml` names, or the one `CARGO_TARGET_DIR` names.
    #[test]
    fn benches_are_built_in_the_target_directory_of_the_kernels_crate() {
        let ws = std::env::temp_dir().join(format!("tvm-tune-target-{}", std::process::id()));
        let dir = ws.join("k");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(ws.join("Cargo.toml"), "[workspace]\nmembers = [\"k\"]\nresolver = \"2\"\n").unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"k\"\nversion = \"0.0.0\"\nedition = \"2021\"\n")
            .unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        assert_eq!(target_directory(&dir, None), ws.join("target"), "the workspace's");
        let elsewhere = ws.join("elsewhere");
        assert_eq!(target_directory(&dir, Some(&elsewhere)), elsewhere);
        std::fs::create_dir_all(ws.join(".cargo")).unwrap();
        std::fs::write(ws.join(".cargo/config.toml"), "[build]\ntarget-dir = \"built\"\n").unwrap();
        assert_eq!(target_directory(&dir, None), ws.join("built"), "the configured one");
        let _ = std::fs::remove_dir_all(&ws);
    }
}
