//! The CUDA backend without a GPU: what a machine without a driver answers, NVRTC
//! compiling CUDA C (and its errors), the disk cache of compiled code (hits, damaged
//! entries, atomic writes, `TVM_CUDA_CACHE`), the error when NVRTC is missing, and the
//! pure rules of loading (which prebuilt binary, which NVRTC target, the device limits);
//! and, where a CUDA device exists, kernels running on it.
//!
//! The NVRTC tests skip (printing why) when no libnvrtc can be loaded, unless
//! `TVM_REQUIRE_TOOLS=1`, which turns the skip into a failure. Point them at NVRTC with
//! `LD_LIBRARY_PATH` (or `TVM_NVRTC_LIBRARY`), say at the lib directory of the PyPI wheel
//! `nvidia-cuda-nvrtc-cu12`. Tests that change the environment run in a child process
//! (this test binary again, running one `#[ignore]`d test).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_runtime::gpu::cuda::{compile_cuda_with, nvrtc_version, CudaRuntime};
use tvm_runtime::gpu::{
    self, cuda_binary_candidates, cuda_cache, cuda_cache_key, nvrtc_target, Backend, Binary, BinaryFormat, CudaCaps,
    KernelArg, KernelDesc, ParamKind, Program, Scalar, CUDA_FLAGS,
};
use tvm_runtime::{decide_default, DType, Device, Error};

/// `a[i] *= 2` for `i < n`.
const SRC: &str = r#"extern "C" __global__ void k(float* __restrict__ a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[i] = a[i] * 2.0f; }
}
"#;

static PROGRAM: Program = Program {
    backend: Backend::Cuda,
    function: "k",
    source: SRC,
    kernels: &[KernelDesc {
        name: "k",
        params: &[ParamKind::Buffer(DType::F32), ParamKind::Scalar(DType::I64)],
        shared_bytes: 0,
        block: None,
    }],
    binaries: &[],
};

/// Whether NVRTC can be loaded, for a test that needs it: prints that `test` is skipped
/// when it cannot, or panics under `TVM_REQUIRE_TOOLS=1` (unless the build has no `cuda`
/// feature, where nothing compiles CUDA by design).
fn nvrtc_or_skip(test: &str) -> bool {
    if !cfg!(feature = "cuda") {
        eprintln!("skipping {test}: built without the `cuda` feature");
        return false;
    }
    match nvrtc_version() {
        Ok(_) => true,
        Err(e) if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") => {
            panic!("{test}: TVM_REQUIRE_TOOLS=1 but NVRTC cannot be loaded: {e}")
        }
        Err(e) => {
            eprintln!("skipping {test}: {e}");
            false
        }
    }
}

/// A fresh empty directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tvm-rs-cuda-test-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// The names of the files in the directory, sorted.
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = match std::fs::read_dir(&self.0) {
            Ok(entries) => entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the `#[ignore]`d test `name` of this binary in a child process with `env` set
/// (an empty value for `LD_LIBRARY_PATH` clears it); returns its output, after checking it
/// succeeded.
fn run_child(name: &str, env: &[(&str, &OsStr)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--ignored", "--nocapture", "--test-threads=1"]).env("TVM_CUDA_TEST_CHILD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "child {name} failed:\n{text}");
    assert!(text.contains("1 passed"), "child {name} ran no test:\n{text}");
    text
}

/// Whether this process is a child of [`run_child`] (the `#[ignore]`d tests do nothing
/// when run by hand).
fn is_child() -> bool {
    std::env::var_os("TVM_CUDA_TEST_CHILD").is_some()
}

// ---- (a) no driver ----

#[test]
fn without_a_device_cuda_is_unavailable_and_nothing_panics() {
    let rt = CudaRuntime::global();
    let n = rt.device_count();
    assert_eq!(Device::cuda_device_count(), n);
    assert_eq!(Device::all().iter().filter(|d| matches!(d, Device::Cuda(_))).count(), n);
    // Past the last device (every device, on a machine without a driver).
    let past = Device::Cuda(n);
    match past.check_available() {
        Err(Error::DeviceUnavailable { device, reason }) => {
            assert_eq!(device, format!("cuda:{n}"));
            assert!(!reason.is_empty() && reason.starts_with(|c: char| c.is_lowercase()), "{reason}");
            if n == 0 && cfg!(feature = "cuda") {
                assert!(reason.contains("driver") || reason.contains("device"), "{reason}");
            }
            if !cfg!(feature = "cuda") {
                assert!(reason.contains("`cuda` feature"), "{reason}");
            }
        }
        other => panic!("expected DeviceUnavailable, got {other:?}"),
    }
    match gpu::load(&past, &PROGRAM) {
        Err(Error::DeviceUnavailable { device, .. }) => assert_eq!(device, format!("cuda:{n}")),
        Err(e) => panic!("expected DeviceUnavailable, got {e}"),
        Ok(_) => panic!("loaded on a device that does not exist"),
    }
    assert!(!gpu::is_cached(&past, &PROGRAM));
    assert!(rt.device_name(n).is_none());
    assert!(rt.caps(n).is_err());
    // Without a CUDA device, the default falls to the CPU.
    assert_eq!(decide_default(None, false), Ok(Device::Cpu));
    assert_eq!(decide_default(None, n > 0), Ok(if n > 0 { Device::Cuda(0) } else { Device::Cpu }));
    assert_eq!(tvm_runtime::CUDA_BACKEND, cfg!(feature = "cuda"));
}

#[test]
fn a_program_of_another_backend_is_an_internal_error_on_a_cuda_device() {
    static CL: Program = Program {
        backend: Backend::OpenCl,
        function: "k",
        source: "__kernel void k() {}",
        kernels: &[],
        binaries: &[],
    };
    match gpu::load(&Device::Cuda(0), &CL) {
        // No device here: that is said first.
        Err(Error::DeviceUnavailable { .. }) => assert_eq!(CudaRuntime::global().device_count(), 0),
        Err(Error::Internal { message }) => assert!(message.contains("opencl program"), "{message}"),
        other => panic!("expected an error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn the_cuda_types_are_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CudaRuntime>();
    send_sync::<gpu::Module>();
    send_sync::<gpu::Buffer>();
    send_sync::<tvm_runtime::DeviceTensor<f32, 2>>();
}

// ---- the cache key, the contract with the build.rs helper ----

#[test]
fn the_cache_key_is_the_documented_sha256() {
    // `printf 'tvm-rs-cuda-key v1\n3\nabc\n80\n11\n--std=c++17\n' | sha256sum`
    assert_eq!(
        cuda_cache_key("abc", 80, "--std=c++17"),
        "fd9e2231d3c753ba4871d2677a9527aa6b7467b0f480260016e0ed7deb1658b8"
    );
    assert_eq!(CUDA_FLAGS, "--std=c++17");
    let k = cuda_cache_key(SRC, 80, CUDA_FLAGS);
    assert_eq!(k.len(), 64);
    assert!(k.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{k}");
    assert_eq!(k, cuda_cache_key(SRC, 80, CUDA_FLAGS), "deterministic");
    for other in [
        cuda_cache_key(SRC, 90, CUDA_FLAGS),
        cuda_cache_key(&format!("{SRC} "), 80, CUDA_FLAGS),
        cuda_cache_key(SRC, 80, ""),
        cuda_cache_key(SRC, 80, "--std=c++17 -lineinfo"),
    ] {
        assert_ne!(k, other);
    }
    // The framing is unambiguous: bytes moved between the fields change the key.
    assert_ne!(cuda_cache_key("a\n8", 0, "x"), cuda_cache_key("a", 80, "x"));
    assert_ne!(cuda_cache_key("ab", 80, "c"), cuda_cache_key("a", 80, "bc"));
    assert_eq!(BinaryFormat::Cubin.extension(), "cubin");
    assert_eq!(BinaryFormat::Ptx.extension(), "ptx");
}

// ---- the rules of loading, as pure functions ----

#[test]
fn prebuilt_binaries_are_tried_cubin_of_the_major_then_ptx_newest_first() {
    let b = |format, arch| Binary { format, arch, key: "", bytes: b"" };
    use BinaryFormat::{Cubin, Ptx};
    let all = [b(Ptx, 70), b(Cubin, 80), b(Cubin, 86), b(Cubin, 89), b(Cubin, 90), b(Ptx, 80), b(Ptx, 90), b(Ptx, 100)];
    let order = |cc| cuda_binary_candidates(&all, cc).iter().map(|b| (b.format, b.arch)).collect::<Vec<_>>();
    assert_eq!(order(86), [(Cubin, 86), (Cubin, 80), (Ptx, 80), (Ptx, 70)]);
    assert_eq!(order(87), [(Cubin, 86), (Cubin, 80), (Ptx, 80), (Ptx, 70)]);
    assert_eq!(order(90), [(Cubin, 90), (Ptx, 90), (Ptx, 80), (Ptx, 70)]);
    // A cubin never crosses a major version; PTX does.
    assert_eq!(order(120), [(Ptx, 100), (Ptx, 90), (Ptx, 80), (Ptx, 70)]);
    assert_eq!(order(75), [(Ptx, 70)]);
    assert!(order(61).is_empty());
    assert!(cuda_binary_candidates(&[], 90).is_empty());
}

#[test]
fn nvrtc_targets_the_device_or_the_newest_older_arch_as_ptx() {
    use BinaryFormat::{Cubin, Ptx};
    let archs = [50, 60, 70, 75, 80, 86, 89, 90, 100, 120];
    assert_eq!(nvrtc_target(86, &archs, true), Some((86, Cubin)));
    assert_eq!(nvrtc_target(86, &archs, false), Some((86, Ptx)));
    // A device newer than NVRTC knows: PTX the driver compiles for it.
    assert_eq!(nvrtc_target(121, &archs, true), Some((120, Ptx)));
    assert_eq!(nvrtc_target(87, &archs, true), Some((86, Ptx)));
    // Older than every supported architecture.
    assert_eq!(nvrtc_target(35, &archs, true), None);
    // An NVRTC that cannot list its architectures is asked for the device's.
    assert_eq!(nvrtc_target(35, &[], true), Some((35, Cubin)));
}

fn h100_caps() -> CudaCaps {
    CudaCaps {
        label: "cuda:0 (test device, sm_90)".to_string(),
        compute_capability: 90,
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
        max_shared_bytes_per_block: 48 * 1024,
        multiprocessors: 132,
        clock_khz: 1_980_000,
        memory_clock_khz: 2_619_000,
        memory_bus_bits: 5120,
    }
}

/// The peak a profile reports its fraction of, from the driver's figures: an H100 SXM's
/// published 66.9 TFLOP/s f32 and 3.35 TB/s.
#[test]
fn peak_from_device_attributes() {
    let caps = h100_caps();
    let (gflops, gbps) = caps.peak().expect("sm_90 is in the table");
    assert!((gflops - 66_908.16).abs() < 0.01, "{gflops}");
    assert!((gbps - 3_352.32).abs() < 0.01, "{gbps}");
    let unknown = CudaCaps { compute_capability: 35, ..caps.clone() };
    assert_eq!(unknown.peak(), None);
    let no_clock = CudaCaps { clock_khz: 0, ..caps };
    assert_eq!(no_clock.peak(), None);
}

#[test]
fn device_limits_give_launch_failed_or_device_unsupported() {
    let caps = h100_caps();
    assert_eq!(caps.check_shared_memory("k", 48 * 1024), Ok(()));
    match caps.check_shared_memory("k", 48 * 1024 + 1) {
        Err(Error::DeviceUnsupported { device, reason }) => {
            assert_eq!(device, caps.label);
            assert!(reason.contains("`k`") && reason.contains("49153") && reason.contains("49152"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(caps.check_block("k", [1024, 1, 1], None), Ok(()));
    assert_eq!(caps.check_block("k", [32, 32, 1], Some(1024)), Ok(()));
    for (block, limit, says) in [
        ([1025, 1, 1], None, "1025 threads"),
        ([64, 32, 1], None, "2048 threads"),
        ([1, 1, 65], None, "block extent 2 is 65"),
        ([512, 1, 1], Some(256), "kernel's limit of 256"),
        ([usize::MAX, 2, 1], None, "threads"),
    ] {
        match caps.check_block("k", block, limit) {
            Err(Error::LaunchFailed { kernel, reason }) => {
                assert_eq!(kernel, "k");
                assert!(reason.contains(says), "{block:?}: {reason}");
            }
            other => panic!("{block:?}: {other:?}"),
        }
    }
    assert_eq!(caps.check_grid("k", [i32::MAX as usize, 65535, 65535]), Ok(()));
    for (grid, says) in
        [([1usize << 31, 1, 1], "grid extent 0"), ([1, 65536, 1], "grid extent 1"), ([1, 1, 65536], "grid extent 2")]
    {
        match caps.check_grid("k", grid) {
            Err(Error::LaunchFailed { reason, .. }) => assert!(reason.contains(says), "{grid:?}: {reason}"),
            other => panic!("{grid:?}: {other:?}"),
        }
    }
}

// ---- (c) the disk cache, without NVRTC ----

#[test]
fn the_cache_directory_follows_the_environment_rules() {
    fn p(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }
    let dir_from = cuda_cache::dir_from;
    assert_eq!(dir_from(p("/tmp/c"), p("/x"), p("/home/u")), Some(PathBuf::from("/tmp/c")));
    for off in ["", " ", "0", "off", "OFF", "Off"] {
        assert_eq!(dir_from(p(off), p("/x"), p("/home/u")), None, "{off:?}");
    }
    assert_eq!(dir_from(None, p("/x"), p("/home/u")), Some(PathBuf::from("/x/tvm-rs/cuda")));
    // A relative XDG_CACHE_HOME is ignored, as the XDG rules say.
    assert_eq!(dir_from(None, p("rel"), p("/home/u")), Some(PathBuf::from("/home/u/.cache/tvm-rs/cuda")));
    assert_eq!(dir_from(None, None, p("/home/u")), Some(PathBuf::from("/home/u/.cache/tvm-rs/cuda")));
    assert_eq!(dir_from(None, None, p("")), None);
    assert_eq!(dir_from(None, None, None), None);
}

#[test]
fn cache_entries_carry_a_digest_that_catches_truncation_and_tampering() {
    let payload = b"\x7fELF some cubin bytes \x00\x01\x02".to_vec();
    let content = cuda_cache::encode(&payload);
    assert!(content.starts_with(b"tvm-rs-cuda v1 "));
    assert_eq!(cuda_cache::decode(&content), Some(&payload[..]));
    // Every truncation, and every single flipped byte, is detected.
    for n in 0..content.len() {
        assert_eq!(cuda_cache::decode(&content[..n]), None, "truncated to {n}");
    }
    for i in 0..content.len() {
        let mut bad = content.clone();
        bad[i] ^= 0x20;
        assert_eq!(cuda_cache::decode(&bad), None, "byte {i} flipped");
    }
    let mut longer = content.clone();
    longer.push(b'x');
    assert_eq!(cuda_cache::decode(&longer), None);
    assert_eq!(cuda_cache::decode(&cuda_cache::encode(b"")), Some(&b""[..]));
}

#[test]
fn cache_writes_are_atomic_and_leave_no_temporary_files() {
    let tmp = TempDir::new("atomic");
    let dir = tmp.path().join("nested").join("cuda");
    let key = cuda_cache_key("x", 80, CUDA_FLAGS);
    assert_eq!(cuda_cache::read(&dir, &key, "cubin"), None);
    let payloads: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 64 * 1024 + i as usize]).collect();
    // Writers replace the entry while readers read it: a reader sees none or a whole one.
    std::thread::scope(|s| {
        for p in &payloads {
            let (dir, key) = (&dir, &key);
            s.spawn(move || {
                for _ in 0..20 {
                    cuda_cache::write(dir, key, "cubin", p).unwrap();
                }
            });
        }
        for _ in 0..4 {
            let (dir, key, payloads) = (&dir, &key, &payloads);
            s.spawn(move || {
                for _ in 0..200 {
                    if let Some(got) = cuda_cache::read(dir, key, "cubin") {
                        assert!(payloads.contains(&got), "a reader saw a partial entry of {} bytes", got.len());
                    }
                }
            });
        }
    });
    assert!(payloads.contains(&cuda_cache::read(&dir, &key, "cubin").unwrap()));
    let files: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(files, [format!("{key}.cubin")], "only the entry remains");
    // A directory that cannot be written is an error to ignore, not a panic.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    assert!(cuda_cache::write(&file, &key, "ptx", b"x").is_err());
}

// ---- (b) and (c) with NVRTC ----

#[test]
fn nvrtc_compiles_for_80_and_90_as_cubin_and_ptx() {
    if !nvrtc_or_skip("nvrtc_compiles_for_80_and_90_as_cubin_and_ptx") {
        return;
    }
    for arch in [80, 90] {
        let cubin = compile_cuda_with(SRC, arch, BinaryFormat::Cubin, None).unwrap();
        assert_eq!((cubin.format, cubin.arch, cubin.cache_hit), (BinaryFormat::Cubin, arch, false));
        assert!(cubin.bytes.starts_with(b"\x7fELF"), "sm_{arch}: a cubin is an ELF file");
        assert_eq!(cubin.key, cuda_cache_key(SRC, arch, CUDA_FLAGS));
        let ptx = compile_cuda_with(SRC, arch, BinaryFormat::Ptx, None).unwrap();
        let text = std::str::from_utf8(&ptx.bytes).unwrap();
        assert!(text.contains(&format!(".target sm_{arch}")), "{text}");
        assert!(text.contains(".entry k("), "{text}");
        assert!(!text.ends_with('\0'));
    }
}

#[test]
fn a_syntax_error_is_compilation_failed_with_nvrtc_log() {
    if !nvrtc_or_skip("a_syntax_error_is_compilation_failed_with_nvrtc_log") {
        return;
    }
    let bad = "extern \"C\" __global__ void k(float* a) { a[0] = undeclared_thing + ; }";
    match compile_cuda_with(bad, 80, BinaryFormat::Cubin, None) {
        Err(Error::CompilationFailed { target, log }) => {
            assert_eq!(target, "cuda");
            assert!(log.contains("error") && log.contains("undeclared_thing"), "{log}");
            let shown = Error::CompilationFailed { target, log }.to_string();
            assert!(shown.starts_with("compilation for `cuda` failed:\n"), "{shown}");
        }
        other => panic!("expected CompilationFailed, got {other:?}"),
    }
    match compile_cuda_with("int x = 1;\0", 80, BinaryFormat::Cubin, None) {
        Err(Error::CompilationFailed { log, .. }) => assert!(log.contains("NUL"), "{log}"),
        other => panic!("{other:?}"),
    }
    match compile_cuda_with(SRC, 11, BinaryFormat::Cubin, None) {
        Err(Error::CompilationFailed { log, .. }) => assert!(log.contains("sm_11"), "{log}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_disk_cache_hits_and_rebuilds_damaged_entries() {
    if !nvrtc_or_skip("the_disk_cache_hits_and_rebuilds_damaged_entries") {
        return;
    }
    let tmp = TempDir::new("hits");
    let dir = tmp.path();
    let compile = || compile_cuda_with(SRC, 80, BinaryFormat::Cubin, Some(dir)).unwrap();
    let first = compile();
    assert!(!first.cache_hit);
    let entry = cuda_cache::entry_path(dir, &first.key, "cubin");
    assert_eq!(tmp.files(), [format!("{}.cubin", first.key)], "one entry, no temporary file");
    let second = compile();
    assert!(second.cache_hit);
    assert_eq!(second.bytes, first.bytes);
    // PTX is another entry of the same key.
    let ptx = compile_cuda_with(SRC, 80, BinaryFormat::Ptx, Some(dir)).unwrap();
    assert!(!ptx.cache_hit);
    assert!(compile_cuda_with(SRC, 80, BinaryFormat::Ptx, Some(dir)).unwrap().cache_hit);
    // A truncated entry is a miss, rebuilt and rewritten whole.
    let content = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &content[..content.len() / 2]).unwrap();
    let rebuilt = compile();
    assert!(!rebuilt.cache_hit);
    assert_eq!(rebuilt.bytes, first.bytes);
    assert_eq!(std::fs::read(&entry).unwrap(), content);
    assert!(compile().cache_hit);
    // So is an entry with one byte of its payload flipped.
    let mut tampered = content.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    std::fs::write(&entry, &tampered).unwrap();
    let rebuilt = compile();
    assert!(!rebuilt.cache_hit);
    assert_eq!(rebuilt.bytes, first.bytes);
    assert_eq!(std::fs::read(&entry).unwrap(), content);
    assert_eq!(tmp.files().len(), 2, "the cubin and the ptx entries, no temporary file: {:?}", tmp.files());
    // A cache that cannot be written only costs the hit.
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, b"").unwrap();
    let uncached = compile_cuda_with(SRC, 80, BinaryFormat::Cubin, Some(&file)).unwrap();
    assert!(!uncached.cache_hit);
    assert_eq!(uncached.bytes, first.bytes);
}

#[test]
fn tvm_cuda_cache_chooses_or_disables_the_cache() {
    if !nvrtc_or_skip("tvm_cuda_cache_chooses_or_disables_the_cache") {
        return;
    }
    let tmp = TempDir::new("env");
    let home = tmp.path().join("home");
    let explicit = tmp.path().join("explicit");
    // Off: nothing is written, under XDG_CACHE_HOME or HOME.
    for off in ["off", "0", ""] {
        run_child(
            "child_compile_cuda_twice",
            &[
                ("TVM_CUDA_CACHE", OsStr::new(off)),
                ("XDG_CACHE_HOME", home.join("xdg").as_os_str()),
                ("HOME", home.as_os_str()),
                ("TVM_EXPECT_HIT", OsStr::new("0")),
            ],
        );
        let written = files_under(&home);
        assert!(written.is_empty(), "TVM_CUDA_CACHE={off:?} wrote {written:?}");
    }
    // A path: the entry is written there, and the second compile hits it.
    run_child(
        "child_compile_cuda_twice",
        &[("TVM_CUDA_CACHE", explicit.as_os_str()), ("HOME", home.as_os_str()), ("TVM_EXPECT_HIT", OsStr::new("1"))],
    );
    let files: Vec<_> = std::fs::read_dir(&explicit).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files_under(&home), Vec::<PathBuf>::new());
    // Unset: XDG_CACHE_HOME/tvm-rs/cuda.
    let xdg = tmp.path().join("xdg");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_compile_cuda_twice", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("TVM_CUDA_TEST_CHILD", "1")
        .env_remove("TVM_CUDA_CACHE")
        .env("XDG_CACHE_HOME", &xdg)
        .env("TVM_EXPECT_HIT", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(xdg.join("tvm-rs").join("cuda")).unwrap().count(), 1);
}

/// The files under `dir` (none if it does not exist), but for the NVIDIA driver's own
/// cache under `.nv`, which a process that loads a module on a GPU may write to `HOME`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p == dir.join(".nv") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Run by [`tvm_cuda_cache_chooses_or_disables_the_cache`]: `compile_cuda` (the cache
/// directory from the environment) twice; the second is a hit iff `TVM_EXPECT_HIT=1`.
#[test]
#[ignore = "run in a child process by tvm_cuda_cache_chooses_or_disables_the_cache"]
fn child_compile_cuda_twice() {
    if !is_child() {
        return;
    }
    let want_hit = std::env::var("TVM_EXPECT_HIT").as_deref() == Ok("1");
    let first = tvm_runtime::gpu::cuda::compile_cuda(SRC, 80).unwrap();
    assert!(!first.cache_hit);
    let second = tvm_runtime::gpu::cuda::compile_cuda(SRC, 80).unwrap();
    assert_eq!(second.cache_hit, want_hit);
    assert_eq!(first.bytes, second.bytes);
}

// ---- (d) NVRTC missing ----

#[test]
fn without_nvrtc_compiling_is_an_error_saying_what_to_install() {
    if !cfg!(feature = "cuda") {
        // Without the feature nothing compiles CUDA, and the error says so.
        match compile_cuda_with(SRC, 80, BinaryFormat::Cubin, None) {
            Err(Error::CompilationFailed { log, .. }) => assert!(log.contains("`cuda` feature"), "{log}"),
            other => panic!("{other:?}"),
        }
        return;
    }
    // A library that does not exist, named explicitly: never found, whatever is installed.
    let out = run_child(
        "child_compile_without_nvrtc",
        &[("TVM_NVRTC_LIBRARY", OsStr::new("/nonexistent/libnvrtc.so.12")), ("TVM_EXPECT_MISSING", OsStr::new("1"))],
    );
    assert!(out.contains("TVM_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.12"), "{out}");
    // No library path: missing here (unless NVRTC is installed system-wide); no panic.
    run_child("child_compile_without_nvrtc", &[("LD_LIBRARY_PATH", OsStr::new(""))]);
}

/// Run by [`without_nvrtc_compiling_is_an_error_saying_what_to_install`]: compiles `SRC`;
/// with `TVM_EXPECT_MISSING=1` it must fail with install advice, else either.
#[test]
#[ignore = "run in a child process by without_nvrtc_compiling_is_an_error_saying_what_to_install"]
fn child_compile_without_nvrtc() {
    if !is_child() {
        return;
    }
    let tmp = TempDir::new("missing");
    match compile_cuda_with(SRC, 80, BinaryFormat::Cubin, Some(tmp.path())) {
        Err(Error::CompilationFailed { target, log }) => {
            assert_eq!(target, "cuda");
            for advice in ["NVRTC", "pip install nvidia-cuda-nvrtc-cu12", "LD_LIBRARY_PATH", "nvcc"] {
                assert!(log.contains(advice), "{advice:?} missing from: {log}");
            }
            eprintln!("the error: {log}");
            assert!(tmp.files().is_empty());
        }
        Err(e) => panic!("expected CompilationFailed, got {e}"),
        Ok(c) => {
            assert!(std::env::var("TVM_EXPECT_MISSING").as_deref() != Ok("1"), "compiled without NVRTC");
            assert!(!c.bytes.is_empty());
        }
    }
    assert!(nvrtc_version().is_err() || std::env::var("TVM_EXPECT_MISSING").as_deref() != Ok("1"));
}

// ---- (e) on a CUDA device (skipped without one, even under TVM_REQUIRE_TOOLS=1: CI has
// no GPU) ----

/// Whether a CUDA device and NVRTC exist, for a test that needs both; prints why not.
fn cuda_device_or_skip(test: &str) -> bool {
    if let Err(e) = Device::Cuda(0).check_available() {
        eprintln!("skipping {test}: {e}");
        return false;
    }
    nvrtc_or_skip(test)
}

/// Every scalar type of the kernel ABI, written back as doubles (f16/bf16 as their bits).
const SCALARS_SRC: &str = r#"extern "C" __global__ void scalars(double* out, unsigned char b, signed char i8,
    short i16, int i32, long long i64, unsigned char u8, unsigned short u16, unsigned int u32,
    unsigned long long u64, unsigned short f16, unsigned short bf16, float f32, double f64) {
    out[0] = b; out[1] = i8; out[2] = i16; out[3] = i32; out[4] = (double)i64; out[5] = u8;
    out[6] = u16; out[7] = u32; out[8] = (double)u64; out[9] = f16; out[10] = bf16; out[11] = f32;
    out[12] = f64;
}
"#;

static SCALARS: Program = Program {
    backend: Backend::Cuda,
    function: "scalars",
    source: SCALARS_SRC,
    kernels: &[KernelDesc {
        name: "scalars",
        params: &[
            ParamKind::Buffer(DType::F64),
            ParamKind::Scalar(DType::BOOL),
            ParamKind::Scalar(DType::I8),
            ParamKind::Scalar(DType::I16),
            ParamKind::Scalar(DType::I32),
            ParamKind::Scalar(DType::I64),
            ParamKind::Scalar(DType::U8),
            ParamKind::Scalar(DType::U16),
            ParamKind::Scalar(DType::U32),
            ParamKind::Scalar(DType::U64),
            ParamKind::Scalar(DType::F16),
            ParamKind::Scalar(DType::BF16),
            ParamKind::Scalar(DType::F32),
            ParamKind::Scalar(DType::F64),
        ],
        shared_bytes: 0,
        block: Some([1, 1, 1]),
    }],
    binaries: &[],
};

/// `PROGRAM` on `x` (in place: `x *= 2`).
fn double(m: &gpu::Module, dev: &Device, x: &tvm_runtime::DeviceTensor<f32, 1>) -> Result<(), Error> {
    let n = x.len() as i64;
    let args = [KernelArg::Buffer(x.buffer_for(dev, "k", "a")?), KernelArg::Scalar(Scalar::I64(n))];
    // SAFETY: `SRC` is the kernel `PROGRAM` describes; it touches elements `0..n` of `a`,
    // which holds `n`.
    unsafe { m.launch(0, [(n + 255) / 256, 1, 1], [256, 1, 1], &args) }
}

#[test]
fn on_a_cuda_device_kernels_run_and_limits_hold() {
    if !cuda_device_or_skip("on_a_cuda_device_kernels_run_and_limits_hold") {
        return;
    }
    let tmp = TempDir::new("device");
    let out = run_child("child_on_a_cuda_device", &[("TVM_CUDA_CACHE", tmp.path().as_os_str())]);
    eprintln!("{out}");
    assert!(tmp.files().iter().any(|f| f.ends_with(".cubin") || f.ends_with(".ptx")), "{:?}", tmp.files());
}

/// Run by [`on_a_cuda_device_kernels_run_and_limits_hold`], with the disk cache in a
/// temporary directory.
#[test]
#[ignore = "run in a child process by on_a_cuda_device_kernels_run_and_limits_hold"]
fn child_on_a_cuda_device() {
    if !is_child() {
        return;
    }
    use tvm_runtime::{bf16, device_stats, f16, DeviceTensor, Tensor};
    let dev = Device::Cuda(0);
    let rt = CudaRuntime::global();
    let caps = rt.caps(0).unwrap();
    println!("device: {} (driver {:?}, NVRTC {:?})", caps.label, rt.driver_version(), nvrtc_version());
    assert!(Device::all().contains(&dev));
    // A kernel runs; transfers are counted; the module is cached.
    let m = gpu::load(&dev, &PROGRAM).unwrap();
    println!("PROGRAM loaded from {}", m.build_origin());
    assert!(gpu::is_cached(&dev, &PROGRAM));
    assert!(m.same_build(&gpu::load(&dev, &PROGRAM).unwrap()));
    for n in [1usize, 255, 256, 257, 100_000] {
        let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
        let before = device_stats();
        let x = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(&dev).unwrap();
        double(&m, &dev, &x).unwrap();
        double(&m, &dev, &x).unwrap();
        let got = x.to_host().unwrap();
        let d = device_stats() - before;
        assert_eq!((d.uploads, d.downloads), (1, 1), "n={n}: {d:?}");
        for (i, (&g, &h)) in got.as_slice().iter().zip(&host).enumerate() {
            assert_eq!(g, h * 4.0, "n={n}, element {i}");
        }
    }
    // Zeroed memory, and a buffer of the pool reused.
    let z = DeviceTensor::<f32, 1>::zeros(&dev, [1000]).unwrap();
    assert!(z.to_host().unwrap().as_slice().iter().all(|&v| v == 0.0));
    drop(z);
    let before = device_stats();
    let z = DeviceTensor::<f32, 1>::zeros(&dev, [1000]).unwrap();
    assert!((device_stats() - before).pool_reuses >= 1);
    assert!(z.to_host().unwrap().as_slice().iter().all(|&v| v == 0.0));
    // Every scalar type reaches the kernel with its value.
    let s = gpu::load(&dev, &SCALARS).unwrap();
    let out = DeviceTensor::<f64, 1>::zeros(&dev, [13]).unwrap();
    let args = [
        KernelArg::Buffer(out.buffer_for(&dev, "scalars", "out").unwrap()),
        KernelArg::Scalar(Scalar::Bool(true)),
        KernelArg::Scalar(Scalar::I8(-7)),
        KernelArg::Scalar(Scalar::I16(-300)),
        KernelArg::Scalar(Scalar::I32(-70000)),
        KernelArg::Scalar(Scalar::I64(-(1i64 << 40))),
        KernelArg::Scalar(Scalar::U8(200)),
        KernelArg::Scalar(Scalar::U16(60000)),
        KernelArg::Scalar(Scalar::U32(4_000_000_000)),
        KernelArg::Scalar(Scalar::U64(1u64 << 50)),
        KernelArg::Scalar(Scalar::F16(f16::from_f32(1.5))),
        KernelArg::Scalar(Scalar::BF16(bf16::from_f32(-2.0))),
        KernelArg::Scalar(Scalar::F32(0.25)),
        KernelArg::Scalar(Scalar::F64(1e300)),
    ];
    // SAFETY: `SCALARS_SRC` is what `SCALARS` describes; it writes elements 0..13 of `out`.
    unsafe { s.launch(0, [1, 1, 1], [1, 1, 1], &args) }.unwrap();
    let want = [
        1.0,
        -7.0,
        -300.0,
        -70000.0,
        -(2f64.powi(40)),
        200.0,
        60000.0,
        4e9,
        2f64.powi(50),
        f16::from_f32(1.5).to_bits() as f64,
        bf16::from_f32(-2.0).to_bits() as f64,
        0.25,
        1e300,
    ];
    assert_eq!(out.to_host().unwrap().as_slice(), &want);
    // Launches over the device's limits fail before reaching the driver.
    let x = Tensor::from_vec(vec![1.0f32; 4], [4]).unwrap().to_device(&dev).unwrap();
    let args = [KernelArg::Buffer(x.buffer_for(&dev, "k", "a").unwrap()), KernelArg::Scalar(Scalar::I64(4))];
    let too_many = caps.max_threads_per_block as i64 * 2;
    for (grid, block) in [([1, 1, 1], [too_many, 1, 1]), ([1, 65536, 1], [1, 1, 1]), ([1i64 << 31, 1, 1], [1, 1, 1])] {
        // SAFETY: the launch is refused before it runs.
        match unsafe { m.launch(0, grid, block, &args) } {
            Err(Error::LaunchFailed { kernel, reason }) => println!("{grid:?} {block:?}: {kernel}: {reason}"),
            other => panic!("{grid:?} {block:?}: {other:?}"),
        }
    }
    // Too much shared memory: the device cannot run it.
    static BIG_SHARED: Program = Program {
        backend: Backend::Cuda,
        function: "big",
        source: SRC,
        kernels: &[KernelDesc { name: "k", params: &[], shared_bytes: 1 << 30, block: None }],
        binaries: &[],
    };
    assert!(matches!(gpu::load(&dev, &BIG_SHARED), Err(Error::DeviceUnsupported { .. })));
    // Prebuilt binaries come first: a cubin, then PTX, for this device (the source does
    // not even compile); a broken one falls through to NVRTC.
    let cc = caps.compute_capability;
    let leak = |format, bytes: Vec<u8>, source: &'static str| -> &'static Program {
        let binaries: &'static [Binary] =
            Box::leak(vec![Binary { format, arch: cc, key: "", bytes: bytes.leak() }].into_boxed_slice());
        Box::leak(Box::new(Program {
            backend: Backend::Cuda,
            function: "k",
            source,
            kernels: PROGRAM.kernels,
            binaries,
        }))
    };
    for format in [BinaryFormat::Cubin, BinaryFormat::Ptx] {
        let built = compile_cuda_with(SRC, cc, format, None).unwrap();
        let p = leak(format, built.bytes, "this is not CUDA");
        let m = gpu::load(&dev, p).unwrap();
        assert!(m.build_origin().contains("prebuilt"), "{}", m.build_origin());
        let x = Tensor::from_vec(vec![1.5f32; 300], [300]).unwrap().to_device(&dev).unwrap();
        double(&m, &dev, &x).unwrap();
        assert!(x.to_host().unwrap().as_slice().iter().all(|&v| v == 3.0));
    }
    let p = leak(BinaryFormat::Cubin, b"\x7fELF not really".to_vec(), SRC);
    let m = gpu::load(&dev, p).unwrap();
    assert!(!m.build_origin().contains("prebuilt"), "{}", m.build_origin());
    // Many threads at once, each with its own data, on one stream.
    std::thread::scope(|s| {
        for t in 0..8 {
            let (m, dev) = (&m, &dev);
            s.spawn(move || {
                for round in 0..20 {
                    let n = 1000 + t * 37 + round;
                    let host: Vec<f32> = (0..n).map(|i| (i + t) as f32).collect();
                    let x = Tensor::from_vec(host.clone(), [n]).unwrap().to_device(dev).unwrap();
                    double(m, dev, &x).unwrap();
                    let got = x.to_host().unwrap();
                    assert!(got.as_slice().iter().zip(&host).all(|(&g, &h)| g == 2.0 * h), "thread {t} round {round}");
                }
            });
        }
    });
}
