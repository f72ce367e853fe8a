//! WGSL code generation (the `webgpu` target): every kernel of the registry
//! (`support/registry.rs`: the corpus and the example kernels), lowered for
//! `Target::webgpu()` with the schedule it gets there (its own block, one borrowed from
//! CUDA or OpenCL, else the derived one), with the default schedule and with the derived
//! one (blocks removed), and printed; every program naga parses and validates (as wgpu
//! does before running it) and translates to MSL; the kernels WGSL cannot express fail
//! with the documented error. Goldens of one program in WGSL and MSL (bless with
//! `UPDATE_EXPECT=1`).

mod common;

use expect_test::expect;
use tvm_core::codegen::wgsl::{emit_wgsl, naga_check};
use tvm_core::driver::lower_for;
use tvm_core::frontend::{parse_kernel, unwrap_invocation};
use tvm_core::tir::PrimFunc;
use tvm_core::Target;

use common::lowered::{self, kernel_in};
use common::registry::KERNELS;

/// The schedules each registered kernel is printed with.
const SCHEDULES: [&str; 3] = ["its schedule", "default schedule", "derived schedule"];

/// The function of `k` lowered for WebGPU with each of [`SCHEDULES`].
fn lowered(label: &str, k: &tvm_core::frontend::Kernel) -> Vec<(&'static str, PrimFunc)> {
    let t = Target::webgpu();
    let own = lower_for(k, &t).unwrap_or_else(|e| panic!("{label}: lowering failed: {e:?}"));
    let default = lowered::lower_kernel(k, &t, true);
    let derived = tvm_core::driver::lower(&lowered::derived_schedule(k, &t))
        .unwrap_or_else(|e| panic!("{label}: lowering the derived schedule failed: {e:?}"));
    SCHEDULES.into_iter().zip([own, default, derived]).collect()
}

/// The registered kernels WGSL cannot express, and the type that stops each (with every
/// schedule).
const NOT_IN_WGSL: &[(&str, &str)] =
    &[("example_argmax::top1", "the i64 tensor `at`"), ("example_axpy::axpy::<f64>", "the f64 tensor `z`")];

#[test]
fn every_program_validates_or_names_what_wgsl_lacks() {
    let mut programs = 0;
    for k in KERNELS {
        let label = k.label();
        let kernel = kernel_in(k.text, k.function, k.instance);
        for (schedule, f) in lowered(&label, &kernel) {
            match (emit_wgsl(&f), NOT_IN_WGSL.iter().find(|(l, _)| *l == label)) {
                (Ok(text), None) => {
                    if let Err(e) = naga_check::validate(&text) {
                        panic!("{label} ({schedule}): {e}\n--- WGSL ---\n{text}");
                    }
                    let msl = naga_check::to_msl(&text).unwrap_or_else(|e| panic!("{label} ({schedule}): {e}"));
                    assert!(msl.contains("kernel void"), "{label}:\n{msl}");
                    assert_eq!(text.matches("@compute").count(), f.kernels.len(), "{label}:\n{text}");
                    programs += 1;
                }
                (Err(e), Some((_, what))) => {
                    let e = e.to_string();
                    assert!(e.contains(what) && e.contains("on webgpu (WGSL has no 64-bit"), "{label}: {e}");
                }
                (Ok(_), Some(_)) => panic!("{label} ({schedule}): WGSL for a kernel listed as not expressible"),
                (Err(e), None) => panic!("{label} ({schedule}): {e}"),
            }
        }
    }
    let expressible = KERNELS.len() - NOT_IN_WGSL.len();
    assert_eq!(programs, expressible * SCHEDULES.len());
}

/// One kernel of each type WGSL lacks: the error names the tensor, its type and why.
#[test]
fn what_wgsl_lacks_is_named() {
    for (ty, why) in [
        ("f64", "WGSL has no 64-bit floats"),
        ("f16", "WGSL has f16 only with the `shader-f16` extension"),
        ("bf16", "WGSL has no bfloat16 type"),
        ("i8", "WGSL has no 8- or 16-bit integers"),
        ("u16", "WGSL has no 8- or 16-bit integers"),
        ("i64", "WGSL has no 64-bit integers"),
    ] {
        let src = format!("pub fn copy(x: {ty}[n]) -> y: {ty}[n] {{ y[i] = x[i]; }}");
        let k = parse_kernel(src.parse().unwrap()).unwrap();
        let f = lower_for(&k, &Target::webgpu()).unwrap();
        let e = emit_wgsl(&f).unwrap_err().to_string();
        assert!(e.contains(&format!("the {ty} tensor `")) && e.contains(why), "{ty}: {e}");
    }
}

/// 64-bit index arithmetic is computed in 32 bits up to a bound on the dims, which the
/// host checks: the matmul's `i * K + k` fits while every dim is at most 2^15; a vector
/// add's `i < n` while `n` is at most 2^30 (`n + 255` is computed too).
#[test]
fn dims_are_bounded_where_32_bits_are_exact() {
    use tvm_core::codegen::wgsl::narrow::scalar_limit;
    for (src, want) in [(include_str!("corpus/matmul.rs"), 1 << 15), (include_str!("corpus/vector_add.rs"), 1 << 30)] {
        let k = parse_kernel(unwrap_invocation(src.parse().unwrap())).unwrap();
        let f = lower_for(&k, &Target::webgpu()).unwrap();
        assert_eq!(scalar_limit(&f, &f.kernels[0]), Some(want), "{}", k.name);
        let text = emit_wgsl(&f).unwrap();
        assert!(text.contains(&format!("is at most {want} (checked by the host)")), "{text}");
    }
}

/// The derived schedule of a conv2d without one fuses every output axis over a 1-D grid
/// and recovers `n` as a quotient of the fused index: its bound is that of `n` (the grid
/// bounds the fused index by `N*F*H*W + 254`), not the fused index's, so the dims reach
/// 2^7 (the output's `((n*F + f)*H + y)*W + x`), not 16 as with intervals alone.
#[test]
fn a_fused_index_decomposed_by_division_keeps_its_bound() {
    use tvm_core::codegen::wgsl::narrow::scalar_limit;
    let src = include_str!("corpus/conv2d.rs");
    let k = parse_kernel(unwrap_invocation(src.parse().unwrap())).unwrap();
    let t = Target::webgpu();
    let f = tvm_core::driver::lower(&lowered::derived_schedule(&k, &t)).unwrap();
    let limit = f.kernels.iter().map(|kern| scalar_limit(&f, kern).unwrap()).min().unwrap();
    assert!(limit >= 1 << 7, "{limit}\n{}", emit_wgsl(&f).unwrap());
}

/// A 1-D grid that may exceed WebGPU's 65535 workgroups a dimension is printed to be
/// dispatched folded: the entry point takes the dispatch's size, recovers the linear
/// workgroup id and returns past the grid before anything else; a constant grid within
/// the limit is not.
#[test]
fn a_large_1d_grid_is_folded() {
    let parse = |src: &str| parse_kernel(src.parse().unwrap()).unwrap();
    let k = parse("pub fn double(x: f32[n]) -> y: f32[n] { y[i] = x[i] * 2.0; }");
    let text = emit_wgsl(&lower_for(&k, &Target::webgpu()).unwrap()).unwrap();
    naga_check::validate(&text).unwrap();
    let body = &text[text.find("fn double_kernel0").unwrap()..];
    assert!(body.contains("@builtin(num_workgroups) tvm_groups: vec3<u32>"), "{text}");
    let linear = body.find("tvm_block.x + tvm_groups.x * (tvm_block.y + tvm_groups.y * tvm_block.z)").unwrap();
    let guard = body.find("if (tvm_block_x >= u32(").unwrap();
    let store = body.find("y[").unwrap();
    assert!(linear < guard && guard < store && body[guard..store].contains("return;"), "{text}");
    let k = parse("pub fn double(x: f32[1024]) -> y: f32[1024] { y[i] = x[i] * 2.0; }");
    let text = emit_wgsl(&lower_for(&k, &Target::webgpu()).unwrap()).unwrap();
    assert!(!text.contains("num_workgroups"), "{text}");
}

/// A checked read under a condition: WGSL's `select` evaluates both sides, so the branch
/// with the check becomes an `if` (the check must not report a fault TIR never evaluates).
#[test]
fn a_check_under_a_condition_stays_lazy() {
    let src = "pub fn pick(x: f32[n], ids: i32[n], t: f32[m]) -> y: f32[n] {
        y[i] = if x[i] > 0.0 { t[ids[i] as i64] } else { 0.0 };
    }";
    let k = parse_kernel(src.parse().unwrap()).unwrap();
    let f = lower_for(&k, &Target::webgpu()).unwrap();
    let text = emit_wgsl(&f).unwrap();
    naga_check::validate(&text).unwrap();
    let lazy = text.find("var tvm_select").unwrap_or_else(|| panic!("a lazy select:\n{text}"));
    let check = text.rfind("tvm_check_index_k0(").unwrap();
    assert!(check > lazy && text[lazy..check].contains("if ("), "{text}");
    let body = &text[text.find("fn pick_kernel0").unwrap()..];
    assert!(!body.contains("select("), "no eager select of the checked side:\n{text}");
}

#[test]
fn golden_vector_add() {
    let k = parse_kernel(unwrap_invocation(include_str!("corpus/vector_add_golden.rs").parse().unwrap())).unwrap();
    let f = lower_for(&k, &Target::webgpu()).unwrap();
    let text = emit_wgsl(&f).unwrap();
    expect![[r#"
        @group(0) @binding(0) var<storage, read_write> c: array<f32>;
        @group(0) @binding(1) var<storage, read> a: array<f32>;
        @group(0) @binding(2) var<storage, read> b: array<f32>;
        struct tvm_Args_k0 { n: i32 }
        @group(0) @binding(3) var<uniform> tvm_args_k0: tvm_Args_k0;
        // Indices in 32 bits: exact while every 64-bit scalar (the dims) is at most 1073741824 (checked by the host).
        @compute @workgroup_size(256, 1, 1)
        fn vector_add_kernel0(@builtin(workgroup_id) tvm_block: vec3<u32>, @builtin(num_workgroups) tvm_groups: vec3<u32>, @builtin(local_invocation_id) tvm_thread: vec3<u32>) {
          let n: i32 = tvm_args_k0.n;
          let tvm_block_x: u32 = tvm_block.x + tvm_groups.x * (tvm_block.y + tvm_groups.y * tvm_block.z);
          if (tvm_block_x >= u32(((n + 255i) / 256i))) {
            return;
          }
          let blockIdx_x: i32 = i32(tvm_block_x);
          let threadIdx_x: i32 = i32(tvm_thread.x);
          let tvm_i: i32 = (blockIdx_x * 256i);
          let tvm_i_1: i32 = (tvm_i + threadIdx_x);
          if ((tvm_i_1 < n)) {
            c[tvm_i_1] = (a[tvm_i_1] + b[tvm_i_1]);
          }
        }
    "#]].assert_eq(&text);
    expect![[r#"
        // language: metal2.1
        #include <metal_stdlib>
        #include <simd/simd.h>

        using metal::uint;

        struct _mslBufferSizes {
            uint size0;
            uint size1;
            uint size2;
        };

        typedef float type_1[1];
        struct tvm_Args_k0_ {
            int n;
        };
        int naga_div(int lhs, int rhs) {
            return lhs / metal::select(rhs, 1, (lhs == (-2147483647 - 1) & rhs == -1) | (rhs == 0));
        }


        struct vector_add_kernel0_Input {
        };
        kernel void vector_add_kernel0_(
          metal::uint3 tvm_block [[threadgroup_position_in_grid]]
        , metal::uint3 tvm_groups [[threadgroups_per_grid]]
        , metal::uint3 tvm_thread [[thread_position_in_threadgroup]]
        , device type_1& c [[buffer(0)]]
        , device type_1 const& a [[buffer(1)]]
        , device type_1 const& b [[buffer(2)]]
        , constant tvm_Args_k0_& tvm_args_k0_ [[buffer(3)]]
        , constant _mslBufferSizes& _buffer_sizes [[buffer(4)]]
        ) {
            int n = tvm_args_k0_.n;
            uint tvm_block_x = tvm_block.x + (tvm_groups.x * (tvm_block.y + (tvm_groups.y * tvm_block.z)));
            if (tvm_block_x >= static_cast<uint>(naga_div(as_type<int>(as_type<uint>(n) + as_type<uint>(255)), 256))) {
                return;
            }
            int blockIdx_x = static_cast<int>(tvm_block_x);
            int threadIdx_x = static_cast<int>(tvm_thread.x);
            int tvm_i = as_type<int>(as_type<uint>(blockIdx_x) * as_type<uint>(256));
            int tvm_i_1_ = as_type<int>(as_type<uint>(tvm_i) + as_type<uint>(threadIdx_x));
            if (tvm_i_1_ < n) {
                float _e32 = a[metal::min(unsigned(tvm_i_1_), (_buffer_sizes.size1 - 0 - 4) / 4)];
                float _e35 = b[metal::min(unsigned(tvm_i_1_), (_buffer_sizes.size2 - 0 - 4) / 4)];
                c[metal::min(unsigned(tvm_i_1_), (_buffer_sizes.size0 - 0 - 4) / 4)] = _e32 + _e35;
                return;
            } else {
                return;
            }
        }
    "#]]
    .assert_eq(&naga_check::to_msl(&text).unwrap());
}

/// WebGPU's schedule: its own `schedule!(webgpu)` block, else CUDA's block, else
/// OpenCL's (borrowed, as OpenCL borrows CUDA's), else the derived one.
#[test]
fn webgpu_takes_its_block_else_a_borrowed_one_else_the_derived_schedule() {
    use tvm_core::driver::{lower_explained, ScheduleSource};
    let block = |target: &str, threads: u32| {
        format!(
            "schedule!({target}) {{ let (b, t) = y.split(y.i, {threads}); y.bind(b, block.x); y.bind(t, thread.x); }}"
        )
    };
    // A known extent, a multiple of 4: the derived schedule gives each thread 4 elements.
    let kernel = "pub fn double(x: f32[1024]) -> y: f32[1024] { y[i] = x[i] * 2.0; }";
    let threads_of = |f: &PrimFunc| f.kernels[0].block[0].as_int();
    for (blocks, want, threads) in [
        (vec![block("cuda", 64), block("opencl", 32), block("webgpu", 16)], ScheduleSource::Own { block: 2 }, Some(16)),
        (vec![block("opencl", 32), block("cuda", 64)], ScheduleSource::Borrowed { block: 1 }, Some(64)),
        (
            vec!["schedule!(cpu) { y.parallel(y.i); }".into(), block("opencl", 32)],
            ScheduleSource::Borrowed { block: 1 },
            Some(32),
        ),
        (vec![], ScheduleSource::Default { reason: "the kernel has no `schedule!` block".into() }, None),
    ] {
        let src = format!("{kernel}\n{}", blocks.join("\n"));
        let k = parse_kernel(src.parse().unwrap()).unwrap();
        let (sch, source, f) = lower_explained(&k, &Target::webgpu(), &mut |_| {});
        let f = f.unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(source, want, "{src}");
        match threads {
            Some(t) => assert_eq!(threads_of(&f), Some(t), "{src}"),
            None => {
                let d = sch.unwrap().derived.expect("no block: the derived schedule");
                assert!(d.fallback.is_none() && d.text.contains("vectorize"), "{}", d.text);
            }
        }
        naga_check::validate(&emit_wgsl(&f).unwrap()).unwrap();
    }
}

/// The matmul example's `schedule!(webgpu)`: one kernel of 16 x 16 invocations, both
/// operand slices staged in workgroup memory (4 KiB each, within WebGPU's 16 KiB) between
/// barriers, vec4 copies and stores, and no 64-bit arithmetic left.
#[test]
fn the_matmul_examples_webgpu_tile_schedule() {
    use tvm_core::driver::{lower_explained, ScheduleSource};
    let k = common::registry::kernel("example_matmul", "matmul");
    let kernel = kernel_in(k.text, k.function, k.instance);
    let (_, source, f) = lower_explained(&kernel, &Target::webgpu(), &mut |_| {});
    let f = f.unwrap();
    assert!(matches!(source, ScheduleSource::Own { .. }), "{source:?}");
    let text = emit_wgsl(&f).unwrap();
    naga_check::validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(text.matches("@compute @workgroup_size(16, 16, 1)").count(), 1, "{text}");
    assert_eq!(text.matches("var<workgroup>").count(), 2, "{text}");
    assert!(text.matches("array<vec4<f32>, 256>").count() == 2, "4 KiB slices, as vec4:\n{text}");
    assert!(text.matches("workgroupBarrier()").count() >= 2, "{text}");
    assert!(text.contains("vec4<f32>"), "vector copies and stores:\n{text}");
    assert!(!text.contains("i64"), "{text}");
}
