//! The kernels of the peer comparison's "no schedule" table: what a user writes without a
//! `schedule!` block, so every stage runs the schedule the auto-scheduler derives. The
//! peers are what a user would call instead (numpy/OpenBLAS, ONNX Runtime), in
//! `benches/peers/peers.py` under the same ids (`auto_*`).

use tvm::compute;

compute! {
    /// C = A·B, 1024³.
    pub fn auto_matmul(a: f32[1024, 1024], b: f32[1024, 1024]) -> c: f32[1024, 1024] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1024);
    }
}

compute! {
    /// C = A·B, 1000³ (no power of two: the tiles have tails).
    pub fn auto_matmul_1000(a: f32[1000, 1000], b: f32[1000, 1000]) -> c: f32[1000, 1000] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..1000);
    }
}

compute! {
    /// C = A·B at a small odd size, 127³.
    pub fn auto_matmul_127(a: f32[127, 127], b: f32[127, 127]) -> c: f32[127, 127] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..127);
    }
}

compute! {
    /// 16 matrix products of 256³.
    pub fn auto_bmm(a: f32[16, 256, 256], b: f32[16, 256, 256]) -> c: f32[16, 256, 256] {
        c[q, i, j] = sum(a[q, i, k] * b[q, k, j] for k in 0..256);
    }
}

compute! {
    /// 3x3 convolution, 64 -> 64 channels, 56 x 56, zero padding.
    pub fn auto_conv2d(data: f32[1, 64, 56, 56], w: f32[64, 64, 3, 3]) -> out: f32[1, 64, 56, 56] {
        let pad[n, c, y, x]: f32[1, 64, 58, 58] =
            if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
        out[n, f, y, x] = sum(pad[n, c, y + r, x + s] * w[f, c, r, s] for c in 0..64, r in 0..3, s in 0..3);
    }
}

compute! {
    /// Depthwise 3x3 convolution, 128 channels, 56 x 56, zero padding.
    pub fn auto_dwconv(data: f32[1, 128, 56, 56], w: f32[128, 3, 3]) -> out: f32[1, 128, 56, 56] {
        let pad[n, c, y, x]: f32[1, 128, 58, 58] =
            if y >= 1 && y <= 56 && x >= 1 && x <= 56 { data[n, c, y - 1, x - 1] } else { 0.0 };
        out[n, c, y, x] = sum(pad[n, c, y + r, x + s] * w[c, r, s] for r in 0..3, s in 0..3);
    }
}

compute! {
    /// Row softmax.
    pub fn auto_softmax(x: f32[M, N]) -> y: f32[M, N] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..N);
        let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
        y[i, j] = e[i, j] / s[i];
    }
}

compute! {
    /// Row layer norm.
    pub fn auto_layernorm(x: f32[M, N], gamma: f32[N], beta: f32[N]) -> y: f32[M, N] {
        let s[i]: f32[M] = sum(x[i, j] for j in 0..N);
        let q[i]: f32[M] = sum((x[i, j] - s[i] / N as f32) * (x[i, j] - s[i] / N as f32) for j in 0..N);
        y[i, j] = (x[i, j] - s[i] / N as f32) * rsqrt(q[i] / N as f32 + 0.00001) * gamma[j] + beta[j];
    }
}

compute! {
    /// The sum of each row.
    pub fn auto_rowsum(x: f32[M, N]) -> y: f32[M] {
        y[i] = sum(x[i, j] for j in 0..N);
    }
}

compute! {
    /// The sum of each column.
    pub fn auto_colsum(x: f32[M, N]) -> y: f32[N] {
        y[j] = sum(x[i, j] for i in 0..M);
    }
}

compute! {
    /// A transposed copy.
    pub fn auto_transpose(x: f32[M, N]) -> y: f32[N, M] {
        y[j, i] = x[i, j];
    }
}

compute! {
    /// An element-wise chain with broadcasts: relu(x * 0.5 + b) * g.
    pub fn auto_chain(x: f32[M, N], b: f32[N], g: f32[N]) -> y: f32[M, N] {
        y[i, j] = max(x[i, j] * 0.5 + b[j], 0.0) * g[j];
    }
}

compute! {
    /// Each row rotated right by `k` columns, written with Rust's `%` as a user would.
    pub fn auto_roll(x: f32[M, N], k: i64) -> y: f32[M, N] {
        y[i, j] = x[i, ((j - k) % N + N) % N];
    }
}
