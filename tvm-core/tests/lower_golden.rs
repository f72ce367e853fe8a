//! Golden tests of the TIR that schedules lower to. Bless after an intended change with
//! `UPDATE_EXPECT=1 cargo test -p tvm-rs-core --test lower_golden`, and read the diff.

mod common;
use common::*;
use expect_test::{expect, Expect};

fn check(src: &str, variant: Variant, want: Expect) {
    let f = lower(src, variant);
    want.assert_eq(&tvm_core::tir::printer::print_func(&f));
}

const VECTOR_ADD: &str = include_str!("corpus/vector_add_golden.rs");

const VECTOR_ADD_1024: &str = include_str!("corpus/vector_add_1024.rs");

#[test]
fn vector_add_cpu_symbolic_tail() {
    check(
        VECTOR_ADD,
        Variant::Cpu,
        expect![[r#"
        @func cpu vector_add(a: f32[n] global, b: f32[n] global, c: f32[n] global out)
          for o in parallel(0, (n + 15) / 16):
            if o * 16 < n - 15:
              c[ramp(o * 16, 1, 16)] = a[ramp(o * 16, 1, 16)] + b[ramp(o * 16, 1, 16)]
            else:
              for v in serial(0, 16):
                if o * 16 + v < n:
                  c[o * 16 + v] = a[o * 16 + v] + b[o * 16 + v]
    "#]],
    );
}

#[test]
fn vector_add_cpu_constant_shape_vectorized_and_unrolled() {
    check(
        VECTOR_ADD_1024,
        Variant::Cpu,
        expect![[r#"
        @func cpu vector_add(a: f32[1024] global, b: f32[1024] global, c: f32[1024] global out)
          for oo in parallel(0, 16):
            c[ramp(oo * 64, 1, 16)] = a[ramp(oo * 64, 1, 16)] + b[ramp(oo * 64, 1, 16)]
            c[ramp(oo * 64 + 16, 1, 16)] = a[ramp(oo * 64 + 16, 1, 16)] + b[ramp(oo * 64 + 16, 1, 16)]
            c[ramp(oo * 64 + 32, 1, 16)] = a[ramp(oo * 64 + 32, 1, 16)] + b[ramp(oo * 64 + 32, 1, 16)]
            c[ramp(oo * 64 + 48, 1, 16)] = a[ramp(oo * 64 + 48, 1, 16)] + b[ramp(oo * 64 + 48, 1, 16)]
    "#]],
    );
}

#[test]
fn vector_add_cuda() {
    check(
        VECTOR_ADD,
        Variant::Gpu,
        expect![[r#"
        @func cuda vector_add(a: f32[n] global, b: f32[n] global, c: f32[n] global out)
          launch vector_add_kernel0<<<grid((n + 255) / 256, 1, 1), block(256, 1, 1)>>>(c, a, b, n)

        @kernel vector_add_kernel0(c, a, b, n)
          blockIdx.x: blockIdx_x
          threadIdx.x: threadIdx_x
          if blockIdx_x * 256 + threadIdx_x < n:
            c[blockIdx_x * 256 + threadIdx_x] = a[blockIdx_x * 256 + threadIdx_x] + b[blockIdx_x * 256 + threadIdx_x]
    "#]],
    );
}

const MATMUL: &str = include_str!("corpus/matmul_64.rs");

#[test]
fn matmul_cpu_cache_write_tiled() {
    check(
        MATMUL,
        Variant::Cpu,
        expect![[r#"
            @func cpu matmul(a: f32[64, 64] global, b: f32[64, 64] global, c: f32[64, 64] global out)
              for io in parallel(0, 8):
                for jo in serial(0, 8):
                  alloc c_local: f32[64] local
                  c_local[ramp(0, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(8, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(16, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(24, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(32, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(40, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(48, 1, 8)] = broadcast(0.0, 8)
                  c_local[ramp(56, 1, 8)] = broadcast(0.0, 8)
                  for ko in serial(0, 16):
                    let c_local_v = c_local[ramp(0, 1, 8)] + broadcast(a[io * 512 + ko * 4], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_1 = c_local_v + broadcast(a[io * 512 + ko * 4 + 1], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_2 = c_local_v_1 + broadcast(a[io * 512 + ko * 4 + 2], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(0, 1, 8)] = c_local_v_2 + broadcast(a[io * 512 + ko * 4 + 3], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_3 = c_local[ramp(8, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 64], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_4 = c_local_v_3 + broadcast(a[io * 512 + ko * 4 + 65], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_5 = c_local_v_4 + broadcast(a[io * 512 + ko * 4 + 66], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(8, 1, 8)] = c_local_v_5 + broadcast(a[io * 512 + ko * 4 + 67], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_6 = c_local[ramp(16, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 128], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_7 = c_local_v_6 + broadcast(a[io * 512 + ko * 4 + 129], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_8 = c_local_v_7 + broadcast(a[io * 512 + ko * 4 + 130], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(16, 1, 8)] = c_local_v_8 + broadcast(a[io * 512 + ko * 4 + 131], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_9 = c_local[ramp(24, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 192], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_10 = c_local_v_9 + broadcast(a[io * 512 + ko * 4 + 193], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_11 = c_local_v_10 + broadcast(a[io * 512 + ko * 4 + 194], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(24, 1, 8)] = c_local_v_11 + broadcast(a[io * 512 + ko * 4 + 195], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_12 = c_local[ramp(32, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 256], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_13 = c_local_v_12 + broadcast(a[io * 512 + ko * 4 + 257], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_14 = c_local_v_13 + broadcast(a[io * 512 + ko * 4 + 258], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(32, 1, 8)] = c_local_v_14 + broadcast(a[io * 512 + ko * 4 + 259], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_15 = c_local[ramp(40, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 320], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_16 = c_local_v_15 + broadcast(a[io * 512 + ko * 4 + 321], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_17 = c_local_v_16 + broadcast(a[io * 512 + ko * 4 + 322], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(40, 1, 8)] = c_local_v_17 + broadcast(a[io * 512 + ko * 4 + 323], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_18 = c_local[ramp(48, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 384], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]:
                      let c_local_v_19 = c_local_v_18 + broadcast(a[io * 512 + ko * 4 + 385], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                      let c_local_v_20 = c_local_v_19 + broadcast(a[io * 512 + ko * 4 + 386], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                      c_local[ramp(48, 1, 8)] = c_local_v_20 + broadcast(a[io * 512 + ko * 4 + 387], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                    let c_local_v_21 = c_local[ramp(56, 1, 8)] + broadcast(a[io * 512 + ko * 4 + 448], 8) * b[ramp(jo * 8 + ko * 256, 1, 8)]
                    let c_local_v_22 = c_local_v_21 + broadcast(a[io * 512 + ko * 4 + 449], 8) * b[ramp(jo * 8 + ko * 256 + 64, 1, 8)]
                    let c_local_v_23 = c_local_v_22 + broadcast(a[io * 512 + ko * 4 + 450], 8) * b[ramp(jo * 8 + ko * 256 + 128, 1, 8)]
                    c_local[ramp(56, 1, 8)] = c_local_v_23 + broadcast(a[io * 512 + ko * 4 + 451], 8) * b[ramp(jo * 8 + ko * 256 + 192, 1, 8)]
                  for ii in serial(0, 8):
                    c[ramp(io * 512 + jo * 8 + ii * 64, 1, 8)] = c_local[ramp(ii * 8, 1, 8)]
        "#]],
    );
}

#[test]
fn matmul_cuda_shared_tiles_and_barriers() {
    check(
        MATMUL,
        Variant::Gpu,
        expect![[r#"
        @func cuda matmul(a: f32[64, 64] global, b: f32[64, 64] global, c: f32[64, 64] global out)
          launch matmul_kernel0<<<grid(4, 4, 1), block(16, 16, 1)>>>(c, a, b)

        @kernel matmul_kernel0(c, a, b)
          blockIdx.x: blockIdx_x
          blockIdx.y: blockIdx_y
          threadIdx.x: threadIdx_x
          threadIdx.y: threadIdx_y
          alloc a_shared: f32[256] shared
          alloc b_shared: f32[256] shared
          c[blockIdx_x * 16 + blockIdx_y * 1024 + threadIdx_x + threadIdx_y * 64] = 0.0
          for ko in serial(0, 4):
            a_shared[threadIdx_x + threadIdx_y * 16] = a[ko * 16 + blockIdx_y * 1024 + threadIdx_x + threadIdx_y * 64]
            b_shared[threadIdx_x + threadIdx_y * 16] = b[ko * 1024 + blockIdx_x * 16 + threadIdx_x + threadIdx_y * 64]
            barrier()
            for ki in serial(0, 16):
              c[blockIdx_x * 16 + blockIdx_y * 1024 + threadIdx_x + threadIdx_y * 64] = c[blockIdx_x * 16 + blockIdx_y * 1024 + threadIdx_x + threadIdx_y * 64] + a_shared[ki + threadIdx_y * 16] * b_shared[ki * 16 + threadIdx_x]
            barrier()
    "#]],
    );
}

const ROW_SUM: &str = include_str!("corpus/row_sum_golden.rs");

#[test]
fn row_sum_cuda_cross_thread_reduction() {
    check(
        ROW_SUM,
        Variant::Gpu,
        expect![[r#"
            @func cuda row_sum(x: f32[M, 100] global, r: f32[M] global out)
              launch row_sum_kernel0<<<grid(M, 1, 1), block(32, 1, 1)>>>(x, r)

            @kernel row_sum_kernel0(x, r)
              blockIdx.x: blockIdx_x
              threadIdx.x: threadIdx_x
              alloc r_acc: f32[1] local
              r_acc[0] = 0.0
              for jo in serial(0, 4):
                if jo * 32 + threadIdx_x < 100:
                  r_acc[0] = r_acc[0] + x[jo * 32 + blockIdx_x * 100 + threadIdx_x]
              warp_reduce(sum, r_acc, width=32)
              if threadIdx_x == 0:
                r[blockIdx_x] = r_acc[0]
        "#]],
    );
}

const SOFTMAX: &str = include_str!("corpus/softmax_default.rs");

#[test]
fn softmax_default_cpu() {
    check(
        SOFTMAX,
        Variant::DefaultCpu,
        expect![[r#"
            @func cpu softmax(x: f32[M, N] global, y: f32[M, N] global out)
              alloc m: f32[M] global
              for i in parallel(0, M):
                alloc m_rf: f32[16] global
                m_rf[ramp(0, 1, 16)] = broadcast(-inf, 16)
                for j_o in serial(0, N / 16):
                  m_rf[ramp(0, 1, 16)] = max(m_rf[ramp(0, 1, 16)], x[ramp(N * i + j_o * 16, 1, 16)])
                for j_o in serial(N / 16, (N + 15) / 16 - N / 16):
                  m_rf[ramp(0, 1, 16)] = max(m_rf[ramp(0, 1, 16)], select(ramp(j_o * 16, 1, 16) < broadcast(N, 16), x[ramp(N * i + j_o * 16, 1, 16)], broadcast(-inf, 16)))
                m[i] = -inf
                for j_i in serial(0, 16):
                  m[i] = max(m[i], m_rf[j_i])
              alloc s: f32[M] global
              for i_1 in parallel(0, M):
                alloc s_rf: f32[16] global
                s_rf[ramp(0, 1, 16)] = broadcast(0.0, 16)
                for j_o_1 in serial(0, N / 16):
                  s_rf[ramp(0, 1, 16)] = s_rf[ramp(0, 1, 16)] + exp(x[ramp(N * i_1 + j_o_1 * 16, 1, 16)] - broadcast(m[i_1], 16))
                for j_o_1 in serial(N / 16, (N + 15) / 16 - N / 16):
                  for j_i_1 in serial(0, 16):
                    s_rf[j_i_1] = s_rf[j_i_1] + select(j_i_1 + j_o_1 * 16 < N, exp(x[N * i_1 + j_i_1 + j_o_1 * 16] - m[i_1]), 0.0)
                s[i_1] = 0.0
                alloc s_rf_tree: f32[16] global
                s_rf_tree[ramp(0, 1, 16)] = s_rf[ramp(0, 1, 16)]
                s_rf_tree[ramp(0, 1, 8)] = s_rf_tree[ramp(0, 1, 8)] + s_rf_tree[ramp(8, 1, 8)]
                s_rf_tree[ramp(0, 1, 4)] = s_rf_tree[ramp(0, 1, 4)] + s_rf_tree[ramp(4, 1, 4)]
                s_rf_tree[ramp(0, 1, 2)] = s_rf_tree[ramp(0, 1, 2)] + s_rf_tree[ramp(2, 1, 2)]
                let s_rf_tree_v = s_rf_tree[0] + s_rf_tree[1]
                s_rf_tree[0] = s_rf_tree_v
                s[i_1] = s[i_1] + s_rf_tree_v
              if N >= 16:
                for i_2 in parallel(0, M):
                  for j_o_2 in serial(0, N / 16):
                    y[ramp(N * i_2 + j_o_2 * 16, 1, 16)] = exp(x[ramp(N * i_2 + j_o_2 * 16, 1, 16)] - broadcast(m[i_2], 16)) / broadcast(s[i_2], 16)
                  for j_o_2 in serial(N / 16, (N + 15) / 16 - N / 16):
                    y[ramp(N + N * i_2 - 16, 1, 16)] = exp(x[ramp(N + N * i_2 - 16, 1, 16)] - broadcast(m[i_2], 16)) / broadcast(s[i_2], 16)
              else:
                for i_2 in parallel(0, M):
                  for j_o_2 in serial(0, (N + 15) / 16):
                    for j_i_2 in serial(0, 16):
                      if j_o_2 * 16 + j_i_2 < N:
                        y[N * i_2 + j_o_2 * 16 + j_i_2] = exp(x[N * i_2 + j_o_2 * 16 + j_i_2] - m[i_2]) / s[i_2]
        "#]],
    );
}

#[test]
fn softmax_default_cuda() {
    check(
        SOFTMAX,
        Variant::DefaultGpu,
        expect![[r#"
        @func cuda softmax(x: f32[M, N] global, y: f32[M, N] global out)
          alloc m: f32[M] global
          launch softmax_kernel0<<<grid((M + 255) / 256, 1, 1), block(256, 1, 1)>>>(m, x, M, N)
          alloc s: f32[M] global
          launch softmax_kernel1<<<grid((M + 255) / 256, 1, 1), block(256, 1, 1)>>>(s, x, m, M, N)
          launch softmax_kernel2<<<grid((M * N + 255) / 256, 1, 1), block(256, 1, 1)>>>(y, x, m, s, N, M)

        @kernel softmax_kernel0(m, x, M, N)
          blockIdx.x: blockIdx_x
          threadIdx.x: threadIdx_x
          if blockIdx_x * 256 + threadIdx_x < M:
            m[blockIdx_x * 256 + threadIdx_x] = -inf
          for j in serial(0, N):
            if blockIdx_x * 256 + threadIdx_x < M:
              m[blockIdx_x * 256 + threadIdx_x] = max(m[blockIdx_x * 256 + threadIdx_x], x[N * blockIdx_x * 256 + N * threadIdx_x + j])

        @kernel softmax_kernel1(s, x, m, M, N)
          blockIdx.x: blockIdx_x_1
          threadIdx.x: threadIdx_x_1
          if blockIdx_x_1 * 256 + threadIdx_x_1 < M:
            s[blockIdx_x_1 * 256 + threadIdx_x_1] = 0.0
          for j_1 in serial(0, N):
            if blockIdx_x_1 * 256 + threadIdx_x_1 < M:
              s[blockIdx_x_1 * 256 + threadIdx_x_1] = s[blockIdx_x_1 * 256 + threadIdx_x_1] + exp(x[N * blockIdx_x_1 * 256 + N * threadIdx_x_1 + j_1] - m[blockIdx_x_1 * 256 + threadIdx_x_1])

        @kernel softmax_kernel2(y, x, m, s, N, M)
          blockIdx.x: blockIdx_x_2
          threadIdx.x: threadIdx_x_2
          if (blockIdx_x_2 * 256 + threadIdx_x_2) / N < M && blockIdx_x_2 * 256 + threadIdx_x_2 < M * N:
            y[N * ((blockIdx_x_2 * 256 + threadIdx_x_2) / N) + (blockIdx_x_2 * 256 + threadIdx_x_2) % N] = exp(x[N * ((blockIdx_x_2 * 256 + threadIdx_x_2) / N) + (blockIdx_x_2 * 256 + threadIdx_x_2) % N] - m[(blockIdx_x_2 * 256 + threadIdx_x_2) / N]) / s[(blockIdx_x_2 * 256 + threadIdx_x_2) / N]
    "#]],
    );
}
