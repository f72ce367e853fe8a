//! Every kernel of the suite, under (a) the default CPU schedule, (b) a hand-written CPU
//! schedule, (c) a GPU schedule with thread binding, shared-memory caching and
//! compute_at, and (d) cross-thread reductions where the kernel reduces, run on the
//! TIR interpreter and compared with a plain Rust reference (relative tolerance 1e-5),
//! on shapes that do and do not divide the split factors.

mod common;
use common::*;

const VECTOR_ADD: &str = include_str!("corpus/vector_add.tvm");

#[test]
fn vector_add() {
    for n in [64usize, 77, 1] {
        let a = rand_vec(n, 1);
        let b = rand_vec(n, 2);
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        for v in Variant::CPU_GPU {
            let got = run_f32(VECTOR_ADD, v, vec![t(&[n], &a), t(&[n], &b)], vec![], &[n]);
            assert_close(&got, &want, &format!("vector_add {v:?} n={n}"));
        }
    }
}

const MATMUL: &str = include_str!("corpus/matmul.tvm");

fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f32;
            for p in 0..k {
                s += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = s;
        }
    }
    c
}

#[test]
fn matmul() {
    for (m, k, n) in [(16, 16, 16), (13, 19, 11)] {
        let a = rand_vec(m * k, 3);
        let b = rand_vec(k * n, 4);
        let want = matmul_ref(&a, &b, m, k, n);
        for v in Variant::CPU_GPU {
            let got = run_f32(MATMUL, v, vec![t(&[m, k], &a), t(&[k, n], &b)], vec![], &[m, n]);
            assert_close(&got, &want, &format!("matmul {v:?} {m}x{k}x{n}"));
        }
    }
}

const DENSE: &str = include_str!("corpus/dense_bias_relu.tvm");

#[test]
fn dense_bias_relu() {
    for (m, k, n) in [(8, 8, 16), (7, 13, 10)] {
        let x = rand_vec(m * k, 5);
        let w = rand_vec(n * k, 6);
        let bias = rand_vec(n, 7);
        let mut want = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for p in 0..k {
                    s += x[i * k + p] * w[j * k + p];
                }
                want[i * n + j] = (s + bias[j]).max(0.0);
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(DENSE, v, vec![t(&[m, k], &x), t(&[n, k], &w), t(&[n], &bias)], vec![], &[m, n]);
            assert_close(&got, &want, &format!("dense {v:?} {m}x{k}x{n}"));
        }
    }
}

const SOFTMAX: &str = include_str!("corpus/softmax.tvm");

fn softmax_ref(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
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

#[test]
fn softmax() {
    for rows in [4usize, 3] {
        let x = rand_vec(rows * 40, 8);
        let want = softmax_ref(&x, rows, 40);
        for v in Variant::CPU_GPU {
            let got = run_f32(SOFTMAX, v, vec![t(&[rows, 40], &x)], vec![], &[rows, 40]);
            assert_close(&got, &want, &format!("softmax {v:?} rows={rows}"));
        }
    }
}

const CONV2D: &str = include_str!("corpus/conv2d.tvm");

#[test]
fn conv2d() {
    for (nb, f, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 3, 5, 7)] {
        let data = rand_vec(nb * 3 * h * w, 9);
        let wt = rand_vec(f * 27, 10);
        let mut want = vec![0f32; nb * f * h * w];
        for n in 0..nb {
            for o in 0..f {
                for y in 0..h {
                    for x in 0..w {
                        let mut acc = 0f32;
                        for c in 0..3 {
                            for r in 0..3 {
                                for s in 0..3 {
                                    let (yy, xx) = (y + r, x + s);
                                    let v = if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                        data[((n * 3 + c) * h + yy - 1) * w + xx - 1]
                                    } else {
                                        0.0
                                    };
                                    acc += v * wt[((o * 3 + c) * 3 + r) * 3 + s];
                                }
                            }
                        }
                        want[((n * f + o) * h + y) * w + x] = acc;
                    }
                }
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(CONV2D, v, vec![t(&[nb, 3, h, w], &data), t(&[f, 3, 3, 3], &wt)], vec![], &[nb, f, h, w]);
            assert_close(&got, &want, &format!("conv2d {v:?} {nb}x{f}x{h}x{w}"));
        }
    }
}

const TRANSPOSE: &str = include_str!("corpus/transpose.tvm");

#[test]
fn transpose() {
    for (m, n) in [(16usize, 8usize), (9, 13)] {
        let a = rand_vec(m * n, 11);
        let mut want = vec![0f32; n * m];
        for i in 0..n {
            for j in 0..m {
                want[i * m + j] = a[j * n + i];
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(TRANSPOSE, v, vec![t(&[m, n], &a)], vec![], &[n, m]);
            assert_close(&got, &want, &format!("transpose {v:?} {m}x{n}"));
        }
    }
}

const MAXPOOL: &str = include_str!("corpus/max_pool.tvm");

#[test]
fn max_pool() {
    for (nb, c, h, w) in [(1usize, 2usize, 8usize, 8usize), (2, 1, 6, 9)] {
        let data = rand_vec(nb * c * h * w, 12);
        let mut want = vec![0f32; nb * c * h * w];
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
                        want[((n * c + ch) * h + y) * w + x] = m;
                    }
                }
            }
        }
        for v in Variant::CPU_GPU {
            let got = run_f32(MAXPOOL, v, vec![t(&[nb, c, h, w], &data)], vec![], &[nb, c, h, w]);
            assert_close(&got, &want, &format!("max_pool {v:?} {nb}x{c}x{h}x{w}"));
        }
    }
}

const SUM2: &str = include_str!("corpus/sum_two_axes.tvm");

#[test]
fn sum_two_axes() {
    for (a, b, c) in [(4usize, 4usize, 8usize), (3, 4, 8)] {
        let x = rand_vec(a * b * c, 13);
        let want: Vec<f32> = (0..a).map(|i| x[i * b * c..(i + 1) * b * c].iter().sum()).collect();
        for v in Variant::CPU_GPU {
            let got = run_f32(SUM2, v, vec![t(&[a, b, c], &x)], vec![], &[a]);
            assert_close(&got, &want, &format!("sum_two_axes {v:?} {a}x{b}x{c}"));
        }
    }
}

const ROW_SUM_RFACTOR: &str = include_str!("corpus/row_sum_rfactor.tvm");

#[test]
fn row_sum_cross_thread_with_rfactor() {
    for (m, n) in [(4usize, 64usize), (3, 37)] {
        let x = rand_vec(m * n, 14);
        let want: Vec<f32> = (0..m).map(|i| x[i * n..(i + 1) * n].iter().sum()).collect();
        for v in [Variant::DefaultCpu, Variant::Gpu] {
            let got = run_f32(ROW_SUM_RFACTOR, v, vec![t(&[m, n], &x)], vec![], &[m]);
            assert_close(&got, &want, &format!("row_sum {v:?} {m}x{n}"));
        }
    }
}

const SCALE: &str = include_str!("corpus/scale.tvm");

#[test]
fn scalar_parameter() {
    let x = rand_vec(10, 15);
    let want: Vec<f32> = x.iter().map(|v| 2.5 * v).collect();
    for v in [Variant::DefaultCpu, Variant::DefaultGpu] {
        let got = run_f32(SCALE, v, vec![t(&[10], &x)], vec![scalar_f32(2.5)], &[10]);
        assert_close(&got, &want, &format!("scale {v:?}"));
    }
}
