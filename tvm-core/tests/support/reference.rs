//! Plain Rust references of the kernels every suite runs (the corpus kernels, the example
//! kernels), the deterministic inputs they run on and the one comparison they share.
//! Included by the kernel registry (`registry.rs`, whose cases call them), and so by
//! `tvm-core`'s tests (the interpreter and OpenCL at the TIR level) and by the root
//! `tests/backends/` suite (the generated API on every backend): both check against the
//! same code.
#![allow(dead_code)]

/// Deterministic values in [-1, 1).
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The relative tolerance of a result that sums `terms` f32 products in an order the
/// schedule chooses: 1e-5 for up to 64 terms, growing with the square root of the count
/// beyond (the expected rounding error of a sum in a different order).
pub fn rtol_for_sum(terms: usize) -> f32 {
    1e-5 * ((terms as f32) / 64.0).sqrt().max(1.0)
}

/// Panics naming the first element where `|got - want| > rtol * max(|want|, 1)`; NaN
/// anywhere (an element never written, for poisoned outputs) fails.
pub fn assert_close(got: &[f32], want: &[f32], rtol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = rtol * w.abs().max(1.0);
        assert!((g - w).abs() <= tol, "{what}: element {i}: got {g}, want {w} (tolerance {tol})");
    }
}

pub fn vector_add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// `c[m, n] = a[m, k] · b[k, n]`.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
            }
        }
    }
    c
}

/// `relu(x[m, k] · w[n, k]ᵀ + bias[n])`.
pub fn dense_bias_relu(x: &[f32], w: &[f32], bias: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f32 = (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum();
            out[i * n + j] = (s + bias[j]).max(0.0);
        }
    }
    out
}

/// Softmax of every row of `x[rows, cols]`.
pub fn softmax(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0f32; rows * cols];
    for i in 0..rows {
        let r = &x[i * cols..(i + 1) * cols];
        let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = r.iter().map(|v| (v - m).exp()).collect();
        let s: f32 = e.iter().sum();
        for j in 0..cols {
            y[i * cols + j] = e[j] / s;
        }
    }
    y
}

/// A 3x3 convolution with zero padding 1, NCHW: `data[nb, c, h, w]`, `wt[f, c, 3, 3]`,
/// giving `[nb, f, h, w]`.
pub fn conv2d_3x3(data: &[f32], wt: &[f32], nb: usize, c: usize, f: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0f32; nb * f * h * w];
    for n in 0..nb {
        for o in 0..f {
            for y in 0..h {
                for x in 0..w {
                    let mut acc = 0f32;
                    for ch in 0..c {
                        for r in 0..3 {
                            for s in 0..3 {
                                let (yy, xx) = (y + r, x + s);
                                if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                    acc += data[((n * c + ch) * h + yy - 1) * w + xx - 1]
                                        * wt[((o * c + ch) * 3 + r) * 3 + s];
                                }
                            }
                        }
                    }
                    out[((n * f + o) * h + y) * w + x] = acc;
                }
            }
        }
    }
    out
}

/// `b[n, m] = a[m, n]ᵀ`.
pub fn transpose(a: &[f32], m: usize, n: usize) -> Vec<f32> {
    let mut b = vec![0f32; n * m];
    for i in 0..n {
        for j in 0..m {
            b[i * m + j] = a[j * n + i];
        }
    }
    b
}

/// A 3x3 max pool with stride 1 and padding 1 (padding never wins), NCHW.
pub fn max_pool_3x3(data: &[f32], nb: usize, c: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0f32; nb * c * h * w];
    for n in 0..nb {
        for ch in 0..c {
            for y in 0..h {
                for x in 0..w {
                    let mut m = f32::NEG_INFINITY;
                    for r in 0..3 {
                        for s in 0..3 {
                            let (yy, xx) = (y + r, x + s);
                            if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                m = m.max(data[((n * c + ch) * h + yy - 1) * w + xx - 1]);
                            }
                        }
                    }
                    out[((n * c + ch) * h + y) * w + x] = m;
                }
            }
        }
    }
    out
}

/// The sum of every row of `x[rows, cols]`.
pub fn row_sum(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..rows).map(|i| x[i * cols..(i + 1) * cols].iter().sum()).collect()
}

pub fn scale(x: &[f32], alpha: f32) -> Vec<f32> {
    x.iter().map(|v| alpha * v).collect()
}

/// `y[i, j] = table[ids[i], j] * (num[i] / den[i])`, the ratio an integer division that
/// truncates toward zero (as Rust's, and the kernel language's).
pub fn embedding(table: &[f32], d: usize, ids: &[i32], num: &[i32], den: &[i32]) -> Vec<f32> {
    let mut y = Vec::with_capacity(ids.len() * d);
    for i in 0..ids.len() {
        let ratio = (num[i] / den[i]) as f32;
        let row = ids[i] as usize * d;
        y.extend(table[row..row + d].iter().map(|v| v * ratio));
    }
    y
}

/// The cumulative sum along every row of `x[rows, cols]`, in order.
pub fn cumsum_rows(x: &[f32], cols: usize) -> Vec<f32> {
    let mut y = x.to_vec();
    for row in y.chunks_mut(cols.max(1)) {
        for j in 1..row.len() {
            row[j] += row[j - 1];
        }
    }
    y
}

/// `z = a * x + y`, element by element (one rounding for the product, one for the sum).
pub fn axpy<T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>>(a: T, x: &[T], y: &[T]) -> Vec<T> {
    x.iter().zip(y).map(|(&x, &y)| a * x + y).collect()
}

/// A softmax's statistics of every row of `n` elements: the row max, and the sum of
/// `exp(x - max)` (in f64, rounded once).
pub fn softmax_stats(x: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
    x.chunks(n)
        .map(|r| {
            let m = r.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            (m, r.iter().map(|&e| ((e - m) as f64).exp()).sum::<f64>() as f32)
        })
        .unzip()
}

/// Layer normalization of each row: `(x - mean) / sqrt(var + 1e-5) * gamma + beta`, in f64.
pub fn layernorm(x: &[f32], gamma: &[f32], beta: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0f32; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (var + 1e-5).sqrt();
        for j in 0..cols {
            y[r * cols + j] = ((row[j] as f64 - mean) * inv * gamma[j] as f64 + beta[j] as f64) as f32;
        }
    }
    y
}

// ---- The language forms (tvm-core/tests/language.rs, tests/backends/language.rs) ----

/// The kernel of the method-syntax tests, written with Rust's own methods.
pub fn methods_ref(x: &[f32], b: &[f32], a: f32) -> Vec<f32> {
    x.iter()
        .zip(b)
        .map(|(&x, &b)| {
            x.max(0.0).exp().mul_add(a, b)
                + (x.abs() + 1.0).sqrt().ln() * std::f32::consts::PI
                + x.clamp(-0.5, 0.5) * std::f32::consts::E
                + (x.abs() + 1.0).recip()
                + f32::max(x, b).powf(2.0)
                - x.tanh().min(b.sin().abs().floor())
        })
        .collect()
}

/// The element of a tensor of `n` elements that boundary rule `rule` reads at index `i`
/// (`None`: the constant of `constant_exterior`), as Halide's `BoundaryConditions` do.
pub fn boundary_index(rule: &str, i: i64, n: i64) -> Option<usize> {
    if (0..n).contains(&i) {
        return Some(i as usize);
    }
    let reflect = |p: i64, last: i64| {
        let m = i.rem_euclid(p);
        if m < n {
            m
        } else {
            last - m
        }
    };
    Some(match rule {
        "constant_exterior" => return None,
        "repeat_edge" => i.clamp(0, n - 1),
        "repeat_image" => i.rem_euclid(n),
        "mirror_image" => reflect(2 * n, 2 * n - 1),
        "mirror_interior" if n == 1 => 0,
        "mirror_interior" => reflect(2 * n - 2, 2 * n - 2),
        _ => unreachable!("{rule}"),
    } as usize)
}

/// The five-tap blur of the boundary tests (`xb[i - 2] + 2 xb[i - 1] + 3 xb[i] + 2 xb[i +
/// 1] + xb[i + 7]`) under `rule`, `outside` for `constant_exterior`.
pub fn blur_ref(rule: &str, x: &[f32], outside: f32) -> Vec<f32> {
    let n = x.len() as i64;
    let at = |i: i64| boundary_index(rule, i, n).map_or(outside, |k| x[k]);
    (0..n).map(|i| at(i - 2) + at(i - 1) * 2.0 + at(i) * 3.0 + at(i + 1) * 2.0 + at(i + 7)).collect()
}

/// The value and the first index of the largest (`max`) or smallest element of each row
/// of `n` elements: argmax and argmin, ties to the lowest index.
pub fn argbest_rows(x: &[f32], n: usize, max: bool) -> (Vec<f32>, Vec<i64>) {
    x.chunks(n)
        .map(|row| {
            let mut best = 0;
            for (j, &v) in row.iter().enumerate() {
                if (max && v > row[best]) || (!max && v < row[best]) {
                    best = j;
                }
            }
            (row[best], best as i64)
        })
        .unzip()
}
