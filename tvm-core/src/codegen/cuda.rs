//! CUDA C code generation: every kernel of a GPU-lowered [`PrimFunc`] as one program,
//! compiled by nvcc (a `build.rs`) or NVRTC (at the first launch).
//!
//! ABI (what the CUDA runtime relies on): kernel `k` of the function is
//! `extern "C" __global__ void <k.name>(...)` with, in order, one `T* __restrict__` per
//! `k.buffer_args` (`const` when the kernel only reads it; bool elements stored as
//! `unsigned char`, f16 and bf16 as `unsigned short` bit patterns), then one scalar per
//! `k.scalar_args` by value (`i64` → `long long`, `u64` → `unsigned long long`, `bool` →
//! `unsigned char` holding 0 or 1, f16/bf16 → `unsigned short` bits, and so on). The grid
//! is `k.grid` blocks of `k.block` threads; when the block is constant the kernel carries
//! `__launch_bounds__` with its size, so it must be launched with exactly that block.
//! Buffers must be aligned to 16 bytes (device allocations are aligned to 256).
//!
//! Decisions come from the [`Target`]: the warp size and the architecture reach the
//! lowering (cross-thread reductions), the maximum block size bounds `__launch_bounds__`,
//! and `-fast-math` selects the fast math intrinsics (`__expf`, ...); the default is the
//! precise functions. Index arithmetic is 32-bit (`int`) in a kernel whose indices
//! provably fit ([`crate::arith::index_fits_i32`]), 64-bit otherwise.
//!
//! f16 and bf16 need no header: values are computed in `float` and rounded to the 16-bit
//! type after every operation, with conversions written in PTX and integer arithmetic
//! ([`HALF_HELPERS`]). The alternative, `cuda_fp16.h` / `cuda_bf16.h`, is not built
//! into NVRTC: every machine that compiles a kernel at run time would need the CUDA
//! headers installed and found, for no gain in the numbers.

use super::c_like::{push_kernels, push_section, CPrinter, Dialect, HALF_HELPERS};
use super::CodegenError;
use crate::dtype::{DType, ScalarKind};
use crate::target::Target;
use crate::tir::printer::LineSpan;
use crate::tir::{Intrinsic, PrimFunc, ThreadTag};

/// The CUDA C dialect for one target.
#[derive(Clone, Copy, Debug)]
pub struct Cuda {
    /// Fast, less precise math intrinsics (`-fast-math`).
    pub fast_math: bool,
    /// The most threads a block may have.
    pub max_threads: u32,
}

impl Cuda {
    pub fn for_target(t: &Target) -> Cuda {
        Cuda { fast_math: t.fast_math, max_threads: t.max_threads_per_block }
    }
}

impl Dialect for Cuda {
    fn kernel_qualifier(&self) -> &'static str {
        "extern \"C\" __global__"
    }
    fn kernel_head(&self, attr: Option<&str>, name: &str, params: &[String]) -> String {
        let attr = attr.map(|a| format!("{a} ")).unwrap_or_default();
        format!("{} void {attr}{name}({}) {{", self.kernel_qualifier(), params.join(", "))
    }
    fn global_param(&self, elem: &str, name: &str) -> String {
        format!("{elem}* __restrict__ {name}")
    }
    fn read_only_param(&self, elem: &str, name: &str) -> String {
        format!("const {elem}* __restrict__ {name}")
    }
    fn shared_qualifier(&self) -> &'static str {
        "__shared__"
    }
    fn barrier(&self) -> &'static str {
        "__syncthreads()"
    }
    fn thread_index(&self, tag: ThreadTag) -> String {
        let v = if tag.is_block() { "blockIdx" } else { "threadIdx" };
        format!("{v}.{}", ["x", "y", "z"][tag.dim() as usize])
    }
    fn work_group_size_attr(&self, b: [i64; 3]) -> Option<String> {
        let n = b.iter().try_fold(1i64, |acc, &x| if x >= 1 { acc.checked_mul(x) } else { None })?;
        (n <= self.max_threads as i64).then(|| format!("__launch_bounds__({n})"))
    }
    fn scalar_type(&self, d: DType) -> Option<String> {
        Some(
            match (d.kind, d.bits) {
                (ScalarKind::Bool, _) => "bool",
                (ScalarKind::Int, 8) => "signed char",
                (ScalarKind::Int, 16) => "short",
                (ScalarKind::Int, 32) => "int",
                (ScalarKind::Int, 64) => "long long",
                (ScalarKind::UInt, 8) => "unsigned char",
                (ScalarKind::UInt, 16) => "unsigned short",
                (ScalarKind::UInt, 32) => "unsigned int",
                (ScalarKind::UInt, 64) => "unsigned long long",
                (ScalarKind::Float, 32) => "float",
                (ScalarKind::Float, 64) => "double",
                _ => return None, // f16 and bf16: computed as float (half_as_float)
            }
            .to_string(),
        )
    }
    /// The built-in vector types of at most 16 bytes (one load or store instruction).
    fn vector_type(&self, elem: DType, lanes: u16) -> Option<String> {
        let base = match (elem.kind, elem.bits) {
            (ScalarKind::Float, 32) => "float",
            (ScalarKind::Float, 64) => "double",
            (ScalarKind::Int, 32) => "int",
            (ScalarKind::UInt, 32) => "uint",
            (ScalarKind::Int, 64) => "longlong",
            (ScalarKind::UInt, 64) => "ulonglong",
            _ => return None,
        };
        (matches!(lanes, 2 | 4) && lanes as usize * elem.bytes() <= 16).then(|| format!("{base}{lanes}"))
    }
    fn vector_load(&self, ty: &str, _lanes: u16, ptr: &str, base: &str) -> Option<String> {
        Some(format!("*(const {ty}*)({ptr} + {base})"))
    }
    fn vector_store(&self, ty: &str, _lanes: u16, value: &str, ptr: &str, base: &str) -> Option<String> {
        Some(format!("*({ty}*)({ptr} + {base}) = {value}"))
    }
    fn vector_make(&self, ty: &str, lanes: &[String]) -> String {
        format!("make_{ty}({})", lanes.join(", "))
    }
    fn vector_splat(&self, ty: &str, value: &str) -> String {
        let n: usize = ty.trim_start_matches(|c: char| !c.is_ascii_digit()).parse().unwrap_or(1);
        self.vector_make(ty, &vec![value.to_string(); n])
    }
    fn vector_lane(&self, var: &str, i: u16) -> String {
        format!("{var}.{}", ["x", "y", "z", "w"][i as usize % 4])
    }
    fn math_function(&self, f: Intrinsic, d: DType) -> String {
        let single = d.bits != 64;
        let fast = self.fast_math && single;
        match f {
            Intrinsic::Abs if d.is_float() => if single { "fabsf" } else { "fabs" }.into(),
            Intrinsic::Abs if d.bits == 64 => "llabs".into(),
            Intrinsic::Abs => "abs".into(),
            Intrinsic::Exp if fast => "__expf".into(),
            Intrinsic::Log if fast => "__logf".into(),
            Intrinsic::Sin if fast => "__sinf".into(),
            Intrinsic::Cos if fast => "__cosf".into(),
            Intrinsic::Pow if fast => "__powf".into(),
            f if single => format!("{}f", f.name()), // expf, logf, sqrtf, rsqrtf, tanhf, erff, fmaf, ...
            f => f.name().into(),
        }
    }
    fn min_max(&self, is_max: bool, d: DType) -> String {
        match (is_max, d.is_float(), d.bits == 64) {
            (true, true, false) => "fmaxf",
            (false, true, false) => "fminf",
            (true, true, true) => "fmax",
            (false, true, true) => "fmin",
            (true, false, _) => "max",
            (false, false, _) => "min",
        }
        .into()
    }
    /// PTX float-to-integer conversions (`cvt.rzi`) saturate and turn NaN into 0 for
    /// 32- and 64-bit results, so a C cast is already saturating there; narrower results
    /// go through a clamped 32-bit conversion.
    fn saturating_cast(&self, to: &str, x: &str) -> Option<String> {
        let (lo, hi) = match to {
            "signed char" => (-128, 127),
            "short" => (-32768, 32767),
            "unsigned char" => (0, 255),
            "unsigned short" => (0, 65535),
            _ => return None,
        };
        // Through double, which holds every float and double exactly (no rounding before
        // the truncation).
        Some(format!("(({to})min({hi}, max({lo}, __double2int_rz((double)({x})))))"))
    }
    fn vector_operators(&self) -> bool {
        false
    }
    fn vector_access_aligned(&self) -> bool {
        true
    }
    fn array_decl(&self, qualifier: Option<&str>, ty: &str, name: &str, n: i64) -> String {
        match qualifier {
            Some(q) => format!("{q} __align__(16) {ty} {name}[{n}]"),
            None => format!("__align__(16) {ty} {name}[{n}]"),
        }
    }
    fn half_as_float(&self) -> bool {
        true
    }
    fn special_float(&self, value: f64, d: DType) -> Option<String> {
        if d.bits == 64 {
            let bits: u64 = if value.is_nan() { 0x7ff8_0000_0000_0000 } else { value.to_bits() };
            Some(format!("__longlong_as_double({}LL)", bits as i64))
        } else {
            let bits: u32 = if value.is_nan() { 0x7fc0_0000 } else { (value as f32).to_bits() };
            Some(format!("__uint_as_float({bits}U)"))
        }
    }
    fn narrow_indices(&self) -> bool {
        true
    }
    /// Every lane when the block is a whole number of warps, the block's lanes when it is
    /// less than one warp; else the lanes active here (all threads reach a warp reduction,
    /// so they are the warp's existing lanes).
    fn warp_mask(&self, block_threads: Option<i64>) -> Option<String> {
        Some(match block_threads {
            Some(n) if n % 32 == 0 => "0xffffffffU".to_string(),
            Some(n) if (1..32).contains(&n) => format!("{:#x}U", (1u64 << n) - 1),
            _ => "__activemask()".to_string(),
        })
    }
    fn int64_suffix(&self) -> &'static str {
        "LL"
    }
    fn warp_shuffle_xor(&self, mask: &str, value: &str, lane_mask: u32, width: u32) -> Option<String> {
        Some(format!("__shfl_xor_sync({mask}, {value}, {lane_mask}, {width})"))
    }
    fn check_helpers(&self) -> String {
        "__device__ __noinline__ void tvm_check_failed(unsigned site, long long v, long long n, int* f) {\n\
         \x20 if (atomicCAS(f, 0, (int)site + 1) == 0) {\n\
         \x20   ((long long*)f)[1] = v;\n\
         \x20   ((long long*)f)[2] = n;\n\
         \x20 }\n\
         }\n\
         __device__ __forceinline__ long long tvm_check_index(long long i, long long n, unsigned site, int* f) {\n\
         \x20 if ((unsigned long long)i < (unsigned long long)n) return i;\n\
         \x20 tvm_check_failed(site, i, n, f);\n\
         \x20 return 0;\n\
         }\n\
         __device__ __forceinline__ long long tvm_check_divisor(long long d, unsigned site, int* f) {\n\
         \x20 if (d != 0) return d;\n\
         \x20 tvm_check_failed(site, 0, 0, f);\n\
         \x20 return 1;\n\
         }\n"
        .to_string()
    }
}

/// Prints every kernel of a GPU-lowered function as one CUDA C program (kernels in
/// `f.kernels` order, each named `kernel.name`). See the module docs for the ABI.
pub fn emit_cuda(f: &PrimFunc) -> Result<String, CodegenError> {
    emit_cuda_spans(f).map(|(text, _)| text)
}

/// [`emit_cuda`] and the line range of every loop and store of the program.
pub fn emit_cuda_spans(f: &PrimFunc) -> Result<(String, Vec<LineSpan>), CodegenError> {
    let d = Cuda::for_target(&f.target);
    let mut p = CPrinter::new(&d);
    let mut kernels = Vec::new();
    for k in &f.kernels {
        kernels.push((p.kernel(k)?, p.kernel_spans().to_vec()));
    }
    let mut out = String::new();
    if p.uses.f16 || p.uses.bf16 {
        push_section(&mut out, HALF_HELPERS);
    }
    if p.uses.checks {
        push_section(&mut out, &d.check_helpers());
    }
    let spans = push_kernels(&mut out, kernels);
    Ok((out, spans))
}
