//! The build-script helper (`tvm_core::build`) on a crate written into a temporary
//! directory: it finds the kernels (under `src/`, through `#[path]`, under `examples/`),
//! compiles each to PTX and a cubin per architecture named by the key of its source, turns
//! a kernel that does not lower and an nvcc that fails into warnings, and the macro's
//! lookup embeds only outputs of its own source. The tests that run nvcc skip with a
//! reason when it is absent (`NVCC`, else `PATH`), and fail then under
//! `TVM_REQUIRE_TOOLS=1`.

use quote::{format_ident, quote};
use std::path::{Path, PathBuf};
use tvm_core::artifact::{parse_cuda_archs, prebuilt, Artifact, NVCC_FLAGS};
use tvm_core::build::{compile_kernels_with, find_nvcc, Options, Report};
use tvm_runtime::gpu::{cuda_cache_key, Backend, BinaryFormat};

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("build-helper-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A crate with two kernels that compile (`add` in `src/lib.rs`, `scale` in a file outside
/// `src/` that a `#[path]` names), one whose CUDA schedule is invalid and one that does not
/// parse (both in `examples/`), and a file that is not Rust. Returns its directory.
fn user_crate(name: &str) -> PathBuf {
    let root = temp_dir(name);
    write(
        &root.join("src/lib.rs"),
        r#"
        use tvm::compute;
        #[path = "../shared/scale.rs"]
        mod scale;
        compute! {
            pub fn add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }
            schedule!(cuda) {
                let (bx, tx) = c.split(c.i, 128);
                c.bind(bx, block.x);
                c.bind(tx, thread.x);
            }
        }
        "#,
    );
    write(
        &root.join("shared/scale.rs"),
        "pub mod inner { tvm::compute! { pub fn scale(x: f32[n], s: f32) -> y: f32[n] { y[i] = x[i] * s; } } }",
    );
    write(
        &root.join("examples/bad.rs"),
        r#"
        fn main() {}
        tvm::compute! {
            pub fn rowsum(x: f32[n, m]) -> y: f32[n] { y[i] = sum(x[i, k] for k in 0..m); }
            schedule!(cuda) { y.vectorize(y.k); }
        }
        compute! { fn oops(a: f32[n]) }
        "#,
    );
    // A file syn cannot parse: a warning, and the other files are still scanned.
    write(&root.join("src/broken.rs"), "fn (");
    root
}

/// nvcc, or `None` after printing why the test is skipped (a failure under
/// `TVM_REQUIRE_TOOLS=1`).
fn nvcc_or_skip() -> Option<PathBuf> {
    let nvcc = find_nvcc(std::env::var_os("NVCC").as_deref(), std::env::var_os("PATH").as_deref());
    if nvcc.is_none() {
        let why = "nvcc not found (set NVCC or put it on PATH)";
        assert!(std::env::var("TVM_REQUIRE_TOOLS").as_deref() != Ok("1"), "TVM_REQUIRE_TOOLS=1: {why}");
        eprintln!("skipped: {why}");
    }
    nvcc
}

fn options(root: &Path, archs: &[u32], nvcc: Option<PathBuf>) -> Options {
    Options { manifest_dir: root.to_path_buf(), out_dir: root.join("out"), archs: archs.to_vec(), nvcc, jobs: 2 }
}

/// What every run on `user_crate` finds, whatever nvcc does.
fn check_found(report: &Report, root: &Path) {
    let names: Vec<Option<&str>> = report.kernels.iter().map(|k| k.name.as_deref()).collect();
    assert_eq!(names, [Some("add"), Some("scale"), Some("rowsum"), None], "{report:#?}");
    let lowered: Vec<bool> = report.kernels.iter().map(|k| k.source.is_some()).collect();
    assert_eq!(lowered, [true, true, false, false]);
    let files: Vec<PathBuf> = report.files.iter().map(|f| f.canonicalize().unwrap()).collect();
    for f in ["src/lib.rs", "shared/scale.rs", "examples/bad.rs"] {
        assert!(files.contains(&root.join(f).canonicalize().unwrap()), "{f} scanned: {files:?}");
    }
    assert_eq!(report.dir, root.join("out/tvm-cuda"));
    // One warning per kernel that is not built, saying where it is and why.
    let rowsum = report.warnings.iter().find(|w| w.contains("kernel `rowsum`")).expect("a warning for rowsum");
    assert!(rowsum.contains("bad.rs:3:") && rowsum.contains("cannot vectorize reduction axis"), "{rowsum}");
    assert!(report.warnings.iter().any(|w| w.contains("bad.rs:7:")), "{:?}", report.warnings);
    assert!(
        report.warnings.iter().any(|w| w.starts_with("cannot parse") && w.contains("broken.rs:1")),
        "{:?}",
        report.warnings
    );
    assert!(report.warnings.iter().all(|w| !w.contains('\n')), "{:?}", report.warnings);
}

fn no_temporary_files(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.ends_with(".tmp"), "a temporary file was left: {name}");
    }
}

#[test]
fn compiles_ptx_and_cubin_per_architecture_named_by_key() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let root = user_crate("nvcc");
    let report = compile_kernels_with(&options(&root, &[80, 90], Some(nvcc.clone())));
    check_found(&report, &root);
    assert_eq!(report.warnings.len(), 3, "only the bad kernels and the bad file warn: {:?}", report.warnings);
    assert_eq!(report.compiled(), 2);
    for k in report.kernels.iter().filter(|k| k.source.is_some()) {
        let source = k.source.as_deref().unwrap();
        let mut want = Vec::new();
        for arch in [80, 90] {
            let key = cuda_cache_key(source, arch, NVCC_FLAGS);
            for format in [BinaryFormat::Cubin, BinaryFormat::Ptx] {
                let path = report.dir.join(format!("{key}.{}", format.extension()));
                want.push(Artifact { format, arch, key: key.clone(), path });
            }
        }
        assert_eq!(k.binaries, want, "{:?}", k.name);
        for b in &k.binaries {
            let bytes = std::fs::read(&b.path).unwrap();
            match b.format {
                BinaryFormat::Cubin => assert!(bytes.starts_with(b"\x7fELF"), "{}", b.path.display()),
                BinaryFormat::Ptx => {
                    let text = String::from_utf8(bytes).unwrap();
                    assert!(text.contains(&format!(".target sm_{}", b.arch)), "{text}");
                }
            }
        }
    }
    no_temporary_files(&report.dir);

    // A second build finds every output in place and runs nvcc no more: a failing nvcc
    // changes nothing.
    let stamp = |r: &Report| -> Vec<std::time::SystemTime> {
        r.kernels
            .iter()
            .flat_map(|k| &k.binaries)
            .map(|b| std::fs::metadata(&b.path).unwrap().modified().unwrap())
            .collect()
    };
    let again = compile_kernels_with(&options(&root, &[80, 90], Some(root.join("no-such-nvcc"))));
    assert_eq!(again.warnings, report.warnings);
    assert_eq!(stamp(&again), stamp(&report));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn without_nvcc_one_warning_and_nothing_compiled() {
    let root = user_crate("no-nvcc");
    let report = compile_kernels_with(&options(&root, &[80], None));
    check_found(&report, &root);
    let nvrtc: Vec<&String> = report.warnings.iter().filter(|w| w.contains("NVRTC")).collect();
    assert_eq!(nvrtc.len(), 1, "{:?}", report.warnings);
    assert!(nvrtc[0].contains("nvcc not found") && nvrtc[0].contains("the 2 CUDA kernel(s)"), "{}", nvrtc[0]);
    assert_eq!(report.warnings.len(), 4);
    assert_eq!(report.compiled(), 0);
    assert!(!report.dir.exists(), "nothing is written without nvcc");
    std::fs::remove_dir_all(&root).unwrap();
}

/// An nvcc that fails (here a script that prints an error and exits 1, and a path that does
/// not exist) is one warning per output with its message; nothing is written but the
/// sources, and nothing panics.
#[cfg(unix)]
#[test]
fn a_failing_nvcc_is_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let root = user_crate("failing-nvcc");
    let fake = root.join("fake-nvcc");
    write(&fake, "#!/bin/sh\necho 'error: no CUDA here' >&2\nexit 1\n");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let report = compile_kernels_with(&options(&root, &[80], Some(fake)));
    check_found(&report, &root);
    let failed: Vec<&String> = report.warnings.iter().filter(|w| w.contains("failed")).collect();
    assert_eq!(failed.len(), 4, "2 kernels x (ptx, cubin): {:?}", report.warnings);
    assert!(failed.iter().all(|w| w.contains("error: no CUDA here") && w.contains("-arch=")), "{failed:?}");
    assert!(report.kernels.iter().all(|k| k.binaries.is_empty()));
    no_temporary_files(&report.dir);

    let report = compile_kernels_with(&options(&root, &[80], Some(root.join("no-such-nvcc"))));
    assert_eq!(report.warnings.iter().filter(|w| w.contains("cannot run")).count(), 4, "{:?}", report.warnings);
    std::fs::remove_dir_all(&root).unwrap();
}

/// The macro's lookup: an output is found only under the key of the very source, the
/// architecture and the flags; the static program embeds what is found by path.
#[test]
fn the_macro_embeds_only_outputs_of_its_own_source() {
    let dir = temp_dir("prebuilt");
    let src = tvm_core::frontend::parse_str("fn add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }")
        .unwrap_or_else(|e| panic!("{e:?}"));
    let f = tvm_core::expand::lower_all(&src).unwrap_or_else(|e| panic!("{e:?}")).cuda.unwrap();
    let source = tvm_core::codegen::emit_cuda(&f).unwrap();
    let key = cuda_cache_key(&source, 80, NVCC_FLAGS);
    std::fs::write(dir.join(format!("{key}.cubin")), b"\x7fELF cubin").unwrap();
    let found = prebuilt(&dir, &source, &[80, 90]);
    assert_eq!(
        found,
        [Artifact { format: BinaryFormat::Cubin, arch: 80, key: key.clone(), path: dir.join(format!("{key}.cubin")) }]
    );
    assert!(prebuilt(&dir, &format!("{source}\n"), &[80]).is_empty(), "another source");
    assert!(prebuilt(&dir, &source, &[86]).is_empty(), "another architecture");

    let tokens = tvm_core::codegen::host::program_tokens(
        &f,
        Backend::Cuda,
        &source,
        &found,
        &format_ident!("__CUDA"),
        &quote!(::tvm::__rt),
    );
    let text = tokens.to_string();
    let path = dir.join(format!("{key}.cubin"));
    let embedded = format!(
        "binaries : & [:: tvm :: __rt :: gpu :: Binary {{ format : :: tvm :: __rt :: gpu :: BinaryFormat :: Cubin , arch : 80u32 , key : {key:?} , bytes : :: core :: include_bytes ! ({:?}) }}]",
        path.to_str().unwrap()
    );
    assert!(text.contains(&embedded), "{text}");
    let none = tvm_core::codegen::host::program_tokens(
        &f,
        Backend::Cuda,
        &source,
        &[],
        &format_ident!("__CUDA"),
        &quote!(::tvm::__rt),
    );
    assert!(none.to_string().contains("binaries : & []"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cuda_arch_lists() {
    assert_eq!(parse_cuda_archs(None), (vec![80], vec![]));
    assert_eq!(parse_cuda_archs(Some(" ")), (vec![80], vec![]));
    assert_eq!(parse_cuda_archs(Some("sm_90,sm_80")), (vec![80, 90], vec![]));
    assert_eq!(parse_cuda_archs(Some("sm_80, compute_86 100 sm_80")), (vec![80, 86, 100], vec![]));
    assert_eq!(
        parse_cuda_archs(Some("sm_90a,sm_8,ampere,sm_75")),
        (vec![75], vec!["sm_90a".into(), "sm_8".into(), "ampere".into()])
    );
}

#[test]
fn nvcc_from_the_environment() {
    let dir = temp_dir("find-nvcc");
    let bin = dir.join("bin");
    write(&bin.join("nvcc"), "");
    let path = std::env::join_paths([dir.join("empty"), bin.clone()]).unwrap();
    assert_eq!(find_nvcc(None, Some(&path)), Some(bin.join("nvcc")));
    assert_eq!(find_nvcc(Some("".as_ref()), Some(&path)), Some(bin.join("nvcc")), "an empty NVCC is unset");
    assert_eq!(find_nvcc(Some("/opt/cuda/bin/nvcc".as_ref()), Some(&path)), Some("/opt/cuda/bin/nvcc".into()));
    assert_eq!(find_nvcc(None, Some(dir.join("empty").as_os_str())), None);
    assert_eq!(find_nvcc(None, None), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
