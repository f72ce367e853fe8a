//! The plain Rust loops the kernels replace, written as a user would before reaching for
//! `compute!`: compiled with the application's profile, they are what a debug build of
//! the application would run without the kernels.

pub fn matmul(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    c
}

/// relu(x · wᵀ + bias), `x` of `m` rows of `k`, `w` of `n` rows of `k`.
pub fn dense_bias_relu(x: &[f32], w: &[f32], bias: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut d = 0.0f32;
            for p in 0..k {
                d += x[i * k + p] * w[j * k + p];
            }
            out[i * n + j] = (d + bias[j]).max(0.0);
        }
    }
    out
}

/// A 3×3 convolution with zero padding of 1, one image of `c` channels of `h`×`w`.
pub fn conv2d(data: &[f32], wt: &[f32], c: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; c * h * w];
    for f in 0..c {
        for y in 0..h {
            for x in 0..w {
                let mut acc = 0.0f32;
                for ch in 0..c {
                    for r in 0..3 {
                        for s in 0..3 {
                            let (yy, xx) = (y + r, x + s);
                            if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                acc += data[(ch * h + yy - 1) * w + xx - 1] * wt[((f * c + ch) * 3 + r) * 3 + s];
                            }
                        }
                    }
                }
                out[(f * h + y) * w + x] = acc;
            }
        }
    }
    out
}

pub fn softmax(x: &[f32], n: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for (row, out) in x.chunks(n).zip(y.chunks_mut(n)) {
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut s = 0.0f32;
        for (o, &v) in out.iter_mut().zip(row) {
            *o = (v - m).exp();
            s += *o;
        }
        for o in out.iter_mut() {
            *o *= 1.0 / s;
        }
    }
    y
}

pub fn layernorm(x: &[f32], gamma: &[f32], beta: &[f32], n: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for (row, out) in x.chunks(n).zip(y.chunks_mut(n)) {
        let mean = row.iter().sum::<f32>() / n as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let r = 1.0 / (var + 1e-5).sqrt();
        for j in 0..n {
            out[j] = (row[j] - mean) * r * gamma[j] + beta[j];
        }
    }
    y
}

pub fn vector_add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}
