//! Target strings (docs/LANGUAGE.md §5) and the attributes code generation queries.

use tvm_core::target::{TargetError, TargetKind};
use tvm_core::{DType, Target};

#[test]
fn cuda_defaults_and_options() {
    let t = Target::parse("cuda").unwrap();
    assert_eq!((t.kind, t.sm, t.max_threads_per_block, t.warp_size), (TargetKind::Cuda, 80, 1024, 32));
    assert_eq!(t.max_shared_memory_per_block, 48 * 1024);
    assert_eq!(t.to_string(), "cuda -arch=sm_80");
    assert!(t.has_tensor_cores() && t.has_bf16() && t.is_gpu());
    let t = Target::parse("cuda -arch=sm_90 -max_threads_per_block=512 -max_shared_memory_per_block=98304").unwrap();
    assert_eq!((t.sm, t.max_threads_per_block, t.max_shared_memory_per_block), (90, 512, 98304));
    assert!(!Target::parse("cuda -arch=sm_61").unwrap().has_bf16());
}

#[test]
fn cpu_features_decide_vector_lanes() {
    assert_eq!(Target::parse("llvm -mcpu=skylake-avx512").unwrap().vector_lanes(DType::F32), 16);
    assert_eq!(Target::parse("llvm -mattr=+avx2,+fma").unwrap().vector_lanes(DType::F32), 8);
    assert_eq!(Target::parse("llvm -mattr=+avx2,+fma").unwrap().vector_lanes(DType::F64), 4);
    // The plain target is dispatched at run time: the widest level's lanes.
    assert_eq!(Target::parse("cpu").unwrap().vector_lanes(DType::F32), 16);
    assert_eq!(Target::parse("llvm -mattr=+sse4.1").unwrap().vector_lanes(DType::F32), 4);
    let t = Target::parse("llvm -mcpu=skylake-avx512 -mattr=-avx512f -num-cores=2").unwrap();
    assert_eq!((t.vector_lanes(DType::F32), t.num_cores), (8, Some(2)));
    assert!(t.is_cpu() && !t.is_gpu());
}

#[test]
fn opencl_and_metal() {
    let t = Target::parse("opencl -device=pocl").unwrap();
    assert_eq!((t.kind, t.max_threads_per_block, t.opencl_device.as_deref()), (TargetKind::OpenCl, 256, Some("pocl")));
    assert_eq!(Target::parse("metal").unwrap().kind, TargetKind::Metal);
}

#[test]
fn unknown_kinds_options_archs_and_features_are_errors() {
    assert_eq!(Target::parse("vulkan"), Err(TargetError::UnknownKind { kind: "vulkan".into() }));
    assert_eq!(Target::parse(""), Err(TargetError::Empty));
    assert!(
        matches!(Target::parse("cuda -foo=1"), Err(TargetError::UnknownOption { ref option, .. }) if option == "-foo=1")
    );
    assert!(matches!(Target::parse("cpu -arch=sm_80"), Err(TargetError::UnknownOption { .. })));
    assert!(matches!(Target::parse("cuda -arch=sm_13"), Err(TargetError::UnknownArch { ref arch }) if arch == "sm_13"));
    assert!(matches!(Target::parse("cuda -arch=compute"), Err(TargetError::UnknownArch { .. })));
    assert!(
        matches!(Target::parse("llvm -mattr=+sse9"), Err(TargetError::UnknownFeature { ref feature }) if feature == "sse9")
    );
    assert!(matches!(Target::parse("cuda -max_threads_per_block=0"), Err(TargetError::BadValue { .. })));
    let msg = Target::parse("vulkan").unwrap_err().to_string();
    assert!(msg.contains("`vulkan`") && !msg.ends_with('.'), "{msg}");
}

#[test]
fn webgpu_defaults_are_webgpus_default_limits() {
    let t = Target::parse("webgpu").unwrap();
    assert_eq!((t.kind, t.max_threads_per_block, t.max_shared_memory_per_block), (TargetKind::WebGpu, 256, 16384));
    assert_eq!(t.warp_size, 1, "subgroups are optional in WebGPU: reductions through shared memory");
    assert!(t.is_gpu() && t == Target::webgpu() && t.to_string() == "webgpu");
    let t = Target::parse("webgpu -max_threads_per_block=1024 -max_shared_memory_per_block=32768").unwrap();
    assert_eq!((t.max_threads_per_block, t.max_shared_memory_per_block), (1024, 32768));
    assert!(matches!(Target::parse("webgpu -arch=sm_80"), Err(TargetError::UnknownOption { .. })));
    assert_eq!(Target::webgpu().facts.sm_count, 16);
}

#[test]
fn facts_for_the_auto_scheduler_have_defaults_and_options() {
    let t = Target::cpu();
    let f = &t.facts;
    assert_eq!((f.vector_registers, f.fma_units, f.fma_latency, f.cores), (32, 2, 4, 4));
    assert_eq!((f.l1_bytes, f.l2_bytes), (32 << 10, 1 << 20));
    // A known family sets its caches; AVX2 alone means 16 vector registers.
    let t = Target::parse("llvm -mcpu=sapphirerapids").unwrap();
    assert_eq!((t.facts.l1_bytes, t.facts.l2_bytes, t.facts.vector_registers), (48 << 10, 2 << 20, 32));
    assert_eq!(Target::parse("llvm -mattr=+avx2,+fma").unwrap().facts.vector_registers, 16);
    let t = Target::parse("cpu -l2-cache=2M -l1-cache=48K -num-cores=16 -fma-latency=3 -vector-registers=32").unwrap();
    assert_eq!((t.facts.l2_bytes, t.facts.l1_bytes, t.facts.cores, t.facts.fma_latency), (2 << 20, 48 << 10, 16, 3));
    assert_eq!(t.num_cores, Some(16));
    for bad in ["cpu -l2-cache=0", "cpu -l2-cache=2X", "cpu -fma-units=-1", "cuda -sm_count=0"] {
        assert!(matches!(Target::parse(bad), Err(TargetError::BadValue { .. })), "{bad}");
    }
    // GPUs: per architecture, and options after `-arch` win.
    let t = Target::parse("cuda -arch=sm_90a").unwrap();
    assert_eq!((t.facts.sm_count, t.facts.shared_memory_per_sm), (132, 228 << 10));
    let t = Target::parse("cuda -arch=sm_80 -sm_count=100 -max_shared_memory_per_sm=100K").unwrap();
    assert_eq!((t.facts.sm_count, t.facts.shared_memory_per_sm), (100, 100 << 10));
    assert_eq!(Target::opencl().facts.sm_count, 16);
}
