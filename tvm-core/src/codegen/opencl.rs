//! OpenCL C code generation: every kernel of a GPU-lowered [`PrimFunc`] as one program.
//!
//! ABI (what the OpenCL runtime relies on): kernel `k` of the function is
//! `__kernel void <k.name>(...)` with, in order, one `__global T* restrict` per
//! `k.buffer_args` (bool elements stored as `uchar`), then one scalar per
//! `k.scalar_args` (`i64` → `long`, `u64` → `ulong`, `i32` → `int`, `f32` → `float`,
//! `f64` → `double`, `bool` → `uchar` holding 0 or 1, and so on). The work-group shape
//! is `k.block`, the number of work-groups `k.grid` (so the global size is
//! `grid * block`); when `k.block` is constant the kernel carries
//! `reqd_work_group_size`, so it must be launched with exactly that local size.

use super::c_like::{push_kernels, push_section, CPrinter, Dialect};
use super::CodegenError;
use crate::dtype::{DType, ScalarKind};
use crate::tir::printer::LineSpan;
use crate::tir::{Intrinsic, PrimFunc, ThreadTag};

/// The OpenCL C dialect.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenCl;

impl Dialect for OpenCl {
    fn kernel_qualifier(&self) -> &'static str {
        "__kernel"
    }
    fn global_param(&self, elem: &str, name: &str) -> String {
        format!("__global {elem}* restrict {name}")
    }
    fn shared_qualifier(&self) -> &'static str {
        "__local"
    }
    fn barrier(&self) -> &'static str {
        "barrier(CLK_LOCAL_MEM_FENCE)"
    }
    fn thread_index(&self, tag: ThreadTag) -> String {
        let f = if tag.is_block() { "get_group_id" } else { "get_local_id" };
        format!("{f}({})", tag.dim())
    }
    fn work_group_size_attr(&self, b: [i64; 3]) -> Option<String> {
        if b.iter().all(|&x| x >= 1) {
            Some(format!("__attribute__((reqd_work_group_size({}, {}, {})))", b[0], b[1], b[2]))
        } else {
            None
        }
    }
    fn scalar_type(&self, d: DType) -> Option<String> {
        Some(
            match (d.kind, d.bits) {
                (ScalarKind::Bool, _) => "bool",
                (ScalarKind::Int, 8) => "char",
                (ScalarKind::Int, 16) => "short",
                (ScalarKind::Int, 32) => "int",
                (ScalarKind::Int, 64) => "long",
                (ScalarKind::UInt, 8) => "uchar",
                (ScalarKind::UInt, 16) => "ushort",
                (ScalarKind::UInt, 32) => "uint",
                (ScalarKind::UInt, 64) => "ulong",
                (ScalarKind::Float, 16) => "half",
                (ScalarKind::Float, 32) => "float",
                (ScalarKind::Float, 64) => "double",
                _ => return None,
            }
            .to_string(),
        )
    }
    fn vector_type(&self, elem: DType, lanes: u16) -> Option<String> {
        if !matches!(lanes, 2 | 4 | 8 | 16) || elem.is_bool() {
            return None;
        }
        let s = self.scalar_type(elem)?;
        Some(format!("{s}{lanes}"))
    }
    fn vector_load(&self, _ty: &str, lanes: u16, ptr: &str, base: &str) -> Option<String> {
        Some(format!("vload{lanes}(0, {ptr} + {base})"))
    }
    fn vector_store(&self, _ty: &str, lanes: u16, value: &str, ptr: &str, base: &str) -> Option<String> {
        Some(format!("vstore{lanes}({value}, 0, {ptr} + {base})"))
    }
    fn vector_make(&self, ty: &str, lanes: &[String]) -> String {
        format!("(({ty})({}))", lanes.join(", "))
    }
    fn vector_splat(&self, ty: &str, value: &str) -> String {
        format!("(({ty})({value}))")
    }
    fn vector_lane(&self, var: &str, i: u16) -> String {
        format!("{var}.s{:x}", i)
    }
    fn math_function(&self, f: Intrinsic, d: DType) -> String {
        match f {
            Intrinsic::Abs if d.is_float() => "fabs".into(),
            Intrinsic::Abs => "abs".into(),
            f => f.name().into(), // exp, log, sqrt, rsqrt, tanh, floor, ceil, erf, sin, cos, pow, fma
        }
    }
    fn min_max(&self, is_max: bool, d: DType) -> String {
        match (is_max, d.is_float()) {
            (true, true) => "fmax",
            (false, true) => "fmin",
            (true, false) => "max",
            (false, false) => "min",
        }
        .into()
    }
    fn saturating_cast(&self, to: &str, x: &str) -> Option<String> {
        Some(format!("convert_{to}_sat_rtz({x})"))
    }
    fn check_helpers(&self) -> String {
        "void tvm_check_failed(uint site, long v, long n, __global int* f) {\n\
         \x20 if (atomic_cmpxchg(f, 0, (int)site + 1) == 0) {\n\
         \x20   ((__global long*)f)[1] = v;\n\
         \x20   ((__global long*)f)[2] = n;\n\
         \x20 }\n\
         }\n\
         long tvm_check_index(long i, long n, uint site, __global int* f) {\n\
         \x20 if ((ulong)i < (ulong)n) return i;\n\
         \x20 tvm_check_failed(site, i, n, f);\n\
         \x20 return 0;\n\
         }\n\
         long tvm_check_divisor(long d, uint site, __global int* f) {\n\
         \x20 if (d != 0) return d;\n\
         \x20 tvm_check_failed(site, 0, 0, f);\n\
         \x20 return 1;\n\
         }\n"
        .to_string()
    }
}

/// Prints every kernel of a GPU-lowered function as one OpenCL C program (kernels in
/// `f.kernels` order, each named `kernel.name`). See the module docs for the ABI.
pub fn emit_opencl(f: &PrimFunc) -> Result<String, CodegenError> {
    emit_opencl_spans(f).map(|(text, _)| text)
}

/// [`emit_opencl`] and the line range of every loop and store of the program.
pub fn emit_opencl_spans(f: &PrimFunc) -> Result<(String, Vec<LineSpan>), CodegenError> {
    let d = OpenCl;
    let mut p = CPrinter::new(&d);
    let mut kernels = Vec::new();
    for k in &f.kernels {
        kernels.push((p.kernel(k)?, p.kernel_spans().to_vec()));
    }
    let mut out = String::new();
    let mut pre = String::new();
    if p.uses.f64 {
        pre.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    if p.uses.f16 {
        pre.push_str("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
    }
    if !pre.is_empty() {
        push_section(&mut out, &pre);
    }
    if p.uses.checks {
        push_section(&mut out, &d.check_helpers());
    }
    let spans = push_kernels(&mut out, kernels);
    Ok((out, spans))
}
