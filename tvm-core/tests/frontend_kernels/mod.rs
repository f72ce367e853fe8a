//! The kernels the frontend tests share: docs/LANGUAGE.md §1–2 and a few more.

#![allow(dead_code)]

pub const VECTOR_ADD: &str = r#"
    /// c[i] = a[i] + b[i]
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.parallel(o);
        c.vectorize(v);
    }
"#;

pub const MATMUL: &str = r#"
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
"#;

pub const DENSE_BIAS_RELU: &str = r#"
    /// out = relu(x · wᵀ + bias): the epilogue is fused by the default schedules
    pub fn dense_bias_relu(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
        let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }
"#;

pub const SOFTMAX: &str = r#"
    pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..N);
        let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
        y[i, j] = e[i, j] / s[i];
    }
"#;

pub const SCALE: &str = r#"
    pub fn scale(x: f32[n], alpha: f32) -> y: f32[n] {
        y[i] = alpha * x[i];
    }
"#;

pub const CONV2D: &str = r#"
    /// NCHW convolution, 3x3 filter, padding 1, stride 1.
    pub fn conv2d(data: f32[N, C, H, W], w: f32[F, C, 3, 3]) -> out: f32[N, F, H, W] {
        out[n, f, y, x] = sum(
            if y + r >= 1 && y + r <= H && x + s >= 1 && x + s <= W {
                data[n, c, y + r - 1, x + s - 1]
            } else {
                0.0
            } * w[f, c, r, s]
            for c in 0..C, r in 0..3, s in 0..3
        );
    }
"#;

pub const MAXPOOL: &str = r#"
    /// 2x2 max-pool with stride 2; the output size is given.
    pub fn maxpool(x: f32[N, C, H, W], OH: usize, OW: usize) -> y: f32[N, C, OH, OW] {
        y[n, c, i, j] = max(
            if i * 2 + di < H && j * 2 + dj < W { x[n, c, i * 2 + di, j * 2 + dj] } else { f32::NEG_INFINITY }
            for di in 0..2, dj in 0..2
        );
    }
"#;

pub const TRANSPOSE: &str = r#"
    pub fn transpose(a: f64[M, N]) -> b: f64[N, M] {
        b[j, i] = a[i, j];
    }
"#;

pub const SUM2: &str = r#"
    pub fn sum_rows_cols(a: f32[B, M, N]) -> s: f32[B] {
        s[b] = sum(a[b, i, j] for i in 0..M, j in 0..N);
    }
"#;

pub const MEAN_VAR: &str = r#"
    /// Two outputs, an integer scalar and casts.
    fn mean_var(x: f32[M, N], shift: i32) -> (mean: f32[M], var: f32[M]) {
        let s[i]: f32[M] = sum(x[i, j] for j in 0..N);
        mean[i] = s[i] / N as f32 + (shift as f32) * 0.0;
        let d[i, j]: f32[M, N] = x[i, j] - mean[i];
        let q[i]: f32[M] = sum(d[i, j] * d[i, j] for j in 0..N);
        var[i] = q[i] / (N - 1) as f32;
    }
"#;

pub const MATMUL_TILED: &str = r#"
    pub fn matmul_tiled(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024);
    }

    schedule!("cuda -arch=sm_90") {
        let (bi, bj, ii, jj) = c.tile(c.i, c.j, 16, 16);
        let (ko, ki) = c.split(c.k, 8);
        c.reorder(ko, ii, jj);
        c.bind(bi, block.y);
        c.bind(bj, block.x);
        c.bind(ii, thread.y);
        c.bind(jj, thread.x);
        let a_s = a.cache_read(shared, [c]);
        let b_s = b.cache_read(shared, [c]);
        a_s.compute_at(c, ko);
        b_s.compute_at(c, ko);
        c.unroll(ki);
    }

    schedule!("llvm -mcpu=skylake-avx512") {
        let (io, jo, ii, ji) = c.tile(c.i, c.j, 32, 32);
        let [k] = c.reduce_axes();
        let (ko, ki) = c.split(k, 4);
        c.reorder(io, jo, ko, ii, ki, ji);
        c.parallel(io);
        c.vectorize(ji);
    }
"#;

/// Most of the primitives of docs/LANGUAGE.md §3 on one small kernel.
pub const SCHEDULED_ROW_SUM: &str = "fn f(x: f32[M, N]) -> y: f32[M] {
            let e[i, j]: f32[M, N] = exp(x[i, j]);
            y[i] = sum(e[i, j] for j in 0..N);
        }
        schedule!(cuda) {
            let (ko, ki) = y.split_nparts(y.j, 32);
            let rf = y.rfactor(ki);
            let [r, yi] = rf.axes();
            rf.bind(r, thread.x);
            rf.bind(yi, block.x);
            let [kk] = y.reduce_axes();
            let [i] = y.axes();
            y.bind(i, block.x);
            y.bind(kk, thread.x);
            e.compute_inline();
        }
        schedule!(cpu) {
            let t = y.cache_write(local);
            let [ti] = t.axes();
            let (a, b) = t.split(ti, 4);
            let f = t.fuse(a, b);
            t.parallel(f);
            let [w] = t.reduce_axes();
            t.unroll(w);
            e.compute_at(t, f);
        }";

/// Every kernel of this file.
pub const ALL: &[&str] = &[
    VECTOR_ADD,
    MATMUL,
    DENSE_BIAS_RELU,
    SOFTMAX,
    SCALE,
    CONV2D,
    MAXPOOL,
    TRANSPOSE,
    SUM2,
    MEAN_VAR,
    MATMUL_TILED,
    SCHEDULED_ROW_SUM,
];
