//! CUDA C code generation: every kernel of the registry (`support/registry.rs`: the corpus
//! and the example kernels), with its GPU schedule and with the default one, lowered for
//! `Target::cuda()` and printed. Structural checks for all, goldens for three (vector add,
//! tiled matmul, softmax; bless with `UPDATE_EXPECT=1`), the printer's decisions (32-bit
//! indices, aligned vectors, f16, fast math), and the real toolchain: every program
//! compiled by NVRTC and assembled by ptxas for sm_80 and sm_90 with no spills and shared
//! memory within the target's limit, and the matmul example's main loop read back from its
//! SASS (`cuobjdump`).
//!
//! The toolchain tests find NVRTC through the runtime (`LD_LIBRARY_PATH`), `ptxas` and
//! `cuobjdump` on `PATH` (or `TVM_PTXAS` / `TVM_CUOBJDUMP`). Without them they skip with
//! a printed reason, unless `TVM_REQUIRE_TOOLS=1` (CI), which makes a skip a failure.

use expect_test::expect;
use std::path::PathBuf;
use std::process::Command;
use tvm_core::codegen::emit_cuda;
use tvm_core::tir::{PrimFunc, Scope, Stmt};
use tvm_core::Target;
use tvm_runtime::gpu::BinaryFormat;

#[path = "support/lowered.rs"]
mod lowered;
#[path = "support/registry.rs"]
mod registry;
use lowered::{has, kernel_in, lower_for, lower_kernel};
use registry::{kernel, Kernel, KERNELS};

/// A registered kernel lowered for CUDA: with its own (or borrowed) schedule, or the default.
fn lower_registered(k: &Kernel, default: bool) -> PrimFunc {
    lower_kernel(&kernel_in(k.text, k.function, k.instance), &Target::cuda(), default)
}

fn emit(src: &str, default: bool) -> String {
    let f = lower_for(src, &Target::cuda(), default);
    emit_cuda(&f).unwrap_or_else(|e| panic!("codegen failed: {e}\n{}", tvm_core::tir::printer::print_func(&f)))
}

/// Every program: (label, lowered function, CUDA text) of every registered kernel.
fn all_programs() -> Vec<(String, PrimFunc, String)> {
    let mut out = Vec::new();
    for k in KERNELS {
        let name = k.label();
        for default in [false, true] {
            let f = lower_registered(k, default);
            let text = emit_cuda(&f)
                .unwrap_or_else(|e| panic!("{name}: codegen failed: {e}\n{}", tvm_core::tir::printer::print_func(&f)));
            let label = format!("{name}{}", if default { " (default schedule)" } else { "" });
            out.push((label, f, text));
        }
    }
    out
}

#[test]
fn every_kernel_has_cuda_code() {
    for (label, f, text) in all_programs() {
        assert!(!f.kernels.is_empty(), "{label}: no kernels");
        for k in &f.kernels {
            let head = text.lines().find(|l| l.contains(&format!(" {}(", k.name))).unwrap_or_else(|| {
                panic!("{label}: kernel `{}` missing:\n{text}", k.name);
            });
            assert!(head.starts_with("extern \"C\" __global__ void "), "{label}: {head}");
            assert!(head.contains("__restrict__"), "{label}: pointers are not __restrict__: {head}");
            if let [Some(x), Some(y), Some(z)] = k.block.each_ref().map(|e| e.as_int()) {
                assert!(head.contains(&format!("__launch_bounds__({})", x * y * z)), "{label}: {head}");
            }
            let barrier = has(&k.body, &|s| matches!(s, Stmt::Barrier));
            let shared =
                has(&k.body, &|s| matches!(s, Stmt::Allocate { buffer, .. } if buffer.scope() == Scope::Shared));
            // This kernel's text: from its head to the next kernel's.
            let start = text.find(head).unwrap();
            let own = &text[start..];
            let own = own[head.len()..].find("extern \"C\"").map_or(own, |end| &own[..head.len() + end]);
            assert_eq!(barrier, own.contains("__syncthreads()"), "{label}: barriers in `{}`:\n{own}", k.name);
            assert_eq!(shared, own.contains("__shared__"), "{label}: shared memory in `{}`:\n{own}", k.name);
        }
        assert!(!text.contains("get_group_id") && !text.contains("__local"), "{label}: OpenCL in CUDA:\n{text}");
    }
}

#[test]
fn golden_vector_add() {
    expect![[r#"
        extern "C" __global__ void __launch_bounds__(32) vector_add_kernel0(const float* __restrict__ a, float* __restrict__ c, const float* __restrict__ b, long long n) {
          long long blockIdx_x = (long long)(blockIdx.x);
          long long threadIdx_x = (long long)(threadIdx.x);
          __shared__ __align__(16) float a_shared[32];
          if (((blockIdx_x * 32LL) + threadIdx_x) < n) {
            a_shared[threadIdx_x] = a[((blockIdx_x * 32LL) + threadIdx_x)];
          }
          __syncthreads();
          if (((blockIdx_x * 32LL) + threadIdx_x) < n) {
            c[((blockIdx_x * 32LL) + threadIdx_x)] = (a_shared[threadIdx_x] + b[((blockIdx_x * 32LL) + threadIdx_x)]);
          }
        }
    "#]]
    .assert_eq(&emit(include_str!("corpus/vector_add.rs"), false));
}

#[test]
fn golden_tiled_matmul() {
    expect![[r#"
        extern "C" __global__ void __launch_bounds__(256) matmul_kernel0(float* __restrict__ c, const float* __restrict__ a, const float* __restrict__ b, long long M, long long N, long long K) {
          long long blockIdx_x = (long long)(blockIdx.x);
          long long blockIdx_y = (long long)(blockIdx.y);
          long long threadIdx_x = (long long)(threadIdx.x);
          long long threadIdx_y = (long long)(threadIdx.y);
          __shared__ __align__(16) float a_shared[256];
          __shared__ __align__(16) float b_shared[256];
          if ((((blockIdx_y * 16LL) + threadIdx_y) < M) && (((blockIdx_x * 16LL) + threadIdx_x) < N)) {
            c[(((((N * blockIdx_y) * 16LL) + (N * threadIdx_y)) + (blockIdx_x * 16LL)) + threadIdx_x)] = 0.0f;
          }
          for (long long ko = 0LL; ko < ((K + 15LL) / 16LL); ++ko) {
            if ((((blockIdx_y * 16LL) + threadIdx_y) < M) && (((ko * 16LL) + threadIdx_x) < K)) {
              a_shared[(threadIdx_x + (threadIdx_y * 16LL))] = a[(((((K * blockIdx_y) * 16LL) + (K * threadIdx_y)) + (ko * 16LL)) + threadIdx_x)];
            }
            if ((((ko * 16LL) + threadIdx_y) < K) && (((blockIdx_x * 16LL) + threadIdx_x) < N)) {
              b_shared[(threadIdx_x + (threadIdx_y * 16LL))] = b[(((((N * ko) * 16LL) + (N * threadIdx_y)) + (blockIdx_x * 16LL)) + threadIdx_x)];
            }
            __syncthreads();
            for (long long ki = 0LL; ki < 16LL; ++ki) {
              if (((((blockIdx_y * 16LL) + threadIdx_y) < M) && (((blockIdx_x * 16LL) + threadIdx_x) < N)) && (((ko * 16LL) + ki) < K)) {
                c[(((((N * blockIdx_y) * 16LL) + (N * threadIdx_y)) + (blockIdx_x * 16LL)) + threadIdx_x)] = (c[(((((N * blockIdx_y) * 16LL) + (N * threadIdx_y)) + (blockIdx_x * 16LL)) + threadIdx_x)] + (a_shared[(ki + (threadIdx_y * 16LL))] * b_shared[((ki * 16LL) + threadIdx_x)]));
              }
            }
            __syncthreads();
          }
        }
    "#]].assert_eq(&emit(include_str!("corpus/matmul_tiled.rs"), false));
}

#[test]
fn golden_softmax() {
    expect![[r#"
        extern "C" __global__ void __launch_bounds__(16) softmax_kernel0(const float* __restrict__ x, float* __restrict__ y) {
          long long blockIdx_x = (long long)(blockIdx.x);
          long long threadIdx_x = (long long)(threadIdx.x);
          __shared__ __align__(16) float x_shared[40];
          __shared__ __align__(16) float m[1];
          __shared__ __align__(16) float s[1];
          for (long long xo = 0LL; xo < 3LL; ++xo) {
            if (((xo * 16LL) + threadIdx_x) < 40LL) {
              x_shared[((xo * 16LL) + threadIdx_x)] = x[(((xo * 16LL) + (blockIdx_x * 40LL)) + threadIdx_x)];
            }
          }
          __syncthreads();
          __align__(16) float m_acc[1];
          m_acc[0LL] = __uint_as_float(4286578688U);
          for (long long mo = 0LL; mo < 3LL; ++mo) {
            if (((mo * 16LL) + threadIdx_x) < 40LL) {
              m_acc[0LL] = fmaxf(m_acc[0LL], x_shared[((mo * 16LL) + threadIdx_x)]);
            }
          }
          {
            unsigned int warp_mask = 0xffffU;
            float warp_shfl = __shfl_xor_sync(warp_mask, m_acc[0LL], 8, 16);
            m_acc[0LL] = fmaxf(m_acc[0LL], warp_shfl);
            float warp_shfl_1 = __shfl_xor_sync(warp_mask, m_acc[0LL], 4, 16);
            m_acc[0LL] = fmaxf(m_acc[0LL], warp_shfl_1);
            float warp_shfl_2 = __shfl_xor_sync(warp_mask, m_acc[0LL], 2, 16);
            m_acc[0LL] = fmaxf(m_acc[0LL], warp_shfl_2);
            float warp_shfl_3 = __shfl_xor_sync(warp_mask, m_acc[0LL], 1, 16);
            m_acc[0LL] = fmaxf(m_acc[0LL], warp_shfl_3);
          }
          if (threadIdx_x == 0LL) {
            m[0LL] = m_acc[0LL];
          }
          __syncthreads();
          __align__(16) float s_acc[1];
          s_acc[0LL] = 0.0f;
          for (long long so = 0LL; so < 3LL; ++so) {
            if (((so * 16LL) + threadIdx_x) < 40LL) {
              s_acc[0LL] = (s_acc[0LL] + expf((x_shared[((so * 16LL) + threadIdx_x)] - m[0LL])));
            }
          }
          {
            unsigned int warp_mask_1 = 0xffffU;
            float warp_shfl_4 = __shfl_xor_sync(warp_mask_1, s_acc[0LL], 8, 16);
            s_acc[0LL] = (s_acc[0LL] + warp_shfl_4);
            float warp_shfl_5 = __shfl_xor_sync(warp_mask_1, s_acc[0LL], 4, 16);
            s_acc[0LL] = (s_acc[0LL] + warp_shfl_5);
            float warp_shfl_6 = __shfl_xor_sync(warp_mask_1, s_acc[0LL], 2, 16);
            s_acc[0LL] = (s_acc[0LL] + warp_shfl_6);
            float warp_shfl_7 = __shfl_xor_sync(warp_mask_1, s_acc[0LL], 1, 16);
            s_acc[0LL] = (s_acc[0LL] + warp_shfl_7);
          }
          if (threadIdx_x == 0LL) {
            s[0LL] = s_acc[0LL];
          }
          __syncthreads();
          for (long long jo = 0LL; jo < 3LL; ++jo) {
            if (((jo * 16LL) + threadIdx_x) < 40LL) {
              y[(((jo * 16LL) + (blockIdx_x * 40LL)) + threadIdx_x)] = (expf((x_shared[((jo * 16LL) + threadIdx_x)] - m[0LL])) / s[0LL]);
            }
          }
        }
    "#]].assert_eq(&emit(include_str!("corpus/softmax.rs"), false));
}

/// A kernel of static shapes indexes in 32 bits; one with a symbolic shape in 64.
#[test]
fn index_width_follows_what_is_proved() {
    let fixed = emit(include_str!("corpus/vector_add_1024.rs"), false);
    assert!(fixed.contains("int threadIdx_x = (int)(threadIdx.x);"), "{fixed}");
    assert!(!fixed.contains("long long") && !fixed.contains("256L"), "{fixed}");
    let symbolic = emit(include_str!("corpus/vector_add.rs"), false);
    assert!(symbolic.contains("long long threadIdx_x"), "{symbolic}");
    // 2^32 elements do not fit in an int: the same kernel at that size keeps 64 bits.
    let big = include_str!("corpus/vector_add_1024.rs").replace("1024]", "4294967296]");
    let big = emit(&big, false);
    assert!(big.contains("long long threadIdx_x"), "{big}");
}

const VEC4: &str = r#"
tvm::compute! {
    pub fn shift(a: f32[1024]) -> c: f32[1024] { c[i] = a[i + OFFSET] * 2.0; }
    schedule!(cuda) {
        let (bo, t) = c.split(c.i, 128);
        let (to, v) = c.split(t, 4);
        c.bind(bo, block.x);
        c.bind(to, thread.x);
        c.vectorize(v);
    }
}
"#;

/// float4 where the address is provably a multiple of 16 bytes, lane by lane where not.
#[test]
fn vector_accesses_only_where_aligned() {
    let src = VEC4.replace("a: f32[1024]", "a: f32[1032]");
    let aligned = emit(&src.replace("OFFSET", "4"), false);
    assert!(aligned.contains("float4 a_v = *(const float4*)(a + "), "{aligned}");
    assert!(aligned.contains("*(float4*)(c + "), "{aligned}");
    let unaligned = emit(&src.replace("OFFSET", "1"), false);
    assert!(!unaligned.contains("*(const float4*)(a"), "a read at i + 1 is not 16-byte aligned:\n{unaligned}");
    assert!(unaligned.contains("*(float4*)(c + "), "the store stays aligned:\n{unaligned}");
}

/// f16 and bf16 are stored as 16-bit patterns and computed in float, rounded after every
/// operation, with no header.
#[test]
fn half_types_without_headers() {
    let src = r#"
tvm::compute! {
    pub fn mix(a: f16[n], b: bf16[n], s: f16) -> (c: f16[n], d: bf16[n]) {
        c[i] = a[i] * s + 1.5;
        d[i] = b[i] * b[i];
    }
}
"#;
    let text = emit(src, true);
    assert!(!text.contains("#include"), "{text}");
    assert!(text.contains("unsigned short* __restrict__ c") && text.contains("unsigned short s_bits"), "{text}");
    assert!(text.contains("c[") && text.contains("= tvm_f32_to_f16(tvm_round_f16("), "{text}");
    assert!(text.contains("tvm_round_bf16((tvm_bf16_to_f32(b["), "{text}");
}

#[test]
fn math_is_precise_unless_fast_math() {
    let src = include_str!("corpus/softmax.rs");
    let precise = emit_cuda(&lower_for(src, &Target::cuda(), false)).unwrap();
    assert!(precise.contains("expf(") && !precise.contains("__expf("), "{precise}");
    let fast = emit_cuda(&lower_for(src, &Target::parse("cuda -fast-math").unwrap(), false)).unwrap();
    assert!(fast.contains("__expf("), "{fast}");
}

// ---- The toolchain ----------------------------------------------------------------

fn require_tools() -> bool {
    std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1")
}

/// Skips (or, under `TVM_REQUIRE_TOOLS=1`, fails) with `why`.
fn skip(test: &str, why: &str) {
    assert!(!require_tools(), "{test}: TVM_REQUIRE_TOOLS=1 but {why}");
    eprintln!("skipping {test}: {why}");
}

/// A tool from its environment variable or `PATH`.
fn tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// What `ptxas -v` reports for one kernel.
#[derive(Debug)]
struct PtxasInfo {
    kernel: String,
    registers: u32,
    spill_bytes: u64,
    smem: u64,
}

/// `source` through NVRTC (PTX for `compute_<arch>`) and ptxas (`sm_<arch>`, `-v`);
/// returns the cubin and the per-kernel report.
fn assemble(ptxas: &PathBuf, label: &str, source: &str, arch: u32) -> (Vec<u8>, Vec<PtxasInfo>) {
    let ptx = tvm_runtime::gpu::cuda::compile_cuda_with(source, arch, BinaryFormat::Ptx, None)
        .unwrap_or_else(|e| panic!("{label}: NVRTC for sm_{arch}: {e}\n{source}"));
    let dir = std::env::temp_dir().join(format!("tvm-codegen-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let (ptx_path, cubin) = (dir.join(format!("{stem}_{arch}.ptx")), dir.join(format!("{stem}_{arch}.cubin")));
    std::fs::write(&ptx_path, &ptx.bytes).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch=sm_{arch}"))
        .arg("-v")
        .arg(&ptx_path)
        .arg("-o")
        .arg(&cubin)
        .output()
        .expect("ptxas runs");
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{label}: ptxas sm_{arch} failed:\n{log}");
    let mut infos: Vec<PtxasInfo> = Vec::new();
    let num = |s: &str, before: &str| -> u64 {
        let i = s.find(before).unwrap_or_else(|| panic!("`{before}` in `{s}`"));
        s[..i].split_whitespace().last().unwrap().parse().unwrap()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let kernel = rest.split('\'').next().unwrap().to_string();
            infos.push(PtxasInfo { kernel, registers: 0, spill_bytes: 0, smem: 0 });
        } else if let Some(i) = infos.last_mut() {
            if line.contains("bytes spill stores") {
                i.spill_bytes = num(line, "bytes spill stores") + num(line, "bytes spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                i.registers = num(line, "registers") as u32;
                if line.contains("bytes smem") {
                    i.smem = num(line, "bytes smem");
                }
            }
        }
    }
    (std::fs::read(&cubin).unwrap(), infos)
}

/// Every program compiles with NVRTC and assembles with ptxas for sm_80 and sm_90: no
/// spills, shared memory within the target's limit, every kernel reported.
#[test]
fn every_program_compiles_for_sm80_and_sm90() {
    const TEST: &str = "every_program_compiles_for_sm80_and_sm90";
    if let Err(e) = tvm_runtime::gpu::cuda::nvrtc_version() {
        return skip(TEST, &format!("no NVRTC: {e}"));
    }
    let Some(ptxas) = tool("TVM_PTXAS", "ptxas") else { return skip(TEST, "no ptxas on PATH") };
    let limit = Target::cuda().max_shared_memory_per_block as u64;
    let mut kernels = 0;
    for (label, f, text) in all_programs() {
        for arch in [80, 90] {
            let (_, infos) = assemble(&ptxas, &label, &text, arch);
            assert_eq!(infos.len(), f.kernels.len(), "{label}: sm_{arch}: {infos:?}");
            for i in &infos {
                assert_eq!(i.spill_bytes, 0, "{label}: sm_{arch}: `{}` spills: {i:?}", i.kernel);
                assert!(i.smem <= limit, "{label}: sm_{arch}: `{}` uses {} bytes of shared memory", i.kernel, i.smem);
                assert!(i.registers > 0 && i.registers <= 255, "{label}: {i:?}");
                kernels += 1;
            }
        }
    }
    eprintln!("{kernels} kernels assembled for sm_80 and sm_90");
}

/// The instructions of the longest loop of a kernel's SASS (the span from a backward
/// branch's target to the branch): (opcode, count) and the total.
fn main_loop_mix(sass: &str) -> (Vec<(String, usize)>, usize) {
    let mut ins: Vec<(u64, String)> = Vec::new();
    for line in sass.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("/*") else { continue };
        let Some((addr, body)) = rest.split_once("*/") else { continue };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else { continue };
        let Some(op) = body.split(';').next().map(str::trim).filter(|s| !s.is_empty()) else { continue };
        ins.push((addr, op.to_string()));
    }
    let mut best: Option<(u64, u64)> = None;
    for (addr, op) in &ins {
        if let Some(target) = op.contains("BRA").then(|| op.split("0x").nth(1)).flatten() {
            let target =
                u64::from_str_radix(target.trim_end_matches(|c: char| !c.is_ascii_hexdigit()), 16).unwrap_or(u64::MAX);
            if target < *addr && best.is_none_or(|(a, b)| b - a < addr - target) {
                best = Some((target, *addr));
            }
        }
    }
    let (lo, hi) = best.expect("a loop in the SASS");
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    for (addr, op) in ins.iter().filter(|(a, _)| (lo..=hi).contains(a)) {
        let _ = addr;
        let word = op.split_whitespace().find(|w| !w.starts_with('@')).unwrap_or("");
        let opcode = word.split('.').next().unwrap().to_string();
        match counts.iter_mut().find(|(o, _)| *o == opcode) {
            Some((_, n)) => *n += 1,
            None => counts.push((opcode, 1)),
        }
        total += 1;
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1));
    (counts, total)
}

/// The matmul example's CUDA schedule: at least 70% of the SASS instructions of its main
/// loop are FFMA, with no spills (the figure in the README: `cargo test -p tvm-core
/// --test codegen_cuda matmul_main_loop -- --nocapture`).
#[test]
fn matmul_main_loop_is_mostly_ffma() {
    const TEST: &str = "matmul_main_loop_is_mostly_ffma";
    if let Err(e) = tvm_runtime::gpu::cuda::nvrtc_version() {
        return skip(TEST, &format!("no NVRTC: {e}"));
    }
    let Some(ptxas) = tool("TVM_PTXAS", "ptxas") else { return skip(TEST, "no ptxas on PATH") };
    let Some(cuobjdump) = tool("TVM_CUOBJDUMP", "cuobjdump") else { return skip(TEST, "no cuobjdump on PATH") };
    let f = lower_registered(kernel("example_matmul", "matmul"), false);
    let text = emit_cuda(&f).unwrap_or_else(|e| panic!("codegen failed: {e}"));
    for arch in [80, 90] {
        let (cubin, infos) = assemble(&ptxas, "example_matmul", &text, arch);
        let dir = std::env::temp_dir().join(format!("tvm-codegen-cuda-{}", std::process::id()));
        let path = dir.join(format!("matmul_sass_{arch}.cubin"));
        std::fs::write(&path, cubin).unwrap();
        let out = Command::new(&cuobjdump).arg("-sass").arg(&path).output().expect("cuobjdump runs");
        assert!(out.status.success(), "cuobjdump: {}", String::from_utf8_lossy(&out.stderr));
        let (mix, total) = main_loop_mix(&String::from_utf8_lossy(&out.stdout));
        let ffma = mix.iter().find(|(o, _)| o == "FFMA").map_or(0, |x| x.1);
        let share = ffma as f64 / total as f64;
        eprintln!(
            "sm_{arch}: {} registers, {} spill bytes, {} bytes smem; main loop {total} instructions, FFMA {ffma} ({:.1}%): {mix:?}",
            infos[0].registers,
            infos[0].spill_bytes,
            infos[0].smem,
            share * 100.0
        );
        assert_eq!(infos[0].spill_bytes, 0);
        assert!(share >= 0.70, "sm_{arch}: FFMA is {:.1}% of the main loop: {mix:?}", share * 100.0);
    }
}

/// The warp-shuffle lowering of cross-thread reductions, run by the interpreter (the
/// oracle, which executes `WarpReduce` groups in lock step): one warp (16 lanes, the
/// corpus softmax) and two levels (128 threads = 4 warps, the example softmax), against a
/// plain softmax, on rows that do and do not fill the threads.
#[test]
fn warp_reductions_run_right_on_the_interpreter() {
    use tvm_core::interp::{run, ArgValue, HostTensor};
    let plain = |x: &[f32], n: usize| -> Vec<f32> {
        x.chunks(n)
            .flat_map(|r| {
                let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let s: f32 = r.iter().map(|v| (v - m).exp()).sum();
                r.iter().map(move |v| (v - m).exp() / s).collect::<Vec<_>>()
            })
            .collect()
    };
    let (corpus, example) = (kernel("softmax", "softmax"), kernel("example_softmax", "softmax"));
    for (label, k, m, n) in
        [("corpus softmax", corpus, 5, 40), ("example softmax", example, 3, 300), ("example softmax", example, 2, 128)]
    {
        let f = lower_registered(k, false);
        let printed = tvm_core::tir::printer::print_func(&f);
        assert!(printed.contains("warp_reduce("), "{label}: no warp reduction:\n{printed}");
        let x: Vec<f32> = (0..m * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 10.0).collect();
        let mut args = vec![
            ArgValue::Tensor(HostTensor::f32(vec![m, n], x.clone())),
            ArgValue::Tensor(HostTensor::f32(vec![m, n], vec![f32::NAN; m * n])),
        ];
        run(&f, &mut args).unwrap_or_else(|e| panic!("{label}: {e}\n{printed}"));
        let got = args[1].as_tensor().and_then(|t| t.as_f32()).unwrap();
        for (i, (g, w)) in got.iter().zip(plain(&x, n)).enumerate() {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-3), "{label} {m}x{n}: element {i}: {g} vs {w}");
        }
    }
}

/// A reduction bound to `thread.x` in a kernel whose block is wider in x (another stage
/// binds 24 threads, the reduction 16): the reduction's threads are not consecutive
/// lanes of one row, so it must use the shared-memory tree, not shuffles; the
/// interpreter checks the result.
#[test]
fn no_shuffles_when_the_block_is_wider_than_the_reduction() {
    use tvm_core::interp::{run, ArgValue, HostTensor};
    let src = r#"
tvm::compute! {
    pub fn widen(x: f32[M, 16]) -> y: f32[M, 24] {
        let s[i]: f32[M] = sum(x[i, j] for j in 0..16);
        y[i, k] = s[i] + (k as f32);
    }
    schedule!(cuda) {
        y.bind(y.i, block.x);
        y.bind(y.k, thread.x);
        s.compute_at(y, y.i);
        s.bind(s.j, thread.x);
    }
}
"#;
    let f = lower_for(src, &Target::cuda(), false);
    let printed = tvm_core::tir::printer::print_func(&f);
    assert!(!printed.contains("warp_reduce("), "shuffles over a 24-wide block:\n{printed}");
    let (m, x): (usize, Vec<f32>) = (3, (0..48).map(|i| i as f32 * 0.25).collect());
    let mut args = vec![
        ArgValue::Tensor(HostTensor::f32(vec![m, 16], x.clone())),
        ArgValue::Tensor(HostTensor::f32(vec![m, 24], vec![f32::NAN; m * 24])),
    ];
    run(&f, &mut args).unwrap_or_else(|e| panic!("{e}\n{printed}"));
    let got = args[1].as_tensor().and_then(|t| t.as_f32()).unwrap();
    for i in 0..m {
        let s: f32 = x[i * 16..(i + 1) * 16].iter().sum();
        for k in 0..24 {
            assert!((got[i * 24 + k] - (s + k as f32)).abs() <= 1e-4, "y[{i}, {k}] = {}", got[i * 24 + k]);
        }
    }
    // The same reduction with a block of exactly its width uses shuffles.
    let narrow = src.replace("f32[M, 24]", "f32[M, 16]");
    let printed = tvm_core::tir::printer::print_func(&lower_for(&narrow, &Target::cuda(), false));
    assert!(printed.contains("warp_reduce(sum"), "{printed}");
}
