//! OpenCL C code generation: every kernel of the registry (`support/registry.rs`: the
//! corpus and the example kernels), with its GPU schedule and with the default one,
//! lowered for `Target::opencl()` and printed. Structural checks for all,
//! goldens for two (bless with `UPDATE_EXPECT=1`), and, where an OpenCL device exists
//! (PoCL; required under `TVM_REQUIRE_TOOLS=1`), a build of every program by the OpenCL
//! compiler on every device, warnings as errors.

mod common;

use expect_test::expect;
use tvm_core::codegen::opencl::emit_opencl;
use tvm_core::tir::{PrimFunc, Scope, Stmt};
use tvm_core::Target;

use common::lowered::{self, has, kernel_in, lower_for};
use common::registry::KERNELS;

/// Lowers `src` for OpenCL: with its own (or borrowed) GPU schedule, or the default.
fn lower_opencl(src: &str, default: bool) -> PrimFunc {
    lower_for(src, &Target::opencl(), default)
}

fn emit(src: &str, default: bool) -> String {
    let f = lower_opencl(src, default);
    emit_opencl(&f).unwrap_or_else(|e| panic!("codegen failed: {e}\n{}", tvm_core::tir::printer::print_func(&f)))
}

/// Every program of the registry: (label, lowered function, OpenCL text).
fn all_programs() -> Vec<(String, PrimFunc, String)> {
    let mut out = Vec::new();
    for k in KERNELS {
        let (name, kernel) = (k.label(), kernel_in(k.text, k.function, k.instance));
        for default in [false, true] {
            let f = lowered::lower_kernel(&kernel, &Target::opencl(), default);
            let text = emit_opencl(&f)
                .unwrap_or_else(|e| panic!("{name}: codegen failed: {e}\n{}", tvm_core::tir::printer::print_func(&f)));
            let label = format!("{name}{}", if default { " (default schedule)" } else { "" });
            out.push((label, f, text));
        }
    }
    out
}

#[test]
fn every_program_structure() {
    for (label, f, text) in all_programs() {
        assert!(!f.kernels.is_empty(), "{label}: no kernels");
        for k in &f.kernels {
            assert!(text.contains(&format!("void {}(", k.name)), "{label}: kernel `{}` missing:\n{text}", k.name);
            let barrier = has(&k.body, &|s| matches!(s, Stmt::Barrier));
            let shared =
                has(&k.body, &|s| matches!(s, Stmt::Allocate { buffer, .. } if buffer.scope() == Scope::Shared));
            if barrier {
                assert!(text.contains("barrier(CLK_LOCAL_MEM_FENCE);"), "{label}: barrier missing:\n{text}");
            }
            if shared {
                assert!(text.contains("__local "), "{label}: __local missing:\n{text}");
            }
        }
        assert_eq!(text.matches("__kernel").count(), f.kernels.len(), "{label}:\n{text}");
        assert_eq!(text.contains("double"), text.contains("cl_khr_fp64"), "{label}: fp64 pragma:\n{text}");
        assert_eq!(text.matches('{').count(), text.matches('}').count(), "{label}: braces:\n{text}");
    }
}

#[test]
fn golden_vector_add() {
    let text = emit(include_str!("corpus/vector_add_golden.rs"), false);
    expect![[r#"
        __kernel __attribute__((reqd_work_group_size(256, 1, 1))) void vector_add_kernel0(__global float* restrict c, __global float* restrict a, __global float* restrict b, long n) {
          long blockIdx_x = (long)(get_group_id(0));
          long threadIdx_x = (long)(get_local_id(0));
          if (((blockIdx_x * 256L) + threadIdx_x) < n) {
            c[((blockIdx_x * 256L) + threadIdx_x)] = (a[((blockIdx_x * 256L) + threadIdx_x)] + b[((blockIdx_x * 256L) + threadIdx_x)]);
          }
        }
    "#]].assert_eq(&text);
}

#[test]
fn golden_row_sum_cross_thread_reduction() {
    let text = emit(include_str!("corpus/row_sum_golden.rs"), false);
    expect![[r#"
        __kernel __attribute__((reqd_work_group_size(32, 1, 1))) void row_sum_kernel0(__global float* restrict x, __global float* restrict r) {
          long blockIdx_x = (long)(get_group_id(0));
          long threadIdx_x = (long)(get_local_id(0));
          __local float r_red[32];
          float r_acc[1];
          r_acc[0L] = 0.0f;
          for (long jo = 0L; jo < 4L; ++jo) {
            if (((jo * 32L) + threadIdx_x) < 100L) {
              r_acc[0L] = (r_acc[0L] + x[(((jo * 32L) + (blockIdx_x * 100L)) + threadIdx_x)]);
            }
          }
          r_red[threadIdx_x] = r_acc[0L];
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x < 16L) {
            r_red[threadIdx_x] = (r_red[threadIdx_x] + r_red[(threadIdx_x + 16L)]);
          }
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x < 8L) {
            r_red[threadIdx_x] = (r_red[threadIdx_x] + r_red[(threadIdx_x + 8L)]);
          }
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x < 4L) {
            r_red[threadIdx_x] = (r_red[threadIdx_x] + r_red[(threadIdx_x + 4L)]);
          }
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x < 2L) {
            r_red[threadIdx_x] = (r_red[threadIdx_x] + r_red[(threadIdx_x + 2L)]);
          }
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x < 1L) {
            r_red[threadIdx_x] = (r_red[threadIdx_x] + r_red[(threadIdx_x + 1L)]);
          }
          barrier(CLK_LOCAL_MEM_FENCE);
          if (threadIdx_x == 0L) {
            r[blockIdx_x] = r_red[0L];
          }
          barrier(CLK_LOCAL_MEM_FENCE);
        }
    "#]].assert_eq(&text);
}

#[test]
fn golden_matmul_shared() {
    let text = emit(include_str!("corpus/matmul_64.rs"), false);
    expect![[r#"
        __kernel __attribute__((reqd_work_group_size(16, 16, 1))) void matmul_kernel0(__global float* restrict c, __global float* restrict a, __global float* restrict b) {
          long blockIdx_x = (long)(get_group_id(0));
          long blockIdx_y = (long)(get_group_id(1));
          long threadIdx_x = (long)(get_local_id(0));
          long threadIdx_y = (long)(get_local_id(1));
          __local float a_shared[256];
          __local float b_shared[256];
          c[((((blockIdx_x * 16L) + (blockIdx_y * 1024L)) + threadIdx_x) + (threadIdx_y * 64L))] = 0.0f;
          for (long ko = 0L; ko < 4L; ++ko) {
            a_shared[(threadIdx_x + (threadIdx_y * 16L))] = a[((((ko * 16L) + (blockIdx_y * 1024L)) + threadIdx_x) + (threadIdx_y * 64L))];
            b_shared[(threadIdx_x + (threadIdx_y * 16L))] = b[((((ko * 1024L) + (blockIdx_x * 16L)) + threadIdx_x) + (threadIdx_y * 64L))];
            barrier(CLK_LOCAL_MEM_FENCE);
            for (long ki = 0L; ki < 16L; ++ki) {
              c[((((blockIdx_x * 16L) + (blockIdx_y * 1024L)) + threadIdx_x) + (threadIdx_y * 64L))] = (c[((((blockIdx_x * 16L) + (blockIdx_y * 1024L)) + threadIdx_x) + (threadIdx_y * 64L))] + (a_shared[(ki + (threadIdx_y * 16L))] * b_shared[((ki * 16L) + threadIdx_x)]));
            }
            barrier(CLK_LOCAL_MEM_FENCE);
          }
        }
    "#]].assert_eq(&text);
}

/// Builds `text` on every OpenCL device with warnings as errors; `Err` with the log and
/// the source for each device where it does not build.
fn build_werror(label: &str, text: &str) -> Result<(), String> {
    let rt = tvm_runtime::gpu::opencl::OpenClRuntime::global();
    let failures: Vec<String> = common::opencl::devices()
        .filter_map(|dev| rt.build_uncached(dev, text, "-Werror").err().map(|e| format!("opencl:{dev}: {e}")))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{label}: build failed:\n{}\n--- source ---\n{text}", failures.join("\n")))
    }
}

/// Builds every emitted program with the installed OpenCL compiler (PoCL here), warnings
/// as errors. Skips when there is no device, unless `TVM_REQUIRE_TOOLS=1`.
#[test]
fn every_program_builds_with_opencl_compiler() {
    if !common::opencl::device_or_skip("every_program_builds_with_opencl_compiler") {
        return;
    }
    let failures: Vec<String> =
        all_programs().into_iter().filter_map(|(label, _, text)| build_werror(&label, &text).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Vectors (contiguous → vload/vstore, strided → lane by lane) and f64, built by hand so
/// that each form is pinned here whatever the registered schedules do.
fn vector_kernel() -> PrimFunc {
    use tvm_core::dtype::DType;
    use tvm_core::tir::{Buffer, Expr, Kernel, ThreadTag, Var};
    let a = Buffer::new("a", DType::F64, Scope::Global);
    let c = Buffer::new("c", DType::F64, Scope::Global);
    let s = Var::new("s", DType::F64);
    let t = Var::index("threadIdx_x");
    let ramp =
        |base: Expr, stride: i64| Expr::Ramp { base: Box::new(base), stride: Box::new(Expr::int(stride)), lanes: 4 };
    let base = Expr::var(&t) * 4;
    let body = Stmt::seq(vec![
        Stmt::store(
            &c,
            vec![ramp(base.clone(), 1)],
            Expr::load(&a, vec![ramp(base.clone(), 1)]) + Expr::Broadcast { value: Box::new(Expr::var(&s)), lanes: 4 },
        ),
        Stmt::store(&c, vec![ramp(base.clone() + 1024, 2)], Expr::load(&a, vec![ramp(base, 2)])),
    ]);
    let k = Kernel {
        name: "vec_kernel0".into(),
        thread_vars: vec![(ThreadTag::ThreadX, t)],
        grid: [Expr::int(1), Expr::int(1), Expr::int(1)],
        block: [Expr::int(64), Expr::int(1), Expr::int(1)],
        buffer_args: vec![c, a],
        scalar_args: vec![s],
        body,
    };
    PrimFunc {
        name: "vec".into(),
        target: Target::opencl(),
        params: vec![],
        checks: vec![],
        body: Stmt::Launch { kernel: 0 },
        kernels: vec![k],
    }
}

#[test]
fn golden_vectors_and_f64() {
    let text = emit_opencl(&vector_kernel()).unwrap();
    expect![[r#"
        #pragma OPENCL EXTENSION cl_khr_fp64 : enable

        __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void vec_kernel0(__global double* restrict c, __global double* restrict a, double s) {
          long threadIdx_x = (long)(get_local_id(0));
          vstore4((vload4(0, a + (threadIdx_x * 4L)) + ((double4)(s))), 0, c + (threadIdx_x * 4L));
          {
            double c_lane0 = a[(threadIdx_x * 4L)];
            double c_lane1 = a[((threadIdx_x * 4L) + 2L)];
            double c_lane2 = a[((threadIdx_x * 4L) + 4L)];
            double c_lane3 = a[((threadIdx_x * 4L) + 6L)];
            c[((threadIdx_x * 4L) + 1024L)] = c_lane0;
            c[(((threadIdx_x * 4L) + 1024L) + 2L)] = c_lane1;
            c[(((threadIdx_x * 4L) + 1024L) + 4L)] = c_lane2;
            c[(((threadIdx_x * 4L) + 1024L) + 6L)] = c_lane3;
          }
        }
    "#]].assert_eq(&text);
    if common::opencl::device_or_skip("golden_vectors_and_f64 (OpenCL build)") {
        if let Err(e) = build_werror("vec", &text) {
            panic!("{e}");
        }
    }
}
