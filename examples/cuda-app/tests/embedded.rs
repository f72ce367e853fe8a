//! The build-script path end to end: when the build script found nvcc, every kernel of the
//! crate carries a cubin and a PTX for each architecture it compiled for, under the key of
//! the CUDA source the macro generated (so `build.rs` and `compute!` agree on the source),
//! and the bytes are nvcc's. Without nvcc the test is skipped with a reason, unless
//! `TVM_REQUIRE_TOOLS=1`.

use tvm::gpu::{cuda_cache_key, BinaryFormat, CUDA_FLAGS};
use tvm_cuda_app::{kernels, BUILD_ARCHS, BUILD_NVCC};

#[test]
fn build_script_binaries_are_embedded_under_the_macros_key() {
    if BUILD_NVCC.is_empty() {
        let why = "nvcc was not found when the crate was built (put it on PATH or set NVCC, then rebuild)";
        assert!(std::env::var("TVM_REQUIRE_TOOLS").as_deref() != Ok("1"), "TVM_REQUIRE_TOOLS=1: {why}");
        // (Outputs of an earlier build with nvcc may still be embedded: they are named by
        // the key of this very source, so they are as good as new ones.)
        eprintln!("skipped: {why}");
        return;
    }
    let archs: Vec<u32> = BUILD_ARCHS.split(',').map(|a| a.parse().unwrap()).collect();
    assert!(!archs.is_empty());
    for k in kernels() {
        let source = k.cuda_source.unwrap_or_else(|e| panic!("{}: {e}", k.name));
        let mut got: Vec<(u32, BinaryFormat)> = k.binaries.iter().map(|b| (b.arch, b.format)).collect();
        got.sort_by_key(|&(a, f)| (a, f.extension()));
        let mut want: Vec<(u32, BinaryFormat)> =
            archs.iter().flat_map(|&a| [(a, BinaryFormat::Cubin), (a, BinaryFormat::Ptx)]).collect();
        want.sort_by_key(|&(a, f)| (a, f.extension()));
        assert_eq!(got, want, "{}: the embedded binaries", k.name);
        for b in k.binaries {
            assert_eq!(b.key, cuda_cache_key(source, b.arch, CUDA_FLAGS), "{}: sm_{} key", k.name, b.arch);
            match b.format {
                BinaryFormat::Cubin => assert!(b.bytes.starts_with(b"\x7fELF"), "{}: a cubin is an ELF file", k.name),
                BinaryFormat::Ptx => {
                    let text = std::str::from_utf8(b.bytes).expect("PTX is text");
                    assert!(text.contains(&format!(".target sm_{}", b.arch)), "{}: PTX for sm_{}", k.name, b.arch);
                    assert!(text.contains(".entry"), "{}: PTX with its kernels", k.name);
                }
            }
        }
    }
}
